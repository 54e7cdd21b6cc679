"""Simulation: walks and steps per second, and the time to each known violation and to its shrunk trace.

Throughput: a fixed number of walks with no property to stop them (``--continue``), on the
batch kernel and one walk at a time, in one process and in two processes side by side (two
seeds: simulation parallelises as independent runs), printing walks/s, steps/s (each step
is a state visited and checked), distinct states and peak memory. Known violations: for
each, the seconds to the first deciding walk and to the shrunk trace, the lengths found
and shrunk, and BFS's shortest where BFS can finish.

    .venv/bin/python bench/bench_simulate.py                 # throughput on the main job, then the violations
    .venv/bin/python bench/bench_simulate.py --only throughput --walks 400000
    .venv/bin/python bench/bench_simulate.py --only violations
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

from isrcheck.checker import CheckOptions, get_engine
from isrcheck.checker.engine import peak_rss
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import select

MAIN_JOB = dict(rf=3, min_isr=2)
# (name, configuration, property, BFS's shortest or None where BFS cannot finish in ten minutes)
VIOLATIONS = [
    ("acks=1 loses an acknowledged write", dict(rf=3, acks="1"), "acked-survive", 6),
    ("unclean election, two crashes", dict(rf=3, min_isr=2, crashes=2, unclean_election=True), "committed-survive", 12),
    ("hw-truncation (before KIP-101)", dict(rf=3, min_isr=2, protocol="hw-truncation"), "committed-survive", 11),
    ("a lost disk in ZooKeeper mode", dict(rf=3, min_isr=2, disk_loss=1), "committed-survive", 13),
    ("3.6 without strict min ISR, rf 2", dict(rf=2, min_isr=2, unclean_election=True, kafka_version="3.6"),
     "committed-survive", 9),
    ("acks=1 at rf 5, 3 records, epochs to 4, 2 crashes", dict(rf=5, max_records=3, max_leader_epoch=4, crashes=2,
                                                            acks="1"), "acked-survive", None),
    ("unclean election at rf 5, 2 records, 2 crashes", dict(rf=5, max_records=2, crashes=2, unclean_election=True,
                                                          min_isr=2), "committed-survive", None),
]


def _throughput(config: dict, walks: int, kernel: str, seed: int) -> dict:
    c = ModelConfig(**config).validate()
    model = ReplicationModel(c)
    started = time.perf_counter()
    r = get_engine("simulate", seed=seed, walks=walks, kernel=kernel).check(model, [], CheckOptions(explore_all=True))
    cov = r.coverage
    return {"walks": cov.walks, "steps": cov.steps, "distinct": cov.distinct, "seconds": cov.walk_seconds,
            "wall": time.perf_counter() - started, "peak": peak_rss()}


def throughput(walks: int) -> None:
    print("throughput on the main job (rf 3, min-isr 2), no property to stop the walks:")
    for kernel, n in (("vector", walks), ("scalar", max(1, walks // 100))):
        for processes in (1, 2):
            started = time.perf_counter()
            with ProcessPoolExecutor(processes) as pool:
                runs = list(pool.map(_throughput, [MAIN_JOB] * processes, [n] * processes, [kernel] * processes,
                                     range(processes)))
            wall = time.perf_counter() - started
            w, s = sum(r["walks"] for r in runs), sum(r["steps"] for r in runs)
            distinct = ", ".join(f"{r['distinct']:,}" for r in runs)
            walking = max(r["seconds"] for r in runs)
            print(f"  {kernel:>6} kernel, {processes} process{'es' if processes > 1 else ''}: {w:,} walks, {s:,} steps "
                  f"in {walking:.2f} s walking ({wall:.2f} s with start-up): {w / walking:,.0f} walks/s, "
                  f"{s / walking:,.0f} steps/s; distinct states {distinct}; "
                  f"peak memory {max(r['peak'] for r in runs) / 2**20:,.0f} MiB per process")


def violations(time_limit: float) -> None:
    print(f"known violations (vector kernel, swarm, seed 0, time limit {time_limit:.0f} s each):")
    for name, config, prop, bfs in VIOLATIONS:
        c = ModelConfig(**config).validate()
        model = ReplicationModel(c)
        started = time.perf_counter()
        r = get_engine("simulate", seed=0).check(model, select(c, [prop], "simulate"),
                                                 CheckOptions(time_limit=time_limit))
        p, cov = r.by_name(prop), r.coverage
        shortest = f"BFS's shortest {bfs}" if bfs else "beyond BFS"
        if p.path is None:
            print(f"  {name}: {prop} not found in {time.perf_counter() - started:.1f} s ({cov.walks:,} walks); "
                  f"{shortest}")
            continue
        print(f"  {name}: {prop} found after {cov.found_after[prop]:.2f} s in a path of {cov.found_length[prop]} "
              f"states, shrunk to {p.trace_length} by {cov.shrunk_after[prop]:.2f} s ({shortest}); "
              f"{cov.walks:,} walks, kernel {r.kernel}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["throughput", "violations"])
    ap.add_argument("--walks", type=int, default=200_000, help="walks per process on the vector kernel "
                                                                "(a hundredth of them one walk at a time)")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per known violation")
    args = ap.parse_args()
    if args.only in (None, "throughput"):
        throughput(args.walks)
    if args.only in (None, "violations"):
        violations(args.time_limit)


if __name__ == "__main__":
    main()
