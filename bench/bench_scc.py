"""Strongly connected components of an explored graph: scipy's csgraph against networkx.

Builds the graph of a configuration (the main job by default) with the BFS engine, then
times, on the same arrays, scipy's ``connected_components(strong)`` (what
``checker/liveness.py`` runs) and networkx's ``strongly_connected_components`` on a
DiGraph built from the edges (building included), checking that both find the same
components. Prints seconds and the process's resident memory after each (networkx's
objects stay until it is done).

    .venv/bin/python bench/bench_scc.py                   # the main job: rf 3, min-isr 2
    .venv/bin/python bench/bench_scc.py --no-symmetry     # its 11.5 M states before symmetry reduction
    .venv/bin/python bench/bench_scc.py --rf 2 --no-networkx
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np
import psutil

from isrcheck.checker import BfsEngine, CheckOptions
from isrcheck.model import ModelConfig, ReplicationModel


def rss() -> str:
    return f"{psutil.Process().memory_info().rss / 2**20:,.0f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rf", type=int, default=3)
    ap.add_argument("--min-isr", type=int, default=2)
    ap.add_argument("--no-symmetry", action="store_true", help="the graph before symmetry reduction (11.5 M states)")
    ap.add_argument("--no-networkx", action="store_true", help="skip networkx (minutes and gigabytes on big graphs)")
    args = ap.parse_args()
    config = ModelConfig(rf=args.rf, min_isr=args.min_isr)
    result = BfsEngine(kernel="vector").check(ReplicationModel(config), [], CheckOptions(keep_graph=True,
                                                                                          symmetry=not args.no_symmetry))
    graph = result.graph
    print(f"graph: {graph.n:,} states, {len(graph.targets):,} edges; {rss()}")

    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    started = time.perf_counter()
    matrix = csr_matrix((np.ones(len(graph.targets), dtype=np.int8), graph.targets, graph.offsets),
                        shape=(graph.n, graph.n))
    k, labels = connected_components(matrix, directed=True, connection="strong")
    print(f"scipy csgraph: {time.perf_counter() - started:.2f} s, {k:,} components, "
          f"{int((np.bincount(labels) >= 2).sum()):,} of them cycles; {rss()}")
    if args.no_networkx:
        return
    import networkx as nx

    del matrix
    gc.collect()
    started = time.perf_counter()
    g = nx.DiGraph()
    g.add_nodes_from(range(graph.n))
    g.add_edges_from(zip(graph.sources().tolist(), graph.targets.tolist()))
    built = time.perf_counter() - started
    components = list(nx.strongly_connected_components(g))
    print(f"networkx: {time.perf_counter() - started:.2f} s ({built:.2f} s building the DiGraph), "
          f"{len(components):,} components; {rss()}")
    assert len(components) == k, "scipy and networkx disagree"


if __name__ == "__main__":
    main()
