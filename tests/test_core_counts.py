"""The core machine must be exactly the published specification: TLC's state counts.

Figures from TLC runs (TLC, LogSize 2, MaxRecords 2, MaxLeaderEpoch 2, no
symmetry, the whole reachable space).
"""

import pytest

from isrcheck.model import ModelConfig

from .conftest import run_bfs

TLC_RF2 = {
    "hw-truncation": (10_131, 20),
    "kip-101": (9_045, 18),
    "kip-279": (9_027, 18),
    "kip-320": (5_973, 18),
}


KERNELS = pytest.mark.parametrize("kernel", ["scalar", "vector"])


@KERNELS
@pytest.mark.parametrize("protocol", list(TLC_RF2))
def test_rf2_core_state_count_and_depth_equal_tlc(protocol, kernel):
    result = run_bfs(ModelConfig(rf=2, protocol=protocol, core=True), kernel=kernel, explore_all=True)
    assert result.exhausted and result.kernel == kernel
    assert (result.stats.states, result.stats.depth) == TLC_RF2[protocol]


@KERNELS
def test_rf3_kip320_core_state_count_and_depth_equal_tlc(kernel):
    result = run_bfs(ModelConfig(rf=3, protocol="kip-320", core=True), kernel=kernel, explore_all=True)
    assert (result.stats.states, result.stats.depth) == (737_794, 26)
    assert result.all_hold and result.kernel == kernel


@KERNELS
@pytest.mark.parametrize("protocol", list(TLC_RF2))
def test_symmetry_reduction_is_exact_orbit_sizes_add_up_to_the_full_count(protocol, kernel):
    result = run_bfs(ModelConfig(rf=2, protocol=protocol, core=True), kernel=kernel, explore_all=True, symmetry=True)
    assert result.stats.full_states == TLC_RF2[protocol][0]
    assert result.stats.states < TLC_RF2[protocol][0]


SHORTEST_RF2 = {
    ("hw-truncation", "weak-isr"): 9,
    ("hw-truncation", "strong-isr"): 10,
    ("kip-101", "weak-isr"): 12,
    ("kip-101", "strong-isr"): 12,
}


@KERNELS
@pytest.mark.parametrize("protocol,prop", list(SHORTEST_RF2))
@pytest.mark.parametrize("symmetry", [False, True])
def test_rf2_shortest_counterexamples_have_the_published_lengths(protocol, prop, symmetry, kernel):
    result = run_bfs(ModelConfig(rf=2, protocol=protocol, core=True), [prop], kernel=kernel, symmetry=symmetry)
    r = result.by_name(prop)
    assert r.status == "violated"
    assert r.trace_length == SHORTEST_RF2[(protocol, prop)]


@pytest.mark.parametrize("protocol", ["kip-279", "kip-320"])
def test_rf2_fixed_revisions_hold_both_isr_properties(protocol):
    result = run_bfs(ModelConfig(rf=2, protocol=protocol, core=True), ["weak-isr", "strong-isr"])
    assert [p.status for p in result.properties] == ["holds", "holds"]


@KERNELS
def test_rf3_kip279_violates_weak_isr_the_reason_for_kip320(kernel):
    result = run_bfs(ModelConfig(rf=3, protocol="kip-279", core=True), ["weak-isr"], kernel=kernel, symmetry=True)
    assert result.by_name("weak-isr").status == "violated"
    assert result.by_name("weak-isr").trace_length == 11


@KERNELS
def test_rf3_kip320_symmetry_reduced_run_accounts_for_every_state(kernel):
    result = run_bfs(ModelConfig(rf=3, protocol="kip-320", core=True), kernel=kernel, explore_all=True, symmetry=True)
    assert result.stats.full_states == 737_794
    assert result.stats.depth == 26
    assert result.all_hold
