"""A real Kafka cluster of ``rf`` brokers on 127.0.0.1, driven and read from outside.

Broker ``b`` of the model is node id ``b``. KRaft releases run one dedicated controller
(node id 100), so that killing a broker never touches the controller quorum, as in the
model, whose controller never fails; ZooKeeper-mode releases run one ZooKeeper server from
ZooKeeper's own jar. Ports are chosen free on 127.0.0.1, and every folder lives under one
work folder of this run.

What the harness reads, and from where:
- the controller's partition state (leader, leader epoch, ISR, ELR, last known ELR): the
  KRaft metadata log on the controller's disk (``metadata.partition_history``), or the
  partition's state znode in ZooKeeper;
- each replica's log, record by record with its leader epoch: the segment files in the
  broker's log folder (``records.read_partition_log``), readable whether the broker runs,
  is paused or has been killed;
- each replica's high watermark: its checkpoint file (written every 200 ms).
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path

from . import ClusterError, configs, jars
from .client import record_id, registered_brokers
from .processes import ProcessSet, wait_until

TOPIC = "isrcheck"
_JVM = ["-Xms64m", "-Xmx320m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    line: str  # the Kafka line, "4.1"
    rf: int
    kraft: bool
    elr: bool = False  # eligible.leader.replicas.version=1 at format (KRaft 4.0 and later)


@dataclass(frozen=True, slots=True)
class Quorum:
    """The controller's view of the partition."""

    leader: int | None
    leader_epoch: int
    isr: frozenset[int]
    elr: frozenset[int] = frozenset()
    last_known_elr: frozenset[int] = frozenset()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """Started by ``start``; every process ended by ``close`` (a context manager)."""

    def __init__(self, spec: ClusterSpec, folder: Path) -> None:
        self.spec = spec
        self.folder = Path(folder)
        self.release = jars.release_for(spec.line)
        self.procs = ProcessSet()
        self.ports = {b: _free_port() for b in range(spec.rf)}
        self.quorum_port = _free_port()
        self.paused: set[int] = set()
        self.down: set[int] = set()
        self._zk = None

    # --- life cycle -------------------------------------------------------------------
    def __enter__(self) -> "Cluster":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _java(self, main: str, *args: str) -> list[str]:
        java = shutil.which("java")
        if java is None:
            raise ClusterError("java is missing: a real Kafka cluster needs a Java 17 runtime")
        libs = jars.libs(self.spec.line)
        return [java, *_JVM, *self._logging, "-cp", f"{libs}/*", main, *args]

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._logging = configs.logging_files(self.folder)
        jars.libs(self.spec.line)
        self.broker_configs = {}
        if self.spec.kraft:
            ctl = configs.kraft_controller(self.folder, self.quorum_port)
            for b in range(self.spec.rf):
                self.broker_configs[b] = configs.kraft_broker(self.folder, b, self.ports[b], self.quorum_port)
            self._format([ctl, *self.broker_configs.values()])
            self.procs.start("controller", self._java("kafka.Kafka", str(ctl)), self.folder / "controller.log")
        else:
            zk = configs.zookeeper(self.folder, self.quorum_port)
            self.procs.start("zookeeper", self._java("org.apache.zookeeper.server.quorum.QuorumPeerMain", str(zk)),
                             self.folder / "zookeeper.log")
            ctl = configs.zk_broker(self.folder, configs.CONTROLLER_ID, _free_port(), self.quorum_port)
            self.procs.start("controller", self._java("kafka.Kafka", str(ctl)), self.folder / "controller.log")
            if not wait_until(lambda: self._zk_controller() == configs.CONTROLLER_ID, 90, 0.3):
                self._check_alive()
                raise ClusterError(f"Kafka {self.release}: the controller broker did not win the election "
                                   f"(logs in {self.folder})")
            for b in range(self.spec.rf):
                self.broker_configs[b] = configs.zk_broker(self.folder, b, self.ports[b], self.quorum_port)
        for b in range(self.spec.rf):
            self._start_broker(b)
        self._await_brokers(set(range(self.spec.rf)), 90)

    def _format(self, files: list[Path]) -> None:
        cluster_id = "isrcheck" + uuid.uuid4().hex[:14]  # 22 characters, as Kafka's base64 ids
        feature = []
        if int(self.spec.line.split(".")[0]) >= 4:
            feature = ["--feature", f"eligible.leader.replicas.version={1 if self.spec.elr else 0}"]
        procs = ProcessSet()
        try:
            for i, f in enumerate(files):
                procs.start(f"format-{i}", self._java("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(f),
                                                     *feature), self.folder / f"format-{i}.log")
            for name, proc in list(procs.running.items()):
                if proc.wait(timeout=120) != 0:
                    said = procs.logs[name].read_text(errors="replace").strip().splitlines()[-1:]
                    raise ClusterError(f"kafka-storage format failed for Kafka {self.release}: {' '.join(said)[:300]}")
        finally:
            procs.close()

    def _start_broker(self, b: int) -> None:
        self.procs.start(f"broker-{b}", self._java("kafka.Kafka", str(self.broker_configs[b])),
                         self.folder / f"broker-{b}.log")
        self.down.discard(b)
        self.paused.discard(b)

    def _await_brokers(self, brokers: set[int], timeout: float) -> None:
        def up() -> bool:
            self._check_alive()
            return brokers <= registered_brokers(self)

        if not wait_until(up, timeout, 0.3):
            raise ClusterError(f"Kafka {self.release}: brokers {sorted(brokers)} did not register within {timeout:.0f} s"
                               f" (logs in {self.folder})")

    def _check_alive(self) -> None:
        for name, proc in self.procs.running.items():
            if proc.poll() is not None and not name.startswith("format"):
                tail = self.procs.logs[name].read_text(errors="replace").strip().splitlines()[-3:]
                raise ClusterError(f"Kafka {self.release}: {name} exited with code {proc.returncode}: "
                                   f"{' | '.join(tail)[:400]}")

    def close(self) -> None:
        if self._zk is not None:
            try:
                self._zk.stop()
                self._zk.close()
            except Exception:
                pass
            self._zk = None
        self.procs.close()

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.ports[b]}" for b in range(self.spec.rf))

    def pids(self) -> list[int]:
        return self.procs.pids()

    # --- what an operator (or a fault) does -------------------------------------------
    def kill(self, b: int) -> None:
        """``kill -9``: the process is gone; its files, page cache included, stay."""
        self.procs.stop(f"broker-{b}")
        self.down.add(b)
        self.paused.discard(b)

    def truncate(self, b: int, records: int) -> None:
        """Broker b (down) keeps only its first ``records`` records on disk, as when what was
        not on the disk is lost; with none kept, its checkpoints go too (a disk lost whole,
        replaced under a broker that keeps its identity: ``meta.properties`` stays)."""
        from .records import truncate_partition_log

        root = self.folder / f"broker-{b}"
        if records == 0:
            shutil.rmtree(root / f"{TOPIC}-0", ignore_errors=True)
            for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                         "log-start-offset-checkpoint", "cleaner-offset-checkpoint"):
                (root / name).unlink(missing_ok=True)
        elif (root / f"{TOPIC}-0").is_dir():
            truncate_partition_log(root / f"{TOPIC}-0", records)

    def restart(self, b: int) -> None:
        self._start_broker(b)

    def pause(self, b: int) -> None:
        """SIGSTOP: the broker neither fetches nor heartbeats until resumed."""
        if b not in self.down and b not in self.paused:
            self.procs.signal(f"broker-{b}", signal.SIGSTOP)
            self.paused.add(b)

    def resume(self, b: int) -> None:
        if b in self.paused:
            self.procs.signal(f"broker-{b}", signal.SIGCONT)
            self.paused.discard(b)

    # --- what the harness reads -------------------------------------------------------
    def quorum(self) -> Quorum | None:
        if self.spec.kraft:
            from .metadata import partition_history

            history = partition_history(self.folder / "controller" / "__cluster_metadata-0", TOPIC, 0)
            if not history:
                return None
            st = history[-1]
            return Quorum(st.leader, st.leader_epoch, frozenset(st.isr), frozenset(st.elr), frozenset(st.last_known_elr))
        return self._zk_quorum()

    def _znode(self, path: str) -> dict | None:
        from kazoo.client import KazooClient
        from kazoo.exceptions import NoNodeError
        from kazoo.handlers.threading import KazooTimeoutError

        if self._zk is None:
            import logging

            quiet = logging.getLogger("kazoo")  # it reports every refused connect while ZooKeeper starts
            quiet.addHandler(logging.NullHandler())
            quiet.propagate = False
            zk = KazooClient(hosts=f"127.0.0.1:{self.quorum_port}", timeout=10)
            try:
                zk.start(timeout=15)
            except KazooTimeoutError:
                zk.close()
                return None
            self._zk = zk
        try:
            data, _ = self._zk.get(path)
        except NoNodeError:
            return None
        return json.loads(data)

    def _zk_controller(self) -> int | None:
        self._check_alive()
        st = self._znode("/controller")
        return st.get("brokerid") if st else None

    def _zk_quorum(self) -> Quorum | None:
        st = self._znode(f"/brokers/topics/{TOPIC}/partitions/0/state")
        if st is None:
            return None
        leader = st["leader"] if st["leader"] >= 0 else None
        return Quorum(leader, st["leader_epoch"], frozenset(st["isr"]))

    def has_replica(self, b: int) -> bool:
        """Broker b has created its replica of the partition (its folder exists)."""
        return (self.folder / f"broker-{b}" / f"{TOPIC}-0").is_dir()

    def log(self, b: int) -> list[tuple[int, int]]:
        """Broker b's log as (record id, leader epoch), offset by offset, from its segment files."""
        from .records import read_partition_log

        folder = self.folder / f"broker-{b}" / f"{TOPIC}-0"
        if not folder.is_dir():
            return []
        out = []
        for batch in read_partition_log(folder):
            if batch.is_control:
                continue
            for rec in batch.records:
                out.append((record_id(rec.value), batch.partition_leader_epoch))
        return out

    def hwm(self, b: int) -> int:
        """Broker b's high watermark as last checkpointed (every 200 ms)."""
        from .records import read_checkpoint

        return read_checkpoint(self.folder / f"broker-{b}" / "replication-offset-checkpoint").get((TOPIC, 0), 0)

