"""bench/peers/peer_costs.py: the floors the peer report divides by.

Each expected figure is a literal worked out by hand from the published model
sizes (not by the module's formulas); the 1.1B Llama's weight count is also
the one its export measured (bench/RESULTS.md: 1.0345 G parameters in its GEMMs).
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers"))

import peer_costs  # noqa: E402
import peer_inputs as pi  # noqa: E402


def cost(name, batch, length, tiny=False):
    spec = pi.ALL_MODELS[name]
    return peer_costs.request_cost(spec, pi.sizes(spec.family, tiny), batch, length)


def test_bert_base_prefill_counts_every_gemm_and_the_full_attention():
    # 12 layers x (4 x 768^2 + 2 x 768 x 3072) = 84,934,656 weights; attention
    # 12 x 2 x 768 x 128 x 128 multiply-adds.
    c = cost("bert-base", 1, 128)
    assert c.flops == 2 * (128 * 84_934_656 + 301_989_888)
    assert c.bytes == 4 * 84_934_656
    assert cost("bert-base", 8, 128).flops == 8 * c.flops


def test_distilbert_has_half_the_layers():
    assert cost("distilbert", 1, 32).flops == 2 * (32 * 42_467_328 + 6 * 2 * 768 * 32 * 32)


def test_gpt2_prefill_is_causal_and_runs_the_lm_head_on_every_position():
    # + 768 x 50257 = 38,597,376 for the LM head; 128 x 129 / 2 = 8256 pairs.
    c = cost("gpt2", 1, 128)
    assert c.flops == 2 * (128 * 123_532_032 + 12 * 2 * 768 * 8256)
    assert c.bytes == 4 * 123_532_032


def test_a_decode_step_reads_its_cache_and_writes_the_present_tensors():
    # One token over 512 cached ones: 513 pairs; the cache's 12 x 2 x 768
    # floats per token read for 512 tokens and written for 513.
    c = cost("gpt2-past", 1, 512)
    assert c.flops == 2 * (123_532_032 + 12 * 2 * 768 * 513)
    assert c.bytes == 4 * (123_532_032 + 12 * 2 * 768 * (512 + 513))


def test_llama_counts_grouped_query_projections_and_the_gated_mlp():
    # Per layer: q, o 2048^2 each; k, v 2048 x (4 x 64) each; gate, up, down
    # 2048 x 5632 each = 44,040,192; x 22 + the 2048 x 32000 LM head.
    c = cost("llama-past", 1, 16)
    assert c.bytes == 4 * (1_034_420_224 + 22 * 2 * 256 * (16 + 17))
    assert c.bytes / 4 == pytest.approx(1.0345e9, rel=1e-3)


def test_a_prefill_with_past_of_a_decoder_is_causal_over_the_cache_and_itself():
    # 16 prompt tokens, no cache: 16 x 17 / 2 = 136 pairs; the presents of 16 tokens written.
    spec = pi.ALL_MODELS["llama-past"]
    c = peer_costs.cost(spec, pi.sizes("llama", False), 1, 16, 0)
    assert c.flops == 2 * (16 * 1_034_420_224 + 22 * 2 * 2048 * 136)
    assert c.bytes == 4 * (1_034_420_224 + 22 * 2 * 256 * 16)
    # 4 tokens after 10 cached: 4 x 10 + 4 x 5 / 2 = 50 pairs.
    assert peer_costs.cost(spec, pi.sizes("llama", False), 1, 4, 10).flops == 2 * (
        4 * 1_034_420_224 + 22 * 2 * 2048 * 50)


def test_the_floor_is_the_longer_of_compute_and_memory():
    c = peer_costs.Cost(flops=2e9, bytes=1e9)
    fast_compute = peer_costs.Limits(fma_peak_gflops=200.0, triad_gbytes_s=50.0)
    assert c.floor_s(fast_compute) == pytest.approx(0.02)  # memory: 1 GB at 50 GB/s
    assert c.bound(fast_compute) == "memory"
    slow_compute = peer_costs.Limits(fma_peak_gflops=20.0, triad_gbytes_s=50.0)
    assert c.floor_s(slow_compute) == pytest.approx(0.1)  # compute: 2 GFLOP at 20 GFLOP/s
    assert c.bound(slow_compute) == "compute"


def test_the_limits_are_the_best_figures_any_probe_caught(tmp_path):
    assert peer_costs.best_limits(peer_costs.load_probes(tmp_path)) is None
    (tmp_path / "probe-start.json").write_text('{"threads": 2, "fma_peak_gflops": 192.7, "triad_gbytes_s": 29.4}')
    (tmp_path / "probe-end.json").write_text('{"threads": 2, "fma_peak_gflops": 233.1, "triad_gbytes_s": 27.0}')
    (tmp_path / "ort-1x16-r0.json").write_text('{"engine": "ort"}')  # a run's result, not a probe
    probes = peer_costs.load_probes(tmp_path)
    assert sorted(probes) == ["end", "start"]
    assert peer_costs.best_limits(probes) == peer_costs.Limits(fma_peak_gflops=233.1, triad_gbytes_s=29.4)


def test_families_not_modelled_have_no_floor():
    assert cost("bart", 1, 8, tiny=True) is None
    assert cost("gptj", 1, 8, tiny=True) is None
