"""The models catalogued for the aic rows (issue #10): Kimi-K2.5 and MiniMax-M2.5."""

from __future__ import annotations

import pytest

from planner.inputs.catalog import load_catalog


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_kimi_k25_is_deepseek_v3_shaped_and_near_its_stated_size(catalog):
    m = catalog.model("kimi-k2.5")
    assert m.mla is not None and m.moe is not None
    assert (m.moe.n_routed_experts, m.moe.num_experts_per_tok, m.n_dense_layers) == (384, 8, 1)
    assert m.kv_elements_per_token_per_layer == 512 + 64  # MLA latent + shared rope key
    assert m.params_total == pytest.approx(1.0e12, rel=0.03)  # "1T total"
    assert m.params_active == pytest.approx(32e9, rel=0.03)  # "32B activated"


def test_minimax_m25_is_gqa_moe_near_its_stated_size(catalog):
    m = catalog.model("minimax-m2.5")
    assert m.mla is None and m.moe is not None and m.n_dense_layers == 0
    # GQA: 8 KV heads of 128, K and V
    assert m.kv_elements_per_token_per_layer == 2 * 8 * 128
    assert m.params_total == pytest.approx(230e9, rel=0.01)
    # "10B active" leaves out the 0.61B input embedding table (as gpt-oss's counts do)
    assert m.params_active - m.params_embedding == pytest.approx(10e9, rel=0.05)
    experts = 62 * 8 * 3 * 3072 * 1536  # 62 MoE layers x top-8 x gated 3072x1536 experts
    assert m.n_moe_layers * 8 * m.params_per_expert == experts
