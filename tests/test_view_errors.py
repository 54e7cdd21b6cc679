"""view-trace refuses every bad file with one clear line and exit code 2, and shows nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from isrcheck import MODEL_VERSION
from isrcheck.traces import TraceError, itf
from isrcheck.traces.view_data import load_checked

from .view_helpers import kip101_trace


def view_trace(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "isrcheck.cli.view_trace", *args],
        capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": ""},
    )


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    return itf.save(kip101_trace(), tmp_path_factory.mktemp("good") / "kip101.itf.json")


@pytest.fixture
def edit(good, tmp_path):
    """Write an edited copy of the good trace: ``edit(change)`` where change(data) edits the JSON."""

    def write(change, name: str = "edited.itf.json") -> Path:
        data = json.loads(good.read_text())
        change(data)
        path = tmp_path / name
        path.write_text(json.dumps(data))
        return path

    return write


def refused(path: Path, *extra: str, expect: str) -> str:
    """Run view-trace on a bad file; check exit 2, nothing on stdout, one line on stderr naming ``expect``."""
    result = view_trace(str(path), *extra)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("view-trace: error: ")
    assert "Traceback" not in result.stderr
    assert expect in lines[0], lines[0]
    return lines[0]


def test_the_good_trace_is_shown(good):
    result = view_trace(str(good))
    assert result.returncode == 0, result.stderr
    assert "weak-isr violated here" in result.stdout


def test_a_file_that_is_not_json_is_refused(tmp_path):
    path = tmp_path / "notes.itf.json"
    path.write_text("this is not JSON\n")
    refused(path, expect="is not JSON (line 1")


def test_an_empty_file_is_refused(tmp_path):
    path = tmp_path / "empty.itf.json"
    path.write_text("")
    refused(path, expect="is not JSON")


def test_a_binary_file_is_refused(tmp_path):
    path = tmp_path / "blob.itf.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    refused(path, expect="is not a text file")


def test_a_missing_file_and_a_folder_are_refused(tmp_path):
    refused(tmp_path / "nothing.itf.json", expect="No such file")
    refused(tmp_path, expect="Is a directory")


@pytest.mark.parametrize("content", ['{"hello": 1}', "[1, 2, 3]", '"a string"', "null", '{"#meta": {}, "states": []}'])
def test_json_that_is_not_a_trace_is_refused(tmp_path, content):
    path = tmp_path / "other.json"
    path.write_text(content)
    refused(path, expect="not an isrcheck ITF trace")


def test_a_trace_with_no_states_is_refused(edit):
    refused(edit(lambda d: d.update(states=[])), expect="the trace has no states")


def test_a_trace_from_another_model_version_is_refused(edit):
    line = refused(edit(lambda d: d["#meta"]["isrcheck"].update(model_version="0")), expect="model version 0")
    assert f"version {MODEL_VERSION}" in line


def test_a_record_edited_in_one_state_no_longer_replays(edit):
    def change(d):  # broker 0's record m0 rewritten as written at epoch 1 in state 5
        d["states"][5]["replicaLog"]["#map"][0][1][0]["epoch"] = 1

    refused(edit(change), expect="does not lead to the recorded state")


def test_an_edited_action_no_longer_replays(edit):
    def change(d):
        d["states"][4]["#meta"]["action"]["params"]["leader"] = 1  # broker 1 following itself

    refused(edit(change), expect="step 4 (BecomeFollower(replica=1, leader=1, epoch=0)) does not lead")


def test_an_edited_initial_state_is_refused(edit):
    refused(edit(lambda d: d["states"][0].update(nextRecordId=1)), expect="not an initial state")


def test_a_value_outside_the_bounds_is_refused(edit):
    def change(d):
        d["states"][3]["replicaState"]["#map"][0][1]["hw"] = 99

    refused(edit(change), expect="out of range")


def test_a_malformed_state_is_refused(edit):
    refused(edit(lambda d: d["states"][2].pop("quorumState")), expect="state 2 is malformed")


def test_a_trace_cut_before_the_violation_is_refused(edit):
    refused(edit(lambda d: d["states"].pop()), expect="does not violate weak-isr")


def test_a_trace_naming_an_unknown_property_is_refused(edit):
    refused(edit(lambda d: d["#meta"]["isrcheck"].update(property="no-such-property")), expect="unknown property")


def test_a_trace_claiming_the_wrong_expectation_is_refused(edit):
    refused(edit(lambda d: d["#meta"]["isrcheck"].update(expectation="sometimes")), expect="'always' property")


def test_a_trace_with_script_in_an_action_name_is_refused_and_writes_no_page(edit, tmp_path):
    def change(d):
        d["states"][3]["#meta"]["action"]["name"] = "<script>alert('x')</script>"

    path = edit(change)
    out = tmp_path / "page.html"
    refused(path, "--html", str(out), expect="unknown action")
    assert not out.exists()
    with pytest.raises(TraceError):
        load_checked(path)


def test_the_error_line_is_one_line_even_when_the_trace_carries_newlines(edit):
    def change(d):
        d["states"][3]["#meta"]["action"]["name"] = "Evil\nsecond line\r\nthird"

    refused(edit(change), expect="unknown action")


def test_an_unwritable_html_path_is_one_line(good, tmp_path):
    refused(good, "--html", str(tmp_path / "no" / "such" / "dir" / "page.html"), expect="cannot write")


@pytest.mark.parametrize(
    "extra, expect",
    [
        (("--html", "x.html", "--changed-only"), "--html writes the page only"),
        (("--html", "x.html", "--format", "json"), "--html writes the page only"),
        (("--format", "json", "--changed-only"), "--changed-only applies to the text view"),
        (("--format", "yaml"), "Invalid value for '--format'"),
        (("--width", "5"), "Invalid value for '--width'"),
    ],
)
def test_usage_errors_are_one_line(good, extra, expect):
    refused(good, *extra, expect=expect)
