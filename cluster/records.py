"""Read what a Kafka broker leaves on disk: log segments and checkpoint files.

Log segments
------------
A partition folder (``<log.dir>/<topic>-<partition>/``) holds segment files named
``<20-digit base offset>.log``.  Each is a plain concatenation of *record batches* in the
"magic 2" format that every Kafka release since 0.11 writes.  A batch is a fixed 61-byte
header followed by its records::

    int64  baseOffset
    int32  batchLength            bytes that follow this field (so a batch is 12 + batchLength)
    int32  partitionLeaderEpoch   the leader epoch of the leader that appended the batch
    int8   magic                  2
    uint32 crc                    CRC-32C of everything from attributes to the end
    int16  attributes             bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control
    int32  lastOffsetDelta
    int64  baseTimestamp
    int64  maxTimestamp
    int64  producerId
    int16  producerEpoch
    int32  baseSequence
    int32  recordCount

and each record is (zig-zag varints, as in protobuf)::

    varint length, int8 attributes, varlong timestampDelta, varint offsetDelta,
    varint keyLength (-1: null), key, varint valueLength (-1: null), value,
    varint headerCount, headers (varint keyLength, key, varint valueLength, value)

Limits, on purpose:

* The CRC is **not** verified: CRC-32C (Castagnoli) is not in the standard library, and a
  table-driven version in pure Python is slow for no gain here (a torn write shows up as a
  truncated tail, which is handled; a flipped bit inside a batch is not detected).
* Only uncompressed batches are decoded; a batch whose codec bits are not 0 raises
  ``ValueError`` naming the codec (gzip, snappy, lz4 or zstd).
* Only magic 2: an older message set (magic 0 or 1) raises ``ValueError``.
* A partial batch at the end of a file (a crash in the middle of an append, or a reader
  racing a writer) ends the iteration silently, as Kafka's own log recovery treats it.
  So does a zero-filled tail (a preallocated segment).

Checkpoint files
----------------
``replication-offset-checkpoint`` (high watermarks), ``recovery-point-offset-checkpoint``
and ``log-start-offset-checkpoint`` in a log dir are text: a version line (``0``), a count
line, then ``topic partition offset`` lines.  A partition's ``leader-epoch-checkpoint`` is
the same with ``epoch startOffset`` lines.  Kafka writes them to a temporary file and renames
it, but a missing or half-written file reads as empty here rather than raising.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .wire import Reader

__all__ = [
    "Batch",
    "Record",
    "iter_batches",
    "read_checkpoint",
    "read_leader_epoch_checkpoint",
    "read_partition_log",
    "read_segment",
]

#: bytes before a batch's length has been read (baseOffset + batchLength)
LOG_OVERHEAD = 12
#: the whole fixed batch header, up to and including recordCount
BATCH_HEADER_SIZE = 61
#: attribute bits
_CODEC_MASK = 0x07
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

# everything in the header after batchLength, in one unpack
_HEADER = struct.Struct(">qiibIhiqqqhii")


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a batch.  ``offset`` is absolute (base offset + offset delta)."""

    offset: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True, slots=True)
class Batch:
    """One record batch.  ``is_control`` batches carry transaction markers (key type 0 abort,
    1 commit) or, in a KRaft log, raft control records (2 and up); their records are kept as
    they are, with the control key in ``key``."""

    base_offset: int
    last_offset: int
    partition_leader_epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_control: bool
    is_transactional: bool
    records: tuple[Record, ...]
    position: int = 0  # the byte where the batch starts in its segment file


def _read_records(data: bytes, start: int, end: int, base_offset: int, count: int) -> tuple[Record, ...]:
    cur = Reader(data, start, end, "record")
    out = []
    for _ in range(count):
        length = cur.varint()
        rec_end = cur.pos + length
        if length < 0 or rec_end > end:
            raise ValueError(f"record length {length} runs past its batch at offset {base_offset}")
        rc = Reader(data, cur.pos, rec_end, "record")
        rc.int8()  # attributes: unused by every current release
        rc.varint()  # timestamp delta
        offset_delta = rc.varint()
        key = rc.nullable_bytes()
        value = rc.nullable_bytes()
        for _h in range(rc.varint()):  # headers: read past them
            rc.take(rc.varint())
            rc.nullable_bytes()
        if rc.pos != rec_end:
            raise ValueError(f"record at offset {base_offset + offset_delta} has {rec_end - rc.pos} stray bytes")
        out.append(Record(base_offset + offset_delta, key, value))
        cur.pos = rec_end
    if cur.pos != end:
        raise ValueError(f"batch at offset {base_offset} has {end - cur.pos} bytes after its {count} records")
    return tuple(out)


