"""The vector kernel agrees with the scalar model it is built from.

State by state (every successor with its action, every key conversion, every
predicate on every reachable rf 2 state and on arbitrary representable states),
space by space (the same reachable sets, level by level), and engine by engine
(counts, depths, verdicts and shortest trace lengths on every pinned configuration).
"""

from __future__ import annotations

import pickle
import random
from types import SimpleNamespace

import numpy as np
import pytest

from isrcheck.checker import BfsEngine, CheckOptions, Observer, checkpoint, saving
from isrcheck.checker.bfs import _Search
from isrcheck.checker.bfs_vector import VectorSearch
from isrcheck.model import REVISIONS, ModelConfig, ReplicationModel
from isrcheck.model.kernel import KernelDomainError, KernelUnsupported, VectorKernel, kernel_for
from isrcheck.model.plan import Plan
from isrcheck.properties import select
from isrcheck.traces import trace_from_path

RF2 = {p: ModelConfig(rf=2, protocol=p, core=True) for p in REVISIONS}


def scalar_levels(model: ReplicationModel, max_levels: int | None = None) -> list[set[int]]:
    """Every reachable state by BFS level, with the scalar successor function."""
    seen = set(model.init_states())
    levels = [set(seen)]
    while levels[-1] and (max_levels is None or len(levels) < max_levels):
        nxt = {t for s in levels[-1] for _, t in model.successors(s)} - seen
        seen |= nxt
        levels.append(nxt)
    return [lv for lv in levels if lv]


@pytest.fixture(scope="module", params=REVISIONS)
def rf2(request):
    model = ReplicationModel(RF2[request.param])
    return model, kernel_for(model), scalar_levels(model)


def vector_levels(model: ReplicationModel, **options) -> tuple[VectorSearch, list[set[int]]]:
    kernel = kernel_for(model)
    search = VectorSearch(model, kernel, [], CheckOptions(explore_all=True, **options), chunk=512, keep_levels=True)
    search.run()
    return search, [set(kernel.scalars_of_keys(keys)) for keys in search.keys]


def test_rf2_reachable_sets_are_the_scalar_ones_level_by_level(rf2):
    model, _, levels = rf2
    _, vector = vector_levels(model)
    assert vector == levels


def scalar_search(model: ReplicationModel, **options):
    search = _Search(model, [], CheckOptions(explore_all=True, **options), Observer(), None, None)
    search.run()
    return search.st


@pytest.mark.parametrize("config,chunk", [(RF2["hw-truncation"], 64), (RF2["kip-101"], 1 << 17),
                                          (ModelConfig(rf=3, protocol="kip-279", core=True), 1000)],
                         ids=["rf2-hw-truncation", "rf2-kip-101", "rf3-kip-279"])
def test_without_symmetry_both_kernels_store_the_same_states_in_the_same_order_with_the_same_parents(
    config, chunk
):
    """So both find the very same traces, not only traces of the same length."""
    model = ReplicationModel(config)
    max_depth = 12 if config.rf == 3 else None
    scalar = scalar_search(model, max_depth=max_depth)
    search = VectorSearch(model, kernel_for(model), [], CheckOptions(explore_all=True, max_depth=max_depth),
                          chunk=chunk, keep_levels=True)
    search.run()
    kernel = search.kernel
    assert [s for keys in search.keys for s in kernel.scalars_of_keys(keys)] == scalar.states
    offsets = np.cumsum([0] + [k.shape[1] for k in search.keys])
    parents = [-1] + [int(p) + offsets[d - 1] for d in range(1, len(search.keys)) for p in search.parents[d]]
    assert parents == list(scalar.parents)
    assert [int(a) for acts in search.actions[1:] for a in acts] == list(scalar.actions)[1:]


