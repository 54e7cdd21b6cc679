"""The properties as Z3 formulas, from their definitions (``catalog.py``).

For each property, ``goal(name, state)`` is what a search looks for: the violation
(not P) of an ``always`` property, the witness (P) of a ``sometimes`` one, with P the
property's definition run on a ``Z3View`` of the state. In the unbounded mode the
definitions' quantifiers over record ids are real ones (``model/ops_z3.py``): a goal
then says "some id", which a solver treats as a fresh constant; ``safe`` is its
negation, the form an induction hypothesis takes. tests/test_z3_properties.py checks
every goal against the definition on concrete states.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import z3

from isrcheck.model.symbolic_space import SymState, Z3View

from . import verdict
from .catalog import BY_NAME


@dataclass(frozen=True)
class Goal:
    formula: z3.BoolRef

    def safe(self) -> z3.BoolRef:
        """Not the goal."""
        return z3.Not(self.formula)


def goal(prop: Any, s: SymState) -> Goal:
    """What a search for a property (or the Kafka property of that name) looks for in state
    ``s`` (see module doc)."""
    if isinstance(prop, str):
        if prop not in BY_NAME:
            raise KeyError(f"no symbolic form for property {prop!r}")
        prop = BY_NAME[prop]
    view = Z3View(s)
    holds = prop.holds(view, view.x)
    holds = z3.BoolVal(holds) if isinstance(holds, bool) else holds
    return Goal(z3.Not(holds) if verdict.always(prop) else holds)
