"""The candidate grid: gpu x tp x quant x kv dtype x batch x request shape, as one DataFrame.

Validity (does this quant run on this GPU, does tp fit the scale-up domain and divide the
heads) is decided per (gpu, tp, quant, kv) here; the batch and shape axes are then crossed
with numpy so the per-candidate work stays vectorised.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from planner.perf import collectives, columns, engine_memory
from planner.perf.kv_link import InvalidKvLink, check_kv_link, role_links
from planner.perf.layout import (
    LAYOUT_COLUMNS,
    InvalidLayout,
    check_layout,
    gpus_per_replica,
    layout_columns,
    layouts,
)
from planner.perf.speculative import MODES, OFF, SpecOption
from planner.perf.table import Coded, Table
from planner.schema.engine import Efficiency, EngineProfile
from planner.schema.hardware import Gpu
from planner.schema.model import Model
from planner.schema.quant import Quant

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_BATCHES: tuple[int, ...] = (
    1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024,
)  # fmt: skip
DEFAULT_TPS: tuple[int, ...] = (1, 2, 4, 8)
ROLES: tuple[str, ...] = ("aggregated", "prefill", "decode")  # disaggregated serving, #11

IDEAL = Efficiency(
    eta_mem=1.0,
    eta_compute_decode=1.0,
    eta_compute_prefill=1.0,
    eta_kv=1.0,
    allreduce_latency_us=0.0,
    step_overhead_ms=0.0,
    prefill_overhead_ms=0.0,
    mem_util=1.0,
    runtime_reserve_gb=0.0,
    activations_in_budget=True,
)


class InvalidCombination(ValueError):
    """A (gpu, tp, quant, kv) that cannot run; the message says why."""


@dataclass(frozen=True)
class Price:
    """The price used for one GPU type."""

    usd_per_gpu_hour: float
    provider: str
    source: str = ""
    as_of: str = ""
    assumption: bool = False


@dataclass(frozen=True)
class GridSpec:
    """What to enumerate. Empty kv_dtypes means each quant's default KV dtype."""

    gpus: Sequence[Gpu]
    quants: Sequence[Quant]
    tps: Sequence[int] = DEFAULT_TPS
    kv_dtypes: Sequence[str] = ()
    batches: Sequence[int] = DEFAULT_BATCHES
    shapes: Sequence[tuple[int, int]] = ((1024, 256),)
    prices: dict[str, Price] = field(default_factory=dict)
    # issue #11: speculation settings crossed with the grid, and the prompt tokens cached
    speculative: Sequence[SpecOption] = (OFF,)
    prefix_cached_tokens: int = 0
    # disaggregated prefill/decode (issue #11): which serving roles to enumerate
    roles: Sequence[str] = ("aggregated",)
    # multi-node replicas, expert parallel, DP attention (issue #11 parts 1-2)
    pps: Sequence[int] = (1,)
    eps: Sequence[int] = (1,)
    dp_attentions: Sequence[int] = (1,)
    # the links a pool's KV may cross (issue #11, perf/kv_link.py)
    kv_links: Sequence[str] = ("scale-out",)


def compute_dtype_for(gpu: Gpu, quant: Quant) -> str:
    """The dtype the math runs at: the quant's first preference the GPU has a peak for."""
    if quant.gpus != "all" and gpu.id not in quant.gpus:
        raise InvalidCombination(
            f"{quant.id} does not run on {gpu.id}; it runs on: {', '.join(quant.gpus)}"
        )
    for dtype in quant.compute_dtypes:
        if dtype in gpu.dense_tflops:
            return dtype
    raise InvalidCombination(
        f"{quant.id} needs {' or '.join(quant.compute_dtypes)} math, which {gpu.id} lacks "
        f"(it has {', '.join(gpu.dense_tflops)})"
    )


def check_tp(model: Model, gpu: Gpu, tp: int) -> None:
    """tp must be positive, fit one scale-up domain and divide the attention heads."""
    if tp < 1:
        raise InvalidCombination(f"tp must be >= 1, got {tp}")
    if tp > gpu.scaleup_domain_gpus:
        raise InvalidCombination(
            f"tp {tp} exceeds the scale-up domain of {gpu.id} "
            f"({gpu.scaleup_domain_gpus} GPU(s) joined by {gpu.interconnect})"
        )
    if model.num_attention_heads % tp:
        raise InvalidCombination(
            f"tp {tp} does not divide the {model.num_attention_heads} attention heads of {model.id}"
        )


