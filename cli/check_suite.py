"""``check-suite``: run many configurations with their expected verdicts (the CI use).

Exit codes: 0 every expectation met; 1 an expectation not met (or a check could
not run); 2 the suite file is malformed (one line: file, line, what is allowed);
3 interrupted, or a check ended undecided (time or memory limit) with nothing unmet.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from isrcheck import __version__
from isrcheck.files import FileProblem, check_output_dir, check_output_file

from . import junit, tradeoff
from .colors import paint_tag
from .common import (FAILED, INCOMPLETE, MAX_WORKERS, OK, AsciiInt, NonEmptyPath, OneLineCommand, Outputs,
                     UsageFailure, available_cores, color_option, wants_color)
from .suite import Suite, SuiteCheck, load_suite
from .suite_run import CheckReport, Judgement, SuiteRunner, judge, trace_folders

TAGS = {"error": "ERROR", "unmet": "FAIL", "unknown": "UNDECIDED"}


def check_line(check: SuiteCheck, rep: CheckReport, judgements: list[Judgement]) -> str:
    """One line for a finished check: its tag, name, each property's verdict, its time."""
    worst = next((o for o in ("error", "unmet", "unknown") if any(j.outcome == o for j in judgements)), "")
    tag = TAGS.get(worst, "PASS")
    if rep.error:
        return f"{tag:<9} {check.name}: could not run: {rep.error}"
    parts = []
    for j in sorted(judgements, key=lambda j: j.outcome != "unmet"):
        if j.outcome == "unmet":
            p = rep.by_name(j.property)
            trace = f" (trace {p.trace_file})" if p is not None and p.trace_file else ""
            trace = " (trace not saved)" if p is not None and p.trace_error else trace
            parts.append(f"{j.property} expected {j.expected}, got {j.actual}{trace}")
        elif j.outcome == "recorded":
            parts.append(f"{j.property} {j.actual} (recorded, no expectation)")
        else:
            parts.append(f"{j.property} {j.actual}")
    return f"{tag:<9} {check.name}: {'; '.join(parts)} ({rep.seconds:.1f} s)"


def summary_lines(suite: Suite, judgements: list[Judgement], reports: dict, seconds: float, jobs: int,
                  interrupted: bool, trace_root: Path) -> list[str]:
    count = {o: sum(1 for j in judgements if j.outcome == o)
             for o in ("met", "unmet", "unknown", "recorded", "error", "skipped")}
    expectations = count["met"] + count["unmet"] + count["unknown"] + count["error"]
    lines = [
        f"{suite.name}: {len(reports)} of {len(suite.checks)} checks run in {seconds:.1f} s "
        f"({jobs} job{'s' if jobs != 1 else ''}); {expectations} expectations: {count['met']} met, "
        f"{count['unmet']} not met, {count['unknown']} undecided, {count['error']} errors"
        + (f"; {count['recorded']} outcomes recorded without expectation" if count["recorded"] else "")
    ]
    if trace_root.exists():
        lines.append(f"traces: {trace_root}/")
    bad = [j for j in judgements if j.outcome in ("unmet", "error", "unknown")]
    if bad:
        lines.append("not met:" if all(j.outcome != "unknown" for j in bad) else "not met or undecided:")
        for j in bad:
            expected = f"expected {j.expected}, " if j.expected else ""
            lines.append(f"  {suite.path}:{j.line}: {j.check}: {j.property}: {expected}got {j.actual}")
    if interrupted:
        missing = len(suite.checks) - len(reports)
        lines.append(f"interrupted: {missing} check{'s' if missing != 1 else ''} not run")
    return lines


