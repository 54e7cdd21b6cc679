"""The Spark engine's executor tasks on the vector kernel: a partition's states as one array.

The same tasks as ``spark_tasks`` (same records, same summaries, same choices),
for a search whose states are kernel keys (``model/kernel.py``) rather than scalar
packed ints. Where ``spark_tasks`` loops over states one by one, these take a
record's states as one ``(words, n)`` uint64 array: one ``kernel.expand`` call per
frontier record, batch canonical forms and orbit sizes, batch predicates, and
de-duplication by sorting (a lexsort by key, then parent: the first of each group
keeps the smallest parent).

Payloads carry arrays instead of lists (``("C", keys, parents)``,
``("V", keys, parents, summary)``, ``("G", n)``), every ``keys`` sorted by key; a
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

from .spark_tasks import CHUNK, Job, Record, Summary

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
def rows(keys: np.ndarray) -> np.ndarray:
    """One comparable value per key, ordered as the key integers: the word itself, or a record
    of the words, most significant first (NumPy sorts and searches those field by field)."""
    words = keys.shape[0]
    if words == 1:
        return keys[0]
    out = np.empty(keys.shape[1], dtype=[(f"w{w}", U64) for w in range(words - 1, -1, -1)])
    for w in range(words):
        out[f"w{w}"] = keys[w]
    return out


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
    """(partition, keys, parents) of a sorted level chunk re-partitioned on resume; each part stays sorted."""
    where = partitions_of(keys, partitions)
    for q in np.unique(where).tolist():
        mask = where == q
        yield q, keys[:, mask], parents[:, mask]


def smallest_parents(keys: np.ndarray, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys, sorted, each with the smallest of its parents."""
    if keys.shape[1] == 0:
        return keys, parents
    order = np.lexsort((*parents, *keys))  # the last row sorts first: the key's top word
    keys, parents = keys[:, order], parents[:, order]
    first = np.ones(keys.shape[1], dtype=bool)
    np.any(keys[:, 1:] != keys[:, :-1], axis=0, out=first[1:])
    return keys[:, first], parents[:, first]


def seed_records(keys: np.ndarray, partitions: int) -> list[Record]:
    """The initial states (canonical keys) as candidates with no parent."""
    keys, parents = smallest_parents(keys, np.full_like(keys, NO_PARENT))
    return [(q, ("C", ks, ps)) for q, ks, ps in split_by_partition(keys, parents, partitions)]


# -- the tasks ------------------------------------------------------------------------------
def expand(job: Job, index: int, records: Iterator[Record]) -> Iterator[Record]:
    """Successors of one partition of the frontier, canonical, de-duplicated, bucketed by partition."""
    kernel = _kit(job).kernel
    found_keys, found_parents = [], []
    generated = 0
    for _, payload in records:
        frontier = payload[1]
        for start in range(0, frontier.shape[1], CHUNK):
            states = frontier[:, start : start + CHUNK]
            succ, parent_rows, _ = kernel.expand(states)
            generated += succ.shape[1]
            if job.symmetry:
                succ = kernel.canonical(succ)
            succ, parents = smallest_parents(succ, states[:, parent_rows])
            found_keys.append(succ)
            found_parents.append(parents)
    if found_keys:
        keys, parents = smallest_parents(np.concatenate(found_keys, axis=1), np.concatenate(found_parents, axis=1))
        where = partitions_of(keys, job.partitions).astype(np.int64)
        by_partition = np.argsort(where, kind="stable")  # stable: each bucket stays sorted by key
        ends = np.cumsum(np.bincount(where, minlength=job.partitions))
        for q in range(job.partitions):
            mine = by_partition[(ends[q - 1] if q else 0) : ends[q]]
            for i in range(0, len(mine), CHUNK):
                part = mine[i : i + CHUNK]
                yield q, ("C", keys[:, part], parents[:, part])
    yield index, ("G", generated)


