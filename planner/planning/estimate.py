"""One deployment estimated: `planner estimate` as a library call."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.errors import InputError, plain, shorten
from planner.inputs.catalog import Catalog
from planner.perf import columns
from planner.perf import queueing as q
from planner.perf import roofline as rf
from planner.perf.candidates import (
    GridSpec,
    InvalidCombination,
    Price,
    build_table,
    default_kv_dtype,
)
from planner.perf.evaluate import GB, evaluate_table, memory_terms
from planner.perf.table import Table, values
from planner.perf.wave import first_round_ms
from planner.schema import limits
from planner.schema.bounded import Range
from planner.schema.hardware import Gpu
from planner.schema.model import Model
from planner.schema.scenario import Pricing
from planner.schema.speculative import MAX_SPEC_TOKENS

if TYPE_CHECKING:
    import pandas as pd

Row = dict[str, Any]  # one evaluated candidate by column name, with the estimate's own terms


@dataclass(frozen=True)
class EstimateRequest:
    """What to estimate; ids are checked against the catalog."""

    model: str
    gpu: str
    tp: int
    quant: str
    batch: int | None
    input_len: int
    output_len: int
    kv_dtype: str | None = None
    ideal: bool = False
    engine: str = "vllm"
    utilisation: float = 0.8
    statistic: str = "mean"
    price_usd_per_gpu_hour: float | None = None
    concurrency: int | None = None  # closed loop: C clients, next request when one finishes
    # the closed loop's prompts in all (vllm bench serve --num-prompts N): the first C arrive
    # together, so a benchmark's mean mixes that first round (C / N of them) with the steady
    # state; None: the steady state alone
    num_prompts: int | None = None
    rate: float | None = None  # open loop: Poisson arrivals, requests/s
    # issue #11: speculative decoding (off | mtp | draft) and prompt tokens served from cache
    speculative: str = "off"
    spec_tokens: int | None = None
    spec_acceptance: float | None = None
    draft_model: str | None = None
    prefix_cached_tokens: int = 0
    # multi-node replicas, expert parallel, DP attention (issue #11 parts 1-2)
    pp: int = 1
    ep: int = 1
    dp_attention: int = 1


def check_context(model: Model, input_len: int, output_len: int, where: str = "") -> None:
    """Refuse a request longer than the model's context window (max_position_embeddings)."""
    window = model.max_position_embeddings
    if input_len + output_len > window:
        raise InputError(
            f"{where}input {input_len} + output {output_len} = {input_len + output_len} tokens "
            f"exceeds the context window of {model.id} ({window} tokens); shorten the request "
            f"or pick a model with a longer window"
        )


