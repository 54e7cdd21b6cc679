"""The properties' catalogue: names, expectations, and that none is vacuous.

That every form of every property (the per-state forms, the vector kernel's, the Z3
goal) is its definition is ``test_conformance.py``'s job.
"""

import pytest

from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import PROPERTIES, UnknownProperty, select

CONFIGS = [
    ModelConfig(rf=2, protocol="hw-truncation", core=True),
    ModelConfig(rf=2, protocol="kip-101", core=True),
    ModelConfig(rf=2, protocol="kip-320", core=True),
    ModelConfig(rf=2, protocol="hw-truncation", acks="1", crashes=1, disk_loss=1),
    ModelConfig(rf=2, protocol="kip-279", acks="all", min_isr=2, crashes=1, unclean_election=True),
    ModelConfig(rf=3, protocol="kip-101", acks="all", min_isr=1, crashes=1, max_records=1, max_leader_epoch=1),
    ModelConfig(rf=2, crashes=0, commit="after", consumer_crashes=1, max_records=1),  # skipped, reprocessed records
]
# the producer's requests run the definitions on the scalar kernel (model/fused.py): fewer states, still deep
# enough for a duplicate (depth 9) and a reordering (11) on 3.9 (4.1's KRaft controller widens the levels)
PRODUCER = [ModelConfig(rf=2, kafka_version="3.9", crashes=0, retries=1, idempotent=False),
            ModelConfig(rf=2, kafka_version="3.9", crashes=0, retries=1, max_records=1)]


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


def test_every_property_but_leader_in_isr_is_falsified_in_some_reachable_state():
    """leader-in-isr is a theorem of every revision; the rest fail in the small configurations."""
    falsified = set()
    for config in CONFIGS + PRODUCER:
        model = ReplicationModel(config)
        preds = [(p, p.compile(model)) for p in select(config)]  # test_conformance holds it to the definition
        for s in reachable(model, 10_000 if config in PRODUCER else 60_000):
            falsified |= {p.name for p, holds in preds if not holds(s)}
    assert falsified == {p.name for p in PROPERTIES if not p.graph} - {"leader-in-isr"}


def test_selecting_an_unknown_or_inapplicable_property_names_what_is_allowed():
    with pytest.raises(UnknownProperty, match="known: weak-isr"):
        select(ModelConfig(core=True), ["weak-irs"])
    with pytest.raises(UnknownProperty, match="--core"):
        select(ModelConfig(core=True), ["committed-survive"])
    with pytest.raises(UnknownProperty, match="acks 0"):
        select(ModelConfig(acks="0"), ["acked-survive"])
