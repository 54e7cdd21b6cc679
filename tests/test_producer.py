"""The producer's retries, max-in-flight and idempotence (issue 18): expectations from Kafka's docs.

The expected verdicts were written from the producer's documentation before the checker
ran: ``enable.idempotence`` ("the producer will ensure that exactly one copy of each
message is written in the stream. If 'false', producer retries due to broker failures,
etc., may write duplicates of the retried message") and
``max.in.flight.requests.per.connection`` ("if this configuration is set to be greater
than 1 and enable.idempotence is set to false, there is a risk of message reordering
after a failed send due to retries; if retries are disabled or if enable.idempotence is
set to true, ordering will be preserved"). The lengths are the breadth-first shortest,
pinned once measured, and every engine must find the same.
"""

import pytest

from isrcheck.model import ConfigError, ModelConfig

from .clitools import run_cli
from .conftest import run_bfs
from .test_z3_engine import assert_replays, verdicts
from .z3_support import run_z3

BASE = ModelConfig(rf=2, crashes=0, retries=1)  # no crash needed: a lost answer or a leader change will do
PROPS = ["no-duplicates", "in-order", "producer-retries"]
# (idempotent, max-in-flight) -> (no-duplicates, in-order), shortest counterexample lengths or None
EXPECTED = {
    (True, 5): (None, None),  # DuplicateSequence drops the copy; OutOfOrderSequence keeps the order
    (True, 1): (None, None),
    (False, 1): (9, None),  # a lost answer, a retry: two copies; one request at a time keeps the order
    (False, 5): (9, 11),  # m0 fails, m1 is written, m0's retry lands behind it
}


def _config(idempotent: bool, in_flight: int) -> ModelConfig:
    return BASE.with_changes(idempotent=idempotent, max_in_flight=in_flight)


def _found(result) -> tuple:
    v = verdicts(result)
    return tuple(v[p][1] if v[p][0] == "violated" else None for p in ("no-duplicates", "in-order"))


@pytest.mark.parametrize("key", EXPECTED, ids=lambda k: f"idempotent{k[0]}-inflight{k[1]}" if isinstance(k, tuple) else k)
def test_duplicates_and_reordering_follow_the_producer_docs(key):
    config = _config(*key)
    result = run_bfs(config, PROPS + (["duplicate-dropped"] if config.idempotence else []))
    assert _found(result) == EXPECTED[key]
    v = verdicts(result)
    assert v["producer-retries"] == ("holds", 8 if key[0] else 6), "a retry happens: the answers are not vacuous"
    if config.idempotence:
        assert v["duplicate-dropped"] == ("holds", 8)


@pytest.mark.parametrize("idempotent", [True, False])
def test_scalar_vector_and_z3_agree_on_verdicts_lengths_and_states_within_depth_12(idempotent):
    config = _config(idempotent, 5)
    props = PROPS + (["duplicate-dropped"] if idempotent else [])
    # weak-isr holds: both kernels search every state to depth 12, whatever the others decide earlier
    vector = run_bfs(config, props + ["weak-isr"], max_depth=12)
    scalar = run_bfs(config, props + ["weak-isr"], kernel="scalar", max_depth=12)
    z3 = run_z3(config, props, max_depth=12)
    assert verdicts(vector) == verdicts(scalar)
    assert {p: v for p, v in verdicts(vector).items() if p != "weak-isr"} == verdicts(z3)
    assert_replays(config, z3)
    assert vector.stats.states == scalar.stats.states > 10_000


def test_rf3_vector_and_z3_agree_on_the_shortest_duplicate_and_reordering():
    # 3.9 (ZooKeeper): on 4.1 an ISR change goes through the KRaft controller, one step longer
    config = ModelConfig(rf=3, kafka_version="3.9", crashes=0, retries=1, idempotent=False, max_leader_epoch=1)
    vector = run_bfs(config, PROPS)
    assert _found(vector) == (10, 12)
    z3 = run_z3(config, PROPS, max_depth=12)
    assert verdicts(z3) == verdicts(vector)
    assert_replays(config, z3)


def test_acks_1_without_idempotence_duplicates_and_reorders_and_loses_acknowledged_records():
    config = BASE.with_changes(acks="1")
    assert not config.idempotence  # Kafka turns idempotence off where acks conflicts (KAFKA-13673)
    v = verdicts(run_bfs(config, PROPS + ["acked-survive"], max_depth=12))
    assert v["no-duplicates"][0] == v["in-order"][0] == "violated"


def test_idempotence_default_is_kafkas():
    assert BASE.idempotence, "on from 3.0 with acks=all, retries and max-in-flight at most 5 (KIP-679)"
    assert not BASE.with_changes(kafka_version="2.8").idempotence
    assert not BASE.with_changes(max_in_flight=6).idempotence
    assert not BASE.with_changes(retries=0).idempotence
    assert ModelConfig().log_size == 2 and BASE.with_changes(idempotent=False).log_size == 3


