"""MoE prefill leads of issue #10, each scored in sample on the shipped profiles (no refit).

Each lead switches the MoE prefill terms of `planner.perf.moe_prefill` (and MLA's prefill
attention FLOPs in `planner.perf.evaluate`) on or off and predicts every usable aic row;
the table gives, per engine and for MoE and dense rows apart, the median log(pred / meas) of
TTFT (negative: predicted fast) and the median absolute log errors of TTFT, TPOT and
throughput, then the MoE TTFT median per (model, GPU, quant). Dense rows must not move.

* none: no MoE prefill term, MLA attention as 4 h d_h (main before #10's MoE work);
* pad: grouped-GEMM tile padding only;
* act: the routed experts' activation traffic only;
* shipped: both, with MLA prefill attention at 2 h (d_qk + d_v) (what is built);
* shipped-4hd: both, MLA attention as 4 h d_h.

    python benchmarks/moe_prefill_leads.py               # every lead
    python benchmarks/moe_prefill_leads.py none shipped
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import residuals  # noqa: E402

from planner.perf import evaluate as ev  # noqa: E402
from planner.perf import moe_prefill as moe  # noqa: E402

LEADS = ("none", "pad", "act", "shipped", "shipped-4hd")
_PAIR = ev.attention_pair_flops
_BLOCK = moe.BLOCK_M


def install(lead: str) -> None:
    """Set the MoE prefill switches for `lead`."""
    moe.BLOCK_M = 0 if lead in ("none", "act") else _BLOCK
    moe.ACTIVATION_TRAFFIC = lead not in ("none", "pad")
    four = lead in ("none", "shipped-4hd")
    ev.attention_pair_flops = (lambda m: (4.0, m.head_dim)) if four else _PAIR  # type: ignore[assignment]


def summary(pred: pd.DataFrame) -> pd.DataFrame:
    """Per engine and MoE/dense: n, median TTFT log error, median |log| of each metric."""
    thr = np.log(pred["pred_throughput"] / pred["meas_throughput"]).abs()
    part = pred.assign(a_ttft=pred["r_ttft"].abs(), a_tpot=pred["r_tpot"].abs(), a_thr=thr)
    return (
        part.groupby(["engine", "moe"])
        .agg(
            n=("r_ttft", "size"),
            ttft=("r_ttft", "median"),
            ttft_abs=("a_ttft", "median"),
            tpot_abs=("a_tpot", "median"),
            thr_abs=("a_thr", "median"),
        )
        .round(3)
    )


def main(argv: list[str] | None = None) -> int:
    """Print the summary of every lead asked for, then the MoE TTFT medians side by side."""
    leads = tuple(argv if argv else sys.argv[1:]) or LEADS
    pd.set_option("display.width", 200)
    tables, moe_cells = {}, {}
    for lead in leads:
        install(lead)
        pred = residuals.residual_rows(("trtllm", "vllm", "sglang"))
        tables[lead] = summary(pred)
        rows = pred[pred["moe"] == "moe"]
        keys = ["engine", "model_id", "gpu_id", "quant_id"]
        moe_cells[lead] = rows.groupby(keys)["r_ttft"].median().round(2)
    install("shipped")
    print("log(pred / meas) medians, in sample on the shipped profiles\n")
    print(pd.concat(tables, axis=1).to_string())
    print("\nMoE TTFT median log error per (engine, model, GPU, quant)\n")
    print(pd.concat(moe_cells, axis=1).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
