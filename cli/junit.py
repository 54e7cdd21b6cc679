"""JUnit XML reports, the format CI servers read (Jenkins, GitLab, GitHub actions that publish tests).

The layout follows the Ant/Jenkins JUnit schema (tests/data/junit.xsd is our own
copy of its structure): ``testsuites`` holds ``testsuite`` elements, each with
optional ``properties``, its ``testcase`` elements and ``system-out``; a test case
holds at most one of ``failure`` (an expectation not met), ``error`` (the check
could not decide) or ``skipped``, and its own ``system-out``.
"""

from __future__ import annotations

import re
import socket
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from isrcheck import MODEL_VERSION, __version__
from isrcheck.files import atomic_write
from isrcheck.properties import BY_NAME, verdict

from . import report
from .runner import CheckOutcome, config_slug

PASSED, FAILURE, ERROR, SKIPPED = "passed", "failure", "error", "skipped"
# characters XML 1.0 cannot carry, even escaped
_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class Case:
    classname: str
    name: str
    time: float
    outcome: str = PASSED
    message: str = ""  # the failure, error or skip message: one line
    kind: str = ""  # the failure or error type
    body: str = ""  # the failure or error details
    output: str = ""  # system-out


@dataclass(frozen=True)
class TestSuite:
    name: str
    cases: tuple[Case, ...]
    time: float
    file: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    timestamp: datetime | None = None


def _text(value: str) -> str:
    return _INVALID.sub("?", value)


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"


def _count(cases: tuple[Case, ...], outcome: str) -> int:
    return sum(1 for c in cases if c.outcome == outcome)


def to_xml(name: str, suites: list[TestSuite]) -> str:
    """The report as an XML document (UTF-8 declared)."""
    all_cases = tuple(c for s in suites for c in s.cases)
    root = ET.Element("testsuites", {
        "name": _text(name),
        "tests": str(len(all_cases)),
        "failures": str(_count(all_cases, FAILURE)),
        "errors": str(_count(all_cases, ERROR)),
        "time": _seconds(sum(s.time for s in suites)),
    })
    host = socket.gethostname() or "localhost"
    for i, s in enumerate(suites):
        attrs = {
            "name": _text(s.name),
            "tests": str(len(s.cases)),
            "failures": str(_count(s.cases, FAILURE)),
            "errors": str(_count(s.cases, ERROR)),
            "skipped": str(_count(s.cases, SKIPPED)),
            "time": _seconds(s.time),
            "timestamp": (s.timestamp or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%S"),
            "hostname": _text(host),
            "id": str(i),
        }
        if s.file:
            attrs["file"] = _text(s.file)
        suite_el = ET.SubElement(root, "testsuite", attrs)
        props = {"isrcheck.version": __version__, "isrcheck.model-version": MODEL_VERSION, **s.properties}
        props_el = ET.SubElement(suite_el, "properties")
        for key, value in props.items():
            ET.SubElement(props_el, "property", {"name": _text(key), "value": _text(str(value))})
        for c in s.cases:
            case_el = ET.SubElement(suite_el, "testcase", {
                "name": _text(c.name), "classname": _text(c.classname), "time": _seconds(c.time),
            })
            if c.outcome in (FAILURE, ERROR):
                el = ET.SubElement(case_el, c.outcome, {"message": _text(c.message), "type": _text(c.kind or c.outcome)})
                el.text = _text(c.body)
            elif c.outcome == SKIPPED:
                ET.SubElement(case_el, "skipped", {"message": _text(c.message)})
            if c.output:
                ET.SubElement(case_el, "system-out").text = _text(c.output)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write(path: Path, name: str, suites: list[TestSuite]) -> Path:
    """Write the report atomically (files.atomic_write): OSError or FileProblem propagates."""
    return atomic_write(path, to_xml(name, suites))


def check_model_suite(outcome: CheckOutcome) -> TestSuite:
    """check-model's run as a test suite: a property fails when check-model's exit code would say 1."""
    r = outcome.result
    summary = outcome.run.config.summary()
    slug = config_slug(outcome.run.config)
    cases = []
    for p in r.properties:
        words = report.status_words(outcome, p.name)
        file = outcome.trace_files.get(p.name)
        lines = [summary, f"{p.name}: {words}"]
        if p.status == "unknown":
            cases.append(Case(slug, p.name, r.stats.seconds, ERROR, f"{p.name}: {words}", "incomplete",
                              "\n".join(lines)))
        elif not verdict.good(BY_NAME[p.name], p.status):  # violated, or a witness never seen
            if verdict.broken(p, p.status) and p.name in outcome.traces:
                lines += [line.strip("\n") for line in report.explain_lines(outcome, p.name) if line.strip()]
            cases.append(Case(slug, p.name, r.stats.seconds, FAILURE,
                              f"{p.name} " + ("never happens" if verdict.outcome(p, p.status) == "never" else "violated")
                              + (f"; trace {file}" if file else ""), "violated", "\n".join(lines)))
        else:
            cases.append(Case(slug, p.name, r.stats.seconds, PASSED, output="\n".join(lines)))
    return TestSuite("check-model", tuple(cases), r.stats.seconds,
                     properties={"configuration": summary, "engine": r.engine})
