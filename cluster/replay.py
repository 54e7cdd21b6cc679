"""Replay a model trace on a real cluster: force what can be forced, wait for the rest, compare.

``replay(trace)`` starts a cluster of the trace's release and size, runs the compiled
schedule (``schedule.compile_trace``) step by step, and after each step waits until the
real cluster shows the step's footprint (``observe.footprint``) or a time limit passes. It
reports each step's match or difference, the first step where reality and the model part
(``diverged_at``), and whether the trace's violation or witness happened for real
(``reproduced``), judged from what the clients and the brokers' files show
(``outcome.judge``). A divergence is a finding about the model or about Kafka, not an
error: the replay goes on to the end of the trace.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from isrcheck.traces import Trace
from isrcheck.traces.narrate import describe_step

from . import ClusterError, configs
from .client import Consumer, Producer, create_topic, registered_brokers
from .cluster import TOPIC, Cluster, ClusterSpec
from .epochs import EpochMap
from .observe import footprint, model_snapshot, real_snapshot
from .outcome import Observations, judge
from .processes import wait_until
from .schedule import Planned, compile_trace

_LAG_S, _SESSION_S = configs.LAG_MS / 1000, configs.SESSION_MS / 1000
_EPOCH_GRACE_S = 2.0
_CONTROLLER_WAITS = {"ControllerShrinkIsr", "ControllerFailover", "ControllerElectLeader", "ControllerUncleanElect",
                     "ControllerElectLastLeader"}


@dataclass
class StepReport:
    index: int
    step: str  # the model's words
    kind: str  # forced, awaited, internal, unsupported
    operations: list[str]
    held: list[int]  # brokers paused during the step
    status: str  # match, differs, merged, internal, unsupported
    expected: dict[str, Any] = field(default_factory=dict)  # the step's footprint in the model
    observed: dict[str, Any] = field(default_factory=dict)  # the same fields on the real cluster
    seconds: float = 0.0
    note: str = ""
    model_state: dict[str, Any] = field(default_factory=dict)  # the whole observable state, both sides,
    real_state: dict[str, Any] = field(default_factory=dict)  # after the step (only the footprint decides)


@dataclass
class ReplayReport:
    trace: str
    property: str | None
    expectation: str | None
    kafka_version: str  # the line replayed on
    release: str  # the exact release
    mode: str  # "KRaft" or "ZooKeeper"
    model_kafka_version: str | None  # the release the trace was found for
    steps: list[StepReport]
    diverged_at: int | None
    reproduced: bool | None
    outcome: str
    acknowledged: list[int]
    lost_acknowledged: list[int]
    committed: list[int]
    lost_committed: list[int]
    final_leader: int | None
    final_logs: dict[int, list[tuple[int, int]]]
    setup_seconds: float
    seconds: float
    folder: str
    stopped: str = ""  # "time limit" when the replay ended before the trace did: nothing is judged


def _timeout(planned: Planned) -> float:
    name = planned.action.name
    if name in ("LeaderShrinkIsr", "ControllerAlterPartition"):
        return 3 * _LAG_S + 6
    if name in _CONTROLLER_WAITS:
        return 2 * _SESSION_S + 8
    if name == "BrokerRestart":
        return 90
    return 10


class _Run:
    """One replay's cluster, clients and what they observed."""

    def __init__(self, cluster: Cluster, trace: Trace) -> None:
        self.cluster = cluster
        cfg = trace.config
        self.producer: Producer | None = None
        self.consumer: Consumer | None = None
        self.acks = cfg.acks
        self.idempotent = cfg.idempotence
        self.obs = Observations()
        self.epochs = EpochMap()
        self.quorum = None  # the controller's state at the last look
        self.config = {"min.insync.replicas": str(cfg.min_isr),
                       "unclean.leader.election.enable": "true" if cfg.unclean_election else "false"}

    def producer_(self) -> Producer:
        if self.producer is None:
            self.producer = Producer(self.cluster, self.acks, self.idempotent)
        return self.producer

    def do(self, verb: str, arg: Any) -> Any:
        c = self.cluster
        if verb == "create":
            create_topic(c, TOPIC, list(arg), self.config)
            self.producer_().warm(TOPIC, arg[0])  # its view of the leader is from now on, as a long-lived client's
            running = [b for b in arg if b not in c.paused and b not in c.down]
            wait_until(lambda: all(c.has_replica(b) for b in running), 20)  # every follower has started fetching
        elif verb == "produce":
            self.producer_().send(TOPIC, arg)
        elif verb == "consume":
            if self.consumer is None:
                self.consumer = Consumer(c)
            got = self.consumer.read_at(TOPIC, arg, 8)
            if got is not None:
                self.obs.read.append((arg, got[0]))
            return got
        elif verb == "kill":
            c.kill(arg)
            self.obs.kills += 1
        elif verb == "truncate":
            c.truncate(*arg)
        elif verb == "restart":
            c.restart(arg)
        return None

    def read(self, name: str) -> Any:
        """The real value of a footprint field; the controller's state as ``sample`` last read it."""
        c = self.cluster
        if name in ("leader", "leader epoch", "ISR", "ELR"):
            q = self.quorum
            if q is None:
                return None
            return {"leader": q.leader, "leader epoch": q.leader_epoch, "ISR": sorted(q.isr), "ELR": sorted(q.elr)}[name]
        if name.startswith("log of broker "):
            return c.log(int(name.rsplit(" ", 1)[1]))
        if name.startswith("HWM of broker "):
            return c.hwm(int(name.rsplit(" ", 1)[1]))
        if name.endswith(" acknowledged"):
            if self.producer is None:
                return None
            self.producer.poll()
            res = self.producer.results.get(int(name[1:].split(" ")[0]))
            return True if res == "ok" else res
        if name.endswith(" registered"):
            return int(name.split(" ")[1]) in registered_brokers(c)
        raise KeyError(name)

    def sample(self) -> None:
        """What the outcome is judged from: the controller's leader, its log below its HWM, the acks."""
        c = self.cluster
        q = self.quorum = c.quorum()  # the metadata log decoded once a look, for read() too
        if q is not None:
            self.obs.leaders.append(q.leader)
            if q.leader is not None and q.leader not in c.down:
                log, hw = c.log(q.leader), c.hwm(q.leader)
                self.obs.committed.update((off, rid) for off, (rid, _) in enumerate(log[:hw]))
        if self.producer is not None:
            for rid in self.producer.acknowledged():
                if rid not in self.obs.acked:
                    self.obs.acked[rid] = self.producer.offsets.get(rid)
                    if self.obs.kills:
                        self.obs.acked_after_kill.add(rid)

    def close(self) -> None:
        for client in (self.producer, self.consumer):
            if client is not None:
                try:
                    client.close()
                except Exception:
                    pass


