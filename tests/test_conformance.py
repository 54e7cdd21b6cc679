"""Every action and every property, in every backend, is its one definition.

Parametrised over the registry: for each configuration, each action family and each
property, the forms derived from the definition are compared on states of that
configuration, deep reachable ones (seeded random walks) and arbitrary representable
ones (Hypothesis), action by action:

* ``reference``: the definition run on Python ints (``model.step``);
* ``fused``: the hand-fused scalar successor function (``model/fused.py``), which must
  also list a state's successors in the registry's emission order;
* ``batch``: the vector kernel, the definition traced and run on NumPy arrays;
* ``symbolic``: the Z3 transition, the guard and the update evaluated on the state.

A family that is never enabled on the sampled states fails the test too: the
comparison would prove nothing about it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.kafka import KAFKA
from isrcheck.model.kernel import KernelDomainError, kernel_for
from isrcheck.model.symbolic import SymbolicModel
from isrcheck.properties import BY_NAME, PROPERTIES, select, verdict
from isrcheck.properties.symbolic import goal

from .strategies import partition_states, paths_to_every_family, walk_states

CONFIGS = [
    ModelConfig(rf=2, protocol="hw-truncation", core=True),
    ModelConfig(rf=2, protocol="kip-101", core=True),
    ModelConfig(rf=3, protocol="kip-279", core=True, max_records=1, max_leader_epoch=1),
    ModelConfig(rf=3, protocol="kip-320", core=True),
    ModelConfig(rf=2, protocol="hw-truncation", acks="1", crashes=1, disk_loss=1),
    ModelConfig(rf=2, protocol="kip-279", acks="all", min_isr=2, crashes=1, unclean_election=True),
    ModelConfig(rf=3, protocol="kip-101", acks="all", min_isr=2, crashes=2, max_records=1, max_leader_epoch=1),
    ModelConfig(rf=3, kafka_version="3.9", acks="all", min_isr=2, crashes=2, disk_loss=1, unclean_election=True),
    ModelConfig(rf=3, kafka_version="3.9", acks="0", consumer=False, crashes=1),
    ModelConfig(rf=2, kafka_version="3.6", acks="all", min_isr=2, crashes=1),  # before strict min ISR
    ModelConfig(rf=2, kafka_version="2.1", acks="1", min_isr=2, crashes=1),  # before KIP-380
    # unflushed writes
    ModelConfig(rf=2, kafka_version="3.9", acks="all", min_isr=2, crashes=1, disk_loss=1, power_loss=2, max_records=1),
    ModelConfig(rf=3, kafka_version="3.9", acks="1", crashes=0, power_loss=2, flush="always", max_records=1,
                max_leader_epoch=1),
    # permanent failures
    ModelConfig(rf=3, kafka_version="3.9", acks="all", min_isr=2, crashes=2, restarts=False, max_records=1),
    # KRaft 4.1: AlterPartition, KIP-903 and KIP-966's ELR, with unclean election (which the ELR vetoes)
    ModelConfig(rf=3, kafka_version="4.1", min_isr=2, crashes=2, max_records=1, unclean_election=True),
    # KRaft 3.4: AlterPartition without KIP-903, the unclean setting ignored
    ModelConfig(rf=2, kafka_version="3.4", kraft=True, min_isr=2, crashes=1, disk_loss=1, unclean_election=True),
    # the producer's requests: timeouts and retries, idempotent (DuplicateSequence) or not, acks=1's answers
    ModelConfig(rf=2, kafka_version="3.9", min_isr=1, crashes=0, retries=2, delivery_timeout=2),  # retried once
    ModelConfig(rf=2, kafka_version="3.9", acks="1", crashes=0, retries=1, max_in_flight=1, idempotent=False,
                max_records=1),
    # a consumer group member: commit before processing, latest; after, earliest, past an unclean leader's log end
    ModelConfig(rf=2, kafka_version="3.9", crashes=0, commit="before", consumer_crashes=1, max_records=1),
    ModelConfig(rf=2, kafka_version="3.9", crashes=1, unclean_election=True, commit="after", consumer_crashes=1,
                auto_offset_reset="earliest", max_records=1, max_leader_epoch=1),
]
FAMILY_CASES = [(c, f.name) for c in CONFIGS for f in KAFKA.families if f.kept(c)]
# graph properties too: their target (``holds``) is a state predicate like any other
PROPERTY_CASES = [(c, p.name) for c in CONFIGS for p in PROPERTIES if p.applies(c)]


class Forms:
    """One configuration's backends, each built once, and the sampled states' successors."""

    def __init__(self, config: ModelConfig) -> None:
        self.model = ReplicationModel(config)
        self.kernel = kernel_for(self.model)
        self.sym = SymbolicModel(config)
        self.s = self.sym.fresh("s")
        self.transitions: dict[int, tuple] = {}
        self.walked = paths_to_every_family(self.model, walk_states(self.model, walks=40, length=40))
        for state in self.walked:  # the fused function: the same successors, in the registry's order
            assert self.model.successors(state) == self.model.derived(state), f"fused: {self.model.decode(state)}"
        self.reference = {state: dict(self.model.derived(state)) for state in self.walked}
        self.batch = dict(zip(self.walked, batch_steps(self, self.walked)))
        self._values: dict[int, dict] = {}
        self._pinned: dict[int, z3.ModelRef] = {}  # every family's test pins the same walked states

    def symbolic(self, action: int) -> tuple:
        if action not in self.transitions:
            a = self.sym.actions[action]
            self.transitions[action] = self.sym.guarded_update(self.s, a, self.sym.space.c(0))
        return self.transitions[action]

    def values(self, state: int) -> dict:
        """The Z3 variables' values of a packed state."""
        v = self._values.get(state)
        if v is None:
            v = self._values[state] = self.sym.space.values(self.model.decode(state))
        return v

    def pin(self, state: int) -> z3.ModelRef:
        """A Z3 model that gives ``self.s`` the values of the packed state (to evaluate terms on)."""
        m = self._pinned.get(state)
        if m is None:
            space = self.sym.space
            m = self._pinned[state] = z3.Model()
            for name, value in self.values(state).items():
                m.update_value(self.s.v[name], z3.BoolVal(value) if isinstance(value, bool) else space.c(value))
        return m


