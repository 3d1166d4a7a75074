"""MoE layouts of disaggregated pools (issue #11): `estimate --prefill-ep/--decode-ep/
--prefill-dp-attention/--decode-dp-attention`, and the pools' layouts in a plan's grid."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.perf import columns
from planner.perf.candidates import GridSpec, build_grid
from planner.planning.layouts import Axes
from planner.planning.pool_layouts import POOL_DP, build_pool_grid, pool_axes

PLAIN = Axes(pps=(1,), eps=(1,), dp_attentions=(1,))
R1 = (
    "estimate", "--model", "deepseek-r1", "--gpu", "h200", "--quant", "fp8", "--engine",
    "sglang", "--disaggregated", "--prefill-tp", "8", "--batch", "256", "--input-len", "4096",
    "--output-len", "512", "--rate", "1", "--price", "3", "--json",
)  # fmt: skip


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), obj={})


def test_decode_pool_with_ep_and_dp_attention_counts_its_gpus_and_holds_more_sequences():
    tp8 = invoke(*R1, "--decode-tp", "8")
    dp8 = invoke(*R1, "--decode-tp", "1", "--decode-ep", "8", "--decode-dp-attention", "8")
    assert tp8.exit_code == 0 and dp8.exit_code == 0, tp8.output + dp8.output
    a, b = json.loads(tp8.output), json.loads(dp8.output)
    # a DP-attention worker of tp 1 x 8 ranks is 8 GPUs, like the tp-8 worker: 8 + 8 GPUs
    assert b["decode_gpus_per_worker"] == 8 and b["gpus"] == 16
    assert b["cost_per_hour_usd"] == pytest.approx(16 * 3.0)
    assert (b["decode_ep"], b["decode_dp_attention"]) == (8, 8)
    # MLA's latent KV is replicated over tp 8 but split over 8 DP ranks: more sequences fit
    slots = [d["load"]["decode_capacity_batch"] for d in (a, b)]
    assert slots[0] < 256 == slots[1]
    # the KV of one request lives on one attention rank (tp 1, MLA: one shard either way)
    assert b["kv_transfer_ms"] == pytest.approx(a["kv_transfer_ms"])


def test_prefill_pool_layout_is_its_own():
    pre = ("--prefill-tp", "2", "--prefill-ep", "8", "--prefill-dp-attention", "4")
    res = invoke(*R1, *pre, "--decode-tp", "8")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["prefill_gpus_per_worker"] == 8 and out["decode_gpus_per_worker"] == 8


def test_pool_ep_on_a_dense_model_exits_2_naming_the_option():
    res = invoke(
        "estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--quant", "fp8",
        "--disaggregated", "--decode-tp", "4", "--decode-ep", "2",
    )  # fmt: skip
    assert res.exit_code == 2
    assert "--decode-ep 2" in res.output and "MoE" in res.output


def test_a_pool_that_does_not_fit_is_named():
    res = invoke(*R1, "--decode-tp", "1")
    assert res.exit_code == 2
    assert "decode worker of 1 GPU(s)" in res.output and "prefill" not in res.output


def test_pool_axes_add_full_in_node_ep_for_moe_only(catalog):
    wide = pool_axes(catalog.model("deepseek-r1"), (1, 2, 4, 8), PLAIN)
    assert set(wide.dp_attentions) == {1, *POOL_DP}
    assert {1, 8, 16, 32, 64} <= set(wide.eps)
    assert pool_axes(catalog.model("llama-3.1-70b"), (1, 2, 4, 8), PLAIN) == PLAIN


def _spec(catalog, roles):
    return GridSpec(
        gpus=[catalog.gpu("h200")], quants=[catalog.quant("fp8")], tps=(1, 2, 4, 8),
        batches=(64,), shapes=((8192, 512),), roles=roles,
    )  # fmt: skip


def test_plan_grid_offers_pools_full_in_node_ep_and_keeps_aggregated_plain(catalog):
    model, engine = catalog.model("deepseek-r1"), catalog.engine("sglang")
    grid, _ = build_pool_grid(model, _spec(catalog, ("aggregated", "decode")), engine, PLAIN)
    agg, dec = grid[grid["role"] == "aggregated"], grid[grid["role"] == "decode"]
    assert set(agg["ep"]) == {1} and set(agg["dp_attention"]) == {1}
    layouts = set(zip(dec["tp"], dec["ep"], dec["dp_attention"], strict=True))
    # plain tp 8, and full EP (ep = tp x dp_attention) in one 8-GPU node; nothing wider
    assert {(8, 1, 1), (1, 8, 8), (2, 8, 4), (4, 8, 2), (8, 8, 1)} <= layouts
    assert all(ep in (1, tp * dp) and tp * dp <= 8 for tp, ep, dp in layouts)
    assert len(layouts) <= 4 + 4 * len(POOL_DP)  # bounded growth
    # the aggregated rows are exactly those of the scenario's own grid, in the same order
    own, _ = build_grid(model, _spec(catalog, ("aggregated",)), engine)
    assert list(agg["tp"]) == list(own["tp"])


def test_plan_grid_is_unchanged_without_pools_or_for_a_dense_model(catalog):
    engine = catalog.engine("vllm")
    for model_id, roles in (("deepseek-r1", ("aggregated",)), ("llama-3.1-70b", ("decode",))):
        model = catalog.model(model_id)
        spec = _spec(catalog, roles)
        grid, _ = build_pool_grid(model, spec, engine, PLAIN)
        own, _ = build_grid(model, spec, engine)
        assert columns.conform(grid.to_pandas(), columns.GRID_COLUMNS).equals(own)
