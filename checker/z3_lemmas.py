"""Houdini: the largest jointly inductive subset of the candidate lemmas.

A kept set is true in the initial state and preserved by every action from any
domain state that satisfies the whole set, so each kept lemma holds in every
reachable state: BMC may assume it in every step and induction in every state.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import z3

from isrcheck.model.symbolic import SymbolicModel
from isrcheck.model.symbolic_lemmas import candidates
from isrcheck.model.symbolic_state import SymState


@dataclass(frozen=True)
class Lemmas:
    """Indices into ``candidates(state)`` that were proved invariant."""

    kept: tuple[int, ...]
    names: tuple[str, ...]
    seconds: float

    def at(self, s: SymState) -> list[z3.BoolRef]:
        cands = candidates(s)
        return [cands[i][1] for i in self.kept]


NO_LEMMAS = Lemmas((), (), 0.0)


def houdini(sym: SymbolicModel, timeout: float) -> Lemmas:
    """Prune candidates until the rest are inductive together; no lemma if time runs out."""
    started = time.monotonic()
    s, t = sym.fresh("lemma"), sym.fresh("lemma'")
    act, epoch = sym.step_vars(-2)
    cs, ct = candidates(s), candidates(t)
    keep = set(range(len(cs)))

    def prune(solver: z3.Solver, hypothesis, conclusion) -> bool:
        while keep:
            remaining = timeout - (time.monotonic() - started)
            if remaining <= 0:
                return False
            solver.set("timeout", int(remaining * 1000))
            solver.push()
            if hypothesis is not None:
                solver.add(*[hypothesis[i][1] for i in sorted(keep)])
            solver.add(z3.Or([z3.Not(conclusion[i][1]) for i in sorted(keep)]))
            verdict = solver.check()
            if verdict == z3.sat:
                m = solver.model()
                broken = {i for i in keep if z3.is_false(m.eval(conclusion[i][1], model_completion=True))}
                keep.difference_update(broken)
            solver.pop()
            if verdict == z3.unsat:
                return True
            if verdict == z3.unknown:
                return False
        return True

    initial = sym.space.solver()
    initial.add(sym.init(s))
    if not prune(initial, None, cs):
        return Lemmas((), (), time.monotonic() - started)
    step = sym.space.solver()
    step.add(sym.domain(s), sym.trans(s, t, act, epoch))
    if not prune(step, cs, ct):
        return Lemmas((), (), time.monotonic() - started)
    kept = tuple(sorted(keep))
    names = tuple(dict.fromkeys(cs[i][0] for i in kept))
    return Lemmas(kept, names, time.monotonic() - started)
