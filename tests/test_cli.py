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
    """Llama-3.1-70B fp8 on one H200 (its fp16 weights, 141.1 GB, do not fit the 141.0
    usable): the blocks at 1 byte, the LM head at 2 (embeddings stay 16-bit), the input
    embedding not read (a gather), over 4.8 TB/s; no overhead, no collectives."""
    res = invoke(
        "estimate", "--model", "llama-3.1-70b", "--gpu", "h200", "--tp", "1", "--quant", "fp8",
        "--batch", "1", "--input-len", "1", "--output-len", "1", "--ideal", "--json",
    )  # fmt: skip
    data = json.loads(res.output)
    vocab = 128256 * 8192  # the input embedding and the LM head, each
    assert data["breakdown"]["weights_ms"] == pytest.approx(
        ((70553706496 - 2 * vocab) * 1 + vocab * 2) / 4.8e12 * 1e3  # 14.699 ms
    )
    assert data["breakdown"]["overhead_ms"] == 0 and data["breakdown"]["communication_ms"] == 0


def test_estimate_that_does_not_fit_reports_the_shortfall():
    """Llama-3.1-70B on 2 H100s at --batch 30 where memory holds 28: the total is what the
    fit test counts (the workspace of a full prefill chunk, held before the KV pool is
    sized, and every sequence's logits), so it is over the usable memory by exactly the
    shortfall (it read '76.3 GB of 77.0 usable (DOES NOT FIT: short by 0.3 GB)')."""
    args = ("estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "2")
    data = json.loads(invoke(*args, "--batch", "30", "--json").output)
    assert data["fits"] is False and data["max_batch"] == 28
    short = data["memory_per_gpu_gb"] - data["memory_usable_gb"]
    assert data["memory_shortfall_gb"] == pytest.approx(short, rel=1e-6)
    assert data["memory_shortfall_gb"] == pytest.approx(0.2616, abs=1e-4)
    parts = ("weights_per_gpu_gb", "kv_cache_per_gpu_gb", "activations_per_gpu_gb",
             "runtime_reserve_per_gpu_gb", "prefix_cache_per_gpu_gb")  # fmt: skip
    assert sum(data[k] for k in parts) == pytest.approx(data["memory_per_gpu_gb"], rel=1e-6)
    text = invoke(*args, "--batch", "30").output
    assert "77.2 GB of 77.0 usable (DOES NOT FIT: short by 0.3 GB)" in text
    fits = json.loads(invoke(*args, "--batch", "28", "--json").output)
    assert fits["fits"] is True and fits["memory_per_gpu_gb"] <= fits["memory_usable_gb"]


@pytest.mark.parametrize(
    ("args", "weights"),
    [
        (["--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--quant", "bf16"], "141.1 GB"),
        (["--model", "llama-3.1-70b", "--gpu", "l40s", "--quant", "fp16", "--ideal"], "141.1"),
        (["--model", "llama-3.1-405b", "--gpu", "rtx-4090"], "weights 811.7 GB per GPU"),
        (["--model", "llama-3.1-405b", "--gpu", "rtx-4090", "--rate", "1"], "811.7"),
        (["--model", "llama-3.1-405b", "--gpu", "rtx-4090", "--concurrency", "4"], "811.7"),
    ],
)
def test_estimate_of_a_model_that_does_not_fit_exits_2(args, weights):
    """Not one sequence fits (largest batch 0): exit 2 naming the weights against the usable
    memory and what to change, as --disaggregated does (it printed every figure, exit 0)."""
    res = CliRunner().invoke(cli, ["estimate", *args], obj={})
    assert res.exit_code == 2, res.output
    assert "does not fit on 1 x" in res.output and weights in res.output
    assert "try a larger --tp, a smaller --quant or a bigger --gpu" in res.output


def test_sglang_wide_attention_dp_names_the_engines_own_memory_fraction():
    """SGLang's default mem_fraction_static (#10, s37) leaves 128 H100s at tp 4 x dp 32 no
    room: the refusal says the fraction it came to and that narrowing the layout helps; an
    engine with a fixed fraction (vLLM) gets no such note."""
    args = ["--model", "deepseek-v3", "--gpu", "h100-sxm", "--quant", "fp8", "--tp", "4"]
    args += ["--dp-attention", "32", "--ep", "128", "--concurrency", "64"]
    res = CliRunner().invoke(cli, ["estimate", *args, "--engine", "sglang"], obj={})
    assert res.exit_code == 2, res.output
    assert "does not fit on 128 x h100-sxm" in res.output
    assert "default memory fraction here is 0.000" in res.output
    assert "a narrower --dp-attention or --tp leaves more" in res.output
    res = CliRunner().invoke(cli, ["estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm",
                                   "--quant", "bf16"], obj={})  # fmt: skip
    assert res.exit_code == 2 and "memory fraction" not in res.output


def test_disaggregated_pools_that_do_not_fit_say_by_how_much():
    """A pool's worker that holds no sequence names its weights against the usable memory,
    as the aggregated estimate does, and what to change."""
    args = ["--model", "llama-3.1-405b", "--gpu", "h100-sxm", "--disaggregated", "--rate", "1"]
    res = CliRunner().invoke(cli, ["estimate", *args], obj={})
    assert res.exit_code == 2, res.output
    assert "does not fit a prefill worker of 1 GPU(s) at bf16: weights 811.7 GB per GPU " in (
        res.output
    )
    assert "against 77.0 GB usable" in res.output and "raise --prefill-tp" in res.output


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
        (  # llama.cpp loads GGUF only: it planned "fp8 weights (fp8 math) [llamacpp]"
            ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "llamacpp"]
            + ["--quant", "fp8"],
            "--engine llamacpp does not run --quant fp8: llama.cpp runs the gguf-q4_k_m, "
            "bf16, fp16 quants (https://github.com/ggml-org/llama.cpp)",
        ),
        (
            ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "llamacpp"]
            + ["--quant", "int8"],
            "--engine llamacpp does not run --quant int8",
        ),
        (  # TensorRT-LLM does not load GGUF files
            ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "trtllm"]
            + ["--quant", "gguf-q4_k_m"],
            "--engine trtllm does not run --quant gguf-q4_k_m",
        ),
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


