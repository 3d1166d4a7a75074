"""`planner estimate`'s options: none accepted and then ignored, TPOT with one output token,
and how its text prints numbers (the audit of estimate's options and formatting)."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.errors import InputError, plain
from planner.planning.estimate import EstimateRequest, estimate_row
from planner.planning.estimate_disagg import Pools, estimate_disaggregated
from planner.render.tables import usd
from planner.render.text import ms

B8 = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
R1 = ["--model", "deepseek-r1", "--gpu", "h200", "--tp", "8", "--quant", "fp8"]
DISAGG = ["--disaggregated", "--rate", "1"]


def _run(*args: str):
    return CliRunner().invoke(cli, ["estimate", *args], obj={})


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        # accepted under --disaggregated and ignored (byte-identical output)
        ([*R1, *DISAGG, "--speculative", "mtp"], "--speculative mtp: speculative decoding is"),
        ([*B8, *DISAGG, "--spec-tokens", "3"], "--spec-tokens 3: speculative decoding is not"),
        ([*B8, *DISAGG, "--spec-acceptance", "0.7"], "--spec-acceptance 0.7: speculative"),
        ([*B8, *DISAGG, "--draft-model", "llama-3.2-1b"], "--draft-model llama-3.2-1b: spec"),
        ([*B8, *DISAGG, "--prefix-cached-tokens", "512"], "--prefix-cached-tokens 512: the pre"),
        ([*B8, *DISAGG, "--pp", "2"], "--pp 2: pipeline parallelism is not modelled"),
        ([*R1, *DISAGG, "--ep", "8"], "--ep 8: each --disaggregated pool takes its own"),
        ([*R1, *DISAGG, "--dp-attention", "8"], "give --prefill-dp-attention and --decode-dp"),
        ([*B8, *DISAGG, "--tp", "2", "--prefill-tp", "1", "--decode-tp", "1"], "--tp 2: --pref"),
        # without their parent option
        ([*B8, "--spec-tokens", "3"], "--spec-tokens 3: a setting of speculative decoding"),
        ([*B8, "--spec-acceptance", "0.7"], "add --speculative mtp or draft"),
        ([*B8, "--draft-model", "llama-3.2-1b"], "--draft-model llama-3.2-1b: a setting of"),
        ([*R1, "--speculative", "mtp", "--draft-model", "llama-3.2-1b"], "the drafter of --spec"),
        ([*B8, "--prefill-tp", "2"], "--prefill-tp 2: an option of the --disaggregated pools"),
        ([*B8, "--decode-workers", "2"], "--decode-workers 2: an option of the --disaggregated"),
        ([*B8, "--prefill-workers", "1"], "--prefill-workers 1: an option of the"),
        ([*B8, "--decode-ep", "2"], "--decode-ep 2: an option"),
        ([*B8, "--prefill-dp-attention", "2"], "--prefill-dp-attention 2: an option"),
        ([*B8, "--engine", "sglang", "--ideal"], "--engine sglang: --ideal is the roofline of no"),
        ([*B8, "--engine", "vllm", "--ideal"], "--engine vllm: --ideal is the roofline of no"),
        ([*B8, "--rate", "1", "--utilization", "0.5"], "--utilization 0.5: the planning load"),
        ([*B8, "--concurrency", "4", "--utilization", "0.5"], "--utilization 0.5: the planning"),
        ([*B8, *DISAGG, "--utilization", "0.5"], "--utilization 0.5: the planning load"),
    ],
)
def test_an_option_another_leaves_unused_exits_2_naming_it(args, needle):
    """Each was accepted and changed nothing; now exit 2 with one message naming the
    option, its value and why (as --num-prompts without --concurrency already did)."""
    res = _run(*args)
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output
    assert res.output.count("error:") == 1


@pytest.mark.parametrize(
    "args",
    [
        [*B8, "--ideal"],
        [*B8, "--disaggregated", "--utilization", "0.5"],  # the pools' planning load
        [*B8, "--utilization", "0.5"],
        [*B8, *DISAGG, "--tp", "2", "--prefill-tp", "1"],  # --tp is the decode pool's
        [*R1, "--speculative", "mtp", "--spec-tokens", "1"],
        [*B8, *DISAGG, "--speculative", "off", "--pp", "1", "--prefix-cached-tokens", "0"],
    ],
)
def test_options_that_are_used_still_run(args):
    """An option the mode uses, or one saying what the mode does anyway (no speculation,
    one pipeline stage, nothing cached under --disaggregated), is no option left unused."""
    res = _run(*args)
    assert res.exit_code == 0, res.output


def test_a_library_call_refuses_what_it_would_ignore(catalog):
    """`estimate_disaggregated` ignored a request's speculation, prefix cache and layout; a
    request's k without a speculative mode was ignored by `estimate_row`."""
    base = dict(model="llama-3.1-8b", gpu="h100-sxm", tp=1, quant="bf16", batch=None,
                input_len=1024, output_len=256, rate=1.0)  # fmt: skip
    with pytest.raises(InputError, match="--prefix-cached-tokens 100: the prefix cache"):
        estimate_disaggregated(
            EstimateRequest(**base, prefix_cached_tokens=100), Pools(1, 1, 1, 1), catalog
        )
    with pytest.raises(InputError, match="--spec-tokens 2: a setting of speculative"):
        estimate_row(EstimateRequest(**base, spec_tokens=2), catalog)