_OPTION_RANGES = {
    "tp": Range(0, limits.MAX_TP, low_open=True, whole=True),
    "pp": Range(0, limits.MAX_TP, low_open=True, whole=True),
    "ep": Range(0, limits.MAX_TP, low_open=True, whole=True),
    "dp_attention": Range(0, limits.MAX_TP, low_open=True, whole=True),
    "batch": Range(0, limits.MAX_BATCH, low_open=True, unit="sequences", whole=True),
    "concurrency": Range(0, limits.MAX_BATCH, low_open=True, unit="clients", whole=True),
    "num_prompts": Range(0, limits.MAX_JOB_REQUESTS, low_open=True, unit="prompts", whole=True),
    "input_len": Range(0, limits.MAX_TOKENS, low_open=True, unit="tokens", whole=True),
    "output_len": Range(0, limits.MAX_TOKENS, low_open=True, unit="tokens", whole=True),
    "utilisation": Range(0, 1, low_open=True, high_open=True),
    "spec_tokens": Range(0, MAX_SPEC_TOKENS, low_open=True, unit="tokens", whole=True),
    "spec_acceptance": Range(0, 1, low_open=True, high_open=True),
    "prefix_cached_tokens": Range(0, limits.MAX_TOKENS, unit="tokens", whole=True),
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


def _check_load(req: EstimateRequest) -> None:
    """One load at most: a closed loop of C clients or Poisson arrivals at a finite rate."""
    if req.concurrency is not None and req.rate is not None:
        raise InputError("--concurrency and --rate: give one load, not both")
    if req.rate is not None and not (req.rate > 0 and math.isfinite(req.rate)):
        raise InputError(f"--rate: must be a positive number of requests/s, got {req.rate}")
    if req.num_prompts is not None and req.concurrency is None:
        raise InputError(
            "--num-prompts: the prompts of a closed loop; give --concurrency C as well "
            "(vllm bench serve --max-concurrency C --num-prompts N)"
        )
    if req.num_prompts is not None and req.concurrency and req.num_prompts < req.concurrency:
        raise InputError(
            f"--num-prompts: {req.num_prompts} is fewer than --concurrency "
            f"{req.concurrency}; the first round alone sends {req.concurrency} prompts"
        )


_POOL_OPTIONS = ("prefill_tp", "prefill_workers", "prefill_ep", "prefill_dp_attention",
                 "decode_tp", "decode_workers", "decode_ep", "decode_dp_attention")  # fmt: skip
_SPEC_OPTIONS = ("spec_tokens", "spec_acceptance", "draft_model")
_CLI_NAMES = {"utilisation": "utilization", "price_usd_per_gpu_hour": "price"}


def given_options(req: EstimateRequest, extra: Mapping[str, Any] | None = None) -> dict:
    """The request's options that differ from their defaults, by command-line name, with
    `extra` (a library call's --disaggregated pools), for `check_used`."""
    given = {
        _CLI_NAMES.get(f.name, f.name): getattr(req, f.name)
        for f in fields(req)
        if getattr(req, f.name) != f.default
    }
    return given | dict(extra or {})


# what the pools do anyway (--speculative off, --pp 1 under --disaggregated leave nothing
# unused), and what they do not model
_POOLS_DO = {"speculative": "off", "prefix_cached_tokens": 0, "pp": 1, "ep": 1, "dp_attention": 1}
_NOT_POOLED = {
    **dict.fromkeys(("speculative", *_SPEC_OPTIONS), "speculative decoding"),
    "prefix_cached_tokens": "the prefix cache",
    "pp": "pipeline parallelism",
}


def _unused_by_pools(name: str, given: Mapping[str, Any]) -> str | None:
    """Why `--disaggregated` leaves option `name` unused (and what to do), or None."""
    if given[name] == _POOLS_DO.get(name, ...):
        return None
    if name in _NOT_POOLED:
        return (
            f"{_NOT_POOLED[name]} is not modelled for --disaggregated pools; leave it out, "
            "or drop --disaggregated"
        )
    if name in ("ep", "dp_attention"):
        role = name.replace("_", "-")
        return f"each --disaggregated pool takes its own: give --prefill-{role} and --decode-{role}"
    if name == "tp" and {"prefill_tp", "decode_tp"} <= set(given):
        return (
            "--prefill-tp and --decode-tp set both pools' tp (--tp is their default); leave it out"
        )
    return None


def _unused_why(name: str, given: Mapping[str, Any]) -> str | None:
    """Why the other options given leave option `name` unused (and what to do), or None
    if it is used."""
    if given.get("disaggregated"):
        why = _unused_by_pools(name, given)
        if why:
            return why
    elif name in _POOL_OPTIONS:
        return "an option of the --disaggregated pools; add --disaggregated, or leave it out"
    if name in _SPEC_OPTIONS and given.get("speculative", "off") == "off":
        return "a setting of speculative decoding; add --speculative mtp or draft, or leave it out"
    if name == "draft_model" and given.get("speculative") == "mtp":
        return "the drafter of --speculative draft; mtp drafts with a head of the model itself"
    if name == "engine" and given.get("ideal"):
        return "--ideal is the roofline of no engine (efficiency 1, no overheads); give one of them"
    if name == "utilization" and {"concurrency", "rate"} & set(given):
        return "the planning load when neither --concurrency nor --rate is given; leave it out"
    return None


def check_used(given: Mapping[str, Any]) -> None:
    """Exit 2 on an option that the others given leave unused (`--speculative` under
    `--disaggregated`, `--spec-tokens` without `--speculative`, `--decode-workers` without
    `--disaggregated` were accepted and changed nothing), naming it, its value and why."""
    for name, value in given.items():
        why = _unused_why(name, given)
        if why:
            shown = "" if isinstance(value, bool) else f" {value}"
            raise InputError(f"--{name.replace('_', '-')}{shown}: {why}")


def _price(gpu: Gpu, override: float | None) -> Price | None:
    if override is not None:
        return Price(override, "command line", "--price", "given", assumption=True)
    row = gpu.price(Pricing().tier)
    return Price(row.usd_per_gpu_hour, row.provider, row.source, row.as_of) if row else None


def one_row_grid(
    req: EstimateRequest, catalog: Catalog, batch: int, tp: int, where: str = "", **axes: Any
) -> tuple[Model, Table]:
    """The request's one-row candidate grid at `batch` sequences and `tp`, with any further
    grid axes (`GridSpec` fields: speculation, layouts, roles); exit 2 when it cannot run,
    `where` naming the option at fault."""
    model, gpu = catalog.model(req.model), catalog.gpu(req.gpu)
    quant, engine = catalog.quant(req.quant), catalog.engine(req.engine)
    if not req.ideal and not engine.runs_on(gpu.family):
        raise InputError(
            f"--engine {engine.id} does not run on {gpu.id} ({gpu.vendor} {gpu.family}): "
            f"{engine.hardware()}; choose another --engine (vllm, sglang) or --gpu"
        )
    if not req.ideal and not engine.runs_quant(quant.id):
        raise InputError(
            f"--engine {engine.id} does not run --quant {quant.id}: {engine.formats()}; "
            "choose one of those or another --engine (vllm, sglang)"
        )
    kv = req.kv_dtype or default_kv_dtype(quant, engine, req.ideal)
    price = _price(gpu, req.price_usd_per_gpu_hour)
    spec = GridSpec(
        gpus=[gpu],
        quants=[quant],
        tps=[tp],
        kv_dtypes=[kv],
        batches=[batch],
        shapes=[(req.input_len, req.output_len)],
        prices={gpu.id: price} if price else {},
        **axes,
    )
    grid, rejected = build_table(model, spec, engine, ideal=req.ideal)
    if grid.empty:
        reason = rejected["reason"][0] if not rejected.empty else "unknown reason"
        raise InputError(f"{where}impossible combination: {reason}")
    return model, grid


def _grid(req: EstimateRequest, catalog: Catalog, batch: int) -> tuple[Model, Table]:
    """The one-row grid of the request at `batch` sequences in flight."""
    model = catalog.model(req.model)
    return one_row_grid(
        req,
        catalog,
        batch,
        req.tp,
        speculative=_spec(req, model, catalog),
        prefix_cached_tokens=req.prefix_cached_tokens,
        pps=[req.pp],
        eps=[req.ep],
        dp_attentions=[req.dp_attention],
    )


def _spec(req: EstimateRequest, model: Model, catalog: Catalog) -> list:
    """The one speculation setting asked for (issue #11)."""
    from planner.planning.speculation import SpecRequest, spec_options

    if req.speculative == "off":
        return spec_options(model, SpecRequest(), catalog)
    ask = SpecRequest(
        (req.speculative,), req.spec_tokens, req.spec_acceptance, req.draft_model, "--speculative"
    )
    return spec_options(model, ask, catalog)


def _check_prefix(req: EstimateRequest) -> None:
    if req.prefix_cached_tokens >= req.input_len:
        raise InputError(
            f"--prefix-cached-tokens: {req.prefix_cached_tokens} must be less than "
            f"--input-len {req.input_len} (at least one prompt token is new)"
        )


def _row(req: EstimateRequest, catalog: Catalog, batch: int, statistic: str) -> Row:
    """The request evaluated at `batch` sequences, its memory as the fit test counts it."""
    model, grid = _grid(req, catalog, batch)
    row = columns.shortest_floats(evaluate_table(model, grid, req.utilisation, statistic).row(0))
    row.update(memory_fit(model, grid))
    return row


def memory_fit(model: Model, grid: Table) -> Row:
    """One accounting of a one-row grid's memory per GPU, in GB: the total is what the fit
    test weighs against the usable memory (`perf.evaluate.memory_terms`: a full prefill
    chunk's workspace held back before the KV pool is sized, and each sequence's logits),
    so it is above the usable memory exactly when the row does not fit, short by the
    difference. The grid's own total counted only this prompt's activations and read
    '76.3 GB of 77.0 usable (DOES NOT FIT: short by 0.3 GB)'."""
    t = {k: float(v[0]) for k, v in memory_terms(model, grid).items()}
    needed, usable = t["needed"], t["usable"]
    return {
        "memory_per_gpu_gb": needed / GB,
        "memory_usable_gb": usable / GB,
        "fits": needed <= usable,
        "memory_shortfall_gb": max(needed - usable, 0.0) / GB,
        # the parts of the total: weights, KV cache, drafter and shared prefix are the
        # grid's columns; these are the rest
        "activations_per_gpu_gb": (t["workspace"] + t["rank_batch"] * t["logits"]) / GB,
        "runtime_reserve_per_gpu_gb": t["reserve"] / GB,
    }


def refuse_unfit(req: EstimateRequest, row: Row) -> None:
    """Exit 2 when not one sequence fits (the largest batch is 0): the model's weights, or
    with them one request's KV cache, exceed the usable memory of a GPU."""
    if int(row["max_batch"]) >= 1:
        return
    weights, usable = float(row["weights_per_gpu_gb"]), float(row["memory_usable_gb"])
    what = (
        f"weights {weights:.1f} GB per GPU against {usable:.1f} GB usable"
        if weights >= usable
        else f"weights {weights:.1f} GB per GPU leave no room in {usable:.1f} GB usable for "
        f"one sequence of {req.input_len} + {req.output_len} tokens"
    )
    raise InputError(
        f"{req.model} does not fit on {int(row['gpus_per_replica'])} x {req.gpu} at "
        f"{req.quant}: {what}{_engine_fraction_note(row)}; try a larger --tp, a smaller "
        "--quant or a bigger --gpu"
    )


def _engine_fraction_note(row: Row) -> str:
    """Where the engine derives its memory fraction from the GPU and layout (SGLang), say
    what it came to: its reserve grows with the width and the attention-DP ranks (#10)."""
    if not bool(row.get("eff_mem_util_by_gpu", False)):
        return ""
    return (
        f" (the engine's own default memory fraction here is {float(row['eff_mem_util']):.3f}: "
        "its reserve for activations and CUDA graphs grows with tp x dp-attention and pp, "
        "so a narrower --dp-attention or --tp leaves more)"
    )


def _max_num_seqs(req: EstimateRequest, catalog: Catalog) -> int:
    """--batch is the engine's max_num_seqs; without it, the engine's default on this GPU."""
    return req.batch if req.batch is not None else default_max_num_seqs(req, catalog)


def default_max_num_seqs(req: EstimateRequest, catalog: Catalog) -> int:
    """The engine's own max_num_seqs on the request's GPU (vLLM: 1024 on 70 GiB and more,
    except the A100; 256 elsewhere and for the other engines)."""
    gpu = catalog.gpu(req.gpu)
    return catalog.engine(req.engine).max_num_seqs_on(gpu.memory_bytes, gpu.family)


def _in_flight_cap(req: EstimateRequest, catalog: Catalog) -> tuple[int, int]:
    """(max_num_seqs, the most sequences memory holds at this shape)."""
    seqs = _max_num_seqs(req, catalog)
    probe = _row(req, catalog, 1, "none")
    refuse_unfit(req, probe)
    return seqs, int(probe["max_batch"])


def closed_loop(req: EstimateRequest, catalog: Catalog, concurrency: int) -> Row:
    """C clients in a closed loop (`vllm bench serve --max-concurrency C`, AIPerf, SGLang
    bench_serving): b = min(C, max_num_seqs, what memory holds) sequences decode at once;
    throughput R = b / (O step(b) + b t_pf) (Little's law over the batch); TTFT = the
    prefill on the replica + the other b - 1 sequences' decode work in its fused passes
    (`_fused_rows_ms`) + the prefills of the other b - 1 ahead of it (M/D/1) + the
    wait of requests beyond b for a free sequence slot, (C - b) / R. TPOT is at batch b;
    the rate served is min(R, C / (TTFT + (O - 1) TPOT)) (clients wait out their TTFT),
    and the cost is at that rate."""
    seqs, held = _in_flight_cap(req, catalog)
    b = max(min(concurrency, seqs, held), 1)
    row = _row(req, catalog, b, "none")
    rate = float(row["requests_per_s"])
    share = float(row["prefill_share_ms"]) * 1e-3
    others = rate * (b - 1) / b  # the prefills of the other b - 1 in-flight clients
    queue = float(q.wait_for_prefill(others, share, req.statistic))
    slot = max(concurrency - b, 0) / rate
    fused = _fused_rows_ms(req, catalog, row, b)  # the others' decode work in its passes
    _ttft_terms(row, queue * 1e3, slot * 1e3, fused)
    _first_round(req, catalog, row, b, slot * 1e3)
    # Little's law over the clients: each is idle for its request's per-request latency
    life_s = (float(row["ttft_ms"]) + (req.output_len - 1) * float(row["tpot_ms"])) * 1e-3
    served = min(rate, concurrency / life_s)
    cap = max(min(seqs, held), 1)
    capacity = rate if cap == b else float(_row(req, catalog, cap, "none")["requests_per_s"])
    _at_load(row, req.output_len, served, (rate, capacity, cap))
    return _with_load(row, "concurrency", concurrency, b, seqs)


def _at_load(row: Row, output_len: int, served: float, caps: tuple[float, float, int]) -> None:
    """Set on `row` the rate it serves and its cost at that rate, beside the replica's
    capacity: `caps` is (R at the batch in flight, R at the most it holds, that batch).

    The evaluated row's cost is solve's, at the planned share of capacity
    (`perf.evaluate._serving`); an estimate at a given load costs what that load is
    served at: $/request = $/h / (3600 x req/s served), $/1K output tokens that / O x 1000."""
    at_batch, capacity, cap_batch = caps
    row["requests_per_s"] = served
    row["throughput_tok_s"] = served * output_len
    row["in_flight_capacity_requests_per_s"] = at_batch
    row["capacity_requests_per_s"] = capacity
    row["capacity_tok_s"] = capacity * output_len
    row["capacity_batch"] = cap_batch
    cost_h = float(row["cost_per_hour_usd"])
    row["cost_per_request_usd"] = cost_h / (3600.0 * served)
    row["cost_per_1k_output_tokens_usd"] = row["cost_per_request_usd"] / output_len * 1e3


def _first_round(req: EstimateRequest, catalog: Catalog, row: Row, b: int, slot_ms: float) -> None:
    """Mix a benchmark's first round into the closed loop's steady TTFT and TPOT on `row`.

    `vllm bench serve --max-concurrency C --num-prompts N` (and AIPerf, SGLang
    bench_serving) starts its C clients together: their first prompts reach an idle replica
    as one wave of b (`perf.wave.first_round_ms`, the same first round the calibration
    compares the aic and vLLM closed loops with), each with the per-request
    latency, the clients beyond b waiting for a slot; the stagger of that wave's prefills
    spreads the later rounds into the steady state. The benchmark's means mix the two, a
    share f = C / N in the wave: TTFT = S + f (W - S), TPOT likewise; the f (W - S) terms
    are `ttft_first_round_ms` and `tpot_first_round_ms` (0 without --num-prompts)."""
    if req.num_prompts is None or req.concurrency is None:
        return
    model, grid = _grid(req, catalog, b)
    wave = evaluate_table(model, grid, req.utilisation, "none")
    engine = catalog.engine(req.engine)
    wave = wave.assign(
        _mixes_prefill=engine.mixes_prefill, _whole_prompts=not engine.chunked_prefill
    )
    step = values(wave, "tpot_step_ms", float)
    w_ttft, w_tpot = first_round_ms(model, wave, step, values(wave, "t_decode_rows_ms"), slot_ms)
    share = req.concurrency / req.num_prompts
    row["num_prompts"] = req.num_prompts
    row["first_round_share"] = share
    row["ttft_first_round_ms"] = share * (float(w_ttft[0]) - float(row["ttft_ms"]))
    row["tpot_first_round_ms"] = share * (float(w_tpot[0]) - float(row["tpot_ms"]))
    row["ttft_ms"] = float(row["ttft_ms"]) + float(row["ttft_first_round_ms"])
    row["tpot_ms"] = float(row["tpot_ms"]) + float(row["tpot_first_round_ms"])


def _fused_rows_ms(req: EstimateRequest, catalog: Catalog, row: Row, b: int) -> float:
    """The other b - 1 sequences' decode work in the passes that prefill a prompt, on an
    engine that runs them as one forward (`roofline.decode_rows_in_prefill`, #10 t10b;
    0 for an engine that does not mix, SGLang)."""
    if not catalog.engine(req.engine).mixes_prefill:
        return 0.0
    rank_b = math.ceil(b / req.dp_attention)
    new = req.input_len - req.prefix_cached_tokens
    chunk = float(row["eff_prefill_chunk_tokens"])
    extra = rf.decode_rows_in_prefill(float(row["t_decode_rows_ms"]), rank_b, new, chunk)
    return float(extra)


def open_loop(req: EstimateRequest, catalog: Catalog, rate: float) -> Row:
    """Poisson arrivals at `rate` requests/s: the batch in flight b is the least that
    Little's law allows, b >= rate x (TTFT + (O - 1) TPOT(b)), and that serves the rate,
    R(b) >= rate (`in_flight_batch`), capped by max_num_seqs and memory at c; TTFT adds the
    M/D/c wait for one of the c slots, each held b / R(b) (busy about b / c of the time:
    no wait to speak of until the slots fill), and the M/D/1 wait behind other prefills,
    at that rate. A rate beyond the capacity at c is refused; the cost is at the rate
    served."""
    seqs, held = _in_flight_cap(req, catalog)
    cap = max(min(seqs, held), 1)
    row_at = functools.cache(lambda n: _row(req, catalog, n, "none"))  # bisection asks again
    full = row_at(cap)
    capacity = float(full["requests_per_s"])
    if rate >= capacity:
        raise InputError(
            f"--rate {plain(rate)} req/s: at or beyond this deployment's capacity of "
            f"{plain(capacity)} req/s ({cap} sequence{'s' * (cap != 1)} in flight); the queue "
            "would grow without bound. Lower the rate, or add replicas (planner solve)"
        )
    b = in_flight_batch(row_at, rate, req.output_len, cap)
    row = row_at(b)
    # a request holds its slot b / R(b) (Little's law over the b slots at their rate R(b)),
    # so the c slots are busy rate x that / c of the time: b / c and below, as R(b) >= rate
    held_s = b / float(row["requests_per_s"])
    busy = rate * held_s / cap
    share = float(row["prefill_share_ms"]) * 1e-3
    slot = float(np.asarray(q.wait_for_slot(cap, busy, held_s, req.statistic)))
    queue = float(q.wait_for_prefill(rate, share, req.statistic))
    _ttft_terms(row, queue * 1e3, slot * 1e3, 0.0)
    _at_load(row, req.output_len, rate, (float(row["requests_per_s"]), capacity, cap))
    return _with_load(row, "rate", rate, b, seqs)


def in_flight_batch(row_at: Callable[[int], Row], rate: float, output_len: int, cap: int) -> int:
    """The least batch b in [1, cap] an open loop at `rate` keeps in flight: Little's law,
    b >= rate x (TTFT idle + (O - 1) TPOT(b)), with the rate served, R(b) >= rate; cap when
    none below it does (the slots are full). Bisection on the integers: at most
    ceil(log2 cap) rows, where fixed-point steps stopped short near capacity (66 in flight
    where 109 were)."""

    def enough(b: int) -> bool:
        row = row_at(b)
        life_s = (float(row["ttft_unloaded_ms"]) + (output_len - 1) * float(row["tpot_ms"])) / 1e3
        return b >= rate * life_s and float(row["requests_per_s"]) >= rate

    return least_batch(enough, cap)


def least_batch(enough: Callable[[int], bool], cap: int) -> int:
    """The least whole batch b in [1, cap] with enough(b), cap when none below it has:
    a bisection (ceil(log2 cap) calls), as `enough` holds from some batch on."""
    lo, hi = 0, cap  # enough(hi) or hi == cap; not enough(lo) (no batch of 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


def _ttft_terms(row: Row, prefill_wait_ms: float, slot_wait_ms: float, fused_ms: float) -> None:
    """Set ttft_ms and its terms on `row`: the prompt's own prefill, half a decode step (the
    step in flight when it arrives), the step an overlap scheduler had already launched
    (TensorRT-LLM, `scheduler_lag_steps`), the engine's per-request latency (host work the GPU
    model does not see: HTTP, tokenisation, scheduling; fitted per engine, and the constant
    that differs most between stacks), the other sequences' decode work in its fused
    passes, the wait behind other prefills and the wait for a free sequence slot."""
    prefill_wait_ms, slot_wait_ms = negligible(prefill_wait_ms), negligible(slot_wait_ms)
    prefill, request = float(row["prefill_ms"]), float(row["eff_request_overhead_ms"])
    row["ttft_prefill_ms"] = prefill
    row["ttft_request_ms"] = request
    lag = float(row["ttft_scheduler_lag_ms"])
    row["ttft_step_align_ms"] = float(row["ttft_unloaded_ms"]) - prefill - request - lag
    row["ttft_fused_ms"] = fused_ms
    row["ttft_prefill_wait_ms"] = prefill_wait_ms
    row["ttft_slot_wait_ms"] = slot_wait_ms
    row["ttft_ms"] = float(row["ttft_unloaded_ms"]) + prefill_wait_ms + slot_wait_ms + fused_ms


NEGLIGIBLE_WAIT_MS = 1e-6  # a nanosecond: a queue's tail below it is no wait (not 3.2e-147)


def negligible(wait_ms: float) -> float:
    """A wait in ms, 0 below a nanosecond: the M/D/c tail at a low load is 1e-147 ms."""
    return 0.0 if wait_ms < NEGLIGIBLE_WAIT_MS else wait_ms


FIRST_ROUND_FIELDS = ("num_prompts", "first_round_share", "ttft_first_round_ms",
                      "tpot_first_round_ms")  # fmt: skip


def _with_load(row: Row, kind: str, value: float, in_flight: int, seqs: int) -> Row:
    for name in FIRST_ROUND_FIELDS:  # no benchmark's first round unless --num-prompts set it
        if name not in row:
            row[name] = 0
    row["load_kind"] = kind
    row["load_value"] = value
    row["batch_in_flight"] = in_flight
    row["max_num_seqs"] = seqs
    return row


def planned_load(req: EstimateRequest, catalog: Catalog) -> Row:
    """`batch` (max_num_seqs) sequences kept full at the `utilisation` share of their
    capacity, as `solve` plans a replica: the evaluated row's own queueing and cost, the
    rate served that share of the capacity R(batch)."""
    batch = _max_num_seqs(req, catalog)
    row = _row(req, catalog, batch, req.statistic)
    refuse_unfit(req, row)
    slot_time = req.output_len * float(row["tpot_ms"]) * 1e-3
    slot = float(np.asarray(q.wait_for_slot(batch, req.utilisation, slot_time, req.statistic)))
    queue = float(row["ttft_ms"]) - float(row["ttft_unloaded_ms"]) - slot * 1e3
    _ttft_terms(row, queue, slot * 1e3, 0.0)
    capacity = float(row["requests_per_s"])
    _at_load(row, req.output_len, req.utilisation * capacity, (capacity, capacity, batch))
    return _with_load(row, "utilization", req.utilisation, batch, batch)


def estimate(req: EstimateRequest, catalog: Catalog) -> pd.Series:
    """Every metric of one (model, gpu, tp, quant, kv, shape) at one load (`estimate_row`)
    as a pandas Series, for library users."""
    import pandas as pd

    return pd.Series(estimate_row(req, catalog), dtype=object)


def estimate_row(req: EstimateRequest, catalog: Catalog) -> Row:
    """Every metric of one (model, gpu, tp, quant, kv, shape) at one load: a closed loop of
    `concurrency` clients, an open loop at `rate`, or (neither) `batch` sequences at the
    planned utilisation, as `solve` plans. A dict by column name (no pandas: issue 16).

    A few names are the estimate's own, not the grid's column of that name: at every
    load, `requests_per_s` and `throughput_tok_s` are what the replica serves and the cost
    per request and per 1K output tokens are at that rate, `capacity_requests_per_s` and
    `capacity_tok_s` the most it serves (`capacity_batch` in flight); the memory figures
    are the fit test's (`memory_fit`). `tpot_ms` is NaN with one output token."""
    _check_ranges(req)
    _check_load(req)
    _check_prefix(req)
    check_used(given_options(req))
    model = catalog.model(req.model)
    check_context(model, req.input_len, req.output_len)
    if req.concurrency is not None:
        row = closed_loop(req, catalog, req.concurrency)
    elif req.rate is not None:
        row = open_loop(req, catalog, req.rate)
    else:
        row = planned_load(req, catalog)
    row["model"] = model.id
    row["engine"] = "ideal" if req.ideal else catalog.engine(req.engine).id
    row["gpus"] = int(row["gpus_per_replica"])
    if req.output_len < 2:  # TPOT is the time between tokens: none with one output token
        row["tpot_ms"] = math.nan
        if row["num_prompts"]:  # the first round's share of a TPOT that is not there
            row["tpot_first_round_ms"] = math.nan
    return row


__all__ = ["EstimateRequest", "InvalidCombination", "estimate"]
