"""The verdict in plain words: a few sentences a Kafka engineer can paste into a review.

Each property has two sentences, what its good answer and its bad answer mean for a
user ("committed records survive" / "committed records can be lost"); the verdict is
the configuration in Kafka's words, then one sentence per checked property, a broken
one with its trace's length and file. A *question* property (``Property.question``:
``write-after-crash``) has two legitimate answers, and neither is a failure.
"""

from __future__ import annotations

from isrcheck.model.config import FEATURES
from isrcheck.model.fields import write_quorum
from isrcheck.properties import BY_NAME, verdict

from . import partition_now
from .kafka_config import in_kafka_words
from .runner import CheckOutcome

# property -> (what its good outcome means, what its bad outcome means)
SENTENCES: dict[str, tuple[str, str]] = {
    "weak-isr": ("every leader's records below its high watermark are on every member of its own ISR",
                 "a leader can have a record below its high watermark that a member of its ISR lacks"),
    "strong-isr": ("records below a leader's high watermark are on every ISR member, so a clean election keeps them",
                   "a record below a leader's high watermark can be missing from an ISR member the controller may elect"),
    "leader-in-isr": ("the leader is always in the ISR", "the leader can be outside the ISR"),
    "log-matching": ("replicas never disagree on a record below both of their high watermarks",
                     "two replicas can hold different records below their high watermarks"),
    "committed-survive": ("committed records survive", "committed records can be lost"),
    "committed-stored": ("every committed record stays on some broker's disk",
                         "a committed record can be gone from every broker's disk"),
    "acked-survive": ("acknowledged writes survive", "acknowledged writes can be lost"),
    "read-within-hwm": ("what a consumer reads never disappears", "a consumer can read a record that later disappears"),
    # witnesses that the bounds leave room for the story: said only when they do not
    "record-committed": ("", "no record is ever committed: the bounds are too tight to tell much"),
    "leader-failover": ("", "no leader takes over with earlier committed records within the bounds"),
    "consumer-reads": ("", "consumers never read a record within the bounds"),
    "write-after-crash": ("writes are still acknowledged while a broker is down",
                          "writes stop being acknowledged while a broker is down"),
    "no-duplicates": ("no record is committed twice", "a retry can commit a second copy of a record"),
    "in-order": ("records are committed in the order the producer sent them",
                 "a retried record can be committed after a record the producer sent later"),
    "producer-retries": ("", "the producer never retries within the bounds"),
    "duplicate-dropped": ("", "no leader ever drops a retried duplicate within the bounds"),
    "no-skipped-records": ("the consumer never passes over a record, across its crashes",
                           "the consumer can skip a record for good"),
    "processed-once": ("the consumer never processes a record twice", "the consumer can process a record twice"),
    "consumer-restarts": ("", "the consumer never restarts within the bounds"),
    "can-recover": ("the partition always becomes writable again by itself",
                    "the partition can stay unwritable until a person steps in"),
    "rejoins-isr": ("a live replica outside the ISR always rejoins it once faults stop",
                    "a live replica can stay out of the ISR for ever, with no fault happening"),
    "hwm-progress": ("with every broker up, the high watermark catches up with the leader's log",
                     "with every broker up, the high watermark can stop short of the leader's log end"),
}


def sentence(outcome: CheckOutcome, name: str) -> str:
    """One property's verdict in plain words ('' for a witness of the bounds that is seen)."""
    p = outcome.result.by_name(name)
    good, bad = SENTENCES.get(name, (f"{name} holds", f"{name} fails"))
    said = verdict.outcome(p, p.status)
    if said == "unknown" and outcome.result.coverage is not None:
        return good if verdict.always(p) else f"whether {good or name + ' happens'} is not known (no walk saw it)"
    if said == "unknown":
        depth = searched_depth(outcome, name)
        if verdict.always(p) and depth:
            return f"{good} up to depth {depth}; past it, not known yet (the search stopped early)"
        return f"whether {good or name + ' happens'} is not known yet (the search stopped early)"
    if verdict.good(BY_NAME.get(name, p), p.status) and said != "never":
        return good
    config = outcome.run.config
    if name == "record-committed" and not config.core and write_quorum(config) > config.rf:
        return (f"no record is ever written: with min.insync.replicas={config.min_isr} above the {config.rf} "
                f"replicas, Kafka {config.kafka_version} refuses every acks=all write (NotEnoughReplicas)")
    file = outcome.trace_files.get(name)
    where = f" ({p.trace_length} states, trace {file})" if p.trace_length and file else (
        f" ({p.trace_length} states)" if p.trace_length else "")
    return bad + where


