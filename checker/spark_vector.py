"""The Spark engine's executor tasks on the vector kernel: a partition's states as one array.

The same tasks as ``spark_tasks`` (same records, same summaries, same choices),
for a search whose states are kernel keys (``model/kernel.py``) rather than scalar
packed ints. Where ``spark_tasks`` loops over states one by one, these take a
record's states as one ``(words, n)`` uint64 array: one ``kernel.expand`` call per
frontier record, batch canonical forms and orbit sizes, batch predicates, and
de-duplication by sorting (by key, then parent: each key keeps its first parent).

"Sorted" and "first" here are in the levels' order (``spark_order``): by a 64-bit
order value, then by key; for keys of one word, key order, the ``spark_tasks`` order.
Payloads carry arrays instead of lists (``("C", keys, parents)``,
``("V", keys, parents, summary)``, ``("G", n)``), every ``keys`` in that order; a
key's integer (``VectorKernel.int_of_key``, words low first) is what the driver
sees in summaries and parent walks. A state's partition is ``fingerprint(key int) %
partitions`` as everywhere in the engine; ``partitions_of`` computes it for a whole
array (a test holds it to ``fingerprint``). The parent of an initial state is
``NO_PARENT`` (all ones), never read: parent walks stop at depth 2.

Imported only on executors and drivers that run the vector kernel: NumPy is
imported here, never by ``spark_tasks``.
"""

from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple

import numpy as np

from isrcheck.model import ModelConfig
from isrcheck.model.machine import model_for, properties_for
from isrcheck.properties import verdict
from isrcheck.model.kernel import BatchPredicate, VectorKernel, kernel_for, keys_of_ints

from . import spark_visited
from .spark_order import drop_seen, locate, order_of, smallest_parents, sort_key, sorted_runs
from .spark_tasks import CHUNK, Job, Record, Summary, decided_here

U64 = np.uint64
_M64 = (1 << 64) - 1
NO_PARENT = _M64


class _VectorKit(NamedTuple):
    kernel: VectorKernel
    predicates: dict[str, tuple[BatchPredicate, bool]]  # name -> (holds, expected always)


_KITS: dict[tuple[str, ModelConfig], _VectorKit] = {}  # per Python worker, reused across tasks


def _kit(job: Job) -> _VectorKit:
    kit = _KITS.get((job.protocol, job.config))
    if kit is None:
        kernel = kernel_for(model_for(job.protocol, job.config))
        kit = _VectorKit(kernel, {})
        _KITS[(job.protocol, job.config)] = kit
    catalog = {name: p for name, p in properties_for(job.protocol).items() if p.applies(job.config)}
    for name in job.pending:
        if name not in kit.predicates:
            kit.predicates[name] = (kit.kernel.predicate(catalog[name]), verdict.always(catalog[name]))
    return kit


# -- keys -------------------------------------------------------------------------------------
def partitions_of(keys: np.ndarray, partitions: int) -> np.ndarray:
    """``fingerprint(key int) % partitions`` for every key: the key itself when it fits one
    word, else the fold of ``model.replication.fingerprint`` over its significant words."""
    fp = keys[0]
    if keys.shape[0] > 1:
        h = np.full(keys.shape[1], 0x9E3779B97F4A7C15, dtype=U64)
        for w in range(keys.shape[0]):
            g = (h ^ keys[w]) * U64(0xBF58476D1CE4E5B9)
            g ^= g >> U64(31)
            h = np.where(np.any(keys[w:] != 0, axis=0), g, h)  # the scalar fold stops at the top word
        fp = np.where(np.any(keys[1:] != 0, axis=0), h, keys[0])
    return fp % U64(partitions)


def split_by_partition(keys: np.ndarray, parents: np.ndarray, partitions: int) -> Iterator[tuple]:
    """(partition, keys, parents) of each partition that has some; each part keeps the keys'
    order (a stable counting sort on 16 bits where partitions fit them)."""
    where = partitions_of(keys, partitions)
    if partitions <= 1 << 16:  # NumPy's stable sort of 16-bit values is a counting sort
        where = where.astype(np.uint16)
    by_partition = np.argsort(where, kind="stable")
    ends = np.cumsum(np.bincount(where.astype(np.int64), minlength=partitions))
    for q in range(partitions):
        mine = by_partition[(ends[q - 1] if q else 0) : ends[q]]
        if len(mine):
            yield q, keys.take(mine, axis=1), parents.take(mine, axis=1)


