"""The terminal view of a trace: one block per step, in Kafka words, with what changed.

Every string taken from a trace goes into ``rich.text.Text`` objects, never through
rich's markup parser, so a trace cannot style or rewrite the terminal. Changes
since the previous step carry a ``*`` (and colour when there is colour), so the
plain text shows the same facts as the coloured one.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import IO

from rich import box
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from isrcheck.model import Record
from isrcheck.model.fields import alter_partition

from .view_data import VIOLATED, WITNESSED, ReplicaView, StepView, TraceView
from .view_lanes import CONSUMER, ClientLane, LaneFact, lane_names

CHANGED = "bold yellow"
NEW = "bold green"
DROPPED = "red strike"
LOST = "bold red underline"
HWM_MARK = "bold cyan"
BAD = "bold red"
GOOD = "bold green"
DIM = "dim"
LEGEND = (
    "log cells are record@epoch, | marks the broker's HWM, LEO is its log end offset,\n"
    "leader, epoch and cached ISR are what the broker believes, in ISR: in the controller's ISR;\n"
    "+ appended and - truncated at this step, * changed since the previous step;\n"
    "LeaderAndIsr e1→2 {1,2}: the controller's request of epoch 1, naming leader 2 and ISR {1,2}"
)
KRAFT_LEGEND = "\n{0,1} +2?: the leader has asked the controller to add broker 2 (AlterPartition), -2? to remove it"
LANES_LEGEND = "\n{lanes}: +m1 joined the set and -m1 left it at this step;\n▸ what the step did to the {lanes}"
INDENT = 2


def make_console(color: bool, width: int, file: IO[str] | None = None) -> Console:
    """A console whose output depends only on its arguments (not on the environment)."""
    return Console(
        file=file or io.StringIO(),
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        no_color=not color,
        markup=False,
        emoji=False,
        highlight=False,
        legacy_windows=False,
        soft_wrap=False,
        _environ={},
    )


def render_text(view: TraceView, *, color: bool = False, width: int = 100, changed_only: bool = False) -> str:
    """The whole trace as text: ANSI colours when ``color``, plain otherwise."""
    console = make_console(color, width)
    for part in renderables(view, changed_only=changed_only, width=width):
        console.print(part)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    return "\n".join(line.rstrip() for line in out.split("\n"))


def renderables(view: TraceView, *, changed_only: bool = False, width: int = 100) -> Iterable[RenderableType]:
    yield Text.assemble(("isrcheck trace: ", "bold"), (view.title, "bold"))
    yield Text(view.summary)
    if view.property_name is not None:
        yield Text.assemble((view.property_name, "bold"), ": ", view.doc)
    lanes = " and ".join(lane_names(view.config))
    yield Text(LEGEND + (KRAFT_LEGEND if alter_partition(view.config) else "")
               + (LANES_LEGEND.format(lanes=lanes) if lanes else ""), style=DIM)
    if changed_only:
        yield Text("after step 0 only what changed is shown", style=DIM)
    last = len(view.steps) - 1
    for step in view.steps:
        yield Text("")
        yield _step_block(view, step, is_last=step.index == last, changed_only=changed_only and step.index > 0,
                          width=width)
    yield Text("")
    yield from _verdict(view)


def _verdict(view: TraceView) -> Iterable[RenderableType]:
    if view.outcome is None:
        return
    if view.outcome == VIOLATED:
        yield Text.assemble((view.headline, BAD), ": ", view.doc)
        if view.lost:
            lost = Text.assemble("lost: ", *_joined((str(r), LOST) for r in view.lost))
            lacking = sorted({b for b, _ in view.missing_from})
            if lacking:
                lost.append(" (missing from broker " + ", ".join(map(str, lacking)) + ")")
            yield _indented(lost)
    else:
        yield Text.assemble((view.headline, GOOD), ": ", view.doc)
    yield _indented(Text.assemble("=> ", view.explanation))


def _joined(parts: Iterable[tuple[str, str]], sep: str = ", ") -> list[tuple[str, str] | str]:
    out: list[tuple[str, str] | str] = []
    for i, part in enumerate(parts):
        if i:
            out.append(sep)
        out.append(part)
    return out


def _step_block(view: TraceView, step: StepView, *, is_last: bool, changed_only: bool, width: int) -> RenderableType:
    n = len(view.steps) - 1
    title = Text.assemble((f"step {step.index}/{n}", "bold"), " · ", (step.action, "bold"))
    lasso = view.lasso
    if lasso is not None and step.index == lasso.trigger:
        title.append("  ◆ trigger", style=BAD)
    if lasso is not None and step.index == lasso.loop and lasso.closing:
        title.append("  ↺ loop", style=BAD)
    if lasso is not None and is_last:
        title.append(f"  ✗ {lasso.short_ending}", style=BAD)
    elif is_last and view.outcome == VIOLATED:
        title.append(f"  ✗ {view.property_name} violated here", style=BAD)
    elif is_last and view.outcome == WITNESSED:
        title.append(f"  ✓ {view.property_name} witnessed here", style=GOOD)
    parts: list[RenderableType] = [Rule(title, align="left", style=BAD if is_last and view.outcome == VIOLATED else DIM)]
    parts.append(_indented(Text(step.sentence, style="italic")))
    rows = [r for r in step.replicas if r.changed] if changed_only else list(step.replicas)
    if rows:
        parts.append(_indented(_replica_table(view, rows)))
    q = step.quorum
    if not changed_only or q.changed:
        parts.append(
            Text.assemble(
                (" " * INDENT + "quorum  ", "bold"),
                "leader ", _val(_opt(q.leader), "leader" in q.changed),
                "  epoch ", _val(_opt(q.epoch), "epoch" in q.changed),
                "  ISR ", _val(_isr(q.isr), "isr" in q.changed),
                *(("  ELR ", _val(_isr(q.elr), "elr" in q.changed)) if q.elr is not None else ()),
            )
        )
    if step.requests and (not changed_only or step.new_request):
        parts.append(_requests(step, width))
    lanes = [lane for lane in step.lanes if not changed_only or lane.changed]
    if lanes:
        parts.append(_indented(_lanes(lanes, width)))
    history = _history_line(step)
    if history is not None and (not changed_only or any(new for _, _, new in step.histories) or any(c[3] for c in step.counters)):
        parts.append(_indented(history))
    return Group(*parts)


def _requests(step: StepView, width: int) -> Text:
    """The LeaderAndIsr requests, wrapped between requests (never inside one)."""
    label = " " * INDENT + "LeaderAndIsr "
    text = Text(label, style="bold")
    room = max(20, width - len(label))
    used = 0
    for i, (epoch, leader, isr) in enumerate(step.requests):
        new = step.new_request and i == len(step.requests) - 1
        item = f"{'+' if new else ''}e{epoch}→{_opt(leader) if leader is not None else 'none'} {_isr(isr)}"
        sep = "  " if i else ""
        if i and used + len(sep) + len(item) > room:
            text.append("\n" + " " * len(label))
            sep, used = "", 0
        text.append(sep)
        text.append(item, style=CHANGED if new else "")
        used += len(sep) + len(item)
    return text


def _isr(members: frozenset[int]) -> str:
    """An ISR without spaces, so that table columns stay narrow: {0,1,2}."""
    return "{" + ",".join(str(r) for r in sorted(members)) + "}"


def _indented(part: RenderableType, by: int = INDENT) -> Padding:
    return Padding(part, (0, 0, 0, by))


def _history_line(step: StepView) -> Text | None:
    if not step.histories and not step.counters:
        return None
    line = Text()
    for i, (label, ids, new) in enumerate(step.histories):
        if i:
            line.append("  ")
        line.append(f"{label} ", style="bold")
        if not ids:
            line.append("none", style=DIM)
        for j, rid in enumerate(sorted(ids)):
            if j:
                line.append(" ")
            line.append(f"+m{rid}" if rid in new else f"m{rid}", style=NEW if rid in new else "")
    for label, used, allowed, changed in step.counters:
        line.append(f"  {label} ", style="bold")
        line.append_text(_val(f"{used}/{allowed}", changed))
    return line


def _lanes(lanes: list[ClientLane], width: int) -> Table:
    """The producer's and the consumer's lanes: a label, then its values, wrapped between values
    (never inside one), and the step's event for it on a line of its own."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column()
    room = max(30, width - INDENT - len(CONSUMER) - 2)
    for lane in lanes:
        line, used = Text(), 0
        for fact in lane.facts:
            item = _lane_fact(fact)
            if used and used + 2 + item.cell_len > room:
                line.append("\n")
                used = 0
            elif used:
                line.append("  ")
                used += 2
            line.append_text(item)
            used += item.cell_len
        if lane.event is not None:
            line.append("\n▸ ", style=CHANGED)
            line.append(lane.event.kind, style=CHANGED)
            line.append(f": {lane.event.text}")
        grid.add_row(Text(lane.name, style="bold"), line)
    return grid


