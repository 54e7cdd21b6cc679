"""isrcheck against TLC on the published specification: exhaustive search and random simulation.

TLC is not a dependency: give the path of a ``tla2tools.jar`` (a TLA+ tools release, or one
built from the tlaplus/tlaplus sources with ``ant -f customBuild.xml compile dist``) and of a
checkout of the published specification (hachikuji/kafka-specification, whose ``Kip320.tla``
isrcheck's ``--core --protocol kip-320`` machine is). The specification's files are copied
to a temporary folder with a TLC configuration beside them; nothing is written here.

    .venv/bin/python bench/bench_tlc.py --tlc-jar tla2tools.jar --spec-dir kafka-specification
    .venv/bin/python bench/bench_tlc.py ... --only simulate --walks 20000 --depth 100 --seed 1

Violations: the revisions before KIP-320 break WeakIsr at rf 3; the seconds TLC's
simulation takes to a violation and its trace's length, against isrcheck's simulation
(its defaults) to the first violating walk, to its shrunk trace, and BFS's shortest.
Exhaustive: TLC's breadth-first search (one worker) against isrcheck's BFS on both kernels,
without symmetry reduction, the whole reachable space: distinct states, depth, seconds.
Simulation: TLC's ``-simulate num=N -depth D -seed S`` (uniform random walks from the
initial state, every state checked against the invariant) with one worker and two, against
isrcheck's ``--engine simulate`` with the same walks, depth and seed, walking uniformly
(no swarm, no restarts from reached states, no preference for new states), in one process
and two (two seeds). Walks/s and states/s, each from the time spent walking: TLC's wall
time less that of a one-walk run (the JVM's start-up and parsing), isrcheck's walking time.
The mean walk length is printed too: TLC picks an action and then a successor, isrcheck's
scalar walks a successor and its batch walks a family first, so the lengths differ a little.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from isrcheck.checker import CheckOptions, get_engine
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import select

CONFIG = """CONSTANTS
    Replicas = {{{replicas}}}
    LogSize = 2
    MaxRecords = 2
    MaxLeaderEpoch = 2