def cluster_spec(trace: Trace, line: str | None = None) -> ClusterSpec:
    """The cluster a trace replays on: its own release (or ``line``), KRaft where the trace's
    model is (and always from 4.0), with eligible leader replicas as the trace has them, or as
    a new cluster of ``line`` has them when it is another release (on from 4.1)."""
    cfg = trace.config
    line = line or cfg.kafka_version
    if line is None:
        raise ClusterError("this trace is of the published specification (--core): it names no Kafka release to replay on")
    line = ".".join(line.split(".")[:2])
    kraft = bool(cfg.kraft) or int(line.split(".")[0]) >= 4
    same = line == cfg.kafka_version
    return ClusterSpec(line, cfg.rf, kraft, elr=bool(cfg.elr) if same else line == "4.1")


def replay(trace: Trace, line: str | None = None, folder: Path | None = None, trace_name: str = "",
           progress: Callable[[StepReport], None] | None = None, deadline: float | None = None) -> ReplayReport:
    """Replay ``trace`` on a real cluster of Kafka ``line`` (default: the trace's own release),
    stopping at ``deadline`` (time.monotonic()) between steps or while a step is awaited: the
    cluster's start is not cut short."""
    spec = cluster_spec(trace, line)
    line = spec.line
    work = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="isrcheck-kafka-"))
    plan = compile_trace(trace)
    t0 = time.monotonic()
    reports: list[StepReport] = []
    with Cluster(spec, work) as cluster:
        setup = time.monotonic() - t0
        run = _Run(cluster, trace)
        try:
            held: set[int] = set()
            for planned in plan:
                if deadline is not None and time.monotonic() >= deadline:
                    break
                rep = _step(run, trace, plan, planned, held, deadline)
                held = set(planned.holds)
                reports.append(rep)
                if progress:
                    progress(rep)
                if rep.status == "stopped":
                    break
            run.sample()
            verdict = judge(trace, cluster, run.obs)
        finally:
            run.close()
    stopped = "time limit" if len(reports) < len(plan) or (reports and reports[-1].status == "stopped") else ""
    if stopped:
        done = sum(1 for r in reports if r.status != "stopped")
        verdict = dataclasses.replace(verdict, reproduced=None, sentence=(
            f"stopped at its time limit after {done} of {len(plan)} steps, so the outcome is not judged"))
    diverged = next((r.index for r in reports if r.status == "differs"), None)
    return ReplayReport(
        trace=trace_name, property=trace.property_name, expectation=trace.expectation, kafka_version=line,
        release=cluster.release, mode="KRaft" if spec.kraft else "ZooKeeper", model_kafka_version=trace.config.kafka_version,
        steps=reports, diverged_at=diverged, reproduced=verdict.reproduced, outcome=verdict.sentence,
        acknowledged=sorted(run.obs.acked), lost_acknowledged=verdict.lost_acked,
        committed=sorted({rid for _, rid in run.obs.committed}), lost_committed=verdict.lost_committed,
        final_leader=verdict.leader, final_logs=verdict.logs, setup_seconds=round(setup, 1),
        seconds=round(time.monotonic() - t0, 1), folder=str(work), stopped=stopped,
    )


