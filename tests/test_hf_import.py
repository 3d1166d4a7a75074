"""planner.inputs.hf_import: HF config.json -> Model, parameter counts pinned to models.csv."""

from __future__ import annotations

import contextlib
import copy
import json
from datetime import date
from pathlib import Path

import pytest
import yaml

from planner.errors import InputError
from planner.inputs.hf_import import SUPPORTED_ARCHITECTURES, model_from_hf_config, model_to_yaml
from planner.schema.model import Model

FIXTURES = Path(__file__).parent / "fixtures" / "hf_configs"
SOURCE = "huggingface.co config.json (test fixture)"


def load(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def build(name: str, config: dict | None = None) -> Model:
    return model_from_hf_config(load(name) if config is None else config, name, SOURCE)


# (fixture, total, active): computed_total_params / computed_active_params, copied verbatim
# from /work/shared/reference/models.csv (rows llama-3.1-8b, qwen2.5-7b, qwen3-32b,
# mistral-7b-v0.3, mixtral-8x7b, qwen3-30b-a3b, gpt-oss-20b, gemma-3-27b).
EXACT = [
    ("llama-3.1-8b", 8_030_261_248, 8_030_261_248),
    ("qwen2.5-7b", 7_615_616_512, 7_615_616_512),
    ("qwen3-32b", 32_762_123_264, 32_762_123_264),
    ("mistral-7b", 7_248_023_552, 7_248_023_552),
    ("mixtral-8x7b", 46_702_792_704, 12_879_925_248),
    ("qwen3-30b-a3b", 30_532_122_624, 3_353_032_704),
    ("gpt-oss-20b", 20_914_757_184, 4_187_440_704),
    ("gemma-3-27b", 27_009_002_240, 27_009_002_240),
]

# models.csv row deepseek-v3: computed_total_params 671026419200,
# computed_active_params 37552282624.
DEEPSEEK_V3_TOTAL = 671_026_419_200
DEEPSEEK_V3_ACTIVE = 37_552_282_624
# The CSV counts the router's e_score_correction_bias (256 per MoE layer x 58 layers) in the
# total but not in the active count; Model counts it in both (it is read for every token).
DEEPSEEK_V3_ROUTER_BIAS = 58 * 256


@pytest.mark.parametrize(("name", "total", "active"), EXACT, ids=[e[0] for e in EXACT])
def test_parameter_counts_match_models_csv_exactly(name: str, total: int, active: int) -> None:
    model = build(name)
    assert model.params_total == total
    assert model.params_active == active
    assert model.stated_total_params_b == total / 1e9
    if model.is_moe:
        assert model.stated_active_params_b == active / 1e9
    else:
        assert model.stated_active_params_b is None


def test_deepseek_v3_counts_match_models_csv_within_tolerance() -> None:
    model = build("deepseek-v3")
    assert model.params_total == DEEPSEEK_V3_TOTAL
    assert model.params_active == pytest.approx(DEEPSEEK_V3_ACTIVE, rel=1e-3)
    # The whole known discrepancy, pinned so any other drift fails.
    assert model.params_active - DEEPSEEK_V3_ACTIVE == DEEPSEEK_V3_ROUTER_BIAS


def test_deepseek_v3_structure() -> None:
    model = build("deepseek-v3")
    assert model.head_dim == 192  # qk_nope 128 + qk_rope 64
    assert model.mla is not None and model.mla.q_lora_rank == 1536
    assert model.kv_elements_per_token_per_layer == 576  # 70,272 B / 61 layers / 2 B
    assert model.moe is not None
    assert (model.moe.n_routed_experts, model.moe.n_shared_experts) == (256, 1)
    assert model.n_dense_layers == 3 and model.n_moe_layers == 58


def test_sliding_window_layouts_match_models_csv() -> None:
    gpt = build("gpt-oss-20b")
    assert gpt.sliding_window is not None
    assert (gpt.sliding_window.window, gpt.n_sliding_layers, gpt.n_global_layers) == (128, 12, 12)
    gemma = build("gemma-3-27b")
    assert gemma.sliding_window is not None
    assert (gemma.sliding_window.window, gemma.n_sliding_layers) == (1024, 52)
    assert gemma.n_global_layers == 10
    for dense in ("llama-3.1-8b", "qwen2.5-7b", "qwen3-32b", "mistral-7b", "mixtral-8x7b"):
        assert build(dense).sliding_window is None, dense


def test_family_flags() -> None:
    gemma = build("gemma-3-27b")
    assert gemma.tie_word_embeddings  # absent from the config: HF default true
    assert gemma.qk_norm and gemma.norms_per_layer == 4
    assert gemma.family == "Gemma 3"
    gpt = build("gpt-oss-20b")
    assert gpt.qkv_bias and gpt.attention_output_bias and gpt.attention_sinks
    assert gpt.moe is not None and gpt.moe.router_bias and gpt.moe.expert_bias
    qwen2 = build("qwen2.5-7b")
    assert qwen2.qkv_bias and not qwen2.attention_output_bias
    assert build("qwen3-32b").qk_norm
    mixtral = build("mixtral-8x7b")
    assert mixtral.moe is not None and mixtral.moe.moe_intermediate_size == 14336


def test_metadata_and_provenance() -> None:
    model = build("llama-3.1-8b")
    assert model.id == "llama-3.1-8b"
    assert model.hf_repo == "meta-llama/Llama-3.1-8B"  # from _name_or_path
    assert model.provenance.source == SOURCE
    assert model.provenance.as_of == date.today().isoformat()
    assert "computed from the architecture" in (model.provenance.notes or "")
    url = "https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json"
    assert model_from_hf_config(load("gpt-oss-20b"), "g", url).hf_repo == "openai/gpt-oss-20b"
    assert build("qwen3-32b").hf_repo is None  # no repo in the config or the source


def test_defaults_for_missing_head_dim_and_kv_heads() -> None:
    config = load("mistral-7b")  # has no head_dim
    assert build("mistral-7b", config).head_dim == 4096 // 32
    config.pop("num_key_value_heads")
    model = build("mistral-7b", config)
    assert model.num_key_value_heads == model.num_attention_heads == 32


def test_gemma3_text_form_and_gemma2() -> None:
    nested = load("gemma-3-27b")
    flat = {**nested["text_config"], "architectures": ["Gemma3ForCausalLM"]}
    assert build("gemma-3-27b", flat).params_total == 27_009_002_240
    # Gemma 2 9B (models.csv: computed_total_params 9241705984): alternating 1:1 layout.
    gemma2 = {
        "architectures": ["Gemma2ForCausalLM"],
        "model_type": "gemma2",
        "head_dim": 256,
        "hidden_size": 3584,
        "intermediate_size": 14336,
        "max_position_embeddings": 8192,
        "num_attention_heads": 16,
        "num_hidden_layers": 42,
        "num_key_value_heads": 8,
        "sliding_window": 4096,
        "vocab_size": 256000,
    }
    model = build("gemma-2-9b", gemma2)
    assert model.params_total == 9_241_705_984
    assert model.n_sliding_layers == 21


def test_qwen3_moe_dense_layers_are_counted() -> None:
    config = load("qwen3-30b-a3b")
    config["mlp_only_layers"] = [0, 1]
    model = build("qwen3-30b-a3b", config)
    assert model.n_dense_layers == 2 and model.n_moe_layers == 46


@pytest.mark.parametrize("name", [e[0] for e in EXACT] + ["deepseek-v3"])
def test_yaml_round_trip(name: str) -> None:
    model = build(name)
    text = model_to_yaml(model)
    assert text.startswith("#") and SOURCE in text.splitlines()[0]
    assert Model.model_validate(yaml.safe_load(text)) == model


def test_unsupported_architecture_lists_supported() -> None:
    config = load("llama-3.1-8b")
    config["architectures"] = ["BertModel"]
    config["model_type"] = "bert"
    with pytest.raises(InputError) as exc:
        build("x", config)
    assert "BertModel" in exc.value.message
    assert "supported" in exc.value.message
    assert all(name in exc.value.message for name in SUPPORTED_ARCHITECTURES)


def test_unsupported_architecture_suggests_close_match() -> None:
    config = {"architectures": ["LlamaForCausalLm"], "hidden_size": 1}
    with pytest.raises(InputError, match="did you mean 'LlamaForCausalLM'"):
        build("x", config)


def test_missing_architecture() -> None:
    config = load("llama-3.1-8b")
    del config["architectures"], config["model_type"]
    with pytest.raises(InputError, match="model_type"):
        build("x", config)


def test_missing_hidden_size_names_the_key() -> None:
    config = load("llama-3.1-8b")
    del config["hidden_size"]
    with pytest.raises(InputError, match=r"config\.json: missing 'hidden_size'"):
        build("x", config)


def test_missing_nested_key_names_its_path() -> None:
    config = load("gemma-3-27b")
    del config["text_config"]["vocab_size"]
    with pytest.raises(InputError, match=r"missing 'text_config\.vocab_size'"):
        build("x", config)


@pytest.mark.parametrize("config", [None, [], "config", 42, ("a", 1)])
def test_non_dict_config(config: object) -> None:
    with pytest.raises(InputError, match="expected a JSON object"):
        model_from_hf_config(config, "x", SOURCE)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("hidden_size", 0),
        ("num_hidden_layers", -4),
        ("vocab_size", "128256"),
        ("intermediate_size", 1.5),
        ("num_attention_heads", True),
        ("max_position_embeddings", [1]),
    ],
)
def test_bad_values_name_the_key(key: str, value: object) -> None:
    config = load("llama-3.1-8b")
    config[key] = value
    with pytest.raises(InputError, match=f"'{key}' must be a positive integer"):
        build("x", config)


@pytest.mark.parametrize("name", [e[0] for e in EXACT] + ["deepseek-v3"])
def test_every_missing_or_broken_key_is_an_input_error(name: str) -> None:
    """Whatever key is dropped or corrupted, only InputError (never KeyError/TypeError)."""
    base = load(name)
    inner = base.get("text_config", base)
    for key in list(inner):
        for broken in ("drop", None, "x", -1, {}, [None]):
            config = copy.deepcopy(base)
            target = config.get("text_config", config)
            if broken == "drop":
                del target[key]
            else:
                target[key] = broken
            with contextlib.suppress(InputError):
                model_from_hf_config(config, name, SOURCE)


def test_inconsistent_heads_is_an_input_error() -> None:
    config = load("llama-3.1-8b")
    config["num_key_value_heads"] = 5
    with pytest.raises(InputError, match="multiple of num_key_value_heads"):
        build("x", config)


def test_unmodelled_biases_are_refused() -> None:
    config = load("llama-3.1-8b")
    config["mlp_bias"] = True
    with pytest.raises(InputError, match="'mlp_bias'"):
        build("x", config)
