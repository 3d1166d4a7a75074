"""Range checks of measurement inputs: every number a CSV cell or a vLLM result gives.

A batch of 0 or -4, a negative TPOT, a fractional tensor-parallel degree or a concurrency of
0.5 used to be mapped, predicted and even fitted; now each is refused naming the file, the
line or result, the column or key, the allowed range and the value (cut to a sane length).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from planner.errors import InputError, shorten
from planner.schema import limits
from planner.schema.bounded import Range

_WHOLE_TP = Range(0, limits.MAX_TP, low_open=True, whole=True)
_BATCH = Range(0, limits.MAX_BATCH, low_open=True, unit="sequences", whole=True)
_TOKENS = Range(0, limits.MAX_TOKENS, low_open=True, unit="tokens")
_MS = Range(0, limits.MAX_METRIC_MS, low_open=True, unit="ms")
_TOK_S = Range(0, limits.MAX_THROUGHPUT, low_open=True, unit="tokens/s")

# CSV column -> the range of a non-empty cell
CSV_RANGES: dict[str, Range] = {
    "num_gpus": Range(0, limits.MAX_TP, low_open=True, unit="GPUs", whole=True),
    "tp": _WHOLE_TP,
    "pp": _WHOLE_TP,
    "batch_size": _BATCH,
    "concurrency": _BATCH,
    "input_len": _TOKENS,
    "output_len": _TOKENS,
    "tpot_itl_ms": _MS,
    "ttft_ms": _MS,
    "e2e_latency_ms": _MS,
    "output_tok_s_per_user": _TOK_S,
    "total_output_tok_s": _TOK_S,
    "output_tok_s_per_gpu": _TOK_S,
    "prefill_tok_s": _TOK_S,
    "other_throughput_tok_s": _TOK_S,
}

# vLLM result key -> its range; a metric of 0 means "not measured" (one output token)
_COUNT = Range(0, 1e12, whole=True)
VLLM_RANGES: dict[str, Range] = {
    "max_concurrency": _BATCH,
    "num_prompts": _COUNT,
    "completed": _COUNT,
    "total_input_tokens": _COUNT,
    "total_output_tokens": _COUNT,
    "mean_tpot_ms": Range(0, limits.MAX_METRIC_MS, unit="ms"),
    "median_tpot_ms": Range(0, limits.MAX_METRIC_MS, unit="ms"),
    "mean_ttft_ms": Range(0, limits.MAX_METRIC_MS, unit="ms"),
    "median_ttft_ms": Range(0, limits.MAX_METRIC_MS, unit="ms"),
    "mean_e2el_ms": Range(0, limits.MAX_METRIC_MS, unit="ms"),
    "output_throughput": Range(0, limits.MAX_THROUGHPUT, unit="tokens/s"),
    "request_throughput": Range(0, limits.MAX_THROUGHPUT, unit="requests/s"),
}


def _bad_cells(cells: pd.Series, bounds: Range) -> pd.Series:
    """True where a cell is a number (nan and inf included) outside `bounds`; free text
    (published tables say 'max num seqs 3200') is left to the mapping, which skips it."""
    text = cells.astype(str).str.strip()
    value = pd.to_numeric(text.where(text != ""), errors="coerce").astype(float)
    numeric = value.notna() | text.str.lower().isin(["nan", "+nan", "-nan"])
    finite = np.isfinite(value)
    low_ok = value > bounds.low if bounds.low_open else value >= bounds.low
    high_ok = value < bounds.high if bounds.high_open else value <= bounds.high
    whole_ok = ~finite | (np.mod(value.fillna(0.0), 1.0) == 0.0) if bounds.whole else True
    return numeric & ~(finite & low_ok & high_ok & whole_ok)


def check_csv_cells(raw: pd.DataFrame, path: Path) -> None:
    """Refuse the first number of a numeric column outside its range (file, line, column)."""
    for column, bounds in CSV_RANGES.items():
        if column not in raw.columns:
            continue
        bad = _bad_cells(raw[column], bounds)
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(
                f"{path}: line {row + 2}, column {column}: must be {bounds.text()} or empty "
                f"(got {shorten(raw[column].iloc[row])})"
            )


def check_row_count(rows: int, where: str) -> None:
    """Refuse more rows than MAX_MEASUREMENT_ROWS (validate and calibrate are per row)."""
    if rows > limits.MAX_MEASUREMENT_ROWS:
        raise InputError(
            f"{where}: {rows:,} measurement rows, more than the "
            f"{limits.MAX_MEASUREMENT_ROWS:,} planner validates or calibrates at once; split "
            "the input (README, Limits)"
        )


def check_vllm_values(doc: Mapping, where: str) -> None:
    """Refuse a vLLM result value outside its range (a null or absent key is not measured)."""
    for key, bounds in VLLM_RANGES.items():
        value = doc.get(key)
        if value is None:
            continue
        try:
            bounds.check(value)
        except ValueError as exc:
            raise InputError(f"{where}: {key}: {exc} (got {shorten(value)})") from None
    rate = doc.get("request_rate", "inf")
    if isinstance(rate, bool) or (isinstance(rate, int | float) and not rate > 0):
        raise InputError(
            f"{where}: request_rate: must be a number greater than 0 or 'inf' (got {shorten(rate)})"
        )
