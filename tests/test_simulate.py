"""--engine simulate: random walks agree with breadth-first search, and their traces are short.

Expected outcomes, written down before the runs: a walk only ever reports what is true of
a reachable state, so every property a simulation decides, BFS decides the same way; the
known violations below are found within a few thousand walks at these bounds; a shrunk
counterexample is never shorter than BFS's shortest (BFS is exhaustive) and, the issue's
bar, at most two states longer.
"""

from __future__ import annotations

import json
import random

import pytest

from isrcheck.checker import CheckOptions, get_engine
from isrcheck.checker.shrink import Replayer, shortcuts, without_cycles
from isrcheck.checker.result import Path
from isrcheck.cli.runner import CheckRun, run_check
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import select, verdict
from isrcheck.traces.view_data import load_checked

from .clitools import run_cli
from .conftest import run_bfs

# (configuration, the known violations a simulation must find in WALKS walks)
KNOWN = [
    (ModelConfig(rf=2, protocol="hw-truncation", core=True), {"weak-isr", "strong-isr"}),  # the KIP-101 loss
    (ModelConfig(rf=2, protocol="kip-101", core=True), {"weak-isr", "strong-isr"}),  # KIP-279's case
    # 3.9: on 4.1 the scalar walks' leader-failover witness shrinks to 14 states against BFS's 10
    # (AlterPartition's propose-and-apply pairs defeat the radius-3 shortcuts; an open limitation)
    (ModelConfig(rf=3, min_isr=1, acks="1", kafka_version="3.9"), {"acked-survive"}),
    (ModelConfig(rf=2, min_isr=2, unclean_election=True, kafka_version="3.6"), {"committed-survive", "strong-isr"}),
    (ModelConfig(rf=2, kafka_version="2.1"), {"acked-survive", "weak-isr", "strong-isr"}),
]
WALKS = 3000


def _decided(result) -> dict[str, tuple[str, int]]:
    return {p.name: (p.status, p.trace_length) for p in result.properties if p.path is not None}


@pytest.mark.parametrize("kernel", ["vector", "scalar"])
@pytest.mark.parametrize("config,known", KNOWN, ids=lambda x: x.summary()[:60] if isinstance(x, ModelConfig) else "")
def test_simulation_agrees_with_bfs_and_shrinks_to_within_two_states(config, known, kernel):
    model = ReplicationModel(config)
    bfs = _decided(run_bfs(config, symmetry=True))
    sim = get_engine("simulate", seed=1, walks=WALKS, kernel=kernel, fewer_replicas=False).check(
        model, select(config, None, "simulate"), CheckOptions())
    assert sim.kernel == kernel
    found = _decided(sim)
    assert known <= set(found), f"not found: {known - set(found)}"
    for name, (status, length) in found.items():
        assert bfs[name][0] == status, name  # never a verdict BFS does not give
        assert bfs[name][1] <= length <= bfs[name][1] + 2, (name, bfs[name][1], length)
    assert not sim.complete or set(found) == {p.name for p in sim.properties}


def test_every_simulated_trace_is_saved_and_replays_against_the_model(tmp_path):
    config = ModelConfig(rf=3, min_isr=1, acks="1", max_records=1)
    outcome = run_check(CheckRun(config, "simulate", (), CheckOptions(), tmp_path,
                                 engine_args={"seed": 7, "walks": 500}))
    assert outcome.trace_files and set(outcome.trace_files) == set(_decided(outcome.result))
    for name, file in outcome.trace_files.items():
        trace = load_checked(file)  # replayed step by step on the model
        assert trace.property_name == name and len(trace.steps) == outcome.result.by_name(name).trace_length


