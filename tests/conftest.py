"""Shared helpers: build a model and run the BFS engine in one call."""

from __future__ import annotations

from isrcheck.checker import BfsEngine, CheckOptions
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import select


def run_bfs(config: ModelConfig, properties=None, kernel: str = "vector", workers: int | None = None, **options):
    """BFS on a configuration, on the vector kernel unless told otherwise (``workers``:
    threads for the vector kernel, processes for the scalar one)."""
    model = ReplicationModel(config)
    props = select(config, properties)
    return BfsEngine(kernel=kernel, workers=workers).check(model, props, CheckOptions(**options))
