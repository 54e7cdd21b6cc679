"""The model's own contracts, driven by Hypothesis: random walks stay type-correct,
encodings round-trip, every walk replays from its ITF file, symmetry relabels."""

from __future__ import annotations

from itertools import permutations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.traces import replay, trace_from_path
from isrcheck.traces import itf

from .strategies import partition_states

CONFIGS = [
    ModelConfig(rf=2, protocol="hw-truncation", core=True),
    ModelConfig(rf=3, protocol="kip-101", core=True),
    ModelConfig(rf=3, protocol="kip-279", core=True, max_records=3, log_size=2),
    ModelConfig(rf=3, protocol="kip-320", core=True),
    ModelConfig(rf=3, min_isr=2, crashes=2, disk_loss=1, unclean_election=True),
    ModelConfig(rf=3, min_isr=1, crashes=2, max_records=3, log_size=2),
    ModelConfig(rf=4, protocol="hw-truncation", acks="1", crashes=1, max_leader_epoch=3),
    ModelConfig(rf=2, protocol="kip-101", acks="0", consumer=False, crashes=1),
]
MODELS = {c: ReplicationModel(c) for c in CONFIGS}


def type_ok(model: ReplicationModel, ps) -> None:
    c = model.config
    assert len(ps.replicas) == c.rf
    for r, rs in enumerate(ps.replicas):
        assert len(rs.log) <= c.logsize and 0 <= rs.hw <= c.logsize
        if not rs.alive:
            assert (rs.leader, rs.leader_epoch, rs.isr, rs.leader_since) == (None, None, frozenset(), None)
            assert rs.crash_mark is not None and rs.crash_mark <= ps.next_record_id
        if not c.core and c.acks == "all":
            assert (rs.leader_since is not None) == (rs.leader == r), "only believed leaders have a purgatory"
            assert rs.leader_since is None or rs.leader_since <= rs.leader_epoch
        assert rs.leader is None or 0 <= rs.leader < c.rf
        assert rs.isr <= set(range(c.rf))
        assert all(0 <= r.id < c.max_records and 0 <= r.epoch <= c.max_leader_epoch for r in rs.log)
        assert rs.alive or not c.core
    assert 0 <= ps.next_record_id <= c.max_records
    assert len(ps.requests) == ps.next_leader_epoch <= c.max_leader_epoch + 1
    ids = [r.id for rs in ps.replicas for r in rs.log]
    assert all(i < ps.next_record_id for i in ids), "record ids are issued in order"
    if not c.core:
        assert ps.crashes <= c.crashes and ps.disk_losses <= c.disk_loss
        assert ps.committed <= ps.readable or not c.consumer, "committed records were readable first"
        assert ps.quorum.isr or c.elr, "the last ISR member stays in the ISR (with KIP-966's ELR it leaves too)"


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.summary())
@settings(max_examples=40, deadline=None)
@given(choices=st.lists(st.integers(0, 10_000), min_size=1, max_size=40))
def test_random_walks_stay_type_correct_and_replay_from_their_itf_file(config, choices, tmp_path_factory):
    model = MODELS[config]
    state = model.init_states()[0]
    states, actions = [state], []
    for c in choices:
        nexts = model.successors(state)
        if not nexts:
            break
        a, state = nexts[c % len(nexts)]
        assert model.step(states[-1], a) == state
        states.append(state)
        actions.append(a)
    for s in states:
        ps = model.decode(s)
        type_ok(model, ps)
        assert model.encode(ps) == s
    trace = trace_from_path(model, states, actions)
    path = itf.save(trace, tmp_path_factory.mktemp("walk") / "walk.itf.json")
    assert replay(itf.load(path)) == states


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.summary())
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_encode_and_decode_are_inverse_on_arbitrary_type_correct_states(config, data):
    model = MODELS[config]
    ps = data.draw(partition_states(config))
    assert model.decode(model.encode(ps)) == ps


@pytest.mark.parametrize("config", CONFIGS[3:5], ids=lambda c: c.summary())
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_relabelling_brokers_commutes_with_successors(config, data):
    """The symmetry that reduction relies on: successors of a relabelled state are the
    relabelled successors, and canonical forms are the same across an orbit."""
    model = MODELS[config]
    sym = model.symmetry
    ps = data.draw(partition_states(config))
    s = model.encode(ps)
    perm = data.draw(st.sampled_from(list(permutations(range(config.rf)))))
    t = sym.relabel(s, perm)
    assert {sym.relabel(u, perm) for _, u in model.successors(s)} == {u for _, u in model.successors(t)}
    assert sym.canonical(s) == sym.canonical(t)
    assert sym.canonical(sym.canonical(s)) == sym.canonical(s)


def test_the_core_catalogue_is_the_specifications_and_features_add_actions():
    core = ReplicationModel(ModelConfig(rf=2, core=True)).catalogue
    names = {a.name for a in core.actions}
    assert names == {
        "ControllerElectLeader", "ControllerShrinkIsr", "BecomeLeader", "BecomeFollower", "LeaderWrite",
        "LeaderIncHighWatermark", "LeaderShrinkIsr", "LeaderExpandIsr", "FollowerFetch",
    }
    kafka = ReplicationModel(ModelConfig(rf=2, kafka_version="3.9", crashes=1, disk_loss=1,
                                         unclean_election=True)).catalogue
    assert {a.name for a in kafka.actions} - names == {
        "ControllerFailover", "ControllerUncleanElect", "BrokerCrash", "BrokerCrashDiskLoss", "BrokerRestart",
    }


def test_models_pickle_by_configuration_with_the_same_successors():
    import pickle

    model = MODELS[CONFIGS[4]]
    clone = pickle.loads(pickle.dumps(model))
    s = model.init_states()[0]
    for _ in range(5):
        assert clone.successors(s) == model.successors(s)
        s = model.successors(s)[-1][1]
