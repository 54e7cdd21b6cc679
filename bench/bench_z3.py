"""Z3 versus BFS: time to the shortest counterexample, and how deep BMC gets in a minute.

Usage: python bench/bench_z3.py [--limit SECONDS] [--only ttc|depth]

1. Time to the shortest counterexample of weak-isr on the rf 3 core machine of
   hw-truncation, kip-101 and kip-279: BFS (symmetry reduction on, the default)
   and Z3 BMC (--prove none), each in its own process through check-model, with
   the trace lengths that must agree.
2. The deepest depth that BMC fully checks within the limit (default 60 s) on the
   kip-320 core machine at rf 3 and rf 5, strong-isr, beside the depth that BFS
   completes in the same time.

Each figure is one run of ``check-model --format json`` (wall seconds as the tool
reports them, peak resident memory of that process). The machine may be shared:
rerun before quoting a figure, and compare figures from the same machine only.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys


def check_model(*args: str, timeout: float) -> dict:
    cmd = [sys.executable, "-m", "isrcheck.cli.check_model", "--format", "json", "--no-progress",
           "--trace-dir", "/tmp/isrcheck-bench-traces", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode not in (0, 1, 3):
        raise SystemExit(f"check-model failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


def mib(report: dict) -> str:
    return f"{report['peak_memory_bytes'] / 2**20:,.0f} MiB"


def time_to_counterexample(limit: float) -> None:
    print("time to the shortest counterexample: weak-isr, core machine, rf 3, bounds 2/2/2")
    print(f"{'revision':<15}{'engine':<8}{'status':<10}{'length':>7}{'seconds':>10}{'states':>12}{'memory':>11}")
    for protocol in ("hw-truncation", "kip-101", "kip-279"):
        lengths = set()
        for engine in ("bfs", "z3"):
            extra = ["--prove", "none"] if engine == "z3" else []
            r = check_model("--core", "--rf", "3", "--protocol", protocol, "--property", "weak-isr",
                            "--engine", engine, "--time-limit", f"{limit * 10:g}s", *extra, timeout=limit * 20)
            p = r["properties"][0]
            lengths.add(p["trace_length"])
            states = f"{r['states']:,}" if engine == "bfs" else "symbolic"
            print(f"{protocol:<15}{engine:<8}{p['status']:<10}{p['trace_length'] or '-':>7}{r['seconds']:>10.2f}"
                  f"{states:>12}{mib(r):>11}")
        if len(lengths) != 1:
            print(f"  !! the engines disagree on the shortest length: {sorted(lengths, key=str)}")


def depth_in_limit(limit: float) -> None:
    print(f"\ndeepest depth fully checked in {limit:g} s: kip-320 core machine, strong-isr")
    print(f"{'rf':<4}{'engine':<8}{'depth':>6}{'complete':>10}{'seconds':>10}{'states':>12}{'memory':>11}")
    for rf in ("3", "5"):
        for engine in ("bfs", "z3"):
            extra = ["--prove", "none"] if engine == "z3" else []
            r = check_model("--core", "--rf", rf, "--protocol", "kip-320", "--property", "strong-isr",
                            "--engine", engine, "--max-depth", "200", "--time-limit", f"{limit:g}s", *extra,
                            timeout=limit * 4 + 120)
            states = f"{r['states']:,}" if engine == "bfs" else "symbolic"
            done = "whole" if r["exhausted"] and engine == "bfs" else ("yes" if r["complete"] else "no")
            print(f"{rf:<4}{engine:<8}{r['depth']:>6}{done:>10}{r['seconds']:>10.1f}{states:>12}{mib(r):>11}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=60.0, help="seconds for the depth benchmark (default 60)")
    parser.add_argument("--only", choices=["ttc", "depth"], help="run one of the two benchmarks")
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {platform.machine()}, z3 {_z3_version()}")
    if args.only in (None, "ttc"):
        time_to_counterexample(args.limit)
    if args.only in (None, "depth"):
        depth_in_limit(args.limit)


def _z3_version() -> str:
    import z3

    return z3.get_version_string()


if __name__ == "__main__":
    main()
