"""cluster.records and cluster.metadata on files real KRaft clusters wrote (tests/data/kafka/,
see its README for the run that made them), plus synthetic bytes for the edge cases."""

from __future__ import annotations

import struct
import uuid
from pathlib import Path

import pytest

from isrcheck.cluster.metadata import (
    BrokerEvent,
    MetadataRecord,
    PartitionState,
    _apply_partition_change,
    _committed,
    broker_events,
    iter_metadata_records,
    partition_history,
)
from isrcheck.cluster.records import (
    Batch,
    Record,
    iter_batches,
    read_checkpoint,
    read_leader_epoch_checkpoint,
    read_partition_log,
    read_segment,
)

DATA = Path(__file__).parent / "data" / "kafka"
VERSIONS = ["3.6.2", "3.7.2", "3.9.2", "4.0.2", "4.1.2"]
SEGMENT = "00000000000000000000.log"
R = (0, 1, 2)  # the replicas of t-0, in preferred order


def controller(version: str) -> Path:
    return DATA / version / "controller"


# --- the partition's history in the controller's metadata log --------------------------------

# The same run on every release (tests/data/kafka/README.md): created with leader 0; broker 0
# killed -> leader 1 at epoch 1; broker 0 back in the ISR (no epoch bump); broker 1 shut down
# cleanly -> leader 0 at epoch 2; broker 0 killed -> leader 2 at epoch 3, ISR [2].  Only 4.1.2,
# whose fresh clusters enable eligible.leader.replicas.version=1, puts broker 0 in the ELR then.
OFFSETS = {
    "3.6.2": (33, 44, 71, 77, 93),
    "3.7.2": (42, 52, 69, 74, 90),
    "3.9.2": (35, 46, 63, 68, 85),
    "4.0.2": (37, 50, 65, 69, 87),
    "4.1.2": (30, 43, 60, 65, 82),
}


