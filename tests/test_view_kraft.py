"""The trace views of a KRaft trace: the controller's eligible leader replicas and the
leader's pending AlterPartition, in the text view and in a real headless Chromium."""

from __future__ import annotations

import re

import pytest

from isrcheck.model import ModelConfig
from isrcheck.traces.view_data import build_view
from isrcheck.traces.view_html import write_html
from isrcheck.traces.view_text import render_text

from .view_helpers import checked_trace

# the last-known-leader loss: the ISR shrinks by AlterPartition, the ELR fills and empties
CONFIG = ModelConfig(rf=2, min_isr=2, crashes=2, disk_loss=1, kafka_version="4.1")


@pytest.fixture(scope="module")
def view():
    return build_view(checked_trace(CONFIG, "committed-survive"))


def _first(view, test) -> int:
    return next(i for i, step in enumerate(view.steps) if test(step))


def test_the_steps_show_the_elr_and_a_pending_alterpartition(view):
    asked = _first(view, lambda s: any(r.asks for r in s.replicas))
    assert view.steps[asked].action.startswith("LeaderShrinkIsr")
    applied = _first(view, lambda s: s.index > asked and not any(r.asks for r in s.replicas))
    assert view.steps[applied].action.startswith("ControllerAlterPartition")
    elr = [sorted(s.quorum.elr) for s in view.steps]
    assert [0, 1] in elr and elr[-1] == []  # both left the ISR below min ISR, then the ELR with their restarts
    text = render_text(view, width=120)
    assert "ELR {0,1}" in text and "-1?" in text


def test_the_page_shows_the_elr_and_the_pending_request(browser, tmp_path, view):
    browser.open(write_html(view, tmp_path / "kraft.html"))
    browser.press("Home")
    seen_asks, seen_elr = set(), set()
    for _ in range(len(view.steps) - 1):
        browser.press("ArrowRight")
        quorum = browser.eval("document.getElementById('quorum').textContent")
        lanes = browser.eval("Array.from(document.querySelectorAll('.lane[role=row]')).map(e => e.textContent)")
        elr = re.search(r"ELR (\{[^}]*\})", quorum)
        seen_elr.add(elr.group(1) if elr else None)
        seen_asks.update(m for lane in lanes for m in re.findall(r"asks ([+-]\d)", lane))
    assert "{0, 1}" in seen_elr and "{}" in seen_elr and None not in seen_elr
    assert seen_asks == {"-1"}
