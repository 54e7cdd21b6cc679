"""Whether one state is stuck for a graph property, by exploring its future alone.

The engines decide a graph property over the whole explored graph (``checker/graph.py``);
a saved counterexample must stand on its own, so replay checks its last state the same
way from that state only: nothing reachable from it satisfies the property's target or
its ``beyond`` mark (where the bounds, not the protocol, may block the way). A stuck
state's future is small (few actions stay enabled); a state that recovers finds its
way out within a few steps, where this search stops.
"""

from __future__ import annotations

from typing import Any

from isrcheck.model.ops_int import state_predicate

FUTURE_LIMIT = 2_000_000  # states explored from one state before giving up


class FutureTooLarge(ValueError):
    pass


def stuck(model: Any, prop: Any, state: int, limit: int = FUTURE_LIMIT) -> bool:
    """``state`` is hopeless, or no state reachable from it (itself included) reaches the
    target or the bounds."""
    if prop.hopeless is not None and state_predicate(model.layout, prop.hopeless)(state):
        return True
    target = prop.derived(model)
    beyond = state_predicate(model.layout, prop.beyond)
    seen, frontier = {state}, [state]
    while frontier:
        nexts = []
        for s in frontier:
            if target(s) or beyond(s):
                return False
            for _, t in model.successors(s):
                if t not in seen:
                    seen.add(t)
                    nexts.append(t)
        if len(seen) > limit:
            raise FutureTooLarge(f"more than {limit:,} states follow it")
        frontier = nexts
    return True
