"""``view-trace``: show a saved trace step by step, in the terminal or as one HTML page.

The trace is checked before anything is shown: it must be JSON, an isrcheck ITF
trace of this model version, replay step by step on the model, and break (or
witness) the property it names at its last state. Any defect is one line on
stderr and exit code 2.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import click

from isrcheck import __version__
from isrcheck.files import FileProblem, check_output_file, followed, write_failure
from isrcheck.traces import Trace, TraceError, itf
from isrcheck.traces.view_data import build_view, load_checked
from isrcheck.traces.view_text import render_text

from .common import OK, AsciiInt, NonEmptyPath, OneLineCommand, UsageFailure, color_option, wants_color

DEFAULT_WIDTH = 100


def terminal_width(width: int | None, stream=None) -> int:
    if width is not None:
        return width
    stream = stream or sys.stdout
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns if stream.isatty() else DEFAULT_WIDTH


def show_text(trace: Trace, *, color: bool | None = None, width: int | None = None,
              changed_only: bool = False, err: bool = False) -> None:
    """Print the terminal view of a checked trace (also used by ``check-model --view``)."""
    stream = sys.stderr if err else sys.stdout
    use_color = wants_color(stream, color)
    text = render_text(build_view(trace), color=use_color, width=terminal_width(width, stream),
                       changed_only=changed_only)
    click.echo(text, err=err, color=use_color, nl=False)


def check_page_path(out: Path) -> None:
    """--html's path, before the trace is read: a regular file or nothing in an existing
    folder (as cp wants it), never a device or FIFO to turn into a plain file."""
    try:
        check_output_file(out, "--html")
    except FileProblem as e:
        raise UsageFailure(str(e)) from None
    folder = (followed(out) or out).parent
    if not folder.is_dir():
        raise UsageFailure(f"cannot write {out}: the folder {folder} does not exist")


@click.command("view-trace", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="view-trace", message="%(prog)s (isrcheck) %(version)s")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--html", "html_out", type=NonEmptyPath(dir_okay=False, path_type=Path), metavar="OUT.html",
              help="Write a self-contained HTML page (step with the arrow keys) instead of printing. The page "
                   "replaces a regular file atomically; a symbolic link is followed (its target is written, as "
                   "cp does); a device, FIFO or missing folder is refused.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: the step-by-step view; json: the trace as normalised ITF JSON.")
@click.option("--changed-only", is_flag=True, help="After the initial state, show only what each step changed.")
@color_option
@click.option("--width", type=AsciiInt(60, 400), default=None,
              help=f"Text width [default: the terminal's, {DEFAULT_WIDTH} when piped].")
def main(file: Path, html_out: Path | None, fmt: str, changed_only: bool, color: bool | None,
         width: int | None) -> int:
    """Show a counterexample or witness trace (ITF JSON from check-model); exit 0 shown, 2 bad file or usage."""
    if html_out is not None and (fmt != "text" or changed_only):
        raise UsageFailure("--html writes the page only: it cannot be combined with --format json or --changed-only")
    if fmt == "json" and changed_only:
        raise UsageFailure("--changed-only applies to the text view, not to --format json")
    if html_out is not None:
        check_page_path(html_out)
    try:
        trace = load_checked(file)
    except TraceError as e:
        raise UsageFailure(str(e)) from None
    if html_out is not None:
        from isrcheck.traces.view_html import write_html

        try:
            write_html(build_view(trace), html_out)
        except (OSError, FileProblem) as e:
            raise UsageFailure(write_failure(html_out, e)) from None
        target = followed(html_out)
        via = f" through the symbolic link {html_out}" if target else ""
        click.echo(f"wrote {target or html_out}{via} ({len(trace)} states)", err=True)
        return OK
    if fmt == "json":
        click.echo(json.dumps(itf.to_itf(trace), indent=1))
        return OK
    show_text(trace, color=color, width=width, changed_only=changed_only)
    return OK


if __name__ == "__main__":  # pragma: no cover
    main()
