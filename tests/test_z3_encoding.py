"""The symbolic transition relation is the explicit one, in both directions.

Every action runs in Z3 from its definition; should that ever diverge from the reference, these fail: every
explicit successor of a state must satisfy T(s, s') with its own action index
(arbitrary Hypothesis states, reachable or not), and, enumerating with blocking
clauses, T must have no successor that the explicit step lacks.
"""

import pytest
import z3
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.symbolic import SymbolicModel

from .configs import CORE_RF2
from .strategies import partition_states
from .z3_support import reachable, spread, well_formed

CONFIGS = [
    *CORE_RF2,
    ModelConfig(rf=3, protocol="kip-279", core=True, max_records=1, max_leader_epoch=1),
    ModelConfig(rf=2, protocol="hw-truncation", acks="1", crashes=1, disk_loss=1),
    ModelConfig(rf=2, protocol="kip-279", acks="all", min_isr=2, crashes=1, unclean_election=True),
    ModelConfig(rf=3, protocol="kip-101", acks="all", min_isr=2, crashes=2, max_records=1, max_leader_epoch=1),
    ModelConfig(rf=3, protocol="kip-320", acks="all", min_isr=2, crashes=2, disk_loss=1, unclean_election=True),
]
IDS = [c.summary() for c in CONFIGS]


class Relation:
    """T(s, t, act) asserted once on an incremental solver; states are pinned per query."""

    _cache: dict[ModelConfig, "Relation"] = {}

    def __init__(self, config: ModelConfig) -> None:
        self.model = ReplicationModel(config)
        self.sym = SymbolicModel(config)
        self.s, self.t = self.sym.fresh("s"), self.sym.fresh("t")
        self.act, self.epoch = self.sym.step_vars(1)
        self.solver = self.sym.space.solver()
        self.solver.add(self.sym.trans(self.s, self.t, self.act, self.epoch))

    @classmethod
    def of(cls, config: ModelConfig) -> "Relation":
        if config not in cls._cache:
            cls._cache[config] = cls(config)
        return cls._cache[config]

    def admits(self, state: int, action: int, nxt: int) -> bool:
        space = self.sym.space
        self.solver.push()
        self.solver.add(space.equals(self.s, self.model.decode(state)), space.equals(self.t, self.model.decode(nxt)))
        self.solver.add(self.act == action)
        verdict = self.solver.check()
        self.solver.pop()
        return verdict == z3.sat

    def successors(self, state: int) -> set[tuple[int, int]]:
        """Every (action index, packed next state) that T allows, by blocking clauses."""
        space, model = self.sym.space, self.model
        self.solver.push()
        self.solver.add(space.equals(self.s, model.decode(state)))
        found = set()
        while self.solver.check() == z3.sat:
            m = self.solver.model()
            name, params = self.sym.decode_action(space.num(m, self.act), space.num(m, self.epoch))
            index = model.catalogue.lookup(name, params)
            found.add((index, model.encode(space.decode(m, self.t))))
            block = [self.act != m.eval(self.act, model_completion=True)]
            block += [v != m.eval(v, model_completion=True) for v in self.t.terms()]
            self.solver.add(z3.Or(block))
        self.solver.pop()
        return found


def arbitrary_state(rel: "Relation", config: ModelConfig, data) -> tuple:
    """A well-formed state drawn by Hypothesis: (readable, packed)."""
    ps = data.draw(partition_states(config))
    assume(well_formed(ps))
    return ps, rel.model.encode(ps)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_every_explicit_successor_of_an_arbitrary_state_satisfies_the_symbolic_relation(config, data):
    rel = Relation.of(config)
    ps, s = arbitrary_state(rel, config, data)
    for action, nxt in rel.model.successors(s):
        assert rel.admits(s, action, nxt), f"T refuses {rel.model.describe(action)} from {ps}"


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_the_symbolic_successors_of_reachable_states_are_exactly_the_explicit_ones(config):
    rel = Relation.of(config)
    for s in spread(reachable(rel.model, 30_000), 60):
        assert rel.successors(s) == set(rel.model.successors(s)), rel.model.decode(s)


@pytest.mark.parametrize("config", CONFIGS[:4] + CONFIGS[6:8], ids=IDS[:4] + IDS[6:8])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_the_symbolic_successors_of_arbitrary_states_are_exactly_the_explicit_ones(config, data):
    rel = Relation.of(config)
    _, s = arbitrary_state(rel, config, data)
    assert rel.successors(s) == set(rel.model.successors(s))


def test_every_reachable_state_of_a_small_configuration_has_exactly_its_explicit_successors():
    config = ModelConfig(rf=2, protocol="kip-101", core=True, max_records=1, max_leader_epoch=1)
    rel = Relation.of(config)
    states = reachable(rel.model)
    assert len(states) < 1000
    for s in states:
        assert rel.successors(s) == set(rel.model.successors(s)), rel.model.decode(s)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_the_domain_holds_exactly_the_states_the_packed_layout_can_encode(config, data):
    rel = Relation.of(config)
    space = rel.sym.space
    ps = data.draw(partition_states(config))
    solver = z3.Solver()
    solver.add(space.domain(rel.s), space.equals(rel.s, ps))
    assert solver.check() == z3.sat
    assert solver.model() and space.decode(solver.model(), rel.s) == ps


def test_the_symbolic_initial_state_is_the_models():
    for config in CONFIGS:
        rel = Relation.of(config)
        solver = z3.Solver()
        solver.add(rel.sym.init(rel.s))
        assert solver.check() == z3.sat
        assert [rel.model.encode(rel.sym.space.decode(solver.model(), rel.s))] == rel.model.init_states()


def test_the_unbounded_encoding_allows_the_bounded_steps_and_only_adds_elections_and_writes_past_the_bounds():
    """Int and array encoding (what induction uses in the unbounded mode) against the
    explicit model: from states of a bounded configuration, the steps within its bounds
    are exactly the explicit ones; the others send a request past the epoch bound or
    write past the record bound."""
    bounded = ModelConfig(rf=2, protocol="kip-279", acks="1", crashes=1, max_records=1, max_leader_epoch=1)
    model = ReplicationModel(bounded)
    sym = SymbolicModel(bounded.with_changes(max_leader_epoch=None))
    space = sym.space
    s, t = sym.fresh("s"), sym.fresh("t")
    act, epoch = sym.step_vars(1)
    solver = space.solver()
    solver.add(sym.trans(s, t, act, epoch))
    for state in spread(reachable(model), 25):
        solver.push()
        solver.add(space.equals(s, model.decode(state)))
        within, beyond = set(), set()
        while solver.check() == z3.sat:
            m = solver.model()
            a, e = space.num(m, act), space.num(m, epoch)
            name, params = sym.decode_action(a, e)
            nxt = space.decode(m, t)
            if nxt.next_leader_epoch <= bounded.max_leader_epoch + 1 and nxt.next_record_id <= bounded.max_records:
                within.add((model.catalogue.lookup(name, params), model.encode(nxt)))
            else:
                beyond.add(name)
            block = [act != a] + ([epoch != e] if sym.actions[a].symbolic_epoch else [])
            solver.add(z3.Or(block))
        solver.pop()
        assert within == set(model.successors(state))
        assert beyond <= {"ControllerElectLeader", "ControllerShrinkIsr", "ControllerFailover", "LeaderWrite"}
