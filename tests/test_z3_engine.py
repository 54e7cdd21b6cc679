"""The Z3 engine against BFS: the same verdicts, the same shortest counterexample
lengths, counterexamples that replay; proofs, unbounded mode and engine-bug detection.

Z3 runs BMC only (``prove="none"``) where a test compares verdicts, so that the
figures come from the same bounded search; the proof tests are separate.
"""

import pytest

from isrcheck.checker import CheckOptions
from isrcheck.checker.z3_engine import Z3Engine, Z3EngineBug
from isrcheck.model import ConfigError, ModelConfig, ReplicationModel
from isrcheck.model.symbolic import SymbolicModel
from isrcheck.properties import select
from isrcheck.traces import trace_from_path

from .conftest import run_bfs
from .z3_support import run_z3

REVISIONS = ["hw-truncation", "kip-101", "kip-279", "kip-320"]


def verdicts(result):
    return {p.name: (p.status, p.trace_length) for p in result.properties}


def assert_replays(config, result):
    """Every reported path replays on the explicit model (trace_from_path re-executes it)."""
    model = ReplicationModel(result.replay_config or config)
    for p in result.properties:
        if p.path is not None:
            trace_from_path(model, p.path.states, p.path.actions, p.name, p.expectation)


@pytest.mark.parametrize("protocol", REVISIONS)
def test_rf2_core_z3_and_bfs_agree_on_every_verdict_and_shortest_length_within_depth_12(protocol):
    config = ModelConfig(rf=2, protocol=protocol, core=True)
    z3_result = run_z3(config, max_depth=12)
    found = verdicts(z3_result)
    assert found == verdicts(run_bfs(config, max_depth=12))
    # every violation of the whole bounded space is within depth 12, with the same length
    whole = verdicts(run_bfs(config))
    assert {n: v for n, v in whole.items() if v[0] == "violated"} == {n: v for n, v in found.items() if v[0] == "violated"}
    assert_replays(config, z3_result)


def test_rf2_kip320_strong_isr_holds_to_the_bfs_diameter_so_on_the_whole_bounded_space():
    config = ModelConfig(rf=2, protocol="kip-320", core=True)
    bfs = run_bfs(config, ["strong-isr"], explore_all=True)
    assert bfs.exhausted and bfs.by_name("strong-isr").status == "holds"
    z3_result = run_z3(config, ["strong-isr"], max_depth=bfs.stats.depth)
    assert z3_result.exhausted and z3_result.by_name("strong-isr").status == "holds"
    assert z3_result.stats.depth == bfs.stats.depth == 18


@pytest.mark.parametrize("protocol", ["hw-truncation", "kip-101", "kip-279"])
def test_rf3_core_failures_have_the_bfs_shortest_length(protocol):
    config = ModelConfig(rf=3, protocol=protocol, core=True)
    props = ["weak-isr"] if protocol == "kip-279" else ["weak-isr", "strong-isr"]
    z3_result = run_z3(config, props)
    assert verdicts(z3_result) == verdicts(run_bfs(config, props, symmetry=True))
    assert all(status == "violated" for status, _ in verdicts(z3_result).values())
    assert_replays(config, z3_result)


KAFKA = [
    (ModelConfig(rf=3, min_isr=1, acks="1"), ["acked-survive"]),
    (ModelConfig(rf=3, min_isr=2, crashes=2, unclean_election=True), ["committed-survive"]),
    (ModelConfig(rf=3, min_isr=2, protocol="hw-truncation"), ["committed-survive"]),
    (ModelConfig(rf=3, min_isr=2, disk_loss=1, kafka_version="3.9"), ["committed-survive"]),  # 4.1: holds (ELR)
    (ModelConfig(rf=2, min_isr=1, acks="1", max_records=1), ["acked-survive", "leader-failover"]),
    (ModelConfig(rf=3, min_isr=2), ["write-after-crash", "record-committed", "consumer-reads"]),
]


@pytest.mark.parametrize("config,props", KAFKA, ids=[c.summary() for c, _ in KAFKA])
def test_kafka_feature_outcomes_agree_with_bfs(config, props):
    z3_result = run_z3(config, props)
    assert verdicts(z3_result) == verdicts(run_bfs(config, props, symmetry=True))
    assert_replays(config, z3_result)


def test_a_kafka_configuration_that_holds_agrees_with_bfs_within_the_same_depth():
    config = ModelConfig(rf=3, min_isr=2, max_records=1, max_leader_epoch=1)
    props = ["acked-survive", "committed-survive", "read-within-hwm", "log-matching"]
    z3_result = run_z3(config, props, max_depth=8)
    assert verdicts(z3_result) == verdicts(run_bfs(config, props, max_depth=8)) == {p: ("holds", None) for p in props}


# ---- proofs -----------------------------------------------------------------------------


