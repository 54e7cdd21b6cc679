"""Benchmark of the vector kernel against the scalar one, on one and two cores.

    python bench/bench_vector.py                      # every target below, every kernel
    python bench/bench_vector.py kip320-rf3-e3         # one target by name
    python bench/bench_vector.py --runs vector-1,vector-2 kip320-rf3
    python bench/bench_vector.py --runs scalar,derived kip320-rf3-sym  # fused vs derived scalar

Runs reuse ``bench_bfs.py``'s child process (a fresh interpreter per run, tables
built and timed before the memory baseline is read). Per target and run: tables
seconds, search seconds and their sum, CPU seconds of the search (all threads),
distinct and generated states, states per second (distinct / search seconds),
peak RSS and bytes per state ((peak - baseline) / distinct). "vector-2" is the
vector kernel with its frontier split across 2 threads, "vector-2p" across 2 worker
processes (``--processes``); "scalar-2" the scalar kernel in 2 worker processes (for
both, the memory of every process, shared pages once, less the baseline). "derived"
(only when asked for) is the scalar kernel on the successor function derived from the
action definitions (``ops_int.DerivedSuccessors``) instead of the hand-fused ``fused.py``.
The issue's targets: kip320-rf3 within 1 s including tables, kip320-rf3-e3 within
6 s on both cores at 60 bytes a state at most, main-job (the Kafka model) within 15 s,
main-job-checkpoint within 1.5 times main-job on the same run; main-job-can-recover (the
whole space, its graph and the graph property) and main-job-liveness (the same with
rejoins-isr under weak fairness) within 3 times main-job.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_bfs import run  # noqa: E402 - the scalar bench's child process, extended with --kernel

CORE3 = ["--core", "--protocol", "kip-320", "--rf", "3", "--continue"]
MAIN = ["--rf", "3", "--min-isr", "2", "--kafka-version", "3.9"]  # the main job on 3.9 (see "main-job" below)
TARGETS = {
    "kip320-rf3": [*CORE3, "--no-symmetry"],
    "kip320-rf3-sym": [*CORE3, "--symmetry"],
    "kip279-rf3-sym": ["--core", "--protocol", "kip-279", "--rf", "3", "--continue", "--symmetry"],
    "kip320-rf3-e3": [*CORE3, "--no-symmetry", "--max-leader-epoch", "3"],
    "kip320-rf3-e3-200M": [*CORE3, "--no-symmetry", "--max-leader-epoch", "3", "--max-memory", "200M"],  # out of core
    # the Kafka model, symmetry on: check-model's main job on 3.9, the default until 2026-11-27, kept so
    # that figures compare across sessions; the default release's is main-job-4.1
    "main-job": MAIN,
    "main-job-3.6": ["--rf", "3", "--min-isr", "2", "--kafka-version", "3.6"],  # the main job before strict min ISR
    # the main job on KRaft: 3.9's in KRaft mode (AlterPartition), and 4.1's (with ELR)
    "main-job-kraft": [*MAIN, "--kraft"],
    "main-job-4.1": ["--rf", "3", "--min-isr", "2", "--kafka-version", "4.1"],
    # issue 22's memory target (at most 16 bytes a state): the three-record main job on 3.9 (34.5 M states)
    "main-job-r3": [*MAIN, "--max-records", "3"],
    # issue 22's past-memory target: the same under --max-memory, in memory (1G) and out of core (400M)
    "main-job-r3-1G": [*MAIN, "--max-records", "3", "--max-memory", "1G"],
    "main-job-r3-400M": [*MAIN, "--max-records", "3", "--max-memory", "400M"],
    "main-job-4.1-200M": ["--rf", "3", "--min-isr", "2", "--kafka-version", "4.1", "--max-memory", "200M"],
    # issue 22's rf 4 and 5 on the default release, with the bounds that let them finish
    "rf4-min-isr2": ["--rf", "4", "--min-isr", "2", "--max-records", "1"],
    "rf4-min-isr3": ["--rf", "4", "--min-isr", "3", "--max-records", "1"],
    "rf5-min-isr3": ["--rf", "5", "--min-isr", "3", "--max-records", "1", "--max-leader-epoch", "1"],
    # three-word keys (40 million states, about a minute on two processes; the scalar kernel before)
    "rf5-min-isr3-r2": ["--rf", "5", "--min-isr", "3", "--max-records", "2", "--max-leader-epoch", "1"],
    # end to end (issue 18): the main job with an idempotent producer that retries once; with a
    # consumer committing after processing that crashes once too (one record); the rf 2 delivery
    # space without idempotence (the scalar kernel runs the producer's definitions, model/fused.py)
    "main-job-retries": [*MAIN, "--retries", "1"],
    "main-job-delivery": [*MAIN, "--retries", "1", "--commit", "after",
                          "--consumer-crashes", "1", "--auto-offset-reset", "earliest", "--max-records", "1"],
    "delivery-rf2": ["--rf", "2", "--kafka-version", "3.9", "--crashes", "0", "--retries", "1", "--no-idempotent",
                     "--commit", "after", "--consumer-crashes", "1", "--auto-offset-reset", "earliest",
                     "--property", "weak-isr"],
    # the main job saving a checkpoint at every level (issue 17: within 1.5 times main-job)
    "main-job-checkpoint": [*MAIN, "--checkpoint", "{fresh folder}"],
    # the main job's space with its state graph kept and can-recover decided over it (issue 19)
    "main-job-can-recover": [*MAIN, "--property", "can-recover"],
    # the same with the liveness property rejoins-isr under weak fairness (issue 19: within 3 times main-job)
    "main-job-liveness": [*MAIN, "--property", "can-recover", "--property", "rejoins-isr"],
}
RUNS = {  # name -> (kernel, threads, the derived successor function instead of the fused one)
    "scalar": ("scalar", None, False),
    "scalar-2": ("scalar", 2, False),
    "vector-1": ("vector", 1, False),
    "vector-2": ("vector", 2, False),
    "vector-2p": ("vector", 2, False),  # two processes (--processes), not threads
    "derived": ("scalar", None, True),  # not in the default runs: some 40 times slower than "scalar"
}
DEFAULT_RUNS = ["scalar", "scalar-2", "vector-1", "vector-2"]


def main(argv: list[str]) -> None:
    if {"-h", "--help"} & set(argv):
        print(__doc__ + "\ntargets: " + ", ".join(TARGETS) + "\nruns: " + ", ".join(RUNS))
        return
    runs = DEFAULT_RUNS
    if "--runs" in argv:
        i = argv.index("--runs")
        runs = argv[i + 1].split(",") if i + 1 < len(argv) else []
        argv = argv[:i] + argv[i + 2 :]
    names = argv or list(TARGETS)
    unknown = [n for n in names if n not in TARGETS] + [r for r in runs if r not in RUNS] + ([] if runs else ["--runs ''"])
    if unknown:
        print(f"bench_vector.py: unknown {', '.join(unknown)} (--help lists the targets and runs)", file=sys.stderr)
        sys.exit(2)
    print(f"{'target':<20}{'run':<10}{'tables s':>9}{'search s':>9}{'total s':>8}{'cpu s':>7}{'distinct':>11}"
          f"{'generated':>12}{'states/s':>11}{'peak MiB':>9}{'B/state':>8}")
    for name in names:
        for label in runs:
            kernel, threads, derived = RUNS[label]
            with tempfile.TemporaryDirectory(prefix="isrcheck-bench-") as tmp:
                args = [a.replace("{fresh folder}", f"{tmp}/ck") for a in TARGETS[name]]
                split = ["--processes"] if label.endswith("p") else []
                r = run(name, [*args, "--kernel", kernel, *split], workers=threads, derived=derived)
            per_state = (r["peak"] - r["baseline"]) / r["states"]
            print(f"{name:<20}{label:<10}{r['tables']:>9.2f}{r['wall']:>9.2f}{r['tables'] + r['wall']:>8.2f}"
                  f"{r['cpu']:>7.2f}{r['states']:>11,}{r['generated']:>12,}{r['states'] / r['wall']:>11,.0f}"
                  f"{r['peak'] / 2**20:>9.0f}{per_state:>8.0f}{'  out of core' if r.get('on_disk') else ''}"
                  f"{'' if r.get('complete', True) else '  INCOMPLETE'}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
