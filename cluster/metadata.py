"""Read a KRaft controller's metadata log: one partition's controller-side history, and the
brokers' registrations and fencing.

The log
-------
A KRaft node keeps the metadata log in ``<metadata.log.dir>/__cluster_metadata-0/`` as ordinary
record batches (see :mod:`cluster.records`).  Control batches there are raft's own
(LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters) and are skipped.  The value of every
other record is one metadata record, framed as::

    uvarint frameVersion   1 (Kafka rejects 0, the 2.8 preview framing, and anything newer)
    uvarint apiKey         which record: 0 RegisterBroker, 2 Topic, 3 Partition, ...
    uvarint version        the record's own version
    message                in Kafka's "flexible versions" encoding

The flexible encoding: integers are big-endian fixed width, a uuid is 16 bytes, a string or an
array is prefixed with an unsigned varint N+1 (0 meaning null), and every struct (the record and
each nested struct) ends with a tagged-fields section: an unsigned varint count, then for each
field an unsigned varint tag, an unsigned varint size, and the field's bytes.  A tagged field is
written only when it differs from its default.

Sources
-------
The field lists and versions were read from Kafka's message definitions in
``metadata/src/main/resources/common/metadata/`` (PartitionRecord.json,
PartitionChangeRecord.json, TopicRecord.json, RemoveTopicRecord.json, RegisterBrokerRecord.json,
UnregisterBrokerRecord.json, FenceBrokerRecord.json, UnfenceBrokerRecord.json,
BrokerRegistrationChangeRecord.json) at apache/kafka commit
1eb7644349cb07139d6a3c1ad1986979647cac99 (trunk, 2024-10-25), and checked against the copies
packed in the kafka-metadata jars of 3.6.2, 3.7.2, 3.9.2, 4.0.2 and 4.1.2: the wire layout of
these records is the same in all of them, except that 3.6.2 knows only version 0 of
PartitionRecord and PartitionChangeRecord, versions 0-2 of RegisterBrokerRecord and 0-1 of
BrokerRegistrationChangeRecord (3.7.2 spells the last partition field LastKnownELR).
ClearElrRecord (api key 28, one compact string TopicName, empty meaning every topic) exists only
in 4.1.2's jar; how it is applied was read from 4.1.2's compiled ``TopicDelta`` (``javap -c``):
every partition of the topic whose ELR or last-known ELR is non-empty is merged with a change
that sets both to empty.

How a PartitionChangeRecord is applied follows ``PartitionRegistration.merge`` in
``metadata/src/main/java/org/apache/kafka/metadata/PartitionRegistration.java`` (same commit;
identical rule on the 3.6 and 3.9 branches, c888ab9c and c821449f, and in 4.1.2's bytecode):

* each of replicas, ISR, ELR and last-known ELR is replaced when the record carries it
  (a tagged field, absent = null = unchanged; an empty list is a real value);
* the leader field defaults to -2, "no change": then leader and leader epoch stay.  Any other
  value, -1 (no leader) or even the current leader, becomes the leader and bumps the leader
  epoch by exactly one.  (The controller writes the current leader on purpose to force a bump:
  on a reassignment that removes replicas, and, under metadata versions before 3.6-IV0, on an
  ISR shrink: ``PartitionChangeBuilder``, same commit);
* the partition epoch goes up by one on every record, whatever it changes;
* leader recovery state -1 means unchanged.

What the releases write (fresh clusters, default features; checked against Kafka's own
``DumpLogSegments --cluster-metadata-decoder``): 3.6.2 (metadata.version 3.6-IV2) writes
Partition/PartitionChange v0 and RegisterBroker v2; 3.7.2 and 3.9.2 v1 (with Directories) and
RegisterBroker v3; 4.0.2 v2, but with the ELR feature off no ELR field is ever set; 4.1.2 v2 with
``eligible.leader.replicas.version=1``, so a partition that falls below min.insync.replicas gets
an ``EligibleLeaderReplicas`` tag, and a ClearElrRecord follows each topic-level
min.insync.replicas config.  Fencing is a BrokerRegistrationChangeRecord v0 (Fenced 1/-1) in all
five; a controlled shutdown of a broker that leads something adds one v1 (InControlledShutdown 1)
first, while one that leads nothing goes straight to fenced.  ISRs are written in no particular
order (e.g. ``[1, 2, 0]``); this module sorts them.

Limits: only the log segments are read, not snapshots (``*.checkpoint``); a log whose first
batch is not offset 0 (older segments deleted after a snapshot) raises ``ValueError`` rather
than giving a history that misses its start.  Records inside a metadata transaction
(Begin/End/AbortTransactionRecord, api keys 23-25) count only once it ends; an aborted one, or
one still open at the end of the log, is dropped.  An uncommitted tail (entries a quorum
leader appended but that were never committed) is read like the rest.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .records import iter_batches
from .wire import Reader, tag_int8, tag_int32, tag_int32s

__all__ = [
    "BrokerEvent",
    "MetadataRecord",
    "PartitionState",
    "broker_events",
    "iter_metadata_records",
    "partition_history",
]

# api keys
REGISTER_BROKER = 0
UNREGISTER_BROKER = 1
TOPIC = 2
PARTITION = 3
PARTITION_CHANGE = 5
FENCE_BROKER = 7
UNFENCE_BROKER = 8
REMOVE_TOPIC = 9
BROKER_REGISTRATION_CHANGE = 17
BEGIN_TRANSACTION = 23
END_TRANSACTION = 24
ABORT_TRANSACTION = 25
CLEAR_ELR = 28

METADATA_PARTITION_DIR = "__cluster_metadata-0"
NO_LEADER = -1
NO_LEADER_CHANGE = -2

# the highest version of each record that this module knows the layout of
_MAX_VERSION = {
    REGISTER_BROKER: 3,
    UNREGISTER_BROKER: 0,
    TOPIC: 0,
    PARTITION: 2,
    PARTITION_CHANGE: 2,
    FENCE_BROKER: 0,
    UNFENCE_BROKER: 0,
    REMOVE_TOPIC: 0,
    BROKER_REGISTRATION_CHANGE: 2,
    CLEAR_ELR: 0,
}


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """One framed metadata record: where it is in the log, what it is, and its message bytes."""

    offset: int
    api_key: int
    version: int
    data: bytes


@dataclass(frozen=True, slots=True)
class PartitionState:
    """The controller's view of a partition after the record at ``offset``.

    ``isr``, ``elr`` and ``last_known_elr`` are sorted (they are sets); ``replicas`` keeps
    Kafka's order (the first is the preferred leader).  ``leader`` is None when there is none.
    ``leader_recovery_state`` is 1 while a leader chosen by unclean election recovers, else 0.
    """

    offset: int
    leader: int | None
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    replicas: tuple[int, ...]
    leader_recovery_state: int = 0


@dataclass(frozen=True, slots=True)
class BrokerEvent:
    """A broker lifecycle step in the metadata log.  ``kind`` is one of "registered",
    "unregistered", "fenced", "unfenced", "controlled-shutdown"; ``epoch`` is the broker epoch
    the record names (None where the record has none)."""

    offset: int
    broker: int
    kind: str
    epoch: int | None


def _metadata_partition_dir(metadata_dir: str | Path) -> Path:
    d = Path(metadata_dir)
    if (d / METADATA_PARTITION_DIR).is_dir():
        return d / METADATA_PARTITION_DIR
    if d.is_dir():
        return d
    raise FileNotFoundError(f"no metadata log folder at {d}")


def _segments(partition_dir: Path) -> list[Path]:
    segs = sorted((int(p.stem), p) for p in partition_dir.glob("*.log") if p.stem.isdigit())
    return [p for _, p in segs]


def _check_version(rec: MetadataRecord) -> None:
    top = _MAX_VERSION.get(rec.api_key)
    if top is not None and rec.version > top:
        raise ValueError(f"metadata record at offset {rec.offset}: api key {rec.api_key} version {rec.version} "
                         f"is newer than this reader knows (up to {top})")


def iter_metadata_records(metadata_dir: str | Path) -> Iterator[MetadataRecord]:
    """Every metadata record of the log, in offset order, still encoded.

    ``metadata_dir`` is either the ``__cluster_metadata-0`` folder or the log dir holding it.
    Raft control batches are skipped; transactions are not resolved here (see
    :func:`_committed`).  Raises ``ValueError`` when the log does not start at offset 0, or on
    a frame version other than 1.
    """
    part = _metadata_partition_dir(metadata_dir)
    first = True
    for seg in _segments(part):
        for batch in iter_batches(seg.read_bytes()):
            if first:
                first = False
                if batch.base_offset != 0:
                    raise ValueError(f"the metadata log in {part} starts at offset {batch.base_offset}, "
                                     "not 0: its start is only in a snapshot, which this reader does not read")
            if batch.is_control:
                continue
            for rec in batch.records:
                if rec.value is None:
                    continue
                r = Reader(rec.value)
                frame = r.uvarint()
                if frame != 1:
                    raise ValueError(f"metadata record at offset {rec.offset} has frame version {frame}; "
                                     "only frame version 1 exists since Kafka 3.0")
                api_key = r.uvarint()
                version = r.uvarint()
                yield MetadataRecord(rec.offset, api_key, version, rec.value[r.pos :])


def _committed(records: Iterable[MetadataRecord]) -> Iterator[MetadataRecord]:
    """Resolve metadata transactions: hold records from BeginTransaction until
    EndTransaction (then release them) or AbortTransaction (then drop them)."""
    pending: list[MetadataRecord] | None = None
    for rec in records:
        if rec.api_key == BEGIN_TRANSACTION:
            pending = []
        elif rec.api_key == END_TRANSACTION:
            if pending:
                yield from pending
            pending = None
        elif rec.api_key == ABORT_TRANSACTION:
            pending = None
        elif pending is not None:
            pending.append(rec)
        else:
            yield rec


# --- partition history ---------------------------------------------------------------------


def _decode_topic(rec: MetadataRecord) -> tuple[str, uuid.UUID]:
    r = Reader(rec.data)
    name = r.compact_string()
    topic_id = r.uuid()
    r.skip_tagged_fields()
    r.done("TopicRecord")
    return name or "", topic_id


def _decode_remove_topic(rec: MetadataRecord) -> uuid.UUID:
    r = Reader(rec.data)
    topic_id = r.uuid()
    r.skip_tagged_fields()
    r.done("RemoveTopicRecord")
    return topic_id


def _decode_partition(rec: MetadataRecord) -> tuple[uuid.UUID, int, PartitionState]:
    """PartitionRecord v0-2."""
    r = Reader(rec.data)
    partition = r.int32()
    topic_id = r.uuid()
    replicas = r.compact_int32s() or ()
    isr = r.compact_int32s() or ()
    r.compact_int32s()  # removing replicas
    r.compact_int32s()  # adding replicas
    leader = r.int32()
    leader_epoch = r.int32()
    partition_epoch = r.int32()
    if rec.version >= 1:
        r.compact_uuids()  # directories (KIP-858)
    tags = r.tagged_fields()
    r.done("PartitionRecord")
    recovery = tag_int8(tags, 0, 0)
    elr = last_known_elr = None
    if rec.version >= 2:
        elr = tag_int32s(tags, 1)
        last_known_elr = tag_int32s(tags, 2)
    state = PartitionState(
        offset=rec.offset,
        leader=None if leader == NO_LEADER else leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        isr=tuple(sorted(isr)),
        elr=tuple(sorted(elr or ())),
        last_known_elr=tuple(sorted(last_known_elr or ())),
        replicas=tuple(replicas),
        leader_recovery_state=recovery,
    )
    return topic_id, partition, state


def _apply_partition_change(rec: MetadataRecord, prev: PartitionState) -> PartitionState:
    """PartitionChangeRecord v0-2 merged into ``prev`` (see the module docstring)."""
    r = Reader(rec.data)
    r.int32()  # partition id, already matched by the caller
    r.uuid()
    tags = r.tagged_fields()
    r.done("PartitionChangeRecord")
    isr = tag_int32s(tags, 0)
    leader = tag_int32(tags, 1, NO_LEADER_CHANGE)
    replicas = tag_int32s(tags, 2)
    recovery = tag_int8(tags, 5, -1)
    elr = last_known_elr = None
    if rec.version >= 2:
        elr = tag_int32s(tags, 6)
        last_known_elr = tag_int32s(tags, 7)
    if leader == NO_LEADER_CHANGE:
        new_leader, new_epoch = prev.leader, prev.leader_epoch
    else:
        new_leader = None if leader == NO_LEADER else leader
        new_epoch = prev.leader_epoch + 1
    return PartitionState(
        offset=rec.offset,
        leader=new_leader,
        leader_epoch=new_epoch,
        partition_epoch=prev.partition_epoch + 1,
        isr=prev.isr if isr is None else tuple(sorted(isr)),
        elr=prev.elr if elr is None else tuple(sorted(elr)),
        last_known_elr=prev.last_known_elr if last_known_elr is None else tuple(sorted(last_known_elr)),
        replicas=prev.replicas if replicas is None else tuple(replicas),
        leader_recovery_state=prev.leader_recovery_state if recovery == -1 else recovery,
    )


def _partition_key(rec: MetadataRecord) -> tuple[int, uuid.UUID]:
    """(partition id, topic id): the first two fields of both partition records."""
    r = Reader(rec.data)
    return r.int32(), r.uuid()


def partition_history(metadata_dir: str | Path, topic: str, partition: int = 0) -> list[PartitionState]:
    """The controller-side states of ``topic``-``partition``, one per metadata record that
    created or changed it, in log order.

    Topic ids come from TopicRecord; records of other topics are not decoded.  If the topic is
    deleted and created again, the new incarnation's states follow the old one's.
    """
    ids: set[uuid.UUID] = set()  # ids the topic name has had (a deleted topic's id never returns)
    state: PartitionState | None = None
    history: list[PartitionState] = []
    for rec in _committed(iter_metadata_records(metadata_dir)):
        key = rec.api_key
        if key == TOPIC:
            _check_version(rec)
            name, topic_id = _decode_topic(rec)
            if name == topic:
                ids.add(topic_id)
        elif key == PARTITION or key == PARTITION_CHANGE:
            _check_version(rec)
            pid, topic_id = _partition_key(rec)
            if pid != partition or topic_id not in ids:
                continue
            if key == PARTITION:
                state = _decode_partition(rec)[2]
            elif state is None:
                raise ValueError(f"PartitionChangeRecord at offset {rec.offset} for {topic}-{partition} "
                                 "before its PartitionRecord")
            else:
                state = _apply_partition_change(rec, state)
            history.append(state)
        elif key == REMOVE_TOPIC:
            _check_version(rec)
            if _decode_remove_topic(rec) in ids:
                state = None
        elif key == CLEAR_ELR:
            _check_version(rec)
            r = Reader(rec.data)
            name = r.compact_string() or ""
            r.skip_tagged_fields()
            r.done("ClearElrRecord")
            if state is not None and name in ("", topic) and (state.elr or state.last_known_elr):
                state = PartitionState(
                    offset=rec.offset,
                    leader=state.leader,
                    leader_epoch=state.leader_epoch,
                    partition_epoch=state.partition_epoch + 1,
                    isr=state.isr,
                    elr=(),
                    last_known_elr=(),
                    replicas=state.replicas,
                    leader_recovery_state=state.leader_recovery_state,
                )
                history.append(state)
    return history


# --- brokers -------------------------------------------------------------------------------


def _decode_register_broker(rec: MetadataRecord) -> tuple[int, int, bool]:
    """RegisterBrokerRecord v0-3: (broker id, broker epoch, fenced)."""
    r = Reader(rec.data)
    broker = r.int32()
    if rec.version >= 2:
        r.boolean()  # IsMigratingZkBroker
    r.uuid()  # incarnation id
    epoch = r.int64()
    for _ in range(max(r.uvarint() - 1, 0)):  # endpoints
        r.compact_string()  # name
        r.compact_string()  # host
        r.uint16()  # port
        r.int16()  # security protocol
        r.skip_tagged_fields()
    for _ in range(max(r.uvarint() - 1, 0)):  # supported features
        r.compact_string()
        r.int16()
        r.int16()
        r.skip_tagged_fields()
    r.compact_string()  # rack
    fenced = r.boolean()
    if rec.version >= 1:
        r.boolean()  # in controlled shutdown
    r.skip_tagged_fields()  # tag 0 LogDirs in v3+
    r.done("RegisterBrokerRecord")
    return broker, epoch, fenced


def _decode_id_epoch(rec: MetadataRecord, what: str) -> tuple[int, int]:
    r = Reader(rec.data)
    broker = r.int32()
    epoch = r.int64()
    r.skip_tagged_fields()
    r.done(what)
    return broker, epoch


_ID_EPOCH_EVENTS = {  # records that are a broker id and epoch alone
    UNREGISTER_BROKER: ("UnregisterBrokerRecord", "unregistered"),
    FENCE_BROKER: ("FenceBrokerRecord", "fenced"),
    UNFENCE_BROKER: ("UnfenceBrokerRecord", "unfenced"),
}


def broker_events(metadata_dir: str | Path) -> list[BrokerEvent]:
    """Broker registrations, fencing, unfencing and controlled shutdowns, in log order.

    Fencing is written as FenceBrokerRecord/UnfenceBrokerRecord by metadata versions before
    3.3-IV2 and as a BrokerRegistrationChangeRecord (Fenced 1 / -1, InControlledShutdown 1)
    since; both give the same events.  A RegisterBrokerRecord gives one "registered" event
    (the broker starts fenced; its unfencing is a later record).
    """
    out: list[BrokerEvent] = []
    for rec in _committed(iter_metadata_records(metadata_dir)):
        key = rec.api_key
        if key == REGISTER_BROKER:
            _check_version(rec)
            broker, epoch, _fenced = _decode_register_broker(rec)
            out.append(BrokerEvent(rec.offset, broker, "registered", epoch))
        elif key in _ID_EPOCH_EVENTS:
            _check_version(rec)
            record_name, kind = _ID_EPOCH_EVENTS[key]
            broker, epoch = _decode_id_epoch(rec, record_name)
            out.append(BrokerEvent(rec.offset, broker, kind, epoch))
        elif key == BROKER_REGISTRATION_CHANGE:
            _check_version(rec)
            r = Reader(rec.data)
            broker = r.int32()
            epoch = r.int64()
            tags = r.tagged_fields()
            r.done("BrokerRegistrationChangeRecord")
            fenced = tag_int8(tags, 0, 0)
            shutdown = tag_int8(tags, 1, 0) if rec.version >= 1 else 0
            if fenced == 1:
                out.append(BrokerEvent(rec.offset, broker, "fenced", epoch))
            elif fenced == -1:
                out.append(BrokerEvent(rec.offset, broker, "unfenced", epoch))
            if shutdown == 1:
                out.append(BrokerEvent(rec.offset, broker, "controlled-shutdown", epoch))
    return out
