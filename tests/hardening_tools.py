"""Helpers for the issue-17 tests: one-line errors, and a path that goes bad during a run.

A path that passes the up-front check is broken "during the run" by a hook on the engine
(in this process), which works as root, where mode bits stop no write, as for any user.
"""

from __future__ import annotations

from isrcheck.cli import runner


def one_line_error(result, name: str = "check-model") -> str:
    """The result of a usage error: exit 2, no traceback, one line on stderr; that line."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{name}: error: ")
    return lines[0]


def during_the_run(monkeypatch, act) -> None:
    """Call ``act`` once the engine has searched and before anything is written."""
    real = runner.get_engine

    def get_engine(name, **kw):
        engine = real(name, **kw)
        search = engine.check

        def check(*a, **k):
            result = search(*a, **k)
            act()
            return result

        engine.check = check
        return engine

    monkeypatch.setattr(runner, "get_engine", get_engine)
