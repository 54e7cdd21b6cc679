"""Where a vector search's peak resident memory comes from, by phase.

    python bench/bench_memory_phases.py --core --protocol kip-320 --rf 3 --continue \
        --no-symmetry --max-leader-epoch 3            # check-model's options
    BENCH_WORKERS=2 python bench/bench_memory_phases.py --rf 3 --min-isr 2 --max-records 3

A thread samples the resident set every millisecond; each sample is tagged with the
search's phase then (a level's expansion ``_next_level``, its merge ``_unseen``, its store
``_store``, at a depth). Printed: the baseline (after the tables), the peak, and the phases
that came closest to it, with the frontier and the visited set's bytes at that level.
Run it again with ``MALLOC_MMAP_THRESHOLD_=131072`` to see the memory in use rather than
what glibc's allocator keeps (that setting makes the search about twice as slow).
"""

from __future__ import annotations

import os
import sys
import threading
import time

from click.core import ParameterSource

from isrcheck.checker import CheckOptions, bfs_vector
from isrcheck.checker.engine import current_rss, peak_rss
from isrcheck.cli.check_model import main as check_model, model_config_from
from isrcheck.cli.runner import CheckRun, run_check
from isrcheck.model import ReplicationModel
from isrcheck.model.kernel import kernel_for
from isrcheck.properties import select

PHASES = ("_next_level", "_unseen", "_store")
MiB = 1 << 20


def tagged(phase: list[str], name: str) -> None:
    """Wrap a VectorSearch method so that samples taken inside it carry its name and depth."""
    method = getattr(bfs_vector.VectorSearch, name)

    def wrapper(self, *args, **kw):
        outer, phase[0] = phase[0], f"{name}@{self.depth}"
        try:
            return method(self, *args, **kw)
        finally:
            phase[0] = outer

    setattr(bfs_vector.VectorSearch, name, wrapper)


def main(argv: list[str]) -> None:
    ctx = check_model.make_context("check-model", argv)
    p = ctx.params
    given = {k for k in p if ctx.get_parameter_source(k) is ParameterSource.COMMANDLINE}
    config = model_config_from(p, given)
    kernel = kernel_for(ReplicationModel(config))  # tables before the baseline, as bench_vector's
    for prop in select(config, list(p["properties"]) or None):
        kernel.predicate(prop)
    if p["symmetry"]:
        kernel.supports_symmetry()
    if not kernel.exact:  # the compiled loops, a fixed cost as the tables are (bench_bfs.py)
        from isrcheck.checker.vector_loops import load
        try:
            load(kernel, p["symmetry"])  # and the compiled canonical forms
        except TypeError:  # older builds: no symmetry loop
            load()
    baseline, phase, samples, levels = current_rss(), ["outside a level"], [], {}
    for name in PHASES:
        tagged(phase, name)
    store = bfs_vector.VectorSearch._store

    def stored(self, new, pool=None):
        levels[self.depth] = (self.frontier.shape[1], self.visited_set.nbytes)
        return store(self, new, pool)

    bfs_vector.VectorSearch._store = stored
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append((current_rss(), phase[0]))
            time.sleep(0.001)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    options = CheckOptions(symmetry=p["symmetry"], explore_all=p["explore_all"], max_memory=p["max_memory"])
    workers = int(os.environ.get("BENCH_WORKERS", "1"))
    result = run_check(CheckRun(config, "bfs", tuple(p["properties"]), options, None,
                                engine_args={"kernel": "vector", "workers": workers})).result
    done.set()
    sampler.join()
    states = result.stats.states
    print(f"{states:,} states in {result.stats.seconds:.2f} s, {workers} thread(s): baseline {baseline // MiB} MiB, peak {peak_rss() // MiB} MiB, "
          f"{(peak_rss() - baseline) / max(1, states):.1f} bytes a state")
    highest: dict[str, int] = {}
    for rss, tag in samples:
        highest[tag] = max(highest.get(tag, 0), rss)
    for tag, rss in sorted(highest.items(), key=lambda item: -item[1])[:6]:
        depth = int(tag.split("@")[1]) if "@" in tag else -1
        frontier, visited = levels.get(depth, (0, 0))
        print(f"  {tag:18s} {(rss - baseline) // MiB:5d} MiB over the baseline; frontier {frontier:,} states, "
              f"visited set {visited // MiB} MiB")



if __name__ == "__main__":
    main(sys.argv[1:])
