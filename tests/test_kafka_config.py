"""Kafka's own keys in (--config, --topic-config), Kafka's words out (the report's echo)."""

from __future__ import annotations

import json

import pytest

from .clitools import run_cli, run_json

SMALL = ["--max-records", "1"]


def _config(report):
    c = report["config"]
    return c["rf"], c["min_isr"], c["acks"], c["unclean_election"], c["flush"]


def test_kafka_keys_are_the_options_they_name(tmp_path):
    code, by_keys = run_json("--config", "replication.factor=2", "--config", "min.insync.replicas=2",
                             "--config", "acks=-1", "--config", "unclean.leader.election.enable=true",
                             "--config", "flush.messages=1", *SMALL, "--trace-dir", str(tmp_path))
    _, by_options = run_json("--rf", "2", "--min-isr", "2", "--acks", "all", "--unclean-election", "--flush", "always",
                             *SMALL, "--trace-dir", str(tmp_path))
    assert _config(by_keys) == _config(by_options) == (2, 2, "all", True, "always")
    assert by_keys["states"] == by_options["states"]
    assert by_keys["config"]["kafka_config"] == {
        "replication.factor": "2", "min.insync.replicas": "2", "unclean.leader.election.enable": "true",
        "flush.messages": "1", "acks": "all", "eligible.leader.replicas.version": "1",  # 4.1's default
    }


def test_the_report_echoes_the_configuration_in_kafkas_words(tmp_path):
    proc = run_cli("check-model", "--rf", "3", "--min-isr", "2", *SMALL, "--trace-dir", str(tmp_path))
    assert proc.stdout.splitlines()[1] == (
        "kafka: replication.factor=3, min.insync.replicas=2, unclean.leader.election.enable=false, "
        "flush.messages=unset, acks=all, eligible.leader.replicas.version=1")


DESCRIBE_TOPICS = (
    "Topic: orders\tTopicId: kD2v6Qm4S9u6bJ0x9tYxJw\tPartitionCount: 6\tReplicationFactor: 3\t"
    "Configs: min.insync.replicas=2,cleanup.policy=delete,retention.ms=604800000\n"
    "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\n"
)
DESCRIBE_CONFIGS = (
    "Dynamic configs for topic orders are:\n"
    "  min.insync.replicas=2 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:min.insync.replicas=2, "
    "DEFAULT_CONFIG:min.insync.replicas=1}\n"
    "  unclean.leader.election.enable=true sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
    "unclean.leader.election.enable=true}\n"
)
PROPERTIES = "# orders\nreplication.factor=2\nmin.insync.replicas = 2\n\nsegment.bytes=1073741824\n"


@pytest.mark.parametrize("text, expected, ignored", [
    (DESCRIBE_TOPICS, (3, 2, "all", False, "os"), "cleanup.policy, retention.ms"),
    (DESCRIBE_CONFIGS, (3, 2, "all", True, "os"), None),
    (PROPERTIES, (2, 2, "all", False, "os"), "segment.bytes"),
], ids=["kafka-topics", "kafka-configs", "properties"])
def test_a_topic_config_file_in_each_of_kafkas_forms(tmp_path, text, expected, ignored):
    path = tmp_path / "topic.txt"
    path.write_text(text)
    proc = run_cli("check-model", "--topic-config", str(path), *SMALL, "--format", "json", "--trace-dir", str(tmp_path))
    assert proc.returncode in (0, 1), proc.stderr  # a verdict either way
    assert _config(json.loads(proc.stdout)) == expected
    if ignored:
        assert proc.stderr.splitlines() == [f"check-model: ignored (no modelled behaviour depends on them): {ignored}"]
    else:
        assert proc.stderr == ""


@pytest.mark.parametrize("args, words", [
    (["--config", "min.insync.replica=2"], "did you mean min.insync.replicas?"),
    (["--config", "min.insync.replicas=2", "--min-isr", "3"], "min.insync.replicas=2 disagrees with --min-isr 3"),
    (["--config", "acks=2"], "Kafka's acks are all (or -1), 1 and 0"),
    (["--config", "unclean.leader.election.enable=yes"], "true or false is needed"),
    (["--config", "nonsense"], "give KEY=VALUE"),
    (["--config", "min.insync.replicas=2", "--config", "min.insync.replicas=3"], "given twice"),
    (["--topic-config", "/nonexistent/topic.properties"], "--topic-config /nonexistent/topic.properties"),
])
def test_bad_kafka_keys_are_one_line_and_exit_2(tmp_path, args, words):
    proc = run_cli("check-model", *args, "--trace-dir", str(tmp_path))
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert words in line


def test_kafkas_names_for_the_options_are_accepted(tmp_path):
    _, named = run_json("--replication-factor", "2", "--acks", "-1", *SMALL, "--trace-dir", str(tmp_path))
    _, short = run_json("--rf", "2", "--acks", "all", *SMALL, "--trace-dir", str(tmp_path))
    assert _config(named) == _config(short) and named["states"] == short["states"]


@pytest.mark.parametrize("rf, why", [
    ("٥", ": use the digits 0-9"), ("x9", ""), ("", ""), ("-2", ": the digits 0-9 alone, without a sign or spaces"),
    ("5x", ""), ("2.0", ""),
])
def test_a_replication_factor_that_is_not_plain_digits_is_refused(tmp_path, rf, why):
    """kafka-topics.sh's ReplicationFactor was read as the digits its word began with: ``٥``, ``x9``, nothing or
    ``-2`` left the default rf 3, ``5x`` was rf 5 and ``2.0`` rf 2, without a word."""
    path = tmp_path / "topic.txt"
    path.write_text(DESCRIBE_TOPICS.replace("ReplicationFactor: 3", f"ReplicationFactor: {rf}"))
    proc = run_cli("check-model", "--topic-config", str(path), *SMALL, "--max-depth", "1",  # if read: at once
                   "--trace-dir", str(tmp_path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"check-model: error: {path}:1: ReplicationFactor: {rf!r} is not a whole number{why}\n"
