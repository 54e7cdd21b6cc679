"""The consumer group member's offsets (issue 18): expectations from Kafka's design docs.

Written before the checker ran, from the "Message Delivery Semantics" section of Kafka's
design documentation: a consumer that saves its position and then processes is at most
once (a crash in between skips the record), one that processes and then saves is at
least once (a crash in between processes it again); and from auto.offset.reset: without
a committed offset, ``latest`` starts at the log end, passing over what is there. The
lengths are the breadth-first shortest, pinned once measured; every engine must agree.
"""

import pytest

from isrcheck.model import ConfigError, ModelConfig

from .conftest import run_bfs
from .test_z3_engine import assert_replays, verdicts
from .z3_support import run_z3

PROPS = ["no-skipped-records", "processed-once", "consumer-restarts"]
BASE = ModelConfig(rf=2, crashes=0, consumer_crashes=1, auto_offset_reset="earliest")
# (commit, auto.offset.reset) -> (no-skipped-records, processed-once): shortest violation or None
EXPECTED = {
    ("before", "earliest"): (9, None),  # at most once
    ("after", "earliest"): (None, 11),  # at least once
    ("after", "latest"): (8, 12),  # a crash before the first commit: latest passes over m0
}


def _found(result) -> tuple:
    v = verdicts(result)
    return tuple(v[p][1] if v[p][0] == "violated" else None for p in PROPS[:2])


@pytest.mark.parametrize("key", EXPECTED, ids="-".join)
def test_at_most_once_and_at_least_once_follow_the_design_docs(key):
    config = BASE.with_changes(commit=key[0], auto_offset_reset=key[1])
    result = run_bfs(config, PROPS)
    assert _found(result) == EXPECTED[key]
    assert verdicts(result)["consumer-restarts"] == ("holds", 2)


@pytest.mark.parametrize("key", list(EXPECTED), ids="-".join)
def test_scalar_vector_and_z3_agree_within_depth_13(key):
    config = BASE.with_changes(commit=key[0], auto_offset_reset=key[1])
    vector = run_bfs(config, PROPS, max_depth=13)
    assert verdicts(vector) == verdicts(run_bfs(config, PROPS, kernel="scalar", max_depth=13))
    z3 = run_z3(config, PROPS, max_depth=13)
    assert verdicts(z3) == verdicts(vector)
    assert_replays(config, z3)


def test_a_producer_duplicate_is_processed_twice_even_at_most_once():
    config = BASE.with_changes(commit="before", retries=1, idempotent=False)
    assert verdicts(run_bfs(config, ["processed-once"]))["processed-once"] == ("violated", 15)
    assert verdicts(run_bfs(config.with_changes(idempotent=True), ["processed-once"]))["processed-once"] == ("holds", None)


def test_an_unclean_leader_behind_the_consumer_resets_its_offset():
    """OFFSET_OUT_OF_RANGE after an unclean election to a follower that had m0 only: the consumer at
    offset 2 resets to earliest and processes m0 again, with no consumer crash at all."""
    config = ModelConfig(rf=2, crashes=1, unclean_election=True, commit="after", auto_offset_reset="earliest")
    assert verdicts(run_bfs(config, ["processed-once"]))["processed-once"] == ("violated", 20)


@pytest.mark.parametrize("changes, words", [
    ({"consumer_crashes": 1}, "--consumer-crashes needs --commit"),
    ({"commit": "before", "consumer": False}, "--commit needs the consumer"),
    ({"commit": "sometimes"}, "--commit 'sometimes' is unknown"),
    ({"commit": "after", "consumer_crashes": 3}, "--consumer-crashes 3 is out of range"),
])
def test_bad_consumer_settings_are_one_line_refusals(changes, words):
    with pytest.raises(ConfigError, match=words):
        ModelConfig(rf=2, **changes).validate()


def test_the_main_job_has_no_consumer_group():
    from isrcheck.model import ReplicationModel

    fields = {f.name for f in ReplicationModel(ModelConfig()).schema.kept}
    assert not fields & {"position", "holding", "commit_offset", "processed", "inflight", "failed"}


@pytest.mark.parametrize("commit, expected", [("before", (10, None)), ("after", (None, 12))])
def test_rf3_vector_and_z3_agree_on_the_consumer(commit, expected):
    # 3.9 (ZooKeeper): on 4.1 an ISR change goes through the KRaft controller, one step longer
    config = ModelConfig(rf=3, kafka_version="3.9", crashes=0, commit=commit, consumer_crashes=1,
                         auto_offset_reset="earliest", max_records=1, max_leader_epoch=1)
    vector = run_bfs(config, PROPS)
    assert _found(vector) == expected
    z3 = run_z3(config, PROPS, max_depth=12)
    assert verdicts(z3) == verdicts(vector)
    assert_replays(config, z3)
