"""advise-config against the main job, side by side on this machine (issue 54: the sweep
`advise-config --rf 2 --retries 1` within five times `check-model --rf 3 --min-isr 2`).

    python bench/bench_advise.py [--runs 2] [ADVISE ARGS ...]

Runs the two commands alternately, each as a user runs it (a fresh process, its default
engine), and prints each run's wall time and peak memory (the largest process of its
tree, sampled every 50 ms), then the ratio of the medians.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

MAIN = ["check-model", "--rf", "3", "--min-isr", "2"]
ADVISE = ["advise-config", "--rf", "2", "--retries", "1"]


def timed(argv: list[str], folder: Path) -> tuple[float, int]:
    """Wall seconds and the peak resident memory of the largest process in the tree."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    root, peak = psutil.Process(proc.pid), 0
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            peak = max([peak, *(p.memory_info().rss for p in tree if p.is_running())])
        except psutil.Error:
            pass
        time.sleep(0.05)
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} exited {proc.returncode}")
    return time.monotonic() - started, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("advise", nargs="*", help="advise-config's arguments (default: --rf 2 --retries 1)")
    args = parser.parse_args()
    bindir = Path(sys.executable).parent
    commands = {"main job": MAIN, "advise": ["advise-config", *args.advise] if args.advise else ADVISE}
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            for name, argv in commands.items():
                folder = Path(tmp) / f"{name}-{run}".replace(" ", "-")
                folder.mkdir()
                took, peak = timed([str(bindir / argv[0]), *argv[1:]], folder)
                seconds[name].append(took)
                print(f"{name:<9} {' '.join(argv):<45} {took:7.2f} s  peak {peak / 2**20:,.0f} MiB", flush=True)
                shutil.rmtree(folder)
    ratio = statistics.median(seconds["advise"]) / statistics.median(seconds["main job"])
    print(f"advise / main job (medians): {ratio:.1f}x")


if __name__ == "__main__":
    main()
