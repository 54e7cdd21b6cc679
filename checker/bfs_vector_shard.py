"""The vector search split across processes: each worker owns the states whose fingerprint
falls to it (``bfs_parallel.py`` coordinates them, as it does the scalar kernel's workers).

Why processes: two threads of one search share the interpreter lock, and the phases made
of many short NumPy calls (the plan's expansion, canonical forms, properties) wait for it
(bench/README, "What a second core gives"). A worker here is a whole one-thread
``VectorSearch`` over its shard of the visited set: it expands its part of the frontier
chunk by chunk, keeps each chunk's distinct successors it owns (filtered against its
visited set) and holds the rest, sorted by fingerprint, for their owners; at the exchange
it sends those, filters what it receives the same way, and stores its part of the level,
whose states it checks against the properties then, each once. A state's parent is a global id: the parent's local index (its
position among the worker's stored states) times the workers, plus the worker. Levels
are the same sets as in one process, so counts, depths, verdicts and shortest trace
lengths agree; which parent a state keeps may differ (the search keeps the least id).
"""

from __future__ import annotations

import bisect
import threading
from typing import Any

import numpy as np

from isrcheck.properties import verdict

from .bfs_parallel import serve
from .bfs_vector import VectorSearch
from .engine import one_malloc_arena, pad_heap_top
from .result import Path
from .vector_spill import smallest_gap
from .vector_store import ChunkedFrontier, collision_note
from .vector_traces import replayed
from .vector_arrays import LevelParts, New
from .vector_chunk import distinct, unvisited

U64 = np.uint64
ROUND = 4  # chunks a worker expands between exchanges: bounds what it holds for its peers


def owners(fp: np.ndarray, workers: int, exact: bool) -> np.ndarray:
    """Each fingerprint's worker. Hashed fingerprints are uniform: a worker owns a range of
    them, so the smallest gap among all is found from each worker's and its neighbours'
    (the collision note's estimate). One-word keys are the states themselves, far from
    uniform: a multiplicative mix's high bits."""
    if not exact:
        return ((fp >> U64(32)) * U64(workers)) >> U64(32)
    return ((fp * U64(0x9E3779B97F4A7C15)) >> U64(40)) % U64(workers)


