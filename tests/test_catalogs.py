"""The shipped catalog: required entries, sourced facts, exact parameter counts, loader checks."""

from __future__ import annotations

import os
import pickle
import re
import shutil
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
import yaml

from planner.errors import CatalogError, InputError
from planner.inputs.catalog import DEFAULT_CATALOG_DIR, Catalog, _load_folder, load_catalog
from planner.schema.hardware import Gpu

REQUIRED_GPUS = {
    "t4", "l4", "a10g", "l40s", "a100-40gb", "a100-80gb", "h100-pcie", "h100-sxm", "h100-nvl",
    "h200", "b200", "gb200", "mi300x", "mi325x", "mi355x", "gaudi3", "rtx-4090", "rtx-6000-ada",
    "a100-80gb-pcie", "h20", "b300", "gb300", "mi250x", "gaudi2",
}  # fmt: skip
GPU_FAMILIES = {
    "turing", "ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3", "cdna4", "gaudi",
}  # fmt: skip

# Exact (total, active) parameter counts: the computed_total_params and computed_active_params
# columns of the reference models.csv (compiled 2026-11-30), which were computed from each
# model's config.json and match the published totals.
EXPECTED_PARAMS: dict[str, tuple[int, int]] = {
    "llama-3.1-8b": (8_030_261_248, 8_030_261_248),
    "llama-3.1-70b": (70_553_706_496, 70_553_706_496),
    "llama-3.1-405b": (405_853_388_800, 405_853_388_800),
    "llama-3.3-70b": (70_553_706_496, 70_553_706_496),
    "llama-3.2-1b": (1_235_814_400, 1_235_814_400),
    "llama-3.2-3b": (3_212_749_824, 3_212_749_824),
    "qwen2.5-7b": (7_615_616_512, 7_615_616_512),
    "qwen2.5-32b": (32_763_876_352, 32_763_876_352),
    "qwen2.5-72b": (72_706_203_648, 72_706_203_648),
    "qwen3-8b": (8_190_735_360, 8_190_735_360),
    "qwen3-32b": (32_762_123_264, 32_762_123_264),
    "qwen3-30b-a3b": (30_532_122_624, 3_353_032_704),
    "qwen3-235b-a22b": (235_093_634_560, 22_190_763_520),
    "mistral-7b": (7_248_023_552, 7_248_023_552),
    "mistral-small-24b-2501": (23_572_403_200, 23_572_403_200),
    "mixtral-8x7b": (46_702_792_704, 12_879_925_248),
    "mixtral-8x22b": (140_630_071_296, 39_161_468_928),
    "deepseek-v3": (671_026_419_200, 37_552_282_624),
    "deepseek-r1": (671_026_419_200, 37_552_282_624),
    "gpt-oss-120b": (116_829_156_672, 5_711_982_912),
    "gpt-oss-20b": (20_914_757_184, 4_187_440_704),
    "gemma-2-9b": (9_241_705_984, 9_241_705_984),
    "gemma-2-27b": (27_227_128_320, 27_227_128_320),
    "gemma-3-27b": (27_009_002_240, 27_009_002_240),
    "phi-3.5-mini": (3_821_079_552, 3_821_079_552),
    "phi-4": (14_659_507_200, 14_659_507_200),
    "phi-4-mini": (3_836_021_760, 3_836_021_760),
    "llama-2-7b": (6_738_415_616, 6_738_415_616),
    "llama-2-13b": (13_015_864_320, 13_015_864_320),
    "llama-2-70b": (68_976_648_192, 68_976_648_192),
}

# models.csv counts DeepSeek-V3's per-expert router bias (gate.e_score_correction_bias, 256 per
# MoE layer, 58 MoE layers) in the total but leaves it out of the active count. It is read for
# every token, so the catalog counts it in both: active = CSV active + 58 * 256.
ACTIVE_ADJUSTMENT = {"deepseek-v3": 58 * 256, "deepseek-r1": 58 * 256}

# Stated sizes that are nominal names rather than counts, so 3% does not hold:
# Qwen2.5-7B is 7.62B, Phi-4 "14-billion" is 14.66B, Llama 2 "7B" is 6.74B, and the "A3B" of
# Qwen3-30B-A3B is 3.35B active. Dense models use the total tolerance for active too.
TOTAL_TOLERANCE = {"qwen2.5-7b": 0.09, "phi-4": 0.05, "llama-2-7b": 0.04}
ACTIVE_TOLERANCE = {"qwen3-30b-a3b": 0.12}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(DEFAULT_CATALOG_DIR)


