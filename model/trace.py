"""Definitions traced into expression graphs: how the vector kernel runs them once per batch.

Each action (a family with its parameters bound) and each property is run once, when a
kernel is built, on a ``TraceView``: reading a field gives a ``Node``, and every
operation (``TraceOps``, the operations of ``ops.py`` over NumPy arrays) and every
Python operator on nodes builds a node. Values that depend on constants alone are
computed there and then (a conjunct that is statically False drops the action), and
nodes are hash-consed, so the same expression is one node wherever it appears.

A node's components are those of the fields it reads: one replica's slot, or one
shared field's code. A node of one component is computed at trace time as a table
over that component's values (a few thousand entries); in a batch it is one gather.
Only the nodes where components meet are computed per batch (``plan.py``).
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Iterable

import numpy as np

from .ops import NONE, Ops, View
from .schema import Field


class Node:
    """An expression over a batch: an operation of its argument nodes (or constants)."""

    __slots__ = ("id", "key", "fn", "args", "comps", "table")
    __array_ufunc__ = None  # NumPy defers to the operators below
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, id_: int, key: Any, fn: Callable | None, args: tuple, comps: frozenset, table: Any) -> None:
        self.id, self.key, self.fn, self.args, self.comps, self.table = id_, key, fn, args, comps, table

    def __repr__(self) -> str:
        return f"Node#{self.id}({self.key}, comps={sorted(self.comps)})"

    def __bool__(self) -> bool:
        raise TypeError("a traced value has no truth value: combine it with x.and_, x.or_, x.not_")


def _static(v: Any) -> bool:
    """A Python value known at trace time (arrays are values too, computed at once, as when
    the kernel's tables evaluate facts over combinations)."""
    return type(v) is not Node and not isinstance(v, np.ndarray)


def _plain(v: Any) -> Any:
    """A NumPy scalar as a Python number (statics stay Python values)."""
    return v.item() if isinstance(v, np.generic) else v


class Tracer:
    """Interns the nodes of one kernel and computes the tables of single-component nodes."""

    def __init__(self, T: Any) -> None:
        self.T = T
        self.nodes: dict[tuple, Node] = {}

    def field(self, comp: str, table: np.ndarray, name: str) -> Node:
        return self._intern(("field", comp, name), None, (), frozenset([comp]), table)

    def node(self, key: Any, fn: Callable, *args: Any) -> Any:
        """``fn`` of the args: computed now where no arg is a node, else a node."""
        if all(type(a) is not Node for a in args):
            return _plain(fn(*args))
        comps = frozenset().union(*(a.comps for a in args if type(a) is Node))
        ident = (key, tuple(("#", a.id) if type(a) is Node else ("=", type(a), a) for a in args))
        hit = self.nodes.get(ident)
        if hit is not None:
            return hit
        table = None
        if len(comps) == 1:
            table = fn(*[a.table if type(a) is Node else a for a in args])
            if not isinstance(table, np.ndarray):  # a constant over the component's values
                table = np.full(len(next(a.table for a in args if type(a) is Node)), table)
        return self._intern(ident, fn, args, comps, table)

    def _intern(self, ident: tuple, fn: Callable | None, args: tuple, comps: frozenset, table: Any) -> Node:
        hit = self.nodes.get(ident)
        if hit is None:
            hit = self.nodes[ident] = Node(len(self.nodes), ident, fn, args, comps, _compact(table))
        return hit


def _compact(table: Any) -> Any:
    """A table of small integers in the smallest integer type that holds them: what a batch
    gathers from it is up to eight times smaller. (Index arithmetic in ``TraceOps`` goes
    through int64 constants, so it never overflows the small types.)"""
    if isinstance(table, np.ndarray) and table.dtype == np.int64 and len(table):
        lo, hi = table.min(), table.max()
        for small, low, high in _SMALL:
            if low <= lo and hi <= high:
                return table.astype(small)
    return table


_SMALL = [(t, int(np.iinfo(t).min), int(np.iinfo(t).max)) for t in (np.int8, np.int16, np.int32)]


_ONE = np.int64(1)


_CURRENT: list[Tracer] = []  # the tracer of the trace in progress (Python operators on nodes use it)


def _binary(fn: Callable[[Any, Any], Any], name: str) -> tuple[Callable, Callable]:
    def forward(self: Node, other: Any) -> Any:
        return _CURRENT[-1].node(name, fn, self, other)

    def reflected(self: Node, other: Any) -> Any:
        return _CURRENT[-1].node(name, fn, other, self)

    return forward, reflected


for _name, _fn in (
    ("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge),
    ("eq", operator.eq), ("ne", operator.ne),
    ("add", operator.add), ("sub", operator.sub), ("mul", operator.mul), ("floordiv", operator.floordiv),
    ("mod", operator.mod), ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
    ("lshift", operator.lshift), ("rshift", operator.rshift),
):
    _fwd, _ref = _binary(_fn, _name)
    setattr(Node, f"__{_name}__", _fwd)
    if _name not in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(Node, f"__r{_name}__", _ref)
Node.__neg__ = lambda self: _CURRENT[-1].node("neg", operator.neg, self)  # type: ignore[attr-defined]


class TraceView(View):
    """A state whose fields are nodes: what a family or property is traced on."""

    def __init__(self, tracer: Tracer) -> None:
        T = tracer.T
        super().__init__(T.schema, TraceOps(tracer))
        self.__dict__["tracer"] = tracer

    def read(self, f: Field, r: int) -> Any:
        T = self.tracer.T
        if not f.kept(T.config):
            return T.schema.init_view(f)
        if f.replica:
            return self.tracer.field(f"slot{r}", T.field[f.name], f.name)
        return self.tracer.field(f.name, T.shared_view[f.name], f.name)


class tracing:
    """Context: Python operators on nodes build them with this tracer."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    def __enter__(self) -> Tracer:
        _CURRENT.append(self.tracer)
        return self.tracer

    def __exit__(self, *exc: Any) -> None:
        _CURRENT.pop()


class TraceOps(Ops):
    """The operations as nodes whose functions work on NumPy arrays (total: every index is
    clamped, so a row where a guard fails computes a value that is then dropped)."""

    def __init__(self, tracer: Tracer) -> None:
        self.t = tracer
        T = tracer.T
        self.T, self.LA, self.pop = T, T.logs, T.popcount
        self.ne, self.n_isr = np.int64(T.n_epochs), np.int64(T.n_isr)  # int64: index arithmetic on small types

    def _n(self, key: Any, fn: Callable, *args: Any) -> Any:
        return self.t.node(key, fn, *args)

    # booleans and numbers
    def and_(self, *cs: Any) -> Any:
        nodes = []
        for c in cs:
            if _static(c):
                if not c:
                    return False
            else:
                nodes.append(c)
        return self._fold(nodes, np.logical_and, True)

    def or_(self, *cs: Any) -> Any:
        nodes = []
        for c in cs:
            if _static(c):
                if c:
                    return True
            else:
                nodes.append(c)
        return self._fold(nodes, np.logical_or, False)

    def _fold(self, nodes: list[Node], fn: Any, empty: bool) -> Any:
        """Combine nodes, those of one component first (their combination is a table too)."""
        if not nodes:
            return empty
        if all(type(n) is Node for n in nodes):
            nodes = sorted(nodes, key=lambda n: (len(n.comps), sorted(n.comps), n.id))
        out = nodes[0]
        for n in nodes[1:]:
            out = self._n(fn.__name__, fn, out, n)
        return out

    def not_(self, c: Any) -> Any:
        return (not c) if _static(c) else self._n("not", np.logical_not, c)

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        if _static(c):
            return a if c else b
        return self._n("ite", np.where, c, a, b)

    def min(self, a: Any, b: Any) -> Any:
        return self._n("min", np.minimum, a, b)

    def all_(self, cs: Iterable[Any]) -> Any:
        return self.and_(*cs)

    def any_(self, cs: Iterable[Any]) -> Any:
        return self.or_(*cs)

    def count(self, cs: Iterable[Any]) -> Any:
        total: Any = 0
        for c in cs:
            total = total + (int(c) if _static(c) else self._n("int", lambda v: np.asarray(v, dtype=np.int64), c))
        return total

    # sets: bit masks
    def has(self, S: Any, i: Any) -> Any:
        return self._n("has", lambda s, j: (np.asarray(j) >= 0) & (((s >> np.maximum(j, 0)) & 1) != 0), S, i)

    def put(self, S: Any, i: Any, cond: Any = True) -> Any:
        return self._n("put", lambda s, j, c: np.where(c & (np.asarray(j) >= 0), s | (_ONE << np.maximum(j, 0)), s), S, i, cond)

    def drop(self, S: Any, i: Any) -> Any:
        return self._n("drop", lambda s, j: np.where(np.asarray(j) >= 0, s & ~(_ONE << np.maximum(j, 0)), s), S, i)

    def size(self, S: Any) -> Any:
        return self._n("size", lambda s: self.pop.take(s), S)

    def empty(self, S: Any) -> Any:
        return S == 0

    def only(self, S: Any, i: int) -> Any:
        return S == (1 << i)

    def union(self, A: Any, B: Any) -> Any:
        return A | B

    def subset(self, A: Any, B: Any) -> Any:
        return self._n("subset", lambda a, b: (a & ~b) == 0, A, B)

    def same(self, A: Any, B: Any) -> Any:
        return A == B

    def brokers(self, *members: int) -> int:
        return sum(1 << m for m in set(members))

    def any_from(self, S: Any, k: Any) -> Any:
        return self._n("any_from", lambda s, j: (s >> np.maximum(j, 0)) != 0, S, k)

    # logs: indices into the kernel's table of logs
    def length(self, log: Any) -> Any:
        return self._n("length", lambda g: self.LA.length.take(g), log)

    def _code(self, log: Any, o: Any) -> Any:
        return self._n("code", lambda g, off: self.LA.code_at.take(g * self.LA.width + np.minimum(off, self.LA.log_size)), log, o)

    def id_at(self, log: Any, o: Any) -> Any:
        return self._n("id", lambda c: np.where(c >= 0, c // self.ne, NONE), self._code(log, o))

    def epoch_at(self, log: Any, o: Any) -> Any:
        return self._n("epoch", lambda c: np.where(c >= 0, c % self.ne, NONE), self._code(log, o))

    def append(self, log: Any, rid: Any, epoch: Any) -> Any:
        nc = self.LA.n_codes

        def fn(g: Any, i: Any, e: Any) -> Any:
            code = i * self.ne + e
            ok = (code >= 0) & (code < nc) & (np.asarray(e) >= 0)
            return np.where(ok, self.LA.append.take(g * nc + np.minimum(np.maximum(code, 0), nc - 1)), -1)

        return self._n("append", fn, log, rid, epoch)

    def copy_next(self, log: Any, source: Any) -> Any:
        LA = self.LA

        def fn(g: Any, src: Any) -> Any:
            c = LA.code_at.take(src * LA.width + LA.length.take(g))
            return np.where(c >= 0, LA.append.take(g * LA.n_codes + np.maximum(c, 0)), -1)

        return self._n("copy_next", fn, log, source)

    def prefix(self, log: Any, t: Any) -> Any:
        LA = self.LA
        return self._n("prefix", lambda g, n: LA.prefix.take(g * LA.width + np.minimum(n, LA.log_size)), log, t)

    def ids(self, log: Any) -> Any:
        return self._n("ids", lambda g: self.LA.ids.take(g), log)

    def ids_below(self, log: Any, k: Any) -> Any:
        LA = self.LA
        return self._n("ids_below", lambda g, n: LA.ids_below.take(g * LA.width + np.minimum(n, LA.log_size)), log, k)

    def last_epoch(self, log: Any) -> Any:
        return self._n("last_epoch", lambda g: self.LA.last_epoch.take(g), log)

    def epoch_start(self, log: Any, e: Any) -> Any:
        return self._n("epoch_start", lambda g, ep: self.LA.epoch_start.take(g * self.ne + np.maximum(ep, 0)), log, e)

    def matching_end(self, leader: Any, follower: Any) -> Any:
        return self._n("matching", lambda a, b: self.LA.matching.take(a * self.LA.n + b), leader, follower)

    def epoch_end(self, leader: Any, e: Any) -> Any:
        ne = self.ne
        return self._n(
            "epoch_end", lambda g, ep: np.where(np.asarray(ep) >= 0, self.LA.epoch_end.take(g * ne + np.maximum(ep, 0)), NONE),
            leader, e,
        )

    def agree_below(self, a: Any, b: Any, h: Any) -> Any:
        w, prefix, ls = self.LA.width, self.LA.prefix, self.LA.log_size

        def fn(ga: Any, gb: Any, n: Any) -> Any:
            n = np.minimum(n, ls)
            pa = prefix.take(ga * w + n)
            return (pa >= 0) & (pa == prefix.take(gb * w + n))

        return self._n("agree_below", fn, a, b, h)

    # requests: indices into the kernel's table of request sequences
    def sent(self, R: Any) -> Any:
        return self._n("sent", lambda r: self.T.RQ_NLE.take(r), R)

    def leader_of(self, R: Any, e: Any) -> Any:
        T, last = self.T, len(self.T.RQ_SLOT_T) - 1
        return self._n(
            "leader_of",
            lambda r, ep: np.where((np.asarray(ep) >= 0) & (np.asarray(ep) <= last), T.SLOT_LD.take(T.RQ_SLOT[r, np.minimum(np.maximum(ep, 0), last)]), NONE),
            R, e,
        )

    def isr_of(self, R: Any, e: Any) -> Any:
        T, last = self.T, len(self.T.RQ_SLOT_T) - 1
        return self._n("isr_of", lambda r, ep: T.SLOT_ISR.take(T.RQ_SLOT[r, np.minimum(np.maximum(ep, 0), last)]), R, e)

    def last_leader(self, R: Any) -> Any:
        return self._n("last_leader", lambda r: self.T.RQ_QLEAD.take(r), R)

    def send(self, R: Any, leader: Any, isr: Any) -> Any:
        T = self.T

        def fn(r: Any, ld: Any, s: Any) -> Any:
            k = T.RQ_NLE.take(r)
            slot = T.REQUEST_SLOT_OF.take((ld + 1) * self.n_isr + s)
            new = T.rq_off.take(np.minimum(k + 1, len(T.rq_off) - 1)) + (r - T.rq_off.take(k)) + np.maximum(slot, 0) * T.rq_pow.take(k)
            return np.where(slot < 0, -1, new)

        return self._n("send", fn, R, leader, isr)
