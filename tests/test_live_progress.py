"""check-model's live progress display, run for real under a pseudo-terminal.

stderr is the terminal (as a user's shell gives it); stdout is a pipe unless a test asks
for the terminal there too, so that the report can be read back exactly. Each run takes
a few seconds: the scalar BFS on one process reports how far into its level it is.
"""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import signal
import struct
import subprocess
import termios
import threading
import time

import pytest

from isrcheck.checker import CheckOptions, Observer, Progress, get_engine
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import select

from .clitools import command, run_cli

SCALAR = ["--kernel", "scalar", "--workers", "1"]
FEW_SECONDS = ["--rf", "3", "--min-isr", "2", "--max-records", "1", *SCALAR]  # about 2 s of search, all holds
LONG = ["--rf", "3", "--min-isr", "2", *SCALAR, "--property", "committed-survive"]  # some 20 s of search
COLOR = re.compile(r"\x1b\[[0-9;]*m")  # a colour or style (SGR) sequence
CURSOR = re.compile(r"\x1b\[(\d*[ABK]|\?25[lh])")  # up, down, erase the line, hide or show the cursor


class Terminal:
    """check-model with stderr (and optionally stdout) on a pseudo-terminal of 160 columns."""

    def __init__(self, args: list[str], tmp_path, *, stdout_tty: bool = False, env: dict | None = None) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
        clean = {k: v for k, v in os.environ.items()
                 if k not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES")}
        self.proc = subprocess.Popen(
            [command("check-model"), *args, "--trace-dir", str(tmp_path / "traces")],
            stdin=subprocess.DEVNULL, stdout=slave if stdout_tty else subprocess.PIPE, stderr=slave,
            env={**clean, "TERM": "xterm-256color", **(env or {})}, cwd=tmp_path)
        os.close(slave)
        self.master, self.chunks = master, []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not data:
                break
            self.chunks.append(data)

    @property
    def screen(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")

    def wait_for(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            assert time.monotonic() < deadline and self.proc.poll() is None, f"no {text!r} in {self.screen!r}"
            time.sleep(0.05)

    def finish(self, timeout: float = 120) -> tuple[int, str, str]:
        """(exit code, stdout, what the terminal received)."""
        out, _ = self.proc.communicate(timeout=timeout)
        self.reader.join(timeout=10)
        os.close(self.master)
        return self.proc.returncode, (out or b"").decode(), self.screen


def frames(screen: str) -> list[str]:
    """The lines the display drew, in order (redraws included), without escape sequences."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    return [line for line in re.split(r"[\r\n]+", plain) if line.strip()]


def test_the_live_display_redraws_in_place_and_leaves_the_report_whole(tmp_path):
    term = Terminal(FEW_SECONDS, tmp_path)
    code, out, screen = term.finish()
    assert code == 0, screen
    assert CURSOR.search(screen), "the display did not move the cursor: it printed lines"
    drawn = [line for line in frames(screen) if "states/s" in line]
    figures = {re.search(r"([\d,]+) distinct states", line).group(1) for line in drawn}
    assert len(figures) >= 3, drawn  # several reports, redrawn in place
    assert all(re.fullmatch(r"  \.\.\. [\d,]+ distinct states, [\d,]+ queued, depth \d+, [\d,]+ states/s", line)
               for line in drawn), drawn
    assert any(re.fullmatch(r"      memory [\d,]+ MiB, \d+:\d\d:\d\d elapsed", line) for line in frames(screen))
    levels = [line for line in frames(screen) if line.startswith("      level ")]  # the level's share, its estimate
    assert levels and all(re.fullmatch(r"      level [━─]{24} \d+% of [\d,]+(, (about \d+ (s|min).*|under 1 s) left)?",
                                       line) for line in levels), levels
    assert any(line.endswith(" left") for line in levels)
    header = frames(screen)[0]
    assert header.startswith("isrcheck: protocol kip-320, rf 3"), header  # the configuration first
    # the report is on stdout alone, exactly as when nothing is shown on the terminal
    assert out.startswith("Answer, within bounds: ") and "\x1b" not in out  # the answer first (issue 54)
    assert out.splitlines()[1] == header
    assert "searched the whole bounded space" in out and "states/s" in out
    assert out.rstrip().endswith(".") and "  committed-survive  holds within bounds" in out


def test_a_first_ctrl_c_stops_cleanly_with_what_was_explored(tmp_path):
    term = Terminal(LONG, tmp_path)
    term.wait_for("states/s")
    term.proc.send_signal(signal.SIGINT)
    code, out, screen = term.finish(timeout=60)
    assert code == 3, screen
    assert "  ... stopping at the next clean point (Ctrl-C again to abort)" in frames(screen)
    assert "INCOMPLETE (interrupted)" in out and "committed-survive  unknown: no violation up to depth" in out
    assert screen.endswith("\x1b[?25h")  # the display stopped last, the cursor shown again


def test_no_colour_under_no_color_or_no_color_flag_but_the_display_still_redraws(tmp_path):
    for env, flags in (({"NO_COLOR": "1"}, []), ({}, ["--no-color"])):
        term = Terminal([*FEW_SECONDS, "--time-limit", "3s", *flags], tmp_path, stdout_tty=True, env=env)
        code, _, screen = term.finish()
        assert code in (0, 3)
        assert not COLOR.search(screen), COLOR.findall(screen)[:5]
        assert CURSOR.search(screen) and "states/s" in screen


def test_colour_on_a_terminal_verdicts_green(tmp_path):
    term = Terminal(FEW_SECONDS, tmp_path, stdout_tty=True)
    code, _, screen = term.finish()
    assert code == 0 and COLOR.search(screen)
    assert re.search(r"committed-survive  \x1b\[[0-9;]*32[0-9;]*m", screen) or \
        re.search(r"committed-survive  \x1b\[32m", screen), screen[-2000:]


def test_color_forces_colour_into_a_pipe_and_no_color_keeps_it_out(tmp_path):
    violated = ["--rf", "2", "--max-records", "1", "--acks", "1", "--property", "acked-survive",
                "--property", "record-committed", "--no-progress", "--trace-dir", str(tmp_path)]
    forced = run_cli("check-model", *violated, "--color", env={"NO_COLOR": "1"})
    assert forced.returncode == 1
    assert "\x1b[31m" in forced.stdout or re.search(r"\x1b\[[0-9;]*31", forced.stdout)  # VIOLATED in red
    assert re.search(r"record-committed  \x1b\[[0-9;]*m", forced.stdout)  # witnessed: green
    piped = run_cli("check-model", *violated)

    def words(text: str) -> list[str]:  # the report less its timings
        return [line for line in text.splitlines() if not line.startswith("states: ")]

    assert words(COLOR.sub("", forced.stdout)) == words(piped.stdout)  # the same words
    assert not COLOR.search(piped.stdout + piped.stderr)


def test_piped_progress_stays_plain_lines(tmp_path):
    # piped progress comes every 2 s: a 5 s time limit makes at least one line on any machine
    proc = run_cli("check-model", *LONG, "--time-limit", "5s", "--progress", "--color", "--trace-dir", str(tmp_path))
    assert proc.returncode == 3, proc.stderr  # incomplete: stopped by the time limit
    lines = [line for line in proc.stderr.splitlines() if line.startswith("  ... ")]
    assert lines and all(re.fullmatch(r"  \.\.\. [\d,]+ distinct states, [\d,]+ queued, depth \d+, "
                                      r"[\d,]+ states/s, [\d.]+ s", line) for line in lines), proc.stderr
    assert "\x1b" not in proc.stderr


class Seen(Observer):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Progress] = []

    def progress(self, info: Progress) -> None:
        self.seen.append(info)


def within_levels(seen: list[Progress]) -> list[Progress]:
    within = [p for p in seen if p.level_done is not None]
    assert all(0 <= p.level_done <= p.level_size and p.queue >= 0 for p in within)
    return [p for p in within if p.level_done < p.level_size]


def test_the_scalar_and_vector_bfs_say_how_far_into_the_level_they_are():
    from isrcheck.checker.bfs_vector import VectorSearch, vector_kernel

    config = ModelConfig(rf=2, max_records=2)
    model, props = ReplicationModel(config), select(config, None, "bfs")
    options = CheckOptions(symmetry=True, explore_all=True, progress_interval=0.0)
    scalar = Seen()
    expected = get_engine("bfs", kernel="scalar", workers=1).check(model, props, options, scalar)
    assert within_levels(scalar.seen)
    vector = Seen()
    kernel, _ = vector_kernel(model, props, options)
    result = VectorSearch(model, kernel, props, options, vector, workers=1, chunk=256).run()
    assert within_levels(vector.seen)  # between chunks
    ends = [p for p in vector.seen if p.level_done is None]  # and at a level's end, as before
    assert ends and ends[-1].states == result.stats.states and ends[-1].queue == vector.seen[-1].level_size
    assert (result.stats.states, result.stats.depth) == (expected.stats.states, expected.stats.depth)
    plain = Progress(5, 2, 3, 9, 1.0)
    assert (plain.level_done, plain.level_size) == (None, None)  # engines that cannot say leave them out


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_display_is_stopped_however_the_check_ends(monkeypatch):
    """An exception inside the check: the display is stopped (cursor shown again) before
    anything else is written, and the handlers of Ctrl-C and SIGTERM are put back."""
    from isrcheck.cli.common import CliObserver

    monkeypatch.setenv("TERM", "xterm-256color")
    err = FakeTerminal()
    monkeypatch.setattr("sys.stderr", err)
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with pytest.raises(RuntimeError):
        with CliObserver(None, ["isrcheck: the header"], live=True, color=False) as observer:
            assert observer.live
            observer.progress(Progress(1234, 56, 7, 8900, 1.5, 10, 40))
            raise RuntimeError("the engine broke")
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    text = err.getvalue()
    assert text.startswith("isrcheck: the header\n") and text.endswith("\x1b[?25h")
    assert "1,234 distinct states, 56 queued, depth 7" in text and "25% of 40" in text
    assert not COLOR.search(text)


def test_without_a_terminal_or_with_no_progress_there_is_no_display(monkeypatch):
    from isrcheck.cli.common import CliObserver

    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setattr("sys.stderr", FakeTerminal())
    assert not CliObserver(False, live=True).live
    assert not CliObserver(None).live  # check-suite's: plain lines
    monkeypatch.setenv("TERM", "dumb")
    assert not CliObserver(None, live=True).live  # a terminal that cannot redraw: plain lines
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert not CliObserver(True, live=True).live


def test_the_estimate_of_the_level_left():
    from isrcheck.cli.live import LevelClock, duration

    clock = LevelClock()
    clock.update(Progress(1000, 500, 3, 0, 10.0, 100, 600), 100.0)  # first report: the run's 50 states/s
    assert clock.left(100.0) == pytest.approx(10.0) and clock.left(104.0) == pytest.approx(6.0)
    clock.update(Progress(1200, 400, 3, 0, 11.0, 200, 600), 101.0)  # then the level's own: 300 states/s
    assert clock.left(101.0) == pytest.approx(400 / 300)
    clock.update(Progress(1200, 400, 3, 0, 11.0), 101.0)  # an engine that cannot say
    assert clock.left(101.0) is None
    assert (duration(4.4), duration(200), duration(7300)) == ("4 s", "3 min 20 s", "2 h 01 min")
