"""Multi-node replicas (pipeline stages), expert parallel and DP attention: the formulas
pinned to hand-computed values, the layouts' invariants, and the two shipped scenarios."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.cli import cli
from planner.errors import InfeasibleError
from planner.inputs.scenarios import load_scenario
from planner.perf import parallel as par
from planner.perf.candidates import GridSpec, Price, build_grid
from planner.perf.evaluate import evaluate
from planner.planning.pipeline import plan

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def test_pipeline_bubble_is_the_idle_share_of_stages() -> None:
    """m = min(pp, B) micro-batches: pp 4 with 2 sequences leaves half the stages idle."""
    assert par.pipeline_bubble(4, 2) == pytest.approx(0.5)
    assert par.pipeline_bubble(2, 64) == pytest.approx(0.0)
    assert par.pipeline_bubble(1, 1) == pytest.approx(0.0)
    assert par.micro_batches(4, 2) == pytest.approx(2.0)


def test_decode_period_crosses_every_stage_and_boundary() -> None:
    """2 stages of 10 ms and a 1 ms send: 2 x 10 + 1 x 1 = 21 ms; pp 1 is the stage."""
    assert par.decode_period(10e-3, 1e-3, 2) == pytest.approx(21e-3)
    assert par.decode_period(10e-3, 5e-3, 1) == pytest.approx(10e-3)


def test_p2p_is_latency_plus_activation_bytes_over_the_link() -> None:
    """64 tokens x 16384 x 2 B = 2,097,152 B over 50 GB/s = 41.94 us, + 10 us."""
    t = par.latency_p2p(64, 16384, 50e9, 10e-6)
    assert t == pytest.approx(10e-6 + 2_097_152 / 50e9)


def test_prefill_micro_batches_fill_the_pipeline() -> None:
    """A 100 ms stage in 4 chunks over 2 stages: 100 (1 + 1/4) + 1 x 1 ms send = 126 ms."""
    assert par.prefill_pipelined(0.1, 1e-3, 2, 4) == pytest.approx(0.126)
    assert par.prefill_pipelined(0.1, 1e-3, 1, 4) == pytest.approx(0.1)


def test_alltoall_matches_the_hand_computed_deepep_case() -> None:
    """DeepEP's EP16 decode case (2 nodes of 8 H800, CX7 400 Gb/s, 128 tokens, d 7168,
    top-8): payload 128 x 8 x 7168 x 2 x 15/16 = 13,762,560 B; half the peers off-node
    at 50 GB/s: 137.63 us, the NVLink half 15.29 us; dispatch + combine with alpha 10 us:
    2 x (10 + 137.63) = 295.25 us (DeepEP README measures 118 + 195 = 313 us)."""
    t = par.latency_alltoall(128, 8, 7168, 16, 0.5, 450e9, 50e9, 10e-6)
    assert t == pytest.approx(2 * (10e-6 + 0.5 * 13_762_560 / 50e9))
    assert t == pytest.approx(295.25e-6, rel=1e-4)
    assert abs(t - 313e-6) / 313e-6 < 0.07


def test_alltoall_is_zero_without_expert_parallel_and_scales_with_skew() -> None:
    assert par.latency_alltoall(128, 8, 7168, 1, 1.0, 450e9, 50e9, 10e-6) == 0.0
    inside = par.latency_alltoall(128, 8, 7168, 8, 1.0, 450e9, np.nan, 0.0)
    assert inside == pytest.approx(2 * 128 * 8 * 7168 * 2 * 7 / 8 / 450e9)
    skewed = par.latency_alltoall(128, 8, 7168, 8, 1.0, 450e9, np.nan, 0.0, 1.3)
    assert skewed == pytest.approx(1.3 * inside)


def _grid(catalog, model_id, quant, layouts, batches=(64,), gpu=None):
    """Evaluated rows of (tp, pp, ep, dp) layouts on H100 SXM (or `gpu`)."""
    model = catalog.model(model_id)
    gpu = gpu or catalog.gpu("h100-sxm")
    frames = []
    for tp, pp, ep, dp in layouts:
        spec = GridSpec(
            gpus=[gpu],
            quants=[catalog.quant(quant)],
            tps=[tp],
            pps=[pp],
            eps=[ep],
            dp_attentions=[dp],
            batches=list(batches),
            shapes=[(1024, 1024)],
            prices={gpu.id: Price(2.0, "test")},
        )
        grid, rejected = build_grid(model, spec, catalog.engine("sglang"))
        assert not grid.empty, rejected["reason"].tolist()
        frames.append(evaluate(model, grid))
    return frames


def test_dp_attention_holds_each_ranks_own_latent_not_a_replica(catalog) -> None:
    """MLA's latent KV does not split over tp (every tp rank holds every sequence's); with
    DP attention each rank holds ceil(B / dp) sequences: dp 2 halves the KV per GPU."""
    plain, pp2, dp2, dp16 = _grid(
        catalog, "deepseek-r1", "fp8", [(8, 1, 1, 1), (8, 2, 1, 1), (8, 1, 16, 2), (1, 1, 16, 16)]
    )
    whole = plain["kv_cache_per_gpu_gb"][0]  # tp 8: each GPU holds all 64 sequences' latent
    assert pp2["kv_cache_per_gpu_gb"][0] == pytest.approx(whole / 2)  # half the layers
    assert dp2["kv_cache_per_gpu_gb"][0] == pytest.approx(whole / 2)  # half the sequences
    assert dp16["kv_cache_per_gpu_gb"][0] == pytest.approx(whole / 16)  # 4 of 64 sequences


def test_gpus_per_replica_and_cost_count_every_stage_and_rank(catalog) -> None:
    (row,) = _grid(catalog, "deepseek-r1", "fp8", [(1, 1, 16, 16)])
    assert int(row["gpus_per_replica"][0]) == 16
    assert int(row["nodes_per_replica"][0]) == 2
    assert row["cost_per_hour_usd"][0] == pytest.approx(16 * 2.0)


def test_invalid_layouts_are_rejected_with_a_reason(catalog) -> None:
    """EP on a dense model, DP attention without EP, and a replica beyond one domain on a
    GPU without a catalogued scale-out link."""
    cases = [
        ("llama-3.1-70b", "h100-sxm", (8, 1, 8, 1), "dense"),
        ("deepseek-r1", "h100-sxm", (8, 1, 1, 2), "needs expert parallel"),
        ("llama-3.1-405b", "a100-80gb", (8, 2, 1, 1), "no scale-out link"),
    ]
    for model_id, gpu_id, (tp, pp, ep, dp), why in cases:
        spec = GridSpec(
            gpus=[catalog.gpu(gpu_id)],
            quants=[catalog.quant("bf16")],
            tps=[tp],
            pps=[pp],
            eps=[ep],
            dp_attentions=[dp],
            batches=[8],
        )
        grid, rejected = build_grid(catalog.model(model_id), spec, None)
        assert grid.empty
        assert why in rejected["reason"].iloc[0]


@settings(max_examples=15, deadline=None)
@given(
    low=st.floats(min_value=1.0, max_value=100.0),
    factor=st.floats(min_value=1.0, max_value=10.0),
    batch=st.sampled_from([1, 8, 64, 256]),
)
def test_more_scaleout_bandwidth_never_raises_tpot_or_ttft(catalog, low, factor, batch) -> None:
    """TPOT and TTFT are non-increasing in the scale-out bandwidth, for pipeline stages and
    for EP across nodes."""
    base = catalog.gpu("h100-sxm")
    slow = base.model_copy(update={"scaleout_link_gb_per_s": low})
    fast = base.model_copy(update={"scaleout_link_gb_per_s": low * factor})
    layouts = [(8, 2, 1, 1), (1, 1, 16, 16)]
    for a, b in zip(
        _grid(catalog, "deepseek-r1", "fp8", layouts, (batch,), slow),
        _grid(catalog, "deepseek-r1", "fp8", layouts, (batch,), fast),
        strict=True,
    ):
        assert (b["tpot_ms"] <= a["tpot_ms"] * (1 + 1e-12)).all()
        assert (b["ttft_unloaded_ms"] <= a["ttft_unloaded_ms"] * (1 + 1e-12)).all()


def test_pipeline_at_batch_one_reads_every_stage_in_turn(catalog) -> None:
    """At batch 1 there is one micro-batch: pp 2 pays both stages' weight reads in turn, so
    its weight time equals one 16-GPU stage's x 2, and half the stages idle."""
    (pp2,) = _grid(catalog, "llama-3.1-405b", "bf16", [(8, 2, 1, 1)], (1,))
    assert pp2["pipeline_bubble"][0] == pytest.approx(0.5)
    assert pp2["t_p2p_ms"][0] > 0
    assert pp2["tpot_step_ms"][0] >= pp2["t_weights_ms"][0]


