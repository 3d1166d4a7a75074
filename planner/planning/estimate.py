"""One deployment estimated: `planner estimate` as a library call."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from planner.errors import InputError, shorten
from planner.inputs.catalog import Catalog
from planner.perf.candidates import GridSpec, InvalidCombination, Price, build_grid
from planner.perf.evaluate import evaluate
from planner.schema import limits
from planner.schema.bounded import Range
from planner.schema.hardware import Gpu
from planner.schema.model import Model
from planner.schema.scenario import Pricing


@dataclass(frozen=True)
class EstimateRequest:
    """What to estimate; ids are checked against the catalog."""

    model: str
    gpu: str
    tp: int
    quant: str
    batch: int
    input_len: int
    output_len: int
    kv_dtype: str | None = None
    ideal: bool = False
    engine: str = "vllm"
    utilisation: float = 0.8
    statistic: str = "mean"
    price_usd_per_gpu_hour: float | None = None


_OPTION_RANGES = {
    "tp": Range(0, limits.MAX_TP, low_open=True, whole=True),
    "batch": Range(0, limits.MAX_BATCH, low_open=True, unit="sequences", whole=True),
    "input_len": Range(0, limits.MAX_TOKENS, low_open=True, unit="tokens", whole=True),
    "output_len": Range(0, limits.MAX_TOKENS, low_open=True, unit="tokens", whole=True),
    "utilisation": Range(0, 1, low_open=True, high_open=True),
    "price_usd_per_gpu_hour": Range(
        0, limits.MAX_USD_PER_GPU_HOUR, low_open=True, unit="USD per GPU-hour"
    ),
}
_OPTION_NAMES = {"utilisation": "--utilization", "price_usd_per_gpu_hour": "--price"}


def _check_ranges(req: EstimateRequest) -> None:
    """Every number of the request finite and inside its documented range (README, Limits):
    a price of -1, nan or inf and a batch beyond int64 used to be estimated."""
    for name, bounds in _OPTION_RANGES.items():
        value = getattr(req, name)
        if value is None:
            continue
        try:
            bounds.check(value)
        except ValueError as exc:
            option = _OPTION_NAMES.get(name, "--" + name.replace("_", "-"))
            raise InputError(f"{option}: {exc} (got {shorten(value)})") from None


def _check_context(req: EstimateRequest, model: Model) -> None:
    """A request longer than the model's context window cannot be served."""
    window = model.max_position_embeddings
    if req.input_len + req.output_len > window:
        raise InputError(
            f"--input-len + --output-len = {req.input_len + req.output_len:,} tokens, more "
            f"than the context window of {model.id} ({window:,} tokens, max_position_embeddings)"
        )


def _price(gpu: Gpu, override: float | None) -> Price | None:
    if override is not None:
        return Price(override, "command line", "--price", "given", assumption=True)
    row = gpu.price(Pricing().tier)
    return Price(row.usd_per_gpu_hour, row.provider, row.source, row.as_of) if row else None


def estimate(req: EstimateRequest, catalog: Catalog) -> pd.Series:
    """Every metric of one (model, gpu, tp, quant, kv, batch, shape), as one row."""
    _check_ranges(req)
    model, gpu = catalog.model(req.model), catalog.gpu(req.gpu)
    _check_context(req, model)
    quant, engine = catalog.quant(req.quant), catalog.engine(req.engine)
    kv = req.kv_dtype or quant.default_kv_dtype
    price = _price(gpu, req.price_usd_per_gpu_hour)
    spec = GridSpec(
        gpus=[gpu],
        quants=[quant],
        tps=[req.tp],
        kv_dtypes=[kv],
        batches=[req.batch],
        shapes=[(req.input_len, req.output_len)],
        prices={gpu.id: price} if price else {},
    )
    grid, rejected = build_grid(model, spec, engine, ideal=req.ideal)
    if grid.empty:
        reason = rejected["reason"].iloc[0] if not rejected.empty else "unknown reason"
        raise InputError(f"impossible combination: {reason}")
    row = evaluate(model, grid, req.utilisation, req.statistic).iloc[0]
    row["model"] = model.id
    row["engine"] = "ideal" if req.ideal else engine.id
    return row


__all__ = ["EstimateRequest", "InvalidCombination", "estimate"]
