"""Shared helpers: build a model and run the BFS engine in one call."""

from __future__ import annotations

from isrcheck.checker import BfsEngine, CheckOptions
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import select


def run_bfs(config: ModelConfig, properties=None, kernel: str = "vector", workers: int | None = None, **options):
    """BFS on a configuration; the vector kernel runs where it applies (the core), else scalar
    (in ``workers`` processes when given: the long Kafka runs use both cores)."""
    model = ReplicationModel(config)
    props = select(config, properties)
    return BfsEngine(kernel=kernel, workers=workers).check(model, props, CheckOptions(**options))
