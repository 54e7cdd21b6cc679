"""Random walks through the model (``--engine simulate``): for bounds past exhaustive search.

A walk starts from the initial state or (``restart`` of the time) from a state an earlier
walk reached, and at each step prefers a successor no walk has reached yet (``novelty``
of the time, when there is one); with ``swarm`` each walk also leaves out a random half
of the action families (swarm verification, Groce et al. 2012): a walk that never crashes
a broker reaches the interleavings that need many fetches in a row, one that never
fetches those of crashes and elections. Walks run one at a time here, or many at once on
the batch kernel (``simulate_vector.py``), up to ``--max-depth`` states; every state
reached for the first time is checked against every property. The paths that decide a
property are shrunk (``shrink.py``) before the shortest becomes its trace, so a simulated
counterexample reads like a breadth-first one.

A simulation proves nothing: an ``always`` property that no walk broke stays unknown
and the run is incomplete (exit 3); a violation or a witness is final. What the walks
exercised is in the result's ``coverage`` (``SimulationCoverage``).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path as FilePath
from itertools import islice
from typing import Any, Iterable, Sequence

from isrcheck import MODEL_VERSION
from isrcheck.properties import Property, verdict

from . import shrink
from .engine import CheckOptions, Limits, Observer, Progress, SearchModel, peak_rss
from .result import CheckResult, Path, Stats, property_results
from .simulate_vector import WIDTH, VectorWalks

DEFAULT_DEPTH = 100  # states per walk, the initial one included
DEFAULT_WALKS = {"vector": 200_000, "scalar": 2_000}  # without --walks or --time-limit: some seconds
DISTINCT_CAP = 2_000_000  # distinct states remembered for the coverage count; past it, "at least"
CHECK_EVERY = 16  # walks between looks at the clock and the stop flag
CANDIDATES = 16  # deciding paths kept per property
ATTEMPTS = 4  # of which the shortest are shrunk, and the shortest result kept
FEWER_WALKS, FEWER_SECONDS = 20_000, 10.0  # each look for a counterexample with fewer replicas
RESTART = 0.5  # the share of walks that start from a state an earlier walk reached
NOVELTY = 0.9  # the share of steps that go to a state no walk reached, when there is one


@dataclass
class SimulationCoverage:
    """What the walks exercised: the answer to "no violation found, after doing what?"."""

    walks: int = 0
    steps: int = 0
    distinct: int = 0
    distinct_capped: bool = False
    fired: Counter = field(default_factory=Counter)  # action, as the trace names it -> times taken
    never: list[str] = field(default_factory=list)  # the configuration's actions no walk took, as traces name them
    families: Counter = field(default_factory=Counter)  # action family -> times taken
    lengths: Counter = field(default_factory=Counter)  # walk length in states -> walks
    guards: Counter = field(default_factory=Counter)  # ``sometimes`` property -> states where it holds
    found_after: dict[str, float] = field(default_factory=dict)  # property -> seconds to the first deciding walk
    shrunk_after: dict[str, float] = field(default_factory=dict)  # property -> seconds to its shrunk trace
    found_length: dict[str, int] = field(default_factory=dict)  # property -> states of the walk as found
    from_database: list[str] = field(default_factory=list)  # decided by a walk an earlier run saved
    attempts: dict[str, int] = field(default_factory=dict)  # property -> deciding walks shrunk
    walk_seconds: float = 0.0  # the time spent walking, shrinking aside
    # property -> (the configuration with fewer replicas, its shrunk path): saved as a trace of its own
    smaller: dict[str, tuple[Any, Path]] = field(default_factory=dict)

    @property
    def fewer_replicas(self) -> dict[str, tuple[int, int]]:
        """Property -> (the fewest replicas with which walks broke it too, its trace's length)."""
        return {name: (config.rf, len(path)) for name, (config, path) in self.smaller.items()}

    def as_dict(self) -> dict[str, Any]:
        return {
            "walks": self.walks, "steps": self.steps, "walk_seconds": round(self.walk_seconds, 3),
            "distinct_states": self.distinct,
            "distinct_capped": self.distinct_capped, "families": dict(self.families.most_common()),
            "actions": dict(self.fired.most_common()), "never_taken": self.never,
            "walk_lengths": dict(sorted(self.lengths.items())),
            "guards": dict(self.guards), "found_after_seconds": self.found_after,
            "shrunk_after_seconds": self.shrunk_after, "found_length": self.found_length,
            "from_database": self.from_database, "shrink_attempts": self.attempts,
            "fewer_replicas": {name: {"rf": rf, "trace_length": n} for name, (rf, n) in self.fewer_replicas.items()},
        }


@dataclass
class SimulationProgress(Progress):
    """A simulation's progress: walks, steps and the families taken most, in its own words."""

    walks: int = 0
    families: tuple[tuple[str, int], ...] = ()

    def line(self) -> str:
        total = self.generated or 1
        most = ", ".join(f"{name} {100 * n // total}%" for name, n in self.families)
        return (f"{self.walks:,} walks, {self.generated:,} steps, {self.states:,} distinct states, deepest "
                f"{self.depth} states, {self.generated / self.seconds if self.seconds else 0:,.0f} steps/s, "
                f"{self.seconds:.1f} s" + (f"; most taken: {most}" if most else ""))


class SimulateEngine:
    name = "simulate"

    def __init__(self, seed: int = 0, walks: int | None = None, swarm: bool = True,
                 database: FilePath | None = None, restart: float = RESTART, novelty: float = NOVELTY,
                 kernel: str = "vector", fewer_replicas: bool = True) -> None:
        self.seed, self.walks, self.swarm, self.database = seed, walks, swarm, database
        self.restart, self.novelty, self.kernel = restart, novelty, kernel
        self.fewer_replicas = fewer_replicas  # look for each counterexample with fewer brokers too

    def check(self, model: SearchModel, properties: Sequence[Property], options: CheckOptions,
              observer: Observer | None = None) -> CheckResult:
        return _Simulation(self, model, properties, options, observer or Observer()).run()


class _Simulation:
    def __init__(self, engine: SimulateEngine, model: Any, properties: Sequence[Property], options: CheckOptions,
                 observer: Observer) -> None:
        self.engine, self.model, self.options, self.observer = engine, model, options, observer
        self.started = time.monotonic()
        self.limits = Limits(options, self.started, observer)
        self.properties = list(properties)
        self.checks = [(p, p.compile(model), verdict.always(p)) for p in properties]
        self.rng = random.Random(engine.seed)
        self.depth = options.max_depth or DEFAULT_DEPTH
        self.n_actions = len(model.catalogue)
        names = [model.describe(a).name for a in range(self.n_actions)]
        self.family_names = sorted(set(names))
        self.family_of = [self.family_names.index(n) for n in names]
        self.database = shrink.open_database(engine.database)
        self.coverage = SimulationCoverage()
        self.paths: dict[str, Path] = {}
        self.initial = model.init_states()[0]
        # state -> (the state its walk started from, that walk's steps, how many led here, depth):
        # every state reached, with the way the first walk reached it
        self.reached_by: dict[int, tuple[int, list, int, int]] = {self.initial: (self.initial, [], 0, 1)}
        self.archive: list[int] = []  # the states reached after the initial one, to start walks from
        self.candidates: dict[str, list[Path]] = {}  # property -> deciding paths found, to shrink
        self.kernel, self.kernel_note = "", ""  # the kernel the walks ran on; why not the batch one, if asked
        self.decided_at = 0  # walks taken when the last property was first decided

    # ---- the run ----------------------------------------------------------------------------------------
    def run(self) -> CheckResult:
        self._saved_examples()
        self._check(self.initial, self.initial, [])
        walking = time.monotonic()
        kernel = self._vector_kernel()
        default = None if self.options.time_limit else DEFAULT_WALKS["scalar" if kernel is None else "vector"]
        limit = self.engine.walks or default
        self.kernel = "scalar" if kernel is None else "vector"
        if kernel is not None:
            walks = VectorWalks(self, kernel, min(WIDTH, limit or WIDTH))
            stop = walks.run(limit)
            walks.finish()
        else:
            stop = self._scalar_walks(limit)
        self.coverage.walk_seconds = time.monotonic() - walking
        self._shrink_all()
        if self.engine.fewer_replicas and not stop:
            self._fewer_replicas()
        return self._result(stop)

    def _vector_kernel(self) -> Any:
        """The batch kernel when asked for and the model has one (else the note says why not)."""
        if self.engine.kernel != "vector":
            return None
        from .bfs_vector import vector_kernel

        kernel, self.kernel_note = vector_kernel(self.model, self.properties, replace(self.options, symmetry=False))
        return kernel

    def _scalar_walks(self, limit: int | None) -> str:
        """One walk at a time, on the model's successor function."""
        stop, next_report = "", self.started + self.options.progress_interval
        while self._go_on():
            if limit is not None and self.coverage.walks >= limit:
                break
            self._walk()
            if self.coverage.walks % CHECK_EVERY == 0:
                stop = self.limits.exceeded()
                if stop:
                    break
                now = time.monotonic()
                if now >= next_report:
                    next_report = now + self.options.progress_interval
                    self.report_progress(now, max(self.coverage.lengths, default=0), self.coverage.fired)
        return stop

    def families(self, fired: dict[int, int]) -> Counter:
        """Times taken per action family, from times taken per action index."""
        out: Counter = Counter()
        for a, n in fired.items():
            out[self.family_names[self.family_of[a]]] += n
        return out

    def report_progress(self, now: float, depth: int, fired: dict[int, int]) -> None:
        """What the walks have done so far; ``fired``: times taken, per action index."""
        c = self.coverage
        self.observer.progress(SimulationProgress(c.distinct, 0, depth, c.steps, now - self.started, walks=c.walks,
                                                  families=tuple(self.families(fired).most_common(3))))

    def deciding(self, name: str, paths: Iterable[Path]) -> None:
        """Paths to states that decide property ``name``: the first one times the finding, and
        up to ``CANDIDATES`` are kept to shrink (``paths`` is read no further)."""
        found = self.candidates.setdefault(name, [])
        if not found:
            self.coverage.found_after[name] = time.monotonic() - self.started
        found.extend(islice(paths, CANDIDATES - len(found)))

    def _pending(self) -> list[tuple[Property, Any, bool]]:
        return [c for c in self.checks if c[0].name not in self.paths and c[0].name not in self.candidates]

    def _go_on(self) -> bool:
        """Walk on while a property is undecided (or --continue); once each is, a little longer
        (a quarter as many walks again, at least 100) for more deciding paths to shrink."""
        if self._pending() or self.options.explore_all:
            self.decided_at = self.coverage.walks
            return True
        short = any(len(paths) < CANDIDATES for paths in self.candidates.values())
        return short and self.coverage.walks < self.decided_at + max(100, self.decided_at // 4)

    def _key(self, p: Property) -> bytes:
        return shrink.database_key(self.model.config.as_dict(), p.name, MODEL_VERSION)

    def _replayer(self, pred: Any, always: bool) -> shrink.Replayer:
        deadline = self.limits.deadline
        return shrink.Replayer(self.model, lambda s: pred(s) != always, deadline)

    def _saved_examples(self) -> None:
        """Walks an earlier run shrank and saved, tried before any new walk."""
        if self.engine.database is None:
            return
        for p, pred, always in self.checks:
            path = shrink.saved_example(self._replayer(pred, always), self.n_actions, self.database, self._key(p))
            if path is not None:
                self.paths[p.name] = path
                self.coverage.from_database.append(p.name)

    def _weights(self) -> list[int] | None:
        """A swarm walk's family weights: each family left out with probability one half."""
        if not self.engine.swarm:
            return None
        return [self.rng.randrange(2) for _ in self.family_names]

    def _walk(self) -> None:
        """One walk: from the initial state, or (``restart`` of the time) from a state an earlier
        walk reached; at each step a successor no walk has reached yet (``novelty`` of the time,
        when there is one), else any, as the swarm weights say."""
        model, rng, c = self.model, self.rng, self.coverage
        weights = self._weights()
        start = self.initial
        if self.archive and rng.random() < self.engine.restart:
            start = self.archive[rng.randrange(len(self.archive))]
        s, depth = start, self.reached_by[start][3]
        segment: list[tuple[int, int]] = []
        while depth < self.depth:
            succ = model.successors(s)
            if not succ:
                break
            fresh = [x for x in succ if x[1] not in self.reached_by] if self.engine.novelty else ()
            if fresh and rng.random() < self.engine.novelty:
                succ = fresh
            if weights is None:
                a, t = succ[rng.randrange(len(succ))]
            else:
                w = [weights[self.family_of[a]] for a, _ in succ]
                a, t = rng.choices(succ, w)[0] if any(w) else succ[rng.randrange(len(succ))]
            segment.append((a, t))
            c.fired[a] += 1
            depth += 1
            if t not in self.reached_by:
                self._discovered(t, depth, start, segment)
            s = t
        c.walks += 1
        c.steps += len(segment)
        c.lengths[depth] += 1

    def _discovered(self, t: int, depth: int, start: int, segment: list[tuple[int, int]]) -> None:
        """A state no walk reached before: remembered (while there is room) and checked."""
        c = self.coverage
        if not c.distinct_capped:
            self.reached_by[t] = (start, segment, len(segment), depth)
            self.archive.append(t)
            c.distinct = len(self.reached_by)
            c.distinct_capped = c.distinct >= DISTINCT_CAP
        self._check(t, start, segment)

    def _check(self, t: int, start: int, segment: list[tuple[int, int]]) -> None:
        c = self.coverage
        for p, pred, always in self.checks:
            holds = pred(t)
            if not always and holds:
                c.guards[p.name] += 1
            if holds != always and p.name not in self.paths:
                self.deciding(p.name, (self._path(start, segment) for _ in range(1)))

    def _path(self, start: int, segment: list[tuple[int, int]]) -> Path:
        """The steps from the initial state to ``start``, by the walks that first reached each
        state on the way, then ``segment``."""
        parts = [segment]
        s = start
        while s != self.initial:
            s, earlier, n, _ = self.reached_by[s]
            parts.append(earlier[:n])
        steps = [step for part in reversed(parts) for step in part]
        states = [self.initial] + [t for _, t in steps]
        return Path(tuple(states), tuple(a for a, _ in steps))

    def _shrink_all(self) -> None:
        """Each decided property's paths shrunk (the shrinker finds a local minimum; other starts
        often find a lower one), the shortest kept and saved for the next run."""
        c = self.coverage
        for p, pred, always in self.checks:
            found = self.candidates.get(p.name)
            if not found:
                continue
            c.found_length[p.name] = len(found[0])
            replayer = self._replayer(pred, always)
            shortest = sorted(found, key=len)[:ATTEMPTS]
            best = min((shrink.shrink(replayer, path, self.n_actions) for path in shortest), key=len)
            c.attempts[p.name] = len(shortest)
            self.paths[p.name] = best
            shrink.remember(self.database, self._key(p), best)
            c.shrunk_after[p.name] = time.monotonic() - self.started

    def _fewer_replicas(self) -> None:
        """For each broken ``always`` property, the fewest replicas (the other settings the
        same, min.insync.replicas and power loss capped at them) with which walks break it too:
        a smaller story to read, named in the report. Each try is a short simulation of its own
        (``FEWER_WALKS`` walks, ``FEWER_SECONDS`` at most)."""
        from isrcheck.model import ConfigError, ReplicationModel  # here: the engine takes any model

        config = self.model.config
        deadline = self.limits.deadline
        for p, _, always in self.checks:
            if not always or p.name not in self.paths:
                continue
            for rf in range(1, config.rf):
                seconds = FEWER_SECONDS if deadline is None else min(FEWER_SECONDS, deadline - time.monotonic())
                if seconds < 0.5:  # what is left of the run's time limit: the search for fewer replicas ends
                    return
                try:
                    # the same settings with fewer replicas: min.insync.replicas stays as set, and Kafka reads it
                    # against the fewer replicas as the release does (effective_min_isr)
                    smaller = config.with_changes(rf=rf, power_loss=min(config.power_loss, rf)).validate()
                except ConfigError:
                    continue
                engine = SimulateEngine(self.engine.seed, FEWER_WALKS, self.engine.swarm, None, self.engine.restart,
                                        self.engine.novelty, self.engine.kernel, fewer_replicas=False)
                r = engine.check(ReplicationModel(smaller), [p], replace(self.options, time_limit=seconds),
                                 self.observer)
                path = r.properties[0].path
                if path is not None:
                    self.coverage.smaller[p.name] = (smaller, path)
                    break

    def _result(self, stop: str) -> CheckResult:
        c = self.coverage
        c.families = self.families(c.fired)
        c.never = [str(self.model.describe(a)) for a in range(self.n_actions) if not c.fired.get(a)]
        c.fired = Counter({str(self.model.describe(a)): n for a, n in c.fired.items()})
        decided = not self._pending()
        seconds = time.monotonic() - self.started
        stats = Stats(states=c.distinct, generated=c.steps + c.walks, depth=max(c.lengths, default=1),
                      seconds=seconds, peak_memory=peak_rss())
        reason = "" if decided else stop or f"simulation: {c.walks:,} walks, not exhaustive"
        result = CheckResult("simulate", decided, property_results(self.properties, self.paths, False), stats,
                             stop_reason=reason)
        result.coverage = c
        result.kernel, result.kernel_note = self.kernel, self.kernel_note
        return result
