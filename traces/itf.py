"""ITF JSON (the Informal Trace Format of Apalache and Quint) for isrcheck traces.

The variables come from the state schema (``model/fields.py``): each field has its
place in ITF (``Field.itf``: a variable, or a key of a per-replica record or of the
quorum's record) and each kind its JSON form. Names follow the published
specification (``replicaLog``, ``replicaState``, ``quorumState``,
``leaderAndIsrRequests``, ``nextRecordId``, ``nextLeaderEpoch``); the Kafka model adds
its fields. What the specification stores and the model derives is written too, and
checked on reading: a broker's ``alive`` (no crash mark), the quorum's leader and epoch
(the newest request's), ``nextLeaderEpoch`` (how many requests were sent). Each state's
``#meta`` holds the action that produced it, name and parameters.

Every value has one type, in every state. An optional value (a broker's leader and
epoch, its crash mark and purgatory epoch, a request's leader, the quorum's leader and
epoch) is a set of at most one member, TLA+'s idiom: ``{"#set": []}`` for none,
``{"#set": [2]}`` for 2. ADR-015 has no optional type; Apalache's and Quint's ``Option``
is a variant (``{"tag": "None", "value": {"#tup": []}}``), which ``itf_py`` 0.5.0, the
ITF library for Python, cannot decode (a namedtuple class named ``None``, a Python
keyword), while every ITF reader decodes a set (docs/traces.md). Trace format 1 wrote
none as ``"NONE"`` (a broker: an int or a string) or ``-1`` (a number: a sentinel).
``#meta.isrcheck.trace_format`` guards the encoding: a file of another format is
refused in one line, not misread. ``MODEL_VERSION`` guards the model's meaning, which
checkpoints share: it did not change.

Reading is bounded (``isrcheck.files``: size, nesting, digits) and checks every value's
type before use; the configuration is validated, exact types included, and refused
when its tables would be too big to build, before any model is built from it. No
schema beyond that: ``view_data.load_checked`` accepts a trace only if its JSON is
what ``to_itf`` writes for its replay (whitespace and the order of a set's members
aside), which refuses every edit a schema would, and those no schema can see. The
codec is our own, not ``itf_py``'s: this one checks each value's type as it reads
(``itf_py`` decodes any JSON it is given), and isrcheck needs no library to run;
the tests read every trace they write with ``itf_py`` too (``tests/test_itf_reader.py``).
"""

from __future__ import annotations

import json
from pathlib import Path as FilePath
from typing import Any, get_args, get_type_hints

import psutil

from isrcheck import MODEL_VERSION
from isrcheck.files import FileProblem, parse_json, read_bounded
from isrcheck.model import ModelConfig, Record, Request
from isrcheck.model.actions import Action
from isrcheck.model.config import ConfigError
from isrcheck.model.kafka import KAFKA
from isrcheck.model.layout import layout_bytes
from isrcheck.model.machine import gigabytes
from isrcheck.model.schema import Brokers, Count, Field, Ids, LogKind, Maybe, RequestsKind, Schema, Tally

from .trace import Step, Trace, TraceError

FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
# the encoding of values, in #meta.isrcheck.trace_format: 2, an optional value is a set of at
# most one member; 1 (no trace_format), none was "NONE" for a broker and -1 for a number
TRACE_FORMAT = 2
# the published specification's variables first, in its order; then the model's others
ORDER = ["replicaLog", "replicaState", "quorumState", "leaderAndIsrRequests", "nextRecordId", "nextLeaderEpoch"]


# ---- values by kind ------------------------------------------------------------------------------
def _to_json(f: Field, value: Any) -> Any:
    k = f.kind
    if isinstance(k, LogKind):
        return [{"id": x.id, "epoch": x.epoch} for x in value]
    if isinstance(k, RequestsKind):
        return {"#set": [_request_json(q) for q in value]}
    if isinstance(k, (Brokers, Ids)):
        return {"#set": sorted(value)}
    if isinstance(k, Maybe):  # a broker too
        return _opt_json(value)
    if isinstance(k, Tally):
        return {"#map": [[rid, n] for rid, n in value]}
    return value


def _opt_json(value: int | None) -> dict[str, list[int]]:
    """An optional value: a set of at most one member (none: the empty set)."""
    return {"#set": [] if value is None else [value]}


def _request_json(q: Any) -> dict[str, Any]:
    return {"leaderEpoch": q.leader_epoch, "leader": _opt_json(q.leader), "isr": {"#set": sorted(q.isr)}}


