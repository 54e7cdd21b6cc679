"""A topic's settings read from a live cluster, as ``kafka-topics.sh --describe`` and
``kafka-configs.sh --describe --all`` read them: through the Admin API (DescribeTopics and
DescribeConfigs, confluent-kafka's AdminClient), with the client settings of a
``--command-config`` file as Kafka's tools take them.

The entries are those a describe output file gives (``kafka_describe.Entry``): the topic's
replication factor (its first partition's replica count, as the tool prints) and every
config the broker reports for it, defaults included, so that they go through the very
same reading (``KafkaSettings.add``) as a file's.
"""

from __future__ import annotations

from pathlib import Path

import javaproperties

from isrcheck.files import FileProblem, read_bounded

from .common import UsageFailure
from isrcheck.model.now import PartitionNow

from .kafka_describe import Entry

TIMEOUT = 15.0  # seconds for each request, broker lookup included


def read_topic(bootstrap: str, topic: str, command_config: Path | None) -> tuple[list[Entry], list[PartitionNow]]:
    """The topic's entries, and its partitions' states now (the brokers down: the replicas that
    the metadata does not list among the cluster's live brokers, as DescribeCluster would, which
    librdkafka sends to a broker the metadata may name while it is down); one line
    (UsageFailure) on failure."""
    from confluent_kafka import KafkaException, TopicCollection
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    where = f"--bootstrap-server {bootstrap}"
    conf = {**client_settings(command_config), "bootstrap.servers": bootstrap, "log_level": 0,
            "socket.timeout.ms": int(TIMEOUT * 1000)}
    try:
        admin = AdminClient(conf)
        described = admin.describe_topics(TopicCollection([topic]), request_timeout=TIMEOUT)[topic].result(TIMEOUT + 5)
        resource = ConfigResource(ResourceType.TOPIC, topic)
        configs = admin.describe_configs([resource], request_timeout=TIMEOUT)[resource].result(TIMEOUT + 5)
        live = set(admin.list_topics(topic, timeout=TIMEOUT).brokers)  # the brokers the metadata lists
    except KafkaException as e:
        raise UsageFailure(f"{where}: {_words(e)}") from None
    except TimeoutError:
        raise UsageFailure(f"{where}: no answer within {TIMEOUT + 5:g} s (is a broker listening there?)") from None
    except ValueError as e:  # a setting librdkafka does not know, from --command-config
        raise UsageFailure(f"{where}: {e}") from None
    partitions = sorted(described.partitions, key=lambda p: p.id)
    at = f"{bootstrap} topic {topic}"
    entries: list[Entry] = [("replication.factor", str(len(partitions[0].replicas)), at)] if partitions else []
    entries += [(name, entry.value, at) for name, entry in sorted(configs.items())
                if entry.value is not None and not entry.is_sensitive]
    return entries, [_now(p, live) for p in partitions]


def _now(p, live: set[int]) -> PartitionNow:
    """A partition as TopicPartitionInfo gives it (no ELR: the client does not report it)."""
    replicas = tuple(n.id for n in p.replicas)
    leader = p.leader.id if p.leader is not None and p.leader.id >= 0 else None
    return PartitionNow(p.id, leader, replicas, tuple(n.id for n in p.isr), None,
                        tuple(b for b in replicas if b not in live))


def client_settings(path: Path | None) -> dict[str, str]:
    """A --command-config file's client settings (security.protocol, sasl.*, ssl.*), as librdkafka
    takes them; a setting it does not know is refused when the client is made."""
    if path is None:
        return {}
    try:
        text = read_bounded(path, "--command-config", limit=1 << 20).decode("utf-8")
    except FileProblem as e:
        raise UsageFailure(str(e)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageFailure(f"--command-config {path}: {getattr(e, 'strerror', None) or e}") from None
    return dict(javaproperties.loads(text))


def _words(e: Exception) -> str:
    """A KafkaException's error in one line: its reason, as the broker or librdkafka gave it."""
    error = e.args[0] if e.args else e
    text = getattr(error, "str", lambda: str(error))()
    return " ".join(str(text).split())[:300]
