"""Running a suite's checks and judging them against their expectations.

Each check goes through ``run_check``, the composition root check-model uses.
With more than one job, checks run in worker processes (the ``spawn`` start
method: no state inherited from the parent, the same on every OS); each saves
its traces in a folder of its own. Spark checks never run side by side: they run
one after another in this process after every other check has finished, so
there is one SparkSession at a time and it does not compete with the workers.

Ctrl-C: the first asks every running check to stop at its next clean point
(workers ignore SIGINT and watch a shared event instead), cancels the checks not
yet started and keeps what finished; the second abandons the running checks.
"""

from __future__ import annotations

import multiprocessing
import re
import signal
import time
import traceback
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor, wait, FIRST_COMPLETED
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import click

from isrcheck.checker import Observer
from isrcheck.properties import verdict
from isrcheck.traces.narrate import describe_step

from . import report
from .check_model import default_memory_limit
from .common import STOP_REASONS, CliObserver
from .runner import CheckOutcome, run_check
from .suite import SuiteCheck

TRACE_LINES = 20  # lines of a trace's narration kept in reports


@dataclass
class PropertyReport:
    name: str
    expectation: str  # always | sometimes
    status: str  # holds | violated | proved | unknown
    trace_length: int | None
    trace_file: str | None
    trace_text: tuple[str, ...] = ()  # the trace narrated step by step (first lines)
    trace_error: str = ""  # why the trace was not saved, one line


@dataclass
class CheckReport:
    name: str
    complete: bool
    stop_reason: str = ""
    seconds: float = 0.0
    properties: list[PropertyReport] = field(default_factory=list)
    error: str = ""  # one line when the check could not run
    detail: str = ""  # the traceback behind ``error``

    def by_name(self, name: str) -> PropertyReport | None:
        return next((p for p in self.properties if p.name == name), None)


@dataclass(frozen=True)
class Judgement:
    check: str
    property: str
    outcome: str  # met | unmet | unknown | recorded | error | skipped
    expected: str  # as written in the suite, '' when recorded only
    actual: str  # short words for what the engine found
    line: int  # suite line to point at: the expectation's, else the check's


def short_words(p: PropertyReport) -> str:
    said = verdict.outcome(p, p.status)
    if said in ("violated", "witnessed"):
        return f"{said} in {p.trace_length} states"
    return {"never": "never happens"}.get(said, said)


def judge(check: SuiteCheck, rep: CheckReport | None) -> list[Judgement]:
    """One judgement per checked property: did the engine find what the suite expects?"""
    out = []
    for name in check.properties:
        exp = check.expect.get(name)
        text = exp.text if exp else ""
        line = exp.line if exp else check.line
        if rep is None:
            out.append(Judgement(check.name, name, "skipped", text, "not run (interrupted)", line))
            continue
        p = rep.by_name(name)
        if rep.error or p is None:
            out.append(Judgement(check.name, name, "error", text, rep.error or "not reported", line))
            continue
        actual = short_words(p)
        status = "holds" if p.status == "proved" else p.status
        if status == "unknown":
            outcome = "unknown"
            actual = f"unknown: search incomplete ({rep.stop_reason or 'stopped'})"
        elif exp is None:
            outcome = "recorded"
        elif status != exp.status:
            outcome = "unmet"
        elif exp.within is not None and (p.trace_length or 0) > exp.within:
            outcome = "unmet"
            actual += f", not within {exp.within}"
        else:
            outcome = "met"
        out.append(Judgement(check.name, name, outcome, text, actual, line))
    return out


def trace_folders(checks: list[SuiteCheck], root: Path) -> dict[str, Path]:
    """A distinct, readable folder per check for its traces."""
    out: dict[str, Path] = {}
    used: set[str] = set()
    for check in checks:
        stem = re.sub(r"[^A-Za-z0-9._=-]+", "-", check.name)[:64].strip("-.") or "check"
        name, n = stem, 2
        while name.lower() in used:
            name, n = f"{stem}-{n}", n + 1
        used.add(name.lower())
        out[check.name] = root / name
    return out


def run_one(check: SuiteCheck, trace_dir: Path, observer: Observer) -> CheckReport:
    """Run one check in this process; every failure becomes a report, never an exception."""
    started = time.monotonic()
    try:
        outcome = run_check(replace(check.run, trace_dir=trace_dir), observer)
    except Exception as e:  # noqa: BLE001 - a broken check must not end the suite
        return CheckReport(check.name, False, "error", time.monotonic() - started,
                           error=" ".join(f"{type(e).__name__}: {e}".split()), detail=traceback.format_exc())
    r = outcome.result
    props = [
        PropertyReport(p.name, p.expectation, p.status, p.trace_length,
                       str(outcome.trace_files[p.name]) if p.name in outcome.trace_files else None,
                       trace_text(outcome, p.name), outcome.trace_errors.get(p.name, ""))
        for p in r.properties
    ]
    return CheckReport(check.name, r.complete, r.stop_reason, r.stats.seconds, props)