# ---- GPUs ------------------------------------------------------------------------------
def test_required_gpus_present(catalog: Catalog) -> None:
    assert not REQUIRED_GPUS - set(catalog.gpus)


def test_every_gpu_has_specs_and_source(catalog: Catalog) -> None:
    for gpu in catalog.gpus.values():
        assert gpu.memory_gb > 0, gpu.id
        assert gpu.hbm_bandwidth_gb_per_s > 0, gpu.id
        assert gpu.dense_tflops, gpu.id
        assert gpu.family in GPU_FAMILIES, gpu.id
        assert gpu.spec.source and gpu.spec.as_of, gpu.id


def test_every_price_is_sourced_and_dated(catalog: Catalog) -> None:
    for gpu in catalog.gpus.values():
        for price in gpu.prices:
            assert price.source and price.as_of, (gpu.id, price.provider)
            assert price.usd_per_gpu_hour > 0


def test_unpriced_gpus_say_so(catalog: Catalog) -> None:
    for gpu in catalog.gpus.values():
        if not gpu.prices:
            assert "no rental price found" in (gpu.spec.notes or "").lower(), gpu.id


def test_dense_peaks_spot_checks(catalog: Catalog) -> None:
    h100 = catalog.gpu("h100-sxm")
    assert h100.dense_tflops["bf16"] == 989.5  # datasheet 1979 sparse, halved
    assert h100.hbm_bandwidth_gb_per_s == 3350
    assert h100.scaleup_link_gb_per_s == 450  # 900 GB/s bidirectional
    assert "bf16" not in catalog.gpu("t4").dense_tflops
    assert "fp8" not in catalog.gpu("a100-80gb").dense_tflops
    assert catalog.gpu("gb200").scaleup_domain_gpus == 72


# ---- models ----------------------------------------------------------------------------
def test_required_models_present(catalog: Catalog) -> None:
    assert not set(EXPECTED_PARAMS) - set(catalog.models)


@pytest.mark.parametrize("model_id", sorted(EXPECTED_PARAMS))
def test_param_counts_match_config_counts(catalog: Catalog, model_id: str) -> None:
    model = catalog.model(model_id)
    total, active = EXPECTED_PARAMS[model_id]
    assert model.params_total == total
    assert model.params_active == active + ACTIVE_ADJUSTMENT.get(model_id, 0)


@pytest.mark.parametrize("model_id", sorted(EXPECTED_PARAMS))
def test_param_counts_near_stated(catalog: Catalog, model_id: str) -> None:
    model = catalog.model(model_id)
    stated_total = model.stated_total_params_b * 1e9
    assert model.params_total == pytest.approx(
        stated_total, rel=TOTAL_TOLERANCE.get(model_id, 0.03)
    )
    assert model.stated_active_params_b is not None
    stated_active = model.stated_active_params_b * 1e9
    if model_id.startswith("gpt-oss"):
        # OpenAI's 5.1B / 3.6B active leave out the 0.58B input embedding.
        assert model.params_active - model.params_embedding == pytest.approx(
            stated_active, rel=0.03
        )
    elif model_id.startswith("deepseek"):
        # DeepSeek states 37B (README) / 36.7B (README_WEIGHTS); the config gives 37.55B.
        assert model.params_active == pytest.approx(37e9, rel=0.02)
    else:
        assert model.params_active == pytest.approx(
            stated_active, rel=ACTIVE_TOLERANCE.get(model_id, TOTAL_TOLERANCE.get(model_id, 0.03))
        )


def test_every_model_is_sourced(catalog: Catalog) -> None:
    for model in catalog.models.values():
        assert model.provenance.source and model.provenance.as_of, model.id


# ---- APIs ------------------------------------------------------------------------------
def test_api_offerings_reference_known_models(catalog: Catalog) -> None:
    assert catalog.apis
    for provider in catalog.apis.values():
        for offering in provider.offerings:
            assert offering.model in catalog.models, (provider.id, offering.provider_model_id)
            assert offering.source and offering.as_of


def test_api_prices_are_not_free_tiers(catalog: Catalog) -> None:
    for provider in catalog.apis.values():
        for offering in provider.offerings:
            assert offering.input_usd_per_1m + offering.output_usd_per_1m > 0, provider.id


