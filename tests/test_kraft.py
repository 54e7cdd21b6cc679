"""KRaft releases (issue 16): eligible leader replicas (KIP-966, 4.0 and 4.1), AlterPartition
and KIP-903, KRaft mode in 3.3 to 3.9 (``--kraft``) and KAFKA-12670.

Each expected outcome was written from KIP-966, the 4.0 and 4.1 documentation and
``PartitionChangeBuilder`` (apache/kafka 1eb76443) before the checker ran; the lengths
are the breadth-first shortest, pinned once measured (docs/kafka-versions.md).
"""

import pytest

from isrcheck.model import ConfigError, ModelConfig, ReplicationModel

from .clitools import run_cli, run_json
from .conftest import run_bfs
from .sparktools import assert_agrees_with_bfs, run_spark
from .test_z3_engine import assert_replays, verdicts
from .z3_support import run_z3

# KIP-966: fewer unclean shutdowns than min ISR lose nothing once the ELR keeps the
# replicas that left the ISR below min ISR; without it the last replica standing loses.
# name -> (config without ELR (4.0's default), property, shortest violation without ELR)
PAIRS = {
    "disk loss rf 2": (ModelConfig(rf=2, min_isr=2, disk_loss=1, kafka_version="4.0"), "committed-survive", 12),
    "disk loss rf 3": (ModelConfig(rf=3, min_isr=2, disk_loss=1, kafka_version="4.0", max_records=1),
                       "committed-survive", 14),
    "power loss rf 2": (ModelConfig(rf=2, min_isr=2, crashes=0, power_loss=1, kafka_version="4.0"),
                        "committed-stored", 13),
}


def _outcome(result, prop):
    r = result.by_name(prop)
    return (r.status, r.trace_length)


@pytest.mark.parametrize("name", PAIRS)
@pytest.mark.parametrize("kernel", ["vector", "scalar"])
def test_elr_keeps_what_the_last_replica_standing_loses_and_both_kernels_agree(name, kernel):
    config, prop, length = PAIRS[name]
    assert _outcome(run_bfs(config, [prop], kernel=kernel, symmetry=True), prop) == ("violated", length)
    with_elr = config.with_changes(elr=True)
    assert _outcome(run_bfs(with_elr, [prop], kernel=kernel, symmetry=True), prop) == ("holds", None)


@pytest.mark.parametrize("name", ["disk loss rf 2", "disk loss rf 3"])
def test_z3_agrees_with_bfs_on_both_sides_of_elr(name):
    config, prop, length = PAIRS[name]
    found = run_z3(config, [prop])
    assert verdicts(found) == {prop: ("violated", length)}
    assert_replays(config, found)
    # with ELR: nothing up to that length at rf 2; at rf 3 up to 12 states (to 14, 13 s more of the suite)
    depth = length if config.rf == 2 else 12
    with_elr = config.with_changes(elr=True)
    assert verdicts(run_z3(with_elr, [prop], max_depth=depth)) == verdicts(run_bfs(with_elr, [prop], max_depth=depth))


def test_spark_local_agrees_with_bfs_with_elr():
    config = PAIRS["disk loss rf 2"][0].with_changes(elr=True, crashes=2)
    props = ["committed-survive", "committed-stored", "weak-isr"]
    assert_agrees_with_bfs(config, run_spark(config, props, master="local[2]"), properties=props)


def test_4_1_keeps_the_elr_for_a_new_cluster_and_4_0_does_not():
    assert ModelConfig(kafka_version="4.1").elr and not ModelConfig(kafka_version="4.0").elr
    assert not ModelConfig(kafka_version="4.1", elr=False).elr
    assert ModelConfig().elr and ModelConfig().kraft and ModelConfig().kafka_version == "4.1"  # the default
    # a controller mode and an ELR that were the release's defaults follow the release
    older = ModelConfig().with_changes(kafka_version="3.9")
    assert (older.kraft, older.elr) == (False, False)
    assert ModelConfig(kafka_version="3.9", kraft=True).with_changes(kafka_version="3.8").kraft
    assert not ModelConfig().with_changes(kafka_version="4.0").elr
    assert ModelConfig(kafka_version="4.0", elr=True).with_changes(kafka_version="4.1").elr


