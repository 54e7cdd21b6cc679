"""The model's traces replayed on real Kafka clusters (Kafka 3.9.2 and 4.1.2 on 127.0.0.1).

Before each run, what Kafka's code should do (docs/real-kafka.md has the reasoning):
- 3.9 (ZooKeeper mode), one lost disk: the controller fails the leader whose session it
  lost first, the broker with the wiped disk is the last ISR member and is elected clean on
  restart: the committed record is gone. Expected: reproduced.
- The same schedule on 4.1 (KRaft, ELR on): the restarted broker comes back from an unclean
  shutdown and leaves the ELR, so nobody is elected and the record stays on broker 0.
  Expected: not reproduced, no acknowledged record lost.
- A witness of a committed record at rf 2 on 4.1: every step is observable and matches.
The first two run as docs/real-kafka.md shows them, by tests/test_docs_commands.py (``-m kafka``),
which holds their reports to the page: each step's status, the record lost on 3.9, kept on 4.1.
These tests start real clusters and run alone (``-m kafka``: the README's test command runs
them after the rest of the suite, so their timings are not those of a loaded machine).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from isrcheck.api import check
from isrcheck.cluster.cluster import Cluster, ClusterSpec
from isrcheck.cluster.client import registered_brokers

from .clitools import command, run_cli

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def _trace_file(folder: Path, prop: str, **settings) -> Path:
    result = check(**settings, properties=[prop], trace_dir=folder)
    return result[prop].trace_file


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("traces")
    return {
        "disk-loss-3.9": _trace_file(folder / "a", "committed-survive", rf=3, min_isr=2, disk_loss=1, kafka_version="3.9"),
        "committed-rf2": _trace_file(folder / "b", "record-committed", rf=2, min_isr=2),
    }


def _ours(folder: Path) -> list[psutil.Process]:
    """Live processes whose command line names a path under ``folder``."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(str(folder) in a for a in p.info["cmdline"] or ()) and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


def _replay(trace: Path, tmp: Path, *args: str) -> tuple[int, dict]:
    proc = run_cli("replay-kafka", str(trace), "--format", "json", *args, env={"TMPDIR": str(tmp)}, timeout=400)
    assert proc.stdout.strip(), proc.stderr
    assert not _ours(tmp), "a process of the cluster outlived the replay"
    return proc.returncode, json.loads(proc.stdout)


def _steps(report: dict) -> str:
    return "\n".join(f"{s['index']} {s['status']} {s['step']} {s['expected']} {s['observed']} {s['note']}"
                     for s in report["steps"]) + f"\n{report['outcome']}"


def test_a_witness_replays_with_every_step_matching(traces, tmp_path):
    code, report = _replay(traces["committed-rf2"], tmp_path)
    assert code == 0 and report["diverged_at"] is None and report["reproduced"] is True, _steps(report)
    assert {s["status"] for s in report["steps"]} == {"match", "internal"}
    assert report["committed"] == [0]
    last = report["steps"][-1]  # the whole state after each step is reported, both sides
    assert last["model_state"]["replicas"]["0"] == {"log": [[0, 0]], "LEO": 1, "HWM": 1, "up": True}
    assert last["real_state"]["replicas"]["0"]["log"] == [[0, 0]] and last["real_state"]["leader"] == 0


def test_a_killed_driver_leaves_no_process_and_the_next_run_starts_clean(traces, tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    driver = subprocess.Popen([command("replay-kafka"), str(traces["disk-loss-3.9"])], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(_ours(tmp_path)) < 4 and time.monotonic() < deadline:  # ZooKeeper, the controller, 3 brokers
            time.sleep(0.5)
        assert len(_ours(tmp_path)) >= 4
        time.sleep(2)
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait(30)
    deadline = time.monotonic() + 20
    while _ours(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _ours(tmp_path), "processes of a killed driver's cluster survived it"
    with Cluster(ClusterSpec("3.9", 3, kraft=False), tmp_path / "next") as cluster:
        assert registered_brokers(cluster) >= {0, 1, 2}
        assert len(cluster.pids()) == 5
    assert not _ours(tmp_path)


def test_check_model_replays_what_it_found_beside_its_verdict(tmp_path):
    proc = run_cli("check-model", "--rf", "2", "--min-isr", "2", "--property", "record-committed",
                   "--replay-on-kafka", "--trace-dir", str(tmp_path / "t"), "--format", "json",
                   env={"TMPDIR": str(tmp_path)}, timeout=400)
    assert proc.returncode == 0, proc.stderr
    replays = json.loads(proc.stdout)["kafka_replays"]
    assert [(r["property"], r["release"], r["reproduced"]) for r in replays] == [("record-committed", "4.1.2", True)]
    assert not _ours(tmp_path)


def test_a_time_limit_stops_the_replay_between_steps_and_ends_every_process(traces, tmp_path):
    """Expected: the 3.9 schedule needs about 30 s (8-10 s of it the cluster's start); at 15 s
    the replay stops in the middle, judges nothing, exits 3 and leaves no process behind."""
    started = time.monotonic()
    code, report = _replay(traces["disk-loss-3.9"], tmp_path, "--time-limit", "15s")
    elapsed = time.monotonic() - started
    assert code == 3 and report["stopped"] == "time limit" and report["reproduced"] is None, _steps(report)
    assert "not judged" in report["outcome"] and len(report["steps"]) < 12
    assert elapsed < 15 * 1.1 + 1 + 3  # the bound, and 3 s to end the cluster's processes