def test_the_same_seed_takes_the_same_walks_and_another_seed_others():
    config = ModelConfig(rf=3, min_isr=1, acks="1", max_records=1)
    model, props = ReplicationModel(config), select(config, ["acked-survive", "committed-survive"], "simulate")

    def run(seed):
        r = get_engine("simulate", seed=seed, walks=200).check(model, props, CheckOptions())
        return r.coverage.distinct, r.coverage.steps, {p.name: p.path for p in r.properties}

    assert run(3) == run(3)
    assert run(3)[:2] != run(4)[:2]


def test_a_shrunk_counterexample_is_kept_and_tried_first_by_the_next_run(tmp_path):
    config = ModelConfig(rf=3, min_isr=1, acks="1", max_records=1)
    args = {"seed": 2, "walks": 300, "database": tmp_path / "hypothesis"}
    model, props = ReplicationModel(config), select(config, ["acked-survive"], "simulate")
    first = get_engine("simulate", **args).check(model, props, CheckOptions())
    again = get_engine("simulate", **{**args, "seed": 99}).check(model, props, CheckOptions())
    assert again.coverage.from_database == ["acked-survive"] and again.coverage.walks == 0
    assert again.by_name("acked-survive").path == first.by_name("acked-survive").path


def test_coverage_counts_every_step_and_swarm_walks_leave_families_out():
    config = ModelConfig(rf=3, min_isr=2, max_records=1)
    model = ReplicationModel(config)
    props = select(config, ["record-committed", "committed-survive"], "simulate")
    runs = [get_engine("simulate", seed=5, walks=200, swarm=swarm, kernel=kernel).check(model, props, CheckOptions())
            for kernel in ("vector", "scalar") for swarm in (False, True)]
    for r in runs:
        c = r.coverage
        assert sum(c.families.values()) == sum(c.fired.values()) == c.steps
        assert sum(c.lengths.values()) == c.walks >= 200
        assert c.distinct <= c.steps + 1 and c.guards["record-committed"] > 0
        assert len(c.never) + len(c.fired) == len(model.catalogue) and not set(c.never) & set(c.fired)
        assert "BecomeFollower(replica=0, leader=0, epoch=0)" in c.never  # a broker never follows itself
    assert [r.kernel for r in runs] == ["vector", "vector", "scalar", "scalar"]
    assert runs[0].coverage.fired != runs[1].coverage.fired and runs[2].coverage.fired != runs[3].coverage.fired


def test_cycles_are_cut_to_the_first_visit_of_each_state():
    cut = without_cycles(Path((1, 2, 3, 2, 4, 5, 4, 6), (10, 11, 12, 13, 14, 15, 16)))
    assert cut == Path((1, 2, 4, 6), (10, 13, 16))


def _random_walk(model, seed: int) -> Path:
    """Up to 30 random steps from the initial state, cycles cut."""
    rng = random.Random(seed)
    s, states, actions = model.init_states()[0], [], []
    states.append(s)
    for _ in range(30):
        if not model.successors(s):
            break
        a, s = rng.choice(model.successors(s))
        states.append(s)
        actions.append(a)
    return without_cycles(Path(tuple(states), tuple(actions)))


def test_shortcuts_keep_the_end_and_leave_no_one_step_detour():
    """A random walk to a deciding state, cut short: it still replays and ends there, is never
    longer, and no state on it reaches a state two or more steps later in one step."""
    model = ReplicationModel(ModelConfig(rf=2, protocol="hw-truncation", core=True))
    walk = _random_walk(model, 3)
    end = walk.states[-1]
    assert len(walk) > 5
    short = shortcuts(model, walk, lambda t: t == end)
    assert short.states[-1] == end and len(short) <= len(walk)
    assert Replayer(model, lambda t: t == end).path(list(short.actions)) == short
    for i, t in enumerate(short.states):
        reached = {u for _, u in model.successors(t)}
        assert not reached & set(short.states[i + 2:]), i


