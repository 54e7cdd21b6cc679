"""The packed encoding of a state: one Python int, derived from the state schema.

Why: the scalar engines' hot path is the successor function and the visited set. A
state as one int is hashable, about 40 bytes, exact, and the same in every process;
a field is read with a shift and a mask or a list look-up, and an update is the
addition of a delta.

Layout, low bits first::

    shared fields | replica 0 local | replica 1 local | ...

The shared fields are bit fields in declaration order (``fields.py``); the request
sequence takes a count (the next leader epoch) and one slot per epoch, ``(leader + 1)
* 2**rf + isr``, so that the quorum ISR, the count and the slots, declared one after
the other, are one contiguous controller block. A replica's local is ``log << meta_bits
| meta``: the log an index into the table of every log up to the log size
(``logs.py``), the meta a mixed-radix number over the replica's other fields, the last
declared the least significant, so that changing one field is the addition of ``delta
* unit``. A field that a configuration does not keep takes no bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

from .logs import LogTable, Tick, all_logs, count_logs, no_tick, table_bytes
from .schema import NONE, Field, LogKind, RequestsKind, Schema


def _bits(max_value: int) -> int:
    return max(1, int(max_value).bit_length())


@dataclass(frozen=True)
class BitField:
    shift: int
    bits: int

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    def get(self, state: int) -> int:
        return (state >> self.shift) & self.mask


def _meta_radix(schema: Schema) -> dict[str, int]:
    """Per field of a replica's meta (all but the log), its radix: 1 where the configuration
    does not keep the field."""
    cfg = schema.config
    fields = schema.replica_fields
    has_log = bool(fields) and isinstance(fields[0].kind, LogKind)
    if any(not f.kind.number for f in fields[1 if has_log else 0 :]):
        raise TypeError("a replica's fields are its log (if any), then numbers")
    return {f.name: f.kind.size(cfg) if f.kept(cfg) else 1 for f in fields[1 if has_log else 0 :]}


def _has_log(schema: Schema) -> bool:
    return any(isinstance(f.kind, LogKind) for f in schema.replica_fields)


def layout_bytes(schema: Schema) -> dict[str, int]:
    """The memory a ``Layout`` of this schema will take, computed before building it, by
    part: its table of logs, and a list per meta field with an entry per meta index."""
    cfg = schema.config
    logs = 0
    if _has_log(schema):
        n_epochs = cfg.max_leader_epoch + 1
        n_codes = cfg.max_records * n_epochs
        logs = table_bytes(count_logs(n_codes, cfg.logsize), n_codes, n_epochs, cfg.logsize)
    radix = _meta_radix(schema)
    return {"logs": logs, "replica fields": 8 * len(radix) * prod(radix.values())}


class Layout:
    """Bit positions, radices and tables of one configuration (built once, shared by every
    state); ``tick`` is called every few thousand table entries (``Model.tick``)."""

    def __init__(self, schema: Schema, tick: Tick = no_tick) -> None:
        self.schema = schema
        self.config = cfg = schema.config
        self.tick = tick
        self.rf = rf = cfg.rf
        self.max_records, self.log_size, self.max_epoch = cfg.max_records, cfg.logsize, cfg.max_leader_epoch
        self.n_isr = 1 << rf
        self.n_epochs = cfg.max_leader_epoch + 1
        self.n_records = cfg.max_records * self.n_epochs  # record codes id * epochs + epoch
        self.logs = (
            LogTable(all_logs(self.n_records, self.log_size, tick=tick), cfg.max_records, self.n_epochs,
                     self.log_size, tick)
            if _has_log(schema) else None
        )
        self.n_logs = self.logs.n if self.logs is not None else 1
        self.popcount = [bin(m).count("1") for m in range(1 << max(rf, cfg.max_records))]
        self._replica_layout(schema)
        self._shared_layout(schema)

    # ---- a replica's local: log << meta_bits | meta ------------------------------------------
    def _replica_layout(self, schema: Schema) -> None:
        cfg = self.config
        self.radix = _meta_radix(schema)
        fields = schema.replica_fields
        self.log_field: Field | None = fields[0] if self.logs is not None else None
        self.meta_fields: tuple[Field, ...] = tuple(f for f in fields if f.name in self.radix)
        self.unit: dict[str, int] = {}
        unit = 1
        for f in reversed(self.meta_fields):
            self.unit[f.name] = unit
            unit *= self.radix[f.name]
        self.n_meta = unit
        # per meta index, each field's view value (NONE for None)
        self.meta_view: dict[str, list[int]] = {}
        for f in self.meta_fields:
            u, n = self.unit[f.name], self.radix[f.name]
            codes = [(m // u) % n for m in range(self.n_meta)]
            if f.kept(cfg):
                values = [f.kind.view(f.kind.value(c, cfg)) for c in range(n)]
            else:
                values = [schema.init_view(f)]
            self.meta_view[f.name] = [values[c] for c in codes]
            self.tick()
        self.meta_bits = _bits(self.n_meta - 1)
        self.meta_mask = (1 << self.meta_bits) - 1
        self.local_bits = self.meta_bits + _bits(self.n_logs - 1)
        self.local_mask = (1 << self.local_bits) - 1

    def meta_of(self, **views: int) -> int:
        """The meta index of these field views (fields not named take their initial value)."""
        meta = 0
        for f in self.meta_fields:
            if f.kept(self.config):
                v = views.get(f.name, self.schema.init_view(f))
                meta += f.kind.code(f.kind.readable(v), self.config) * self.unit[f.name]
        return meta

    # ---- shared bit fields ------------------------------------------------------------------------
    def _shared_layout(self, schema: Schema) -> None:
        cfg = self.config
        shift = 0

        def field(max_value: int) -> BitField:
            nonlocal shift
            f = BitField(shift, _bits(max_value))
            shift += f.bits
            return f

        self.shared: dict[str, BitField] = {}
        self.slots: list[BitField] = []
        self.requests_field: Field | None = None
        for f in schema.shared_fields:
            if not f.kept(cfg):
                continue
            if isinstance(f.kind, RequestsKind):
                self.requests_field = f
                self.shared[f.name] = field(self.max_epoch + 1)  # the count: the next leader epoch
                self.slots = [field((self.rf + 1) * self.n_isr - 1) for _ in range(self.max_epoch + 1)]
            else:
                self.shared[f.name] = field(f.kind.size(cfg) - 1)
        self.shared_bits = shift
        self.shared_mask = (1 << shift) - 1
        self.local_shift = [shift + r * self.local_bits for r in range(self.rf)]
        self.state_bits = shift + self.rf * self.local_bits

    # ---- request slots ------------------------------------------------------------------------------
    def slot_value(self, leader: int, isr: int) -> int:
        return (leader + 1) * self.n_isr + isr

    def slot_leader(self, slot: int) -> int:
        return slot // self.n_isr - 1

    def slot_isr(self, slot: int) -> int:
        return slot % self.n_isr

    def record(self, rid: int, epoch: int) -> int:
        return rid * self.n_epochs + epoch

    # ---- reading -------------------------------------------------------------------------------------
    def local(self, state: int, replica: int) -> int:
        return (state >> self.local_shift[replica]) & self.local_mask

    def initial_state(self) -> int:
        """Every field at its initial value."""
        return self.pack(self.schema_initial_views())

    def schema_initial_views(self) -> dict[str, Any]:
        """Field name -> initial view value (per-replica fields: a list), for ``pack``."""
        out: dict[str, Any] = {}
        for f in self.schema.fields:
            v = self.schema.init_view(f)
            if f.replica:
                v = [v] * self.rf
            out[f.name] = v
        return out

    def pack(self, views: dict[str, Any]) -> int:
        """The packed int of field values as the views hold them: numbers, the log as a tuple
        of record codes, the requests as a tuple of (leader, isr mask) slots."""
        cfg = self.config
        state = 0
        for f in self.schema.shared_fields:
            if not f.kept(cfg):
                continue
            v = views[f.name]
            if isinstance(f.kind, RequestsKind):
                state |= len(v) << self.shared[f.name].shift
                for e, (leader, isr) in enumerate(v):
                    state |= self.slot_value(leader, isr) << self.slots[e].shift
            else:
                state |= f.kind.code(f.kind.readable(v), cfg) << self.shared[f.name].shift
        for r in range(self.rf):
            meta = self.meta_of(**{f.name: views[f.name][r] for f in self.meta_fields})
            log = self.logs.index[tuple(views[self.log_field.name][r])] if self.log_field is not None else 0
            state |= ((log << self.meta_bits) | meta) << self.local_shift[r]
        return state

    def unpack(self, state: int) -> dict[str, Any]:
        """``pack``'s inverse."""
        cfg = self.config
        out: dict[str, Any] = {}
        for f in self.schema.shared_fields:
            if not f.kept(cfg):
                out[f.name] = self.schema.init_view(f)
            elif isinstance(f.kind, RequestsKind):
                n = self.shared[f.name].get(state)
                slots = [self.slots[e].get(state) for e in range(n)]
                out[f.name] = tuple((self.slot_leader(v), self.slot_isr(v)) for v in slots)
            else:
                out[f.name] = f.kind.view(f.kind.value(self.shared[f.name].get(state), cfg))
        locals_ = [self.local(state, r) for r in range(self.rf)]
        if self.log_field is not None:
            out[self.log_field.name] = [self.logs.logs[loc >> self.meta_bits] for loc in locals_]
        for f in self.meta_fields:
            out[f.name] = [self.meta_view[f.name][loc & self.meta_mask] for loc in locals_]
        return out


def replica_reader(tables: list, shifts: list[int], mask: int):
    """``f(state) -> (tables[0][local 0], tables[1][local 1], ...)``, unrolled for this rf.

    Why generated code: reading every replica's local is on the hot path of the
    successor function, the canonicaliser and the properties; an unrolled
    expression with constant shifts does it without a loop, a zip or a list.
    """
    names = {f"t{i}": t for i, t in enumerate(tables)}
    body = ", ".join(f"t{i}[(s >> {sh}) & {mask}]" for i, sh in enumerate(shifts))
    return eval(f"lambda s: ({body},)", names)  # noqa: S307 - built from ints and local names only


__all__ = ["NONE", "BitField", "Layout", "layout_bytes", "replica_reader"]
