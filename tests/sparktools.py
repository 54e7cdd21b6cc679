"""Helpers shared by the Spark tests: run the engine, compare it with BFS."""

from __future__ import annotations

from pathlib import Path

from isrcheck.checker import CheckOptions, CheckResult, checkpoint, get_engine, spark_checkpoint
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import BY_NAME, select

from .conftest import run_bfs

# The configurations the issue names: the core at rf 2 for all four revisions,
# and a Kafka feature configuration (acks=1 loses acknowledged records; every
# witness is found) small enough for a test.
CORE_RF2 = {p: ModelConfig(rf=2, protocol=p, core=True) for p in ("hw-truncation", "kip-101", "kip-279", "kip-320")}
KAFKA = ModelConfig(rf=2, acks="1")


def run_spark(config: ModelConfig, properties=None, master: str = "local[*]", observer=None, partitions=None,
              kernel: str = "vector", saving: dict | None = None, **options) -> CheckResult:
    """``saving``: the engine's checkpoint arguments, as ``checkpointing`` gives them."""
    model = ReplicationModel(config)
    engine = get_engine("spark", master=master, partitions=partitions, kernel=kernel)
    return engine.check(model, select(config, properties), CheckOptions(**options), observer, **(saving or {}))


def checkpointing(folder: Path, config: ModelConfig, resume: bool = False) -> dict:
    """Save a ``run_spark`` search in ``folder`` (as --checkpoint), or continue the one saved there (--resume)."""
    ident = checkpoint.identity(config.as_dict(), {"engine": "spark", "by": "sparktools"})
    saved = spark_checkpoint.load(folder, ident) if resume else None
    return {"resume": saved, "checkpoint": spark_checkpoint.SparkCheckpointWriter(folder, ident, saved)}


def verdicts(result: CheckResult) -> list[tuple[str, str, int | None]]:
    return [(p.name, p.status, p.trace_length) for p in result.properties]


def counts(result: CheckResult) -> dict:
    s = result.stats
    return {
        "states": s.states, "generated": s.generated, "depth": s.depth, "full_states": s.full_states,
        "complete": result.complete, "exhausted": result.exhausted,
    }


def assert_paths_reach_their_verdicts(config: ModelConfig, result: CheckResult) -> None:
    """Every path starts in an initial state, follows the model, and ends where its property decides."""
    model = ReplicationModel(config)
    for p in result.properties:
        if p.path is None:
            continue
        states, actions = p.path.states, p.path.actions
        assert states[0] in model.init_states()
        for before, action, after in zip(states, actions, states[1:]):
            assert model.step(before, action) == after
        pred = BY_NAME[p.name].compile(model)
        assert pred(states[-1]) is (p.expectation != "always"), p.name


def assert_agrees_with_bfs(config: ModelConfig, spark: CheckResult, **options) -> CheckResult:
    """Same distinct states, generated states, depth, verdicts and shortest trace lengths as BFS."""
    bfs = run_bfs(config, **options)
    assert spark.engine == "spark"
    assert counts(spark) == counts(bfs)
    assert verdicts(spark) == verdicts(bfs)
    assert_paths_reach_their_verdicts(config, spark)
    return bfs
