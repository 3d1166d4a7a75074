"""Is TensorRT-LLM's prefill-share error a GEMM-shape effect? (issue #10, t10g)

The prefill work a request decodes through (`tpot_terms.split_series`: the slope of TPOT
against 1 / (O - 1) within a series) is where TensorRT-LLM's per-model TPOT error sits. If
small per-GPU GEMMs (high tp, short K) ran below the fitted prefill efficiency, the error
would depend on the model and tp (the GEMM shapes) and not on the prompt length, which
leaves N and K alone (a busy replica's passes hold up to 8,192 tokens whatever the prompt).
This prints, per model, tp and ISL, the median r_pf = log(predicted / measured slope) with
the shipped profile and with its short-K term off (`gemm_k0_ridge` 0, the same constants
otherwise), next to the FLOP-weighted K / (K + k0) of the model's linear layers at that tp
(`perf.gemm_shape`, H100 SXM ridge at the checkpoint's compute dtype).

    python benchmarks/prefill_shape.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import accuracy  # noqa: E402
import residuals  # noqa: E402
import tpot_terms  # noqa: E402

from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.perf import gemm_shape as gs  # noqa: E402
from planner.schema.model import Model  # noqa: E402

KEYS = ["model_id", "tp", "input_len"]
H100_BW = 3.35e12
H100_PEAK = {"bf16": 989.4e12, "fp8": 1978.9e12}  # dense, catalogs/gpus/h100-sxm.yaml


def layer_shapes(model: Model, tp: int) -> list[tuple[float, float]]:
    """(FLOPs per token, per-GPU K) of each linear layer of one layer, attention and FFN (the
    routed experts' f / tp for an MoE model at moe_tp = tp)."""
    d, h, hk, dh = (
        model.hidden_size,
        model.num_attention_heads,
        model.num_key_value_heads,
        model.head_dim,
    )
    shapes = [((h + 2 * hk) * dh * d / tp, d), (h * dh * d / tp, h * dh / tp)]
    if model.moe is None:
        f, k = model.intermediate_size, 1
    else:
        f, k = model.moe.moe_intermediate_size, model.moe.num_experts_per_tok
    shapes += [(k * 2 * f * d / tp, d), (k * f * d / tp, f / tp)]
    return shapes


def weighted_factor(model: Model, tp: int, quant: str) -> float:
    """FLOP-weighted harmonic K / (K + k0) of a layer's GEMMs: time at eta_pf / time with
    the short-K term."""
    ridge = H100_PEAK[quant] / H100_BW
    pairs = layer_shapes(model, tp)
    flops = np.array([p[0] for p in pairs])
    eff = gs.shape_efficiency(np.array([p[1] for p in pairs]), ridge, gs.GEMM_K0_RIDGE)
    return float(flops.sum() / (flops / eff).sum())


def r_pf_table(off: bool) -> pd.DataFrame:
    """Median r_pf per model, tp and ISL, with the short-K term as shipped or off."""
    catalog = load_catalog()
    if off:
        shipped = accuracy.profiles(catalog)
        trt = shipped["trtllm"]
        fams = {k: v.model_copy(update={"gemm_k0_ridge": 0.0}) for k, v in trt.families.items()}
        prof = trt.model_copy(
            update={
                "default": trt.default.model_copy(update={"gemm_k0_ridge": 0.0}),
                "families": fams,
            }
        )
        with mock.patch.object(accuracy, "profiles", lambda c: {**shipped, "trtllm": prof}):
            pred = residuals.residual_rows(("trtllm",))
    else:
        pred = residuals.residual_rows(("trtllm",))
    frame = tpot_terms.split_series(pred)
    return frame.groupby(KEYS)["r_pf"].median()


def main() -> int:
    """Print r_pf by model, tp and ISL, shipped and with the short-K term off."""
    pd.set_option("display.width", 160)
    catalog = load_catalog()
    table = pd.DataFrame({"r_pf": r_pf_table(False), "r_pf_k0_off": r_pf_table(True)})
    quant = {"llama-3.1-8b": "bf16", "qwen3-32b": "fp8", "qwen3-235b-a22b": "fp8"}
    table = table[table.index.get_level_values(0).isin(list(quant))]
    table["k_factor"] = [
        weighted_factor(catalog.model(m), int(tp), quant[m]) for m, tp, _ in table.index
    ]
    print("trtllm: median r_pf = log(predicted / measured prefill slope) per model, tp, ISL;")
    print("k_factor = FLOP-weighted K / (K + k0) of the layer's GEMMs at that tp (H100)")
    print(table.round(2).to_string())
    spread = table.groupby(level=[0, 1])["r_pf"].agg(lambda s: s.max() - s.min())
    print("\nspread of r_pf across ISL at a fixed GEMM shape (model, tp):")
    print(spread.round(2).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
