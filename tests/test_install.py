"""The install: PySpark is optional (the main job never starts Spark), and every command says its version."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from isrcheck import __version__
from isrcheck.cli import check_model

from .clitools import run_cli

ROOT = Path(__file__).resolve().parent.parent


def test_pyspark_is_an_extra_that_the_tests_install():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("pyspark") for d in project["dependencies"])
    assert any(d.startswith("pyspark") for d in project["optional-dependencies"]["spark"])
    assert any(d.startswith("pyspark") for d in project["optional-dependencies"]["test"])


def test_the_spark_engine_without_pyspark_is_one_line_naming_the_extra(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))
    result = CliRunner().invoke(check_model.main, ["--rf", "2", "--engine", "spark", "--trace-dir", str(tmp_path)])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "check-model: error: --engine spark needs PySpark, an optional part of isrcheck: "
        "pip install 'isrcheck[spark]' (and Java 17 or later)"
    ]


COMMANDS = sorted(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"])


def test_the_commands_are_installed():
    assert COMMANDS == ["advise-config", "check-model", "check-suite", "fetch-kafka", "replay-kafka", "view-trace"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_says_its_version(command):
    proc = run_cli(command, "--version")
    assert proc.returncode == 0 and proc.stdout == f"{command} (isrcheck) {__version__}\n"
