"""How long an advise-config sweep will take, said before it starts.

A check's time depends on how many states its configuration reaches, which nothing short
of the search knows, and on the machine. So the estimate is made of measurements on this
machine: every finished check's time is kept in a small file in the user's cache, keyed by
everything that decides it (isrcheck's version, the configuration, the properties, the
threads). A sweep whose configurations were all checked before is estimated from their
times, laid out over the jobs as the runner lays them out; configurations never checked
here count at the mean of those that were; with none at all, the sweep says so and its
progress lines give the time left as checks end.
"""

from __future__ import annotations

import heapq
import json
import os
from dataclasses import dataclass
from pathlib import Path

from isrcheck import __version__

from .runner import CheckRun

CACHE_ENV = "ISRCHECK_CACHE_DIR"
FILE_NAME = "advise-times.json"
MAX_ENTRIES = 5000  # oldest dropped first: a few hundred sweeps' worth, under a megabyte


def cache_file() -> Path:
    """``$ISRCHECK_CACHE_DIR``, else ``$XDG_CACHE_HOME/isrcheck``, else ``~/.cache/isrcheck``."""
    folder = os.environ.get(CACHE_ENV) or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "isrcheck"
    return Path(folder) / FILE_NAME


def key(run: CheckRun) -> str:
    """What decides a check's time; another version of isrcheck may search differently."""
    threads = run.engine_args.get("workers", 0)
    return f"{__version__} | {run.config.summary()} | {','.join(run.properties)} | {run.options.symmetry} | {threads}"


def load() -> dict[str, float]:
    """The recorded times; an unreadable or foreign file counts as none (it is only a hint)."""
    try:
        data = json.loads(cache_file().read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(k, str) and isinstance(v, (int, float)) and v >= 0}


def save(times: dict[str, float], measured: dict[str, float]) -> None:
    """Add this sweep's finished checks; written whole under a temporary name, then renamed, so a
    sweep running beside this one reads either file and never half of one. Failing to write is
    not the user's problem: the next estimate is just less informed."""
    merged = {k: v for k, v in times.items() if k not in measured}
    merged.update(measured)
    kept = dict(list(merged.items())[-MAX_ENTRIES:])
    path = cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps(kept))
        temporary.replace(path)
    except OSError:
        pass


def layout(seconds: list[float], jobs: int) -> float:
    """The sweep's wall time when each check, in order, goes to the first job that is free."""
    free = [0.0] * max(1, jobs)
    for s in seconds:
        heapq.heappush(free, heapq.heappop(free) + s)
    return max(free)


@dataclass(frozen=True)
class Estimate:
    seconds: float | None  # None: nothing to go on
    known: int  # configurations checked on this machine before
    total: int

    def line(self, jobs: int, time_limit: float | None) -> str:
        jobs_words = f"{jobs} job{'s' if jobs != 1 else ''}"
        if self.seconds is None:
            return (f"advise-config: {self.total} configurations on {jobs_words}; no estimate yet: none was checked on "
                    f"this machine before (their times are kept for the next sweep)")
        basis = ("each one's time on this machine in an earlier sweep" if self.known == self.total else
                 f"{self.known} of {self.total} timed on this machine before, the others counted at their mean")
        limit = ("; more than --time-limit: the advice will give what is decided by then"
                 if time_limit is not None and self.seconds > time_limit else "")
        return f"advise-config: about {_words(self.seconds)} for {self.total} configurations on {jobs_words} ({basis}){limit}"


def estimate(keys: list[str], jobs: int, times: dict[str, float]) -> Estimate:
    """``keys``: the sweep's checks (``key``), in the order the runner starts them."""
    known = [times.get(k) for k in keys]
    measured = [s for s in known if s is not None]
    if not measured:
        return Estimate(None, 0, len(keys))
    return Estimate(_laid_out(known, measured, jobs), len(measured), len(keys))


def time_left(done: list[float], pending: list[float | None], jobs: int) -> str:
    """After some checks ended: each one left at its time in an earlier sweep, or at the mean of
    this sweep's so far, over the jobs (a check running now counts whole, so the figure errs long)."""
    return _words(_laid_out(pending, done, jobs))


def _laid_out(seconds: list[float | None], measured: list[float], jobs: int) -> float:
    """``layout`` with each unknown time (None) counted at the mean of ``measured``."""
    mean = sum(measured) / len(measured)
    return layout([mean if s is None else s for s in seconds], jobs)


def _words(seconds: float) -> str:
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    minutes = seconds / 60
    return f"{minutes:.0f} min" if minutes >= 10 else f"{minutes:.1f} min"
