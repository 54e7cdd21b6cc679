"""Symbolic log reads and history updates shared by the actions of symbolic.py.

Each mirrors a table of layout.py or a helper of successors.py (``first_nonmatching``
is ``first_nonmatching_offset``, ``kip101_lookup`` is ``kip101_lookup``, ``expose``
is ``expose``) over a log of symbolic length: offsets are unrolled up to the log
size and guarded by ``offset < length``.
"""

from __future__ import annotations

import z3

from .symbolic_state import NO, SymState, ite_chain

Updates = dict[str, z3.ExprRef]


def log_ids(s: SymState, r: int) -> list[z3.ArithRef]:
    return [s.rid(r, o) for o in range(s.space.ls)]


def last_epoch(s: SymState, r: int) -> z3.ArithRef:
    return ite_chain(s.length(r) - 1, [s.rep(r, o) for o in range(s.space.ls)], s.space.c(NO))


def epoch_start(s: SymState, r: int, epoch: z3.ArithRef) -> z3.ArithRef:
    """Where ``epoch`` starts in broker r's log: its first record of that epoch or later, else its end."""
    out: z3.ArithRef = s.length(r)
    for o in reversed(range(s.space.ls)):
        out = z3.If(z3.And(o < s.length(r), s.rep(r, o) >= epoch), o, out)
    return out


def first_nonmatching(s: SymState, lead: int, r: int) -> z3.ArithRef:
    """KIP-279: one past the largest offset where both logs hold the identical record."""
    out: z3.ArithRef = s.space.c(0)
    for o in range(s.space.ls):
        same = z3.And(
            o < s.length(lead), o < s.length(r), s.rid(lead, o) == s.rid(r, o), s.rep(lead, o) == s.rep(r, o)
        )
        out = z3.If(same, o + 1, out)
    return out


def kip101_lookup(s: SymState, lead: int, epoch: z3.ArithRef) -> z3.ArithRef:
    """KIP-101 OffsetForLeaderEpoch answer, or -1 where the follower falls back to its HWM."""
    n = s.length(lead)
    first_later: z3.ArithRef = s.space.c(NO)
    for o in reversed(range(s.space.ls)):
        first_later = z3.If(z3.And(o < n, s.rep(lead, o) > epoch), o, first_later)
    return z3.If(n == 0, NO, z3.If(last_epoch(s, lead) == epoch, n, first_later))


def add_id(s: SymState, upd: Updates, history: str, rid: z3.ArithRef, cond: z3.BoolRef) -> None:
    """Record id ``rid`` joins a history set when ``cond`` (composes with earlier updates)."""
    sp = s.space
    if history not in sp.histories:
        return
    if sp.mr is None:
        cur = upd.get(history, s.v[history])
        upd[history] = z3.Store(cur, rid, z3.Or(z3.Select(cur, rid), cond))
        return
    for i in range(sp.mr):
        name = f"{history}{i}"
        upd[name] = z3.Or(upd.get(name, s.v[name]), z3.And(cond, rid == i))


def expose(s: SymState, upd: Updates, k, length, ids: list, true_leader) -> None:
    """Ids now below a believed leader's HWM ``k`` (of a log of ``length``): readable by
    some consumer, and committed when that leader is the true leader."""
    for o, rid in enumerate(ids):
        below = z3.And(o < k, o < length)
        add_id(s, upd, "readable", rid, below)
        add_id(s, upd, "committed", rid, z3.And(below, true_leader))