def iter_batches(data: bytes) -> Iterator[Batch]:
    """The record batches of one segment's bytes, in file order.

    Stops silently at a truncated tail (fewer bytes left than the next batch's header or
    length says) and at a zero-filled tail.  Raises ``ValueError`` for a compressed batch, an
    old (magic 0/1) message set, or a batch whose records do not add up to its length.
    The CRC is not checked (see the module docstring).
    """
    if isinstance(data, memoryview):
        data = bytes(data)
    pos = 0
    size = len(data)
    while pos + LOG_OVERHEAD <= size:
        base_offset, batch_length = struct.unpack_from(">qi", data, pos)
        if batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
            if not any(data[pos:]):
                return  # a zero-filled (preallocated, never written) tail
            raise ValueError(f"corrupt batch at byte {pos}: length {batch_length} is shorter than a batch header")
        end = pos + LOG_OVERHEAD + batch_length
        if end > size:
            return  # partial batch: the tail of an interrupted append
        (base_offset, _len, leader_epoch, magic, _crc, attributes, last_delta, _base_ts, _max_ts,
         producer_id, producer_epoch, base_sequence, count) = _HEADER.unpack_from(data, pos)
        if magic != 2:
            raise ValueError(f"batch at offset {base_offset} (byte {pos}) has magic {magic}; "
                             "only the magic 2 record batch format (Kafka 0.11 and later) is supported")
        codec = attributes & _CODEC_MASK
        if codec:
            name = CODECS.get(codec, f"unknown codec {codec}")
            raise ValueError(f"batch at offset {base_offset} is compressed with {name}; "
                             "only uncompressed batches (compression.type=none) can be decoded")
        records = _read_records(data, pos + BATCH_HEADER_SIZE, end, base_offset, count)
        yield Batch(
            base_offset=base_offset,
            last_offset=base_offset + last_delta,
            partition_leader_epoch=leader_epoch,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            is_control=bool(attributes & _CONTROL),
            is_transactional=bool(attributes & _TRANSACTIONAL),
            position=pos,
            records=records,
        )
        pos = end


def read_segment(path: str | Path) -> list[Batch]:
    """Every batch of one ``.log`` segment file."""
    return list(iter_batches(Path(path).read_bytes()))


def _segment_files(partition_dir: Path) -> list[Path]:
    segs = []
    for p in partition_dir.glob("*.log"):
        if p.stem.isdigit():
            segs.append((int(p.stem), p))
    return [p for _, p in sorted(segs)]


def truncate_partition_log(partition_dir: str | Path, offset: int) -> None:
    """Cut a stopped replica's log before ``offset``, as a power loss drops what never reached
    the disk: every batch from the one holding ``offset`` on is gone (a batch is written
    whole or not at all), and the indexes of the segments cut are deleted, for the broker to
    rebuild when it recovers the log at restart."""
    for seg in _segment_files(Path(partition_dir)):
        cut = next((b.position for b in iter_batches(seg.read_bytes()) if b.last_offset >= offset), None)
        if cut is None:
            continue
        with open(seg, "r+b") as f:
            f.truncate(cut)
        for index in (seg.with_suffix(".index"), seg.with_suffix(".timeindex")):
            index.unlink(missing_ok=True)


def read_partition_log(partition_dir: str | Path) -> list[Batch]:
    """Every batch of a partition folder, segment after segment in base-offset order."""
    out: list[Batch] = []
    for seg in _segment_files(Path(partition_dir)):
        out.extend(iter_batches(seg.read_bytes()))
    return out


def _checkpoint_lines(path: str | Path) -> list[list[str]] | None:
    """The entry lines of a checkpoint file, split on whitespace; None when it is missing,
    half-written or garbled."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    if len(lines) < 2 or lines[0].strip() != "0":
        return None
    try:
        count = int(lines[1].strip())
    except ValueError:
        return None
    entries = [ln.split() for ln in lines[2:] if ln.strip()]
    if count < 0 or len(entries) != count:
        return None
    return entries


def read_checkpoint(path: str | Path) -> dict[tuple[str, int], int]:
    """An offset checkpoint file (``replication-offset-checkpoint``,
    ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``) as
    ``{(topic, partition): offset}``.  A missing, half-written or garbled file gives ``{}``."""
    entries = _checkpoint_lines(path)
    if entries is None:
        return {}
    out: dict[tuple[str, int], int] = {}
    for fields in entries:
        if len(fields) != 3:
            return {}
        try:
            out[(fields[0], int(fields[1]))] = int(fields[2])
        except ValueError:
            return {}
    return out


def read_leader_epoch_checkpoint(path: str | Path) -> list[tuple[int, int]]:
    """A partition's ``leader-epoch-checkpoint`` as ``[(epoch, start_offset), ...]`` in file
    order (ascending).  A missing, half-written or garbled file gives ``[]``."""
    entries = _checkpoint_lines(path)
    if entries is None:
        return []
    out: list[tuple[int, int]] = []
    for fields in entries:
        if len(fields) != 2:
            return []
        try:
            out.append((int(fields[0]), int(fields[1])))
        except ValueError:
            return []
    return out
