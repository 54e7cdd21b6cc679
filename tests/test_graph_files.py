"""--graph FILE: the explored state graph written for other tools, read back by them."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from .clitools import run_cli, run_json

RF2 = ["--rf", "2", "--no-symmetry"]
ONE_RECORD = ["--max-records", "1"]  # 11 thousand states: the files' readers, not the search, are what these test


def _npz(tmp_path, kernel, *extra):
    path = tmp_path / f"{kernel}.npz"
    code, report = run_json(*RF2, "--kernel", kernel, "--graph", str(path), "--trace-dir", str(tmp_path), *extra)
    assert code == 0
    with np.load(path) as data:
        return report, {k: data[k] for k in data.files}


def test_both_kernels_write_the_same_graph_of_the_whole_space(tmp_path):
    (vr, v), (sr, s) = (_npz(tmp_path, k) for k in ("vector", "scalar"))
    assert vr["states"] == sr["states"] == len(v["offsets"]) - 1
    assert v["level_starts"][-1] == vr["states"] and len(v["level_starts"]) == vr["depth"] + 1
    initial = int(v["level_starts"][1])
    assert len(v["targets"]) == vr["generated"] - initial  # one edge per successor computed
    assert np.array_equal(v["offsets"], s["offsets"])  # the same states in the same order
    for i in range(len(v["offsets"]) - 1):
        a, b = (slice(int(g["offsets"][i]), int(g["offsets"][i + 1])) for g in (v, s))
        assert sorted(zip(v["targets"][a].tolist(), v["actions"][a].tolist())) == sorted(
            zip(s["targets"][b].tolist(), s["actions"][b].tolist()))
    assert list(v["action_names"]) == list(s["action_names"])


def test_graphml_and_dot_are_read_by_networkx(tmp_path):
    report, data = _npz(tmp_path, "vector", *ONE_RECORD)
    graphml = tmp_path / "g.graphml"
    assert run_cli("check-model", *RF2, *ONE_RECORD, "--graph", str(graphml), "--trace-dir", str(tmp_path)).returncode == 0
    g = nx.read_graphml(graphml)
    assert g.number_of_nodes() == report["states"] and g.number_of_edges() == len(data["targets"])
    names = {d["action"] for _, _, d in g.edges(data=True)}
    assert names <= set(data["action_names"].tolist())
    assert g.nodes["0"]["depth"] == 1
    dot = tmp_path / "g.dot"
    assert run_cli("check-model", *RF2, *ONE_RECORD, "--graph", str(dot), "--trace-dir", str(tmp_path)).returncode == 0
    text = dot.read_text()
    assert text.startswith("digraph isrcheck {") and text.count(" -> ") == len(data["targets"])


def test_a_graph_too_big_for_graphml_is_named_after_the_verdicts(tmp_path):
    proc = run_cli("check-model", "--rf", "3", "--min-isr", "2", "--no-symmetry", "--max-records", "1",
                   "--graph", str(tmp_path / "big.graphml"), "--trace-dir", str(tmp_path))
    assert proc.returncode == 2 and "holds within bounds" in proc.stdout
    (line,) = proc.stderr.strip().splitlines()
    assert "use a .npz file" in line and not (tmp_path / "big.graphml").exists()


@pytest.mark.parametrize("args, words", [
    (["--graph", "g.txt"], "must end in .npz, .graphml, .dot"),
    (["--graph", "g.npz", "--engine", "z3"], "only --engine bfs keeps, not z3"),
])
def test_a_graph_that_cannot_be_written_is_refused_before_the_search(tmp_path, args, words):
    proc = run_cli("check-model", "--rf", "2", *args, "--trace-dir", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert words in line


def test_the_condensation_is_networkx_own_condensation_of_the_graph(tmp_path):
    whole, condensed, dot = tmp_path / "g.graphml", tmp_path / "g.scc.graphml", tmp_path / "g.scc.dot"
    for path in (whole, condensed, dot):
        assert run_cli("check-model", *RF2, *ONE_RECORD, "--graph", str(path), "--trace-dir",
                       str(tmp_path)).returncode == 0
    g, c = nx.read_graphml(whole), nx.read_graphml(condensed)
    theirs = nx.condensation(nx.DiGraph(g))  # an independent Tarjan over the file's own graph
    assert nx.is_directed_acyclic_graph(c)
    assert (c.number_of_nodes(), c.number_of_edges()) == (theirs.number_of_nodes(), theirs.number_of_edges())
    assert sorted(d["size"] for _, d in c.nodes(data=True)) == sorted(len(m) for _, m in theirs.nodes(data="members"))
    assert sum(d["steps"] for _, _, d in c.edges(data=True)) == sum(
        1 for a, b in g.edges() if theirs.graph["mapping"][a] != theirs.graph["mapping"][b])
    assert c.number_of_nodes() < g.number_of_nodes()  # the faults' cycles fold into components
    assert dot.read_text().startswith("digraph isrcheck_condensation {")
