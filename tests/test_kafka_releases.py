"""Kafka releases (issue 16): each rule a release adds changes a verdict where it should
and nothing where it cannot, and every engine agrees on it.

The pairs differ only in ``kafka_version``. The expected outcomes come from the KIP or
the pull request (docs/kafka-versions.md), written before the checker ran; the
lengths are the breadth-first shortest, pinned once measured.
"""

import pytest

from isrcheck.model import ConfigError, ModelConfig, ReplicationModel
from isrcheck.model.releases import DEFAULT, find

from .clitools import run_cli, run_json
from .conftest import run_bfs
from .sparktools import assert_agrees_with_bfs, run_spark
from .test_z3_engine import assert_replays, verdicts
from .z3_support import run_z3

# name -> (config, the change that adds the rule, property, verdict without it, verdict with it),
# a verdict being (status, shortest length)
PAIRS = {
    "KIP-380 rf 2": (ModelConfig(rf=2, kafka_version="2.1"), {"kafka_version": "2.2"}, "committed-stored",
                     ("violated", 10), ("holds", None)),
    "KIP-380 rf 3": (ModelConfig(rf=3, kafka_version="2.1", max_records=1), {"kafka_version": "2.2"}, "weak-isr",
                     ("violated", 10), ("holds", None)),
    "strict min ISR rf 2": (ModelConfig(rf=2, min_isr=2, unclean_election=True, kafka_version="3.6"),
                            {"kafka_version": "3.7"}, "committed-survive", ("violated", 9), ("holds", None)),
    "strict min ISR rf 3": (ModelConfig(rf=3, min_isr=3, unclean_election=True, kafka_version="3.6", max_records=1),
                            {"kafka_version": "3.7"}, "committed-survive", ("violated", 10), ("holds", None)),
    # a power loss loses what the page cache held; flush.messages=1 leaves nothing there
    "flush rf 2": (ModelConfig(rf=2, crashes=0, power_loss=1), {"flush": "always"}, "committed-stored",
                   ("violated", 7), ("holds", None)),
    # 3.9: on 4.1 the eligible leader replicas survive one power loss at rf 3 (tests/test_kraft.py)
    "flush rf 3": (ModelConfig(rf=3, min_isr=2, crashes=0, power_loss=1, max_records=1, kafka_version="3.9"),
                   {"flush": "always"}, "committed-survive", ("violated", 13), ("holds", None)),
}


def _outcome(result, prop):
    r = result.by_name(prop)
    return (r.status, r.trace_length)


@pytest.mark.parametrize("name", PAIRS)
@pytest.mark.parametrize("kernel", ["vector", "scalar"])
def test_the_rule_changes_the_verdict_and_both_kernels_agree(name, kernel):
    before, change, prop, was, now = PAIRS[name]
    after = before.with_changes(**change)
    assert _outcome(run_bfs(before, [prop], kernel=kernel), prop) == was
    assert _outcome(run_bfs(after, [prop], kernel=kernel), prop) == now


@pytest.mark.parametrize("name", PAIRS)
def test_z3_agrees_with_bfs_on_both_sides_of_the_rule(name):
    """BMC finds the violation at the BFS-shortest length, and nothing up to it with the rule."""
    before, change, prop, was, _ = PAIRS[name]
    z3_before = run_z3(before, [prop])
    assert verdicts(z3_before) == {prop: was}
    assert_replays(before, z3_before)
    after = before.with_changes(**change)
    depth = was[1]
    assert verdicts(run_z3(after, [prop], max_depth=depth)) == verdicts(run_bfs(after, [prop], max_depth=depth))


@pytest.mark.parametrize("name", ["KIP-380 rf 2", "flush rf 2"])
def test_spark_local_agrees_with_bfs_without_the_rule(name):
    config = PAIRS[name][0]
    props = ["committed-stored", "weak-isr", "committed-survive"]
    assert_agrees_with_bfs(config, run_spark(config, props, master="local[2]"), properties=props)


@pytest.mark.parametrize("config,older,newer", [
    (ModelConfig(rf=2, crashes=0), "2.1", "2.2"),  # KIP-380 fences restarts: none happen
    (ModelConfig(rf=2, min_isr=1, unclean_election=True), "3.6", "3.7"),  # the leader is always in its ISR
])
def test_where_a_rule_cannot_matter_the_state_spaces_are_identical(config, older, newer):
    a = run_bfs(config.with_changes(kafka_version=older), explore_all=True)
    b = run_bfs(config.with_changes(kafka_version=newer), explore_all=True)
    assert (a.stats.states, a.stats.generated, a.stats.depth) == (b.stats.states, b.stats.generated, b.stats.depth)
    assert [_outcome(a, p.name) for p in a.properties] == [_outcome(b, p.name) for p in b.properties]


