"""The AIConfigurator silicon sample (data/calibration/aic_silicon_public.csv) as measurements.

`load_aic_measurements(path, catalog)` maps each of the 1,536 served configurations
(TensorRT-LLM, vLLM, SGLang on H100/H200/B200/B300/GB200/GB300; SOURCES.md section 10) to
the columns of `load_measurements`: catalog model, GPU and quant ids, engine label, tp, the
closed-loop concurrency as `batch`, ISL/OSL, and the measured TTFT and TPOT. Every row is a
closed loop of `batch_size` clients (`scenario_kind` 'closed_loop'), predicted as
`planner estimate --concurrency` predicts it (`prediction.closed_loop_ms`).

Expert-parallel and attention-DP rows map onto the grid's layout (`perf.layout`, issue #10):
tp = tp_size, dp_attention = attention_dp_size, ep = moe_ep_size, pp = pp_size, and the grid's
MoE tensor parallel is the stage width over ep, (tp x dp) / ep, so a row is predictable when
moe_tp_size x moe_ep_size = tp_size x attention_dp_size (`aic_layout`). Rows the model cannot
represent keep a reason in `skip_reason`: disaggregated serving, pipeline parallelism, a MoE
split that is not the stage width, tensor parallelism across scale-up domains, attention
architectures the model lacks (`AIC_UNMODELLED`), a model or GPU without a catalog entry.
Assumptions (repeated in each row's `assumptions`):

* Throughput is not published; `meas_throughput` is Little's law over the closed loop,
  C * OSL / (TTFT + (OSL - 1) * TPOT): derived from the measured TTFT and TPOT, so it is
  not independent evidence (its error mixes theirs).
* `fp8_block` (128x128 block-scaled FP8) maps to the catalog's fp8 (same bytes per weight
  within 1%); `nvfp4` to fp4; `int4_wo` to int4-awq; no quant mode means the checkpoint's
  bf16.
* KV dtype is not published: FP8 for TensorRT-LLM FP8/FP4 checkpoints (ModelOpt's
  kv_cache_quant_algo FP8), else the quant's default (vLLM and SGLang `kv_cache_dtype auto`);
  TensorRT-LLM campaigns in `AIC_KV_AUTO` take the checkpoint's own KV dtype (BF16), as
  AIConfigurator's SDK reads a checkpoint, unless a hardware bound says FP8 (the campaign's
  Qwen3-32B, whose rows hold more KV than BF16 fits, session 38); vLLM's NVFP4 campaigns FP8
  (`AIC_VLLM_FP4_KV`: the ModelOpt export's declared KV, which vLLM's auto follows).
* DeepSeek-V3.1 uses the DeepSeek-V3 architecture entry (same config.json shapes).
* attention_dp_size / moe_tp_size / moe_ep_size of 0 or blank mean unset (1).

Data quality (`calibration.quality`): a series (source, model, GPU, quant, tp, ISL/OSL) whose
measured TPOT falls by more than 20% as concurrency rises is skipped as inconsistent, and a
measurement listed twice is counted once. Hardware bounds (`calibration.bounds`, t10v): a
campaign with a row needing more than 80% of the dense peak in linear-layer FLOPs is skipped,
and a campaign with a TPOT below the HBM floor at the assumed KV dtype, or (TensorRT-LLM, which
never evicts) more KV in decode than a GPU holds beside its weights, gets FP8 KV; a campaign
whose prompts need more of the 16-bit peak than any GEMM reaches and that publishes no weight
format is mapped to FP8 (`AIC_WEIGHTS_INFERRED`, `bounds.prefill_peak_share`). Campaigns
the same checkpoint on the same GPU in another engine contradicts keep their evidence in
`AIC_CONTRADICTED`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from planner.calibration.bounds import infer_fp8_kv, skip_beyond_compute
from planner.calibration.measurements import (
    DATA_DIR,
    DEFAULT_CSV,
    MEASUREMENT_COLUMNS,
    TRTLLM_FP8_KV_NOTE,
    load_measurements,
    trtllm_fp8_kv,
)
from planner.calibration.quality import skip_duplicates, skip_inconsistent_series
from planner.inputs.catalog import Catalog, load_catalog

AIC_CSV = DATA_DIR / "calibration" / "aic_silicon_public.csv"
AIC_ROW_OFFSET = 100_000  # row_id = offset + line number, apart from measured_public's ids

AIC_MODELS: dict[str, str] = {
    "Qwen/Qwen3-32B": "qwen3-32b",
    "nvidia/Qwen3-32B-NVFP4": "qwen3-32b",
    "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b",
    "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "nvidia/DeepSeek-V3.1-NVFP4": "deepseek-v3",
    # issue #10: catalogued from their config.json (catalogs/models/*.yaml provenance)
    "moonshotai/Kimi-K2.5": "kimi-k2.5",
    "MiniMaxAI/MiniMax-M2.5": "minimax-m2.5",
}
# Checkpoints whose attention the performance model does not represent (issue #10): their
# rows stay skipped with this reason rather than being predicted as plain softmax attention.
# Read from ai-dynamo/aiconfigurator src/aiconfigurator/model_configs/
# Qwen--Qwen3.5-397B-A17B_config.json @87fe4b0c and zai-org--GLM-5-FP8_config.json @691ec908
# (2026-12-01).
AIC_UNMODELLED: dict[str, str] = {
    "Qwen/Qwen3.5-397B-A17B": (
        "Qwen3.5-397B-A17B: 45 of its 60 layers are linear attention (config.json "
        "layer_types); the model has no linear-attention layers"
    ),
    "zhipuai/GLM-5": (
        "GLM-5 (model_type glm_moe_dsa) uses DeepSeek sparse attention (a top-k token "
        "indexer over MLA); the model has no sparse-attention term"
    ),
}
# (checkpoint, gemm_quant_mode) pairs whose weights are mixed precision in a way no catalog
# quant represents (issue #10). Kimi-K2.5's int4 checkpoint quantizes only the routed experts:
# its config.json quantization_config (compressed-tensors int4, group 32; ai-dynamo/
# aiconfigurator model_configs/nvidia--Kimi-K2.5-NVFP4_config.json @202f06a3) ignores
# self_attn, shared_experts, the dense MLP and lm_head, which stay bf16, while int4-awq puts
# every block weight at 4 bits (by hand: 17% fewer bytes a decode step reads at 8 sequences,
# 52% at 1, with 11.7B non-expert parameters and 44M a routed expert).
AIC_MIXED_PRECISION: dict[tuple[str, str], str] = {
    ("moonshotai/Kimi-K2.5", "int4_wo"): (
        "Kimi-K2.5 int4_wo: only the routed experts are int4 (attention, shared experts, "
        "dense MLP bf16); int4-awq would put every block weight at 4 bits"
    ),
}
# issue #10 (t10v): campaigns (backend, version, checkpoint, system) that the same
# checkpoint on the same GPU and layout in another engine contradicts, with the numbers.
AIC_CONTRADICTED: dict[tuple[str, str, str, str], str] = {
    ("vllm", "0.12.0", "Qwen/Qwen3-235B-A22B-FP8", "h200_sxm"): (
        "contradicted by SGLang 0.5.6.post2 on the same H200 and checkpoint: TPOT 51-58 ms "
        "at tp 2 and 34-46 ms at tp 4 whatever the concurrency (4-20) or ISL (1000-8000), "
        "where SGLang measured 15-18 ms at tp 2, C 2-4 and 15-21 ms at tp 4, C 7-9 (3.1-3.4x "
        "and 2.2x); a flat per-step cost no other vLLM MoE campaign shows"
    ),
}
# The same, for one weight format of a campaign (engine, version, checkpoint, system,
# gemm_quant_mode): the rest of that campaign stands
AIC_CONTRADICTED_QUANT: dict[tuple[str, str, str, str, str], str] = {
    ("sglang", "", "deepseek-ai/DeepSeek-V3", "b200_sxm", "nvfp4"): (
        "contradicted by SGLang 0.5.9 on the same B200s, model and tp 4: TTFT 5.5 s at "
        "C 4 and 6.7 s at C 8 (ISL 8192) with NVFP4 weights where the FP8 weights measured "
        "0.59 and 0.78 s (FP4 halves the prefill's GEMM time); at ISL 1024 its TTFT steps from "
        "0.43-0.60 s at C 8-16 to 7.1-9.2 s at C 32-128 at tp 4 and 8 alike: a stall of "
        "seconds that no queue of 16 more 1K-token prompts (about 0.1 s of prefill) explains"
    ),
}
# Issue #10: TensorRT-LLM campaigns (engine, version) served with the checkpoint's own KV
# dtype ("auto"), not the FP8 KV assumed for FP8/FP4 checkpoints. AIConfigurator's SDK reads
# a checkpoint's KV dtype as its kv_cache_quant_algo, else bfloat16 (ai-dynamo/aiconfigurator,
# sdk/utils.py `_infer_quant_modes_from_raw_config`); a campaign runs one KV setting.
AIC_KV_AUTO: dict[tuple[str, str], str] = {
    ("trtllm", "1.0.0rc3"): (
        "KV dtype not published: the checkpoint's own (BF16) for TensorRT-LLM 1.0.0rc3's H100 "
        "campaign, whose pre-quantized Qwen/Qwen3-235B-A22B-FP8 declares no KV quantization "
        "(assumed for its other checkpoints too, unless a hardware bound says FP8: "
        "bounds.infer_fp8_kv)"
    ),
}
# session 34: the quant's default (16-bit for FP4 on vLLM since 559f936, right for MXFP4
# gpt-oss) had put these rows at twice their KV bytes, and the vLLM fit made on FP8 went from 4
# / 19 / 4% in sample to 6 / 19 / 5%
AIC_VLLM_FP4_KV = (
    "KV dtype not published: FP8 assumed for vLLM's NVFP4 campaigns (0.17-0.19 and one "
    "unversioned), whose NVFP4 weights no base checkpoint holds (a ModelOpt export ran, which "
    "declares kv_cache_quant_algo FP8, and vLLM's auto KV follows it since "
    "vllm-project/vllm#29980)"
)
AIC_LAYOUT_COLUMNS: tuple[str, ...] = ("pp", "ep", "dp_attention")  # the grid's, issue #10
AIC_GPUS: dict[str, str] = {
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200",
    "gb300": "gb300",
}
AIC_QUANTS: dict[str, str] = {
    "fp8": "fp8",
    "fp8_block": "fp8",
    "nvfp4": "fp4",
    "int4_wo": "int4-awq",
    "": "bf16",
}
AIC_BF16_UNPUBLISHED = "weight format not published: the checkpoint's own (BF16) assumed"
# Issue #10 (s38): campaigns that publish no weight format but whose own rows rule the
# checkpoint's BF16 out. TensorRT-LLM 1.0.0rc3's Llama-3.1-8B on H100: its prompts cost the
# decode loop, at tp 1, a median 85% of the H100's BF16 dense peak in linear-layer FLOPs (14
# pairs of output lengths 128 and 512 at one concurrency and prompt length,
# `bounds.prefill_peak_share`; up to 122%), above the 80% any GEMM reaches
# (`bounds.MAX_COMPUTE_SHARE`): at FP8 it is 42%, as the same campaign's per-tensor FP8
# Qwen3-32B prefills at 47% of the FP8 peak (93% of BF16's, as impossible in 16 bits). That
# campaign lists its Qwen3-32B under the BF16 base checkpoint too, so a listed BF16 path does
# not say BF16 ran. FP8 weights and math are assumed (per-tensor, as its Qwen3-32B). The
# reading takes the others' prompts to land in a request's decode steps; prompts arriving as
# a wave land in TTFT instead, and at the TTFT fit's wave share (0.16) the median is 71%, so
# the bound is not decisive alone: leaving Hopper out (fitted on Blackwell and the public
# tables, never this campaign) predicts its TPOT 38% slow as BF16 and within 13% as FP8.
AIC_WEIGHTS_INFERRED: dict[tuple[str, str, str], tuple[str, str]] = {
    ("trtllm", "1.0.0rc3", "meta-llama/Llama-3.1-8B-Instruct"): (
        "fp8",
        "weight format not published: FP8 inferred for TensorRT-LLM 1.0.0rc3's Llama-3.1-8B, "
        "whose prompts at tp 1 cost the decode loop 85% of the BF16 dense peak (median; "
        "bounds.prefill_peak_share), more than any GEMM reaches, and 42% of the FP8 one "
        "(aic.AIC_WEIGHTS_INFERRED)",
    ),
}
AIC_ENGINES: dict[str, str] = {"vllm": "vllm", "sglang": "sglang", "trtllm": "trtllm"}
# Issue #10: the serving configuration AIConfigurator's generator writes for an aggregated
# deployment (ai-dynamo/aiconfigurator, src/aiconfigurator/generator/rule_plugin/{trtllm,
# vllm,sglang}.rule and benchmark/*.rule: TensorRT-LLM and vLLM `agg max_num_tokens =
# max_batch_size + isl + 1500`, SGLang `max_prefill_tokens = isl + 1500` with
# `enable_mixed_chunk = true`), taken as the configuration of the aic silicon rows, which the
# same project measured (its auto gap analysis and workflow runs): a pass prefills at most
# ISL + 1500 prompt tokens beside its decode tokens, and SGLang mixes them into decode steps.
AIC_PREFILL_MARGIN_TOKENS = 1500
AIC_GENERATOR = (
    "served as AIConfigurator's generator configures an aggregated deployment (assumed): "
    f"ISL + {AIC_PREFILL_MARGIN_TOKENS} prompt tokens a pass beside the decode tokens, "
    "prefill mixed into decode steps (SGLang enable_mixed_chunk)"
)
# Issue #10 (s37): the generator's CLI template for SGLang 0.5.1.post1
# (generator/config/backend_templates/sglang/cli_args.0.5.1.post1.j2) emits the mixing flag
# only for a key `enable-mix-chunk`, while backend_config_mapping.yaml maps the rule's
# enable_mixed_chunk to `enable-mixed-chunk` (the key the later templates, 0.5.6.post2 on,
# read): a 0.5.1.post1 deployment from the generator runs SGLang's default, prefill batches
# on their own, and every closed-loop round is a wave.
AIC_UNMIXED: frozenset[tuple[str, str]] = frozenset({("sglang", "0.5.1.post1")})
AIC_UNMIXED_NOTE = (
    "except that prefill is not mixed: the generator's template for this SGLang version never "
    "passes enable_mixed_chunk (aic.AIC_UNMIXED)"
)
THROUGHPUT_BASIS = "throughput: C * OSL / (TTFT + (OSL - 1) * TPOT) (Little's law, derived)"


def _int(value: object) -> int:
    """A parallelism cell as an int: blank or 0 (unset) is 1."""
    text = str(value).strip()
    return int(float(text)) if text and float(text) > 0 else 1


def _num(value: object) -> float:
    try:
        out = float(str(value).strip())
    except ValueError:
        return math.nan
    return out if math.isfinite(out) and out > 0 else math.nan


def aic_source_key(raw: pd.Series) -> str:
    """One measurement campaign: the engine and its release (or 'unversioned')."""
    version = str(raw["backend_version"]).strip() or "unversioned"
    return "aic-" + re.sub(r"[^a-z0-9.]+", "-", f"{raw['backend']}-{version}".lower())


def aic_layout(raw: pd.Series) -> dict[str, int]:
    """The row's layout in the grid's terms (`perf.layout`): tp, pp, ep, dp_attention, and
    the published moe_tp (the grid's is (tp x dp_attention) / ep)."""
    keys = ("tp_size", "pp_size", "moe_ep_size", "attention_dp_size", "moe_tp_size")
    tp, pp, ep, dp, moe_tp = (_int(raw[c]) for c in keys)
    return {"tp": tp, "pp": pp, "ep": ep, "dp_attention": dp, "moe_tp": moe_tp}


def _parallel_skips(raw: pd.Series, is_moe: bool) -> list[str]:
    """Why the row's parallelism is outside the grid's layouts (empty when it maps)."""
    if str(raw["mode"]).strip() != "agg":
        return ["disaggregated prefill/decode workers (the model has one replica type)"]
    lay = aic_layout(raw)
    tp, dp, ep, moe_tp = lay["tp"], lay["dp_attention"], lay["ep"], lay["moe_tp"]
    out = []
    if lay["pp"] > 1:
        out.append(f"pipeline parallel (pp {lay['pp']}) is not modelled")
    if not is_moe:
        return out
    if moe_tp * ep != tp * dp:
        out.append(
            f"MoE split moe_tp {moe_tp} x moe_ep {ep} differs from the stage's tp {tp} x "
            f"attention_dp {dp} GPUs (attention DP not published, or MoE over fewer GPUs)"
        )
    elif dp > 1 and ep == 1:
        out.append("attention data parallel without expert parallel is not modelled")
    return out


def _kv(engine: str, version: str, quant_id: str, catalog: Catalog) -> tuple[str, str]:
    """The KV dtype a row is predicted with, and the assumption that names it."""
    auto = AIC_KV_AUTO.get((engine, version))
    if auto is not None:
        return catalog.quants[quant_id].default_kv_dtype, auto
    if trtllm_fp8_kv(engine, quant_id):
        return "fp8", TRTLLM_FP8_KV_NOTE
    if engine == "vllm" and quant_id == "fp4":
        return "fp8", AIC_VLLM_FP4_KV
    return catalog.quants[quant_id].default_kv_dtype, "KV dtype not published: quant default"


def _contradicted(engine: str, raw: pd.Series, mode: str) -> list[str]:
    """Why the row's campaign (or that campaign's weight format) is contradicted, if it is."""
    campaign = (engine, str(raw["backend_version"]), str(raw["model_path"]), str(raw["system"]))
    reasons = [AIC_CONTRADICTED.get(campaign), AIC_CONTRADICTED_QUANT.get((*campaign, mode))]
    return [r for r in reasons if r is not None]


def _weights(engine: str, version: str, model_path: str, mode: str) -> tuple[str | None, str]:
    """The row's catalog quant and the assumption that names it ('' when published)."""
    inferred = AIC_WEIGHTS_INFERRED.get((engine, version, model_path))
    if not mode and inferred is not None:
        return inferred
    quant_id = AIC_QUANTS.get(mode)
    return quant_id, AIC_BF16_UNPUBLISHED if not mode else ""


def _checkpoint_notes(mode: str, weights_note: str, model_path: str) -> list[str]:
    """The assumptions a row's weight format and checkpoint name add."""
    notes = [weights_note] if weights_note else []
    if mode == "fp8_block":
        notes.append("fp8_block mapped to fp8")
    if "DeepSeek-V3.1" in model_path:
        notes.append("DeepSeek-V3.1 as the DeepSeek-V3 architecture")
    return notes


def _map_aic_row(n: int, raw: pd.Series, catalog: Catalog) -> dict:
    """One CSV row as a measurement row (the columns of MEASUREMENT_COLUMNS)."""
    engine = AIC_ENGINES[str(raw["backend"])]
    version = str(raw["backend_version"]).strip()
    unmixed = (engine, version) in AIC_UNMIXED  # s37: its generator template never mixes
    model_id = AIC_MODELS.get(str(raw["model_path"]))
    gpu_id = AIC_GPUS.get(str(raw["system"]))
    mode = str(raw["gemm_quant_mode"]).strip()
    quant_id, weights_note = _weights(engine, version, str(raw["model_path"]), mode)
    skips: list[str] = []
    if str(raw["model_path"]) in AIC_UNMODELLED:
        skips.append(AIC_UNMODELLED[str(raw["model_path"])])
    elif model_id is None or model_id not in catalog.models:
        skips.append(f"model '{raw['model_path']}' has no catalog entry")
    if gpu_id is None or gpu_id not in catalog.gpus:
        skips.append(f"system '{raw['system']}' has no catalog GPU")
    if quant_id is None:
        skips.append(f"gemm_quant_mode '{mode}' not mapped")
    if (str(raw["model_path"]), mode) in AIC_MIXED_PRECISION:
        skips.append(AIC_MIXED_PRECISION[(str(raw["model_path"]), mode)])
    skips += _contradicted(engine, raw, mode)
    is_moe = model_id is not None and model_id in catalog.models and catalog.model(model_id).moe
    skips += _parallel_skips(raw, bool(is_moe))
    notes = ["closed loop at concurrency batch_size", AIC_GENERATOR]
    if unmixed:
        notes.append(AIC_UNMIXED_NOTE)
    kv = None
    if quant_id is not None:
        kv, kv_note = _kv(engine, version, quant_id, catalog)
        notes.append(kv_note)
    notes += _checkpoint_notes(mode, weights_note, str(raw["model_path"]))
    conc, isl, osl = _num(raw["batch_size"]), _num(raw["isl"]), _num(raw["osl"])
    ttft, tpot = _num(raw["silicon_ttft_ms"]), _num(raw["silicon_tpot_ms"])
    thr = conc * osl / (ttft + (osl - 1.0) * tpot) * 1e3
    if math.isnan(ttft) and math.isnan(tpot):
        skips.append("no measured TTFT or TPOT")
    lay = aic_layout(raw)
    tp = lay["tp"]
    if gpu_id is not None and gpu_id in catalog.gpus:
        skips += _domain_skips(lay, catalog.gpu(gpu_id).scaleup_domain_gpus)
    return {
        "row_id": AIC_ROW_OFFSET + n,
        "source_key": aic_source_key(raw),
        "source": f"aiconfigurator silicon_sample.csv ({raw['id']}; {raw['silicon_data_source']})",
        "framework": f"{raw['backend']} {raw['backend_version']}".strip(),
        "model_raw": str(raw["model_path"]),
        "gpu_raw": str(raw["system"]),
        "precision_raw": f"{raw['precision']} gemm {mode or '-'} moe {raw['moe_quant_mode']}",
        "engine": engine,
        "engine_class": "server",
        "model_id": model_id,
        "gpu_id": gpu_id,
        "quant_id": quant_id,
        "kv_dtype": kv,
        "num_gpus": tp * lay["dp_attention"] * lay["pp"],
        "tp": tp,
        "layer_split": False,
        "batch": conc,
        "input_len": isl,
        "output_len": osl,
        "scenario_kind": "closed_loop",
        "ttft_input_len": isl,
        "ttft_batch": 1.0,
        "meas_tpot": tpot,
        "meas_ttft": ttft,
        "meas_throughput": thr,
        "meas_e2e": math.nan,
        "metric_basis": "tpot: silicon_tpot_ms; ttft: silicon_ttft_ms; " + THROUGHPUT_BASIS,
        "assumptions": "; ".join(notes),
        "skip_reason": "; ".join(skips),
        "metric_skips": "",
        "wave_share": math.nan,  # not published: the profile's fitted share applies
        "prefill_budget_tokens": isl + AIC_PREFILL_MARGIN_TOKENS,  # AIC_GENERATOR
        "harness_mixes_prefill": 0.0 if unmixed else 1.0,
        **{c: lay[c] for c in AIC_LAYOUT_COLUMNS},
    }


def _domain_skips(layout: dict[str, int], domain: int) -> list[str]:
    """Tensor parallelism must stay inside one scale-up domain (`candidates.check_tp`);
    the published tp of some wide-EP rows spans several 8-GPU servers."""
    if layout["tp"] <= domain:
        return []
    return [
        f"tensor parallel across scale-up domains (tp {layout['tp']} > the {domain}-GPU "
        "domain) is not modelled"
    ]


def load_aic_measurements(
    path: str | Path = AIC_CSV, catalog: Catalog | None = None
) -> pd.DataFrame:
    """The AIConfigurator silicon rows as measurement rows (skipped ones with a reason)."""
    catalog = catalog or load_catalog()
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    rows = [_map_aic_row(n, r, catalog) for n, r in enumerate(raw.to_dict("records"), 1)]
    keep = (*MEASUREMENT_COLUMNS, *AIC_LAYOUT_COLUMNS)
    frame = pd.DataFrame([{c: r[c] for c in keep} for r in rows])
    frame["dataset"] = "aic"
    frame = infer_fp8_kv(frame, catalog)  # issue #10 (t10v): hardware bounds
    frame = skip_beyond_compute(frame, catalog)
    frame = skip_duplicates(frame)
    return skip_inconsistent_series(frame)  # issue #10: rule-based data-quality filter


def load_all_measurements(catalog: Catalog | None = None) -> pd.DataFrame:
    """measured_public.csv and the aic set, one frame (a `dataset` column says which)."""
    catalog = catalog or load_catalog()
    public = load_measurements(DEFAULT_CSV, catalog).assign(dataset="public")
    return pd.concat([public, load_aic_measurements(AIC_CSV, catalog)], ignore_index=True)
