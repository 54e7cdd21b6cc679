"""``check-model``: check one configuration and print a verdict per property."""

from __future__ import annotations

import errno
import json
import sys
from dataclasses import replace
from pathlib import Path

import click
import psutil
from click.core import ParameterSource

from isrcheck import __version__
from isrcheck.checker import ENGINES, CheckOptions
from isrcheck.checker.checkpoint import CheckpointError
from isrcheck.files import FileProblem, check_output_dir, check_output_file
from isrcheck.model import REVISIONS, ConfigError, ModelConfig
from isrcheck.model.config import FEATURE_FIELDS, FEATURES, default_of
from isrcheck.model.fields import strict_min_isr
from isrcheck.model.replication import with_now
from isrcheck.properties import NAMES, UnknownProperty

from . import colors, graph_files, kafka_config, kafka_live, partition_now, report
from .common import (LIVE_INTERVAL, MAX_WORKERS, AsciiInt, CliObserver, NonEmptyPath, OneLineCommand, Outputs,
                     UsageFailure, available_cores, color_option, duration, exit_code, parsed, process_started, size,
                     wants_color)
from .runner import CheckOutcome, CheckRun, run_check
from .engine_args import engine_args_from
from .simulate_options import simulate_options
from .units import whole_number

ENGINE_WORDS = {"bfs": "explicit breadth-first search, shortest traces", "z3": "symbolic, bounded model checking "
                "and proofs", "spark": "breadth-first search on a Spark cluster",
                "simulate": "random walks, quick to find a violation, proving nothing"}
KAFKA_FILE = NonEmptyPath(dir_okay=False, path_type=Path)
# CLI option name for each feature field, for the --core conflict message.
FEATURE_OPTIONS = {knob.field: knob.option.split("/")[0] for knob in FEATURES}


def model_config_from(params: dict, explicit: set[str]) -> ModelConfig:
    """A validated ModelConfig from option values; ``explicit`` names the options the user gave."""
    if params["core"]:
        given = [FEATURE_OPTIONS[f] for f in FEATURE_FIELDS if f in explicit]
        if given:
            raise UsageFailure(f"{', '.join(given)} cannot be used with --core: the core machine has no Kafka features")
    values = {k: params[k] for k in ("rf", "protocol", "max_records", "log_size", "max_leader_epoch", "core")}
    if not params["core"]:
        values.update({k: params[k] for k in FEATURE_FIELDS})
    try:
        config = ModelConfig(**values).validate()
        return with_now(config, params["now"]).validate() if params.get("now") else config
    except ConfigError as e:
        raise UsageFailure(str(e)) from None


def default_memory_limit(share: int = 1) -> int:
    """Without --max-memory a run still stops cleanly: at 85% of the machine's memory,
    divided among ``share`` runs going on at once."""
    return int(psutil.virtual_memory().total * 0.85) // max(1, share)


def check_run_from(params: dict, explicit: set[str]) -> CheckRun:
    """The run that option values ask for; check-suite builds each check's run with it too.
    An unset --max-memory stays None here: the caller knows how many runs share the machine."""
    config = model_config_from(params, explicit)
    engine_args = engine_args_from(params, explicit, config)
    options = CheckOptions(
        max_depth=params["max_depth"],
        explore_all=params["explore_all"],
        symmetry=params["symmetry"],
        time_limit=params["time_limit"],
        max_memory=params["max_memory"],
        checkpoint_every=params["checkpoint_every"],
    )
    return CheckRun(
        config,
        params["engine"],
        tuple(params["properties"]),
        options,
        params["trace_dir"],
        checkpoint_dir=params.get("checkpoint_dir"),
        resume_dir=params.get("resume_dir"),
        engine_args=engine_args,
    )


class EpochBound(click.ParamType):
    """A non-negative int, or 'unbounded' (None): leader epochs and record ids without bound."""

    name = "N|unbounded"

    def convert(self, value, param, ctx):
        if value is None or isinstance(value, int) or value == "unbounded":
            return None if value == "unbounded" else value
        try:
            return whole_number(str(value), "neither a number nor 'unbounded'")  # refuses -2 as negative
        except ValueError as e:
            self.fail(str(e), param, ctx)


def _nonneg(ctx, param, value):
    """A count from a suite's TOML is an int that no text rule has read: it may be negative."""
    if value is not None and value < 0:
        raise click.BadParameter(f"{value} is negative")
    return value


def _depth(ctx, param, value):
    """A trace has at least its initial state: a bound of 0 would search nothing and say "holds"."""
    if value is not None and value < 1:
        raise click.BadParameter(f"{value}: a trace has at least one state (1: the initial state alone)")
    return value


