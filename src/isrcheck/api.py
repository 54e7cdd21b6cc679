"""The Python API: ``from isrcheck.api import check``, the main job from a notebook or a test.

It runs what ``check-model`` runs (``runner.run_check``) and hands back the verdicts,
their decoded traces and the plain-language verdict, with an HTML table for notebooks.
Settings are ``ModelConfig``'s field names (``rf=3, min_isr=2``) and Kafka's own keys
(``kafka={"min.insync.replicas": "2"}``); a bad one raises ``ValueError`` with the same
one line the command line prints.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from isrcheck.checker import CheckOptions
from isrcheck.model import ConfigError, ModelConfig
from isrcheck.properties import BY_NAME, UnknownProperty, verdict
from isrcheck.traces import Trace

from isrcheck.cli import plain
from isrcheck.cli.common import UsageFailure, exit_code
from isrcheck.cli import kafka_config
from isrcheck.cli.runner import CheckOutcome, CheckRun, run_check

SETTINGS = {f.name for f in fields(ModelConfig)}


@dataclass(frozen=True)
class Verdict:
    """One property's answer: its status as the reports say it, its sentence, and its trace."""

    name: str
    outcome: str  # holds, proved, violated, witnessed, never or unknown
    good: bool  # what a build wants (verdict.good)
    decides: bool  # part of the answer: not one of the specification's own invariants (CheckRun.decides)
    says: str
    trace: Trace | None
    trace_file: Path | None


@dataclass(frozen=True)
class Result:
    """A check's verdicts, in the order checked; ``result["committed-survive"]`` is one."""

    verdicts: tuple[Verdict, ...]
    text: str  # the plain-language verdict
    complete: bool
    states: int
    outcome: CheckOutcome  # everything check-model's reports are made of

    @property
    def ok(self) -> bool:
        """Every deciding verdict is what a build wants, and the search was complete: check-model's
        exit code 0, by the very rule that makes it."""
        return exit_code(self.outcome.result, self.outcome.run.decides) == 0

    @property
    def answer(self) -> str:
        """check-model's first line: the deciding verdicts, a short sentence each."""
        return plain.answer(self.outcome)

    def __getitem__(self, name: str) -> Verdict:
        for v in self.verdicts:
            if v.name == name:
                return v
        raise KeyError(name)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>{html.escape(v.name)}</code></td><td style='color:{'#1a7f37' if v.good else '#cf222e'}'>"
            f"{html.escape(v.outcome)}</td><td>{html.escape(v.says)}</td></tr>" for v in self.verdicts)
        return (f"<p>{html.escape(self.text)}</p><table><tr><th>property</th><th>verdict</th><th>in words</th></tr>"
                f"{rows}</table>")


def check(*, properties: tuple[str, ...] | list[str] = (), engine: str = "bfs", kafka: dict[str, Any] | None = None,
          trace_dir: str | Path | None = None, symmetry: bool = True, explore_all: bool = False,
          time_limit: float | None = None, **settings: Any) -> Result:
    """Check a configuration, as ``check-model`` does; no trace is written unless ``trace_dir``."""
    unknown = sorted(set(settings) - SETTINGS)
    if unknown:
        raise ValueError(f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(SETTINGS))}")
    try:
        read = (kafka_config.read_one(str(key), value, "kafka") for key, value in (kafka or {}).items())
        settings = {**dict(r for r in read if r is not None), **settings}  # as a suite's kafka table
        config = ModelConfig(**settings).validate().require_bounded()
        options = CheckOptions(symmetry=symmetry, explore_all=explore_all, time_limit=time_limit)
        run = CheckRun(config, engine, tuple(properties), options, Path(trace_dir) if trace_dir else None)
        outcome = run_check(run)
    except (ConfigError, UnknownProperty, UsageFailure) as e:
        raise ValueError(str(e)) from None
    r = outcome.result
    verdicts = tuple(
        Verdict(p.name, verdict.outcome(p, p.status), verdict.good(BY_NAME[p.name], p.status), run.decides(p.name),
                plain.sentence(outcome, p.name), outcome.traces.get(p.name), outcome.trace_files.get(p.name))
        for p in r.properties)
    return Result(verdicts, plain.paragraph(outcome) if r.properties else "", r.complete, r.stats.states, outcome)
