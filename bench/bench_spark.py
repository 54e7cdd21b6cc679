"""Benchmark of the Spark engine against the single-process BFS engine.

    python bench/bench_spark.py                        # kip320-rf3 on bfs, local[1], local[2], cluster
    python bench/bench_spark.py --config kip320-rf2    # a quick configuration
    python bench/bench_spark.py local[2] cluster       # some setups only
    python bench/bench_spark.py local[1] local[1]-vector   # Spark on the scalar and the vector kernel

Setups: ``bfs`` (the reference engine, one process, one thread a core as ``check-model``
runs it), ``local[1]`` and ``local[2]``
(Spark embedded in the driver's JVM), ``cluster`` (a standalone master and two
workers of one core and 1 GiB each on 127.0.0.1, started by this benchmark
through pyspark's ``spark-class`` and not timed; ``cluster1``: the same with one
worker, to see what the second one gives). The Spark setups run the scalar
kernel; with ``-vector`` appended (``local[1]-vector``, ``cluster-vector``) the
vector kernel (``--kernel vector``, executors working on arrays). Each setup runs in a fresh
interpreter. Printed per setup: distinct states and depth (checked against BFS),
Spark start-up seconds (JVM and SparkContext, not in the search time), search
seconds, states/s over the search, CPU seconds of every process involved (the
fair figure on a shared machine), and the peak of the summed resident memory of
every process involved (driver, JVMs, Python workers; for the cluster also its
master, workers and executors), sampled every 0.1 s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CONFIGS = {
    "kip320-rf3": ["--core", "--protocol", "kip-320", "--rf", "3", "--no-symmetry", "--continue"],
    "kip320-rf2": ["--core", "--protocol", "kip-320", "--rf", "2", "--no-symmetry", "--continue"],
    "hwtrunc-rf2": ["--core", "--protocol", "hw-truncation", "--rf", "2", "--no-symmetry", "--continue"],
    "kip320-rf3-e3": ["--core", "--protocol", "kip-320", "--rf", "3", "--no-symmetry", "--continue",
                      "--max-leader-epoch", "3"],  # 10 M states, 32 levels: issue 22's size
    "rf4-min-isr2": ["--rf", "4", "--min-isr", "2", "--max-records", "1"],  # 17.4 M states, symmetry, two-word keys
}
SETUPS = ("bfs", "local[1]", "local[2]", "cluster")  # also cluster1: the cluster with one of its two workers

CHILD = r"""
import json, sys, threading, time
import psutil
from click.core import ParameterSource
from isrcheck.checker import CheckOptions, get_engine
from isrcheck.cli.check_model import main, model_config_from
from isrcheck.model import ReplicationModel
from isrcheck.properties import select

setup, args = sys.argv[1], sys.argv[2:]
setup, _, kernel = setup.partition("-")
kernel = kernel or "scalar"
ctx = main.make_context("check-model", args)
p = ctx.params
config = model_config_from(p, {k for k in p if ctx.get_parameter_source(k) is ParameterSource.COMMANDLINE})
model = ReplicationModel(config)
options = CheckOptions(symmetry=p["symmetry"], explore_all=p["explore_all"])


class Sampler:
    # Peak of the summed RSS and the CPU seconds of a set of process trees.
    def __init__(self, roots):
        self.roots, self.peak, self.cpu, self.done = roots, 0, {}, threading.Event()
        self.sample()
        self.cpu_before = dict(self.cpu)  # what was spent before (the cluster's own start) is not counted
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def sample(self):
        total = 0
        for root in self.roots:
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                continue
            for proc in procs:
                try:
                    with proc.oneshot():
                        total += proc.memory_info().rss
                        t = proc.cpu_times()
                        self.cpu[proc.pid] = t.user + t.system
                except psutil.Error:
                    pass
        self.peak = max(self.peak, total)

    def run(self):
        while not self.done.wait(0.1):
            self.sample()

    def stop(self):
        self.sample()
        self.done.set()
        self.thread.join()
        return self.peak, sum(self.cpu.values()) - sum(self.cpu_before.values())


me = psutil.Process()
cluster = None
roots = [me]
workers = {"cluster": 2, "cluster1": 1}.get(setup, 0)
if workers:
    from isrcheck.checker.spark_cluster import LocalCluster
    cluster = LocalCluster(workers=workers, cores=1, memory="1g").start()
    roots += [cluster.master, *cluster.workers]
    master = cluster.master_url
else:
    master = setup
try:
    sampler = Sampler(roots)
    startup = 0.0
    if setup == "bfs":  # as check-model runs it: one thread a core
        from isrcheck.cli.common import available_cores
        engine = get_engine("bfs", workers=available_cores())
    else:
        from isrcheck.checker.spark_context import spark_context
        t = time.perf_counter()
        sc = spark_context(master)
        if cluster is not None:  # wait for both executors: their start is start-up, not search
            while sc._jsc.sc().getExecutorMemoryStatus().size() < workers + 1:
                time.sleep(0.1)
        startup = time.perf_counter() - t
        engine = get_engine("spark", master=master, kernel=kernel)
    t = time.perf_counter()
    result = engine.check(model, select(config), options)
    wall = time.perf_counter() - t
    peak, cpu = sampler.stop()
    s = result.stats
    if setup != "bfs" and result.kernel != kernel:
        raise SystemExit(f"asked for the {kernel} kernel, ran {result.kernel}: {result.kernel_note}")
    print(json.dumps(dict(states=s.states, generated=s.generated, depth=s.depth, startup=startup, wall=wall,
                          peak=peak, cpu=cpu, complete=result.complete)))
finally:
    if setup != "bfs":
        from pyspark import SparkContext
        if SparkContext._active_spark_context is not None:
            SparkContext._active_spark_context.stop()
    if cluster is not None:
        cluster.stop()
"""


def run(setup: str, config: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, setup, *CONFIGS[config]], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{setup}: failed\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("setups", nargs="*", default=list(SETUPS),
                        help=f"any of {', '.join(SETUPS)}; a Spark setup with -vector appended: the vector kernel")
    parser.add_argument("--config", choices=list(CONFIGS), default="kip320-rf3")
    args = parser.parse_args()
    print(f"configuration {args.config}: check-model {' '.join(CONFIGS[args.config])}")
    print(f"{'setup':<16}{'distinct':>10}{'depth':>6}{'startup s':>10}{'search s':>9}{'states/s':>10}"
          f"{'CPU s':>8}{'peak MiB':>9}  agrees with bfs")
    reference = None
    for setup in args.setups:
        r = run(setup, args.config)
        if setup == "bfs":
            reference = r
        agrees = "" if reference is None or setup == "bfs" else (
            "yes" if (r["states"], r["depth"], r["generated"]) == (reference["states"], reference["depth"],
                                                                   reference["generated"]) else "NO"
        )
        print(f"{setup:<16}{r['states']:>10,}{r['depth']:>6}{r['startup']:>10.1f}{r['wall']:>9.1f}"
              f"{r['states'] / r['wall']:>10,.0f}{r['cpu']:>8.1f}{r['peak'] / 2**20:>9.0f}  {agrees}", flush=True)


if __name__ == "__main__":
    main()
