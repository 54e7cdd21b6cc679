"""Whether a lasso violates a liveness property, checked on the model alone.

The engines find lassos over the explored graph (``checker/liveness.py``); a saved one
must stand on its own, so replay checks what makes it a counterexample: a state where
the trigger holds, after which the goal never holds again, no step is a fault, the loop
is a fair one (a stutter only where no system step is enabled; a cycle in which every
system family that stays enabled throughout is taken), and no state of the loop is one
the bounds may have held back.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from isrcheck.model.actions import FAULT, SYSTEM
from isrcheck.model.ops_int import state_predicate
from isrcheck.model.roles import step_role


def problem(model: Any, prop: Any, states: Sequence[int], actions: Sequence[int], loop_action: int | None,
            loop: int | None) -> str:
    """'' when the lasso violates ``prop``; else, in one line, why it does not."""
    if loop is None:
        return f"{prop.name} is a liveness property: its counterexample must be a lasso, and this trace has no loop"
    role = step_role(model)
    if trigger_index(model, prop, states, actions, loop_action, loop, role) is None:
        return (f"no state of the trace triggers {prop.name} with its goal never following and no fault after it "
                "(the property assumes none happens any more)")
    if prop.beyond is not None:
        beyond = state_predicate(model.layout, prop.beyond)
        if any(beyond(states[i]) for i in range(loop, len(states))):
            return "its loop reaches the bounds (every leader epoch used): past them the run might go on"
    if getattr(model.config, "fairness", "weak") != "weak":
        return ""
    return _unfair(model, role, states, actions, loop, loop_action)


def trigger_index(model: Any, prop: Any, states: Sequence[int], actions: Sequence[int], loop_action: int | None,
                  loop: int, role: Callable[[int, int], str] | None = None) -> int | None:
    """The first state, at or before the loop's start, where the trigger holds and after which
    the goal never holds and no step is a fault (None: there is none); ``role``: the
    model's ``roles.step_role``, where the caller has it."""
    goal, trigger = prop.derived(model), state_predicate(model.layout, prop.trigger)
    role = role or step_role(model)
    if loop_action is not None and role(loop_action, states[-1]) == FAULT:
        return None
    after = len(states)  # states[after:] never reach the goal, and no step between them is a fault
    while after > 0 and not goal(states[after - 1]) and (
            after == len(states) or role(actions[after - 1], states[after - 1]) != FAULT):
        after -= 1
    return next((i for i in range(after, loop + 1) if trigger(states[i])), None)


def _unfair(model: Any, role: Any, states: Sequence[int], actions: Sequence[int], loop: int,
            loop_action: int | None) -> str:
    """Why the loop is no weakly fair run ('' when it is one)."""
    families = model.catalogue.family_of
    cycle = list(range(loop, len(states)))

    def enabled(state: int) -> set[str]:
        return {families[a].name for a, t in model.successors(state) if t != state and role(a, state) == SYSTEM}

    always = set.intersection(*(enabled(states[i]) for i in cycle))
    if loop_action is None:
        if always:
            return f"the run stops at its last state, where {', '.join(sorted(always))} is still enabled: not a fair run"
        return ""
    taken = {families[a].name for a in [*actions[loop:], loop_action]}
    missed = sorted(always - taken)
    return f"its loop never takes {', '.join(missed)}, enabled all along: not a fair run" if missed else ""
