"""advise-config from my config: Kafka's files (and --config) read as check-model reads them,
their settings placed on the sweep, so that the advice says where they sit.

The replication factor and the producer's retries a file gives become the sweep's (unless
--rf or --retries say otherwise); the swept keys (acks, min.insync.replicas, unclean
election, flush.messages, enable.idempotence) make "your settings": the point of the sweep
they name, Kafka's defaults for the keys they leave unset (``ModelConfig``'s, which are
Kafka's). The other modelled keys (max.in.flight, auto.offset.reset, the ELR version) are
the base configuration's, as in check-model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from isrcheck.model import ModelConfig

from . import frontier as fr
from . import kafka_config
from .common import UsageFailure

SWEPT = ("acks", "min_isr", "unclean_election", "flush", "idempotent")


def read(files: list[tuple[str, Path]], topic: str | None,
         pairs: tuple[str, ...]) -> tuple[kafka_config.KafkaSettings, list[str]]:
    """The files and --config pairs, as check-model reads them, and the notes on what was not
    used; one line (UsageFailure) on bad input."""
    settings = kafka_config.KafkaSettings()
    notes = kafka_config.read_files(files, topic, settings)
    for pair in pairs:
        settings.add(*kafka_config.parse_pair(pair), "--config", typed=True)
    if settings.partitions:
        notes.append("partition lines are not read by advise-config: it sweeps settings for a new partition")
    return settings, settings.notes() + notes


def split(settings: kafka_config.KafkaSettings, explicit: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the sweep's and the base's fields from the files, your swept settings). ``explicit``:
    advise-config's own options given on the command line (rf, retries), which must agree."""
    values = dict(settings.values)
    base: dict[str, Any] = {}
    for name in ("rf", "retries"):
        if name in values:
            given = values.pop(name)
            if name in explicit and explicit[name] != given:
                raise UsageFailure(f"{kafka_config.KEY_OF[name]}={given} in the files disagrees with "
                                   f"--{name} {explicit[name]}")
            base[name] = given
    yours = {name: values.pop(name) for name in SWEPT if name in values}
    return {**base, **values}, yours


def your_point(sweep: fr.Sweep, base: ModelConfig, yours: dict[str, Any]) -> fr.Point | None:
    """The sweep's point with your settings (Kafka's defaults where the files are silent);
    None where the sweep does not hold them (a min.insync.replicas above the rf swept)."""
    config = ModelConfig(**{**base.as_dict(), "log_size": None, **yours})
    own = {"acks": config.acks, "min_isr": config.min_isr, "unclean_election": config.unclean_election,
           "flush": config.flush, "idempotent": config.idempotence, "rf": config.rf}
    for point in sweep.points:
        if all(own[field] == value for field, value in sweep.settings(point).items()):
            return point
    return None


def text_lines(advice: Any, point: fr.Point | None, yours: dict[str, Any]) -> list[str]:
    """Where your settings sit: each guarantee kept or not, with the reason and trace."""
    if not yours:
        return []
    if point is None:
        return ["your settings are outside the sweep (a min.insync.replicas above the replication factor?)"]
    keeps = [g for g in advice.wanted if advice.kept(g, point)]
    breaks = [g for g in advice.wanted if advice.kept(g, point) is False]
    lines = [f"your settings ({advice.sweep.words(point)}):"]
    lines += [f"  keep: {', '.join(g.words for g in keeps)}" if keeps else "  keep none of the guarantees"]
    for g in breaks:
        r = advice.reason(g, point)
        trace = f" ({r['trace_length']} states, trace {r['trace_file']})" if r.get("trace_file") else ""
        lines.append(f"  do not keep: {g.words}: {r['says']}{trace}")
    if advice.recommended and point not in advice.recommended:
        lines.append("  the cheapest settings that keep every guarantee are below")
    elif point in advice.recommended:
        lines.append("  they are among the cheapest settings that keep every guarantee")
    return lines


def json_part(advice: Any, point: fr.Point | None, yours: dict[str, Any]) -> dict[str, Any]:
    if not yours:
        return {}
    if point is None:
        return {"yours": None}
    return {"yours": {"settings": advice.sweep.kafka(point), "keeps": {g.key: advice.kept(g, point)
                                                                        for g in advice.wanted},
                      "recommended": point in advice.recommended}}