INIT Init
NEXT Next
INVARIANTS WeakIsr
"""
# TLC 1.8's TypeOk compares the log's Nil (-1) with records and fails at once: WeakIsr alone is checked
PROGRESS = re.compile(r"Progress: ([\d,]+) states checked, ([\d,]+) traces generated")
EXHAUSTED = re.compile(r"([\d,]+) states generated, ([\d,]+) distinct states found, 0 states left on queue")
DEPTH = re.compile(r"The depth of the complete state graph search is (\d+)")


def _n(text: str) -> int:
    return int(text.replace(",", ""))


class Tlc:
    def __init__(self, jar: Path, spec_dir: Path, folder: Path) -> None:
        self.jar, self.folder = jar, folder
        for tla in spec_dir.glob("*.tla"):
            shutil.copy(tla, folder)

    def run(self, rf: int, *args: str, module: str = "Kip320", violation: bool = False) -> tuple[str, float]:
        cfg = self.folder / f"MC{rf}.cfg"
        cfg.write_text(CONFIG.format(replicas=", ".join(f"r{i}" for i in range(1, rf + 1))))
        started = time.perf_counter()
        proc = subprocess.run(["java", "-XX:+UseParallelGC", "-jar", str(self.jar), "-deadlock", "-config", cfg.name,
                               "-metadir", str(self.folder / "states"), *args, f"{module}.tla"],
                              cwd=self.folder, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
        if (proc.returncode != 0) != violation or (violation and "is violated" not in proc.stdout):
            raise SystemExit(f"TLC failed ({proc.returncode}): {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        return proc.stdout, seconds


def exhaustive(tlc: Tlc) -> None:
    print("exhaustive search of the published kip-320 machine (LogSize 2, MaxRecords 2, MaxLeaderEpoch 2):")
    for rf in (2, 3):
        out, seconds = tlc.run(rf, "-workers", "1")
        generated, distinct = (_n(x) for x in EXHAUSTED.search(out).groups())
        depth = int(DEPTH.search(out).group(1))
        print(f"  rf {rf}: TLC (1 worker): {distinct:,} distinct, {generated:,} generated, depth {depth}, "
              f"{seconds:.1f} s")
        config = ModelConfig(rf=rf, protocol="kip-320", core=True)
        for kernel in ("vector", "scalar"):
            started = time.perf_counter()
            r = get_engine("bfs", kernel=kernel).check(
                ReplicationModel(config), select(config, ["weak-isr"], "bfs"), CheckOptions(explore_all=True))
            agree = "same" if (r.stats.states, r.stats.depth) == (distinct, depth) else "DIFFERENT"
            print(f"  rf {rf}: isrcheck BFS ({kernel} kernel): {r.stats.states:,} distinct, depth {r.stats.depth} "
                  f"({agree}), {time.perf_counter() - started:.2f} s")


def _ours(walks: int, depth: int, seed: int, kernel: str) -> dict:
    config = ModelConfig(rf=3, protocol="kip-320", core=True)
    engine = get_engine("simulate", seed=seed, walks=walks, kernel=kernel, swarm=False, restart=0.0, novelty=0.0,
                        fewer_replicas=False)
    r = engine.check(ReplicationModel(config), select(config, ["weak-isr"], "simulate"),
                     CheckOptions(max_depth=depth, explore_all=True))
    c = r.coverage
    return {"walks": c.walks, "steps": c.steps, "seconds": c.walk_seconds}


def simulate(tlc: Tlc, walks: int, depth: int, seed: int) -> None:
    print(f"random simulation of the kip-320 machine at rf 3: {walks:,} walks of at most {depth} states, seed {seed}:")
    _, startup = tlc.run(3, "-simulate", "num=1", "-depth", str(depth), "-seed", str(seed), "-workers", "1")
    for workers in (1, 2):
        out, seconds = tlc.run(3, "-simulate", f"num={walks // workers}", "-depth", str(depth), "-seed", str(seed),
                               "-workers", str(workers))  # num is each worker's
        states, traces = (_n(x) for x in PROGRESS.findall(out)[-1])
        walking = seconds - startup
        print(f"  TLC, {workers} worker{'s' if workers > 1 else ''}: {traces:,} walks, {states:,} states (mean "
              f"{states / traces:.1f} a walk) in {walking:.2f} s ({seconds:.2f} s with {startup:.2f} s of start-up): "
              f"{traces / walking:,.0f} walks/s, {states / walking:,.0f} states/s")
    for kernel in ("vector", "scalar"):
        for processes in (1, 2):
            with ProcessPoolExecutor(processes) as pool:
                runs = list(pool.map(_ours, [walks // processes] * processes, [depth] * processes,
                                     [seed + i for i in range(processes)], [kernel] * processes))
            w, s = sum(r["walks"] for r in runs), sum(r["steps"] for r in runs)
            walking = max(r["seconds"] for r in runs)
            print(f"  isrcheck, {kernel} kernel, {processes} process{'es' if processes > 1 else ''}: {w:,} walks, "
                  f"{s:,} states (mean {s / w:.1f} a walk) in {walking:.2f} s: {w / walking:,.0f} walks/s, "
                  f"{s / walking:,.0f} states/s")


# the published specification's revisions before KIP-320, whose WeakIsr fails at rf 3: module, --protocol
REVISIONS = (("KafkaTruncateToHighWatermark", "hw-truncation"), ("Kip101", "kip-101"), ("Kip279", "kip-279"))


def violations(tlc: Tlc, seed: int) -> None:
    print(f"time to a WeakIsr violation at rf 3, random simulation, seed {seed} (TLC: 1 worker; isrcheck: vector "
          f"kernel, one process, its defaults, then the shrinking):")
    _, startup = tlc.run(3, "-simulate", "num=1", "-seed", str(seed), "-workers", "1")
    for module, protocol in REVISIONS:
        out, seconds = tlc.run(3, "-simulate", "-seed", str(seed), "-workers", "1", module=module, violation=True)
        states = len(re.findall(r"^State \d+:", out, re.M))
        config = ModelConfig(rf=3, protocol=protocol, core=True)
        props = select(config, ["weak-isr"], "simulate")
        model = ReplicationModel(config)
        bfs = get_engine("bfs").check(model, props, CheckOptions()).by_name("weak-isr").trace_length
        r = get_engine("simulate", seed=seed, fewer_replicas=False).check(model, props, CheckOptions(time_limit=120))
        c, p = r.coverage, r.by_name("weak-isr")
        print(f"  {protocol}: TLC found one in {seconds - startup:.2f} s, a trace of {states} states; isrcheck found "
              f"one after {c.found_after['weak-isr']:.2f} s in a walk of {c.found_length['weak-isr']} states, shrunk "
              f"to {p.trace_length} by {c.shrunk_after['weak-isr']:.2f} s; BFS's shortest {bfs}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tlc-jar", type=Path, required=True, help="tla2tools.jar")
    ap.add_argument("--spec-dir", type=Path, required=True, help="a checkout of the published specification")
    ap.add_argument("--only", choices=["exhaustive", "simulate", "violations"])
    ap.add_argument("--walks", type=int, default=20_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if not (args.spec_dir / "Kip320.tla").is_file():
        raise SystemExit(f"{args.spec_dir}: no Kip320.tla (the published specification's kip-320 module)")
    with tempfile.TemporaryDirectory(prefix="isrcheck-tlc-") as folder:
        tlc = Tlc(args.tlc_jar.resolve(), args.spec_dir, Path(folder))
        if args.only in (None, "exhaustive"):
            exhaustive(tlc)
        if args.only in (None, "simulate"):
            simulate(tlc, args.walks, args.depth, args.seed)
        if args.only in (None, "violations"):
            violations(tlc, args.seed)


if __name__ == "__main__":
    main()
