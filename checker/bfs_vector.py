"""Breadth-first search a whole level at a time, on the model's vector kernel.

The same search as ``bfs.py`` (same verdicts, distinct and generated counts,
depths and shortest trace lengths), with the per-state loop replaced by array
operations:

* a level is expanded in chunks by ``VectorKernel.expand``; chunks go to a small
  thread pool (NumPy releases the GIL inside its array operations);
* a chunk's successors are sorted by fingerprint (the key itself when it fits one
  word: exact), adjacent equals are dropped, and those already visited are
  removed with ``searchsorted`` against the visited set, one sorted uint64 array;
  the chunk's workers also evaluate the pending properties on the survivors;
* the chunks' survivors (sorted runs) are merged into the new level as they come, two
  parts of as many chunks at a time (``LevelParts``), and the level into the visited set
  in place, at the positions the search found (``vector_store.py``); a chunk's columns
  of the frontier go once it is expanded (``ChunkedFrontier``);
* each state keeps its first discovery in the scalar BFS's order (parent row, then
  the rank of the action among the scalar successor function's output), and a level
  is stored in that order: without symmetry both kernels store the same states in the
  same order with the same parents, so they find the very same traces;
* per state the search keeps its fingerprint and, on disk, its parent's row and its
  action; the levels' keys only where a checkpoint or the state graph needs them;
* the first state that decides a property sits at the shallowest level, so its trace
  is a shortest one; it is rebuilt by walking parents, then replaying the actions from
  the initial state on the scalar model (``vector_traces.py``);
* past the memory limit the search goes out of core (``vector_spill.py``): the visited
  set, the level being built and the queue move to disk, with the same counts, order
  and traces.

A level is the unit of work: the observer, the limits and the "every property is
decided" stop are looked at between chunks and levels, and a run that stops once
every property is decided keeps its whole last level (the scalar engine stops
inside it, so its state count can be lower; verdicts, depth and trace lengths are
the same). Why sorted arrays rather than a hash table: measured here on the
10-million-state space, a vectorised open-addressing table was slower (5.8 s of
CPU against 5.4 s) and needed half as much memory again.
"""

from __future__ import annotations

import os
import time
from collections import deque
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, Sequence

import numpy as np

from isrcheck.model.kernel import BatchPredicate, KernelUnsupported, VectorKernel, kernel_for
from isrcheck.properties import Property, verdict

from .engine import (CheckOptions, CheckpointError, Limits, Observer, Progress, SearchModel,
                     checkpoint_failure, one_malloc_arena, pad_heap_top, peak_rss)
from .result import CheckResult, Path, Stats, property_results
from .vector_arrays import NO_PRIO, LevelParts, New, held_bytes, radix_argsort
from .vector_chunk import distinct, first_deciding, unvisited
from .vector_memory import CHUNK, MemoryFit
from .vector_spill import FrontierFile, LevelRuns, SpilledLevel
from .vector_store import ChunkedFrontier, LevelLog, VisitedSet, mapped_keys
from .vector_traces import path_to



def vector_kernel(
    model: SearchModel, properties: Sequence[Property], options: CheckOptions
) -> tuple[VectorKernel | None, str]:
    """The kernel that can run this check, or None and why not (in words the report shows)."""
    try:
        kernel = kernel_for(model)
    except KernelUnsupported as e:
        return None, f"not on the vector kernel: {e}"
    why = kernel.supports_symmetry() if options.symmetry else ""
    return (None, f"not on the vector kernel: {why}") if why else (kernel, "")


def default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


