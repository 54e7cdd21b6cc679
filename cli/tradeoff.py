"""The trade-off report: durability against availability, one row per configuration.

Columns: the configuration options that differ between rows (the ones all rows
share go into one line above the table), then every ``always`` property checked
(durability: holds, or violated in how many states), then availability: the
``sometimes`` properties, ``write-after-crash`` first, shown as "writes with one
broker down" (yes when a write is acknowledged while a broker is down, no when the
bounded space has none), and the graph properties (``can-recover`` as "recovers by
itself": yes, or no with the trace to a stuck state); last, the seconds the check's
search took. Cells whose expectation was not met say what was expected.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from isrcheck import __version__
from isrcheck.files import FileProblem, atomic_write
from isrcheck.model.config import FEATURES, Knob
from isrcheck.properties import BY_NAME, NAMES, verdict

from .suite import Suite, SuiteCheck
from .suite_run import CheckReport, Judgement

AVAILABILITY = "write-after-crash"
SECONDS = "seconds"  # the check's search time, the last column
HEADINGS = {AVAILABILITY: "writes with one broker down", "can-recover": "recovers by itself",
            "rejoins-isr": "replicas rejoin the ISR", "hwm-progress": "HWM catches up"}
LEGEND = (
    "A trace of N states is the initial state and N-1 steps, the shortest the breadth-first search found. "
    "Every verdict holds within the suite's bounds (records, log size, leader epochs, crashes)."
)


@dataclass(frozen=True)
class Cell:
    text: str
    kind: str = "none"  # good | bad | none | unknown
    link: str | None = None  # a trace file
    note: str = ""  # an unmet expectation


def _bounds(k: SuiteCheck) -> str:
    c = k.run.config
    return f"max-records {c.max_records}, log-size {c.log_size}, max-leader-epoch {c.max_leader_epoch}"


def _feature(knob: Knob) -> tuple[str, Callable[[SuiteCheck], str], Callable[[SuiteCheck], str]]:
    return knob.column, lambda k: knob.cell(k.run.config), lambda k: knob.shared(k.run.config)


# (column heading, cell text, words in the line of shared settings; '' leaves a default out)
ASPECTS: tuple[tuple[str, Callable[[SuiteCheck], str], Callable[[SuiteCheck], str]], ...] = (
    ("protocol", lambda k: k.run.config.protocol, lambda k: f"protocol {k.run.config.protocol}"),
    ("rf", lambda k: str(k.run.config.rf), lambda k: f"rf {k.run.config.rf}"),
    ("machine", lambda k: "core" if k.run.config.core else "kafka",
     lambda k: "the published core machine" if k.run.config.core else ""),
    *(_feature(knob) for knob in sorted(FEATURES, key=lambda knob: knob.rank) if knob.column),
    ("bounds", _bounds, lambda k: f"bounds {_bounds(k)}"),
    ("max-depth", lambda k: str(k.run.options.max_depth) if k.run.options.max_depth is not None else "none",
     lambda k: f"max-depth {k.run.options.max_depth}" if k.run.options.max_depth is not None else ""),
    ("engine", lambda k: k.run.engine, lambda k: f"engine {k.run.engine}"),
)


@dataclass(frozen=True)
class Table:
    title: str
    description: str
    fixed: str  # what every row shares, in words
    columns: tuple[str, ...]
    n_config: int  # the first n columns describe the configuration
    rows: tuple[tuple[Cell, ...], ...]


def build(suite: Suite, reports: dict[str, CheckReport], judgements: list[Judgement]) -> Table:
    checks = [c for c in suite.checks if c.name in reports]
    varying = [(label, get) for label, get, _ in ASPECTS if len({get(c) for c in checks}) > 1]
    fixed = [words for _, get, words in ASPECTS if len({get(c) for c in checks}) == 1]
    if len({tuple(get(c) for _, get in varying) for c in checks}) < len(checks) or not varying:
        varying = [("check", lambda k: k.name)] + varying
    props = {p for c in checks for p in c.properties}
    durability = [p for p in NAMES if p in props and _durability(p)]
    availability = [p for p in [AVAILABILITY] + list(NAMES) if p in props and not _durability(p)]
    availability = list(dict.fromkeys(availability))
    judged = {(j.check, j.property): j for j in judgements}
    rows = []
    for c in checks:
        rep = reports[c.name]
        cells = [Cell(get(c)) for _, get in varying]
        for p in durability + availability:
            cells.append(_cell(c, rep, p, judged.get((c.name, p))))
        cells.append(Cell(f"{rep.seconds:.1f}" if not rep.error else "-"))
        rows.append(tuple(cells))
    fixed_words = ", ".join(w for w in (words(checks[0]) for words in fixed) if w) if checks else ""
    columns = (
        tuple(label for label, _ in varying)
        + tuple(HEADINGS.get(p, p) for p in durability + availability)
        + (SECONDS,)
    )
    return Table(suite.name, suite.description, fixed_words, columns, len(varying), tuple(rows))


def _durability(name: str) -> bool:
    """An ``always`` property about states (graph properties, like can-recover, are availability)."""
    prop = BY_NAME[name]
    return verdict.always(prop) and not prop.graph


def _cell(check: SuiteCheck, rep: CheckReport, prop: str, j: Judgement | None) -> Cell:
    if prop not in check.properties:
        return Cell("-")
    if rep.error:
        return Cell("error", "unknown")
    p = rep.by_name(prop)
    if p is None or p.status == "unknown":
        return Cell("unknown", "unknown")
    note = f"expected {j.expected}" if j is not None and j.outcome == "unmet" else ""
    said = verdict.outcome(p, p.status)
    if prop == AVAILABILITY:
        if said == "witnessed":
            return Cell(f"yes ({p.trace_length} states)", "good", p.trace_file, note)
        return Cell("no", "bad", None, note)
    if BY_NAME[prop].graph:
        if said == "violated":
            how = "never gets there: lasso of" if BY_NAME[prop].liveness else "stuck after"
            return Cell(f"no: {how} {p.trace_length} states", "bad", p.trace_file, note)
        return Cell("yes", "good", None, note)
    if said == "witnessed":
        return Cell(f"witnessed ({p.trace_length} states)", "good", p.trace_file, note)
    if said == "violated":
        return Cell(f"violated in {p.trace_length} states", "bad", p.trace_file, note)
    if said == "never":
        return Cell("never", "bad", None, note)
    return Cell(said, "good", None, note)


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(table: Table) -> str:
    """A GitHub-flavoured Markdown table, with the shared settings in a line above it."""
    lines = []
    if table.fixed:
        lines += [f"All rows: {table.fixed}.", ""]
    lines.append("| " + " | ".join(_md(c) for c in table.columns) + " |")
    lines.append("|" + "|".join("---" for _ in table.columns) + "|")
    for row in table.rows:
        texts = []
        for cell in row:
            text = f"**{cell.text}**" if cell.kind == "bad" else cell.text
            texts.append(_md(text + (f" (⚠ {cell.note})" if cell.note else "")))
        lines.append("| " + " | ".join(texts) + " |")
    return "\n".join(lines) + "\n"


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #1b1f23; }
table { border-collapse: collapse; margin-top: 1em; }
th, td { border: 1px solid #d0d7de; padding: .35em .7em; text-align: left; vertical-align: top; white-space: nowrap; }
th { background: #f6f8fa; }
th.group { text-align: center; }
td.good { background: #dafbe1; }
td.bad { background: #ffebe9; font-weight: 600; }
td.unknown { background: #fff8c5; }
td .note { display: block; font-weight: normal; color: #9a6700; }
p.small { color: #57606a; font-size: .9em; max-width: 60em; }
"""


