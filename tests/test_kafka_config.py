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
    assert proc.stdout.splitlines()[2] == (  # below the answer and the model's words
        "kafka: replication.factor=3, min.insync.replicas=2, unclean.leader.election.enable=false, "
        "flush.messages=unset, acks=all, eligible.leader.replicas.version=1")


DESCRIBE_TOPICS = (
    "Topic: orders\tTopicId: kD2v6Qm4S9u6bJ0x9tYxJw\tPartitionCount: 6\tReplicationFactor: 3\t"
    "Configs: min.insync.replicas=2,cleanup.policy=delete,retention.ms=604800000\n"
    "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: \tLastKnownElr: \n"
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
    notes = [f"check-model: ignored (no modelled behaviour depends on them): {ignored}"] if ignored else []
    assert proc.stderr.splitlines() == notes
    now = "Partition: 0 Leader: 1 Replicas: 1,2,3 Isr: 1,2,3 Elr:" if "Partition:" in text else None
    assert json.loads(proc.stdout)["config"]["now"] == now  # the partition line: where the check starts


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


# What Kafka writes, in the shapes its tools print them. From apache/kafka at commit
# 1eb7644349cb07139d6a3c1ad1986979647cac99: tools/src/main/java/org/apache/kafka/tools/TopicCommand.java
# (TopicDescription.printDescription: Topic/TopicId/PartitionCount/ReplicationFactor/Configs joined by tabs, the
# Configs joined by ','; PartitionDescription.printDescription: Partition/Leader/Replicas/Isr/Elr/LastKnownElr),
# core/src/main/scala/kafka/admin/ConfigCommand.scala (describeResourceConfig: "$source configs for topic $name are:"
# then "  $name=$value sensitive=$s synonyms={...}"; the ZooKeeper path: "Configs for topic 'name' are k=v,k=v"),
# and server-common/.../ServerLogConfigs.java (LOG_FLUSH_INTERVAL_MESSAGES_DEFAULT = Long.MAX_VALUE).
TWO_TOPICS = (
    "Topic: orders\tTopicId: kD2v6Qm4S9u6bJ0x9tYxJw\tPartitionCount: 2\tReplicationFactor: 3\t"
    "Configs: min.insync.replicas=2,follower.replication.throttled.replicas=0:1,0:2,cleanup.policy=delete\n"
    "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: \tLastKnownElr: \n"
    "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 2,3,1\tIsr: 2\tElr: N/A\tLastKnownElr: N/A\n"
    "Topic: payments\tTopicId: 3xQ0b1m2T8K9d0c7aZyWvA\tPartitionCount: 1\tReplicationFactor: 2\t"
    "Configs: min.insync.replicas=1\n"
    "\tTopic: payments\tPartition: 0\tLeader: 2\tReplicas: 2,3\tIsr: 2,3\tElr: \tLastKnownElr: \n"
)
ALL_CONFIGS = (
    "All configs for topic orders are:\n"
    "  cleanup.policy=delete sensitive=false synonyms={DEFAULT_CONFIG:log.cleanup.policy=delete}\n"
    "  flush.messages=9223372036854775807 sensitive=false synonyms={DEFAULT_CONFIG:log.flush.interval.messages="
    "9223372036854775807}\n"
    "  follower.replication.throttled.replicas= sensitive=false synonyms={}\n"
    "  min.insync.replicas=2 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:min.insync.replicas=2, "
    "DEFAULT_CONFIG:min.insync.replicas=1}\n"
    "  unclean.leader.election.enable=false sensitive=false synonyms={DEFAULT_CONFIG:"
    "unclean.leader.election.enable=false}\n"
)
OLD_CONFIGS = "Configs for topic 'orders' are min.insync.replicas=2,leader.replication.throttled.replicas=0:1,1:2\n"
PRODUCER = (  # a client's file as Kafka's config/producer.properties writes one, in Java's other separators
    "# the producer\nbootstrap.servers=localhost:9092\nkey.serializer: org.apache.kafka.common.serialization."
    "StringSerializer\nvalue.serializer org.apache.kafka.\\\n    common.serialization.StringSerializer\n"
    "! Java's other comment\nacks = -1\nenable.idempotence=\\u0066alse\nretries 3\n"
)
SERVER = "broker.id=1\nlog.dirs=/tmp/kafka\nmin.insync.replicas=2\ndefault.replication.factor=2\nlog.retention.hours=168\n"


def _check(tmp_path, *args):
    proc = run_cli("check-model", *args, *SMALL, "--format", "json", "--trace-dir", str(tmp_path))
    return proc, (json.loads(proc.stdout) if proc.returncode in (0, 1) else None)


def _file(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_client_file_is_read_by_the_properties_rules_and_its_other_keys_are_ignored(tmp_path):
    proc, report = _check(tmp_path, "--producer-config", _file(tmp_path, "producer.properties", PRODUCER))
    assert proc.returncode in (0, 1), proc.stderr
    k = report["config"]["kafka_config"]
    assert (k["acks"], k.get("enable.idempotence"), k.get("retries")) == ("all", "false", "1")  # any retries is one in a run
    assert proc.stderr == ("check-model: ignored (no modelled behaviour depends on them): bootstrap.servers, "
                           "key.serializer, value.serializer\n")


def test_a_brokers_defaults_give_way_to_the_topics_own(tmp_path):
    server = _file(tmp_path, "server.properties", SERVER)
    topic = _file(tmp_path, "topic.properties", "min.insync.replicas=1\n")
    proc, report = _check(tmp_path, "--broker-config", server, "--topic-config", topic)
    assert proc.returncode in (0, 1), proc.stderr
    assert (report["config"]["rf"], report["config"]["min_isr"]) == (2, 1)
    assert "broker.id, log.dirs, log.retention.hours" in proc.stderr


def test_kafka_configs_all_with_long_max_and_empty_values(tmp_path):
    proc, report = _check(tmp_path, "--topic-config", _file(tmp_path, "all.txt", ALL_CONFIGS),
                          "--config", "flush.messages=10000")
    assert proc.returncode in (0, 1), proc.stderr
    assert _config(report) == (3, 2, "all", False, "os")


@pytest.mark.parametrize("topic, expected", [("orders", (3, 2)), ("payments", (2, 1))])
def test_topic_picks_one_of_a_describe_of_several(tmp_path, topic, expected):
    proc, report = _check(tmp_path, "--topic-config", _file(tmp_path, "d.txt", TWO_TOPICS), "--topic", topic)
    assert proc.returncode in (0, 1), proc.stderr
    assert (report["config"]["rf"], report["config"]["min_isr"]) == expected
    assert report["answer"].startswith("Answer, from ") and report["config"]["now"]  # its partitions now


def test_the_old_describe_format_and_commas_inside_a_value(tmp_path):
    proc, report = _check(tmp_path, "--topic-config", _file(tmp_path, "old.txt", OLD_CONFIGS))
    assert proc.returncode in (0, 1), proc.stderr
    assert report["config"]["min_isr"] == 2
    assert proc.stderr == ("check-model: ignored (no modelled behaviour depends on them): "
                           "leader.replication.throttled.replicas\n")


def test_repeated_files_merge(tmp_path):
    one = _file(tmp_path, "one.properties", "min.insync.replicas=2\n")
    two = _file(tmp_path, "two.properties", "unclean.leader.election.enable=true\nmin.insync.replicas=2\n")
    proc, report = _check(tmp_path, "--topic-config", one, "--topic-config", two)
    assert proc.returncode in (0, 1), proc.stderr
    assert report["config"]["min_isr"] == 2 and report["config"]["unclean_election"] is True


@pytest.mark.parametrize("files, extra, words", [
    ({"d.txt": TWO_TOPICS}, [], "describes 2 topics (orders, payments): pick one with --topic"),
    ({"d.txt": TWO_TOPICS}, ["--topic", "invoices"], "no topic invoices; it describes orders, payments"),
    ({"a.properties": "min.insync.replicas=2\n", "b.properties": "min.insync.replicas=3\n"}, [],
     "min.insync.replicas is given twice: 2 in {a}:1, 3 in {b}:1"),
    ({"empty.properties": ""}, [], "no setting the model reads (nothing)"),
    ({"p.txt": "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\n"}, [],
     "no setting the model reads (only partition lines)"),
    ({"p.properties": "bootstrap.servers=localhost:9092\n"}, [], "no setting the model reads (only keys"),
    ({"p.properties": "min.insync.replicas=2\n"}, ["--topic", "orders"], "--topic orders: no file given"),
    ({"p.properties": "flush.messages=0\n"}, [], "flush.messages=0: a whole number from 1 to"),
    ({"p.properties": "acks=\\u00zz\n"}, [], "p.properties"),
])
def test_bad_kafka_files_are_one_line_and_exit_2(tmp_path, files, extra, words):
    paths = {name: _file(tmp_path, name, text) for name, text in files.items()}
    args = [a for p in paths.values() for a in ("--topic-config", p)]
    proc = run_cli("check-model", *args, *extra, *SMALL, "--trace-dir", str(tmp_path))
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert words.format(**{k.split(".")[0]: v for k, v in paths.items()}) in line


def test_a_typo_in_a_file_is_named_with_the_key_it_misses_and_an_empty_value_is_unset(tmp_path):
    text = "min.insync.replica=2\nacks=\nunclean.leader.election.enable=true\n"
    proc, report = _check(tmp_path, "--topic-config", _file(tmp_path, "t.properties", text),
                          "--config", "bootstrap.servers=localhost:9092")
    assert proc.returncode in (0, 1), proc.stderr
    assert report["config"]["min_isr"] == 1 and report["config"]["unclean_election"] is True
    assert proc.stderr.splitlines() == [
        "check-model: ignored (no modelled behaviour depends on them): min.insync.replica "
        "(did you mean min.insync.replicas?), bootstrap.servers",
        "check-model: unset, so Kafka's default (and the option's) applies: acks",
    ]
