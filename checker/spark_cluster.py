"""A throwaway standalone Spark cluster on 127.0.0.1, for tests, benchmarks and trying things out.

It starts one master and N workers with the ``spark-class`` launcher that ships
inside the pyspark package (nothing else to install), on free ports, each
worker with few cores and little memory, and stops exactly the processes it
started (and their children, the executors) by process id. ``kill_worker``
simulates a lost machine in the middle of a run.

    with LocalCluster(workers=2) as cluster:
        check-model --engine spark --spark-master {cluster.master_url}
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

START_TIMEOUT = 120.0  # seconds for the master and every worker to be up (slow, shared CI machines)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


class ClusterError(RuntimeError):
    pass


class LocalCluster:
    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g", daemon_memory: str = "256m") -> None:
        self.n_workers, self.cores, self.memory = workers, cores, memory
        self.daemon_memory = daemon_memory
        self.dir = Path(tempfile.mkdtemp(prefix="isrcheck-spark-cluster-"))
        self.port, self.webui_port = free_port(), free_port()
        self.master: psutil.Popen | None = None
        self.workers: list[psutil.Popen | None] = []
        self.worker_ui_ports: list[int] = []  # executors' log links name their worker by this port
        self._logs: list = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    # -- processes ----------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_DAEMON_MEMORY=self.daemon_memory,
            SPARK_LOG_DIR=str(self.dir / "logs"),
            SPARK_WORKER_DIR=str(self.dir / "work"),
        )
        return env

    def _launch(self, name: str, args: list[str]) -> psutil.Popen:
        log = open(self.dir / f"{name}.log", "ab")  # noqa: SIM115 - closed by stop()
        self._logs.append(log)
        cmd = [str(spark_home() / "bin" / "spark-class"), *args]
        # spark-class execs java, so the pid is the JVM's; a new session keeps our Ctrl-C away from it.
        return psutil.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self._env(), start_new_session=True)

    def start(self) -> "LocalCluster":
        self.master = self._launch(
            "master",
            ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
             "--webui-port", str(self.webui_port)],
        )
        try:
            self._wait(lambda: self._alive_workers() is not None, "the master")
            for i in range(self.n_workers):
                self.workers.append(self._start_worker(i))
            self._wait(lambda: self._alive_workers() == self.n_workers, f"{self.n_workers} workers")
        except BaseException:
            self.stop()
            raise
        return self

    def _start_worker(self, i: int) -> psutil.Popen:
        work = self.dir / f"work-{i}"
        work.mkdir(exist_ok=True)
        ui_port = free_port()
        if i < len(self.worker_ui_ports):
            self.worker_ui_ports[i] = ui_port
        else:
            self.worker_ui_ports.append(ui_port)
        return self._launch(
            f"worker-{i}",
            ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", str(self.cores),
             "--memory", self.memory, "--work-dir", str(work), "--webui-port", str(ui_port), self.master_url],
        )

    def _alive_workers(self) -> int | None:
        """Workers the master counts as alive, or None while its web UI does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json/", timeout=2) as r:
                return int(json.load(r)["aliveworkers"])
        except (OSError, ValueError, KeyError):
            return None

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not ready():
            for p in [self.master, *self.workers]:
                if p is not None and p.poll() is not None:
                    raise ClusterError(f"a Spark process exited while waiting for {what}; logs in {self.dir}")
            if time.monotonic() > deadline:
                raise ClusterError(f"{what} did not come up within {START_TIMEOUT:.0f} s; logs in {self.dir}")
            time.sleep(0.25)

    def alive_workers(self) -> int:
        return self._alive_workers() or 0

    def worker_pids(self, i: int) -> list[int]:
        """Worker ``i`` and its descendants (its executor JVM and that JVM's Python workers)."""
        proc = self.workers[i]
        return [] if proc is None else [proc.pid, *self._descendants(proc)]

    def kill_worker(self, i: int, pids: list[int] | None = None) -> list[int]:
        """SIGKILL worker ``i`` and its executors at once, as a lost machine; returns the pids killed.

        ``pids`` (from ``worker_pids``, read beforehand) makes the kill itself immediate.
        """
        proc = self.workers[i]
        if proc is None:
            return []
        pids = pids if pids is not None else self.worker_pids(i)
        for pid in pids:
            _signal(pid, signal.SIGKILL)
        _reap(proc)
        self.workers[i] = None
        return pids

    def restart_worker(self, i: int) -> None:
        if self.workers[i] is None:
            self.workers[i] = self._start_worker(i)
            self._wait(lambda: self._alive_workers() == sum(p is not None for p in self.workers), f"worker {i}")

    def _descendants(self, proc: psutil.Popen) -> list[int]:
        try:
            return [c.pid for c in proc.children(recursive=True)]
        except psutil.Error:
            return []

    def stop(self) -> None:
        """Stop every process this cluster started, and their children, by process id."""
        started = [p for p in [*self.workers, self.master] if p is not None]
        for proc in started:  # workers first, so they do not restart executors
            children = self._descendants(proc)
            _signal(proc.pid, signal.SIGTERM)
            if not _reap(proc, timeout=15):
                _signal(proc.pid, signal.SIGKILL)
                _reap(proc)
            for pid in children:  # executors and their Python workers, if still there
                _signal(pid, signal.SIGKILL)
        self.workers = [None] * len(self.workers)
        self.master = None
        for log in self._logs:
            log.close()
        self._logs.clear()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _reap(proc: psutil.Popen, timeout: float = 10) -> bool:
    try:
        proc.wait(timeout)
        return True
    except psutil.TimeoutExpired:
        return False
    except psutil.Error:
        return True
