"""Import a Hugging Face `config.json` as a planner `Model`, and write it back as catalog YAML.

The config arrives already parsed into a dict. Every problem with it (wrong type, unsupported
architecture, a missing key, a non-positive size) becomes one `InputError` naming the key;
nothing else escapes. Parameter counts are never read from the config: the `Model` computes
them from the architecture, and the stated totals are set from that computation.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from planner.errors import InputError, close_match, short_name, shorten
from planner.schema.common import Provenance
from planner.schema.limits import MAX_CONTEXT, MAX_MODEL_COUNT
from planner.schema.model import MlaSpec, Model, MoeSpec, SlidingWindowSpec

__all__ = ["SUPPORTED_ARCHITECTURES", "default_model_id", "model_from_hf_config", "model_to_yaml"]

# architectures[0] / model_type value -> the importer that handles it
_KIND_BY_NAME: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "llama": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "qwen2": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "qwen3": "qwen3",
    "MistralForCausalLM": "mistral",
    "mistral": "mistral",
    "MixtralForCausalLM": "mixtral",
    "mixtral": "mixtral",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "qwen3_moe": "qwen3_moe",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "deepseek_v3": "deepseek_v3",
    "GptOssForCausalLM": "gpt_oss",
    "gpt_oss": "gpt_oss",
    "Gemma2ForCausalLM": "gemma2",
    "gemma2": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text",
    "gemma3_text": "gemma3_text",
    "Gemma3ForConditionalGeneration": "gemma3",
    "gemma3": "gemma3",
}

SUPPORTED_ARCHITECTURES: tuple[str, ...] = tuple(_KIND_BY_NAME)
"""The `architectures[0]` and `model_type` values this importer understands."""

_FAMILY = {
    "llama": "Llama",
    "qwen2": "Qwen2",
    "qwen3": "Qwen3",
    "mistral": "Mistral",
    "mixtral": "Mixtral",
    "qwen3_moe": "Qwen3",
    "deepseek_v3": "DeepSeek",
    "gpt_oss": "gpt-oss",
    "gemma2": "Gemma 2",
    "gemma3_text": "Gemma 3",
    "gemma3": "Gemma 3",
}

_NOTES = (
    "imported from config.json by planner model import; "
    "parameter count computed from the architecture"
)
_HF_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_HF_URL = re.compile(r"huggingface\.co/([A-Za-z0-9][\w.-]*)/([\w.-]+)")
_LAYER_TYPES = ("sliding_attention", "full_attention")
_MISSING = object()


class _Config:
    """A config dict with typed getters whose errors name the key (`text_config.hidden_size`)."""

    def __init__(self, data: dict[str, Any], prefix: str = "") -> None:
        self.data = data
        self.prefix = prefix

    def _fail(self, message: str) -> InputError:
        return InputError(f"config.json: {message}")

    def name(self, key: str) -> str:
        return f"'{self.prefix}{key}'"

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def pos_int(self, key: str, default: Any = _MISSING, maximum: int = MAX_CONTEXT) -> int:
        """A positive integer up to `maximum`; `default` when absent or null (required if no
        default)."""
        return self._int(key, default, minimum=1, maximum=maximum)

    def nonneg_int(self, key: str, default: Any = _MISSING, maximum: int = MAX_CONTEXT) -> int:
        return self._int(key, default, minimum=0, maximum=maximum)

    def _int(self, key: str, default: Any, minimum: int, maximum: int) -> Any:
        value = self.data.get(key)
        if value is None:
            if default is _MISSING:
                raise self._fail(f"missing {self.name(key)}")
            return default
        given = value
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        kind = "a positive" if minimum > 0 else "a non-negative"
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._fail(f"{self.name(key)} must be {kind} integer, got {shorten(value)}")
        if not minimum <= value <= maximum:
            raise self._fail(
                f"{self.name(key)} must be {kind} integer of at most {maximum:,}, "
                f"got {shorten(given)}"
            )
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._fail(f"{self.name(key)} must be true or false, got {shorten(value)}")
        return value

    def int_list(self, key: str) -> list[int]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise self._fail(
                f"{self.name(key)} must be a list of layer indices, got {shorten(value)}"
            )
        return value

    def reject_true(self, key: str, why: str) -> None:
        if self.flag(key, False):
            raise self._fail(f"{self.name(key)} is true, which the planner cannot model ({why})")


# ---- the architecture ---------------------------------------------------------------


def _arch_names(config: dict[str, Any]) -> list[str]:
    """The model_type and architectures[0] values present, model_type first."""
    names: list[str] = []
    model_type = config.get("model_type")
    if isinstance(model_type, str) and model_type:
        names.append(model_type)
    archs = config.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        names.append(archs[0])
    elif isinstance(archs, str) and archs:
        names.append(archs)
    return names


def _resolve_kind(config: dict[str, Any]) -> str:
    names = _arch_names(config)
    for name in names:
        if name in _KIND_BY_NAME:
            return _KIND_BY_NAME[name]
    supported = ", ".join(SUPPORTED_ARCHITECTURES)
    if not names:
        raise InputError(
            "config.json: missing 'model_type' and 'architectures'; cannot tell the "
            f"architecture (supported: {supported})"
        )
    found = " / ".join(f"'{short_name(n)}'" for n in names)
    hint = next(
        (m for m in (close_match(n, SUPPORTED_ARCHITECTURES) for n in names) if m),
        None,
    )
    did_you_mean = f" (did you mean '{hint}'?)" if hint else ""
    raise InputError(
        f"config.json: unsupported architecture {found}{did_you_mean}; supported: {supported}"
    )


# ---- pieces shared by the families --------------------------------------------------


def _core(c: _Config, *, tie_default: bool) -> dict[str, Any]:
    """Sizes every decoder has; head_dim and num_key_value_heads take the HF defaults."""
    hidden = c.pos_int("hidden_size")
    heads = c.pos_int("num_attention_heads", maximum=MAX_MODEL_COUNT)
    head_dim = c.pos_int("head_dim", default=None)
    if head_dim is None:
        if hidden % heads:
            raise InputError(
                f"config.json: no {c.name('head_dim')} and hidden_size ({hidden}) is not "
                f"divisible by num_attention_heads ({heads})"
            )
        head_dim = hidden // heads
    return {
        "hidden_size": hidden,
        "intermediate_size": c.pos_int("intermediate_size"),
        "num_hidden_layers": c.pos_int("num_hidden_layers", maximum=MAX_MODEL_COUNT),
        "num_attention_heads": heads,
        "num_key_value_heads": c.pos_int("num_key_value_heads", default=heads),
        "head_dim": head_dim,
        "vocab_size": c.pos_int("vocab_size"),
        "max_position_embeddings": c.pos_int("max_position_embeddings"),
        "tie_word_embeddings": c.flag("tie_word_embeddings", tie_default),
    }


def _attention_bias(c: _Config, default: bool = False) -> dict[str, bool]:
    """`attention_bias` puts biases on q, k, v and o (Llama, Qwen3, Gemma, gpt-oss)."""
    bias = c.flag("attention_bias", default)
    return {"qkv_bias": bias, "attention_output_bias": bias}


def _sliding_from_layer_types(c: _Config, layers: int) -> int | None:
    """Sliding layers counted from `layer_types`, or None when the config has none."""
    types = c.data.get("layer_types")
    if types is None:
        return None
    if not isinstance(types, list) or len(types) != layers:
        raise InputError(
            f"config.json: {c.name('layer_types')} must be a list of {layers} entries "
            f"(one per layer), got {shorten(types)}"
        )
    unknown = sorted({str(t) for t in types if t not in _LAYER_TYPES})
    if unknown:
        raise InputError(
            f"config.json: {c.name('layer_types')} has unsupported entries {shorten(unknown)}; "
            f"expected {', '.join(_LAYER_TYPES)}"
        )
    return sum(1 for t in types if t == "sliding_attention")


def _sliding(c: _Config, n_sliding: int, *window_keys: str) -> SlidingWindowSpec | None:
    """The window of `n_sliding` layers, read from the first of `window_keys` present."""
    if n_sliding == 0:
        return None
    key = next((k for k in window_keys if c.has(k)), window_keys[0])
    return SlidingWindowSpec(window=c.pos_int(key), n_sliding_layers=n_sliding)


def _qwen_sliding(c: _Config, layers: int) -> SlidingWindowSpec | None:
    """Qwen2/3: layers from `max_window_layers` on use the window, if `use_sliding_window`."""
    n_sliding = _sliding_from_layer_types(c, layers)
    if n_sliding is None:
        if not c.flag("use_sliding_window", False):
            return None
        n_sliding = layers - min(layers, c.nonneg_int("max_window_layers", default=layers))
    return _sliding(c, n_sliding, "sliding_window")


def _mistral_sliding(c: _Config, layers: int) -> SlidingWindowSpec | None:
    """Mistral/Mixtral: a `sliding_window` value applies to every layer (null in v0.2+)."""
    n_sliding = _sliding_from_layer_types(c, layers)
    if n_sliding is None:
        n_sliding = layers if c.has("sliding_window") else 0
    return _sliding(c, n_sliding, "sliding_window")


def _alternating_sliding(c: _Config, layers: int, pattern: int) -> int:
    """Layer i slides unless (i + 1) is a multiple of `pattern` (the HF default layout)."""
    n_sliding = _sliding_from_layer_types(c, layers)
    if n_sliding is None:
        n_sliding = layers - layers // pattern
    return n_sliding


def _experts_per_tok(c: _Config, *keys: str) -> int:
    values = {key: c.pos_int(key) for key in keys if c.has(key)}
    if not values:
        raise InputError(f"config.json: missing {c.name(keys[0])}")
    if len(set(values.values())) > 1:
        shown = ", ".join(f"{c.name(k)}={v}" for k, v in values.items())
        raise InputError(f"config.json: conflicting top-k values {shown}")
    return next(iter(values.values()))


# ---- one function per family ----------------------------------------------------------


def _llama(c: _Config) -> dict[str, Any]:
    c.reject_true("mlp_bias", "biases on the dense MLP")
    core = _core(c, tie_default=False)
    return {**core, **_attention_bias(c)}


def _qwen2(c: _Config) -> dict[str, Any]:
    core = _core(c, tie_default=False)
    # Qwen2 always has q/k/v biases and no o_proj bias.
    sliding = _qwen_sliding(c, core["num_hidden_layers"])
    return {**core, "qkv_bias": True, "sliding_window": sliding}


def _qwen3(c: _Config) -> dict[str, Any]:
    core = _core(c, tie_default=False)
    sliding = _qwen_sliding(c, core["num_hidden_layers"])
    return {**core, **_attention_bias(c), "qk_norm": True, "sliding_window": sliding}


def _mistral(c: _Config) -> dict[str, Any]:
    core = _core(c, tie_default=False)
    return {**core, "sliding_window": _mistral_sliding(c, core["num_hidden_layers"])}


def _mixtral(c: _Config) -> dict[str, Any]:
    core = _core(c, tie_default=False)
    moe = MoeSpec(
        n_routed_experts=c.pos_int("num_local_experts"),
        num_experts_per_tok=c.pos_int("num_experts_per_tok"),
        moe_intermediate_size=core["intermediate_size"],  # per expert in Mixtral
    )
    sliding = _mistral_sliding(c, core["num_hidden_layers"])
    return {**core, "moe": moe, "sliding_window": sliding}


def _qwen3_moe(c: _Config) -> dict[str, Any]:
    core = _core(c, tie_default=False)
    layers = core["num_hidden_layers"]
    n_experts = c.nonneg_int("num_experts")
    step = c.pos_int("decoder_sparse_step", default=1)
    dense_only = set(c.int_list("mlp_only_layers"))
    n_sparse = sum(
        1 for i in range(layers) if i not in dense_only and n_experts > 0 and (i + 1) % step == 0
    )
    moe = None
    if n_sparse:
        # Dense layers need not lead, but only their number matters to the counts.
        moe = MoeSpec(
            n_routed_experts=n_experts,
            num_experts_per_tok=c.pos_int("num_experts_per_tok"),
            moe_intermediate_size=c.pos_int("moe_intermediate_size"),
            first_k_dense_layers=layers - n_sparse,
        )
    sliding = _qwen_sliding(c, layers)
    return {**core, **_attention_bias(c), "qk_norm": True, "moe": moe, "sliding_window": sliding}


def _deepseek_v3(c: _Config) -> dict[str, Any]:
    c.reject_true("attention_bias", "biases on the MLA projections")
    mla = MlaSpec(
        q_lora_rank=c.pos_int("q_lora_rank", default=None),
        kv_lora_rank=c.pos_int("kv_lora_rank"),
        qk_nope_head_dim=c.pos_int("qk_nope_head_dim"),
        qk_rope_head_dim=c.pos_int("qk_rope_head_dim"),
        v_head_dim=c.pos_int("v_head_dim"),
    )
    # head_dim is the q/k width; the config's own head_dim (if any) is the rope part.
    data = {**c.data, "head_dim": mla.qk_nope_head_dim + mla.qk_rope_head_dim}
    core = _core(_Config(data, c.prefix), tie_default=False)
    layers = core["num_hidden_layers"]
    first_k = c.nonneg_int("first_k_dense_replace", default=0)
    freq = c.pos_int("moe_layer_freq", default=1)
    n_moe = sum(1 for i in range(layers) if i >= first_k and i % freq == 0)
    moe = None
    if n_moe:
        moe = MoeSpec(
            n_routed_experts=c.pos_int("n_routed_experts"),
            num_experts_per_tok=c.pos_int("num_experts_per_tok"),
            moe_intermediate_size=c.pos_int("moe_intermediate_size"),
            n_shared_experts=c.nonneg_int("n_shared_experts", default=0),
            first_k_dense_layers=layers - n_moe,
            # noaux_tc routing keeps a per-expert score-correction bias in every router.
            router_bias=c.data.get("topk_method", "noaux_tc") == "noaux_tc",
        )
    # num_nextn_predict_layers (the MTP module) is not part of the served decoder.
    return {**core, "mla": mla, "moe": moe}


def _gpt_oss(c: _Config) -> dict[str, Any]:
    core = _core(c, tie_default=False)
    layers = core["num_hidden_layers"]
    moe = MoeSpec(
        n_routed_experts=c.pos_int("num_local_experts"),
        num_experts_per_tok=_experts_per_tok(c, "num_experts_per_tok", "experts_per_token"),
        moe_intermediate_size=core["intermediate_size"],  # per expert in gpt-oss
        router_bias=True,
        expert_bias=True,
    )
    n_sliding = _alternating_sliding(c, layers, pattern=2)
    return {
        **core,
        **_attention_bias(c, default=True),
        "attention_sinks": True,
        "moe": moe,
        "sliding_window": _sliding(c, n_sliding, "sliding_window"),
    }


def _gemma2(c: _Config) -> dict[str, Any]:
    core = _core(c, tie_default=True)
    n_sliding = _alternating_sliding(c, core["num_hidden_layers"], pattern=2)
    return {
        **core,
        **_attention_bias(c),
        "norms_per_layer": 4,  # pre/post attention and pre/post feed-forward
        "sliding_window": _sliding(c, n_sliding, "sliding_window", "sliding_window_size"),
    }


def _gemma3_text(c: _Config, tie_default: bool = True) -> dict[str, Any]:
    core = _core(c, tie_default=tie_default)
    # Gemma 3 configs usually omit the pattern; 6 (5 local : 1 global) is the HF default.
    pattern = c.pos_int("sliding_window_pattern", default=6)
    n_sliding = _alternating_sliding(c, core["num_hidden_layers"], pattern=pattern)
    return {
        **core,
        **_attention_bias(c),
        "qk_norm": True,
        "norms_per_layer": 4,
        "sliding_window": _sliding(c, n_sliding, "sliding_window"),
    }


def _gemma3(c: _Config) -> dict[str, Any]:
    """Gemma3ForConditionalGeneration: the decoder lives under `text_config`."""
    text = c.data.get("text_config")
    if text is None:
        raise InputError("config.json: missing 'text_config' (the Gemma 3 text decoder)")
    if not isinstance(text, dict):
        raise InputError(f"config.json: 'text_config' must be an object, got {shorten(text)}")
    outer_tie = c.flag("tie_word_embeddings", True)
    return _gemma3_text(_Config(text, "text_config."), tie_default=outer_tie)


_BUILDERS: dict[str, Callable[[_Config], dict[str, Any]]] = {
    "llama": _llama,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen3_moe": _qwen3_moe,
    "deepseek_v3": _deepseek_v3,
    "gpt_oss": _gpt_oss,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3_text,
    "gemma3": _gemma3,
}


# ---- public API -------------------------------------------------------------------------


def _validation_message(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()) if p)
    msg = str(err.get("msg", exc)).removeprefix("Value error, ")
    return f"config.json: {where + ': ' if where else ''}{msg}"


def _hf_repo(config: dict[str, Any], source: str) -> str | None:
    """`owner/name` from `_name_or_path`, a bare repo id source, or a huggingface.co URL."""
    for candidate in (config.get("_name_or_path"), source):
        if isinstance(candidate, str) and _HF_REPO.match(candidate.strip()):
            return candidate.strip()
    url = _HF_URL.search(source)
    return f"{url.group(1)}/{url.group(2)}" if url else None


def model_from_hf_config(config: dict, model_id: str, source: str) -> Model:
    """Build a `Model` from a parsed config.json; every problem is an `InputError`."""
    if not isinstance(config, dict):
        raise InputError(
            f"config.json: expected a JSON object (a dict), got {type(config).__name__}"
        )
    if not isinstance(model_id, str) or not model_id.strip():
        raise InputError("model import: the model id must be a non-empty string")
    if not isinstance(source, str) or len(source.strip()) < 3:
        raise InputError("model import: the source must name where config.json came from")
    kind = _resolve_kind(config)
    try:
        arch = _BUILDERS[kind](_Config(config))
        hf_repo = _hf_repo(config, source)
        fields: dict[str, Any] = {
            "id": model_id,
            "name": hf_repo.rsplit("/", 1)[-1] if hf_repo else model_id,
            "hf_repo": hf_repo,
            "family": _FAMILY[kind],
            **arch,
            "provenance": Provenance(
                source=source.strip(), as_of=date.today().isoformat(), notes=_NOTES
            ),
        }
        draft = Model(**fields, stated_total_params_b=1.0)
        stated: dict[str, Any] = {"stated_total_params_b": draft.params_total / 1e9}
        if draft.is_moe:
            stated["stated_active_params_b"] = draft.params_active / 1e9
        return Model(**fields, **stated)
    except ValidationError as exc:
        raise InputError(_validation_message(exc)) from None
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        # Defensive: the getters above should have caught every malformed value already.
        raise InputError(
            f"config.json: malformed config ({type(exc).__name__}: {short_name(str(exc))})"
        ) from None


def default_model_id(config: Path) -> str:
    """A catalog id from a config.json's folder name (or another file's stem), made a safe
    file name: lower case, runs of other characters as '-' ("My Model (v2)" -> my-model-v2)."""
    stem = config.parent.name if config.name == "config.json" else config.stem
    return re.sub(r"[^a-z0-9._+-]+", "-", stem.lower()).strip("-.")[:100]


def model_to_yaml(model: Model) -> str:
    """The model as a catalog YAML document, led by a comment naming its source."""
    source = " ".join(model.provenance.source.split())
    header = f"# {model.id}: imported from {source} by planner model import\n"
    body = yaml.safe_dump(
        model.model_dump(mode="json", exclude_defaults=False),
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
    )
    return header + body
