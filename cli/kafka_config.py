"""Kafka's own configuration keys in, the model's options out: ``--config KEY=VALUE`` and
the ``--topic-config``, ``--producer-config``, ``--consumer-config`` and ``--broker-config`` files.

The files are read by kafka_describe (.properties, and what Kafka's describe commands print);
here their keys become the model's options. The keys the model decides on become its options;
any other key (``retention.ms``, ``bootstrap.servers``) is listed once as ignored, a near miss of
a modelled key named with it, so that a typo shows; typed by hand (--config, a suite), such a
near miss is refused. The topic-level keys are those of Kafka 3.9's ``TopicConfig`` (and the
replication factor, which ``kafka-topics.sh`` prints beside them); ``acks`` is the producer's.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from isrcheck.model.fields import offsets, producer_requests

from . import kafka_describe
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
    latest records to the page cache, which --flush os covers (it lets the OS flush any time).
    Kafka's default is Long.MAX_VALUE, 9223372036854775807 (LogConfig: no forced flush), which
    kafka-configs.sh --all prints; Kafka reads a long of at least 1."""
    if not re.fullmatch(r"[0-9]{1,19}", text) or not 1 <= int(text) <= 2**63 - 1:
        raise UsageFailure(f"{key}={text[:40]}: a whole number from 1 to 9223372036854775807 is needed"
                           f"{digits_hint(text)}")
    return "always" if int(text) == 1 else "os"


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
KEY_OF = {field: key for key, (field, _) in MODELLED.items()}  # ModelConfig field -> its Kafka key
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
UNSET = ("", "null")  # what kafka-configs.sh --all prints for a key without a value (or a sensitive one)
# the broker's names for the topic defaults it sets (server.properties)
BROKER_NAMES = {"default.replication.factor": "replication.factor", "log.flush.interval.messages": "flush.messages"}


def near_miss(key: str) -> str | None:
    """The modelled key a key not known is likely a typo of (min.insync.replica: min.insync.replicas)."""
    near = difflib.get_close_matches(key, MODELLED, n=1, cutoff=0.75)
    return near[0] if near else None


@dataclass
class KafkaSettings:
    """What Kafka keys said: model option values, and the keys left aside."""

    values: dict[str, Any] = field(default_factory=dict)  # ModelConfig field -> value
    given: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (value as written, where)
    ignored: list[str] = field(default_factory=list)
    not_yet: list[str] = field(default_factory=list)
    unset: list[str] = field(default_factory=list)
    partitions: list[Any] = field(default_factory=list)  # the topic's partition lines (model.now.PartitionNow)

    def add(self, key: str, value: str, where: str, typed: bool = False) -> bool:
        """One key; True when the model reads it. A key typed by hand (--config, a suite) that is a
        near miss of a modelled one is refused; from a file Kafka wrote or reads, it is ignored with a note."""
        key, value = key.strip(), value.strip()
        if key in MODELLED and value.lower() in UNSET:
            return _once(self.unset, key)
        if key in MODELLED:
            name, read = MODELLED[key]
            parsed = read(key, value)
            if key in self.given and self.values[name] != parsed:
                (before, at) = self.given[key]
                raise UsageFailure(f"{key} is given twice: {before} in {at}, {value} in {where}")
            self.values[name], self.given[key] = parsed, (value, where)
            return True
        near = None if key in IGNORED or key in NOT_YET else near_miss(key)
        if typed and near:
            raise UsageFailure(f"{where}: {key} is not a Kafka topic or producer key; did you mean {near}?")
        _once(self.not_yet if key in NOT_YET else self.ignored, f"{key} (did you mean {near}?)" if near else key)
        return False

    def notes(self) -> list[str]:
        out = []
        if self.ignored:
            out.append(f"ignored (no modelled behaviour depends on them): {', '.join(self.ignored)}")
        if self.not_yet:
            out.append("ignored (--delivery-timeout N bounds a record's attempts, not its time; --commit before|after "
                       f"says when the consumer commits): {', '.join(self.not_yet)}")
        if self.unset:
            out.append(f"unset, so Kafka's default (and the option's) applies: {', '.join(self.unset)}")
        return out


def _once(names: list[str], name: str) -> bool:
    if name not in names:
        names.append(name)
    return False


def parse_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise UsageFailure(f"--config {text!r}: give KEY=VALUE, as in min.insync.replicas=2")
    return key, value


def read_files(files: list[tuple[str, Path]], topic: str | None, settings: KafkaSettings, live: bool = False) -> list[str]:
    """The --*-config files into settings; the broker's are defaults that a topic's or a client's
    file overrides, as in Kafka. Returns the notes on what was read and not used. ``live``: the
    topic is read from a cluster too (--bootstrap-server), so --topic needs no describe file."""
    broker, notes, named = KafkaSettings(), [], False
    for option, path in files:
        reading = kafka_describe.read_file(path, option)
        named |= reading.described
        chosen = _topic(reading, topic, option, path)
        entries = reading.topics.get(None, []) + (reading.topics.get(chosen, []) if chosen is not None else [])
        into = broker if option == "--broker-config" else settings
        names = BROKER_NAMES if option == "--broker-config" else {}
        read = [into.add(names.get(k.strip(), k), v, w) for k, v, w in entries]
        partitions = reading.partitions.get(chosen, []) if chosen else sum(reading.partitions.values(), [])
        settings.partitions += partitions
        if not any(read):
            what = "only partition lines" if partitions else "only keys the model does not read" if entries else "nothing"
            raise UsageFailure(f"{option} {path}: no setting the model reads ({what}); the keys it reads: "
                               f"{', '.join(MODELLED)}")
    if topic is not None and not named and not live:
        raise UsageFailure(f"--topic {topic}: no file given is a describe output that names topics")
    for key, (value, where) in broker.given.items():
        if key not in settings.given:
            settings.add(key, value, where)
    for kept in ("ignored", "not_yet", "unset"):
        for name in getattr(broker, kept):
            _once(getattr(settings, kept), name)
    return notes


def _topic(reading: kafka_describe.Reading, topic: str | None, option: str, path: Path) -> str | None:
    """The topic asked for (--topic), or the only one a file describes."""
    names = [t for t in {**reading.topics, **reading.partitions} if t is not None]
    if topic is not None and reading.described and topic not in names:
        raise UsageFailure(f"{option} {path}: no topic {topic}; it describes {', '.join(names) or 'none'}")
    if topic is None and len(names) > 1:
        raise UsageFailure(f"{option} {path} describes {len(names)} topics ({', '.join(names)}): pick one with --topic")
    return topic if topic is not None else (names[0] if names else None)


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
    settings.add(key, text, where, typed=True)
    return next(iter(settings.values.items()), None)