def trace_text(outcome: CheckOutcome, name: str) -> tuple[str, ...]:
    """The first lines of a trace in Kafka words: a violation explained, a witness narrated."""
    trace = outcome.traces.get(name)
    if trace is None:
        return ()
    if trace.is_counterexample:
        lines = [line for line in report.explain_lines(outcome, name) if line.strip()]
    else:
        lines = [f"{name}: witnessed"] + [
            f"  {i:>2}. {describe_step(trace.steps[i - 1].state, trace.steps[i].action, trace.steps[i].state)}"
            for i in range(1, len(trace.steps))
        ]
    lines = [line.strip("\n") for line in lines]
    if len(lines) > TRACE_LINES:
        lines = lines[: TRACE_LINES - 1] + [f"  ... ({len(lines) - TRACE_LINES + 1} more lines)"]
    return tuple(lines)


# ---- execution ----------------------------------------------------------------------

Done = Callable[[SuiteCheck, CheckReport], None]


class SuiteRunner:
    """Runs checks (BFS and Z3 ones in ``jobs`` processes, Spark ones after, one at a time)."""

    def __init__(self, checks: list[SuiteCheck], folders: dict[str, Path], jobs: int, on_done: Done,
                 progress: bool | None = None, deadline: float | None = None, max_memory: int | None = None) -> None:
        self.checks = checks
        self.folders = folders
        self.jobs = jobs
        self.on_done = on_done
        self.progress = progress
        self.deadline = deadline  # time.monotonic() when every check must have stopped: one budget for all
        self.max_memory = max_memory  # for all the checks that run at once together
        self.reports: dict[str, CheckReport] = {}
        self.interrupted = False

    def run(self) -> dict[str, CheckReport]:
        others = [c for c in self.checks if c.run.engine != "spark"]
        spark = [c for c in self.checks if c.run.engine == "spark"]
        workers = min(self.jobs, len(others))
        for checks, share in ((others, max(1, workers)), (spark, 1)):
            # side by side, checks share --max-memory, or 85% of the machine's memory
            limit = default_memory_limit(share) if self.max_memory is None else self.max_memory // share
            for check in checks:
                if check.run.options.max_memory is None:
                    check.run.options = replace(check.run.options, max_memory=limit)
        if workers > 1:
            self._in_pool(others, workers)
        else:
            self._here(others)
        if not self.interrupted:
            self._here(spark)
        return self.reports

    def _finish(self, check: SuiteCheck, rep: CheckReport) -> None:
        self.reports[check.name] = rep
        if rep.stop_reason == "interrupted":
            self.interrupted = True
        self.on_done(check, rep)

    def _here(self, checks: list[SuiteCheck]) -> None:
        try:
            with CliObserver(self.progress) as observer:
                for check in checks:
                    budgeted = within(check, self.deadline)
                    if budgeted is None:
                        break
                    rep = run_one(budgeted, self.folders[check.name], observer)
                    self._finish(check, rep)
                    if observer.stop_reason:
                        self.interrupted = True
                        break
        except KeyboardInterrupt:
            self.interrupted = True

    def _in_pool(self, checks: list[SuiteCheck], workers: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        stop = ctx.Event()
        pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=(stop,))
        futures: dict[Future, SuiteCheck] = {}

        def on_sigint(signum, frame):  # noqa: ARG001
            if stop.is_set():
                raise KeyboardInterrupt
            stop.set()
            self.interrupted = True
            for f in futures:
                f.cancel()
            click.echo("  ... stopping the running checks at their next clean point (Ctrl-C again to abort)",
                       err=True)

        previous = {signum: signal.signal(signum, on_sigint) for signum in STOP_REASONS}  # Ctrl-C, SIGTERM
        try:
            futures.update({pool.submit(_work, c, self.folders[c.name], self.deadline): c for c in checks})
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in sorted(done, key=lambda f: checks.index(futures[f])):
                    self._collect(f, futures[f])
            pool.shutdown()
        except KeyboardInterrupt:
            self.interrupted = True
            for process in list(getattr(pool, "_processes", {}).values()):  # ours; no public API before 3.14
                process.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _collect(self, f: Future, check: SuiteCheck) -> None:
        try:
            rep = f.result()
        except CancelledError:
            return
        except Exception as e:  # noqa: BLE001 - a worker died (out of memory, killed)
            rep = CheckReport(check.name, False, "error", error=" ".join(f"{type(e).__name__}: {e}".split()),
                              detail=traceback.format_exc())
        if rep is None:  # dequeued after the stop: never started
            return
        self._finish(check, rep)


_STOP = None


def _init_worker(stop) -> None:
    """In each worker: Ctrl-C is the parent's to handle; the shared event says when to stop."""
    global _STOP
    _STOP = stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _EventObserver(Observer):
    def should_stop(self) -> str:
        if _STOP is not None and _STOP.is_set():
            self.request_stop("interrupted")
        return self.stop_reason


def _work(check: SuiteCheck, trace_dir: Path, deadline: float | None) -> CheckReport | None:
    """A check in a worker; None when the suite was interrupted, or its time was up, before the check began."""
    budgeted = within(check, deadline)
    if budgeted is None or (_STOP is not None and _STOP.is_set()):
        return None
    return run_one(budgeted, trace_dir, _EventObserver())


def within(check: SuiteCheck, deadline: float | None) -> SuiteCheck | None:
    """The check limited to what is left before ``deadline`` (time.monotonic(), one clock for
    every process on the machine), its own limit too; None when less than a second is left."""
    if deadline is None:
        return check
    now = time.monotonic()
    left = deadline - now
    if left < 1.0:
        return None
    own = check.run.options.time_limit
    options = replace(check.run.options, time_limit=min(own, left) if own else left, started=now)
    return replace(check, run=replace(check.run, options=options))
