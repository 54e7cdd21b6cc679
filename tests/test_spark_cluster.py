"""The Spark engine on a real standalone cluster: a master and two workers on 127.0.0.1.

The cluster is started through the ``spark-class`` launcher inside the pyspark
package (one core and 1 GiB each) and every process it started is stopped by
process id at the end. One run goes through a fresh ``check-model`` process, the
others through the same command in this process, sharing one SparkContext (and
so its executors) as a long-lived driver would; the last tests kill a worker and
its executor in the middle of a run, with and without ``--checkpoint``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from isrcheck.checker import Observer, spark_context
from isrcheck.checker.spark_checkpoint import level_dir
from isrcheck.checker.spark_cluster import LocalCluster
from isrcheck.cli.check_model import main as check_model
from isrcheck.model import ModelConfig

from .clitools import run_cli
from .conftest import run_bfs
from .sparktools import (CORE_RF2, KAFKA, assert_paths_reach_their_verdicts, checkpointing, counts, run_spark,
                         verdicts)

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


LOW_MEMORY_DRIVER = r"""
import json, re, sys
from isrcheck.checker import CheckOptions, Observer, get_engine
from isrcheck.checker.spark_context import spark_context
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import select

sc = spark_context(sys.argv[1])
config = ModelConfig(rf=3, protocol="kip-320", core=True)


class Cached(Observer):
    # The largest cache of the levels seen after a level, in memory and on disk, and the
    # memory every block manager (the driver's, each executor's) may cache in.
    memory = disk = 0
    storage = {}

    def progress(self, info):
        infos = sc._jsc.sc().getRDDStorageInfo()
        memory, disk = sum(i.memSize() for i in infos), sum(i.diskSize() for i in infos)
        if memory + disk > self.memory + self.disk:
            self.memory, self.disk = memory, disk
        status = sc._jsc.sc().getExecutorMemoryStatus().toString()  # Map(host:port -> (max, left), ...)
        self.storage = {m[0]: int(m[1]) for m in re.findall(r"([\w.]+:\d+) -> \((\d+),", status)}


observer = Cached()
result = get_engine("spark", master=sys.argv[1]).check(ReplicationModel(config), select(config),
                                                        CheckOptions(explore_all=True, symmetry=True), observer)
s = result.stats
print(json.dumps(dict(states=s.states, generated=s.generated, depth=s.depth, complete=result.complete,
                      memory=observer.memory, disk=observer.disk, storage=observer.storage)))
