"""The engine interface, the options every engine takes, and the run observer.

``check(model, properties, options, observer) -> CheckResult`` is all an engine
offers. The observer is how a run talks to its caller while it works: progress,
and a stop flag that Ctrl-C, a time limit or a memory limit sets.
"""

from __future__ import annotations

import ctypes
import resource
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from isrcheck.properties import Property

from .result import CheckResult, Stats, property_results


@dataclass(frozen=True, slots=True)
class CheckOptions:
    max_depth: int | None = None  # states on a path, the initial one included
    explore_all: bool = False  # keep going after every property is decided (TLC's -continue)
    symmetry: bool = False
    time_limit: float | None = None  # seconds
    max_memory: int | None = None  # bytes of resident memory
    progress_interval: float = 2.0  # seconds between progress reports
    checkpoint_every: float = 300.0  # seconds between checkpoints inside a level, when checkpointing
    started: float | None = None  # time.monotonic() when the run began (tables, resume): the time limit counts from it
    keep_graph: bool = False  # keep the explored state graph in the result (bfs: --graph); explores everything


@dataclass(slots=True)
class Progress:
    states: int
    queue: int
    depth: int
    generated: int
    seconds: float
    # how far into the level being expanded, where the engine knows (the scalar BFS, the vector
    # BFS between chunks): states expanded of level_size; None elsewhere (no estimate is shown)
    level_done: int | None = None
    level_size: int | None = None

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    def line(self) -> str:
        return (
            f"{self.states:,} distinct states, {self.queue:,} queued, depth {self.depth}, "
            f"{self.states_per_second:,.0f} states/s, {self.seconds:.1f} s"
        )


class Observer:
    """Receives progress and decides when a run must stop; the base class never stops."""

    def __init__(self) -> None:
        self.stop_reason = ""

    def progress(self, info: Progress) -> None:  # noqa: B027 - optional hook
        pass

    def request_stop(self, reason: str) -> None:
        if not self.stop_reason:
            self.stop_reason = reason

    def should_stop(self) -> str:
        """The reason to stop now, or '' to go on."""
        return self.stop_reason


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message is one line."""


def check_found(saved: dict[str, Any], derived: dict[str, Any], folder: Any) -> None:
    """The deciding states a manifest names must be the ones its saved states give: the
    seal stops an accidental edit, this a forged verdict (re-sealed by hand)."""
    if saved != derived:
        raise CheckpointError(f"checkpoint in {folder} is inconsistent: the deciding states it names are not "
                              "those of its saved states (it was edited)")


def checkpoint_failure(error: OSError) -> str:
    """The stop reason of a search whose checkpoint could not be written."""
    return f"checkpoint not written ({error.strerror or error})"


MEMORY_HEADROOM = 0.9  # stop at 90% of --max-memory: the final checkpoint and report need room


# The scalar searches look at the clock every CHECK_EVERY expansions (a look: some 70 ns; an
# expansion: 5 us on the core machine, 3 ms at rf 5 with symmetry, where looking every 1024
# overshot a time limit by 3.5 s), and at the limits, the stop flag and memory (/proc: some
# 20 us) once LOOK_EVERY seconds have passed.
CHECK_EVERY = 16
LOOK_EVERY = 0.05


class Limits:
    """Time and memory limits, checked by engines some twenty times a second (the scalar
    searches, see CHECK_EVERY) or between chunks of states, and by the model while its
    tables are built (with the observer's stop request: Ctrl-C).

    The time limit counts from ``options.started`` where it is set: building the tables
    and loading a checkpoint take from the same budget as the search. Memory is the
    process's resident set, read from /proc; the search stops once it passes 90% of the
    limit, well before the operating system's OOM killer would act on a limit set below
    the machine's memory."""

    def __init__(self, options: CheckOptions, started: float, observer: Observer | None = None,
                 memory: Callable[[], int] | None = None) -> None:
        if options.started is not None:
            started -= max(0.0, time.monotonic() - options.started)
        self.deadline = started + options.time_limit if options.time_limit else None
        self.memory_stop = int(options.max_memory * MEMORY_HEADROOM) if options.max_memory else None
        self.observer = observer
        self.memory = memory or current_rss  # what counts: this process, or (Spark) its whole tree
        self.peak = 0  # the highest memory seen at a look

    def exceeded(self, reserve: int = 0) -> str:
        """The limit reached, or ''; ``reserve``: bytes the next step is about to need."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return "time limit"
        if self.memory_stop is not None:
            used = self.memory()
            self.peak = max(self.peak, used)
            if used + reserve >= self.memory_stop:
                return "memory limit"
        return self.observer.should_stop() if self.observer is not None else ""

    def memory_room(self) -> int | None:
        """Bytes left before the memory stop, or None without a memory limit."""
        return None if self.memory_stop is None else max(0, self.memory_stop - self.memory())


BUILDING_NOTE = "stopped while building the model's tables, before any state was searched"


def stopped_building(engine: str, properties: Sequence[Property], options: CheckOptions, reason: str) -> CheckResult:
    """The result of a run that a limit (``reason``: time limit, memory limit, interrupted)
    stopped while the model's tables were being built: nothing decided, and a note that says when."""
    seconds = time.monotonic() - options.started if options.started is not None else 0.0
    stats = Stats(seconds=seconds, peak_memory=peak_rss())
    results = property_results(properties, {}, False, note=BUILDING_NOTE)
    return CheckResult(engine, False, results, stats, stop_reason=reason, symmetry=options.symmetry,
                       search_note=BUILDING_NOTE)


def release_freed_memory() -> None:
    """Hand memory that was freed but kept by glibc's allocator (in its arenas, one per
    thread) back to the system, so that the resident set the memory limit reads is what
    is in use. A no-op where the C library is not glibc."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


M_ARENA_MAX = -8  # glibc's mallopt parameters
M_TOP_PAD = -2
HEAP_PAD = 64 << 20


def pad_heap_top() -> None:
    """Have glibc keep 64 MiB free at the top of its heap instead of handing it back to the
    system the moment a batch frees it. By default the vector search's batches, larger level
    after level while the levels grow, gave pages back and faulted fresh ones in for the
    next: kip320-rf3's search in a fresh process took 0.40 to 0.53 s (median 0.43, eight
    runs), 0.35 to 0.41 (median 0.365) with the pad; the resident set moves by a byte or two
    a state either way (bench/README.md, "The heap's top kept"). A process-wide setting (it also fixes at 128 KiB the size from which
    glibc maps an allocation on its own)."""
    _mallopt(M_TOP_PAD, HEAP_PAD)


def one_malloc_arena() -> None:
    """Have threads started from now on allocate from glibc's main arena instead of one arena
    each: the vector search's threads free their chunks' arrays before the level is merged on
    the main thread, and with an arena each that memory stays resident beside the merge's
    (kip320-rf3-e3 on two threads: 28 to 29 bytes a state against 22 to 24; no change in speed
    measured).
    A process-wide setting."""
    _mallopt(M_ARENA_MAX, 1)


def _mallopt(param: int, value: int) -> None:
    """Set one of glibc's allocator parameters; a no-op where the C library is not glibc."""
    try:
        ctypes.CDLL("libc.so.6").mallopt(param, value)
    except (OSError, AttributeError):
        pass


