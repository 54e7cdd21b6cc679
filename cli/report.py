"""Rendering a check's outcome: the text a person reads and the JSON tools parse."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from typing import Any

from isrcheck import MODEL_VERSION, __version__
from isrcheck.model.config import FEATURES
from isrcheck.properties import BY_NAME, verdict
from isrcheck.traces.narrate import describe_step, explain_violation
from isrcheck.traces.view_data import lasso_view

from . import partition_now, plain
from .common import exit_code
from .kafka_config import in_kafka_words, kafka_values
from .runner import CheckOutcome


BOUND_KNOBS = [knob for knob in FEATURES if knob.bound]  # the features that bound a run (crashes...)
# The JSON report's shape: raised when a key changes meaning or goes; new keys keep it.
# 2: report_version, isrcheck_version, model_version, verdict_text, each property's says and loop
REPORT_VERSION = 2
VERDICTS = {0: "holds", 1: "violated", 3: "unknown"}  # the exit code's meaning, as the JSON says it


def bounds(outcome: CheckOutcome) -> dict[str, Any]:
    c = outcome.run.config
    return {
        "max_records": c.max_records,
        "log_size": c.log_size,
        "max_leader_epoch": "unbounded" if c.unbounded else c.max_leader_epoch,
        "max_depth": outcome.run.options.max_depth,
        **{knob.bound: 0 if c.core else getattr(c, knob.field) for knob in BOUND_KNOBS},
    }


def bounds_words(outcome: CheckOutcome) -> str:
    b, c = bounds(outcome), outcome.run.config
    words = f"max-records {b['max_records']}, log-size {b['log_size']}, max-leader-epoch {b['max_leader_epoch']}"
    if not c.core:
        words += "".join(f", {w}" for w in (knob.words(c) for knob in BOUND_KNOBS) if w)
    if b["max_depth"] is not None:
        words += f", max-depth {b['max_depth']}"
    return words


def to_json(outcome: CheckOutcome) -> dict[str, Any]:
    r = outcome.result
    opts = outcome.run.options
    config = dict(outcome.run.config.as_dict())
    release = outcome.run.config.release
    config.update(
        kafka_rules=release.rules(bool(outcome.run.config.kraft)) if release else None,
        kafka_config=None if outcome.run.config.core else kafka_values(outcome.run.config),
        engine=outcome.run.engine,
        symmetry=opts.symmetry,
        max_depth=opts.max_depth,
        explore_all=opts.explore_all,
        time_limit=opts.time_limit,
        max_memory=opts.max_memory,
        properties=[p.name for p in r.properties],
        trace_dir=str(outcome.run.trace_dir) if outcome.run.trace_dir else None,
        **{k: v for k, v in outcome.run.engine_args.items() if isinstance(v, (str, int, float, bool, type(None)))},
    )
    return {
        "report_version": REPORT_VERSION,
        "isrcheck_version": __version__,
        "model_version": MODEL_VERSION,
        # the answer: what the deciding properties say, as the exit code does (0, 1, 3)
        "verdict": VERDICTS[exit_code(r, outcome.run.decides)],
        "answer": plain.answer(outcome),
        **({"now": partition_now.readings(outcome.run.config)} if outcome.run.config.now else {}),
        "config": config,
        "engine": r.engine,
        **({"kernel": r.kernel} if r.kernel else {}),
        **({"kernel_note": r.kernel_note} if r.kernel_note else {}),
        "workers": r.workers,
        "complete": r.complete,
        "exhausted": r.exhausted,
        "stop_reason": r.stop_reason or None,
        "states": r.stats.states,
        "states_before_symmetry": r.stats.full_states,
        "generated": r.stats.generated,
        "depth": r.stats.depth,
        # found, not expanded (the text's "still queued"): where states are enumerated and the search stopped
        **({"queued": r.stats.queue} if not r.complete and r.engine in ("bfs", "spark") else {}),
        "seconds": round(r.stats.seconds, 3),
        "states_per_second": round(r.stats.states_per_second, 1),
        "peak_memory_bytes": r.stats.peak_memory,
        **({"visited_on_disk": r.stats.on_disk} if r.stats.on_disk else {}),
        "properties": [
            {
                "name": p.name,
                "expectation": p.expectation,
                "status": p.status,
                "trace_length": p.trace_length,
                "trace_file": str(outcome.trace_files[p.name]) if p.name in outcome.trace_files else None,
                **({"trace_error": outcome.trace_errors[p.name]} if p.name in outcome.trace_errors else {}),
                **({"note": p.note} if p.note else {}),
                **({"proof": p.proof} if p.proof else {}),
                # a lasso: the trace goes on for ever from its last state back to state ``loop``
                **({"loop": p.path.loop} if p.path is not None and p.path.loop is not None else {}),
                "says": plain.sentence(outcome, p.name),
                "decides": outcome.run.decides(p.name),
            }
            for p in r.properties
        ],
        "verdict_text": plain.paragraph(outcome) if r.properties else "",
        "bounds": bounds(outcome),
        **({"simulation": _simulation_json(outcome)} if r.coverage is not None else {}),
    }


def _simulation_json(outcome: CheckOutcome) -> dict[str, Any]:
    out = outcome.result.coverage.as_dict()
    for name, entry in out["fewer_replicas"].items():
        file = outcome.smaller_trace_files.get(name)
        entry["trace_file"] = str(file) if file else None
    return out


def render_json(outcome: CheckOutcome) -> str:
    return json.dumps(to_json(outcome), indent=2)


def status_words(outcome: CheckOutcome, name: str, shared_note: str = "") -> str:
    """The verdict in words; ``shared_note``, the search's own, is left to the caller."""
    p = outcome.result.by_name(name)
    if shared_note and p.note == shared_note:
        p = replace(p, note="")
    file = outcome.trace_files.get(name)
    unsaved = name in outcome.trace_errors
    saved = f": trace saved to {file}" if file else ": trace not saved" if unsaved else ""
    said = verdict.outcome(p, p.status)
    if said == "violated":
        return f"VIOLATED in {p.trace_length} states{saved}"
    if said == "proved":
        return "proved for every depth" + (f" ({p.note})" if p.note else "")
    if said == "holds":
        return "holds within bounds" + (f" ({p.note})" if p.note else "")
    if said == "witnessed":
        return f"witnessed in {p.trace_length} states" + (
            f": example saved to {file}" if file else ": example not saved" if unsaved else "")
    if said == "never" and verdict.good(BY_NAME[name], p.status):  # a question, answered
        return f"never happens within bounds: {plain.SENTENCES[name][1]}"
    if said == "never":
        return "NEVER HAPPENS within bounds (vacuous)"
    seen = "no violation" if verdict.always(p) else "not seen"
    if outcome.result.coverage is not None:
        return f"unknown: {seen} in {outcome.result.coverage.walks:,} random walks (a simulation proves nothing)"
    depth = plain.searched_depth(outcome, name)
    reach = f"{seen} up to depth {depth}, " if depth else ""
    return f"unknown: {reach}search incomplete" + (f" ({p.note})" if p.note else "")


