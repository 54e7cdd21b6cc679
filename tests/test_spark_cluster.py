"""The Spark engine on a real standalone cluster: a master and two workers on 127.0.0.1.

The cluster is started through the ``spark-class`` launcher inside the pyspark
package (one core and 1 GiB each) and every process it started is stopped by
process id at the end. One run goes through a fresh ``check-model`` process, the
others through the same command in this process, sharing one SparkContext (and
so its executors) as a long-lived driver would; the last test kills a worker and
its executor in the middle of a run.
"""

from __future__ import annotations

import json
import threading
import time

import psutil
import pytest
from click.testing import CliRunner

from isrcheck.checker import Observer
from isrcheck.checker.spark_cluster import LocalCluster
from isrcheck.cli.check_model import main as check_model

from .clitools import run_cli
from .conftest import run_bfs
from .sparktools import CORE_RF2, KAFKA, assert_agrees_with_bfs, counts, run_spark, verdicts

pytestmark = pytest.mark.spark


def _active_context():
    from pyspark import SparkContext

    return SparkContext._active_spark_context


def _gone(pids: list[int]) -> bool:
    return not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids)


@pytest.fixture(scope="module")
def cluster():
    started = LocalCluster(workers=2, cores=1, memory="1g").start()
    try:
        yield started
    finally:
        if _active_context() is not None:
            _active_context().stop()  # the app's executors go before the workers do
        daemons = [p for p in (started.master, *started.workers) if p is not None]
        pids = [p.pid for p in daemons] + [c.pid for p in daemons for c in p.children(recursive=True)]
        started.stop()
        assert _gone(pids), "a process the cluster started is still running"


def core_args(protocol: str, tmp_path) -> list[str]:
    return ["--core", "--rf", "2", "--protocol", protocol, "--continue", "--no-symmetry",
            "--format", "json", "--trace-dir", str(tmp_path)]


def assert_report_is_bfs(report: dict, config, **options) -> None:
    bfs = run_bfs(config, **options)
    assert report["engine"] == "spark"
    got = {k: report[k] for k in ("states", "generated", "depth", "complete", "exhausted")}
    assert got == {k: counts(bfs)[k] for k in got}
    assert [(p["name"], p["status"], p["trace_length"]) for p in report["properties"]] == verdicts(bfs)


def test_check_model_on_the_cluster_reports_the_bfs_result_and_nothing_of_spark(cluster, tmp_path):
    if _active_context() is not None:
        _active_context().stop()  # a standalone app takes every core: let this process's driver have them
    proc = run_cli("check-model", *core_args("hw-truncation", tmp_path), "--engine", "spark",
                   "--spark-master", cluster.master_url)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    report = json.loads(proc.stdout)
    assert report["config"]["master"] == cluster.master_url
    assert_report_is_bfs(report, CORE_RF2["hw-truncation"], explore_all=True)


@pytest.mark.parametrize("protocol", ["kip-101", "kip-279", "kip-320"])
def test_check_model_on_the_cluster_agrees_with_bfs_on_the_core(cluster, protocol, tmp_path):
    args = [*core_args(protocol, tmp_path), "--engine", "spark", "--spark-master", cluster.master_url]
    result = CliRunner().invoke(check_model, args)
    bfs = run_bfs(CORE_RF2[protocol], explore_all=True)
    assert result.exit_code == (0 if bfs.all_hold else 1), result.output
    assert_report_is_bfs(json.loads(result.stdout), CORE_RF2[protocol], explore_all=True)


def test_check_model_on_the_cluster_agrees_with_bfs_on_a_kafka_configuration(cluster, tmp_path):
    args = ["--rf", "2", "--acks", "1", "--continue", "--format", "json", "--trace-dir", str(tmp_path),
            "--engine", "spark", "--spark-master", cluster.master_url]
    result = CliRunner().invoke(check_model, args)
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert_report_is_bfs(report, KAFKA, explore_all=True, symmetry=True)
    assert report["states_before_symmetry"] == run_bfs(KAFKA, explore_all=True, symmetry=True).stats.full_states


def executor_summaries(sc, alive_only: bool = True) -> list:
    """Spark's own record of its executors (the status store: the UI is off)."""
    found = sc._jsc.sc().statusStore().executorList(alive_only)
    return [e for e in (found.apply(i) for i in range(found.size())) if e.id() != "driver"]


def failed_tasks(sc) -> int:
    return sum(e.failedTasks() for e in executor_summaries(sc, alive_only=False))


class KillWorkerMidTask(Observer):
    """Once the run reaches ``at_depth``, kills worker 1 and its executor while that executor runs a task."""

    def __init__(self, cluster: LocalCluster, sc, at_depth: int) -> None:
        super().__init__()
        self.cluster, self.sc, self.at_depth = cluster, sc, at_depth
        self.depths: list[int] = []
        self.pids: list[int] = []
        self.mid_task = False

    def progress(self, info) -> None:
        self.depths.append(info.depth)
        if info.depth == self.at_depth:
            threading.Thread(target=self._kill, daemon=True).start()

    def _kill(self) -> None:
        link = f"127.0.0.1:{self.cluster.worker_ui_ports[1]}/"  # its executor's log links point at its UI
        deadline = time.monotonic() + 10
        while not self.mid_task and time.monotonic() < deadline:
            self.mid_task = any(link in e.executorLogs().toString() and e.activeTasks() > 0
                                for e in executor_summaries(self.sc))
            time.sleep(0.002)
        self.pids = self.cluster.kill_worker(1)


def test_a_worker_killed_in_the_middle_of_a_run_does_not_change_the_result(cluster):
    config = CORE_RF2["hw-truncation"]
    undisturbed = run_spark(config, master=cluster.master_url, explore_all=True)
    sc = _active_context()
    assert len(executor_summaries(sc)) == 2
    failed_before = failed_tasks(sc)
    killer = KillWorkerMidTask(cluster, sc, at_depth=10)
    try:
        disturbed = run_spark(config, master=cluster.master_url, observer=killer, explore_all=True)
        assert killer.depths[-1] == 20  # the kill came at depth 10 of 20: the run went on to the end
        assert killer.mid_task and failed_tasks(sc) > failed_before  # a running task was lost, and retried
        assert len(killer.pids) >= 2 and _gone(killer.pids)  # the worker and its executor
        assert len(executor_summaries(sc)) == 1 and cluster.alive_workers() == 1
    finally:
        cluster.restart_worker(1)
    assert_agrees_with_bfs(config, disturbed, explore_all=True)
    assert counts(disturbed) == counts(undisturbed)
    assert [p.path for p in disturbed.properties] == [p.path for p in undisturbed.properties]