def check_kv(quant: Quant, kv_dtype: str) -> None:
    """The KV dtype must be one the quant scheme allows."""
    if kv_dtype not in quant.kv_dtypes:
        raise InvalidCombination(
            f"kv dtype {kv_dtype} is not allowed with {quant.id}; allowed: "
            f"{', '.join(quant.kv_dtypes)}"
        )


def check_role(gpu: Gpu, role: str, kv_link: str = "scale-out") -> None:
    """A prefill or decode pool sends or receives each request's KV cache over the scale-out
    link: a GPU without a sourced one cannot be a disaggregated pool (unless both pools sit
    in one scale-up domain, `kv_link` scale-up: perf/kv_link.py)."""
    if role not in ROLES:
        raise InvalidCombination(f"role {role} is not one of {', '.join(ROLES)}")
    if role != "aggregated" and kv_link != "scale-up" and gpu.scaleout_link_gb_per_s is None:
        raise InvalidCombination(
            f"{gpu.id} has no sourced scale-out link (scaleout_link_gb_per_s) in the catalog, "
            f"so its KV transfer time is unknown: it cannot be a {role} pool"
        )


def deployment_rows(
    model: Model, spec: GridSpec, engine: EngineProfile | None, ideal: bool
) -> tuple[list[dict], list[dict]]:
    """Valid (gpu, tp, quant, kv) combinations with their resolved constants, and the
    rejected ones with reasons."""
    ok: list[dict] = []
    rejected: list[dict] = []
    for gpu in spec.gpus:
        eff = IDEAL if ideal or engine is None else engine.for_gpu(gpu.family, gpu.memory_bytes)
        price = spec.prices.get(gpu.id)
        for quant in spec.quants:
            kvs = list(spec.kv_dtypes) or [default_kv_dtype(quant, engine, ideal)]
            for tp, layout in layouts(spec.tps, spec.pps, spec.eps, spec.dp_attentions):
                roles = role_links(spec.roles, spec.kv_links)  # issue #11: (role, kv_link)
                for kv, (role, link) in itertools.product(kvs, list(roles)):
                    key = {"gpu": gpu.id, "tp": tp, "quant": quant.id, "kv_dtype": kv}
                    try:
                        check_tp(model, gpu, tp)
                        check_layout(model, gpu, tp, *layout)
                        check_kv(quant, kv)
                        check_role(gpu, role, link)
                        check_kv_link(gpu, role, link, gpus_per_replica(tp, layout[0], layout[2]))
                        dtype = compute_dtype_for(gpu, quant)
                    except (InvalidCombination, InvalidLayout, InvalidKvLink) as exc:
                        lay = dict(zip(LAYOUT_COLUMNS, layout, strict=True))
                        rejected.append({**key, **lay, "role": role, "reason": str(exc)})
                        continue
                    row = {**key, "role": role, "kv_link": link}
                    row = _resolved_row(row, gpu, quant, dtype, eff, price)
                    pp, dp = layout[0], layout[2]
                    row["eff_mem_util"] = engine_mem_util(eff, gpu.memory_bytes, tp, pp, dp)
                    ok.append({**row, **layout_columns(gpu, tp, *layout)})
    return ok, rejected


def engine_mem_util(eff: Efficiency, memory_bytes: float, tp: int, pp: int, dp: int) -> float:
    """The engine's memory fraction for this GPU and layout (tp GPUs an attention rank, dp
    ranks, pp stages): its own per-GPU rule where the profile has one (SGLang, issue #10),
    else the profile's constant."""
    if not eff.mem_util_by_gpu:
        return eff.mem_util
    return engine_memory.sglang_mem_fraction(memory_bytes, tp, pp, dp)


def default_kv_dtype(quant: Quant, engine: EngineProfile | None, ideal: bool = False) -> str:
    """The KV dtype used when none is asked for: the engine's rule for the checkpoint
    (TensorRT-LLM runs FP8 ModelOpt checkpoints with an FP8 KV cache), else the quant's."""
    if engine is None or ideal:
        return quant.default_kv_dtype
    return engine.default_kv_dtype(quant.id, quant.default_kv_dtype, quant.kv_dtypes)


