"""check-model's options as the engine's arguments: which options each engine takes, and
one line and exit 2 for an option given to an engine that has no use for it."""

from __future__ import annotations

from isrcheck.model import ConfigError, ModelConfig

from .common import MAX_WORKERS, UsageFailure, refuse_options
from .simulate_options import simulate_engine_args


def engine_args_from(params: dict, explicit: set[str], config: ModelConfig) -> dict:
    """The chosen engine's arguments from option values (``explicit``: those given)."""
    engine = params["engine"]
    engine_args = z3_engine_args(params, explicit, config)
    kernel = params.get("kernel") or "vector"
    if "kernel" in explicit and engine not in ("bfs", "spark", "simulate"):
        raise UsageFailure(f"--kernel applies to --engine bfs, spark and simulate, not {engine}")
    engine_args.update(spark_engine_args(params, explicit))
    engine_args.update(simulate_engine_args(params, explicit))
    workers = params.get("workers")
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise UsageFailure(f"--workers {workers}: must be at least 1" if workers < 1 else
                           f"--workers {workers}: at most {MAX_WORKERS}")
    if "workers" in explicit and engine != "bfs":
        raise UsageFailure(f"--workers applies to --engine bfs, not {engine}")
    if params.get("processes") and engine != "bfs":
        raise UsageFailure(f"--processes applies to --engine bfs, not {engine}")
    if engine in ("bfs", "spark", "simulate"):
        engine_args["kernel"] = kernel
    if engine == "bfs":
        engine_args["workers"] = workers
        engine_args["processes"] = bool(params.get("processes"))
    return engine_args


def z3_engine_args(params: dict, explicit: set[str], config: ModelConfig) -> dict:
    """--prove and --prove-timeout for the Z3 engine; they and unbounded epochs need it."""
    if params["engine"] == "z3":
        return {"prove": params.get("prove") or "induction", "prove_timeout": params.get("prove_timeout") or 60.0}
    refuse_options(explicit, {"prove": "--prove", "prove_timeout": "--prove-timeout"}, "z3",
                   ": only the symbolic engine proves")
    if config.unbounded:
        raise UsageFailure("--max-leader-epoch unbounded needs --engine z3: the explicit engines enumerate epochs")
    return {}


SPARK_OPTIONS = {"spark_master": "--spark-master", "spark_partitions": "--spark-partitions", "verbose": "--verbose"}


def spark_engine_args(params: dict, explicit: set[str]) -> dict:
    """The Spark engine's arguments; the Spark options are a usage error with any other engine."""
    if params["engine"] != "spark":
        refuse_options(explicit, SPARK_OPTIONS, "spark")
        return {}
    partitions = params.get("spark_partitions")
    if partitions is not None and partitions < 1:
        raise UsageFailure(f"--spark-partitions {partitions}: must be at least 1")
    from isrcheck.checker.spark_context import validate_master  # no pyspark import: checks the URL's form

    master = params.get("spark_master")
    if master is not None and not master.strip():
        raise UsageFailure("--spark-master: the URL is empty (leave the option out for local[*])")
    master = master or "local[*]"
    try:
        validate_master(master)
    except ConfigError as e:
        raise UsageFailure(str(e)) from None
    return {
        "master": master,
        "partitions": partitions,
        "verbose": bool(params.get("verbose")),
    }
