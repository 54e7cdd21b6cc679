"""``fetch-kafka [X.Y ...]``: fetch the pinned Kafka releases' jars from Maven Central, ahead of a replay.

``replay-kafka`` fetches a release's jars on first use; this command does it ahead of time
(``.ci/run`` uses it), for every pinned line by default. A missing Java or Maven, or a fetch
that fails, is one line on stderr and exit 2.
"""

from __future__ import annotations

import click

from isrcheck import __version__

from .common import OK, OneLineCommand, UsageFailure


@click.command("fetch-kafka", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="fetch-kafka", message="%(prog)s (isrcheck) %(version)s")
@click.argument("lines", nargs=-1, metavar="[X.Y]...")
def main(lines: tuple[str, ...]) -> int:
    """Fetch the jars of the Kafka releases the harness runs (every pinned line by default)."""
    from isrcheck.cluster import ClusterError, jars

    try:
        for line in lines or tuple(jars.PINNED):
            click.echo(f"fetch-kafka: Kafka {jars.release_for(line)}: {jars.libs(line)}")
    except ClusterError as e:
        raise UsageFailure(str(e)) from None
    return OK


if __name__ == "__main__":  # pragma: no cover
    main()
