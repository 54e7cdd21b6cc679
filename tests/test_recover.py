"""can-recover and --no-restarts: availability decided over the explored state graph.

Expected before the checker ran (Kafka's controller, ZooKeeper era): with clean election,
a partition whose ISR has shrunk to one broker that then fails for good stays offline
(KafkaController's OfflinePartitionLeaderElectionStrategy finds no live ISR member, and
with unclean.leader.election.enable=false it waits for that broker); with unclean
election a live out-of-sync replica takes over, so the partition recovers, and the price
shows in committed-survive. While brokers come back, a partition always recovers.
"""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isrcheck.checker import graph as graph_module
from isrcheck.checker.graph import StateGraph, decide, scalar_graph, scalar_marks, vector_graph, vector_marks
from isrcheck.checker.bfs_vector import VectorSearch
from isrcheck.checker.engine import CheckOptions
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.kernel import kernel_for
from isrcheck.model.ops_int import state_predicate
from isrcheck.properties import BY_NAME, select
from isrcheck.traces import itf
from isrcheck.traces.trace import TraceError
from isrcheck.traces.view_data import check_trace

from .clitools import run_cli, run_json
from .conftest import run_bfs

OFFLINE = ModelConfig(rf=2, min_isr=1, crashes=1, restarts=False, kafka_version="3.9")  # ZooKeeper mode
CAN_RECOVER = BY_NAME["can-recover"]


def _verdict(config, kernel, symmetry=True, **options):
    result = run_bfs(config, ["can-recover"], kernel=kernel, workers=1, symmetry=symmetry, **options)
    r = result.by_name("can-recover")
    return r.status, r.trace_length, r.note, result.stats.states


@pytest.mark.parametrize("symmetry", [True, False])
def test_the_offline_partition_is_found_and_both_kernels_agree(symmetry):
    vector, scalar = (_verdict(OFFLINE, k, symmetry) for k in ("vector", "scalar"))
    assert vector == scalar
    status, length, note, _ = vector
    assert (status, length) == ("violated", 3)  # a broker leaves the ISR, the other fails for good
    assert note.endswith("stuck states")


def test_the_same_stuck_state_is_found_whatever_the_epoch_bound():
    # a stuck state has no way out within or past the bounds: more epochs change nothing
    for epochs in (1, 2, 3):
        status, length, _, _ = _verdict(OFFLINE.with_changes(max_leader_epoch=epochs), "vector")
        assert (status, length) == ("violated", 3)


def test_unclean_election_recovers_and_pays_in_committed_records():
    config = ModelConfig(rf=3, min_isr=2, crashes=1, restarts=False, unclean_election=True, kafka_version="3.9")
    result = run_bfs(config, ["can-recover", "committed-survive"], workers=1, symmetry=True)
    assert result.by_name("can-recover").status == "holds"
    assert result.by_name("committed-survive").status == "violated"
    clean = run_bfs(config.with_changes(unclean_election=False), ["can-recover", "committed-survive"], workers=1,
                    symmetry=True)
    assert clean.by_name("can-recover").status == "violated"
    assert clean.by_name("committed-survive").status == "holds"


def test_on_4_1_an_eligible_leader_replica_brings_the_partition_back_cleanly():
    """Expected from KIP-966 before the run: the replica that left the ISR below min-isr stays
    eligible, so when the last ISR member fails for good the controller elects it cleanly
    (3.9 stays offline, above): can-recover holds and no committed record is lost."""
    config = ModelConfig(rf=3, min_isr=2, crashes=1, restarts=False, max_records=1)
    assert config.kafka_version == "4.1" and config.elr
    result = run_bfs(config, ["can-recover", "committed-survive"], workers=1, symmetry=True)
    assert [result.by_name(p).status for p in ("can-recover", "committed-survive")] == ["holds", "holds"]
    offline = run_bfs(config.with_changes(kafka_version="3.9"), ["can-recover"], workers=1, symmetry=True)
    assert offline.by_name("can-recover").status == "violated"


def test_restarted_brokers_bring_the_partition_back():
    for kernel in ("vector", "scalar"):
        status, _, note, _ = _verdict(ModelConfig(rf=2, min_isr=2, crashes=1), kernel)
        assert status == "holds"


def test_bounds_are_not_deadlocks():
    # the epoch bound: states that cannot recover only because every epoch is used are counted apart
    status, _, note, _ = _verdict(ModelConfig(rf=2, min_isr=1, crashes=1, unclean_election=True), "vector")
    assert status == "holds" and "recover only past the bounds" in note
    # a depth limit leaves the last level unexpanded: never stuck for that
    for kernel in ("vector", "scalar"):
        status, _, note, _ = _verdict(ModelConfig(rf=2, crashes=1), kernel, max_depth=4)
        assert status == "holds" and "recover only past the bounds" in note


def test_without_restarts_no_broker_comes_back_and_the_space_is_smaller():
    model = ReplicationModel(OFFLINE)
    assert "BrokerRestart" not in {a.name for a in model.catalogue}
    with_restarts = run_bfs(OFFLINE.with_changes(restarts=True), explore_all=True, symmetry=True)
    without = run_bfs(OFFLINE, explore_all=True, symmetry=True)
    assert without.stats.states < with_restarts.stats.states


def _whole_space(config, symmetry):
    model = ReplicationModel(config)
    search = VectorSearch(model, kernel_for(model), [], CheckOptions(explore_all=True, symmetry=symmetry), workers=1,
                          keep_levels=True)
    search.run()
    return model, search