class ShardSearch(VectorSearch):
    """One worker's part of a vector search, answering ``bfs_parallel``'s messages."""

    # Its level's states are checked once merged: the children of one state go to their
    # owners, so a state two of them reach is often found by both workers and sent to its
    # owner twice (rf4-min-isr2 on two processes: 6% less time than checking each part, measured)
    checked_when_stored = True

    def __init__(self, index: int, workers: int, model: Any, kernel: Any, properties, pending, options, stop,
                 inbox, outbox) -> None:
        super().__init__(model, kernel, properties, options, workers=1)
        self.me, self.W = index, workers
        self.inbox, self.outbox = inbox, outbox  # peer -> receiving / sending pipe end
        self.stop_event = stop
        self.outgoing: list[list[tuple]] = []  # per peer, the level's distinct successors it owns
        self.parts: LevelParts | None = None
        self.starts: list[int] = []  # per stored level, the local index of its first state
        self.level_start = 0  # the local index of the frontier's first state
        self.next_start = 0  # the frontier's next chunk
        self.expanded = 0  # states expanded so far (the frontier's chunks are expanded in order)
        self.pending = pending  # (name, batch predicate, expected value): traced before the fork

    # ---- the search's hooks ---------------------------------------------------------------------
    def _priorities(self, parents: np.ndarray, actions: np.ndarray) -> np.ndarray:
        ids = (parents.astype(np.int64) + self.level_start) * self.W + self.me
        return ids * len(self.rank) + self.rank[actions]

    def _new_states(self, successors: list[np.ndarray]) -> New:
        """Of a chunk's distinct successors, this worker's (filtered as one process does);
        every other worker's held for the exchange."""
        found = distinct(self.kernel, self.symmetry, successors, self.visited_set.compiled)
        fp, prio, orbits, keys, index = found
        found.clear()
        owner = owners(fp, self.W, self.kernel.exact)
        shares = [np.flatnonzero(owner == w) for w in range(self.W)]
        del owner
        for w, rows in enumerate(shares):  # unvisited's list: keys gathered (None when exact), no index
            picked = [fp.take(rows), prio.take(rows), None if orbits is None else orbits.take(rows),
                      None if keys is None else keys.take(index.take(rows), axis=1), None]
            if w == self.me:
                mine = picked
            elif len(rows):
                self.outgoing[w].append(picked)
        del fp, prio, orbits, keys, index, shares, picked
        return unvisited(self.kernel, self.visited_set, self._chunk_pending, mine)

    # ---- the messages ---------------------------------------------------------------------------
    def absorb(self, keys: np.ndarray) -> tuple[int, dict[str, int]]:
        """Store this worker's initial states (canonical, each once)."""
        self.outgoing = [[] for _ in range(self.W)]
        parts = LevelParts(self.kernel.exact)
        parts.add(self._new_states([keys, np.arange(keys.shape[1], dtype=np.int64) * len(self.rank)]))
        return self._stored(parts)

    def expand(self, room: int | None) -> tuple[int, int, bool, bool]:
        """This round's chunks of this worker's frontier: (generated, bytes the exchange will
        take, stopped, the level's last round). ``room``: this worker's share of the memory
        left, which a level's chunks are sized to (as one process sizes them to all of it)."""
        if self.parts is None:  # the level's first round
            self.level_start = self.states - self.frontier.shape[1]
            self.parts = LevelParts(self.kernel.exact)
            self.next_start = 0
            self._fit_chunk(room)
            self.visited_set.use_compiled(self.frontier.shape[1], room)
            if self.frontier.shape[1]:
                self.frontier = ChunkedFrontier(self.frontier, self.frontier_rows, self.chunk)
                self.frontier_rows = None
        self.outgoing = [[] for _ in range(self.W)]
        n = self.frontier.shape[1]
        generated, stopped = 0, False
        while self.next_start < n and not stopped:
            made, part = self._expand_chunk(self.next_start)
            self.next_start += self.chunk
            generated += made
            self.parts.add(part)
            stopped = self.stop_event.is_set()
            if not self.next_start % (ROUND * self.chunk):
                break
        self.expanded = self.level_start + min(self.next_start, n)
        last = self.next_start >= n or stopped
        # the candidates sent (pickled, sent, unpickled: three copies at most at once), and after
        # the last round the level stored: a copy of its new states, the visited set's growth
        sent = 3 * sum(a.nbytes for blocks in self.outgoing for b in blocks for a in b if a is not None)
        stored = self.parts.held_bytes + self.visited_set.growth(self.parts.entries) if last else 0
        return generated, sent + stored, stopped, last

    def exchange(self, keep: bool, last: bool) -> tuple[int, dict[str, int]]:
        """Send every peer its candidates, filter what they send; after the level's last round,
        store it: (new states, found)."""
        outgoing, self.outgoing = self.outgoing, []
        if not keep:  # the level's successors are dropped: none of it counts as expanded
            self.parts = None
            self.expanded = self.level_start
            return 0, {}
        senders = [threading.Thread(target=self.outbox[peer].send, args=(outgoing[peer],))
                   for peer in range(self.W) if peer != self.me]
        for t in senders:  # send while receiving: neither side blocks on a full pipe
            t.start()
        for peer in range(self.W):
            if peer != self.me:
                for block in self.inbox[peer].recv():
                    self.parts.add(unvisited(self.kernel, self.visited_set, self._chunk_pending, block))
        for t in senders:
            t.join()
        del outgoing
        if not last:
            return 0, {}
        parts, self.parts = self.parts, None
        return self._stored(parts)

    def _stored(self, parts: LevelParts) -> tuple[int, dict[str, int]]:
        """Store the level's new states (none: an empty level, so that levels stay aligned)."""
        found_before = set(self.found)
        new = parts.merged() if parts.parts else None
        self.starts.append(self.states)
        if new is None or not len(new.fp):
            if not self.keys:  # the initial level's keys: traces replay from them
                self.keys.append(np.empty((self.kernel.words, 0), dtype=U64))
            self.levels.append(np.empty(0, np.uint32), np.empty(0, self.kernel.action_dtype))
            self.frontier = np.empty((self.kernel.words, 0), dtype=U64)
            self.frontier_rows = np.empty(0, dtype=np.uint32)
            return 0, {}
        self._store(new)
        found = {name: self.starts[depth] + row for name, (depth, row) in self.found.items()
                 if name not in found_before}
        return len(new.fp), found

    def entry(self, i: int) -> tuple[int | None, int, int]:
        """(the key of an initial state, else None; its parent's global id, -1 for an initial
        state; its action) of local index ``i``."""
        depth = bisect.bisect_right(self.starts, i) - 1
        row = i - self.starts[depth]
        action = int(self.actions[depth][row])
        if depth == 0:
            return self.kernel.int_of_key(self.keys[0][:, row]), -1, action
        return None, int(self.parents[depth][row]), action

    def gap(self) -> tuple[int, int, int]:
        """The smallest gap among this worker's fingerprints, the least and the greatest (-1: none)."""
        fp = self.visited_set.values
        return (smallest_gap(fp), int(fp[0]), int(fp[-1])) if len(fp) else (0, -1, -1)

    def finish(self, complete: bool) -> tuple[int, int | None, int]:
        """States stored, before symmetry reduction (summed level by level: known when stopped
        too), and those not expanded yet."""
        return self.states, self.full_states if self.symmetry else None, self.states - self.expanded


