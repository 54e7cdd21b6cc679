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
from typing import Sequence

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

    def expand(self) -> tuple[int, int, bool]:
        """Successors of this worker's frontier, kept by owner for the exchange:
        (generated, candidates, stopped)."""
        workers, me = self.workers, self.index
        self.buckets = buckets = [([], array("q"), array("I")) for _ in range(workers)]
        succ, canon, visited = self.model.successors, self.canonical, self.visited
        generated = 0
        end = len(self.states)
        stopped = False
        next_look = 0.0
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
                    break
        return generated, sum(len(b[0]) for b in buckets), stopped

    def exchange(self, keep: bool) -> tuple[int, dict[str, int]]:
        """Send every peer its candidates, absorb what they send: (new states, found); without
        ``keep`` (a memory stop) drop them all instead: exchanging needs room."""
        buckets, self.buckets = self.buckets, []
        if not keep:
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

    def serve(self, conn) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the coordinator decides when to stop
        while True:
            msg = conn.recv()
            kind = msg[0]
            if kind == "absorb":
                conn.send(self.absorb(msg[1]))
            elif kind == "expand":
                conn.send(self.expand())
            elif kind == "exchange":
                conn.send(self.exchange(msg[1]))
            elif kind == "entry":
                i = msg[1]
                conn.send((self.states[i], self.parents[i], self.actions[i]))
            elif kind == "finish":  # msg[1]: count the states before symmetry reduction (costly)
                orbit = self.model.symmetry.orbit_size if self.canonical is not None and msg[1] else None
                full = sum(orbit(s) for s in self.states) if orbit else None
                conn.send((len(self.states), full))
            elif kind == "quit":
                conn.close()
                return


def _run_worker(conn, index, workers, model, properties, symmetry, stop, inbox, outbox) -> None:
    try:
        _Worker(index, workers, model, properties, symmetry, stop, inbox, outbox).serve(conn)
    except (EOFError, KeyboardInterrupt, BrokenPipeError):  # the coordinator went away
        pass


class ParallelBfsEngine:
    name = "bfs"

    def __init__(self, workers: int = 2) -> None:
        self.workers = max(2, workers)

    def check(
        self,
        model: SearchModel,
        properties: Sequence[Property],
        options: CheckOptions,
        observer: Observer | None = None,
    ) -> CheckResult:
        observer = observer or Observer()
        canonical = model.symmetry.canonical if options.symmetry else None  # before the fork: shared
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
                p = ctx.Process(
                    target=_run_worker,
                    args=(theirs, w, W, model, list(properties), options.symmetry, stop, inbox, outbox),
                    daemon=True,
                )
                p.start()
                theirs.close()
                procs.append(p)
            _close(peer)  # the workers hold their own copies
            coordinator = _Coordinator(model, list(properties), options, observer, conns, procs, stop, canonical)
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
    def __init__(self, model, properties, options, observer, conns, procs, stop, canonical) -> None:
        self.model, self.properties, self.options, self.observer = model, properties, options, observer
        self.conns, self.procs, self.stop = conns, procs, stop
        self.workers = len(conns)
        self.canonical = canonical
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
        init = []
        for s in self.model.init_states():
            s = self.canonical(s) if self.canonical else s
            if s not in init:
                init.append(s)
        seed = [[([], [], [])] for _ in range(W)]
        for s in init:
            block = seed[owner_of(s, W)][0]
            block[0].append(s)
            block[1].append(-1)
            block[2].append(0)
        found: dict[str, tuple[int, int]] = {}  # property -> (worker, local index)
        generated, states, depth, stop = len(init), 0, 0, ""
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
        finals = self._all([("finish", complete)] * W)  # a stopped run skips the count before symmetry
        self.memory.now()
        paths = {name: self._path(*where) for name, where in found.items()}
        results = property_results(self.properties, paths, exhausted)
        stats = Stats(
            states=sum(n for n, _ in finals),
            generated=generated,
            depth=depth,
            seconds=time.monotonic() - started,
            peak_memory=max(self.peak_before, self.memory.peak),
            full_states=sum(f for _, f in finals) if self.canonical and complete else None,
        )
        return CheckResult("bfs", complete, results, stats, exhausted, stop, self.canonical is not None, workers=W)

    def _level(self, limits: Limits) -> tuple[list, int, str]:
        """One level on every worker: (their answers, generated, why the search stops or '').
        Between the expansion and the exchange, the memory the exchange will need (pickled
        and unpickled candidates, the new states stored) is reserved: a level that would
        pass the memory limit is dropped, never exchanged."""
        expanded = self._all([("expand",)] * self.workers, limits)
        generated = sum(g for g, _, _ in expanded)
        reserve = EXCHANGE_BYTES * sum(c for _, c, _ in expanded)
        if self.memory_stop is not None and self.memory.now() + reserve >= self.memory_stop:
            self.stop_reason = self.stop_reason or "memory limit"
        keep = self.stop_reason != "memory limit"
        answers = self._all([("exchange", keep)] * self.workers, limits)
        stopped = not keep or any(s for _, _, s in expanded)
        return answers, generated, (self.stop_reason or "interrupted") if stopped else ""

    def _path(self, worker: int, index: int):
        stored = []
        while True:
            self.conns[worker].send(("entry", index))
            state, parent, _ = self.conns[worker].recv()
            stored.append(state)
            if parent < 0:
                break
            worker, index = parent % self.workers, parent // self.workers
        stored.reverse()
        return Path.replay(self.model, stored, self.canonical)
