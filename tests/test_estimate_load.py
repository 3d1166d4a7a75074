"""`planner estimate` at a load: what the replica serves and what it costs at that rate
(the audit of estimate's load paths)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from planner.cli import cli

H100 = 2.69  # $/GPU-hour, the catalog's RunPod price of an H100 SXM
B8 = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"]


def _json(*args: str) -> dict:
    res = CliRunner().invoke(cli, ["estimate", *B8, *args, "--json"], obj={})
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def _text(*args: str) -> str:
    res = CliRunner().invoke(cli, ["estimate", *args], obj={})
    assert res.exit_code == 0, res.output
    return res.output


def test_closed_loop_costs_the_rate_it_serves():
    """16 clients, 2,048 / 256 tokens: 1,180.4 output tok/s served, 1,180.4 / 256 = 4.611
    req/s; $2.69/h over that is $0.000633 per 1K output tokens (it printed $0.000775, the
    cost at 80% of the capacity at 16 in flight, and 4.71 req/s)."""
    d = _json("--concurrency", "16", "--input-len", "2048", "--output-len", "256")
    assert d["throughput_tok_s"] == pytest.approx(1180.43, rel=1e-5)
    assert d["requests_per_s"] == pytest.approx(1180.43 / 256, rel=1e-5)
    assert d["cost_per_1k_output_tokens_usd"] == pytest.approx(
        H100 / (3600 * 1180.43) * 1e3, rel=1e-5
    )
    assert d["cost_per_request_usd"] == pytest.approx(H100 / (3600 * 1180.43 / 256), rel=1e-5)
    # Little's law over the 16 clients: each waits out its TTFT and O - 1 TPOTs
    life_s = (d["ttft_ms"] + 255 * d["tpot_ms"]) / 1e3
    assert d["requests_per_s"] == pytest.approx(16 / life_s, rel=1e-9)
    # the replica's capacity, beside it: what memory's 210 sequences serve
    assert d["load"]["capacity_batch"] == 210 and d["capacity_requests_per_s"] > 10
    assert d["capacity_tok_s"] == pytest.approx(256 * d["capacity_requests_per_s"])
    text = _text(*B8, "--concurrency", "16", "--input-len", "2048", "--output-len", "256")
    assert "1,180 output tok/s, 4.61 req/s served per replica" in text
    assert "$0.000633 per 1K output tokens" in text and "$0.000162 per request" in text


@pytest.mark.parametrize(
    ("rate", "per_request"),
    [
        (5.0, H100 / 3600 / 5),  # $0.000149 (it printed $0.000192)
        (0.5, H100 / 3600 / 0.5),
        (0.000001, H100 / 3600 / 0.000001),  # $747 a request (it printed $0.00191)
    ],
)
def test_open_loop_costs_the_rate_offered(rate, per_request):
    """Poisson arrivals at R req/s on a replica of its own: every request costs $/h / 3600 /
    R; the req/s shown is R, the capacity beside it."""
    d = _json("--rate", f"{rate}", "--input-len", "4000")
    assert d["requests_per_s"] == rate and d["throughput_tok_s"] == pytest.approx(rate * 256)
    assert d["cost_per_request_usd"] == pytest.approx(per_request, rel=1e-9)
    assert d["cost_per_1k_output_tokens_usd"] == pytest.approx(per_request / 256 * 1e3)
    assert d["capacity_requests_per_s"] > rate and d["load"]["capacity_batch"] == 111


def test_planned_load_costs_its_share_of_the_capacity_as_solve_does():
    """Neither --concurrency nor --rate: --batch 32 kept full at 80% of its capacity R(32),
    the cost solve's (unchanged); the req/s served is 0.8 R(32), the capacity R(32)."""
    d = _json("--batch", "32", "--input-len", "2048", "--output-len", "256")
    capacity = d["capacity_requests_per_s"]
    assert d["requests_per_s"] == pytest.approx(0.8 * capacity, rel=1e-9)
    assert d["cost_per_request_usd"] == pytest.approx(H100 / (3600 * 0.8 * capacity))
    assert d["cost_per_request_usd"] == pytest.approx(0.0001403814923, rel=1e-9)  # as before
    assert d["load"]["capacity_batch"] == 32


def test_disaggregated_costs_the_rate_it_serves_too():
    """--disaggregated already costs at the served load: (4 + 4 GPUs) x $2.69 over 1 req/s
    x 256 tokens; its figures stay what they were."""
    args = ["estimate", *B8, "--disaggregated", "--rate", "1", "--json"]
    d = json.loads(CliRunner().invoke(cli, args, obj={}).output)
    gpus = d["gpus"]
    assert d["requests_per_s"] == 1
    assert d["cost_per_1k_output_tokens_usd"] == pytest.approx(gpus * H100 / 3600 / 256 * 1e3)
