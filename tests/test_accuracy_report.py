"""benchmarks/accuracy.py's per-group view of a fold (`--by`): counts and medians pinned to
hand-computed values on a three-row frame."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def accuracy():
    spec = importlib.util.spec_from_file_location("accuracy", ROOT / "benchmarks" / "accuracy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_by_group_gives_each_groups_count_and_absolute_and_signed_medians(accuracy):
    pred = pd.DataFrame(
        {
            "model_id": ["a", "a", "b"],
            "meas_tpot": [10.0, 10.0, 20.0],
            "pred_tpot": [12.0, 7.0, 15.0],  # +20%, -30%; -25%
            "meas_ttft": [100.0, 100.0, 100.0],
            "pred_ttft": [150.0, 110.0, np.nan],  # +50%, +10%; none
            "meas_throughput": [1.0, 1.0, 1.0],
            "pred_throughput": [1.0, 1.0, 2.0],
        }
    )
    table = accuracy.by_group(pred, ["model_id"])
    a, b = table.loc["a"], table.loc["b"]
    assert a["n"] == 2 and b["n"] == 1
    assert a["tpot |%|"] == pytest.approx(25.0) and a["tpot signed"] == pytest.approx(-5.0)
    assert a["ttft |%|"] == pytest.approx(30.0) and a["ttft signed"] == pytest.approx(30.0)
    assert b["tpot signed"] == pytest.approx(-25.0) and np.isnan(b["ttft |%|"])
    assert b["throughput signed"] == pytest.approx(100.0)
