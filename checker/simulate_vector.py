"""Many walks at once on the NumPy batch kernel: one column of the key array per walk.

Each step expands every walk's state with the kernel (``model/kernel.py``, the same plan
the vector BFS runs) and picks one successor per walk: a random key per successor, the
largest in each walk's group wins. A successor no walk has reached yet gets one added to
its key for ``novelty`` of the walks (so they go somewhere new when they can), and one a
swarm walk leaves out loses two (taken only when nothing else is enabled). Every step is
written to a log, (key, the log row it came from, action, depth): a deciding state's path
is read back through it, and a walk that ends (no successor, or ``--max-depth``) starts
again from the initial state or, ``restart`` of the time, from a random logged state.
The reached states are kept as sorted fingerprints, as the vector BFS keeps them: two
states that share a fingerprint count as one in the coverage, which decides nothing.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .result import Path

WIDTH = 65536  # walks side by side (fewer when --walks asks for fewer): wide batches amortise the kernel's plan
LOG_ROWS = 4_000_000  # steps kept for reading paths back and for restarts (28 bytes each at two words);
# when it is full the log starts afresh, every walk from the initial state


class VectorWalks:
    def __init__(self, sim: Any, kernel: Any, width: int) -> None:
        self.sim, self.kernel, self.width = sim, kernel, width
        self.limit: int | None = None  # --walks, once run() knows it
        self.rng = np.random.default_rng(sim.engine.seed)
        self.family = np.asarray(sim.family_of, dtype=np.int64)
        self.checks = [(p, kernel.predicate(p), always) for p, _, always in sim.checks]
        self.init = kernel.initial_keys()[:, :1]
        self.fired = np.zeros(sim.n_actions, dtype=np.int64)
        self.seen = _Seen(kernel.fingerprints(self.init))
        self._fresh_log()

    def _fresh_log(self) -> None:
        words = self.kernel.words
        self.log_keys = np.zeros((words, LOG_ROWS), dtype=np.uint64)
        self.log_parent = np.full(LOG_ROWS, -1, dtype=np.int32)
        self.log_action = np.zeros(LOG_ROWS, dtype=np.int32)
        self.log_depth = np.zeros(LOG_ROWS, dtype=np.int32)
        self.log_keys[:, 0] = self.init[:, 0]
        self.log_depth[0] = 1
        self.rows = 1
        self.current = np.zeros(self.width, dtype=np.int64)  # each walk's log row
        self.swarm = self._swarm(self.width)

    def _swarm(self, n: int) -> np.ndarray | None:
        """Each walk's families: a random half left out (swarm verification)."""
        if not self.sim.engine.swarm:
            return None
        return self.rng.random((n, len(self.sim.family_names))) < 0.5

    # ---- the run -------------------------------------------------------------------------------------------
    def run(self, limit: int | None) -> str:
        """Walk until every property is decided (and enough paths are found to shrink), the
        walk limit, a time or memory limit, or Ctrl-C; the reason it stopped, '' if none."""
        sim, c = self.sim, self.sim.coverage
        self.limit = limit
        next_report = sim.started + sim.options.progress_interval
        if sim.depth <= 1:  # --max-depth 1: the initial state alone, checked already
            return ""
        while sim._go_on():
            if limit is not None and c.walks >= limit:
                return ""
            if self.rows + self.width > LOG_ROWS:
                self._fresh_log()
            self._step()
            stop = sim.limits.exceeded()
            if stop:
                return stop
            now = time.monotonic()
            if now >= next_report:
                next_report = now + sim.options.progress_interval
                sim.report_progress(now, int(self.log_depth[self.current].max()), self.fired_now())
        return ""

    def _step(self) -> None:
        sim, kernel, c = self.sim, self.kernel, self.sim.coverage
        keys, rows, actions = kernel.expand(self.log_keys[:, self.current])
        fps = kernel.fingerprints(keys)
        new = ~self.seen.contains(fps)
        score = self.rng.random(len(rows))
        novel = self.rng.random(self.width) < sim.engine.novelty
        score += new & novel[rows]
        if self.swarm is not None:
            score -= 2 * ~self.swarm[rows, self.family[actions]]
        order = np.lexsort((score, rows))
        grouped = rows[order]
        # each walk's group ends where the next begins, and the last group at the end, if there is
        # one: when every walk stands on a state with no successor, no walk steps (all restart)
        last = np.flatnonzero(np.append(grouped[1:] != grouped[:-1], len(grouped) > 0))
        pick = order[last]
        walks = rows[pick]  # the walks that had a successor
        at = np.arange(self.rows, self.rows + len(pick))
        self.log_keys[:, at] = keys[:, pick]
        self.log_parent[at] = self.current[walks]
        self.log_action[at] = actions[pick]
        self.log_depth[at] = self.log_depth[self.current[walks]] + 1
        self.rows += len(pick)
        np.add.at(self.fired, actions[pick], 1)
        c.steps += len(pick)
        fresh = new[pick]
        if fresh.any():
            self._check(at[fresh], keys[:, pick[fresh]])
            self.seen.add(fps[pick[fresh]])
            c.distinct = len(self.seen)
        ended = np.ones(self.width, dtype=bool)
        ended[walks] = False
        self.current[walks] = at
        ended |= self.log_depth[self.current] >= sim.depth
        self._restart(np.flatnonzero(ended))

    def _check(self, at: np.ndarray, keys: np.ndarray) -> None:
        """The properties on the states reached for the first time (their log rows ``at``)."""
        sim, c = self.sim, self.sim.coverage
        values = self.kernel.evaluate(keys, [pred for _, pred, _ in self.checks])
        for (p, _, always), holds in zip(self.checks, values):
            if not always:
                c.guards[p.name] += int(holds.sum())
            if p.name in sim.paths:
                continue
            deciding = at[holds != always]
            if len(deciding):
                sim.deciding(p.name, (self._path(int(row)) for row in deciding))

    def _path(self, row: int) -> Path:
        """The steps that led to a log row, read back through the log, as scalar states."""
        rows = []
        while row >= 0:
            rows.append(row)
            row = int(self.log_parent[row])
        rows.reverse()
        states = self.kernel.scalars_of_keys(self.log_keys[:, rows])
        return Path(tuple(states), tuple(int(a) for a in self.log_action[rows[1:]]))

    def _restart(self, ended: np.ndarray) -> None:
        c = self.sim.coverage
        if not len(ended):
            return
        # lanes end together: past --walks, the walks that ended in the same step are not counted
        counted = ended if self.limit is None else ended[:max(0, self.limit - c.walks)]
        c.lengths.update(self.log_depth[self.current[counted]].tolist())
        c.walks += len(counted)
        anywhere = self.rng.random(len(ended)) < self.sim.engine.restart
        starts = np.where(anywhere, self.rng.integers(0, self.rows, len(ended)), 0)
        starts[self.log_depth[starts] >= self.sim.depth] = 0  # a state at the depth bound: from the start
        self.current[ended] = starts
        if self.swarm is not None:
            self.swarm[ended] = self._swarm(len(ended))

    def finish(self) -> None:
        """The per-action counts into the coverage, as the scalar walks keep them."""
        self.sim.coverage.fired.update(self.fired_now())

    def fired_now(self) -> dict[int, int]:
        """Times taken so far, per action index that was taken."""
        return {a: int(self.fired[a]) for a in np.flatnonzero(self.fired).tolist()}


class _Seen:
    """Sorted fingerprints in two runs, a large one and a recent one merged into it when it
    grows past an eighth of its size: each step's insertions cost the small run's size, not
    the whole set's (a log-structured merge of two levels)."""

    def __init__(self, first: np.ndarray) -> None:
        self.large, self.recent = np.unique(first), np.zeros(0, dtype=np.uint64)

    def __len__(self) -> int:
        return len(self.large) + len(self.recent)

    def contains(self, values: np.ndarray) -> np.ndarray:
        return _member(self.large, values) | _member(self.recent, values)

    def add(self, values: np.ndarray) -> None:
        self.recent = np.union1d(self.recent, values[~_member(self.large, values)])
        if len(self.recent) * 8 > len(self.large):
            self.large, self.recent = np.union1d(self.large, self.recent), self.recent[:0]


def _member(sorted_values: np.ndarray, values: np.ndarray) -> np.ndarray:
    if not len(sorted_values):
        return np.zeros(len(values), dtype=bool)
    where = np.searchsorted(sorted_values, values)
    where[where == len(sorted_values)] = 0
    return sorted_values[where] == values
