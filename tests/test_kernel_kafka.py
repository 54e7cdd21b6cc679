"""The vector kernel's Kafka model agrees with the scalar model it is built from.

As for the core machine (``test_kernel.py``): every successor with its action, every key
conversion and every predicate on whole rf 2 spaces with each feature on; the first
levels of rf 3 spaces; symmetry against the scalar relabelling; and both BFS kernels
on the published losses and on full spaces (counts, depths, verdicts, shortest trace
lengths, traces that replay).
"""

from __future__ import annotations

import pytest

from isrcheck.checker import BfsEngine, CheckOptions
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.kernel import KernelDomainError, kernel_for
from isrcheck.properties import select
from isrcheck.traces import replay, trace_from_path

from .test_kernel import random_keys, scalar_levels, successor_triples, vector_levels

KAFKA_RF2 = {
    "kip320-acks-all": ModelConfig(rf=2, max_records=1),
    "kip101-acks1-unclean-disk-loss": ModelConfig(
        rf=2, max_records=1, protocol="kip-101", acks="1", crashes=2, disk_loss=1, unclean_election=True
    ),
    "hw-truncation-min-isr-2": ModelConfig(rf=2, max_records=1, protocol="hw-truncation", min_isr=2),
    "kip279-acks0-no-consumer-unclean": ModelConfig(
        rf=2, max_records=1, protocol="kip-279", acks="0", consumer=False, unclean_election=True
    ),
    "kip320-two-records-unclean": ModelConfig(rf=2, min_isr=2, unclean_election=True),
}


@pytest.fixture(scope="module", params=list(KAFKA_RF2))
def rf2(request):
    model = ReplicationModel(KAFKA_RF2[request.param])
    levels = scalar_levels(model)
    return model, kernel_for(model), levels, sorted(set().union(*levels))


def test_every_successor_and_action_of_every_state_agrees(rf2):
    model, kernel, _, states = rf2
    assert len(states) > 1_000
    vector, scalar = successor_triples(model, kernel, states)
    assert vector == scalar


def test_key_conversions_are_exact_inverses(rf2):
    _, kernel, _, states = rf2
    keys = kernel.keys_of_scalars(states)
    assert kernel.scalars_of_keys(keys) == states
    assert len({kernel.int_of_key(k) for k in keys.T}) == len(states)


def test_batch_predicates_agree_with_the_scalar_ones_on_every_state(rf2):
    model, kernel, _, states = rf2
    comps = kernel.components(kernel.keys_of_scalars(states))
    for prop in select(model.config):
        assert kernel.predicate(prop)(comps).tolist() == [prop.compile(model)(s) for s in states], prop.name


def test_properties_and_canonical_forms_by_blocks_are_those_of_one_batch(rf2, monkeypatch):
    """Batches of properties and of canonical forms are cut into blocks of rows (memory): the
    blocks, here of 7 rows, change no value and no row's place."""
    from isrcheck.model import kernel as kernel_module, kernel_symmetry

    model, kernel, _, states = rf2
    keys = kernel.keys_of_scalars(states)
    preds = [kernel.predicate(prop) for prop in select(model.config)]
    whole = [p(kernel.components(keys)).tolist() for p in preds]
    canon, orbits = kernel.canonical_and_orbits(keys)
    monkeypatch.setattr(kernel_module, "PROPERTY_BLOCK", 7)
    monkeypatch.setattr(kernel_symmetry, "BLOCK", 7)
    assert [v.tolist() for v in kernel.evaluate(keys, preds)] == whole
    blocked, blocked_orbits = kernel.canonical_and_orbits(keys)
    assert (blocked == canon).all() and (blocked_orbits == orbits).all() and len(states) > 7


def test_the_vector_search_reaches_the_scalar_levels(rf2):
    model, _, levels, _ = rf2
    _, vector = vector_levels(model)
    assert vector == levels


