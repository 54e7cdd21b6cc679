"""Shared helpers: build a model and run the BFS engine in one call."""

from __future__ import annotations

from isrcheck.checker import BfsEngine, CheckOptions
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import select


def run_bfs(config: ModelConfig, properties=None, kernel: str = "vector", **options):
    """BFS on a configuration; the vector kernel runs where it applies (the core), else scalar."""
    model = ReplicationModel(config)
    props = select(config, properties)
    return BfsEngine(kernel=kernel).check(model, props, CheckOptions(**options))
