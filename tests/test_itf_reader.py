"""Every trace isrcheck saves is typed ITF that another tool reads (issue 20, item 7).

Small checks write counterexamples, witnesses, a lasso (the pre-KIP-380 rejoins-isr
violation of ``test_liveness.py``) and the core machine's traces; each file is then read
with ``itf_py``, the ITF library for Python, an independent reader: it must decode, every
variable must keep one type in every state (no int in one state and a string in
another), no sentinel may stand for "none" (no ``"NONE"``, no ``-1``: an optional value is
a set of at most one member, docs/traces.md), and what ``itf_py`` decodes must agree
with what our own reader (``traces.itf.load``) gives, field by field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from itf_py import trace_from_json, value_from_json

from isrcheck.checker import CheckOptions
from isrcheck.cli.runner import CheckRun, run_check
from isrcheck.model import ModelConfig, Record, Request
from isrcheck.model.kafka import KAFKA
from isrcheck.model.schema import Brokers, Count, Ids, LogKind, Maybe, RequestsKind, Tally
from isrcheck.traces import TraceError, itf

RUNS = {  # name: (configuration, properties: all that apply when empty)
    "kafka": (ModelConfig(rf=2, protocol="kip-101", acks="1", disk_loss=1), ()),
    "core": (ModelConfig(rf=2, protocol="hw-truncation", core=True), ()),
    "lasso": (ModelConfig(rf=2, min_isr=1, kafka_version="2.1"), ("rejoins-isr",)),
    "elr": (ModelConfig(rf=2, min_isr=2, crashes=2, disk_loss=1, kafka_version="4.1"), ("committed-survive",)),
    "producer": (ModelConfig(rf=2, crashes=0, retries=2, delivery_timeout=2, idempotent=False), ("no-duplicates",)),
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, list[Path]]:
    """Each run's saved trace files, read back from its trace directory: every one there."""
    out = {}
    for name, (config, props) in RUNS.items():
        folder = tmp_path_factory.mktemp(name)
        run_check(CheckRun(config, properties=props, options=CheckOptions(symmetry=False), trace_dir=folder))
        out[name] = sorted(folder.glob("*.itf.json"))
    return out


def test_the_checks_save_counterexamples_witnesses_a_lasso_and_core_traces(saved):
    assert all(saved.values()), saved
    names = [p.name for files in saved.values() for p in files]
    assert any(n.endswith("-counterexample.itf.json") for n in names)
    assert any(n.endswith("-witness.itf.json") for n in names)
    assert any("-core-" in n for n in names)
    assert any("rejoins-isr" in p.name and json.loads(p.read_text()).get("loop") is not None for p in saved["lasso"])


def _files(saved) -> list[Path]:
    return [p for files in saved.values() for p in files]


# ---- types: one per variable, in every state -----------------------------------------------------------
def _type(v: Any) -> Any:
    """The type of a value as itf_py decodes it; None where unknown (the members of an empty
    set, list or map), to be settled by the other states."""
    if isinstance(v, bool):
        return "Bool"
    if isinstance(v, int):
        return "Int"
    if isinstance(v, str):
        return "Str"
    if isinstance(v, frozenset):
        return ("Set", _join(_type(x) for x in v))
    if isinstance(v, dict):
        return ("Map", _join(_type(k) for k in v), _join(_type(x) for x in v.values()))
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return ("Rec", tuple((f, _type(getattr(v, f))) for f in v._fields))
    if isinstance(v, tuple):
        return ("Tup", tuple(_type(x) for x in v))
    if isinstance(v, list):
        return ("Seq", _join(_type(x) for x in v))
    raise AssertionError(f"itf_py decoded a value of no ITF type: {v!r}")


