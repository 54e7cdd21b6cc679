"""The operations on Z3 terms: the symbolic engine's form of every action and property.

Numbers are terms of the space's sort (bit-vectors in a bounded configuration, so that
the problem is propositional; integers in the unbounded mode), with ``NONE`` for none.
The opaque values are small classes over terms:

* ``ZSet``: a set of brokers or record ids, as one Bool per member (``bits``), as an
  array from id to Bool (the unbounded mode's histories), or as a finite list of
  (id, present) pairs (the ids of a log's records: ``listed``);
* ``ZLog``: a log of symbolic length, unrolled over the log size: its length and one
  id and epoch per offset (0 past the end: the canonical form);
* ``ZRequests``: the request count (the next leader epoch) and one leader and ISR per
  epoch, or arrays indexed by epoch in the unbounded mode.

Quantifiers over record ids appear only in the unbounded mode, where a set is an array:
``subset`` and ``empty`` say "for every id", ``any_from`` "for some id".
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable

import z3

from .ops import NONE, Ops

TRUE, FALSE = z3.BoolVal(True), z3.BoolVal(False)
_fresh = itertools.count()


def ite_chain(index: Any, values: list, default: Any) -> Any:
    """``values[index]`` for a symbolic index (``default`` when out of range)."""
    if isinstance(index, int):
        return values[index] if 0 <= index < len(values) else default
    out = default
    for i in reversed(range(len(values))):
        out = z3.If(index == i, values[i], out)
    return out


class ZSet:
    """A set as ``bits`` (one Bool per member), ``array`` (id -> Bool) or ``listed`` ((id, present) pairs)."""

    __slots__ = ("bits", "array", "listed")

    def __init__(self, bits: tuple | None = None, array: Any = None, listed: list | None = None) -> None:
        self.bits, self.array, self.listed = bits, array, listed

    def has(self, i: Any) -> Any:
        if self.bits is not None:
            if isinstance(i, int):
                return self.bits[i] if 0 <= i < len(self.bits) else FALSE
            return z3.Or([z3.And(i == j, b) for j, b in enumerate(self.bits)] or [FALSE])
        if self.array is not None:
            return z3.Select(self.array, i)
        return z3.Or([z3.And(present, rid == i) for rid, present in self.listed] or [FALSE])


class ZLog:
    __slots__ = ("len", "ids", "eps")

    def __init__(self, length: Any, ids: tuple, eps: tuple) -> None:
        self.len, self.ids, self.eps = length, ids, eps


class ZRequests:
    """The requests sent: ``count``; ``leads[e]`` and ``isrs[e][m]`` (bounded), or ``lead_array``
    and ``isr_arrays[m]`` indexed by epoch (unbounded)."""

    __slots__ = ("count", "leads", "isrs", "lead_array", "isr_arrays")

    def __init__(self, count: Any, leads: tuple = (), isrs: tuple = (), lead_array: Any = None,
                 isr_arrays: tuple = ()) -> None:
        self.count, self.leads, self.isrs, self.lead_array, self.isr_arrays = count, leads, isrs, lead_array, isr_arrays


class Z3Ops(Ops):
    """The operations over Z3 terms of one space (``symbolic_space.Space``)."""

    def __init__(self, space: Any) -> None:
        self.sp = space

    def c(self, v: Any) -> Any:
        """A Python number as a term of the space's sort (terms stay as they are)."""
        return self.sp.c(v) if isinstance(v, int) and not isinstance(v, bool) else v

    # booleans and numbers
    def and_(self, *cs: Any) -> Any:
        cs = [c for c in cs if c is not True]
        if any(c is False for c in cs):
            return FALSE
        return z3.And(cs) if cs else TRUE

    def or_(self, *cs: Any) -> Any:
        cs = [c for c in cs if c is not False]
        if any(c is True for c in cs):
            return TRUE
        return z3.Or(cs) if cs else FALSE

    def not_(self, c: Any) -> Any:
        return (not c) if isinstance(c, bool) else z3.Not(c)

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        if isinstance(c, bool):
            return a if c else b
        if isinstance(a, ZSet) or isinstance(b, ZSet):
            return self._set_ite(c, a, b)
        if isinstance(a, bool) or isinstance(b, bool):
            return z3.If(c, z3.BoolVal(a) if isinstance(a, bool) else a, z3.BoolVal(b) if isinstance(b, bool) else b)
        return z3.If(c, self.c(a), self.c(b))

    def _set_ite(self, c: Any, a: ZSet, b: ZSet) -> ZSet:
        a, b = self._stored(a), self._stored(b)
        if a.array is not None or b.array is not None:
            return ZSet(array=z3.If(c, self._as_array(a), self._as_array(b)))
        return ZSet(bits=tuple(z3.If(c, x, y) for x, y in zip(a.bits, b.bits)))

    def min(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int):
            return min(a, b)
        return z3.If(self.c(a) < self.c(b), self.c(a), self.c(b))

    def digit(self, v: Any, k: int, base: int) -> Any:
        if isinstance(v, int):
            return super().digit(v, k, base)
        return v / self.c(base ** k) % self.c(base)  # non-negative values: the signed forms are exact

    def all_(self, cs: Iterable[Any]) -> Any:
        return self.and_(*cs)

    def any_(self, cs: Iterable[Any]) -> Any:
        return self.or_(*cs)

    def count(self, cs: Iterable[Any]) -> Any:
        return z3.Sum([z3.If(c, self.sp.c(1), self.sp.c(0)) if not isinstance(c, bool) else self.sp.c(int(c)) for c in cs])

    # sets
    def _stored(self, S: ZSet) -> ZSet:
        """A listed set over the universe of ids, as bits or an array."""
        if S.listed is None:
            return S
        if self.sp.mr is None:
            return ZSet(array=self._as_array(S))
        return ZSet(bits=tuple(S.has(j) for j in range(self.sp.mr)))

    def _as_array(self, S: ZSet) -> Any:
        if S.array is not None:
            return S.array
        arr = z3.K(z3.IntSort(), FALSE)
        if S.listed is not None:
            for rid, present in S.listed:
                arr = z3.Store(arr, rid, z3.Or(z3.Select(arr, rid), present))
            return arr
        for j, b in enumerate(S.bits):
            arr = z3.Store(arr, j, b)
        return arr

    def has(self, S: ZSet, i: Any) -> Any:
        return S.has(i)

    def put(self, S: ZSet, i: Any, cond: Any = True) -> ZSet:
        cond = z3.BoolVal(cond) if isinstance(cond, bool) else cond
        if S.array is not None:
            return ZSet(array=z3.Store(S.array, i, z3.Or(z3.Select(S.array, i), cond)))
        S = self._stored(S)
        if isinstance(i, int):
            return ZSet(bits=tuple(z3.Or(b, cond) if j == i else b for j, b in enumerate(S.bits)))
        return ZSet(bits=tuple(z3.Or(b, z3.And(cond, i == j)) for j, b in enumerate(S.bits)))

    def drop(self, S: ZSet, i: Any) -> ZSet:
        S = self._stored(S)
        if isinstance(i, int):
            return ZSet(bits=tuple(FALSE if j == i else b for j, b in enumerate(S.bits)))
        return ZSet(bits=tuple(z3.And(b, i != j) for j, b in enumerate(S.bits)))

    def size(self, S: ZSet) -> Any:
        return self.count(self._stored(S).bits)

    def empty(self, S: ZSet) -> Any:
        S = self._stored(S)
        if S.array is not None:
            i = z3.Int(f"q.id.{next(_fresh)}")
            return z3.ForAll([i], z3.Implies(i >= 0, z3.Not(z3.Select(S.array, i))))
        return z3.And([z3.Not(b) for b in S.bits] or [TRUE])

    def only(self, S: ZSet, i: int) -> Any:
        S = self._stored(S)
        return z3.And([b if j == i else z3.Not(b) for j, b in enumerate(S.bits)])

    def union(self, A: ZSet, B: ZSet) -> ZSet:
        if A.listed is not None and B.listed is not None:
            return ZSet(listed=A.listed + B.listed)
        if A.listed is not None:
            A, B = B, A
        if A.array is not None:
            arr = A.array
            if B.listed is not None:
                for rid, present in B.listed:
                    arr = z3.Store(arr, rid, z3.Or(z3.Select(arr, rid), present))
                return ZSet(array=arr)
            i = z3.Int(f"u.id.{next(_fresh)}")
            return ZSet(array=z3.Lambda([i], z3.Or(z3.Select(arr, i), z3.Select(self._as_array(B), i))))
        return ZSet(bits=tuple(z3.Or(a, B.has(j)) for j, a in enumerate(A.bits)))

    def subset(self, A: ZSet, B: ZSet) -> Any:
        if A.array is not None:
            i = z3.Int(f"q.id.{next(_fresh)}")
            return z3.ForAll([i], z3.Implies(z3.And(i >= 0, z3.Select(A.array, i)), B.has(i)))
        if A.listed is not None:
            return z3.And([z3.Implies(present, B.has(rid)) for rid, present in A.listed] or [TRUE])
        return z3.And([z3.Implies(a, B.has(j)) for j, a in enumerate(A.bits)] or [TRUE])

    def same(self, A: ZSet, B: ZSet) -> Any:
        A, B = self._stored(A), self._stored(B)
        return z3.And([a == b for a, b in zip(A.bits, B.bits)] or [TRUE])

    def brokers(self, *members: int) -> ZSet:
        return ZSet(bits=tuple(z3.BoolVal(m in members) for m in range(self.sp.rf)))

    def any_from(self, S: ZSet, k: Any) -> Any:
        if S.array is not None:
            i = z3.Int(f"q.id.{next(_fresh)}")
            return z3.Exists([i], z3.And(i >= 0, i >= k, z3.Select(S.array, i)))
        S = self._stored(S)
        return z3.Or([z3.And(b, self.sp.c(j) >= k) for j, b in enumerate(S.bits)] or [FALSE])

    # logs
    def length(self, log: ZLog) -> Any:
        return log.len

    def id_at(self, log: ZLog, o: Any) -> Any:
        none = self.sp.c(NONE)
        return z3.If(self.c(o) < log.len, ite_chain(o, list(log.ids), none), none) if not isinstance(o, int) else (
            z3.If(o < log.len, log.ids[o], none) if o < len(log.ids) else none
        )

    def epoch_at(self, log: ZLog, o: Any) -> Any:
        none = self.sp.c(NONE)
        return z3.If(self.c(o) < log.len, ite_chain(o, list(log.eps), none), none) if not isinstance(o, int) else (
            z3.If(o < log.len, log.eps[o], none) if o < len(log.eps) else none
        )

    def append(self, log: ZLog, rid: Any, epoch: Any) -> ZLog:
        n = log.len
        ids = tuple(z3.If(n == o, self.c(rid), x) for o, x in enumerate(log.ids))
        eps = tuple(z3.If(n == o, self.c(epoch), x) for o, x in enumerate(log.eps))
        return ZLog(n + 1, ids, eps)

    def copy_next(self, log: ZLog, source: ZLog) -> ZLog:
        o = log.len
        zero = self.sp.c(0)
        return self.append(log, ite_chain(o, list(source.ids), zero), ite_chain(o, list(source.eps), zero))

    def prefix(self, log: ZLog, t: Any) -> ZLog:
        zero = self.sp.c(0)
        t = self.c(t)
        ids = tuple(z3.If(o < t, x, zero) for o, x in enumerate(log.ids))
        eps = tuple(z3.If(o < t, x, zero) for o, x in enumerate(log.eps))
        return ZLog(t, ids, eps)

    def ids(self, log: ZLog) -> ZSet:
        return ZSet(listed=[(rid, o < log.len) for o, rid in enumerate(log.ids)])

    def ids_below(self, log: ZLog, k: Any) -> ZSet:
        return ZSet(listed=[(rid, z3.And(o < log.len, o < self.c(k))) for o, rid in enumerate(log.ids)])

    def last_epoch(self, log: ZLog) -> Any:
        return ite_chain(log.len - 1, list(log.eps), self.sp.c(NONE))

    def epoch_start(self, log: ZLog, e: Any) -> Any:
        out = log.len
        for o in reversed(range(len(log.eps))):
            out = z3.If(z3.And(o < log.len, log.eps[o] >= e), self.sp.c(o), out)
        return out

    def matching_end(self, leader: ZLog, follower: ZLog) -> Any:
        out = self.sp.c(0)
        for o in range(len(leader.ids)):
            same = z3.And(o < leader.len, o < follower.len, leader.ids[o] == follower.ids[o], leader.eps[o] == follower.eps[o])
            out = z3.If(same, self.sp.c(o + 1), out)
        return out

    def epoch_end(self, leader: ZLog, e: Any) -> Any:
        n, none = leader.len, self.sp.c(NONE)
        first_later = none
        for o in reversed(range(len(leader.eps))):
            first_later = z3.If(z3.And(o < n, leader.eps[o] > e), self.sp.c(o), first_later)
        return z3.If(n == 0, none, z3.If(self.last_epoch(leader) == e, n, first_later))

    def agree_below(self, a: ZLog, b: ZLog, h: Any) -> Any:
        same = [z3.Implies(o < h, z3.And(a.ids[o] == b.ids[o], a.eps[o] == b.eps[o])) for o in range(len(a.ids))]
        return z3.And(h <= a.len, h <= b.len, *same)

    # requests
    def sent(self, R: ZRequests) -> Any:
        return R.count

    def leader_of(self, R: ZRequests, e: Any) -> Any:
        if R.lead_array is not None:
            return z3.Select(R.lead_array, e)
        return ite_chain(e, list(R.leads), self.sp.c(NONE))

    def isr_of(self, R: ZRequests, e: Any) -> ZSet:
        if R.lead_array is not None:
            return ZSet(bits=tuple(z3.Select(arr, e) for arr in R.isr_arrays))
        return ZSet(bits=tuple(ite_chain(e, [isr[m] for isr in R.isrs], FALSE) for m in range(self.sp.rf)))

    def last_leader(self, R: ZRequests) -> Any:
        return z3.If(R.count > 0, self.leader_of(R, R.count - 1), self.sp.c(NONE))

    def send(self, R: ZRequests, leader: Any, isr: ZSet) -> ZRequests:
        n, leader, bits = R.count, self.c(leader), self._stored(isr).bits
        if R.lead_array is not None:
            arrays = tuple(z3.Store(arr, n, b) for arr, b in zip(R.isr_arrays, bits))
            return ZRequests(n + 1, lead_array=z3.Store(R.lead_array, n, leader), isr_arrays=arrays)
        leads = tuple(z3.If(n == e, leader, ld) for e, ld in enumerate(R.leads))
        isrs = tuple(tuple(z3.If(n == e, b, x) for b, x in zip(bits, isr)) for e, isr in enumerate(R.isrs))
        return ZRequests(n + 1, leads, isrs)
