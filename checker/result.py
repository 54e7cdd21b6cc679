"""What every engine returns: a status per property, statistics, shortest paths.

Engines speak in packed states and action indices (a ``Path``); turning a path
into a readable, replayed ``Trace`` is the traces package's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Literal

from isrcheck.model import ModelConfig
from isrcheck.properties import verdict

Status = Literal["holds", "violated", "proved", "unknown"]


@dataclass(frozen=True, slots=True)
class Path:
    """An initial state and the actions taken from it; ``states[i]`` follows ``actions[i-1]``.

    A lasso (a liveness counterexample) goes on for ever: from its last state,
    ``loop_action`` leads back to ``states[loop]``; with no ``loop_action`` the run stays
    at its last state (``loop`` is then its index: no system step is enabled there)."""

    states: tuple[int, ...]
    actions: tuple[int, ...]
    loop: int | None = None
    loop_action: int | None = None

    def __len__(self) -> int:
        """The trace length as the contract counts it: states, the initial one included."""
        return len(self.states)

    @classmethod
    def replay(cls, model: Any, stored: list[int], canonical=None) -> "Path":
        """Concrete states and actions that lead through ``stored`` (canonical forms under symmetry).

        Without symmetry each stored state is a successor of the previous one. With it,
        the concrete path picks, at each step, the first successor whose canonical form
        is the next stored state, so the trace keeps one naming of the brokers throughout.
        """
        norm = canonical or (lambda s: s)
        current = next(s for s in model.init_states() if norm(s) == stored[0])
        states, actions = [current], []
        for target in stored[1:]:
            for a, t in model.successors(current):
                if norm(t) == target:
                    states.append(t)
                    actions.append(a)
                    current = t
                    break
            else:  # pragma: no cover - an engine bug, never a user error
                raise AssertionError("stored path does not replay on the model")
        return cls(tuple(states), tuple(actions))


@dataclass(slots=True)
class PropertyResult:
    name: str
    expectation: str
    status: Status = "unknown"
    path: Path | None = None
    note: str = ""
    proof: dict[str, Any] | None = None  # symbolic engines: how a proof attempt ended (method, outcome, ...)

    @property
    def trace_length(self) -> int | None:
        return len(self.path) if self.path is not None else None


@dataclass(slots=True)
class Stats:
    states: int = 0  # distinct states stored (after symmetry reduction when it is on)
    generated: int = 0  # successor states computed, duplicates included, initial states included
    depth: int = 0  # deepest complete BFS level, the initial states being depth 1
    seconds: float = 0.0
    peak_memory: int = 0  # bytes, peak resident set size of this process
    full_states: int | None = None  # states before symmetry reduction, when known
    queue: int = 0  # states discovered but not yet expanded when the run ended
    on_disk: int = 0  # fingerprints of the visited set on disk when the run ended (past the memory limit)

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0


@dataclass(slots=True)
class CheckResult:
    engine: str
    complete: bool  # the search ended normally: every verdict is final within the bounds
    properties: list[PropertyResult]
    stats: Stats = field(default_factory=Stats)
    exhausted: bool = False  # the whole bounded space (to max depth) was explored
    stop_reason: str = ""  # why an incomplete run stopped: interrupted, time limit, memory limit
    symmetry: bool = False
    kernel: str = ""  # the BFS kernel that ran (vector, scalar), when the engine has kernels
    kernel_note: str = ""  # why the requested kernel did not run, if it did not
    workers: int = 1  # processes (scalar BFS, vector BFS with ``processes``) or threads (vector BFS) that ran it
    processes: bool = False  # the workers were processes
    replay_config: ModelConfig | None = None  # paths are of this bounded model, not the one checked
    search_note: str = ""  # what holds for every verdict (a fingerprint collision estimate); also each one's note
    graph: Any = None  # the explored state graph (checker.graph.StateGraph), when kept
    coverage: Any = None  # what a simulation exercised (checker.simulate.SimulationCoverage)

    def by_name(self, name: str) -> PropertyResult:
        for p in self.properties:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def all_hold(self) -> bool:
        return all(p.status in ("holds", "proved") for p in self.properties)


def property_results(
    properties: Iterable[Any], paths: dict[str, Path], exhausted: bool, note: str = "", stuck: dict[str, str] | None = None
) -> list[PropertyResult]:
    """Every explicit engine's verdicts (``properties/verdict.py``): a property with a path to
    a deciding state is decided by it; the others by whether the whole bounded space was
    explored. ``stuck``: properties decided whose trace could not be rebuilt, with why."""
    out = []
    for p in properties:
        r = PropertyResult(p.name, p.expectation, note=note)
        r.path = paths.get(p.name)
        if stuck and p.name in stuck:
            r.note = stuck[p.name]
        else:
            r.status = verdict.status(p, r.path is not None, exhausted)
        out.append(r)
    return out
