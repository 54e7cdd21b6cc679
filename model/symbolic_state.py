"""Z3 terms for one partition state, mirroring ``PartitionState`` (state.py).

Why a flat dict of named terms: the transition relation (symbolic.py) writes each
action as a guarded update of a few names plus an explicit frame (every other name
unchanged), and decoding, blocking clauses and the simple-path constraint all walk
the same names.

A bounded configuration has finitely many Int and Bool variables with the packed
layout's ranges. Their canonical form (log entries past the log end are 0, request
slots from the next epoch on hold no leader and an empty ISR, a live broker's crash
mark is 0) makes packed states and variable values correspond one to one, which
the enumeration test relies on. In the unbounded mode (``max_leader_epoch`` None)
leader epochs and record ids are unbounded Ints: the request set becomes arrays
indexed by epoch and the history sets arrays indexed by record id. Features that
a configuration lacks are constants, not variables (the core has no crash state).
z3 is imported here, so import this module only from the symbolic engine's side.
"""

from __future__ import annotations

from typing import Any, Iterable

import z3

from .config import ModelConfig
from .state import PartitionState, QuorumState, Record, ReplicaState, Request

TRUE, FALSE = z3.BoolVal(True), z3.BoolVal(False)
NO = -1  # no leader / no epoch, as in layout.NONE
SPARSE = 32


def ite_chain(index: z3.ArithRef | int, values: list, default: Any) -> Any:
    """``values[index]`` for a symbolic index (``default`` when out of range)."""
    if isinstance(index, int):
        return values[index] if 0 <= index < len(values) else default
    out = default
    for i in reversed(range(len(values))):
        out = z3.If(index == i, values[i], out)
    return out