def test_catalog_listings_show_what_the_model_uses():
    """The GPU listing shows the bytes that size the KV cache beside the label (an "80 GB"
    H100 reports 81,559 MiB = 85.52e9 B), and the API listing the cached-input price that
    `solve` bills prefix hits at."""
    gpus = {g["id"]: g for g in json.loads(invoke("catalog", "gpus", "--json").output)["gpus"]}
    assert gpus["h100-sxm"]["memory_gb"] == 80
    assert gpus["h100-sxm"]["device_memory_gb"] == pytest.approx(81559 * 2**20 / 1e9)
    assert "device GB" in invoke("catalog", "gpus").output
    apis = json.loads(invoke("catalog", "apis", "--json").output)["apis"]
    chat = next(a for a in apis if a["provider_model_id"] == "deepseek-chat")
    assert chat["cached_input_usd_per_1m"] == 0.028


@pytest.mark.slow  # every shipped scenario planned, analysed, written and read back
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


@pytest.mark.slow  # plans chatbot twice through the command line
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


def test_model_import_output_file_gets_normal_permissions(tmp_path, umask_022):
    """-o FILE is written atomically, yet 0666 less the umask like any file, not 0600."""
    import stat

    config = ROOT / "tests" / "fixtures" / "hf_configs" / "qwen3-32b.json"
    target = tmp_path / "my-qwen.yaml"
    res = invoke("model", "import", str(config), "--id", "my-qwen", "-o", str(target))
    assert res.exit_code == 0, res.output
    assert stat.S_IMODE(target.stat().st_mode) == umask_022
    target.chmod(0o600)
    again = invoke("model", "import", str(config), "-o", str(target), "--force")
    assert again.exit_code == 0, again.output
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # a replaced file keeps its mode


@pytest.mark.slow
def test_solve_plot_writes_charts_and_workbook_with_normal_permissions(tmp_path, umask_022):
    """End to end: `--plot` PNGs and the workbook are 0666 less the umask, not 0600."""
    import stat

    book = tmp_path / "plan.xlsx"
    res = invoke("solve", str(ROOT / "scenarios" / "chatbot.yaml"), "-o", str(book), "--plot")
    assert res.exit_code == 0, res.output
    charts = sorted(tmp_path.glob("plan-*.png"))
    assert [c.name for c in charts] == ["plan-break-even.png", "plan-frontier.png"]
    for path in (book, *charts):
        assert path.read_bytes()[:4] in (b"PK\x03\x04", b"\x89PNG"), path
        assert stat.S_IMODE(path.stat().st_mode) == umask_022, path


