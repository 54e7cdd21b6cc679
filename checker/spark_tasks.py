"""What the Spark engine runs on executors: expand a frontier, remove visited states.

Everything here is plain Python over plain records, pickled to executors by
reference (this module must be importable there; the engine ships it in a zip).
Nothing here imports pyspark, so it can be tested without a JVM.

Records are ``(partition, payload)`` pairs; the partition of a state is
``fingerprint(state) % partitions`` (stable in every process, never ``hash()``).
Payloads are tuples tagged by their first item:

* ``("V", keys, parents_blob, summary)``: a chunk of one BFS level in one partition:
  the level's new states (exact canonical packed ints, sorted), their parents'
  states pickled into one bytes object (so the visited set can be read back
  without materialising the parents), and, on the first chunk of each partition,
  the level's summary for the driver. The levels together are the visited set.
* ``("C", keys, parents)``: candidate successors bound for a partition.
* ``("G", n)``: how many successors a partition's expansion generated.

Parents are chosen deterministically (the smallest parent state among those
that reach a state), and so is each property's reported state (the smallest
violating state of the first level that has one), so the result does not depend
on the number of partitions, on task order or on retries after a lost executor.

Where the vector kernel runs (``Job.vector``), states are its keys, "smallest" means first
in the order of ``spark_order`` (key order for one-word keys), and the engine runs
``spark_vector``'s tasks instead, which take a partition's states as one array.
"""

from __future__ import annotations

import pickle
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, NamedTuple

from isrcheck.model import ModelConfig, fingerprint
from isrcheck.model.machine import model_for, properties_for
from isrcheck.properties import verdict

NO_PARENT = -1  # the parent of an initial state (packed states are never negative)
CHUNK = 1 << 16  # states per record: keeps every record far below Spark's block limits

Record = tuple[int, tuple]


class Summary(NamedTuple):
    """What one partition reports about the level it just computed."""

    new: int  # distinct states new at this level in this partition
    generated: int  # successors computed while expanding the previous level
    found: dict[str, int]  # property name -> smallest new state that decides it
    full_states: int  # sum of orbit sizes of the new states (symmetry on), else 0


@dataclass(frozen=True)
class Job:
    """The small, picklable description of a search that every task receives."""

    protocol: str  # the model's protocol, by name: executors build the model from it and the configuration
    config: ModelConfig
    symmetry: bool
    partitions: int
    pending: tuple[str, ...] = ()  # properties not yet decided, checked on new states
    vector: bool = False  # states are vector kernel keys: the tasks of ``spark_vector`` run
    visited: str = ""  # vector: the folder of the visited set's files (``spark_visited``); "": in the union
    depth: int = 0  # the level an anti-join computes (its files: the levels before it)
    explore_all: bool = False  # the search goes on after every property is decided (--continue)


class _Kit(NamedTuple):
    successors: Callable[[int], list]
    canonical: Callable[[int], int] | None
    orbit_size: Callable[[int], int] | None
    predicates: dict[str, tuple[Callable[[int], bool], bool]]


_KITS: dict[tuple[str, ModelConfig, bool], _Kit] = {}  # per Python worker, reused across tasks


def _kit(job: Job) -> _Kit:
    key = (job.protocol, job.config, job.symmetry)
    kit = _KITS.get(key)
    if kit is None:
        model = model_for(job.protocol, job.config)
        sym = model.symmetry if job.symmetry else None
        predicates = {
            name: (prop.compile(model), verdict.always(prop))
            for name, prop in properties_for(job.protocol).items()
            if prop.applies(job.config)
        }
        kit = _Kit(
            model.successors,
            sym.canonical if sym else None,
            sym.orbit_size if sym else None,
            predicates,
        )
        _KITS[key] = kit
    return kit


def partition_of(state: int, partitions: int) -> int:
    return fingerprint(state) % partitions


def identity(key: int) -> int:
    """The partitioner function of every keyed RDD: keys already are partition numbers.

    One module-level function object, so that PySpark sees every RDD keyed with it
    as co-partitioned (its partitioner compares the function) and unions them
    partition by partition instead of shuffling the visited set.
    """
    return key


def seed_records(states: Iterable[int], partitions: int) -> list[Record]:
    """The initial states as candidates with no parent."""
    return [(partition_of(s, partitions), ("C", [s], [NO_PARENT])) for s in states]


