"""The terminal view: golden files for the KIP-101 counterexample, and what every view must show.

Regenerate the golden files after an intended change with
``ISRCHECK_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/test_view_text.py`` and
read the diff before committing it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from isrcheck.model import Action
from isrcheck.traces import Step, itf
from isrcheck.traces.narrate import describe_step
from isrcheck.traces.view_data import VIOLATED, WITNESSED, build_view, check_trace
from isrcheck.traces.view_text import render_text

from .view_helpers import DISK_LOSS, checked_trace, kip101_trace

GOLDEN = Path(__file__).parent / "golden"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
WIDTH = 100


def golden(name: str, text: str) -> None:
    """Compare with tests/golden/NAME, or rewrite it when ISRCHECK_UPDATE_GOLDEN=1."""
    path = GOLDEN / name
    if os.environ.get("ISRCHECK_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with ISRCHECK_UPDATE_GOLDEN=1 to create it"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{name} differs from the golden file; if intended, regenerate with ISRCHECK_UPDATE_GOLDEN=1"


def plain(text: str) -> str:
    return "\n".join(line.rstrip() for line in ANSI.sub("", text).split("\n"))


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "isrcheck.cli.view_trace", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": ""},
        timeout=120,
    )


@pytest.fixture(scope="module")
def kip101():
    return kip101_trace()


def test_the_kip101_counterexample_is_the_nine_state_weak_isr_trace(kip101):
    assert len(kip101) == 9
    assert kip101.property_name == "weak-isr" and kip101.is_counterexample
    check_trace(kip101)


def test_plain_view_of_the_kip101_counterexample_matches_its_golden_file(kip101):
    text = render_text(build_view(kip101), color=False, width=WIDTH)
    assert "\x1b[" not in text
    golden("kip101-weak-isr.txt", text)


def test_colour_view_of_the_kip101_counterexample_matches_its_golden_file(kip101):
    text = render_text(build_view(kip101), color=True, width=WIDTH)
    assert "\x1b[" in text
    golden("kip101-weak-isr.ansi", text)


def test_colour_and_plain_views_say_the_same_words(kip101):
    view = build_view(kip101)
    assert plain(render_text(view, color=True, width=WIDTH)) == render_text(view, color=False, width=WIDTH)


def test_changed_only_view_of_the_kip101_counterexample_matches_its_golden_file(kip101):
    text = render_text(build_view(kip101), color=False, width=WIDTH, changed_only=True)
    golden("kip101-weak-isr-changed-only.txt", text)


def test_every_step_is_told_in_kafka_words(kip101):
    text = render_text(build_view(kip101))
    for i in range(1, len(kip101)):
        before, step = kip101.steps[i - 1], kip101.steps[i]
        sentence = describe_step(before.state, step.action, step.state)
        assert " ".join(sentence.split()) in " ".join(text.split())
        assert f"step {i}/{len(kip101) - 1} · {step.action}" in text
    assert "broker 1 becomes follower of broker 0 at epoch 1 and truncates its log to offset 0" in " ".join(text.split())


def test_the_failing_step_is_marked_once_with_the_property_and_the_lost_record(kip101):
    view = build_view(kip101)
    text = render_text(view)
    last = len(kip101) - 1
    assert view.outcome == VIOLATED
    assert text.count("✗ weak-isr violated here") == 1
    header = next(line for line in text.splitlines() if "violated here" in line)
    assert header.startswith(f"step {last}/{last}")
    assert f"✗ weak-isr violated at step {last}: {kip101.doc}" in " ".join(text.split())
    assert "lost: m0@e0 (missing from broker 1)" in text
    # the truncated record is drawn as dropped in the failing step's table
    assert "-m0@e0" in text.split("violated here")[1]


def test_changed_only_hides_unchanged_replicas(kip101):
    full = render_text(build_view(kip101))
    changed = render_text(build_view(kip101), changed_only=True)
    assert len(changed) < len(full)
    # step 5 (broker 0 appends) changes broker 0 only
    block = changed.split("step 5/8")[1].split("step 6/8")[0]
    assert re.search(r"^\s+0 stale leader", block, re.M)
    assert not re.search(r"^\s+1 follower", block, re.M)


def test_a_kafka_trace_shows_the_producer_and_consumer_histories_and_the_crash():
    trace = checked_trace(DISK_LOSS, "committed-survive", symmetry=True)
    text = render_text(build_view(trace))
    assert "BrokerCrashDiskLoss" in text
    assert "crashes and loses its disk" in text
    assert "committed +m0" in text  # the step where m0 became committed
    assert re.search(r"acknowledged .*committed .*readable .*crashes \d/1", text)
    assert "✗ committed-survive violated here" in text
    assert "lost: m0@e0" in text


def test_a_witness_is_shown_as_witnessed_not_as_a_violation():
    trace = checked_trace(DISK_LOSS, "record-committed", symmetry=True)
    view = build_view(trace)
    text = render_text(view)
    assert view.outcome == WITNESSED
    assert "✓ record-committed witnessed here" in text
    assert f"✓ record-committed witnessed at step {len(trace) - 1}" in text
    assert "violated" not in text and "lost:" not in text


def test_a_trace_without_a_property_has_no_verdict(tmp_path, kip101):
    path = itf.save(replace(kip101, property_name=None, expectation=None, doc=""), tmp_path / "plain.itf.json")
    view = build_view(check_trace(itf.load(path)))
    text = render_text(view)
    assert view.outcome is None and view.title == "trace of 9 states"
    assert "violated" not in text and "witnessed" not in text and "step 8/8" in text


def test_text_from_a_trace_is_never_read_as_rich_markup(kip101):
    steps = list(kip101.steps)
    steps[3] = Step(Action("[bold red]Evil[/bold red]", (("replica", 0),)), steps[3].state)
    text = render_text(build_view(replace(kip101, steps=tuple(steps), doc="[link=x]doc[/link]")), color=True)
    assert "[bold red]Evil[/bold red]" in plain(text)
    assert "[link=x]doc[/link]" in plain(text)


def test_view_trace_prints_plain_text_when_piped(tmp_path, kip101):
    path = itf.save(kip101, tmp_path / "kip101.itf.json")
    result = run_cli(str(path))
    assert result.returncode == 0, result.stderr
    assert "\x1b[" not in result.stdout
    assert result.stdout == render_text(build_view(check_trace(kip101)), width=WIDTH)


def test_view_trace_colours_on_request_and_not_with_no_color(tmp_path, kip101):
    path = itf.save(kip101, tmp_path / "kip101.itf.json")
    assert "\x1b[" in run_cli(str(path), "--color").stdout
    assert "\x1b[" not in run_cli(str(path), "--no-color").stdout
    changed = run_cli(str(path), "--changed-only", "--width", "120")
    assert changed.returncode == 0
    assert "only what changed is shown" in changed.stdout


def test_format_json_prints_the_trace_back_normalised(tmp_path, kip101):
    path = itf.save(kip101, tmp_path / "kip101.itf.json")
    # the same trace, written with sets and requests out of order and other indentation
    data = json.loads(path.read_text())
    for st in data["states"]:
        st["quorumState"]["isr"]["#set"].reverse()
        st["leaderAndIsrRequests"]["#set"].reverse()
        st["replicaLog"]["#map"].reverse()
    messy = tmp_path / "messy.itf.json"
    messy.write_text(json.dumps(data))
    result = run_cli(str(messy), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == itf.to_itf(kip101)
    assert result.stdout == path.read_text()


def test_check_model_view_shows_the_violation_trace_at_once(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "isrcheck.cli.check_model", "--core", "--protocol", "hw-truncation", "--rf", "2",
         "--no-symmetry", "--property", "weak-isr", "--trace-dir", str(tmp_path), "--view", "--no-progress"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": ""},
    )
    assert result.returncode == 1, result.stderr
    report, view = result.stdout.split("isrcheck trace: ", 1)
    assert "weak-isr  VIOLATED in 9 states" in report
    assert "✗ weak-isr violated here" in view
    assert "\x1b[" not in result.stdout


def test_check_model_view_keeps_json_on_stdout(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "isrcheck.cli.check_model", "--core", "--protocol", "hw-truncation", "--rf", "2",
         "--no-symmetry", "--property", "weak-isr", "--trace-dir", str(tmp_path), "--view", "--format", "json",
         "--no-progress"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1
    assert json.loads(result.stdout)["properties"][0]["status"] == "violated"
    assert "✗ weak-isr violated here" in result.stderr