def answer(outcome: CheckOutcome) -> str:
    """The report's first line: the user's question answered, a short sentence per deciding
    property (``CheckRun.decides``), what goes wrong first; the specification's own
    invariants only when they were asked for."""
    r = outcome.result
    deciding = [p for p in r.properties if outcome.run.decides(p.name)]
    depth = r.stats.depth if r.coverage is None else 0

    def said_of(p) -> str:  # an unbroken invariant of a stopped search: the scope says how far
        if p.status == "unknown" and verdict.always(p) and depth and not BY_NAME[p.name].graph:
            return SENTENCES.get(p.name, (f"{p.name} holds", ""))[0]
        return sentence(outcome, p.name)

    said = [s for s in (said_of(p) for p in findings_first(deciding)) if s]
    scope = "within bounds" if r.complete else (
        f"up to depth {depth}, where the search stopped" if depth else "so far (the search stopped early)")
    if partition_now.scope(outcome.run.config):
        scope = f"{partition_now.scope(outcome.run.config)}, {scope}"
    if not said:
        return f"Answer, {scope}: nothing was asked." if not deciding else f"Answer, {scope}: nothing goes wrong."
    return f"Answer, {scope}: " + _sentences(said)


def searched_depth(outcome: CheckOutcome, name: str) -> int:
    """How deep an undecided state property is known not to be decided (every path of that
    many states was searched); 0 for a graph property, which needs the whole graph."""
    return 0 if BY_NAME[name].graph else outcome.result.stats.depth


def faults(config) -> str:
    """The faults a run may suffer, in words ("up to 1 broker crash, no broker coming back"):
    each fault's knob says its own (``Knob.plain``)."""
    return ", ".join(words for words in (knob.plain(config) for knob in FEATURES) if words)


def paragraph(outcome: CheckOutcome) -> str:
    """The whole verdict: what was checked, in Kafka's words, then a short sentence per
    guarantee, the findings first (``findings_first``)."""
    config = outcome.run.config
    settings = "the published specification's machine" if config.core else (
        f"Kafka {config.kafka_version}, {in_kafka_words(config)}, {faults(config)}")
    props, walked = findings_first(outcome.result.properties), outcome.result.coverage
    unbroken = [p for p in props if walked is not None and p.status == "unknown" and verdict.always(p)]
    told = [p for p in props if p not in unbroken and outcome.run.decides(p.name)]
    said = _sentences(sentence(outcome, p.name) for p in told)
    internal = [p for p in props if p not in unbroken and p not in told]
    if internal:  # the published specification's own, after the guarantees asked about
        said += " The published specification's invariants: " + _sentences(sentence(outcome, p.name) for p in internal)
    if unbroken:  # a simulation: what no walk broke, said once as unproved
        said += (" " if said else "") + f"None of {walked.walks:,} random walks broke these, which proves " \
            "nothing: " + _sentences(sentence(outcome, p.name) for p in unbroken)
    start = f" {partition_now.scope(config)[0].upper()}{partition_now.scope(config)[1:]}." if config.now else ""
    return f"In plain words. Checked: {settings}.{start} Within the bounds checked: {said or 'Nothing goes wrong.'}"


def findings_first(props) -> list:
    """The properties, those whose verdict is bad first (the report and the answer say them so)."""
    bad = [p for p in props if not verdict.good(BY_NAME.get(p.name, p), p.status)]
    return bad + [p for p in props if p not in bad]


def _sentences(said) -> str:
    """Each clause its own sentence, capitalised: one per guarantee."""
    return " ".join(f"{s[0].upper()}{s[1:]}." for s in said if s)