def expected_history(version: str) -> list[PartitionState]:
    o = OFFSETS[version]
    last_elr = (0,) if version == "4.1.2" else ()
    return [
        PartitionState(o[0], leader=0, leader_epoch=0, partition_epoch=0, isr=(0, 1, 2), elr=(), last_known_elr=(), replicas=R),
        PartitionState(o[1], leader=1, leader_epoch=1, partition_epoch=1, isr=(1, 2), elr=(), last_known_elr=(), replicas=R),
        PartitionState(o[2], leader=1, leader_epoch=1, partition_epoch=2, isr=(0, 1, 2), elr=(), last_known_elr=(), replicas=R),
        PartitionState(o[3], leader=0, leader_epoch=2, partition_epoch=3, isr=(0, 2), elr=(), last_known_elr=(), replicas=R),
        PartitionState(o[4], leader=2, leader_epoch=3, partition_epoch=4, isr=(2,), elr=last_elr, last_known_elr=(), replicas=R),
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_partition_history(version):
    assert partition_history(controller(version), "t", 0) == expected_history(version)


@pytest.mark.parametrize("version", VERSIONS)
def test_partition_history_accepts_the_metadata_partition_folder(version):
    folder = controller(version) / "__cluster_metadata-0"
    assert partition_history(folder, "t") == expected_history(version)


@pytest.mark.parametrize("version", ["3.6.2", "4.1.2"])
def test_other_topics_and_partitions_have_no_history(version):
    assert partition_history(controller(version), "__consumer_offsets") == []
    assert partition_history(controller(version), "t", 1) == []
    assert partition_history(controller(version), "u") == []


# (PartitionRecord, PartitionChangeRecord, RegisterBrokerRecord) versions, metadata.version level
RECORD_VERSIONS = {
    "3.6.2": (0, 0, 2, 14),  # 3.6-IV2
    "3.7.2": (1, 1, 3, 19),  # 3.7-IV4: Directories (KIP-858)
    "3.9.2": (1, 1, 3, 21),  # 3.9-IV0
    "4.0.2": (2, 2, 3, 25),  # 4.0-IV3: the ELR fields exist, but the ELR feature is off
    "4.1.2": (2, 2, 3, 27),  # 4.1-IV1, eligible.leader.replicas.version=1
}


def _feature_levels(version):
    levels = {}
    for rec in iter_metadata_records(controller(version)):
        if rec.api_key == 12:  # FeatureLevelRecord: compact string name, int16 level, tags
            n = rec.data[0] - 1
            levels[rec.data[1 : 1 + n].decode()] = struct.unpack_from(">h", rec.data, 1 + n)[0]
    return levels


@pytest.mark.parametrize("version", VERSIONS)
def test_record_versions_each_release_writes(version):
    seen = {}
    for rec in iter_metadata_records(controller(version)):
        seen.setdefault(rec.api_key, set()).add(rec.version)
    p, pc, reg, mv = RECORD_VERSIONS[version]
    assert seen[3] == {p} and seen[5] == {pc} and seen[0] == {reg}
    levels = _feature_levels(version)
    assert levels["metadata.version"] == mv
    assert levels.get("eligible.leader.replicas.version", 0) == (1 if version == "4.1.2" else 0)
    # a broker that leads something at controlled shutdown: BrokerRegistrationChangeRecord v1
    assert seen[17] == {0, 1}
    # ClearElrRecord (api key 28) only exists in 4.1: written on the topic's min.insync.replicas
    assert (28 in seen) == (version == "4.1.2")


def test_metadata_offsets_are_increasing_and_start_at_zero():
    batches = read_segment(controller("4.1.2") / "__cluster_metadata-0" / SEGMENT)
    assert batches[0].base_offset == 0 and batches[0].is_control
    # raft's control records: their key is the control type (2: LeaderChangeMessage)
    assert batches[0].records[0].key == b"\x00\x00\x00\x02"
    offsets = [r.offset for b in batches for r in b.records]
    assert offsets == list(range(len(offsets)))


# --- brokers ---------------------------------------------------------------------------------

BROKER_EVENTS = {
    "3.6.2": [(16, 0, "registered", 16), (18, 2, "registered", 18), (20, 0, "unfenced", 16),
              (23, 2, "unfenced", 18), (25, 1, "registered", 25), (29, 1, "unfenced", 25),
              (45, 0, "fenced", 16), (66, 0, "registered", 66), (70, 0, "unfenced", 66),
              (76, 1, "controlled-shutdown", 25), (79, 1, "fenced", 25), (94, 0, "fenced", 66)],
    "3.7.2": [(27, 2, "registered", 27), (29, 0, "registered", 29), (32, 2, "unfenced", 27),
              (34, 0, "unfenced", 29), (35, 1, "registered", 35), (38, 1, "unfenced", 35),
              (53, 0, "fenced", 29), (65, 0, "registered", 65), (67, 0, "unfenced", 65),
              (73, 1, "controlled-shutdown", 35), (76, 1, "fenced", 35), (91, 0, "fenced", 65)],
    "3.9.2": [(20, 1, "registered", 20), (23, 1, "unfenced", 20), (25, 0, "registered", 25),
              (27, 2, "registered", 27), (29, 0, "unfenced", 25), (31, 2, "unfenced", 27),
              (47, 0, "fenced", 25), (59, 0, "registered", 59), (61, 0, "unfenced", 59),
              (67, 1, "controlled-shutdown", 20), (70, 1, "fenced", 20), (86, 0, "fenced", 59)],
    # 4.x writes the fencing of the cleanly stopped broker 1 twice, some 10 offsets apart
    # (72/82 and 67/77); 3.x once
    "4.0.2": [(23, 2, "registered", 23), (25, 0, "registered", 25), (27, 1, "registered", 27),
              (29, 2, "unfenced", 23), (30, 0, "unfenced", 25), (33, 1, "unfenced", 27),
              (51, 0, "fenced", 25), (61, 0, "registered", 61), (63, 0, "unfenced", 61),
              (68, 1, "controlled-shutdown", 27), (72, 1, "fenced", 27), (82, 1, "fenced", 27),
              (88, 0, "fenced", 61)],
    "4.1.2": [(15, 0, "registered", 15), (18, 1, "registered", 18), (20, 2, "registered", 20),
              (22, 0, "unfenced", 15), (24, 1, "unfenced", 18), (26, 2, "unfenced", 20),
              (44, 0, "fenced", 15), (55, 0, "registered", 55), (58, 0, "unfenced", 55),
              (64, 1, "controlled-shutdown", 18), (67, 1, "fenced", 18), (77, 1, "fenced", 18),
              (83, 0, "fenced", 55)],
}


@pytest.mark.parametrize("version", VERSIONS)
def test_broker_events(version):
    assert broker_events(controller(version)) == [BrokerEvent(*e) for e in BROKER_EVENTS[version]]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_fencing_of_a_killed_leader_follows_its_failover(version):
    """handleBrokerFenced writes the partition changes first, then the fence record."""
    history = partition_history(controller(version), "t")
    first_fence = next(e for e in broker_events(controller(version)) if e.kind == "fenced")
    assert (first_fence.broker, first_fence.offset) == (0, history[1].offset + 1)


# --- the brokers' partition logs and checkpoints ---------------------------------------------

VALUES = [(0, b"m0", 0), (1, b"m1", 0), (2, b"m2", 1), (3, b"m3", 1)]  # offset, value, leader epoch
LEADER_EPOCHS = {
    "b0": [(0, 0), (1, 2), (2, 4)],  # back as leader at epoch 2 from offset 4
    "b1": [(0, 0), (1, 2)],  # stopped cleanly before epoch 2
    "b2": [(0, 0), (1, 2), (3, 4)],  # a follower during epoch 2, which appended nothing
}


@pytest.mark.parametrize("broker", ["b0", "b1", "b2"])
@pytest.mark.parametrize("version", VERSIONS)
def test_partition_log(version, broker):
    batches = read_partition_log(DATA / version / broker / "t-0")
    got = [(r.offset, r.value, b.partition_leader_epoch) for b in batches for r in b.records]
    assert got == VALUES
    for b in batches:
        assert b.base_offset == b.last_offset
        assert (b.producer_id, b.producer_epoch, b.base_sequence) == (-1, -1, -1)
        assert not b.is_control and not b.is_transactional
        assert b.records[0].key is None


@pytest.mark.parametrize("broker", ["b0", "b1", "b2"])
@pytest.mark.parametrize("version", VERSIONS)
def test_checkpoints(version, broker):
    folder = DATA / version / broker
    assert read_leader_epoch_checkpoint(folder / "t-0" / "leader-epoch-checkpoint") == LEADER_EPOCHS[broker]
    assert read_checkpoint(folder / "replication-offset-checkpoint") == {("t", 0): 4}
    recovery = read_checkpoint(folder / "recovery-point-offset-checkpoint")
    if broker == "b1":  # the one broker that shut down cleanly
        assert recovery == {("t", 0): 4}
    elif (version, broker) == ("3.6.2", "b2"):
        assert recovery == {("t", 0): 0}
    else:  # killed before it ever rewrote the empty file it creates at start-up
        assert (folder / "recovery-point-offset-checkpoint").stat().st_size == 0
        assert recovery == {}


@pytest.mark.parametrize("version", VERSIONS)
def test_broker_epochs_agree_with_the_controller(version):
    """Every leader epoch a broker recorded is one the controller gave that partition, and a
    broker that recorded an epoch as leader was the controller's leader at that epoch."""
    leaders = {s.leader_epoch: s.leader for s in partition_history(controller(version), "t")}
    for broker in ("b0", "b1", "b2"):
        for epoch, start in read_leader_epoch_checkpoint(DATA / version / broker / "t-0" / "leader-epoch-checkpoint"):
            assert epoch in leaders
            if start == 4:  # no data at that epoch: only the leader records it
                assert leaders[epoch] == int(broker[1])


# --- synthetic bytes -------------------------------------------------------------------------


def _zigzag(n: int) -> bytes:
    return bytes(_uv((n << 1) ^ (n >> 63)))


def _uv(u: int) -> bytearray:
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        if u:
            out.append(b | 0x80)
        else:
            out.append(b)
            return out


def _record(offset_delta, key, value, headers=()):
    body = b"\x00" + _zigzag(0) + _zigzag(offset_delta)
    for part in (key, value):
        body += _zigzag(-1) if part is None else _zigzag(len(part)) + part
    body += _zigzag(len(headers))
    for hk, hv in headers:
        body += _zigzag(len(hk)) + hk + (_zigzag(-1) if hv is None else _zigzag(len(hv)) + hv)
    return _zigzag(len(body)) + body


def make_batch(base_offset, records, leader_epoch=0, attributes=0, magic=2, producer=(-1, -1, -1)):
    """A magic-2 batch; ``records`` are (key, value) or (key, value, headers).  The CRC is left
    0 (the reader does not check it)."""
    body = b"".join(_record(i, *r) for i, r in enumerate(records))
    after_length = struct.pack(">ibIhiqqqhii", leader_epoch, magic, 0, attributes, len(records) - 1,
                               0, 0, producer[0], producer[1], producer[2], len(records)) + body
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


def test_synthetic_batch_with_keys_headers_and_nulls():
    data = make_batch(7, [(b"k", b"v", [(b"h", b"x"), (b"n", None)]), (None, None), (b"", b"")],
                      leader_epoch=5, attributes=0x10, producer=(42, 3, 11))
    (b,) = iter_batches(data)
    assert b == Batch(base_offset=7, last_offset=9, partition_leader_epoch=5, producer_id=42, producer_epoch=3,
                      base_sequence=11, is_control=False, is_transactional=True,
                      records=(Record(7, b"k", b"v"), Record(8, None, None), Record(9, b"", b"")))


def test_truncated_tail_is_ignored():
    data = (DATA / "4.1.2" / "b1" / "t-0" / SEGMENT).read_bytes()
    full = list(iter_batches(data))
    assert len(full) == 4 and len(data) == 4 * 70
    for cut in (len(data) - 1, len(data) - 30, 3 * 70 + 61, 3 * 70 + 12, 3 * 70 + 11, 3 * 70 + 1):
        assert list(iter_batches(data[:cut])) == full[:3], cut
    assert list(iter_batches(data[:3 * 70])) == full[:3]
    assert list(iter_batches(b"")) == []
    # a preallocated segment's zero-filled tail
    assert list(iter_batches(data + bytes(4096))) == full


def test_truncated_metadata_log_reads_up_to_the_cut(tmp_path):
    src = controller("4.1.2") / "__cluster_metadata-0" / SEGMENT
    data = src.read_bytes()
    # cut inside the batch of the last PartitionChangeRecord (offset 82)
    pos = 0
    while True:
        base, length = struct.unpack_from(">qi", data, pos)
        if base <= 82 <= base + struct.unpack_from(">i", data, pos + 23)[0]:
            break
        pos += 12 + length
    folder = tmp_path / "__cluster_metadata-0"
    folder.mkdir()
    (folder / SEGMENT).write_bytes(data[: pos + 20])
    assert partition_history(tmp_path, "t") == expected_history("4.1.2")[:4]


@pytest.mark.parametrize("codec,name", [(1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")])
def test_compressed_batch_is_refused_by_name(codec, name):
    data = make_batch(0, [(None, b"m0")]) + make_batch(1, [(None, b"m1")], attributes=codec)
    with pytest.raises(ValueError, match=f"compressed with {name}"):
        list(iter_batches(data))


def test_compressed_real_batch_is_refused(tmp_path):
    data = bytearray((DATA / "3.9.2" / "b0" / "t-0" / SEGMENT).read_bytes())
    struct.pack_into(">h", data, 70 + 21, 4)  # the second batch's attributes: zstd
    (tmp_path / SEGMENT).write_bytes(bytes(data))
    with pytest.raises(ValueError, match="offset 1 is compressed with zstd"):
        read_partition_log(tmp_path)


def test_old_message_format_is_refused():
    data = bytearray(make_batch(0, [(None, b"x")]))
    data[16] = 1
    with pytest.raises(ValueError, match="magic 1"):
        list(iter_batches(bytes(data)))


def test_segments_are_read_in_base_offset_order(tmp_path):
    (tmp_path / "00000000000000000010.log").write_bytes(make_batch(10, [(None, b"b")]))
    (tmp_path / "00000000000000000002.log").write_bytes(make_batch(2, [(None, b"a")]))
    (tmp_path / "00000000000000000002.index").write_bytes(b"\x00" * 8)
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n0\n")
    assert [r.value for b in read_partition_log(tmp_path) for r in b.records] == [b"a", b"b"]


def test_checkpoint_missing_or_half_written(tmp_path):
    p = tmp_path / "replication-offset-checkpoint"
    assert read_checkpoint(p) == {}
    assert read_leader_epoch_checkpoint(p) == []
    p.write_text("0\n2\nt 0 4\nu 3 17\n")
    assert read_checkpoint(p) == {("t", 0): 4, ("u", 3): 17}
    for half in ("", "0", "0\n", "0\n2\n", "0\n2\nt 0 4\n", "0\n2\nt 0 4\nu 3", "0\n2\nt 0 4\nu 3 1x", "1\n0\n"):
        p.write_text(half)
        assert read_checkpoint(p) == {}, half
    e = tmp_path / "leader-epoch-checkpoint"
    e.write_text("0\n2\n0 0\n3 17\n")
    assert read_leader_epoch_checkpoint(e) == [(0, 0), (3, 17)]
    e.write_text("0\n2\n0 0\n")
    assert read_leader_epoch_checkpoint(e) == []


# --- the merge rule, on hand-made metadata records -------------------------------------------

TOPIC_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def _tags(fields: dict[int, bytes]) -> bytes:
    out = bytes(_uv(len(fields)))
    for tag in sorted(fields):
        out += bytes(_uv(tag)) + bytes(_uv(len(fields[tag]))) + fields[tag]
    return out


def _int32s(xs) -> bytes:
    return bytes(_uv(len(xs) + 1)) + b"".join(struct.pack(">i", x) for x in xs)


def _change(**kw) -> bytes:
    tags = {}
    if "isr" in kw:
        tags[0] = _int32s(kw["isr"])
    if "leader" in kw:
        tags[1] = struct.pack(">i", kw["leader"])
    if "elr" in kw:
        tags[6] = _int32s(kw["elr"])
    if "last_known_elr" in kw:
        tags[7] = _int32s(kw["last_known_elr"])
    return struct.pack(">i", 0) + TOPIC_ID.bytes + _tags(tags)


BASE = PartitionState(10, leader=1, leader_epoch=4, partition_epoch=9, isr=(1, 2), elr=(0,), last_known_elr=(),
                      replicas=(0, 1, 2))


def _apply(data: bytes, version: int = 2) -> PartitionState:
    return _apply_partition_change(MetadataRecord(11, 5, version, data), BASE)


def test_merge_without_leader_keeps_the_leader_epoch():
    s = _apply(_change(isr=[2, 1, 0]))
    assert (s.offset, s.leader, s.leader_epoch, s.partition_epoch, s.isr, s.elr) == (11, 1, 4, 10, (0, 1, 2), (0,))


def test_merge_with_the_same_leader_still_bumps_the_leader_epoch():
    s = _apply(_change(leader=1))
    assert (s.leader, s.leader_epoch, s.partition_epoch, s.isr) == (1, 5, 10, (1, 2))


def test_merge_to_no_leader_bumps_the_leader_epoch():
    s = _apply(_change(leader=-1, isr=[2]))
    assert (s.leader, s.leader_epoch, s.isr) == (None, 5, (2,))


def test_merge_elr_fields_are_replaced_only_when_present_and_only_from_version_2():
    s = _apply(_change(elr=[], last_known_elr=[2, 0]))
    assert (s.elr, s.last_known_elr) == ((), (0, 2))
    s = _apply(_change(elr=[], last_known_elr=[2, 0]), version=1)  # tags 6/7 mean nothing before v2
    assert (s.elr, s.last_known_elr) == ((0,), ())


def test_metadata_transactions():
    def rec(offset, key):
        return MetadataRecord(offset, key, 0, b"")

    records = [rec(0, 23), rec(1, 2), rec(2, 24), rec(3, 23), rec(4, 3), rec(5, 25), rec(6, 5), rec(7, 23), rec(8, 9)]
    assert [r.offset for r in _committed(records)] == [1, 6]


def _metadata_value(api_key: int, version: int, body: bytes) -> bytes:
    return bytes(_uv(1)) + bytes(_uv(api_key)) + bytes(_uv(version)) + body


def _write_metadata_log(folder: Path, values: list[bytes], base_offset: int = 0) -> None:
    part = folder / "__cluster_metadata-0"
    part.mkdir(parents=True)
    data = b"".join(make_batch(base_offset + i, [(None, v)]) for i, v in enumerate(values))
    (part / SEGMENT).write_bytes(data)


def _topic_record(name: str, tid: uuid.UUID) -> bytes:
    return _metadata_value(2, 0, bytes(_uv(len(name) + 1)) + name.encode() + tid.bytes + b"\x00")


def test_synthetic_log_clear_elr_remove_and_recreate(tmp_path):
    other = uuid.UUID(int=7)
    again = uuid.UUID(int=8)
    partition_v2 = (struct.pack(">i", 0) + TOPIC_ID.bytes + _int32s([0, 1, 2]) + _int32s([0]) + _int32s([])
                    + _int32s([]) + struct.pack(">iii", 0, 3, 6) + bytes(_uv(1))  # no directories
                    + _tags({1: _int32s([2, 1]), 2: _int32s([])}))
    values = [
        _topic_record("t", TOPIC_ID),
        _topic_record("x", other),
        _metadata_value(3, 2, partition_v2),
        _metadata_value(3, 2, struct.pack(">i", 0) + other.bytes + partition_v2[20:]),  # topic x: ignored
        _metadata_value(99, 0, b"whatever"),  # an api key this reader does not know: skipped
        _metadata_value(28, 0, bytes(_uv(2)) + b"x" + b"\x00"),  # ClearElr for x: not t
        _metadata_value(28, 0, bytes(_uv(1)) + b"\x00"),  # ClearElr for every topic
        _metadata_value(5, 2, _change(leader=0)),
        _metadata_value(9, 0, TOPIC_ID.bytes + b"\x00"),  # RemoveTopic
        _topic_record("t", again),
        _metadata_value(3, 0, struct.pack(">i", 0) + again.bytes + _int32s([2]) + _int32s([2]) + _int32s([])
                        + _int32s([]) + struct.pack(">iii", 2, 0, 0) + b"\x00"),
    ]
    _write_metadata_log(tmp_path, values)
    assert partition_history(tmp_path, "t") == [
        PartitionState(2, leader=0, leader_epoch=3, partition_epoch=6, isr=(0,), elr=(1, 2), last_known_elr=(), replicas=R),
        PartitionState(6, leader=0, leader_epoch=3, partition_epoch=7, isr=(0,), elr=(), last_known_elr=(), replicas=R),
        PartitionState(7, leader=0, leader_epoch=4, partition_epoch=8, isr=(0,), elr=(), last_known_elr=(), replicas=R),
        PartitionState(10, leader=2, leader_epoch=0, partition_epoch=0, isr=(2,), elr=(), last_known_elr=(), replicas=(2,)),
    ]


def test_metadata_log_without_its_start_is_refused(tmp_path):
    _write_metadata_log(tmp_path, [_topic_record("t", TOPIC_ID)], base_offset=500)
    with pytest.raises(ValueError, match="starts at offset 500"):
        partition_history(tmp_path, "t")


def test_unknown_frame_version_is_refused(tmp_path):
    _write_metadata_log(tmp_path, [b"\x00\x02\x00" + b"\x00"])
    with pytest.raises(ValueError, match="frame version 0"):
        partition_history(tmp_path, "t")


def test_newer_record_version_is_refused(tmp_path):
    _write_metadata_log(tmp_path / "n", [_metadata_value(2, 0, b"\x02t" + TOPIC_ID.bytes + b"\x00"),
                                         _metadata_value(3, 3, b"")])
    with pytest.raises(ValueError, match="api key 3 version 3 is newer"):
        partition_history(tmp_path / "n", "t")
