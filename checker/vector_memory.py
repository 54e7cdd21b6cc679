"""How the vector search fits its memory limit: chunks sized to the room left, the room a
level needs, and going out of core when it would not fit (``vector_spill.py``).

A mixin of ``bfs_vector.VectorSearch``: these read the search's frontier, visited set and
last level, and are kept apart so that the search's loop reads as a loop. A resumed
search's restore is here too: it rebuilds the visited set within the same limit.
"""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np

from .engine import Limits, check_found, release_freed_memory
from .vector_arrays import LevelParts, derived_found
from .vector_spill import DISK_BLOCK, MERGE_BUDGET, MIN_BUDGET, LevelRuns, SpilledLevel, file_blocks, spill_folder
from .vector_store import GROWTH, read_mapped

CHUNK = 1 << 17  # states expanded per kernel call: bounds the transient arrays
MIN_CHUNK = 1 << 10
SPLIT_MIN = 1 << 14  # a level split among threads: below this a chunk's kernel calls are mostly overhead
# peak bytes of a chunk's transient arrays per frontier state (successors, their canonical
# forms, the de-duplication, the properties), measured by tracemalloc at 160 (the core machine)
# to 310 (rf 4 and 5, the idempotent producer), 650 to 750 before the blocks and hand-overs of
# 2026-11-29; kept at 768: the resident set also holds what glibc keeps, and 448 made no run
# under a limit measurably faster (main-job-r3 under 1G and 400M, kip320-rf3-e3 under 200M)
CHUNK_BYTES_PER_STATE = 768