def test_one_output_token_has_no_tpot():
    """TPOT is the time between output tokens, (latency - TTFT) / (O - 1): with O = 1 there
    is none. It printed the decode step (O - 1 = 0 clamped to 1); now n/a, JSON null; the
    TTFT, throughput and cost stand. (`solve` keeps its clamped TPOT for a class of one
    output token, unchanged.)"""
    for load in ([], ["--rate", "1"], ["--concurrency", "4"]):
        text = _run(*B8, "--output-len", "1", *load).output
        assert "TPOT                    n/a  none: one output token" in text
        data = json.loads(_run(*B8, "--output-len", "1", *load, "--json").output)
        assert data["tpot_ms"] is None and data["breakdown"]["prefill_interference_ms"] is None
        assert data["breakdown"]["step_ms"] > 0 and data["ttft_ms"] > 0
        assert data["cost_per_1k_output_tokens_usd"] > 0
    pools = json.loads(_run(*B8, *DISAGG, "--output-len", "1", "--json").output)
    assert pools["tpot_ms"] is None
    assert "TPOT n/a (one output token" in _run(*B8, *DISAGG, "--output-len", "1").output
    two = json.loads(_run(*B8, "--output-len", "2", "--json").output)
    assert two["tpot_ms"] == pytest.approx(two["tpot_step_ms"])  # one sequence: the step


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.000001, "0.000001"), (5.5, "5.5"), (4.61104, "4.61"), (0.0000123456, "0.0000123"),
     (1234.5, "1,234"), (439160.04, "439,160"), (0.5, "0.5"), (float("nan"), "n/a")],
)  # fmt: skip
def test_plain_numbers_never_use_exponents(value, text):
    assert plain(value) == text


def test_milliseconds_and_dollars_read_as_the_rest_of_the_project():
    """ms: thousands separated, no decimal from 1,000 (human's rule: TTFT 439160.0 read
    so), n/a when undefined; dollars: cents from $1, three significant digits below."""
    assert (ms(439160.04), ms(15026.3), ms(127.88), ms(7.8688, 3)) == (
        "439,160", "15,026", "127.9", "7.869"
    )  # fmt: skip
    assert ms(float("nan")) == "n/a"
    assert (usd(747.2222), usd(0.0047), usd(0.00063301), usd(0.0156)) == (
        "$747.22", "$0.00470", "$0.000633", "$0.0156"
    )  # fmt: skip


def test_estimate_text_prints_plain_loads_and_readable_ttfts():
    """'Load: 1e-06 req/s' reads 0.000001; a 63-second TTFT reads 62,788 ms, no decimal (it
    read 62607.7); 'no price' carries no $nan; a refused rate on one sequence in flight is
    singular."""
    tiny = _run(*B8, "--rate", "0.000001").output
    assert "Load: 0.000001 req/s (open loop, Poisson)" in tiny and "e-0" not in tiny
    assert "$747.22 per request" in tiny
    full = _run(*B8, "--rate", "5.7", "--input-len", "4000").output  # near its 5.71 req/s
    assert re.search(r"TTFT \d\d,\d\d\d ms at this load", full)  # 62,788
    assert re.search(r"^for a free slot +\d\d,\d\d\d  ", full, re.MULTILINE)
    assert re.search(r"^TTFT +\d\d,\d\d\d  at this load", full, re.MULTILINE)
    gaudi = _run("--model", "llama-3.1-8b", "--gpu", "gaudi3", *DISAGG).output
    assert "Cost: no price in the catalog for this GPU (pass --price)" in gaudi
    assert "nan" not in gaudi
    tiny_pools = _run(*B8, "--disaggregated", "--rate", "0.000001").output
    assert "Load: 0.000001 req/s" in tiny_pools and "e-0" not in tiny_pools
    assert "e+0" not in tiny_pools
    one = _run(*B8, "--batch", "1", "--rate", "100")
    assert one.exit_code == 2 and "(1 sequence in flight)" in one.output


def test_disaggregated_cost_has_three_significant_digits():
    """Two H100s at $2.69/h serving 2 req/s of 256 tokens: 5.38 / (3600 x 512) x 1000 =
    $0.00292 per 1K output tokens, per_token_money's three digits (it printed $0.0029)."""
    data = json.loads(_run(*B8, "--disaggregated", "--rate", "2", "--json").output)
    assert data["gpus"] == 2
    assert data["cost_per_1k_output_tokens_usd"] == pytest.approx(5.38 / (3600 * 512) * 1e3)
    text = _run(*B8, "--disaggregated", "--rate", "2").output
    assert "at the load served $0.00292 per 1K output tokens ($2.92 per 1M)" in text
