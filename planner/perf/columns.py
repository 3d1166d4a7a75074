"""The candidate table's columns, declared once: name, unit, meaning, dtype and stage.

A plan's candidate table is exactly `CANDIDATE_COLUMNS`, in that order. Each stage adds its
own columns: `candidates.build_grid` makes the "grid" ones, `evaluate.evaluate` adds the
"model" ones, and the planning pipeline puts the request "class" in front and the SLA
"verdict" behind. `frame` and `conform` build and check a table by this declaration and raise
on a column it does not declare, so nothing flows undeclared.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from planner.perf.table import Coded, Table

if TYPE_CHECKING:
    import pandas as pd

Stage = Literal["class", "grid", "model", "verdict"]

ID = "category"  # a few distinct names repeated over the grid: stored once, rows hold codes
TEXT = "str"
INT = "int64"
FLOAT = "float64"
BOOL = "bool"
# issue #16 (grid memory): narrower storage for the big grid, declared per column
SHARED = "shared"  # a number constant per deployment (a GPU's bandwidth, an engine's
# efficiency, a price): stored once per distinct value as a categorical, rows hold codes;
# formulas read it with `to_numpy(dtype=float)`, which gathers the values
FLOAT32 = "float32"  # physics detail that no decision, cost or golden value reads
INT32 = "int32"  # integer axes: batch and token counts (int16 products overflow)
INT16 = "int16"  # small layout degrees (tp, pp, ep, ...): read as floats by every formula
_STORAGE = {SHARED: "category"}  # a marker's pandas dtype, where it is not its own name
_NUMERIC = {INT, FLOAT, BOOL, FLOAT32, INT32, INT16}  # stored as numpy arrays of that dtype


@dataclass(frozen=True)
class Column:
    """One column of the candidate table."""

    name: str
    unit: str
    meaning: str
    dtype: str
    stage: Stage

    @property
    def storage(self) -> str:
        """The pandas dtype name the column is stored at (`SHARED` is a categorical)."""
        return _STORAGE.get(self.dtype, self.dtype)

    @property
    def pandas_dtype(self) -> Any:
        """The dtype pandas stores for `dtype` (str is object on pandas 2, StringDtype on 3)."""
        return _stored_dtype(self.storage)

    def holds(self, dtype: Any) -> bool:
        """Whether a column stored at `dtype` is at the declared dtype (any categories)."""
        import pandas as pd

        if self.dtype in (ID, SHARED):
            return isinstance(dtype, pd.CategoricalDtype)
        return dtype == self.pandas_dtype


@functools.cache
def _stored_dtype(dtype: str) -> Any:
    """What pandas stores for a dtype name, worked out once per name (a Series a call was
    a third of `conform`, issue #16)."""
    import pandas as pd

    return pd.Series([], dtype=dtype).dtype


def _stage(stage: Stage, rows: Iterable[tuple[str, str, str, str]]) -> tuple[Column, ...]:
    """The columns of one stage from (name, unit, dtype, meaning) rows, kept in order."""
    return tuple(Column(name, unit, meaning, dtype, stage) for name, unit, dtype, meaning in rows)


CLASS_COLUMNS = _stage("class", [("class", "name", ID, "request class the row is evaluated for")])

GRID_COLUMNS = _stage(
    "grid",
    [
        ("gpu", "id", ID, "GPU catalog id"),
        ("tp", "GPUs", INT16, "tensor-parallel degree: GPUs per attention rank of a stage"),
        # multi-node replicas, expert parallel, DP attention (issue #11 parts 1-2)
        ("pp", "stages", INT16, "pipeline-parallel stages per replica"),
        ("ep", "ranks", INT16, "expert-parallel ranks per stage (1: experts tensor-parallel)"),
        ("dp_attention", "ranks", INT16, "attention data-parallel ranks per stage (1: off)"),
        ("gpus_per_replica", "GPUs", INT32, "GPUs one replica uses: tp x dp_attention x pp"),
        ("nodes_per_replica", "nodes", INT16, "servers one replica spans"),
        ("scaleup_domain_gpus", "GPUs", INT16, "GPUs joined by the scale-up link"),
        ("scaleout_latency_us", "us", SHARED, "fixed latency of one scale-out transfer"),
        ("ep_imbalance", "ratio", SHARED, "busiest EP rank's expert load over the mean"),
        ("quant", "id", ID, "weight quantization scheme"),
        ("kv_dtype", "id", ID, "KV-cache dtype"),
        ("compute_dtype", "id", ID, "dtype the matrix math runs at on this GPU"),
        ("bandwidth_bytes_per_s", "B/s", SHARED, "HBM bandwidth per GPU (peak)"),
        ("memory_bytes", "B", SHARED, "memory capacity per GPU"),
        ("peak_flops", "FLOP/s", SHARED, "dense peak per GPU at compute_dtype"),
        ("peak_flops_attention", "FLOP/s", SHARED, "dense peak per GPU for attention (16-bit)"),
        ("link_bytes_per_s", "B/s", SHARED, "scale-up bandwidth per GPU at this TP degree"),
        ("link_hop_latency_us", "us", SHARED, "ring all-reduce latency per hop (#10)"),
        ("weight_bytes_per_param", "B/param", SHARED, "bytes per block weight at this quant"),
        ("embedding_bytes_per_param", "B/param", SHARED, "bytes per embedding/LM-head weight"),
        ("price_usd_per_gpu_hour", "$/GPU-h", SHARED, "price per GPU-hour used (NaN: none)"),
        ("price_provider", "name", ID, "whose price it is ('' when there is none)"),
        ("eff_eta_mem", "fraction", SHARED, "engine: achieved fraction of HBM bandwidth"),
        ("eff_eta_compute_decode", "fraction", SHARED, "engine: fraction of peak in decode"),
        ("eff_eta_compute_prefill", "fraction", SHARED, "engine: fraction of peak in prefill"),
        ("eff_eta_kv", "fraction", SHARED, "engine: KV read efficiency of attention vs GEMV"),
        ("eff_allreduce_latency_us", "us", SHARED, "engine: fixed latency per collective"),
        ("eff_step_overhead_ms", "ms", SHARED, "engine: fixed cost per decode step"),
        ("eff_prefill_overhead_ms", "ms", SHARED, "engine: fixed cost per prefill pass"),
        ("eff_mem_util", "fraction", SHARED, "engine: usable fraction of GPU memory"),
        ("eff_runtime_reserve_gb", "GB", SHARED, "engine: runtime memory beyond its budget"),
        ("eff_kv_budget_of_free", "bool", SHARED, "engine: mem_util of free memory"),
        ("eff_mem_util_by_gpu", "bool", SHARED, "engine: mem_util is the engine's per-GPU rule"),
        ("eff_activations_in_budget", "bool", SHARED, "engine: activations inside mem_util"),
        ("eff_prefill_chunk_tokens", "tokens", SHARED, "engine: tokens per chunked-prefill pass"),
        # disaggregated prefill/decode (issue #11)
        ("role", "name", ID, "aggregated, or the prefill or decode pool of a disaggregated fleet"),
        ("scaleout_link_bytes_per_s", "B/s", SHARED, "scale-out NIC per GPU (NaN: not sourced)"),
        # KV transfer over the scale-up link within one domain (issue #11, perf/kv_link.py)
        ("kv_link", "name", ID, "link a pool's KV crosses: scale-out, scale-up (none: aggregated)"),
        # issue #10 (fidelity): per-sequence decode cost, per-request TTFT latency
        ("eff_step_per_seq_us", "us", SHARED, "engine: decode step cost per sequence"),
        ("eff_request_overhead_ms", "ms", SHARED, "engine: per-request latency in TTFT"),
        ("eff_benchmark_wave_share", "fraction", SHARED, "engine: calibration only"),
        # issue #10 (remaining): TensorRT-LLM reserves KV for the whole output at admission
        ("eff_kv_reserve_output", "bool", SHARED, "engine: KV for I + O held per sequence"),
        # issue #10 (s39): iterations an arrival waits beyond the one in flight (overlap)
        ("eff_scheduler_lag_steps", "steps", SHARED, "engine: steps launched ahead of arrivals"),
        # issue #10 (s40): decode cost per sequence per layer (TensorRT-LLM's fitted)
        ("eff_step_seq_layer_us", "us", SHARED, "engine: decode cost per sequence per layer"),
        # issue #10 (t10v): fixed decode cost per MoE layer (vLLM's fitted; 0 elsewhere)
        ("eff_moe_layer_us", "us", SHARED, "engine: decode step cost per MoE layer"),
        # issue #10 (ep-lead): EP across nodes, per engine (perf/sharding.alltoall_s)
        ("eff_ep_cross_node_layer_us", "us", SHARED, "engine: cross-node EP cost per MoE layer"),
        ("eff_ep_cross_node_token_us", "us", SHARED, "engine: cross-node EP cost per layer-token"),
        # issue #11 (t10s): the per-forward part of the step cost, paid by each draft forward
        ("eff_draft_forward_ms", "ms", SHARED, "engine: fixed cost of one draft forward"),
        # issue #10 (t10p): host floor of an eager prefill pass, per layer
        ("eff_prefill_layer_us", "us", SHARED, "engine: host time per layer of a prefill pass"),
        # issue #10 (t10g): prefill GEMMs' K / (K + k0) efficiency (perf/gemm_shape.py)
        ("eff_gemm_k0_ridge", "ratio", SHARED, "engine: prefill GEMM k0 over the F/BW ridge"),
        ("batch", "sequences", INT32, "sequences per replica: engine's max_num_seqs, kept full"),
        ("shape_index", "index", INT16, "which request shape of the grid spec"),
        ("input_len", "tokens", INT32, "prompt tokens per request"),
        ("output_len", "tokens", INT32, "generated tokens per request"),
        # speculative decoding and prefix caching (issue #11, planner/perf/speculative.py)
        ("speculative", "id", ID, "speculative decoding: off, mtp or draft"),
        ("spec_tokens", "tokens", INT16, "draft tokens per verify step k (0: off)"),
        ("spec_acceptance", "fraction", SHARED, "per-token acceptance rate of the draft"),
        ("draft_params_held", "params", SHARED, "parameters the drafter holds in memory"),
        ("draft_params_read", "params", SHARED, "parameters one draft step reads"),
        ("draft_layers", "layers", INT16, "drafter layers (all-reduces under tp)"),
        ("draft_kv_elems_per_token", "elements", SHARED, "drafter KV elements per token"),
        ("prefix_cached_tokens", "tokens", INT32, "prompt tokens served from the prefix cache"),
    ],
)

MODEL_COLUMNS = _stage(
    "model",
    [
        ("weights_per_gpu_gb", "GB", FLOAT32, "weights held per GPU"),
        ("kv_cache_per_gpu_gb", "GB", FLOAT32, "KV cache per GPU at this batch, in flight (I+O/2)"),
        ("activations_per_gpu_gb", "GB", FLOAT32, "activation workspace and logits per GPU"),
        ("memory_per_gpu_gb", "GB", FLOAT32, "total memory per GPU at this batch"),
        ("memory_usable_gb", "GB", FLOAT32, "memory the engine may use: weights, workspace, KV"),
        ("fits", "bool", BOOL, "the batch fits in memory"),
        ("memory_shortfall_gb", "GB", FLOAT, "memory missing per GPU (0 if it fits)"),
        ("max_batch", "sequences", INT32, "largest batch that fits"),
        ("bytes_weights_per_step_gb", "GB", FLOAT32, "weight bytes read per decode step, per GPU"),
        ("bytes_kv_per_step_gb", "GB", FLOAT32, "KV bytes read per decode step, per GPU"),
        ("flops_per_step_tflop", "TFLOP", FLOAT32, "FLOPs per decode step, per GPU"),
        ("t_weights_ms", "ms", FLOAT32, "time to read the weights"),
        ("t_kv_ms", "ms", FLOAT32, "time to read the KV cache"),
        ("t_memory_ms", "ms", FLOAT32, "memory time: weights + KV"),
        ("t_compute_ms", "ms", FLOAT32, "compute time of the decode step"),
        ("t_comm_ms", "ms", FLOAT32, "collectives per step: all-reduces, all-to-all, stage sends"),
        ("t_overhead_ms", "ms", FLOAT32, "fixed per-step cost: launch, scheduling, sampling"),
        ("t_decode_rows_ms", "ms", FLOAT32, "the batch's decode tokens in a fused prefill pass"),
        ("tpot_step_ms", "ms", FLOAT, "decode time per output token: step / tokens_per_step"),
        ("bound", "name", ID, "memory or compute: which roofline bound holds in decode"),
        ("intensity_flop_per_byte", "FLOP/B", FLOAT32, "arithmetic intensity of the decode step"),
        ("ridge_flop_per_byte", "FLOP/B", FLOAT32, "ridge point of this GPU at this dtype"),
        ("prefill_ms", "ms", FLOAT, "time to prefill one request alone"),
        ("prefill_share_ms", "ms", FLOAT, "one request's share of chunked prefill passes"),
        ("prefill_bound", "name", ID, "memory or compute: which bound holds in prefill"),
        ("tpot_ms", "ms", FLOAT, "TPOT users see: step time plus prefill interruptions"),
        ("ttft_ms", "ms", FLOAT, "time to first token at planned load (statistic as asked)"),
        ("ttft_unloaded_ms", "ms", FLOAT, "time to first token on an idle replica"),
        ("ttft_scheduler_lag_ms", "ms", FLOAT, "of it, the step an overlap scheduler launched"),
        ("requests_per_s", "req/s", FLOAT, "requests per second per replica at full load"),
        ("capacity_requests_per_s", "req/s", FLOAT, "requests per second per replica, planned"),
        ("throughput_tok_s", "tok/s", FLOAT32, "output tokens per second per replica, full load"),
        ("total_tok_s", "tok/s", FLOAT32, "input + output tokens per second per replica"),
        ("cost_per_hour_usd", "$/h", FLOAT, "replica cost per hour (GPUs per replica x price)"),
        ("cost_per_request_usd", "$", FLOAT, "cost per request at planned load"),
        ("cost_per_1k_output_tokens_usd", "$", FLOAT, "cost per 1K output tokens, planned load"),
        # speculative decoding and prefix caching (issue #11)
        ("tokens_per_step", "tokens", FLOAT32, "tokens one decode step emits: E(k, a), 1 if off"),
        ("t_verify_ms", "ms", FLOAT32, "target pass over k + 1 tokens per sequence (one step)"),
        ("t_draft_ms", "ms", FLOAT32, "the k draft steps of one decode step"),
        ("draft_per_gpu_gb", "GB", FLOAT32, "drafter weights and KV per GPU at this batch"),
        ("prefix_cache_per_gpu_gb", "GB", FLOAT32, "shared prefix KV, held once per replica"),
        # disaggregated prefill/decode (issue #11)
        ("kv_transfer_ms", "ms", FLOAT, "pool's NIC time for one request's KV (0: aggregated)"),
        # multi-node replicas, expert parallel (issue #11 parts 1-2)
        ("t_alltoall_ms", "ms", FLOAT32, "expert-parallel dispatch + combine per decode step"),
        ("t_p2p_ms", "ms", FLOAT32, "pipeline stage-to-stage sends per decode step"),
        ("pipeline_bubble", "fraction", FLOAT32, "share of stage time idle at decode (1 - m/pp)"),
    ],
)

VERDICT_COLUMNS = _stage(
    "verdict",
    [
        ("sla_tpot_ms", "ms", FLOAT, "the class's TPOT bound (NaN: none)"),
        ("sla_ttft_ms", "ms", FLOAT, "the class's TTFT bound (NaN: none)"),
        ("why_not", "text", TEXT, "why the row cannot serve its class ('' when it can)"),
        ("sla_ok", "bool", BOOL, "fits, has a price and meets its class's SLA"),
    ],
)

EVALUATED_COLUMNS = GRID_COLUMNS + MODEL_COLUMNS
CANDIDATE_COLUMNS = CLASS_COLUMNS + EVALUATED_COLUMNS + VERDICT_COLUMNS
BY_NAME: dict[str, Column] = {c.name: c for c in CANDIDATE_COLUMNS}


def select(names: Iterable[str]) -> tuple[Column, ...]:
    """The named columns, in declared order (a projection of the candidate table)."""
    wanted = set(names)
    unknown = wanted - set(BY_NAME)
    if unknown:
        raise KeyError(f"undeclared candidate columns: {sorted(unknown)}")
    return tuple(c for c in CANDIDATE_COLUMNS if c.name in wanted)


def check_names(names: Iterable[str], columns: Sequence[Column]) -> None:
    """Raise KeyError unless `names` are exactly the declared `columns` (any order)."""
    have, want = list(names), {c.name for c in columns}
    extra = [n for n in have if n not in want]
    missing = [c.name for c in columns if c.name not in set(have)]
    if extra or missing:
        raise KeyError(f"candidate table columns: undeclared {extra}, missing {missing}")


def conform(table: Any, columns: Sequence[Column]) -> Any:
    """`table` as exactly the declared columns, in declared order, at declared dtypes."""
    if isinstance(table, Table):
        return conform_table(table, columns)
    check_names(table.columns, columns)
    names = [c.name for c in columns]
    out = table if list(table.columns) == names else table[names]
    dtypes = dict(zip(names, out.dtypes, strict=True))  # issue #16: not a Series per column
    casts = {c.name: c.storage for c in columns if not c.holds(dtypes[c.name])}
    if 2 * len(casts) >= len(names):
        return out.astype(casts) if casts else out
    out = out.copy(deep=False)  # a few casts: DataFrame.astype would rebuild every column
    for name, storage in casts.items():
        out[name] = out[name].astype(storage)
    return out


def frame(data: Mapping[str, Any], columns: Sequence[Column]) -> pd.DataFrame:
    """A table built from one array (or scalar) per declared column."""
    check_names(data, columns)
    import pandas as pd

    # copy=False: one block per column, no consolidating copy (issue #16: at 2.7M rows the
    # copy was a GB of peak memory over the table itself)
    table = pd.DataFrame({c.name: _narrowed(data[c.name], c) for c in columns}, copy=False)
    return conform(table, columns)


# numpy casts that are exactly what pandas' astype does to them (it calls ndarray.astype);
# float -> int is left to pandas, which refuses NaN
_SAME_CAST = {"f": "f", "i": "if", "u": "uif", "b": "b"}


def _narrowed(value: Any, column: Column) -> Any:
    """A numpy array cast to its column's numeric dtype before the frame is built: one
    ndarray.astype, not a DataFrame.astype over a built frame (issue #16)."""
    if not isinstance(value, np.ndarray) or value.dtype == column.dtype:
        return value
    target = np.dtype(column.dtype) if column.dtype in _NUMERIC else None
    if target is None or target.kind not in _SAME_CAST.get(value.dtype.kind, ""):
        return value
    return value.astype(target)


def shortest_floats(row: Mapping[str, Any]) -> dict[str, Any]:
    """One row with its FLOAT32 values as the shortest decimals that read back as them
    (21.504, not 21.503999710083008): a one-deployment report is not the grid (#16)."""
    out = dict(row)
    for name, value in row.items():
        if name in BY_NAME and BY_NAME[name].dtype == FLOAT32:
            out[name] = float(str(np.float32(value)))
    return out


def empty(columns: Sequence[Column]) -> pd.DataFrame:
    """A table with the declared columns and no rows."""
    import pandas as pd

    return pd.DataFrame({c.name: pd.Series([], dtype=c.storage) for c in columns})


def table(data: Mapping[str, Any], columns: Sequence[Column]) -> Table:
    """`frame` without pandas: a `Table` of one array (or scalar) per declared column."""
    check_names(data, columns)
    n = max(
        (np.size(v) for v in data.values() if np.ndim(v) > 0 or isinstance(v, Coded)), default=0
    )
    out = {}
    for c in columns:
        value = data[c.name]
        if not isinstance(value, Coded) and np.ndim(value) == 0:
            value = np.full(n, value)
        out[c.name] = _stored(value, c)
    return Table(out, n)


def conform_table(table: Table, columns: Sequence[Column]) -> Table:
    """`conform` for a `Table`: exactly the declared columns, in order, at declared storage
    (ids and per-deployment constants coded against their sorted values, as a categorical)."""
    check_names(table.columns, columns)
    return Table({c.name: _stored(table.stored(c.name), c) for c in columns}, len(table))


def _stored(value: Any, column: Column) -> Any:
    """One column at its declared storage: `Coded` for ids and shared numbers, object
    strings for text, else a numpy array at the declared dtype."""
    if column.dtype in (ID, SHARED):
        return Coded.of(value)
    arr = np.asarray(value)
    if column.dtype == TEXT:
        return arr if arr.dtype.kind == "O" else arr.astype(object)
    return arr if arr.dtype == column.dtype else arr.astype(column.dtype)


def empty_table(columns: Sequence[Column]) -> Table:
    """A `Table` with the declared columns and no rows."""
    return Table({c.name: _stored(np.zeros(0, dtype=_empty_dtype(c)), c) for c in columns}, 0)


def _empty_dtype(column: Column) -> Any:
    """An empty column's dtype: as `empty` stores it (a categorical of no values is object)."""
    return object if column.dtype in (ID, TEXT, SHARED) else column.dtype
