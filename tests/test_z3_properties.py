"""The Z3 form of every property means what its readable definition says.

``goal(name, s)`` is the violation of an ``always`` property and the witness of a
``sometimes`` one; on every sampled reachable state and on arbitrary states it
must be true exactly when the definition says so on Python ints (false for an
``always`` one).
"""

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.fields import producer_requests
from isrcheck.model.symbolic import SymbolicModel
from isrcheck.properties import PROPERTIES, select
from isrcheck.properties.symbolic import goal

from .configs import CORE_RF2
from .strategies import partition_states
from .z3_support import concrete, reachable, spread

CONFIGS = [
    *CORE_RF2,
    ModelConfig(rf=2, protocol="hw-truncation", acks="1", crashes=1, disk_loss=1),
    ModelConfig(rf=2, protocol="kip-279", acks="all", min_isr=2, crashes=1, unclean_election=True),
    ModelConfig(rf=3, protocol="kip-101", acks="all", min_isr=1, crashes=1, max_records=1, max_leader_epoch=1),
    ModelConfig(rf=3, kafka_version="3.6", acks="all", min_isr=2, crashes=2, disk_loss=1),
]
IDS = [c.summary() for c in CONFIGS]


class Goals:
    _cache: dict[ModelConfig, "Goals"] = {}

    def __init__(self, config: ModelConfig) -> None:
        self.model = ReplicationModel(config)
        self.sym = SymbolicModel(config)
        self.s = self.sym.fresh("s")
        self.props = select(config)
        self.goals = [(p, goal(p.name, self.s).formula) for p in self.props]
        # the producer's requests run the definitions (model/fused.py): fewer states, deep enough
        states = reachable(self.model, 20_000 if producer_requests(config) else 40_000)
        picked = spread(states, 600)
        for p in self.props:  # and the first state that meets each goal: rare ones are missed by a spread
            pred = p.compile(self.model)
            picked += [x for x in states if pred(x) == (p.expectation == "sometimes")][:1]
        self.samples = [self.model.decode(x) for x in dict.fromkeys(picked)]

    @classmethod
    def of(cls, config: ModelConfig) -> "Goals":
        if config not in cls._cache:
            cls._cache[config] = cls(config)
        return cls._cache[config]

    def disagreements(self, ps) -> list[str]:
        m = concrete(self.sym.space, self.s, ps)
        out = []
        for p, formula in self.goals:
            found = z3.is_true(m.eval(formula, model_completion=True))
            holds = p.reference(self.model, ps)
            wanted = holds if p.expectation == "sometimes" else not holds
            if found != wanted:
                out.append(p.name)
        return out


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_goals_agree_with_the_readable_definitions_on_reachable_states(config):
    g = Goals.of(config)
    for ps in g.samples:
        assert not g.disagreements(ps), ps


# the delivery properties' goals (their forms on arbitrary states are test_conformance's)
DELIVERY = [ModelConfig(rf=2, crashes=0, retries=1, idempotent=False),
            ModelConfig(rf=2, crashes=0, retries=1, commit="before", consumer_crashes=1, max_records=1),
            ModelConfig(rf=2, crashes=0, commit="after", consumer_crashes=1, auto_offset_reset="earliest",
                        max_records=1)]


def test_every_goal_but_leader_in_isr_is_met_in_some_sampled_reachable_state():
    """The agreement above is not vacuous: each goal is true somewhere in the samples."""
    met = set()
    for config in CONFIGS + DELIVERY:
        g = Goals.of(config)
        for ps in g.samples:
            m = concrete(g.sym.space, g.s, ps)
            met |= {p.name for p, formula in g.goals if z3.is_true(m.eval(formula, model_completion=True))}
    assert met == {p.name for p in PROPERTIES if not p.graph} - {"leader-in-isr"}


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_goals_agree_with_the_readable_definitions_on_arbitrary_states(config, data):
    g = Goals.of(config)
    ps = data.draw(partition_states(config))
    assert not g.disagreements(ps)


def _quantified(term: z3.ExprRef) -> bool:
    return z3.is_quantifier(term) or any(_quantified(c) for c in term.children())


def test_unbounded_goals_quantify_over_record_ids_and_agree_with_the_definitions():
    """In the unbounded mode a history goal says "some record id" with a quantifier."""
    bounded = ModelConfig(rf=2, protocol="kip-279", acks="1", crashes=1, max_records=2, max_leader_epoch=2)
    model = ReplicationModel(bounded)
    sym = SymbolicModel(bounded.with_changes(max_leader_epoch=None))
    s = sym.fresh("s")
    props = select(bounded)
    for state in spread(reachable(model, 30_000), 60):
        ps = model.decode(state)
        for p in props:
            g = goal(p.name, s)
            solver = z3.Solver()
            solver.add(sym.space.equals(s, ps), g.formula)
            holds = p.reference(model, ps)
            wanted = holds if p.expectation == "sometimes" else not holds
            assert (solver.check() == z3.sat) == wanted, (p.name, ps)
    assert _quantified(goal("committed-survive", s).formula) and not _quantified(goal("weak-isr", s).formula)
