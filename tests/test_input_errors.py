"""Input mistakes exit 2 with one message naming the file, the key, the value and what is
allowed; a scenario no fleet can serve exits 1 and says which constraint binds."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.errors import InputError
from planner.planning.pipeline import allowed_gpus
from planner.schema.scenario import Scenario

HEAD = (
    "model: llama-3.1-8b\n"
    "workload: {requests_per_second: 5, input_tokens: 512, output_tokens: 128}\n"
    "sla: {tpot_ms: 50}\n"
)


def _solve(tmp_path: Path, body: str) -> tuple[int, str]:
    """`planner solve` on a scenario of HEAD plus `body`: its exit code and message."""
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + body, "utf-8")
    res = CliRunner().invoke(cli, ["solve", str(path), "--no-export"], obj={})
    return res.exit_code, res.output


def test_an_empty_gpu_list_is_an_input_error(tmp_path):
    code, out = _solve(tmp_path, "hardware: {gpus: []}\n")
    assert code == 2, out
    assert "s.yaml: hardware.gpus: the list is empty, so no GPU is left to plan" in out
    assert "has a price" not in out


def test_excluding_every_allowed_gpu_is_an_input_error(tmp_path):
    code, out = _solve(tmp_path, "hardware: {gpus: [h100-sxm], exclude: [h100-sxm]}\n")
    assert code == 2, out
    assert (
        "s.yaml: hardware.exclude: excludes every one of hardware.gpus (h100-sxm), so no GPU "
        "is left to plan"
    ) in out


def test_nothing_left_is_an_input_error_without_a_file_too(catalog):
    """A scenario built in code (a sweep's point) meets the same check in allowed_gpus."""
    doc = {
        "model": "llama-3.1-8b",
        "workload": {"requests_per_second": 5, "input_tokens": 512, "output_tokens": 128},
        "hardware": {"gpus": ["h200", "b200"], "exclude": ["b200", "h200"]},
    }
    with pytest.raises(InputError, match=r"hardware.exclude: .*\(h200, b200\)"):
        allowed_gpus(Scenario.model_validate(doc), catalog)


def test_a_tier_without_prices_is_named_with_the_tiers_that_have_them(tmp_path):
    """No H100 SXM or H200 price is published as reserved_1y; the catalog has them on
    demand, spot, as capacity blocks and on marketplaces (not 'serverless', no tier of
    hardware.pricing.tier)."""
    code, out = _solve(
        tmp_path, "hardware: {gpus: [h100-sxm, h200], pricing: {tier: reserved_1y}}\n"
    )
    assert code == 1, out
    assert "has a price in tier 'reserved_1y'" in out
    assert "the catalog prices them in: capacity_block, marketplace, on_demand, spot;" in out
    assert "chosen tier" not in out