def anti_join(job: Job, index: int, records: Iterator[Record]) -> Iterator[Record]:
    """One partition of the next level: candidates minus every visited state, properties checked."""
    kit = _kit(job)
    kernel = kit.kernel
    visited, cand_keys, cand_parents = [], [], []
    generated = 0
    for _, payload in records:
        tag = payload[0]
        if tag == "V":
            if payload[1].shape[1]:
                visited.append(rows(payload[1]))
        elif tag == "C":
            cand_keys.append(payload[1])
            cand_parents.append(payload[2])
        else:
            generated += payload[1]
    words = kernel.words
    if cand_keys:
        keys, parents = smallest_parents(np.concatenate(cand_keys, axis=1), np.concatenate(cand_parents, axis=1))
    else:
        keys = parents = np.empty((words, 0), dtype=U64)
    fresh = np.ones(keys.shape[1], dtype=bool)
    mine = rows(keys)
    if len(mine):
        for run in sorted_runs(visited):
            _drop_seen(run, mine, fresh)
    keys, parents = keys[:, fresh], parents[:, fresh]
    del visited, mine
    found: dict[str, int] = {}
    if keys.shape[1] and job.pending:
        comps = kernel.components(keys)
        for name in job.pending:
            pred, always = kit.predicates[name]
            hits = np.flatnonzero(pred(comps) != always)
            if len(hits):  # sorted: the first hit is the smallest
                found[name] = VectorKernel.int_of_key(keys[:, hits[0]])
    full = int(kernel.orbit_sizes(keys).sum()) if job.symmetry and keys.shape[1] else 0
    summary = Summary(keys.shape[1], generated, found, full)
    for i in range(0, max(keys.shape[1], 1), CHUNK):
        yield index, ("V", keys[:, i : i + CHUNK], parents[:, i : i + CHUNK], summary if i == 0 else None)


def sorted_runs(chunks: list[np.ndarray]) -> Iterator[np.ndarray]:
    """Consecutive sorted chunks joined while they stay sorted: a partition's share of a level
    arrives as slices of one sorted array, so a search costs one lookup a level, not a chunk."""
    run: list[np.ndarray] = []
    for chunk in chunks:
        if run and not _above(chunk[0], run[-1][-1]):
            yield np.concatenate(run) if len(run) > 1 else run[0]
            run = []
        run.append(chunk)
    if run:
        yield np.concatenate(run) if len(run) > 1 else run[0]


def _above(a, b) -> bool:
    """a > b for ``rows`` values: words, or records of words (compared most significant first)."""
    return tuple(a) > tuple(b) if isinstance(a, np.void) else bool(a > b)


def _drop_seen(run: np.ndarray, mine: np.ndarray, fresh: np.ndarray) -> None:
    """Clear ``fresh`` where the sorted candidates ``mine`` are in the sorted ``run``, searching
    the smaller in the larger (late levels meet few candidates; early ones are small)."""
    if len(run) >= len(mine):
        pos = np.minimum(np.searchsorted(run, mine), len(run) - 1)
        fresh &= run[pos] != mine
    else:
        pos = np.minimum(np.searchsorted(mine, run), len(mine) - 1)
        fresh[pos[mine[pos] == run]] = False


def find_parents(words: int, wanted: frozenset[int], records: Iterable[Record]) -> Iterator[tuple[int, int]]:
    """(state, parent) key integers for every wanted state stored in this partition of a level."""
    ordered = sorted(wanted)
    targets = rows(keys_of_ints(ordered, words))
    for _, payload in records:
        keys = payload[1]
        if not keys.shape[1]:
            continue
        stored = rows(keys)
        pos = np.minimum(np.searchsorted(stored, targets), len(stored) - 1)
        for i in np.flatnonzero(stored[pos] == targets):
            yield ordered[i], VectorKernel.int_of_key(payload[2][:, pos[i]])