RF3 = [ModelConfig(rf=3, min_isr=2), ModelConfig(rf=3, acks="1", crashes=2, disk_loss=1, unclean_election=True)]


@pytest.mark.parametrize("config", RF3, ids=["main-job", "acks1-unclean-disk-loss"])
def test_successors_and_canonical_forms_agree_on_the_first_rf3_levels(config):
    model = ReplicationModel(config)
    kernel = kernel_for(model)
    states = sorted(set().union(*scalar_levels(model, max_levels=9 if config.crashes == 1 else 8)))
    assert len(states) > 3_000
    vector, scalar = successor_triples(model, kernel, states)
    assert vector == scalar
    sample = states[::5]
    sym = model.symmetry
    canon = kernel.canonical(kernel.keys_of_scalars(sample))
    for perm in sym.perms[1:]:
        relabelled = kernel.keys_of_scalars([sym.relabel(s, perm) for s in sample])
        assert (kernel.canonical(relabelled) == canon).all()
    assert kernel.orbit_sizes(kernel.keys_of_scalars(sample)).tolist() == [sym.orbit_size(s) for s in sample]


ENGINES = [  # (config, properties, options)
    (KAFKA_RF2["kip320-two-records-unclean"], None, dict(explore_all=True)),
    (KAFKA_RF2["kip320-two-records-unclean"], None, dict(explore_all=True, symmetry=True)),
    (ModelConfig(rf=3, min_isr=2, max_records=1, disk_loss=1, kafka_version="3.9"), None,
     dict(explore_all=True, symmetry=True)),
    # 3.9 (ZooKeeper): on 4.1 the eligible leader replicas keep both of these safe, a whole space each
    (ModelConfig(rf=3, min_isr=2, crashes=0, unclean_election=True, kafka_version="3.9"), ["committed-survive"],
     dict(symmetry=True)),
    (ModelConfig(rf=3, min_isr=1, acks="1"), ["acked-survive"], dict(symmetry=True)),
    (ModelConfig(rf=3, min_isr=2, protocol="hw-truncation"), ["committed-survive"], {}),
    (ModelConfig(rf=3, min_isr=2, disk_loss=1, kafka_version="3.9"), ["committed-survive", "strong-isr"],
     dict(symmetry=True)),
    (ModelConfig(rf=3, min_isr=2, protocol="kip-101", max_records=1), None, dict(symmetry=True)),
    # rf 4 and 5: the kernel sorts replicas to canonicalise (the scalar kernel its own way)
    (ModelConfig(rf=4, min_isr=2, max_records=1, max_leader_epoch=1, kafka_version="3.9"), None,
     dict(symmetry=True, explore_all=True)),
    (ModelConfig(rf=5, min_isr=3, max_records=1, max_leader_epoch=1), None,
     dict(symmetry=True, explore_all=True, max_depth=12)),
    # rf 6 (720 relabellings): the vector kernel's whole space is 14.5 M states, the scalar one's
    # pace some 9,000 a second; to depth 10, 14,409 states (4,747,519 before symmetry)
    (ModelConfig(rf=6, min_isr=4, max_records=1, max_leader_epoch=1), None,
     dict(symmetry=True, explore_all=True, max_depth=10)),
]


@pytest.mark.parametrize("config,properties,options", ENGINES, ids=lambda x: getattr(x, "summary", lambda: None)())
def test_scalar_and_vector_kernels_agree_on_counts_depths_verdicts_and_trace_lengths(config, properties, options):
    model = ReplicationModel(config)
    props = select(config, properties)
    results = {}
    for kernel in ("scalar", "vector"):
        result = BfsEngine(kernel=kernel).check(model, props, CheckOptions(**options))
        assert result.kernel == kernel, result.kernel_note
        results[kernel] = result
        for p in result.properties:
            if p.path is not None:
                replay(trace_from_path(model, p.path.states, p.path.actions, p.name, p.expectation))
    scalar, vector = results["scalar"], results["vector"]
    verdicts = {k: [(p.name, p.status, p.trace_length) for p in r.properties] for k, r in results.items()}
    assert verdicts["vector"] == verdicts["scalar"]
    assert vector.stats.depth == scalar.stats.depth
    if scalar.exhausted:  # a search that stops early stops inside its last level on the scalar kernel only
        counts = {k: (r.stats.states, r.stats.generated, r.stats.full_states) for k, r in results.items()}
        assert counts["vector"] == counts["scalar"]
    if properties:
        assert any(p.status == "violated" for p in vector.properties), "the published loss is found"