def _from_json(f: Field, v: Any) -> Any:
    k = f.kind
    if isinstance(k, LogKind):
        if not isinstance(v, list):
            raise TraceError(f"{f.itf} must be a list of records")
        return tuple(Record(_int(x["id"]), _int(x["epoch"])) for x in v)
    if isinstance(k, RequestsKind):
        if not isinstance(v, dict) or not isinstance(v.get("#set"), list):
            raise TraceError(f"{f.itf} must be a set")
        reqs = [Request(_int(x["leaderEpoch"]), _opt_int(x["leader"]), _ints(x["isr"])) for x in v["#set"]]
        return tuple(sorted(reqs, key=lambda r: r.leader_epoch))
    if isinstance(k, (Brokers, Ids)):
        return _ints(v)
    if isinstance(k, Maybe):  # a broker too
        return _opt_int(v)
    if isinstance(k, Count):
        return _int(v)
    if isinstance(k, Tally):
        if not isinstance(v, dict) or not isinstance(v.get("#map"), list):
            raise TraceError(f"{f.itf} must be a map")
        if not all(isinstance(p, list) and len(p) == 2 for p in v["#map"]):
            raise TraceError(f"{f.itf} must map record ids to counts")
        pairs = tuple(sorted((_int(p[0]), _int(p[1])) for p in v["#map"]))
        if len({k for k, _ in pairs}) != len(pairs):
            raise TraceError(f"{f.itf} maps a record id twice")
        return pairs
    raise TraceError(f"no ITF form for {f.name}")


def _int(v: Any) -> int:
    if type(v) is not int:
        raise TraceError(f"expected an integer, found {_shown(v)}")
    return v


def _shown(v: Any) -> str:
    """A value from the file, cut short: an error line quotes it, never the whole of it."""
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _opt_int(v: Any) -> int | None:
    """An optional value: a set of no member (none) or of one, a number not below 0."""
    if not isinstance(v, dict) or not isinstance(v.get("#set"), list) or len(v["#set"]) > 1:
        raise TraceError(f"expected an optional value (a set of at most one integer), found {_shown(v)}")
    if not v["#set"]:
        return None
    value = _int(v["#set"][0])
    if value < 0:
        raise TraceError(f"an optional value holds {value}, below 0")
    return value


def _ints(v: Any) -> frozenset[int]:
    if not isinstance(v, dict) or not isinstance(v.get("#set"), list):
        raise TraceError(f"expected a set, found {_shown(v)}")
    return frozenset(_int(x) for x in v["#set"])


def _map(v: Any) -> dict[int, Any]:
    if not isinstance(v, dict) or not isinstance(v.get("#map"), list):
        raise TraceError(f"expected a map, found {_shown(v)}")
    return {_int(k): val for k, val in v["#map"]}


# ---- states ----------------------------------------------------------------------------------------
def _written(config: ModelConfig) -> list[Field]:
    return [f for f in KAFKA.fields if f.in_itf(config)]


