"""Liveness under weak fairness: rejoins-isr and hwm-progress, lassos, and the toy livelocks.

Expected before the checker ran (Kafka's replica manager and controller): with no fault
any more, a live replica outside the ISR fetches from the leader, reaches its HWM and the
start of its epoch and is added back (Partition.maybeExpandIsr), and with every replica up
the HWM reaches the leader's log end; so both hold on every release, and without fairness
(any run may stop anywhere) both fail at the first state where their trigger holds. The
checker disagreed for the releases before 2.2: there a broker that bounces applies a
LeaderAndIsr request sent to its previous life (no broker epochs before KIP-380), its cached
ISR regains a replica that ZooKeeper's ISR had lost, and as the leader it never adds that
replica back (it believes it in). That is Kafka's behaviour, which KIP-380 ended: the test
below pins the pair of releases (docs/liveness.md).
"""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isrcheck.checker import BfsEngine, CheckOptions
from isrcheck.checker.graph import StateGraph
from isrcheck.checker.liveness import decide
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.ops_int import state_predicate
from isrcheck.model.toy import LOOP_FINISHES, TOKEN_LIVENESS, ToyConfig, loop_model, tokens_model
from isrcheck.properties.catalog import FAST_DEFINITIONS
from isrcheck.traces import itf
from isrcheck.traces.trace import TraceError
from isrcheck.traces.view_data import build_view, check_trace, load_checked
from isrcheck.traces.view_text import render_text

from .clitools import run_cli, run_json
from .conftest import run_bfs
from .strategies import partition_states
from .test_conformance import CONFIGS

KERNELS = ("scalar", "vector")


def _toy(make, prop, kernel, config=ToyConfig(), symmetry=False):
    result = BfsEngine(kernel=kernel, workers=1).check(make(config), [prop], CheckOptions(explore_all=True,
                                                                                          symmetry=symmetry))
    return result.properties[0]


# ---- the toys: a planted livelock, and a cycle that fairness rules out -------------------------------------
@pytest.mark.parametrize("kernel", KERNELS)
def test_a_livelock_of_two_alternating_states_is_found_as_a_lasso(kernel):
    p = _toy(loop_model, LOOP_FINISHES, kernel, ToyConfig(finish_anytime=False))
    assert p.status == "violated"
    # Flip, then Flip back: Finish is enabled only every other state, so weak fairness allows the loop
    assert (p.path.states, p.path.actions, p.path.loop, p.path.loop_action) == ((0, 1), (0,), 0, 0)


@pytest.mark.parametrize("kernel", KERNELS)
def test_fairness_rules_out_a_cycle_that_never_takes_an_action_enabled_throughout(kernel):
    # the same Flip cycle, but Finish is enabled in both of its states: a fair run takes it
    assert _toy(loop_model, LOOP_FINISHES, kernel).status == "holds"


@pytest.mark.parametrize("kernel", KERNELS)
def test_without_fairness_a_run_may_stop_at_once(kernel):
    p = _toy(loop_model, LOOP_FINISHES, kernel, ToyConfig(fairness="none"))
    assert (p.status, p.path.states, p.path.loop, p.path.loop_action) == ("violated", (0,), 0, None)


@pytest.mark.parametrize("symmetry", [False, True])
@pytest.mark.parametrize("kernel", KERNELS)
def test_one_broker_can_keep_the_token_to_itself_under_weak_fairness(kernel, symmetry):
    # Grab(0), Release(0) for ever: the others' Grab is disabled while broker 0 holds it
    p = _toy(tokens_model, TOKEN_LIVENESS, kernel, symmetry=symmetry)
    assert p.status == "violated" and len(p.path) == 3 and p.path.loop == 1
    assert p.path.loop_action == p.path.actions[0]  # the same Grab closes the loop


# ---- the decision on graphs drawn by hand ----------------------------------------------------------------
def _graph(n, edges, levels):
    src, dst = np.array([e[0] for e in edges]), np.array([e[1] for e in edges])
    graph = StateGraph.from_edges(n, src, dst)
    graph.level_starts = np.array(levels, dtype=np.int64)
    return graph, np.array([e[2] for e in edges])[np.argsort(src, kind="stable")]


def _decide(n, edges, levels, goal=(), trigger=None, limited=(), fault=()):
    graph, units = _graph(n, edges, levels)
    marks = lambda ids: np.isin(np.arange(n), list(ids))  # noqa: E731
    faults = np.isin(np.arange(len(units)), list(fault))
    return decide(graph, marks(range(n)) if trigger is None else marks(trigger), marks(goal), faults, units,
                  int(units.max()) + 1, marks(limited))