@lru_cache(maxsize=None)
def forms(config: ModelConfig) -> Forms:
    return Forms(config)


def _value(term, m: z3.ModelRef):
    v = m.eval(term, model_completion=True)
    if z3.is_true(v) or z3.is_false(v):
        return z3.is_true(v)
    return v.as_signed_long() if z3.is_bv_value(v) else v.as_long()


def symbolic_agrees(f: Forms, state: int, m: z3.ModelRef, action: int, ref: int | None) -> bool:
    """The Z3 form of ``action`` on the state pinned by ``m``: its guard evaluated, and where it
    holds, the variables after its update are those of ``ref``."""
    guard, upd = f.symbolic(action)
    if not _value(guard, m):
        return ref is None
    if ref is None:
        return False
    after = dict(f.values(state))
    after.update({name: _value(term, m) for name, term in upd.items()})
    return after == f.values(ref)


def batch_steps(f: Forms, states: list[int], arbitrary: bool = False) -> list[dict[int, int] | None]:
    """Per state, the vector kernel's successors by action (None: the kernel cannot hold it).
    ``arbitrary``: states need not be reachable, and the kernel's facts are invariants of
    reachable states, so a successor may leave its tables (it fails loudly): those states
    are left out instead."""
    if arbitrary:
        out1: list[dict[int, int] | None] = []
        for s in states:
            try:
                out1 += batch_steps(f, [s])
            except KernelDomainError:
                out1.append(None)
        return out1
    out: list[dict[int, int] | None] = []
    keys, rows = [], []
    for i, s in enumerate(states):
        try:
            keys.append(f.kernel.key_of_scalar(s))
            rows.append(i)
            out.append({})
        except KernelDomainError:
            out.append(None)
    if keys:
        succ, parent, actions = f.kernel.expand(f.kernel.keys_of_ints(keys))
        for j in range(succ.shape[1]):
            table = out[rows[int(parent[j])]]
            assert int(actions[j]) not in table, "an action enabled twice on one state"
            table[int(actions[j])] = f.kernel.scalar_of_key(f.kernel.int_of_key(succ[:, j]))
    return out


