"""Issue 17, check-suite: suites that are nonsense are refused in one line before anything
runs; output paths are checked first; a write that fails after the checks ran loses no
verdict (every line printed, then one line on stderr naming what was written, exit 2)."""

from __future__ import annotations

import os
import stat
import subprocess
import textwrap

import pytest
from click.testing import CliRunner

from isrcheck.cli import check_suite, suite_run

from .clitools import command
from .hardening_tools import during_the_run, one_line_error

SUITE = """\
[[check]]
name = "acks 1"
rf = 2
max-records = 1
acks = "1"
expect = { acked-survive = "violated-within 6" }
"""


def write(tmp_path, text: str, name: str = "suite.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def suite(*args: str):
    return CliRunner().invoke(check_suite.main, [*args, "--jobs", "1", "--no-progress"])


def refused(*args: str) -> str:
    return one_line_error(suite(*args), "check-suite")


# ---- nonsense in the suite file -----------------------------------------------------------------

CHECK = '[[check]]\nrf = 2\nmax-records = 1\n'
BAD_SUITES = [
    ("a list nested 3,000 deep", CHECK + "min-isr = " + "[" * 3000 + "]" * 3000 + "\n",
     "suite.toml:4: values nested more than 64 levels deep"),
    ("an inline table nested 3,000 deep", CHECK + "expect = " + "{a=" * 3000 + "1" + "}" * 3000 + "\n",
     "suite.toml:4: values nested more than 64 levels deep"),
    ("an empty check name", '[[check]]\nname = ""\nrf = 2\nexpect = { weak-isr = "holds" }\n',
     "suite.toml:2: name is empty"),
    ("a blank suite name", 'name = "  "\n' + CHECK + 'expect = { weak-isr = "holds" }\n',
     "suite.toml:1: name is empty"),
    ("a NUL in a check name", '[[check]]\nname = "a\\u0000b"\nrf = 2\nexpect = { weak-isr = "holds" }\n',
     "suite.toml:2: name 'a\\x00b' holds the control character U+0000"),
    ("a line break in a check name", '[[check]]\nname = "a\\nb"\nrf = 2\nexpect = { weak-isr = "holds" }\n',
     "holds the control character U+000A"),
    ("max-depth 0", CHECK + 'max-depth = 0\nexpect = { weak-isr = "holds" }\n',
     "suite.toml:4: max-depth: 0: a trace has at least one state"),
    ("a bound of 23 digits", CHECK + 'expect = { weak-isr = "violated-within 99999999999999999999999" }\n',
     "N in violated-within N counts states, from 1 to 1,000,000"),
    ("a bound in Arabic-Indic digits", CHECK + 'expect = { weak-isr = "violated-within ٣" }\n',
     "expect weak-isr = 'violated-within ٣'"),
    ("an empty Spark master", CHECK + 'engine = "spark"\nspark-master = ""\n'
     'expect = { weak-isr = "holds" }\n', "spark-master: the URL is empty"),
]


@pytest.mark.parametrize("text,words", [c[1:] for c in BAD_SUITES], ids=[c[0] for c in BAD_SUITES])
def test_a_nonsense_suite_is_refused_in_one_line(tmp_path, text, words):
    line = refused(str(write(tmp_path, text)), "--list")
    assert words in line


def test_a_suite_file_that_is_a_device_is_refused(tmp_path):
    assert "suite file /dev/null is not a regular file" in refused("/dev/null")


def test_a_suite_file_that_is_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "suite.toml"
    os.mkfifo(fifo)
    proc = subprocess.run([command("check-suite"), str(fifo)], capture_output=True, text=True, timeout=20)
    assert proc.returncode == 2
    assert proc.stderr == f"check-suite: error: suite file {fifo} is not a regular file\n"


# ---- output paths checked before the first check ------------------------------------------------


@pytest.fixture
def no_check_runs(monkeypatch):
    monkeypatch.setattr(suite_run, "run_check", lambda *a, **k: pytest.fail("a check ran"))


BAD_OUTPUTS = [
    (["--trace-dir", "/dev/null"], "--trace-dir /dev/null: /dev/null is not a folder"),
    (["--trace-dir", ""], "Invalid value for '--trace-dir': the path is empty"),
    (["--junit", ""], "Invalid value for '--junit': the path is empty"),
    (["--report", ""], "Invalid value for '--report': the path is empty"),
    (["--junit", "/proc/isrcheck.xml"], "--junit /proc/isrcheck.xml: cannot write in /proc"),
    (["--trace-dir", "d" * 300], "--trace-dir: a name in the path is longer than 255 bytes"),
    (["--jobs", "٣"], "'٣' is not a valid integer: use the digits 0-9"),
    (["--jobs", "1000"], "1000 is not in the range 1<=x<=256"),
]


@pytest.mark.parametrize("args,words", BAD_OUTPUTS, ids=[" ".join(a)[:30] for a, _ in BAD_OUTPUTS])
def test_a_bad_output_path_is_refused_before_any_check_runs(tmp_path, no_check_runs, args, words):
    path = write(tmp_path, SUITE)
    result = CliRunner().invoke(check_suite.main, [str(path), "--no-progress", *args])
    assert words in one_line_error(result, "check-suite")
    assert result.stdout == ""


def test_a_fifo_as_the_report_is_refused_and_kept(tmp_path, no_check_runs):
    fifo = tmp_path / "r.html"
    os.mkfifo(fifo)
    line = refused(str(write(tmp_path, SUITE)), "--report", str(fifo))
    assert f"--report {fifo} is not a regular file (a device, FIFO or socket): refused" in line
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


# ---- results first -------------------------------------------------------------------------------


def test_a_trace_folder_that_breaks_during_the_run_loses_no_verdict(tmp_path, monkeypatch):
    traces = tmp_path / "traces"
    during_the_run(monkeypatch, lambda: traces.write_text("now a file"))
    result = suite(str(write(tmp_path, SUITE)), "--trace-dir", str(traces))
    line = one_line_error(result, "check-suite")
    assert "PASS      acks 1: acked-survive violated in 6 states" in result.stdout
    assert "1 expectations: 1 met, 0 not met" in result.stdout
    assert f"not written: 1 trace (acks 1: acked-survive: cannot write {traces}/suite/acks-1/" in line
    assert line.endswith("; written: the verdicts above")


def test_report_folders_that_break_during_the_run_are_named_after_the_verdicts(tmp_path, monkeypatch):
    reports = tmp_path / "reports"
    during_the_run(monkeypatch, lambda: reports.write_text("now a file"))
    result = suite(str(write(tmp_path, SUITE)), "--trace-dir", str(tmp_path / "t"),
                   "--junit", str(reports / "j.xml"), "--report", str(reports / "r.html"))
    line = one_line_error(result, "check-suite")
    assert "PASS      acks 1" in result.stdout and "1 met" in result.stdout
    assert f"not written: JUnit report (cannot write {reports / 'j.xml'}" in line
    assert f"; trade-off report (cannot write {reports / 'r.html'}" in line
    assert line.endswith(f"written: the verdicts above, 1 trace under {tmp_path / 't' / 'suite'}/")


def test_a_symbolic_link_as_the_report_is_followed(tmp_path):
    target = tmp_path / "real.html"
    target.write_text("old")
    (tmp_path / "r.html").symlink_to(target)
    result = suite(str(write(tmp_path, SUITE)), "--trace-dir", str(tmp_path / "t"),
                   "--report", str(tmp_path / "r.html"))
    assert result.exit_code == 0, (result.output, result.exception)
    assert (tmp_path / "r.html").is_symlink() and target.read_text().startswith("<!DOCTYPE html>")
