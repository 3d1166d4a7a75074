"""The rule-based data-quality filter of closed-loop series (calibration.quality, issue #10)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner import calibration as cal
from planner.calibration import quality as q


def test_largest_fall_of_the_gb200_series_is_hand_computed():
    # aic-trtllm-1.3.0rc1, Qwen3-32B bf16 tp2 on GB200, 4000/1000: the largest TPOT before
    # C = 32 is 133.318995 ms (C = 16); 1 - 71.823623 / 133.318995 = 0.46127
    batch = np.array([1, 1, 2, 4, 8, 16, 32])
    tpot = np.array([8.180291, 21.202069, 50.74292, 94.095871, 103.218022, 133.318995, 71.823623])
    assert q.largest_tpot_fall(batch, tpot) == pytest.approx(0.46127, abs=1e-5)


def test_monotone_series_and_equal_concurrency_do_not_fall():
    assert q.largest_tpot_fall(np.array([4, 8, 16]), np.array([10.0, 12.0, 15.0])) == 0.0
    # duplicates at one concurrency are ordered by TPOT: no fall between them
    assert q.largest_tpot_fall(np.array([8, 8]), np.array([30.0, 10.0])) == 0.0
    # 20 -> 17 ms is a 15% fall: within the 20% tolerance
    assert q.largest_tpot_fall(np.array([4, 8]), np.array([20.0, 17.0])) == pytest.approx(0.15)


def _series(tpots, source="s1", batches=None):
    n = len(tpots)
    return pd.DataFrame(
        {
            "source_key": source,
            "engine": "trtllm",
            "model_id": "qwen3-32b",
            "gpu_id": "gb200",
            "quant_id": "bf16",
            "tp": 2,
            "input_len": 4000.0,
            "output_len": 1000.0,
            "scenario_kind": "closed_loop",
            "skip_reason": "",
            "batch": batches if batches is not None else [2.0**i for i in range(n)],
            "meas_tpot": tpots,
        }
    )


def test_a_falling_series_is_skipped_whole_and_others_are_kept():
    bad = _series([10.0, 30.0, 20.0])  # 30 -> 20 ms: a 33% fall
    good = _series([10.0, 11.0, 12.0], source="s2")
    other = _series([10.0, 30.0, 20.0], source="s3").assign(skip_reason="expert parallel")
    out = q.skip_inconsistent_series(pd.concat([bad, good, other], ignore_index=True))
    assert (out.loc[:2, "skip_reason"] == q.NOT_MONOTONE_REASON).all()
    assert (out.loc[3:5, "skip_reason"] == "").all()
    assert (out.loc[6:, "skip_reason"] == "expert parallel").all()  # not re-flagged


def test_the_aic_set_loses_only_the_two_gb200_series():
    aic = cal.load_aic_measurements()
    flagged = aic[aic["skip_reason"] == q.NOT_MONOTONE_REASON]
    assert len(flagged) == 15
    assert set(flagged["source_key"]) == {"aic-trtllm-1.3.0rc1"}
    assert set(flagged["gpu_id"]) == {"gb200"} and set(flagged["input_len"]) == {2000.0, 4000.0}