class VectorSearch(MemoryFit):
    # Each chunk checks its new states against the pending properties while they are at hand:
    # checking the merged level instead (each state once, where several chunks found it) took
    # 3 to 13% longer (main-job-4.1 on one thread, kip320-rf3-e3 and rf4-min-isr2 on two threads),
    # where chunks find 1.03 to 1.07 new states for each state stored (see _in_memory).
    checked_when_stored = False

    def __init__(
        self,
        model: SearchModel,
        kernel: VectorKernel,
        properties: Sequence[Property],
        options: CheckOptions,
        observer: Observer | None = None,
        workers: int | None = None,
        chunk: int = CHUNK,
        saving: Any = None,
        keep_levels: bool = False,
        out_of_core: bool = False,
    ) -> None:
        self.model, self.kernel = model, kernel
        self.properties = list(properties)
        self.options = options
        self.observer = observer or Observer()
        self.workers = workers or default_workers()
        self.chunk = self.max_chunk = chunk
        self.symmetry = options.symmetry
        self.rank = kernel.emission_rank()
        self.by_rank = np.argsort(self.rank).astype(kernel.action_dtype)  # rank -> action index
        # per level, (words, n), in the scalar BFS's order: every level's when a checkpoint or the
        # state graph needs them (a checkpoint's in its files once saved), else the initial
        # level's only (traces replay their actions)
        self.keys: list[Any] = []
        self.keep_levels = keep_levels or saving is not None
        self.levels_in_memory = keep_levels  # the state graph reads every level as arrays
        # per level, each state's parent's row in the level before and its action: in memory for
        # the state graph, else on disk (read only to rebuild a trace, or to save the level): in
        # a temporary folder, or in the checkpoint's level files once saved (in memory till then)
        self.levels = LevelLog(on_disk=not keep_levels and saving is None)
        # sorted fingerprints of every stored state
        self.visited_set = VisitedSet(hashed=not kernel.exact, canonical=kernel.compiles_canonical(options.symmetry))
        self.frontier = np.empty((kernel.words, 0), dtype=np.uint64)  # the last level, in expansion order (_in_memory)
        # their rows in the last level's storage order (None out of core: the queue is in that order)
        self.frontier_rows: np.ndarray | None = np.empty(0, dtype=np.uint32)
        self.found: dict[str, tuple[int, int]] = {}  # property -> (level, row) of its first deciding state
        self.pending: list[tuple[str, BatchPredicate, bool]] = []
        self.last_bytes_per_state, self.last_growth = 0.0, 1.0  # of the last level stored: _make_room's guess
        self.out_of_core = out_of_core  # go out of core at the first level, limit or not (tests)
        self.spill_dir: Any = None  # past the memory limit: the folder of what moved to disk
        self.generated = 0
        self.generated_at_level_end = 0  # what a checkpoint saves: a resume redoes the level it was in
        self.full_states = 0
        self.stop = ""
        self.started, self.next_report = time.monotonic(), float("inf")  # set again by run
        self.resumed, self.saver = saving.vector(kernel.words, kernel.action_dtype) if saving else (None, None)

    # ---- one chunk, in a worker thread ----------------------------------------------------
    def _new_states(self, successors: list[np.ndarray]) -> New:
        """The distinct, not yet visited states among ``[keys, priorities]``, each with its first
        discovery (the smallest priority) and its property verdicts. The list is handed over
        (emptied): each array goes once this no longer needs it, not when the caller returns
        (two threads' chunks held some 17 MB each of successors no longer read, measured)."""
        found = distinct(self.kernel, self.symmetry, successors, self.visited_set.compiled)
        return unvisited(self.kernel, self.visited_set, self._chunk_pending, found)

    @property
    def _chunk_pending(self) -> list:
        """The properties each chunk checks: none where the level's states are checked once
        merged (``checked_when_stored``)."""
        return [] if self.checked_when_stored and self.spill_dir is None else self.pending

    def _expand_chunk(self, start: int) -> tuple[int, New]:
        if isinstance(self.frontier, ChunkedFrontier):
            frontier, storage_rows = self.frontier.take(start)
        else:  # out of core: the queue's file, in storage order
            frontier, storage_rows = self.frontier[:, start : start + self.chunk], None
        keys, rows, actions = self.kernel.expand(frontier)
        del frontier
        parents = rows + start if storage_rows is None else storage_rows[rows]
        del storage_rows
        successors = [keys, self._priorities(parents, actions)]
        del keys, rows, actions, parents
        return successors[0].shape[1], self._new_states(successors)

    def _priorities(self, parents: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Parent's row * actions + the action's rank; in 32 bits while the level's fit: a
        chunk's parts are held till the level's merge."""
        n = len(self.rank)
        width = np.uint32 if self.frontier.shape[1] * n <= 1 << 32 else np.int64
        return parents.astype(width) * width(n) + self.rank[actions].astype(width)

    # ---- one level --------------------------------------------------------------------------
    def _next_level(self, pool: Executor | None, limits: Limits) -> LevelParts | LevelRuns | None:
        """The next level's new states by chunk: in memory, or as sorted runs on disk when the
        search is out of core; None when a limit or a stop request ended the level."""
        room = limits.memory_room()
        self._fit_chunk(room)
        self.visited_set.use_compiled(self.frontier.shape[1], room)
        runs = None if self.spill_dir is None else self._level_runs(limits)
        if isinstance(self.frontier, np.ndarray):  # in memory: each chunk's columns go once expanded
            self.frontier = ChunkedFrontier(self.frontier, self.frontier_rows, self.chunk)
            self.frontier_rows = None
        starts = range(0, self.frontier.shape[1], self.chunk)
        if pool is not None and self.expanding > 1:
            futures = deque(pool.submit(self._expand_chunk, s) for s in starts)
            # each future let go once read: a part merged into another goes then, not with the level
            results = (futures.popleft().result() for _ in starts)
        else:
            futures = deque()
            results = (self._expand_chunk(s) for s in starts)
        parts = LevelParts(self.kernel.exact)
        for done, (generated, part) in enumerate(results, start=1):
            self.generated += generated
            if runs is None:
                parts.add(part)
            else:
                runs.add(part)
            self.stop = self.observer.should_stop() or limits.exceeded(self._reserve(parts, len(starts) - done))
            if self.stop:
                for f in futures:
                    f.cancel()
                return None
            self._report(done * self.chunk)
        return parts if runs is None else runs

    def _report(self, done: int | None = None) -> None:
        """Progress, at most every progress_interval: between a level's chunks (``done``: the
        frontier's states expanded so far) and at a level's end (None: the new frontier whole)."""
        now = time.monotonic()
        if now < self.next_report:
            return
        self.next_report = now + self.options.progress_interval
        size = self.frontier.shape[1]
        done = None if done is None else min(done, size)
        self.observer.progress(Progress(self.states, size - (done or 0), self.depth, self.generated,
                                        now - self.started, done, None if done is None else size))

    def _unseen(self, parts: LevelParts | LevelRuns) -> New | SpilledLevel:
        """The chunks' new states merged into one level (a state several chunks found keeps its
        first discovery): in memory, or on disk less those the visited set holds there."""
        if isinstance(parts, LevelRuns):
            return parts.merge(self.visited_set.unseen_on_disk, len(self.rank), self.by_rank)
        return parts.merged()

    def _store(self, new: New | SpilledLevel, pool: Executor | None = None) -> None:
        """Add a level's new states to the visited set, and store them in the scalar BFS's order
        (where ``checked_when_stored``, checked against the pending properties first); the next
        level is expanded from them (``_in_memory``), with each state's row in storage order to
        compute priorities. The visited set's merge runs beside the rest, in the pool."""
        if isinstance(new, SpilledLevel):
            merge, args = self._absorb, (new.fingerprints,)
        else:
            merge, args = self.visited_set.add, (new.fp, new.pos)
        merging = pool.submit(merge, *args) if pool else None
        if merging is None:
            merge(*args)
        if self.checked_when_stored and isinstance(new, New):
            new = new._replace(deciding=first_deciding(self.kernel, self.pending, new.keys, new.prio))
        if isinstance(self.frontier, FrontierFile):
            self.frontier.remove()
        first_rows = self._spilled(new) if isinstance(new, SpilledLevel) else self._in_memory(new)
        for (name, _, _), row in zip(self.pending, first_rows):
            if row >= 0:
                self.found[name] = (self.depth - 1, row)
        self.pending = [p for p in self.pending if p[0] not in self.found]
        self.generated_at_level_end = self.generated
        if merging is not None:
            merging.result()

    def _in_memory(self, new: New) -> list[int]:
        """Store a level built in memory; per pending property, the row of its first deciding state."""
        self.last_bytes_per_state = held_bytes(new) / max(1, len(new.fp))
        by_prio = radix_argsort(new.prio)
        prio = new.prio.take(by_prio)
        n = len(by_prio)
        self.frontier, self.frontier_rows = new.keys, None  # the last level's rows let go first
        # The next level is expanded in key order where the key is the fingerprint: successors
        # then come out in sorted runs (kip320-rf3-e3 took 18 to 21% longer in storage order).
        # Hashed keys have no runs: they are expanded in storage order, where a state's children
        # lie side by side, so that the states two of them reach (two independent steps taken in
        # either order) are found within one chunk, not once in each of two: rf4-min-isr2's chunks
        # found 1.03 new states for each state stored, against 1.89 in fingerprint order (exact
        # keys in key order: 1.04 to 1.07). rf 5 with two records on two processes: 8 to 15% less
        # time (bench/README).
        if self.kernel.exact:
            self.frontier_rows = np.empty(n, dtype=np.uint32)  # rows as the level log's parents: 32 bits
            self.frontier_rows[by_prio] = np.arange(n, dtype=np.uint32)
            stored = new.keys.take(by_prio, axis=1) if self.keep_levels or not self.keys else None
        else:
            self.frontier = stored = new.keys.take(by_prio, axis=1)
            self.frontier_rows = np.arange(n, dtype=np.uint32)
        if self.keep_levels or not self.keys:
            self.keys.append(stored)
        del by_prio, stored
        self.levels.append((prio // len(self.rank)).astype(np.uint32), self.by_rank[prio % len(self.rank)])
        if new.orbits is not None:
            self.full_states += int(new.orbits.sum())
        # the first in storage order: the smallest priority
        return [-1 if best == NO_PRIO else int(np.searchsorted(prio, best)) for best in new.deciding]

    # ---- the search ---------------------------------------------------------------------------
    def run(self) -> CheckResult:
        opts, kernel = self.options, self.kernel
        started = time.monotonic() - (self.resumed.elapsed if self.resumed else 0.0)
        self.started, self.next_report = started, started + opts.progress_interval
        limits = Limits(opts, started)
        self.pending = [(p.name, kernel.predicate(p), verdict.always(p)) for p in self.properties]
        exhausted = False
        pad_heap_top()
        if self.resumed is not None:
            self._restore(limits)
            self.pending = [p for p in self.pending if p[0] not in self.found]
            exhausted = self.resumed.exhausted and self._nothing_new(limits)
        else:
            init = kernel.initial_keys()
            self.generated = n = init.shape[1]
            self._store(self._new_states([init, np.arange(n, dtype=np.int64) * len(self.rank)]))
            self._save(started)
        if self.workers > 1:
            one_malloc_arena()
        pool = ThreadPoolExecutor(self.workers) if self.workers > 1 else None
        try:
            while not exhausted and not self.stop and (opts.explore_all or self.pending):  # the first save may fail
                if opts.max_depth is not None and self.depth >= opts.max_depth:
                    break
                try:
                    stored = self._level(pool, limits)
                except OSError as e:  # out of core, a file could not be written: stop, with what was stored
                    if self.spill_dir is None:
                        raise
                    self.stop = f"out-of-core files not written ({e.strerror or e})"
                    break
                if stored is None:
                    break
                if not stored:
                    exhausted = True
                    self.generated_at_level_end = self.generated  # the last level is expanded
                    break
                self._save(started)
                if self.stop:
                    break
                self._report()
        finally:
            if pool:
                pool.shutdown(cancel_futures=True)
        self._save(started, exhausted)
        result = self._result(time.monotonic() - started, exhausted)
        if isinstance(self.frontier, FrontierFile):
            self.frontier.remove()
        return result

    def _level(self, pool: Executor | None, limits: Limits) -> bool | None:
        """Expand the frontier and store the next level: True; False when it has no new
        state; None when a limit or a stop request ended it."""
        self._make_room(limits)
        parts = self._next_level(pool, limits)
        if parts is None:
            return None
        expanded = self.frontier.shape[1]
        new = self._unseen(parts)
        if not _size(new):
            return False
        self.last_growth = _size(new) / max(1, expanded)
        self._store(new, pool)
        return True

    def _nothing_new(self, limits: Limits) -> bool:
        """A saved 'exhausted' is checked, not trusted: its last level has no new successor
        (False when a limit stopped the look; its successors were counted when first expanded)."""
        generated = self.generated
        parts = self._next_level(None, limits)
        self.generated = generated
        if parts is not None and _size(self._unseen(parts)):
            raise CheckpointError(f"checkpoint in {self.saver.folder} is inconsistent: it says the search was "
                                  "complete, but its last level has new successors (it was edited)")
        return parts is not None

    def _save(self, started: float, exhausted: bool = False) -> None:
        """Checkpoint the levels done; a failure to write stops the search cleanly, saying why."""
        if self.saver is None:
            return
        try:
            for depth, path in self.saver.save(self, time.monotonic() - started, exhausted):
                self.keys[depth] = mapped_keys(path, self.kernel.words, len(self.levels.parents[depth]))
                self.levels.saved(depth, path, self.kernel.words, self.kernel.action_dtype)
        except OSError as e:
            self.stop, self.saver = self.stop or checkpoint_failure(e), None

    @property
    def states(self) -> int:
        return self.levels.states

    @property
    def depth(self) -> int:
        """Levels stored, the initial one included."""
        return len(self.levels)

    @property
    def parents(self) -> Sequence[np.ndarray]:
        return self.levels.parents

    @property
    def actions(self) -> Sequence[np.ndarray]:
        return self.levels.actions

    def _result(self, seconds: float, exhausted_space: bool) -> CheckResult:
        opts = self.options
        at_depth = opts.max_depth is not None and self.depth >= opts.max_depth
        exhausted = not self.stop and (exhausted_space or at_depth)
        note = "" if self.kernel.exact else self.visited_set.collision_note(self.states, self.generated)
        paths = {name: self.path_to(*where) for name, where in self.found.items()}
        results = property_results(self.properties, paths, exhausted, note)
        stats = Stats(
            states=self.states,
            generated=self.generated,
            depth=self.depth,
            seconds=seconds,
            peak_memory=peak_rss(),
            queue=0 if exhausted_space else self.frontier.shape[1],
            full_states=self.full_states if self.symmetry else None,
            on_disk=self.visited_set.disk.n if self.visited_set.disk else 0,
        )
        return CheckResult(
            engine="bfs",
            complete=not self.stop,
            properties=results,
            stats=stats,
            exhausted=exhausted,
            stop_reason=self.stop,
            symmetry=self.symmetry,
            search_note=note,
        )

    def path_to(self, depth: int, row: int) -> Path:
        """The trace to a stored state (``vector_traces.py``)."""
        return path_to(self, depth, row)


def _size(level: New | SpilledLevel) -> int:
    return level.n if isinstance(level, SpilledLevel) else len(level.fp)