def test_the_emission_rank_is_the_order_of_the_scalar_successor_function(rf2):
    model, kernel, levels = rf2
    states = sorted(set().union(*levels))
    succ, rows, actions = kernel.expand(kernel.keys_of_scalars(states))
    rank = kernel.emission_rank()
    listed: dict[int, list] = {}
    for r, a, t in sorted(zip(rows.tolist(), actions.tolist(), kernel.scalars_of_keys(succ)),
                          key=lambda x: (x[0], rank[x[1]])):
        listed.setdefault(states[r], []).append((a, t))
    assert all(listed.get(s, []) == model.successors(s) for s in states)


def test_key_conversions_are_exact_inverses_on_every_rf2_state(rf2):
    _, kernel, levels = rf2
    states = sorted(set().union(*levels))
    keys = kernel.keys_of_scalars(states)
    assert kernel.scalars_of_keys(keys) == states
    assert len(np.unique(keys[0])) == keys.shape[1]  # distinct states, distinct keys
    for s in states[::50]:
        assert kernel.scalar_of_key(kernel.key_of_scalar(s)) == s


def successor_triples(model: ReplicationModel, kernel: VectorKernel, states: list[int]):
    keys = kernel.keys_of_scalars(states)
    succ, rows, actions = kernel.expand(keys)
    vector = sorted(
        (states[r], a, t) for t, r, a in zip(kernel.scalars_of_keys(succ), rows.tolist(), actions.tolist())
    )
    scalar = sorted((s, a, t) for s in states for a, t in model.successors(s))
    return vector, scalar


def test_every_successor_and_action_of_every_rf2_state_agrees(rf2):
    model, kernel, levels = rf2
    vector, scalar = successor_triples(model, kernel, sorted(set().union(*levels)))
    assert vector == scalar


@pytest.mark.parametrize("protocol", ["kip-279", "kip-320"])
def test_successors_agree_on_the_first_rf3_levels(protocol):
    model = ReplicationModel(ModelConfig(rf=3, protocol=protocol, core=True))
    states = sorted(set().union(*scalar_levels(model, max_levels=9)))
    assert len(states) > 2_000
    vector, scalar = successor_triples(model, kernel_for(model), states)
    assert vector == scalar


def test_batch_predicates_agree_with_the_scalar_ones_on_every_rf2_state(rf2):
    model, kernel, levels = rf2
    states = sorted(set().union(*levels))
    comps = kernel.components(kernel.keys_of_scalars(states))
    for prop in select(model.config):
        scalar = prop.compile(model)
        assert kernel.predicate(prop)(comps).tolist() == [scalar(s) for s in states], prop.name


def random_keys(kernel: VectorKernel, n: int, seed: int = 7) -> np.ndarray:
    """Keys of n random representable states: each replica uniform over the combinations of its
    fields that the kernel's tables hold, every other component uniform over its range."""
    T = kernel.T
    rng = np.random.default_rng(seed)
    values = {name: rng.integers(0, bound, n) for name, bound in T.bound.items()}  # every slot is a combination
    return kernel.encode(values)


@pytest.mark.parametrize("config", [RF2["kip-101"], ModelConfig(rf=3, protocol="kip-279", core=True),
                                    ModelConfig(rf=3, min_isr=2, acks="1", disk_loss=1, unclean_election=True),
                                    ModelConfig(rf=2, protocol="kip-101", crashes=2)],
                         ids=["rf2", "rf3", "kafka-rf3", "kafka-rf2-kip101"])
def test_batch_predicates_agree_on_arbitrary_representable_states(config):
    """Random component values, reachable or not: leader-in-isr fails only off the reachable space."""
    model = ReplicationModel(config)
    kernel = kernel_for(model)
    n = 4000
    keys = random_keys(kernel, n)
    states = kernel.scalars_of_keys(keys)
    assert (kernel.keys_of_scalars(states) == keys).all()
    comps = kernel.components(keys)
    for prop in select(config):
        batch = kernel.predicate(prop)(comps)
        assert batch.tolist() == [prop.reference(model, model.decode(s)) for s in states], prop.name
        assert batch.tolist() == [prop.compile(model)(s) for s in states], prop.name
        assert batch.any() and not batch.all(), f"{prop.name} is constant on {n} arbitrary states: the test is too weak"