def feature_options(command):
    """check-model's option for every Kafka feature (``config.FEATURES``), in their order."""
    for knob in reversed(FEATURES):
        default = default_of(knob)
        extra: dict = {"default": default, "show_default": default is not None, "help": knob.help}
        if knob.parse:
            extra.update(type=str, callback=parsed(knob.parse), show_default=False)
        elif knob.choices:
            extra["type"] = click.Choice(knob.choices)
        elif "/" not in knob.option:
            extra.update(type=AsciiInt(), callback=_nonneg if knob.count else None)
        command = click.option(knob.option, knob.field, **extra)(command)
    return command


def min_isr_notes(config: ModelConfig) -> list[str]:
    """min.insync.replicas above the replication factor is Kafka's to read, not an error: from
    3.7 it takes the replication factor; before, it refuses every acks=all write."""
    if config.core or config.min_isr <= config.rf:
        return []
    said = f"min.insync.replicas={config.min_isr} is above replication.factor={config.rf}"
    if strict_min_isr(config):
        return [f"{said}: Kafka {config.kafka_version} takes {config.rf} (min ISR at most the replicas, KAFKA-15583)"]
    writes = "every acks=all write is refused (NotEnoughReplicas)" if config.acks == "all" else "acks=all writes would be refused"
    return [f"{said}: on Kafka {config.kafka_version} {writes}; from 3.7 Kafka takes {config.rf}"]


@click.command("check-model", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="check-model", message="%(prog)s (isrcheck) %(version)s")
@click.option("--rf", "--replication-factor", "rf", type=AsciiInt(), default=3, show_default=True,
              help="Replication factor.")
@click.option("--protocol", type=click.Choice(REVISIONS), default=None,
              help="Protocol revision: hw-truncation (<0.11), kip-101 (0.11-1.x), kip-279 (2.0), kip-320 (2.1+) "
                   "[default: kip-320 with --core, else that of --kafka-version].")
@click.option("--core", is_flag=True, help="The published specification's machine exactly, without Kafka features.")
@feature_options
@click.option("--max-records", type=AsciiInt(), default=2, show_default=True, callback=_nonneg,
              help="Records the producer may write.")
@click.option("--log-size", type=AsciiInt(), default=None, callback=_nonneg,
              help="Log capacity [default: max-records].")
@click.option("--max-leader-epoch", type=EpochBound(), default=2, show_default=True,
              help="Highest leader epoch (epochs 0..N); 'unbounded' (with --engine z3): epochs and record ids unbounded.")
@click.option("--max-depth", type=AsciiInt(), default=None, callback=_depth,
              help="Bound on trace length in states, the initial one included: at least 1 (the initial state "
                   "alone).")
@click.option("--property", "properties", multiple=True, metavar="NAME",
              help=f"Property to check (repeatable) [default: all that apply]: {', '.join(NAMES)}.")
@click.option("--engine", type=click.Choice(ENGINES), default="bfs", show_default=True,
              help="; ".join(f"{name}: {ENGINE_WORDS[name]}" for name in ENGINES if name in ENGINE_WORDS) + ".")
@click.option("--prove", type=click.Choice(["none", "induction", "spacer"]), default=None,
              help="--engine z3: after BMC, try a proof for every depth [default: induction].")
@click.option("--prove-timeout", callback=duration, metavar="DURATION",
              help="--engine z3: time for the proof attempt [default: 60s].")
@click.option("--spark-master", metavar="URL", default=None,
              help="Spark master for --engine spark: local[*] (embedded), local[N], spark://HOST:PORT, yarn, "
                   "k8s://... [default: local[*]].")
@click.option("--spark-partitions", type=AsciiInt(), default=None, metavar="N",
              help="Partitions of the frontier and visited set for --engine spark [default: the cluster's cores; "
                   "on local[N], at most this machine's].")
@click.option("--verbose", is_flag=True, help="Show Spark's own console output (--engine spark).")
@simulate_options
@click.option("--kernel", type=click.Choice(["vector", "scalar"]), default="vector", show_default=True,
              help="Successor kernel of --engine bfs, spark and simulate: vector (NumPy, a level, a Spark "
                   "partition or a batch of walks at a time) where it applies, that is without checkpoints and within its table and key bounds; "
                   "scalar (one state at a time, exact keys) otherwise.")
