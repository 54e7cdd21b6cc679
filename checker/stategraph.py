"""The explored state graph in compressed sparse rows, and breadth-first search over it.

An int64 offset per state and an int32 target per edge (int64 past 2**31 states), no
Python object per edge; the reversed graph is built once, on demand. Searches go a whole
frontier per NumPy step (``gather``). ``graph.py`` builds these from the engines' stored
states and decides the graph properties; ``liveness.py`` decides the liveness ones.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix


class StateGraph:
    """Successor edges of states 0..n-1: state i's are ``targets[offsets[i]:offsets[i + 1]]``."""

    def __init__(self, offsets: np.ndarray, targets: np.ndarray, actions: np.ndarray | None = None) -> None:
        self.offsets, self.targets = offsets, targets  # int64 (n + 1); int32 (int64 past 2**31 states)
        self.actions = actions  # each edge's action index, where known
        self.level_starts: np.ndarray | None = None  # the BFS levels: states level_starts[d]..[d + 1] - 1
        self.action_names: list[str] = []
        self._reverse: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def n(self) -> int:
        return len(self.offsets) - 1

    @classmethod
    def from_sorted(cls, n: int, sources: np.ndarray, targets: np.ndarray, actions: np.ndarray | None = None) -> "StateGraph":
        """Edges given with their sources in increasing order."""
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(sources, minlength=n), out=offsets[1:])
        return cls(offsets, targets.astype(index_dtype(n), copy=False), actions)

    @classmethod
    def from_edges(cls, n: int, sources: np.ndarray, targets: np.ndarray) -> "StateGraph":
        order = np.argsort(sources, kind="stable")
        return cls.from_sorted(n, sources[order], targets[order])

    def sources(self) -> np.ndarray:
        """Each edge's source state."""
        return np.repeat(np.arange(self.n, dtype=self.targets.dtype), np.diff(self.offsets))

    def reverse(self) -> tuple[np.ndarray, np.ndarray]:
        """The reversed graph's offsets and targets (built once), each state's predecessors in
        increasing order: the transpose of the adjacency matrix, which scipy builds by counting,
        in linear time (a stable argsort of the targets took longer: bench/README)."""
        if self._reverse is None:
            n, m = self.n, len(self.targets)
            adjacency = csr_matrix((np.ones(m, dtype=np.int8), self.targets, self.offsets), shape=(n, n))
            transposed = adjacency.tocsc()  # duplicate edges stay, as they are
            self._reverse = (transposed.indptr.astype(np.int64, copy=False),
                             transposed.indices.astype(self.targets.dtype, copy=False))
        return self._reverse

    def reaching(self, marked: np.ndarray) -> np.ndarray:
        """Where some marked state can be reached from (the marked ones included)."""
        return self.distances(marked) >= 0

    def distances(self, marked: np.ndarray) -> np.ndarray:
        """Each state's fewest steps to a marked state (-1: none reachable): a breadth-first
        search of the reversed graph, a whole frontier per NumPy step."""
        offsets, targets = self.reverse()
        dist = np.where(marked, 0, -1).astype(np.int32)
        frontier = np.flatnonzero(marked)
        place = np.empty(self.n, dtype=index_dtype(self.n))  # where a state was last found in a step
        step = 0
        while len(frontier):
            found = gather(offsets, targets, frontier)
            found = found[dist[found] < 0]
            if not len(found):
                break
            step += 1
            dist[found] = step
            # each state once, in time linear in what was found (np.unique sorted it: 4 times slower
            # on the availability suite's graphs): a state keeps the one place its writes left
            places = np.arange(len(found), dtype=place.dtype)
            place[found] = places
            frontier = found[place[found] == places]
        return dist


def gather(offsets: np.ndarray, targets: np.ndarray, frontier: np.ndarray) -> np.ndarray:
    """The targets of every frontier state's edges, in one gather: start of its run + place in it."""
    starts = offsets[frontier]
    counts = offsets[frontier + 1] - starts
    first = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return targets[first + np.arange(len(first))]


def index_dtype(n: int) -> type:
    return np.int32 if n < 2**31 else np.int64