"""


def test_a_visited_set_larger_than_the_memory_spark_may_cache_in_goes_to_disk_and_gives_the_bfs_counts(cluster):
    """Issue 22: the visited set is the executors', spread over their memory and disks, never
    the driver's. The driver and executors get Spark's smallest heap (512 MiB) and a thousandth
    of it to cache in (spark.memory.fraction): about 160 to 220 KB each, for levels that take
    1.4 MB on disk (123,311 states with their parents, measured; 2.6 MB as blocks in memory
    before levels were kept on disk only, 8 MB before the visited keys went to files of their
    own)."""
    if _active_context() is not None:
        _active_context().stop()  # a standalone app takes every core: let the child's driver have them
    low = "--driver-memory 512m --conf spark.executor.memory=512m --conf spark.memory.fraction=0.001 pyspark-shell"
    proc = subprocess.run([sys.executable, "-c", LOW_MEMORY_DRIVER, cluster.master_url], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, PYSPARK_SUBMIT_ARGS=low))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    bfs = run_bfs(ModelConfig(rf=3, protocol="kip-320", core=True), explore_all=True, symmetry=True)
    assert {k: got[k] for k in ("states", "generated", "depth", "complete")} == {
        k: counts(bfs)[k] for k in ("states", "generated", "depth", "complete")}
    assert len(got["storage"]) == 3  # the driver and two executors
    # more than all of them may cache: the levels with their parents (1.4 MB on disk, measured),
    # and beside Spark's storage the anti-joins' files of the visited keys (``spark_visited``)
    assert got["memory"] + got["disk"] > 2 * sum(got["storage"].values())
    assert got["disk"] > got["memory"]


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


def spark_checkpoints(folder: Path) -> list[Path]:
    """The folders Spark's own checkpoints of RDDs would be in (``rdd-N``, under an application's folder)."""
    return [p for p in folder.rglob("rdd-*") if p.is_dir()]


def test_with_a_checkpoint_each_level_is_written_once_into_its_files_not_by_spark_too(cluster, tmp_path, monkeypatch):
    sc = spark_context.spark_context(cluster.master_url)
    sc.setCheckpointDir(str(tmp_path / "spark"))  # where Spark would checkpoint the levels again
    monkeypatch.chdir(tmp_path)  # a relative folder is the driver's, not each executor's own
    ck = tmp_path / "ck"
    args = [*core_args("kip-320", tmp_path), "--engine", "spark", "--spark-master", cluster.master_url,
            "--checkpoint", "ck"]
    result = CliRunner().invoke(check_model, args)
    bfs = run_bfs(CORE_RF2["kip-320"], explore_all=True)
    assert result.exit_code == (0 if bfs.all_hold else 1), result.output
    report = json.loads(result.stdout)
    assert_report_is_bfs(report, CORE_RF2["kip-320"], explore_all=True)
    levels = json.loads((ck / "manifest.json").read_text())["levels"]
    assert len(levels) == report["depth"]
    listed = sorted(Path(level_dir(d), name) for d, level in enumerate(levels, 1) for _, name, _, _ in level["files"])
    assert sorted(p.relative_to(ck) for p in ck.rglob("*") if p.is_file() and p.name != "manifest.json") == listed
    assert (tmp_path / "spark").is_dir() and spark_checkpoints(tmp_path / "spark") == []


def executor_summaries(sc, alive_only: bool = True) -> list:
    """Spark's own record of its executors (the status store: the UI is off)."""
    found = sc._jsc.sc().statusStore().executorList(alive_only)
    return [e for e in (found.apply(i) for i in range(found.size())) if e.id() != "driver"]


def wait_for_executors(sc, n: int) -> None:
    """A restarted worker's executor joins the application a few seconds after the worker."""
    deadline = time.monotonic() + 60
    while len(executor_summaries(sc)) < n and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(executor_summaries(sc)) == n


def retried_work(sc) -> int:
    """Failed or resubmitted task attempts and re-run stage attempts that Spark has recorded."""
    gateway = sc._gateway
    stages = sc._jsc.sc().statusStore().stageList(None, False, False, gateway.new_array(gateway.jvm.double, 0), None)
    return sum(s.numFailedTasks() + (s.attemptId() > 0) for s in (stages.apply(i) for i in range(stages.size())))


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
        deadline = time.monotonic() + 20
        while not self.mid_task and time.monotonic() < deadline and self.sc._jsc is not None:
            self.mid_task = self._python_worker_busy() or self._status_store_shows_a_task()
        self.pids = self.cluster.kill_worker(1, self.cluster.worker_pids(1))

    def _status_store_shows_a_task(self) -> bool:
        """Spark's own view; it lags (listener bus, live-update period), so it can miss a short task."""
        link = f"127.0.0.1:{self.cluster.worker_ui_ports[1]}/"  # its executor's log links point at its UI
        return any(link in e.executorLogs().toString() and e.activeTasks() > 0 for e in executor_summaries(self.sc))

    def _python_worker_busy(self, window: float = 0.03) -> bool:
        """True when worker 1's Python workers burn CPU right now: a task of ours is running there.

        Read off the processes themselves, so it does not wait on Spark's event queue.
        """
        def cpu() -> float:
            total = 0.0
            for pid in self.cluster.worker_pids(1):
                try:
                    proc = psutil.Process(pid)
                    if "python" in proc.name():
                        times = proc.cpu_times()
                        total += times.user + times.system
                except psutil.Error:
                    pass
            return total

        before = cpu()
        time.sleep(window)
        return cpu() - before >= window / 3