def test_a_conjunction_too_wide_for_one_table_reads_a_table_per_group_of_terms():
    """weak-isr at rf 3 is five terms over pairs and triples of replicas' slots, too many
    combinations for one table: its terms are gathered into as few tables as fit (three),
    where each term was a table of its own. The values are the scalar ones (above)."""
    from isrcheck.model.trace import Node

    model = ReplicationModel(ModelConfig(rf=3, protocol="kip-279", core=True))
    kernel = kernel_for(model)
    (weak,) = [p for p in select(model.config) if p.name == "weak-isr"]
    node = kernel.plan.trace_property(weak.holds)
    tables, stack = 0, [node]
    while stack:
        n = stack.pop()
        if type(n) is Node and n.table is None:
            op = n.key[0]  # a node's key: (its operation, its arguments)
            if isinstance(op, tuple) and op[0] == "factored":
                tables += 1
            else:
                stack.extend(n.args)
    assert node.comps == {"slot0", "slot1", "slot2"}
    assert tables == 3


def test_canonical_form_is_the_same_for_every_relabelling_and_orbits_match_the_scalar_ones():
    model = ReplicationModel(ModelConfig(rf=3, protocol="kip-279", core=True))
    kernel = kernel_for(model)
    states = sorted(set().union(*scalar_levels(model, max_levels=9)))[::7]
    sym = model.symmetry
    canon = kernel.canonical(kernel.keys_of_scalars(states))[0]
    for perm in sym.perms[1:]:
        relabelled = kernel.keys_of_scalars([sym.relabel(s, perm) for s in states])
        assert (kernel.canonical(relabelled)[0] == canon).all()
    sizes = kernel.orbit_sizes(kernel.keys_of_scalars(states))
    assert sizes.tolist() == [sym.orbit_size(s) for s in states]


# ---- engines: both kernels, every pinned configuration ------------------------------------------

PINNED = [  # (config, properties, options, pinned (states, depth) or None)
    (RF2["hw-truncation"], None, dict(explore_all=True), (10_131, 20)),
    (RF2["kip-101"], None, dict(explore_all=True), (9_045, 18)),
    (RF2["kip-279"], None, dict(explore_all=True), (9_027, 18)),
    (RF2["kip-320"], None, dict(explore_all=True), (5_973, 18)),
    (RF2["kip-320"], None, dict(explore_all=True, symmetry=True), (2_987, 18)),
    (RF2["hw-truncation"], ["weak-isr"], {}, None),
    (RF2["hw-truncation"], ["strong-isr"], dict(symmetry=True), None),
    (RF2["kip-101"], ["weak-isr", "strong-isr"], {}, None),
    (RF2["hw-truncation"], ["weak-isr"], dict(max_depth=8), None),
    (ModelConfig(rf=3, protocol="kip-279", core=True), ["weak-isr"], dict(symmetry=True), None),
    (ModelConfig(rf=3, protocol="kip-279", core=True), ["strong-isr"], {}, None),
    (ModelConfig(rf=3, protocol="kip-320", core=True), None, dict(explore_all=True), (737_794, 26)),
    (ModelConfig(rf=3, protocol="kip-320", core=True), None, dict(explore_all=True, symmetry=True), (123_311, 26)),
    (ModelConfig(rf=4, protocol="kip-320", core=True), None, dict(max_depth=7, explore_all=True), None),
]


def run(config, properties, kernel, **options):
    engine = BfsEngine(kernel=kernel)
    result = engine.check(ReplicationModel(config), select(config, properties), CheckOptions(**options))
    assert result.kernel == kernel, result.kernel_note
    return result


def summary(result, counts: bool):
    s = result.stats
    verdicts = [(p.name, p.status, p.trace_length) for p in result.properties]
    return (s.states, s.generated, s.full_states, s.depth, verdicts) if counts else (s.depth, verdicts)


