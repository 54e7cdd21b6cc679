"""Getting a quiet SparkContext for a master URL, and shipping isrcheck to its executors.

Why a module of its own: the engine's search should not care how Spark was
started. Here live the choices that make ``--engine spark`` pleasant: the JVM's
console output goes to a log file unless ``verbose`` (Spark's startup banner,
its warnings and the progress bar would otherwise bury our report), the master
URL is checked before a JVM is started, the isrcheck package is zipped and
added to the context so executors run the driver's exact code even where
isrcheck is not installed, and the context's checkpoint directory is chosen
(``level_durability``).
"""

from __future__ import annotations

import atexit
import hashlib
import importlib
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from isrcheck.model import ConfigError

from .engine import Limits, Observer

if TYPE_CHECKING:  # pragma: no cover
    from pyspark import RDD, SparkContext

# Packages that executors import: the model, the properties and the checker's tasks.
SHIPPED_PACKAGES = ("isrcheck", "isrcheck.model", "isrcheck.properties", "isrcheck.checker")

_MASTER = re.compile(
    r"""^(local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?
        |local-cluster\[[1-9]\d*,\s*[1-9]\d*,\s*[1-9]\d*\]
        |spark://[^\s/:,]+:\d+(,[^\s/:,]+:\d+)*
        |yarn
        |k8s://\S+)$""",
    re.VERBOSE,
)
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}

_log_path: Path | None = None  # where the JVM's console output goes (None: to the terminal)
_keep_log = False  # set once the user was pointed at the log
_shipped: set[tuple[str, str]] = set()
_zip_dir: Path | None = None


def validate_master(master: str) -> str:
    """The master URL if Spark would accept it, else a one-line ConfigError."""
    if master.startswith("sc://"):
        raise ConfigError(f"--spark-master {master}: Spark Connect has no RDD API; give a cluster master URL")
    if not _MASTER.match(master):
        raise ConfigError(
            f"--spark-master {master!r} is not a Spark master URL "
            "(local[*], local[N], spark://HOST:PORT, yarn or k8s://...)"
        )
    return master


def runs_on_this_machine(master: str) -> bool:
    """True for local modes and standalone masters on this host: executors share our Python."""
    if master.startswith("local"):
        return True
    hosts = _master_hosts(master)
    return bool(hosts) and hosts <= _LOCAL_HOSTS | {socket.gethostname(), socket.getfqdn()}


def _master_hosts(master: str) -> set[str]:
    """The hosts of a standalone master URL (empty for other masters)."""
    if not master.startswith("spark://"):
        return set()
    return {hp.rsplit(":", 1)[0] for hp in master[len("spark://") :].split(",")}


def _check_reachable(master: str) -> None:
    """Fail in seconds, not after Spark's minute of retries, when no standalone master answers."""
    if not master.startswith("spark://"):
        return
    errors = []
    for hostport in master[len("spark://") :].split(","):
        host, port = hostport.rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
            return
        except OSError as e:
            errors.append(f"{hostport}: {e.strerror or e}")
    raise ConfigError(f"cannot reach the Spark master {master} ({'; '.join(errors)})")


def _check_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and Path(java_home, "bin", "java").exists():
        return
    if shutil.which("java") is None:
        raise ConfigError(
            "--engine spark needs a Java 17+ runtime: install one "
            "(e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
        )


_TEMP_CHECKPOINT_DIRS: set[str] = set()  # made (and removed) by checks in this process


def level_durability(sc: "SparkContext", directory: str | None, master: str) -> tuple[str, str | None]:
    """How a search's levels survive a lost executor, and a temporary directory to remove after it.

    "reliable": checkpointed to a directory every executor reaches (given, configured
    as spark.checkpoint.dir, or a temporary one when the executors run on this
    machine). "local": local mode, whose executor is the driver itself: nothing can
    be lost, so the lineage is only truncated (no extra job). "replicated": a remote
    cluster without a checkpoint directory: two cached copies of every block.
    """
    temp = None
    current = sc.getCheckpointDir()
    ours = current is not None and any(d in current for d in _TEMP_CHECKPOINT_DIRS)  # an earlier check's
    if directory is None and (current is None or ours):
        if master.startswith("local"):
            return "local", None
        if runs_on_this_machine(master):
            directory = temp = tempfile.mkdtemp(prefix="isrcheck-spark-ckpt-")
            _TEMP_CHECKPOINT_DIRS.add(temp)
    if directory is not None:
        sc.setCheckpointDir(directory)
    return ("reliable" if sc.getCheckpointDir() is not None else "replicated"), temp


