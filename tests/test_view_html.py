"""The HTML view: one self-contained page, stepped in a real headless Chromium.

The browser is Debian's ``chromium`` (``.ci/run`` installs it), driven over the
DevTools protocol on a pipe (tests/cdp.py). Screenshots are saved under
``test-artifacts/`` (or ``$ISRCHECK_ARTIFACTS``); the test prints where.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from isrcheck.cli.view_trace import main as view_trace_main
from isrcheck.model import Action
from isrcheck.traces import Step, itf
from isrcheck.traces.view_data import build_view, check_trace, role
from isrcheck.traces.view_html import render_html, script_json, write_html

from .view_helpers import DISK_LOSS, checked_trace, kip101_trace, long_walk_trace, walk_model

ARTIFACTS = Path(os.environ.get("ISRCHECK_ARTIFACTS") or Path(__file__).resolve().parent.parent / "test-artifacts")
EVIL_ACTION = '</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
EVIL_DOC = "<img src=x onerror=window.__pwned=3> & <b>bold</b>"


@pytest.fixture(scope="module")
def kip101():
    return kip101_trace()


def artifact(name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    print(f"\nscreenshot saved to {path}")
    return path


def evil_trace(kip101):
    """The KIP-101 trace with markup in an action name and in the doc: never replayed, only rendered."""
    steps = list(kip101.steps)
    steps[3] = Step(Action(EVIL_ACTION, (("replica", 0), ("epoch", 0))), steps[3].state)
    return replace(kip101, steps=tuple(steps), doc=EVIL_DOC)


# ---- the page as a file -----------------------------------------------------------------


def test_the_page_is_one_self_contained_file(kip101):
    page = render_html(build_view(kip101))
    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    for reference in ("<link", "src=", "href=", "@import", "url(", "http://", "https://"):
        assert reference not in page, reference
    assert page.count("<script") == 2  # the JSON data and the viewer's own script
    assert "__DATA__" not in page and "/*__JS__*/" not in page and "/*__CSS__*/" not in page


def test_text_from_the_trace_is_escaped_in_the_page(kip101):
    page = render_html(build_view(evil_trace(kip101)))
    assert "window.__pwned" in page  # the text is there, escaped
    assert page.count("<script") == 2
    assert "</script><script>" not in page
    assert "<img" not in page and "<b>" not in page
    assert "<script>" not in script_json({"x": "<script>"})


def test_view_trace_html_writes_the_page(tmp_path, kip101):
    path = itf.save(kip101, tmp_path / "kip101.itf.json")
    out = tmp_path / "kip101.html"
    result = CliRunner().invoke(view_trace_main, [str(path), "--html", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text() == render_html(build_view(check_trace(kip101)))


# ---- the page in Chromium -------------------------------------------------------------------


def state(browser) -> dict:
    return browser.eval(
        """(function () {
          var q = function (s) { return document.querySelector(s); };
          var texts = function (s) { return Array.from(document.querySelectorAll(s)).map(function (e) { return e.textContent; }); };
          return {
            label: q('#step-label').textContent,
            action: q('#action').textContent,
            sentence: q('#sentence').textContent,
            here: q('#here').hidden ? null : q('#here').textContent,
            failing: q('#step-head').classList.contains('failing'),
            lanes: document.querySelectorAll('.lane[role=row]').length,
            lost: texts('.slot.lost'),
            tags: texts('.slot .tag'),
            current: q('#timeline li.current').dataset.step,
            currentFailing: q('#timeline li.current').classList.contains('failing'),
            verdict: q('#verdict').hidden ? null : q('#verdict-text').textContent,
            title: document.title,
            pwned: window.__pwned === undefined ? null : window.__pwned
          };
        })()"""
    )


def test_stepping_through_the_kip101_counterexample_reaches_the_failing_step(browser, tmp_path, kip101):
    view = build_view(kip101)
    page = write_html(view, tmp_path / "kip101.html")
    browser.open(page)
    last = len(kip101) - 1
    s = state(browser)
    assert s["label"] == f"step {last} / {last}" and s["currentFailing"]  # it opens where the property breaks
    assert s["verdict"] == f"✗ weak-isr violated at step {last}: lost m0@e0"
    browser.press("Home")
    s = state(browser)
    assert s["label"] == f"step 0 / {last}"
    assert s["lanes"] == 2 and s["here"] is None

    for i in range(1, last + 1):  # forward with the keyboard, checking each step's words
        browser.press("ArrowRight")
        s = state(browser)
        assert s["label"] == f"step {i} / {last}"
        assert s["action"] == str(kip101.steps[i].action)
        assert s["sentence"] == view.steps[i].sentence
        assert s["current"] == str(i)

    # the failing step: marked, explained, the lost record outlined and tagged where it was truncated
    assert s["failing"] and s["currentFailing"]
    assert s["here"].startswith("✗ weak-isr is violated here: broker 0 believes it leads with HWM 1")
    assert "truncates its log to offset 0" in s["sentence"]
    assert s["lost"] and set(t.replace("LOST", "").replace("MISSING", "") for t in s["lost"]) == {"m0@e0"}
    assert "LOST" in s["tags"]
    browser.screenshot(artifact("kip101-weak-isr-failing-step.png"), full_page=True)  # docs/trace-view.png

    browser.press("ArrowRight")  # stays at the end
    assert state(browser)["label"] == f"step {last} / {last}"
    browser.press("ArrowLeft")
    assert state(browser)["label"] == f"step {last - 1} / {last}"
    assert not state(browser)["failing"]
    browser.press("Home")
    assert state(browser)["label"] == f"step 0 / {last}"
    browser.press("End")
    assert state(browser)["label"] == f"step {last} / {last}"

    # and with the buttons and the timeline, clicked with the mouse
    browser.click("#prev")
    assert state(browser)["label"] == f"step {last - 1} / {last}"
    browser.click("#next")
    assert state(browser)["label"] == f"step {last} / {last}"
    browser.click("#first")
    assert state(browser)["label"] == f"step 0 / {last}"
    browser.click("#timeline li[data-step='5']")
    assert state(browser)["sentence"] == view.steps[5].sentence
    browser.click("#go-final")
    assert state(browser)["failing"]

    assert browser.exceptions() == []
    assert all(u.startswith(("file:", "data:", "about:")) for u in browser.requests_made())


def test_a_40_step_trace_of_5_replicas_stays_readable(browser, tmp_path):
    trace = long_walk_trace(40, 5)
    check_trace(trace, walk_model(5))
    browser.open(write_html(build_view(trace), tmp_path / "long.html"))
    assert browser.eval("document.querySelectorAll('#timeline li').length") == 41
    browser.press("End")
    s = state(browser)
    assert s["label"] == "step 40 / 40" and s["lanes"] == 5 and s["failing"]
    layout = browser.eval(
        """(function () {
          var vw = window.innerWidth, vh = window.innerHeight;
          var lanes = Array.from(document.querySelectorAll('.lane[role=row]'));
          var overlaps = 0;
          lanes.forEach(function (lane) {
            var who = lane.querySelector('.who').getBoundingClientRect();
            var slots = Array.from(lane.querySelectorAll('.slot')).map(function (e) { return e.getBoundingClientRect(); });
            slots.forEach(function (r, i) {
              if (r.left < who.right) overlaps++;
              if (i && r.left < slots[i - 1].right - 0.5) overlaps++;
            });
          });
          var list = document.getElementById('timeline').getBoundingClientRect();
          var item = document.querySelector('#timeline li.current').getBoundingClientRect();
          var minFont = Math.min.apply(null, Array.from(document.querySelectorAll('.slot.rec, #sentence, .broker'))
            .map(function (e) { return parseFloat(getComputedStyle(e).fontSize); }));
          return {
            horizontalOverflow: document.documentElement.scrollWidth > vw,
            lanesBottom: lanes[lanes.length - 1].getBoundingClientRect().bottom,
            sentenceBottom: document.getElementById('sentence').getBoundingClientRect().bottom,
            viewport: vh, overlaps: overlaps,
            currentInTimeline: item.top >= list.top - 1 && item.bottom <= list.bottom + 1,
            minFont: minFont,
            pageScroll: window.scrollY
          };
        })()"""
    )
    assert not layout["horizontalOverflow"]
    assert layout["lanesBottom"] <= layout["viewport"], "all five lanes are visible without scrolling"
    assert layout["overlaps"] == 0
    assert layout["currentInTimeline"], "the timeline scrolls to the current action"
    assert layout["pageScroll"] == 0, "stepping never scrolls the page itself"
    assert layout["minFont"] >= 12
    browser.screenshot(artifact("long-walk-rf5-last-step.png"))
    for _ in range(20):
        browser.press("ArrowLeft")
    assert state(browser)["label"] == "step 20 / 40"
    assert browser.exceptions() == []


def test_markup_in_a_trace_stays_text_in_the_browser(browser, tmp_path, kip101):
    browser.open(write_html(build_view(evil_trace(kip101)), tmp_path / "evil.html"))
    browser.press("Home")
    for _ in range(3):
        browser.press("ArrowRight")
    s = state(browser)
    assert s["pwned"] is None
    assert s["action"].startswith("</script><script>window.__pwned=1</script><img")
    assert browser.eval("document.getElementById('doc').textContent").endswith(EVIL_DOC)
    assert browser.eval("document.querySelectorAll('img').length") == 0
    assert browser.eval("Array.from(document.querySelectorAll('b')).every(function (b) { return b.textContent !== 'bold'; })")
    assert re.search(r"isrcheck: weak-isr counterexample", s["title"])
    assert browser.exceptions() == []


def test_a_lasso_shows_its_trigger_and_its_loop(browser, tmp_path):
    from isrcheck.model import ModelConfig, ReplicationModel
    from isrcheck.traces import trace_from_path

    from .conftest import run_bfs

    config = ModelConfig(rf=2, min_isr=1, kafka_version="2.1")
    path = run_bfs(config, ["rejoins-isr"]).properties[0].path
    trace = trace_from_path(ReplicationModel(config), path.states, path.actions, "rejoins-isr", "always", "",
                            path.loop, path.loop_action)
    page = write_html(build_view(check_trace(trace)), tmp_path / "lasso.html")
    browser.open(page)
    s = state(browser)
    assert s["verdict"].startswith("✗ rejoins-isr violated: from step 6 on, the run stays at step 7 for ever")
    assert s["here"].startswith("✗ the run stays at step 7 for ever: no broker or controller step is enabled there")
    marks = browser.eval("""(function () {
        var steps = function (s) { return Array.from(document.querySelectorAll(s)).map(function (e) { return e.dataset.step; }); };
        return {loop: steps('#timeline li.loop'), trigger: steps('#timeline li.trigger')};
      })()""")
    assert marks == {"loop": ["7"], "trigger": ["6"]}
    o = overview(browser)
    assert o["rows"] == expected_overview(trace)
    assert o["marks"] == [""] * 6 + ["◆", "↺✗"] and o["loop"] == ["7"] and o["current"] == ["7"]
    browser.screenshot(artifact("rejoins-isr-lasso.png"))
    assert browser.exceptions() == []


# ---- the overview: every step at once, beside the step view ---------------------------------

ROLE_MARK = {"leader": "L", "stale leader": "S", "follower": "F", "crashed": "×", "no role": ""}


def expected_overview(trace) -> dict[str, list]:
    """The overview's rows computed here from the trace's states, as the page should show them."""
    rows: dict[str, list] = {}
    states = [s.state for s in trace.steps]
    for b in range(trace.config.rf):
        rows[f"b{b} hw"] = [str(ps.replicas[b].hw) for ps in states]
        rows[f"b{b} leo"] = [str(len(ps.replicas[b].log)) for ps in states]
        rows[f"b{b} isr"] = [[ROLE_MARK[role(ps, b)], b in ps.quorum.isr] for ps in states]
    rows["ctl leader"] = ["-" if ps.quorum.leader is None else str(ps.quorum.leader) for ps in states]
    rows["ctl epoch"] = ["-" if ps.quorum.leader_epoch is None else str(ps.quorum.leader_epoch) for ps in states]
    return rows


def overview(browser) -> dict:
    return browser.eval(
        """(function () {
          var all = function (s) { return Array.from(document.querySelectorAll(s)); };
          var rows = {};
          all('#overview tbody tr').forEach(function (tr) {
            var who = tr.dataset.broker === undefined ? 'ctl' : 'b' + tr.dataset.broker;
            rows[who + ' ' + tr.dataset.kind] = Array.from(tr.querySelectorAll('td')).map(function (td) {
              return tr.dataset.kind === 'isr' ? [td.textContent, td.classList.contains('in')] : td.textContent;
            });
          });
          var heads = all('#overview tr.steps th[data-step]');
          var cur = all('#overview .cur');
          var box = document.getElementById('overview-scroll').getBoundingClientRect();
          var labels = document.querySelector('#overview th.row').getBoundingClientRect();
          var head = document.querySelector('#overview tr.steps th.cur').getBoundingClientRect();
          return {
            rows: rows,
            columnSteps: all('#overview tbody tr').map(function (tr) {
              return Array.from(tr.querySelectorAll('td')).map(function (td) { return td.dataset.step; }).join(' ');
            }),
            steps: heads.map(function (th) { return th.textContent; }),
            marks: all('#overview tr.marks td').map(function (td) { return td.textContent; }),
            loop: heads.filter(function (th) { return th.classList.contains('loop'); }).map(function (th) { return th.textContent; }),
            failing: heads.filter(function (th) { return th.classList.contains('fail'); }).map(function (th) { return th.textContent; }),
            current: Array.from(new Set(cur.map(function (c) { return c.dataset.step; }))),
            currentCells: cur.length,
            rowCount: all('#overview tr').length,
            currentInSight: head.left >= labels.right - 1 && head.right <= box.right + 1,
            scrolls: document.getElementById('overview-scroll').scrollWidth > box.width + 1,
            scrollLeft: document.getElementById('overview-scroll').scrollLeft
          };
        })()"""
    )


def current_step(browser) -> dict:
    return browser.eval("""({label: document.getElementById('step-label').textContent, hash: location.hash,
                             timeline: document.querySelector('#timeline li.current').dataset.step})""")


@pytest.mark.parametrize("which", ["core", "kafka"])
def test_the_overview_shows_every_steps_hwm_leo_and_isr(browser, tmp_path, kip101, which):
    trace = kip101 if which == "core" else checked_trace(DISK_LOSS, "committed-survive", symmetry=True)
    assert trace.config.core == (which == "core")
    browser.open(write_html(build_view(check_trace(trace)), tmp_path / f"{which}.html"))
    last = len(trace) - 1
    o = overview(browser)
    assert current_step(browser) == {"label": f"step {last} / {last}", "hash": f"#step={last}", "timeline": str(last)}
    assert o["steps"] == [str(i) for i in range(last + 1)]  # one column per step
    assert o["rows"] == expected_overview(trace)
    assert all(c == " ".join(map(str, range(last + 1))) for c in o["columnSteps"])
    assert o["rowCount"] == 2 + 3 * trace.config.rf + 2  # marks, step numbers; HWM, LEO, ISR per broker; controller
    assert o["current"] == [str(last)] and o["currentCells"] == o["rowCount"]  # every cell of the column
    assert o["marks"] == [""] * last + ["✗"] and o["failing"] == [str(last)] and o["loop"] == []
    assert o["currentInSight"] and not o["scrolls"]
    if which == "kafka":  # the crash and the disk loss: broker 0 down at step 8 with an empty log (4.1)
        crashed = [i for i, (mark, _) in enumerate(o["rows"]["b0 isr"]) if mark == "×"]
        assert crashed == [8] and o["rows"]["b0 leo"][7:9] == ["1", "0"]
    browser.screenshot(artifact(f"overview-{which}.png"))
    assert browser.exceptions() == []


def test_clicking_the_overview_moves_the_step_view_and_the_column_follows_the_keys(browser, tmp_path, kip101):
    view = build_view(kip101)
    last = len(kip101) - 1
    browser.open(write_html(view, tmp_path / "click.html"))
    browser.click("#overview tr.steps th[data-step='3']")  # a step's number
    assert current_step(browser) == {"label": f"step 3 / {last}", "hash": "#step=3", "timeline": "3"}
    assert browser.eval("document.getElementById('sentence').textContent") == view.steps[3].sentence
    assert overview(browser)["current"] == ["3"]
    browser.click("#overview tr[data-broker='1'][data-kind='leo'] td[data-step='5']")  # any cell of a column
    assert current_step(browser) == {"label": f"step 5 / {last}", "hash": "#step=5", "timeline": "5"}
    assert overview(browser)["current"] == ["5"]
    for key, step in (("ArrowLeft", 4), ("ArrowLeft", 3), ("ArrowRight", 4), ("Home", 0), ("End", last)):
        browser.press(key)
        o = overview(browser)
        assert o["current"] == [str(step)] and o["currentCells"] == o["rowCount"], key
        assert current_step(browser)["hash"] == f"#step={step}"
    browser.click("#timeline li[data-step='2']")  # the timeline moves the column too
    assert overview(browser)["current"] == ["2"]
    assert browser.exceptions() == []


def test_step_n_in_the_address_opens_that_step(browser, tmp_path, kip101):
    browser.open(write_html(build_view(kip101), tmp_path / "at-step-4.html"), fragment="step=4")
    last = len(kip101) - 1
    assert current_step(browser) == {"label": f"step 4 / {last}", "hash": "#step=4", "timeline": "4"}
    assert overview(browser)["current"] == ["4"]
    assert browser.exceptions() == []


def test_the_overview_of_a_long_trace_scrolls_sideways_to_the_current_step(browser, tmp_path):
    trace = long_walk_trace(40, 5)
    browser.open(write_html(build_view(trace), tmp_path / "long-overview.html"))
    o = overview(browser)
    assert o["steps"] == [str(i) for i in range(41)] and o["rows"] == expected_overview(trace)
    assert o["scrolls"] and o["current"] == ["40"] and o["currentInSight"] and o["scrollLeft"] > 0
    browser.press("Home")
    o = overview(browser)
    assert o["current"] == ["0"] and o["currentInSight"] and o["scrollLeft"] == 0
    for _ in range(25):
        browser.press("ArrowRight")
    o = overview(browser)
    assert o["current"] == ["25"] and o["currentInSight"]
    browser.click("#overview tr.steps th.cur")
    assert current_step(browser)["label"] == "step 25 / 40"
    assert browser.eval("document.documentElement.scrollWidth <= window.innerWidth")
    assert browser.eval("window.scrollY") == 0
    browser.screenshot(artifact("long-walk-overview-step-25.png"))
    assert browser.exceptions() == []


def test_on_a_narrow_screen_the_overview_is_above_the_step_view(browser, tmp_path, kip101):
    browser.resize(760, 900)
    try:
        browser.open(write_html(build_view(kip101), tmp_path / "narrow.html"))
        where = browser.eval("""(function () {
            var box = function (id) { return document.getElementById(id).getBoundingClientRect(); };
            return {overview: box('overview-box').bottom, stage: box('stage').top, timeline: box('timeline-box').top,
                    overflow: document.documentElement.scrollWidth > window.innerWidth};
          })()""")
        assert where["overview"] <= where["stage"] <= where["timeline"] and not where["overflow"]
        browser.screenshot(artifact("kip101-narrow.png"), full_page=True)
    finally:
        browser.resize(1280, 800)
    assert browser.exceptions() == []
