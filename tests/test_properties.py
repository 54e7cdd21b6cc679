"""Compiled predicates (the hot path) agree with the readable definitions everywhere.

Every reachable state of small configurations, core and Kafka, is decoded and
both forms of every property are evaluated on it.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import PROPERTIES, UnknownProperty, select

from .strategies import partition_states

CONFIGS = [
    ModelConfig(rf=2, protocol="hw-truncation", core=True),
    ModelConfig(rf=2, protocol="kip-101", core=True),
    ModelConfig(rf=2, protocol="kip-320", core=True),
    ModelConfig(rf=2, protocol="hw-truncation", acks="1", crashes=1, disk_loss=1),
    ModelConfig(rf=2, protocol="kip-279", acks="all", min_isr=2, crashes=1, unclean_election=True),
    ModelConfig(rf=3, protocol="kip-101", acks="all", min_isr=1, crashes=1, max_records=1, max_leader_epoch=1),
]


def reachable(model: ReplicationModel, limit: int = 60_000) -> list[int]:
    seen = set(model.init_states())
    frontier = list(seen)
    while frontier and len(seen) < limit:
        nxt = []
        for s in frontier:
            for _, t in model.successors(s):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    return sorted(seen)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.summary())
def test_compiled_predicates_agree_with_the_readable_definitions(config):
    model = ReplicationModel(config)
    props = select(config)
    compiled = [(p, p.compile(model)) for p in props]
    states = reachable(model)
    disagreements = []
    for s in states:
        ps = model.decode(s)
        for p, pred in compiled:
            if pred(s) != p.reference(ps):
                disagreements.append((p.name, ps))
    assert not disagreements[:3]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.summary())
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_compiled_predicates_agree_with_the_readable_definitions_on_arbitrary_states(config, data):
    model = ReplicationModel(config)
    ps = data.draw(partition_states(config))
    s = model.encode(ps)
    for p in select(config):
        assert p.compile(model)(s) == p.reference(ps), p.name


def test_every_property_but_leader_in_isr_is_falsified_in_some_reachable_state():
    """leader-in-isr is a theorem of every revision; the rest fail in the small configurations."""
    falsified = set()
    for config in CONFIGS:
        model = ReplicationModel(config)
        props = select(config)
        for s in reachable(model):
            ps = model.decode(s)
            falsified |= {p.name for p in props if not p.reference(ps)}
    assert falsified == {p.name for p in PROPERTIES} - {"leader-in-isr"}


def test_selecting_an_unknown_or_inapplicable_property_names_what_is_allowed():
    with pytest.raises(UnknownProperty, match="known: weak-isr"):
        select(ModelConfig(core=True), ["weak-irs"])
    with pytest.raises(UnknownProperty, match="--core"):
        select(ModelConfig(core=True), ["committed-survive"])
    with pytest.raises(UnknownProperty, match="acks 0"):
        select(ModelConfig(acks="0"), ["acked-survive"])