def visited_folder(master: str) -> str | None:
    """A temporary folder for the vector kernel's visited files (``spark_visited``) where every
    executor surely runs on this machine: local modes, and masters on the loopback interface,
    whose workers can only be local (a master at this host's name may have workers elsewhere).
    Else None: the anti-joins then read the cached levels."""
    here = master.startswith("local") or bool(_master_hosts(master)) and _master_hosts(master) <= _LOCAL_HOSTS
    return tempfile.mkdtemp(prefix="isrcheck-spark-visited-") if here else None


def _open_log() -> Path:
    global _log_path
    fd, name = tempfile.mkstemp(prefix="isrcheck-spark-", suffix=".log")
    os.close(fd)
    _log_path = Path(name)
    return _log_path


def spark_context(master: str, verbose: bool = False) -> "SparkContext":
    """The active SparkContext if it runs on ``master``, else a new one (stopping the old one).

    Contexts are reused across checks in one process (a JVM start costs seconds)
    and stopped when the process exits. The JVM is started once per process, so the
    first call decides whether its console output is shown (``verbose``) or logged.
    """
    validate_master(master)
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    active = SparkContext._active_spark_context
    if active is not None:
        if active.master == master:
            return active
        active.stop()
    _check_reachable(master)
    _check_java()
    spark_conf = SparkConf().setMaster(master).setAppName("isrcheck")
    spark_conf.set("spark.ui.enabled", "false")
    spark_conf.set("spark.ui.showConsoleProgress", "false")
    # A BFS level is a short job: waiting seconds for the executor that caches a
    # task's blocks (delay scheduling) costs more than reading them from another one.
    spark_conf.set("spark.locality.wait", "100ms")
    # Executors talk to their Python workers over a Unix socket (Spark 4.1+, SPARK-51688;
    # older versions ignore it). Over TCP every task's first read waited about 40 ms
    # (measured: a task of a few states took 40 ms, and 4 ms on a Unix socket), and a
    # level runs two tasks a partition one after the other.
    spark_conf.set("spark.python.unix.domain.socket.enabled", "true")
    if runs_on_this_machine(master):
        # Short-lived JVMs sharing a few cores with their Python workers: the JVM only
        # moves bytes here, and C2 compilation costs more CPU than it saves (measured:
        # a small check-model run took 11-15 s instead of 21-26 s). Those bytes are large
        # arrays (a record is up to 2 MiB), which G1 allocates as humongous regions: the
        # throughput collector spent 13.2 to 13.5 JVM CPU s where G1 spent 18.2 to 19.4 on
        # rf 4's 17 M states, 33.2 s against 36.9 to 37.5 on local[2] (bench/README.md).
        spark_conf.set("spark.driver.extraJavaOptions", QUICK_JVM)
        spark_conf.set("spark.executor.extraJavaOptions", QUICK_JVM)
    if _master_hosts(master) & _LOCAL_HOSTS:
        # Executors on the loopback interface must reach the driver there too.
        spark_conf.set("spark.driver.host", "127.0.0.1")
        spark_conf.set("spark.driver.bindAddress", "127.0.0.1")
    gateway = None
    if SparkContext._gateway is None:
        popen_kwargs = {}
        if not verbose:
            log = open(_open_log(), "ab")  # noqa: SIM115 - the JVM writes to it until we exit
            popen_kwargs = {"stdout": log, "stderr": log}
            atexit.register(_remove_log_unless_kept)
        try:
            gateway = launch_gateway(spark_conf, popen_kwargs)
        except Exception as e:  # the JVM did not come up: say why in one line
            raise ConfigError(f"Spark could not start: {_one_line(e)}{_see_log()}") from None
    previous_sigint = signal.getsignal(signal.SIGINT)
    try:
        sc = SparkContext(conf=spark_conf, gateway=gateway)
    except Exception as e:
        raise ConfigError(f"Spark could not start on {master}: {_one_line(e)}{_see_log()}") from None
    finally:
        # SparkContext takes over Ctrl-C (cancel every job, raise KeyboardInterrupt); give
        # it back to whoever had it, so that check-model stops cleanly with what it found.
        if previous_sigint is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, previous_sigint)
    if runs_on_this_machine(master) and "PYSPARK_PYTHON" not in os.environ:
        # Executors' Python workers must import the packages the driver has. pyspark sends
        # each task the interpreter it read from PYSPARK_PYTHON ("python3" when unset);
        # spark.pyspark.python is read only by spark-submit, which did not start this process.
        sc.pythonExec = sys.executable
    sc.setLogLevel("WARN")
    atexit.register(_stop_quietly, sc)
    return sc


def _stop_quietly(sc: "SparkContext") -> None:
    try:
        sc.stop()
    except Exception:  # noqa: BLE001 - the process is exiting anyway
        pass