@pytest.mark.parametrize("prove", ["induction", "spacer"])
def test_leader_in_isr_is_proved_for_every_depth(prove):
    result = run_z3(ModelConfig(rf=2, protocol="kip-320", core=True), ["leader-in-isr"], prove=prove, max_depth=3,
                    prove_timeout=120.0)  # a budget, not a target: a loaded machine is slow
    r = result.by_name("leader-in-isr")
    assert r.status == "proved" and r.proof["outcome"] == "proved" and r.proof["method"] == prove


def test_a_failed_induction_reports_its_counterexample_in_kafka_words():
    result = run_z3(ModelConfig(rf=2, protocol="kip-320", core=True), ["strong-isr"], prove="induction", max_depth=2)
    r = result.by_name("strong-isr")
    assert r.status == "holds"  # within depth 2; the proof did not go through
    assert r.proof["outcome"] == "failed" and r.proof["k"] == 2
    cti = r.proof["cti"]
    assert "counterexample to 2-induction for strong-isr" in cti and "believes it leads" in cti and "HWM" in cti


def test_a_proof_that_runs_out_of_time_is_unknown_and_keeps_the_bmc_verdict():
    result = run_z3(ModelConfig(rf=2, protocol="kip-320", core=True), ["strong-isr"], prove="spacer",
                    prove_timeout=0.5, max_depth=2)
    r = result.by_name("strong-isr")
    assert r.status == "holds" and r.proof["outcome"] == "unknown"
    assert result.complete


def test_a_sometimes_property_proved_impossible_is_violated_at_every_depth():
    """With one broker no other broker can ever have led: no fail-over, at any depth."""
    config = ModelConfig(rf=1, min_isr=1)
    r = run_z3(config, ["leader-failover"], prove="induction", max_depth=3).by_name("leader-failover")
    assert r.status == "violated" and r.proof["outcome"] == "proved"
    assert run_bfs(config, ["leader-failover"]).by_name("leader-failover").status == "violated"


# ---- the unbounded mode ---------------------------------------------------------------


def test_the_explicit_model_refuses_an_unbounded_configuration():
    with pytest.raises(ConfigError, match="unbounded needs --engine z3"):
        ReplicationModel(ModelConfig(rf=2, core=True, max_leader_epoch=None))


@pytest.mark.parametrize("protocol,prop,length", [("hw-truncation", "weak-isr", 9), ("hw-truncation", "strong-isr", 10)])
def test_unbounded_bmc_finds_the_known_counterexamples(protocol, prop, length):
    config = ModelConfig(rf=2, protocol=protocol, core=True, max_leader_epoch=None)
    result = run_z3(config, [prop], max_depth=length)
    r = result.by_name(prop)
    assert (r.status, r.trace_length) == ("violated", length)
    assert result.replay_config is not None and not result.replay_config.unbounded
    assert_replays(config, result)


def test_unbounded_kafka_bmc_finds_the_acks_1_loss():
    config = ModelConfig(rf=3, min_isr=1, acks="1", max_leader_epoch=None)
    r = run_z3(config, ["acked-survive"], max_depth=6).by_name("acked-survive")
    assert (r.status, r.trace_length) == ("violated", 6)


def test_unbounded_induction_proves_leader_in_isr_for_every_epoch_and_record_count():
    config = ModelConfig(rf=2, protocol="kip-320", core=True, max_leader_epoch=None)
    r = run_z3(config, ["leader-in-isr"], prove="induction", max_depth=2, prove_timeout=20).by_name("leader-in-isr")
    assert r.status == "proved" and r.proof["method"] == "induction"


# ---- guards -----------------------------------------------------------------------------


def test_a_counterexample_that_does_not_replay_is_reported_as_an_engine_bug(monkeypatch):
    """Break the encoding (a leader may raise its HWM without its ISR): Z3 then finds a
    'violation' that the explicit model cannot reproduce, and the engine says so."""
    original = SymbolicModel.guarded_update

    def careless(self, s, a, epoch):
        guard, upd = original(self, s, a, epoch)
        if a.name == "LeaderIncHighWatermark":  # only "it believes it leads": the ISR is not asked
            return s.v[f"r{a.params[0][1]}.leader"] == a.params[0][1], upd
        return guard, upd

    monkeypatch.setattr(SymbolicModel, "guarded_update", careless)
    with pytest.raises(Z3EngineBug, match="engine bug.*does not replay"):
        run_z3(ModelConfig(rf=2, protocol="kip-320", core=True), ["weak-isr"], max_depth=8)


def test_a_time_limit_stops_the_search_with_an_incomplete_result():
    config = ModelConfig(rf=3, protocol="kip-320", core=True)
    result = Z3Engine(prove="none").check(ReplicationModel(config), select(config, ["strong-isr"]),
                                          CheckOptions(time_limit=1.0))
    assert not result.complete and result.stop_reason == "time limit"
    assert result.by_name("strong-isr").status == "unknown"