def header(config) -> list[str]:
    """What is checked: the configuration in the model's words, then in Kafka's."""
    return [f"isrcheck: {config.summary()}", *([] if config.core else [f"kafka: {in_kafka_words(config)}"])]


def render_text(outcome: CheckOutcome, explain: bool = True) -> str:
    r = outcome.result
    s = r.stats
    lines = [plain.answer(outcome), *(f"  {line}" for line in partition_now.readings(outcome.run.config)),
             *header(outcome.run.config)]
    kernel = f" ({r.kernel} kernel)" if r.kernel else ""
    if r.workers > 1:
        kernel = f" ({r.kernel} kernel, {r.workers} {'processes' if r.processes else 'threads'})"
    lines.append(f"engine {r.engine}{kernel}, symmetry reduction {'on' if r.symmetry else 'off'}")
    if r.kernel_note:  # why the requested kernel or workers did not run
        lines.append(f"  {r.kernel_note}")
    width = max((len(p.name) for p in r.properties), default=10) + 2
    shared = r.search_note  # the whole search's: said once, below the verdicts
    deciding = [p for p in r.properties if outcome.run.decides(p.name)]
    internal = [p for p in r.properties if p not in deciding]
    for p in deciding + internal:
        if p is next(iter(internal), None):
            lines.append("  the published specification's invariants (they decide only with --property or --core):")
        lines.append(f"  {p.name:<{width}}{status_words(outcome, p.name, shared)}")
    if explain:  # the deciding findings told step by step; the specification's, in their trace files
        for p in deciding:
            if verdict.broken(p, p.status) and p.name in outcome.traces:
                lines.extend(explain_lines(outcome, p.name))
    for p in r.properties:  # a failed induction: the state a lemma must rule out
        if p.proof and p.proof.get("cti"):
            lines.append("")
            lines.extend(p.proof["cti"].splitlines())
    full = f" ({s.full_states:,} before symmetry reduction)" if s.full_states is not None else ""
    if r.coverage is not None:
        lines.extend(simulation_lines(outcome))
    elif r.engine == "z3":  # symbolic: no states are enumerated
        lines.append(f"symbolic: BMC checked every path up to depth {s.depth}, {s.seconds:.2f} s, "
                     f"peak memory {s.peak_memory / 2**20:,.0f} MiB")
    else:
        lines.append(
            f"states: {s.states:,} distinct{full}, {s.generated:,} generated, depth {s.depth}, "
            f"{s.seconds:.2f} s, {s.states_per_second:,.0f} states/s, peak memory {s.peak_memory / 2**20:,.0f} MiB"
            + (f", {s.on_disk:,} visited states' fingerprints on disk" if s.on_disk else "")
        )
    if shared:
        lines.append(shared)
    if r.coverage is not None:
        lines.append(f"{'decided every property' if r.complete else 'INCOMPLETE (' + r.stop_reason + ')'}; "
                     f"bounds: {bounds_words(outcome)}")
    elif r.complete:
        scope = "the whole bounded space" if r.exhausted else "until every property was decided"
        lines.append(f"searched {scope}; bounds: {bounds_words(outcome)}")
    elif r.engine == "z3":  # symbolic: no states are enumerated, none queued
        lines.append(f"INCOMPLETE ({r.stop_reason}): every path checked up to depth {s.depth}; "
                     "undecided properties are unknown")
    else:
        lines.append(
            f"INCOMPLETE ({r.stop_reason}): {s.states:,} states explored, depth {s.depth} fully explored, "
            f"{s.queue:,} still queued; undecided properties are unknown"
        )
    if r.properties:
        lines.append(plain.paragraph(outcome))
    return "\n".join(lines)


