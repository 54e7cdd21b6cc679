"""Shrinking a counterexample found by a random walk, with Hypothesis.

A walk is a list of action indices. Read as a Hypothesis example, each action is
taken if it is enabled in the state reached so far and skipped otherwise, and the
example is interesting when a state on the way decides the property. So deleting a
step leaves the others meaning what they meant (the action, not "the i-th enabled
one"), which is what lets Hypothesis's shrinker delete steps and lower indices
freely: fewer steps, fewer faults, smaller epochs and record ids follow.

The walk is handed to Hypothesis through its example database, under the secondary
key of ``find``'s database key: Hypothesis replays and shrinks that corpus (the primary
corpus holds examples already shrunk, which it replays without shrinking again). The
database is a folder under ``--trace-dir`` when one is given, so the next run of the
same configuration and property tries the last shrunk counterexample first.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path as FilePath
from typing import Any, Callable

from hypothesis import HealthCheck, Phase, find, settings, strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, InMemoryExampleDatabase
from hypothesis.database import choices_to_bytes
from hypothesis.errors import NoSuchExample

from .result import Path

MAX_STEPS = 10_000  # the longest walk Hypothesis is asked to hold
RADIUS = 3  # steps of the breadth-first search for a shortcut from each state of a path
SHORTCUT_CALLS = 2_000  # successor calls per state of the path, at most, in that search


def database_key(config: dict[str, Any], prop: str, model_version: str) -> bytes:
    """One key per model version, configuration and property: an example means one thing only there."""
    text = json.dumps({"model": model_version, "config": config, "property": prop}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32].encode()


def open_database(folder: FilePath | None) -> ExampleDatabase:
    return InMemoryExampleDatabase() if folder is None else DirectoryBasedExampleDatabase(str(folder))


class Replayer:
    """Runs a list of actions on the model, skipping those not enabled, up to the first state
    where ``decides`` is true; ``deadline`` (monotonic seconds) makes every later example
    uninteresting, so that a time limit ends the shrinking at the best walk so far. A walk
    found interesting stays so after the deadline: Hypothesis replays its best one at the
    end, and a different answer then is its "Failed to reproduce" error."""

    def __init__(self, model: Any, decides: Callable[[int], bool], deadline: float | None = None) -> None:
        self.model, self.decides, self.deadline = model, decides, deadline
        self.initial = model.init_states()[0]
        self.hits: set[tuple[int, ...]] = set()  # the walks found interesting

    def past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def path(self, actions: list[int]) -> Path | None:
        """The steps taken, up to the deciding state; None if no state on the way decides."""
        s = self.initial
        if self.decides(s):
            return Path((s,), ())
        states, taken = [s], []
        successors = self.model.successors  # the fused successor function: the definitions' step is slower
        for a in actions:
            t = next((t for b, t in successors(s) if b == a), None)
            if t is None:
                continue
            s = t
            states.append(s)
            taken.append(a)
            if self.decides(s):
                return Path(tuple(states), tuple(taken))
        return None

    def interesting(self, actions: list[int]) -> bool:
        walk = tuple(actions)
        if walk in self.hits:
            return True
        if self.past_deadline() or self.path(actions) is None:
            return False
        self.hits.add(walk)
        return True


def without_cycles(path: Path) -> Path:
    """The path with every return to an earlier state cut out: the same end, never longer."""
    states, actions = [path.states[0]], []
    index = {path.states[0]: 0}
    for a, s in zip(path.actions, path.states[1:]):
        k = index.get(s)
        if k is None:
            index[s] = len(states)
            states.append(s)
            actions.append(a)
            continue
        for dropped in states[k + 1:]:
            del index[dropped]
        del states[k + 1:], actions[k:]
    return Path(tuple(states), tuple(actions))


def shortcuts(model: Any, path: Path, decides: Callable[[int], bool], radius: int = RADIUS,
              past_deadline: Callable[[], bool] = lambda: False) -> Path:
    """The path with its detours cut. From each state on it, a breadth-first search of up to
    ``radius`` steps looks for a later state of the path that it reaches in fewer steps than
    the path takes, or for a state that decides the property sooner than the path's end; the
    path takes the way that saves most, and the search starts again until none saves a step,
    or until ``past_deadline``."""
    while not past_deadline():
        better = _shortcut(model, path, decides, radius, past_deadline)
        if better is None:
            return path
        path = better
    return path


def _shortcut(model: Any, path: Path, decides: Callable[[int], bool], radius: int,
              past_deadline: Callable[[], bool]) -> Path | None:
    index = {s: k for k, s in enumerate(path.states)}
    end = len(path.states) - 1
    for i in range(end):
        if past_deadline():
            return None
        frontier: list[tuple[int, tuple[tuple[int, int], ...]]] = [(path.states[i], ())]
        seen, calls, best = {path.states[i]}, 0, None  # best: (saving, steps, the path index it joins or None)
        for depth in range(1, radius + 1):
            grown = []
            for s, steps in frontier:
                calls += 1
                for a, t in model.successors(s):
                    if t in seen:
                        continue
                    seen.add(t)
                    way = steps + ((a, t),)
                    j = index.get(t)
                    if j is not None and j - i > depth and (best is None or j - i - depth > best[0]):
                        best = (j - i - depth, way, j)
                    elif decides(t) and end - i > depth and (best is None or end - i - depth > best[0]):
                        best = (end - i - depth, way, None)
                    grown.append((t, way))
            frontier = grown
            if calls > SHORTCUT_CALLS:
                break
        if best is not None:
            _, way, j = best
            tail = () if j is None else tuple(zip(path.actions[j:], path.states[j + 1:]))
            steps = tuple(zip(path.actions[:i], path.states[1:i + 1])) + way + tail
            return Path((path.states[0], *(t for _, t in steps)), tuple(a for a, _ in steps))
    return None


def _encoded(actions: list[int] | tuple[int, ...]) -> bytes:
    """A walk as Hypothesis's database holds a ``lists(integers())`` example: (more?, element)* then stop."""
    return choices_to_bytes([c for a in actions for c in (True, a)] + [False])


