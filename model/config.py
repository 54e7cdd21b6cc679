"""The constants of one model: protocol revision, bounds and Kafka features.

One frozen dataclass holds every knob, so that a configuration can be printed,
compared, hashed into a checkpoint and pickled to Spark executors as one value.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from enum import Enum
from typing import Any


class ConfigError(ValueError):
    """An impossible or malformed configuration; the message is one line for the user."""


class Revision(str, Enum):
    """Protocol revisions of the published specification, oldest first."""

    HW_TRUNCATION = "hw-truncation"
    KIP_101 = "kip-101"
    KIP_279 = "kip-279"
    KIP_320 = "kip-320"

    @property
    def kafka_versions(self) -> str:
        return {
            "hw-truncation": "Kafka before 0.11",
            "kip-101": "Kafka 0.11 to 1.x",
            "kip-279": "Kafka 2.0",
            "kip-320": "Kafka 2.1 and later",
        }[self.value]


REVISIONS = tuple(r.value for r in Revision)
ACKS = ("all", "1", "0")

# Tables grow with 2**rf (ISR bitmasks) and rf! (symmetry); beyond this the
# explicit engines are not the right tool anyway.
MAX_RF = 6

FEATURE_FIELDS = ("acks", "min_isr", "crashes", "disk_loss", "unclean_election", "consumer")


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """Everything that decides the reachable state space.

    ``core=True`` selects the published specification's machine exactly (the one
    whose state counts are compared with TLC's); the Kafka feature fields are then
    ignored and normalised to their neutral values.
    """

    rf: int = 3
    protocol: str = Revision.KIP_320.value
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

    def __post_init__(self) -> None:
        if self.log_size is None:
            object.__setattr__(self, "log_size", self.max_records)
        if self.core:
            neutral = dict(acks="0", min_isr=1, crashes=0, disk_loss=0, unclean_election=False, consumer=False)
            for name, value in neutral.items():
                object.__setattr__(self, name, value)

    @property
    def revision(self) -> Revision:
        return Revision(self.protocol)

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
            return self
        _require(self.acks in ACKS, f"--acks {self.acks!r} is unknown; choose one of {', '.join(ACKS)}")
        _require(
            1 <= self.min_isr <= self.rf,
            f"--min-isr {self.min_isr} is impossible with --rf {self.rf}; allowed 1 to {self.rf}",
        )
        _require(0 <= self.crashes <= 4, f"--crashes {self.crashes} is out of range; allowed 0 to 4")
        _require(self.disk_loss >= 0, f"--disk-loss {self.disk_loss} is negative; allowed 0 to --crashes")
        _require(
            self.disk_loss <= self.crashes,
            f"--disk-loss {self.disk_loss} is above --crashes {self.crashes}: a disk loss is a kind of crash",
        )
        return self

    def with_changes(self, **changes: Any) -> "ModelConfig":
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
            parts += [f"acks={self.acks}", f"min-isr {self.min_isr}", f"crashes {self.crashes}"]
            if self.disk_loss:
                parts.append(f"disk-loss {self.disk_loss}")
            parts.append("unclean election" if self.unclean_election else "clean election")
            if not self.consumer:
                parts.append("no consumer")
        if self.unbounded:
            parts.append(f"bounds: log-size {self.log_size}, leader epochs and record ids unbounded")
        else:
            parts.append(
                f"bounds: max-records {self.max_records}, log-size {self.log_size}, "
                f"max-leader-epoch {self.max_leader_epoch}"
            )
        return ", ".join(parts)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)