@pytest.mark.parametrize("config,properties,options,pinned", PINNED,
                         ids=[f"{c.protocol}-rf{c.rf}-{p or 'all'}-{o}" for c, p, o, _ in PINNED])
def test_scalar_and_vector_kernels_agree_on_counts_depths_verdicts_and_trace_lengths(
    config, properties, options, pinned
):
    scalar = run(config, properties, "scalar", **options)
    vector = run(config, properties, "vector", **options)
    exhaustive = options.get("explore_all", False)
    assert summary(vector, exhaustive) == summary(scalar, exhaustive)
    if not options.get("symmetry"):  # the same discovery order: the very same traces
        assert [p.path for p in vector.properties] == [p.path for p in scalar.properties]
    assert vector.exhausted == scalar.exhausted and vector.complete
    if pinned:
        assert (vector.stats.states, vector.stats.depth) == pinned
    for p in vector.properties:
        if p.path is not None:  # replays on the scalar model, action by action
            trace_from_path(ReplicationModel(config), p.path.states, p.path.actions)


def test_two_word_keys_use_fingerprints_and_report_the_collision_probability_as_tlc_does():
    config = ModelConfig(rf=3, protocol="hw-truncation", core=True, max_records=3, max_leader_epoch=3)
    assert not kernel_for(ReplicationModel(config)).exact  # 74 bits: too many for one word in any codec
    scalar = run(config, ["weak-isr"], "scalar")
    vector = run(config, ["weak-isr"], "vector")
    assert summary(vector, False) == summary(scalar, False)
    assert vector.by_name("weak-isr").status == "violated"
    assert "the chance that two were taken for one" in vector.by_name("weak-isr").note


@pytest.mark.slow
def test_rf3_kip320_with_max_leader_epoch_3_has_the_count_the_scalar_engine_found():
    """Pinned from one scalar-kernel run, too long for the suite (79 s of CPU, 0.9 GiB): 9,985,570
    distinct states, 26,629,363 generated, depth 32, every property holding."""
    result = run(ModelConfig(rf=3, protocol="kip-320", core=True, max_leader_epoch=3), None, "vector",
                 explore_all=True)
    assert (result.stats.states, result.stats.generated, result.stats.depth) == (9_985_570, 26_629_363, 32)
    assert result.all_hold


# ---- the engine's own behaviour ------------------------------------------------------------------


def test_threads_do_not_change_the_result_and_chunks_change_at_most_which_parent_is_kept():
    model = ReplicationModel(RF2["hw-truncation"])
    kernel = kernel_for(model)
    props = select(model.config)
    results = {}
    for workers, chunk in ((1, 64), (2, 64), (1, 1 << 17)):
        search = VectorSearch(model, kernel, props, CheckOptions(explore_all=True), workers=workers, chunk=chunk,
                              keep_levels=True)
        r = search.run()
        results[workers, chunk] = (summary(r, True), [k.tolist() for k in search.keys], [p.path for p in r.properties])
    assert results[1, 64] == results[2, 64]
    assert results[1, 64][:2] == results[1, 1 << 17][:2]


