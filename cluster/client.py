"""The real clients: confluent-kafka's producer, consumer and admin client (librdkafka)."""

from __future__ import annotations

import time
from typing import Any

from . import ClusterError
from .processes import wait_until

Cluster = Any  # a cluster.Cluster: what these read is its ``bootstrap`` and ``release``

_QUIET = {"log_level": 0, "logger": None}


def _admin(cluster: Cluster):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap, "socket.timeout.ms": 3000, "log_level": 0})


def registered_brokers(cluster: Cluster) -> set[int]:
    """The brokers the cluster's metadata lists now (unfenced ones, on KRaft)."""
    try:
        md = _admin(cluster).list_topics(timeout=3)
    except Exception:
        return set()
    return set(md.brokers)


def create_topic(cluster: Cluster, topic: str, replicas: list[int], config: dict[str, str]) -> None:
    """One partition on ``replicas`` in that order: the first is the preferred, so the first elected, leader."""
    from confluent_kafka.admin import NewTopic

    admin = _admin(cluster)  # kept alive until the answer: a collected client cancels its requests
    fut = admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[replicas], config=config)],
                              operation_timeout=30, request_timeout=30)
    try:
        fut[topic].result(timeout=40)
    except Exception as e:
        raise ClusterError(f"could not create topic {topic} on Kafka {cluster.release}: {e}") from None


def record_id(value: bytes | None) -> int:
    """The model's record id of a record the harness wrote (b"m3" is record 3); -1 for another's."""
    if value and value[:1] == b"m" and value[1:].isdigit():
        return int(value[1:])
    return -1


class Producer:
    """One producer for a replay: record ``m<k>`` is the model's record k, sent with the trace's acks."""

    def __init__(self, cluster: Cluster, acks: str, idempotent: bool) -> None:
        from confluent_kafka import Producer as _Producer

        self.results: dict[int, str | None] = {}  # record id -> None while in flight, "ok" or the error
        self.offsets: dict[int, int] = {}
        self._p = _Producer({
            "bootstrap.servers": cluster.bootstrap,
            "acks": {"all": "all", "1": "1", "0": "0"}[acks],
            "enable.idempotence": idempotent,
            "retries": 0,
            "linger.ms": 0,
            "compression.type": "none",
            "request.timeout.ms": 60000,
            "message.timeout.ms": 120000,
            "log_level": 0,
        })

    def warm(self, topic: str, leader: int, timeout: float = 20) -> None:
        """Learn the partition's leader now, as a producer that has been running for a while knows it;
        it keeps that view until a request fails (librdkafka refreshes metadata every 5 minutes).
        Asked until the answer names ``leader``: a broker that has not yet heard of the new topic
        answers with no leader, and the producer would then ask again later, maybe of a paused
        broker, and hang on it with the record unsent."""
        def named() -> bool:
            try:
                part = self._p.list_topics(topic, timeout=5).topics[topic].partitions.get(0)
            except Exception:
                return False
            return part is not None and part.error is None and part.leader == leader

        if not wait_until(named, timeout, 0.2):
            raise ClusterError(f"the producer never learned that broker {leader} leads {topic}")

    def send(self, topic: str, record: int) -> None:
        self.results[record] = None

        def done(err, msg, record=record):
            self.results[record] = "ok" if err is None else err.name()
            if err is None and msg.offset() is not None and msg.offset() >= 0:
                self.offsets[record] = msg.offset()

        self._p.produce(topic, value=f"m{record}".encode(), partition=0, on_delivery=done)
        self._p.poll(0)

    def poll(self) -> None:
        self._p.poll(0)

    def acknowledged(self) -> set[int]:
        self._p.poll(0)
        return {r for r, res in self.results.items() if res == "ok"}

    def close(self) -> None:
        self._p.purge(in_queue=True, in_flight=True)
        self._p.flush(0)


class Consumer:
    """Reads one record at a chosen offset, from the partition's leader, below its high watermark."""

    def __init__(self, cluster: Cluster) -> None:
        from confluent_kafka import Consumer as _Consumer

        self._c = _Consumer({
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "isrcheck-replay",
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
            "log_level": 0,
        })

    def read_at(self, topic: str, offset: int, timeout: float) -> tuple[int, int] | None:
        """(record id, leader epoch) of the record at ``offset``, or None if none came."""
        from confluent_kafka import TopicPartition

        self._c.assign([TopicPartition(topic, 0, offset)])
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            msg = self._c.poll(0.2)
            if msg is None or msg.error():
                continue
            if msg.offset() == offset:
                epoch = msg.leader_epoch()
                return record_id(msg.value()), -1 if epoch is None else epoch
        return None

    def close(self) -> None:
        self._c.close()
