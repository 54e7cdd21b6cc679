"""Breadth-first search on several cores: the frontier and the visited set split by owner.

Each worker process owns the states whose fingerprint falls to it. In a level every
worker expands its part of the frontier (successors, canonicalisation), keeps what it
owns and sends the rest straight to their owners over worker-to-worker pipes; then it
removes what it has seen from what it owns, stores the new states with (owner, index)
parent pointers and checks the properties on them. The coordinator only starts
levels and collects counts. Levels are
the same sets as in one process, so distinct counts, depths, verdicts and shortest
trace lengths agree with the single-process engine (an early stop happens at the
end of a level here, so partial counts of early-stopped runs differ).

Workers are forked, so they share the model's tables without pickling them.
Checkpoints stay with the single-process engine.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from array import array
from typing import Sequence

from isrcheck.properties import Property, verdict

from .engine import MEMORY_HEADROOM, CheckOptions, Observer, Progress, SearchModel, peak_rss
from .result import CheckResult, Path, Stats, property_results

CHECK_EVERY = 1024
_M64 = (1 << 64) - 1


def owner_of(state: int, workers: int) -> int:
    """A stable owner for a state: a multiplicative mix of its folded bits (never ``hash()``)."""
    x = (state ^ (state >> 64)) & _M64
    return (((x * 0x9E3779B97F4A7C15) & _M64) >> 32) % workers


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

    def expand(self) -> tuple[list, int, bool]:
        """Successors of this worker's frontier, bucketed by owner; (buckets, generated, stopped)."""
        workers, me = self.workers, self.index
        buckets = [([], array("q"), array("I")) for _ in range(workers)]
        succ, canon, visited = self.model.successors, self.canonical, self.visited
        generated = 0
        end = len(self.states)
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
            if not ((i - self.frontier_start + 1) & (CHECK_EVERY - 1)) and self.stop.is_set():
                return buckets, generated, True
        return buckets, generated, False

    def level(self) -> tuple[int, dict[str, int], int, bool]:
        """Expand, exchange with the peers, absorb: (new states, found, generated, stopped)."""
        buckets, generated, stopped = self.expand()
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
        new, found = self.absorb(blocks)
        return new, found, generated, stopped

    def serve(self, conn) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the coordinator decides when to stop
        while True:
            msg = conn.recv()
            kind = msg[0]
            if kind == "absorb":
                conn.send(self.absorb(msg[1]))
            elif kind == "level":
                conn.send(self.level())
            elif kind == "entry":
                i = msg[1]
                conn.send((self.states[i], self.parents[i], self.actions[i]))
            elif kind == "finish":
                orbit = self.model.symmetry.orbit_size if self.canonical is not None else None
                full = sum(orbit(s) for s in self.states) if orbit else None
                conn.send((len(self.states), full, peak_rss()))
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
        ctx = multiprocessing.get_context("fork")
        stop = ctx.Event()
        W = self.workers
        peer = {(a, b): ctx.Pipe(duplex=False) for a in range(W) for b in range(W) if a != b}  # a sends to b
        conns, procs = [], []
        for w in range(W):
            mine, theirs = ctx.Pipe()
            inbox = {a: peer[(a, w)][0] for a in range(W) if a != w}
            outbox = {b: peer[(w, b)][1] for b in range(W) if b != w}
            p = ctx.Process(
                target=_run_worker,
                args=(theirs, w, W, model, list(properties), options.symmetry, stop, inbox, outbox),
                daemon=True,
            )
            p.start()
            theirs.close()
            conns.append(mine)
            procs.append(p)
        try:
            return _Coordinator(model, list(properties), options, observer, conns, procs, stop).run()
        finally:
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
    def __init__(self, model, properties, options, observer, conns, procs, stop) -> None:
        self.model, self.properties, self.options, self.observer = model, properties, options, observer
        self.conns, self.procs, self.stop = conns, procs, stop
        self.workers = len(conns)
        self.canonical = model.symmetry.canonical if options.symmetry else None

    def _all(self, messages, deadline: float | None = None) -> list:
        """Send one message to each worker and wait for every answer; while waiting, pass a
        stop request (Ctrl-C, a limit) on to the workers, which check it every few thousand states."""
        for c, m in zip(self.conns, messages):
            c.send(m)
        answers = []
        for c in self.conns:
            while not c.poll(0.2):
                if not self.stop.is_set() and self._limit_reached(deadline):
                    self.stop.set()
            answers.append(c.recv())
        return answers

    def _memory(self) -> int:
        total = 0
        for pid in [os.getpid()] + [p.pid for p in self.procs]:
            try:
                with open(f"/proc/{pid}/statm", "rb") as f:
                    total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except OSError:
                pass
        return total

    def _limit_reached(self, deadline: float | None) -> str:
        if deadline is not None and time.monotonic() >= deadline:
            return "time limit"
        if self.options.max_memory and self._memory() >= self.options.max_memory * MEMORY_HEADROOM:
            return "memory limit"
        return self.observer.should_stop()

    def run(self) -> CheckResult:
        opts, W = self.options, self.workers
        started = time.monotonic()
        deadline = started + opts.time_limit if opts.time_limit else None
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
            new = sum(n for n, _ in answers)
            if new == 0:
                break
            depth += 1
            states += new
            for w, (_, hits) in enumerate(answers):
                for name, i in hits.items():
                    found.setdefault(name, (w, i))
            self.observer.progress(Progress(states, new, depth, generated, time.monotonic() - started))
            if not opts.explore_all and set(found) >= names:
                break
            if opts.max_depth is not None and depth >= opts.max_depth:
                break
            stop = self._limit_reached(deadline)
            if stop:
                break
            levels = self._all([("level",)] * W, deadline)
            generated += sum(g for _, _, g, _ in levels)
            answers = [(n, hits) for n, hits, _, _ in levels]
            if any(stopped for _, _, _, stopped in levels):
                stop = self._limit_reached(deadline) or "interrupted"
                for w, (_, hits) in enumerate(answers):
                    for name, i in hits.items():
                        found.setdefault(name, (w, i))
                break
        complete = not stop
        exhausted = complete and (
            new == 0 or (opts.max_depth is not None and depth >= opts.max_depth)
        )
        finals = self._all([("finish",)] * W)
        paths = {name: self._path(*where) for name, where in found.items()}
        results = property_results(self.properties, paths, exhausted)
        stats = Stats(
            states=sum(n for n, _, _ in finals),
            generated=generated,
            depth=depth,
            seconds=time.monotonic() - started,
            peak_memory=peak_rss() + sum(m for _, _, m in finals),
            full_states=sum(f for _, f, _ in finals) if self.canonical else None,
        )
        return CheckResult("bfs", complete, results, stats, exhausted, stop, self.canonical is not None, workers=W)

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