@pytest.mark.parametrize("name", ["deepseek-r1-h100", "llama-405b-h100"])
def test_multi_node_scenarios_plan_fleets_of_two_node_replicas(catalog, unhurried, name):
    scenario, cat = load_scenario(SCENARIOS / f"{name}.yaml", catalog)
    result = plan(unhurried(scenario), cat)
    assert result.fleet.deployments
    for d in result.fleet.deployments:
        assert d.nodes_per_replica >= 2
        assert d.gpus == d.replicas * d.gpus_per_replica
        assert d.gpus_per_replica == d.tp * d.pp * d.dp_attention
        assert d.cost_per_hour_usd == pytest.approx(d.gpus * d.price_usd_per_gpu_hour)
    assert result.fleet.total_gpus == sum(d.gpus for d in result.fleet.deployments)


def test_single_node_search_explains_that_the_model_needs_two_nodes(catalog) -> None:
    """DeepSeek-R1 is already fp8: the advice names nodes and pp, not 'try fp8' or a tp."""
    scenario, cat = load_scenario(SCENARIOS / "deepseek-r1-h100.yaml", catalog)
    search = scenario.search.model_copy(update={"pp": [1], "ep": [1], "dp_attention": [1]})
    with pytest.raises(InfeasibleError) as exc:
        plan(scenario.model_copy(update={"search": search}), cat)
    msg = str(exc.value)
    assert "more than one 8-GPU node (2 nodes)" in msg
    assert "search.pp up to 2" in msg
    assert "larger tp" not in msg and "e.g. fp8" not in msg