# ---- loader checks ---------------------------------------------------------------------
def _gpu_file() -> Path:
    return DEFAULT_CATALOG_DIR / "gpus" / "h100-sxm.yaml"


def test_id_not_matching_file_name_is_rejected(tmp_path: Path) -> None:
    folder = tmp_path / "gpus"
    folder.mkdir()
    shutil.copy(_gpu_file(), folder / "not-h100.yaml")
    with pytest.raises(CatalogError, match="does not match the file name"):
        _load_folder(folder, Gpu)


def test_duplicate_id_is_rejected(tmp_path: Path) -> None:
    folder = tmp_path / "gpus"
    folder.mkdir()
    shutil.copy(_gpu_file(), folder / "h100-sxm.yaml")
    shutil.copy(_gpu_file(), folder / "h100-sxm.yml")
    with pytest.raises(CatalogError, match="duplicate id"):
        _load_folder(folder, Gpu)


def test_load_catalog_rejects_mismatched_file(tmp_path: Path) -> None:
    root = tmp_path / "catalogs"
    shutil.copytree(DEFAULT_CATALOG_DIR, root)
    shutil.copy(_gpu_file(), root / "gpus" / "renamed.yaml")
    with pytest.raises(CatalogError):
        load_catalog(root)


# ---- user catalog folders: add and override on top of the shipped catalog --------------
def _user_gpu(root: Path, gpu_id: str, memory_gb: float) -> Path:
    """A user catalog folder with one GPU entry: the shipped H100 SXM renamed and resized."""
    doc = yaml.safe_load(_gpu_file().read_text(encoding="utf-8"))
    doc.update(id=gpu_id, memory_gb=memory_gb)
    (root / "gpus").mkdir(parents=True, exist_ok=True)
    (root / "gpus" / f"{gpu_id}.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    return root


def test_user_folder_adds_and_overrides_entries(tmp_path: Path, catalog: Catalog) -> None:
    mine = _user_gpu(tmp_path / "mine", "my-gpu", 96)
    _user_gpu(mine, "h100-sxm", 81)  # only gpus/: every other kind stays shipped
    cat = load_catalog(mine)
    assert set(cat.gpus) == set(catalog.gpus) | {"my-gpu"}
    assert cat.gpu("my-gpu").memory_gb == 96 and cat.gpu("h100-sxm").memory_gb == 81
    assert cat.models == catalog.models and cat.engines == catalog.engines
    assert cat.user_folders == (str(mine),) and str(mine) in repr(cat)


def test_earlier_user_folder_wins_and_env_var_lists_folders(tmp_path, monkeypatch, catalog):
    first = _user_gpu(tmp_path / "first", "h100-sxm", 81)
    second = _user_gpu(tmp_path / "second", "h100-sxm", 82)
    _user_gpu(second, "other-gpu", 50)
    both = load_catalog([first, second])
    assert both.gpu("h100-sxm").memory_gb == 81 and "other-gpu" in both.gpus
    monkeypatch.setenv("PLANNER_CATALOG_DIR", f"{second}{os.pathsep}{first}")
    assert load_catalog().gpu("h100-sxm").memory_gb == 82
    # an explicit folder replaces the variable's folders; an empty variable means none
    assert load_catalog(first).gpu("h100-sxm").memory_gb == 81
    assert "other-gpu" not in load_catalog(first).gpus
    monkeypatch.setenv("PLANNER_CATALOG_DIR", "")
    assert load_catalog().gpus == catalog.gpus


def test_user_entries_are_validated_as_strictly_naming_the_file(tmp_path: Path) -> None:
    mine = _user_gpu(tmp_path / "mine", "my-gpu", 96)
    good = mine / "gpus" / "my-gpu.yaml"
    text = good.read_text(encoding="utf-8")
    good.rename(mine / "gpus" / "renamed.yaml")
    with pytest.raises(CatalogError, match="renamed.yaml: id 'my-gpu' does not match"):
        load_catalog(mine)
    (mine / "gpus" / "renamed.yaml").unlink()
    good.write_text(text + "memroy_gb: 1\n", encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(f"{good}: memroy_gb: unknown key")):
        load_catalog(mine)


def test_a_user_reference_to_an_unknown_entry_names_the_user_file(tmp_path: Path) -> None:
    quant = yaml.safe_load((DEFAULT_CATALOG_DIR / "quants" / "fp8.yaml").read_text("utf-8"))
    quant.update(id="my-fp8", gpus=["h100-sxm", "h100-sxn"])
    path = tmp_path / "mine" / "quants" / "my-fp8.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(quant), encoding="utf-8")
    with pytest.raises(CatalogError, match=re.escape(f"{path}: gpus: ") + ".*h100-sxn"):
        load_catalog(tmp_path / "mine")


def test_a_missing_folder_or_loose_yaml_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="catalog folder not found"):
        load_catalog(tmp_path / "nowhere")
    gpus = _user_gpu(tmp_path / "mine", "my-gpu", 96) / "gpus"  # the kind, not the catalog
    with pytest.raises(CatalogError, match=r"my-gpu.yaml: not read: entries go in"):
        load_catalog(gpus)
    (tmp_path / "new").mkdir()  # an empty folder is a catalog with nothing to add yet
    assert load_catalog(tmp_path / "new").gpus == load_catalog().gpus


