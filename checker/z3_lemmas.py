"""Houdini: the largest jointly inductive subset of the candidate lemmas.

A kept set is true in the initial state and preserved by every action from any
domain state that satisfies the whole set, so each kept lemma holds in every
reachable state: BMC may assume it in every step and induction in every state.

With unbounded epochs the guesses about requests are meant for every epoch. Houdini
checks them at an arbitrary epoch ``w`` of the next state, assuming them at ``w``,
at every epoch the state refers to and at the step's epoch: if that is valid for
every ``w``, the universally quantified lemma is inductive. Uses then assume
instances at the epochs that matter (``Lemmas.at``), never the quantifier.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import z3

from isrcheck.model.symbolic import SymbolicModel
from isrcheck.model.symbolic_lemmas import candidates, referenced_epochs, request_candidates
from isrcheck.model.symbolic_space import SymState


@dataclass(frozen=True)
class Lemmas:
    """Indices into ``candidates(state)`` (and ``request_candidates``) that were proved invariant."""

    kept: tuple[int, ...]
    kept_requests: tuple[int, ...]
    names: tuple[str, ...]

    def at(self, s: SymState, epochs: list[z3.ArithRef] | None = None) -> list[z3.BoolRef]:
        """The lemmas in state ``s``; with unbounded epochs, the request lemmas at ``epochs``
        and at the epochs that ``s`` refers to."""
        if not self.kept and not self.kept_requests:
            return []
        cands = candidates(s)
        return [cands[i][1] for i in self.kept] + self.requests_at(s, referenced_epochs(s) + list(epochs or []))

    def requests_at(self, s: SymState, epochs: list[z3.ArithRef]) -> list[z3.BoolRef]:
        """The request lemmas of unbounded epochs, instantiated at ``epochs`` of ``s``."""
        out: list[z3.BoolRef] = []
        if self.kept_requests and s.space.me is None:
            for e in epochs:
                reqs = request_candidates(s, e)
                out += [reqs[i][1] for i in self.kept_requests]
        return out


NO_LEMMAS = Lemmas((), (), ())


def houdini(sym: SymbolicModel, timeout: float) -> Lemmas:
    """Prune candidates until the rest are inductive together; no lemma if time runs out."""
    started = time.monotonic()
    s, t = sym.fresh("lemma"), sym.fresh("lemma'")
    act, epoch = sym.step_vars(-2)
    indexed = s.space.me is None
    w = z3.Int("lemma.w") if indexed else None
    cs, ct = candidates(s), candidates(t)
    rs = request_candidates(s, w) if indexed else []
    rt = request_candidates(t, w) if indexed else []
    keep = set(range(len(cs)))
    keep_req = set(range(len(rs)))
    def hypotheses() -> list[z3.BoolRef]:
        out = [cs[i][1] for i in sorted(keep)]
        if indexed:
            for e in referenced_epochs(s) + [epoch, w]:
                reqs = request_candidates(s, e)
                out += [reqs[i][1] for i in sorted(keep_req)]
        return out

    def prune(solver: z3.Solver, assume: bool, plain, reqs) -> bool:
        while keep or keep_req:
            remaining = timeout - (time.monotonic() - started)
            if remaining <= 0:
                return False
            solver.set("timeout", int(remaining * 1000))
            solver.push()
            if assume:
                solver.add(*hypotheses())
            goals = [(keep, i, plain[i][1]) for i in sorted(keep)] + [(keep_req, i, reqs[i][1]) for i in sorted(keep_req)]
            solver.add(z3.Or([z3.Not(f) for _, _, f in goals]))
            verdict = solver.check()
            if verdict == z3.sat:
                m = solver.model()
                for kept, i, f in goals:
                    if z3.is_false(m.eval(f, model_completion=True)):
                        kept.discard(i)
            solver.pop()
            if verdict == z3.unsat:
                return True
            if verdict == z3.unknown:
                return False
        return True

    initial = sym.space.solver()
    initial.add(sym.init(s))
    if not prune(initial, False, cs, rs):
        return NO_LEMMAS
    step = sym.space.solver()
    step.add(sym.domain(s), sym.trans(s, t, act, epoch))
    if not prune(step, True, ct, rt):
        return NO_LEMMAS
    names = tuple(dict.fromkeys([cs[i][0] for i in sorted(keep)] + [rs[i][0] for i in sorted(keep_req)]))
    return Lemmas(tuple(sorted(keep)), tuple(sorted(keep_req)), names)
