"""Candidate lemmas: small structural facts that reachable states may satisfy.

They are guesses, not assumptions: the engine keeps only the largest subset that
is inductive together (Houdini: true initially and preserved by every action),
which makes every kept lemma an invariant of the reachable states. Kept lemmas
prune unreachable states from BMC (fewer paths to refute) and strengthen the
induction step. A guess that the model breaks is simply dropped, so a lemma
about one revision costs nothing on another. They read a state through ``Terms``:
the Kafka fields of ``fields.py`` by short names.
"""

from __future__ import annotations

from typing import Any

import z3

from .readings import true_leader_is
from .ops import NONE as NO
from .symbolic_space import SymState, Z3View


class Terms:
    """A symbolic Kafka state's fields as terms, by the short names the lemmas use."""

    def __init__(self, s: SymState) -> None:
        self.state, self.space = s, s.space
        self.view = Z3View(s)
        self.x = self.space.x
        self.R = self.view.requests
        self.v = s.v

    @property
    def nle(self) -> Any:
        return self.x.sent(self.R)

    @property
    def nid(self) -> Any:
        return self.v["next_record_id"]

    @property
    def qlead(self) -> Any:
        return self.x.last_leader(self.R)

    @property
    def qep(self) -> Any:
        return self.nle - 1

    def q(self, m: int) -> Any:
        return self.v[f"quorum_isr.{m}"]

    def req_lead(self, e: Any) -> Any:
        return self.x.leader_of(self.R, e)

    def req_isr(self, e: Any, m: int) -> Any:
        return self.x.isr_of(self.R, e).bits[m]

    def length(self, r: int) -> Any:
        return self.v[f"r{r}.log.len"]

    def rid(self, r: int, o: int) -> Any:
        return self.v[f"r{r}.log.id{o}"]

    def rep(self, r: int, o: int) -> Any:
        return self.v[f"r{r}.log.ep{o}"]

    def hw(self, r: int) -> Any:
        return self.v[f"r{r}.hw"]

    def lep(self, r: int) -> Any:
        return self.v[f"r{r}.leader_epoch"]

    def ld(self, r: int) -> Any:
        return self.v[f"r{r}.leader"]

    def isr(self, r: int, m: int) -> Any:
        return self.v[f"r{r}.isr.{m}"]

    def mark(self, r: int) -> Any:
        return self.v.get(f"r{r}.crash_mark", self.space.c(NO))

    def alive(self, r: int) -> Any:
        return self.mark(r) == NO if f"r{r}.crash_mark" in self.v else z3.BoolVal(True)

    def since(self, r: int) -> Any:
        return self.v.get(f"r{r}.leader_since", self.space.c(NO))

    def holds(self, history: str, i: Any) -> Any:
        return self.x.has(getattr(self.view, history), i)

    def true_leader_is(self, q: int) -> Any:
        return true_leader_is(self.view, self.x, q)


def request_candidates(state: SymState, e: z3.ArithRef) -> list[tuple[str, z3.BoolRef]]:
    """Guesses about the request of epoch ``e``. With unbounded epochs they are meant for
    every epoch: Houdini checks them at an arbitrary one, and each use instantiates them
    at the epochs that a state or a step refers to."""
    s = Terms(state)
    rf = s.space.rf
    sent = z3.And(e >= 0, e < s.nle)
    lead = s.req_lead(e)
    named = z3.And([z3.Implies(lead == m, s.req_isr(e, m)) for m in range(rf)])
    return [
        ("a request names a broker or none", z3.Implies(sent, z3.And(lead >= NO, lead < rf))),
        ("a request's leader is in its ISR", z3.Implies(sent, named)),
    ]


def referenced_epochs(state: SymState) -> list[z3.ArithRef]:
    """The epochs whose requests a state refers to: the newest two, each broker's, each record's."""
    s = Terms(state)
    sp = s.space
    out = [s.nle - 1, s.nle - 2] + [s.lep(r) for r in range(sp.rf)] + [s.since(r) for r in range(sp.rf)]
    return out + [s.rep(r, o) for r in range(sp.rf) for o in range(sp.ls)]