def _attention_peak(gpu: Gpu, dtype: str) -> float:
    """Attention (scores and values against the KV cache) runs in 16-bit whatever the weight
    format: the GPU's bf16 or fp16 peak, else the GEMM dtype's."""
    for attn in ("bf16", "fp16"):
        if attn in gpu.dense_tflops:
            return gpu.dense_tflops[attn]
    return gpu.dense_tflops[dtype]  # type: ignore[index]


def _resolved_row(
    key: dict, gpu: Gpu, quant: Quant, dtype: str, eff: Efficiency, price: Price | None
) -> dict:
    return {
        **key,
        "compute_dtype": dtype,
        "bandwidth_bytes_per_s": gpu.hbm_bandwidth_gb_per_s * 1e9,
        "memory_bytes": gpu.memory_bytes,
        "peak_flops": gpu.dense_tflops[dtype] * 1e12,  # type: ignore[index]
        "peak_flops_attention": _attention_peak(gpu, dtype) * 1e12,
        "link_bytes_per_s": collectives.link_bandwidth_bytes_per_s(gpu, key["tp"]),
        "link_hop_latency_us": collectives.HOP_LATENCY_US[collectives.link_kind(gpu)],
        "weight_bytes_per_param": quant.weight_bytes_per_param,
        "embedding_bytes_per_param": quant.embedding_bytes_per_param,
        "price_usd_per_gpu_hour": price.usd_per_gpu_hour if price else np.nan,
        "price_provider": price.provider if price else "",
        **{f"eff_{k}": v for k, v in eff.model_dump().items()},
        "eff_draft_forward_ms": draft_forward_ms(eff),  # issue #11 (t10s)
    }


def draft_forward_ms(eff: Efficiency) -> float:
    """The fixed cost (ms) of one draft forward inside a decode step: the engine's per-forward
    part of its step cost where one is given, else the whole step_overhead_ms; never more
    than the step's (it is a part of it)."""
    if eff.draft_forward_ms is None:
        return eff.step_overhead_ms
    return min(eff.draft_forward_ms, eff.step_overhead_ms)


REJECTED_COLUMNS = ["gpu", "tp", "quant", "kv_dtype", "role", "reason"]
GRID_AXES = ("batch", "shape_index", "input_len", "output_len")
SPEC_AXES = (  # issue #11: set per speculation option (and the class's cached prefix)
    "speculative", "spec_tokens", "spec_acceptance", "draft_params_held", "draft_params_read",
    "draft_layers", "draft_kv_elems_per_token", "prefix_cached_tokens",
)  # fmt: skip
# those columns for plain decoding with no cached prefix, for grids built outside build_grid
PLAIN_DECODING = {
    "speculative": "off", "spec_tokens": 0, "spec_acceptance": 0.0, "draft_params_held": 0.0,
    "draft_params_read": 0.0, "draft_layers": 0, "draft_kv_elems_per_token": 0.0,
    "prefix_cached_tokens": 0,
}  # fmt: skip
# one row per valid (gpu, tp, quant, kv): the grid columns that do not vary with batch or shape
DEPLOYMENT_COLUMNS = tuple(c for c in columns.GRID_COLUMNS if c.name not in GRID_AXES + SPEC_AXES)


