"""ITF JSON (the Informal Trace Format of Apalache and Quint) for isrcheck traces.

Variable names follow the published specification (``replicaLog``,
``replicaState``, ``quorumState``, ``leaderAndIsrRequests``, ``nextRecordId``,
``nextLeaderEpoch``); the Kafka model adds its history variables. ``None`` is
written as the specification's ``"NONE"`` and a missing epoch as ``-1``. Each
state's ``#meta`` holds the action that produced it, name and parameters.
"""

from __future__ import annotations

import json
from pathlib import Path as FilePath
from typing import Any

from isrcheck import MODEL_VERSION, __version__
from isrcheck.model import ModelConfig, PartitionState, QuorumState, Record, ReplicaState, Request
from isrcheck.model.actions import Action
from isrcheck.model.config import ConfigError

from .trace import Step, Trace, TraceError

FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
CORE_VARS = [
    "replicaLog",
    "replicaState",
    "quorumState",
    "leaderAndIsrRequests",
    "nextRecordId",
    "nextLeaderEpoch",
]
KAFKA_VARS = ["crashes", "diskLosses", "acked", "committed", "readable"]
NONE = "NONE"


def _opt(v: int | None, none: Any) -> Any:
    return none if v is None else v


def _set(items) -> dict:
    return {"#set": sorted(items)}


def _state_to_itf(ps: PartitionState, kafka: bool) -> dict[str, Any]:
    def replica_state(rs: ReplicaState) -> dict[str, Any]:
        d = {
            "hw": rs.hw,
            "leaderEpoch": _opt(rs.leader_epoch, -1),
            "leader": _opt(rs.leader, NONE),
            "isr": _set(rs.isr),
        }
        if kafka:
            d["alive"] = rs.alive
            d["crashMark"] = _opt(rs.crash_mark, -1)
            d["leaderSince"] = _opt(rs.leader_since, -1)
        return d

    def quorum(q: QuorumState | Request) -> dict[str, Any]:
        return {"leaderEpoch": _opt(q.leader_epoch, -1), "leader": _opt(q.leader, NONE), "isr": _set(q.isr)}

    out = {
        "replicaLog": {"#map": [[r, [{"id": x.id, "epoch": x.epoch} for x in rs.log]] for r, rs in enumerate(ps.replicas)]},
        "replicaState": {"#map": [[r, replica_state(rs)] for r, rs in enumerate(ps.replicas)]},
        "quorumState": quorum(ps.quorum),
        "leaderAndIsrRequests": {"#set": [quorum(q) for q in ps.requests]},
        "nextRecordId": ps.next_record_id,
        "nextLeaderEpoch": ps.next_leader_epoch,
    }
    if kafka:
        out.update(
            crashes=ps.crashes,
            diskLosses=ps.disk_losses,
            acked=_set(ps.acked),
            committed=_set(ps.committed),
            readable=_set(ps.readable),
        )
    return out


def to_itf(trace: Trace) -> dict[str, Any]:
    kafka = not trace.config.core
    states = []
    for i, step in enumerate(trace.steps):
        meta: dict[str, Any] = {"index": i}
        if step.action is not None:
            meta["action"] = {"name": step.action.name, "params": step.action.args}
        states.append({"#meta": meta, **_state_to_itf(step.state, kafka)})
    return {
        "#meta": {
            "format": "ITF",
            "format-description": FORMAT_DESCRIPTION,
            "source": "isrcheck",
            "isrcheck": {
                "version": __version__,
                "model_version": trace.model_version,
                "config": trace.config.as_dict(),
                "property": trace.property_name,
                "expectation": trace.expectation,
                "doc": trace.doc,
            },
        },
        "vars": CORE_VARS + (KAFKA_VARS if kafka else []),
        "states": states,
    }


def save(trace: Trace, path: str | FilePath) -> FilePath:
    path = FilePath(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(to_itf(trace), indent=1) + "\n")
    tmp.replace(path)
    return path


# ---- reading --------------------------------------------------------------------


