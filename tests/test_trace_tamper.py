"""view-trace refuses an edited trace, even one whose edit the replay cannot see, and reads
every trace within bounds: one line and exit 2, never a traceback (issue 17, items 4 and 6)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from isrcheck.checker import CheckOptions
from isrcheck.cli.runner import CheckRun, run_check
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import BY_NAME, verdict
from isrcheck.traces import TraceError, itf, replay, trace_from_path
from isrcheck.traces.view_data import load_checked

from .clitools import run_cli
from .test_view_errors import refused
from .view_helpers import DISK_LOSS, checked_trace, kip101_trace


def write(tmp_path: Path, data, name: str = "edited.itf.json") -> Path:
    """``data`` written as ``itf.save`` lays a trace out, so that only the edit differs."""
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


@pytest.fixture(scope="module")
def kip101_data(tmp_path_factory) -> dict:
    return json.loads(itf.save(kip101_trace(), tmp_path_factory.mktemp("kip101") / "t.itf.json").read_text())


@pytest.fixture(scope="module")
def kafka_data(tmp_path_factory) -> dict:
    """A Kafka-model counterexample (rf 2, a disk loss, 4.1): committed-survive breaks at state 11,
    committed-stored already at state 8, consumer-reads is witnessed from state 6 on."""
    trace = checked_trace(DISK_LOSS, "committed-survive", symmetry=True)
    return json.loads(itf.save(trace, tmp_path_factory.mktemp("kafka") / "t.itf.json").read_text())


def refuse(tmp_path: Path, data: dict, change, expect: str) -> str:
    edited = json.loads(json.dumps(data))
    change(edited)
    with pytest.raises(TraceError) as e:
        load_checked(write(tmp_path, edited))
    message = str(e.value)
    assert expect in message and "\n" not in message and len(message) < 700, message
    return message


def config(**values):
    return lambda d: d["#meta"]["isrcheck"]["config"].update(values)


# ---- item 6: edited inputs -----------------------------------------------------------------------
@pytest.mark.parametrize("change, expect", [
    (config(core="yes"), "core must be bool, not 'yes'"),
    (config(rf=True), "rf must be int, not True"),
    (config(max_records=2.0), "max_records must be int, not 2.0"),
    (config(min_isr=5), "#meta.isrcheck.config.min_isr is not what its replay writes"),  # core: unused
    (config(disk_loss=9), "#meta.isrcheck.config.disk_loss is not what its replay writes"),
    (config(max_leader_epoch=None), "--max-leader-epoch unbounded needs --engine z3"),
    (config(max_records=8, log_size=8, max_leader_epoch=8), "its model's tables would take"),
    (config(colour="red"), "unknown configuration field(s): colour"),
    (lambda d: d["#meta"]["isrcheck"]["config"].pop("flush"), "#meta.isrcheck.config.flush is missing or out of place"),
    (lambda d: d.update(vars=[]), "vars has 0 entries, its replay 6"),
    (lambda d: d["vars"].reverse(), "vars[0] is not what its replay writes"),
    (lambda d: d["states"][3]["#meta"].update(index=4), "state 3: #meta.index is not what its replay writes"),
    (lambda d: d["states"][3].update(note="hi"), "state 3 holds a key isrcheck does not write"),
    (lambda d: d["states"][3]["quorumState"]["isr"]["#set"].append(0), "state 3: quorumState.isr.#set is not"),  # twice
    (lambda d: d["#meta"]["isrcheck"].update(doc="no loss here"), "#meta.isrcheck.doc is not what its replay writes"),
    (lambda d: d["#meta"].update(format="TLA"), "#meta.format is not what its replay writes"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_an_edit_the_replay_cannot_see_is_refused(tmp_path, kip101_data, change, expect):
    refuse(tmp_path, kip101_data, change, expect)


def test_an_impossible_kafka_configuration_is_refused_before_a_model_is_built(tmp_path, kafka_data):
    refuse(tmp_path, kafka_data, config(min_isr=0), "--min-isr 0 is out of range")
    refuse(tmp_path, kafka_data, config(disk_loss=9), "--disk-loss 9 is above --crashes 1")


def swap(name: str, doc: str | None = None):
    def change(d):
        d["#meta"]["isrcheck"].update(property=name, expectation=BY_NAME[name].expectation,
                                      doc=BY_NAME[name].doc if doc is None else doc)

    return change


def test_a_swapped_property_is_refused(tmp_path, kafka_data):
    doc = kafka_data["#meta"]["isrcheck"]["doc"]  # the name swapped, the doc left: the doc gives it away
    refuse(tmp_path, kafka_data, swap("acked-survive", doc), "#meta.isrcheck.doc is not what its replay writes")
    # name and doc swapped for a property that an earlier state already decides: a checker stops there
    refuse(tmp_path, kafka_data, swap("committed-stored"), "state 8 already violates committed-stored")
    refuse(tmp_path, kafka_data, swap("consumer-reads"), "state 6 already witnesses consumer-reads")


def test_a_trace_that_goes_on_past_its_violation_is_refused(tmp_path):
    """Each step replays and the last state breaks weak-isr, but state 8 already did."""
    trace = kip101_trace()
    model = ReplicationModel(trace.config)
    states = replay(trace, model)
    actions = [model.catalogue.lookup(s.action.name, s.action.args) for s in trace.steps[1:]]
    weak = BY_NAME["weak-isr"].derived(model)
    a, s = next((a, s) for a, s in model.successors(states[-1]) if not weak(s))
    longer = trace_from_path(model, states + [s], actions + [a], "weak-isr", "always", trace.doc)
    with pytest.raises(TraceError, match="state 8 already violates weak-isr, yet the trace goes on"):
        load_checked(itf.save(longer, tmp_path / "longer.itf.json"))


@pytest.mark.parametrize("change, expect", [
    (lambda d: d["#meta"].update(isrcheck=[]), "not an isrcheck ITF trace"),
    (lambda d: d.update(states={"0": {}}), "states must be a list"),
    (lambda d: d["states"].__setitem__(2, [1, 2]), "state 2: is not an object with a #meta"),
    (lambda d: d["#meta"]["isrcheck"].update(doc=["a"]), "#meta.isrcheck.doc must be str, not ['a']"),
    (lambda d: d["#meta"]["isrcheck"].update(config=[]), "#meta.isrcheck.config must be an object"),
    (lambda d: d["states"][3]["replicaState"]["#map"][0][1].update(hw=list(range(10**5))),
     "expected an integer, found [0, 1, 2, 3"),
    (lambda d: d["states"][3]["#meta"]["action"].update(name="X" * 10**5), "unknown action XXXX"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_a_malformed_trace_is_one_short_line(tmp_path, kip101_data, change, expect):
    refuse(tmp_path, kip101_data, change, expect)


# ---- what is accepted ------------------------------------------------------------------------------
def test_every_trace_check_model_writes_is_accepted_as_it_is(tmp_path):
    config = ModelConfig(rf=2, protocol="kip-101", acks="1", disk_loss=1)
    run = CheckRun(config, options=CheckOptions(symmetry=False), trace_dir=tmp_path)
    files = run_check(run).trace_files
    kinds = {BY_NAME[name].expectation for name in files}
    assert len(files) >= 6 and kinds == {verdict.ALWAYS, verdict.SOMETIMES}, files
    for path in files.values():
        assert itf.to_itf(load_checked(path)) == json.loads(path.read_text()), path


def test_a_trace_from_another_isrcheck_release_keeps_its_version(tmp_path, kip101_data):
    data = json.loads(json.dumps(kip101_data))
    data["#meta"]["isrcheck"]["version"] = "0.0.9"
    trace = load_checked(write(tmp_path, data))
    assert trace.written_by == "0.0.9" and itf.to_itf(trace) == data


def test_a_reformatted_trace_is_no_edit(tmp_path, kip101_data):
    """Whitespace, and the order of a set's members or a map's entries, mean nothing in ITF."""
    data = json.loads(json.dumps(kip101_data))
    for st in data["states"]:
        st["replicaState"]["#map"].reverse()
    path = tmp_path / "compact.itf.json"
    path.write_text(json.dumps(data, separators=(",", ":")))
    assert itf.to_itf(load_checked(path)) == kip101_data


# ---- item 4: every read bounded, in the command -------------------------------------------------
@pytest.mark.parametrize("content, expect", [
    ("[" * 50_000 + "]" * 50_000, "is nested more than 64 levels deep"),
    ('{"#meta": ' + "1" * 5000 + "}", "holds a number of more than 4300 digits"),
])
def test_a_hostile_json_file_is_one_line_and_exit_2(tmp_path, content, expect):
    path = tmp_path / "hostile.itf.json"
    path.write_text(content)
    refused(path, expect=expect)


def test_a_device_is_not_read(tmp_path):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    refused(Path("/dev/zero"), expect="is not a regular file")


def test_an_edited_configuration_is_one_line_and_exit_2(tmp_path, kip101_data):
    data = json.loads(json.dumps(kip101_data))
    data["#meta"]["isrcheck"]["config"]["core"] = "yes"
    refused(write(tmp_path, data), expect="core must be bool")


# ---- issue 55: a key given twice -----------------------------------------------------------------
def twice(tmp_path: Path, data: dict) -> Path:
    """The trace with its second state's nextLeaderEpoch given twice, 99 first: ``json`` keeps the last
    (the true value), so the replay alone saw nothing."""
    text = json.dumps(data, indent=1) + "\n"
    true = f'"nextLeaderEpoch": {data["states"][1]["nextLeaderEpoch"]}'
    assert text.count(true) >= 1
    path = tmp_path / "twice.itf.json"
    path.write_text(text.replace(true, f'"nextLeaderEpoch": 99, {true}', 1))
    return path


def test_a_key_given_twice_is_refused_by_view_trace(tmp_path, kip101_data):
    line = refused(twice(tmp_path, kip101_data), expect="gives the key 'nextLeaderEpoch' twice in one object")
    assert line == f"view-trace: error: {tmp_path / 'twice.itf.json'} gives the key 'nextLeaderEpoch' twice in one object"


def test_a_key_given_twice_is_refused_by_replay_kafka_before_any_cluster(tmp_path, kip101_data):
    proc = run_cli("replay-kafka", str(twice(tmp_path, kip101_data)), timeout=60)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr == (f"replay-kafka: error: {tmp_path / 'twice.itf.json'} gives the key 'nextLeaderEpoch' "
                           "twice in one object\n")


def test_a_key_given_twice_with_one_value_is_refused_too(tmp_path, kip101_data):
    """The same value twice changes nothing today, but no writer of isrcheck's files gives a key twice."""
    text = json.dumps(kip101_data, indent=1).replace('"format": "ITF"', '"format": "ITF", "format": "ITF"', 1)
    (tmp_path / "same.itf.json").write_text(text)
    with pytest.raises(TraceError, match="gives the key 'format' twice in one object"):
        load_checked(tmp_path / "same.itf.json")