def _find(replayer: Replayer, n_actions: int, database: ExampleDatabase, key: bytes, phases: list[Phase],
          longest: int = MAX_STEPS) -> Path | None:
    """What Hypothesis's ``find`` makes of the walks in ``database`` under ``key`` (its phases:
    replay, and shrink), read back as the deciding path; None when no walk there decides."""
    walks = st.lists(st.integers(0, n_actions - 1), max_size=max(MAX_STEPS, longest))
    try:
        found = find(walks, replayer.interesting, database_key=key,
                     settings=settings(database=database, deadline=None, phases=phases,
                                       suppress_health_check=list(HealthCheck)))
    except NoSuchExample:  # nothing there decides, or the deadline passed before the first replay
        return None
    return replayer.path(found)


def shrink(replayer: Replayer, path: Path, n_actions: int) -> Path:
    """The shortest deciding walk Hypothesis finds from ``path`` (detours and cycles cut first).
    It works in a database of its own: the secondary corpus is the one Hypothesis shrinks."""
    start = shortcuts(replayer.model, without_cycles(path), replayer.decides, past_deadline=replayer.past_deadline)
    database, key = InMemoryExampleDatabase(), b"walk"
    database.save(key + b".secondary", _encoded(start.actions))
    shrunk = _find(replayer, n_actions, database, key, [Phase.reuse, Phase.shrink], len(start.actions))
    if shrunk is None or len(shrunk) > len(start):
        return start
    return shortcuts(replayer.model, without_cycles(shrunk), replayer.decides, past_deadline=replayer.past_deadline)


def remember(database: ExampleDatabase, key: bytes, path: Path) -> None:
    """Keep ``path`` as the one example under ``key``: the next run replays it first."""
    for old in list(database.fetch(key)):
        database.delete(key, old)
    database.save(key, _encoded(path.actions))


def saved_example(replayer: Replayer, n_actions: int, database: ExampleDatabase, key: bytes) -> Path | None:
    """The walk saved by an earlier run for this key, if it still decides the property."""
    if not list(database.fetch(key)):
        return None
    return _find(replayer, n_actions, database, key, [Phase.reuse])
