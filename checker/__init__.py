"""Engines behind one interface: ``check(model, properties, options, observer)``."""

import importlib.util

from isrcheck.model.config import ConfigError

from .bfs import BfsEngine, SearchState
from .engine import CheckOptions, Engine, Observer, Progress, SearchModel
from .result import CheckResult, Path, PropertyResult, Stats

ENGINES = ("bfs", "z3", "spark", "simulate")


class EngineUnavailable(ConfigError):
    """An engine whose optional packages are not installed (one line for the user)."""


def get_engine(name: str, **engine_args) -> Engine:
    """The engine of that name; z3, spark and simulate (Hypothesis) are imported only when asked for."""
    if name == "bfs":
        return BfsEngine(**engine_args)
    if name == "z3":
        from .z3_engine import Z3Engine

        return Z3Engine(**engine_args)
    if name == "spark":
        if importlib.util.find_spec("pyspark") is None:
            raise EngineUnavailable("--engine spark needs PySpark, an optional part of isrcheck: "
                                    "pip install 'isrcheck[spark]' (and Java 17 or later)")
        from .spark_engine import SparkEngine

        return SparkEngine(**engine_args)
    if name == "simulate":
        from .simulate import SimulateEngine

        return SimulateEngine(**engine_args)
    raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")


__all__ = [
    "ENGINES",
    "EngineUnavailable",
    "BfsEngine",
    "CheckOptions",
    "CheckResult",
    "Engine",
    "Observer",
    "Path",
    "Progress",
    "PropertyResult",
    "SearchModel",
    "SearchState",
    "Stats",
    "get_engine",
]
