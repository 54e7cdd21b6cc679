"""The named properties: stable names, expectations, one-line docs and predicates.

Each property has two predicates over the same meaning:

* ``reference(state)`` reads a readable ``PartitionState`` and follows the words of
  PROTOCOL.md; it is the definition that tests and the Z3 engine hold the others to;
* ``compile(model)`` returns a predicate over packed ints built from the model's
  tables, for the hot path. Tests check that both agree on every reachable state of
  small configurations.

``always`` properties must hold in every reachable state; ``sometimes`` properties
are witnesses that the bounded space is not vacuous (a record is committed, a
leader fails over, a record becomes readable, a write succeeds during an outage).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

from isrcheck.model import ModelConfig, PartitionState, ReplicationModel
from isrcheck.model.layout import replica_reader

Predicate = Callable[[int], bool]
Expectation = Literal["always", "sometimes"]


@dataclass(frozen=True)
class Property:
    name: str
    expectation: Expectation
    doc: str
    applies: Callable[[ModelConfig], bool]
    reference: Callable[[PartitionState], bool]
    compile: Callable[[ReplicationModel], Predicate]


# ---- readable definitions ---------------------------------------------------------


def _agree_below(ps: PartitionState, r1: int, r2: int, hw: int) -> bool:
    a, b = ps.replicas[r1].log, ps.replicas[r2].log
    return hw <= len(a) and hw <= len(b) and a[:hw] == b[:hw]


def electable(ps: PartitionState, isr: frozenset[int], strong: bool) -> frozenset[int]:
    """ISR members that could take over: live ones. A crashed broker is not elected, and
    restarts only after the controller removed it from the ISR (KIP-380), unless it is
    the last member, which stays electable (so it counts for strong-isr)."""
    live = frozenset(r for r in isr if ps.replicas[r].alive)
    return isr if strong and len(isr) == 1 else live


def _isr_ref(strong: bool) -> Callable[[PartitionState], bool]:
    def check(ps: PartitionState) -> bool:
        for r1, rs in enumerate(ps.replicas):
            if rs.leader != r1 or rs.hw == 0:
                continue
            members = electable(ps, ps.quorum.isr if strong else rs.isr, strong)
            if not all(_agree_below(ps, r1, r2, rs.hw) for r2 in members):
                return False
        return True

    return check


def _leader_in_isr_ref(ps: PartitionState) -> bool:
    return ps.quorum.leader is None or ps.quorum.leader in ps.quorum.isr


def _log_matching_ref(ps: PartitionState) -> bool:
    n = len(ps.replicas)
    return all(
        _agree_below(ps, r1, r2, min(ps.replicas[r1].hw, ps.replicas[r2].hw))
        for r1 in range(n)
        for r2 in range(r1 + 1, n)
    )


def _in_leader_log(ps: PartitionState, ids: frozenset[int]) -> bool:
    leader = ps.true_leader()
    if leader is None:
        return True
    present = {rec.id for rec in ps.replicas[leader].log}
    return ids <= present


def _committed_survive_ref(ps: PartitionState) -> bool:
    return _in_leader_log(ps, ps.committed)


def _acked_survive_ref(ps: PartitionState) -> bool:
    return _in_leader_log(ps, ps.acked)


def _read_within_hwm_ref(ps: PartitionState) -> bool:
    return _in_leader_log(ps, ps.readable)


def _leader_failover_ref(ps: PartitionState) -> bool:
    leader = ps.true_leader()
    if leader is None:
        return False
    writer = {req.leader_epoch: req.leader for req in ps.requests}
    return any(
        rec.id in ps.committed and writer.get(rec.epoch) != leader for rec in ps.replicas[leader].log
    )


def _write_after_crash_ref(ps: PartitionState) -> bool:
    return any(
        not rs.alive and any(i >= (rs.crash_mark or 0) for i in ps.acked) for rs in ps.replicas
    )


# ---- compiled predicates over packed states -------------------------------------


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


def _isr_compiled(strong: bool) -> Callable[[ReplicationModel], Predicate]:
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


def _leader_in_isr_compiled(model: ReplicationModel) -> Predicate:
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


def _log_matching_compiled(model: ReplicationModel) -> Predicate:
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


def _history_in_leader_compiled(field: str) -> Callable[[ReplicationModel], Predicate]:
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


def _nonzero_compiled(field: str) -> Callable[[ReplicationModel], Predicate]:
    def build(model: ReplicationModel) -> Predicate:
        f = getattr(model.layout, field)
        return lambda s: bool((s >> f.shift) & f.mask)

    return build


def _leader_failover_compiled(model: ReplicationModel) -> Predicate:
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


def _write_after_crash_compiled(model: ReplicationModel) -> Predicate:
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


def _kafka(config: ModelConfig) -> bool:
    return not config.core


PROPERTIES: tuple[Property, ...] = (
    Property(
        "weak-isr",
        "always",
        "every believed leader's records below its HWM are on every member of its cached ISR",
        lambda c: True,
        _isr_ref(strong=False),
        _isr_compiled(strong=False),
    ),
    Property(
        "strong-isr",
        "always",
        "records below any believed leader's HWM are on every quorum ISR member: committed data survives a clean election",
        lambda c: True,
        _isr_ref(strong=True),
        _isr_compiled(strong=True),
    ),
    Property(
        "leader-in-isr",
        "always",
        "the quorum leader, when there is one, is in the quorum ISR",
        lambda c: True,
        _leader_in_isr_ref,
        _leader_in_isr_compiled,
    ),
    Property(
        "log-matching",
        "always",
        "any two replicas hold identical records below both of their HWMs",
        _kafka,
        _log_matching_ref,
        _log_matching_compiled,
    ),
    Property(
        "committed-survive",
        "always",
        "every record ever committed is in the log of every later leader",
        _kafka,
        _committed_survive_ref,
        _history_in_leader_compiled("f_committed"),
    ),
    Property(
        "acked-survive",
        "always",
        "every record acknowledged to the producer is in the current leader's log",
        lambda c: _kafka(c) and c.acks != "0",
        _acked_survive_ref,
        _history_in_leader_compiled("f_acked"),
    ),
    Property(
        "read-within-hwm",
        "always",
        "what a consumer can read (below a believed leader's HWM) stays in the leader's log",
        lambda c: _kafka(c) and c.consumer,
        _read_within_hwm_ref,
        _history_in_leader_compiled("f_readable"),
    ),
    Property(
        "record-committed",
        "sometimes",
        "some record gets committed (the bounds leave room for replication)",
        _kafka,
        lambda ps: bool(ps.committed),
        _nonzero_compiled("f_committed"),
    ),
    Property(
        "leader-failover",
        "sometimes",
        "a broker takes over as true leader holding a committed record written under an earlier leader",
        _kafka,
        _leader_failover_ref,
        _leader_failover_compiled,
    ),
    Property(
        "consumer-reads",
        "sometimes",
        "a consumer can read some record (it fell below a believed leader's HWM)",
        lambda c: _kafka(c) and c.consumer,
        lambda ps: bool(ps.readable),
        _nonzero_compiled("f_readable"),
    ),
    Property(
        "write-after-crash",
        "sometimes",
        "a record appended while a broker is down is acknowledged while that broker is still down",
        lambda c: _kafka(c) and c.crashes > 0 and c.acks != "0",
        _write_after_crash_ref,
        _write_after_crash_compiled,
    ),
)

BY_NAME = {p.name: p for p in PROPERTIES}
NAMES = tuple(BY_NAME)


class UnknownProperty(ValueError):
    pass


def select(config: ModelConfig, names: list[str] | tuple[str, ...] | None = None) -> list[Property]:
    """The properties to check: the named ones (validated), else every one that applies."""
    if not names:
        return [p for p in PROPERTIES if p.applies(config)]
    chosen = []
    for name in names:
        prop = BY_NAME.get(name)
        if prop is None:
            raise UnknownProperty(f"unknown property {name!r}; known: {', '.join(NAMES)}")
        if not prop.applies(config):
            raise UnknownProperty(f"property {name!r} does not apply to this configuration ({_why_not(prop, config)})")
        if prop not in chosen:
            chosen.append(prop)
    return chosen


def _why_not(prop: Property, config: ModelConfig) -> str:
    if config.core:
        return "--core has no producer, consumer or crash history"
    if prop.name == "acked-survive":
        return "--acks 0 acknowledges nothing"
    if prop.name in ("read-within-hwm", "consumer-reads"):
        return "the consumer is off"
    if prop.name == "write-after-crash":
        return "it needs --crashes of at least 1 and acks 1 or all"
    return "not available here"
