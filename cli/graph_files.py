"""``--graph FILE``: the explored state graph, written for other tools.

``.npz`` (NumPy, any size): the graph in compressed sparse rows, as the engine keeps it:
state i's successors are ``targets[offsets[i]:offsets[i + 1]]``, reached by the actions
``actions[...]`` (indices into ``action_names``); the BFS levels are ``level_starts``
(level d holds states ``level_starts[d]`` to ``level_starts[d + 1] - 1``; state 0 is the
first initial state). States are numbered in BFS order, canonical forms under symmetry.
``.graphml`` (networkx's writer) and ``.dot`` (Graphviz): one node per state with its
depth, one edge per successor with its action, for graphs of up to ``TEXT_LIMIT`` states.
``.scc.graphml`` and ``.scc.dot``: the condensation, one node per strongly connected
component (its size, its first state and shallowest depth), one edge per pair of
components joined by a step (with how many steps join them); a DAG that tools can lay
out where the graph itself is too big. Components by scipy's csgraph, any graph size; up
to ``TEXT_LIMIT`` components written.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from isrcheck.files import FileProblem, atomic_write

SUFFIXES = (".npz", ".graphml", ".dot", ".scc.graphml", ".scc.dot")
TEXT_LIMIT = 200_000  # states in a GraphML or DOT file: past this, other tools choke on them


def suffix_problem(path: Path) -> str:
    """Why ``--graph`` cannot write this path ('' when it can)."""
    if not path.name.lower().endswith(SUFFIXES):
        return f"--graph {path}: the file name must end in {', '.join(SUFFIXES)} (the format it is written in)"
    return ""


def write(path: Path, graph: Any) -> Path:
    suffix = path.suffix.lower()
    if path.name.lower().endswith((".scc.graphml", ".scc.dot")):
        return _write_condensation(path, graph, suffix)
    if suffix == ".npz":
        out = io.BytesIO()
        levels = graph.level_starts if graph.level_starts is not None else np.array([0, graph.n], dtype=np.int64)
        np.savez_compressed(out, offsets=graph.offsets, targets=graph.targets, actions=graph.actions,
                            level_starts=levels, action_names=np.array(graph.action_names, dtype=str))
        return atomic_write(path, out.getvalue())
    if graph.n > TEXT_LIMIT:
        raise FileProblem(f"{path}: the graph has {graph.n:,} states; {suffix[1:]} files are written up to "
                          f"{TEXT_LIMIT:,}: use a .npz file")
    edges = list(zip(graph.sources().tolist(), graph.targets.tolist(), graph.actions.tolist()))
    depths = _depths(graph)
    if suffix == ".graphml":
        import networkx as nx

        g = nx.MultiDiGraph()
        g.add_nodes_from((i, {"depth": d}) for i, d in enumerate(depths))
        g.add_edges_from((a, b, {"action": graph.action_names[act]}) for a, b, act in edges)
        return atomic_write(path, "\n".join(nx.generate_graphml(g)) + "\n")
    lines = ["digraph isrcheck {"]
    lines += [f'  {i} [label="{i}", depth={d}];' for i, d in enumerate(depths)]
    lines += [f'  {a} -> {b} [label="{graph.action_names[act]}"];' for a, b, act in edges]
    return atomic_write(path, "\n".join(lines) + "\n}\n")


def _depths(graph: Any) -> list[int]:
    """Each state's BFS depth, 1 for the initial states."""
    starts = graph.level_starts if graph.level_starts is not None else np.array([0, graph.n])
    return (np.searchsorted(starts, np.arange(graph.n), side="right")).tolist()


def condensation(graph: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each state's component (numbered by its first state), and the components' edges
    as (source, target, steps) rows."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    matrix = csr_matrix((np.ones(len(graph.targets), dtype=np.int8), graph.targets, graph.offsets),
                        shape=(graph.n, graph.n))
    raw = connected_components(matrix, directed=True, connection="strong")[1]
    _, first = np.unique(raw, return_index=True)  # renumber by first state: BFS order, stable
    labels = np.argsort(np.argsort(first))[raw]
    pairs = np.stack([labels[graph.sources()], labels[graph.targets]], axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    joined, steps = np.unique(pairs, axis=0, return_counts=True)
    return labels, joined, steps


def _write_condensation(path: Path, graph: Any, suffix: str) -> Path:
    labels, joined, steps = condensation(graph)
    k = int(labels.max()) + 1 if graph.n else 0
    if k > TEXT_LIMIT:
        raise FileProblem(f"{path}: the condensation has {k:,} components; it is written up to {TEXT_LIMIT:,}")
    sizes = np.bincount(labels, minlength=k).tolist()
    firsts = np.unique(labels, return_index=True)[1].tolist()
    depths = _depths(graph)
    nodes = [(c, {"size": sizes[c], "first_state": firsts[c], "depth": depths[firsts[c]]}) for c in range(k)]
    edges = [(int(a), int(b), {"steps": int(n)}) for (a, b), n in zip(joined.tolist(), steps.tolist())]
    if suffix == ".graphml":
        import networkx as nx

        g = nx.DiGraph()
        g.add_nodes_from(nodes)
        g.add_edges_from(edges)
        return atomic_write(path, "\n".join(nx.generate_graphml(g)) + "\n")
    lines = ["digraph isrcheck_condensation {"]
    lines += [f'  {c} [label="{a["size"]}", size={a["size"]}, depth={a["depth"]}];' for c, a in nodes]
    lines += [f'  {a} -> {b} [steps={d["steps"]}];' for a, b, d in edges]
    return atomic_write(path, "\n".join(lines) + "\n}\n")
