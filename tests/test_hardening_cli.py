"""Issue 17, check-model and view-trace: every output path is checked before the search, a
write that fails later loses no verdict (one line on stderr, exit 2), nonsense options are
refused in one line, and an output never replaces a device, a FIFO or a symbolic link.

Most run in this process (click's CliRunner); see hardening_tools for how a path goes bad
during the run.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from isrcheck.cli import runner
from isrcheck.cli.check_model import main as check_model
from isrcheck.cli.view_trace import main as view_trace
from isrcheck.traces import itf

from .hardening_tools import during_the_run, one_line_error
from .view_helpers import kip101_trace

# acks=1 loses an acknowledged record in 6 states: a violation (and a trace) in a fraction of a second
VIOLATED = ["--rf", "2", "--max-records", "1", "--acks", "1", "--property", "acked-survive", "--no-progress"]


def invoke(command_, *args: str):
    return CliRunner().invoke(command_, list(args))


# ---- results first: a path that goes bad during the run ---------------------------------------


def test_a_trace_folder_that_breaks_during_the_run_loses_no_verdict(tmp_path, monkeypatch):
    traces = tmp_path / "traces"  # absent at the start: it can be created, so the check passes
    during_the_run(monkeypatch, lambda: traces.write_text("now a file"))
    result = invoke(check_model, *VIOLATED, "--trace-dir", str(traces))
    line = one_line_error(result)
    assert "acked-survive  VIOLATED in 6 states: trace not saved" in result.stdout
    assert "searched until every property was decided" in result.stdout
    assert "not written: the acked-survive trace (cannot write" in line
    assert line.endswith("written: the report on stdout")


def test_the_json_report_says_why_a_trace_is_missing(tmp_path, monkeypatch):
    traces = tmp_path / "traces"
    during_the_run(monkeypatch, lambda: traces.write_text("now a file"))
    result = invoke(check_model, *VIOLATED, "--trace-dir", str(traces), "--format", "json")
    one_line_error(result)
    [prop] = json.loads(result.stdout)["properties"]
    assert prop["status"] == "violated" and prop["trace_file"] is None
    assert prop["trace_error"].startswith(f"cannot write {traces}/")


def test_a_junit_folder_that_breaks_during_the_run_names_what_was_written(tmp_path, monkeypatch):
    out = tmp_path / "reports"
    during_the_run(monkeypatch, lambda: out.write_text("now a file"))
    result = invoke(check_model, *VIOLATED, "--trace-dir", str(tmp_path / "t"), "--junit", str(out / "j.xml"))
    line = one_line_error(result)
    assert "VIOLATED in 6 states: trace saved to" in result.stdout
    assert f"not written: JUnit report (cannot write {out / 'j.xml'}" in line
    assert f"written: the report on stdout, 1 trace in {tmp_path / 't'}" in line
    assert out.read_text() == "now a file"


def test_a_checkpoint_write_that_fails_mid_search_is_one_line(tmp_path, monkeypatch):
    def refuse():
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "ck" / "MANIFEST"))

    during_the_run(monkeypatch, refuse)
    line = one_line_error(invoke(check_model, *VIOLATED, "--trace-dir", str(tmp_path)))
    assert line.endswith(f"the check stopped, nothing decided: {tmp_path / 'ck' / 'MANIFEST'}: Permission denied")


def test_running_out_of_file_descriptors_is_one_line(tmp_path, monkeypatch):
    def emfile():
        raise OSError(errno.EMFILE, "Too many open files")

    during_the_run(monkeypatch, emfile)
    line = one_line_error(invoke(check_model, *VIOLATED, "--workers", "2", "--trace-dir", str(tmp_path)))
    assert "too many open files for --workers 2 (ulimit -n)" in line


# ---- output paths checked before the search ---------------------------------------------------


def refused_before_the_search(monkeypatch, *args: str) -> str:
    monkeypatch.setattr(runner, "get_engine", lambda *a, **k: pytest.fail("the search started"))
    result = invoke(check_model, *VIOLATED, *args)
    assert result.stdout == ""
    return one_line_error(result)


@pytest.mark.parametrize("option", ["--trace-dir", "--checkpoint", "--resume", "--junit"])
def test_an_empty_path_is_refused(monkeypatch, option):
    assert "the path is empty" in refused_before_the_search(monkeypatch, option, "")


def test_a_device_as_the_trace_folder_is_refused(monkeypatch):
    assert "--trace-dir /dev/null: /dev/null is not a folder" in refused_before_the_search(
        monkeypatch, "--trace-dir", "/dev/null")


def test_a_name_longer_than_the_file_system_allows_is_refused(monkeypatch, tmp_path):
    long = str(tmp_path / ("d" * 300))
    for option in ("--trace-dir", "--checkpoint", "--junit"):
        line = refused_before_the_search(monkeypatch, option, long)
        assert f"{option}: a name in the path is longer than 255 bytes" in line


def test_a_folder_where_a_file_is_needed_is_refused(monkeypatch, tmp_path):
    (tmp_path / "file").write_text("x")
    line = refused_before_the_search(monkeypatch, "--checkpoint", str(tmp_path / "file" / "ck"))
    assert f"--checkpoint {tmp_path / 'file' / 'ck'}: {tmp_path / 'file'} is not a folder" in line
    assert f"'{tmp_path}' is a directory" in refused_before_the_search(monkeypatch, "--junit", str(tmp_path))


def test_a_folder_the_kernel_will_not_write_in_is_refused_even_for_root(monkeypatch):
    line = refused_before_the_search(monkeypatch, "--trace-dir", "/proc/isrcheck-traces")
    assert "--trace-dir /proc/isrcheck-traces: cannot write in /proc" in line


def test_a_fifo_as_the_junit_report_is_refused_and_kept(monkeypatch, tmp_path):
    fifo = tmp_path / "report.xml"
    os.mkfifo(fifo)
    line = refused_before_the_search(monkeypatch, "--junit", str(fifo))
    assert "is not a regular file (a device, FIFO or socket): refused" in line
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


# ---- nonsense options -------------------------------------------------------------------------

NONSENSE = [
    (["--max-depth", "0"], "a trace has at least one state (1: the initial state alone)"),
    (["--engine", "z3", "--max-depth", "0"], "a trace has at least one state"),
    (["--rf", "٣"], "'٣' is not a valid integer: use the digits 0-9"),
    (["--crashes", "٣"], "use the digits 0-9"),
    (["--max-leader-epoch", "٣"], "neither a number nor 'unbounded': use the digits 0-9"),
    (["--workers", "２"], "use the digits 0-9"),
    (["--max-memory", "２G"], "'２G' is not a size"),
    (["--max-memory", "99999999999999999999G"], "is more than 1024T"),
    (["--max-memory", "9" * 400 + "G"], "is not a size"),
    (["--time-limit", "9" * 400], "is not a duration"),
    (["--time-limit", "9999h"], "longer than a year"),
    (["--kernel", "scalar", "--workers", "1000"], "--workers 1000: at most 256"),
    (["--engine", "spark", "--spark-master", ""], "--spark-master: the URL is empty"),
]


@pytest.mark.parametrize("args,words", NONSENSE, ids=[" ".join(a)[:40] for a, _ in NONSENSE])
def test_nonsense_is_refused_in_one_line(monkeypatch, tmp_path, args, words):
    assert words in refused_before_the_search(monkeypatch, *args, "--trace-dir", str(tmp_path))


def test_a_max_depth_of_1_checks_the_initial_state_alone(tmp_path):
    result = invoke(check_model, *VIOLATED, "--max-depth", "1", "--trace-dir", str(tmp_path), "--format", "json")
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and report["states"] == 1 and report["depth"] == 1


def test_help_states_the_bounds():
    text = " ".join(invoke(check_model, "--help").stdout.split())
    assert "at least 1 (the initial state alone)" in text
    assert "1 to 256" in text and "at most 1024T" in text


# ---- view-trace --html never replaces what it should not ----------------------------------------


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory) -> Path:
    return itf.save(kip101_trace(), tmp_path_factory.mktemp("trace") / "kip101.itf.json")


def test_html_into_a_fifo_is_refused_and_the_fifo_kept(trace_file, tmp_path):
    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    line = one_line_error(invoke(view_trace, str(trace_file), "--html", str(fifo)), "view-trace")
    assert "is not a regular file (a device, FIFO or socket): refused" in line
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_html_into_a_device_is_refused_and_the_device_kept(trace_file, tmp_path):
    device = tmp_path / "full"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # what /dev/full is
    except PermissionError:
        pytest.skip("creating a device node needs root")
    line = one_line_error(invoke(view_trace, str(trace_file), "--html", str(device)), "view-trace")
    assert "refused" in line
    assert stat.S_ISCHR(os.lstat(device).st_mode)


def test_html_through_a_symbolic_link_writes_its_target_and_says_so(trace_file, tmp_path):
    target = tmp_path / "real.html"
    target.write_text("old")
    link = tmp_path / "page.html"
    link.symlink_to(target)
    result = invoke(view_trace, str(trace_file), "--html", str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert result.stderr == f"wrote {target} through the symbolic link {link} ({len(kip101_trace())} states)\n"


def test_html_through_a_link_to_nothing_is_refused_as_cp_refuses_it(trace_file, tmp_path):
    link = tmp_path / "page.html"
    link.symlink_to(tmp_path / "gone" / "page.html")
    line = one_line_error(invoke(view_trace, str(trace_file), "--html", str(link)), "view-trace")
    assert f"--html {link} is a symbolic link to {tmp_path / 'gone' / 'page.html'}, which does not exist" in line
    assert link.is_symlink() and not (tmp_path / "gone").exists()


def test_html_to_an_empty_path_is_refused(trace_file):
    line = one_line_error(invoke(view_trace, str(trace_file), "--html", ""), "view-trace")
    assert "the path is empty" in line


def test_view_trace_width_takes_ascii_digits_only(trace_file):
    line = one_line_error(invoke(view_trace, str(trace_file), "--width", "٣٠٠"), "view-trace")
    assert "use the digits 0-9" in line


def test_a_crash_in_the_command_would_show_here_as_a_traceback(tmp_path):
    """The subprocess way, once: a refused path is one line end to end, with no traceback."""
    proc = subprocess.run([sys.executable, "-m", "isrcheck.cli.check_model", *VIOLATED, "--trace-dir", "/dev/null"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr == "check-model: error: --trace-dir /dev/null: /dev/null is not a folder\n"


def test_a_replaced_output_keeps_its_permissions(tmp_path):
    """An atomic write replaces the file by a new one: it takes the old one's mode, not the umask's."""
    from isrcheck.files import atomic_write

    out = tmp_path / "report.html"
    out.write_text("old")
    out.chmod(0o600)
    atomic_write(out, "new")
    assert out.read_text() == "new" and (out.stat().st_mode & 0o777) == 0o600
