"""Level-synchronous breadth-first search on Spark: the BFS engine, partitioned.

Each BFS level is one Spark job, of one stage where it can be (``spark_stages``: the
level's anti-join, then its expansion into the next level's shuffle). The frontier (the
previous level's new states, full packed ints) is expanded on the executors; the successors are canonicalised
there, de-duplicated per map task and shuffled to the partition of their
fingerprint; each partition then removes what it has already visited by reading
its own partition of every earlier level (all levels share one partitioner, so
this is a partition-by-partition union, not a shuffle, and the visited set is
never collected on the driver) and checks the properties on what is new. On the
vector kernel, where every executor runs on this machine, the visited keys are
instead files beside them, a few sorted runs a partition (``spark_visited``), not
read back through Spark at every level. The driver only ever sees one small
summary per partition and level.

Every level is persisted and checkpointed (reliably, to a directory every
executor can reach; see ``setup_checkpoints`` for local mode and remote clusters
without one), so a lost executor costs its cached blocks, re-read from the
checkpoint, and its share of the current level, which Spark recomputes: the
result cannot change, and nothing before the last level is recomputed.

With ``--checkpoint``/``--resume`` every completed level is saved to files in the
user's folder instead, by the job that computes it (``spark_checkpoint``): level
boundaries are the checkpoints. Those files then are the level: it is read back
from them and kept in memory, never checkpointed by Spark too, so each level is
written once, and a block lost with an executor is read again from its file.

Counterexamples are rebuilt as the BFS engine rebuilds them: walk the parent
pointers back level by level (one small job per level, reading only the
partitions that hold the states of the path), then re-execute the path on the
model (``replay_path``). Parents and reported states are chosen
deterministically (see ``spark_tasks``), so every master and partitioning gives
the same traces; their lengths are BFS's shortest lengths.

Where the vector kernel applies (the rule of the BFS engine: tables and keys within
its bounds, a kernel that covers the properties and the symmetry), states are its keys from the
seed to the parent walk, and executors expand, canonicalise, de-duplicate and check
a partition's states as arrays (``spark_vector``); the path's keys become scalar
states again before the replay, as in ``bfs_vector``. Otherwise states are scalar
packed ints throughout.

pyspark is imported only here, in ``spark_context`` and ``spark_cluster``; executors import
``spark_tasks``, which the driver ships in a zip.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from functools import partial
from typing import TYPE_CHECKING, Sequence

from isrcheck.model import ConfigError
from isrcheck.properties import Property

from . import spark_checkpoint as saving
from . import spark_context as ctx
from . import spark_stages as stages
from . import spark_tasks as tasks
from .bfs import KERNELS, vector_kernel_for
from .engine import CheckOptions, Limits, Observer, Progress, SearchModel, peak_rss, tree_rss
from .result import CheckResult, Path, Stats, property_results

if TYPE_CHECKING:  # pragma: no cover
    from pyspark import RDD, SparkContext


class SparkEngine:
    """``--engine spark``: keyword arguments come from ``get_engine("spark", **engine_args)``.

    master: any Spark master URL (``local[*]`` runs embedded: only pyspark and Java needed).
    partitions: partitions of the frontier and visited set (default: twice the cores).
    verbose: show Spark's own console output instead of sending it to a log file.
    checkpoint_dir: where levels are checkpointed; must be reachable from every executor
      (default: ``spark.checkpoint.dir`` if configured, a temporary directory when the
      executors run on this machine, else replicated in-memory caching); unused by a
      search that saves its levels (``checkpoint``), whose files are their durable copy.
    kernel: "vector" where it applies (else scalar, with the reason in ``kernel_note``), or "scalar".
    """

    name = "spark"

    def __init__(
        self,
        master: str = "local[*]",
        partitions: int | None = None,
        verbose: bool = False,
        checkpoint_dir: str | None = None,
        kernel: str = "vector",
    ) -> None:
        if kernel not in KERNELS:
            raise ValueError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
        self.kernel = kernel
        self.master = ctx.validate_master(master)
        if partitions is not None and partitions < 1:
            raise ConfigError(f"--spark-partitions {partitions}: must be at least 1")
        self.partitions = partitions
        self.verbose = verbose
        self.checkpoint_dir = checkpoint_dir

    def check(
        self,
        model: SearchModel,
        properties: Sequence[Property],
        options: CheckOptions,
        observer: Observer | None = None,
        resume: saving.Saved | None = None,
        checkpoint: saving.SparkCheckpointWriter | None = None,
    ) -> CheckResult:
        """Search; ``resume`` continues a saved search, ``checkpoint`` saves every completed level."""
        kernel, note = vector_kernel_for(model, properties, options) if self.kernel == "vector" else (None, "")
        sc = ctx.spark_context(self.master, self.verbose)
        ctx.ship_package(sc)
        partitions = self.partitions or (resume.partitions if resume else default_partitions(sc, self.master))
        search = _SparkSearch(sc, model, properties, options, observer or Observer(), partitions, kernel)
        search.resume, search.saver = resume, checkpoint
        temp_dirs = [search.setup_checkpoints(self.checkpoint_dir, self.master), search.setup_visited(self.master)]
        try:
            result = search.run()
            result.kernel = "vector" if kernel is not None else "scalar"
            result.kernel_note = note
            return result
        finally:
            search.release()
            for temp_dir in temp_dirs:
                if temp_dir is not None:
                    shutil.rmtree(temp_dir, ignore_errors=True)


# Seconds that ending a Spark search takes after its stop: the cancelled job's tasks, one job
# a level to rebuild the traces, the JVM's stop. Measured on local[2], 2 cores, the main job
# at --time-limit 25s: it ended 2.4 to 5.3 s past the limit, where 10% and a second (3.5 s)
# is the rule; stopping the search 3 s early, it ended at 24.0, 25.7 and 27.1 s.
WIND_DOWN = 3.0


def default_partitions(sc: "SparkContext", master: str) -> int:
    """The cluster's cores; on a local master, no more than this machine's. Each partition's task
    runs in a Python worker of its own: local[64] on 2 cores started 64 of them (3.5 GB, and a
    time limit overrun by 13 s while they were stopped: issue 55) to go no faster than 2."""
    cores = max(1, sc.defaultParallelism)
    if master.startswith("local"):
        cores = min(cores, len(os.sched_getaffinity(0)))
    return cores


class _SparkSearch:
    def __init__(self, sc, model, properties, options, observer, partitions, kernel=None) -> None:
        self.sc: SparkContext = sc
        self.model = model
        self.properties = list(properties)
        self.options = options
        self.observer = observer
        self.partitions = partitions
        self.canonical = model.symmetry.canonical if options.symmetry else None
        self.kernel = kernel  # the vector kernel, whose keys are the states; None: scalar states
        self.levels: list[RDD] = []  # level d+1 (depth d+1) is levels[d]; together the visited set
        self.level_sizes: list[int] = []
        self.found: dict[str, tuple[int, int]] = {}  # property -> (depth, state)
        self.generated = 0
        self.full_states = 0
        self.group = f"isrcheck-{uuid.uuid4().hex[:12]}"
        self.durability = "reliable"  # see setup_checkpoints
        self.resume: saving.Saved | None = None
        self.saver: saving.SparkCheckpointWriter | None = None
        self.written: list = []  # the files of the level just computed, when saving
        self.anchor: RDD | None = None  # the parent of levels read from saved files (spark_checkpoint.anchor)
        self.visited = ""  # the folder of the visited set's files (``spark_visited``), or "": read in the union

    # -- setup and teardown -------------------------------------------------------
    def setup_checkpoints(self, directory: str | None, master: str) -> str | None:
        """Choose how levels survive a lost executor; returns a temporary directory to remove.

        "saved": the search saves its levels (``--checkpoint``): they are read back from
        those files (``_from_files``) and nothing else is written. Otherwise Spark's
        checkpoints or replicas, as ``spark_context.level_durability`` chooses.
        """
        if self.saver is not None:
            self.durability = "saved"
            return None
        self.durability, temp = ctx.level_durability(self.sc, directory, master)
        return temp

    def setup_visited(self, master: str) -> str | None:
        """The vector kernel's visited files' folder (``spark_context.visited_folder``), returned to
        remove; none for a resumed search, whose saved levels have no such files."""
        if self.kernel is not None and self.resume is None:
            self.visited = ctx.visited_folder(master) or ""
        return self.visited or None

    def release(self) -> None:
        for level in self.levels:
            level.unpersist(blocking=False)
        self.levels.clear()

    # -- the search ---------------------------------------------------------------
    def run(self) -> CheckResult:
        opts = self.options
        started = time.monotonic() - (self.resume.elapsed if self.resume else 0.0)
        limits = self.limits = Limits(opts, started, memory=tree_rss)  # the JVM and the Python workers count too
        if limits.deadline is not None:  # the search ends early enough for its ending to fit the limit
            limits.deadline -= WIND_DOWN
        pending = [p.name for p in self.properties]
        stop = ""
        frontier_done = False  # the last level had no successor left to discover
        watchdog = ctx.Watchdog(self.sc, self.group, self.observer, limits)
        self.sc.setJobGroup(self.group, "isrcheck breadth-first search", interruptOnCancel=True)
        try:
            candidates = None  # the next level's candidates, when its job expanded the last level too
            if self.resume is not None:
                self._restore()
            else:
                seeds, self.generated = self._seeds()
                seed = self.sc.parallelize(seeds, min(len(seeds), self.partitions))
                _, candidates = self._level(seed.partitionBy(self.partitions, tasks.identity), tuple(pending), watchdog)
                self._save(started)
            while True:
                pending = [name for name in pending if name not in self.found]
                if not opts.explore_all and not pending:
                    break
                if opts.max_depth is not None and len(self.levels) >= opts.max_depth:
                    break
                stop = self.observer.should_stop() or limits.exceeded()
                if stop:
                    break
                if candidates is None:
                    candidates = self._expanded(self.levels[-1], self._job(()))
                more, candidates = self._level(candidates, tuple(pending), watchdog)
                if not more:
                    frontier_done = True
                    break
                self._save(started)
                self.observer.progress(
                    Progress(
                        sum(self.level_sizes), self.level_sizes[-1], len(self.levels), self.generated,
                        time.monotonic() - started,
                    )
                )
        except ctx.Stopped as e:
            stop = self._why_stopped(e)
        finally:
            watchdog.close()
            if self.saver is not None:
                self._finish_saving(time.monotonic() - started)
        self.sc.setJobGroup(self.group + "-traces", "isrcheck counterexamples", interruptOnCancel=True)
        try:
            paths = self._paths()
        except Exception as e:  # noqa: BLE001 - the cluster went away after the search
            paths, stop = {}, stop or ctx.failure_words(e)
        depth_bound = opts.max_depth is not None and len(self.levels) >= opts.max_depth
        return self._result(stop, frontier_done, depth_bound, paths, time.monotonic() - started)

    def _restore(self) -> None:
        """The saved levels and counters of the search being resumed (levels read lazily)."""
        saved = self.resume
        for depth in range(1, len(saved.levels) + 1):
            self.levels.append(self._from_files(saved.files(depth)))
        self.level_sizes = [level["states"] for level in saved.levels]
        self.generated, self.full_states, self.found = saved.generated, saved.full_states, dict(saved.found)

    def _from_files(self, files: list[tuple[int, int, str]]) -> "RDD":
        """A saved level, read lazily from its files and cached in memory only: the files are
        its durable copy, so an evicted or lost block is read from them again, never spilled."""
        from pyspark import StorageLevel

        if self.anchor is None:
            self.anchor = saving.anchor(self.sc, self.partitions)
        level = saving.rebuild(self.sc, files, self.partitions, self.anchor)
        level._jrdd_deserializer = self.anchor._jrdd_deserializer  # as candidates are: see _level
        return level.persist(StorageLevel.MEMORY_ONLY)

    def _why_stopped(self, e: "ctx.Stopped") -> str:
        """Why the search stopped; after a failure Spark gave up on, how to go on from the saved levels."""
        if e.failed and self.saver is not None and self.saver.levels:
            saved = f"the search is saved up to level {len(self.saver.levels)}"
            return f"{e.reason}; {saved}: continue it with --resume {self.saver.folder}"
        return e.reason

    def _save(self, started: float) -> None:
        """Checkpoint the level just completed; a failure to write stops the search, saying why."""
        if self.saver is None:
            return
        try:
            self.saver.save(self.written, self.level_sizes[-1], self, time.monotonic() - started)
        except OSError as e:  # the level's files are written; its manifest could not be
            raise ctx.Stopped(f"checkpoint not written ({type(e).__name__}: {e})") from None

    def _finish_saving(self, elapsed: float) -> None:
        try:
            self.saver.finish(elapsed)
        except OSError:  # only the time spent is lost: every completed level is saved already
            pass

    def _seeds(self) -> tuple[list[tasks.Record], int]:
        """The distinct (canonical) initial states as candidates, scalar or as kernel keys; how many."""
        if self.kernel is None:
            inits = dict.fromkeys(self.canonical(s) if self.canonical else s for s in self.model.init_states())
            return tasks.seed_records(inits, self.partitions), len(inits)
        from . import spark_vector

        keys = self.kernel.initial_keys()
        records = spark_vector.seed_records(self.kernel.canonical(keys) if self.canonical else keys, self.partitions)
        return records, sum(payload[1].shape[1] for _, payload in records)

    def _tasks(self):
        """The executors' tasks: one state at a time (``spark_tasks``), or arrays of kernel keys."""
        if self.kernel is None:
            return tasks
        from . import spark_vector  # NumPy is imported only where the vector kernel runs

        return spark_vector

    def _job(self, pending: tuple[str, ...]) -> tasks.Job:
        return tasks.Job(self.model.protocol.name, self.model.config, self.canonical is not None, self.partitions, pending,
                         self.kernel is not None, self.visited, len(self.levels) + 1, self.options.explore_all)

    def _expanded(self, level: "RDD", job: tasks.Job) -> "RDD":
        """A level's successors, shuffled to their partitions: the next level's candidates."""
        expanded = level.mapPartitionsWithIndex(partial(self._tasks().expand, job))
        return expanded.partitionBy(self.partitions, tasks.identity)

    def _level(self, candidates: "RDD", pending: tuple[str, ...], watchdog: "ctx.Watchdog") -> tuple[bool, "RDD | None"]:
        """Compute, cache and checkpoint (or save) the next level: whether it has new states, and
        the candidates of the level after it where its job expanded it too (``spark_stages``)."""
        union = self.sc.union([candidates, *self.levels]) if self.levels and not self.visited else candidates
        if union.getNumPartitions() != self.partitions:  # pragma: no cover - a PySpark change
            raise RuntimeError("the visited set is not co-partitioned with the candidates")
        summaries = self.sc.accumulator({}, tasks.SummariesParam())
        job = self._job(pending)
        anti_join = partial(self._tasks().anti_join, job)
        level = union.mapPartitionsWithIndex(partial(tasks.reporting, summaries, anti_join), preservesPartitioning=True)
        # Store levels in the serialized form the shuffle gives the candidates, so that
        # the next union needs no re-serializing pass over the visited set (were this
        # PySpark detail to change, union would re-serialize: slower, still correct).
        level._jrdd_deserializer = candidates._jrdd_deserializer
        stages.keep(level, self.durability)
        depth = len(self.levels) + 1
        last = self.options.max_depth is not None and depth >= self.options.max_depth
        following = None if self.saver is not None or last else self._expanded(level, job)
        try:
            if self.saver is not None:  # the job that computes the level saves it: its files
                self.written = watchdog.collect(level.mapPartitionsWithIndex(self.saver.level_job(depth, self.partitions)))
            elif not stages.compute(self.sc, watchdog, level, following, self.durability):
                following = None  # the level was counted, not expanded
            summaries = list(summaries.value.values())
        except ctx.Stopped:
            level.unpersist(blocking=False)
            raise
        new = sum(s.new for s in summaries)
        self.generated += sum(s.generated for s in summaries)
        if new == 0:
            level.unpersist(blocking=False)
            if self.saver is not None:
                self.saver.discard(depth)
            return False, None
        self.levels.append(level if self.saver is None else self._from_files(self.saver.files(depth, self.written)))
        self.level_sizes.append(new)
        self.full_states += sum(s.full_states for s in summaries)
        for s in summaries:
            for name, state in s.found.items():
                if name not in self.found or self._before(state, self.found[name][1]):
                    self.found[name] = (depth, state)
        return True, following

    def _before(self, a: int, b: int) -> bool:
        """The order every partition chose its first deciding state by: integers, or the
        vector kernel's levels' order (``spark_order``)."""
        if self.kernel is None:
            return a < b
        from . import spark_vector

        return spark_vector.before(self.kernel.words, a, b)

    # -- counterexamples ----------------------------------------------------------
    def _paths(self) -> dict[str, Path]:
        """Shortest paths to every property's reported state, by parent pointers, then replay."""
        if not self.found:
            return {}
        chains = {name: [state] for name, (_, state) in self.found.items()}
        depth_of = {name: depth for name, (depth, _) in self.found.items()}
        for depth in range(max(depth_of.values()), 1, -1):
            walking = [name for name in chains if depth_of[name] >= depth]
            wanted = frozenset(chains[name][-1] for name in walking)
            parts = sorted({tasks.partition_of(s, self.partitions) for s in wanted})
            parents = dict(self.sc.runJob(self.levels[depth - 1], self._find_parents(wanted), parts))
            for name in walking:
                chains[name].append(parents[chains[name][-1]])
        return {name: self._replay(chain[::-1]) for name, chain in chains.items()}

    def _find_parents(self, wanted: frozenset[int]):
        if self.kernel is None:
            return partial(tasks.find_parents, wanted)
        from . import spark_vector

        return partial(spark_vector.find_parents, self.kernel.words, wanted)

    def _replay(self, chain: list[int]) -> Path:
        """The model's path through the stored states (kernel keys are replayed as ``bfs_vector`` does)."""
        kernel = self.kernel
        if kernel is None:
            return Path.replay(self.model, chain, self.canonical)
        if self.canonical is not None:
            return Path.replay(self.model, chain, kernel.canonical_of_scalar)
        return Path.replay(self.model, [kernel.scalar_of_key(k) for k in chain])

    def _result(self, stop: str, frontier_done: bool, depth_bound: bool, paths: dict, seconds: float) -> CheckResult:
        """The verdicts and statistics, with BFS's meaning for every field."""
        exhausted = not stop and (frontier_done or depth_bound)
        stuck = {  # decided, but its trace could not be rebuilt
            name: f"decided at depth {depth}, but its trace could not be rebuilt"
            for name, (depth, _) in self.found.items() if name not in paths
        }
        results = property_results(self.properties, paths, exhausted, stuck=stuck)
        stats = Stats(
            states=sum(self.level_sizes),
            generated=self.generated,
            depth=len(self.levels),
            seconds=seconds,
            peak_memory=max(peak_rss(), self.limits.peak, tree_rss()),  # the process tree's, as the limit reads it
            full_states=self.full_states if self.canonical is not None else None,
            queue=0 if frontier_done or not self.level_sizes else self.level_sizes[-1],
        )
        return CheckResult(
            engine="spark",
            complete=not stop,
            properties=results,
            stats=stats,
            exhausted=exhausted,
            stop_reason=stop,
            symmetry=self.canonical is not None,
        )
