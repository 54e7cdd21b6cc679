"""advise-config's answer: the guarantees, each one's frontier and what rules out the rest.

A guarantee is kept by a configuration when its property's verdict is the good one
(holds, proved, or witnessed for ``write-after-crash``); a property that does not apply
(``acked-survive`` with acks=0: nothing is acknowledged) keeps nothing. The reasons are
the plain-language sentences of ``plain.py``, with the trace's length and file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from isrcheck import MODEL_VERSION, __version__
from isrcheck.model import ModelConfig
from isrcheck.properties import BY_NAME, verdict

from . import frontier as fr
from .plain import SENTENCES, faults
from .suite_run import CheckReport


@dataclass(frozen=True)
class Guarantee:
    key: str  # --guarantee's word
    words: str
    property: str
    durable: bool  # a durability guarantee (its cheapest keepers) or an availability one (its most durable)
    producer: bool = False  # about the producer's retries: asked of a sweep with --retries


GUARANTEES = (
    Guarantee("acked", "acknowledged writes survive", "acked-survive", True),
    Guarantee("committed", "committed records survive", "committed-survive", True),
    Guarantee("stored", "every committed record stays on some broker's disk", "committed-stored", True),
    Guarantee("reads", "what a consumer reads never disappears", "read-within-hwm", True),
    Guarantee("writable", "writes are still acknowledged while a broker is down", "write-after-crash", False),
    Guarantee("recovers", "the partition becomes writable again by itself", "can-recover", False),
    Guarantee("no-duplicates", "no record is committed twice", "no-duplicates", True, producer=True),
    Guarantee("in-order", "records are committed in the order the producer sent them", "in-order", True,
              producer=True),
)
BY_KEY = {g.key: g for g in GUARANTEES}
REPORT_VERSION = 2  # advise-config's JSON: raised when a key changes meaning or goes (2: not_modelled went)


def point_config(base: ModelConfig, settings: dict[str, Any]) -> ModelConfig:
    """The base with a point's settings; its log size follows them (room for retries' copies)."""
    return ModelConfig(**{**base.as_dict(), "log_size": None, **settings})


@dataclass
class Advice:
    sweep: fr.Sweep
    base: ModelConfig
    wanted: tuple[Guarantee, ...]
    reports: dict[fr.Point, CheckReport | None]
    seconds: float
    interrupted: bool
    faults: dict[str, Any]  # advise-config's fault options, by ModelConfig field, in the JSON as given
    _frontiers: dict[str, fr.Frontier] = field(default_factory=dict)

    def kept(self, g: Guarantee, point: fr.Point) -> bool | None:
        """True or False; None when the check did not finish or failed."""
        rep = self.reports.get(point)
        if rep is None or rep.error:
            return None
        p = rep.by_name(g.property)
        if p is None:  # the property does not apply: acks=0 acknowledges nothing
            return False
        said = verdict.outcome(p, p.status)
        return None if said == "unknown" else said in ("holds", "proved", "witnessed")

    def frontier(self, g: Guarantee) -> fr.Frontier:
        if g.key not in self._frontiers:
            self._frontiers[g.key] = fr.frontier(self.sweep, lambda p: self.kept(g, p), g.durable)
        return self._frontiers[g.key]

    @property
    def decided(self) -> int:
        """The configurations whose checks finished."""
        return sum(1 for r in self.reports.values() if r is not None and r.complete and not r.error)

    @property
    def incomplete(self) -> bool:
        return any(self.frontier(g).unknown for g in self.wanted)

    @cached_property
    def recommended(self) -> list[fr.Point]:
        """The cheapest settings that keep every guarantee asked for."""
        return fr.cheapest([p for p in self.sweep.points if all(self.kept(g, p) for g in self.wanted)])

    def log_size(self, point: fr.Point) -> int:
        """The point's own log size: room for the copies a producer without idempotence writes."""
        return point_config(self.base, self.sweep.settings(point)).logsize

    def reason(self, g: Guarantee, point: fr.Point) -> dict[str, Any]:
        """Why ``point`` does not keep ``g``: a sentence, and the trace that shows it."""
        rep = self.reports[point]
        p = rep.by_name(g.property) if rep is not None else None
        if p is None:
            so = "it is not checked" if g.producer else "nothing can be said to survive"
            return {"says": f"{BY_NAME[g.property].why_not}, so {so}", "trace_length": None, "trace_file": None}
        bad = SENTENCES[g.property][1]
        if verdict.outcome(p, p.status) == "never":
            bad += " (in no run within the bounds)"
        return {"says": bad, "trace_length": p.trace_length, "trace_file": p.trace_file}


