"""Running the installed commands as a user would, in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def command(name: str) -> str:
    return str(BIN / name)


def run_cli(name: str, *args: str, cwd: Path | None = None, timeout: float = 600, env: dict | None = None):
    """Run a console script; returns CompletedProcess with text output."""
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run(
        [command(name), *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, env=full_env
    )


def run_json(*args: str, **kw) -> tuple[int, dict]:
    proc = run_cli("check-model", *args, "--format", "json", **kw)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def summary(report: dict) -> dict:
    """What an interrupted-and-resumed run must reproduce exactly."""
    return {
        "states": report["states"],
        "generated": report["generated"],
        "depth": report["depth"],
        "complete": report["complete"],
        "properties": [(p["name"], p["status"], p["trace_length"]) for p in report["properties"]],
    }
