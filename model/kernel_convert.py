"""Exact conversions between the scalar model's packed ints and the vector kernel's keys.

Both directions go component by component (a replica's local, the request sequence)
through dicts filled on first use, so a conversion is a few look-ups, shifts and ors
per state: what replays, trace rebuilding and Spark's seeds need, off the hot path.
"""

from __future__ import annotations

from .kernel_tables import CoreTables


class ScalarBridge:
    """``components(state)``: every key field's value of a packed state; ``scalar(values)``: back."""

    def __init__(self, T: CoreTables) -> None:
        self.T = T
        self.to_kernel: tuple[dict, dict] = ({}, {})  # packed local -> parts; request bits -> rq
        self.to_scalar: tuple[dict, dict] = ({}, {})  # (local, life, since) -> packed; rq -> bits

    def _req_bits_mask(self) -> int:
        L = self.T.layout
        return (1 << (L.f_slots[-1].shift + L.f_slots[-1].bits - L.f_next_epoch.shift)) - 1

    def components(self, state: int) -> dict[str, int]:
        """Every key field's value (the names of ``CoreTables.fields``) of a scalar packed state."""
        L = self.T.layout
        local_of, rq_of = self.to_kernel
        out = {}
        for r, sh in enumerate(L.local_shift):
            packed = (state >> sh) & L.local_mask
            parts = local_of.get(packed)
            if parts is None:
                parts = local_of[packed] = self._kernel_local(packed)
            out[f"local{r}"], life, since = parts
            if self.T.n_life > 1:
                out[f"life{r}"] = life
            if self.T.n_since > 1:
                out[f"since{r}"] = since
        req = (state >> L.f_next_epoch.shift) & self._req_bits_mask()
        rq = rq_of.get(req)
        if rq is None:
            rq = rq_of[req] = self._kernel_rq(req << L.f_next_epoch.shift)
        out["nid"], out["qisr"], out["rq"] = L.f_next_id.get(state), L.f_quorum_isr.get(state), rq
        for name, f in self.T.shared.items():
            out[name] = f.get(state)
        return out

    def _kernel_local(self, packed: int) -> tuple[int, int, int]:
        """(kernel local, life, since + 1) of a scalar replica local."""
        L = self.T.layout
        meta, log = packed & L.meta_mask, packed >> L.meta_bits
        lg = self.T.log_index[L.logs[log]]
        m = self.T.meta_index[(L.meta_epoch[meta], L.meta_leader[meta], L.meta_isr[meta])]
        return (lg * self.T.ls1 + L.meta_hw[meta]) * self.T.n_meta + m, L.meta_life[meta], L.meta_since[meta] + 1

    def _kernel_rq(self, state: int) -> int:
        L = self.T.layout
        nle = L.f_next_epoch.get(state)
        rq = int(self.T.rq_off[nle])
        for e in range(nle):
            v = L.f_slots[e].get(state)
            rq += self.T.slot_index[(L.slot_leader(v), L.slot_isr(v))] * int(self.T.rq_pow[e])
        return rq

    def scalar(self, values: dict[str, int]) -> int:
        """The scalar packed state of key field values (the inverse of ``components``)."""
        L = self.T.layout
        packed_of, bits_of = self.to_scalar
        state = values["nid"] << L.f_next_id.shift | values["qisr"] << L.f_quorum_isr.shift
        rq = values["rq"]
        bits = bits_of.get(rq)
        if bits is None:
            bits = bits_of[rq] = self._scalar_requests(rq)
        state |= bits
        for r, sh in enumerate(L.local_shift):
            key = (values[f"local{r}"], values.get(f"life{r}", 0), values.get(f"since{r}", 0))
            packed = packed_of.get(key)
            if packed is None:
                packed = packed_of[key] = self._scalar_local(*key)
            state |= packed << sh
        for name, f in self.T.shared.items():
            state |= values[name] << f.shift
        return state

    def _scalar_requests(self, rq: int) -> int:
        L = self.T.layout
        nle = int(self.T.RQ_NLE[rq])
        bits = nle << L.f_next_epoch.shift
        for e in range(nle):
            ld, isr = self.T.slots[int(self.T.RQ_SLOT[rq, e])]
            bits |= L.slot_value(ld, isr) << L.f_slots[e].shift
        return bits

    def _scalar_local(self, local: int, life: int, since: int) -> int:
        L = self.T.layout
        lh, m = divmod(local, self.T.n_meta)
        lg, hw = divmod(lh, self.T.ls1)
        e, ld, isr = self.T.metas[m]
        return L.log_index[self.T.logs[lg]] << L.meta_bits | L.meta_of(hw, e, ld, isr, life, since - 1)