def seed_records(keys: np.ndarray, partitions: int) -> list[Record]:
    """The initial states (canonical keys) as candidates with no parent."""
    keys, parents = smallest_parents(keys, np.full_like(keys, NO_PARENT))
    return [(q, ("C", ks, ps)) for q, ks, ps in split_by_partition(keys, parents, partitions)]


# -- the tasks ------------------------------------------------------------------------------
def expand(job: Job, index: int, records: Iterator[Record]) -> Iterator[Record]:
    """Successors of one partition of the frontier, canonical, bucketed by partition; de-duplicated
    within each chunk only: the anti-join de-duplicates what reaches it from every chunk, and a
    second pass over the whole partition's successors here cost more than the shuffle it saved."""
    kernel = _kit(job).kernel
    generated = 0
    for _, payload in records:
        if decided_here(job, payload):
            break
        frontier = payload[1]
        for start in range(0, frontier.shape[1], CHUNK):
            states = frontier[:, start : start + CHUNK]
            succ, parent_rows, _ = kernel.expand(states)
            generated += succ.shape[1]
            if job.symmetry:
                succ = kernel.canonical(succ)
            keys, parents = smallest_parents(succ, states[:, parent_rows])
            for q, ks, ps in split_by_partition(keys, parents, job.partitions):
                yield q, ("C", ks, ps)
    yield index, ("G", generated)


def anti_join(job: Job, index: int, records: Iterator[Record]) -> Iterator[Record]:
    """One partition of the next level: candidates minus every visited state, properties checked.
    The visited states come with the candidates ("V" records of the earlier levels), or from
    the partition's files (``job.visited``), where its new keys are then written too."""
    kit = _kit(job)
    kernel = kit.kernel
    visited, cand_keys, cand_parents = [], [], []
    generated = 0
    for _, payload in records:
        tag = payload[0]
        if tag == "V":
            if payload[1].shape[1]:
                visited.append(payload[1])
        elif tag == "C":
            cand_keys.append(payload[1])
            cand_parents.append(payload[2])
        else:
            generated += payload[1]
    words = kernel.words
    if cand_keys:
        keys, parents = smallest_parents(np.concatenate(cand_keys, axis=1), np.concatenate(cand_parents, axis=1),
                                         runs=True)
    else:
        keys = parents = np.empty((words, 0), dtype=U64)
    fresh = np.ones(keys.shape[1], dtype=bool)
    if keys.shape[1]:
        mine = (keys, order_of(keys))
        for run in spark_visited.runs(job.visited, index, job.depth) if job.visited else sorted_runs(visited):
            drop_seen(run, mine, fresh)
        del mine
    keys, parents = keys[:, fresh], parents[:, fresh]
    del visited
    if job.visited:
        spark_visited.save(job.visited, index, job.depth, keys)
    found: dict[str, int] = {}
    if keys.shape[1] and job.pending:
        values = kernel.evaluate(keys, [kit.predicates[name][0] for name in job.pending])
        for name, holds in zip(job.pending, values):
            hits = np.flatnonzero(holds != kit.predicates[name][1])
            if len(hits):  # in the levels' order: the first hit is the first in that order
                found[name] = VectorKernel.int_of_key(keys[:, hits[0]])
    full = int(kernel.orbit_sizes(keys).sum()) if job.symmetry and keys.shape[1] else 0
    summary = Summary(keys.shape[1], generated, found, full)
    for i in range(0, max(keys.shape[1], 1), CHUNK):
        yield index, ("V", keys[:, i : i + CHUNK], parents[:, i : i + CHUNK], summary if i == 0 else None)


def find_parents(words: int, wanted: frozenset[int], records: Iterable[Record]) -> Iterator[tuple[int, int]]:
    """(state, parent) key integers for every wanted state stored in this partition of a level."""
    ordered = sorted(wanted)
    targets = keys_of_ints(ordered, words)
    target_order = order_of(targets)
    for _, payload in records:
        keys = payload[1]
        if not keys.shape[1]:
            continue
        pos, found = locate(keys, order_of(keys), targets, target_order)
        for i in np.flatnonzero(found):
            yield ordered[i], VectorKernel.int_of_key(payload[2][:, pos[i]])


def before(words: int, a: int, b: int) -> bool:
    """Whether state a comes before state b in the levels' order (the driver's choice of the
    first deciding state among partitions must be the order each partition chose by)."""
    keys = keys_of_ints([a, b], words)
    order = order_of(keys)
    return sort_key(keys[:, 0], order[0]) < sort_key(keys[:, 1], order[1])
