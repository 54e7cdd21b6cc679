"""Kafka's own configuration keys in, the model's options out: ``--config KEY=VALUE`` and
``--topic-config FILE``.

A Kafka engineer has a topic's configuration in Kafka's words: ``min.insync.replicas=2``
in a ``.properties`` file, or what ``kafka-configs.sh --describe`` and
``kafka-topics.sh --describe`` print. The keys the model decides on become its options;
the topic keys that Kafka has and the model does not look at (``retention.ms``, say) are
listed once as ignored; a key Kafka does not have is refused with the nearest one it
has. The topic-level keys are those of Kafka 3.9's ``TopicConfig`` (and the
replication factor, which ``kafka-topics.sh`` prints beside them); ``acks`` is the
producer's.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from isrcheck.files import FileProblem, read_bounded
from isrcheck.model.fields import offsets, producer_requests

from .common import UsageFailure
from .units import digits_hint


def _number(key: str, text: str) -> int:
    """A count in the digits 0-9 alone, as Kafka reads one (and check-model its options)."""
    if not re.fullmatch(r"[0-9]{1,4}", text):
        raise UsageFailure(f"{key}={text[:40]}: a whole number is needed{digits_hint(text)}")
    return int(text)


def _switch(key: str, text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise UsageFailure(f"{key}={text}: true or false is needed")
    return text.lower() == "true"


def _acks(key: str, text: str) -> str:
    value = {"all": "all", "-1": "all", "1": "1", "0": "0"}.get(text.lower())
    if value is None:
        raise UsageFailure(f"{key}={text}: Kafka's acks are all (or -1), 1 and 0")
    return value


def _flush(key: str, text: str) -> str:
    """flush.messages=1 fsyncs every record (--flush always); any other interval leaves the
    latest records to the page cache, which --flush os covers (it lets the OS flush any time)."""
    return "always" if _number(key, text) == 1 else "os"


def _elr_version(key: str, text: str) -> bool:
    """The KRaft feature eligible.leader.replicas.version (KIP-966): 1 keeps eligible leader replicas, 0 not."""
    if text.strip() not in ("0", "1"):
        raise UsageFailure(f"{key}={text}: expected 0 or 1")
    return text.strip() == "1"


def _retries(key: str, text: str) -> int:
    """Kafka's retries count per record (default: without limit, until delivery.timeout.ms); the model
    bounds the retries of a whole run (--retries), and one retry already writes a duplicate or
    swaps two records: any non-zero value is checked with one."""
    if not re.fullmatch(r"[0-9]{1,10}", text) or int(text) > 2**31 - 1:
        raise UsageFailure(f"{key}={text}: a whole number from 0 to 2147483647 is needed")
    return min(int(text), 1)


def _in_flight(key: str, text: str) -> int:
    """max.in.flight.requests.per.connection; beyond the model's 8 records, more changes nothing."""
    n = _number(key, text)
    if n < 1:
        raise UsageFailure(f"{key}={text}: at least 1 is needed")
    return min(n, 8)


def _offset_reset(key: str, text: str) -> str:
    value = text.strip().lower()
    if value == "none":
        raise UsageFailure(f"{key}=none: the model's consumer needs a reset policy; give latest or earliest")
    if value not in ("latest", "earliest"):
        raise UsageFailure(f"{key}={text}: Kafka's policies are latest, earliest and none")
    return value


# key -> (ModelConfig field, reading of Kafka's value)
MODELLED: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "replication.factor": ("rf", _number),
    "min.insync.replicas": ("min_isr", _number),
    "unclean.leader.election.enable": ("unclean_election", _switch),
    "acks": ("acks", _acks),
    "flush.messages": ("flush", _flush),
    "eligible.leader.replicas.version": ("elr", _elr_version),  # a cluster feature, not a topic's key
    "retries": ("retries", _retries),  # the producer's keys from here on
    "max.in.flight.requests.per.connection": ("max_in_flight", _in_flight),
    "enable.idempotence": ("idempotent", _switch),
    "auto.offset.reset": ("auto_offset_reset", _offset_reset),  # the consumer's (with --commit)
}
# Kafka's topic keys that no modelled behaviour depends on
IGNORED = frozenset("""
    cleanup.policy compression.type compression.gzip.level compression.lz4.level compression.zstd.level
    delete.retention.ms file.delete.delay.ms flush.ms follower.replication.throttled.replicas index.interval.bytes
    leader.replication.throttled.replicas local.retention.bytes local.retention.ms max.compaction.lag.ms
    max.message.bytes message.downconversion.enable message.format.version message.timestamp.after.max.ms
    message.timestamp.before.max.ms message.timestamp.difference.max.ms message.timestamp.type
    min.cleanable.dirty.ratio min.compaction.lag.ms preallocate remote.log.copy.disable
    remote.log.delete.on.disable remote.storage.enable retention.bytes retention.ms segment.bytes
    segment.index.bytes segment.jitter.ms segment.ms
""".split())
# client keys the model leaves to its own options: --delivery-timeout bounds a record's attempts rather than the time
# they take (milliseconds say nothing of how many attempts fit), and --commit says when the consumer commits
# (auto-commit commits on a later poll, which --commit after covers)
NOT_YET = frozenset("""
    delivery.timeout.ms enable.auto.commit
""".split())
KNOWN = tuple(sorted({*MODELLED, *IGNORED, *NOT_YET}))