def _next_controller_step(trace: Trace, plan: list[Planned], planned: Planned) -> tuple[int, dict[str, Any]] | None:
    """The next step the controller takes, when only steps inside brokers come between: a
    real controller may take it in the same change as this one (ZooKeeper's controller
    fails a leader and elects uncleanly at once)."""
    if planned.action.name not in _CONTROLLER_WAITS:
        return None
    for p in plan[planned.index:]:
        if p.kind == "internal":
            continue
        if p.kind != "awaited" or p.action.name not in _CONTROLLER_WAITS:
            return None
        want = footprint(trace.steps[p.index - 1].state, p.action, trace.steps[p.index].state, bool(trace.config.elr))
        quorum = {n: v for n, v in want.items() if n in ("leader", "leader epoch", "ISR", "ELR")}
        return (p.index, quorum) if quorum else None
    return None


def _step(run: _Run, trace: Trace, plan: list[Planned], planned: Planned, held: set[int],
          deadline: float | None = None) -> StepReport:
    c = run.cluster
    before, after = trace.steps[planned.index - 1].state, trace.steps[planned.index].state
    words = describe_step(before, planned.action, after)
    t = time.monotonic()
    for b in sorted(planned.holds - held):
        c.pause(b)
    if planned.settle:  # the paused broker's last heartbeat must come before the crash that follows
        time.sleep(0.6 * _SESSION_S)
    got = None
    for op in planned.operations:
        got = run.do(op.verb, op.arg)
    for b in sorted(held - planned.holds):
        c.resume(b)
    rep = StepReport(planned.index, words, planned.kind, [str(op) for op in planned.operations],
                     sorted(planned.holds), planned.kind)
    if planned.kind == "unsupported":
        rep.note = planned.why
    elif planned.kind != "internal":
        want = footprint(before, planned.action, after, bool(trace.config.elr))
        if planned.action.name == "ConsumerFetch":
            src = planned.action.args["replica"]
            rec = before.replicas[src].log[before.position]
            want["read"] = (rec.id, rec.epoch)
        seen: dict[str, Any] = {}
        merged = _next_controller_step(trace, plan, planned)
        into: list[int] = []
        rest_since: list[float] = []

        def settled() -> bool:
            run.sample()
            for name in want:
                seen[name] = got if name == "read" else run.read(name)
            if all(run.epochs.agrees(n, want[n], seen[n]) for n in want):
                return True
            if all(run.epochs.agrees(n, want[n], seen[n]) for n in want if n != "leader epoch"):
                rest_since.append(time.monotonic())  # all but the epoch: a real controller that numbers
                return time.monotonic() - rest_since[0] > _EPOCH_GRACE_S  # its changes otherwise, once settled
            if merged is not None and all(run.epochs.agrees(n, v, run.read(n)) for n, v in merged[1].items()
                                          if n != "leader epoch"):
                into.append(merged[0])
                return True
            return False

        wait = _timeout(planned) if deadline is None else min(_timeout(planned), deadline - time.monotonic())
        ok = wait_until(settled, wait, 0.2) if want else True
        rep.expected, rep.observed = want, dict(seen)
        rep.status = "match" if ok else "differs"
        if not ok and wait < _timeout(planned):  # the time limit, not the step, ended the wait
            rep.status, rep.note = "stopped", "the time limit came before the step showed on the cluster"
        model_epoch, real_epoch = want.get("leader epoch"), seen.get("leader epoch")
        if into:
            rep.status = "merged"
            rep.note = (f"the real controller took this step and step {into[0]} in one change: "
                        f"it never showed this step's state on its own")
            run.epochs.skip(model_epoch)
        elif ok and model_epoch is not None and real_epoch is not None and not run.epochs.record(model_epoch, real_epoch):
            rep.status = "differs"
            rep.note = (f"the real controller is at leader epoch {real_epoch} where the model is at {model_epoch}: "
                        f"it made a different number of leader and ISR changes than the model's path")
    rep.model_state = model_snapshot(after, bool(trace.config.elr))
    rep.real_state = real_snapshot(c)
    rep.seconds = round(time.monotonic() - t, 1)
    return rep