@pytest.mark.parametrize("changes, words", [
    ({"acks": "1", "idempotent": True}, "--idempotent needs --acks all"),
    ({"retries": 0, "idempotent": True}, "--idempotent needs --retries 1 or more"),
    ({"max_in_flight": 6, "idempotent": True}, "--idempotent needs --max-in-flight 5 or less"),
    ({"retries": 5}, "--retries 5 is out of range"),
    ({"max_in_flight": 0}, "--max-in-flight 0 is out of range"),
])
def test_kafkas_config_exceptions_are_one_line_refusals(changes, words):
    with pytest.raises(ConfigError, match=words):
        BASE.with_changes(**changes).validate()


def test_cli_refuses_a_conflict_in_one_line_and_reads_the_producer_keys(tmp_path):
    bad = run_cli("check-model", "--rf", "2", "--retries", "1", "--acks", "1", "--idempotent")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
    ok = run_cli("check-model", "--rf", "2", "--crashes", "0", "--config", "retries=2147483647", "--config",
                 "enable.idempotence=false", "--config", "max.in.flight.requests.per.connection=1",
                 "--property", "no-duplicates", "--property", "in-order", "--trace-dir", str(tmp_path))
    assert ok.returncode == 1, ok.stdout + ok.stderr
    assert "retries=1, max.in.flight.requests.per.connection=1, enable.idempotence=false" in ok.stdout
    assert "A retry can commit a second copy of a record (9 states" in ok.stdout  # a sentence of its own
    assert "Records are committed in the order the producer sent them" in ok.stdout


# --delivery-timeout: Kafka retries a batch only while delivery.timeout.ms has not passed and
# retries are left (``Sender.canRetry``), and every record has its first attempt (an explicit
# delivery.timeout.ms below linger.ms + request.timeout.ms is a ConfigException). Expected
# before the checker ran: one attempt a record means no retry whatever --retries says; two
# attempts already give --retries 1's duplicate and reordering; three, with two retries in the
# run, bind nothing.
ATTEMPTS = {1: (None, None), 2: (9, 11), 3: (9, 11)}


@pytest.mark.parametrize("attempts", ATTEMPTS)
def test_delivery_timeout_bounds_each_records_attempts(attempts):
    config = BASE.with_changes(retries=2, idempotent=False, delivery_timeout=attempts)
    result = run_bfs(config, PROPS)
    assert _found(result) == ATTEMPTS[attempts]
    retried = verdicts(result)["producer-retries"]
    assert (retried[0] == "holds") == (attempts > 1), "one attempt a record: the producer never retries"
    assert config.log_size == 2 + min(2, 2 * (attempts - 1)), "room for the copies the attempts allow"


def test_the_attempts_bound_binds_below_the_runs_retries():
    """Two retries in the run, one per record: no record is retried twice, so fewer states than
    without the bound (the pinned lengths above need only one retry and cannot tell)."""
    base = BASE.with_changes(retries=2, idempotent=False, kafka_version="3.9")  # 3.9: a third of 4.1's states
    states = {d: run_bfs(base.with_changes(delivery_timeout=d), ["weak-isr"]).stats.states for d in (1, 2, None)}
    assert states[1] < states[2] < states[None], states


def test_delivery_timeout_scalar_vector_and_z3_agree():
    config = BASE.with_changes(retries=2, idempotent=False, delivery_timeout=2)
    vector = run_bfs(config, PROPS + ["weak-isr"], max_depth=11)
    scalar = run_bfs(config, PROPS + ["weak-isr"], kernel="scalar", max_depth=11)
    assert verdicts(vector) == verdicts(scalar) and vector.stats.states == scalar.stats.states
    z3 = run_z3(config, ["no-duplicates"], max_depth=9)
    assert verdicts(z3)["no-duplicates"] == ("violated", 9)
    assert_replays(config, z3)


def test_an_idempotent_producer_with_a_delivery_timeout_writes_once_and_in_order():
    v = verdicts(run_bfs(BASE.with_changes(retries=2, delivery_timeout=2), PROPS + ["duplicate-dropped"]))
    assert v["no-duplicates"][0] == v["in-order"][0] == "holds" and v["duplicate-dropped"][0] == "holds"


@pytest.mark.parametrize("args, words", [
    (["--retries", "1", "--delivery-timeout", "0"], "--delivery-timeout 0 is out of range; allowed 1 to 4"),
    (["--delivery-timeout", "2"], "it needs --retries 1 or more"),
    # Z3's unbounded mode has no bound on record ids to keep the producer's or consumer's sets in
    (["--engine", "z3", "--max-leader-epoch", "unbounded", "--retries", "1"], "--retries needs bounded record ids"),
    (["--engine", "z3", "--max-leader-epoch", "unbounded", "--commit", "after"], "--commit needs bounded record ids"),
])
def test_delivery_timeout_refusals_are_one_line(args, words):
    bad = run_cli("check-model", "--rf", "2", *args)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and words in bad.stderr, bad.stderr
