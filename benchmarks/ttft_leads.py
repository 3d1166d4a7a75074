"""TTFT leads of issue #10, each refitted and scored in sample before it is built into the model.

A lead replaces how the closed-loop (aic) rows' steady-state TTFT is predicted
(`planner.calibration.prediction.closed_loop_ms`), the recipe is refitted on all its rows
(one start) and the in-sample median / p90 absolute errors are printed. Leads:

* base: the shipped model (open-loop M/D/1 wait behind the other b - 1 prefills);
* mixstep: a mixing engine's (vLLM, TensorRT-LLM) first token comes at the end of a step
  that also carries the running batch's decode, so TTFT adds that step's non-weight part
  (KV read, attention, all-reduces, per-sequence cost: `tpot_step - t_weights`);
* detwait: the deterministic closed loop (machine-repairman with fixed service and think
  times): no wait for other prefills until b prefills outlast one request's decode,
  wait = max(0, b t_share - t_share - (O - 1) TPOT).

    python benchmarks/ttft_leads.py base trtllm
    python benchmarks/ttft_leads.py mixstep vllm
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import accuracy  # noqa: E402

from planner import calibration as cal  # noqa: E402
from planner.calibration import prediction as pr  # noqa: E402
from planner.inputs.catalog import load_catalog  # noqa: E402

_SHIPPED = pr.closed_loop_ms


def _mixstep(grid, core):
    """The shipped steady state plus the decode share of the step carrying the prefill."""
    ttft, tpot, thr = _SHIPPED(grid, core)
    extra = np.asarray(core["tpot_step_ms"], float) - np.asarray(core["t_weights_ms"], float)
    return ttft + pr._mixes(grid) * extra, tpot, thr


def _detwait(grid, core):
    """The steady state with the deterministic closed-loop wait instead of M/D/1."""
    b = pr._col(grid, "batch")
    share = np.asarray(core["prefill_share_ms"], dtype=float)
    tpot = np.asarray(core["tpot_ms"], dtype=float)
    think = (pr._col(grid, "output_len") - 1.0) * tpot
    wait = np.maximum(b * share - share - think, 0.0)
    ttft = np.asarray(core["ttft_unloaded_ms"], dtype=float) + wait + pr._slot_wait_ms(grid, core)
    rate = np.asarray(core["requests_per_s"], dtype=float)
    return ttft, tpot, rate * pr._col(grid, "output_len")


def install(lead: str) -> None:
    """Swap the closed-loop steady state for `lead`'s."""
    if lead == "mixstep":
        pr._CORE_COLUMNS = (*pr._CORE_COLUMNS, "t_weights_ms")
        pr.closed_loop_ms = _mixstep
    elif lead == "detwait":
        pr.closed_loop_ms = _detwait
    elif lead != "base":
        raise SystemExit(f"unknown lead {lead!r}: base, mixstep, detwait")


def main(argv: list[str]) -> int:
    """Refit the recipe under the lead and print its in-sample errors."""
    lead, engine = argv
    install(lead)
    catalog = load_catalog()
    rows = accuracy.load(catalog)
    start = time.time()
    prof, _ = cal.recipes.fit_recipe(rows, catalog, cal.RECIPES[engine], n_starts=1)
    d = prof.default
    print(
        f"{lead} {engine}: fit {time.time() - start:.0f} s, request_overhead_ms "
        f"{d.request_overhead_ms:.1f}, benchmark_wave_share {d.benchmark_wave_share:.3f}"
    )
    profiles = accuracy.profiles(catalog)
    profiles[engine] = prof
    used = cal.usable(rows)
    pred = cal.predict(used[used["engine"] == engine], catalog, profiles)
    for metric, (n, med, p90, _) in sorted(accuracy.errors(pred).items()):
        print(f"  {metric}: median {med:.1f}% p90 {p90:.1f}% (n {n})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
