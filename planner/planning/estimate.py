"""One deployment estimated: `planner estimate` as a library call."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from planner.errors import InputError
from planner.inputs.catalog import Catalog
from planner.perf.candidates import GridSpec, InvalidCombination, Price, build_grid
from planner.perf.evaluate import evaluate
from planner.schema.hardware import Gpu
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


def _check_positive(req: EstimateRequest) -> None:
    for name in ("tp", "batch", "input_len", "output_len"):
        value = getattr(req, name)
        if value <= 0:
            raise InputError(f"--{name.replace('_', '-')}: must be a positive integer, got {value}")
    if not 0 < req.utilisation < 1:
        raise InputError(
            f"--utilization: must be between 0 and 1 (exclusive), got {req.utilisation}"
        )


def _price(gpu: Gpu, override: float | None) -> Price | None:
    if override is not None:
        return Price(override, "command line", "--price", "given", assumption=True)
    row = gpu.price(Pricing().tier)
    return Price(row.usd_per_gpu_hour, row.provider, row.source, row.as_of) if row else None


def estimate(req: EstimateRequest, catalog: Catalog) -> pd.Series:
    """Every metric of one (model, gpu, tp, quant, kv, batch, shape), as one row."""
    _check_positive(req)
    model, gpu = catalog.model(req.model), catalog.gpu(req.gpu)
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
