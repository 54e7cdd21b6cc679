"""Start from a partition's state now (issue 54, item 2): the describe's partition lines are
read (Leader, Replicas, Isr, Elr), and the check starts from the model's states that show
them, its bounds counted from there.

What Kafka's code says, written down before the runs: a 4.1 partition at ISR {1} under
min.insync.replicas=2 refuses acks=all writes (Partition.appendRecordsToLeader throws
NotEnoughReplicasException), so nothing new is acknowledged and nothing acknowledged can be
lost; with acks=1 the leader alone acknowledges, and its crash then elects an ELR member
(KIP-966) without the record: an acknowledged write lost in a few steps, as from a new
partition."""

from __future__ import annotations

import json

import pytest

from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.now import PartitionNow, parse_now
from isrcheck.model.replication import with_now
from isrcheck.traces.view_data import check_trace, load_checked

from .clitools import run_cli

DESCRIBE = (
    "Topic: orders\tTopicId: q1ViM5ZbQmK1nXRhMnVGdQ\tPartitionCount: 3\tReplicationFactor: 3\t"
    "Configs: min.insync.replicas=2,segment.bytes=1073741824\n"
    "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: \tLastKnownElr: \n"
    "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3,1\tElr: \tLastKnownElr: \n"
    "\tTopic: orders\tPartition: 2\tLeader: 1\tReplicas: 3,1,2\tIsr: 1\tElr: 3\tLastKnownElr: \n"
)
SMALL = ["--kafka-version", "4.1", "--max-records", "1"]


@pytest.fixture
def describe(tmp_path):
    path = tmp_path / "orders.txt"
    path.write_text(DESCRIBE)
    return path


def test_a_describe_line_is_read_as_kafka_prints_it():
    p = PartitionNow.parse("Partition: 2 Leader: 1 Replicas: 3,1,2 Isr: 1 Elr: 3")
    assert (p.leader, p.replicas, p.isr, p.elr, p.down) == (1, (3, 1, 2), (1,), (3,), None)
    assert PartitionNow.parse(p.text()) == p
    assert PartitionNow.parse("Partition: 0 Leader: none Replicas: 1,2 Isr:  Elr: N/A").leader is None
    for bad in ("Partition: 0 Leader: 4 Replicas: 1,2,3 Isr: 4", "Partition: 0 Leader: 2 Replicas: 1,2,3 Isr: 1",
                "Partition: 0 Leader: 1 Replicas: 1,1,3 Isr: 1"):
        with pytest.raises(ValueError):
            PartitionNow.parse(bad)


def test_the_start_states_show_the_partition_and_its_bounds_count_from_now():
    shown = parse_now("Partition: 2 Leader: 1 Replicas: 3,1,2 Isr: 1 Elr: 3")
    config = with_now(ModelConfig(rf=3, min_isr=2, kafka_version="4.1", max_records=1), shown)
    model = ReplicationModel(config)
    starts = [model.decode(s) for s in model.init_states()]
    assert starts and config.max_leader_epoch == 2
    for state in starts:  # broker 1 is replica 1, broker 3 replica 0 (their places in Replicas)
        assert (state.quorum.leader, state.quorum.isr, state.elr) == (1, frozenset({1}), frozenset({0}))
        assert state.quorum.leader_epoch == 0 and state.crashes == 0 and not state.acked
        assert all(not rs.log for rs in state.replicas)


def test_a_partition_under_min_isr_is_answered_from_where_it_stands(describe, tmp_path):
    proc = run_cli("check-model", "--topic-config", str(describe), "--partition", "2", *SMALL,
                   "--trace-dir", str(tmp_path / "all"))
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lines[0].startswith("Answer, from partition 2's state now, within bounds: "), lines[0]
    assert "Acknowledged writes survive" in lines[0]
    assert lines[1] == ("  partition 2 (leader 1, ISR 1) is under min ISR now (1 of min.insync.replicas=2): "
                        "acks=all writes fail until 1 of brokers 3, 2 rejoins the ISR")


def test_from_now_the_engines_agree_and_the_trace_replays(describe, tmp_path):
    """acks=1 from partition 2's state: the same states and the same shortest loss on the
    scalar and vector kernels, the same length on Z3, and the saved trace replays."""
    runs = {}
    for name, engine in (("scalar", ["--kernel", "scalar"]), ("vector", ["--kernel", "vector"]),
                         ("z3", ["--engine", "z3", "--max-depth", "8"])):
        proc = run_cli("check-model", "--topic-config", str(describe), "--partition", "2", "--config", "acks=1",
                       *SMALL, *engine, "--format", "json", "--continue", "--trace-dir", str(tmp_path / name))
        assert proc.returncode == 1, proc.stderr
        runs[name] = json.loads(proc.stdout)
    lost = {name: next(p for p in r["properties"] if p["name"] == "acked-survive") for name, r in runs.items()}
    assert {p["status"] for p in lost.values()} == {"violated"}
    assert len({p["trace_length"] for p in lost.values()}) == 1, lost
    assert runs["scalar"]["states"] == runs["vector"]["states"] > 0
    assert runs["scalar"]["answer"].startswith("Answer, from partition 2's state now, within bounds: "
                                               "Acknowledged writes can be lost")
    for name in runs:
        trace = load_checked(lost[name]["trace_file"])  # replayed from one of the model's start states
        check_trace(trace)
        assert trace.config.now == "Partition: 2 Leader: 1 Replicas: 3,1,2 Isr: 1 Elr: 3"


def test_partitions_in_the_same_state_are_checked_once(describe):
    proc = run_cli("check-model", "--topic-config", str(describe), *SMALL, "--format", "json")
    report = json.loads(proc.stdout)
    assert "partition 1 is in the same state as partition 0, its brokers aside: checked once" in proc.stderr
    assert report["answer"].startswith("Answer, from the states of partitions 0, 2 now")
    assert report["now"][0] == "partition 0 (leader 1, ISR 1, 2, 3) has every replica in the ISR now"


@pytest.mark.parametrize("args, words", [
    (["--partition", "7"], "--partition 7: the topic's partitions are 0, 1, 2 (or 'new')"),
    (["--engine", "simulate"], "--engine simulate walks from a new partition"),
    (["--kafka-version", "3.9"], "shows Elr 3, and the release checked (3.9, ZooKeeper) has no eligible"),
])
def test_what_cannot_start_from_now_is_refused_in_one_line(describe, args, words):
    proc = run_cli("check-model", "--topic-config", str(describe), "--max-records", "1", *args)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert words in proc.stderr, proc.stderr


def test_a_partition_being_reassigned_is_refused(tmp_path):
    path = tmp_path / "moving.txt"
    path.write_text(DESCRIBE.replace("Isr: 1\tElr: 3", "Isr: 1\tAdding Replicas: 4\tRemoving Replicas: 2\tElr: 3"))
    proc = run_cli("check-model", "--topic-config", str(path), "--max-records", "1")
    assert proc.returncode == 2 and "partition 2 is being reassigned" in proc.stderr, proc.stderr


def test_partition_new_checks_a_new_partition_with_the_topics_settings(describe):
    proc = run_cli("check-model", "--topic-config", str(describe), "--partition", "new", *SMALL, "--format", "json")
    report = json.loads(proc.stdout)
    assert report["config"]["now"] is None and "now" not in report
    assert report["answer"].startswith("Answer, within bounds: ")
