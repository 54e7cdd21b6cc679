"""The properties' compiled predicates: one test per packed state, built from the model's tables.

The hot path's side of ``catalog.py``: each function takes a model and returns a
predicate over packed ints that must agree with the property's readable
``reference`` on every state (tests hold them to it on every reachable state of
small configurations).
"""

from __future__ import annotations

from typing import Callable

from isrcheck.model import ReplicationModel
from isrcheck.model.layout import replica_reader

Predicate = Callable[[int], bool]


class _Tables:
    """Field readers shared by the compiled predicates of one model (built once per model)."""

    def __init__(self, model: ReplicationModel) -> None:
        L = model.layout
        self.L = L
        ls1 = L.log_size + 1
        # index of log[:h] in the log table, or -1 when the log is shorter than h
        self.prefix = [L.log_index[g[:h]] if h <= len(g) else -1 for g in L.logs for h in range(ls1)]
        self.ls1 = ls1
        self.info = L.local_info()
        self._last: int | None = None
        self._last_ids = -1
        self._last_infos_of: int | None = None
        self._last_infos: tuple[tuple[int, ...], ...] = ()
        self._read = replica_reader([self.info] * L.rf, L.local_shift, L.local_mask)

    def infos(self, s: int) -> tuple[tuple[int, ...], ...]:
        """Per-replica info tuples of a state, remembered for the next predicate of the same state."""
        if s is not self._last_infos_of:
            self._last_infos = self._read(s)
            self._last_infos_of = s
        return self._last_infos

    @staticmethod
    def of(model: ReplicationModel) -> "_Tables":
        tables = model.__dict__.get("_property_tables")
        if tables is None:
            tables = model.__dict__["_property_tables"] = _Tables(model)
        return tables

    def leader_log_ids(self, s: int) -> int:
        """Record ids in the true leader's log, or -1 when there is no true leader.

        Remembers the last state: the engine asks for every history property of a
        new state in a row, with the same int object."""
        if s is self._last:
            return self._last_ids
        L = self.L
        nle = (s >> L.f_next_epoch.shift) & L.f_next_epoch.mask
        ids = -1
        if nle:
            q = L.slot_leader((s >> L.f_slots[nle - 1].shift) & L.f_slots[nle - 1].mask)
            if q >= 0:
                hw, ep, ld, isr, ln, lg, meta, life, since = self.info[(s >> L.local_shift[q]) & L.local_mask]
                if ld == q and ep == nle - 1:
                    ids = L.log_ids[lg]
        self._last, self._last_ids = s, ids
        return ids


def isr_compiled(strong: bool) -> Callable[[ReplicationModel], Predicate]:
    def build(model: ReplicationModel) -> Predicate:
        T = _Tables.of(model)
        L = T.L
        PREFIX, LS1 = T.prefix, T.ls1
        QI_SH, QI_M = L.f_quorum_isr.shift, L.f_quorum_isr.mask
        R = range(L.rf)
        MEMBERS = [tuple(r for r in R if m >> r & 1) for m in range(L.n_isr)]
        POP = L.popcount
        crashes = L.n_life > 1

        infos_of = T.infos

        def holds(s: int) -> bool:
            infos = infos_of(s)
            for r1 in R:
                h, _, ld, cached, _, lg, _, _, _ = infos[r1]
                if ld != r1 or h == 0:
                    continue
                mask = (s >> QI_SH) & QI_M if strong else cached
                members = MEMBERS[mask]
                if crashes and not (strong and POP[mask] == 1):
                    members = [m for m in members if not infos[m][7]]  # live members (see electable)
                p = PREFIX[lg * LS1 + h]
                if p < 0:
                    if members:
                        return False
                    continue
                for r2 in members:
                    if PREFIX[infos[r2][5] * LS1 + h] != p:
                        return False
            return True

        return holds

    return build


def leader_in_isr_compiled(model: ReplicationModel) -> Predicate:
    L = model.layout
    NLE_SH, NLE_M = L.f_next_epoch.shift, L.f_next_epoch.mask
    QI_SH, QI_M = L.f_quorum_isr.shift, L.f_quorum_isr.mask
    SLOT_SH = [f.shift for f in L.f_slots]
    SLOT_M = L.f_slots[0].mask
    n_isr = L.n_isr

    def holds(s: int) -> bool:
        nle = (s >> NLE_SH) & NLE_M
        if not nle:
            return True
        q = ((s >> SLOT_SH[nle - 1]) & SLOT_M) // n_isr - 1
        return q < 0 or bool((((s >> QI_SH) & QI_M) >> q) & 1)

    return holds


def log_matching_compiled(model: ReplicationModel) -> Predicate:
    T = _Tables.of(model)
    L = T.L
    PREFIX, LS1 = T.prefix, T.ls1
    pairs = [(a, b) for a in range(L.rf) for b in range(a + 1, L.rf)]

    infos_of = T.infos

    def holds(s: int) -> bool:
        infos = infos_of(s)
        for a, b in pairs:
            ia, ib = infos[a], infos[b]
            h = ia[0] if ia[0] < ib[0] else ib[0]
            if h:
                pa = PREFIX[ia[5] * LS1 + h]
                if pa < 0 or PREFIX[ib[5] * LS1 + h] != pa:
                    return False
        return True

    return holds


def history_in_leader_compiled(field: str) -> Callable[[ReplicationModel], Predicate]:
    """Every record id of a history field is in the true leader's log (ids sit at one offset)."""

    def build(model: ReplicationModel) -> Predicate:
        T = _Tables.of(model)
        f = getattr(T.L, field)
        shift, mask = f.shift, f.mask
        leader_ids = T.leader_log_ids

        def holds(s: int) -> bool:
            ids = (s >> shift) & mask
            if not ids:
                return True
            have = leader_ids(s)
            return have < 0 or not (ids & ~have)

        return holds

    return build


def nonzero_compiled(field: str) -> Callable[[ReplicationModel], Predicate]:
    def build(model: ReplicationModel) -> Predicate:
        f = getattr(model.layout, field)
        return lambda s: bool((s >> f.shift) & f.mask)

    return build


def leader_failover_compiled(model: ReplicationModel) -> Predicate:
    T = _Tables.of(model)
    L = T.L
    NLE_SH, NLE_M = L.f_next_epoch.shift, L.f_next_epoch.mask
    CM = L.f_committed
    NE = L.n_epochs

    def holds(s: int) -> bool:
        committed = (s >> CM.shift) & CM.mask
        if not committed or T.leader_log_ids(s) < 0:
            return False
        nle = (s >> NLE_SH) & NLE_M
        q = L.slot_leader(L.f_slots[nle - 1].get(s))
        for code in L.logs[T.infos(s)[q][5]]:
            if committed >> (code // NE) & 1 and L.slot_leader(L.f_slots[code % NE].get(s)) != q:
                return True
        return False

    return holds


def write_after_crash_compiled(model: ReplicationModel) -> Predicate:
    L = model.layout
    ak = L.f_acked
    SH, MM, M_LIFE = L.local_shift, L.meta_mask, L.meta_life

    def holds(s: int) -> bool:
        acked = (s >> ak.shift) & ak.mask
        if not acked:
            return False
        for sh in SH:
            life = M_LIFE[(s >> sh) & MM]
            if life and acked >> (life - 1):
                return True
        return False

    return holds