@pytest.mark.parametrize("symmetry", [True, False])
def test_a_search_that_keeps_only_the_initial_level_rebuilds_the_same_traces(symmetry):
    """Without a checkpoint or a state graph only parents and actions are kept: a trace is
    replayed from its initial state, canonicalised at each step as the search stored it."""
    model = ReplicationModel(ModelConfig(rf=3, max_records=1, acks="1", kafka_version="3.9"))
    kernel, props = kernel_for(model), select(model.config)
    runs = {}
    for keep in (True, False):
        search = VectorSearch(model, kernel, props, CheckOptions(explore_all=True, symmetry=symmetry), workers=1,
                              keep_levels=keep)
        runs[keep] = search, search.run()
    (kept, kept_result), (lean, lean_result) = runs[True], runs[False]
    assert len(lean.keys) == 1 and len(kept.keys) == kept.depth > 10
    assert [p.path for p in lean_result.properties] == [p.path for p in kept_result.properties]
    assert any(p.path is not None and len(p.path) > 5 for p in lean_result.properties)
    rng = random.Random(5)
    for depth in (1, kept.depth // 2, kept.depth - 1):
        for row in rng.sample(range(len(kept.parents[depth])), min(5, len(kept.parents[depth]))):
            assert lean.path_to(depth, row) == kept.path_to(depth, row)


class StopAfter(Observer):
    def __init__(self, calls: int) -> None:
        super().__init__()
        self.calls = calls

    def should_stop(self) -> str:
        self.calls -= 1
        return "interrupted" if self.calls < 0 else ""


def test_a_stop_request_ends_the_run_incomplete_with_what_was_explored():
    model = ReplicationModel(ModelConfig(rf=3, protocol="kip-320", core=True))
    search = VectorSearch(model, kernel_for(model), select(model.config), CheckOptions(explore_all=True),
                          StopAfter(40), workers=1, chunk=256)
    result = search.run()
    assert not result.complete and result.stop_reason == "interrupted"
    assert not result.exhausted and 0 < result.stats.states < 737_794
    assert result.stats.queue == search.frontier.shape[1] == len(search.parents[-1]) > 0
    assert {p.status for p in result.properties} == {"unknown"}


def test_the_vector_kernel_falls_back_to_scalar_where_it_does_not_apply(tmp_path):
    engine = BfsEngine()
    wide = ModelConfig(rf=6, core=True)
    result = engine.check(ReplicationModel(wide), select(wide), CheckOptions(max_depth=3))
    assert result.kernel == "scalar" and "MiB" in result.kernel_note  # the table of request sequences
    core = RF2["kip-320"]
    ident = checkpoint.identity(core.as_dict(), {"engine": "bfs"})
    saved = BfsEngine(kernel="scalar").check(ReplicationModel(core), select(core), CheckOptions(),
                                             saving=saving.BfsSaving(tmp_path / "ck", ident, resuming=False))
    resumed = engine.check(ReplicationModel(core), select(core), CheckOptions(),
                           saving=saving.BfsSaving(tmp_path / "ck", ident, resuming=True))
    assert resumed.kernel == "scalar" and "scalar kernel that wrote the checkpoint" in resumed.kernel_note
    assert resumed.stats.states == saved.stats.states
    with pytest.raises(KernelUnsupported, match="MiB"):
        VectorKernel(ReplicationModel(ModelConfig(rf=6, core=True)))
    with pytest.raises(ValueError, match="unknown kernel"):
        BfsEngine(kernel="gpu")


def test_a_replicas_combinations_built_by_blocks_are_those_built_whole(monkeypatch):
    """The facts filter a replica's combinations a block at a time; blocks of any size give the
    same table, row for row, and too many combinations are refused once found."""
    from isrcheck.model import kernel_tables

    for config in (ModelConfig(rf=3, min_isr=2), RF2["kip-320"]):
        whole = kernel_tables.KernelTables(ReplicationModel(config))
        monkeypatch.setattr(kernel_tables, "COMBINE_BLOCK", 7)
        blocks = kernel_tables.KernelTables(ReplicationModel(config))
        monkeypatch.undo()
        assert blocks.n_slots == whole.n_slots > 1 and whole.field.keys() == blocks.field.keys()
        for name, column in whole.field.items():
            assert np.array_equal(blocks.field[name], column), name
    monkeypatch.setattr(kernel_tables, "MAX_TABLE_BYTES", 64 << 10)
    monkeypatch.setattr(kernel_tables, "COMBINE_BLOCK", 256)
    with pytest.raises(KernelUnsupported, match="a replica's combinations would take more than 0 MiB"):
        kernel_tables.KernelTables(ReplicationModel(ModelConfig(rf=3, min_isr=2)))


def test_an_enabled_action_that_leaves_the_tables_raises_instead_of_dropping_a_state():
    model = ReplicationModel(RF2["kip-320"])
    kernel = VectorKernel(model)  # a private copy: its tables are corrupted below
    keys = kernel.keys_of_scalars(sorted(set().union(*scalar_levels(model, max_levels=8))))
    kernel.T.slot_table[:] = -1  # no combination of a replica's fields is in the tables any more
    kernel.plan = Plan(kernel.T, model.catalogue)
    with pytest.raises(KernelDomainError, match="outside the kernel's tables"):
        kernel.expand(keys)


def test_a_pickled_kernel_ships_its_configuration_and_rebuilds_the_same_tables():
    """What a Spark executor receives: the model's configuration, not megabytes of tables."""
    from isrcheck.model import kernel as kernel_module

    model = ReplicationModel(RF2["kip-279"])
    kernel = kernel_for(model)
    data = pickle.dumps(kernel)
    assert len(data) < 4_000
    kernel_module._RECENT.clear()
    clone = pickle.loads(data)
    assert clone is not kernel
    states = sorted(set().union(*scalar_levels(model, max_levels=6)))
    ours, theirs = kernel.expand(kernel.keys_of_scalars(states)), clone.expand(clone.keys_of_scalars(states))
    assert all((a == b).all() for a, b in zip(ours, theirs))


def test_keys_past_four_words_go_to_the_scalar_kernel_saying_how_many_words_they_need():
    """No field is split between words: five fields of 60 bits need five words, not the 300 bits'
    worth of four and a half."""
    from isrcheck.model.kernel_keys import BitFields

    assert BitFields({f"c{i}": 1 << 60 for i in range(4)}).words == 4
    with pytest.raises(KernelUnsupported, match=r"needs 5 words of 64 bits \(300 bits, no field split"):
        BitFields({f"c{i}": 1 << 60 for i in range(5)})


def test_fingerprints_of_states_differing_in_the_same_high_bits_of_two_words_do_not_collide():
    """Keys are bit fields: two states often differ in the same few high bits of two words.
    A fold that only multiplies the first word before xoring in the second (a difference then
    spreads upwards only) collided on half of such pairs, and on two reachable, canonical
    states of rf 6 (``--min-isr 4 --max-records 1 --max-leader-epoch 1``, the keys below, of
    different orbits) which the vector search then counted as one (bench/README.md). The rf 6
    kernel is not built here: its tables would stay in this test process's memory, which the
    fuzz harness's forked children start with."""
    a = np.array([[0x20AE111706F60000], [0x0B48E049213B213B], [0]], dtype=np.uint64)
    b = np.array([[0x211C111706F60000], [0x584EE049213B213B], [0]], dtype=np.uint64)
    assert VectorKernel.fingerprints(a)[0] != VectorKernel.fingerprints(b)[0]
    high0, high1 = (x.ravel() for x in np.meshgrid(np.arange(256, dtype=np.uint64), np.arange(256, dtype=np.uint64)))
    keys = np.stack([a[0, 0] ^ (high0 << np.uint64(49)), a[1, 0] ^ (high1 << np.uint64(56)), np.zeros(1 << 16, np.uint64)])
    assert len(np.unique(VectorKernel.fingerprints(keys))) == 1 << 16
    assert (VectorKernel.fingerprints(keys[:1]) == keys[0]).all()  # one word: the key itself


def test_canonical_forms_are_compiled_from_rf_4_with_symmetry_only():
    """The one rule the search (``VisitedSet``) and bench's ``vector_loops.load`` both read."""
    at = lambda rf: SimpleNamespace(T=SimpleNamespace(rf=rf))  # noqa: E731  the rule reads the kernel's rf only
    assert [VectorKernel.compiles_canonical(at(rf), True) for rf in (2, 3, 4, 5, 6)] == [False, False, True, True, True]
    assert not VectorKernel.compiles_canonical(at(5), False)
