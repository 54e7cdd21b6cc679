"""The trade-off report (Markdown and HTML) and check-model's JUnit report."""

import html
import re
import xml.etree.ElementTree as ET
import textwrap
from dataclasses import replace
from pathlib import Path

import xmlschema
from click.testing import CliRunner

from isrcheck.cli import check_model, check_suite, junit
from isrcheck.cli.runner import run_check
from isrcheck.cli.suite import load_suite

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = xmlschema.XMLSchema(str(ROOT / "tests" / "data" / "junit.xsd"))

GRID = '''\
    name = "small grid"
    [defaults]
    rf = 2
    max-records = 1

    [[check]]
    name = "grid"
    min-isr = [1, 2]
    acks = ["all", "1"]
    properties = ["acked-survive", "write-after-crash"]
    expect = { acked-survive = "holds" }
    [[check.when]]
    acks = "1"
    expect = { acked-survive = "violated" }
'''


def expected_cell(outcome, prop):
    """What the table must say, from the composition root's own result for that configuration."""
    p = outcome.result.by_name(prop)
    if prop == "write-after-crash":
        return f"yes ({p.trace_length} states)" if p.status == "holds" else "**no**"
    return "holds" if p.status == "holds" else f"**violated in {p.trace_length} states**"


def test_the_markdown_table_lays_out_each_configuration_against_durability_and_availability(tmp_path):
    suite_file = tmp_path / "grid.toml"
    suite_file.write_text(textwrap.dedent(GRID))
    result = CliRunner().invoke(check_suite.main, [str(suite_file), "--jobs", "1", "--markdown",
                                                   "--trace-dir", str(tmp_path / "t")])
    assert result.exit_code == 0, result.output
    table = result.stdout.splitlines()
    assert table[0] == ("All rows: protocol kip-320, rf 2, Kafka 4.1, clean election, 1 broker crash, KRaft, ELR on, "
                        "bounds max-records 1, log-size 1, max-leader-epoch 2, engine bfs.")
    assert table[2] == "| min-isr | acks | acked-survive | writes with one broker down | seconds |"
    rows = [line for line in table[4:] if line.startswith("| ")]
    assert len(rows) == 4
    for check, row in zip(load_suite(suite_file).checks, rows):
        outcome = run_check(replace(check.run, trace_dir=None))
        c = check.run.config
        cells = row.split(" | ")
        assert row.startswith(f"| {c.min_isr} | {c.acks} | {expected_cell(outcome, 'acked-survive')} "
                              f"| {expected_cell(outcome, 'write-after-crash')} | ")
        assert float(cells[-1].rstrip(" |")) >= 0  # the check's seconds
    assert "PASS" in result.stderr  # per-check lines move to stderr


def test_the_html_report_is_self_contained_and_links_each_trace(tmp_path):
    suite_file = tmp_path / "grid.toml"
    suite_file.write_text(textwrap.dedent(GRID).replace('acks = "1"\n', 'acks = "all"\n'))  # one unmet
    out = tmp_path / "site" / "report.html"
    result = CliRunner().invoke(check_suite.main, [str(suite_file), "--jobs", "1", "--report", str(out),
                                                   "--trace-dir", str(tmp_path / "t")])
    assert result.exit_code == 1  # acks=all now also expects violated: not met
    page = out.read_text()
    assert "<script" not in page and "http" not in page.replace("http-equiv", "")
    assert page.count("<tr>") == 2 + 4  # two header rows, four configurations
    links = re.findall(r'href="([^"]+)"', page)
    assert links and all((out.parent / html.unescape(link)).is_file() for link in links)
    # each link opens the trace's HTML view, written beside its ITF file
    assert all(link.endswith(".html") for link in links)
    for link in links:
        view = (out.parent / html.unescape(link)).read_text()
        assert view.startswith("<!DOCTYPE html>") and "isrcheck trace: " in view
        assert Path(str(out.parent / html.unescape(link)).removesuffix(".html") + ".itf.json").is_file()
    assert "expected violated" in page  # the unmet cells say what was expected


def test_check_model_writes_a_junit_report_whose_failures_are_the_violated_properties(tmp_path):
    out = tmp_path / "cm.xml"
    result = CliRunner().invoke(check_model.main, ["--core", "--rf", "2", "--protocol", "hw-truncation",
                                                   "--trace-dir", str(tmp_path / "t"), "--junit", str(out)])
    assert result.exit_code == 1
    SCHEMA.validate(str(out))
    cases = {c.get("name"): c for c in ET.parse(out).getroot().iter("testcase")}
    assert set(cases) == {"weak-isr", "strong-isr", "leader-in-isr"}
    assert cases["leader-in-isr"].find("failure") is None
    for name in ("weak-isr", "strong-isr"):
        failure = cases[name].find("failure")
        trace = re.search(r"trace (\S+\.itf\.json)", failure.get("message")).group(1)
        assert Path(trace).is_file()
        assert "=> broker 0 believes it leads" in failure.text


def test_text_that_xml_cannot_carry_is_replaced_and_the_report_still_validates(tmp_path):
    case = junit.Case("a\x01b", "p", 0.5, junit.FAILURE, "bad \x1b[31m colour", "x", "line\x00")
    path = junit.write(tmp_path / "r.xml", "n", [junit.TestSuite("s", (case,), 0.5)])
    SCHEMA.validate(str(path))
    assert "\x1b" not in path.read_text()
