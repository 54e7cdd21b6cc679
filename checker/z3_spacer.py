"""Proof by Z3's Spacer engine: an inductive invariant from constrained Horn clauses.

The clauses say: the initial state is in Inv; Inv is closed under the transition
relation; no state in Inv reaches the property's goal. Spacer answers sat when it
finds such an Inv (the property holds at every depth), unsat when the goal is
reachable (at some depth, possibly beyond the BMC bound), unknown on timeout.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import z3

from isrcheck.properties import Property
from isrcheck.properties.symbolic import goal

Check = Callable[..., z3.CheckSatResult]  # (solver, budget=seconds): the run's limits and Ctrl-C honoured


def spacer_proof(sym: Any, prop: Property, check: Check, budget: float | None) -> dict:
    """Ask Spacer for an inductive invariant of ``sym``'s transition relation that excludes
    ``prop``'s goal; ``check`` runs the solver under the run's limits."""
    s, t = sym.fresh("h"), sym.fresh("h'")
    act, epoch = z3.Int("h.act"), z3.Int("h.epoch")
    xs, ys = s.terms(), t.terms()
    inv = z3.Function("Inv", *[x.sort() for x in xs], z3.BoolSort())
    g = goal(prop, s)
    solver = z3.SolverFor("HORN")
    solver.add(z3.ForAll(xs, z3.Implies(sym.init(s), inv(*xs))))
    step = z3.And(inv(*xs), sym.domain(s), sym.trans(s, t, act, epoch))
    solver.add(z3.ForAll(xs + ys + [act, epoch], z3.Implies(step, inv(*ys))))
    solver.add(z3.ForAll(xs, z3.Implies(z3.And(inv(*xs), g.formula), z3.BoolVal(False))))
    started = time.monotonic()
    answer = check(solver, budget=budget)
    seconds = round(time.monotonic() - started, 3)
    out = {"method": "spacer", "seconds": seconds}
    if answer == z3.sat:
        out.update(outcome="proved", reason="Spacer found an inductive invariant (constrained Horn clauses)")
    elif answer == z3.unsat:
        out.update(outcome="failed", reason="Spacer found the goal reachable beyond the BMC depth: raise --max-depth")
    else:
        ran_out = budget is not None and seconds >= 0.9 * budget  # else the run's own limits stopped it
        limit = f" (--prove-timeout {budget:g} s)" if ran_out else ""
        out.update(outcome="unknown", reason=f"{solver.reason_unknown()}{limit}")
    return out
