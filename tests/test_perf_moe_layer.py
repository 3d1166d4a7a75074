"""The fixed decode cost per MoE layer (perf.evaluate.moe_layer_overhead_s, issue #10 t10v)."""

from __future__ import annotations

import pandas as pd
import pytest

from planner.perf.candidates import GridSpec, Price, build_grid
from planner.perf.evaluate import evaluate, moe_layer_overhead_s


def test_moe_layer_cost_is_layers_over_stages_times_the_constant(catalog):
    # MiniMax-M2.5: 62 MoE layers; 40 us a layer over pp 2 stages = 31 x 40 us = 1.24 ms
    df = pd.DataFrame({"pp": [1.0, 2.0], "eff_moe_layer_us": [40.0, 40.0]})
    got = moe_layer_overhead_s(catalog.model("minimax-m2.5"), df)
    assert list(got) == pytest.approx([62 * 40e-6, 31 * 40e-6])
    assert list(moe_layer_overhead_s(catalog.model("llama-3.1-8b"), df)) == [0.0, 0.0]


def _step(catalog, model_id: str, moe_layer_us: float) -> pd.Series:
    engine = catalog.engine("vllm")
    eff = engine.default.model_copy(update={"moe_layer_us": moe_layer_us})
    engine = engine.model_copy(update={"default": eff, "families": {}})
    gpu, quant, model = catalog.gpu("h200"), catalog.quants["fp8"], catalog.model(model_id)
    spec = GridSpec(
        gpus=[gpu], quants=[quant], tps=[8], batches=[4], shapes=[(1024, 1024)],
        prices={gpu.id: Price(2.0, "test")},
    )  # fmt: skip
    grid, rejected = build_grid(model, spec, engine)
    assert not grid.empty, rejected
    return evaluate(model, grid).iloc[0]


def test_the_decode_step_grows_by_the_moe_layers_cost_and_dense_models_do_not(catalog):
    base, more = _step(catalog, "minimax-m2.5", 0.0), _step(catalog, "minimax-m2.5", 40.0)
    assert more.tpot_step_ms - base.tpot_step_ms == pytest.approx(62 * 0.040, rel=1e-5)
    assert more.t_overhead_ms - base.t_overhead_ms == pytest.approx(62 * 0.040, rel=1e-5)
    dense0, dense1 = _step(catalog, "llama-3.1-70b", 0.0), _step(catalog, "llama-3.1-70b", 40.0)
    assert dense1.tpot_step_ms == dense0.tpot_step_ms