def _lane_fact(fact: LaneFact) -> Text:
    """``label value``: an id set's members with +m1 for one that joined it, -m1 for one that left."""
    text = Text(f"{fact.label} ", style="bold")
    if fact.ids is None:
        return text.append_text(_val(fact.text, fact.changed))
    marks = [(f"+m{i}" if i in fact.added else f"m{i}", NEW if i in fact.added else "") for i in fact.ids]
    marks += [(f"-m{i}", DROPPED) for i in fact.removed]
    return text.append_text(Text.assemble(*_joined(marks, " ")) if marks else Text("none", style=DIM))


def _opt(v: int | None) -> str:
    return "-" if v is None else str(v)


def _val(text: str, changed: bool) -> Text:
    return Text(text + "*", style=CHANGED) if changed else Text(text)


def _replica_table(view: TraceView, rows: list[ReplicaView]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), header_style="bold")
    # Widths fixed by the configuration, so that columns stay put from step to step.
    cfg = view.config
    record = len(str(Record(cfg.max_records - 1, cfg.max_leader_epoch)))
    table.add_column("broker", min_width=len("9 stale leader*"), no_wrap=True)
    table.add_column("log", min_width=2 + (record + 1) * cfg.logsize + 1)
    table.add_column("LEO", justify="right", no_wrap=True)
    table.add_column("HWM", justify="right", no_wrap=True)
    table.add_column("leader", justify="right", no_wrap=True)
    table.add_column("epoch", justify="right", no_wrap=True)
    table.add_column("cached ISR", min_width=len(_isr(frozenset(range(cfg.rf)))) + 1, no_wrap=True)
    table.add_column("in ISR", no_wrap=True)
    lost = set(view.lost)
    for r in rows:
        memory = r.alive  # a crashed broker's in-memory view is gone; its log and HWM checkpoint stay
        who = Text(f"{r.broker} ", style="bold")
        who.append_text(_val(r.role, "role" in r.changed or "alive" in r.changed))
        table.add_row(
            who,
            _log_cells(r, lost),
            _val(str(r.leo), "leo" in r.changed),
            _val(str(r.hw), "hw" in r.changed),
            _val(_opt(r.leader) if memory else "-", "leader" in r.changed),
            _val(_opt(r.epoch) if memory else "-", "epoch" in r.changed),
            _val((_isr(r.isr) + (f" {r.asks}?" if r.asks else "")) if memory else "-",
                 "isr" in r.changed or "asks" in r.changed),
            Text("yes" if r.in_quorum_isr else "no", style="" if r.in_quorum_isr else DIM),
        )
    return table


def _log_cells(r: ReplicaView, lost: set[Record]) -> Text:
    """The log as cells, the HWM as a bar between them, then what this step truncated."""
    cells = Text()
    appended = set(r.appended)
    for offset in range(len(r.log) + 1):
        if offset == r.hw:
            cells.append("| ", style=HWM_MARK)
        if offset == len(r.log):
            break
        rec = r.log[offset]
        style = LOST if rec in lost else (NEW if offset in appended else ("" if offset < r.hw else DIM))
        cells.append(("+" if offset in appended else "") + str(rec), style=style)
        cells.append(" ")
    if r.hw > len(r.log):  # a HWM past the log end (the specification allows it)
        cells.append(f"(HWM {r.hw} past LEO) ", style=HWM_MARK)
    for rec in r.dropped:
        cells.append("-" + str(rec), style=LOST if rec in lost else DROPPED)
        cells.append(" ")
    cells.rstrip()
    return cells
