"""advise-config: which settings keep the guarantees a user wants, given the faults to survive.

It sweeps the settings that trade durability for availability (acks, min.insync.replicas,
unclean leader election, flush.messages when power can fail, enable.idempotence when the
producer retries, replication.factor within a range), checks every combination with the
suite runner (in parallel), and prints each
guarantee's frontier (``frontier.py``): the cheapest settings that keep it, and the
verdict, with its trace, that rules out each one a step cheaper. Exit codes: 0 some
setting keeps every guarantee asked for; 1 none does; 2 usage; 3 interrupted or a check
that did not finish (the frontier may move).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from isrcheck import __version__
from isrcheck.checker import CheckOptions
from isrcheck.files import FileProblem, check_output_dir
from isrcheck.model import ConfigError, ModelConfig
from isrcheck.model import releases
from isrcheck.model.config import ACKS
from isrcheck.properties import BY_NAME

from . import advise_estimate, advise_mine
from . import frontier as fr
from .advise_report import (BY_KEY, GUARANTEES, Advice, Guarantee, header, json_advice, plain, point_config, short,
                            text_advice)
from .check_suite import trace_outputs
from .colors import paint_kind
from .common import FAILED, INCOMPLETE, MAX_WORKERS, OK, AsciiInt, NonEmptyPath, OneLineCommand, UsageFailure
from .common import available_cores, color_option, duration, process_started, size, wants_color
from .runner import CheckRun
from .suite import SuiteCheck
from .suite_run import CheckReport, SuiteRunner, trace_folders
from .units import digits_hint, whole_number


def _rf_range(ctx, param, value: str) -> tuple[int, ...]:  # noqa: ARG001
    """``3`` or ``3..5``: the replication factors to sweep, each in the digits 0-9 alone, as
    check-model reads --rf (``int`` would take `` 3``, ``+3`` and ``٣``)."""
    low, sep, high = value.partition("..")
    try:
        lo = whole_number(low)
        hi = whole_number(high) if sep else lo
    except ValueError:
        raise click.BadParameter(f"{value[:40]!r} is not N or N..M, as in 3 or 3..4"
                                 f"{digits_hint(low) or digits_hint(high)}") from None
    if not 1 <= lo <= hi <= 5:
        raise click.BadParameter(f"{value!r}: replication factors 1 to 5, the lower first (as in 3..4)")
    return tuple(range(lo, hi + 1))


def axes(rfs: tuple[int, ...], power_loss: int, retries: int = 0) -> tuple[fr.Axis, ...]:
    """The settings swept, each cheapest first; flush.messages only matters when power can fail,
    enable.idempotence when the producer retries (Kafka refuses it without acks=all: those points
    are not valid)."""
    idempotence = (fr.Axis("idempotent", "enable.idempotence", (False, True), lambda v: str(v).lower(),
                           lambda v: "idempotent" if v else "notidempotent"),) if retries else ()
    return (
        fr.Axis("rf", "replication.factor", rfs, tag=lambda v: f"rf{v}"),
        fr.Axis("acks", "acks", tuple(a for a in ("0", "1", "all") if a in ACKS), tag=lambda v: f"acks{v}"),
        fr.Axis("min_isr", "min.insync.replicas", tuple(range(1, max(rfs) + 1)), tag=lambda v: f"minisr{v}"),
        fr.Axis("unclean_election", "unclean.leader.election.enable", (True, False), lambda v: str(v).lower(),
                lambda v: "unclean" if v else "clean"),
        fr.Axis("flush", "flush.messages", ("os", "always") if power_loss else ("os",),
                lambda v: "1" if v == "always" else "unset", lambda v: f"flush{v}"),
        *idempotence,
    )


def chosen(keys: tuple[str, ...], base: ModelConfig) -> tuple[Guarantee, ...]:
    """The guarantees asked for, or the default: every one that applies to the faults."""
    for key in keys:
        if BY_KEY[key].producer and not base.retries:
            raise UsageFailure(f"--guarantee {key} needs --retries 1 or more: without retries the producer sends "
                               f"each record once")
    if keys:
        return tuple(BY_KEY[k] for k in dict.fromkeys(keys))
    return tuple(g for g in GUARANTEES if (g.key != "stored" or base.loses_storage)
                 and (g.key != "writable" or base.crashes) and (not g.producer or base.retries))


def _checks(sweep: fr.Sweep, base: ModelConfig, wanted: tuple[Guarantee, ...],
            options: CheckOptions, threads: int) -> dict[fr.Point, SuiteCheck]:
    """A check per point; ``threads``: each one's share of the cores (two checks side by side
    with two threads each on two cores took 33.5 s for ``--rf 2 --retries 1``, one each 26.5 s)."""
    out = {}
    for point in sweep.points:
        config = point_config(base, sweep.settings(point))
        props = tuple(g.property for g in wanted if BY_NAME[g.property].applies(config))
        run = CheckRun(config, "bfs", props, options, None, engine_args={"workers": threads})
        out[point] = SuiteCheck(sweep.slug(point), run, {}, 0)
    return out


def _valid(base: ModelConfig):
    def valid(settings: dict[str, Any]) -> bool:
        if settings["min_isr"] > settings["rf"]:  # valid in Kafka, but the same as rf from 3.7 and no
            return False  # acks=all write before: the sweep gains nothing from it
        try:
            point_config(base, settings).validate()
        except ConfigError:
            return False
        return True

    return valid


WIND_DOWN = 1.0  # seconds
KAFKA_FILE = NonEmptyPath(dir_okay=False, path_type=Path)


@click.command("advise-config", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="advise-config", message="%(prog)s (isrcheck) %(version)s")
@click.option("--crashes", type=AsciiInt(0, 4), default=1, show_default=True, help="Broker crashes to survive.")
@click.option("--disk-loss", type=AsciiInt(0, 4), default=0, show_default=True,
              help="How many of the crashes also wipe the broker's disk.")
@click.option("--power-loss", type=AsciiInt(0, 5), default=0, show_default=True,
              help="Brokers that may lose power at once (then flush.messages is swept too).")
@click.option("--restarts/--no-restarts", default=True, show_default=True,
              help="Brokers that went down come back (--no-restarts: every failure is permanent).")
@click.option("--retries", type=AsciiInt(0, 4), default=0, show_default=True,
              help="Producer requests that time out and are sent again (then enable.idempotence is swept too, and "
                   "no-duplicates and in-order are guarantees).")
@click.option("--kafka-version", default=releases.DEFAULT, show_default=True,
              help=f"Kafka release whose rules are checked, {releases.VERSIONS[0]} to {releases.NEWEST}.")
@click.option("--rf", "rfs", default="3", show_default=True, callback=_rf_range, metavar="N|N..M",
              help="replication.factor, or a range of them to sweep (each one more is much slower).")
@click.option("--guarantee", "guarantees", multiple=True, type=click.Choice(list(BY_KEY)),
              help="A guarantee to keep (repeatable) [default: every one that applies: acked, committed, reads, "
                   "writable with crashes, recovers, stored with disk or power loss, no-duplicates and in-order "
                   "with retries].")
@click.option("--max-records", type=AsciiInt(1, 4), default=2, show_default=True, help="Records the producer may write.")
@click.option("--max-leader-epoch", type=AsciiInt(0, 6), default=2, show_default=True, help="Highest leader epoch.")
@click.option("--jobs", "-j", type=AsciiInt(1, MAX_WORKERS), default=None,
              help="Checks run at once, each in its own process [default: the CPU cores].")
@click.option("--time-limit", callback=duration, metavar="DURATION",
              help="Stop the whole sweep cleanly after this long (90s, 5m): the advice gives what the configurations "
                   "decided by then say.")
@click.option("--max-memory", callback=size, metavar="SIZE",
              help="Stay under this much memory, all the checks that run at once together (2G) [default: 85% of "
                   "the machine's].")
@click.option("--trace-dir", type=NonEmptyPath(file_okay=False, path_type=Path), default=Path("traces-out/advise"),
              show_default=True, help="Where the traces that rule settings out are saved, a folder per configuration.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="The advice as text, or as JSON on stdout.")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="A line on stderr as each configuration's check ends.")
@click.option("--topic-config", multiple=True, type=KAFKA_FILE,
              help="Your topic's settings, as check-model reads them (repeatable): the advice says where they sit.")
@click.option("--producer-config", multiple=True, type=KAFKA_FILE, help="Your producer's .properties (repeatable).")
@click.option("--broker-config", multiple=True, type=KAFKA_FILE, help="Your broker's server.properties (repeatable).")
@click.option("--topic", metavar="NAME", help="The topic to read from a describe output that lists several.")
@click.option("--config", "kafka_pairs", multiple=True, metavar="KEY=VALUE", help="A Kafka setting of yours (repeatable).")
@color_option
def main(kafka_version: str, rfs: tuple[int, ...], guarantees: tuple[str, ...], max_records: int,
         max_leader_epoch: int, jobs: int | None, time_limit: float | None, max_memory: int | None, trace_dir: Path,
         fmt: str, progress: bool, color: bool | None, topic_config: tuple[Path, ...], producer_config: tuple[Path, ...],
         broker_config: tuple[Path, ...], topic: str | None, kafka_pairs: tuple[str, ...], **faults: Any) -> int:
    """Sweep acks, min.insync.replicas, unclean election (and flush, rf) and print, for each guarantee,
    the cheapest settings that keep it and the trace that rules out each cheaper one; exit 0 some
    setting keeps every guarantee, 1 none does, 2 usage, 3 incomplete."""
    # one budget for the sweep, less what its ending takes (the checks running stop, the advice
    # is made): measured 1.2 to 1.3 s past a 10 s limit without it
    deadline = None if time_limit is None else process_started() + time_limit - WIND_DOWN
    files = [(f"--{kind}-config", path) for kind, paths in (("broker", broker_config), ("topic", topic_config),
                                                            ("producer", producer_config)) for path in paths]
    settings, notes = advise_mine.read(files, topic, kafka_pairs)
    ctx = click.get_current_context()
    given = {name: value for name, value in (("rf", rfs[0] if len(rfs) == 1 else rfs), ("retries", faults["retries"]))
             if ctx.get_parameter_source("rfs" if name == "rf" else name) is ParameterSource.COMMANDLINE}
    base_fields, yours = advise_mine.split(settings, given)
    if "rf" in base_fields:
        rfs = (base_fields.pop("rf"),)
    faults["retries"] = base_fields.pop("retries", faults["retries"])
    for note in notes:
        click.echo(f"advise-config: {note}", err=True)
    try:
        version = releases.find(kafka_version).version
        base = ModelConfig(rf=max(rfs), kafka_version=version, max_records=max_records, max_leader_epoch=max_leader_epoch,
                           **base_fields, **faults).validate()  # faults: the options not named above
        check_output_dir(trace_dir, "--trace-dir", create=False)
    except (ValueError, ConfigError, FileProblem) as e:
        raise UsageFailure(str(e)) from None
    wanted = chosen(guarantees, base)
    sweep = fr.make_sweep(axes(rfs, base.power_loss, base.retries), _valid(base))
    jobs = jobs or min(available_cores(), MAX_WORKERS)
    checks = _checks(sweep, base, wanted, CheckOptions(symmetry=True), max(1, available_cores() // jobs))
    click.echo(header(sweep, base, wanted), err=True)
    times = advise_estimate.load()
    keys = {c.name: advise_estimate.key(c.run) for c in checks.values()}
    click.echo(advise_estimate.estimate(list(keys.values()), jobs, times).line(jobs, time_limit), err=True)
    started, done, measured = time.monotonic(), [], {}

    words = {c.name: sweep.words(p) for p, c in checks.items()}

    def on_done(check: SuiteCheck, rep: CheckReport) -> None:
        done.append(check.name)
        if rep.complete and not rep.error:
            measured[keys[check.name]] = rep.seconds
        if progress:
            count = f"[{len(done):>{len(str(len(checks)))}}/{len(checks)}]"
            pending = [times.get(k) for name, k in keys.items() if name not in done]
            left = (f" (about {advise_estimate.time_left(list(measured.values()), pending, jobs)} left)"
                    if measured and pending else "")
            click.echo(f"  {count} {words[check.name]}: {short(rep, wanted)}{left}", err=True)

    runner = SuiteRunner(list(checks.values()), trace_folders(list(checks.values()), trace_dir),
                         jobs, on_done, False, deadline, max_memory)
    reports = runner.run()
    advise_estimate.save(times, measured)
    declared = [p.name for p in click.get_current_context().command.params]  # the options' order, not the user's
    advice = Advice(sweep, base, wanted, {p: reports.get(c.name) for p, c in checks.items()},
                    time.monotonic() - started, runner.interrupted, {k: faults[k] for k in declared if k in faults})
    point = advise_mine.your_point(sweep, base, yours) if yours else None
    if fmt == "json":
        click.echo(json.dumps({**json_advice(advice), **advise_mine.json_part(advice, point, yours)}, indent=2))
    else:
        colored = wants_color(sys.stdout, color)
        mine = "".join(f"{line}\n" for line in advise_mine.text_lines(advice, point, yours))
        click.echo(mine + ("\n" if mine else "") + text_advice(advice, paint_kind if colored else plain), color=colored)
    # a trace the advice would point to that could not be saved (a full disk): said last, exit 2, as check-suite does
    trace_outputs(reports, trace_dir, "the advice above").finish()
    if advice.interrupted or advice.incomplete:
        return INCOMPLETE
    return OK if advice.recommended else FAILED


if __name__ == "__main__":  # pragma: no cover
    main()
