"""Z3 variables for a state, derived from the state schema.

Each field a configuration keeps becomes variables by its kind: a number one variable
(``NONE`` for none); a set of brokers or of record ids one Bool per member (an array
from id to Bool for the histories of the unbounded mode); a log its length and one id
and one epoch per offset; the requests their count (the next leader epoch) and one
leader and one ISR per epoch (arrays indexed by epoch in the unbounded mode). A field
the configuration does not keep is a constant, not a variable.

The canonical form (log entries past the log end are 0, request slots from the count
on hold no leader and an empty ISR) makes packed states and variable values correspond
one to one, which the enumeration test relies on; ``domain`` constrains the variables
to exactly the states a packed int can represent (induction ranges over them).

In the unbounded mode (``max_leader_epoch`` None) leader epochs and record ids are
unbounded Ints. With a ``horizon`` (runs of at most that many states, as BMC unrolls
them) it is encoded with bounds no such run reaches, which is exact for those runs
and lets the bit-vector encoding and its SAT solver do the work.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import z3

from .ops import NONE, View
from .ops_z3 import FALSE, TRUE, Z3Ops, ZLog, ZRequests, ZSet
from .schema import Broker, Brokers, Count, Field, Ids, LogKind, Maybe, RequestsKind, Schema, Tally
from .state import Record

SPARSE = 32  # past this many epochs or ids, a decoded induction state keeps only those referred to


class Space:
    """The variables, their ranges and their canonical form for one configuration."""

    def __init__(self, protocol: Any, config: Any, horizon: int | None = None) -> None:
        self.protocol, self.config = protocol, config
        self.rf, self.ls = config.rf, config.logsize
        self.unbounded = config.unbounded and horizon is None
        if config.unbounded and horizon is not None:
            self.me = self.mr = max(horizon - 1, 1)
        else:
            self.me = None if self.unbounded else config.max_leader_epoch
            self.mr = None if self.unbounded else config.max_records
        # what the definitions read: the bounds of this space (None: none)
        self.cfg = replace(config, max_leader_epoch=self.me, max_records=self.mr) if config.unbounded else config
        self.schema = Schema(protocol.fields, self.cfg)
        self.ints: dict[str, tuple[int, int | None]] = {}  # name -> (lowest, highest or None)
        self.bools: list[str] = []
        self.arrays: dict[str, z3.SortRef] = {}  # name -> value sort (index sort Int)
        for f in self.schema.kept:
            for r in (range(self.rf) if f.replica else [-1]):
                self._declare(f, self._prefix(f, r))
        self.names: tuple[str, ...] = tuple(self.ints) + tuple(self.bools) + tuple(self.arrays)
        if self.unbounded:
            self.sort: z3.SortRef = z3.IntSort()
        else:
            largest = max([self.rf, self.ls + 1] + [hi + 2 for _, hi in self.ints.values() if hi is not None])
            self.sort = z3.BitVecSort(largest.bit_length() + 2)
        self.x = Z3Ops(self)

    @staticmethod
    def _prefix(f: Field, r: int) -> str:
        return f"r{r}.{f.name}" if r >= 0 else f.name

    def _declare(self, f: Field, name: str) -> None:
        k, rf, cfg = f.kind, self.rf, self.cfg
        if isinstance(k, LogKind):
            self.ints[f"{name}.len"] = (0, self.ls)
            for o in range(self.ls):
                self.ints[f"{name}.id{o}"] = (0, None if self.mr is None else self.mr - 1)
                self.ints[f"{name}.ep{o}"] = (0, self.me)
        elif isinstance(k, RequestsKind):
            self.ints[f"{name}.n"] = (0, None if self.me is None else self.me + 1)
            if self.me is None:
                self.arrays[f"{name}.leader"] = z3.IntSort()
                for m in range(rf):
                    self.arrays[f"{name}.isr{m}"] = z3.BoolSort()
            else:
                for e in range(self.me + 1):
                    self.ints[f"{name}.e{e}.leader"] = (NONE, rf - 1)
                    self.bools += [f"{name}.e{e}.isr{m}" for m in range(rf)]
        elif isinstance(k, Brokers):
            self.bools += [f"{name}.{m}" for m in range(rf)]
        elif isinstance(k, Ids):
            if self.mr is None:
                self.arrays[name] = z3.BoolSort()
            else:
                self.bools += [f"{name}.{i}" for i in range(self.mr)]
        elif isinstance(k, Broker):
            self.ints[name] = (NONE, rf - 1)
        elif isinstance(k, Maybe):
            self.ints[name] = (NONE, k.hi(cfg))
        elif isinstance(k, Count):
            self.ints[name] = (0, k.hi(cfg))
        elif isinstance(k, Tally):
            self.ints[name] = (0, k.size(cfg) - 1)
        else:
            raise TypeError(f"no Z3 variables for the kind of {f.name}")

    # ---- terms -----------------------------------------------------------------------------------
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

    # ---- values of fields ----------------------------------------------------------------------------
    def value(self, s: "SymState", f: Field, r: int) -> Any:
        """Field f of replica r (shared: -1) as the operations of ``Z3Ops`` take it."""
        if not f.kept(self.cfg):
            return self.constant(f)
        name, k, v = self._prefix(f, r), f.kind, s.v
        if isinstance(k, LogKind):
            return ZLog(v[f"{name}.len"], tuple(v[f"{name}.id{o}"] for o in range(self.ls)),
                        tuple(v[f"{name}.ep{o}"] for o in range(self.ls)))
        if isinstance(k, RequestsKind):
            if self.me is None:
                return ZRequests(v[f"{name}.n"], lead_array=v[f"{name}.leader"],
                                 isr_arrays=tuple(v[f"{name}.isr{m}"] for m in range(self.rf)))
            leads = tuple(v[f"{name}.e{e}.leader"] for e in range(self.me + 1))
            isrs = tuple(tuple(v[f"{name}.e{e}.isr{m}"] for m in range(self.rf)) for e in range(self.me + 1))
            return ZRequests(v[f"{name}.n"], leads, isrs)
        if isinstance(k, Brokers):
            return ZSet(bits=tuple(v[f"{name}.{m}"] for m in range(self.rf)))
        if isinstance(k, Ids):
            return ZSet(array=v[name]) if self.mr is None else ZSet(bits=tuple(v[f"{name}.{i}"] for i in range(self.mr)))
        return v[name]

    def constant(self, f: Field) -> Any:
        """The value of a field this configuration does not keep."""
        view = self.schema.init_view(f)
        if isinstance(f.kind, (Brokers, Ids)):
            n = self.rf if isinstance(f.kind, Brokers) else (self.mr or 0)
            if self.mr is None and isinstance(f.kind, Ids):
                return ZSet(array=z3.K(z3.IntSort(), FALSE))
            return ZSet(bits=tuple(z3.BoolVal(bool(view >> i & 1)) for i in range(n)))
        return view

    def flatten(self, f: Field, r: int, value: Any) -> dict[str, Any]:
        """The variables' new terms for a field's new value."""
        name, k, x = self._prefix(f, r), f.kind, self.x
        if isinstance(k, LogKind):
            out = {f"{name}.len": x.c(value.len)}
            for o in range(self.ls):
                out[f"{name}.id{o}"], out[f"{name}.ep{o}"] = x.c(value.ids[o]), x.c(value.eps[o])
            return out
        if isinstance(k, RequestsKind):
            out = {f"{name}.n": x.c(value.count)}
            if self.me is None:
                out[f"{name}.leader"] = value.lead_array
                for m in range(self.rf):
                    out[f"{name}.isr{m}"] = value.isr_arrays[m]
                return out
            for e in range(self.me + 1):
                out[f"{name}.e{e}.leader"] = x.c(value.leads[e])
                for m in range(self.rf):
                    out[f"{name}.e{e}.isr{m}"] = _bool(value.isrs[e][m])
            return out
        if isinstance(k, (Brokers, Ids)):
            stored = x._stored(value)
            if stored.array is not None:
                return {name: stored.array}
            names = [f"{name}.{i}" for i in range(len(stored.bits))]
            return {n: _bool(b) for n, b in zip(names, stored.bits)}
        return {name: x.c(value)}

    # ---- constraints ---------------------------------------------------------------------------------
    def domain(self, s: "SymState") -> z3.BoolRef:
        """Every value within its range, in canonical form: the states that a packed int can
        represent (induction ranges over exactly these)."""
        cs = []
        for n, (lo, hi) in self.ints.items():
            cs.append(s.v[n] >= lo)
            if hi is not None:
                cs.append(s.v[n] <= hi)
        for f in self.schema.kept:
            for r in (range(self.rf) if f.replica else [-1]):
                name = self._prefix(f, r)
                if isinstance(f.kind, LogKind):
                    for o in range(self.ls):
                        past_end = s.v[f"{name}.len"] <= o
                        cs.append(z3.Implies(past_end, z3.And(s.v[f"{name}.id{o}"] == 0, s.v[f"{name}.ep{o}"] == 0)))
                elif isinstance(f.kind, RequestsKind) and self.me is not None:
                    for e in range(self.me + 1):
                        slot = [s.v[f"{name}.e{e}.leader"] == NONE] + [z3.Not(s.v[f"{name}.e{e}.isr{m}"]) for m in range(self.rf)]
                        cs.append(z3.Implies(s.v[f"{name}.n"] <= e, z3.And(slot)))
        return z3.And(cs)

    def values(self, ps: Any) -> dict[str, Any]:
        """The variable values of a readable state (Python ints and bools; arrays as terms)."""
        out: dict[str, Any] = {}
        for f in self.schema.kept:
            for r in (range(self.rf) if f.replica else [-1]):
                readable = getattr(ps.replicas[r] if f.replica else ps, f.name)
                out.update(self._values(f, self._prefix(f, r), readable))
        return out

    def _values(self, f: Field, name: str, readable: Any) -> dict[str, Any]:
        k = f.kind
        if isinstance(k, LogKind):
            out: dict[str, Any] = {f"{name}.len": len(readable)}
            for o in range(self.ls):
                rec = readable[o] if o < len(readable) else Record(0, 0)
                out[f"{name}.id{o}"], out[f"{name}.ep{o}"] = rec.id, rec.epoch
            return out
        if isinstance(k, RequestsKind):
            out = {f"{name}.n": len(readable)}
            if self.me is None:
                lead = z3.K(z3.IntSort(), z3.IntVal(NONE))
                isr = [z3.K(z3.IntSort(), FALSE) for _ in range(self.rf)]
                for req in readable:
                    lead = z3.Store(lead, req.leader_epoch, _opt(req.leader))
                    isr = [z3.Store(isr[m], req.leader_epoch, z3.BoolVal(m in req.isr)) for m in range(self.rf)]
                out[f"{name}.leader"] = lead
                for m in range(self.rf):
                    out[f"{name}.isr{m}"] = isr[m]
                return out
            by_epoch = {req.leader_epoch: req for req in readable}
            for e in range(self.me + 1):
                req = by_epoch.get(e)
                out[f"{name}.e{e}.leader"] = _opt(req.leader) if req else NONE
                for m in range(self.rf):
                    out[f"{name}.e{e}.isr{m}"] = bool(req and m in req.isr)
            return out
        if isinstance(k, Brokers):
            return {f"{name}.{m}": m in readable for m in range(self.rf)}
        if isinstance(k, Ids):
            if self.mr is None:
                arr = z3.K(z3.IntSort(), FALSE)
                for i in sorted(readable):
                    arr = z3.Store(arr, i, TRUE)
                return {name: arr}
            return {f"{name}.{i}": i in readable for i in range(self.mr)}
        return {name: k.view(readable)}

    def equals(self, s: "SymState", ps: Any) -> z3.BoolRef:
        """The constraint that ``s`` is exactly the readable state ``ps``."""
        return z3.And([s.v[n] == value for n, value in self.values(ps).items()])

    def init(self, s: "SymState") -> z3.BoolRef:
        """The initial state: every field at its initial value; or, for a configuration that
        starts from partitions' states now, any of the states the explicit model starts from."""
        if getattr(self.config, "now", None) is not None:
            from .replication import ReplicationModel

            model = ReplicationModel(self.config)
            return z3.Or([self.equals(s, model.decode(t)) for t in model.init_states()])
        cls_replica, cls_state = self.protocol.classes
        rep = {f.name: self.schema.init_value(f) for f in self.schema.replica_fields}
        shared = {f.name: self.schema.init_value(f) for f in self.schema.shared_fields}
        ps = cls_state(replicas=tuple(cls_replica(**rep) for _ in range(self.rf)), **shared)
        return self.equals(s, ps)

    def decode(self, model: z3.ModelRef, s: "SymState") -> Any:
        """The readable state that a Z3 model gives ``s`` (``symbolic_decode.py``)."""
        from .symbolic_decode import decode

        return decode(self, model, s)


def _opt(value: int | None) -> int:
    return NONE if value is None else value


def _bool(b: Any) -> Any:
    return z3.BoolVal(b) if isinstance(b, bool) else b


class SymState:
    """Named Z3 terms of one state."""

    __slots__ = ("space", "v")

    def __init__(self, space: Space, v: dict[str, z3.ExprRef]) -> None:
        self.space = space
        self.v = v

    def terms(self) -> list[z3.ExprRef]:
        return [self.v[n] for n in self.space.names]


class Z3View(View):
    """A symbolic state as definitions read it."""

    def __init__(self, s: SymState) -> None:
        super().__init__(s.space.schema, s.space.x)
        self.__dict__["state"] = s

    def read(self, f: Field, r: int) -> Any:
        return self.state.space.value(self.state, f, r)

    def remember(self, key: Any, compute: Any) -> Any:
        plain = all(isinstance(k, (int, str)) for k in (key if isinstance(key, tuple) else (key,)))
        if not plain:  # a key with a term (the unbounded mode's epoch): Z3 terms have no == to hash on
            return compute()
        cache = self.__dict__.setdefault("_memo", {})
        if key not in cache:
            cache[key] = compute()
        return cache[key]