def short(rep: CheckReport, wanted: tuple[Guarantee, ...]) -> str:
    """A finished check in a few words, for the progress line."""
    if rep.error:
        return f"error: {rep.error}"
    if not rep.complete:
        return f"incomplete ({rep.stop_reason})"
    lost = [g.key for g in wanted if (p := rep.by_name(g.property)) is None
            or verdict.outcome(p, p.status) not in ("holds", "proved", "witnessed")]
    return f"does not keep {', '.join(lost)}" if lost else "keeps every guarantee"


def _swept(sweep: fr.Sweep) -> str:
    return " x ".join(f"{a.key} ({', '.join(a.kafka(v) for v in a.values)})" for a in sweep.axes if len(a.values) > 1)


def _fixed(sweep: fr.Sweep) -> str:
    return ", ".join(f"{a.key}={a.kafka(a.values[0])}" for a in sweep.axes if len(a.values) == 1)


def _faults(base: ModelConfig) -> str:
    """The faults, and the producer's retries, to survive."""
    retries = f", up to {base.retries} producer retr{'ies' if base.retries != 1 else 'y'}" if base.retries else ""
    return faults(base) + retries


def header(sweep: fr.Sweep, base: ModelConfig, wanted: tuple[Guarantee, ...]) -> str:
    return (f"advise-config: Kafka {base.kafka_version}, {_faults(base)}, {_fixed(sweep)}; sweeping {_swept(sweep)}: "
            f"{len(sweep.points)} configurations; guarantees: {', '.join(g.key for g in wanted)}")


def _trace(r: dict[str, Any]) -> str:
    return f" ({r['trace_length']} states, trace {r['trace_file']})" if r["trace_file"] else ""


def plain(text: str, kind: str) -> str:  # noqa: ARG001 - the paint of an uncoloured report
    return text


def _reason_line(a: Advice, g: Guarantee, p: fr.Point, paint) -> str:
    """A setting that does not keep ``g``, and why, with the trace that shows it."""
    r = a.reason(g, p)
    return f"    {a.sweep.words(p)}: {paint(r['says'], 'bad')}{_trace(r)}"


def _guarantee_lines(a: Advice, g: Guarantee, paint=plain) -> list[str]:
    f = a.frontier(g)
    lines = [paint(f"{g.words} ({g.property})", "heading")]
    if not f.edge:
        lines.append("  no setting decided keeps it:" if f.unknown else "  no setting swept keeps it:")
        lines += [_reason_line(a, g, p, paint) for p in fr.most_durable(list(a.sweep.points)) if a.kept(g, p) is False]
    else:
        lines.append(f"  {'cheapest' if g.durable else 'most durable'} settings that keep it:")
        lines += [f"    {paint(a.sweep.words(p), 'good')}" for p in f.edge]
    if f.edge and f.beyond:
        lines.append(f"  ruled out, one step {'cheaper' if g.durable else 'more durable'}:")
        lines += [_reason_line(a, g, n, paint) for n in f.beyond]
    if f.unknown:
        lines.append(f"  not known (the check did not finish): {'; '.join(a.sweep.words(p) for p in f.unknown)}")
    return lines


def _guarantee_sentence(a: Advice, g: Guarantee) -> str:
    """One guarantee's advice in one sentence: its frontier, the cheapest settings that keep it
    (availability: the most durable), and what lies beyond it."""
    f = a.frontier(g)
    said = g.words[0].upper() + g.words[1:]
    if not f.edge:
        bad = SENTENCES[g.property][1]
        return f"{bad[0].upper() + bad[1:]} with every setting {'decided' if f.unknown else 'swept'}."
    settings = "; or ".join(a.sweep.words(p) for p in f.edge)
    beyond = [q for q in a.sweep.points if any(_past(q, e, g.durable) for e in f.edge)]
    if all(a.kept(g, q) for q in beyond):  # no guarantee is assumed monotone: the verdicts say whether it is here
        return f"{said} with {settings}; and with every setting {'more durable' if g.durable else 'cheaper'}."
    return f"{said} with {settings}, at the {'cheapest' if g.durable else 'most durable'}."


