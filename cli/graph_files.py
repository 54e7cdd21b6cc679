"""``--graph FILE``: the explored state graph, written for other tools.

``.npz`` (NumPy, any size): the graph in compressed sparse rows, as the engine keeps it:
state i's successors are ``targets[offsets[i]:offsets[i + 1]]``, reached by the actions
``actions[...]`` (indices into ``action_names``); the BFS levels are ``level_starts``
(level d holds states ``level_starts[d]`` to ``level_starts[d + 1] - 1``; state 0 is the
first initial state). States are numbered in BFS order, canonical forms under symmetry.
``.graphml`` (networkx's writer) and ``.dot`` (Graphviz): one node per state with its
depth, one edge per successor with its action, for graphs of up to ``TEXT_LIMIT`` states.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from isrcheck.files import FileProblem, atomic_write

SUFFIXES = (".npz", ".graphml", ".dot")
TEXT_LIMIT = 200_000  # states in a GraphML or DOT file: past this, other tools choke on them


def suffix_problem(path: Path) -> str:
    """Why ``--graph`` cannot write this path ('' when it can)."""
    if path.suffix.lower() not in SUFFIXES:
        return f"--graph {path}: the file name must end in {', '.join(SUFFIXES)} (the format it is written in)"
    return ""


def write(path: Path, graph: Any) -> Path:
    suffix = path.suffix.lower()
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
