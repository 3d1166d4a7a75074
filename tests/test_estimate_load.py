"""`planner estimate` at a load: what the replica serves, what it costs at that rate, the
batch an open loop keeps in flight and its waits (the audit of estimate's load paths)."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.planning.estimate import EstimateRequest, estimate_row, in_flight_batch

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
    """16 clients, 2,048 / 256 tokens: 1,195.0 output tok/s served, 1,195.0 / 256 = 4.668
    req/s; $2.69/h over that is $0.000625 per 1K output tokens (it printed the cost at 80%
    of the capacity at 16 in flight; 1,180.4 tok/s before session 37's refit)."""
    d = _json("--concurrency", "16", "--input-len", "2048", "--output-len", "256")
    assert d["throughput_tok_s"] == pytest.approx(1194.9648, rel=1e-5)
    assert d["requests_per_s"] == pytest.approx(1194.9648 / 256, rel=1e-5)
    assert d["cost_per_1k_output_tokens_usd"] == pytest.approx(
        H100 / (3600 * 1194.9648) * 1e3, rel=1e-5
    )
    assert d["cost_per_request_usd"] == pytest.approx(H100 / (3600 * 1194.9648 / 256), rel=1e-5)
    # Little's law over the 16 clients: each waits out its TTFT and O - 1 TPOTs
    life_s = (d["ttft_ms"] + 255 * d["tpot_ms"]) / 1e3
    assert d["requests_per_s"] == pytest.approx(16 / life_s, rel=1e-9)
    # the replica's capacity, beside it: what memory's 210 sequences serve
    assert d["load"]["capacity_batch"] == 210 and d["capacity_requests_per_s"] > 10
    assert d["capacity_tok_s"] == pytest.approx(256 * d["capacity_requests_per_s"])
    text = _text(*B8, "--concurrency", "16", "--input-len", "2048", "--output-len", "256")
    assert "1,195 output tok/s, 4.67 req/s served per replica" in text
    assert "$0.000625 per 1K output tokens" in text and "$0.000160 per request" in text


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
    assert d["cost_per_request_usd"] == pytest.approx(0.0001376741409, rel=1e-9)  # as solve
    assert d["load"]["capacity_batch"] == 32


def test_disaggregated_costs_the_rate_it_serves_too():
    """--disaggregated already costs at the served load: (4 + 4 GPUs) x $2.69 over 1 req/s
    x 256 tokens; its figures stay what they were."""
    args = ["estimate", *B8, "--disaggregated", "--rate", "1", "--json"]
    d = json.loads(CliRunner().invoke(cli, args, obj={}).output)
    gpus = d["gpus"]
    assert d["requests_per_s"] == 1
    assert d["cost_per_1k_output_tokens_usd"] == pytest.approx(gpus * H100 / 3600 / 256 * 1e3)


def test_open_loop_holds_the_batch_littles_law_needs_near_capacity():
    """--rate 5.67, 4,000 / 256 tokens (memory holds 111; capacity 5.71 req/s with session
    37's profile): a fixed point stopped short once left too few in flight and a long wait
    for a slot; the least b with b >= 5.67 (TTFT + 255 TPOT(b)) is 107 (5.67 x 18.87 s =
    106.97), TPOT 73.3 ms (before session 37: --rate 5.5, b 109, TPOT 77.0 ms)."""
    d = _json("--rate", "5.67", "--input-len", "4000")
    assert d["load"]["batch_in_flight"] == 107
    assert d["tpot_ms"] == pytest.approx(73.30, abs=0.01)
    life_s = (d["ttft_unloaded_ms"] + 255 * d["tpot_ms"]) / 1e3
    assert 106 < 5.67 * life_s <= 107
    # 107 of 111 slots busy: requests do wait for one now
    assert d["ttft_breakdown"]["slot_wait_ms"] > 1000


def test_open_loop_batch_serves_the_rate_and_waits_only_when_full(catalog):
    """At every rate below capacity the batch in flight serves it, R(b) >= rate; at --rate
    5 (48 of 111 slots busy) nobody waits for a slot (it once said 47 in flight, R = 4.87 <
    5, and a 203 ms slot wait)."""
    for rate in (0.2, 1.0, 3.0, 5.0, 5.3, 5.5, 5.67, 5.7):
        req = EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", tp=1, quant="bf16",
                              batch=None, input_len=4000, output_len=256, rate=rate)  # fmt: skip
        row = estimate_row(req, catalog)
        assert row["in_flight_capacity_requests_per_s"] >= rate
        assert row["batch_in_flight"] <= row["capacity_batch"] == 111
        if rate <= 5.0:
            assert row["ttft_slot_wait_ms"] == 0.0
    assert _json("--rate", "5", "--input-len", "4000")["load"]["batch_in_flight"] == 48


def _rows(life_s, rate_of):
    """A fake `row_at(b)` of idle TTFT + (O - 1) TPOT = life_s(b) (O = 2: TPOT is the rest)
    and R(b) = rate_of(b), counting its calls."""
    calls = []

    def row_at(b: int) -> dict:
        calls.append(b)
        return {"ttft_unloaded_ms": 0.0, "tpot_ms": life_s(b) * 1e3, "requests_per_s": rate_of(b)}

    return row_at, calls


def test_in_flight_batch_is_the_least_that_littles_law_and_the_rate_allow():
    """Life 1 + 0.01 b s at 10 req/s: b >= 10 (1 + 0.01 b) from b = 10 / 0.9 = 11.1, so 12;
    with R(b) = b / 2 the rate needs b >= 20 as well; a cap of 8 holds 8 (the slots are
    full); at most ceil(log2 cap) rows are evaluated."""
    row_at, calls = _rows(lambda b: 1 + 0.01 * b, lambda b: 1e9)
    assert in_flight_batch(row_at, 10.0, 2, 1024) == 12
    assert len(calls) <= math.ceil(math.log2(1024))
    row_at, _ = _rows(lambda b: 1 + 0.01 * b, lambda b: b / 2)
    assert in_flight_batch(row_at, 10.0, 2, 1024) == 20
    row_at, _ = _rows(lambda b: 1 + 0.01 * b, lambda b: 1e9)
    assert in_flight_batch(row_at, 10.0, 2, 8) == 8
    row_at, _ = _rows(lambda b: 0.05, lambda b: 1e9)
    assert in_flight_batch(row_at, 10.0, 2, 1) == 1  # one slot: nothing to search


def test_negligible_waits_are_zero_in_json():
    """At 1 req/s the M/D/c tail for a slot is 1e-137 ms: JSON says 0.0, not 3.1e-137."""
    d = _json("--rate", "1", "--input-len", "4000")
    assert d["ttft_breakdown"]["slot_wait_ms"] == 0.0
    parts = d["ttft_breakdown"]
    assert sum(parts.values()) == pytest.approx(d["ttft_ms"], rel=1e-9)
