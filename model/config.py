"""The constants of one model: protocol revision, bounds and Kafka features.

One frozen dataclass holds every knob, so that a configuration can be printed,
compared, hashed into a checkpoint and pickled to Spark executors as one value.
Each Kafka feature's setting is declared once more, as a ``Knob``: its command-line
option and its words wherever a configuration is named (the one-line summary, trace
file names, the bounds a verdict holds within, the trade-off table), so that a new
feature's setting is its field here and its knob here, and the command line, the
reports and the suites follow.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from enum import Enum
from typing import Any, Callable

from . import releases
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
ACKS = ("all", "1", "0")
FLUSH = ("os", "always")
FAIRNESS = ("weak", "none")
COMMIT = ("before", "after")
OFFSET_RESET = ("latest", "earliest")
MAX_IN_FLIGHT_IDEMPOTENT = 5  # ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION_FOR_IDEMPOTENCE

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
    idempotent: bool | None = None  # enable.idempotence; None: Kafka's default (see ``idempotence``)
    commit: str | None = None  # a consumer group member commits its offset "before" or "after" processing
    consumer_crashes: int = 0  # its crashes in a run (a bound, like crashes)
    auto_offset_reset: str = "latest"  # where it starts without a committed offset (Kafka's default: latest)

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
            object.__setattr__(self, "kraft", release.kraft == "only")
        if self.elr is None:
            object.__setattr__(self, "elr", release.elr_default and bool(self.kraft))
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
        for knob in FEATURES:
            problem = knob.check(self)
            if problem:
                raise ConfigError(problem)
        return self

    @property
    def default_log_size(self) -> int:
        """The log size where none is given: the records, and room for the copies that retries
        without idempotence write."""
        return self.max_records + (0 if self.idempotence or self.acks == "0" else self.retries)

    def with_changes(self, **changes: Any) -> "ModelConfig":
        """A copy with these fields changed; a log size that was the producer's default follows it."""
        producer = {"retries", "idempotent", "acks", "kafka_version", "max_in_flight"}
        if producer & set(changes) and "log_size" not in changes and self.log_size == self.default_log_size:
            changes["log_size"] = None
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
        return ", ".join(parts)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def _nothing(config: ModelConfig) -> str:
    return ""


@dataclass(frozen=True)
class Knob:
    """A Kafka feature's setting, declared once.

    ``field``: the ModelConfig attribute; ``option`` and ``help``: its check-model option
    (``--on/--off`` for a switch; ``choices`` for a choice; else a number, ``count`` ones
    non-negative); ``neutral``: its value on the core machine; ``check``: what is wrong
    with a configuration's value ('' when nothing); ``words``: its words in the summary
    line and ``slug`` in trace file names ('' leaves it out); ``column``, ``cell``,
    ``shared`` and ``rank``: its column in the trade-off table, the cell of a row, the
    words when every row shares it, and the column's place; ``bound``: the name it is
    reported under among the bounds every verdict holds within ('' when it is no bound);
    ``parse``: a text option's reading of the user's words (``ValueError``: one line)."""

    field: str
    option: str
    help: str
    neutral: Any
    choices: tuple[str, ...] = ()
    count: bool = False
    check: Callable[[ModelConfig], str] = _nothing
    words: Callable[[ModelConfig], str] = _nothing
    slug: Callable[[ModelConfig], str] = _nothing
    column: str = ""
    cell: Callable[[ModelConfig], str] = _nothing
    shared: Callable[[ModelConfig], str] = _nothing
    rank: int = 0
    bound: str = ""
    parse: Callable[[str], Any] | None = None  # a text option's reading (ValueError: one line for the user)

    @property
    def default(self) -> Any:
        return ModelConfig.__dataclass_fields__[self.field].default


def _unless_core(words: Callable[[ModelConfig], str], core: str = "") -> Callable[[ModelConfig], str]:
    return lambda c: core if c.core else words(c)


def _election(c: ModelConfig) -> str:
    return "unclean" if c.unclean_election else "clean"


def _release_problem(c: ModelConfig) -> str:
    try:
        release = releases.find(str(c.kafka_version))
    except ValueError as e:
        return f"--kafka-version {c.kafka_version}: {e}"
    if release.revision != c.protocol:
        return (f"--protocol {c.protocol} disagrees with --kafka-version {c.kafka_version}, whose truncation rules are "
                f"{release.revision}; give one of the two")
    return ""


def _release_words(c: ModelConfig) -> str:
    release = c.release
    return f"Kafka {c.kafka_version} ({', '.join(release.rules(bool(c.kraft)))})" if release else ""