def test_a_quiet_state_is_a_bad_end_unless_the_bounds_may_have_held_it():
    edges = [(0, 1, 0), (0, 2, 0)]  # 1 is quiet and short of the goal; 2 is the goal
    assert _decide(3, edges, [0, 1, 3], goal=[2], trigger=[0]).violating == 1
    held = _decide(3, edges, [0, 1, 3], goal=[2], trigger=[0], limited=[1])
    assert (held.violating, held.limited, held.lasso) == (0, 1, None)


def test_a_cycle_is_fair_only_if_every_family_enabled_throughout_is_taken():
    # 0 <-> 1 by family 0; family 1 leaves 0 and 1 for the goal 2
    unfair = [(0, 1, 0), (1, 0, 0), (0, 2, 1), (1, 2, 1)]
    assert _decide(3, unfair, [0, 1, 2, 3], goal=[2], trigger=[0]).lasso is None
    fair = [(0, 1, 0), (1, 0, 0), (0, 2, 1)]  # family 1 is disabled in state 1
    verdict = _decide(3, fair, [0, 1, 2, 3], goal=[2], trigger=[0])
    assert verdict.lasso.trigger == 0 and len(verdict.lasso.loop) == 2


def test_faults_and_self_loops_are_no_way_to_stay():
    # 0's only way out of the goal-free set is a fault (edge 1): no fair run stays, nor does a stutter
    edges = [(0, 0, 0), (0, 1, 1), (0, 2, 0)]
    assert _decide(3, edges, [0, 1, 3], goal=[2], trigger=[0], fault=[1]).lasso is None


# ---- Kafka ------------------------------------------------------------------------------------------------
LIVENESS = ["rejoins-isr", "hwm-progress"]
RF2 = ModelConfig(rf=2, min_isr=1)


def _verdicts(config, kernel, symmetry=True):
    result = run_bfs(config, LIVENESS, kernel=kernel, workers=1, symmetry=symmetry)
    return [(p.name, p.status, p.trace_length, p.note) for p in result.properties]


@pytest.mark.parametrize("symmetry", [True, False])
def test_both_hold_on_the_newest_release_and_both_kernels_agree(symmetry):
    vector = _verdicts(RF2, "vector", symmetry)
    assert vector == _verdicts(RF2, "scalar", symmetry)
    assert [v[1] for v in vector] == ["holds", "holds"]


def test_without_fairness_both_fail_where_their_trigger_first_holds():
    config = RF2.with_changes(fairness="none")
    vector = _verdicts(config, "vector")
    assert vector == _verdicts(config, "scalar")
    assert [(v[1], v[2]) for v in vector] == [("violated", 4), ("violated", 1)]


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_bounced_leader_before_kip_380_keeps_a_replica_out_of_the_isr_for_ever(kernel):
    before, after = (RF2.with_changes(kafka_version=v) for v in ("2.1", "2.2"))
    lasso = run_bfs(before, ["rejoins-isr"], kernel=kernel, workers=1).properties[0]
    assert (lasso.status, lasso.trace_length, lasso.path.loop, lasso.path.loop_action) == ("violated", 8, 7, None)
    assert run_bfs(after, ["rejoins-isr"], kernel=kernel, workers=1).properties[0].status == "holds"


def test_the_lasso_is_saved_replayed_and_shown_with_its_loop(tmp_path):
    code, report = run_json("--rf", "2", "--min-isr", "1", "--kafka-version", "2.1", "--property", "rejoins-isr",
                            "--trace-dir", str(tmp_path))
    assert code == 1
    path = report["properties"][0]["trace_file"]
    data = json.loads(open(path).read())
    assert data["loop"] == 7 and len(data["states"]) == 8
    trace = load_checked(path)
    text = " ".join(render_text(build_view(trace), width=120).split())  # words, whatever the wrapping
    assert "◆ trigger" in text and "stays here for ever" in text
    assert "no broker or controller step is enabled there" in text
    assert "believes its ISR is {0, 1}, so it never adds broker 1 back" in text


def _edited(path, change):
    data = json.loads(open(path).read())
    change(data)
    return itf.from_itf(data)


def test_an_edited_lasso_is_refused(tmp_path):
    code, report = run_json("--rf", "2", "--min-isr", "1", "--kafka-version", "2.1", "--property", "rejoins-isr",
                            "--trace-dir", str(tmp_path))
    assert code == 1
    path = report["properties"][0]["trace_file"]
    for change, words in [
        (lambda d: d.pop("loop"), "no loop"),
        (lambda d: d.update(loop=3), "only the last state may loop on itself"),
        (lambda d: d.update(loop=99), "not the index"),
        (lambda d: (d["states"].pop(), d.update(loop=6)), "stops at its last state, where BecomeFollower"),
    ]:
        with pytest.raises(TraceError, match=words):
            check_trace(_edited(path, change))