def current_rss() -> int:
    """Resident set size of this process now, in bytes (Linux /proc; falls back to the peak)."""
    return resident_size("self") or peak_rss()


def tree_rss() -> int:
    """The resident sizes of this process and of every process under it: on a local Spark
    master, the JVM and the Python workers it forks, which hold the levels being expanded
    (issue 55: 3.2 GB across them under a 1 GB limit that read the driver alone). Shared
    pages are counted once per process, so the sum errs high: the run stops early, never late."""
    import psutil

    try:
        kids = psutil.Process().children(recursive=True)
    except psutil.Error:
        kids = []
    return current_rss() + sum(resident_size(k.pid) for k in kids)


def resident_size(pid: int | str) -> int:
    """A process's resident set size now, in bytes (0 when /proc cannot say: gone, or not Linux)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def proportional_size(pid: int) -> int:
    """A process's proportional set size in bytes: its shared pages divided among their
    sharers (0 when /proc cannot say: gone, Linux before 4.14, not Linux)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


class FamilyMemory:
    """The memory of a process and the workers it forked, shared pages counted once: the
    workers share the model's tables, which a sum of resident sizes would count once per
    process. The proportional set sizes that count them once take milliseconds per hundred
    megabytes to read, so they are re-read at most a tenth of the time; in between, the last
    reading grows with the sum of the resident sizes (microseconds to read)."""

    def __init__(self, pids: list[int], every: float = 0.05) -> None:
        self.pids, self.every = pids, every
        self.peak = 0  # the highest value seen
        self.exact = self.exact_rss = 0
        self.next_exact = 0.0

    def now(self) -> int:
        started = time.monotonic()
        rss = sum(resident_size(pid) for pid in self.pids)
        if started >= self.next_exact:
            pss = [proportional_size(pid) for pid in self.pids]
            self.exact = sum(pss) if all(pss) else rss  # no smaps_rollup: the resident sizes
            self.exact_rss = rss
            self.next_exact = time.monotonic() + max(self.every, 10 * (time.monotonic() - started))
        value = self.exact + max(0, rss - self.exact_rss)
        self.peak = max(self.peak, value)
        return value


def peak_rss() -> int:
    """Peak resident set size of this process, in bytes.

    From /proc's VmHWM where it exists: getrusage's ru_maxrss of a process started by a
    large parent can report the parent's peak (it survives fork and exec on Linux)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class SearchModel(Protocol):
    """What a search needs of a model (``isrcheck.model.machine.Model`` is one): packed
    states and action indices, never the protocol's fields; the vector kernel and the
    symbolic engine read the model's definitions through ``kernel_for`` and ``SymbolicModel``."""

    protocol: Any  # its ``name`` rebuilds the model on Spark executors (``model_for``)
    config: Any

    def init_states(self) -> list[int]: ...

    def successors(self, state: int) -> list[tuple[int, int]]:
        """(action index, next state) for every action enabled in ``state``."""
        ...

    @property
    def symmetry(self) -> Any:
        """``canonical(state)`` and ``orbit_size(state)`` under renaming the brokers."""
        ...


class Engine(Protocol):
    name: str

    def check(
        self,
        model: SearchModel,
        properties: Sequence[Property],
        options: CheckOptions,
        observer: Observer | None = None,
    ) -> CheckResult: ...
