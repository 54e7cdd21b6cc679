"""Shared helpers: build a model and run the BFS engine in one call; a headless Chromium."""

from __future__ import annotations

import pytest

from isrcheck.checker import BfsEngine, CheckOptions
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import select


def run_bfs(config: ModelConfig, properties=None, kernel: str = "vector", workers: int | None = None, **options):
    """BFS on a configuration, on the vector kernel unless told otherwise (``workers``:
    threads for the vector kernel, processes for the scalar one)."""
    model = ReplicationModel(config)
    props = select(config, properties)
    return BfsEngine(kernel=kernel, workers=workers).check(model, props, CheckOptions(**options))


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium, 1280x800, driven over the DevTools protocol (tests/cdp.py)."""
    from .cdp import Chromium, find_chromium

    binary = find_chromium()
    if binary is None:
        pytest.fail("chromium is not installed: the HTML view test needs Debian's chromium (.ci/run installs it)")
    chromium = Chromium(binary, width=1280, height=800)
    yield chromium
    chromium.close()