def test_a_power_loss_with_every_write_flushed_is_a_crash():
    """--flush always: losing power loses nothing, so one power loss and one crash reach the same states."""
    a = run_bfs(ModelConfig(rf=2, crashes=0, power_loss=1, flush="always"), explore_all=True)
    b = run_bfs(ModelConfig(rf=2, crashes=1), explore_all=True)
    assert (a.stats.states, a.stats.generated, a.stats.depth) == (b.stats.states, b.stats.generated, b.stats.depth)


def test_a_zone_outage_takes_several_brokers_in_one_step():
    """Two brokers lose power at once; the shortest loss of a committed record with min-isr 2 at rf 2."""
    config = ModelConfig(rf=2, min_isr=2, crashes=0, power_loss=2)
    result = run_bfs(config, ["committed-stored"])
    assert _outcome(result, "committed-stored") == ("violated", 8)
    path = result.by_name("committed-stored").path
    model = ReplicationModel(config)
    outages = [model.catalogue[a] for a in path.actions if model.catalogue[a].name == "PowerLoss"]
    assert [o.args["brokers"] for o in outages] == [0b11]


def test_committed_stored_tells_lost_data_apart_from_no_leader_since():
    """One disk lost at rf 2, min-isr 1: the only copy is gone at 7 states, while
    committed-survive needs a leader elected without it, 12 states on 4.1 (11 on 3.9,
    whose ZooKeeper-mode leader needs no AlterPartition round trip)."""
    result = run_bfs(ModelConfig(rf=2, disk_loss=1), ["committed-survive", "committed-stored"])
    assert _outcome(result, "committed-stored") == ("violated", 7)
    assert _outcome(result, "committed-survive") == ("violated", 12)


def test_a_release_is_named_by_its_line_and_a_patch_release_shares_its_rules():
    assert find("3.7.1").version == "3.7" and find(" 2.2 ").version == "2.2"
    assert ModelConfig(kafka_version="3.7.2").kafka_version == "3.7"
    assert ModelConfig().kafka_version == DEFAULT and ModelConfig().release.strict_min_isr
    assert ModelConfig(protocol="kip-101").kafka_version == "1.1"  # --protocol alone: its newest release
    assert ModelConfig(kafka_version="2.0").protocol == "kip-279"
    assert ModelConfig(core=True).release is None


@pytest.mark.parametrize("version,words", [
    ("4.2", "newer than the newest modelled release, 4.1"), ("0.9", "not a modelled Kafka release"), ("3.x", "not a modelled"),
    ("٣.٧", "not a modelled"),
])
def test_an_unknown_or_unmodelled_release_is_refused_in_one_line(version, words):
    with pytest.raises(ConfigError, match=words):
        ModelConfig(kafka_version=version).validate()


def test_a_protocol_that_contradicts_the_release_is_refused():
    with pytest.raises(ConfigError, match="disagrees with --kafka-version 2.0"):
        ModelConfig(kafka_version="2.0", protocol="kip-320").validate()


def test_the_header_and_the_json_say_which_release_and_rules_were_checked(tmp_path):
    args = ("--rf", "2", "--max-records", "1", "--kafka-version", "3.7.1", "--trace-dir", str(tmp_path))
    text = run_cli("check-model", *args, cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "Kafka 3.7 (KIP-320 epoch fencing, KIP-380 broker epochs, strict min ISR (KAFKA-15583)" in text.stdout
    code, report = run_json(*args, cwd=tmp_path)
    assert code == 0 and report["config"]["kafka_version"] == "3.7"
    assert "strict min ISR (KAFKA-15583)" in report["config"]["kafka_rules"]


@pytest.mark.parametrize("args,words", [
    (("--kafka-version", "5.0"), "newer than the newest modelled release"),
    (("--kafka-version", "2.0.1"), "backported KAFKA-7128"),
    (("--kafka-version", "2.0", "--protocol", "kip-320"), "disagrees with --kafka-version 2.0"),
    (("--kafka-version", "3.7", "--core"), "cannot be used with --core"),
])
def test_a_bad_release_is_one_line_on_stderr_and_exit_2(tmp_path, args, words):
    proc = run_cli("check-model", *args, cwd=tmp_path)
    assert proc.returncode == 2 and words in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