# Levels of thousands of states (tasks of a good fraction of a second, so that the kill
# lands inside one), exhaustive to a depth bound so that every count can be compared. The
# kill is armed at depth 9, four levels before the end: armed at depth 11, the last two
# levels could finish before worker 1 ran a task (seen once on a loaded machine).
KILL_CONFIG = ModelConfig(rf=3, protocol="kip-279", core=True)
KILL_OPTIONS = dict(explore_all=True, max_depth=13)


def _run_with_a_kill(cluster, sc):
    """The run, with worker 1 killed at depth 9; (result, whether a running task was lost and redone)."""
    retried_before = retried_work(sc)
    killer = KillWorkerMidTask(cluster, sc, at_depth=9)
    try:
        disturbed = run_spark(KILL_CONFIG, ["weak-isr"], master=cluster.master_url, observer=killer, **KILL_OPTIONS)
        assert killer.depths[-1] == 13  # the kill came after depth 9 of 13: the run went on to the end
        assert len(killer.pids) >= 2 and _gone(killer.pids)  # the worker and its executor
        assert len(executor_summaries(sc)) == 1 and cluster.alive_workers() == 1
        return disturbed, killer.mid_task and retried_work(sc) > retried_before
    finally:
        cluster.restart_worker(1)
        wait_for_executors(sc, 2)


def test_a_worker_killed_in_the_middle_of_a_run_does_not_change_the_result(cluster):
    undisturbed = run_spark(KILL_CONFIG, ["weak-isr"], master=cluster.master_url, **KILL_OPTIONS)
    sc = _active_context()
    assert len(executor_summaries(sc)) == 2
    disturbed, redone = _run_with_a_kill(cluster, sc)
    if not redone:  # the kill fell between two tasks (the busy-worker reading can be fooled): once more
        disturbed, redone = _run_with_a_kill(cluster, sc)
    assert redone  # a running task was lost, and redone
    bfs = run_bfs(KILL_CONFIG, ["weak-isr"], **KILL_OPTIONS)
    assert counts(disturbed) == counts(undisturbed) == counts(bfs)
    assert verdicts(disturbed) == verdicts(bfs) == [("weak-isr", "violated", 11)]
    assert [p.path for p in disturbed.properties] == [p.path for p in undisturbed.properties]
    assert_paths_reach_their_verdicts(KILL_CONFIG, disturbed)


def test_a_worker_killed_in_the_middle_of_a_checkpointed_run_does_not_change_the_result(cluster, tmp_path):
    """Levels are then kept only in memory and in the saved files: the lost ones are read again from those."""
    sc = spark_context.spark_context(cluster.master_url)
    sc.setCheckpointDir(str(tmp_path / "spark"))
    wait_for_executors(sc, 2)
    retried_before = retried_work(sc)
    killer = KillWorkerMidTask(cluster, sc, at_depth=9)
    try:
        disturbed = run_spark(KILL_CONFIG, ["weak-isr"], master=cluster.master_url, observer=killer,
                              saving=checkpointing(tmp_path / "ck", KILL_CONFIG), **KILL_OPTIONS)
        assert killer.depths[-1] == 13
        assert killer.mid_task and retried_work(sc) > retried_before
        assert len(killer.pids) >= 2 and _gone(killer.pids)
        assert len(executor_summaries(sc)) == 1 and cluster.alive_workers() == 1
    finally:
        cluster.restart_worker(1)
    bfs = run_bfs(KILL_CONFIG, ["weak-isr"], **KILL_OPTIONS)
    assert counts(disturbed) == counts(bfs)
    assert verdicts(disturbed) == verdicts(bfs) == [("weak-isr", "violated", 11)]
    assert_paths_reach_their_verdicts(KILL_CONFIG, disturbed)
    assert spark_checkpoints(tmp_path / "spark") == []
    assert len(json.loads((tmp_path / "ck" / "manifest.json").read_text())["levels"]) == 13
