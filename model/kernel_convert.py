"""Exact conversions between the scalar model's packed ints and the vector kernel's components.

Both directions go component by component (a replica's local or slot, the request
sequence) through dicts filled on first use, so a conversion is a few look-ups, shifts
and ors per state: what replays, trace rebuilding and Spark's seeds need, off the hot
path. Numbers have the same codes in both encodings; a log is looked up by its records
(the two tables of logs differ); requests go slot by slot.
"""

from __future__ import annotations

from typing import Any

from .kernel_keys import KernelDomainError
from .kernel_tables import KernelTables
from .layout import Layout
from .schema import LogKind, RequestsKind


class ScalarBridge:
    """``components(state)``: every kernel component of a packed state; ``scalar(values)``: back."""

    def __init__(self, T: KernelTables, layout: Layout) -> None:
        self.T, self.L = T, layout
        cfg = layout.config
        self.shared = [f for f in layout.schema.shared_fields if f.kept(cfg)]
        self.slot_of_local: dict[int, int] = {}
        self.local_of_slot: dict[int, int] = {}
        self.rq_of_bits: dict[int, int] = {}
        self.bits_of_rq: dict[int, int] = {}

    def components(self, state: int) -> dict[str, int]:
        L = self.L
        out: dict[str, int] = {}
        for r in range(L.rf):
            local = L.local(state, r)
            slot = self.slot_of_local.get(local)
            if slot is None:
                slot = self.slot_of_local[local] = self._slot(local)
            out[f"slot{r}"] = slot
        for f in self.shared:
            if isinstance(f.kind, RequestsKind):
                bits = state & self._requests_mask()
                rq = self.rq_of_bits.get(bits)
                if rq is None:
                    rq = self.rq_of_bits[bits] = self._rq(bits)
                out[f.name] = rq
            else:
                out[f.name] = L.shared[f.name].get(state)
        return out

    def _slot(self, local: int) -> int:
        L, T = self.L, self.T
        meta, log = local & L.meta_mask, local >> L.meta_bits
        values: dict[str, Any] = {}
        for f in T.replica_fields:
            if isinstance(f.kind, LogKind):
                kernel_log = T.log_table.index.get(L.logs.logs[log])
                if kernel_log is None:
                    raise KernelDomainError("a log with a repeated record id: outside the vector kernel's tables")
                values[f.name] = kernel_log
            else:
                values[f.name] = L.meta_view[f.name][meta]
        slot = int(T.slot_of(T.combined(values)))
        if slot < 0:
            raise KernelDomainError(f"a replica state outside the vector kernel's tables: {values}")
        return slot

    def _requests_mask(self) -> int:
        L = self.L
        count = L.shared[self.T.requests_field.name]
        end = L.slots[-1].shift + L.slots[-1].bits
        return ((1 << (end - count.shift)) - 1) << count.shift

    def _rq(self, bits: int) -> int:
        L, T = self.L, self.T
        nle = L.shared[T.requests_field.name].get(bits)
        rq = int(T.rq_off[nle])
        for e in range(nle):
            v = L.slots[e].get(bits)
            index = T.slot_index.get((L.slot_leader(v), L.slot_isr(v)))
            if index is None:
                raise KernelDomainError("a request outside the vector kernel's tables")
            rq += index * int(T.rq_pow[e])
        return rq

    def scalar(self, values: dict[str, int]) -> int:
        """The scalar packed state of component values (the inverse of ``components``)."""
        L = self.L
        state = 0
        for r, sh in enumerate(L.local_shift):
            slot = values[f"slot{r}"]
            local = self.local_of_slot.get(slot)
            if local is None:
                local = self.local_of_slot[slot] = self._local(slot)
            state |= local << sh
        for f in self.shared:
            if isinstance(f.kind, RequestsKind):
                rq = values[f.name]
                bits = self.bits_of_rq.get(rq)
                if bits is None:
                    bits = self.bits_of_rq[rq] = self._bits(rq)
                state |= bits
            else:
                state |= values[f.name] << L.shared[f.name].shift
        return state

    def _local(self, slot: int) -> int:
        L, T = self.L, self.T
        views = {f.name: int(T.field[f.name][slot]) for f in T.replica_fields}
        log = 0
        for f in T.replica_fields:
            if isinstance(f.kind, LogKind):
                log = L.logs.index[T.log_table.logs[views.pop(f.name)]]
        return log << L.meta_bits | L.meta_of(**views)

    def _bits(self, rq: int) -> int:
        L, T = self.L, self.T
        nle = int(T.RQ_NLE[rq])
        bits = nle << L.shared[T.requests_field.name].shift
        for e in range(nle):
            ld, isr = T.slots[int(T.RQ_SLOT[rq, e])]
            bits |= L.slot_value(ld, isr) << L.slots[e].shift
        return bits