def keep_log() -> None:
    """Keep the JVM log after exit: something went wrong and the user was pointed at it."""
    global _keep_log
    _keep_log = True


def _remove_log_unless_kept() -> None:
    if _log_path is not None and not _keep_log:
        _log_path.unlink(missing_ok=True)


def _see_log() -> str:
    if _log_path is None:
        return ""
    keep_log()
    return f" (Spark's log: {_log_path})"


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def failure_words(error: BaseException) -> str:
    """A Spark job failure in one line: the Python error raised on an executor if there was one."""
    text = str(error)
    python_errors = re.findall(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception)\b:?.*)$", text, re.MULTILINE)
    reason = python_errors[-1].strip() if python_errors else _one_line(error)
    if len(reason) > 300:
        reason = reason[:297] + "..."
    return f"Spark job failed: {reason}{_see_log()}"


def package_zip(directory: Path) -> Path:
    """A zip of the isrcheck packages executors import, named by its content.

    Built from wherever the packages are installed (site-packages or an editable
    checkout), so executors import exactly the driver's code.
    """
    entries: list[tuple[str, bytes]] = []
    for name in SHIPPED_PACKAGES:
        folder = Path(importlib.import_module(name).__path__[0])
        prefix = name.replace(".", "/")
        for file in sorted(folder.glob("*.py")):
            entries.append((f"{prefix}/{file.name}", file.read_bytes()))
    digest = hashlib.sha256()
    for arcname, data in entries:
        digest.update(arcname.encode() + b"\0" + data)
    path = directory / f"isrcheck-{digest.hexdigest()[:16]}.zip"
    if not path.exists():
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for arcname, data in entries:
                info = zipfile.ZipInfo(arcname, date_time=(2000, 1, 1, 0, 0, 0))
                zf.writestr(info, data, zipfile.ZIP_DEFLATED)
    return path


def ship_package(sc: "SparkContext") -> None:
    """Add the package zip to the context once (Spark refuses a second, different file of one name).

    The zip stays until the process exits: executors that join later (after a lost
    one) fetch it from the driver then.
    """
    global _zip_dir
    if _zip_dir is None:
        _zip_dir = Path(tempfile.mkdtemp(prefix="isrcheck-spark-py-"))
        atexit.register(shutil.rmtree, _zip_dir, True)
    path = package_zip(_zip_dir)
    key = (sc.applicationId, path.name)
    if key not in _shipped:
        before = list(sys.path)
        sc.addPyFile(str(path))
        # addPyFile also puts the zip first on the driver's own path, where it would hide the
        # installed package from processes spawned later (check-suite's workers: no isrcheck.cli)
        sys.path[:] = before
        _shipped.add(key)


POLL_SECONDS = 0.2  # how often a running level looks at the stop flag and the limits


class Stopped(Exception):
    """A level was cancelled or failed; ``reason`` says why, for the incomplete result.

    ``failed``: Spark gave up on the job (not a stop request or a limit), so a saving
    search can say where to go on from."""

    def __init__(self, reason: str, failed: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.failed = failed


class Watchdog:
    """Runs a level's job while watching the stop flag and the limits from another thread.

    Ctrl-C, a time limit or a memory limit cancels the running job (Spark stops its
    tasks); the search then ends with the levels completed so far, as BFS does.
    """

    def __init__(self, sc, group: str, observer: Observer, limits: Limits) -> None:
        self.sc, self.group, self.observer, self.limits = sc, group, observer, limits
        self.reason = ""
        self._running = threading.Event()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="isrcheck-spark-watchdog", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._closed.wait(POLL_SECONDS):
            if self._running.is_set() and not self.reason:
                reason = self.observer.should_stop() or self.limits.exceeded()
                if reason:
                    self.reason = reason
                    self.sc.cancelJobGroup(self.group)

    def collect(self, rdd: "RDD") -> list:
        return self.run(rdd.collect)

    def run(self, action: Callable[[], Any]) -> Any:
        """``action()``, a Spark action, under watch."""
        self._running.set()
        try:
            return action()
        except Exception as e:  # noqa: BLE001 - cancelled, or a failure Spark gave up retrying
            # A stop request may fail the job (Ctrl-C reaches the Python workers too)
            # before this thread's next look: the request is the reason, not the failure.
            reason = self.reason or self.observer.should_stop() or self.limits.exceeded()
            raise Stopped(reason or failure_words(e), failed=not reason) from None
        finally:
            self._running.clear()
            if self.reason:
                raise Stopped(self.reason)

    def close(self) -> None:
        self._closed.set()
        self._thread.join()
