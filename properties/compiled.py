"""Hand-written per-state forms of the properties, for the scalar engines' hot path.

Overrides of the definitions in ``catalog.py``, which every backend derives its own
form from: each function takes a model and returns a predicate over packed ints
that must agree with the definition on every state, reachable or not
(``tests/test_conformance.py`` holds them to it), at a fraction of its cost.
"""

from __future__ import annotations

from typing import Callable

from isrcheck.model import ReplicationModel
from isrcheck.model.fields import write_quorum
from isrcheck.model.fused import LocalInfo
from isrcheck.model.layout import replica_reader

Predicate = Callable[[int], bool]


class _Tables:
    """Field readers shared by the compiled predicates of one model (built once per model)."""

    def __init__(self, model: ReplicationModel) -> None:
        L = model.layout
        self.L = L
        # index of log[:h] in the log table, or -1 when the log is shorter than h
        self.prefix = L.logs.prefix
        self.ls1 = L.logs.width
        self.info = LocalInfo(L)
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
        nle = L.shared["requests"].get(s)
        ids = -1
        if nle:
            q = L.slot_leader(L.slots[nle - 1].get(s))
            if q >= 0:
                hw, ep, ld, isr, ln, lg, meta, life, since, _, _ = self.info[(s >> L.local_shift[q]) & L.local_mask]
                if ld == q and ep == nle - 1:
                    ids = L.logs.ids[lg]
        self._last, self._last_ids = s, ids
        return ids


def isr_compiled(strong: bool) -> Callable[[ReplicationModel], Predicate]:
    def build(model: ReplicationModel) -> Predicate:
        T = _Tables.of(model)
        L = T.L
        PREFIX, LS1 = T.prefix, T.ls1
        QI_SH, QI_M = L.shared["quorum_isr"].shift, L.shared["quorum_isr"].mask
        R = range(L.rf)
        MEMBERS = [tuple(r for r in R if m >> r & 1) for m in range(L.n_isr)]
        POP = L.popcount
        crashes = L.radix["crash_mark"] > 1

        infos_of = T.infos

        def holds(s: int) -> bool:
            infos = infos_of(s)
            for r1 in R:
                h, _, ld, cached, _, lg, _, _, _, _, _ = infos[r1]
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
    NLE_SH, NLE_M = L.shared["requests"].shift, L.shared["requests"].mask
    QI_SH, QI_M = L.shared["quorum_isr"].shift, L.shared["quorum_isr"].mask
    SLOT_SH = [f.shift for f in L.slots]
    SLOT_M = L.slots[0].mask
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
        f = T.L.shared[field]
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


def committed_stored_compiled(model: ReplicationModel) -> Predicate:
    """Every committed record id is in some replica's log."""
    T = _Tables.of(model)
    f = T.L.shared["committed"]
    shift, mask = f.shift, f.mask
    ids_below, width = T.L.logs.ids_below, T.L.logs.width

    def holds(s: int) -> bool:
        missing = (s >> shift) & mask
        if not missing:
            return True
        for _, _, _, _, length, log, *_ in T.infos(s):
            missing &= ~ids_below[log * width + length]
            if not missing:
                return True
        return False

    return holds