def _kraft_problem(c: ModelConfig) -> str:
    release = c.release
    if release is None:
        return ""
    if c.kraft and release.kraft == "no":
        return (f"--kraft needs Kafka 3.3 or later (KIP-833: KRaft ready for production); --kafka-version "
                f"{c.kafka_version} is checked with ZooKeeper's controller")
    if not c.kraft and release.kraft == "only":
        return f"Kafka {c.kafka_version} runs only in KRaft mode (4.0 removed ZooKeeper): drop --zookeeper"
    return ""


def _elr_problem(c: ModelConfig) -> str:
    release = c.release
    if c.elr and release is not None and not (release.elr and c.kraft):
        return (f"--elr needs Kafka 4.0 or later: eligible leader replicas (KIP-966) are kept by the KRaft "
                f"controller of 4.0 and later, and --kafka-version {c.kafka_version} has none")
    return ""


def _elr_words(c: ModelConfig) -> str:
    release = c.release
    if release is None or not release.elr:
        return ""
    return "ELR on" if c.elr else "ELR off"


def _elr_slug(c: ModelConfig) -> str:
    release = c.release
    if release is None or c.elr == release.elr_default:
        return ""
    return "elr" if c.elr else "noelr"


def _kraft_slug(c: ModelConfig) -> str:
    release = c.release
    return "kraft" if release is not None and release.kraft == "optional" and c.kraft else ""


def _idempotence_problem(c: ModelConfig) -> str:
    """Kafka's ConfigException for an explicit enable.idempotence=true that other settings contradict."""
    if not c.idempotent:
        return ""
    if c.acks != "all":
        return "--idempotent needs --acks all (Kafka: \"Must set acks to all in order to use the idempotent producer\")"
    if c.retries == 0:
        return "--idempotent needs --retries 1 or more (Kafka: \"Must set retries to non-zero when using the idempotent producer\")"
    if c.max_in_flight > MAX_IN_FLIGHT_IDEMPOTENT:
        return (f"--idempotent needs --max-in-flight {MAX_IN_FLIGHT_IDEMPOTENT} or less (Kafka: the broker keeps the last "
                f"{MAX_IN_FLIGHT_IDEMPOTENT} batches of a producer to find duplicates)")
    return ""


def _producer_words(c: ModelConfig) -> str:
    if c.core or c.acks == "0" or (c.retries == 0 and c.max_in_flight >= c.max_records):
        return ""
    idem = "idempotent" if c.idempotence else "not idempotent"
    return f"retries {c.retries}, max-in-flight {c.max_in_flight}, {idem}"


def _commit_problem(c: ModelConfig) -> str:
    if c.commit is not None and c.commit not in COMMIT:
        return f"--commit {c.commit!r} is unknown; choose one of {', '.join(COMMIT)}"
    if c.auto_offset_reset not in OFFSET_RESET:
        return f"--auto-offset-reset {c.auto_offset_reset!r} is unknown; choose one of {', '.join(OFFSET_RESET)}"
    if not 0 <= c.consumer_crashes <= 2:
        return f"--consumer-crashes {c.consumer_crashes} is out of range; allowed 0 to 2"
    if c.consumer_crashes and c.commit is None:
        return "--consumer-crashes needs --commit before or after: a consumer restarts from its committed offset"
    if c.commit is not None and not c.consumer:
        return "--commit needs the consumer (drop --no-consumer)"
    return ""


def _commit_words(c: ModelConfig) -> str:
    if c.core or c.commit is None:
        return ""
    return (f"consumer commits {c.commit} processing, {c.consumer_crashes} consumer crash"
            f"{'' if c.consumer_crashes == 1 else 'es'}, auto.offset.reset={c.auto_offset_reset}")


def _crash_words(c: ModelConfig) -> str:
    return f"{c.crashes} broker crash" + ("" if c.crashes == 1 else "es")


