"""One evaluated TensorRT-LLM row of Llama-3.1-8B bf16 on an H100 SXM with chosen efficiency
constants (no family overrides), for the tests that pin one prefill term by switching it."""

from __future__ import annotations

import pandas as pd

from planner.perf.candidates import GridSpec, Price, build_grid
from planner.perf.evaluate import evaluate


def llama8b_trtllm_row(catalog, tp: int, input_len: int, batch: int, **constants) -> pd.Series:
    """The evaluated row at `tp`, `input_len` in / 256 out and `batch`, TensorRT-LLM's default
    constants updated with `constants`."""
    engine = catalog.engine("trtllm")
    eff = engine.default.model_copy(update=constants)
    engine = engine.model_copy(update={"default": eff, "families": {}})
    gpu, quant, model = (
        catalog.gpu("h100-sxm"),
        catalog.quants["bf16"],
        catalog.model("llama-3.1-8b"),
    )
    spec = GridSpec(
        gpus=[gpu], quants=[quant], tps=[tp], batches=[batch], shapes=[(input_len, 256)],
        prices={gpu.id: Price(2.0, "test")},
    )  # fmt: skip
    grid, rejected = build_grid(model, spec, engine)
    assert not grid.empty, rejected
    return evaluate(model, grid).iloc[0]