def html_page(table: Table, out: Path, views: dict[str, str] | None = None) -> str:
    """A self-contained HTML page; trace links are relative to where the page is written,
    to each trace's HTML view where ``views`` has one (trace file -> view file)."""
    esc = html.escape
    views = views or {}
    n_dur = sum(1 for c in table.columns[table.n_config:] if c in NAMES and _durability(c))
    n_av = len(table.columns) - table.n_config - n_dur - 1  # the last column is the seconds
    head = [f'<th class="group" colspan="{table.n_config}">configuration</th>']
    if n_dur:
        head.append(f'<th class="group" colspan="{n_dur}">durability</th>')
    if n_av:
        head.append(f'<th class="group" colspan="{n_av}">availability</th>')
    head.append('<th class="group">time</th>')
    body = []
    for row in table.rows:
        tds = []
        for cell in row:
            text = esc(cell.text)
            if cell.link:
                target = views.get(cell.link, cell.link)
                href = os.path.relpath(Path(target).resolve(), Path(out).resolve().parent)
                text = f'<a href="{esc(href)}">{text}</a>'
            note = f'<span class="note">{esc(cell.note)}</span>' if cell.note else ""
            tds.append(f'<td class="{cell.kind}">{text}{note}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{esc(table.title)}: durability and availability</title><style>{_CSS}</style></head><body>\n"
        f"<h1>{esc(table.title)}</h1>\n<h2>Durability against availability</h2>\n"
        + (f"<p>{esc(table.description)}</p>\n" if table.description else "")
        + (f"<p>All rows: {esc(table.fixed)}.</p>\n" if table.fixed else "")
        + "<table>\n<thead><tr>" + "".join(head) + "</tr>\n<tr>"
        + "".join(f"<th>{esc(c)}</th>" for c in table.columns) + "</tr></thead>\n<tbody>\n"
        + "\n".join(body) + "\n</tbody></table>\n"
        + f'<p class="small">{esc(LEGEND)} Generated by isrcheck {esc(__version__)} check-suite.</p>\n'
        + "</body></html>\n"
    )


def write_html(table: Table, out: Path) -> Path:
    """Write the page atomically (files.atomic_write), each linked trace's HTML view beside
    its trace first: OSError or FileProblem propagates."""
    views = {cell.link: trace_view(cell.link) for row in table.rows for cell in row if cell.link}
    return atomic_write(out, html_page(table, out, views))


def trace_view(trace_file: str) -> str:
    """The trace's HTML view (what view-trace --html writes), beside it as NAME.html; the
    trace file itself where it cannot be read back or the view cannot be written."""
    from isrcheck.traces.trace import TraceError
    from isrcheck.traces.view_data import build_view, load_checked
    from isrcheck.traces.view_html import write_html as write_view

    path = Path(trace_file)
    target = path.with_name(path.name.removesuffix(".itf.json").removesuffix(".json") + ".html")
    try:
        write_view(build_view(load_checked(path)), target)
    except (TraceError, OSError, FileProblem):
        return trace_file
    return str(target)
