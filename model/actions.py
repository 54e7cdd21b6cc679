"""The action registry: every action family declared once, and the catalogue of a configuration.

A family is one parameterised action of the protocol (``BecomeFollower(replica,
leader, epoch)``), declared once with ``Protocol.family``: its parameters, the
configurations that have it, its narration, and one generator function that is its
guard and its update. The function reads the state through a view ``s`` and combines
values with the operations ``x`` (``ops.py``); it ``yield``s the guard's conjuncts one
by one (cheapest and most selective first), then assigns the updated fields:

    @KAFKA.family(params=(BROKER("follower"), BROKER("leader")))
    def FollowerFetch(s, x, follower, leader):
        yield follower != leader
        yield s.leader[follower] == leader
        ...
        s.log[follower] = x.append(s.log[follower], ...)

Every backend runs that one function: Python ints give the reference step
(``ops_int.py``), traced nodes the vector kernel's plan (``trace.py`` records the
function once per configuration, ``plan.py`` evaluates it on NumPy arrays, a batch of
states at once, each conjunct narrowing the rows the next one reads), Z3 terms the
symbolic transition (``ops_z3.py``, the conjuncts' conjunction and the assignments). Emission order, the
order in which a state's successors are listed, is registry order: families in
declaration order, and within a family the catalogue's unless ``emit`` says otherwise.

An action index names one family with all its parameters (``Catalogue``), so that a
successor is ``(action index, next state)`` and a path is a list of small ints that
replay re-executes.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Any, Callable, Iterator


@dataclass(frozen=True, slots=True)
class Action:
    name: str
    params: tuple[tuple[str, int], ...]

    @property
    def args(self) -> dict[str, int]:
        return dict(self.params)

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.name}({inner})"


@dataclass(frozen=True)
class Param:
    """A family's parameter: its name and its values in a configuration. ``epoch``: a leader
    epoch, which the symbolic engine's unbounded mode leaves symbolic (one per step)."""

    name: str
    values: Callable[[Any], range]
    epoch: bool = False


def BROKER(name: str) -> Param:
    return Param(name, lambda cfg: range(cfg.rf))


def EPOCH(name: str = "epoch") -> Param:
    return Param(name, lambda cfg: range(cfg.max_leader_epoch + 1), epoch=True)


Describe = Callable[[Any, Any, dict[str, int]], str]  # (state before, state after, args) -> words

# What a family's step is, for the liveness properties (``--fairness weak``): the system's
# own duty, which weak fairness says it eventually performs while it stays enabled; what
# users and operators may or may not do (a write, a restart); or a fault, which the
# liveness properties assume no longer happens.
SYSTEM, ENVIRONMENT, FAULT = "system", "environment", "fault"
ROLES = (SYSTEM, ENVIRONMENT, FAULT)


@dataclass(frozen=True)
class Family:
    name: str
    params: tuple[Param, ...]
    run: Callable[..., Iterator[Any]]  # (s, x, **args): yields the guard's conjuncts, then updates s
    when: Callable[[Any], bool]
    describe: Describe
    short: Describe
    emit: Callable[[dict[str, int]], tuple] | None = None  # order within the family's successors
    role: str = "system"  # SYSTEM, ENVIRONMENT or FAULT: what weak fairness asks of it (roles.py)
    fault_when: Callable[..., Any] | None = None  # (s, x, **args): a system step that is a fault in such a state

    def kept(self, cfg: Any) -> bool:
        return self.when(cfg)


class Catalogue:
    """Index <-> Action for one configuration; ``base[name]`` is a family's first index."""

    def __init__(self, protocol: Any, config: Any) -> None:
        self.protocol = protocol
        self.actions: list[Action] = []
        self.base: dict[str, int] = {}
        self.families: list[Family] = [f for f in protocol.families if f.kept(config)]
        self.family_of: list[Family] = []
        for fam in self.families:
            self.base[fam.name] = len(self.actions)
            names = [p.name for p in fam.params]
            for values in product(*(p.values(config) for p in fam.params)):
                self.actions.append(Action(fam.name, tuple(zip(names, values))))
                self.family_of.append(fam)
        self.index = {a: i for i, a in enumerate(self.actions)}

    def __len__(self) -> int:
        return len(self.actions)

    def __getitem__(self, index: int) -> Action:
        return self.actions[index]

    def lookup(self, name: str, params: dict[str, int]) -> int | None:
        """The index of a named action (parameters in any order), or None when this
        configuration has no such action."""
        fam = next((f for f in self.families if f.name == name), None)
        if fam is None or set(params) != {p.name for p in fam.params}:
            return None
        return self.index.get(Action(name, tuple((p.name, params[p.name]) for p in fam.params)))

    def emission_order(self) -> list[int]:
        """Every action index in the order the successor function lists them: families in
        registry order, each one's actions by its ``emit`` key (else catalogue order)."""
        out: list[int] = []
        for fam in self.families:
            first = self.base[fam.name]
            indices = [i for i in range(first, len(self.actions)) if self.family_of[i] is fam]
            if fam.emit is not None:
                indices.sort(key=lambda i: fam.emit(self.actions[i].args))
            out += indices
        return out

    def emission_rank(self) -> list[int]:
        """``rank[action]``: its position in ``emission_order``."""
        rank = [0] * len(self.actions)
        for pos, a in enumerate(self.emission_order()):
            rank[a] = pos
        return rank