def github_annotations(suite: Suite, judgements: list[Judgement], reports: dict[str, CheckReport]) -> list[str]:
    """GitHub Actions workflow commands that pin each unmet expectation to its suite line."""
    out = []
    for j in judgements:
        if j.outcome not in ("unmet", "error", "unknown"):
            continue
        level = "warning" if j.outcome == "unknown" else "error"
        rep = reports.get(j.check)
        p = rep.by_name(j.property) if rep else None
        trace = f"; trace {p.trace_file}" if p is not None and p.trace_file else ""
        expected = f"expected {j.expected}, " if j.expected else ""
        props = (f"file={_escape_property(str(suite.path))},line={j.line},"
                 f"title={_escape_property(f'isrcheck: {j.check}: {j.property}')}")
        out.append(f"::{level} {props}::{_escape_data(f'{expected}got {j.actual}{trace}')}")
    return out


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def junit_suite(suite: Suite, judgements: list[Judgement], reports: dict[str, CheckReport],
                seconds: float) -> junit.TestSuite:
    by_name = {c.name: c for c in suite.checks}
    cases = []
    for j in judgements:
        check = by_name[j.check]
        rep = reports.get(j.check)
        p = rep.by_name(j.property) if rep else None
        where = f"{suite.path}:{j.line}"
        facts = [f"check: {j.check} ({where})"] + ([check.description] if check.description else []) + [
            f"configuration: {check.run.config.summary()}; engine {check.run.engine}",
            f"expected: {j.expected or '(nothing: outcome recorded)'}",
            f"found: {j.actual}",
        ]
        if p is not None:
            facts.append(f"trace: {p.trace_file}" if p.trace_file else "trace: none (no state breaks it)")
        time_s = rep.seconds if rep else 0.0
        if j.outcome == "unmet":
            trace = f"; trace {p.trace_file}" if p is not None and p.trace_file else ""
            body = "\n".join(facts + ([""] + list(p.trace_text) if p is not None and p.trace_text else []))
            cases.append(junit.Case(j.check, j.property, time_s, junit.FAILURE,
                                    f"{j.property}: expected {j.expected}, got {j.actual}{trace}",
                                    "unmet-expectation", body))
        elif j.outcome in ("error", "unknown"):
            detail = rep.detail if rep and rep.error else ""
            cases.append(junit.Case(j.check, j.property, time_s, junit.ERROR, f"{j.property}: {j.actual}",
                                    "check-error" if j.outcome == "error" else "incomplete",
                                    "\n".join(facts) + ("\n\n" + detail if detail else "")))
        elif j.outcome == "skipped":
            cases.append(junit.Case(j.check, j.property, 0.0, junit.SKIPPED, "not run: the suite was interrupted"))
        else:
            cases.append(junit.Case(j.check, j.property, time_s, output="\n".join(facts)))
    return junit.TestSuite(suite.name, tuple(cases), seconds, file=str(suite.path),
                           properties={"suite": str(suite.path), "checks": str(len(suite.checks))})


def list_lines(suite: Suite) -> list[str]:
    lines = [f"{suite.name}: {len(suite.checks)} checks"]
    for c in suite.checks:
        expect = ", ".join(f"{p} {c.expect[p].text}" if p in c.expect else f"{p} (recorded)" for p in c.properties)
        lines.append(f"  {c.name}: {c.run.config.summary()}; engine {c.run.engine}; {expect}")
    return lines


@click.command("check-suite", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="check-suite", message="%(prog)s (isrcheck) %(version)s")
@click.argument("suite_file", type=NonEmptyPath(dir_okay=False, path_type=Path), metavar="FILE.toml")
@click.option("--jobs", "-j", type=AsciiInt(1, MAX_WORKERS), default=None,
              help="Checks run at once, each in its own process [default: the CPU cores]; "
                   "Spark checks always run one at a time.")
@click.option("--junit", "junit_file", type=NonEmptyPath(dir_okay=False, path_type=Path),
              help="Write a JUnit XML report: one test case per check and property.")
@click.option("--trace-dir", type=NonEmptyPath(file_okay=False, path_type=Path), default=Path("traces-out"),
              show_default=True, help="Traces are saved under DIR/<suite>/<check>/ (keep it as a CI artifact).")
@click.option("--report", "report_file", type=NonEmptyPath(dir_okay=False, path_type=Path),
              help="Write the durability/availability trade-off table as a self-contained HTML page.")
@click.option("--markdown", is_flag=True,
              help="Print the trade-off table as Markdown on stdout (the per-check lines go to stderr).")
@click.option("--list", "list_only", is_flag=True, help="Validate the suite and list its checks; run nothing.")
@click.option("--progress/--no-progress", default=None,
              help="Progress lines on stderr for checks run in this process (--jobs 1, Spark) [default: on a terminal].")