def _family(action: str) -> str:
    """An action's family, from its name as traces write it: ``BecomeFollower(replica=0, ...)``."""
    return action.split("(")[0]


def _never_taken(never: list[str], taken: Any) -> str:
    """The actions no walk took, counted by family (each named in the JSON): where a "no violation"
    says least. A family none of whose actions was taken comes first; some actions can never be
    enabled at all (a broker following itself), which only an exhaustive search can tell."""
    total = len(never) + len(taken)
    if not never:
        return f"every one of the {total:,} actions taken at least once"
    missed, seen = Counter(map(_family, never)), Counter(map(_family, taken))
    parts = [f"{name} {n} of {n + seen[name]}" + ("" if seen[name] else " (none taken)")
             for name, n in sorted(missed.items(), key=lambda kv: (seen[kv[0]] > 0, -kv[1]))]
    return f"{len(never):,} of {total:,} actions never taken (never_taken in the JSON): {', '.join(parts)}"


def _length_histogram(lengths: Any, width: int = 10) -> str:
    """Walks by length in states, in buckets of ``width``: how deep the walks went."""
    total = sum(lengths.values())
    buckets: Counter = Counter()
    for n, walks in lengths.items():
        buckets[(n - 1) // width] += walks
    parts = [f"{b * width + 1}-{(b + 1) * width} {100 * w / total:.0f}%" for b, w in sorted(buckets.items())]
    return ", ".join(parts) + " of walks (states)" if total else "none"


def simulation_lines(outcome: CheckOutcome) -> list[str]:
    """What the walks did and saw: the answer to "no violation, after doing what?"."""
    r = outcome.result
    c, s = r.coverage, r.stats
    distinct = f"{'at least ' if c.distinct_capped else ''}{c.distinct:,}"
    rate = c.steps / c.walk_seconds if c.walk_seconds else 0
    lines = [f"simulation: {c.walks:,} walks, {c.steps:,} steps, {distinct} distinct states, longest walk {s.depth} "
             f"states, {s.seconds:.2f} s ({c.walk_seconds:.2f} s walking, {rate:,.0f} steps/s; the rest shrinking), "
             f"peak memory {s.peak_memory / 2**20:,.0f} MiB"]
    lines.append("  actions taken: " + (", ".join(f"{name} {n:,}" for name, n in c.families.most_common()) or "none"))
    lines.append("  " + _never_taken(c.never, c.fired))
    lines.append("  walk lengths: " + _length_histogram(c.lengths))
    never = [p.name for p in r.properties if p.expectation == "sometimes" and not c.guards.get(p.name)]
    if c.guards or never:
        seen = [f"{name} in {n:,} states" for name, n in c.guards.most_common()] + [f"{name} never" for name in never]
        lines.append("  guards reached: " + ", ".join(seen))
    for name, found in c.found_after.items():
        lines.append(f"  {name}: found after {found:.2f} s in a walk of {c.found_length[name]} states, "
                     f"shrunk to {r.by_name(name).trace_length} states by {c.shrunk_after[name]:.2f} s")
    for name, (rf, n) in c.fewer_replicas.items():
        file = outcome.smaller_trace_files.get(name)
        lines.append(f"  {name}: broken with {rf} replica{'s' if rf > 1 else ''} too, in {n} states"
                     + (f": trace saved to {file}" if file else ""))
    if c.from_database:
        lines.append(f"  decided by walks saved by an earlier run: {', '.join(c.from_database)}")
    return lines


def explain_lines(outcome: CheckOutcome, name: str) -> list[str]:
    """A counterexample in Kafka words: the steps, then what broke."""
    trace = outcome.traces[name]
    out = [f"\n{name}: {BY_NAME[name].doc}"]
    for i in range(1, len(trace.steps)):
        before, step = trace.steps[i - 1], trace.steps[i]
        out.append(f"  {i:>2}. {describe_step(before.state, step.action, step.state)}")
    lasso = lasso_view(trace)
    if lasso is not None:  # a liveness counterexample goes on for ever
        out.append(f"  from step {lasso.trigger} on, {lasso.ending}")
    out.append(f"  => {explain_violation(trace)}\n")
    return out