def test_past_its_deadline_the_replayer_still_answers_yes_for_a_walk_it_said_yes_to():
    """Hypothesis replays its best walk at the end of a shrink; a walk that was interesting and
    is not any more (the time limit passed meanwhile) was its "Failed to reproduce" error
    (issue 55: 2 runs in 6 at rf 5 with a 40 s limit)."""
    import time

    model = ReplicationModel(ModelConfig(rf=2, protocol="hw-truncation", core=True))
    walk = [a for a, _ in model.successors(model.init_states()[0])][:1]
    end = model.successors(model.init_states()[0])[0][1]
    replayer = Replayer(model, lambda t: t == end, deadline=time.monotonic() + 60)
    assert replayer.interesting(walk) and not replayer.interesting([])
    replayer.deadline = time.monotonic() - 1
    assert replayer.interesting(walk)  # as before the deadline
    assert not replayer.interesting(walk * 2)  # a new walk is not tried any more
    long = _random_walk(model, 3)  # one that shortcuts does shorten when there is time
    assert len(shortcuts(model, long, lambda t: t == long.states[-1])) < len(long)
    assert shortcuts(model, long, lambda t: t == long.states[-1], past_deadline=replayer.past_deadline) == long


def test_check_model_simulate_exit_codes_and_report(tmp_path):
    found = run_cli("check-model", "--engine", "simulate", "--acks", "1", "--max-records", "1", "--walks", "300",
                    "--property", "acked-survive", "--trace-dir", str(tmp_path), "--format", "json")
    assert found.returncode == 1, found.stderr  # a counterexample is final
    report = json.loads(found.stdout)
    assert report["engine"] == "simulate" and report["simulation"]["walks"] >= 1
    assert report["properties"][0]["status"] == "violated"
    smaller = report["simulation"]["fewer_replicas"]["acked-survive"]  # saved, and replays on the rf 2 model
    trace = load_checked(smaller["trace_file"])
    assert trace.config.rf == smaller["rf"] == 2 and len(trace.steps) == smaller["trace_length"]
    unbroken = run_cli("check-model", "--engine", "simulate", "--max-records", "1", "--walks", "50",
                       "--property", "committed-survive", "--trace-dir", str(tmp_path))
    assert unbroken.returncode == 3, unbroken.stderr  # a simulation proves nothing
    assert "no violation in 50 random walks" in unbroken.stdout
    assert "None of 50 random walks broke these, which proves nothing" in unbroken.stdout
    assert "actions never taken (never_taken in the JSON): " in unbroken.stdout and "BecomeFollower" in unbroken.stdout
    assert " of walks (states)" in unbroken.stdout
    wrong = run_cli("check-model", "--seed", "3", "--trace-dir", str(tmp_path))
    assert wrong.returncode == 2 and wrong.stderr.strip() == "check-model: error: --seed needs --engine simulate"


def test_simulation_finds_an_acks_1_loss_at_rf_5_and_shrinks_it_to_the_rf_3_length(tmp_path):
    """Far past exhaustive search (rf 5, three records, epochs to 4, two crashes), the loss that
    acks=1 allows is found at once and shrunk to BFS's rf 3 length (6 states)."""
    config = ModelConfig(rf=5, max_records=3, max_leader_epoch=4, crashes=2, acks="1")
    model = ReplicationModel(config)
    r = get_engine("simulate", seed=0, walks=2000).check(model, select(config, ["acked-survive"], "simulate"),
                                                          CheckOptions(time_limit=60))
    p = r.by_name("acked-survive")
    assert verdict.broken(p, p.status) and p.trace_length <= 6 + 2


