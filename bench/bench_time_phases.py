"""Where a vector search's time goes, by phase and thread, and what a second core gives.

    python bench/bench_time_phases.py --rf 4 --min-isr 2 --max-records 1      # 1 and 2 threads
    python bench/bench_time_phases.py --pair --rf 4 --min-isr 2 --max-records 1  # and two 1-thread runs at once

check-model's options select the configuration. Each run is a fresh interpreter (this
script again, with ``BENCH_WORKERS``): tables are built first and not timed. Per run:
the search's wall and CPU seconds, then per phase and thread (the main thread, or the
pool's) the seconds spent inside it, summed over calls: wall time on that thread, so a
phase that waits for the interpreter lock or for memory shows it. Phases nest (a
chunk's expansion holds the kernel's ``expand``); "rest of _new_states" is what a
chunk's new states cost outside the listed calls (gathers, filters, sorts' gathers).

``--pair`` also runs two one-thread searches at once, as two processes: on a machine
whose two cores share nothing, each would run at its speed alone. What they lose is
the ceiling any split of one search across the two cores meets (threads or processes).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

PHASES = {  # (module, class, method) -> label
    ("isrcheck.checker.bfs_vector", "VectorSearch", "_expand_chunk"): "chunk (all)",
    ("isrcheck.checker.bfs_vector", "VectorSearch", "_new_states"): "_new_states",
    ("isrcheck.checker.bfs_vector", "VectorSearch", "_unseen"): "level merge",
    ("isrcheck.checker.bfs_vector", "VectorSearch", "_store"): "store",
    ("isrcheck.model.kernel", "VectorKernel", "expand"): "expand",
    ("isrcheck.model.kernel", "VectorKernel", "canonical_and_orbits"): "canonical",
    ("isrcheck.model.kernel", "VectorKernel", "evaluate"): "properties",
    ("isrcheck.checker.vector_store", "VisitedSet", "locate"): "visited search",
    ("isrcheck.checker.vector_store", "VisitedSet", "add"): "visited merge",
    ("isrcheck.checker.vector_arrays", "LevelParts", "add"): "parts merges",
}
INSIDE_NEW_STATES = ("canonical", "properties", "visited search")


def _timed(totals: dict, lock: threading.Lock) -> None:
    import importlib

    for (module, cls, method), label in PHASES.items():
        owner = getattr(importlib.import_module(module), cls)
        inner = getattr(owner, method)

        def wrapper(*args, _inner=inner, _label=label, **kw):
            start = time.perf_counter()
            try:
                return _inner(*args, **kw)
            finally:
                where = "main" if threading.current_thread() is threading.main_thread() else "pool"
                with lock:
                    key = (_label, where)
                    totals[key] = totals.get(key, 0.0) + time.perf_counter() - start

        setattr(owner, method, wrapper)


def child(argv: list[str]) -> None:
    """One search in this process, with BENCH_WORKERS threads; prints its phases."""
    from click.core import ParameterSource

    from isrcheck.checker import CheckOptions
    from isrcheck.cli.check_model import main as check_model, model_config_from
    from isrcheck.cli.runner import CheckRun, run_check
    from isrcheck.model import ReplicationModel
    from isrcheck.model.kernel import kernel_for
    from isrcheck.properties import select

    ctx = check_model.make_context("check-model", argv)
    p = ctx.params
    config = model_config_from(p, {k for k in p if ctx.get_parameter_source(k) is ParameterSource.COMMANDLINE})
    kernel = kernel_for(ReplicationModel(config))  # the tables, outside the timing (as bench_vector's)
    for prop in select(config, list(p["properties"]) or None):
        kernel.predicate(prop)
    if p["symmetry"]:
        kernel.supports_symmetry()
    totals: dict = {}
    _timed(totals, threading.Lock())
    workers = int(os.environ.get("BENCH_WORKERS", "1"))
    options = CheckOptions(symmetry=p["symmetry"], explore_all=p["explore_all"])
    wall, cpu = time.perf_counter(), time.process_time()
    result = run_check(CheckRun(config, "bfs", tuple(p["properties"]), options, None,
                                engine_args={"kernel": "vector", "workers": workers})).result
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    stats = result.stats
    print(f"{workers} thread(s): {stats.states:,} states, {stats.generated:,} generated; search {wall:.2f} s wall, "
          f"{cpu:.2f} s CPU; {stats.states / wall:,.0f} states/s")
    for where in ("pool", "main"):
        rows = sorted(((label, s) for (label, w), s in totals.items() if w == where), key=lambda r: -r[1])
        inside = sum(totals.get((label, where), 0.0) for label in INSIDE_NEW_STATES)
        if ("_new_states", where) in totals:
            rows.append(("rest of _new_states", totals[("_new_states", where)] - inside))
        for label, seconds in rows:
            if seconds >= 0.005:
                print(f"  {where:4s} {label:20s} {seconds:7.2f} s")
    sys.stdout.flush()


def main(argv: list[str]) -> None:
    pair = "--pair" in argv
    argv = [a for a in argv if a != "--pair"]
    me = [sys.executable, __file__, "--child", *argv]
    for workers in ("1", "2"):
        subprocess.run(me, env={**os.environ, "BENCH_WORKERS": workers}, check=True)
    if pair:
        print("two 1-thread searches at once, as two processes:")
        runs = [subprocess.Popen(me, env={**os.environ, "BENCH_WORKERS": "1"}, stdout=subprocess.PIPE, text=True)
                for _ in range(2)]
        for run in runs:
            out, _ = run.communicate()
            print("  " + out.splitlines()[0])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
    else:
        main(sys.argv[1:])