def decided_here(job: Job, payload: tuple) -> bool:
    """Whether a level's record says that its partition decided every property still pending.
    The search then surely stops at this level (unless it explores all): its expansion, which
    runs in the level's own job (``spark_stages``) before the driver can say so, is skipped."""
    summary = payload[3] if payload[0] == "V" else None
    return summary is not None and bool(job.pending) and not job.explore_all and summary.found.keys() >= set(job.pending)


def expand(job: Job, index: int, records: Iterator[Record]) -> Iterator[Record]:
    """Successors of one partition of the frontier, canonical, de-duplicated, bucketed by partition."""
    kit = _kit(job)
    succ, canon = kit.successors, kit.canonical
    best: dict[int, int] = {}
    get = best.get
    generated = 0
    for _, payload in records:
        if decided_here(job, payload):
            break
        for s in payload[1]:
            nexts = succ(s)
            generated += len(nexts)
            for _a, t in nexts:
                if canon is not None:
                    t = canon(t)
                p = get(t)
                if p is None or s < p:
                    best[t] = s
    n = job.partitions
    buckets: list[tuple[list[int], list[int]]] = [([], []) for _ in range(n)]
    for t, p in best.items():
        keys, parents = buckets[fingerprint(t) % n]
        keys.append(t)
        parents.append(p)
    for q, (keys, parents) in enumerate(buckets):
        for i in range(0, len(keys), CHUNK):
            yield q, ("C", keys[i : i + CHUNK], parents[i : i + CHUNK])
    yield index, ("G", generated)


def anti_join(job: Job, index: int, records: Iterator[Record]) -> Iterator[Record]:
    """One partition of the next level: candidates minus every visited state, properties checked.

    ``records`` is this partition of the union of the candidates and of every earlier
    level (co-partitioned, so nothing of the visited set moves between executors).
    """
    visited: list[list[int]] = []
    best: dict[int, int] = {}
    get = best.get
    generated = 0
    for _, payload in records:
        tag = payload[0]
        if tag == "V":
            visited.append(payload[1])
        elif tag == "C":
            for t, p in zip(payload[1], payload[2]):
                q = get(t)
                if q is None or p < q:
                    best[t] = p
        else:
            generated += payload[1]
    fresh = set(best)
    for chunk in visited:  # discarding from the (smaller) candidate set: no visited set is built
        fresh.difference_update(chunk)
    keys = sorted(fresh)
    del visited, fresh
    kit = _kit(job)
    found: dict[str, int] = {}
    for name in job.pending:
        pred, always = kit.predicates[name]
        for t in keys:  # sorted: the first hit is the smallest
            if pred(t) != always:
                found[name] = t
                break
    full = sum(map(kit.orbit_size, keys)) if kit.orbit_size is not None else 0
    summary = Summary(len(keys), generated, found, full)
    for i in range(0, max(len(keys), 1), CHUNK):
        part = keys[i : i + CHUNK]
        parents = pickle.dumps([best[t] for t in part], protocol=pickle.HIGHEST_PROTOCOL)
        yield index, ("V", part, parents, summary if i == 0 else None)


def reporting(summaries: Any, anti_join: Callable, index: int, records: Iterator[Record]) -> Iterator[Record]:
    """``anti_join``'s records, each partition's summary also added to the accumulator
    ``summaries`` ({partition: summary}): the driver reads it after a job that counts the
    level's records in the JVM, instead of a second pass of Python over them."""
    for record in anti_join(index, records):
        summary = record[1][3]
        if summary is not None:
            summaries.add({index: summary})
        yield record


class SummariesParam:
    """The accumulator of a level's summaries: a task run twice (a retry, a recomputed
    partition) reports its partition's summary again, and it replaces the first."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, a: dict, b: dict) -> dict:  # noqa: N802 - pyspark's AccumulatorParam
        a.update(b)
        return a


def find_parents(wanted: frozenset[int], records: Iterable[Record]) -> Iterator[tuple[int, int]]:
    """(state, parent) for every wanted state stored in this partition of a level."""
    for _, payload in records:
        keys = payload[1]
        parents = None
        for t in wanted:
            i = bisect_left(keys, t)
            if i < len(keys) and keys[i] == t:
                if parents is None:
                    parents = pickle.loads(payload[2])
                yield t, parents[i]
