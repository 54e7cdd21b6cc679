"""Colour in the reports, where ``common.wants_color`` allows it: each verdict's words in
check-model's report and each check's tag in check-suite's lines, green for the verdict a
build wants, red for the one it does not, yellow for undecided. The text is otherwise
the same, character for character, as without colour."""

from __future__ import annotations

import click

from isrcheck.properties import BY_NAME, verdict

from .report import status_words
from .runner import CheckOutcome

GOOD, BAD, OPEN = "green", "red", "yellow"
TAGS = {"PASS": GOOD, "FAIL": BAD, "ERROR": BAD, "UNDECIDED": OPEN}


def verdict_color(prop, status: str) -> str:
    if status == "unknown":
        return OPEN
    return GOOD if verdict.good(BY_NAME.get(prop.name, prop), status) else BAD


def paint_verdicts(text: str, outcome: CheckOutcome) -> str:
    """``report.render_text``'s text with each property's verdict words in colour (up to the
    first ':' or '(': the trace's file stays plain)."""
    r = outcome.result
    width = max((len(p.name) for p in r.properties), default=10) + 2
    lines = text.split("\n")
    for p in r.properties:
        words = status_words(outcome, p.name, r.search_note)
        line = f"  {p.name:<{width}}{words}"
        if line not in lines:  # the report said it otherwise: leave it plain
            continue
        cut = min((i for i in (words.find(": "), words.find(" (")) if i >= 0), default=len(words))
        lines[lines.index(line)] = (f"  {p.name:<{width}}"
                                    + click.style(words[:cut], fg=verdict_color(p, p.status), bold=True) + words[cut:])
    return "\n".join(lines)


def report_text(outcome: CheckOutcome, color: bool) -> str:
    """check-model's text report, in colour when ``color``."""
    from .report import render_text

    text = render_text(outcome)
    return paint_verdicts(text, outcome) if color else text


def paint_tag(line: str) -> str:
    """A check-suite line with its leading tag (PASS, FAIL, ERROR, UNDECIDED) in colour."""
    tag = line.split(" ", 1)[0]
    if tag not in TAGS:
        return line
    return click.style(tag, fg=TAGS[tag], bold=True) + line[len(tag):]


KINDS = {"heading": {"bold": True}, "good": {"fg": GOOD}, "bad": {"fg": BAD}}


def paint_kind(text: str, kind: str) -> str:
    """advise-config's paint: headings bold, what keeps a guarantee green, what rules a setting out red."""
    return click.style(text, **KINDS[kind])