RANDOM = [
    ModelConfig(rf=3, min_isr=2),
    ModelConfig(rf=2, protocol="kip-101", acks="1", crashes=2, disk_loss=1, unclean_election=True),
    ModelConfig(rf=2, protocol="hw-truncation", min_isr=2, crashes=2, consumer=False, max_leader_epoch=1),
    ModelConfig(rf=2, protocol="kip-279", acks="0", crashes=1, log_size=3, unclean_election=True),
]


@pytest.mark.parametrize("config", RANDOM, ids=lambda c: c.summary())
def test_successors_agree_on_arbitrary_representable_states(config):
    """Reachable or not (a leader whose record is already acknowledged, a crashed broker that
    still remembers leading): each state's successors, one state at a time. The vector kernel
    refuses a state whose enabled action leaves its tables (``KernelDomainError``): such states
    are off the reachable space by the tables' invariants, and are skipped."""
    model = ReplicationModel(config)
    kernel = kernel_for(model)
    keys = random_keys(kernel, 800, seed=3)
    compared = 0
    for i, state in enumerate(kernel.scalars_of_keys(keys)):
        try:
            succ, _, actions = kernel.expand(keys[:, i : i + 1])
        except KernelDomainError:
            continue
        assert sorted(zip(actions.tolist(), kernel.scalars_of_keys(succ))) == sorted(model.successors(state))
        compared += 1
    assert compared > 400


def test_the_main_job_fits_one_exact_word_and_wider_kafka_keys_fall_back_to_bit_fields():
    zookeeper = kernel_for(ReplicationModel(ModelConfig(rf=3, min_isr=2, kafka_version="3.9")))
    assert (type(zookeeper.T.codec).__name__, zookeeper.words, zookeeper.exact, zookeeper.T.key_bits) == (
        "MixedRadix", 1, True, 64)
    kraft = kernel_for(ReplicationModel(ModelConfig(rf=3, min_isr=2)))  # 4.1: the ELR and AlterPartition's pending ISR
    assert (type(kraft.T.codec).__name__, kraft.words, kraft.T.key_bits) == ("BitFields", 2, 74)
    model = ReplicationModel(ModelConfig(rf=4, min_isr=2, acks="1"))
    kernel = kernel_for(model)
    assert (type(kernel.T.codec).__name__, kernel.words) == ("BitFields", 2)
    states = sorted(set().union(*scalar_levels(model, max_levels=6)))
    assert len(states) > 500
    assert kernel.scalars_of_keys(kernel.keys_of_scalars(states)) == states
    vector, scalar = successor_triples(model, kernel, states)
    assert vector == scalar
    sym, sample = model.symmetry, states[::7]
    canon = kernel.canonical(kernel.keys_of_scalars(sample))
    relabelled = kernel.keys_of_scalars([sym.relabel(s, sym.perms[5]) for s in sample])
    assert (kernel.canonical(relabelled) == canon).all()


