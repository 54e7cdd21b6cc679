"""--bootstrap-server: a topic's settings read from a live cluster give the verdicts of the same
settings passed by flag (issue 54). One real KRaft cluster of Kafka 4.1.2 on 127.0.0.1, two
topics: what the Admin API returns (DescribeTopics, DescribeConfigs with the broker's
defaults) goes through the same reading as a describe file."""

from __future__ import annotations

import json

import pytest

from isrcheck.cluster.client import create_topic
from isrcheck.cluster.cluster import Cluster, ClusterSpec

from .clitools import run_cli

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

SMALL = ["--max-records", "1", "--max-leader-epoch", "1", "--kafka-version", "4.1", "--format", "json"]
TOPICS = {  # topic -> (its configs, the same settings as flags)
    "orders": ({"min.insync.replicas": "2"}, ["--rf", "3", "--min-isr", "2"]),
    "logs": ({"min.insync.replicas": "1", "unclean.leader.election.enable": "true"},
             ["--rf", "3", "--min-isr", "1", "--unclean-election"]),
}


def verdicts(report: dict) -> list[tuple[str, str, int | None]]:
    return [(p["name"], p["status"], p["trace_length"]) for p in report["properties"]]


def test_a_live_topic_gives_the_verdicts_of_its_settings_passed_by_flag(tmp_path):
    with Cluster(ClusterSpec("4.1", 3, kraft=True, elr=True), tmp_path / "cluster") as cluster:
        for topic, (configs, _) in TOPICS.items():
            create_topic(cluster, topic, [0, 1, 2], configs)
        live = {topic: run_cli("check-model", "--bootstrap-server", cluster.bootstrap.split(",")[0], "--topic", topic,
                               *SMALL, "--trace-dir", str(tmp_path / topic), timeout=300)
                for topic in TOPICS}
        missing = run_cli("check-model", "--bootstrap-server", cluster.bootstrap, "--topic", "nope", *SMALL)
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1, missing.stderr
    assert "nope" in missing.stderr or "nknown topic" in missing.stderr, missing.stderr
    for topic, (_, flags) in TOPICS.items():
        proc = live[topic]
        assert proc.returncode in (0, 1), proc.stderr
        by_flag = run_cli("check-model", *flags, *SMALL, "--trace-dir", str(tmp_path / f"{topic}-flags"))
        got, want = json.loads(proc.stdout), json.loads(by_flag.stdout)
        assert (proc.returncode, verdicts(got)) == (by_flag.returncode, verdicts(want)), topic
        same = {k: v for k, v in got["config"].items() if k != "trace_dir"}
        assert same == {k: v for k, v in want["config"].items() if k != "trace_dir"}, topic  # rf, min-isr, unclean...
        assert "ignored (no modelled behaviour depends on them): " in proc.stderr  # retention.ms and the rest
