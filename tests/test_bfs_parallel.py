"""The multi-process BFS agrees with the single-process engine: same levels, same counts,
same verdicts, same shortest trace lengths; and it stops cleanly."""

from __future__ import annotations

import pytest

from isrcheck.checker import BfsEngine, CheckOptions
from isrcheck.checker.bfs_parallel import ParallelBfsEngine, owner_of
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import select
from isrcheck.traces import replay, trace_from_path

from .configs import CORE_RF2

CONFIGS = [
    *CORE_RF2,
    ModelConfig(rf=3, protocol="kip-279", core=True, max_records=1, max_leader_epoch=1),
    ModelConfig(rf=3, min_isr=2, max_records=1, disk_loss=1, kafka_version="3.9"),  # the next one is on 4.1
    ModelConfig(rf=3, min_isr=1, acks="1", max_records=1, unclean_election=True),
]


def both(config, names=None, **options):
    model = ReplicationModel(config)
    props = select(config, names)
    opts = CheckOptions(**options)
    return model, BfsEngine(kernel="scalar").check(model, props, opts), ParallelBfsEngine(2).check(model, props, opts)


def verdicts(result):
    return [(p.name, p.status, p.trace_length) for p in result.properties]


CASES = [(c, sym) for c in CONFIGS for sym in ((False, True) if c.core else (True,))]


@pytest.mark.parametrize("config,symmetry", CASES, ids=lambda x: x.summary() if hasattr(x, "summary") else f"symmetry={x}")
def test_parallel_search_agrees_with_the_single_process_engine(config, symmetry):
    model, one, two = both(config, explore_all=True, symmetry=symmetry)
    assert (two.stats.states, two.stats.depth, two.stats.generated) == (one.stats.states, one.stats.depth, one.stats.generated)
    assert two.stats.full_states == one.stats.full_states
    assert verdicts(two) == verdicts(one)
    assert two.complete and two.exhausted
    for p in two.properties:
        if p.path is not None:
            replay(trace_from_path(model, p.path.states, p.path.actions))


def test_an_early_stop_gives_the_same_verdicts_and_lengths():
    config = ModelConfig(rf=3, protocol="kip-279", core=True)
    _, one, two = both(config, ["weak-isr", "strong-isr"], symmetry=True)
    assert verdicts(two) == verdicts(one) == [("weak-isr", "violated", 11), ("strong-isr", "violated", 11)]
    assert two.complete and not two.exhausted


def test_max_depth_bounds_the_parallel_search_too():
    config = ModelConfig(rf=2, protocol="hw-truncation", core=True)
    _, one, two = both(config, max_depth=8)
    assert (two.stats.states, two.stats.depth) == (one.stats.states, one.stats.depth) and two.stats.depth == 8
    assert two.stats.queue == one.stats.queue > 0  # the last level's states, not expanded
    assert verdicts(two) == verdicts(one)


def test_a_time_limit_stops_the_workers_with_an_incomplete_result():
    model = ReplicationModel(ModelConfig(rf=3, min_isr=2))
    result = ParallelBfsEngine(2).check(model, select(model.config), CheckOptions(symmetry=True, time_limit=0.5))
    assert not result.complete and result.stop_reason == "time limit"
    assert 0 < result.stats.states < 3_752_473
    assert 0 < result.stats.queue < result.stats.states  # what was found and not expanded: the report's "still queued"
    assert all(p.status in ("unknown", "holds") for p in result.properties)


def test_owners_spread_states_and_do_not_depend_on_the_process():
    model = ReplicationModel(ModelConfig(rf=3, core=True))
    s = model.init_states()[0]
    seen = []
    for _ in range(200):
        nexts = model.successors(s) or model.successors(model.init_states()[0])
        s = nexts[len(seen) % len(nexts)][1]
        seen.append(owner_of(s, 2))
    assert 40 < sum(seen) < 160
    assert owner_of(12345678901234567890123, 2) == owner_of(12345678901234567890123, 2)