@color_option
def main(suite_file: Path, jobs: int | None, junit_file: Path | None, trace_dir: Path, report_file: Path | None,
         markdown: bool, list_only: bool, progress: bool | None, color: bool | None) -> int:
    """Run a suite of checks with expected verdicts; exit 0 all met, 1 not met, 2 bad suite, 3 interrupted.
    Every output path is checked before the first check runs; a file that still cannot be
    written afterwards is named on stderr, after every verdict, with exit 2."""
    suite = load_suite(suite_file)
    if list_only:
        click.echo("\n".join(list_lines(suite)))
        return OK
    check_outputs(trace_dir, junit_file, report_file)
    err = markdown  # keep stdout for the table
    trace_root = trace_dir / suite.path.stem
    folders = trace_folders(list(suite.checks), trace_root)
    jobs = jobs or min(available_cores(), MAX_WORKERS)
    width = len(str(len(suite.checks)))
    finished: list[str] = []
    paint = wants_color(sys.stderr if err else sys.stdout, color)  # each check's tag: PASS green, FAIL red

    def on_done(check: SuiteCheck, rep: CheckReport) -> None:
        finished.append(check.name)
        line = check_line(check, rep, judge(check, rep))
        click.echo(f"[{len(finished):>{width}}/{len(suite.checks)}] {paint_tag(line) if paint else line}", err=err,
                   color=paint)

    started = time.monotonic()
    runner = SuiteRunner(list(suite.checks), folders, jobs, on_done, progress)
    reports = runner.run()
    seconds = time.monotonic() - started
    judgements = [j for c in suite.checks for j in judge(c, reports.get(c.name))]
    used_jobs = 1 if jobs == 1 else min(jobs, max(1, sum(1 for c in suite.checks if c.run.engine != "spark")))
    for line in summary_lines(suite, judgements, reports, seconds, used_jobs, runner.interrupted, trace_root):
        click.echo(line, err=err)
    if os.environ.get("GITHUB_ACTIONS"):
        for line in github_annotations(suite, judgements, reports):
            click.echo(line)
    outputs = trace_outputs(reports, trace_root)
    if junit_file is not None and outputs.write(
            "JUnit report", junit_file,
            lambda: junit.write(junit_file, suite.name, [junit_suite(suite, judgements, reports, seconds)])):
        click.echo(f"JUnit report: {junit_file}", err=err)
    if report_file is not None or markdown:
        table = tradeoff.build(suite, reports, judgements)
        if report_file is not None and outputs.write("trade-off report", report_file,
                                                     lambda: tradeoff.write_html(table, report_file)):
            click.echo(f"trade-off report: {report_file}", err=err)
        if markdown:
            click.echo(tradeoff.markdown(table), nl=False)
    outputs.finish()
    return exit_code(runner.interrupted, judgements)


def check_outputs(trace_dir: Path, junit_file: Path | None, report_file: Path | None) -> None:
    """The paths the suite writes, checked before any check runs (one line, exit 2)."""
    try:
        check_output_dir(trace_dir, "--trace-dir", create=False)
        if junit_file is not None:
            check_output_file(junit_file, "--junit")
        if report_file is not None:
            check_output_file(report_file, "--report")
    except FileProblem as e:
        raise UsageFailure(str(e)) from None


def trace_outputs(reports: dict[str, CheckReport], trace_root: Path, shown: str = "the verdicts above") -> Outputs:
    """The traces the checks saved, and those they could not (the first named); ``shown``: what
    was written before them (advise-config's advice, too)."""
    outputs = Outputs()
    outputs.written.append(shown)
    props = [(name, p) for name, rep in reports.items() for p in rep.properties]
    saved = sum(1 for _, p in props if p.trace_file)
    if saved:
        outputs.written.append(f"{saved} trace{'s' if saved != 1 else ''} under {trace_root}/")
    failed = [f"{name}: {p.name}: {p.trace_error}" for name, p in props if p.trace_error]
    if failed:
        more = f" and {len(failed) - 1} more" if len(failed) > 1 else ""
        outputs.failed.append(f"{len(failed)} trace{'s' if len(failed) != 1 else ''} ({failed[0]}{more})")
    return outputs


def exit_code(interrupted: bool, judgements: list[Judgement]) -> int:
    if interrupted:
        return INCOMPLETE
    if any(j.outcome in ("unmet", "error") for j in judgements):
        return FAILED
    if any(j.outcome == "unknown" for j in judgements):
        return INCOMPLETE
    return OK


if __name__ == "__main__":  # pragma: no cover
    main()
