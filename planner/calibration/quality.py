"""Rule-based data-quality checks of closed-loop measurement series (issue #10).

A row is never dropped because the model misses it: only by a rule about the measurements
themselves. The one rule so far: in a closed loop, more clients in flight can only lengthen
(or at best keep) the time between a request's output tokens, because every decode step
carries at least as many sequences. So within one series (same source, engine, model, GPU,
quant, TP and ISL/OSL, and layout where the set has one) measured TPOT must not fall as
concurrency rises by more than `TPOT_DROP_TOLERANCE` (measurement noise and a scheduler's
batching of prefills allow a few per cent; across the aic set the largest fall outside the
flagged series is 3%). A series that breaks the rule is inconsistent as a whole (which of its
rows is wrong cannot be told), so every row of it is skipped with `NOT_MONOTONE_REASON`.

A second rule (t10v): a row repeating another row's configuration with the very same measured
TTFT and TPOT (to every published digit) is one measurement listed twice (the aic set lists
some vLLM runs under two or three db-dump ids); the later copies are skipped with
`DUPLICATE_REASON` so a campaign's weight in the fit is not doubled.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TPOT_DROP_TOLERANCE = 0.2  # a later (higher-concurrency) TPOT below 0.8 x an earlier one
SERIES_KEY: tuple[str, ...] = (
    "source_key",
    "engine",
    "model_id",
    "gpu_id",
    "quant_id",
    "tp",
    "input_len",
    "output_len",
)
LAYOUT_KEY: tuple[str, ...] = ("pp", "ep", "dp_attention")  # issue #10: when a set has them
NOT_MONOTONE_REASON = (
    "series not monotone: measured TPOT falls by more than 20% as concurrency rises within "
    "its series (same source, model, GPU, quant, tp, ISL/OSL), so the series is inconsistent"
)


def largest_tpot_fall(batch: np.ndarray, tpot: np.ndarray) -> float:
    """The largest relative fall of TPOT as concurrency rises: 1 - min over rows of
    TPOT / (the largest TPOT at a lower or equal concurrency before it); 0 when monotone."""
    order = np.lexsort((tpot, batch))  # by concurrency, equal concurrency by TPOT
    t = np.asarray(tpot, dtype=float)[order]
    if len(t) < 2:
        return 0.0
    earlier_max = np.maximum.accumulate(t)[:-1]
    return float(max(0.0, 1.0 - (t[1:] / earlier_max).min()))


def not_monotone_series(rows: pd.DataFrame, tolerance: float = TPOT_DROP_TOLERANCE) -> pd.Index:
    """Index labels of the closed-loop rows (no other skip reason, TPOT measured) whose
    series' TPOT falls by more than `tolerance` as concurrency rises."""
    part = rows[
        (rows["scenario_kind"] == "closed_loop")
        & (rows["skip_reason"] == "")
        & rows["meas_tpot"].notna()
    ]
    flagged: list = []
    key = [*SERIES_KEY, *(c for c in LAYOUT_KEY if c in rows)]  # a layout is its own series
    for _, series in part.groupby(key, dropna=False):
        fall = largest_tpot_fall(series["batch"].to_numpy(), series["meas_tpot"].to_numpy())
        if fall > tolerance:
            flagged.extend(series.index)
    return pd.Index(flagged)


def skip_inconsistent_series(rows: pd.DataFrame) -> pd.DataFrame:
    """`rows` with NOT_MONOTONE_REASON as the skip reason of every row of a series whose TPOT
    is not monotone in concurrency (a copy; other rows unchanged)."""
    out = rows.copy()
    out.loc[not_monotone_series(out), "skip_reason"] = NOT_MONOTONE_REASON
    return out


# ---- issue #10 (t10v): one measurement listed twice ------------------------------------
DUPLICATE_KEY: tuple[str, ...] = (
    "engine",
    "model_id",
    "gpu_id",
    "quant_id",
    "tp",
    "batch",
    "input_len",
    "output_len",
    "meas_ttft",
    "meas_tpot",
)
DUPLICATE_REASON = (
    "duplicate: the same configuration with the very same measured TTFT and TPOT as an "
    "earlier row (one measurement listed twice), counted once"
)


def duplicate_measurements(rows: pd.DataFrame) -> pd.Index:
    """Index labels of usable rows (TTFT and TPOT measured) that repeat an earlier usable
    row's configuration (layout included where the set has one) and both measurements."""
    part = rows[(rows["skip_reason"] == "") & rows["meas_tpot"].notna() & rows["meas_ttft"].notna()]
    key = [*DUPLICATE_KEY, *(c for c in LAYOUT_KEY if c in rows)]
    return part.index[part.duplicated(key, keep="first")]


def skip_duplicates(rows: pd.DataFrame) -> pd.DataFrame:
    """`rows` with DUPLICATE_REASON on every repeat of a measurement (a copy)."""
    out = rows.copy()
    out.loc[duplicate_measurements(out), "skip_reason"] = DUPLICATE_REASON
    return out
