"""Breadth-first search on several cores: the frontier and the visited set split by owner.

Each worker process owns the states whose fingerprint falls to it. In a level every
worker expands its part of the frontier (successors, canonicalisation), keeps what it
owns and sends the rest straight to their owners over worker-to-worker pipes; then it
removes what it has seen from what it owns, stores the new states with (owner, index)
parent pointers and checks the properties on them. The coordinator only starts
levels and collects counts. Levels are
the same sets as in one process, so distinct counts, depths, verdicts and shortest
trace lengths agree with the single-process engine (the partial counts of an early
stop differ: a stop reaches the workers within a few thousand states, and a memory
stop drops the partial level rather than exchange it).

Workers are forked, so they share the model's tables (the symmetry's too, built
before the fork) without pickling them. Their memory counts against --max-memory with
the coordinator's, shared pages once (``FamilyMemory``). Every worker holds a pipe to
every other: the workers asked for are capped to what the open-file limit allows.
Checkpoints stay with the single-process engine.

The workers here run the scalar kernel, a level in one round; the vector kernel's
(``bfs_vector_shard.py``, ``--processes``) answer the same messages, and exchange every
few chunks (a level is then several rounds). ``ScalarShards`` and ``VectorShards`` tell
the coordinator how each kind is seeded, how a path is rebuilt from the workers'
entries, and what note the verdicts carry.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import signal
import threading
import time
from array import array
from dataclasses import replace
from math import isqrt
from typing import Any, Sequence

from isrcheck.properties import Property, verdict

from .engine import (
    CHECK_EVERY, LOOK_EVERY, MEMORY_HEADROOM, CheckOptions, FamilyMemory, Limits, Observer, Progress, SearchModel,
    peak_rss,
)
from .result import CheckResult, Path, Stats, property_results

POLL = 0.05  # seconds between the coordinator's looks at the limits while the workers work
EXCHANGE_BYTES = 100  # peak bytes an exchanged candidate adds (pickled, unpickled, stored): measured ~70-90
_M64 = (1 << 64) - 1


def owner_of(state: int, workers: int) -> int:
    """A stable owner for a state: a multiplicative mix of its folded bits (never ``hash()``)."""
    x = (state ^ (state >> 64)) & _M64
    return (((x * 0x9E3779B97F4A7C15) & _M64) >> 32) % workers


def descriptors_needed(workers: int) -> int:
    """Open files each process holds: a pipe each way between every two workers, and per
    worker the coordinator's pipe and its sentinel; 64 for the rest."""
    return 2 * workers * workers + 64


