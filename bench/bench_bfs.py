"""Benchmark of the explicit engine: states/s and bytes per state, per configuration.

    python bench/bench_bfs.py                         # every configuration below
    python bench/bench_bfs.py kip320-rf3               # one by name
    python bench/bench_bfs.py --workers 2 main-job     # in 2 worker processes

This is the scalar kernel's bench (``--kernel scalar``); ``bench_vector.py`` compares
the two kernels with the same child process.

Each configuration runs in a fresh interpreter so that peak memory is its own;
bytes per state is (peak RSS - the RSS of an interpreter that imported isrcheck
and built the model) / distinct states. With worker processes the peak is the sum of
every process's peak and the baseline is subtracted once (forked workers share the
interpreter's pages until they touch them), which overstates their bytes per state. TLC's figure for the kip-320 rf 3 space
on our 2-core machines is about 57 s for 737,794 states (1,967,560 generated).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CONFIGS = {
    "kip320-rf2": ["--core", "--protocol", "kip-320", "--rf", "2", "--no-symmetry", "--continue"],
    "hwtrunc-rf2": ["--core", "--protocol", "hw-truncation", "--rf", "2", "--no-symmetry", "--continue"],
    "kip101-rf2": ["--core", "--protocol", "kip-101", "--rf", "2", "--no-symmetry", "--continue"],
    "kip279-rf2": ["--core", "--protocol", "kip-279", "--rf", "2", "--no-symmetry", "--continue"],
    "kip320-rf3": ["--core", "--protocol", "kip-320", "--rf", "3", "--no-symmetry", "--continue"],
    "kip320-rf3-sym": ["--core", "--protocol", "kip-320", "--rf", "3", "--symmetry", "--continue"],
    "main-job": ["--rf", "3", "--min-isr", "2", "--kafka-version", "3.9"],  # 3.9: figures compare across sessions
}

# The child honours check-model's --kernel, BENCH_WORKERS (threads of the vector kernel, or
# processes with --processes; processes of the scalar one) and BENCH_DERIVED (the scalar kernel runs the successor
# function derived from the action definitions instead of the hand-fused one of fused.py);
# "tables" is the time to build the model's tables (and the vector kernel's), and on two-word keys to load the
# compiled loops (checker/vector_loops.py: Numba, some 125 MiB resident), before the search and the memory baseline;
# --checkpoint DIR is honoured too (the search then saves itself there, as check-model's does),
# and so are --property (default: every state property that applies) and --max-memory.
CHILD = r"""
import json, os, resource, sys, time
from click.core import ParameterSource
from isrcheck.checker import CheckOptions
from isrcheck.checker.engine import current_rss, peak_rss
from isrcheck.cli.check_model import main, model_config_from
from isrcheck.cli.runner import CheckRun, run_check
from isrcheck.model import ReplicationModel

if os.environ.get("BENCH_DERIVED"):
    import isrcheck.model.replication
    isrcheck.model.replication.make_successors = None  # Model then runs the definitions (ops_int)
ctx = main.make_context("check-model", sys.argv[1:])
p = ctx.params
config = model_config_from(p, {k for k in p if ctx.get_parameter_source(k) is ParameterSource.COMMANDLINE})
engine_args = {"kernel": p["kernel"]}
if os.environ.get("BENCH_WORKERS"):
    engine_args["workers"] = int(os.environ["BENCH_WORKERS"])
if p.get("processes"):  # the vector kernel's workers as processes (older builds: no such option)
    engine_args["processes"] = True
import numpy  # imported by the vector kernel: part of the baseline, not of the states
t = time.perf_counter()
model = ReplicationModel(config)
model.symmetry  # imports and tables in place before the baseline is read
if p["kernel"] == "vector":
    from isrcheck.model.kernel import kernel_for
    from isrcheck.properties import select
    kernel = kernel_for(model)  # kept for this configuration: the run below reuses it
    for prop in select(config, list(p["properties"]) or None):
        kernel.predicate(prop)
    if p["symmetry"]:
        kernel.supports_symmetry()
    if not kernel.exact:  # the compiled loops of a search on hashed keys: imports, as numpy's above
        try:
            from isrcheck.checker.vector_loops import load
            try:
                load(kernel, p["symmetry"])  # and the compiled canonical forms
            except TypeError:  # older builds: no symmetry loop
                load()
        except ImportError:  # older builds: none
            pass
tables = time.perf_counter() - t
baseline = current_rss()
t, cpu = time.perf_counter(), time.process_time()
options = CheckOptions(symmetry=p["symmetry"], explore_all=p["explore_all"], max_memory=p["max_memory"])
run = CheckRun(config, "bfs", tuple(p["properties"]), options, None,
               engine_args=engine_args, checkpoint_dir=p["checkpoint_dir"])
result = run_check(run).result
s = result.stats
wall = time.perf_counter() - t
cpu = time.process_time() - cpu
children = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu += children.ru_utime + children.ru_stime
procs = 1 + (result.workers if getattr(result, "processes", result.kernel == "scalar" and result.workers > 1) else 0)
peak = s.peak_memory if procs > 1 else peak_rss()
print(json.dumps(dict(states=s.states, full=s.full_states, generated=s.generated, depth=s.depth,
                      wall=wall, cpu=cpu, tables=tables, peak=peak, baseline=baseline,
                      kernel=result.kernel, workers=result.workers, complete=result.complete, on_disk=getattr(s, "on_disk", 0))))  # older builds: none
"""


def run(name: str, args: list[str] | None = None, workers: int | None = None, derived: bool = False) -> dict:
    """One configuration in a fresh interpreter; ``args`` default to this bench's own (scalar kernel)."""
    env = dict(os.environ, **({"BENCH_WORKERS": str(workers)} if workers else {}),
               **({"BENCH_DERIVED": "1"} if derived else {}))
    argv = args if args is not None else [*CONFIGS[name], "--kernel", "scalar"]
    out = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    workers = None
    if "--workers" in argv:
        i = argv.index("--workers")
        workers = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2 :]
    names = argv or list(CONFIGS)
    print(f"{'config':<16}{'distinct':>11}{'(full)':>12}{'generated':>11}{'depth':>6}{'wall s':>8}"
          f"{'states/s':>10}{'peak MiB':>9}{'B/state':>8}{'cpu s':>7}")
    for name in names:
        r = run(name, workers=workers)
        per_state = (r["peak"] - r["baseline"]) / r["states"]
        full = f"{r['full']:,}" if r["full"] else ""
        print(f"{name:<16}{r['states']:>11,}{full:>12}{r['generated']:>11,}{r['depth']:>6}{r['wall']:>8.2f}"
              f"{r['states'] / r['wall']:>10,.0f}{r['peak'] / 2**20:>9.0f}{per_state:>8.0f}{r['cpu']:>7.1f}",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
