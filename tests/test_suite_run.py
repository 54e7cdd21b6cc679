"""check-suite end to end: the shipped regression suite, unmet expectations, JUnit, annotations, Ctrl-C."""

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from isrcheck.cli.suite import load_suite

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = xmlschema.XMLSchema(str(ROOT / "tests" / "data" / "junit.xsd"))
CHECK_SUITE = str(Path(sys.executable).with_name("check-suite"))


def run_suite(*args, cwd, env=None, timeout=180):
    return subprocess.run([CHECK_SUITE, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def write(tmp_path, text, name="suite.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def cases(xml_file):
    return {(c.get("classname"), c.get("name")): c for c in ET.parse(xml_file).getroot().iter("testcase")}


@pytest.mark.parametrize("name", ["kafka-versions", "kafka-releases"])
def test_the_kafka_suites_meet_every_expectation_and_their_junit_reports_validate(tmp_path, name):
    suite = ROOT / "examples" / f"{name}.toml"
    out = tmp_path / "out.xml"
    result = run_suite(suite, "--junit", out, "--jobs", "2", "--trace-dir", tmp_path / "traces", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    SCHEMA.validate(str(out))
    expected = {(c.name, p) for c in load_suite(suite).checks for p in c.properties}
    found = cases(out)
    assert set(found) == expected
    assert not any(c.find("failure") is not None or c.find("error") is not None for c in found.values())
    assert "0 not met" in result.stdout
    assert len([line for line in result.stdout.splitlines() if line.startswith("[")]) == len(load_suite(suite).checks)
    # each check saved its traces in its own folder
    folders = [p for p in (tmp_path / "traces" / name).iterdir() if any(p.glob("*.itf.json"))]
    assert len(folders) == sum(1 for c in load_suite(suite).checks if any(
        "violated" in e.text or "witnessed" in e.text for e in c.expect.values()))


ONE_WRONG = '''\
    name = "one wrong"
    [defaults]
    rf = 2

    [[check]]
    name = "acks=1 is believed safe"
    acks = "1"
    expect = { acked-survive = "holds" }

    [[check]]
    name = "hw-truncation loses data"
    core = true
    protocol = "hw-truncation"
    expect = { weak-isr = "violated-within 9" }
'''


def test_a_wrong_expectation_exits_1_and_the_junit_report_names_the_check_the_property_and_the_trace(tmp_path):
    suite = write(tmp_path, ONE_WRONG)
    out = tmp_path / "report" / "junit.xml"
    result = run_suite(suite, "--junit", out, "--jobs", "1", cwd=tmp_path, env={"GITHUB_ACTIONS": ""})
    assert result.returncode == 1, result.stdout + result.stderr
    SCHEMA.validate(str(out))
    found = cases(out)
    failure = found[("acks=1 is believed safe", "acked-survive")].find("failure")
    assert failure is not None
    assert found[("hw-truncation loses data", "weak-isr")].find("failure") is None
    trace = next((tmp_path / "traces-out" / "suite").glob("acks=1-is-believed-safe/*acked-survive-counterexample.itf.json"))
    assert failure.get("message") == (
        f"acked-survive: expected holds, got violated in 6 states; trace {trace.relative_to(tmp_path)}")
    body = failure.text
    assert f"check: acks=1 is believed safe ({suite}:8)" in body
    assert f"trace: {trace.relative_to(tmp_path)}" in body
    assert "=> record m0 was acknowledged" in body  # the first lines of the trace, in Kafka words
    assert "FAIL" in result.stdout and "acked-survive expected holds, got violated in 6 states" in result.stdout
    assert "::error" not in result.stdout  # not on GitHub Actions


def test_on_github_actions_an_unmet_expectation_is_an_error_annotation_on_its_line(tmp_path):
    suite = write(tmp_path, ONE_WRONG)
    result = run_suite(suite, "--jobs", "1", cwd=tmp_path, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 1
    (annotation,) = [line for line in result.stdout.splitlines() if line.startswith("::")]
    assert annotation.startswith(f"::error file={suite},line=8,title=isrcheck%3A acks=1 is believed safe%3A acked-survive::")
    assert annotation.endswith("expected holds, got violated in 6 states; "
                               "trace traces-out/suite/acks=1-is-believed-safe/"
                               "kip-320-rf2-kafka4.1-acks1-minisr1-crashes1-acked-survive-counterexample.itf.json")


def test_a_shorter_bound_than_the_shortest_counterexample_is_not_met(tmp_path):
    suite = write(tmp_path, '''\
        [[check]]
        name = "bound"
        core = true
        rf = 2
        protocol = "hw-truncation"
        expect = { weak-isr = "violated-within 8", leader-in-isr = "violated" }
    ''')
    result = run_suite(suite, "--jobs", "1", cwd=tmp_path)
    assert result.returncode == 1
    assert "weak-isr expected violated-within 8, got violated in 9 states, not within 8" in result.stdout
    assert "leader-in-isr expected violated, got holds" in result.stdout
    assert "2 not met" in result.stdout


def test_an_undecided_check_exits_3_and_is_a_junit_error(tmp_path):
    suite = write(tmp_path, '''\
        [[check]]
        name = "too little time"
        rf = 3
        min-isr = 2
        time-limit = "1ms"
        expect = { acked-survive = "holds" }
    ''')
    out = tmp_path / "j.xml"
    result = run_suite(suite, "--jobs", "1", "--junit", out, cwd=tmp_path)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "UNDECIDED" in result.stdout and "search incomplete (time limit)" in result.stdout
    SCHEMA.validate(str(out))
    error = cases(out)[("too little time", "acked-survive")].find("error")
    assert error is not None and error.get("type") == "incomplete"


SLOW = '''\
    [[check]]
    name = "fast"
    rf = 2
    acks = "1"
    expect = { acked-survive = "violated" }

    [[check]]
    name = "slow one"
    rf = 3
    min-isr = 2
    max-leader-epoch = 3
    expect = { acked-survive = "holds" }

    [[check]]
    name = "slow two"
    rf = 3
    min-isr = 3
    max-leader-epoch = 3
    expect = { acked-survive = "holds" }

    [[check]]
    name = "never started"
    rf = 3
    min-isr = 1
    expect = { acked-survive = "holds" }
'''


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_stops_cleanly_with_a_partial_summary_and_exit_3(tmp_path, jobs):
    suite = write(tmp_path, SLOW)
    out = tmp_path / "j.xml"
    proc = subprocess.Popen([CHECK_SUITE, str(suite), "--jobs", jobs, "--junit", str(out)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()  # the fast check has finished: the slow ones are running
        assert "PASS" in first and "fast" in first
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, stdout + stderr
    assert re.search(r"^interrupted: \d+ checks? not run$", stdout, re.M)
    assert "search incomplete (interrupted)" in stdout
    SCHEMA.validate(str(out))
    skipped = cases(out)[("never started", "acked-survive")]
    assert skipped.find("skipped") is not None


def test_annotation_fields_escape_what_the_workflow_command_syntax_reserves():
    from isrcheck.cli.check_suite import _escape_data, _escape_property

    assert _escape_property("rf 3, min-isr 2: acked-survive 100%") == "rf 3%2C min-isr 2%3A acked-survive 100%25"
    assert _escape_data("a: b, c\nd%") == "a: b, c%0Ad%25"