def leader_failover_compiled(model: ReplicationModel) -> Predicate:
    T = _Tables.of(model)
    L = T.L
    NLE_SH, NLE_M = L.shared["requests"].shift, L.shared["requests"].mask
    CM = L.shared["committed"]
    NE = L.n_epochs

    def holds(s: int) -> bool:
        committed = (s >> CM.shift) & CM.mask
        if not committed or T.leader_log_ids(s) < 0:
            return False
        nle = (s >> NLE_SH) & NLE_M
        q = L.slot_leader(L.slots[nle - 1].get(s))
        for code in L.logs.logs[T.infos(s)[q][5]]:
            e = code % NE
            writer = L.slot_leader(L.slots[e].get(s)) if e < nle else -1
            if committed >> (code // NE) & 1 and writer != q:
                return True
        return False

    return holds


def write_after_crash_compiled(model: ReplicationModel) -> Predicate:
    L = model.layout
    ak = L.shared["acked"]
    SH, MM, M_MARK = L.local_shift, L.meta_mask, L.meta_view["crash_mark"]

    def holds(s: int) -> bool:
        acked = (s >> ak.shift) & ak.mask
        if not acked:
            return False
        for sh in SH:
            mark = M_MARK[(s >> sh) & MM]
            if mark >= 0 and acked >> mark:
                return True
        return False

    return holds


def writable_compiled(model: ReplicationModel) -> Predicate:
    """can-recover's target: a live true leader whose ISR meets the acks' minimum, every
    member up for acks=all."""
    T = _Tables.of(model)
    L, cfg = T.L, model.config
    NLE_SH, NLE_M = L.shared["requests"].shift, L.shared["requests"].mask
    acks_all, need = cfg.acks == "all", write_quorum(cfg)
    POP, R = L.popcount, range(L.rf)

    def holds(s: int) -> bool:
        nle = (s >> NLE_SH) & NLE_M
        if not nle:
            return False
        q = L.slot_leader(L.slots[nle - 1].get(s))
        if q < 0:
            return False
        infos = T.infos(s)
        _, ep, ld, isr, _, _, _, life, *_ = infos[q]
        if ld != q or ep != nle - 1 or life or POP[isr] < need:
            return False
        return not acks_all or not any(isr >> m & 1 and infos[m][7] for m in R)

    return holds


# ---- the liveness properties' definitions (triggers, goals, the epoch bound) --------------------------------
def _quorum_reader(model: ReplicationModel):
    """(s) -> (true leader or -1, quorum ISR bitmask, requests sent, per-replica infos)."""
    T = _Tables.of(model)
    L = T.L
    NLE_SH, NLE_M = L.shared["requests"].shift, L.shared["requests"].mask
    QI_SH, QI_M = L.shared["quorum_isr"].shift, L.shared["quorum_isr"].mask

    def read(s: int):
        nle = (s >> NLE_SH) & NLE_M
        infos = T.infos(s)
        leader = -1
        if nle:
            q = L.slot_leader(L.slots[nle - 1].get(s))
            if q >= 0 and infos[q][2] == q and infos[q][1] == nle - 1:
                leader = q
        return leader, (s >> QI_SH) & QI_M, nle, infos

    return read


def live_outside_isr_compiled(model: ReplicationModel) -> Predicate:
    """rejoins-isr's trigger: a true leader, and a live replica outside the quorum's ISR."""
    read, R = _quorum_reader(model), range(model.layout.rf)

    def holds(s: int) -> bool:
        leader, qi, _, infos = read(s)
        return leader >= 0 and any(not infos[r][7] and not qi >> r & 1 for r in R)

    return holds


def live_in_isr_compiled(model: ReplicationModel) -> Predicate:
    """rejoins-isr's goal: every live replica is in the quorum's ISR."""
    read, R = _quorum_reader(model), range(model.layout.rf)

    def holds(s: int) -> bool:
        _, qi, _, infos = read(s)
        return all(infos[r][7] or qi >> r & 1 for r in R)

    return holds


def all_up_compiled(model: ReplicationModel) -> Predicate:
    """hwm-progress's trigger: every replica is up."""
    T = _Tables.of(model)
    return lambda s: not any(info[7] for info in T.infos(s))


def hwm_at_log_end_compiled(model: ReplicationModel) -> Predicate:
    """hwm-progress's goal: the true leader's HWM is at its log end."""
    read = _quorum_reader(model)

    def holds(s: int) -> bool:
        leader, _, _, infos = read(s)
        return leader >= 0 and infos[leader][0] == infos[leader][4]

    return holds


def out_of_epochs_compiled(model: ReplicationModel) -> Predicate:
    """Every leader epoch is used (the graph properties' ``beyond``)."""
    L, bound = model.layout, model.config.max_leader_epoch
    NLE_SH, NLE_M = L.shared["requests"].shift, L.shared["requests"].mask
    return lambda s: ((s >> NLE_SH) & NLE_M) - 1 >= bound
