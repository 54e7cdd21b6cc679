"""The live progress display of a check on a terminal: one rich ``Live`` region on stderr,
redrawn in place a few times a second.

It shows what the engine last reported (distinct states, states per second, the queue,
the depth), this process's memory (with the workers it started: shared pages counted
once), the time since the check began, and, where the engine says how far into the
level it is, how much of the level is done and about how long the rest will take.
Engines report at most every ``common.LIVE_INTERVAL`` seconds; the display's own clock
ticks in between. The engines run in the main thread; rich redraws from a thread of its own,
reading the last report (one reference) and the memory (at most once a second).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import psutil
from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from isrcheck.checker import Progress
from isrcheck.checker.engine import FamilyMemory, resident_size

REFRESH_PER_SECOND = 4
BAR = 24  # characters of the level's bar
MEMORY_EVERY = 1.0  # seconds between readings of the memory


def live_console(color: bool) -> Console | None:
    """A console on stderr that can redraw in place, or None (a dumb terminal: plain lines).
    ``color`` False: no colour or style sequence at all, only the cursor's movements."""
    console = Console(file=sys.stderr, force_terminal=True, color_system="auto" if color else None,
                      no_color=not color, highlight=False, markup=False, emoji=False)
    return None if console.is_dumb_terminal else console


class LevelClock:
    """The time left in the level being expanded: its states still to expand at the rate
    of expansion since the level's first report (before its second, the whole run's),
    counted down between reports. States expanded: the distinct states less those queued,
    in every engine that says how far into its level it is."""

    def __init__(self) -> None:
        self.level: tuple[int, int] | None = None
        self.first = (0.0, 0)  # (engine seconds, states expanded) at the level's first report
        self.ends_at: float | None = None  # time.monotonic() when the level should be done

    def update(self, info: Progress, now: float) -> None:
        if info.level_done is None or not info.level_size:
            self.level, self.ends_at = None, None
            return
        expanded = info.states - info.queue
        level = (info.depth, info.level_size)
        since = self.first if level == self.level else (0.0, 0)  # a new level: the run's average
        if level != self.level:
            self.level, self.first = level, (info.seconds, expanded)
        seconds, done = info.seconds - since[0], expanded - since[1]
        rate = done / seconds if seconds > 0 else 0.0
        self.ends_at = now + (info.level_size - info.level_done) / rate if rate > 0 else None

    def left(self, now: float) -> float | None:
        return None if self.ends_at is None else max(0.0, self.ends_at - now)


class MemoryGauge:
    """This process's memory and its children's (the multi-process BFS's workers, Spark's
    JVM), read at most once a second: the resident size alone, or with children the
    proportional sizes that count the pages they share once (``FamilyMemory``)."""

    def __init__(self) -> None:
        self.me = psutil.Process()
        self.family: FamilyMemory | None = None
        self.value, self.next = 0, 0.0

    def now(self, now: float) -> int:
        if now >= self.next:
            self.next = now + MEMORY_EVERY
            try:
                pids = [self.me.pid] + [c.pid for c in self.me.children(recursive=True)]
            except psutil.Error:
                pids = [self.me.pid]
            if len(pids) == 1:
                self.family, self.value = None, resident_size("self")
            else:
                if self.family is None or self.family.pids != pids:
                    self.family = FamilyMemory(pids, every=5.0)
                self.value = self.family.now()
        return self.value


def clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def duration(seconds: float) -> str:
    """About how long: '4 s', '3 min 20 s', '2 h 05 min'."""
    seconds = int(seconds + 0.5)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds // 60 % 60:02d} min"


class LiveProgress:
    """The display: ``start`` at the first report (the header said first), ``update`` with
    each, ``say`` a line below it (what Ctrl-C did: no output from a signal handler, the
    next redraw shows it), ``stop`` before anything else is printed (the last frame stays)."""

    def __init__(self, console: Console, header: list[str]) -> None:
        self.console, self.header = console, header
        self.began = time.monotonic()
        self.info: Progress | None = None
        self.notes: list[str] = []
        self.level = LevelClock()
        self.memory = MemoryGauge()
        self.live: Live | None = None
        self.stopped = False

    def start(self) -> None:
        for line in self.header:
            self.console.print(line, soft_wrap=True)
        self.live = Live(console=self.console, get_renderable=self.render, refresh_per_second=REFRESH_PER_SECOND,
                         transient=False, redirect_stdout=False, redirect_stderr=False)
        self.live.start()

    def update(self, info: Progress) -> None:
        self.level.update(info, time.monotonic())
        self.info = info
        if self.live is None and not self.stopped:
            self.start()

    def say(self, line: str) -> None:
        self.notes = [*self.notes, line]

    def stop(self) -> None:
        live, self.live, self.stopped = self.live, None, True
        if live is not None:
            live.stop()

    def render(self) -> Any:
        """Lines short enough for 80 columns: the engine's figures; memory and time; the level."""
        now = time.monotonic()
        rows: list[Any] = []
        info = self.info
        if info is not None:
            rows.append(self._figures(info))
            rows.append(Text(f"      memory {self.memory.now(now) / 2**20:,.0f} MiB, {clock(now - self.began)} elapsed",
                             style="magenta"))
            if info.level_done is not None and info.level_size:
                rows.append(self._level(info.level_done, info.level_size, self.level.left(now)))
        rows += [Text(note, style="bold yellow") for note in self.notes]
        return Group(*rows)

    @staticmethod
    def _figures(info: Progress) -> Text:
        text = Text("  ... ")
        if type(info).line is not Progress.line:  # an engine with its own words (the symbolic one)
            return text.append(info.line(), style="bold cyan")
        text.append(f"{info.states:,}", style="bold cyan")
        text.append(f" distinct states, {info.queue:,} queued, depth {info.depth}, ")
        text.append(f"{info.states_per_second:,.0f}", style="green")
        return text.append(" states/s")

    @staticmethod
    def _level(done: int, size: int, left: float | None) -> Text:
        """'level ━━━━━━━──────── 38% of 1,036,052, about 3 s left': of the level being expanded."""
        filled = min(BAR, BAR * done // size)
        text = Text("      level ")
        text.append("━" * filled, style="green").append("─" * (BAR - filled), style="bright_black")
        text.append(f" {100 * done // size}% of {size:,}")
        if left is not None:
            text.append(f", {'under 1 s' if left < 1 else 'about ' + duration(left)} left", style="yellow")
        return text