def _unify(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return b if a is None else a
    if isinstance(a, str) or isinstance(b, str) or a[0] != b[0] or len(a) != len(b):
        if a == b:
            return a
        raise TypeError(f"{a} and {b}")
    if a[0] == "Rec":
        if [f for f, _ in a[1]] != [f for f, _ in b[1]]:
            raise TypeError(f"records with fields {[f for f, _ in a[1]]} and {[f for f, _ in b[1]]}")
        return ("Rec", tuple((f, _unify(x, y)) for (f, x), (_, y) in zip(a[1], b[1])))
    if a[0] == "Tup":
        if len(a[1]) != len(b[1]):
            raise TypeError(f"tuples of {len(a[1])} and {len(b[1])}")
        return ("Tup", tuple(_unify(x, y) for x, y in zip(a[1], b[1])))
    return (a[0], *(_unify(x, y) for x, y in zip(a[1:], b[1:])))


def _join(types) -> Any:
    out = None
    for t in types:
        out = _unify(out, t)
    return out


def test_itf_py_decodes_every_saved_trace_and_each_variable_keeps_one_type(saved):
    for path in _files(saved):
        raw = json.loads(path.read_text())
        trace = trace_from_json(raw)
        assert trace.states and trace.vars, path
        types: dict[str, Any] = {}
        for i, state in enumerate(trace.states):
            assert list(state.values) == trace.vars, (path.name, i)
            for var, value in state.values.items():
                try:
                    types[var] = _unify(types.get(var), _type(value))
                except TypeError as e:
                    raise AssertionError(f"{path.name}: state {i}: {var} changes type: {e}") from None
        assert "Str" not in json.dumps(types), (path.name, types)  # no strings at all, so none mixed with ints


def _sentinels(v: Any, where: str) -> list[str]:
    """Where a raw JSON value holds a string or a negative number: a sentinel in our traces,
    whose every number is a count, an offset, an id, an epoch or a broker."""
    if isinstance(v, dict):
        return [s for k, x in v.items() for s in _sentinels(x, f"{where}.{k}")]
    if isinstance(v, list):
        return [s for i, x in enumerate(v) for s in _sentinels(x, f"{where}[{i}]")]
    if isinstance(v, str) or (type(v) is int and v < 0):
        return [f"{where} = {v!r}"]
    return []


def test_no_saved_trace_holds_a_sentinel(saved):
    for path in _files(saved):
        raw = json.loads(path.read_text())
        found = [s for i, st in enumerate(raw["states"])
                 for s in _sentinels({k: v for k, v in st.items() if k != "#meta"}, f"state {i}")]
        assert not found, (path.name, found[:5])
        assert "NONE" not in path.read_text(), path.name


# ---- the values: itf_py's and our reader's agree ------------------------------------------------------
def _optional(v: Any) -> int | None:
    """An optional value as itf_py decodes it: a set of at most one member."""
    assert isinstance(v, frozenset) and len(v) <= 1, v
    return next(iter(v), None)


def _ours(kind: Any, v: Any) -> Any:
    """itf_py's decoding of a field's value, in the types of our readable state."""
    if isinstance(kind, LogKind):
        return tuple(Record(x.id, x.epoch) for x in v)
    if isinstance(kind, RequestsKind):
        return tuple(sorted((Request(q.leaderEpoch, _optional(q.leader), q.isr) for q in v),
                            key=lambda r: r.leader_epoch))
    if isinstance(kind, Maybe):
        return _optional(v)
    if isinstance(kind, Tally):  # a map from record id to count
        return tuple(sorted(dict(v).items()))
    assert isinstance(kind, (Brokers, Ids, Count)), kind
    return v


def _agree(values: dict[str, Any], state: Any, config: ModelConfig) -> set[str]:
    """Every written field of a state, itf_py's decoding against ours; the fields compared."""
    compared = set()
    for f in KAFKA.fields:
        if not f.in_itf(config):
            continue
        var, _, key = f.itf.partition(".")
        if f.replica:
            for r, rs in enumerate(state.replicas):
                row = values[var][r]
                got = _ours(f.kind, getattr(row, key) if key else row)
                assert got == getattr(rs, f.name), (f.name, r, got, getattr(rs, f.name))
        else:
            got = _ours(f.kind, getattr(values[var], key) if key else values[var])
            assert got == getattr(state, f.name), (f.name, got, getattr(state, f.name))
        compared.add(f.name)
    return compared


def test_itf_py_and_our_reader_agree_on_every_value(saved):
    for path in _files(saved):
        theirs, ours = trace_from_json(json.loads(path.read_text())), itf.load(path)
        assert len(theirs.states) == len(ours.steps) and theirs.loop == ours.loop, path.name
        for i, (st, step) in enumerate(zip(theirs.states, ours.steps)):
            compared = _agree(st.values, step.state, ours.config)
            assert {"log", "hw", "leader", "leader_epoch", "isr", "quorum_isr", "requests"} <= compared
            q = st.values["quorumState"]  # the controller's leader and epoch, written as well as derived
            assert (_optional(q.leader), _optional(q.leaderEpoch)) == (step.state.quorum.leader,
                                                                        step.state.quorum.leader_epoch)
            action = st.meta.get("action")
            assert (action and (action["name"], action["params"])) == (
                step.action and (step.action.name, step.action.args)), (path.name, i)


def test_the_leader_a_trace_shows_is_the_leader_itf_py_reads(saved):
    """The plainest check of the agreement: broker by broker, the leader each believes in."""
    path = next(p for p in saved["kafka"] if "committed-survive" in p.name)
    theirs, ours = trace_from_json(json.loads(path.read_text())), itf.load(path)
    leaders = [[_optional(row.leader) for _, row in sorted(st.values["replicaState"].items())] for st in theirs.states]
    assert leaders == [[rs.leader for rs in step.state.replicas] for step in ours.steps]
    assert any(None in row for row in leaders) and any(x is not None for row in leaders for x in row)


# ---- why a set, and what is refused -------------------------------------------------------------------
def test_itf_py_cannot_decode_the_option_of_quint_and_apalache():
    """The reason an optional value is a set: itf_py makes a namedtuple class named after a
    variant's tag, and ``None`` is a Python keyword (docs/traces.md)."""
    assert value_from_json({"tag": "Some", "value": 2}).value == 2
    try:
        value_from_json({"tag": "None", "value": {"#tup": []}})
    except ValueError:
        return
    pytest.skip("itf_py now decodes Quint's None: Quint's Option may be the better encoding (docs/traces.md)")


@pytest.fixture(scope="module")
def kafka_file(saved) -> Path:
    return next(p for p in saved["kafka"] if "committed-survive" in p.name)


def _leader_of_replica_1(state0: dict) -> dict:
    return state0["replicaState"]["#map"][1][1]


@pytest.mark.parametrize("value, expect", [
    ("NONE", "expected an optional value (a set of at most one integer), found 'NONE'"),
    (-1, "expected an optional value (a set of at most one integer), found -1"),
    ({"#set": [-1]}, "an optional value holds -1, below 0"),
    ({"#set": [0, 1]}, "expected an optional value (a set of at most one integer), found {'#set': [0, 1]}"),
    ({"#set": ["0"]}, "expected an integer, found '0'"),
    ({"tag": "None", "value": {"#tup": []}}, "expected an optional value"),
])
def test_a_sentinel_or_a_bad_optional_is_refused_in_one_line(tmp_path, kafka_file, value, expect):
    data = json.loads(kafka_file.read_text())
    _leader_of_replica_1(data["states"][0])["leader"] = value
    path = tmp_path / "edited.itf.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TraceError) as e:
        itf.load(path)
    assert expect in str(e.value) and "state 0" in str(e.value) and "\n" not in str(e.value), str(e.value)


@pytest.mark.parametrize("fmt, expect", [
    (None, 'trace format 1 (none as "NONE" or -1), this isrcheck reads trace format 2'),
    (1, "trace format 1, this isrcheck reads trace format 2"),
    (True, "trace format True, this isrcheck reads"),
    ("2", "trace format '2', this isrcheck reads"),
])
def test_a_trace_of_another_trace_format_is_refused_in_one_line(tmp_path, kafka_file, fmt, expect):
    data = json.loads(kafka_file.read_text())
    if fmt is None:
        del data["#meta"]["isrcheck"]["trace_format"]
    else:
        data["#meta"]["isrcheck"]["trace_format"] = fmt
    path = tmp_path / "old.itf.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TraceError, match="check the model again to write it anew") as e:
        itf.load(path)
    assert expect in str(e.value) and "\n" not in str(e.value), str(e.value)


@pytest.mark.parametrize("value, expect", [
    ({"#map": [[0, 1], [0, 2]]}, "producer.retriesPerRecord maps a record id twice"),
    ({"#map": [[0]]}, "producer.retriesPerRecord must map record ids to counts"),
    ([[0, 1]], "producer.retriesPerRecord must be a map"),
])
def test_a_bad_count_per_record_is_refused_in_one_line(tmp_path, saved, value, expect):
    (source,) = saved["producer"]
    data = json.loads(source.read_text())
    data["states"][-1]["producer"]["retriesPerRecord"] = value
    path = tmp_path / "edited.itf.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TraceError) as e:
        itf.load(path)
    assert expect in str(e.value) and "\n" not in str(e.value), str(e.value)