@pytest.mark.parametrize("config,prop,shortest", [
    (ModelConfig(rf=3, min_isr=2, crashes=2, unclean_election=True), "committed-survive", 12),
    (ModelConfig(rf=3, min_isr=2, protocol="hw-truncation"), "committed-survive", 11),
    # KRaft without ELR: a lost disk on the last ISR member, which 4.1's ELR closes
    (ModelConfig(rf=2, min_isr=2, disk_loss=1, kafka_version="4.0", max_records=1), "committed-survive", 12),
    # the producer: a retry without idempotence writes a second copy
    (ModelConfig(rf=2, crashes=0, retries=1, idempotent=False, max_records=1), "no-duplicates", 9),
])
def test_the_batch_walks_find_the_deeper_pinned_losses(config, prop, shortest):
    """Losses of 9 to 12 states, which walks one at a time rarely reach: the batch kernel's
    swarm walks find them in seconds, within two states of BFS's shortest (measured lengths)."""
    model = ReplicationModel(config)
    r = get_engine("simulate", seed=0).check(model, select(config, [prop], "simulate"), CheckOptions(time_limit=120))
    p = r.by_name(prop)
    assert r.kernel == "vector" and p.status == "violated"
    assert shortest <= p.trace_length <= shortest + 2


def test_a_counterexample_is_looked_for_with_fewer_replicas_too():
    """acks=1 loses an acknowledged write as soon as a second broker can lead without it, so the
    smallest replication factor that shows the loss is 2 (one broker keeps its one log), in BFS's
    6 states."""
    config = ModelConfig(rf=3, acks="1", max_records=1)
    r = get_engine("simulate", seed=0, walks=2000).check(ReplicationModel(config),
                                                         select(config, ["acked-survive"], "simulate"), CheckOptions())
    assert r.coverage.fewer_replicas == {"acked-survive": (2, 6)}


@pytest.mark.parametrize("kernel", ["vector", "scalar"])
def test_max_depth_bounds_every_walk_and_trace(kernel):
    config = ModelConfig(rf=3, acks="1", max_records=1)
    model, props = ReplicationModel(config), select(config, None, "simulate")
    for depth in (1, 5, 6):
        r = get_engine("simulate", seed=0, walks=500, kernel=kernel, fewer_replicas=False).check(
            model, props, CheckOptions(max_depth=depth))
        assert max(r.coverage.lengths, default=1) <= depth and r.stats.depth <= depth
        assert all(len(p.path) <= depth for p in r.properties if p.path is not None)
        if depth < 6:  # BFS's shortest loss is 6 states: no walk this short can show it
            assert "acked-survive" not in _decided(r)


SMALL = ("--rf", "2", "--max-records", "1", "--max-leader-epoch", "1")


@pytest.mark.parametrize("args", [
    ("--walks", "1"),
    ("--walks", "2", "--seed", "1", *SMALL),
    ("--walks", "3", "--seed", "1", *SMALL),
    ("--walks", "1", "--no-swarm"),
], ids=["walks-1", "walks-2-rf-2", "walks-3-seed-1-rf-2", "no-swarm"])
def test_a_batch_whose_every_walk_stands_on_a_dead_end_restarts_them_all(tmp_path, args):
    """A few walks side by side can all stand on a state with no successor at once (the batch
    had no successor to pick from, and the step raised IndexError): each of them ends, is
    counted, and starts again, and the run reports as any other."""
    proc = run_cli("check-model", "--engine", "simulate", *args, "--trace-dir", str(tmp_path), "--format", "json")
    assert proc.returncode in (1, 3) and "Traceback" not in proc.stderr, proc.stderr
    walks = json.loads(proc.stdout)["simulation"]
    assert walks["walks"] == int(args[1]) and sum(walks["walk_lengths"].values()) == walks["walks"]


@pytest.mark.parametrize("walks,swarm", [(1, False), (2, True), (3, False)])
def test_walks_that_all_end_on_dead_ends_are_each_counted_once(walks, swarm):
    config = ModelConfig(rf=2, max_records=1, max_leader_epoch=1)
    model, props = ReplicationModel(config), select(config, None, "simulate")
    for seed in range(8):  # seeds that ran every walk of the batch into a dead end together, among others
        r = get_engine("simulate", seed=seed, walks=walks, swarm=swarm, fewer_replicas=False).check(
            model, props, CheckOptions())
        assert r.kernel == "vector" and r.coverage.walks == sum(r.coverage.lengths.values()) == walks
