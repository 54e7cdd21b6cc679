"""Leads-to properties under weak fairness, decided over the explored state graph.

A liveness property (``rejoins-isr``, ``hwm-progress``) says: once its trigger holds,
its goal eventually holds, in every run where no fault happens any more and the
system's own families are weakly fair (one that stays enabled is eventually taken;
``model/roles.py``). It fails where a trigger state can go on, without faults and
without reaching the goal, into a run that never ends: either it stops in a quiet
state, where no system step is enabled (the run stutters there; users and operators
need not act), or it cycles for ever through a strongly connected set of goal-free
states that a fair run can stay in. Such a set is fair when every system family is
disabled in one of its states or taken by one of its edges: a run through all its
states and edges then meets every fairness demand at once (weak fairness needs no
finer decomposition). Self-loops are stuttering, no step at all.

Bounds are not deadlocks: a quiet state or a cycle that holds a state the bounds may
have held back (out of epochs, or left unexpanded by ``--max-depth``) is limited, and
a trigger state that can only reach such ends is reported as limited, never as a
violation. SCCs are computed by scipy's csgraph (the main job's goal-free, fault-free
graph is a DAG: every component is one state); the lasso through a fair SCC is found
with networkx on that SCC alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from isrcheck.model.actions import FAULT
from isrcheck.model.roles import fair_units, fault_conditions

from .stategraph import StateGraph


@dataclass(frozen=True)
class Lasso:
    """A liveness counterexample over graph states: the trigger state, the edges from it
    to the loop's start, and the loop's edges (none: the run stutters at its start)."""

    trigger: int
    stem: list[int]  # edge ids
    loop: list[int]  # edge ids, back to the loop's start


@dataclass(frozen=True)
class LeadsTo:
    lasso: Lasso | None
    violating: int  # trigger states with a fair goal-free run
    limited: int  # trigger states whose goal-free runs end only where the bounds may have cut them

    def note(self) -> str:
        if self.violating:
            return f"{self.violating:,} states never reach the goal in some fair run"
        return f"{self.limited:,} states reach the goal only past the bounds" if self.limited else ""


def level_of(graph: StateGraph) -> np.ndarray:
    starts = graph.level_starts
    if starts is None:
        return np.zeros(graph.n, dtype=np.int32)
    return (np.searchsorted(starts, np.arange(graph.n), side="right") - 1).astype(np.int32)


def decide(graph: StateGraph, trigger: np.ndarray, goal: np.ndarray, fault: np.ndarray, unit: np.ndarray,
           units: int, limited: np.ndarray) -> LeadsTo:
    """``fault``: per edge, a fault step; ``unit``: per edge, its fairness unit (-1: not a
    system step); ``limited``: states the bounds may have cut."""
    n, sources, targets = graph.n, graph.sources(), graph.targets
    moves = sources != targets
    fair = (unit >= 0) & moves & ~fault
    enabled = np.zeros((max(units, 1), n), dtype=bool)
    enabled[unit[fair], sources[fair]] = True
    quiet = ~enabled.any(axis=0)
    inside = np.flatnonzero(moves & ~fault & ~goal[sources] & ~goal[targets])  # the goal-free, fault-free graph
    sub = StateGraph.from_sorted(n, sources[inside], targets[inside], inside)
    ends = ~goal & quiet
    labels = _components(sub)
    bad_cycle, limited_cycle = _fair_cycles(sub, labels, unit, enabled, limited)
    bad = (ends & ~limited) | bad_cycle
    dist = sub.distances(bad)
    open_trigger = trigger & ~goal
    violating = open_trigger & (dist >= 0)
    held_back = open_trigger & ~violating & sub.reaching((ends & limited) | limited_cycle)
    lasso = None
    if violating.any():
        level = level_of(graph)
        candidates = np.flatnonzero(violating)
        shallow = candidates[level[candidates] == level[candidates].min()]
        start = int(shallow[np.argmin(dist[shallow])])
        stem = _descend(sub, dist, start)
        end = int(graph.targets[stem[-1]]) if stem else start
        loop = [] if ends[end] and not limited[end] else _fair_loop(graph, sub, labels, unit, enabled, end)
        lasso = Lasso(start, stem, loop)
    return LeadsTo(lasso, int(violating.sum()), int(held_back.sum()))


def _descend(sub: StateGraph, dist: np.ndarray, state: int) -> list[int]:
    """Edge ids of a shortest way from ``state`` to a bad end (distance 0)."""
    out = []
    while dist[state] > 0:
        lo, hi = sub.offsets[state], sub.offsets[state + 1]
        nexts = sub.targets[lo:hi]
        k = int(np.flatnonzero(dist[nexts] == dist[state] - 1)[0])
        out.append(int(sub.actions[lo + k]))
        state = int(nexts[k])
    return out


def _components(sub: StateGraph) -> np.ndarray | None:
    """Strong components of ``sub`` (labels per state), or None where it has no cycle:
    scipy's csgraph (compiled Tarjan), as fast on the main job's 1.9 M states as peeling
    its dead ends off in NumPy first (bench/bench_scc.py)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    offsets = sub.offsets.astype(sub.targets.dtype)  # one index type: scipy would otherwise convert both
    matrix = csr_matrix((np.ones(len(sub.targets), dtype=np.int8), sub.targets, offsets), shape=(sub.n, sub.n))
    count, labels = connected_components(matrix, directed=True, connection="strong")
    return None if count == sub.n else labels  # every component one state: no cycle (self-loops are gone)


