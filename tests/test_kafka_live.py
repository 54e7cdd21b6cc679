"""--bootstrap-server: a topic's settings read from a live cluster give the verdicts of the same
settings passed by flag (issue 54). One real KRaft cluster of Kafka 4.1.2 on 127.0.0.1, two
topics: what the Admin API returns (DescribeTopics, DescribeConfigs with the broker's
defaults) goes through the same reading as a describe file. Without --partition the check
starts from partition 0's state as the cluster shows it, before and after a broker is killed."""

from __future__ import annotations

import json
import time

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
        server = cluster.bootstrap.split(",")[0]
        live = {topic: run_cli("check-model", "--bootstrap-server", server, "--topic", topic, "--partition", "new",
                               *SMALL, "--trace-dir", str(tmp_path / topic), timeout=300)
                for topic in TOPICS}
        missing = run_cli("check-model", "--bootstrap-server", cluster.bootstrap, "--topic", "nope", *SMALL)
        healthy = run_cli("check-model", "--bootstrap-server", server, "--topic", "orders", *SMALL, timeout=300)
        cluster.kill(2)
        shrunk = wait_for_isr(server, "orders", (0, 1))
        down = run_cli("check-model", "--bootstrap-server", server, "--topic", "orders", *SMALL, timeout=300)
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
    assert_from_now(healthy, " Down:", "has every replica in the ISR now")  # none down
    assert shrunk.down == (2,), shrunk
    assert_from_now(down, "Isr: 0,1 Down: 2", "is at min ISR now")  # acks=all stops if one more leaves


def assert_from_now(proc, shown: str, reading: str) -> None:
    """A live check starts from partition 0's state as the cluster shows it: acks=all with
    min.insync.replicas=2 keeps every acknowledged write from there (KIP-966's ELR in 4.1)."""
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    report = json.loads(proc.stdout)
    assert report["answer"].startswith("Answer, from partition 0's state now, within bounds: "), report["answer"]
    assert report["config"]["now"].endswith(shown) and reading in report["now"][0], report
    assert dict((p["name"], p["status"]) for p in report["properties"])["acked-survive"] == "holds"


def wait_for_isr(server: str, topic: str, isr: tuple[int, ...], timeout: float = 90.0):
    """Partition 0 as the cluster shows it once its ISR is ``isr`` (the controller fences a
    killed broker after broker.session.timeout.ms and shrinks the ISR). librdkafka sends its
    admin requests to the broker the metadata names as controller, in KRaft any broker: one
    killed times a request out until the metadata moves on, so a failure is tried again."""
    from isrcheck.cli.common import UsageFailure
    from isrcheck.cli.kafka_live import read_topic

    deadline = time.monotonic() + timeout
    while True:
        try:
            partition = read_topic(server, topic, None)[1][0]
            if tuple(sorted(partition.isr)) == isr and partition.down:
                return partition
        except UsageFailure:
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            return partition
        time.sleep(1.0)
