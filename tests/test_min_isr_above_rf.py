"""min.insync.replicas above the replication factor (issue 52, item 5): Kafka takes it, and the
model reads it as the release does.

Expected from Kafka's code before the runs:
- From 3.7, ``Partition.effectiveMinIsr`` is min(min.insync.replicas, replicas) for the produce
  check, the acknowledgement and the HWM (KAFKA-15583, commit edc7e10a745), and the KRaft
  controller's ``getTopicEffectiveMinIsr`` is the same for the ELR. So rf 2 with min ISR 3 is
  rf 2 with min ISR 2: the same states, verdicts and shortest traces, on every engine.
- Before 3.7 the leader compares its ISR with the setting as it is, and refuses every
  acks=all write (NotEnoughReplicas; the test that 3.7 deleted, ProducerFailureHandlingTest
  ``testNotEnoughReplicas``, sent to a topic with min.insync.replicas = brokers + 1 and expected
  that). So no record is ever written: none committed, none read, nothing to lose. acks=1 never
  reads the setting there: the states of min ISR 1.
"""

from __future__ import annotations

import pytest

from isrcheck.model import ModelConfig
from isrcheck.model.fields import effective_min_isr

from .clitools import run_cli
from .conftest import run_bfs
from .sparktools import assert_agrees_with_bfs, run_spark
from .z3_support import run_z3


def outcome(result) -> tuple:
    return (result.stats.states, result.stats.depth, [(p.name, p.status, p.trace_length) for p in result.properties])


@pytest.mark.parametrize("version", ["3.7", "3.9", "4.1"])
def test_from_3_7_a_min_isr_above_rf_is_the_replication_factor(version):
    above, at = (ModelConfig(rf=2, min_isr=m, kafka_version=version) for m in (3, 2))
    assert effective_min_isr(above) == 2
    assert outcome(run_bfs(above)) == outcome(run_bfs(at))


def test_from_3_7_the_scalar_kernel_agrees():
    above, at = (ModelConfig(rf=2, min_isr=m, kafka_version="3.9", max_records=1) for m in (4, 2))
    assert outcome(run_bfs(above, kernel="scalar")) == outcome(run_bfs(at, kernel="vector"))


def test_before_3_7_no_acks_all_write_is_taken():
    result = run_bfs(ModelConfig(rf=2, min_isr=3, kafka_version="3.6"))
    said = {p.name: p.status for p in result.properties}
    assert said["record-committed"] == said["consumer-reads"] == said["write-after-crash"] == "violated"  # never seen
    assert said["acked-survive"] == said["committed-survive"] == said["read-within-hwm"] == "holds"


@pytest.mark.parametrize("kernel", ["vector", "scalar"])
def test_before_3_7_acks_1_never_reads_the_setting(kernel):
    above, low = (ModelConfig(rf=2, min_isr=m, acks="1", kafka_version="3.6", max_records=1) for m in (3, 1))
    assert outcome(run_bfs(above, kernel=kernel)) == outcome(run_bfs(low, kernel=kernel))


def test_z3_finds_the_same_shortest_commit_and_none_before_3_7():
    at = run_bfs(ModelConfig(rf=2, min_isr=2, kafka_version="3.9", max_records=1), ["record-committed"])
    z3_above = run_z3(ModelConfig(rf=2, min_isr=3, kafka_version="3.9", max_records=1), ["record-committed"])
    assert z3_above.properties[0].status == "holds" and z3_above.properties[0].trace_length == \
        at.properties[0].trace_length
    before = run_z3(ModelConfig(rf=2, min_isr=3, kafka_version="3.6", max_records=1), ["record-committed"],
                    max_depth=at.properties[0].trace_length + 2)
    assert before.properties[0].status != "holds"  # no witness at any depth searched


@pytest.mark.spark
def test_spark_agrees():
    config = ModelConfig(rf=2, min_isr=3, kafka_version="4.1", max_records=1)
    assert_agrees_with_bfs(config, run_spark(config))


def test_check_model_says_how_kafka_reads_it(tmp_path):
    after = run_cli("check-model", "--rf", "2", "--min-isr", "3", "--max-records", "1", "--trace-dir", str(tmp_path))
    assert after.returncode == 0, after.stderr
    assert after.stderr.splitlines()[0] == ("check-model: min.insync.replicas=3 is above replication.factor=2: Kafka "
                                            "4.1 takes 2 (min ISR at most the replicas, KAFKA-15583)")
    before = run_cli("check-model", "--rf", "2", "--min-isr", "3", "--kafka-version", "3.6", "--max-records", "1",
                     "--trace-dir", str(tmp_path))
    assert before.returncode == 1  # a witness never seen: no record is ever committed
    assert before.stderr.splitlines()[0] == (
        "check-model: min.insync.replicas=3 is above replication.factor=2: on Kafka 3.6 every acks=all write is "
        "refused (NotEnoughReplicas); from 3.7 Kafka takes 2")
    assert before.stdout.startswith("Answer, within bounds: No record is ever written: with min.insync.replicas=3 "
                                    "above the 2 replicas, Kafka 3.6 refuses every acks=all write (NotEnoughReplicas).")


@pytest.mark.parametrize("version, reading", [
    ("4.1", "partition 0 (leader 1, ISR 1) is under min ISR now (1 of min.insync.replicas=3, capped at the 2 replicas): "
            "acks=all writes fail until broker 2 rejoins the ISR"),
    ("3.6", "partition 0 (leader 1, ISR 1) can never have min.insync.replicas=3 in sync with 2 replicas: Kafka 3.6 "
            "refuses every acks=all write"),
])
def test_a_partitions_state_now_is_read_against_the_min_isr_kafka_applies(tmp_path, version, reading):
    describe = tmp_path / "t.txt"
    describe.write_text("Topic: t\tTopicId: x\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: min.insync.replicas=3\n"
                        "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\n")
    proc = run_cli("check-model", "--topic-config", str(describe), "--kafka-version", version, "--max-records", "1",
                   "--trace-dir", str(tmp_path))
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.stdout.splitlines()[1] == f"  {reading}"