def test_catalog_is_frozen_and_picklable(tmp_path: Path) -> None:
    cat = load_catalog(_user_gpu(tmp_path / "mine", "my-gpu", 96))
    again = pickle.loads(pickle.dumps(cat))
    assert again.gpus == cat.gpus and again.user_folders == cat.user_folders
    with pytest.raises(FrozenInstanceError):
        cat.gpus = {}  # type: ignore[misc]


def test_sglang_has_its_own_fit(catalog):
    """Since the aic set (issue #10) SGLang is fitted on SGLang rows, no longer a copy of the
    vllm fit; its memory budget is SGLang's own (mem_fraction_static of total)."""
    from planner.calibration.fit import FIT_PARAMS

    sglang, vllm = catalog.engines["sglang"], catalog.engines["vllm"]
    assert "engines sglang " in sglang.source and "aic_silicon_public.csv" in sglang.source
    fitted = {k: getattr(sglang.default, k) for k in FIT_PARAMS}
    assert fitted != {k: getattr(vllm.default, k) for k in FIT_PARAMS}
    assert not sglang.default.activations_in_budget


def test_engines_name_the_quants_they_load(catalog: Catalog) -> None:
    """llama.cpp loads GGUF (and the 16-bit weights it converts to GGUF; int8 is W8A8, not its
    Q8_0), TensorRT-LLM every catalog quant but GGUF, vLLM and SGLang all; sourced, and the
    shipped files hold the lists as the profile writer emits them (test above)."""
    trt, cpp = catalog.engine("trtllm"), catalog.engine("llamacpp")
    assert set(cpp.quants) == {"gguf-q4_k_m", "bf16", "fp16"}
    assert set(trt.quants) == set(catalog.quants) - {"gguf-q4_k_m"}
    assert not cpp.runs_quant("fp8") and not trt.runs_quant("gguf-q4_k_m")
    for engine in (catalog.engine("vllm"), catalog.engine("sglang")):
        assert engine.quants == () and all(engine.runs_quant(q) for q in catalog.quants)
    for engine in (trt, cpp):
        assert engine.quants_source and engine.quants_source.startswith("https://")


def test_engines_name_the_hardware_they_document(catalog: Catalog) -> None:
    """TensorRT-LLM runs on NVIDIA's Ampere to Blackwell, llama.cpp on NVIDIA and AMD (not
    Gaudi); vLLM and SGLang on every family; each list is of catalog families, sourced, and
    in the shipped file as the profile writer emits it (a refit keeps it)."""
    from planner.calibration.profile_file import profile_document

    trt, cpp = catalog.engine("trtllm"), catalog.engine("llamacpp")
    assert set(trt.gpu_families) == {"ampere", "ada", "hopper", "blackwell"}
    assert not cpp.runs_on("gaudi") and cpp.runs_on("cdna3") and cpp.runs_on("turing")
    assert catalog.engine("vllm").gpu_families == () == catalog.engine("sglang").gpu_families
    for engine in (trt, cpp):
        assert set(engine.gpu_families) <= GPU_FAMILIES
        assert engine.gpu_families_source and engine.gpu_families_source.startswith("https://")
        path = DEFAULT_CATALOG_DIR / "engines" / f"{engine.id}.yaml"
        shipped = yaml.safe_load(path.read_text())
        assert profile_document(engine) == shipped