@pytest.mark.parametrize("engine", ["z3", "spark"])
@pytest.mark.parametrize("prop", LIVENESS)
def test_z3_and_spark_refuse_a_liveness_property_in_one_line(engine, prop):
    proc = run_cli("check-model", "--rf", "2", "--engine", engine, "--property", prop)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "only --engine bfs" in proc.stderr


def test_bad_fairness_is_refused_in_one_line():
    proc = run_cli("check-model", "--rf", "2", "--fairness", "strong")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


# ---- the decision against networkx's SCCs on random graphs ------------------------------------------------
def _reference(n, edges, goal, trigger, limited):
    """The violating trigger states, by the definition, with networkx's SCCs."""
    moving = [(a, b, u, f) for a, b, u, f in edges if a != b]
    enabled = {(u, a) for a, b, u, f in moving if not f and u >= 0}
    units = {u for _, _, u, _ in edges if u >= 0}
    sub = nx.DiGraph()
    sub.add_nodes_from(s for s in range(n) if s not in goal)
    inside = [(a, b, u) for a, b, u, f in moving if not f and a not in goal and b not in goal]
    sub.add_edges_from((a, b) for a, b, _ in inside)
    bad = {s for s in sub if not any((u, s) in enabled for u in units) and s not in limited}
    for comp in nx.strongly_connected_components(sub):
        if len(comp) < 2 or comp & limited:
            continue
        if all(any((u, s) not in enabled for s in comp) or any(a in comp and b in comp and v == u for a, b, v in inside)
               for u in units):
            bad |= comp
    return {s for s in trigger if s in sub and (s in bad or nx.descendants(sub, s) & bad)}


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_decision_agrees_with_networkx_on_random_graphs(data):
    n = data.draw(st.integers(1, 8))
    node = st.integers(0, n - 1)
    edges = data.draw(st.lists(st.tuples(node, node, st.integers(-1, 2), st.booleans()), max_size=20))
    goal, trigger, limited = (set(data.draw(st.lists(node, max_size=n))) for _ in range(3))
    graph = StateGraph.from_edges(n, np.array([e[0] for e in edges], dtype=np.int64),
                                  np.array([e[1] for e in edges], dtype=np.int64))
    order = np.argsort([e[0] for e in edges], kind="stable")
    units = np.array([edges[i][2] for i in order], dtype=np.int16)
    faults = np.array([edges[i][3] for i in order], dtype=bool)
    graph.level_starts = np.array([0, n], dtype=np.int64)
    marks = lambda ids: np.isin(np.arange(n), list(ids))  # noqa: E731
    verdict = decide(graph, marks(trigger), marks(goal), faults, units, 3, marks(limited))
    assert verdict.violating == len(_reference(n, edges, goal, trigger, limited))
    assert (verdict.lasso is None) == (verdict.violating == 0)


# ---- the hand-written forms the scalar kernel uses are the definitions ---------------------------------------
KAFKA_CONFIGS = [c for c in CONFIGS if not c.core]


@pytest.mark.parametrize("config", KAFKA_CONFIGS, ids=lambda c: c.summary())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_each_hand_written_liveness_form_is_its_definition(config, data):
    model = ReplicationModel(config)
    state = model.encode(data.draw(partition_states(config, distinct_ids=data.draw(st.booleans()))))
    for definition, fast in FAST_DEFINITIONS.items():
        assert fast(model)(state) == state_predicate(model.layout, definition)(state), (definition.__name__,
                                                                                         model.decode(state))


@pytest.mark.parametrize("config", KAFKA_CONFIGS[:3], ids=lambda c: c.summary())
def test_the_hand_written_forms_agree_on_reachable_states_both_ways(config):
    model, seen, frontier = ReplicationModel(config), set(), list(ReplicationModel(config).init_states())
    while frontier and len(seen) < 20_000:
        state = frontier.pop()
        if state not in seen:
            seen.add(state)
            frontier += [t for _, t in model.successors(state)]
    for definition, fast in FAST_DEFINITIONS.items():
        mine, theirs = fast(model), state_predicate(model.layout, definition)
        values = [mine(s) for s in seen]
        assert values == [theirs(s) for s in seen], definition.__name__
        assert any(values) or definition.__name__ == "_out_of_epochs", f"{definition.__name__} never holds"