def candidates(state: SymState) -> list[tuple[str, z3.BoolRef]]:
    """(readable name, formula) pairs over one state (request guesses of unbounded epochs
    apart: ``request_candidates``)."""
    s = Terms(state)
    sp = s.space
    rf, ls = sp.rf, sp.ls
    out: list[tuple[str, z3.BoolRef]] = []

    def add(name: str, formula: z3.BoolRef) -> None:
        out.append((name, formula))

    for r in range(rf):
        add(f"broker {r}'s epoch is at most the quorum's", s.lep(r) < s.nle)
        add(f"broker {r} with a leader has an epoch", z3.Implies(s.ld(r) != NO, s.lep(r) >= 0))
        add(
            f"broker {r}'s leader is the one its epoch's request names",
            z3.Implies(s.ld(r) != NO, s.req_lead(s.lep(r)) == s.ld(r)),
        )
        add(f"broker {r}'s HWM is within its log", s.hw(r) <= s.length(r))
        add(f"a leader broker {r} is in its cached ISR", z3.Implies(s.ld(r) == r, s.isr(r, r)))
        add(
            f"broker {r} as true leader caches the quorum ISR",
            z3.Implies(s.true_leader_is(r), z3.And([s.isr(r, m) == s.q(m) for m in range(rf)])),
        )
        add(
            f"a crashed broker {r} holds no partition state",
            z3.Implies(z3.Not(s.alive(r)), z3.And(s.ld(r) == NO, s.lep(r) == NO, s.mark(r) <= s.nid)),
        )
        for o in range(ls):
            here = o < s.length(r)
            add(f"records of broker {r} have issued ids", z3.Implies(here, s.rid(r, o) < s.nid))
            add(f"records of broker {r} have issued epochs", z3.Implies(here, s.rep(r, o) < s.nle))
            add(
                f"records of broker {r} carry the epoch of a request that named a leader",
                z3.Implies(here, s.req_lead(s.rep(r, o)) != NO),
            )
            add(
                f"records of broker {r} are not from a later epoch than its own",
                z3.Implies(z3.And(here, s.ld(r) != NO), s.rep(r, o) <= s.lep(r)),
            )
            if o + 1 < ls:
                add(
                    f"epochs grow along broker {r}'s log",
                    z3.Implies(o + 1 < s.length(r), s.rep(r, o) <= s.rep(r, o + 1)),
                )
            for r2 in range(rf):
                for o2 in range(ls):
                    if (r2, o2) <= (r, o):
                        continue
                    same_id = z3.And(here, o2 < s.length(r2), s.rid(r, o) == s.rid(r2, o2))
                    if o != o2:
                        add("a record id sits at one offset", z3.Not(same_id))
                    else:
                        add("a record id has one epoch", z3.Implies(same_id, s.rep(r, o) == s.rep(r2, o)))
                if r2 > r:
                    same_epoch = z3.And(here, o < s.length(r2), s.rep(r, o) == s.rep(r2, o))
                    add("an epoch and an offset name one record", z3.Implies(same_epoch, s.rid(r, o) == s.rid(r2, o)))
                    same = z3.And(here, o < s.length(r2), s.rid(r, o) == s.rid(r2, o), s.rep(r, o) == s.rep(r2, o))
                    prefix = [z3.And(s.rid(r, p) == s.rid(r2, p), s.rep(r, p) == s.rep(r2, p)) for p in range(o)]
                    add("logs that share a record share what precedes it", z3.Implies(same, z3.And(prefix)))
    for q in range(rf):
        add("the quorum leader is in the quorum ISR", z3.Implies(s.qlead == q, s.q(q)))
    if sp.me is not None:
        for e in range(sp.me + 1):
            out += request_candidates(state, s.space.c(e))
    if sp.mr is not None:
        histories = [h for h in ("acked", "committed", "readable") if sp.schema.keeps(h)]
        for h in histories:
            for i in range(sp.mr):
                add(f"{h} records have issued ids", z3.Implies(s.holds(h, i), i < s.nid))
                if h == "committed" and "readable" in histories:
                    add("committed records are readable", z3.Implies(s.holds(h, i), s.holds("readable", i)))
    return out
