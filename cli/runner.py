"""The composition root of a check: model, properties, engine, traces.

``run_check`` is what ``check-model`` and ``check-suite`` both call: it builds the
model for a configuration, picks the engine, runs it, turns every path the
engine returned into a replayed Trace and saves it as ITF JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isrcheck.checker import CheckOptions, CheckResult, Observer, checkpoint, get_engine
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.config import FEATURES
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


@dataclass
class CheckOutcome:
    run: CheckRun
    result: CheckResult
    traces: dict[str, Trace] = field(default_factory=dict)
    trace_files: dict[str, Path] = field(default_factory=dict)


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
    width = (model.layout.state_bits + 7) // 8
    if run.resume_dir is not None:
        state, manifest = checkpoint.load(run.resume_dir, ident)
        writer = checkpoint.CheckpointWriter(folder, ident, width, resume_from=manifest)
        return {"resume": state, "checkpoint": writer.write}
    checkpoint.refuse_existing(folder)
    return {"checkpoint": checkpoint.CheckpointWriter(folder, ident, width).write}


def run_check(run: CheckRun, observer: Observer | None = None) -> CheckOutcome:
    # an unbounded configuration has no explicit model: the symbolic engine takes the config
    model = run.config if run.config.unbounded else ReplicationModel(run.config)
    props = select(run.config, list(run.properties) or None)
    saving = _checkpointing(run, model, props)
    engine = get_engine(run.engine, **run.engine_args)
    result = engine.check(model, props, run.options, observer, **saving)
    outcome = CheckOutcome(run, result)
    if result.replay_config is not None:  # the paths are of a bounded model that holds them
        model = ReplicationModel(result.replay_config)
    for pr in result.properties:
        if pr.path is None:
            continue
        prop = BY_NAME[pr.name]
        trace = trace_from_path(model, pr.path.states, pr.path.actions, pr.name, prop.expectation, prop.doc)
        outcome.traces[pr.name] = trace
        if run.trace_dir is not None:
            kind = verdict.trace_kind(prop.expectation)
            name = f"{config_slug(run.config)}-{pr.name}-{kind}.itf.json"
            outcome.trace_files[pr.name] = itf.save(trace, run.trace_dir / name)
    return outcome
