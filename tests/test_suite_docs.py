"""docs/ci.md and docs/tradeoffs.md stay true: the guide's starter suite and examples load, its
workflow's command line is accepted, and the tables of docs/tradeoffs.md are what their suites find."""

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from isrcheck.cli import check_suite
from isrcheck.cli.suite import parse_suite

from .clitools import run_cli

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "ci.md").read_text()
TABLES = (ROOT / "docs" / "tradeoffs.md").read_text()


def blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", DOC, re.S)


def test_every_toml_example_in_the_ci_guide_is_a_valid_suite(tmp_path):
    examples = blocks("toml")
    assert len(examples) >= 2
    for text in examples:
        suite = parse_suite(text, tmp_path / "example.toml")
        assert suite.checks and all(c.expect for c in suite.checks)


def test_the_workflow_runs_check_suite_with_options_it_accepts(tmp_path):
    (workflow,) = blocks("yaml")
    folded = re.search(r"run: >\n((?:\s{10}.*\n)+)", workflow).group(1)
    args = shlex.split(" ".join(line.strip() for line in folded.splitlines()))
    assert args[0] == "check-suite" and {"--junit", "--trace-dir"} <= set(args)
    suite = tmp_path / "replication.toml"
    suite.write_text(blocks("toml")[0])
    result = CliRunner().invoke(check_suite.main, [str(suite)] + args[2:] + ["--list"])
    assert result.exit_code == 0, result.output
    assert "upload-artifact" in workflow and "reports/" in workflow
    assert "pip install" in workflow


def test_the_validation_message_shown_in_the_guide_is_the_real_one(tmp_path):
    shown = re.search(r"check-suite: error: suite\.toml:5: (.*)", DOC).group(1)
    suite = tmp_path / "suite.toml"
    suite.write_text('[[check]]\nname = "m"\nrf = 2\ncrashes = [0, 1]\ndisk-loss = 1\nexpect = { weak-isr = "holds" }\n')
    result = CliRunner().invoke(check_suite.main, [str(suite)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"check-suite: error: {suite}:5: {shown}"


def table_without_seconds(markdown: str) -> list[str]:
    rows = [line for line in markdown.splitlines() if line.startswith("|")]
    return ["|".join(row.split("|")[:-2]) for row in rows]  # the last cell is the seconds, measured


def assert_table_is_its_suites(tmp_path, heading: str, suite: str, met: int, rows: int, *options: str):
    """The table under a heading of docs/tradeoffs.md is what ``check-suite SUITE --markdown`` prints, but for
    the seconds, with every expectation met."""
    shown = re.search(rf"^#+ {re.escape(heading)}\n(.*?)\nReading it", TABLES, re.S | re.M).group(1)
    proc = run_cli("check-suite", str(ROOT / "examples" / suite), "--markdown", *options, "--trace-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert f"{met} met, 0 not met" in proc.stderr
    assert len(table_without_seconds(shown)) == rows
    assert table_without_seconds(proc.stdout) == table_without_seconds(shown)


# Each table in a class of its own: the suite runs with pytest-xdist's --dist loadscope,
# which keeps a module's tests on one process but spreads a module's classes, and these three
# take some 190 s together.
class TestTheTradeOffTable:
    @pytest.mark.slow
    def test_the_trade_off_table_is_what_its_suite_generates(self, tmp_path):
        """Every verdict and length in the rf 3 table, checked by running the suite
        (144 expectations on 2.8, 3.9 and 4.1, about 40 s on the vector kernel)."""
        assert_table_is_its_suites(tmp_path, "The rf 3 trade-off", "tradeoff-rf3.toml", 144, 38)


class TestTheDeliveryTable:
    @pytest.mark.slow
    def test_the_delivery_table_is_what_its_suite_generates(self, tmp_path):
        """Every cell of the delivery semantics table (40 expectations, about 12 s with two jobs)."""
        assert_table_is_its_suites(tmp_path, "Delivery semantics", "delivery-rf2.toml", 40, 14, "--jobs", "2")


class TestTheAvailabilityTable:
    @pytest.mark.slow
    def test_the_availability_table_is_what_its_suite_generates(self, tmp_path):
        """Every cell of the availability table (72 expectations, about 45 s with two jobs)."""
        assert_table_is_its_suites(tmp_path, "Availability: does the partition come back by itself?",
                                   "availability-rf3.toml", 72, 26, "--jobs", "2")