class Space:
    """The variable names, their ranges and their canonical form for one configuration.

    ``horizon`` (unbounded configurations only): the space of runs of at most that
    many states, in which no epoch or record id can pass ``horizon - 1``; bounded
    numbers then describe those runs exactly (what BMC of the unbounded mode uses).
    """

    def __init__(self, config: ModelConfig, horizon: int | None = None) -> None:
        self.config = config
        self.rf, self.ls = config.rf, config.logsize
        self.unbounded = config.unbounded and horizon is None
        if config.unbounded and horizon is not None:
            self.me = self.mr = max(horizon - 1, 1)
        else:
            self.me = None if self.unbounded else config.max_leader_epoch
            self.mr = None if self.unbounded else config.max_records
        self.kafka = not config.core
        self.crashes = config.crashes if self.kafka else 0
        self.disk_loss = config.disk_loss if self.kafka else 0
        self.track_since = self.kafka and config.acks == "all"  # a leader's purgatory (acks=all)
        self.histories: tuple[str, ...] = ()
        if self.kafka:
            self.histories = ("acked", "committed") + (("readable",) if config.consumer else ())
        rf, ls, me, mr = self.rf, self.ls, self.me, self.mr
        self.ints: dict[str, tuple[int, int | None]] = {}  # name -> (lowest, highest or None)
        self.bools: list[str] = []
        self.arrays: dict[str, z3.SortRef] = {}  # name -> value sort (index sort Int)
        self.ints["nid"] = (0, mr)
        self.ints["nle"] = (0, None if me is None else me + 1)
        self.bools += [f"q{m}" for m in range(rf)]
        if me is None:
            self.arrays["req.lead"] = z3.IntSort()
            for m in range(rf):
                self.arrays[f"req.isr{m}"] = z3.BoolSort()
        else:
            for e in range(me + 1):
                self.ints[f"req{e}.lead"] = (NO, rf - 1)
                self.bools += [f"req{e}.isr{m}" for m in range(rf)]
        for r in range(rf):
            self.ints[f"r{r}.len"] = (0, ls)
            for o in range(ls):
                self.ints[f"r{r}.id{o}"] = (0, None if mr is None else mr - 1)
                self.ints[f"r{r}.ep{o}"] = (0, me)
            self.ints[f"r{r}.hw"] = (0, ls)
            self.ints[f"r{r}.lep"] = (NO, me)
            self.ints[f"r{r}.ld"] = (NO, rf - 1)
            self.bools += [f"r{r}.isr{m}" for m in range(rf)]
            if self.crashes:
                self.bools.append(f"r{r}.alive")
                self.ints[f"r{r}.mark"] = (0, mr)
            if self.track_since:
                self.ints[f"r{r}.since"] = (NO, me)
        if self.crashes:
            self.ints["crashes"] = (0, self.crashes)
            if self.disk_loss:
                self.ints["disks"] = (0, self.disk_loss)
        for h in self.histories:
            if mr is None:
                self.arrays[h] = z3.BoolSort()
            else:
                self.bools += [f"{h}{i}" for i in range(mr)]
        self.names: tuple[str, ...] = tuple(self.ints) + tuple(self.bools) + tuple(self.arrays)
        # Bounded numbers are small signed bit-vectors: the problem is then propositional
        # and Z3's incremental SAT solver (QF_FD) decides it far faster than arithmetic.
        if self.unbounded:
            self.sort: z3.SortRef = z3.IntSort()
        else:
            largest = max(ls + 1, mr + 1, me + 2, rf, self.crashes + 1, self.disk_loss + 1)
            self.sort = z3.BitVecSort(largest.bit_length() + 2)

    def c(self, value: int) -> z3.ExprRef:
        """A number constant of this space's sort."""
        return z3.IntVal(value) if self.unbounded else z3.BitVecVal(value, self.sort)

    def number(self, name: str) -> z3.ExprRef:
        return z3.Const(name, self.sort)

    def num(self, model: z3.ModelRef, term: z3.ExprRef) -> int:
        value = model.eval(term, model_completion=True)
        return value.as_long() if self.unbounded else value.as_signed_long()

    def solver(self) -> z3.Solver:
        """An incremental solver suited to the encoding (SAT-based for bounded numbers)."""
        return z3.Solver() if self.unbounded else z3.SolverFor("QF_BV")

    def fresh(self, prefix: str) -> "SymState":
        v: dict[str, z3.ExprRef] = {}
        for n in self.ints:
            v[n] = self.number(f"{prefix}.{n}")
        for n in self.bools:
            v[n] = z3.Bool(f"{prefix}.{n}")
        for n, sort in self.arrays.items():
            v[n] = z3.Array(f"{prefix}.{n}", z3.IntSort(), sort)
        return SymState(self, v)

    # ---- constraints -------------------------------------------------------------
    def domain(self, s: "SymState") -> z3.BoolRef:
        """Every value within the layout's ranges, in canonical form: the states that
        a packed int can represent (induction ranges over exactly these)."""
        cs = []
        for n, (lo, hi) in self.ints.items():
            cs.append(s.v[n] >= lo)
            if hi is not None:
                cs.append(s.v[n] <= hi)
        for r in range(self.rf):
            for o in range(self.ls):
                past_end = s.length(r) <= o
                cs.append(z3.Implies(past_end, z3.And(s.v[f"r{r}.id{o}"] == 0, s.v[f"r{r}.ep{o}"] == 0)))
            if self.crashes:
                cs.append(z3.Implies(s.alive(r), s.v[f"r{r}.mark"] == 0))
        if self.me is not None:
            for e in range(self.me + 1):
                unused = s.nle <= e
                slot = [s.v[f"req{e}.lead"] == NO] + [z3.Not(s.v[f"req{e}.isr{m}"]) for m in range(self.rf)]
                cs.append(z3.Implies(unused, z3.And(slot)))
        return z3.And(cs)

    def values(self, ps: PartitionState) -> dict[str, Any]:
        """The variable values of a readable state (Python ints and bools; arrays as terms)."""
        val: dict[str, Any] = {"nid": ps.next_record_id, "nle": ps.next_leader_epoch}
        for m in range(self.rf):
            val[f"q{m}"] = m in ps.quorum.isr
        lead = {req.leader_epoch: req for req in ps.requests}
        if self.me is None:
            arr = z3.K(z3.IntSort(), z3.IntVal(NO))
            isr = [z3.K(z3.IntSort(), FALSE) for _ in range(self.rf)]
            for e, req in lead.items():
                arr = z3.Store(arr, e, _opt(req.leader))
                isr = [z3.Store(isr[m], e, z3.BoolVal(m in req.isr)) for m in range(self.rf)]
            val["req.lead"] = arr
            for m in range(self.rf):
                val[f"req.isr{m}"] = isr[m]
        else:
            for e in range(self.me + 1):
                req = lead.get(e)
                val[f"req{e}.lead"] = _opt(req.leader) if req else NO
                for m in range(self.rf):
                    val[f"req{e}.isr{m}"] = bool(req and m in req.isr)
        for r, rs in enumerate(ps.replicas):
            val[f"r{r}.len"] = len(rs.log)
            for o in range(self.ls):
                rec = rs.log[o] if o < len(rs.log) else Record(0, 0)
                val[f"r{r}.id{o}"], val[f"r{r}.ep{o}"] = rec.id, rec.epoch
            val[f"r{r}.hw"] = rs.hw
            val[f"r{r}.lep"] = _opt(rs.leader_epoch)
            val[f"r{r}.ld"] = _opt(rs.leader)
            for m in range(self.rf):
                val[f"r{r}.isr{m}"] = m in rs.isr
            if self.crashes:
                val[f"r{r}.alive"] = rs.alive
                val[f"r{r}.mark"] = 0 if rs.alive else (rs.crash_mark or 0)
            if self.track_since:
                val[f"r{r}.since"] = _opt(rs.leader_since)
        if self.crashes:
            val["crashes"] = ps.crashes
            if self.disk_loss:
                val["disks"] = ps.disk_losses
        for h in self.histories:
            ids: frozenset[int] = getattr(ps, h)
            if self.mr is None:
                arr = z3.K(z3.IntSort(), FALSE)
                for i in sorted(ids):
                    arr = z3.Store(arr, i, TRUE)
                val[h] = arr
            else:
                for i in range(self.mr):
                    val[f"{h}{i}"] = i in ids
        return val

    def equals(self, s: "SymState", ps: PartitionState) -> z3.BoolRef:
        """The constraint that ``s`` is exactly the readable state ``ps``."""
        return z3.And([s.v[n] == value for n, value in self.values(ps).items()])

    def init(self, s: "SymState") -> z3.BoolRef:
        """The model's initial state: empty logs, no leader, every replica in the quorum ISR."""
        rf = self.rf
        replicas = tuple(ReplicaState((), 0, None, None, frozenset()) for _ in range(rf))
        ps = PartitionState(replicas, QuorumState(None, None, frozenset(range(rf))), (), 0, 0)
        return self.equals(s, ps)

    def decode(self, model: z3.ModelRef, s: "SymState") -> PartitionState:
        """The readable state that a Z3 model gives ``s``.

        Induction states of the unbounded mode may count millions of epochs or ids;
        past ``SPARSE`` of them only the requests and ids the state refers to are kept
        (a state for reading, never for encoding)."""

        def num(term: z3.ExprRef) -> int:
            return self.num(model, term)

        def flag(term: z3.ExprRef) -> bool:
            return z3.is_true(model.eval(term, model_completion=True))

        replicas = []
        for r in range(self.rf):
            log = tuple(Record(num(s.rid(r, o)), num(s.rep(r, o))) for o in range(num(s.length(r))))
            alive = flag(s.alive(r))
            lep, ld, since = num(s.lep(r)), num(s.ld(r)), num(s.since(r))
            replicas.append(
                ReplicaState(
                    log=log,
                    hw=num(s.hw(r)),
                    leader_epoch=None if lep == NO else lep,
                    leader=None if ld == NO else ld,
                    isr=frozenset(m for m in range(self.rf) if flag(s.isr(r, m))),
                    alive=alive,
                    crash_mark=None if alive else num(s.mark(r)),
                    leader_since=None if since == NO else since,
                )
            )
        nle = num(s.nle)
        epochs: Iterable[int] = range(nle)
        if nle > SPARSE:  # an induction state of the unbounded mode: the epochs anything refers to
            named = {nle - 1} | {rs.leader_epoch or 0 for rs in replicas} | {x.epoch for rs in replicas for x in rs.log}
            epochs = sorted(e for e in named if 0 <= e < nle)
        requests = []
        for e in epochs:
            leader = num(s.req_lead(e))
            isr = frozenset(m for m in range(self.rf) if flag(s.req_isr(e, m)))
            requests.append(Request(e, None if leader == NO else leader, isr))
        nid = num(s.nid)
        last = requests[-1] if requests else None
        quorum = QuorumState(
            last.leader_epoch if last else None,
            last.leader if last else None,
            frozenset(m for m in range(self.rf) if flag(s.q(m))),
        )
        ids: Iterable[int] = range(self.mr) if self.mr is not None else range(nid)
        if self.mr is None and nid > SPARSE:
            ids = sorted({x.id for rs in replicas for x in rs.log} | set(range(SPARSE)))
        hist = {h: frozenset(i for i in ids if flag(s.holds(h, i))) for h in self.histories}
        return PartitionState(
            replicas=tuple(replicas),
            quorum=quorum,
            requests=tuple(requests),
            next_record_id=nid,
            next_leader_epoch=nle,
            crashes=num(s.crashes),
            disk_losses=num(s.disks),
            **hist,
        )


