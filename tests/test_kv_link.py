"""KV transfer of disaggregated pools over the scale-up link within one node (issue #11)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem, solve_fleet
from planner.perf.candidates import GridSpec
from planner.planning.layouts import Axes
from planner.planning.pool_layouts import build_pool_grid

PLAIN = Axes(pps=(1,), eps=(1,), dp_attentions=(1,))
KV_16K = 80 * 8 * 128 * 2 * 2 * 16384  # Llama-3.1-70B bf16 KV of a 16,384-token prompt, B
LONG = (
    "estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--quant", "fp8",
    "--disaggregated", "--batch", "32", "--input-len", "16384", "--output-len", "256",
    "--rate", "0.5", "--json",
)  # fmt: skip


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), obj={})


def test_pools_in_one_node_pass_the_kv_over_nvlink_hand_computed():
    res = invoke(*LONG, "--prefill-tp", "2", "--decode-tp", "4")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    # 2 + 4 GPUs in one 8-GPU NVSwitch node: the slower side is the prefill worker's 2 KV
    # shards over 450 GB/s NVLink each: 5.369e9 / (2 x 450e9) = 5.965 ms
    assert out["kv_link"] == "scale-up"
    assert out["kv_transfer_ms"] == pytest.approx(KV_16K / (2 * 450e9) * 1e3, rel=1e-9)
    assert out["kv_transfer_ms"] == pytest.approx(5.965232, rel=1e-6)


def test_pools_across_nodes_pass_the_kv_over_the_nics():
    res = invoke(*LONG, "--prefill-tp", "2", "--prefill-workers", "3", "--decode-tp", "4")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)  # 3 x 2 + 4 = 10 GPUs > 8: over 50 GB/s NICs
    assert out["kv_link"] == "scale-out"
    assert out["kv_transfer_ms"] == pytest.approx(KV_16K / (2 * 50e9) * 1e3, rel=1e-9)


def test_a_gpu_without_nics_can_still_pool_inside_one_node():
    res = invoke("estimate", "--model", "llama-3.1-8b", "--gpu", "a100-80gb", "--disaggregated",
                 "--rate", "1", "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["kv_link"] == "scale-up"


def test_plan_grid_offers_scale_up_pools_of_at_most_half_a_node(catalog):
    spec = GridSpec(
        gpus=[catalog.gpu("h100-sxm"), catalog.gpu("a100-80gb")], quants=[catalog.quant("fp8")],
        tps=(1, 2, 4, 8), batches=(32,), shapes=((16384, 256),),
        roles=("aggregated", "prefill", "decode"), kv_links=("scale-out", "scale-up"),
    )  # fmt: skip
    grid, rejected = (
        t.to_pandas()
        for t in build_pool_grid(
            catalog.model("llama-3.1-70b"), spec, catalog.engine("vllm"), PLAIN
        )
    )
    pools = grid[grid["role"] != "aggregated"]
    up = pools[pools["kv_link"] == "scale-up"]
    assert set(up["tp"]) == {1, 2, 4}  # tp 8 fills the node: no room for its partner
    assert set(grid.loc[grid["role"] == "aggregated", "kv_link"]) == {"none"}
    # the A100 has no sourced NIC: its pools are scale-up only
    a100 = pools[pools["gpu"] == "a100-80gb"]
    assert not a100.empty and set(a100["kv_link"]) == {"scale-up"}
    assert not rejected["reason"].str.contains("no room").any()


def _pools(kv_group: tuple[str, ...]) -> FleetProblem:
    # candidates: prefill on g1 (scale-up), decode on g2 (scale-up), decode on g1 (scale-up,
    # dearer), decode on g2 over the NICs (dearest); demand 1 req/s, every capacity 1 req/s
    return FleetProblem(
        gpu=("g1", "g2", "g1", "g2"),
        tp=(1, 1, 1, 1),
        cost_per_hour=np.array([1.0, 1.0, 3.0, 5.0]),
        capacity=np.ones((4, 1)),
        demand=np.array([1.0]),
        role=("prefill", "decode", "decode", "decode"),
        ttft_part_ms=np.zeros((4, 1)),
        ttft_sla_ms=np.array([np.inf]),
        kv_group=kv_group,
    )


def test_scale_up_pools_balance_within_their_gpu_type():
    opts = SolverOptions()
    # all over the NICs: the cheap g2 decode pairs with the g1 prefill
    assert solve_fleet(_pools(("", "", "", "")), opts).cost_per_hour == pytest.approx(2.0)
    # g1's NVLink prefill can only hand its KV to a g1 NVLink decode worker
    sol = solve_fleet(_pools(("g1", "g2", "g1", "")), opts)
    assert sol.cost_per_hour == pytest.approx(4.0)
    assert list(sol.replicas) == [1, 0, 1, 0]
