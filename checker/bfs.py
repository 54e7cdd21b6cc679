"""Breadth-first explicit-state search: the embedded default engine.

Visited states are exact packed ints in a set; states in discovery order live in
a list, with parent indices and action indices in compact arrays (the order is
the BFS order, so the levels are contiguous index ranges). Every property is
checked when a state is first discovered, so the first violation found is a
shortest one; its path is rebuilt from parent pointers and re-executed on the
model (TLC's and Stateright's approach) rather than stored per state.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import replace
from typing import Any, Sequence

from isrcheck.properties import Property, verdict

from .engine import (
    CHECK_EVERY, LOOK_EVERY, CheckOptions, Limits, Observer, Progress, SearchModel, check_found, checkpoint_failure,
    peak_rss,
)
from .result import CheckResult, Path, Stats, property_results


class SearchState:
    """Everything a BFS needs to continue: what a checkpoint saves and resume loads."""

    def __init__(self, n_actions: int) -> None:
        self.states: list[int] = []
        self.parents = array("i")
        self.actions = array("H" if n_actions < (1 << 16) else "I")
        self.level_ends: list[int] = []  # index one past the last state of each complete level
        self.cursor = 0  # next state to expand
        self.generated = 0
        self.found: dict[str, int] = {}  # property name -> index of its first deciding state
        self.elapsed = 0.0  # seconds spent before this process took over


KERNELS = ("vector", "scalar")


def vector_kernel_for(model: SearchModel, properties: Sequence[Property], options: CheckOptions):
    """(the model's vector kernel for this search, "") or (None, why not); NumPy is
    imported only here, when a search may use it."""
    from .bfs_vector import vector_kernel

    return vector_kernel(model, properties, options)


class BfsEngine:
    """``kernel="vector"`` runs ``bfs_vector.py`` where the model has a vector kernel that
    covers the properties (and a resumed checkpoint is the vector kernel's); the scalar
    loop otherwise. The
    result's ``kernel`` and ``kernel_note`` say which ran and why. ``workers`` is
    threads for the vector kernel (its default: up to 2), or with ``processes`` forked
    processes that each own a shard of the visited set (``bfs_vector_shard.py``; not
    with checkpoints or the state graph, which need one process), and processes for the
    scalar one (``bfs_parallel.py``; its default: 1, and scalar checkpoints run in one
    process)."""

    name = "bfs"

    def __init__(self, kernel: str = "vector", workers: int | None = None, processes: bool = False) -> None:
        if kernel not in KERNELS:
            raise ValueError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
        self.kernel, self.workers, self.processes = kernel, workers, processes

    def check(
        self,
        model: SearchModel,
        properties: Sequence[Property],
        options: CheckOptions,
        observer: Observer | None = None,
        saving: Any = None,
    ) -> CheckResult:
        """Search; ``saving`` (``saving.BfsSaving``) resumes a saved search and saves
        this one: the vector kernel at level ends, the scalar one at level ends and every
        ``options.checkpoint_every`` seconds; both at the end."""
        observer = observer or Observer()
        graph_props = [p for p in properties if p.graph]
        state_props = [p for p in properties if not p.graph]
        keep = bool(graph_props) or options.keep_graph
        if keep:  # the whole explored graph, built after the search
            options = replace(options, explore_all=True)
        note = ""
        if self.kernel == "vector" and saving is not None and saving.resuming and not saving.vector_saved:
            note = "resumed with the scalar kernel that wrote the checkpoint"
        elif self.kernel == "vector":
            kernel, note = vector_kernel_for(model, properties, options)
            if kernel is not None and self.processes and (self.workers or 1) > 1:
                if saving is None and not keep:
                    return _sharded(model, kernel, state_props, options, observer, self.workers)
                note = "--processes: checkpoints and the state graph need one process; ran on threads"
            if kernel is not None:
                from .bfs_vector import VectorSearch

                search = VectorSearch(model, kernel, state_props, options, observer, self.workers, saving=saving,
                                      keep_levels=keep)
                result = search.run()
                if keep:
                    from . import graph

                    watch = Limits(options, time.monotonic(), observer).exceeded
                    result = graph.settle_vector(search, result, properties, graph_props, watch, options.keep_graph)
                result.kernel, result.workers, result.kernel_note = "vector", search.workers, note
                return result
        if (self.workers or 1) > 1 and saving is None and not keep:
            from .bfs_parallel import ParallelBfsEngine

            result = ParallelBfsEngine(self.workers).check(model, properties, options, observer)
        else:  # one process: the graph properties need the states in one list
            resume, checkpoint = saving.scalar((model.layout.state_bits + 7) // 8) if saving else (None, None)
            search = _Search(model, state_props, options, observer, resume, checkpoint)
            result = search.run()
            if keep:
                from . import graph

                watch = Limits(options, time.monotonic(), observer).exceeded
                result = graph.settle_scalar(search, result, properties, graph_props, watch, options.keep_graph)
        result.kernel, result.kernel_note = "scalar", note
        return result


def _sharded(model: SearchModel, kernel: Any, properties: Sequence[Property], options: CheckOptions,
             observer: Observer, workers: int) -> CheckResult:
    """The vector search on forked processes, each owning a shard of the visited set."""
    from .bfs_parallel import ParallelBfsEngine
    from .bfs_vector_shard import VectorShards

    shards = VectorShards(model, kernel, properties, options)
    result = ParallelBfsEngine(workers).check(model, properties, options, observer, shards)
    result.kernel = "vector"
    return result


class _Search:
    def __init__(self, model, properties, options, observer, resume, checkpoint) -> None:
        self.model = model
        self.properties = list(properties)
        self.options = options
        self.observer = observer
        self.checkpoint = checkpoint
        self.canonical = model.symmetry.canonical if options.symmetry else None
        st = resume or SearchState(len(model.catalogue))
        self.st = st
        if resume is None:
            self._seed()
        else:
            check_found(st.found, self._derived_found(), "the --resume folder")

    def _derived_found(self) -> dict[str, int]:
        """Each property's first deciding state among the saved ones (each was checked when
        stored, in storage order): what the checkpoint's ``found`` must say."""
        found: dict[str, int] = {}
        for p in self.properties:
            pred, always = p.compile(self.model), verdict.always(p)
            first = next((i for i, s in enumerate(self.st.states) if pred(s) != always), None)
            if first is not None:
                found[p.name] = first
        return found

    def _seed(self) -> None:
        st = self.st
        seen = set()
        for s in self.model.init_states():
            if self.canonical:
                s = self.canonical(s)
            if s not in seen:
                seen.add(s)
                st.states.append(s)
                st.parents.append(-1)
                st.actions.append(0)
        st.generated = len(st.states)
        st.level_ends.append(len(st.states))
        for i, s in enumerate(st.states):
            self._check_new(i, s, self._pending())

    def _pending(self) -> list[tuple[str, object, bool]]:
        return [
            (p.name, p.compile(self.model), verdict.always(p))
            for p in self.properties
            if p.name not in self.st.found
        ]

    def _check_new(self, index: int, state: int, pending: list) -> None:
        for name, pred, always in pending:
            if name not in self.st.found and pred(state) != always:
                self.st.found[name] = index

    def run(self) -> CheckResult:
        st, opts, observer = self.st, self.options, self.observer
        started = time.monotonic() - st.elapsed
        limits = Limits(opts, time.monotonic() - st.elapsed)
        succ = self.model.successors
        canon = self.canonical
        states, parents, actions = st.states, st.parents, st.actions
        visited = set(states)
        add = visited.add
        push_state, push_parent, push_action = states.append, parents.append, actions.append
        pending = self._pending()
        found = st.found
        n_found = len(found)
        stop = ""
        next_report = time.monotonic() + opts.progress_interval
        next_look = 0.0
        every = opts.checkpoint_every if self.checkpoint is not None else None
        next_checkpoint = time.monotonic() + every if every else None
        max_depth = opts.max_depth
        generated = st.generated

        decided = not opts.explore_all and not pending
        while st.cursor < len(states) and not stop and not decided:
            depth = len(st.level_ends)
            if max_depth is not None and depth >= max_depth:
                break
            level_end = st.level_ends[-1]
            level_start = st.level_ends[-2] if depth > 1 else 0
            i = st.cursor
            while i < level_end:
                nexts = succ(states[i])
                generated += len(nexts)
                for a, t in nexts:
                    if t in visited:  # visited states are canonical: no need to canonicalise it
                        continue
                    if canon is not None:
                        t = canon(t)
                        if t in visited:
                            continue
                    add(t)
                    push_state(t)
                    push_parent(i)
                    push_action(a)
                    for name, pred, always in pending:
                        if pred(t) != always and name not in found:
                            found[name] = len(states) - 1
                if len(found) != n_found:
                    n_found = len(found)
                    pending = [p for p in pending if p[0] not in found]
                    decided = not opts.explore_all and not pending
                i += 1
                if decided:
                    break
                if not (i & (CHECK_EVERY - 1)) and time.monotonic() >= next_look:
                    stop = observer.should_stop() or limits.exceeded()
                    if stop:
                        break
                    now = time.monotonic()
                    next_look = now + LOOK_EVERY
                    if next_checkpoint is not None and now >= next_checkpoint:
                        st.cursor, st.generated, st.elapsed = i, generated, now - started
                        stop = self._save()
                        if stop:
                            break
                        next_checkpoint = time.monotonic() + every
                    if now >= next_report:
                        next_report = now + opts.progress_interval
                        observer.progress(Progress(len(states), len(states) - i, depth, generated, now - started,
                                                   i - level_start, level_end - level_start))
            st.cursor = i
            st.generated = generated
            if i == level_end and len(states) > level_end:
                st.level_ends.append(len(states))
                st.elapsed = time.monotonic() - started
                failed = self._save()
                stop = stop or failed
        st.generated = generated
        st.elapsed = time.monotonic() - started
        failed = self._save()
        stop = stop or failed
        return self._result(stop)

    def _save(self) -> str:
        """Checkpoint the search; a failure to write stops it cleanly: returns the reason."""
        if self.checkpoint is None:
            return ""
        try:
            self.checkpoint(self.st)
        except OSError as e:
            self.checkpoint = None
            return checkpoint_failure(e)
        return ""

    def _result(self, stop: str) -> CheckResult:
        st = self.st
        exhausted = not stop and (
            st.cursor >= len(st.states)
            or (self.options.max_depth is not None and len(st.level_ends) >= self.options.max_depth)
        )
        complete = not stop
        paths = {name: self.path_to(index) for name, index in st.found.items()}
        results = property_results(self.properties, paths, exhausted)
        depth = len(st.level_ends)
        if complete and st.level_ends and len(st.states) > st.level_ends[-1]:
            depth += 1  # stopped early, every property decided: count the level it stopped in
        stats = Stats(
            states=len(st.states),
            generated=st.generated,
            depth=depth,
            seconds=st.elapsed,
            peak_memory=peak_rss(),
            queue=len(st.states) - st.cursor,
        )
        if self.canonical is not None and not stop:
            # the count before symmetry reduction costs about a third of the search's time (an
            # orbit per state): a run that a limit or Ctrl-C stopped ends without it, on time
            orbit = self.model.symmetry.orbit_size
            stats.full_states = sum(orbit(s) for s in st.states)
        return CheckResult(
            engine="bfs",
            complete=complete,
            properties=results,
            stats=stats,
            exhausted=exhausted,
            stop_reason=stop,
            symmetry=self.canonical is not None,
        )

    def path_to(self, index: int) -> Path:
        """Rebuild the path to a stored state by parent pointers, then re-execute it."""
        st = self.st
        chain = []
        while index >= 0:
            chain.append(index)
            index = st.parents[index]
        chain.reverse()
        stored = [st.states[i] for i in chain]
        return Path.replay(self.model, stored, self.canonical)