def _opt(value: int | None) -> int:
    return NO if value is None else value


class SymState:
    """Named Z3 terms of one state, with readers named after PartitionState's fields."""

    __slots__ = ("space", "v")

    def __init__(self, space: Space, v: dict[str, z3.ExprRef]) -> None:
        self.space = space
        self.v = v

    def terms(self) -> list[z3.ExprRef]:
        return [self.v[n] for n in self.space.names]

    # shared fields
    @property
    def nid(self) -> z3.ArithRef:
        return self.v["nid"]

    @property
    def nle(self) -> z3.ArithRef:
        return self.v["nle"]

    def q(self, m: int) -> z3.BoolRef:
        return self.v[f"q{m}"]

    def req_lead(self, e: z3.ArithRef | int) -> z3.ArithRef:
        sp = self.space
        if sp.me is None:
            return z3.Select(self.v["req.lead"], e)
        return ite_chain(e, [self.v[f"req{i}.lead"] for i in range(sp.me + 1)], sp.c(NO))

    def req_isr(self, e: z3.ArithRef | int, m: int) -> z3.BoolRef:
        sp = self.space
        if sp.me is None:
            return z3.Select(self.v[f"req.isr{m}"], e)
        return ite_chain(e, [self.v[f"req{i}.isr{m}"] for i in range(sp.me + 1)], FALSE)

    @property
    def qlead(self) -> z3.ArithRef:
        """The quorum leader: the one named by the newest request (-1 before any)."""
        return z3.If(self.nle > 0, self.req_lead(self.nle - 1), NO)

    @property
    def qep(self) -> z3.ArithRef:
        return self.nle - 1

    @property
    def crashes(self) -> z3.ArithRef:
        return self.v.get("crashes", self.space.c(0))

    @property
    def disks(self) -> z3.ArithRef:
        return self.v.get("disks", self.space.c(0))

    # replica fields
    def length(self, r: int) -> z3.ArithRef:
        return self.v[f"r{r}.len"]

    def rid(self, r: int, o: int) -> z3.ArithRef:
        return self.v[f"r{r}.id{o}"]

    def rep(self, r: int, o: int) -> z3.ArithRef:
        return self.v[f"r{r}.ep{o}"]

    def hw(self, r: int) -> z3.ArithRef:
        return self.v[f"r{r}.hw"]

    def lep(self, r: int) -> z3.ArithRef:
        return self.v[f"r{r}.lep"]

    def ld(self, r: int) -> z3.ArithRef:
        return self.v[f"r{r}.ld"]

    def isr(self, r: int, m: int) -> z3.BoolRef:
        return self.v[f"r{r}.isr{m}"]

    def alive(self, r: int) -> z3.BoolRef:
        return self.v.get(f"r{r}.alive", TRUE)

    def mark(self, r: int) -> z3.ArithRef:
        return self.v.get(f"r{r}.mark", self.space.c(0))

    def since(self, r: int) -> z3.ArithRef:
        """The epoch in which broker r's current leadership began (-1: not tracked or not leading)."""
        return self.v.get(f"r{r}.since", self.space.c(NO))

    # history sets (Kafka model only)
    def holds(self, history: str, i: z3.ArithRef | int) -> z3.BoolRef:
        if self.space.mr is None:
            return z3.Select(self.v[history], i)
        return ite_chain(i, [self.v[f"{history}{j}"] for j in range(self.space.mr)], FALSE)

    def true_leader_is(self, q: int) -> z3.BoolRef:
        """Broker q is the true leader: the quorum's leader, having applied the quorum's epoch."""
        return z3.And(self.qlead == q, self.ld(q) == q, self.lep(q) == self.qep)