def _past(q: fr.Point, edge: fr.Point, durable: bool) -> bool:
    """Whether ``q`` is as durable as ``edge`` on every axis (for availability: as cheap)."""
    return all(x >= y if durable else x <= y for x, y in zip(q, edge))


def verdict_text(a: Advice) -> str:
    """The advice in plain words: what was checked, a sentence per guarantee, then the settings
    that keep them all (issue 54: short sentences, not one of a dozen clauses)."""
    total = len(a.sweep.points)
    lead = (f"In plain words. Checked: Kafka {a.base.kafka_version}, {_faults(a.base)}, {total} configurations. "
            f"Within the bounds checked:")
    every = ("All of them at once: " + "; or ".join(a.sweep.words(p) for p in a.recommended) + "." if a.recommended
             else f"No setting decided keeps all of them at once; {total - a.decided} of {total} configurations were "
                  f"not decided." if a.incomplete else "No setting swept keeps all of them at once.")
    return " ".join([lead, *(_guarantee_sentence(a, g) for g in a.wanted), every])


def text_advice(a: Advice, paint=plain) -> str:
    """The advice as text; ``paint(text, kind)`` colours the headings, the frontiers (good) and
    the reasons that rule settings out (bad)."""
    lines: list[str] = []
    for g in a.wanted:
        lines += _guarantee_lines(a, g, paint) + [""]
    lines.append("every guarantee above at once: " + (
        "the cheapest settings that keep them all:" if a.recommended
        else "no setting decided keeps them all" if a.incomplete else "no setting swept keeps them all"))
    lines += [f"    {paint(a.sweep.words(p), 'good')}" for p in a.recommended]
    state = " (interrupted: the frontier may move)" if a.interrupted else (
        " (some checks did not finish: the frontier may move)" if a.incomplete else "")
    total = len(a.sweep.points)
    checked = f"{total} configurations checked" if a.decided == total else f"{a.decided} of {total} configurations decided"
    lines.append(f"{checked} in {a.seconds:.1f} s{state}; bounds: max-records "
                 f"{a.base.max_records}, max-leader-epoch {a.base.max_leader_epoch}")
    lines.append(verdict_text(a))
    return "\n".join(lines)


def json_advice(a: Advice) -> dict[str, Any]:
    def with_reason(g: Guarantee, p: fr.Point) -> dict[str, Any]:
        return {"settings": a.sweep.kafka(p), **a.reason(g, p)}

    b = a.base
    return {
        "report_version": REPORT_VERSION, "isrcheck_version": __version__, "model_version": MODEL_VERSION,
        "kafka_version": b.kafka_version,
        "faults": a.faults,
        "bounds": {"max_records": b.max_records, "max_leader_epoch": b.max_leader_epoch},  # log sizes: per configuration
        "swept": {ax.key: [ax.kafka(v) for v in ax.values] for ax in a.sweep.axes},
        "guarantees": [{
            "key": g.key, "words": g.words, "property": g.property,
            "kind": "durability" if g.durable else "availability",
            "frontier": [a.sweep.kafka(p) for p in a.frontier(g).edge],
            "ruled_out": [with_reason(g, n) for n in a.frontier(g).beyond],
            "unknown": [a.sweep.kafka(p) for p in a.frontier(g).unknown],
        } for g in a.wanted],
        "recommended": [a.sweep.kafka(p) for p in a.recommended],
        "configurations": [_configuration(a, p) for p in a.sweep.points],
        "complete": not (a.interrupted or a.incomplete), "interrupted": a.interrupted, "decided": a.decided,
        "seconds": round(a.seconds, 3), "verdict_text": verdict_text(a),
    }


def _configuration(a: Advice, p: fr.Point) -> dict[str, Any]:
    rep = a.reports.get(p)
    return {
        "settings": a.sweep.kafka(p), "log_size": a.log_size(p),
        "complete": bool(rep and rep.complete), "error": rep.error if rep else "not run",
        "keeps": {g.key: a.kept(g, p) for g in a.wanted},
        "seconds": round(rep.seconds, 3) if rep else None,
    }