NIM = ("--model", "llama-3.3-70b", "--gpu", "h100-sxm", "--tp", "2", "--quant", "fp8")
NIM_SHAPE = ("--input-len", "5000", "--output-len", "500", "--engine", "trtllm", "--json")


def test_estimate_concurrency_is_a_closed_loop():
    """Issue #10: --concurrency 1 is one request at a time, no queue: TTFT is the prefill
    (NIM measured 407 ms; the old --batch 1 at 80% load said 21,864 ms). Beyond what memory
    holds, requests wait for a slot: (C - b) / R is in their TTFT."""
    one = json.loads(invoke("estimate", *NIM, "--concurrency", "1", *NIM_SHAPE).output)
    assert one["load"] == {
        "kind": "concurrency",
        "concurrency": 1,
        "batch_in_flight": 1,
        "max_num_seqs": 256,
        "capacity_batch": 90,  # what memory holds: the capacity is at 90 in flight
        "num_prompts": None,  # the steady state: no benchmark's first round (--num-prompts)
        "first_round_share": 0.0,
    }
    assert one["gpus"] == 2
    assert one["ttft_ms"] == pytest.approx(one["ttft_unloaded_ms"], rel=1e-9)
    assert 200 < one["ttft_ms"] < 800
    assert one["tpot_ms"] == pytest.approx(one["tpot_step_ms"], rel=1e-12)
    held = one["max_batch"]
    over = json.loads(invoke("estimate", *NIM, "--concurrency", str(held + 50), *NIM_SHAPE).output)
    assert over["load"]["batch_in_flight"] == held
    rate = over["capacity_requests_per_s"]  # memory's batch is in flight: the capacity
    assert over["ttft_ms"] >= over["ttft_unloaded_ms"] + 50 / rate * 1e3
    capped = json.loads(
        invoke("estimate", *NIM, "--concurrency", "64", "--batch", "16", *NIM_SHAPE).output
    )
    assert capped["load"]["batch_in_flight"] == 16  # --batch is max_num_seqs


def test_estimate_rate_is_an_open_loop():
    """--rate R: Poisson arrivals; throughput is R x O, the batch in flight from Little's
    law; a rate beyond capacity is refused (exit 2)."""
    low = json.loads(invoke("estimate", *NIM, "--rate", "0.2", *NIM_SHAPE).output)
    assert low["load"]["kind"] == "rate" and low["load"]["rate"] == 0.2
    assert low["throughput_tok_s"] == pytest.approx(0.2 * 500)
    assert low["ttft_ms"] > low["ttft_unloaded_ms"]
    res = CliRunner().invoke(cli, ["estimate", *NIM, "--rate", "1000", *NIM_SHAPE], obj={})
    assert res.exit_code == 2 and "capacity" in res.output