def load(path: str | FilePath) -> Trace:
    """Read an ITF trace written by isrcheck; raise TraceError with one line on any defect."""
    path = FilePath(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise TraceError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise TraceError(f"{path} is not a text file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise TraceError(f"{path} is not JSON (line {e.lineno}: {e.msg})") from None
    try:
        return from_itf(data)
    except TraceError as e:
        raise TraceError(f"{path}: {e}") from None


def from_itf(data: Any) -> Trace:
    try:
        meta = data["#meta"]["isrcheck"]
        states = data["states"]
    except (KeyError, TypeError):
        raise TraceError("not an isrcheck ITF trace (no #meta.isrcheck or states)") from None
    version = str(meta.get("model_version"))
    if version != MODEL_VERSION:
        raise TraceError(f"trace was written by model version {version}, this isrcheck reads version {MODEL_VERSION}")
    try:
        config = ModelConfig.from_dict(meta["config"]).validate()
    except (ConfigError, KeyError, TypeError) as e:
        raise TraceError(f"bad configuration in trace: {e}") from None
    if not isinstance(states, list) or not states:
        raise TraceError("the trace has no states")
    steps = []
    for i, st in enumerate(states):
        try:
            action = _action(st["#meta"].get("action")) if i else None
            steps.append(Step(action, _state_from_itf(st, config)))
        except TraceError as e:
            raise TraceError(f"state {i}: {e}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise TraceError(f"state {i} is malformed ({type(e).__name__}: {e})") from None
    return Trace(
        config,
        tuple(steps),
        meta.get("property"),
        meta.get("expectation"),
        str(meta.get("doc") or ""),
        version,
    )


def _action(a: Any) -> Action:
    if not isinstance(a, dict) or not isinstance(a.get("name"), str) or not isinstance(a.get("params"), dict):
        raise TraceError("missing or malformed action in #meta")
    params = a["params"]
    if not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in params.items()):
        raise TraceError("action parameters must be integers")
    return Action(a["name"], tuple(params.items()))


def _int(v: Any) -> int:
    if isinstance(v, dict) and "#bigint" in v:
        v = int(v["#bigint"])
    if not isinstance(v, int) or isinstance(v, bool):
        raise TraceError(f"expected an integer, found {v!r}")
    return v


def _opt_int(v: Any, none: Any) -> int | None:
    return None if v == none else _int(v)


def _ints(v: Any) -> frozenset[int]:
    if not isinstance(v, dict) or not isinstance(v.get("#set"), list):
        raise TraceError(f"expected a set, found {v!r}")
    return frozenset(_int(x) for x in v["#set"])


def _map(v: Any) -> dict[int, Any]:
    if not isinstance(v, dict) or not isinstance(v.get("#map"), list):
        raise TraceError(f"expected a map, found {v!r}")
    return {_int(k): val for k, val in v["#map"]}


def _state_from_itf(st: dict[str, Any], config: ModelConfig) -> PartitionState:
    logs = _map(st["replicaLog"])
    rstates = _map(st["replicaState"])
    if sorted(logs) != list(range(config.rf)) or sorted(rstates) != list(range(config.rf)):
        raise TraceError(f"expected replicas 0 to {config.rf - 1}")
    replicas = []
    for r in range(config.rf):
        rs = rstates[r]
        alive = rs.get("alive", True)
        if not isinstance(alive, bool):
            raise TraceError("alive must be true or false")
        replicas.append(
            ReplicaState(
                log=tuple(Record(_int(x["id"]), _int(x["epoch"])) for x in logs[r]),
                hw=_int(rs["hw"]),
                leader_epoch=_opt_int(rs["leaderEpoch"], -1),
                leader=_opt_int(rs["leader"], NONE),
                isr=_ints(rs["isr"]),
                alive=alive,
                crash_mark=_opt_int(rs.get("crashMark", -1), -1),
                leader_since=_opt_int(rs.get("leaderSince", -1), -1),
            )
        )
    q = st["quorumState"]
    quorum = QuorumState(_opt_int(q["leaderEpoch"], -1), _opt_int(q["leader"], NONE), _ints(q["isr"]))
    reqs = st["leaderAndIsrRequests"]
    if not isinstance(reqs, dict) or not isinstance(reqs.get("#set"), list):
        raise TraceError("leaderAndIsrRequests must be a set")
    requests = sorted(
        (Request(_int(x["leaderEpoch"]), _opt_int(x["leader"], NONE), _ints(x["isr"])) for x in reqs["#set"]),
        key=lambda r: r.leader_epoch,
    )
    kafka = not config.core
    return PartitionState(
        replicas=tuple(replicas),
        quorum=quorum,
        requests=tuple(requests),
        next_record_id=_int(st["nextRecordId"]),
        next_leader_epoch=_int(st["nextLeaderEpoch"]),
        crashes=_int(st["crashes"]) if kafka else 0,
        disk_losses=_int(st["diskLosses"]) if kafka else 0,
        acked=_ints(st["acked"]) if kafka else frozenset(),
        committed=_ints(st["committed"]) if kafka else frozenset(),
        readable=_ints(st["readable"]) if kafka else frozenset(),
    )
