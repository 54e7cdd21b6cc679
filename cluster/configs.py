"""The configuration files of a real cluster on 127.0.0.1: short timeouts, so that a step takes seconds.

What the harness relies on, each set here once:
- a follower that stops fetching leaves the ISR after ``replica.lag.time.max.ms`` (3 s);
- a broker that stops heartbeating (killed or paused) is declared failed after its session
  timeout (6 s; ZooKeeper's ``zookeeper.session.timeout.ms``, KRaft's ``broker.session.timeout.ms``);
- the controller is a process of its own, which the harness never pauses or kills, as the
  model's controller never fails: KRaft's controller node, and in ZooKeeper mode a broker
  (node id 100) that holds no replica and is started first, so that it wins the election;
- nothing moves leadership on its own: ``auto.leader.rebalance.enable=false``;
- the high watermark checkpoint is written every 200 ms, so each broker's HWM can be read
  from its log folder;
- KRaft checks for leaderless partitions to elect uncleanly every 500 ms
  (``unclean.leader.election.interval.ms``, 5 minutes by default).
"""

from __future__ import annotations

from pathlib import Path

LAG_MS = 3000
SESSION_MS = 6000
HEARTBEAT_MS = 500
CONTROLLER_ID = 100  # the model's brokers are node ids 0 .. rf-1

_COMMON = {
    "replica.lag.time.max.ms": LAG_MS,
    "replica.high.watermark.checkpoint.interval.ms": 200,
    "auto.leader.rebalance.enable": "false",
    "auto.create.topics.enable": "false",
    "offsets.topic.replication.factor": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "group.initial.rebalance.delay.ms": 0,
    "num.partitions": 1,
    "log.retention.check.interval.ms": 3_600_000,
}


def _write(path: Path, props: dict[str, object]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def kraft_controller(folder: Path, port: int) -> Path:
    return _write(folder / "controller.properties", {
        "process.roles": "controller",
        "node.id": CONTROLLER_ID,
        "controller.quorum.voters": f"{CONTROLLER_ID}@127.0.0.1:{port}",
        "listeners": f"CONTROLLER://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "log.dirs": folder / "controller",
        "broker.session.timeout.ms": SESSION_MS,
        "broker.heartbeat.interval.ms": HEARTBEAT_MS,
        "unclean.leader.election.interval.ms": 500,
        **_COMMON,
    })


def kraft_broker(folder: Path, broker: int, port: int, controller_port: int) -> Path:
    return _write(folder / f"broker-{broker}.properties", {
        "process.roles": "broker",
        "node.id": broker,
        "controller.quorum.voters": f"{CONTROLLER_ID}@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": folder / f"broker-{broker}",
        "broker.session.timeout.ms": SESSION_MS,
        "broker.heartbeat.interval.ms": HEARTBEAT_MS,
        **_COMMON,
    })


def zookeeper(folder: Path, port: int) -> Path:
    return _write(folder / "zookeeper.properties", {
        "dataDir": folder / "zookeeper",
        "clientPort": port,
        "clientPortAddress": "127.0.0.1",
        "tickTime": 500,  # sessions of 1 to 10 s
        "maxClientCnxns": 0,
        "admin.enableServer": "false",  # else Jetty takes port 8080
    })


def zk_broker(folder: Path, broker: int, port: int, zk_port: int) -> Path:
    return _write(folder / f"broker-{broker}.properties", {
        "broker.id": broker,
        "zookeeper.connect": f"127.0.0.1:{zk_port}",
        "zookeeper.session.timeout.ms": SESSION_MS,
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "log.dirs": folder / f"broker-{broker}",
        **_COMMON,
    })


def logging_files(folder: Path) -> list[str]:
    """JVM options that send each process's log to its stdout (captured in its own file)."""
    log4j1 = folder / "log4j.properties"
    log4j1.write_text(
        "log4j.rootLogger=INFO, stdout\n"
        "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
        "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
    )
    log4j2 = folder / "log4j2.properties"
    log4j2.write_text(
        "rootLogger.level=INFO\nrootLogger.appenderRef.stdout.ref=STDOUT\n"
        "appender.stdout.type=Console\nappender.stdout.name=STDOUT\n"
        "appender.stdout.layout.type=PatternLayout\nappender.stdout.layout.pattern=[%d] %p %m (%c)%n\n"
    )
    return [f"-Dlog4j.configuration=file:{log4j1}", f"-Dlog4j2.configurationFile=file:{log4j2}"]