FEATURES: tuple[Knob, ...] = (
    Knob("kafka_version", "--kafka-version",
         f"Kafka release whose rules are checked, X.Y or X.Y.Z, {releases.VERSIONS[0]} to {releases.NEWEST} "
         f"[default: {releases.DEFAULT}, or the newest release of --protocol].", None,
         parse=lambda text: releases.find(text).version, check=_release_problem, words=_release_words,
         slug=lambda c: f"kafka{c.kafka_version}", column="Kafka", cell=_unless_core(lambda c: c.kafka_version, "-"),
         shared=_unless_core(lambda c: f"Kafka {c.kafka_version}"), rank=0),
    Knob("kraft", "--kraft/--zookeeper",
         "The controller: KRaft (3.3 and later, KIP-833; the leader's ISR changes are AlterPartition requests) or "
         "ZooKeeper [default: ZooKeeper to 3.9, KRaft from 4.0, which has no other].",
         False, check=_kraft_problem, slug=_kraft_slug,
         column="controller", cell=_unless_core(lambda c: "KRaft" if c.kraft else "ZooKeeper", "-"),
         shared=_unless_core(lambda c: "KRaft" if c.kraft else ""), rank=10),
    Knob("elr", "--elr/--no-elr",
         "Eligible leader replicas (KIP-966, KRaft releases): replicas that leave the ISR while it is below "
         "min.insync.replicas stay electable [default: the release's for a new cluster: off in 4.0, on from 4.1].",
         False, check=_elr_problem, words=_elr_words, slug=_elr_slug,
         column="ELR", cell=lambda c: ("on" if c.elr else "off") if c.release and c.release.elr else "-",
         shared=lambda c: _elr_words(c), rank=11),
    Knob("acks", "--acks", "Producer acks: all (or -1, Kafka's other name for it), 1 or 0 [default: all].", "0",
         choices=ACKS,
         parse=lambda text: "all" if text == "-1" else text,
         check=lambda c: "" if c.acks in ACKS else f"--acks {c.acks!r} is unknown; choose one of all (or -1), 1, 0",
         words=lambda c: f"acks={c.acks}", slug=lambda c: f"acks{c.acks}",
         column="acks", cell=_unless_core(lambda c: c.acks, "-"), shared=_unless_core(lambda c: f"acks={c.acks}"), rank=2),
    Knob("min_isr", "--min-isr", "min.insync.replicas.", 1,
         check=lambda c: "" if 1 <= c.min_isr <= c.rf else
         f"--min-isr {c.min_isr} is impossible with --rf {c.rf}; allowed 1 to {c.rf}",
         words=lambda c: f"min-isr {c.min_isr}", slug=lambda c: f"minisr{c.min_isr}",
         column="min-isr", cell=_unless_core(lambda c: str(c.min_isr), "-"),
         shared=_unless_core(lambda c: f"min-isr {c.min_isr}"), rank=1),
    Knob("crashes", "--crashes", "Broker crashes allowed in a run.", 0, count=True,
         check=lambda c: "" if 0 <= c.crashes <= 4 else f"--crashes {c.crashes} is out of range; allowed 0 to 4",
         words=lambda c: f"crashes {c.crashes}", slug=lambda c: f"crashes{c.crashes}",
         column="crashes", cell=lambda c: str(c.crashes), shared=_unless_core(_crash_words), rank=4, bound="crashes"),
    Knob("disk_loss", "--disk-loss", "How many of the crashes also wipe the broker's disk.", 0, count=True,
         check=lambda c: (f"--disk-loss {c.disk_loss} is negative; allowed 0 to --crashes" if c.disk_loss < 0 else
                          f"--disk-loss {c.disk_loss} is above --crashes {c.crashes}: a disk loss is a kind of crash"
                          if c.disk_loss > c.crashes else ""),
         words=lambda c: f"disk-loss {c.disk_loss}" if c.disk_loss else "",
         slug=lambda c: f"diskloss{c.disk_loss}" if c.disk_loss else "",
         column="disk loss", cell=lambda c: str(c.disk_loss),
         shared=lambda c: f"disk-loss {c.disk_loss}" if c.disk_loss else "", rank=5, bound="disk_loss"),
    Knob("unclean_election", "--unclean-election/--clean-election",
         "Allow electing an out-of-sync replica when no ISR member is alive.", False,
         words=lambda c: f"{_election(c)} election", slug=lambda c: "unclean" if c.unclean_election else "",
         column="election", cell=_unless_core(_election, "-"), shared=_unless_core(lambda c: f"{_election(c)} election"),
         rank=3),
    Knob("power_loss", "--power-loss",
         "Brokers that may lose power in a run, several in one step (a zone outage); each loses what it had not flushed.",
         0, count=True,
         check=lambda c: "" if 0 <= c.power_loss <= c.rf else
         f"--power-loss {c.power_loss} is out of range; allowed 0 to --rf {c.rf}",
         words=lambda c: f"power-loss {c.power_loss}, flush {c.flush}" if c.power_loss else "",
         slug=lambda c: f"powerloss{c.power_loss}{'' if c.flush == 'os' else 'flushalways'}" if c.power_loss else "",
         column="power loss", cell=lambda c: str(c.power_loss),
         shared=lambda c: f"power-loss {c.power_loss}" if c.power_loss else "", rank=7, bound="power_loss"),
    Knob("flush", "--flush",
         "When a log reaches the disk: os (flush.messages unset, Kafka's default: the OS writes the page cache back "
         "when it chooses) or always (flush.messages=1). Matters with --power-loss.", "os", choices=FLUSH,
         check=lambda c: "" if c.flush in FLUSH else f"--flush {c.flush!r} is unknown; choose one of {', '.join(FLUSH)}",
         column="flush", cell=lambda c: c.flush if c.power_loss else "-",
         shared=lambda c: f"flush {c.flush}" if c.power_loss else "", rank=8),
    Knob("restarts", "--restarts/--no-restarts",
         "Brokers that went down come back (--no-restarts: every crash and power loss is permanent, "
         "the case where availability is at stake).", True,
         words=lambda c: "" if c.restarts else "no restarts", slug=lambda c: "" if c.restarts else "norestarts",
         column="restarts", cell=_unless_core(lambda c: "yes" if c.restarts else "no", "-"),
         shared=_unless_core(lambda c: "" if c.restarts else "no restarts"), rank=9),
    Knob("fairness", "--fairness",
         "What the liveness properties (rejoins-isr, hwm-progress) assume: weak (a broker or controller step that "
         "stays enabled is eventually taken) or none (any run may stop anywhere) [default: weak].", "weak",
         choices=FAIRNESS,
         check=lambda c: "" if c.fairness in FAIRNESS else
         f"--fairness {c.fairness!r} is unknown; choose one of {', '.join(FAIRNESS)}",
         words=lambda c: "" if c.fairness == "weak" else "no fairness",
         slug=lambda c: "" if c.fairness == "weak" else "nofairness"),
    Knob("retries", "--retries",
         "Producer retries allowed in a run (a bound of the search, like --crashes; Kafka's default retries without "
         "limit until delivery.timeout.ms): a request that fails or times out is sent again. Ignored with --acks 0.",
         0, count=True,
         check=lambda c: "" if 0 <= c.retries <= 4 else f"--retries {c.retries} is out of range; allowed 0 to 4",
         words=_producer_words, slug=lambda c: f"retries{c.retries}" if c.retries else "",
         column="retries", cell=lambda c: str(c.retries), rank=12, bound="retries"),
    Knob("max_in_flight", "--max-in-flight",
         "max.in.flight.requests.per.connection: produce requests the producer has sent and awaits [default: 5].", 5,
         check=lambda c: "" if 1 <= c.max_in_flight <= 8 else
         f"--max-in-flight {c.max_in_flight} is out of range; allowed 1 to 8",
         slug=lambda c: f"inflight{c.max_in_flight}" if c.max_in_flight != 5 else "",
         column="in flight", cell=lambda c: str(c.max_in_flight), rank=13),
    Knob("idempotent", "--idempotent/--no-idempotent",
         "enable.idempotence: the leader drops a retried record it already has (DuplicateSequence) and one out of "
         "order (OutOfOrderSequence) [default: Kafka's, on from 3.0 unless acks, retries or max-in-flight conflict].",
         False, check=_idempotence_problem,
         slug=lambda c: "" if c.idempotent is None else ("idempotent" if c.idempotent else "notidempotent"),
         column="idempotent", cell=lambda c: "yes" if c.idempotence else "no", rank=14),
    Knob("commit", "--commit",
         "A consumer group member that reads, processes and commits its offset: before processing (at most once) "
         "or after (at least once) [default: none modelled].", None, choices=COMMIT, check=_commit_problem,
         words=_commit_words, slug=lambda c: f"commit{c.commit}" if c.commit else "",
         column="commit", cell=lambda c: c.commit or "-", rank=15),
    Knob("consumer_crashes", "--consumer-crashes",
         "Consumer crashes allowed in a run; it restarts from its committed offset (needs --commit).", 0, count=True,
         slug=lambda c: f"ccrashes{c.consumer_crashes}" if c.consumer_crashes else "",
         column="consumer crashes", cell=lambda c: str(c.consumer_crashes), rank=16, bound="consumer_crashes",
         shared=lambda c: f"{c.consumer_crashes} consumer crash{'' if c.consumer_crashes == 1 else 'es'}"
         if c.commit else ""),
    Knob("auto_offset_reset", "--auto-offset-reset",
         "auto.offset.reset: where a consumer without a committed offset, or past the log's end, starts "
         "[default: latest, Kafka's].", "latest", choices=OFFSET_RESET,
         slug=lambda c: "earliest" if c.commit and c.auto_offset_reset == "earliest" else "",
         column="offset reset", cell=lambda c: c.auto_offset_reset if c.commit else "-", rank=17,
         shared=lambda c: f"auto.offset.reset={c.auto_offset_reset}" if c.commit else ""),
    Knob("consumer", "--consumer/--no-consumer", "Model a consumer.", False,
         words=lambda c: "" if c.consumer else "no consumer", slug=lambda c: "" if c.consumer else "noconsumer",
         column="consumer", cell=lambda c: "yes" if c.consumer else "no",
         shared=lambda c: "" if c.consumer or c.core else "no consumer", rank=6),
)
FEATURE_FIELDS = tuple(knob.field for knob in FEATURES)
