"""Expert parallel across nodes, per engine (perf.sharding, issue #10 ep-lead): the profile's
fixed cost per MoE layer and its decode cost per layer and token of the step."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.perf import parallel as par
from planner.perf import sharding as sh


def _frame(**extra) -> pd.DataFrame:
    # row 0: tp 4 x dp 4 = 16 GPUs, ep 16, 8-GPU nodes (spans); row 1: tp 4 x dp 2, ep 8 (one
    # node); row 2: as row 0 over pp 2 stages
    base = {
        "tp": [4.0, 4.0, 4.0],
        "dp_attention": [4.0, 2.0, 4.0],
        "ep": [16.0, 8.0, 16.0],
        "pp": [1.0, 1.0, 2.0],
        "scaleup_domain_gpus": [8.0, 8.0, 8.0],
    }
    return pd.DataFrame({**base, **extra})


def test_the_token_cost_is_layers_over_stages_times_tokens_times_the_constant(catalog):
    # MiniMax-M2.5, 62 MoE layers; 18 us a layer-token, 16 tokens in the step:
    # 62 x 18e-6 x 16 = 17.856 ms; in one node 0; over pp 2 stages 31 x 18e-6 x 16 = 8.928 ms
    df = _frame(eff_ep_cross_node_token_us=[18.0, 18.0, 18.0])
    got = sh.cross_node_tokens_s(catalog.model("minimax-m2.5"), df, np.array([16.0] * 3))
    assert list(got) == pytest.approx([17.856e-3, 0.0, 8.928e-3])
    dense = sh.cross_node_tokens_s(catalog.model("llama-3.1-70b"), df, np.array([16.0] * 3))
    assert list(dense) == [0.0, 0.0, 0.0]


def test_the_fixed_cost_is_the_profiles_and_the_calibrated_constant_without_one():
    assert list(sh.cross_node_layer_s(_frame(eff_ep_cross_node_layer_us=[50.0] * 3))) == (
        pytest.approx([50e-6] * 3)
    )
    assert list(sh.cross_node_layer_s(_frame())) == [par.EP_CROSS_NODE_LAYER_S] * 3
    assert list(sh.ep_spans_nodes(_frame())) == [True, False, True]


def test_without_the_token_column_no_token_cost_is_added(catalog):
    got = sh.cross_node_tokens_s(catalog.model("minimax-m2.5"), _frame(), np.array([16.0] * 3))
    assert list(got) == [0.0, 0.0, 0.0]


def test_the_shipped_profiles_keep_the_calibrated_layer_cost_unless_their_recipe_fits_it(
    catalog,
):
    from planner import calibration as cal

    for rid in ("trtllm", "sglang"):
        assert "ep_cross_node_layer_us" not in cal.RECIPES[rid].params
        eff = catalog.engine(rid).default
        assert eff.ep_cross_node_layer_us == pytest.approx(par.EP_CROSS_NODE_LAYER_S * 1e6)
        assert eff.ep_cross_node_token_us == 0.0
    assert {"ep_cross_node_layer_us", "ep_cross_node_token_us"} <= set(cal.RECIPES["vllm"].params)