def _state_to_itf(ps: Any, config: ModelConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    records: dict[str, list[dict[str, Any]]] = {}  # per-replica record vars
    for f in _written(config):
        var, _, key = f.itf.partition(".")
        if f.replica:
            values = [getattr(rs, f.name) for rs in ps.replicas]
            if key:
                rows = records.setdefault(var, [{} for _ in ps.replicas])
                for row, rs, value in zip(rows, ps.replicas, values):
                    if f.name == "crash_mark":
                        row["alive"] = rs.alive  # the specification's flag, derived from the crash mark
                    row[key] = _to_json(f, value)
                out.setdefault(var, None)
            else:
                out[var] = {"#map": [[r, _to_json(f, v)] for r, v in enumerate(values)]}
        elif key:
            rec = out.setdefault(var, {})
            if var == "quorumState":  # the quorum's leader and epoch are the newest request's
                rec["leaderEpoch"], rec["leader"] = _opt_json(ps.quorum.leader_epoch), _opt_json(ps.quorum.leader)
            rec[key] = _to_json(f, getattr(ps, f.name))
        else:
            out[var] = _to_json(f, getattr(ps, f.name))
            if isinstance(f.kind, RequestsKind):
                out["nextLeaderEpoch"] = ps.next_leader_epoch
    for var, rows in records.items():
        out[var] = {"#map": [[r, row] for r, row in enumerate(rows)]}
    return {v: out[v] for v in _order(out)}


def _order(names: Any) -> list[str]:
    return [v for v in ORDER if v in names] + [v for v in names if v not in ORDER]


def _state_from_itf(st: dict[str, Any], config: ModelConfig) -> Any:
    cls_replica, cls_state = KAFKA.classes
    rf = config.rf
    per_replica: list[dict[str, Any]] = [{} for _ in range(rf)]
    shared: dict[str, Any] = {}
    maps: dict[str, dict[int, Any]] = {}
    for f in _written(config):
        var, _, key = f.itf.partition(".")
        if f.replica:
            if var not in maps:
                maps[var] = _map(st[var])
                if sorted(maps[var]) != list(range(rf)):
                    raise TraceError(f"expected replicas 0 to {rf - 1}")
            for r in range(rf):
                raw = maps[var][r][key] if key else maps[var][r]
                per_replica[r][f.name] = _from_json(f, raw)
        else:
            shared[f.name] = _from_json(f, st[var][key] if key else st[var])
    ps = cls_state(replicas=tuple(cls_replica(**fields) for fields in per_replica), **shared)
    _check_derived(st, ps, config, maps)
    return ps


def _check_derived(st: dict[str, Any], ps: Any, config: ModelConfig, maps: dict[str, dict[int, Any]]) -> None:
    """What the specification stores and the model derives must agree with the fields."""
    q = st.get("quorumState")
    if isinstance(q, dict):
        if _opt_int(q.get("leaderEpoch")) != ps.quorum.leader_epoch or _opt_int(q.get("leader")) != ps.quorum.leader:
            raise TraceError("quorumState's leader and epoch are not those of the newest request")
    if "nextLeaderEpoch" in st and _int(st["nextLeaderEpoch"]) != ps.next_leader_epoch:
        raise TraceError("nextLeaderEpoch is not the number of requests sent")
    for r, row in maps.get("replicaState", {}).items():
        alive = row.get("alive", True) if isinstance(row, dict) else True
        if not isinstance(alive, bool):
            raise TraceError("alive must be true or false")
        if alive != ps.replicas[r].alive:
            raise TraceError(f"replica {r}: alive and crashMark disagree")


# ---- traces --------------------------------------------------------------------------------------------
def to_itf(trace: Trace) -> dict[str, Any]:
    states = []
    for i, step in enumerate(trace.steps):
        meta: dict[str, Any] = {"index": i}
        if step.action is not None:
            meta["action"] = {"name": step.action.name, "params": step.action.args}
        states.append({"#meta": meta, **_state_to_itf(step.state, trace.config)})
    loop = {} if trace.loop is None else {"loop": trace.loop}  # ITF's own: the index the run goes back to
    closing = {} if trace.loop_action is None else {
        "loop_action": {"name": trace.loop_action.name, "params": trace.loop_action.args}}
    return {
        "#meta": {
            "format": "ITF",
            "format-description": FORMAT_DESCRIPTION,
            "source": "isrcheck",
            "isrcheck": {
                "version": trace.written_by,
                "model_version": trace.model_version,
                "trace_format": TRACE_FORMAT,
                "config": trace.config.as_dict(),
                "property": trace.property_name,
                "expectation": trace.expectation,
                "doc": trace.doc,
                **closing,
            },
        },
        "vars": [v for v in states[0] if v != "#meta"] if states else [],
        "states": states,
        **loop,
    }


def save(trace: Trace, path: str | FilePath) -> FilePath:
    """Write the trace atomically into a regular file (a link is followed, a device refused);
    OSError or files.FileProblem propagates for the caller to report."""
    from isrcheck.files import atomic_write  # here: the rest of this module reads, only save writes

    return atomic_write(path, json.dumps(to_itf(trace), indent=1) + "\n")


def read(path: str | FilePath) -> Any:
    """A trace file's JSON, read with its size and nesting bounded; TraceError (one line) otherwise."""
    try:
        raw = read_bounded(path, "trace")
    except FileProblem as e:
        raise TraceError(str(e)) from None
    try:
        return parse_json(raw.decode("utf-8"), str(path))
    except UnicodeDecodeError:
        raise TraceError(f"{path} is not a text file") from None
    except FileProblem as e:
        raise TraceError(str(e)) from None


def load(path: str | FilePath) -> Trace:
    """Read an ITF trace written by isrcheck; raise TraceError with one line on any defect."""
    data = read(path)
    try:
        return from_itf(data)
    except TraceError as e:
        raise TraceError(f"{path}: {e}") from None


def from_itf(data: Any) -> Trace:
    """The trace in ``data``, every value's type checked; replaying it is ``check_trace``'s work."""
    meta, states = _parts(data)
    config = _config(meta.get("config"))
    if not states:
        raise TraceError("the trace has no states")
    steps = []
    for i, st in enumerate(states):
        try:
            if not isinstance(st, dict) or not isinstance(st.get("#meta"), dict):
                raise TraceError("is not an object with a #meta")
            action = _action(st["#meta"].get("action")) if i else None
            steps.append(Step(action, _state_from_itf(st, config)))
        except TraceError as e:
            raise TraceError(f"state {i}: {e}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise TraceError(f"state {i} is malformed ({type(e).__name__}: {e})") from None
    loop = data.get("loop")
    if loop is not None and type(loop) is not int:
        raise TraceError(f"loop must be an integer, not {_shown(loop)}")
    closing = meta.get("loop_action")
    return Trace(config, tuple(steps), meta["property"], meta["expectation"], meta["doc"], MODEL_VERSION,
                 meta["version"], loop, None if closing is None else _action(closing))


# what #meta.isrcheck holds besides the configuration, and the types each may take
_META = {"version": (str,), "property": (str, type(None)), "expectation": (str, type(None)), "doc": (str,)}


def _parts(data: Any) -> tuple[dict[str, Any], list[Any]]:
    """#meta.isrcheck, its values' types checked, and the states."""
    top = data.get("#meta") if isinstance(data, dict) else None
    meta = top.get("isrcheck") if isinstance(top, dict) else None
    if not isinstance(meta, dict) or "states" not in data:
        raise TraceError("not an isrcheck ITF trace (no #meta.isrcheck or states)")
    version = meta.get("model_version")
    if version != MODEL_VERSION:
        shown = version if isinstance(version, str) and len(version) <= 40 else _shown(version)
        raise TraceError(f"trace was written by model version {shown}, this isrcheck reads version {MODEL_VERSION}")
    _check_format(meta.get("trace_format"))
    for key, types in _META.items():
        if key not in meta:
            raise TraceError(f"#meta.isrcheck has no {key}")
        if type(meta[key]) not in types:
            raise TraceError(f"#meta.isrcheck.{key} must be {_names(types)}, not {_shown(meta.get(key))}")
    if not isinstance(data["states"], list):
        raise TraceError("states must be a list")
    return meta, data["states"]


def _check_format(fmt: Any) -> None:
    if type(fmt) is int and fmt == TRACE_FORMAT:
        return
    shown = "1 (none as \"NONE\" or -1)" if fmt is None else _shown(fmt)
    raise TraceError(f"trace was written in trace format {shown}, this isrcheck reads trace format {TRACE_FORMAT}: "
                     "check the model again to write it anew")


def _names(types: tuple[type, ...]) -> str:
    return " or ".join("null" if t is type(None) else t.__name__ for t in types)


# each configuration field's types, exactly: true is no number here, nor "yes" a switch
_CONFIG_TYPES = {name: get_args(hint) or (hint,) for name, hint in get_type_hints(ModelConfig).items()}


def _config(raw: Any) -> ModelConfig:
    """The trace's configuration, its types exact and its values in range, refused when its
    tables would be too big to build: all checked before a model is built from it."""
    if not isinstance(raw, dict):
        raise TraceError("bad configuration in trace: #meta.isrcheck.config must be an object")
    for name, value in raw.items():
        types = _CONFIG_TYPES.get(name)
        if types is not None and type(value) not in types:
            raise TraceError(f"bad configuration in trace: {name} must be {_names(types)}, not {_shown(value)}")
    try:
        config = ModelConfig.from_dict(raw).validate().require_bounded()
    except ConfigError as e:
        raise TraceError(f"bad configuration in trace: {e}") from None
    need, room = sum(layout_bytes(Schema(KAFKA.fields, config)).values()), psutil.virtual_memory().available
    if need > room:  # a check-model run could not have built them here either
        raise TraceError(f"bad configuration in trace: its model's tables would take {gigabytes(need)}, "
                         f"more than the {gigabytes(room)} of memory free")
    return config


def _action(a: Any) -> Action:
    if not isinstance(a, dict) or not isinstance(a.get("name"), str) or not isinstance(a.get("params"), dict):
        raise TraceError("missing or malformed action in #meta")
    params = a["params"]
    if not all(isinstance(k, str) and type(v) is int for k, v in params.items()):
        raise TraceError("action parameters must be integers")
    return Action(a["name"], tuple(params.items()))
