"""Shared helpers: build a model and run the BFS engine in one call."""

from __future__ import annotations

import pytest

from isrcheck.checker import BfsEngine, CheckOptions
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import select

def run_bfs(config: ModelConfig, properties=None, **options):
    model = ReplicationModel(config)
    props = select(config, properties)
    return BfsEngine().check(model, props, CheckOptions(**options))


@pytest.fixture
def bfs():
    return run_bfs
