"""Every Kafka feature's setting, declared once as a ``Knob``: its option, its words, its column.

``ModelConfig`` (``config.py``) holds the values; a knob says how the command line, the
one-line summary, trace file names, the bounds words and the trade-off table speak of
one of them, and what is wrong with a value ('' when nothing). Split from ``config.py``
so that each stays readable; it reads configurations but never builds one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from . import releases
from .schema import TALLY_BASE

ModelConfig = Any  # a config.ModelConfig (config.py imports this module, not the other way round)
ACKS = ("all", "1", "0")
FLUSH = ("os", "always")
FAIRNESS = ("weak", "none")
COMMIT = ("before", "after")
OFFSET_RESET = ("latest", "earliest")
MAX_IN_FLIGHT_IDEMPOTENT = 5  # ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION_FOR_IDEMPOTENCE
INT_MAX = 2**31 - 1  # min.insync.replicas is a Java int, at least 1 (TopicConfig); Kafka sets no upper bound
MAX_ATTEMPTS = TALLY_BASE  # --delivery-timeout: a record's retries, 0 to 3, are one digit of a Tally


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
    ``parse``: a text option's reading of the user's words (``ValueError``: one line);
    ``plain``: its words among the faults a run may suffer, in plain English."""

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
    plain: Callable[[ModelConfig], str] = _nothing  # its words among the faults of a plain sentence ('' leaves it out)


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
    if c.retries and (c.max_records is None or c.max_leader_epoch is None):
        return ("--retries needs bounded record ids (--max-leader-epoch 0 to 8): the producer's requests are "
                "sets of record ids")
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


def _delivery_timeout_problem(c: ModelConfig) -> str:
    """delivery.timeout.ms as attempts: Kafka refuses one below linger.ms + request.timeout.ms
    (``KafkaProducer.configureDeliveryTimeout``), so every record has its first attempt."""
    d = c.delivery_timeout
    if d is None:
        return ""
    if not 1 <= d <= MAX_ATTEMPTS:
        return (f"--delivery-timeout {d} is out of range; allowed 1 to {MAX_ATTEMPTS} attempts a record (Kafka: "
                f"delivery.timeout.ms must be at least linger.ms + request.timeout.ms, one attempt)")
    if c.retries == 0:
        return "--delivery-timeout bounds each record's retries; it needs --retries 1 or more (the run's retries)"
    return ""


def _producer_words(c: ModelConfig) -> str:
    if c.core or c.acks == "0" or (c.retries == 0 and c.max_in_flight >= c.max_records):
        return ""
    idem = "idempotent" if c.idempotence else "not idempotent"
    d = c.delivery_timeout
    attempts = "" if d is None else f", at most {d} attempt{'s' if d != 1 else ''} a record"
    return f"retries {c.retries}{attempts}, max-in-flight {c.max_in_flight}, {idem}"


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
    if c.commit is not None and (c.max_records is None or c.max_leader_epoch is None):
        return "--commit needs bounded record ids (--max-leader-epoch 0 to 8): the consumer's histories are sets of ids"
    return ""


def _commit_words(c: ModelConfig) -> str:
    if c.core or c.commit is None:
        return ""
    return (f"consumer commits {c.commit} processing, {c.consumer_crashes} consumer crash"
            f"{'' if c.consumer_crashes == 1 else 'es'}, auto.offset.reset={c.auto_offset_reset}")


def _crash_words(c: ModelConfig) -> str:
    return f"{c.crashes} broker crash" + ("" if c.crashes == 1 else "es")


def _crash_plain(c: ModelConfig) -> str:
    if not c.crashes:
        return "no crash"
    return f"up to {_crash_words(c)}" + (f" ({c.disk_loss} losing its disk)" if c.disk_loss else "")


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
         check=lambda c: "" if 1 <= c.min_isr <= INT_MAX else
         f"--min-isr {c.min_isr} is out of range; Kafka takes 1 to {INT_MAX}",
         words=lambda c: f"min-isr {c.min_isr}", slug=lambda c: f"minisr{c.min_isr}",
         column="min-isr", cell=_unless_core(lambda c: str(c.min_isr), "-"),
         shared=_unless_core(lambda c: f"min-isr {c.min_isr}"), rank=1),
    Knob("crashes", "--crashes", "Broker crashes allowed in a run.", 0, count=True,
         check=lambda c: "" if 0 <= c.crashes <= 4 else f"--crashes {c.crashes} is out of range; allowed 0 to 4",
         words=lambda c: f"crashes {c.crashes}", slug=lambda c: f"crashes{c.crashes}",
         column="crashes", cell=lambda c: str(c.crashes), shared=_unless_core(_crash_words), rank=4, bound="crashes",
         plain=_crash_plain),
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
         shared=lambda c: f"power-loss {c.power_loss}" if c.power_loss else "", rank=7, bound="power_loss",
         plain=lambda c: f"up to {c.power_loss} broker{'s' if c.power_loss != 1 else ''} losing power" if c.power_loss
         else ""),
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
         shared=_unless_core(lambda c: "" if c.restarts else "no restarts"), rank=9,
         plain=lambda c: "" if c.restarts else "no broker coming back"),
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
         "max.in.flight.requests.per.connection: produce requests the producer has sent and awaits.", 5,
         check=lambda c: "" if 1 <= c.max_in_flight <= 8 else
         f"--max-in-flight {c.max_in_flight} is out of range; allowed 1 to 8",
         slug=lambda c: f"inflight{c.max_in_flight}" if c.max_in_flight != 5 else "",
         column="in flight", cell=lambda c: str(c.max_in_flight), rank=13),
    Knob("delivery_timeout", "--delivery-timeout",
         "delivery.timeout.ms as a bound on attempts: each record is sent at most N times, first send and retries "
         "together; then the producer reports it failed (TimeoutException) [default: no bound but --retries].",
         None, check=_delivery_timeout_problem,
         slug=lambda c: f"attempts{c.delivery_timeout}" if c.delivery_timeout is not None else "",
         column="attempts", cell=lambda c: "-" if c.delivery_timeout is None else str(c.delivery_timeout), rank=13),
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