def run_shard(conn, index, workers, stop, inbox, outbox, model, kernel, properties, pending, options) -> None:
    one_malloc_arena()  # the exchange's sending threads: their arrays freed into the main arena
    pad_heap_top()
    shard = None
    try:
        shard = ShardSearch(index, workers, model, kernel, properties, pending, options, stop, inbox, outbox)
        serve(shard, conn)
    except (EOFError, KeyboardInterrupt, BrokenPipeError):  # the coordinator went away
        pass
    finally:
        if shard is not None and shard.levels.folder is not None:  # a forked worker runs no finalizers
            shard.levels.folder.cleanup()


class VectorShards:
    """What the coordinator (``bfs_parallel.py``) needs to know of the vector kernel's workers."""

    def __init__(self, model: Any, kernel: Any, properties, options) -> None:
        self.model, self.kernel, self.symmetry = model, kernel, options.symmetry
        if self.symmetry:
            kernel.symmetry()  # its tables built before the fork: shared
        self.worker = run_shard
        pending = [(p.name, kernel.predicate(p), verdict.always(p)) for p in properties]
        self.worker_args = (model, kernel, list(properties), pending, options)

    def seeds(self, workers: int) -> tuple[list, int]:
        """Per worker, the keys of the initial states it owns (canonical: a state's owner is its
        canonical form's; a worker keeps each once); how many initial states there are."""
        kernel = self.kernel
        keys = kernel.initial_keys()
        if self.symmetry:
            keys = kernel.canonical(keys)
        owner = owners(kernel.fingerprints(keys), workers, kernel.exact)
        return [keys[:, owner == w] for w in range(workers)], keys.shape[1]

    def path(self, entries: list[tuple]) -> Path:
        """The path of the workers' entries (initial key or None, parent, action), from the
        last stored state back: the actions replayed from the initial key."""
        root = entries[-1][0]
        actions = [action for _, _, action in reversed(entries[:-1])]
        return replayed(self.kernel, self.model, self.symmetry, root, actions)

    def note(self, states: int, generated: int, ask) -> str:
        """TLC's collision estimates (``VisitedSet.collision_note``) over every worker's fingerprints."""
        if self.kernel.exact:
            return ""
        gaps = [g for g in ask(("gap",)) if g[1] >= 0]
        least = [g for g, _, _ in gaps if g]
        least += [b[1] - a[2] for a, b in zip(gaps, gaps[1:])]  # workers own ranges, in order
        return collision_note(states, generated, min(least, default=0))
