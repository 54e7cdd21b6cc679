"""The constants of one model: protocol revision, bounds and Kafka features.

One frozen dataclass holds every knob, so that a configuration can be printed,
compared, hashed into a checkpoint and pickled to Spark executors as one value.
Each Kafka feature's setting is declared once more, as a ``Knob``: its command-line
option and its words wherever a configuration is named (the one-line summary, trace
file names, the bounds a verdict holds within, the trade-off table; ``knobs.py``), so
that a new feature's setting is its field here and its knob there, and the command
line, the reports and the suites follow.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from enum import Enum
from typing import Any

from . import releases
from .knobs import (ACKS, COMMIT, FAIRNESS, FEATURE_FIELDS, FEATURES, FLUSH, MAX_IN_FLIGHT_IDEMPOTENT, OFFSET_RESET,
                    Knob)
from .releases import Release

class ConfigError(ValueError):
    """An impossible or malformed configuration; the message is one line for the user."""


class Revision(str, Enum):
    """Protocol revisions of the published specification, oldest first."""

    HW_TRUNCATION = "hw-truncation"
    KIP_101 = "kip-101"
    KIP_279 = "kip-279"
    KIP_320 = "kip-320"


REVISIONS = tuple(r.value for r in Revision)

# Tables grow with 2**rf (ISR bitmasks) and rf! (symmetry); beyond this the
# explicit engines are not the right tool anyway.
MAX_RF = 6


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """Everything that decides the reachable state space.

    ``core=True`` selects the published specification's machine exactly (the one
    whose state counts are compared with TLC's); the Kafka feature fields are then
    ignored and normalised to their neutral values (``Knob.neutral``).
    """

    rf: int = 3
    protocol: str | None = None  # None: the Kafka release's revision (kip-320 on the core machine)
    max_records: int = 2
    log_size: int | None = None
    max_leader_epoch: int | None = 2  # None: unbounded epochs and record ids (symbolic engine only)
    core: bool = False
    acks: str = "all"
    min_isr: int = 1
    crashes: int = 1
    disk_loss: int = 0
    unclean_election: bool = False
    consumer: bool = True
    power_loss: int = 0
    flush: str = "os"
    restarts: bool = True
    fairness: str = "weak"  # what the liveness properties assume of the system's steps (no state of its own)
    kafka_version: str | None = None  # None: the default release, or the newest of the protocol revision
    kraft: bool | None = None  # KRaft mode (3.3+); None: ZooKeeper to 3.9, KRaft from 4.0
    elr: bool | None = None  # eligible leader replicas (KIP-966); None: what the release does for a new cluster
    retries: int = 0  # producer retries in a run (a bound, like crashes)
    max_in_flight: int = 5  # max.in.flight.requests.per.connection
    delivery_timeout: int | None = None  # delivery.timeout.ms as attempts a record (None: only --retries bounds them)
    idempotent: bool | None = None  # enable.idempotence; None: Kafka's default (see ``idempotence``)
    commit: str | None = None  # a consumer group member commits its offset "before" or "after" processing
    consumer_crashes: int = 0  # its crashes in a run (a bound, like crashes)
    auto_offset_reset: str = "latest"  # where it starts without a committed offset (Kafka's default: latest)
    now: str | None = None  # start from partitions' states as a describe shows them (``now.py``); None: a new partition

    def __post_init__(self) -> None:
        if self.core:
            for knob in FEATURES:
                object.__setattr__(self, knob.field, knob.neutral)
        else:
            self._resolve_release()
        if self.log_size is None:
            object.__setattr__(self, "log_size", self.default_log_size)
        if self.protocol is None:
            object.__setattr__(self, "protocol", Revision.KIP_320.value)

    def _resolve_release(self) -> None:
        """--kafka-version and --protocol name each other: the missing one comes from the other
        (a revision alone means its newest release); a bad value is left for validate()."""
        version = self.kafka_version
        if version is None:
            if self.protocol is not None and self.protocol not in REVISIONS:
                return
            version = releases.newest_with(self.protocol) if self.protocol else releases.DEFAULT
        try:
            release = releases.find(str(version))
        except ValueError:
            return
        object.__setattr__(self, "kafka_version", release.version)
        if self.kraft is None:
            object.__setattr__(self, "kraft", release.default_kraft)
        if self.elr is None:
            object.__setattr__(self, "elr", release.default_elr(bool(self.kraft)))
        if self.protocol is None:
            object.__setattr__(self, "protocol", release.revision)

    @property
    def revision(self) -> Revision:
        return Revision(self.protocol)

    @property
    def release(self) -> Release | None:
        """The Kafka release whose rules the Kafka model follows (None on the core machine)."""
        return releases.BY_VERSION.get(self.kafka_version) if not self.core else None

    @property
    def idempotence(self) -> bool:
        """enable.idempotence as the producer applies it: explicit, or Kafka's default, on from 3.0
        (KIP-679; KAFKA-13598: from 3.0.1 and 3.1.1) unless acks, retries or max.in.flight
        conflict (then it is off, KAFKA-13673), as ``ProducerConfig.postProcessAndValidateIdempotenceConfigs``."""
        if self.idempotent is not None:
            return self.idempotent
        release = self.release
        return (release is not None and release.idempotence_default and self.acks == "all" and self.retries > 0
                and self.max_in_flight <= MAX_IN_FLIGHT_IDEMPOTENT)

    @property
    def loses_storage(self) -> bool:
        """Whether a broker can lose what it had written: its disk wiped, or its power lost before a flush."""
        return bool(self.disk_loss or self.power_loss)

    @property
    def unbounded(self) -> bool:
        """Leader epochs and record ids without bound (``--max-leader-epoch unbounded``):
        only the Z3 engine can check it; the explicit model refuses it."""
        return self.max_leader_epoch is None

    def require_bounded(self) -> "ModelConfig":
        if self.unbounded:
            raise ConfigError(
                "--max-leader-epoch unbounded needs --engine z3: the explicit model enumerates epochs and record ids"
            )
        return self

    @property
    def logsize(self) -> int:
        assert self.log_size is not None
        return self.log_size

    def validate(self) -> "ModelConfig":
        """Raise ConfigError naming the option and what is allowed; return self."""
        if self.protocol not in REVISIONS:
            raise ConfigError(f"--protocol {self.protocol!r} is unknown; choose one of {', '.join(REVISIONS)}")
        _require(1 <= self.rf <= MAX_RF, f"--rf {self.rf} is out of range; allowed 1 to {MAX_RF}")
        _require(1 <= self.max_records <= 8, f"--max-records {self.max_records} is out of range; allowed 1 to 8")
        _require(1 <= self.logsize <= 8, f"--log-size {self.log_size} is out of range; allowed 1 to 8")
        _require(
            self.unbounded or 0 <= self.max_leader_epoch <= 8,
            f"--max-leader-epoch {self.max_leader_epoch} is out of range; allowed 0 to 8",
        )
        if self.core:
            _require(self.now is None, "a partition's state now needs a Kafka release: --core starts a new partition")
            return self
        for knob in FEATURES:
            problem = knob.check(self)
            if problem:
                raise ConfigError(problem)
        return self  # a ``now`` is checked where the model is made (``replication.py``)

    @property
    def retries_per_record(self) -> int | None:
        """``--delivery-timeout``'s attempts less the first: the retries one record may have."""
        return None if self.delivery_timeout is None else self.delivery_timeout - 1

    @property
    def default_log_size(self) -> int:
        """The log size where none is given: the records, and room for the copies that retries
        without idempotence write."""
        if self.idempotence or self.acks == "0":
            return self.max_records
        copies = self.retries
        if self.retries_per_record is not None and self.max_records is not None:
            copies = min(copies, self.max_records * self.retries_per_record)
        return self.max_records + copies

    def with_changes(self, **changes: Any) -> "ModelConfig":
        """A copy with these fields changed; a log size that was the producer's default follows it,
        and so do a controller mode and an ELR that were the release's defaults, when the release changes."""
        producer = {"retries", "idempotent", "acks", "kafka_version", "max_in_flight", "delivery_timeout"}
        if producer & set(changes) and "log_size" not in changes and self.log_size == self.default_log_size:
            changes["log_size"] = None
        release = self.release
        if "kafka_version" in changes and release is not None:
            if "kraft" not in changes and self.kraft == release.default_kraft:
                changes["kraft"] = None
            if "elr" not in changes and self.elr == release.default_elr(bool(self.kraft)):
                changes["elr"] = None
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModelConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown configuration field(s): {', '.join(unknown)}")
        return cls(**data)

    def summary(self) -> str:
        """One line, in command-line words, of what this configuration checks."""
        parts = [f"protocol {self.protocol}", f"rf {self.rf}"]
        if self.core:
            parts.append("core machine")
        else:
            parts += [w for w in (knob.words(self) for knob in FEATURES) if w]
        if self.unbounded:
            parts.append(f"bounds: log-size {self.log_size}, leader epochs and record ids unbounded")
        else:
            parts.append(
                f"bounds: max-records {self.max_records}, log-size {self.log_size}, "
                f"max-leader-epoch {self.max_leader_epoch}"
            )
        if self.now is not None:
            parts.append(f"from now: {self.now}")
        return ", ".join(parts)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def default_of(knob: Knob) -> Any:
    """A feature's default: its ModelConfig field's (None where the release decides)."""
    return ModelConfig.__dataclass_fields__[knob.field].default


__all__ = ["ACKS", "COMMIT", "FAIRNESS", "FEATURES", "FEATURE_FIELDS", "FLUSH", "MAX_IN_FLIGHT_IDEMPOTENT",
           "OFFSET_RESET", "ConfigError", "Knob", "ModelConfig", "Revision", "default_of"]