def workers_that_fit(workers: int) -> int:
    """As many of ``workers`` as the open-file limit allows (at least 2), the soft limit
    raised toward the hard one first: a search never fails with "too many open files"."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = descriptors_needed(workers)
    if need > soft:
        raised = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    return max(2, min(workers, isqrt(max(0, soft - 64) // 2)))


class _Worker:
    """The part of the search one process owns."""

    def __init__(self, index: int, workers: int, model: SearchModel, properties, symmetry: bool, stop,
                 inbox, outbox) -> None:
        self.index, self.workers = index, workers
        self.inbox, self.outbox = inbox, outbox  # peer -> receiving / sending pipe end
        self.model = model
        self.canonical = model.symmetry.canonical if symmetry else None
        self.stop = stop
        self.states: list[int] = []
        self.parents = array("q")
        self.actions = array("I")
        self.visited: set[int] = set()
        self.frontier_start = 0
        self.expanded = 0  # states expanded so far, in order
        self.buckets: list = []  # a level's candidates by owner, between its expansion and the exchange
        self.pending = [(p.name, p.compile(model), verdict.always(p)) for p in properties]

    def absorb(self, blocks) -> tuple[int, dict[str, int]]:
        """Keep the unseen candidates of every block; check properties on them."""
        self.frontier_start = len(self.states)
        found: dict[str, int] = {}
        visited, add = self.visited, self.visited.add
        states, parents, actions = self.states, self.parents, self.actions
        pending = self.pending
        for cand_states, cand_parents, cand_actions in blocks:
            for t, p, a in zip(cand_states, cand_parents, cand_actions):
                if t in visited:
                    continue
                add(t)
                states.append(t)
                parents.append(p)
                actions.append(a)
                for name, pred, always in pending:
                    if pred(t) != always and name not in found:
                        found[name] = len(states) - 1
            if found:
                self.pending = pending = [p for p in pending if p[0] not in found]
        return len(states) - self.frontier_start, found

    def expand(self, room: int | None = None) -> tuple[int, int, bool, bool]:
        """Successors of this worker's frontier, kept by owner for the exchange: (generated,
        bytes the exchange will take, stopped, the level's last round: always). ``room``,
        this worker's share of the memory left, is for the vector workers' chunks."""
        workers, me = self.workers, self.index
        self.buckets = buckets = [([], array("q"), array("I")) for _ in range(workers)]
        succ, canon, visited = self.model.successors, self.canonical, self.visited
        generated = 0
        end = len(self.states)
        stopped = False
        next_look = 0.0
        self.expanded = end
        for i in range(self.frontier_start, end):
            gid = i * workers + me
            nexts = succ(self.states[i])
            generated += len(nexts)
            for a, t in nexts:
                if t in visited:  # canonical and already stored here: nothing to send
                    continue
                if canon is not None:
                    t = canon(t)
                b = buckets[owner_of(t, workers)]
                b[0].append(t)
                b[1].append(gid)
                b[2].append(a)
            if not ((i - self.frontier_start + 1) & (CHECK_EVERY - 1)) and time.monotonic() >= next_look:
                next_look = time.monotonic() + LOOK_EVERY
                if self.stop.is_set():
                    stopped = True
                    self.expanded = i + 1
                    break
        return generated, EXCHANGE_BYTES * sum(len(b[0]) for b in buckets), stopped, True

    def exchange(self, keep: bool, last: bool = True) -> tuple[int, dict[str, int]]:
        """Send every peer its candidates, absorb what they send: (new states, found); without
        ``keep`` (a memory stop) drop them all instead: exchanging needs room. A level is one
        round here: always its ``last``."""
        buckets, self.buckets = self.buckets, []
        if not keep:  # the level's successors are dropped: none of it counts as expanded
            self.expanded = self.frontier_start
            return 0, {}
        me = self.index
        senders = [
            threading.Thread(target=self.outbox[peer].send, args=(buckets[peer],))
            for peer in range(self.workers)
            if peer != me
        ]
        for t in senders:  # send while receiving: neither side blocks on a full pipe
            t.start()
        blocks = [buckets[me] if peer == me else self.inbox[peer].recv() for peer in range(self.workers)]
        for t in senders:
            t.join()
        del buckets
        return self.absorb(blocks)

    def entry(self, i: int) -> tuple[int, int, int]:
        """(state, parent's global id or -1, action) of local index ``i``."""
        return self.states[i], self.parents[i], self.actions[i]

    def finish(self, complete: bool) -> tuple[int, int | None, int]:
        """States stored, before symmetry reduction when ``complete`` (costly: else None), and
        those not expanded yet."""
        orbit = self.model.symmetry.orbit_size if self.canonical is not None and complete else None
        full = sum(orbit(s) for s in self.states) if orbit else None
        return len(self.states), full, len(self.states) - self.expanded


def serve(worker: Any, conn) -> None:
    """Answer the coordinator's messages, a worker's method and its arguments, until "quit"."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the coordinator decides when to stop
    while True:
        kind, *args = conn.recv()
        if kind == "quit":
            conn.close()
            return
        conn.send(getattr(worker, kind)(*args))


def _run_worker(conn, index, workers, stop, inbox, outbox, model, properties, symmetry) -> None:
    try:
        serve(_Worker(index, workers, model, properties, symmetry, stop, inbox, outbox), conn)
    except (EOFError, KeyboardInterrupt, BrokenPipeError):  # the coordinator went away
        pass


class ScalarShards:
    """What the coordinator needs to know of the scalar kernel's workers."""

    def __init__(self, model: SearchModel, properties: Sequence[Property], options: CheckOptions) -> None:
        self.model = model
        self.canonical = model.symmetry.canonical if options.symmetry else None  # before the fork: shared
        self.worker = _run_worker
        self.worker_args = (model, list(properties), options.symmetry)

    def seeds(self, workers: int) -> tuple[list, int]:
        """Per worker, its initial states (canonical, each once) as one block of candidates;
        and how many initial states there are."""
        init: list[int] = []
        for s in self.model.init_states():
            s = self.canonical(s) if self.canonical else s
            if s not in init:
                init.append(s)
        seed = [[([], [], [])] for _ in range(workers)]
        for s in init:
            block = seed[owner_of(s, workers)][0]
            block[0].append(s)
            block[1].append(-1)
            block[2].append(0)
        return seed, len(init)

    def path(self, entries: list[tuple]) -> Path:
        """The path of the workers' entries (state, parent, action), from the last stored state back."""
        return Path.replay(self.model, [state for state, _, _ in reversed(entries)], self.canonical)

    def note(self, states: int, generated: int, ask) -> str:
        return ""


class ParallelBfsEngine:
    """The search on ``workers`` forked processes; ``shards`` says which kernel's workers
    (``ScalarShards``, or ``bfs_vector_shard.VectorShards``)."""

    name = "bfs"

    def __init__(self, workers: int = 2) -> None:
        self.workers = max(2, workers)

    def check(
        self,
        model: SearchModel,
        properties: Sequence[Property],
        options: CheckOptions,
        observer: Observer | None = None,
        shards: Any = None,
    ) -> CheckResult:
        observer = observer or Observer()
        shards = shards or ScalarShards(model, properties, options)
        ctx = multiprocessing.get_context("fork")
        stop = ctx.Event()
        W = workers_that_fit(self.workers)
        conns, procs, peer = [], [], {}
        try:
            peer = {(a, b): ctx.Pipe(duplex=False) for a in range(W) for b in range(W) if a != b}  # a sends to b
            for w in range(W):
                mine, theirs = ctx.Pipe()
                conns.append(mine)
                inbox = {a: peer[(a, w)][0] for a in range(W) if a != w}
                outbox = {b: peer[(w, b)][1] for b in range(W) if b != w}
                p = ctx.Process(target=shards.worker, args=(theirs, w, W, stop, inbox, outbox, *shards.worker_args),
                                daemon=True)
                p.start()
                theirs.close()
                procs.append(p)
            _close(peer)  # the workers hold their own copies
            coordinator = _Coordinator(model, list(properties), options, observer, conns, procs, stop, shards)
            return coordinator.run()
        finally:
            _close(peer)
            _shut_down(conns, procs)


def _close(pipes: dict) -> None:
    for ends in pipes.values():
        for end in ends:
            end.close()


def _shut_down(conns, procs) -> None:
    """Ask every worker to quit; kill those that do not within seconds."""
    for c in conns:
        try:
            c.send(("quit",))
        except (BrokenPipeError, OSError):
            pass
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()


class _Coordinator:
    def __init__(self, model, properties, options, observer, conns, procs, stop, shards) -> None:
        self.model, self.properties, self.options, self.observer = model, properties, options, observer
        self.conns, self.procs, self.stop = conns, procs, stop
        self.workers = len(conns)
        self.shards = shards
        self.peak_before = peak_rss()  # the tables, built before the fork
        self.memory = FamilyMemory([os.getpid()] + [p.pid for p in procs], POLL)
        self.memory_stop = options.max_memory * MEMORY_HEADROOM if options.max_memory else None
        self.stop_reason = ""  # why the workers were told to stop

    def _all(self, messages, limits: Limits | None = None) -> list:
        """Send one message to each worker and wait for every answer; while waiting, pass a
        stop request (Ctrl-C, a limit) on to the workers, which check it every few thousand states."""
        for c, m in zip(self.conns, messages):
            c.send(m)
        answers = []
        for c in self.conns:
            while not c.poll(POLL):
                reached = self._limit_reached(limits)
                if reached and not self.stop.is_set():
                    self.stop_reason = reached
                    self.stop.set()
            answers.append(c.recv())
        return answers

    def _limit_reached(self, limits: Limits | None) -> str:
        """The memory of every process (measured even without a limit: the reported peak), time, Ctrl-C."""
        memory = self.memory.now()
        if self.memory_stop is not None and memory >= self.memory_stop:
            return "memory limit"
        return (limits.exceeded() if limits is not None else "") or self.observer.should_stop()

    def run(self) -> CheckResult:
        opts, W = self.options, self.workers
        started = time.monotonic()
        limits = Limits(replace(opts, max_memory=None), started)  # memory: the family's, in _limit_reached
        seed, generated = self.shards.seeds(W)
        found: dict[str, tuple[int, int]] = {}  # property -> (worker, local index)
        states, depth, stop = 0, 0, ""
        names = {p.name for p in self.properties}
        answers = self._all([("absorb", blocks) for blocks in seed])
        while True:
            for w, (_, hits) in enumerate(answers):
                for name, i in hits.items():
                    found.setdefault(name, (w, i))
            new = sum(n for n, _ in answers)
            if stop or new == 0:  # stopped: the level is partial (its states counted, not its depth)
                break
            depth += 1
            states += new
            self.observer.progress(Progress(states, new, depth, generated, time.monotonic() - started))
            if not opts.explore_all and set(found) >= names:
                break
            if opts.max_depth is not None and depth >= opts.max_depth:
                break
            stop = self.stop_reason or self._limit_reached(limits)
            if stop:
                break
            answers, generated_here, stop = self._level(limits)
            generated += generated_here
        complete = not stop
        exhausted = complete and (
            new == 0 or (opts.max_depth is not None and depth >= opts.max_depth)
        )
        finals = self._all([("finish", complete)] * W)  # (states, before symmetry or None, not expanded)
        self.memory.now()
        paths = {name: self._path(*where) for name, where in found.items()}
        stored = sum(n for n, _, _ in finals)
        note = self.shards.note(stored, generated, lambda msg: self._all([msg] * W))
        results = property_results(self.properties, paths, exhausted, note)
        full = [f for _, f, _ in finals]
        stats = Stats(
            states=stored,
            generated=generated,
            depth=depth,
            seconds=time.monotonic() - started,
            peak_memory=max(self.peak_before, self.memory.peak),
            queue=sum(q for _, _, q in finals),
            full_states=sum(full) if opts.symmetry and None not in full else None,
        )
        return CheckResult("bfs", complete, results, stats, exhausted, stop, opts.symmetry, workers=W, search_note=note,
                           processes=True)

    def _level(self, limits: Limits) -> tuple[list, int, str]:
        """One level on every worker, in rounds of expansion and exchange (the scalar workers
        expand a level in one): (their answers, generated, why the search stops or '').
        Each round tells the workers their share of the memory left (the vector workers size
        their chunks to it). Between a round's expansion and its exchange, the memory the
        exchange will need (what the workers say: exchanged candidates, the new states
        stored) is reserved: a level that would pass the memory limit is dropped, never
        exchanged."""
        generated, W = 0, self.workers
        while True:
            room = None if self.memory_stop is None else max(0, int(self.memory_stop - self.memory.now())) // W
            expanded = self._all([("expand", room)] * W, limits)
            generated += sum(e[0] for e in expanded)
            reserve = sum(e[1] for e in expanded)
            if self.memory_stop is not None and self.memory.now() + reserve >= self.memory_stop:
                self.stop_reason = self.stop_reason or "memory limit"
            keep = self.stop_reason != "memory limit"
            stopped = not keep or any(e[2] for e in expanded)
            last = stopped or all(e[3] for e in expanded)
            answers = self._all([("exchange", keep, last)] * W, limits)
            if last:
                return answers, generated, (self.stop_reason or "interrupted") if stopped else ""

    def _path(self, worker: int, index: int) -> Path:
        entries = []
        while True:
            self.conns[worker].send(("entry", index))
            entries.append(self.conns[worker].recv())
            parent = entries[-1][1]
            if parent < 0:
                break
            worker, index = parent % self.workers, parent // self.workers
        return self.shards.path(entries)
