"""The HTML view of a trace: one self-contained page (no network), stepped with the keyboard.

The page is ``viewer.html`` with its styles (``viewer.css``, ``lanes.css``) and scripts
(``lanes.js``: the producer's and the consumer's lanes; ``viewer.js``) inlined and the
trace's facts (``view_data.build_view``) embedded as JSON in a non-executed script
element. Nothing from the trace is ever written as markup: the JSON is escaped so it
cannot close its element, the page's script builds the DOM with ``textContent``,
and the few strings placed in the template (the title) go through ``html.escape``.
A Content-Security-Policy forbids every network request.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

from isrcheck.files import atomic_write
from isrcheck.model import Record

from .narrate import fmt_isr
from .view_data import ReplicaView, StepView, TraceView
from .view_lanes import ClientLane, lane_names

_SLOTS = ("/*__CSS__*/", "/*__JS__*/", "__DATA__", "__TITLE__")


def _record(r: Record) -> dict[str, Any]:
    return {"id": r.id, "epoch": r.epoch, "label": str(r)}


def _request(epoch: int, leader: int | None, isr: frozenset[int]) -> str:
    who = f"leader {leader}" if leader is not None else "no leader"
    return f"e{epoch}: {who}, ISR {fmt_isr(isr)}"


def _replica(r: ReplicaView) -> dict[str, Any]:
    return {
        "broker": r.broker,
        "log": [_record(x) for x in r.log],
        "hw": r.hw,
        "leo": r.leo,
        "leader": r.leader,
        "epoch": r.epoch,
        "isr": sorted(r.isr),
        "alive": r.alive,
        "role": r.role,
        "inQuorumIsr": r.in_quorum_isr,
        "changed": sorted(r.changed),
        "appended": list(r.appended),
        "dropped": [_record(x) for x in r.dropped],
        "asks": r.asks,
    }


def _lane(lane: ClientLane) -> dict[str, Any]:
    return {
        "name": lane.name,
        "event": None if lane.event is None else {"kind": lane.event.kind, "text": lane.event.text},
        "facts": [
            {"key": f.key, "label": f.label, "text": f.text, "changed": f.changed,
             "ids": None if f.ids is None else list(f.ids), "added": list(f.added), "removed": list(f.removed)}
            for f in lane.facts
        ],
    }


def _step(s: StepView) -> dict[str, Any]:
    return {
        "index": s.index,
        "action": s.action,
        "sentence": s.sentence,
        "short": s.short,
        "replicas": [_replica(r) for r in s.replicas],
        "quorum": {
            "leader": s.quorum.leader,
            "epoch": s.quorum.epoch,
            "isr": sorted(s.quorum.isr),
            "elr": sorted(s.quorum.elr) if s.quorum.elr is not None else None,
            "changed": sorted(s.quorum.changed),
        },
        "requests": [_request(*r) for r in s.requests],
        "newRequest": s.new_request,
        "histories": [{"label": label, "ids": sorted(ids), "new": sorted(new)} for label, ids, new in s.histories],
        "counters": [
            {"label": label, "used": used, "allowed": allowed, "changed": changed}
            for label, used, allowed, changed in s.counters
        ],
        "lanes": [_lane(lane) for lane in s.lanes],
    }


def page_data(view: TraceView) -> dict[str, Any]:
    """What the page's script reads: plain JSON values only."""
    return {
        "title": view.title,
        "summary": view.summary,
        "property": view.property_name,
        "doc": view.doc,
        "outcome": view.outcome,
        "headline": view.headline if view.outcome else "",
        "lasso": None if view.lasso is None else {
            "trigger": view.lasso.trigger, "loop": view.lasso.loop, "ending": view.lasso.ending},
        "explanation": view.explanation,
        "lost": [_record(r) for r in view.lost],
        "missing": [{"broker": b, "record": _record(r)} for b, r in view.missing_from],
        "rf": view.config.rf,
        "logSize": view.config.logsize,
        "maxEpoch": view.config.max_leader_epoch,
        "laneNames": list(lane_names(view.config)),
        "steps": [_step(s) for s in view.steps],
    }


def script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element: no '<', '>' or '&' can end or open markup."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _asset(name: str) -> str:
    return resources.files("isrcheck.traces").joinpath(name).read_text(encoding="utf-8")


def render_html(view: TraceView) -> str:
    """The whole page as one string."""
    values = {
        "/*__CSS__*/": _asset("viewer.css") + _asset("lanes.css"),
        "/*__JS__*/": _asset("lanes.js") + _asset("viewer.js"),  # lanes.js first: viewer.js draws with it
        "__DATA__": script_json(page_data(view)),
        "__TITLE__": html.escape(f"isrcheck: {view.title}"),
    }
    # One pass over the template, so an inserted value is never searched for slots again.
    out = _asset("viewer.html")
    for slot in _SLOTS:
        before, found, after = out.partition(slot)
        if not found:
            raise RuntimeError(f"viewer.html lacks the slot {slot}")
        out = before + "\0" + slot + "\0" + after
    parts = out.split("\0")
    return "".join(values.get(p, p) for p in parts)


def write_html(view: TraceView, path: str | Path) -> Path:
    """Write the page atomically into a regular file (a symbolic link is followed, a device or
    FIFO refused, never replaced); OSError or files.FileProblem propagates for the caller."""
    return atomic_write(path, render_html(view))
