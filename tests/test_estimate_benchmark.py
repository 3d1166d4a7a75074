"""`planner estimate --concurrency C --num-prompts N`: the means a closed-loop benchmark reports
(vllm bench serve --max-concurrency C --num-prompts N), its first round of C prompts arriving
at once, as the calibration compares measured closed loops (issue #10)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from planner import calibration as cal
from planner.cli import cli
from planner.planning.estimate import EstimateRequest, estimate

H100_8B = {"model_id": "llama-3.1-8b", "gpu_id": "h100-sxm", "quant_id": "bf16",
           "kv_dtype": "bf16", "tp": 1}  # fmt: skip
ARGS = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--input-len", "2048",
        "--output-len", "256"]  # fmt: skip


def _benchmark(n: int, catalog) -> tuple[float, float, float]:
    """TTFT, TPOT and throughput the calibration predicts for a vllm bench serve result of
    16 clients over n prompts of 2048 / 256 tokens."""
    doc = {"request_rate": "inf", "max_concurrency": 16, "num_prompts": n, "completed": n,
           "total_input_tokens": n * 2048, "total_output_tokens": n * 256,
           "mean_tpot_ms": 20.0, "mean_ttft_ms": 500.0, "output_throughput": 1000.0}  # fmt: skip
    rows = cal.vllm_result_rows([doc], H100_8B, "run.json")
    assert rows.iloc[0]["scenario_kind"] == "closed_loop"
    got = cal.predict(rows, catalog, catalog.engine("vllm")).iloc[0]
    return got["pred_ttft"], got["pred_tpot"], got["pred_throughput"]


@pytest.mark.parametrize("n", [64, 640])
def test_estimate_reports_what_the_calibration_compares_with_a_benchmark(n, catalog):
    """One model of a closed-loop benchmark in both places: the estimate at C 16 over n prompts
    equals the calibration's prediction of that vllm bench serve result (its own first-round
    share 16 / n), TTFT, TPOT and throughput."""
    req = EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", tp=1, quant="bf16", batch=None,
                          input_len=2048, output_len=256, kv_dtype="bf16", concurrency=16,
                          num_prompts=n)  # fmt: skip
    row = estimate(req, catalog)
    ttft, tpot, throughput = _benchmark(n, catalog)
    assert row["ttft_ms"] == pytest.approx(ttft, rel=1e-8)
    assert row["tpot_ms"] == pytest.approx(tpot, rel=1e-8)
    assert row["throughput_tok_s"] == pytest.approx(throughput, rel=1e-8)
    assert row["first_round_share"] == pytest.approx(16 / n)


def test_more_prompts_approach_the_steady_state(catalog):
    """The first round's share falls as 1 / N: the TTFT moves from the wave's towards the
    steady state's, linearly in C / N, and without --num-prompts it is the steady state."""

    def ttft(n: int | None) -> float:
        req = EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", tp=1, quant="bf16",
                              batch=None, input_len=2048, output_len=256, concurrency=16,
                              num_prompts=n)  # fmt: skip
        return float(estimate(req, catalog)["ttft_ms"])

    steady, quarter, tenth, hundredth = ttft(None), ttft(64), ttft(160), ttft(1600)
    assert quarter > tenth > hundredth > steady  # 16 prompts at once wait longer
    # f (W - S) is linear in f = 16 / N: the tenth lies on the line through the others
    assert tenth - steady == pytest.approx((quarter - steady) * 0.4, rel=1e-9)
    assert hundredth - steady == pytest.approx((quarter - steady) * 0.04, rel=1e-9)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--num-prompts", "64"], "give --concurrency C as well"),
        (["--concurrency", "16", "--num-prompts", "8"], "fewer than --concurrency 16"),
        (["--concurrency", "16", "--num-prompts", "0"], "--num-prompts"),
        (["--rate", "1", "--num-prompts", "64"], "give --concurrency C as well"),
    ],
)
def test_num_prompts_needs_a_closed_loop_of_fewer_clients(extra, message):
    res = CliRunner().invoke(cli, ["estimate", *ARGS, *extra], obj={})
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output


def test_text_and_json_name_the_first_round():
    """The load line says how many prompts, the TTFT and TPOT tables carry the first round as a
    term, and the JSON's load says its share; without --num-prompts the share is 0 and
    num_prompts null."""
    run = ["estimate", *ARGS, "--concurrency", "16"]
    text = CliRunner().invoke(cli, [*run, "--num-prompts", "64"], obj={}).output
    assert "concurrency 16 (closed loop) over 64 prompts" in text
    assert "16 of 64 prompts (25%): arrive at once on an idle replica" in text
    data = json.loads(CliRunner().invoke(cli, [*run, "--json"], obj={}).output)
    assert data["load"]["num_prompts"] is None and data["load"]["first_round_share"] == 0
    plain = CliRunner().invoke(cli, run, obj={}).output
    assert "first round" not in plain