@pytest.mark.parametrize("kafka_version", ["3.9", "4.1"])
def test_rf5_canonical_forms_sort_replicas_and_agree_with_the_scalar_orbits(kafka_version):
    """At rf 5 the kernel sorts replicas instead of trying 120 relabellings: every relabelling
    of a state has its canonical form, and orbit sizes are the scalar symmetry's (states
    with tied replicas included: the first levels are full of them)."""
    model = ReplicationModel(ModelConfig(rf=5, min_isr=3, max_records=1, kafka_version=kafka_version))
    kernel = kernel_for(model)
    sym = model.symmetry
    states = sorted(set().union(*scalar_levels(model, max_levels=5)))[::3]
    assert len(states) > 200
    keys = kernel.keys_of_scalars(states)
    canon = kernel.canonical(keys)
    for perm in sym.perms[1::13]:
        relabelled = kernel.keys_of_scalars([sym.relabel(s, perm) for s in states])
        assert (kernel.canonical(relabelled) == canon).all()
    sizes = kernel.orbit_sizes(keys).tolist()
    assert sizes == [sym.orbit_size(s) for s in states]
    assert min(sizes) < 120 and 120 in sizes  # tied replicas and distinct ones both met
    representatives = kernel.scalars_of_keys(canon)  # each a member of its state's orbit
    assert [sym.canonical(r) for r in representatives] == [sym.canonical(s) for s in states]


def test_orbit_sizes_add_up_to_the_unreduced_space():
    """Exact symmetry reduction on the Kafka model: the reduced search's count before reduction
    is the count of the search without it (the main job's is 22,503,721 both ways, measured)."""
    config = ModelConfig(rf=3, min_isr=2, max_records=1, disk_loss=1, unclean_election=True)
    model = ReplicationModel(config)
    counts = {}
    for symmetry in (True, False):
        result = BfsEngine().check(model, select(config), CheckOptions(explore_all=True, symmetry=symmetry))
        assert result.kernel == "vector" and result.exhausted
        counts[symmetry] = result.stats
    assert counts[True].full_states == counts[False].states > 3 * counts[True].states


def test_orbits_counted_while_canonicalising_are_the_scalar_orbit_sizes():
    """Orbit sizes come from the canonical pass (how many sorting relabellings made the
    smallest image): at rf 4 they are the scalar symmetry's, ties included, for a state and
    for its canonical form alike."""
    model = ReplicationModel(ModelConfig(rf=4, min_isr=2, max_records=1))
    kernel, sym = kernel_for(model), model.symmetry
    states = sorted(set().union(*scalar_levels(model, max_levels=6)))[::2]
    keys = kernel.keys_of_scalars(states)
    canon, orbits = kernel.canonical_and_orbits(keys)
    assert orbits.tolist() == [sym.orbit_size(s) for s in states] == kernel.orbit_sizes(canon).tolist()
    assert len(set(orbits.tolist())) > 2


@pytest.mark.parametrize("symmetry", [True, False])
def test_three_word_keys_search_as_the_scalar_kernel_does(symmetry):
    """rf 5 with two records takes three words (no field split between words): the vector
    kernel runs it, with the scalar kernel's counts, verdicts and trace lengths, and its
    counterexample (an acknowledged write lost to an unclean election) replays. Its properties
    read seven components at once, whose product of feature counts passes 2^64: tabulated, it
    took every gigabyte there was (the size's int64 product wrapped; ``factor.py``)."""
    config = ModelConfig(rf=5, min_isr=1, acks="1", unclean_election=True, max_records=2)
    model = ReplicationModel(config)
    assert kernel_for(model).words == 3
    options = CheckOptions(symmetry=symmetry, max_depth=7 if symmetry else 6, explore_all=True)
    vector, scalar = (BfsEngine(kernel=k).check(model, select(config), options) for k in ("vector", "scalar"))
    assert vector.kernel == "vector" and scalar.kernel == "scalar"
    stats = lambda r: (r.stats.states, r.stats.generated, r.stats.depth, r.stats.full_states)
    assert stats(vector) == stats(scalar) and vector.stats.states > 1_000
    assert [(p.name, p.status, p.trace_length) for p in vector.properties] == [
        (p.name, p.status, p.trace_length) for p in scalar.properties]
    assert any(p.path is not None for p in vector.properties)
    for p in vector.properties:
        if p.path is not None:
            replay(trace_from_path(model, p.path.states, p.path.actions))