def test_estimate_cli_takes_pp_ep_dp_attention() -> None:
    args = ["estimate", "--model", "deepseek-r1", "--gpu", "h100-sxm", "--quant", "fp8"]
    out = CliRunner().invoke(cli, [*args, "--ep", "16", "--dp-attention", "16", "--json"])
    assert out.exit_code == 0, out.output
    row = json.loads(out.output)
    assert (row["gpus_per_replica"], row["nodes_per_replica"], row["ep"]) == (16, 2, 16)
    bad = CliRunner().invoke(cli, [*args, "--tp", "8", "--dp-attention", "2"])
    assert bad.exit_code == 2 and "needs expert parallel" in bad.output


def test_cross_node_ep_pays_the_fitted_layer_cost_and_in_node_ep_does_not(catalog) -> None:
    """EP_CROSS_NODE_LAYER_S (fitted on AIC wide-EP rows) per MoE layer when the EP group
    spans scale-up domains: DeepSeek's 58 MoE layers x 406 us = 23.5 ms at least."""
    across, inside = _grid(catalog, "deepseek-r1", "fp8", [(1, 1, 16, 16), (8, 1, 8, 1)], (8,))
    floor = 58 * par.EP_CROSS_NODE_LAYER_S * 1e3
    assert across["t_alltoall_ms"][0] >= floor
    # inside one node: only the fitted per-collective latency (two per MoE layer, ~3.9 ms
    # with SGLang's refitted Hopper base) and the NVLink payload, far below the cross-node floor
    assert inside["t_alltoall_ms"][0] < floor / 4