@click.option("--workers", type=AsciiInt(), default=None, metavar="N",
              help=f"BFS processes (scalar kernel) or threads (vector kernel; processes with --processes), "
                   f"1 to {MAX_WORKERS} [default: the "
                   "cores this process may use]. Checkpointed runs use one process.")
@click.option("--processes", is_flag=True,
              help="The vector kernel's workers are processes, each owning a share of the visited set, "
                   "as the scalar kernel's are: no interpreter lock between them (faster at rf 4 and 5, "
                   "up to 1.5 times the memory); a memory limit stops them rather than moving states "
                   "to disk. Checkpoints and the state graph run on threads.")
@click.option("--symmetry/--no-symmetry", default=True, show_default=True,
              help="Symmetry reduction over broker identities.")
@click.option("--continue", "explore_all", is_flag=True,
              help="Explore the whole bounded space even after every property is decided.")
@click.option("--trace-dir", type=NonEmptyPath(file_okay=False, path_type=Path), default=Path("traces-out"),
              show_default=True, help="Where counterexamples and witnesses are saved (ITF JSON); checked "
                                      "before the search: it must be a folder that can be created or written.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: the report in words; json: the same answer for tools (report_version says its shape).")
@click.option("--junit", "junit_file", type=NonEmptyPath(dir_okay=False, path_type=Path),
              help="Also write a JUnit XML report: one test case per property (replaced atomically; a symbolic "
                   "link is followed, a device or FIFO refused).")
@click.option("--config", "kafka_pairs", multiple=True, metavar="KEY=VALUE",
              help="A setting in Kafka's own words (repeatable): replication.factor, min.insync.replicas, "
                   "unclean.leader.election.enable, acks (all, -1, 1, 0), flush.messages, "
                   "eligible.leader.replicas.version (0, 1); Kafka's other topic keys are listed as ignored.")
@click.option("--topic-config", multiple=True, type=KAFKA_FILE,
              help="The topic's settings (repeatable): a .properties file, or what kafka-topics.sh --describe or "
                   "kafka-configs.sh --describe [--all] print; keys the model does not read are listed as ignored.")
@click.option("--producer-config", multiple=True, type=KAFKA_FILE, help="A producer's .properties (repeatable).")
@click.option("--consumer-config", multiple=True, type=KAFKA_FILE, help="A consumer's .properties (repeatable).")
@click.option("--broker-config", multiple=True, type=KAFKA_FILE,
              help="A broker's server.properties (repeatable): topic defaults that a topic's own settings override.")
@click.option("--topic", "topic", metavar="NAME",
              help="The topic to read from a describe output that lists several, or from --bootstrap-server.")
@click.option("--partition", "partition", metavar="N|new",
              help="Start from this partition's state as the describe or the live cluster shows it (default: "
                   "from every partition's, one check per distinct state), or 'new': a new partition.")
@click.option("--bootstrap-server", metavar="HOST:PORT",
              help="Read --topic's settings from this live cluster (the Admin API, as kafka-topics.sh and "
                   "kafka-configs.sh --describe do).")
@click.option("--command-config", type=KAFKA_FILE,
              help="Client settings for --bootstrap-server (security.protocol, sasl.*, ssl.*), as Kafka's tools take.")
@click.option("--graph", "graph_file", type=NonEmptyPath(dir_okay=False, path_type=Path),
              help="Also write the explored state graph (--engine bfs; explores the whole bounded space): .npz "
                   "(any size), .graphml or .dot (up to 200,000 states); .scc.graphml or .scc.dot: its "
                   "condensation, one node per strongly connected component.")
@click.option("--time-limit", callback=duration, metavar="DURATION",
              help="Stop cleanly after this long (90s, 5m, 1h; at most a year).")
@click.option("--max-memory", callback=size, metavar="SIZE",
              help="Stay under this much memory (2G; at most 1024T): the vector kernel moves its states to "
                   "disk ($TMPDIR) where it must; a search that cannot stops cleanly.")
@click.option("--checkpoint", "checkpoint_dir", type=NonEmptyPath(file_okay=False, path_type=Path),
              help="Save the search in this folder at every level and every --checkpoint-every.")
@click.option("--checkpoint-every", callback=duration, default="5m", show_default=True, metavar="DURATION",
              help="Longest time between checkpoints inside a level (bfs; --engine spark saves at level ends).")
@click.option("--resume", "resume_dir", type=NonEmptyPath(file_okay=False, path_type=Path),
              help="Continue the search saved in this folder (same options as the run that saved it).")
@click.option("--progress/--no-progress", default=None,
              help="Progress on stderr: redrawn in place on a terminal, a line per report otherwise [default: on "
                   "a terminal].")
