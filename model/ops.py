"""The operations interface that actions and properties are written against, and the view.

A family (``actions.py``) or a property reads a state through a ``View`` ``s``:
``s.hw[r]`` is replica r's HWM, ``s.next_record_id`` a shared field, and assigning
to either records an update (a later read sees it). It combines what it reads with
the operations of ``x`` (``Ops``), because each backend holds values its own way:

* ``ops_int.py``: Python ints, one state (the reference step, replay, the tests);
* ``trace.py``: nodes of a graph, recorded once per configuration and evaluated by
  ``plan.py`` on NumPy arrays, one row per state of a batch (the vector kernel);
* ``ops_z3.py``: Z3 terms (the symbolic engine).

Numbers (offsets, epochs, broker ids, ``NONE`` for none) support ``+ - < <= == !=``
in every backend; booleans must be combined with ``x.and_``, ``x.or_`` and ``x.not_``
(Python's ``and``, ``or`` and ``not`` would look at one backend's truth value, and
``~True`` is -2). Sets (of brokers or of record ids), logs and the request sequence
are opaque: only the operations below read or build them. A guard's conjuncts are
yielded one at a time (``Family``); a property returns its predicate.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from .schema import NONE, Field, Schema

Value = Any  # a number, a boolean, a set, a log or requests, as a backend holds them


class Ops:
    """Every operation a definition may use; each backend implements all of them."""

    NONE = NONE

    # ---- booleans and numbers --------------------------------------------------------------------
    def and_(self, *cs: Value) -> Value: raise NotImplementedError
    def or_(self, *cs: Value) -> Value: raise NotImplementedError
    def not_(self, c: Value) -> Value: raise NotImplementedError
    def implies(self, a: Value, b: Value) -> Value: return self.or_(self.not_(a), b)
    def ite(self, c: Value, a: Value, b: Value) -> Value: raise NotImplementedError
    def min(self, a: Value, b: Value) -> Value: return self.ite(a < b, a, b)
    def all_(self, cs: Iterable[Value]) -> Value: return self.and_(True, *cs)
    def any_(self, cs: Iterable[Value]) -> Value: return self.or_(False, *cs)
    def count(self, cs: Iterable[Value]) -> Value:
        """How many of these booleans hold."""
        raise NotImplementedError

    # ---- sets of brokers or record ids ---------------------------------------------------------------
    def has(self, S: Value, i: Value) -> Value: raise NotImplementedError
    def put(self, S: Value, i: Value, cond: Value = True) -> Value:
        """S with i added where ``cond`` holds."""
        raise NotImplementedError
    def drop(self, S: Value, i: int) -> Value: raise NotImplementedError
    def size(self, S: Value) -> Value: raise NotImplementedError
    def empty(self, S: Value) -> Value: raise NotImplementedError
    def only(self, S: Value, i: int) -> Value:
        """S is exactly {i}."""
        raise NotImplementedError
    def union(self, A: Value, B: Value) -> Value: raise NotImplementedError
    def subset(self, A: Value, B: Value) -> Value: raise NotImplementedError
    def same(self, A: Value, B: Value) -> Value: raise NotImplementedError
    def brokers(self, *members: int) -> Value:
        """The set of these brokers (static ids)."""
        raise NotImplementedError
    def digit(self, v: Value, k: int, base: int) -> Value:
        """Digit k of v in this base (a ``Tally``'s count of record k)."""
        return v // base ** k % base

    def any_from(self, S: Value, k: Value) -> Value:
        """Some id in S is at least k."""
        raise NotImplementedError

    # ---- logs --------------------------------------------------------------------------------------------
    def length(self, log: Value) -> Value: raise NotImplementedError
    def id_at(self, log: Value, o: Value) -> Value:
        """The record id at offset o (o within the log)."""
        raise NotImplementedError
    def epoch_at(self, log: Value, o: Value) -> Value:
        """The record epoch at offset o; ``NONE`` at or past the log's end."""
        raise NotImplementedError
    def append(self, log: Value, rid: Value, epoch: Value) -> Value: raise NotImplementedError
    def copy_next(self, log: Value, source: Value) -> Value:
        """The log with the source log's record at its own end appended (a fetch)."""
        raise NotImplementedError
    def prefix(self, log: Value, t: Value) -> Value:
        """The log truncated to its first t records (t within the log)."""
        raise NotImplementedError
    def ids(self, log: Value) -> Value:
        """The set of record ids in the log."""
        raise NotImplementedError
    def ids_below(self, log: Value, k: Value) -> Value:
        """The ids of the log's records below offset k."""
        raise NotImplementedError
    def last_epoch(self, log: Value) -> Value:
        """The epoch of the last record, ``NONE`` for an empty log."""
        raise NotImplementedError
    def epoch_start(self, log: Value, e: Value) -> Value:
        """The offset of the log's first record of epoch e or later, else its length."""
        raise NotImplementedError
    def matching_end(self, leader: Value, follower: Value) -> Value:
        """KIP-279: one past the largest offset at which both logs hold the identical record."""
        raise NotImplementedError
    def epoch_end(self, leader: Value, e: Value) -> Value:
        """KIP-101's OffsetsForLeaderEpoch on the leader's log: where epoch e ends, ``NONE``
        where the follower must fall back to its HWM."""
        raise NotImplementedError
    def agree_below(self, a: Value, b: Value, h: Value) -> Value:
        """Both logs reach offset h and hold identical records below it."""
        raise NotImplementedError

    # ---- the request sequence ---------------------------------------------------------------------------------
    def sent(self, R: Value) -> Value:
        """How many requests were sent: the next leader epoch."""
        raise NotImplementedError
    def leader_of(self, R: Value, e: Value) -> Value:
        """The leader named by the request of epoch e (``NONE`` when none, or not sent)."""
        raise NotImplementedError
    def isr_of(self, R: Value, e: Value) -> Value: raise NotImplementedError
    def last_leader(self, R: Value) -> Value:
        """The quorum's leader: the newest request's (``NONE`` before any)."""
        raise NotImplementedError
    def send(self, R: Value, leader: Value, isr: Value) -> Value:
        """R with one more request, of a fresh epoch."""
        raise NotImplementedError


class DefinitionError(TypeError):
    """A family or property that breaks the rules of the interface (a bug, not a user error)."""


class View:
    """A state as a definition sees it; backends supply ``read`` and keep ``updates``.

    ``s.name`` of a shared field reads it (the latest assignment first); ``s.name[r]``
    of a replica field goes through a small accessor, made once per view."""

    def __init__(self, schema: Schema, x: Ops) -> None:
        d = self.__dict__
        d["schema"], d["x"], d["cfg"] = schema, x, schema.config
        d["fields"] = schema.by_name
        d["updates"] = {}

    def read(self, f: Field, r: int) -> Value:
        """Field f of replica r (shared fields: r = -1), as the state holds it."""
        raise NotImplementedError

    def keeps(self, name: str) -> bool:
        return self.schema.keeps(name)

    def memo(self, key: Any, compute: Callable[[], Value]) -> Value:
        """A reading derived from the state (``readings.true_leader_is``...), computed once per
        state, or per rows of a batch; after an assignment, computed afresh."""
        if self.updates:
            return compute()
        return self.remember(key, compute)

    def remember(self, key: Any, compute: Callable[[], Value]) -> Value:
        """The backend's cache of derived readings (none by default)."""
        return compute()

    def get(self, f: Field, r: int) -> Value:
        key = (f.name, r)
        if key in self.updates:
            return self.updates[key]
        return self.read(f, r)

    def set(self, f: Field, r: int, value: Value) -> None:
        self.updates[(f.name, r)] = value
        if not f.replica:
            self.__dict__[f.name] = value

    def __getattr__(self, name: str) -> Value:
        d = self.__dict__
        f = d["fields"].get(name)
        if f is None:
            raise AttributeError(name)
        value = _PerReplica(self, f) if f.replica else self.read(f, -1)
        d[name] = value  # later reads find it here (an assignment replaces it)
        return value

    def __setattr__(self, name: str, value: Value) -> None:
        f = self.fields.get(name)
        if f is None or f.replica:
            raise DefinitionError(f"cannot assign {name!r}: not a shared field (replica fields: s.{name}[r] = ...)")
        self.set(f, -1, value)


class _PerReplica:
    __slots__ = ("view", "field")

    def __init__(self, view: View, f: Field) -> None:
        self.view, self.field = view, f

    def __getitem__(self, r: int) -> Value:
        return self.view.get(self.field, r)

    def __setitem__(self, r: int, value: Value) -> None:
        self.view.set(self.field, r, value)


def run_guard(run, view: View, args: dict[str, Value], require) -> bool:
    """Drive a family's generator: each yielded conjunct goes to ``require`` (False: the
    action is disabled here, stop); the assignments after the last yield are its update."""
    gen = run(view, view.x, **args)
    for cond in gen:
        if view.updates:
            raise DefinitionError(f"{run.__name__} yields a guard after assigning a field")
        if not require(cond):
            gen.close()
            return False
    return True