@pytest.mark.parametrize(
    "load",
    [
        ["--concurrency", "1"],
        ["--concurrency", "140"],
        ["--concurrency", "140", "--num-prompts", "560"],
        ["--rate", "0.5"],
        [],
    ],
)
def test_estimate_ttft_breakdown_sums_to_the_ttft(load, catalog):
    """The TTFT's terms (prefill, the step in flight, the engine's per-request latency, fused
    decode work, the queue behind other prefills, the wait for a slot) add up to it at every
    kind of load, and the per-request latency is the engine profile's own constant."""
    data = json.loads(invoke("estimate", *NIM, *load, *NIM_SHAPE).output)
    parts = data["ttft_breakdown"]
    assert sum(parts.values()) == pytest.approx(data["ttft_ms"], rel=1e-9)
    assert parts["prefill_ms"] == pytest.approx(data["prefill_ms"])
    trt = catalog.engine("trtllm").for_family("hopper")
    assert parts["request_latency_ms"] == pytest.approx(trt.request_overhead_ms)
    # an idle replica starts the prompt at the next step: half the one in flight
    assert parts["step_in_flight_ms"] == pytest.approx(data["tpot_step_ms"] / 2)
    # TensorRT-LLM's overlap scheduler has launched one iteration ahead of it (s39)
    tpot = data["breakdown"]
    iteration = tpot["step_ms"] + tpot["prefill_interference_ms"]
    assert parts["launched_step_ms"] == pytest.approx(iteration)
    if load == ["--concurrency", "1"]:
        assert parts["slot_wait_ms"] == 0 and parts["prefill_queue_ms"] == 0
        assert parts["fused_decode_ms"] == 0  # no other sequence in its passes
    if load == ["--concurrency", "140"]:  # memory holds 90: 50 clients wait for a slot
        assert parts["slot_wait_ms"] > 0 and parts["fused_decode_ms"] > 0
    # the TPOT's terms add up too, a benchmark's first round among them (--num-prompts)
    steps = ("step_ms", "prefill_interference_ms", "first_round_ms")
    assert sum(tpot[k] for k in steps) == pytest.approx(data["tpot_ms"], rel=1e-9)
    if "--num-prompts" in load:  # 140 of 560 arrive at once: the wave waits longer
        assert data["load"]["first_round_share"] == 0.25 and parts["first_round_ms"] > 0
    else:
        assert parts["first_round_ms"] == 0 and tpot["first_round_ms"] == 0
    text = invoke("estimate", *NIM, *load, *NIM_SHAPE[:-1]).output  # NIM_SHAPE ends in --json
    assert "TTFT term" in text and "per-request latency" in text


def test_context_window_is_checked():
    """A 200K prompt on a 131K model is refused with exit 2, naming the window."""
    res = CliRunner().invoke(
        cli,
        ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--input-len", "200000"],
        obj={},
    )
    assert res.exit_code == 2
    assert "context window of llama-3.1-8b (131072 tokens)" in res.output


WIDTH_COMMANDS = [
    ["solve", str(ROOT / "scenarios" / "diurnal-chatbot.yaml"), "--no-export"],
    ["solve", str(ROOT / "scenarios" / "mixed-traffic.yaml"), "--no-export"],
    ["compare", str(ROOT / "scenarios" / "chatbot.yaml"), "--no-plot"],
    ["catalog", "apis"],
    ["catalog", "engines"],
    ["catalog", "gpus"],
    ["estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--quant", "fp8"],
    # issue #13: every command at 100 columns (validate was 209 wide, sweep's prose 112)
    ["catalog", "models"],
    # estimate --disaggregated was 138 wide: its lines were not wrapped
    [
        "estimate",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100-sxm",
        "--quant",
        "fp8",
        "--disaggregated",
        "--prefill-tp",
        "4",
        "--prefill-workers",
        "3",
        "--decode-tp",
        "4",
        "--batch",
        "48",
        "--input-len",
        "16384",
        "--output-len",
        "256",
        "--rate",
        "3",
    ],
    ["validate", str(ROOT / "data" / "calibration" / "measured_public.csv")],
    [
        "sweep",
        str(ROOT / "scenarios" / "moe.yaml"),
        "--jobs",
        "1",
        "--set",
        'hardware.gpus=["h100-sxm","a100-80gb"]',
        "--set",
        "workload.requests_per_second=5,40",
    ],  # fmt: skip
    [
        "calibrate",
        str(ROOT / "data" / "calibration" / "measured_public.csv"),
        "--only-engine",
        "vllm",
        "--params",
        "eta_mem,step_overhead_ms",
        "--starts",
        "1",
        "--id",
        "width-check",
        "--force",
        "-o",
        "{tmp}/width-check.yaml",
    ],  # fmt: skip
]


@pytest.mark.parametrize("args", WIDTH_COMMANDS, ids=lambda a: "-".join(a[:2])[-30:])
def test_terminal_output_fits_100_columns_with_human_numbers(args, monkeypatch, tmp_path):
    """Every line fits 100 columns; no number is printed as 3.32e+11; --wide shows more."""
    import re

    monkeypatch.setenv("COLUMNS", "100")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    res = invoke(*args)
    assert res.exit_code == 0, res.output
    widest = max(len(line) for line in res.output.splitlines())
    assert widest <= 100, (widest, [li for li in res.output.splitlines() if len(li) > 100][:3])
    assert not re.search(r"\d[eE][+-]\d", res.output), res.output
    wide = invoke(*args, "--wide")
    assert wide.exit_code == 0
    assert max(len(line) for line in wide.output.splitlines()) >= widest


