"""Shared helpers: build a model and run the BFS engine in one call; a headless Chromium."""

from __future__ import annotations

import gc
import os
import sys

import pytest

from isrcheck.checker import BfsEngine, CheckOptions
from isrcheck.checker.engine import release_freed_memory
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.kernel import forget_kernels
from isrcheck.properties import select


def run_bfs(config: ModelConfig, properties=None, kernel: str = "vector", workers: int | None = None, **options):
    """BFS on a configuration, on the vector kernel unless told otherwise (``workers``:
    threads for the vector kernel, processes for the scalar one)."""
    model = ReplicationModel(config)
    props = select(config, properties)
    return BfsEngine(kernel=kernel, workers=workers).check(model, props, CheckOptions(**options))


def _set_for_the_session(name: str, value: str):
    """Set an environment variable for the session (the commands it runs inherit it), then put it back."""
    saved = os.environ.get(name)
    os.environ[name] = value
    yield
    if saved is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = saved


@pytest.fixture(scope="session", autouse=True)
def checkpoint_key_of_the_session(tmp_path_factory):
    """Checkpoints sealed under a key of this test session's, not under the user's own
    ~/.local/share/isrcheck/checkpoint.key."""
    from isrcheck.checker.checkpoint import KEY_ENV

    yield from _set_for_the_session(KEY_ENV, str(tmp_path_factory.mktemp("checkpoint-key") / "checkpoint.key"))


@pytest.fixture(scope="session", autouse=True)
def cache_of_the_session(tmp_path_factory):
    """advise-config keeps its checks' times in a cache of this test session's, not the user's."""
    from isrcheck.cli.advise_estimate import CACHE_ENV

    yield from _set_for_the_session(CACHE_ENV, str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module", autouse=True)
def memory_freed_by_earlier_modules_goes_back():
    """Each module starts without the kernels earlier ones built and with what they freed
    handed back to the system: tests that read this process's resident set (memory limits,
    the fuzz harness's forked children) then see what is in use, not glibc's arenas (1.4 GB
    after test_kernel_kafka, 0.3 in use) nor cached kernels (the forked children of
    test_fuzz's harness started with 961 MiB after test_kernel_kafka, and a run under
    --max-memory 1G had no room for its tables), whichever modules a pytest-xdist worker
    ran before. Nor with the tests' own caches: test_conformance's Z3 forms kept 314 MiB,
    view_helpers' rf 5 model 194, and the harness's children started with 971 MiB again."""
    forget_kernels()
    _clear_test_caches()
    gc.collect()
    release_freed_memory()


def _clear_test_caches() -> None:
    """Empty every functools cache defined at the top of a test module or helper."""
    for name, module in list(sys.modules.items()):
        if name == "tests" or name.startswith("tests."):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)) and hasattr(value, "cache_info"):
                    value.cache_clear()


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