@color_option
@click.option("--replay-on-kafka", is_flag=True,
              help="After the check, replay each counterexample and witness on a real Kafka cluster of the "
                   "release checked (replay-kafka) and print the real outcome beside the model's verdict.")
@click.option("--view", is_flag=True,
              help="After the report, show each violated property's trace step by step (as view-trace does).")
def main(**params) -> int:
    """Check one Kafka replication configuration; exit 0 holds, 1 violated, 2 usage, 3 incomplete."""
    ctx = click.get_current_context()
    explicit = {k for k in params if ctx.get_parameter_source(k) is ParameterSource.COMMANDLINE}
    notes = apply_kafka_keys(params, explicit)
    run = check_run_from(params, explicit)
    if run.config.now is not None and run.engine == "simulate":
        raise UsageFailure("--engine simulate walks from a new partition; a partition's state now needs "
                           "--engine bfs, z3 or spark (or --partition new)")
    for note in notes + min_isr_notes(run.config):  # after the refusals: a refused run says one line
        click.echo(f"check-model: {note}", err=True)
    if params["graph_file"] is not None:
        keep_graph(run, params["graph_file"])
    check_outputs(run, params["junit_file"], params["graph_file"])
    if params["replay_on_kafka"]:
        refuse_replay(run)
    run.options = replace(run.options, started=process_started())  # the limits count from the first instruction
    if run.options.max_memory is None:
        run.options = replace(run.options, max_memory=default_memory_limit())
    if run.engine == "bfs" and run.engine_args["workers"] is None:
        run.engine_args["workers"] = min(available_cores(), MAX_WORKERS)
    try:
        with CliObserver(params["progress"], report.header(run.config), live=True, color=params["color"]) as observer:
            if observer.live:
                run.options = replace(run.options, progress_interval=LIVE_INTERVAL)
            outcome = run_check(run, observer)
    except (UnknownProperty, CheckpointError, ConfigError) as e:
        raise UsageFailure(str(e)) from None
    except (OSError, FileProblem) as e:  # a checkpoint that could not be written, descriptors run out
        raise UsageFailure(f"the check stopped, nothing decided: {stopped_by(e, run)}") from None
    paint = params["fmt"] == "text" and wants_color(sys.stdout, params["color"])
    if params["fmt"] == "json":
        doc = report.to_json(outcome)
        if params["replay_on_kafka"]:
            doc["kafka_replays"] = replay_traces(outcome, params["fmt"])
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(colors.report_text(outcome, paint), color=paint)
        if params["replay_on_kafka"]:
            replay_traces(outcome, params["fmt"])
    outputs = write_outputs(outcome, params["junit_file"])
    if params["graph_file"] is not None:
        graph_out(outputs, outcome, params["graph_file"])
    if params["view"]:
        from .view_trace import show_text

        for trace in outcome.traces.values():
            if trace.is_counterexample:  # the JSON report keeps stdout; the views then go to stderr
                click.echo("", err=params["fmt"] == "json")
                show_text(trace, color=params["color"], err=params["fmt"] == "json")
    outputs.finish()
    return exit_code(outcome.result, run.decides)


def refuse_replay(run: CheckRun) -> None:
    """--replay-on-kafka needs saved traces of a Kafka release the harness runs."""
    from isrcheck.cluster import ClusterError, jars

    if run.config.core:
        raise UsageFailure("--replay-on-kafka needs a Kafka release: --core checks the published specification")
    if run.trace_dir is None:
        raise UsageFailure("--replay-on-kafka replays the saved traces: give a --trace-dir")
    try:
        jars.release_for(run.config.kafka_version)
    except ClusterError as e:
        raise UsageFailure(f"--replay-on-kafka: {e}") from None


def replay_traces(outcome: CheckOutcome, fmt: str) -> list[dict]:
    """Each saved trace replayed on a real cluster (a minute or so each): one line each after
    the text report, or the whole replay reports in the JSON one."""
    import dataclasses

    from .replay_kafka import run_replay, summary

    o = outcome.run.options
    deadline = o.started + o.time_limit if o.time_limit and o.started is not None else None  # the check's budget
    out = []
    for name, path in outcome.trace_files.items():
        trace = outcome.traces[name]
        click.echo(f"check-model: replaying the {name} trace on a real Kafka cluster ...", err=True)
        rep = run_replay(trace, None, path.name, deadline=deadline)
        if fmt == "text":
            click.echo(f"  {name:<18} real Kafka: {summary(rep)}")
        out.append(dataclasses.asdict(rep))
    return out


