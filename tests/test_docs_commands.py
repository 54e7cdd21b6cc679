"""Every command the README and docs/ show is run, and its shown output compared (issue 54,
item 6: "so no figure goes stale").

A command is a ``$ `` line of a ```console block (a trailing ``\\`` continues it); the lines
after it, up to the next ``$ `` line, are its shown output. They are compared with what the
command writes to stdout (to stderr when it writes nothing to stdout, as ``view-trace --html``
does), line by line, trailing spaces aside: ``...`` alone on a line
stands for any number of lines, and inside a line for any text (times, rates, a thread
count: what changes between machines and runs). A command must show some output, or it
claims nothing. The commands of a block run in order, in a folder of their own holding the
repository's ``examples/``, so that one can read the trace another wrote. They may exit 0 or
1 (a verdict), never 2 or 3; ``# ... exit N`` in a command's comment pins its exit code, and a
suite (``check-suite``) must meet every expectation. A block after ``<!-- docs-test: kafka -->`` starts real Kafka
clusters and runs with the real-cluster tests (``-m kafka``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
KAFKA_MARK = "<!-- docs-test: kafka -->"
ANY_LINES = "..."


@dataclass(frozen=True)
class Command:
    line: str
    shown: tuple[str, ...]


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the opening fence, for the test's name
    commands: tuple[Command, ...]
    kafka: bool


def blocks(path: Path) -> list[Block]:
    text = path.read_text().splitlines()
    found, i = [], 0
    while i < len(text):
        if text[i].strip() == "```console":
            start = i
            i += 1
            body = []
            while text[i].strip() != "```":
                body.append(text[i])
                i += 1
            before = next((t.strip() for t in reversed(text[:start]) if t.strip()), "")
            found.append(Block(str(path.relative_to(ROOT)), start + 1, _commands(body), before == KAFKA_MARK))
        i += 1
    return found


def _commands(body: list[str]) -> tuple[Command, ...]:
    commands: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(body):
        line = body[i]
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + body[i].strip()
            commands.append((command, []))
        elif commands:
            commands[-1][1].append(line.rstrip())
        else:
            raise AssertionError(f"output before any '$ ' command: {line!r}")
        i += 1
    for _, shown in commands:  # a blank line between two commands is layout, not output
        while shown and not shown[-1]:
            shown.pop()
    return tuple(Command(c, tuple(shown)) for c, shown in commands)


def matches(shown: tuple[str, ...], actual: str) -> bool:
    pattern = "".join(r"(?:.*\n)*?" if s.strip() == ANY_LINES else
                      ".*".join(re.escape(part) for part in s.rstrip().split(ANY_LINES)) + r"\n" for s in shown)
    lines = "".join(line.rstrip() + "\n" for line in actual.splitlines())
    return re.fullmatch(pattern, lines) is not None


def expected_exit(command: str) -> tuple[int, ...]:
    """``# ... exit N`` in the command's comment pins its exit code; a suite in the docs meets
    every expectation (0); any other command gives a verdict (0 or 1), never a usage error or
    an unfinished run."""
    pinned = re.search(r"#.*\bexit (\d)\b", command)
    if pinned:
        return (int(pinned.group(1)),)
    return (0,) if command.startswith("check-suite ") else (0, 1)


ALL = [b for page in PAGES for b in blocks(page)]


def _param(b: Block):
    marks = [pytest.mark.kafka] if b.kafka else []
    return pytest.param(b, id=f"{b.page}:{b.line}", marks=marks)


def test_the_pages_show_commands_to_run():
    assert len([c for b in ALL for c in b.commands]) >= 20
    assert {b.page for b in ALL} >= {"README.md", "docs/usage.md"}


def test_every_command_shows_what_it_prints():
    for b in ALL:
        for c in b.commands:
            assert any(s.strip() not in ("", ANY_LINES) for s in c.shown), f"{b.page}:{b.line}: {c.line} shows nothing"


def test_the_exit_code_a_command_may_give():
    assert expected_exit("advise-config --kafka-version 3.9   # none keeps them (exit 1)") == (1,)
    assert expected_exit("check-suite examples/kafka-versions.toml") == (0,)
    assert expected_exit("check-model --rf 3") == (0, 1)


def test_the_shown_output_matcher():
    assert matches(("a ... c", "..."), "a b c\nmore\nlines\n")
    assert matches(("...", "last"), "last\n")
    assert not matches(("a", "b"), "a\nb\nc\n")
    assert not matches(("holds",), "VIOLATED\n")
    assert matches(("x  ",), "x\n")


def test_no_shell_block_is_left_unrun():
    """Commands live in console blocks, where they run. A sh block may hold only the commands
    that install isrcheck and run this suite (the README's two, docs/testing.md's), which CI
    runs itself (.ci/run)."""
    for page in PAGES:
        for body in re.findall(r"```(?:sh|bash|shell)\n(.*?)```", page.read_text(), re.S):
            assert page.name in ("README.md", "testing.md"), f"{page.name}: {body[:80]!r}"
            for line in body.splitlines():
                assert re.match(r"(python3 -m venv \.venv|\.venv/bin/(python -m pytest|fetch-kafka) )", line), line


def run_block(block: Block, tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "NO_COLOR": "1",
           "COLUMNS": "200"}
    for c in block.commands:
        proc = subprocess.run(["bash", "-c", c.line], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode in expected_exit(c.line), f"{c.line}: exit {proc.returncode}\n{proc.stderr[-2000:]}"
        printed = proc.stdout or proc.stderr  # a command that only says what it wrote says it on stderr
        assert matches(c.shown, printed), (f"{block.page}:{block.line}: {c.line}\n--- shown:\n" +
                                           "\n".join(c.shown) + "\n--- printed:\n" + printed)


def _page_class(page: str) -> type:
    """A class per page: the suite runs with pytest-xdist's --dist loadscope, which spreads a
    module's classes over the processes (the pages' commands take minutes together)."""
    @pytest.mark.parametrize("block", [_param(b) for b in ALL if b.page == page])
    def test_the_command_prints_what_the_page_shows(self, block: Block, tmp_path: Path):  # noqa: ARG001
        run_block(block, tmp_path)

    name = "TestTheCommandsOf_" + re.sub(r"\W", "_", page)
    return type(name, (), {"test_the_command_prints_what_the_page_shows": test_the_command_prints_what_the_page_shows})


for _page in dict.fromkeys(b.page for b in ALL):
    _cls = _page_class(_page)
    globals()[_cls.__name__] = _cls
