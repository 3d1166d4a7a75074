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
    """`planner solve` on a scenario of HEAD plus `body` (its own sla: in place of HEAD's):
    the exit code and message."""
    path = tmp_path / "s.yaml"
    head = HEAD.replace("sla: {tpot_ms: 50}\n", "") if body.startswith("sla:") else HEAD
    path.write_text(head + body, "utf-8")
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


def test_an_unknown_tier_names_the_value_a_close_match_and_the_tiers(tmp_path):
    code, out = _solve(tmp_path, "hardware: {pricing: {tier: reserved}}\n")
    assert code == 2, out
    assert (
        "s.yaml: hardware.pricing.tier: unknown value 'reserved' (did you mean 'reserved_1y' "
        "or 'reserved_3y'?); allowed: on_demand, spot, reserved_1y, reserved_3y, "
        "capacity_block, marketplace"
    ) in " ".join(out.split())
    assert "Input should be" not in out


def test_an_unknown_statistic_suggests_its_lower_case(tmp_path):
    code, out = _solve(tmp_path, "sla: {tpot_ms: 50, statistic: P90}\n")
    assert code == 2, out
    assert (
        "s.yaml: sla.statistic: unknown value 'P90' (did you mean 'p90'?); allowed: mean, p50, "
        "p90, p95, p99"
    ) in " ".join(out.split())


def test_literal_and_enum_errors_read_as_yaml_spells_the_values():
    """True/False of a Literal read 'true'/'false'; an Enum's values are named the same way;
    a value with no close match gets none."""
    import enum
    from typing import Literal

    from pydantic import BaseModel, ValidationError

    from planner.inputs.loading import describe_error

    class Colour(enum.Enum):
        RED = "red"
        GREEN = "green"

    class Doc(BaseModel):
        mode: Literal["auto", True, False] = "auto"
        colour: Colour = Colour.RED

    with pytest.raises(ValidationError) as caught:
        Doc.model_validate({"mode": "maybe", "colour": "gren"})
    mode, colour = (describe_error(e, Doc) for e in caught.value.errors())
    assert mode == "mode: unknown value 'maybe'; allowed: auto, true, false"
    assert colour == "colour: unknown value 'gren' (did you mean 'green'?); allowed: red, green"