def test_fleet_table_names_the_class_each_row_serves():
    res = invoke("solve", str(ROOT / "scenarios" / "mixed-traffic.yaml"), "--no-export")
    lines = res.output.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("GPU ") and "serves" in line)
    classes = json.loads(
        invoke(
            "solve", str(ROOT / "scenarios" / "mixed-traffic.yaml"), "--json", "--no-export"
        ).output
    )["classes"]
    names = {c["name"] for c in classes}
    body = "\n".join(lines[head + 2 : head + 12])
    assert any(n in body for n in names)


def test_solve_json_carries_the_api_comparison_the_terminal_prints():
    """#13: solve's JSON had only the cheapest API at the peak around the clock ($13,724 a
    month for diurnal-chatbot) while the terminal compared its bill for the tokens served
    ($10,354) with the plan over time's average month; both figures are in the JSON now."""
    path = str(ROOT / "scenarios" / "build-vs-api.yaml")
    data = json.loads(invoke("solve", path, "--json", "--no-export").output)
    text = invoke("solve", path, "--no-export", "--wide").output
    line = next(li for li in text.splitlines() if li.startswith("Cheapest API:"))
    assert f"${data['cheapest_api_monthly_usd']:,.0f}/month" in line
    assert f"${data['self_hosted_monthly_usd']:,.0f}/month" in line
    assert data["self_hosted_basis"] in line
    ot = data["over_time"]
    assert data["self_hosted_monthly_usd"] == pytest.approx(ot["total_cost_usd"] / 12)
    assert data["cheapest_api_monthly_usd"] < data["cheapest_api"]["monthly_cost_usd"]


def test_api_prices_per_1m_print_in_cents_at_least():
    """#13: compare printed 0.1 beside 0.05 and 0.24 ($0.1/$0.28 per 1M in solve's text)."""
    from planner.render.text import per_1m

    assert [per_1m(v) for v in (0.1, 0.05, 0.035, 1.2, 12.0, 0.0)] == [
        "0.10", "0.05", "0.035", "1.20", "12.00", "0.00",
    ]  # fmt: skip


def test_a_tiny_cost_per_token_is_plain_decimals():
    """An 8B model on RTX 4090s costs $0.0000922 per 1K output tokens; the Total line printed
    $9.22e-05 (finance reads these lines)."""
    from planner.render.tables import per_token_money

    assert per_token_money(9.22e-05) == "$0.0000922"
    assert per_token_money(0.00074) == "$0.000740"  # three significant digits, zeros kept
    assert per_token_money(0.00099999) == "$0.00100"  # counted after rounding
    assert per_token_money(0.0123) == "$0.0123"
    assert per_token_money(0.0) == "$0.00"


def test_human_numbers_drop_the_decimal_on_thousands():
    """capacity printed '10,291.2 output tokens/s'; hundreds keep one decimal."""
    from planner.render.tables import human

    assert human(10_291.2) == "10,291" and human(51_456.24) == "51,456"
    assert human(512.34) == "512.3" and human(40.2) == "40.2"
    assert human(2.5e9) == "2.50 billion"


def test_a_plan_the_solver_did_not_prove_is_not_called_the_optimum(tmp_path):
    """agent.yaml on MI300X and H200, stopped after one branch-and-bound node (a deterministic
    limit): its plan is 8 MI300Xs at a 7.1% gap, so the single-GPU-type line must not say 'the
    optimum uses one GPU type' of a plan nobody proved optimal. (Since session 37's refit the
    unrestricted agent plan mixes an H100 NVL in, and says what the mix saves instead.)"""
    path = tmp_path / "agent.yaml"
    text = (ROOT / "scenarios" / "agent.yaml").read_text()
    text = text.replace("  inventory:\n", "  gpus: [mi300x, h200]\n  inventory:\n")
    path.write_text(text.replace("\nname: agent\n", "\nname: agent\nsolver:\n  max_nodes: 1\n"))
    res = invoke("solve", str(path), "--no-export")
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())
    assert "[solver: time_limit" in flat
    assert "(the plan above uses one GPU type)" in flat
    assert "the optimum uses one GPU type" not in flat
