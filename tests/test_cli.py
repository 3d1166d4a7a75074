"""The command line end to end: exit codes, messages, JSON shape, every shipped scenario."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import cli

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), obj={}, catch_exceptions=False)


def test_estimate_json_has_the_promised_keys():
    res = invoke(
        "estimate",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100-sxm",
        "--tp",
        "4",
        "--quant",
        "fp8",
        "--batch",
        "32",
        "--input-len",
        "2048",
        "--output-len",
        "256",
        "--kv-dtype",
        "fp8",
        "--json",
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    for key in (
        "model",
        "gpu",
        "tp",
        "quant",
        "kv_dtype",
        "batch",
        "input_len",
        "output_len",
        "fits",
        "memory_per_gpu_gb",
        "max_batch",
        "tpot_ms",
        "ttft_ms",
        "throughput_tok_s",
        "requests_per_s",
        "cost_per_hour_usd",
        "cost_per_1k_output_tokens_usd",
        "bound",
        "breakdown",
    ):
        assert key in data
    assert data["kv_dtype"] == "fp8" and data["fits"] is True
    parts = data["breakdown"]
    assert parts["step_ms"] + parts["prefill_interference_ms"] == pytest.approx(data["tpot_ms"])


def test_estimate_ideal_is_the_bandwidth_floor():
    res = invoke(
        "estimate",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h200",
        "--tp",
        "1",
        "--quant",
        "fp16",
        "--batch",
        "1",
        "--input-len",
        "1",
        "--output-len",
        "1",
        "--ideal",
        "--json",
    )
    data = json.loads(res.output)
    # 70.55e9 params - 1.05e9 input embedding = 69.50e9 read at 2 bytes over 4.8 TB/s
    assert data["breakdown"]["weights_ms"] == pytest.approx(
        (70553706496 - 128256 * 8192) * 2 / 4.8e12 * 1e3
    )
    assert data["breakdown"]["overhead_ms"] == 0 and data["breakdown"]["communication_ms"] == 0


def test_estimate_that_does_not_fit_reports_the_shortfall():
    res = invoke(
        "estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--quant", "bf16", "--json"
    )
    data = json.loads(res.output)
    assert res.exit_code == 0 and data["fits"] is False and data["memory_shortfall_gb"] > 60


def test_estimate_text_output_names_the_bound():
    res = invoke("estimate", "--model", "llama-3.1-8b", "--gpu", "l40s", "--quant", "fp8")
    assert res.exit_code == 0
    assert "Bound: memory" in res.output and "ridge" in res.output and "TPOT" in res.output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--model", "llama-3.1-70", "--gpu", "h100-sxm"], "did you mean 'llama-3.1-70b'"),
        (["--model", "llama-3.1-8b", "--gpu", "h100-smx"], "did you mean 'h100-sxm'"),
        (["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--quant", "fp9"], "did you mean"),
        (
            ["--model", "llama-3.1-8b", "--gpu", "a100-80gb", "--quant", "fp4", "--tp", "16"],
            "exceeds the scale-up domain",
        ),
        (["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tp", "3"], "does not divide"),
        (["--model", "llama-3.1-8b", "--gpu", "t4", "--quant", "fp8"], "does not run on t4"),
        (
            ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--input-len", "0"],
            "--input-len: must be a whole number greater than 0",
        ),
        (
            ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--output-len", "-5"],
            "--output-len: must be a whole number greater than 0",
        ),
    ],
)
def test_estimate_bad_input_exits_2_with_one_message(args, needle):
    res = CliRunner().invoke(cli, ["estimate", *args], obj={})
    assert res.exit_code == 2, res.output
    assert needle in res.output
    assert "Traceback" not in res.output


def test_catalog_listings():
    for kind in ("gpus", "models", "quants"):
        res = invoke("catalog", kind)
        assert res.exit_code == 0 and "id" in res.output
        data = json.loads(invoke("catalog", kind, "--json").output)
        assert len(data[kind]) >= 7


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.stem)
def test_every_shipped_scenario_solves(scenario, tmp_path):
    res = invoke("solve", str(scenario), "--json", "-o", str(tmp_path / "plan.xlsx"))
    assert res.exit_code == 0, res.output
    plan = json.loads(res.output)
    assert plan["status"] in ("optimal", "time_limit")
    assert plan["fleet"] and plan["total_cost_per_hour_usd"] > 0
    for key in (
        "gpu",
        "tp",
        "quant",
        "kv_dtype",
        "batch",
        "replicas",
        "gpus",
        "tpot_ms",
        "ttft_ms",
        "requests_per_s",
        "cost_per_hour_usd",
    ):
        assert all(key in d for d in plan["fleet"])
    for key in (
        "gpu",
        "tp",
        "quant",
        "kv_dtype",
        "batch",
        "capacity_requests_per_s",
        "cost_per_hour_usd",
    ):
        assert all(key in c for c in plan["candidates"])
    check_workbook_against_json(tmp_path / "plan.xlsx", plan)


def check_workbook_against_json(path, plan):
    """The workbook's live formulas, evaluated from its own cells, give the JSON's figures."""
    from openpyxl import load_workbook

    from planner.render.xlsx import read_back

    book = read_back(path)
    for key in (
        "total_cost_per_hour_usd",
        "monthly_cost_usd",
        "cost_per_1k_output_tokens_usd",
        "cost_per_1m_tokens_usd",
        "total_gpus",
        "demand_requests_per_s",
    ):
        assert book[key] == pytest.approx(plan[key], rel=1e-6), key
    assert book["scenario"] == plan["scenario"] and book["model"] == plan["model"]
    workbook = load_workbook(path, read_only=True)
    try:
        rows = [
            r
            for r in workbook["Fleet"].iter_rows(min_row=2, values_only=True)
            if r[0] and r[0] != "Total"
        ]
    finally:
        workbook.close()
    assert [(r[0], r[1], r[5]) for r in rows] == [
        (d["gpu"], d["tp"], d["replicas"]) for d in plan["fleet"]
    ]
    if plan["over_time"]:
        months = [v for k, v in book.items() if k.startswith("Monthly!")]
        assert months, "a plan over time has live monthly formulas"


def test_solve_json_is_byte_identical_across_runs(tmp_path):
    scenario = str(ROOT / "scenarios" / "chatbot.yaml")
    first = invoke("solve", scenario, "--json", "--no-export").output
    second = invoke("solve", scenario, "--json", "--no-export").output
    assert first == second


def test_every_command_has_help_with_an_example():
    for command in (["solve"], ["estimate"], ["catalog"], ["model", "import"]):
        res = invoke(*command, "--help")
        assert res.exit_code == 0 and "Example: planner" in res.output


def test_model_import_writes_a_catalog_entry(tmp_path):
    import shutil

    from planner.inputs.catalog import load_catalog

    catalog_copy = tmp_path / "catalogs"
    shutil.copytree(ROOT / "catalogs", catalog_copy)
    config = ROOT / "tests" / "fixtures" / "hf_configs" / "qwen3-32b.json"
    res = CliRunner().invoke(
        cli,
        ["--catalog", str(catalog_copy), "model", "import", str(config), "--id", "my-qwen"],
        obj={},
    )
    assert res.exit_code == 0, res.output
    assert "32.76B parameters" in res.output
    imported = load_catalog(catalog_copy).model("my-qwen")
    assert imported.params_total == 32_762_123_264
    again = CliRunner().invoke(
        cli,
        ["--catalog", str(catalog_copy), "model", "import", str(config), "--id", "my-qwen"],
        obj={},
    )
    assert again.exit_code == 2 and "--force" in again.output


def test_user_catalog_folders_add_entries_and_the_first_wins(tmp_path):
    import yaml

    from planner.inputs.catalog import DEFAULT_CATALOG_DIR

    doc = yaml.safe_load((DEFAULT_CATALOG_DIR / "gpus" / "h100-sxm.yaml").read_text("utf-8"))
    for name, memory in (("first", 96), ("second", 120)):
        (tmp_path / name / "gpus").mkdir(parents=True)
        entry = {**doc, "id": "my-gpu", "memory_gb": memory}
        (tmp_path / name / "gpus" / "my-gpu.yaml").write_text(yaml.safe_dump(entry), "utf-8")
    folders = ["--catalog", str(tmp_path / "first"), "--catalog", str(tmp_path / "second")]
    gpus = json.loads(invoke(*folders, "catalog", "gpus", "--json").stdout)["gpus"]
    assert len(gpus) == 25
    assert [g["memory_gb"] for g in gpus if g["id"] == "my-gpu"] == [96]


def test_model_import_without_a_user_folder_writes_catalogs_here(tmp_path, monkeypatch):
    from planner.inputs.catalog import DEFAULT_CATALOG_DIR, load_catalog

    config = ROOT / "tests" / "fixtures" / "hf_configs" / "qwen3-32b.json"
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PLANNER_CATALOG_DIR", raising=False)
    res = invoke("model", "import", str(config), "--id", "my-qwen")
    assert res.exit_code == 0, res.output
    written = Path("catalogs") / "models" / "my-qwen.yaml"
    assert f"Wrote {written}" in res.output and "--catalog catalogs" in res.output
    assert not (DEFAULT_CATALOG_DIR / "models" / "my-qwen.yaml").exists()
    assert load_catalog("catalogs").model("my-qwen").params_total == 32_762_123_264