def test_as_many_unclean_shutdowns_as_min_isr_lose_a_record_through_the_last_known_leader():
    """A plain crash is an unclean shutdown too (no clean-shutdown marker): with one disk
    lost and one broker killed, both leave the ELR, and the controller elects the last
    known leader, the empty one, whatever unclean.leader.election.enable says."""
    config = ModelConfig(rf=2, min_isr=2, crashes=2, disk_loss=1, kafka_version="4.1")
    # the scalar kernel: the vector kernel is cached per configuration
    result = run_bfs(config, ["committed-survive"], kernel="scalar", symmetry=True)
    assert _outcome(result, "committed-survive") == ("violated", 16)
    model = ReplicationModel(config)
    steps = [model.catalogue[a].name for a in result.by_name("committed-survive").path.actions]
    assert "ControllerElectLastLeader" in steps and "ControllerUncleanElect" not in steps
    assert steps.count("BrokerCrash") == 1 and steps.count("BrokerCrashDiskLoss") == 1


@pytest.mark.parametrize("kernel", ["vector", "scalar"])
def test_a_partition_whose_isr_emptied_before_any_leader_comes_back_through_its_last_member(kernel):
    """The model's partition starts without a leader, so the controller can empty the ISR
    before electing one (min-isr 1); Kafka creates a partition with a leader and elects a
    leaderless partition's live ISR member in the same change, so the member removed last
    is the last known leader (lastKnownElr). Without that reading the partition stayed
    leaderless for ever after its restart: hwm-progress broke in 5 states."""
    config = ModelConfig(rf=2, min_isr=1, kafka_version="4.1")
    result = run_bfs(config, ["hwm-progress", "rejoins-isr"], kernel=kernel, symmetry=True)
    assert [result.by_name(p).status for p in ("hwm-progress", "rejoins-isr")] == ["holds", "holds"]
    model = ReplicationModel(config)
    state = model.init_states()[0]
    for name, params in [("ControllerShrinkIsr", {"replica": 0}), ("ControllerShrinkIsr", {"replica": 1}),
                         ("BrokerCrash", {"replica": 1}), ("BrokerRestart", {"replica": 1})]:
        state = model.step(state, model.catalogue.lookup(name, params))
        assert state is not None, name
    elect = model.catalogue.lookup("ControllerElectLastLeader", {"leader": 1})
    assert elect in [a for a, _ in model.successors(state)]


def test_with_elr_an_unclean_election_waits_for_the_eligible_replicas():
    """An unclean election comes after the fencing of the dead ISR members, which moves them
    to the ELR, and after a live ELR member: with min-isr 2 one crash can no longer lose a
    committed record on 4.1 (3.9 loses it in 12 states). With min-isr 1 the ISR never falls
    below min ISR while it has its leader, the ELR stays empty, and 4.1 loses it too."""
    config = ModelConfig(rf=3, min_isr=2, unclean_election=True, kafka_version="4.1", max_records=1)
    assert _outcome(run_bfs(config, ["committed-survive"], symmetry=True), "committed-survive") == ("holds", None)
    older = config.with_changes(kafka_version="3.9", kraft=False, elr=False)
    assert _outcome(run_bfs(older, ["committed-survive"]), "committed-survive") == ("violated", 12)
    lone = config.with_changes(min_isr=1)
    assert _outcome(run_bfs(lone, ["committed-survive"]), "committed-survive") == ("violated", 11)


def test_where_elr_cannot_matter_every_verdict_is_the_same():
    """No broker goes down uncleanly, so none leaves the ELR: electing from the ELR is
    ZooKeeper's rule of keeping the last ISR member, and every verdict and length agrees."""
    config = ModelConfig(rf=2, min_isr=1, crashes=0, kafka_version="4.1")
    a = run_bfs(config, explore_all=True)
    b = run_bfs(config.with_changes(elr=False), explore_all=True)
    assert [_outcome(a, p.name) for p in a.properties] == [_outcome(b, p.name) for p in b.properties]
    assert a.stats.states != b.stats.states  # the ELR is state of its own: the spaces differ, not the verdicts