@pytest.mark.parametrize("symmetry", [True, False])
@pytest.mark.parametrize("threads,chunk", [(1, None), (2, 97)], ids=["one chunk", "chunks on two threads"])
def test_the_vector_and_scalar_graphs_are_the_same_graph(symmetry, threads, chunk, monkeypatch):
    model, search = _whole_space(ModelConfig(rf=2, min_isr=2, crashes=1, restarts=False), symmetry)
    search.workers = threads
    if chunk:  # chunks of the levels, in whatever order the threads finish them
        monkeypatch.setattr(graph_module, "GRAPH_CHUNK", chunk)
    kernel = search.kernel
    states = [s for level in search.keys for s in kernel.scalars_of_keys(level)]
    canonical = (lambda s: kernel.scalar_of_key(kernel.canonical_of_scalar(s))) if symmetry else None
    vector, scalar = vector_graph(search, len(search.keys)), scalar_graph(model, states, len(states), canonical)
    assert np.array_equal(vector.offsets, scalar.offsets)
    for i in range(vector.n):  # the same successors, perhaps in another order
        a, b = (g.targets[g.offsets[i] : g.offsets[i + 1]] for g in (vector, scalar))
        assert sorted(a.tolist()) == sorted(b.tolist())
    for holds in (CAN_RECOVER.holds, CAN_RECOVER.beyond, CAN_RECOVER.hopeless):
        pred = state_predicate(model.layout, holds)
        assert np.array_equal(vector_marks(search, holds), scalar_marks(states, pred))
    assert np.array_equal(scalar_marks(states, CAN_RECOVER.compile(model)), vector_marks(search, CAN_RECOVER.holds))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n),
    st.lists(st.booleans(), min_size=n, max_size=n), st.lists(st.booleans(), min_size=n, max_size=n))))
def test_reaching_agrees_with_networkx(case):
    n, edges, target, beyond = case
    src = np.array([a for a, _ in edges], dtype=np.int64)
    dst = np.array([b for _, b in edges], dtype=np.int64)
    graph = StateGraph.from_edges(n, src, dst)
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)

    def reaching(marked):
        out = set(np.flatnonzero(marked).tolist())
        for m in list(out):
            out |= nx.ancestors(g, m)
        return out

    assert set(np.flatnonzero(graph.reaching(np.array(target))).tolist()) == reaching(target)
    marked = np.flatnonzero(target).tolist()
    fewest = nx.multi_source_dijkstra_path_length(g.reverse(), marked) if marked else {}
    assert graph.distances(np.array(target)).tolist() == [fewest.get(i, -1) for i in range(n)]
    v = decide(graph, np.array(target), np.array(beyond))
    stuck = set(range(n)) - reaching(target) - reaching(beyond)
    assert v.stuck == len(stuck) and v.first_stuck == (min(stuck) if stuck else None)
    assert v.limited == len(reaching(beyond) - reaching(target))


def test_the_counterexample_replays_and_a_cut_one_is_refused(tmp_path):
    code, report = run_json("--rf", "2", "--no-restarts", "--property", "can-recover", "--trace-dir", str(tmp_path))
    assert code == 1
    (prop,) = report["properties"]
    assert (prop["status"], prop["trace_length"]) == ("violated", 3)
    path = tmp_path / next(p.name for p in tmp_path.iterdir() if "can-recover" in p.name)
    trace = check_trace(itf.load(path))
    assert trace.is_counterexample
    shown = run_cli("view-trace", str(path), "--no-color")
    assert shown.returncode == 0 and "the partition is offline" in shown.stdout
    data = json.loads(path.read_text())
    data["states"] = data["states"][:-1]
    cut = tmp_path / "cut.itf.json"
    cut.write_text(json.dumps(data))
    with pytest.raises(TraceError, match="not stuck"):
        check_trace(itf.load(cut))
    refused = run_cli("view-trace", str(cut))
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("engine", ["z3", "spark"])
def test_engines_without_the_graph_say_so(engine, tmp_path):
    proc = run_cli("check-model", "--rf", "2", "--engine", engine, "--property", "can-recover", "--trace-dir", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"check-model: error: property 'can-recover' is decided over the explored state graph, which only --engine bfs "
        f"keeps: the {engine} engine does not check it"
    ]


def test_graph_properties_are_checked_when_named():
    assert "can-recover" not in {p.name for p in select(ModelConfig(rf=2, crashes=1))}
    assert [p.name for p in select(ModelConfig(rf=2), ["can-recover"])] == ["can-recover"]


def test_a_limit_stops_the_graph_stage_with_nothing_decided():
    from isrcheck.checker.graph import settle_vector

    model, search = _whole_space(OFFLINE, True)
    result = search._result(1.0, True)
    settled = settle_vector(search, result, [CAN_RECOVER], [CAN_RECOVER], lambda: "time limit")
    assert (settled.complete, settled.stop_reason) == (False, "time limit")
    assert settled.by_name("can-recover").status == "unknown"


def test_min_isr_above_the_live_brokers_is_stuck_at_once_whatever_the_election():
    # hopeless: with min-isr 3 and a broker down for good no ISR of three comes back, even
    # where the controller could go on electing (and using epochs) without end
    for unclean in (False, True):
        config = ModelConfig(rf=3, min_isr=3, crashes=1, restarts=False, unclean_election=unclean)
        status, length, _, _ = _verdict(config, "vector")
        assert (status, length) == ("violated", 2)
