"""The transition relation in Z3, from the action definitions.

Each action of the registry runs on a ``Z3View`` of a symbolic state (``ops_z3.py``):
the conjuncts it yields make its guard, and the fields it assigns its update, as
terms. ``trans`` adds the explicit frame (every other variable keeps its value) and
selects one action per step with a number ``act`` that is the catalogue index, so a
Z3 model decodes to the same ``Action(name, params)`` that ``model.step`` replays
(tests/test_conformance.py holds every action's guard and update to the reference).

In the unbounded mode (``max_leader_epoch`` None) the actions that take an epoch
parameter read it from a per-step number ``epoch``; the controller elects without an
epoch bound and leaders write without a record-id bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import z3

from .actions import Catalogue
from .kafka import KAFKA
from .ops import DefinitionError
from .symbolic_space import Space, SymState, Z3View


@dataclass(frozen=True, slots=True)
class SymAction:
    """A catalogue action; ``symbolic_epoch``: its epoch parameter is the step's ``epoch``."""

    name: str
    params: tuple[tuple[str, int], ...]
    symbolic_epoch: bool = False

    def args(self, epoch: int | None = None) -> dict[str, int]:
        out = dict(self.params)
        if self.symbolic_epoch:
            assert epoch is not None
            out["epoch"] = epoch
        return out


class SymbolicModel:
    """The symbolic twin of a model for one configuration (the Kafka model by default)."""

    def __init__(self, config: Any, horizon: int | None = None, protocol: Any = KAFKA) -> None:
        self.config = config.validate()
        self.protocol = protocol
        self.space = Space(protocol, config, horizon)
        self.families = {f.name: f for f in protocol.families}
        if self.space.unbounded:
            self.actions = []
            for fam in protocol.families:
                if not fam.kept(self.space.cfg):
                    continue
                fixed = [p for p in fam.params if not p.epoch]
                self._expand(fam.name, [p.name for p in fixed], any(p.epoch for p in fam.params), ())
        else:
            bounded = config.with_changes(max_leader_epoch=self.space.me)
            self.actions = [SymAction(a.name, a.params) for a in Catalogue(protocol, bounded)]

    def _expand(self, name: str, params: list[str], symbolic_epoch: bool, bound: tuple) -> None:
        if len(bound) == len(params):
            self.actions.append(SymAction(name, tuple(zip(params, bound)), symbolic_epoch))
            return
        for v in range(self.config.rf):
            self._expand(name, params, symbolic_epoch, bound + (v,))

    # ---- states and steps -------------------------------------------------------------------------
    def fresh(self, prefix: str) -> SymState:
        return self.space.fresh(prefix)

    def view(self, s: SymState) -> Z3View:
        return Z3View(s)

    def step_vars(self, k: int) -> tuple[z3.ArithRef, z3.ArithRef]:
        """The action selector and the epoch parameter of step k (into state k)."""
        sp = self.space
        act = z3.Int(f"act{k}") if sp.unbounded else z3.BitVec(f"act{k}", len(self.actions).bit_length() + 1)
        return act, sp.number(f"epoch{k}")

    def init(self, s: SymState) -> z3.BoolRef:
        return self.space.init(s)

    def domain(self, s: SymState) -> z3.BoolRef:
        return self.space.domain(s)

    def trans(self, s: SymState, t: SymState, act: z3.ExprRef, epoch: z3.ExprRef) -> z3.BoolRef:
        """T(s, t): the selected action's guard holds in s and t is its update of s.

        The frame is explicit, per variable: the next value is the selected action's
        update when that action sets it, else the current value. Written per variable
        rather than per action, the relation is the same and Z3 propagates it faster."""
        names = self.space.names
        cases = [act >= 0, act < len(self.actions)]
        changes: dict[str, list[tuple[int, z3.ExprRef]]] = {n: [] for n in names}
        for i, a in enumerate(self.actions):
            guard, upd = self.guarded_update(s, a, epoch)
            cases.append(z3.Implies(act == i, guard))
            for n, value in upd.items():
                changes[n].append((i, value))
        for n in names:
            value = s.v[n]
            for i, new in reversed(changes[n]):
                value = z3.If(act == i, new, value)
            cases.append(t.v[n] == value)
        return z3.And(cases)

    def decode_action(self, act: int, epoch: int) -> tuple[str, dict[str, int]]:
        a = self.actions[act]
        return a.name, a.args(epoch)

    # ---- one action ----------------------------------------------------------------------------------
    def guarded_update(self, s: SymState, a: SymAction, epoch: z3.ArithRef) -> tuple[z3.BoolRef, dict[str, Any]]:
        """The action's guard and the new terms of the variables it changes."""
        fam = self.families[a.name]
        args: dict[str, Any] = dict(a.params)
        guard = []
        if a.symbolic_epoch:
            args["epoch"] = epoch
            guard.append(epoch >= 0)
        view = Z3View(s)
        for cond in fam.run(view, view.x, **args):
            if view.updates:
                raise DefinitionError(f"{fam.name} yields a guard after assigning a field")
            if isinstance(cond, bool):
                if not cond:
                    return z3.BoolVal(False), {}
                continue
            guard.append(cond)
        sp = self.space
        upd: dict[str, Any] = {}
        for (name, r), value in view.updates.items():
            f = view.fields[name]
            if f.kept(sp.cfg):
                upd.update(sp.flatten(f, r, value))
        return z3.And(guard) if guard else z3.BoolVal(True), upd