def build_grid(
    model: Model, spec: GridSpec, engine: EngineProfile | None, ideal: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`build_table` as DataFrames: the full grid (deployments x batches x shapes,
    `columns.GRID_COLUMNS`) and the rejected deployments."""
    grid, rejected = build_table(model, spec, engine, ideal)
    return columns.conform(grid.to_pandas(), columns.GRID_COLUMNS), rejected_frame(rejected)


def rejected_frame(rejected: Table) -> pd.DataFrame:
    """Rejected deployments as a DataFrame of Python values (a tp stays an integer column)."""
    import pandas as pd

    return pd.DataFrame({c: list(rejected[c]) for c in rejected.columns})


def build_table(
    model: Model, spec: GridSpec, engine: EngineProfile | None, ideal: bool = False
) -> tuple[Table, Table]:
    """The full grid (deployments x batches x shapes, `columns.GRID_COLUMNS`) and the
    rejected deployments (`REJECTED_COLUMNS`), without pandas (issue #16)."""
    ok, rejected = deployment_rows(model, spec, engine, ideal)
    rejected = [{**r, "reason": _layout_tag(r) + r["reason"]} for r in rejected]
    rejected_table = _rejected_table(rejected)
    if not ok:
        return columns.empty_table(columns.GRID_COLUMNS), rejected_table
    deployments = columns.conform_table(_rows_table(ok), DEPLOYMENT_COLUMNS)
    shapes = np.asarray(list(spec.shapes), dtype=np.int32).reshape(-1, 2)
    batches = np.asarray(sorted(set(spec.batches)), dtype=np.int32)
    n_dep, n_b, n_s = len(deployments), len(batches), len(shapes)
    shape_index = np.tile(np.arange(n_s, dtype=np.int16), n_dep * n_b)
    grid = deployments.take(np.repeat(np.arange(n_dep), n_b * n_s))
    grid = grid.assign(
        batch=np.tile(np.repeat(batches, n_s), n_dep),
        shape_index=shape_index,
        input_len=shapes[shape_index, 0],
        output_len=shapes[shape_index, 1],
    )
    grid = with_speculation(grid, spec.speculative, spec.prefix_cached_tokens)
    return columns.conform_table(grid, columns.GRID_COLUMNS), rejected_table


def _rows_table(rows: list[dict]) -> Table:
    """Dicts with the same keys as a table of their columns, in first-seen key order."""
    return Table({k: _column_of([r[k] for r in rows]) for k in rows[0]}, len(rows))


def _column_of(items: list) -> np.ndarray:
    """Python values as one numpy column: strings and mixed values as objects."""
    arr = np.asarray(items)
    return arr.astype(object) if arr.dtype.kind in "UO" else arr


def _rejected_table(rows: list[dict]) -> Table:
    """The rejected deployments, one column per `REJECTED_COLUMNS` entry."""
    return Table(
        {c: np.asarray([r.get(c) for r in rows], dtype=object) for c in REJECTED_COLUMNS},
        len(rows),
    )


def with_speculation(
    grid: Table, options: Sequence[SpecOption], prefix_cached_tokens: int
) -> Table:
    """Every grid row once per speculation option (in that order), with the cached prefix."""
    opts = list(options) or [OFF]
    n, n_o = len(grid), len(opts)
    if n_o > 1:
        grid = grid.take(np.repeat(np.arange(n), n_o))
    pick = np.tile(np.arange(n_o, dtype=np.int16), n)  # issue #16: small per-row arrays

    def of(attr: str) -> np.ndarray:
        return np.asarray([getattr(o, attr) for o in opts])[pick]

    def shared(attr: str) -> Coded:
        """A number set per option, stored once per value (`columns.SHARED`, #16)."""
        values, codes = np.unique(
            np.asarray([getattr(o, attr) for o in opts], float), return_inverse=True
        )
        return Coded(codes.astype(np.int8)[pick], values)

    modes = sorted(MODES)
    mode_codes = np.asarray([modes.index(o.mode) for o in opts], dtype=np.int8)
    return grid.assign(
        speculative=Coded(mode_codes[pick], np.asarray(modes, dtype=object)),
        spec_tokens=of("spec_tokens").astype(np.int16),
        spec_acceptance=shared("acceptance"),
        draft_params_held=shared("draft_params_held"),
        draft_params_read=shared("draft_params_read"),
        draft_layers=of("draft_layers").astype(np.int16),
        draft_kv_elems_per_token=shared("draft_kv_elems_per_token"),
        prefix_cached_tokens=np.full(len(grid), prefix_cached_tokens, dtype=np.int32),
    )


def unique_ids(items: Iterable) -> list[str]:
    """Ids in first-seen order without repeats."""
    return list(dict.fromkeys(items))


def _layout_tag(row: dict) -> str:
    """'pp 2 ep 16: ' in front of a rejection of a multi-GPU layout ('' for the plain one)."""
    parts = [f"{k} {row[k]}" for k in LAYOUT_COLUMNS if row.get(k, 1) != 1]
    return " ".join(parts) + ": " if parts else ""
