"""``replay-kafka TRACE``: replay a saved trace on a real Kafka cluster and compare it with the model.

The trace is checked as ``view-trace`` checks it (it replays on the model and shows what
it claims), then compiled into real operations and run on a fresh cluster of the trace's
release (``--kafka-version`` for another): see ``isrcheck.cluster.replay``. Exit codes: 0
reality did what the model says (every observed step matched and the violation or witness
happened), 1 it did not (a divergence, or the outcome not reproduced: the report says
where and what Kafka did instead), 2 a bad trace or a cluster that could not be had, 3
interrupted.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import click

from isrcheck import __version__
from isrcheck.files import FileProblem
from isrcheck.traces import Trace, TraceError
from isrcheck.traces.view_data import load_checked

from .common import FAILED, INCOMPLETE, OK, NonEmptyPath, OneLineCommand, UsageFailure, duration, process_started


def run_replay(trace: Trace, line: str | None, name: str, keep: bool = False, echo=None,
               deadline: float | None = None):
    """Replay one trace; a cluster that cannot be had is a UsageFailure (one line, exit 2)."""
    import shutil

    from isrcheck.cluster import ClusterError
    from isrcheck.cluster.replay import replay

    try:
        report = replay(trace, line, trace_name=name, progress=echo, deadline=deadline)
    except ClusterError as e:
        raise UsageFailure(str(e)) from None
    if not keep:
        shutil.rmtree(report.folder, ignore_errors=True)
    return report


def _values(d: dict[str, Any]) -> str:
    return ", ".join(f"{k} {_shown(v)}" for k, v in d.items())


def _shown(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, list) and v and isinstance(v[0], (tuple, list)):
        return "[" + ", ".join(f"m{r}@e{e}" for r, e in v) + "]"
    return str(v)


def step_lines(rep) -> list[str]:
    ops = f" [{'; '.join(rep.operations)}]" if rep.operations else ""
    held = f" (paused: {', '.join(map(str, rep.held))})" if rep.held else ""
    status = {"differs": "DIFFERS", "internal": "inside", "unsupported": "cannot",
              "stopped": "STOPPED"}.get(rep.status, rep.status)
    lines = [f"  {rep.index:3}. {status:8} {rep.seconds:5.1f} s  {rep.step}{ops}{held}"]
    if rep.status == "differs":
        lines.append(f"                        model: {_values(rep.expected)}")
        lines.append(f"                        real:  {_values(rep.observed)}")
    if rep.note:
        lines.append(f"                        {rep.note}")
    return lines


def summary(report) -> str:
    if report.stopped:
        return f"INCOMPLETE ({report.stopped}) on Kafka {report.release}: {report.outcome} ({report.seconds:.0f} s)"
    said = "reproduced" if report.reproduced else ("not decided" if report.reproduced is None else "NOT reproduced")
    where = ("every observed step matched" if report.diverged_at is None
             else f"reality and the model part at step {report.diverged_at}")
    return f"{said} on Kafka {report.release}: {report.outcome}; {where} ({report.seconds:.0f} s)"


def header(trace: Trace, name: str, line: str | None) -> str:
    from isrcheck.cluster import jars
    from isrcheck.cluster.replay import cluster_spec

    spec = cluster_spec(trace, line)
    kind = "counterexample" if trace.is_counterexample else "witness"
    return (f"replay-kafka: {name} ({trace.property_name} {kind}, found for Kafka {trace.config.kafka_version}, "
            f"{len(trace) - 1} steps) on a real Kafka {jars.release_for(spec.line)} cluster "
            f"({'KRaft' if spec.kraft else 'ZooKeeper'}, {spec.rf} brokers)")


def render_text(report, trace: Trace) -> str:
    body = [ln for rep in report.steps for ln in step_lines(rep)]
    return "\n".join([header(trace, report.trace, report.kafka_version), *body, summary(report)])


def render_json(report) -> str:
    return json.dumps(dataclasses.asdict(report), indent=2, default=list)


def exit_code(report) -> int:
    if report.diverged_at is not None or report.reproduced is False:
        return FAILED
    return INCOMPLETE if report.stopped else OK


@click.command("replay-kafka", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="replay-kafka", message="%(prog)s (isrcheck) %(version)s")
@click.argument("trace_file", type=NonEmptyPath(exists=False, dir_okay=False, path_type=Path))
@click.option("--kafka-version", "line", metavar="X.Y", default=None,
              help="The Kafka release to replay on (default: the trace's own); the newest patch of the line runs.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: each step as it is taken, then the outcome; json: the whole report as one object.")
@click.option("--keep", is_flag=True, help="Keep the cluster's folder (configs, logs, data) for a look afterwards.")
@click.option("--time-limit", callback=duration, metavar="DURATION",
              help="Stop cleanly after this long (90s, 5m), counted from the command's start; the cluster's start "
                   "(10-20 s) is not cut short.")
def main(trace_file: Path, line: str | None, fmt: str, keep: bool, time_limit: float | None) -> int:
    """Replay a saved trace on a real Kafka cluster; exit 0 reality agrees, 1 it parts, 2 usage,
    3 interrupted or stopped at its time limit."""
    deadline = None if time_limit is None else process_started() + time_limit
    from isrcheck.cluster import jars

    try:
        trace = load_checked(trace_file)
    except (TraceError, FileProblem) as e:
        raise UsageFailure(str(e)) from None
    if trace.config.core:
        raise UsageFailure(f"{trace_file}: a trace of the published specification (--core) names no Kafka release to replay on")
    if line is not None:
        from isrcheck.cluster import ClusterError

        try:
            jars.release_for(line)
        except ClusterError as e:
            raise UsageFailure(str(e)) from None

    if fmt == "text":
        click.echo(header(trace, trace_file.name, line))

    def echo(rep) -> None:
        if fmt == "text":
            click.echo("\n".join(step_lines(rep)))

    try:
        report = run_replay(trace, line, trace_file.name, keep, echo, deadline)
    except KeyboardInterrupt:
        click.echo("replay-kafka: interrupted; every process of the cluster was ended", err=True)
        return INCOMPLETE
    click.echo(render_json(report) if fmt == "json" else summary(report) if fmt == "text" else "")
    if keep:
        click.echo(f"replay-kafka: the cluster's folder is kept: {report.folder}", err=True)
    return exit_code(report)


if __name__ == "__main__":  # pragma: no cover
    main()
