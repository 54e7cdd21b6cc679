"""Kafka's "flexible versions" wire encoding, as the KRaft metadata records are written.

Integers are big-endian and fixed width, a uuid is 16 bytes, a string or an array is
prefixed with an unsigned varint N+1 (0 meaning null), and every struct ends with a
tagged-fields section: an unsigned varint count, then for each field an unsigned varint tag,
an unsigned varint size, and the field's bytes (written only when it is not the default).
"""

from __future__ import annotations

import struct
import uuid


class Reader:
    """A read position in bytes, with Kafka's wire types: those of the flexible-versions
    messages and the varints of the record format. ``end`` bounds it within ``data``."""

    __slots__ = ("data", "pos", "end", "what")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None, what: str = "metadata record"):
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end
        self.what = what

    def _need(self, n: int) -> None:
        if self.pos + n > self.end:
            raise ValueError(f"{self.what} ends early (at byte {self.pos}, needs {n})")

    def _fixed(self, fmt: str, n: int):
        self._need(n)
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += n
        return v

    def int8(self) -> int:
        return self._fixed(">b", 1)

    def int16(self) -> int:
        return self._fixed(">h", 2)

    def uint16(self) -> int:
        return self._fixed(">H", 2)

    def int32(self) -> int:
        return self._fixed(">i", 4)

    def int64(self) -> int:
        return self._fixed(">q", 8)

    def boolean(self) -> bool:
        return self._fixed(">B", 1) != 0

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.take(16))

    def take(self, n: int) -> bytes:
        self._need(n)
        out = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return out

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            self._need(1)
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise ValueError(f"varint too long at byte {self.pos}")

    def varint(self) -> int:
        """A zig-zag encoded signed varint (or varlong), as records and headers use."""
        u = self.uvarint()
        return (u >> 1) ^ -(u & 1)

    def nullable_bytes(self) -> bytes | None:
        """A record's key or value: a signed varint length, -1 for null."""
        n = self.varint()
        return None if n < 0 else self.take(n)

    def skip(self, n: int) -> None:
        if self.pos + n > len(self.data):
            raise ValueError("metadata record ends early")
        self.pos += n

    def compact_string(self) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        if self.pos + n > len(self.data):
            raise ValueError("metadata record ends early")
        s = bytes(self.data[self.pos : self.pos + n]).decode("utf-8")
        self.pos += n
        return s

    def compact_int32s(self) -> tuple[int, ...] | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        return tuple(self.int32() for _ in range(n))

    def compact_uuids(self) -> tuple[uuid.UUID, ...] | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        return tuple(self.uuid() for _ in range(n))

    def tagged_fields(self) -> dict[int, bytes]:
        """The tagged-fields section that ends a struct: {tag: raw bytes}."""
        out = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            size = self.uvarint()
            if self.pos + size > len(self.data):
                raise ValueError("metadata record ends early")
            out[tag] = bytes(self.data[self.pos : self.pos + size])
            self.pos += size
        return out

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.skip(self.uvarint())

    def done(self, what: str) -> None:
        if self.pos != len(self.data):
            raise ValueError(f"{len(self.data) - self.pos} stray bytes after {what}")


def _tagged(tags: dict[int, bytes], tag: int, read, default):
    raw = tags.get(tag)
    if raw is None:
        return default
    r = Reader(raw)
    v = read(r)
    r.done(f"tagged field {tag}")
    return v


def tag_int32s(tags: dict[int, bytes], tag: int) -> tuple[int, ...] | None:
    """A nullable compact int32 array held in a tagged field; None when absent or null."""
    return _tagged(tags, tag, Reader.compact_int32s, None)


def tag_int8(tags: dict[int, bytes], tag: int, default: int) -> int:
    return _tagged(tags, tag, Reader.int8, default)


def tag_int32(tags: dict[int, bytes], tag: int, default: int) -> int:
    return _tagged(tags, tag, Reader.int32, default)
