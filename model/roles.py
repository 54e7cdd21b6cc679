"""What each step of a configuration is for the liveness properties: a system duty, an
environment choice, or a fault (``actions.ROLES``, declared with each family).

Weak fairness (``--fairness weak``) is asked of the system's families only: a family
that stays enabled is eventually taken. A system family can also be a fault in some
states (``Family.fault_when``: the controller dropping a live broker), so a step's role
is its family's, overridden to fault where that condition holds in the state before.
"""

from __future__ import annotations

from typing import Any, Callable

from .actions import ENVIRONMENT, FAULT, SYSTEM, Catalogue
from .ops_int import state_predicate

CODES = {SYSTEM: 0, ENVIRONMENT: 1, FAULT: 2}


def fault_conditions(catalogue: Catalogue) -> dict[int, Callable[[Any, Any], Any]]:
    """Per action index of a family with ``fault_when``: the definition (s, x) of the states
    where that action is a fault."""
    out = {}
    for index, action in enumerate(catalogue.actions):
        fam = catalogue.family_of[index]
        if fam.fault_when is not None:
            out[index] = (lambda when, args: lambda s, x: when(s, x, **args))(fam.fault_when, action.args)
    return out


def fair_units(catalogue: Catalogue) -> list[int]:
    """Per action index, its weak-fairness unit (the family's index), or -1 where it is no
    system step. Fairness is per family: see docs/liveness.md for why (symmetry)."""
    return [catalogue.families.index(f) if f.role == SYSTEM else -1 for f in catalogue.family_of]


def step_role(model: Any) -> Callable[[int, int], str]:
    """``role(action, state)``: the role of taking ``action`` in packed ``state``."""
    conditions = {a: state_predicate(model.layout, c) for a, c in fault_conditions(model.catalogue).items()}
    families = model.catalogue.family_of

    def role(action: int, state: int) -> str:
        if action in conditions and conditions[action](state):
            return FAULT
        return families[action].role

    return role