def compare_family(f: Forms, family: str, states: list[int], arbitrary: bool = False) -> int:
    """Compare every form of the family's actions on these states; how many times it was enabled."""
    model = f.model
    actions = [a for a in range(len(model.catalogue)) if model.catalogue[a].name == family]
    known = all(s in f.reference for s in states)
    if not known:
        for s in states:
            assert model.successors(s) == model.derived(s), f"fused: {model.decode(s)}"
    batch = [f.batch[s] for s in states] if known else batch_steps(f, states, arbitrary)
    enabled = 0
    for s, by_kernel in zip(states, batch):
        pinned = f.pin(s)
        fused = dict(model.successors(s))
        reference = f.reference[s] if known else dict(model.derived(s))
        for a in actions:
            ref = reference.get(a)
            assert model.step(s, a) == ref, f"step: {model.describe(a)} on {model.decode(s)}"
            enabled += ref is not None
            what = f"{model.describe(a)} on {model.decode(s)}"
            assert fused.get(a) == ref, f"fused: {what}"
            if by_kernel is not None:
                assert by_kernel.get(a) == ref, f"batch: {what}"
            assert symbolic_agrees(f, s, pinned, a, ref), f"symbolic: {what}"
    return enabled


@pytest.mark.parametrize("config,family", FAMILY_CASES, ids=[f"{c.summary()}-{n}" for c, n in FAMILY_CASES])
def test_every_form_of_an_action_is_its_definition_on_reachable_states(config, family):
    f = forms(config)
    assert compare_family(f, family, f.walked) > 0, f"{family} is never enabled on the sampled states"


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.summary())
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_form_of_every_action_is_its_definition_on_arbitrary_states(config, data):
    f = forms(config)
    states = [f.model.encode(data.draw(partition_states(config, distinct_ids=data.draw(st.booleans()))))]
    for fam in KAFKA.families:
        if fam.kept(config):
            compare_family(f, fam.name, states, arbitrary=True)


def compare_property(f: Forms, name: str, states: list[int]) -> tuple[int, int]:
    """Compare every form of a property on these states: (states where it holds, where not)."""
    prop = BY_NAME[name]
    reference, fused = prop.derived(f.model), prop.compile(f.model)
    g = goal(prop, f.s).formula
    key_of = {}  # the states the kernel represents, and their keys
    for s in states:
        try:
            key_of[s] = f.kernel.key_of_scalar(s)
        except KernelDomainError:
            pass
    batch = {}
    if key_of:
        keys = f.kernel.keys_of_ints(list(key_of.values()))
        batch = dict(zip(key_of, f.kernel.predicate(prop)(f.kernel.components(keys)).tolist()))
    counts = [0, 0]
    for s in states:
        holds = reference(s)
        counts[0 if holds else 1] += 1
        assert fused(s) == holds, f"fused: {name} on {f.model.decode(s)}"
        if s in batch:
            assert batch[s] == holds, f"batch: {name} on {f.model.decode(s)}"
        found = _value(g, f.pin(s))
        assert found == (not holds if verdict.always(prop) else holds), f"symbolic: {name} on {f.model.decode(s)}"
    return counts[0], counts[1]


@pytest.mark.parametrize("config,name", PROPERTY_CASES, ids=[f"{c.summary()}-{n}" for c, n in PROPERTY_CASES])
def test_every_form_of_a_property_is_its_definition(config, name):
    f = forms(config)
    compare_property(f, name, f.walked)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.summary())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_form_of_every_property_is_its_definition_on_arbitrary_states(config, data):
    f = forms(config)
    states = [f.model.encode(data.draw(partition_states(config, distinct_ids=data.draw(st.booleans()))))]
    for p in PROPERTIES:
        if p.applies(config):
            compare_property(f, p.name, states)


def test_the_registry_lists_the_specifications_families_and_the_features_add_theirs():
    core = {f.name for f in KAFKA.families if f.kept(ModelConfig(rf=2, core=True))}
    assert core == {
        "ControllerElectLeader", "ControllerShrinkIsr", "BecomeLeader", "BecomeFollower", "LeaderWrite",
        "LeaderIncHighWatermark", "LeaderShrinkIsr", "LeaderExpandIsr", "FollowerFetch",
    }
    zookeeper = ModelConfig(rf=2, kafka_version="3.9", crashes=1, disk_loss=1, unclean_election=True)
    kafka = {f.name for f in KAFKA.families if f.kept(zookeeper)}
    assert kafka - core == {
        "ControllerFailover", "ControllerUncleanElect", "BrokerCrash", "BrokerCrashDiskLoss", "BrokerRestart",
    }
    assert np.all(kernel_for(ReplicationModel(ModelConfig(rf=2))).emission_rank() >= 0)
