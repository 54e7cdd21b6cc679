"""isrcheck.testing: docs/python.md's example runs, the strategies draw what they say, and a
failing property test is shrunk to the fewest steps."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest
from hypothesis import given, seed, settings, strategies as st

from isrcheck.model import ModelConfig
from isrcheck.testing import configs, holds, model_for, runs
from isrcheck.traces.view_data import check_trace

GUIDE = (Path(__file__).resolve().parent.parent / "docs" / "python.md").read_text()


def test_the_guide_example_runs(tmp_path):
    """Run as a user would, from a file of its own: compiled under the name of the page (README.md
    then), Hypothesis read the page's own lines as the test's source and failed when they did not
    tokenize."""
    section = GUIDE.split("## Property tests against the model", 1)[1].split("\n## ", 1)[0]
    example = tmp_path / "test_consumer_lag.py"
    example.write_text(re.search(r"```python\n(.*?)```", section, re.S).group(1))
    runpy.run_path(str(example), run_name="__main__")


@given(configs())
@settings(max_examples=30, deadline=None)
def test_configs_are_valid_and_small(config):
    assert isinstance(config, ModelConfig) and config.validate() is config
    assert 1 <= config.min_isr <= config.rf <= 3 and config.disk_loss <= config.crashes


@given(configs(rf=st.just(2), acks="all").flatmap(lambda c: runs(model_for(c), max_steps=15)))
@settings(max_examples=30, deadline=None)
def test_every_drawn_run_is_a_run_of_the_model(run):
    assert len(run.states) == len(run.steps) + 1
    check_trace(run.trace())  # replayed step by step


def test_a_failing_property_test_is_shrunk_to_the_shortest_run():
    """acks=1 loses an acknowledged write in 6 states (BFS's shortest): Hypothesis finds a
    failing run and shrinks it to that length, or close."""
    model = model_for(rf=3, acks="1", max_records=1)
    seen = []

    @given(runs(model, max_steps=30))
    @settings(max_examples=2000, deadline=None, database=None)
    @seed(0)  # the same search every run: an unseeded one shrank to 9 states once in CI's conditions
    def acked_writes_survive(run):
        if not all(holds(model, "acked-survive", s) for s in run.packed):
            seen.append(len(run.packed))
            raise AssertionError("lost")

    with pytest.raises(AssertionError):
        acked_writes_survive()
    assert min(seen) <= 6 + 2
