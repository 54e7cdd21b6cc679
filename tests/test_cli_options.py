"""Every command's options: each has a help text, and colour follows one rule everywhere
(--color/--no-color, else a terminal without NO_COLOR: ``common.wants_color``)."""

from __future__ import annotations

import importlib
import importlib.util
import io
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import click
import pytest

from isrcheck.cli.common import wants_color

ROOT = Path(__file__).resolve().parent.parent
COLOR = re.compile(r"\x1b\[[0-9;]*m")
COLOURED = ("advise-config", "check-model", "check-suite", "view-trace")  # the commands that write colour


def commands() -> dict[str, click.Command]:
    """Every command pyproject installs (a module not there yet, as a command being
    written, is left out until it is)."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    found = {}
    for name, target in scripts.items():
        module, attr = target.split(":")
        if importlib.util.find_spec(module) is None:
            continue
        found[name] = getattr(importlib.import_module(module), attr)
    return found


def test_the_commands_are_found():
    assert set(COLOURED) <= set(commands())


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_option_has_a_help_text(name):
    command = commands()[name]
    missing = [p.opts[0] for p in command.params if isinstance(p, click.Option) and not (p.help or "").strip()]
    assert not missing, f"{name}: no help for {', '.join(missing)}"
    ctx = click.Context(command, info_name=name)
    assert command.get_help_option(ctx) is not None  # and --help itself
    assert (command.help or "").strip()


@pytest.mark.parametrize("name", COLOURED)
def test_every_colouring_command_has_color_and_no_color(name):
    command = commands()[name]
    (option,) = [p for p in command.params if p.name == "color"]
    assert option.opts == ["--color"] and option.secondary_opts == ["--no-color"] and option.default is None


class Stream(io.StringIO):
    def __init__(self, terminal: bool) -> None:
        super().__init__()
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


def test_wants_color_the_flag_first_then_a_terminal_without_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert wants_color(Stream(True)) and not wants_color(Stream(False))
    assert wants_color(Stream(False), True) and not wants_color(Stream(True), False)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not wants_color(Stream(True)) and wants_color(Stream(True), True)
    monkeypatch.setenv("NO_COLOR", "")  # set but empty: as if unset (no-color.org)
    assert wants_color(Stream(True))
    assert not wants_color(object())  # no isatty at all


SUITE = '''\
    name = "colours"
    [defaults]
    rf = 2
    max-records = 1

    [[check]]
    name = "acks=1 is believed safe"
    acks = "1"
    expect = { acked-survive = "holds" }

    [[check]]
    name = "acks=all keeps acknowledged records"
    expect = { acked-survive = "holds" }
'''


def run(name: str, *args, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    return subprocess.run([str(Path(sys.executable).with_name(name)), *map(str, args)], capture_output=True,
                          text=True, env={**environment, **(env or {})}, cwd=cwd, timeout=180)


def test_check_suite_tags_in_colour_only_when_asked(tmp_path):
    suite = tmp_path / "suite.toml"
    suite.write_text(textwrap.dedent(SUITE))
    forced = run("check-suite", suite, "--jobs", "1", "--color", cwd=tmp_path, env={"NO_COLOR": "1"})
    assert forced.returncode == 1, forced.stdout + forced.stderr
    assert "] \x1b[31m\x1b[1mFAIL\x1b[0m      acks=1 is believed safe" in forced.stdout, forced.stdout  # red
    assert "] \x1b[32m\x1b[1mPASS\x1b[0m      acks=all keeps" in forced.stdout  # green
    plain = run("check-suite", suite, "--jobs", "1", cwd=tmp_path)
    assert not COLOR.search(plain.stdout + plain.stderr)
    assert [COLOR.sub("", line)[:40] for line in forced.stdout.splitlines() if line.startswith("[")] == \
        [line[:40] for line in plain.stdout.splitlines() if line.startswith("[")]


# ---- integer options: the digits 0-9 alone, in every command ------------------------------------

NOT_PLAIN_DIGITS = ["+3", " 3", "3 ", "3\n", "-0", "٣", "２", "3.0", ""]


def integer_options() -> list[tuple[str, str]]:
    """(command, option) for every option that takes a whole number, advise-config's --rf range too."""
    from isrcheck.cli.common import AsciiInt
    from isrcheck.cli.check_model import EpochBound

    found = [("advise-config", "--rf")]
    for name, command in sorted(commands().items()):
        for p in command.params:
            if isinstance(p, click.Option) and isinstance(p.type, (AsciiInt, EpochBound)):
                found.append((name, p.opts[0]))
    return found


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_integer_option_is_read_by_the_one_rule(name):
    """click's own INT (``int``) takes ``+3``, `` 3`` and ``٣``: no option may use it."""
    from isrcheck.cli.common import AsciiInt

    plain = [p.opts[0] for p in commands()[name].params
             if isinstance(p.type, click.types.IntParamType) and not isinstance(p.type, AsciiInt)]
    assert not plain, f"{name}: {', '.join(plain)} read by int(), not AsciiInt"


def test_the_integer_options_are_found():
    found = set(integer_options())
    assert {("check-model", "--rf"), ("check-model", "--crashes"), ("check-model", "--max-leader-epoch"),
            ("check-model", "--seed"), ("check-model", "--walks"), ("check-suite", "--jobs"),
            ("view-trace", "--width"), ("advise-config", "--max-records")} <= found


@pytest.mark.parametrize("name,option", integer_options())
def test_integer_options_take_plain_digits_only(name, option):
    """As Kafka's tools do: no sign, no space, no other script's digits; refused in one line that
    names the option, exit 2. The command's body is left out: only its options are read."""
    import copy

    from click.testing import CliRunner

    command = copy.copy(commands()[name])
    command.callback = lambda **kw: 0
    arguments = ["x"] * sum(isinstance(p, click.Argument) for p in command.params)
    for text in NOT_PLAIN_DIGITS:
        result = CliRunner().invoke(command, [option, text, *arguments], prog_name=name)
        assert result.exit_code == 2, (text, result.output)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"{name}: error: Invalid value for '{option}'"), (text, lines)
