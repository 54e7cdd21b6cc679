"""The package's shape: no import cycles between its modules, lazy imports included.

A cycle is how a layered design (model, properties, checker, traces, cli) decays:
read from the source, so an import inside a function counts as much as one at the top.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent


def _modules() -> dict[str, Path]:
    """Every module of the installed packages, by dotted name (from pyproject's package-dir)."""
    dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    mods = {}
    for package, folder in dirs.items():
        for path in (ROOT / folder).glob("*.py"):
            mods[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return mods


def _imported(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    package = name if path.stem == "__init__" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package if node.level <= 1 else package.rsplit(".", node.level - 1)[0]
            module = (f"{base}.{node.module}" if node.module else base) if node.level else node.module or ""
            subs = {f"{module}.{a.name}" for a in node.names} & mods.keys()
            out |= subs if len(subs) == len(node.names) else subs | {module}
    return {m for m in out if m in mods and m != name}


def import_graph() -> nx.DiGraph:
    mods = _modules()
    graph = nx.DiGraph()
    for name, path in mods.items():
        graph.add_node(name)
        graph.add_edges_from((name, target) for target in _imported(name, path, mods))
    return graph


def test_the_reader_sees_the_package():
    graph = import_graph()
    assert graph.has_edge("isrcheck.checker.bfs_vector", "isrcheck.model.kernel")
    assert graph.has_edge("isrcheck.checker.bfs", "isrcheck.checker.bfs_vector")  # a lazy import
    assert len(graph) > 60


def test_no_import_cycles():
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles[:10])


def test_disk_loss_lives_where_docs_design_says():
    """docs/design.md's worked example of a behaviour written once: disk loss is named in its
    four definitions (config, knob, field, family), the fused scalar loop, advise-config's
    option and the testing API's strategy of configurations, and nowhere else. Another file
    means the behaviour is being written twice."""
    import re

    named = sorted(str(path.relative_to(ROOT)) for path in _modules().values()
                   if re.search(r"disk[ _-]?loss|diskloss", path.read_text(), re.IGNORECASE))
    assert named == ["cli/advise_config.py", "model/brokers.py", "model/config.py", "model/fields.py",
                     "model/fused.py", "model/knobs.py", "src/isrcheck/testing.py"]


def test_the_protocol_and_its_engines_know_nothing_of_real_clusters():
    """isrcheck.cluster knows the model and the traces; the model, the properties and the
    engines do not know it (nor does anything but the command line), directly or lazily."""
    graph = import_graph()
    users = {m for m in graph if any(t.startswith("isrcheck.cluster") for t in graph.successors(m))}
    assert users, "the harness's modules are in the import graph"
    assert all(m.startswith(("isrcheck.cluster", "isrcheck.cli")) for m in users), sorted(users)
    assert graph.has_edge("isrcheck.cluster.replay", "isrcheck.cluster.schedule")
