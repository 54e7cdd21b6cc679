"""What Kafka's tools write, read as (key, value, where) entries per topic.

Four shapes, as Kafka prints or reads them:

- a ``.properties`` file (a topic's, a client's or a broker's), by the format's own rules
  (``=``, ``:`` or white space between key and value, ``\\`` continuations, ``\\uXXXX``
  escapes, ``#`` and ``!`` comments): the ``javaproperties`` library reads it as Java's
  ``Properties.load`` does, a later line of a key replacing an earlier one;
- ``kafka-topics.sh --describe`` (TopicCommand.TopicDescription.printDescription):
  ``Topic: t<TAB>TopicId: ..<TAB>PartitionCount: n<TAB>ReplicationFactor: n<TAB>Configs: k=v,k=v``
  and a ``<TAB>Topic: t<TAB>Partition: p<TAB>Leader: ..`` line per partition;
- ``kafka-configs.sh --describe [--all]`` (ConfigCommand.describeResourceConfig):
  ``Dynamic configs for topic t are:`` (``All`` with ``--all``) then
  ``  k=v sensitive=false synonyms={...}`` lines;
- the ZooKeeper-era ``kafka-configs.sh --describe``: ``Configs for topic 't' are k=v,k=v``.

Kafka joins a topic's entries with ``,`` and leaves commas in values as they are
(``follower.replication.throttled.replicas=0:1,0:2``): a fragment without ``=`` continues
the value before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import javaproperties

from isrcheck.files import FileProblem, read_bounded
from isrcheck.model import ConfigError
from isrcheck.model.now import PartitionNow

from .common import UsageFailure
from .units import digits_hint

Entry = tuple[str, str, str]  # key, value, where

_HEADER = re.compile(r"(?:Dynamic|All|Static|Default) configs for (\S+?)s?(?: (.*))? are:")
_OLD = re.compile(r"Configs for (\S+) '(.*)' are ?(.*)")
_CONFIG_LINE = re.compile(r"\s+([^=\s]+)=(.*?) sensitive=(?:true|false) synonyms=\{.*\}")
_TOPIC_LINE = re.compile(r"Topic: ?([^\t]*)\t")


@dataclass
class Reading:
    """One file's entries by topic (None: entries that name no topic, as a .properties file's)."""

    topics: dict[str | None, list[Entry]] = field(default_factory=dict)
    partitions: dict[str, list[PartitionNow]] = field(default_factory=dict)  # topic -> its partition lines
    described: bool = False  # Kafka's describe output, whose topics have names


def read_file(path: Path, option: str) -> Reading:
    """A file a Kafka tool wrote or reads; its form is told by its first line that says anything."""
    try:
        text = read_bounded(path, option, limit=1 << 20).decode("utf-8")
    except FileProblem as e:  # its words name the option and the file
        raise UsageFailure(str(e)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageFailure(f"{option} {path}: {getattr(e, 'strerror', None) or e}") from None
    lines = text.splitlines()
    first = next((s.strip() for s in lines if s.strip() and not s.lstrip().startswith(("#", "!"))), "")
    if first.startswith("Topic:") or _HEADER.fullmatch(first) or _OLD.fullmatch(first):
        return _describe(lines, path)
    return _properties(text, path, option)


def _properties(text: str, path: Path, option: str) -> Reading:
    """Java's .properties rules, each key's last line kept (as Properties.load keeps it)."""
    entries: dict[str, Entry] = {}
    line = 1
    try:
        for element in javaproperties.parse(text):
            if isinstance(element, javaproperties.KeyValue):
                entries[element.key] = (element.key, element.value, f"{path}:{line}")
            line += element.source.count("\n") + element.source.count("\r") - element.source.count("\r\n")
    except ValueError as e:  # javaproperties.InvalidUEscapeError: a \u without four hex digits
        raise UsageFailure(f"{option} {path}:{line}: {e}") from None
    return Reading({None: list(entries.values())} if entries else {})


def _describe(lines: list[str], path: Path) -> Reading:
    """kafka-topics.sh's and kafka-configs.sh's describe outputs, old and new, topic by topic."""
    reading = Reading(described=True)
    current: list[Entry] | None = None
    for n, raw in enumerate(lines, 1):
        where, line = f"{path}:{n}", raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        if header := _HEADER.fullmatch(line):  # "Dynamic configs for broker 1 are:" names no topic
            current = reading.topics.setdefault(header.group(2) if header.group(1) == "topic" else None, [])
        elif old := _OLD.fullmatch(line):
            name = old.group(2) if old.group(1) == "topic" else None
            reading.topics.setdefault(name, []).extend(_entries(old.group(3), where))
        elif "\tPartition:" in raw + "\t" and "ReplicationFactor:" not in line:
            reading.partitions.setdefault(_topic_name(raw, where), []).append(_partition(raw, where))
        elif line.startswith("Topic:"):
            reading.topics.setdefault(_topic_name(raw, where), []).extend(_topic_entries(raw, where))
        elif current is not None and (config := _CONFIG_LINE.fullmatch(raw)):
            current.append((config.group(1), config.group(2), where))
        else:
            raise UsageFailure(f"{where}: not a line kafka-topics.sh or kafka-configs.sh --describe prints: {line[:60]!r}")
    return reading


def _topic_name(raw: str, where: str) -> str:
    name = _TOPIC_LINE.match(raw.strip() + "\t")
    if not name or not name.group(1).strip():
        raise UsageFailure(f"{where}: a Topic: line without the topic's name")
    return name.group(1).strip()


def _partition(raw: str, where: str) -> PartitionNow:
    """A partition line's leader, replicas, ISR and ELR (TopicCommand.PartitionDescription):
    its fields by name, in the order PartitionNow reads them; the others (TopicId, a
    reassignment's Adding and Removing Replicas, LastKnownElr) are not part of the state read."""
    fields = {k.strip(): v.strip() for k, _, v in (f.partition(":") for f in raw.strip().split("\t"))}
    if "Adding Replicas" in fields or "Removing Replicas" in fields:
        raise UsageFailure(f"{where}: partition {fields.get('Partition', '?')} is being reassigned; "
                           "isrcheck reads a partition's state only between reassignments")
    words = " ".join(f"{k}: {fields[k]}" for k in ("Partition", "Leader", "Replicas", "Isr", "Elr") if k in fields)
    try:
        return PartitionNow.parse(words)
    except ConfigError as e:
        raise UsageFailure(f"{where}: {e}") from None


def _topic_entries(raw: str, where: str) -> list[Entry]:
    """A kafka-topics.sh topic line: its replication factor and its Configs (up to the next tab)."""
    out = []
    fields = dict(f.partition(":")[::2] for f in raw.strip().split("\t"))
    if "ReplicationFactor" in fields:  # the whole word, as --rf reads it: '5x', '2.0', '-2' or nothing is a typo
        value = fields["ReplicationFactor"].strip()
        if not re.fullmatch(r"[0-9]{1,4}", value):
            raise UsageFailure(f"{where}: ReplicationFactor: {value[:40]!r} is not a whole number{digits_hint(value)}")
        out.append(("replication.factor", value, where))
    return out + _entries(fields.get("Configs", "").strip(), where)


def _entries(text: str, where: str) -> list[Entry]:
    """k=v,k=v as Kafka joins them: a fragment without '=' is the previous value's, after a comma."""
    out: list[Entry] = []
    for fragment in filter(None, text.split(",")):
        key, sep, value = fragment.partition("=")
        if sep and key.strip():
            out.append((key.strip(), value, where))
        elif out:
            out[-1] = (out[-1][0], f"{out[-1][1]},{fragment}", where)
        else:
            raise UsageFailure(f"{where}: expected KEY=VALUE in Configs, found {fragment[:60]!r}")
    return out