def test_elr_before_kraft_is_refused_in_one_line(tmp_path):
    with pytest.raises(ConfigError, match="--elr needs Kafka 4.0 or later"):
        ModelConfig(kafka_version="3.9", elr=True).validate()
    proc = run_cli("check-model", "--elr", "--kafka-version", "3.7", cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "KIP-966" in proc.stderr


def test_the_header_the_kafka_line_and_the_json_say_elr(tmp_path):
    args = ("--rf", "2", "--max-records", "1", "--kafka-version", "4.0", "--config",
            "eligible.leader.replicas.version=1", "--trace-dir", str(tmp_path))
    text = run_cli("check-model", *args, cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "KRaft controller), ELR on" in text.stdout and "eligible.leader.replicas.version=1" in text.stdout
    code, report = run_json(*args, cwd=tmp_path)
    assert code == 0 and report["config"]["elr"] is True and "KRaft controller" in report["config"]["kafka_rules"]


def test_without_kip_903_a_replaced_disk_rejoins_the_isr_empty(monkeypatch):
    """KAFKA-14139, the bug KIP-903 fixed (3.5): the leader asks to add a caught-up follower,
    the follower loses its disk and restarts, and a controller that does not compare broker
    epochs applies the request: the empty replica is in the ISR and is elected. With
    KIP-903 (every KRaft release the model has) the request is refused and ELR keeps the
    record; without it the loss is found even with ELR on."""
    from dataclasses import replace

    from isrcheck.model import releases

    config = ModelConfig(rf=3, min_isr=2, disk_loss=1, kafka_version="4.1", max_records=1)
    assert _outcome(run_bfs(config, ["committed-survive"], symmetry=True), "committed-survive") == ("holds", None)
    monkeypatch.setitem(releases.BY_VERSION, "4.1", replace(releases.BY_VERSION["4.1"], stale_epoch_refused=False))
    # the scalar kernel: the vector kernel is cached per configuration
    result = run_bfs(config, ["committed-survive"], kernel="scalar", symmetry=True)
    assert _outcome(result, "committed-survive") == ("violated", 16)
    model = ReplicationModel(config)
    steps = [model.catalogue[a].name for a in result.by_name("committed-survive").path.actions]
    expand = steps.index("LeaderExpandIsr")
    assert expand < steps.index("BrokerCrashDiskLoss") < steps.index("BrokerRestart") < steps.index("ControllerAlterPartition")


def test_kraft_before_3_9_ignores_the_unclean_setting():
    """KAFKA-12670: until 3.9 the KRaft controller never read unclean.leader.election.enable,
    so a topic that asks for unclean elections keeps its committed records (and waits
    for an ISR member), while ZooKeeper mode and 3.9's KRaft lose one in 9 states."""
    config = ModelConfig(rf=2, unclean_election=True, kafka_version="3.8", kraft=True)
    for kernel in ("vector", "scalar"):
        assert _outcome(run_bfs(config, ["committed-survive"], kernel=kernel), "committed-survive") == ("holds", None)
    assert "ControllerUncleanElect" not in ReplicationModel(config).catalogue.base
    for other in (config.with_changes(kafka_version="3.9"), config.with_changes(kraft=False)):
        assert _outcome(run_bfs(other, ["committed-survive"]), "committed-survive") == ("violated", 9)


def test_kraft_mode_keeps_zookeeper_modes_verdicts_where_no_rule_differs():
    """AlterPartition only delays the leader's ISR changes and makes it count more replicas:
    at rf 2 every property has the same verdict in both modes on 3.9."""
    zookeeper = run_bfs(ModelConfig(rf=2, min_isr=2, kafka_version="3.9"), explore_all=True, symmetry=True)
    kraft = run_bfs(ModelConfig(rf=2, min_isr=2, kafka_version="3.9", kraft=True), explore_all=True, symmetry=True)
    assert [(p.name, p.status) for p in zookeeper.properties] == [(p.name, p.status) for p in kraft.properties]


@pytest.mark.parametrize("args,words", [
    (("--kraft", "--kafka-version", "3.2"), "--kraft needs Kafka 3.3 or later"),
    (("--zookeeper", "--kafka-version", "4.0"), "runs only in KRaft mode"),
])
def test_a_controller_the_release_lacks_is_refused_in_one_line(tmp_path, args, words):
    proc = run_cli("check-model", *args, cwd=tmp_path)
    assert proc.returncode == 2 and words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