class MemoryFit:
    """The vector search's memory policy (mixed into ``VectorSearch``)."""

    workers: int
    chunk: int
    max_chunk: int
    spill_dir: Any
    out_of_core: bool
    keep_levels: bool
    levels_in_memory: bool
    keys: list
    resumed: Any
    saver: Any
    generated: int
    generated_at_level_end: int
    found: dict
    last_bytes_per_state: float
    last_growth: float
    frontier: Any
    frontier_rows: np.ndarray | None
    visited_set: Any
    levels: Any
    by_rank: np.ndarray
    full_states: int
    kernel: Any
    pending: list
    symmetry: bool
    depth: int

    @property
    def expanding(self) -> int:
        """Threads expanding chunks at once: one out of core, where the room is tight and a
        chunk twice the size costs less than two chunks side by side (measured: 8.6 s against
        15.5 s on kip320-rf3-e3 under 200M); the pool then merges the visited set's file."""
        return 1 if self.spill_dir is not None else self.workers

    def _reserve(self, parts: LevelParts, left: int) -> int:
        """Memory the search may take before it next looks: the chunks still to run (at most
        one per worker at a time) or, once they are done, storing the level (a copy of its
        new states and the merged visited set), whichever is more."""
        in_flight = min(self.expanding, left) * self.chunk * CHUNK_BYTES_PER_STATE
        return max(in_flight, parts.held_bytes + self.visited_set.growth(parts.entries))

    def _fit_chunk(self, room: int | None) -> None:
        """The next level's chunks (looked at before each level): at most ``max_chunk`` states;
        under a tight memory limit, small enough that their arrays fit the room left (out of
        core the room can grow back, and so can they); and, under symmetry, a level that would
        make fewer chunks than threads expanding is split among them, down to ``SPLIT_MIN``
        states a chunk (rf 5's levels of 50,000 states ran on one thread). Not without
        symmetry: there a state's expansion is mostly short NumPy calls, and two threads on
        halves of a small level wait on each other's interpreter lock (kip320-rf3: 0.80 and
        0.91 s split, 0.67 and 0.74 s not, one thread 0.62 and 0.67)."""
        chunk = self.max_chunk
        if room is not None:  # bytes left before the memory stop (None: no limit)
            chunk = min(chunk, max(MIN_CHUNK, room // (8 * self.expanding * CHUNK_BYTES_PER_STATE)))
        if self.expanding > 1 and self.symmetry:
            chunk = min(chunk, max(SPLIT_MIN, -(-self.frontier.shape[1] // self.expanding)))
        self.chunk = int(chunk)

    def _make_room(self, limits: Limits) -> None:
        """Before a level, under a memory limit: when the room left would not hold the level in
        memory (its chunks in flight, and twice the last level's bytes a new state times its
        new states at the last level's growth), the search goes out of core for good: the
        visited set, the levels being built and the queue move to disk (``vector_spill.py``).
        Not where the state graph keeps every level in memory anyway. Out of core, glibc's
        arenas hand back what the last level freed (``release_freed_memory``)."""
        if self.spill_dir is None and not self.levels_in_memory and self.visited_set.n and self._would_not_fit(limits):
            self._go_out_of_core()
        if self.spill_dir is not None:  # the last level's transients go back to the system
            release_freed_memory()

    def _restore(self, limits: Limits) -> None:
        """Continue a saved search: its levels as saved (read from their files when asked
        for); the visited set and the frontier derived from them exactly as ``_store`` built
        them (fingerprints are unique), a level at a time, on disk when memory runs short."""
        saved, kernel = self.resumed, self.kernel
        self.keys = list(saved.keys)
        self.levels.replace(saved.parents, saved.actions)
        self.generated = self.generated_at_level_end = saved.generated
        self.full_states, self.found = saved.full_states, dict(saved.found)
        found: dict[str, tuple[int, int]] = {}
        for depth, level in enumerate(self.keys):
            keys = read_mapped(level)
            todo = [p for p in self.pending if p[0] not in found]  # evaluated by blocks of rows (the kernel's)
            found.update({name: (depth, row) for name, (_, row) in derived_found(kernel, [keys], todo).items()})
            fp = kernel.fingerprints(keys)
            self._restore_room(limits, len(fp))
            ordered = np.sort(fp)
            if self.spill_dir is not None:
                self.visited_set.disk.absorb(ordered[lo : lo + DISK_BLOCK] for lo in range(0, len(ordered), DISK_BLOCK))
            else:
                self.visited_set.add(ordered, self.visited_set.locate(ordered)[0])
        check_found(self.found, found, self.saver.folder)
        if kernel.exact:  # the expansion order _in_memory chooses: the key's, or storage order
            order = np.argsort(fp, kind="stable")
            self.frontier, self.frontier_rows = keys[:, order], order.astype(np.uint32)
        else:
            self.frontier, self.frontier_rows = np.array(keys), np.arange(keys.shape[1], dtype=np.uint32)
        # what _make_room's guess reads, as _store would have left it: the last level's growth,
        # and a level's bytes a state in memory (New: fp, pos, prio, keys unless a view of fp, orbits)
        sizes = [level.shape[1] for level in self.keys[-2:]]
        self.last_growth = sizes[-1] / max(1, sizes[0]) if len(sizes) > 1 else 1.0
        self.last_bytes_per_state = 8 * (3 + (0 if kernel.exact else kernel.words)) + 4 * self.symmetry

    def _restore_room(self, limits: Limits, k: int) -> None:
        """On resume, before a saved level's ``k`` fingerprints join the visited set: out of core
        for good when they and their sorting would not fit the room left."""
        if self.spill_dir is not None or self.levels_in_memory:
            return
        room = limits.memory_room()
        if self.out_of_core or (room is not None and self.visited_set.growth(k) + 6 * 8 * k > room):
            self._go_out_of_core()

    def _go_out_of_core(self) -> None:
        """The visited set to a file of a new spill folder (nothing moves where there is none)."""
        try:
            folder = spill_folder()
        except OSError:  # no temporary folder: the search stays in memory
            return
        if self.visited_set.spill(pathlib.Path(folder.name)):
            self.spill_dir = folder

    def _would_not_fit(self, limits: Limits) -> bool:
        """The next level in memory would pass the room left (always, where a test forces it)."""
        if self.out_of_core:
            return True
        room = limits.memory_room()
        if room is None:
            return False
        expected = self.frontier.shape[1] * max(1.0, self.last_growth)
        level = 2 * expected * (self.last_bytes_per_state + 8 * GROWTH)
        return min(self.workers * self.max_chunk * CHUNK_BYTES_PER_STATE, room // 8) + level > room

    def _level_runs(self, limits: Limits) -> LevelRuns:
        """Out of core, where a level's chunks go: its merge's buffers take a sixteenth of the room left."""
        budget = min(MERGE_BUDGET, max(MIN_BUDGET, (limits.memory_room() or MERGE_BUDGET) // 16))
        return LevelRuns(pathlib.Path(self.spill_dir.name), self.depth, self.kernel.words, len(self.pending),
                         self.symmetry, budget)

    def _spilled(self, new: SpilledLevel) -> list[int]:
        """Store a level built on disk: its queue is in storage order, so a state's row is its place."""
        self.frontier, self.frontier_rows = new.frontier, None
        if self.keep_levels:  # a checkpoint writes the level from the queue's file, then reads its own
            self.keys.append(new.frontier)
        self.levels.adopt(new.parents, new.actions, new.n, self.by_rank.dtype)
        self.full_states += new.orbits
        return new.first_rows

    def _absorb(self, fingerprints: pathlib.Path) -> None:
        """Out of core: merge a level's fingerprints (a sorted file) into the visited set's file."""
        self.visited_set.disk.absorb(file_blocks(fingerprints, np.uint64, DISK_BLOCK))
        fingerprints.unlink()
