"""The replay harness without a cluster: how a trace becomes real operations, and the refusals.

The README's stories are compiled and their schedules pinned: what is forced, which
brokers are held still, which step waits for a session to end first. The real-cluster
runs themselves are in ``tests/test_kafka_replay.py``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from isrcheck.api import check
from isrcheck.cluster import ClusterError, jars
from isrcheck.cluster.epochs import EpochMap
from isrcheck.cluster.observe import footprint
from isrcheck.cluster.outcome import Observations, judge
from isrcheck.cluster.replay import cluster_spec
from isrcheck.cluster.schedule import compile_trace

from .clitools import run_cli


def _trace(tmp_path: Path, prop: str, **settings):
    result = check(**settings, properties=[prop], trace_dir=tmp_path)
    return result[prop].trace, result[prop].trace_file


@pytest.fixture(scope="module")
def disk_loss(tmp_path_factory):
    return _trace(tmp_path_factory.mktemp("disk"), "committed-survive", rf=3, min_isr=2, disk_loss=1,
                  kafka_version="3.9")


def test_the_lost_disk_story_compiles_to_a_produce_a_kill_a_wipe_and_a_restart(disk_loss):
    trace, _ = disk_loss
    plan = compile_trace(trace)
    ops = [(p.index, str(op)) for p in plan for op in p.operations]
    assert ops == [(1, "create the topic with replicas [0, 1, 2]"), (4, "produce m0"), (8, "kill -9 broker 1"),
                   (8, "cut broker 1's log on disk to 0 record(s)"), (10, "restart broker 1")]
    kinds = {p.index: p.kind for p in plan}
    assert kinds[2] == kinds[3] == "internal"  # becoming leader or follower happens inside a broker
    assert kinds[5] == kinds[9] == kinds[11] == "awaited"


def test_a_follower_the_model_keeps_behind_is_paused_and_one_that_fetches_next_runs(disk_loss):
    plan = compile_trace(disk_loss[0])
    held = {p.index: set(p.holds) for p in plan}
    assert held[4] == {2}  # broker 2 never fetches m0: paused before the produce
    assert 1 not in held[4]  # broker 1 fetches it next: it runs, and fetches as early as it can
    assert held[5] == {2}


def test_a_session_loss_is_started_before_the_crash_the_controller_must_see_later(disk_loss):
    plan = compile_trace(disk_loss[0])
    step8, step9 = plan[7], plan[8]
    assert step8.action.name == "BrokerCrashDiskLoss" and step8.settle and 0 in step8.holds
    assert step9.action.name == "ControllerShrinkIsr" and 0 in step9.holds and not step9.settle


def test_a_step_is_checked_by_what_it_changes(disk_loss):
    trace = disk_loss[0]
    s = trace.steps
    assert footprint(s[8].state, s[9].action, s[9].state) == {"leader": None, "leader epoch": 1, "ISR": [1]}
    assert footprint(s[3].state, s[4].action, s[4].state) == {"log of broker 0": [(0, 0)]}
    assert footprint(s[6].state, s[7].action, s[7].state) == {"HWM of broker 0": 1, "m0 acknowledged": True}


def test_epochs_renumbered_by_the_real_controller_are_reported_once():
    epochs = EpochMap()
    assert epochs.record(0, 0)
    assert not epochs.record(1, 0)  # KRaft shrank the ISR without a new epoch: fewer changes than the model
    assert epochs.agrees("leader epoch", 1, 0)
    assert epochs.expected(2) == 1  # the next model epoch is the next real one
    assert epochs.agrees("log of broker 0", [(0, 1)], [(0, 0)])
    epochs.skip(2)  # merged into the next step by the real controller
    assert epochs.record(3, 1)


class _Cluster:
    """What judge reads: the controller's state and each broker's log."""

    class spec:
        rf = 3

    def __init__(self, leader, epoch, logs):
        from isrcheck.cluster.cluster import Quorum

        self._q = Quorum(leader, epoch, frozenset({leader} if leader is not None else ()))
        self._logs = logs

    def quorum(self):
        return self._q

    def log(self, b):
        return self._logs[b]


def test_a_committed_record_missing_from_the_last_leader_is_lost(disk_loss):
    obs = Observations(acked={0: 0}, committed={(0, 0)})
    lost = judge(disk_loss[0], _Cluster(1, 3, {0: [(0, 0)], 1: [], 2: []}), obs)
    assert lost.reproduced and lost.lost_committed == [0] and lost.lost_acked == [0]
    kept = judge(disk_loss[0], _Cluster(None, 3, {0: [(0, 0)], 1: [], 2: []}), obs)
    assert kept.reproduced is False and "offline, not lost: m0 on broker(s) 0" in kept.sentence


def test_a_trace_replays_on_its_own_release_in_its_controller_mode(disk_loss):
    spec = cluster_spec(disk_loss[0])
    assert (spec.line, spec.kraft, spec.rf) == ("3.9", False, 3)
    on41 = cluster_spec(disk_loss[0], "4.1.1")
    assert (on41.line, on41.kraft, on41.elr) == ("4.1", True, True)  # a new 4.1 cluster has ELR on
    assert jars.release_for("4.1.1") == jars.PINNED["4.1"]
    with pytest.raises(ClusterError, match="no real-cluster release is pinned for Kafka 2.0"):
        jars.release_for("2.0")


def test_replay_kafka_refuses_in_one_line(tmp_path, disk_loss):
    bad = run_cli("replay-kafka", str(disk_loss[1]), "--kafka-version", "2.0")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no real-cluster release is pinned" in bad.stderr
    core = check(core=True, protocol="hw-truncation", rf=2, properties=["weak-isr"], trace_dir=tmp_path)
    refused = run_cli("replay-kafka", str(core["weak-isr"].trace_file))
    assert refused.returncode == 2 and "names no Kafka release" in refused.stderr and "Traceback" not in refused.stderr
    edited = tmp_path / "edited.itf.json"
    edited.write_text(disk_loss[1].read_text().replace('"name": "BrokerRestart"', '"name": "BrokerCrash"'))
    refused = run_cli("replay-kafka", str(edited))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1


def _fake_tool(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_a_failed_fetch_or_a_missing_java_is_one_line_and_exit_2(tmp_path, disk_loss):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    _fake_tool(bin_, "java", "exit 0\n")
    _fake_tool(bin_, "mvn", "echo '[ERROR] Could not resolve dependencies: the registry is unreachable'; exit 1\n")
    env = {"PATH": f"{bin_}:{os.environ['PATH']}", "ISRCHECK_KAFKA_CACHE": str(tmp_path / "cache")}
    fetch = run_cli("fetch-kafka", "4.1", env=env)
    assert fetch.returncode == 2 and fetch.stderr.count("\n") == 1
    assert "could not fetch Kafka 4.1.2's jars from Maven Central: [ERROR] Could not resolve" in fetch.stderr
    replay = run_cli("replay-kafka", str(disk_loss[1]), env=env)
    assert replay.returncode == 2 and "could not fetch Kafka 3.9.2's jars" in replay.stderr
    assert "Traceback" not in replay.stderr
    no_java = {"PATH": str(tmp_path / "empty"), "ISRCHECK_KAFKA_CACHE": str(tmp_path / "cache")}
    gone = run_cli("replay-kafka", str(disk_loss[1]), env=no_java)
    assert gone.returncode == 2 and "java is missing" in gone.stderr


def test_replay_on_kafka_is_refused_where_no_release_can_run(tmp_path):
    core = run_cli("check-model", "--core", "--rf", "2", "--replay-on-kafka", "--trace-dir", str(tmp_path))
    assert core.returncode == 2 and "--replay-on-kafka needs a Kafka release" in core.stderr
    old = run_cli("check-model", "--rf", "2", "--kafka-version", "2.1", "--replay-on-kafka", "--trace-dir", str(tmp_path))
    assert old.returncode == 2 and "no real-cluster release is pinned for Kafka 2.1" in old.stderr
