"""What every command shares: the exit-code policy and one-line usage errors.

Exit codes (a contract): 0 every checked property holds within the bounds (or every
suite expectation is met); 1 a property is violated, even by a run that stopped early
or a simulation (or an expectation is not met); 2 usage or configuration error, one
line on stderr; 3 incomplete (interrupted, out of time or memory, a simulation that
broke nothing), with what was explored so far.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable

import click

from isrcheck.checker import CheckResult, Observer, Progress
from isrcheck.files import FileProblem, write_failure
from isrcheck.properties import BY_NAME, verdict

from .units import parse_duration, parse_size, whole_number

OK, FAILED, USAGE, INCOMPLETE = 0, 1, 2, 3
MAX_WORKERS = 256  # BFS workers and suite jobs: processes or threads, far beyond any useful count


def process_started() -> float:
    """When this process began, on ``time.monotonic``'s clock (from /proc), so that a command's
    --time-limit counts from its first instruction: the interpreter's start and the imports,
    a second or more on a loaded machine, are the user's time too."""
    try:
        with open("/proc/self/stat") as f:
            after_name = f.read().rsplit(")", 1)[1].split()
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(after_name[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return time.monotonic()
    return time.monotonic() - min(max(0.0, age), 60.0)


def exit_code(result: CheckResult, decides: Callable[[str], bool] = lambda name: True) -> int:
    """1 when a deciding property's verdict is not the one a build wants (``verdict.good``); a
    counterexample is final, so a run that found one is 1 even when it stopped early (a
    simulation, a time limit); 3 when it stopped early otherwise. ``decides``: which
    properties decide (``CheckRun.decides``): the others are reported, not judged."""
    props = [p for p in result.properties if decides(p.name)]
    if any(verdict.broken(p, p.status) for p in props):
        return FAILED
    if not result.complete:
        return INCOMPLETE
    return OK if all(verdict.good(BY_NAME.get(p.name, p), p.status) for p in props) else FAILED


class UsageFailure(Exception):
    """Raised anywhere in a command to end it with one line and exit code 2."""


def refuse_options(explicit: set[str], options: dict[str, str], engine: str, why: str = "") -> None:
    """A usage failure when any of ``options`` (parameter name -> option) was given: they
    need ``--engine engine``."""
    given = [flag for name, flag in options.items() if name in explicit]
    if given:
        raise UsageFailure(f"{', '.join(given)} needs --engine {engine}{why}")


class OneLineCommand(click.Command):
    """A click command whose usage errors are one line and exit 2, never a traceback."""

    def main(self, args: Any = None, prog_name: str | None = None, **extra: Any) -> Any:  # type: ignore[override]
        name = prog_name or self.name or "isrcheck"
        try:
            rv = super().main(args=args, prog_name=name, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:
            click.echo(e.ctx.get_help() if e.ctx else str(e))
            sys.exit(USAGE)
        except click.UsageError as e:
            click.echo(f"{name}: error: {_one_line(e.format_message())}", err=True)
            sys.exit(USAGE)
        except UsageFailure as e:
            click.echo(f"{name}: error: {_one_line(str(e))}", err=True)
            sys.exit(USAGE)
        except click.exceptions.Abort:
            click.echo(f"{name}: interrupted", err=True)
            sys.exit(INCOMPLETE)
        if isinstance(rv, int):
            sys.exit(rv)
        sys.exit(OK)


def _one_line(message: str) -> str:
    return " ".join(message.split())


def wants_color(stream: Any = None, flag: bool | None = None) -> bool:
    """Whether to write colour to ``stream`` (stdout when None): --color/--no-color (``flag``)
    when given; otherwise on a terminal, unless NO_COLOR is set to anything but the empty word
    (https://no-color.org). The one rule of every command."""
    if flag is not None:
        return flag
    stream = sys.stdout if stream is None else stream
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        terminal = False
    return terminal and not os.environ.get("NO_COLOR")


COLOR_HELP = "Colour [default: on a terminal, unless NO_COLOR is set]."


def color_option(command: Any) -> Any:
    """The --color/--no-color option of every command: its ``color`` parameter is True, False,
    or None for ``wants_color``'s default (a terminal, and no NO_COLOR)."""
    return click.option("--color/--no-color", "color", default=None, help=COLOR_HELP)(command)


LIVE_INTERVAL = 0.5  # seconds between the engines' reports while the live display shows them
STOPPING = "  ... stopping at the next clean point (Ctrl-C again to abort)"
# Ctrl-C, and the signal that timeout(1), docker stop, Kubernetes and CI runners send before
# they kill: both stop the run at a clean point with what it found (a second one aborts)
STOP_REASONS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


class CliObserver(Observer):
    """Progress on stderr when it is a terminal (or ``show_progress``); the first Ctrl-C (or
    SIGTERM) asks for a clean stop, the second aborts.

    With ``live`` (check-model) and stderr a terminal, progress is a display redrawn in place
    (``live.LiveProgress``; ``color`` as ``wants_color`` decides); otherwise, or on a dumb
    terminal, one plain line per report. The display is stopped when the ``with`` block ends,
    however it ends, so that nothing printed after it is garbled."""

    def __init__(self, show_progress: bool | None = None, header: list[str] | None = None, *,
                 live: bool = False, color: bool | None = None) -> None:
        super().__init__()
        terminal = sys.stderr.isatty()
        self.show_progress = terminal if show_progress is None else show_progress
        self._previous = None
        self._header = header or []  # what is checked: said once, before the first progress line
        self._display = None
        if live and self.show_progress and terminal:
            from .live import LiveProgress, live_console

            console = live_console(wants_color(sys.stderr, color))
            self._display = LiveProgress(console, self._header) if console is not None else None

    @property
    def live(self) -> bool:
        """Whether progress is the live display (the engines then report every LIVE_INTERVAL)."""
        return self._display is not None

    def progress(self, info: Progress) -> None:
        if self._display is not None:
            self._display.update(info)
        elif self.show_progress:
            for line in self._header:
                click.echo(line, err=True)
            self._header = []
            click.echo(f"  ... {info.line()}", err=True)

    def __enter__(self) -> "CliObserver":
        def handler(signum, frame):  # noqa: ARG001
            if self.stop_reason:
                raise KeyboardInterrupt
            self.request_stop(STOP_REASONS[signum])
            if self._display is not None and self._display.live is not None:
                self._display.say(STOPPING)  # no output from here: the next redraw shows it
            else:
                click.echo(STOPPING, err=True)

        self._previous = {signum: signal.signal(signum, handler) for signum in STOP_REASONS}
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self._display is not None:
                self._display.stop()
        finally:
            for signum, previous in (self._previous or {}).items():
                signal.signal(signum, previous)


def available_cores() -> int:
    """The cores this process may use: the default for BFS workers and check-suite jobs."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class AsciiInt(click.IntRange):
    """A whole number in the digits 0-9 alone, no sign and no space (``int`` would read ``+3``,
    `` 3`` and ``٣`` too): ``units.whole_number``, the one rule of every command's integer
    options; optionally within ``min`` and ``max`` (shown in --help)."""

    name = "integer"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str):
            try:
                value = whole_number(value)
            except ValueError as e:
                self.fail(str(e), param, ctx)
        return super().convert(value, param, ctx)

    def _describe_range(self) -> str:
        return "" if self.min is None and self.max is None else super()._describe_range()


class NonEmptyPath(click.Path):
    """A click path that refuses the empty name, which ``Path("")`` would read as the current folder."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str) and value == "":
            self.fail("the path is empty", param, ctx)
        return super().convert(value, param, ctx)


class Outputs:
    """What a command writes after its results are out, and what it could not: a failure
    never hides a verdict; it is said last, in one line, with what was written (exit 2)."""

    def __init__(self) -> None:
        self.written: list[str] = []
        self.failed: list[str] = []

    def write(self, what: str, path: Path, write: Callable[[], Any]) -> bool:
        """Run ``write``; remember ``what`` as written, or why it was not."""
        try:
            write()
        except (OSError, FileProblem) as e:
            self.failed.append(f"{what} ({write_failure(path, e)})")
            return False
        self.written.append(f"{what} {path}")
        return True

    def finish(self) -> None:
        """Raise UsageFailure naming what was not written and what was, if anything failed."""
        if self.failed:
            done = ", ".join(self.written) if self.written else "no file"
            raise UsageFailure(f"not written: {'; '.join(self.failed)}; written: {done}")


def parsed(parse):
    """A click callback that reads an option's text with ``parse`` (ValueError: a usage error)."""

    def callback(ctx, param, value):
        if value is None:
            return None
        try:
            return parse(value)
        except ValueError as e:
            raise click.BadParameter(str(e)) from None

    return callback


duration = parsed(parse_duration)  # --time-limit and the other durations of every command
size = parsed(parse_size)  # --max-memory
