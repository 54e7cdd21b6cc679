"""The properties as Z3 formulas, written from the readable definitions in catalog.py.

For each property, ``goal(name, state)`` is what a search looks for: the violation
(not P) of an ``always`` property, the witness (P) of a ``sometimes`` one. A goal is
existential: in the unbounded mode it names its record id or epoch with a fresh
witness constant (``Goal.witnesses``), so that BMC needs no quantifier; ``safe`` is
its negation, universally quantified over those witnesses, the form an induction
hypothesis takes. tests/test_z3_properties.py checks every goal against the
``reference`` predicate on concrete states.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import z3

from isrcheck.model.symbolic_state import FALSE, SymState

_fresh = itertools.count()


@dataclass(frozen=True)
class Goal:
    formula: z3.BoolRef
    witnesses: tuple[z3.ArithRef, ...] = ()

    def safe(self) -> z3.BoolRef:
        """Not the goal, for every value of the witnesses."""
        if self.witnesses:
            return z3.ForAll(list(self.witnesses), z3.Not(self.formula))
        return z3.Not(self.formula)


def _witness(kind: str) -> z3.ArithRef:
    return z3.Int(f"w.{kind}.{next(_fresh)}")


def _agree_below(s: SymState, a: int, b: int, h: z3.ArithRef) -> z3.BoolRef:
    """Both logs reach ``h`` and hold identical records below it."""
    same = [
        z3.Implies(o < h, z3.And(s.rid(a, o) == s.rid(b, o), s.rep(a, o) == s.rep(b, o)))
        for o in range(s.space.ls)
    ]
    return z3.And(h <= s.length(a), h <= s.length(b), *same)


def _isr_broken(s: SymState, strong: bool) -> z3.BoolRef:
    """Some believed leader with a non-zero HWM whose prefix is missing on an electable
    ISR member: a live one, or for strong-isr the last member even when down
    (catalog.electable)."""
    rf = s.space.rf
    cases = []
    for r1 in range(rf):
        leads = z3.And(s.ld(r1) == r1, s.hw(r1) > 0)
        members = [s.q(m) if strong else s.isr(r1, m) for m in range(rf)]
        for r2 in range(rf):
            electable = z3.And(members[r2], s.alive(r2))
            if strong:
                last = z3.And(members[r2], *[z3.Not(members[m]) for m in range(rf) if m != r2])
                electable = z3.Or(electable, last)
            cases.append(z3.And(leads, electable, z3.Not(_agree_below(s, r1, r2, s.hw(r1)))))
    return z3.Or(cases)


def _leader_outside_isr(s: SymState) -> z3.BoolRef:
    return z3.Or([z3.And(s.qlead == q, z3.Not(s.q(q))) for q in range(s.space.rf)])


def _logs_disagree(s: SymState) -> z3.BoolRef:
    rf = s.space.rf
    cases = []
    for a in range(rf):
        for b in range(a + 1, rf):
            h = z3.If(s.hw(a) < s.hw(b), s.hw(a), s.hw(b))
            cases.append(z3.Not(_agree_below(s, a, b, h)))
    return z3.Or(cases) if cases else FALSE


def _in_log(s: SymState, r: int, rid: z3.ArithRef | int) -> z3.BoolRef:
    return z3.Or([z3.And(o < s.length(r), s.rid(r, o) == rid) for o in range(s.space.ls)])


def _history_lost(s: SymState, history: str) -> Goal:
    """A record id of the history set that the true leader's log lacks."""
    rf, mr = s.space.rf, s.space.mr
    if mr is None:
        w = _witness(history)
        missing = [z3.And(s.true_leader_is(q), z3.Not(_in_log(s, q, w))) for q in range(rf)]
        return Goal(z3.And(w >= 0, s.holds(history, w), z3.Or(missing)), (w,))
    cases = [
        z3.And(s.true_leader_is(q), s.holds(history, i), z3.Not(_in_log(s, q, i)))
        for q in range(rf)
        for i in range(mr)
    ]
    return Goal(z3.Or(cases))


def _nonempty(s: SymState, history: str) -> Goal:
    if s.space.mr is None:
        w = _witness(history)
        return Goal(z3.And(w >= 0, s.holds(history, w)), (w,))
    return Goal(z3.Or([s.holds(history, i) for i in range(s.space.mr)]))


def _leader_failover(s: SymState) -> Goal:
    """The true leader holds a committed record written in an epoch that another broker led."""
    rf, ls = s.space.rf, s.space.ls
    cases = [
        z3.And(
            s.true_leader_is(q),
            o < s.length(q),
            s.holds("committed", s.rid(q, o)),
            s.req_lead(s.rep(q, o)) != q,
        )
        for q in range(rf)
        for o in range(ls)
    ]
    return Goal(z3.Or(cases))


def _write_after_crash(s: SymState) -> Goal:
    """A broker is down and a record written since its crash is acknowledged."""
    rf, mr = s.space.rf, s.space.mr

    def acked_since(i) -> z3.BoolRef:
        return z3.Or([z3.And(z3.Not(s.alive(r)), s.holds("acked", i), i >= s.mark(r)) for r in range(rf)])

    if mr is None:
        w = _witness("acked")
        return Goal(z3.And(w >= 0, acked_since(w)), (w,))
    return Goal(z3.Or([acked_since(i) for i in range(mr)]))


def goal(name: str, s: SymState) -> Goal:
    """What a search for property ``name`` looks for in state ``s`` (see module doc)."""
    if name == "weak-isr":
        return Goal(_isr_broken(s, strong=False))
    if name == "strong-isr":
        return Goal(_isr_broken(s, strong=True))
    if name == "leader-in-isr":
        return Goal(_leader_outside_isr(s))
    if name == "log-matching":
        return Goal(_logs_disagree(s))
    if name == "committed-survive":
        return _history_lost(s, "committed")
    if name == "acked-survive":
        return _history_lost(s, "acked")
    if name == "read-within-hwm":
        return _history_lost(s, "readable")
    if name == "record-committed":
        return _nonempty(s, "committed")
    if name == "consumer-reads":
        return _nonempty(s, "readable")
    if name == "leader-failover":
        return _leader_failover(s)
    if name == "write-after-crash":
        return _write_after_crash(s)
    raise KeyError(f"no symbolic form for property {name!r}")