def apply_kafka_keys(params: dict, explicit: set[str]) -> list[str]:
    """Kafka's files and --config become option values (one an option contradicts is refused); the notes."""
    settings = kafka_config.KafkaSettings()
    files = [(f"--{kind}-config", path) for kind in ("broker", "topic", "producer", "consumer")
             for path in params[f"{kind}_config"]]
    notes = kafka_config.read_files(files, params["topic"], settings, live=params["bootstrap_server"] is not None)
    notes += read_live(params, settings)
    params["now"], same = partition_now.choose(settings.partitions, params["partition"])
    notes += same
    for pair in params["kafka_pairs"]:
        settings.add(*kafka_config.parse_pair(pair), "--config", typed=True)
    for name, value in settings.values.items():
        if name in explicit and params[name] != value:
            option = FEATURE_OPTIONS.get(name, f"--{name}")
            key = kafka_config.KEY_OF[name]
            raise UsageFailure(f"{key}={settings.given[key][0]} disagrees with {option} {params[name]}")
        params[name] = value
        explicit.add(name)
    return settings.notes() + notes


def read_live(params: dict, settings: kafka_config.KafkaSettings) -> list[str]:
    """--bootstrap-server: the topic's settings from the live cluster, read as a describe file's."""
    server, topic = params["bootstrap_server"], params["topic"]
    if server is None:
        if params["command_config"] is not None:
            raise UsageFailure("--command-config needs --bootstrap-server")
        return []
    if topic is None:
        raise UsageFailure("--bootstrap-server needs --topic NAME: the topic whose settings to check")
    entries, partitions = kafka_live.read_topic(server, topic, params["command_config"])
    for key, value, where in entries:
        settings.add(key, value, where)
    settings.partitions += partitions
    return []


def keep_graph(run: CheckRun, path: Path) -> None:
    """--graph: the BFS engine keeps the explored graph for the file named."""
    problem = graph_files.suffix_problem(path)
    if not problem and run.engine != "bfs":
        problem = f"--graph needs the explored state graph, which only --engine bfs keeps, not {run.engine}"
    if problem:
        raise UsageFailure(problem)
    run.options = replace(run.options, keep_graph=True)


def graph_out(outputs: Outputs, outcome: CheckOutcome, path: Path) -> None:
    graph = outcome.result.graph
    if graph is None:  # the search stopped before the graph was whole
        outputs.failed.append(f"the state graph ({path}: the search did not finish, so it has no whole graph)")
        return
    outputs.write("state graph", path, lambda: graph_files.write(path, graph))


def check_outputs(run: CheckRun, junit_file: Path | None, graph_file: Path | None = None) -> None:
    """Every path the run will write, checked before the search so that no result waits on it."""
    try:
        if run.trace_dir is not None:
            check_output_dir(run.trace_dir, "--trace-dir", create=False)
        if run.checkpoint_dir is not None:
            check_output_dir(run.checkpoint_dir, "--checkpoint", create=False)
        if run.resume_dir is not None:
            check_output_dir(run.resume_dir, "--resume", create=False)
        if junit_file is not None:
            check_output_file(junit_file, "--junit")
        if graph_file is not None:
            check_output_file(graph_file, "--graph")
    except FileProblem as e:
        raise UsageFailure(str(e)) from None


def write_outputs(outcome: CheckOutcome, junit_file: Path | None) -> Outputs:
    """After the report: the traces the run saved or failed to, and the JUnit report."""
    outputs = Outputs()
    outputs.written.append("the report on stdout")
    if outcome.trace_files:
        n = len(outcome.trace_files)
        outputs.written.append(f"{n} trace{'s' if n != 1 else ''} in {outcome.run.trace_dir}")
    outputs.failed += [f"the {name} trace ({why})" for name, why in outcome.trace_errors.items()]
    if junit_file is not None:
        from . import junit

        outputs.write("JUnit report", junit_file,
                      lambda: junit.write(junit_file, "check-model", [junit.check_model_suite(outcome)]))
    return outputs


def stopped_by(e: OSError | FileProblem, run: CheckRun) -> str:
    """Why a search ended in an error of the file system, in one line."""
    if isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE):
        return f"too many open files for --workers {run.engine_args.get('workers')} (ulimit -n): use fewer"
    if isinstance(e, FileProblem):
        return str(e)
    path = e.filename or run.checkpoint_dir or run.resume_dir
    return f"{path}: {e.strerror or e}" if path else str(e.strerror or e)


if __name__ == "__main__":  # pragma: no cover
    main()
