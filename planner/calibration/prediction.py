"""The performance model's prediction of every measurement row, at its operating point.

`predict(measurements, catalog, profile)` builds a `Design` (the rows as grid rows grouped by
model, `build_design`) and evaluates it; `static_batch_e2e_ms` and the wave timings of
`perf.wave` (`batch_prefill_ms`, `serving_wave_ms`, `first_round_ms`, shared with `planner
estimate --num-prompts`) are compared with batched and serving-benchmark rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.calibration.measurements import MEASURED, METRICS, PREDICTED
from planner.inputs.catalog import Catalog
from planner.perf import evaluate as ev
from planner.perf import queueing as q
from planner.perf import roofline as rf
from planner.perf.candidates import (
    IDEAL,
    PLAIN_DECODING,
    GridSpec,
    deployment_rows,
    draft_forward_ms,
    engine_mem_util,
)
from planner.perf.memory import PREFILL_CHUNK_TOKENS
from planner.perf.wave import (  # the wave timings, shared with `planner estimate`
    batch_prefill_ms,
    first_round_ms,
    layout_col,
    mixes_prefill,
    prefill_chunk,
    serving_wave_ms,
)
from planner.schema.engine import Efficiency, EngineProfile
from planner.schema.model import Model

ProfileArg = EngineProfile | Mapping[str, EngineProfile] | None


def _profile_for(profile: ProfileArg, engine: str) -> EngineProfile | None:
    if profile is None or isinstance(profile, EngineProfile):
        return profile
    return profile.get(engine) or profile.get("*")


def _col(df: pd.DataFrame, name: str) -> np.ndarray:
    return df[name].to_numpy(dtype=float)


def static_batch_e2e_ms(
    model: Model, evaluated: pd.DataFrame, tpot_step_ms: np.ndarray | None = None
) -> np.ndarray:
    """End-to-end latency of a batch of B requests (vLLM latency benchmark, TensorRT-LLM
    gptSessionBenchmark, and one turn of offline continuous batching): B prefills of I tokens
    batched (`batch_prefill_ms`), then O - 1 decode steps at batch B (the prefill emits the
    first token), each at `tpot_step_ms` (mean context I + O/2). `evaluated` is an
    evaluated grid at that batch and shape.

    e2e = prefill(B x I tokens) + (O - 1) * tpot_step(B)
    """
    steps = np.maximum(_col(evaluated, "output_len") - 1.0, 0.0)
    step = _col(evaluated, "tpot_step_ms") if tpot_step_ms is None else tpot_step_ms
    return batch_prefill_ms(model, evaluated) + steps * step


_CORE_COLUMNS = ("tpot_step_ms", "prefill_ms", "max_batch", "fits", "bound", "prefill_bound")
_SERVING_COLUMNS = (
    "throughput_tok_s",
    "tpot_ms",
    "requests_per_s",
    "prefill_share_ms",
    "ttft_unloaded_ms",
    "t_decode_rows_ms",
)


class _Columns(dict):
    """A grid's columns as a dict of Series: `evaluate` reads each column several times and
    a DataFrame lookup costs ~30x a dict lookup (a fit evaluates a grid hundreds of times)."""

    def __init__(self, grid: pd.DataFrame) -> None:
        super().__init__((c, grid[c]) for c in grid.columns)
        self.empty = grid.empty


def _evaluate_core(model: Model, grid: pd.DataFrame) -> dict[str, np.ndarray]:
    """Memory, decode step, prefill and serving rate of `evaluate`, without queueing (whose
    Erlang recursion costs one numpy step per sequence slot: slow at batch 5000)."""
    full = ev.evaluate_arrays(model, _Columns(grid), statistic="none")
    keys = (*_CORE_COLUMNS, *_SERVING_COLUMNS)
    return {k: np.asarray(full[k]) for k in keys}


EFF_FIELDS: tuple[str, ...] = tuple(Efficiency.model_fields)


@dataclass
class Design:
    """The measurement rows as grid rows, grouped by model, ready for repeated evaluation.

    `rows` are the measurement rows that can be predicted (mapped model, GPU and quant, a
    valid deployment); `groups` hold (model, grid, positions in rows). Batches left open
    (offline max-throughput rows) are resolved to max_batch with the memory constants of the
    profile the design was built with; fits do not change those constants.
    """

    rows: pd.DataFrame
    groups: list[tuple[Model, pd.DataFrame, np.ndarray]]
    rejected: pd.DataFrame

    def families(self) -> np.ndarray:
        return self.rows["gpu_family"].to_numpy()

    def subset(self, mask: np.ndarray) -> Design:
        """The design restricted to the rows where `mask` is true (batches stay resolved)."""
        mask = np.asarray(mask, dtype=bool)
        new_pos = np.cumsum(mask) - 1
        groups = []
        for model, grid, pos in self.groups:
            keep = mask[pos]
            if keep.any():
                groups.append((model, grid[keep].reset_index(drop=True), new_pos[pos[keep]]))
        return Design(rows=self.rows[mask], groups=groups, rejected=self.rejected)

    def evaluate(self, effs: Efficiency | Sequence[Efficiency]) -> pd.DataFrame:
        """Predictions for every row (aligned to rows), with one efficiency for all rows or
        one per row."""
        n = len(self.rows)
        res = {
            k: np.full(n, np.nan)
            for k in ("tpot_step_ms", "prefill_ms", "max_batch", "throughput_serving_model")
        }
        res.update({k: np.full(n, np.nan) for k in PREDICTED.values()})
        res["fits"] = np.zeros(n, dtype=bool)
        res["bound"] = np.full(n, "", dtype=object)
        for model, grid, pos in self.groups:
            _set_eff(grid, effs if isinstance(effs, Efficiency) else [effs[i] for i in pos])
            core = _evaluate_core(model, grid)
            for key in ("tpot_step_ms", "prefill_ms", "max_batch", "fits", "bound"):
                res[key][pos] = core[key]
            _predict_metrics(model, grid, core, res, pos)
        return pd.DataFrame(res, index=self.rows.index)


def _set_eff(grid: pd.DataFrame, effs: Efficiency | Sequence[Efficiency]) -> None:
    """Write the constants into the grid's eff_* columns; the prefill chunk stays each row's
    engine default for its GPU (`_chunk_tokens`, #10), which a fit does not move."""
    if isinstance(effs, Efficiency):
        for name, value in _dumped(effs).items():
            grid[f"eff_{name}"] = float(value)
    else:
        dumped = [_dumped(e) for e in effs]
        for name in EFF_FIELDS:
            grid[f"eff_{name}"] = np.array([d[name] for d in dumped], dtype=float)
    if "_chunk_tokens" in grid:
        grid["eff_prefill_chunk_tokens"] = grid["_chunk_tokens"].to_numpy(dtype=float)
    if "_mem_util" in grid:  # the engine's own rule for the row's GPU and layout (#10, SGLang)
        own = grid["_mem_util"].to_numpy(dtype=float)
        grid["eff_mem_util"] = np.where(np.isfinite(own), own, grid["eff_mem_util"])


def _dumped(eff: Efficiency) -> dict:
    """The constants as the grid holds them: draft_forward_ms resolved (never None, #11)."""
    return {**eff.model_dump(), "draft_forward_ms": draft_forward_ms(eff)}


def _predict_metrics(
    model: Model, grid: pd.DataFrame, core: dict, res: dict, pos: np.ndarray
) -> None:
    """TPOT: the decode step. TTFT: prefill of ttft_batch x ttft_input_len (no queueing).
    Throughput: B * O / e2e (static batches and offline continuous batching alike). E2E:
    batched prefill + (O-1) decode steps. Also the serving-rate throughput of `evaluate`
    (per-request prefill) as `throughput_serving_model`, for comparison. Serving-benchmark
    rows (scenario kinds in SERVING_KINDS) replace TPOT and TTFT: see `serving_wave_ms`."""
    e2e = static_batch_e2e_ms(model, grid, core["tpot_step_ms"])
    tpot = np.array(core["tpot_step_ms"], dtype=float)
    ttft = batch_prefill_ms(model, grid, _col(grid, "ttft_batch"), _col(grid, "ttft_input_len"))
    kinds = grid["scenario_kind"].to_numpy()
    wave = kinds == "serving"
    if wave.any():
        rows = np.asarray(core["t_decode_rows_ms"], dtype=float)[wave]
        w_ttft, w_tpot = serving_wave_ms(model, grid[wave], tpot[wave], None, rows)
        ttft[wave], tpot[wave] = w_ttft + _col(grid[wave], "eff_request_overhead_ms"), w_tpot
    poisson = kinds == "serving_poisson"
    tpot[poisson] = np.asarray(core["tpot_ms"], dtype=float)[poisson]
    throughput = _col(grid, "batch") * _col(grid, "output_len") / e2e * 1e3
    closed = kinds == "closed_loop"
    if closed.any():
        c_ttft, c_tpot, c_thr = closed_loop_benchmark_ms(model, grid[closed], core, closed)
        ttft[closed], tpot[closed], throughput[closed] = c_ttft, c_tpot, c_thr
        e2e[closed] = np.nan
    res[PREDICTED["tpot"]][pos] = tpot
    res[PREDICTED["ttft"]][pos] = ttft
    res[PREDICTED["throughput"]][pos] = throughput
    res[PREDICTED["e2e"]][pos] = e2e
    res["throughput_serving_model"][pos] = core["throughput_tok_s"]


# Serving-benchmark rows (`vllm bench serve`, planner.measurements): "serving" is a closed
# loop at infinite request rate with `batch` requests in flight; "serving_poisson" is a
# finite request rate (batch from Little's law, TPOT only).
SERVING_KINDS: tuple[str, ...] = ("serving", "serving_poisson")


WAVE_ASSUMPTION = (
    "vLLM serving-benchmark rows at request rate inf with all B prompts at once (no "
    "max_concurrency below num_prompts) are compared as one wave of B equal requests arriving "
    "together on an idle replica: TTFT = mean pass in which a prompt completes x pass time, "
    "prompts prefilled in 8192-token chunks; TPOT = decode step at batch B plus the prefill "
    "passes a request decodes through; throughput = B x O / (wave prefill + (O-1) decode "
    "steps)."
)
CLOSED_LOOP_ASSUMPTION = (
    "vLLM serving-benchmark rows at request rate inf with max_concurrency C below num_prompts "
    "are closed loops of C clients: the first round (C / num_prompts of the requests) arrives "
    "as one wave, the rest in the steady state `planner estimate --concurrency C` reports, "
    "every request with the per-request latency; TTFT and TPOT are that mix, throughput "
    "C x O / (TTFT + (O-1) TPOT)."
)


# How closed-loop rows (the aic set) are timed. "mixed" (`closed_loop_benchmark_ms`): a
# fitted share of the requests arrives as one wave on an idle replica (the clients' first
# round, `serving_wave_ms`), the rest in the steady state. "steady": the steady state alone,
# as `planner estimate --concurrency` reports it (`closed_loop_ms`). With the profiles of
# 2026-12-01 (before #10's fit) waves alone were 52-181% off in TTFT (median), the steady
# state alone 71-95% low; the mix with a per-request latency, fitted, 24-31% (log fit of the
# two terms on fixed profiles).
CLOSED_LOOP_TIMING = "mixed"


def _wave_share(grid: pd.DataFrame) -> np.ndarray:
    """The share of a closed loop's requests in its first round: the run's own where it says
    (a vLLM result, max_concurrency / num_prompts), else the profile's fitted one for an
    engine that mixes prefill into decode steps, and 1 for one that does not (SGLang's
    prefill batches: fixed lengths start, decode and finish together, every round a wave)."""
    fitted = np.where(mixes_prefill(grid), _col(grid, "eff_benchmark_wave_share"), 1.0)
    return _run_share_or(grid, fitted)


def _run_share_or(grid: pd.DataFrame, share: np.ndarray) -> np.ndarray:
    """The run's own first-round share where it publishes one (`wave_share`), else `share`."""
    if "wave_share" not in grid:
        return share
    own = grid["wave_share"].to_numpy(dtype=float)
    return np.where(np.isfinite(own), own, share)


def closed_loop_benchmark_ms(
    model: Model, grid: pd.DataFrame, core: Mapping[str, np.ndarray], rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TTFT, TPOT (ms) and output tok/s a closed-loop benchmark reports at concurrency C.

    The benchmark's clients start together, so their first requests arrive as one wave
    (`serving_wave_ms`); the stagger of that wave's prefills spreads later rounds out into
    the steady state `planner estimate --concurrency` reports (`closed_loop_ms`). The mean
    over the run mixes the two: a share f (1/rounds per client: the run's own where it says,
    `wave_share`, else `benchmark_wave_share`, fitted) of the requests sees the wave, the
    rest the steady state; every request pays the
    per-request latency (`request_overhead_ms`, in the steady TTFT already) and clients
    beyond what memory holds wait for a slot. `grid` holds the closed rows, `rows` masks
    them in `core`. Throughput is C O / (TTFT + (O - 1) TPOT), Little's law, as the aic
    rows derive theirs.

        TTFT = f (wave + overhead) + (1 - f) steady + slot wait
        TPOT = g wave + (1 - g) steady, g the benchmark's true first rounds (s37,
        `_tpot_wave_share`: 1 in 50 for the aic rows of engines that mix prefill)
    """
    sub = {k: np.asarray(v)[rows] for k, v in core.items()}
    f = _wave_share(grid)
    s_ttft, s_tpot, _ = closed_loop_ms(grid, sub)
    slot = _slot_wait_ms(grid, sub)
    w_ttft, w_tpot = first_round_ms(
        model, grid, np.asarray(sub["tpot_step_ms"], dtype=float), sub["t_decode_rows_ms"], slot
    )
    if CLOSED_LOOP_TIMING == "mixed":
        ttft = f * w_ttft + (1.0 - f) * s_ttft
        g = _tpot_wave_share(grid)  # s37: TPOT's share is the benchmark's first rounds
        tpot = g * w_tpot + (1.0 - g) * s_tpot
    else:
        ttft, tpot = s_ttft, s_tpot
    o_len = _col(grid, "output_len")
    life = ttft + np.maximum(o_len - 1.0, 0.0) * tpot
    return ttft, tpot, _col(grid, "concurrency") * o_len / life * 1e3


# Issue #10 (s37): the benchmark AIConfigurator's generator writes
# (generator/config/backend_templates/benchmark/bench_run.sh.j2) runs aiperf with
# --num-requests C x 50 (BENCH_MULTI_ROUND) after --warmup-request-count C x 2: at most one
# round in 50 of the measured requests is a true first round, the clients starting together.
AIC_BENCH_ROUNDS = 50


def _tpot_wave_share(grid: pd.DataFrame) -> np.ndarray:
    """The share of a closed loop's requests whose TPOT is a first round's (every prompt of
    the round prefilled while they decode): the run's own share where it says; 1 for an engine
    that does not mix prefill (every round a wave); else one round in AIC_BENCH_ROUNDS. The
    fitted `benchmark_wave_share` stays TTFT's: there it stands for arrivals that cluster
    round after round (requests prefilled together finish and return together), which delays
    a first token without putting the whole round's prefill into every decode step."""
    return _run_share_or(grid, np.where(mixes_prefill(grid), 1.0 / AIC_BENCH_ROUNDS, 1.0))


def _slot_wait_ms(grid: pd.DataFrame, core: Mapping[str, np.ndarray]) -> np.ndarray:
    """(C - b) / R: clients beyond the b sequences memory holds wait for a free slot."""
    rate = np.asarray(core["requests_per_s"], dtype=float)
    extra = np.maximum(_col(grid, "concurrency") - _col(grid, "batch"), 0.0)
    return extra / rate * 1e3


def closed_loop_ms(
    grid: pd.DataFrame, core: Mapping[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TTFT, TPOT (ms) and output tok/s of C clients in a closed loop, as `planner estimate
    --concurrency C` computes them (planning.estimate.closed_loop), vectorised.

    `grid["batch"]` is b = min(C, what memory holds) (`build_design` resolves it, the
    concurrency stays in `concurrency`); `core` is `evaluate` at batch b:
    R = requests_per_s, TPOT = tpot_ms (other requests' prefills interleaved, not its own),
    TTFT = ttft_unloaded + M/D/1 wait behind the other b - 1 clients' prefills (mean)
    + (C - b) / R for clients beyond b + the other b - 1 sequences' decode work in the
    passes that prefill the prompt (`_fused_rows_ms`, #10 t10b), throughput = R * O."""
    b = _col(grid, "batch")
    rate = np.asarray(core["requests_per_s"], dtype=float)
    share = np.asarray(core["prefill_share_ms"], dtype=float) * 1e-3
    wait = q.wait_for_prefill(rate * (b - 1.0) / b, share, "mean")
    ttft = np.asarray(core["ttft_unloaded_ms"], dtype=float) + wait * 1e3
    ttft = ttft + _slot_wait_ms(grid, core) + _fused_rows_ms(grid, core)
    return ttft, np.asarray(core["tpot_ms"], dtype=float), rate * _col(grid, "output_len")


def _fused_rows_ms(grid: pd.DataFrame, core: Mapping[str, np.ndarray]) -> np.ndarray:
    """The other in-flight sequences' decode work in the passes that prefill a prompt, for
    an engine that fuses them into one forward (`roofline.decode_rows_in_prefill`, #10
    t10b; 0 where the engine does not mix, SGLang). Under attention DP a rank's
    ceil(b / dp) sequences share its pass."""
    rank_b = np.ceil(_col(grid, "batch") / layout_col(grid, "dp_attention"))
    rows = np.asarray(core["t_decode_rows_ms"], dtype=float)
    extra = rf.decode_rows_in_prefill(rows, rank_b, _col(grid, "input_len"), prefill_chunk(grid))
    return np.where(mixes_prefill(grid), extra, 0.0)


def _layout(row: pd.Series) -> tuple[int, int, int]:
    """The row's (pp, ep, dp_attention), 1 where the set publishes none (issue #10)."""
    out = []
    for name in ("pp", "ep", "dp_attention"):
        value = row.get(name, 1)
        out.append(1 if value is None or pd.isna(value) else int(value))
    return out[0], out[1], out[2]


def _deployment(row: pd.Series, catalog: Catalog) -> tuple[dict | None, str, str]:
    """One grid row (without batch/shape) for a measurement row, or the reason it has none."""
    model = catalog.model(row["model_id"])
    gpu = catalog.gpu(row["gpu_id"])
    tp = int(row["tp"])
    pp, ep, dp = _layout(row)
    note = ""
    if tp > gpu.scaleup_domain_gpus:
        gpu = gpu.model_copy(update={"scaleup_domain_gpus": tp})
        note = f"tp {tp} over {gpu.interconnect} (beyond the catalog's scale-up domain)"
    spec = GridSpec(
        gpus=[gpu],
        quants=[catalog.quant(row["quant_id"])],
        tps=[tp],
        kv_dtypes=[row["kv_dtype"]],
        pps=[pp],
        eps=[ep],
        dp_attentions=[dp],
    )
    ok, rejected = deployment_rows(model, spec, None, ideal=True)
    if not ok:
        return None, rejected[0]["reason"], note
    return ok[0], "", note


def build_design(
    measurements: pd.DataFrame, catalog: Catalog, profile: ProfileArg, ideal: bool = False
) -> Design:
    """Grid rows for every mapped measurement row (skipped rows included: layer-split rows
    are predicted as one sequential device); unresolvable rows go to `rejected`."""
    mapped = measurements.dropna(subset=["model_id", "gpu_id", "quant_id", "kv_dtype"])
    records, keep, rejected = [], [], []
    for idx, row in mapped.iterrows():
        dep, reason, note = _deployment(row, catalog)
        if dep is None:
            rejected.append({"row_id": row["row_id"], "reason": reason})
            continue
        batch = row["batch"]
        prof = None if ideal else _profile_for(profile, row["engine"])
        dep.update(_scheduler(row, catalog, prof))
        dep.update(
            batch=1 if math.isnan(batch) else int(batch),
            concurrency=1 if math.isnan(batch) else int(batch),
            shape_index=0,
            input_len=row["input_len"],
            output_len=row["output_len"],
            ttft_input_len=row["ttft_input_len"],
            ttft_batch=row["ttft_batch"],
            scenario_kind=row["scenario_kind"],
            wave_share=row.get("wave_share", math.nan),
            _open_batch=math.isnan(batch),
            **PLAIN_DECODING,  # issue #11: measured rows are plain decoding, no prefix cache
            _family=catalog.gpu(row["gpu_id"]).family,
            _note=note,
        )
        records.append(dep)
        keep.append(idx)
    rows = measurements.loc[keep].copy()
    grid_all = pd.DataFrame(records, index=rows.index)
    rows["gpu_family"] = grid_all["_family"] if records else []
    rows["predict_note"] = grid_all["_note"] if records else []
    groups = []
    for model_id, sub in grid_all.groupby(rows["model_id"], sort=True) if records else []:
        pos = rows.index.get_indexer(sub.index)
        grid = sub.drop(columns=["_family", "_note"]).reset_index(drop=True)
        groups.append((catalog.model(model_id), grid, pos))
    design = Design(rows=rows, groups=groups, rejected=pd.DataFrame(rejected))
    _resolve_open_batches(design, _row_effs(design, profile, ideal))
    return design


def _scheduler(row: pd.Series, catalog: Catalog, prof: EngineProfile | None) -> dict:
    """The row's engine scheduler facts (#10): its prefill chunk on that GPU and whether it
    mixes prefill into decode steps (no profile: the 8192-token chunk, mixing), the row's own
    where its harness set them (`prefill_budget_tokens`, `harness_mixes_prefill`: the aic
    rows, `aic.AIC_GENERATOR`)."""
    if prof is None:
        return {
            "_chunk_tokens": PREFILL_CHUNK_TOKENS,
            "_mixes_prefill": True,
            "_whole_prompts": False,
            "_mem_util": math.nan,
        }
    gpu = catalog.gpu(row["gpu_id"])
    chunk = prof.chunk_tokens(gpu.memory_bytes, gpu.family, prof.default.prefill_chunk_tokens)
    mixes = prof.mixes_prefill
    budget = float(row.get("prefill_budget_tokens", math.nan))
    if math.isfinite(budget):
        chunk = int(budget)
    own = float(row.get("harness_mixes_prefill", math.nan))
    if math.isfinite(own):
        mixes = bool(own)
    eff = prof.for_family(gpu.family)
    pp, _, dp = _layout(row)
    mem_util = engine_mem_util(eff, gpu.memory_bytes, int(row["tp"]), pp, dp)
    return {
        "_chunk_tokens": chunk,
        "_mixes_prefill": mixes,
        "_whole_prompts": not prof.chunked_prefill,
        "_mem_util": mem_util,
    }


def _resolve_open_batches(design: Design, effs: Sequence[Efficiency]) -> None:
    """Rows whose batch is not published run at the largest batch that fits; closed-loop
    rows hold min(concurrency, the largest batch that fits) sequences in flight."""
    for model, grid, pos in design.groups:
        open_rows = grid["_open_batch"].to_numpy(dtype=bool)
        closed = grid["scenario_kind"].to_numpy() == "closed_loop"
        if not (open_rows.any() or closed.any()):
            continue
        _set_eff(grid, [effs[i] for i in pos])
        max_batch = np.maximum(_evaluate_core(model, grid)["max_batch"], 1)
        grid.loc[open_rows, "batch"] = max_batch[open_rows]
        held = np.minimum(grid["concurrency"].to_numpy(), max_batch)
        grid.loc[closed, "batch"] = held[closed]


def _row_effs(design: Design, profile: ProfileArg, ideal: bool) -> list[Efficiency]:
    if ideal:
        return [IDEAL] * len(design.rows)
    out = []
    for engine, family in zip(design.rows["engine"], design.rows["gpu_family"], strict=True):
        prof = _profile_for(profile, engine)
        out.append(IDEAL if prof is None else prof.for_family(family))
    return out


def predict(
    measurements: pd.DataFrame, catalog: Catalog, profile: ProfileArg, ideal: bool = False
) -> pd.DataFrame:
    """The model's prediction of every mapped row's metrics.

    `profile` is one EngineProfile for every row, or a mapping engine label -> profile
    (key '*' as fallback). Which model output is compared with each measurement:

    * TPOT: `tpot_step_ms` at the row's batch and shape (single-stream and static runs have no
      prefill interleaved, so not `tpot_ms`).
    * TTFT: the prefill time of `ttft_batch` requests of `ttft_input_len` tokens (batch-1
      probes and llama-bench pp 512: no queueing, no in-flight decode).
    * Throughput: B * O / `static_batch_e2e_ms` at the published batch, or at max_batch
      when none is published (offline runs at infinite request rate). For static batches
      this is the benchmark's own definition; for offline continuous batching it is the
      steady state with prefills batched into chunks. `evaluate`'s `throughput_tok_s`
      charges every request its own prefill pass (a full weight read and the fixed prefill
      overhead each), which at batch 1000+ and short prompts under-predicts by up to 2x;
      it is kept as `throughput_serving_model` for comparison.
    * E2E: `static_batch_e2e_ms`.
    * Serving-benchmark rows (`vllm_result_rows`): at request rate inf ('serving') TTFT and
      TPOT are the means over a wave of `batch` requests arriving together
      (`serving_wave_ms`), throughput as above (the wave's output rate); at a finite rate
      ('serving_poisson') TPOT is `evaluate`'s `tpot_ms` (prefill interleaved).

    Returns the predictable rows of `measurements` with pred_* columns and diagnostics.
    """
    design = build_design(measurements, catalog, profile, ideal)
    return _assemble(design, design.evaluate(_row_effs(design, profile, ideal)))


def _assemble(design: Design, res: pd.DataFrame) -> pd.DataFrame:
    out = design.rows.copy()
    batches = np.full(len(out), np.nan)
    for _, grid, pos in design.groups:
        batches[pos] = grid["batch"].to_numpy(dtype=float)
    out["pred_batch"] = batches
    for col in res.columns:
        out[col] = res[col]
    for m in METRICS:
        out.loc[out[MEASURED[m]].isna(), PREDICTED[m]] = np.nan
    return out
