"""Houdini's lemmas are invariants: each one it keeps holds in every sampled reachable
state. A wrong lemma would make BMC miss counterexamples and induction prove falsehoods."""

import pytest
import z3

from isrcheck.checker.z3_lemmas import houdini
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.symbolic import SymbolicModel
from isrcheck.model.symbolic_lemmas import candidates

from .z3_support import concrete, reachable, spread

CONFIGS = [
    ModelConfig(rf=2, protocol="hw-truncation", core=True),
    ModelConfig(rf=2, protocol="kip-320", core=True),
    ModelConfig(rf=3, protocol="kip-101", acks="1", crashes=1, disk_loss=1, max_records=1),
    ModelConfig(rf=3, protocol="kip-320", min_isr=2, crashes=2, unclean_election=True),
]


@pytest.mark.parametrize("config", CONFIGS, ids=[c.summary() for c in CONFIGS])
def test_every_kept_lemma_holds_in_sampled_reachable_states(config):
    sym = SymbolicModel(config)
    lemmas = houdini(sym, timeout=60)
    assert lemmas.kept, "Houdini kept no lemma: it ran out of time or the candidates are all wrong"
    model = ReplicationModel(config)
    s = sym.fresh("s")
    cands = candidates(s)
    kept = [cands[i] for i in lemmas.kept]
    for state in spread(reachable(model, 50_000), 250):
        m = concrete(sym.space, s, model.decode(state))
        broken = [name for name, f in kept if not z3.is_true(m.eval(f, model_completion=True))]
        assert not broken, model.decode(state)


def test_houdini_drops_a_candidate_that_the_model_breaks():
    """Some candidates are false, or not inductive, on hw-truncation: they are dropped, not assumed."""
    config = ModelConfig(rf=2, protocol="hw-truncation", core=True)
    sym = SymbolicModel(config)
    names = {name for name, _ in candidates(sym.fresh("x"))}
    kept = set(houdini(sym, timeout=60).names)
    assert kept and kept < names  # Houdini kept some (a timeout keeps none) and dropped some