def _fair_cycles(sub: StateGraph, labels: np.ndarray | None, unit: np.ndarray, enabled: np.ndarray,
                 limited: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """States in a fair SCC of ``sub`` (``labels``: its components): (none of the SCC
    limited, some of it limited)."""
    none = np.zeros(sub.n, dtype=bool)
    if labels is None:
        return none, none
    k = int(labels.max()) + 1
    fair = np.bincount(labels, minlength=k) >= 2  # self-loops are gone: two states make a cycle
    sources = sub.sources()
    internal = labels[sources] == labels[sub.targets]
    edge_unit = unit[sub.actions]
    for u in range(enabled.shape[0]):
        everywhere = np.bincount(labels, weights=~enabled[u], minlength=k) == 0
        taken = np.zeros(k, dtype=bool)
        taken[labels[sources[internal & (edge_unit == u)]]] = True
        fair &= ~everywhere | taken
    touched = np.bincount(labels, weights=limited, minlength=k) > 0
    return (fair & ~touched)[labels], (fair & touched)[labels]


def _fair_loop(graph: StateGraph, sub: StateGraph, labels: np.ndarray, unit: np.ndarray, enabled: np.ndarray,
               start: int) -> list[int]:
    """Edge ids of a cycle from ``start`` through its fair SCC that meets every fairness
    demand: for each system family, a state where it is disabled or one of its edges."""
    import networkx as nx

    members = np.flatnonzero(labels == labels[start])
    inner = [(s, t, edge) for s in members.tolist()
             for t, edge in zip(sub.targets[sub.offsets[s]:sub.offsets[s + 1]].tolist(),
                                sub.actions[sub.offsets[s]:sub.offsets[s + 1]].tolist())
             if labels[t] == labels[start]]
    g = nx.DiGraph()
    g.add_edges_from((s, t, {"edge": edge}) for s, t, edge in reversed(inner))  # the first of parallel edges
    stops: list[tuple[int, int | None]] = []  # (state to reach, edge to take there or None)
    for u in range(enabled.shape[0]):
        off = members[~enabled[u, members]]
        if len(off):
            stops.append((int(off[0]), None))
            continue
        s, _, edge = next(e for e in inner if unit[e[2]] == u)  # enabled throughout a fair SCC: taken in it
        stops.append((s, edge))
    loop: list[int] = []
    here = start
    for state, edge in stops + [(start, None)]:
        path = nx.shortest_path(g, here, state)
        loop += [g.edges[a, b]["edge"] for a, b in zip(path, path[1:])]
        here = state
        if edge is not None:
            loop.append(edge)
            here = int(graph.targets[edge])
    if not loop:  # start alone met every demand: go round once all the same
        succ = next(iter(g.successors(start)))
        loop = [g.edges[start, succ]["edge"]] + [g.edges[a, b]["edge"] for a, b in
                                                 nx.utils.pairwise(nx.shortest_path(g, succ, start))]
    return loop


def lasso_path(head: Any, model: Any, graph: StateGraph, lasso: Lasso, stored: Callable[[int], int],
               norm: Callable[[int], int]) -> Any:
    """The concrete lasso: ``head`` (the path to the trigger state), then the stem and the
    loop replayed on the model, each step the first successor whose stored form (``norm``)
    is the graph's next state. Under symmetry the graph's loop comes back to a renaming of
    its start, so it is gone round until a round ends where an earlier one began."""
    states, actions = list(head.states), list(head.actions)

    def follow(edge: int) -> None:
        target = stored(int(graph.targets[edge]))
        step = next(((a, t) for a, t in model.successors(states[-1]) if norm(t) == target), None)
        if step is None:  # pragma: no cover - an engine bug, never a user error
            raise AssertionError("the lasso does not replay on the model")
        actions.append(step[0])
        states.append(step[1])

    for edge in lasso.stem:
        follow(edge)
    if not lasso.loop:
        return replace(head, states=tuple(states), actions=tuple(actions), loop=len(states) - 1)
    rounds = {states[-1]: len(states) - 1}
    while True:
        for edge in lasso.loop:
            follow(edge)
        if states[-1] in rounds:
            break
        rounds[states[-1]] = len(states) - 1
    back_to = rounds[states.pop()]  # the closing step leads back there
    closing = actions.pop()
    return replace(head, states=tuple(states), actions=tuple(actions), loop=back_to, loop_action=closing)


def edge_roles(explored: Any, weak: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """Per edge of the explored graph: whether it is a fault, and its fairness unit (-1:
    none; every edge's is -1 without fairness); and how many units there are."""
    graph, catalogue = explored.graph, explored.model.catalogue
    actions, sources = graph.actions, graph.sources()
    fault = np.array([f.role == FAULT for f in catalogue.family_of], dtype=bool)[actions]
    conditions = fault_conditions(catalogue)
    conditional = np.zeros(len(catalogue), dtype=bool)
    conditional[list(conditions)] = True
    edges = np.flatnonzero(conditional[actions])  # the few edges whose role depends on the state
    acts, srcs = actions[edges], sources[edges]
    for action, condition in conditions.items():
        on = acts == action
        if on.any():
            fault[edges[on]] = explored.marks(condition, np.unique(srcs[on]))[srcs[on]]
    if not weak:
        return fault, np.full(len(actions), -1, dtype=np.int16), 0
    return fault, np.array(fair_units(catalogue), dtype=np.int16)[actions], len(catalogue.families)


def settle_property(explored: Any, prop: Any, path_to: Callable[[int], Any]) -> tuple[Any, str]:
    """A liveness property over a search's explored graph: its lasso (a Path, or None) and a note."""
    marks, model = explored.marks, explored.model
    fault, unit, units = edge_roles(explored, getattr(model.config, "fairness", "weak") == "weak")
    limited = explored.unexpanded.copy()
    if prop.beyond is not None:
        limited |= marks(prop.beyond)
    verdict = decide(explored.graph, marks(prop.trigger), marks(prop.holds), fault, unit, units, limited)
    if verdict.lasso is None:
        return None, verdict.note()
    head = path_to(verdict.lasso.trigger)
    return lasso_path(head, model, explored.graph, verdict.lasso, explored.stored, explored.norm), verdict.note()