@dataclass
class KafkaSettings:
    """What Kafka keys said: model option values, and the keys left aside."""

    values: dict[str, Any] = field(default_factory=dict)  # ModelConfig field -> value
    given: dict[str, str] = field(default_factory=dict)  # key -> value, as the user wrote it
    ignored: list[str] = field(default_factory=list)
    not_yet: list[str] = field(default_factory=list)

    def add(self, key: str, value: str, where: str) -> None:
        key, value = key.strip(), value.strip()
        if key in MODELLED:
            name, read = MODELLED[key]
            parsed = read(key, value)
            if key in self.given and self.values[name] != parsed:
                raise UsageFailure(f"{where}: {key} is given twice, as {self.given[key]} and {value}")
            self.values[name], self.given[key] = parsed, value
        elif key in IGNORED or key in NOT_YET:
            aside = self.ignored if key in IGNORED else self.not_yet
            if key not in aside:
                aside.append(key)
        else:
            near = difflib.get_close_matches(key, KNOWN, n=1, cutoff=0.75)
            hint = f"; did you mean {near[0]}?" if near else f"; the keys the model reads: {', '.join(MODELLED)}"
            raise UsageFailure(f"{where}: {key} is not a Kafka topic or producer key{hint}")

    def notes(self) -> list[str]:
        out = []
        if self.ignored:
            out.append(f"ignored (no modelled behaviour depends on them): {', '.join(self.ignored)}")
        if self.not_yet:
            out.append("ignored (--delivery-timeout N bounds a record's attempts, not its time; --commit before|after "
                       f"says when the consumer commits): {', '.join(self.not_yet)}")
        return out


def parse_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise UsageFailure(f"--config {text!r}: give KEY=VALUE, as in min.insync.replicas=2")
    return key, value


def read_topic_config(path: Path, settings: KafkaSettings) -> None:
    """A .properties file, or what kafka-configs.sh --describe or kafka-topics.sh --describe print."""
    try:
        text = read_bounded(path, "--topic-config", limit=1 << 20).decode("utf-8")
    except (OSError, FileProblem, UnicodeDecodeError) as e:
        raise UsageFailure(f"--topic-config {path}: {getattr(e, 'strerror', None) or e}") from None
    for n, line in enumerate(text.splitlines(), 1):
        where = f"{path}:{n}"
        line = line.strip()
        if not line or line.startswith(("#", "!")) or re.match(r"(Dynamic|All|Static) configs for ", line):
            continue
        if "ReplicationFactor:" in line or "Configs:" in line or line.startswith("Topic:"):
            _topics_describe(line, where, settings)
        else:  # key=value, with kafka-configs.sh's "sensitive=... synonyms={...}" after it
            pair = line.split(" sensitive=")[0].split(" synonyms=")[0]
            if "=" not in pair:
                raise UsageFailure(f"{where}: expected KEY=VALUE, found {line[:60]!r}")
            settings.add(*pair.split("=", 1), where)


def _topics_describe(line: str, where: str, settings: KafkaSettings) -> None:
    """kafka-topics.sh --describe: 'Topic: t  TopicId: ..  PartitionCount: 1  ReplicationFactor: 3
    Configs: min.insync.replicas=2,cleanup.policy=delete'; its per-partition lines say nothing more."""
    if "Partition:" in line and "ReplicationFactor:" not in line:
        return
    rf = re.search(r"ReplicationFactor:[ \t]*(\S*)", line)
    if rf:  # the whole word after it, read as --rf is: '5x', '2.0', '-2', '٥' or nothing is a typo, not 5, 2 or 3
        value = "" if rf.group(1).endswith(":") else rf.group(1)  # "ReplicationFactor:  Configs: ...": none given
        if not re.fullmatch(r"[0-9]{1,4}", value):
            raise UsageFailure(f"{where}: ReplicationFactor: {value[:40]!r} is not a whole number{digits_hint(value)}")
        settings.add("replication.factor", value, where)
    configs = re.search(r"Configs:\s*(\S*)", line)
    for pair in filter(None, (configs.group(1).split(",") if configs else [])):
        if "=" not in pair:
            raise UsageFailure(f"{where}: expected KEY=VALUE in Configs, found {pair[:60]!r}")
        settings.add(*pair.split("=", 1), where)


def kafka_values(config: Any) -> dict[str, str]:
    """The configuration as Kafka's keys and values (the report's echo); flush.messages
    unset is Kafka's default, left to the operating system."""
    values = {
        "replication.factor": str(config.rf),
        "min.insync.replicas": str(config.min_isr),
        "unclean.leader.election.enable": "true" if config.unclean_election else "false",
        "flush.messages": "1" if config.flush == "always" else "unset",
        "acks": config.acks,
    }
    if config.release is not None and config.release.elr and config.kraft:
        values["eligible.leader.replicas.version"] = "1" if config.elr else "0"
    if producer_requests(config):
        values["retries"] = str(config.retries)
        values["max.in.flight.requests.per.connection"] = str(config.max_in_flight)
        values["enable.idempotence"] = "true" if config.idempotence else "false"
    if offsets(config):
        values["auto.offset.reset"] = config.auto_offset_reset
    return values


def in_kafka_words(config: Any) -> str:
    return ", ".join(f"{k}={v}" for k, v in kafka_values(config).items())


def read_one(key: str, value: Any, where: str) -> tuple[str, Any] | None:
    """One Kafka key and value as a suite writes them (TOML: a number, a switch, a string):
    (the ModelConfig field, its value), or None for a key the model leaves aside."""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    settings = KafkaSettings()
    settings.add(key, text, where)
    return next(iter(settings.values.items()), None)
