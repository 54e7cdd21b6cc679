"""The composition root of a check: model, properties, engine, traces.

``run_check`` is what ``check-model`` and ``check-suite`` both call: it builds the
model for a configuration, picks the engine, runs it, turns every path the
engine returned into a replayed Trace and saves it as ITF JSON.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from isrcheck.checker import CheckOptions, CheckResult, Observer, checkpoint, get_engine
from isrcheck.checker.engine import Limits, release_freed_memory, stopped_building
from isrcheck.files import FileProblem, write_failure
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.config import FEATURES
from isrcheck.model.machine import TablesStopped
from isrcheck.properties import BY_NAME, select, verdict
from isrcheck.traces import Trace, trace_from_path
from isrcheck.traces import itf


@dataclass
class CheckRun:
    config: ModelConfig
    engine: str = "bfs"
    properties: tuple[str, ...] = ()
    options: CheckOptions = field(default_factory=CheckOptions)
    trace_dir: Path | None = Path("traces-out")
    engine_args: dict[str, Any] = field(default_factory=dict)
    checkpoint_dir: Path | None = None  # write checkpoints here
    resume_dir: Path | None = None  # continue the search saved here (and keep checkpointing there)

    def decides(self, name: str) -> bool:
        """Whether ``name``'s verdict decides the answer and the exit code: every property named
        with --property does, and under --core the specification's invariants are the question;
        otherwise they are reported apart (``Property.internal``), the user's guarantees decide."""
        return bool(self.properties) or self.config.core or not BY_NAME[name].internal


@dataclass
class CheckOutcome:
    run: CheckRun
    result: CheckResult
    traces: dict[str, Trace] = field(default_factory=dict)
    trace_files: dict[str, Path] = field(default_factory=dict)
    trace_errors: dict[str, str] = field(default_factory=dict)  # property -> why its trace was not saved
    # a simulation's counterexample with fewer replicas, per property: its trace file
    smaller_trace_files: dict[str, Path] = field(default_factory=dict)


def config_slug(config: ModelConfig) -> str:
    """A short, readable file-name stem for a configuration."""
    parts = [config.protocol, f"rf{config.rf}"]
    if config.core:
        parts.append("core")
    else:
        parts += [token for token in (knob.slug(config) for knob in FEATURES) if token]
    defaults = ModelConfig()
    if config.unbounded:
        parts.append(f"l{config.log_size}unbounded")
    elif (config.max_records, config.log_size, config.max_leader_epoch) != (
        defaults.max_records,
        config.max_records,
        defaults.max_leader_epoch,
    ):
        parts.append(f"r{config.max_records}l{config.log_size}e{config.max_leader_epoch}")
    return "-".join(parts)


CHECKPOINTING_ENGINES = ("bfs", "spark")


def _checkpointing(run: CheckRun, model: ReplicationModel, props) -> dict[str, Any]:
    """The engine keyword arguments that resume and write checkpoints (CheckpointError if unusable)."""
    if run.checkpoint_dir is None and run.resume_dir is None:
        return {}
    if run.engine not in CHECKPOINTING_ENGINES:
        raise checkpoint.CheckpointError(
            f"--checkpoint and --resume work with --engine {' or '.join(CHECKPOINTING_ENGINES)}, not {run.engine}"
        )
    if run.resume_dir is not None and run.checkpoint_dir not in (None, run.resume_dir):
        raise checkpoint.CheckpointError("a resumed search goes on saving where it was saved: omit --checkpoint")
    o = run.options
    ident = checkpoint.identity(
        run.config.as_dict(),
        {
            "engine": run.engine,
            "symmetry": o.symmetry,
            "max_depth": o.max_depth,
            "explore_all": o.explore_all,
            "properties": [p.name for p in props],
            **({"kernel": run.engine_args.get("kernel", "vector")} if run.engine == "spark" else {}),
        },
    )
    folder = run.checkpoint_dir or run.resume_dir
    if run.engine == "spark":  # completed levels, saved by the executors: see spark_checkpoint
        from isrcheck.checker import spark_checkpoint

        saved = spark_checkpoint.load(run.resume_dir, ident) if run.resume_dir is not None else None
        if saved is None:
            checkpoint.refuse_existing(folder)
        return {"resume": saved, "checkpoint": spark_checkpoint.SparkCheckpointWriter(folder, ident, saved)}
    from isrcheck.checker.saving import BfsSaving

    return {"saving": BfsSaving(folder, ident, resuming=run.resume_dir is not None)}


def run_check(run: CheckRun, observer: Observer | None = None) -> CheckOutcome:
    if run.options.max_memory is not None:  # the limit reads the resident set: not what earlier runs freed
        release_freed_memory()
    # the limits count from here (tables, resume, search), or from when the command started
    options = replace(run.options, started=run.options.started or time.monotonic())
    props = select(run.config, list(run.properties) or None, run.engine)
    try:  # the model's tables are built under the limits: here, and the engine's when it asks for them
        limits = Limits(options, time.monotonic(), observer)
        # an unbounded configuration has no explicit model: the symbolic engine takes the config
        model = run.config if run.config.unbounded else ReplicationModel(run.config, limits)
        with checkpoint.holding(run.resume_dir or run.checkpoint_dir, resuming=run.resume_dir is not None):
            saving = _checkpointing(run, model, props)
            engine = get_engine(run.engine, **run.engine_args)
            result = engine.check(model, props, options, observer, **saving)
    except TablesStopped as e:
        return CheckOutcome(run, stopped_building(run.engine, props, options, e.reason))
    outcome = CheckOutcome(run, result)
    if result.replay_config is not None:  # the paths are of a bounded model that holds them
        model = ReplicationModel(result.replay_config)
    for pr in result.properties:
        if pr.path is None:
            continue
        prop = BY_NAME[pr.name]
        path = pr.path
        trace = trace_from_path(model, path.states, path.actions, pr.name, prop.expectation, prop.doc, path.loop,
                                path.loop_action)
        outcome.traces[pr.name] = trace
        if run.trace_dir is not None:
            kind = verdict.trace_kind(prop.expectation)
            save_trace(outcome, pr.name, run.trace_dir / f"{config_slug(run.config)}-{pr.name}-{kind}.itf.json")
    _save_smaller(outcome)
    return outcome


def _save_smaller(outcome: CheckOutcome) -> None:
    """A simulation's counterexamples with fewer replicas, each replayed on its own model and
    saved beside the others (a failure to write one is not the check's: it is left out)."""
    coverage, trace_dir = outcome.result.coverage, outcome.run.trace_dir
    if coverage is None or trace_dir is None:
        return
    for name, (config, path) in coverage.smaller.items():
        prop = BY_NAME[name]
        trace = trace_from_path(ReplicationModel(config), path.states, path.actions, name, prop.expectation, prop.doc)
        file = trace_dir / f"{config_slug(config)}-{name}-counterexample.itf.json"
        try:
            outcome.smaller_trace_files[name] = itf.save(trace, file)
        except (OSError, FileProblem):
            pass


def save_trace(outcome: CheckOutcome, name: str, path: Path) -> None:
    """Save a property's trace; a failure is kept with the outcome, never raised: the
    verdicts must reach the user even when the trace folder cannot be written."""
    try:
        outcome.trace_files[name] = itf.save(outcome.traces[name], path)
    except (OSError, FileProblem) as e:
        outcome.trace_errors[name] = write_failure(path, e)
