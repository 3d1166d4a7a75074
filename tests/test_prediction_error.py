"""The engine profiles' accuracy records (issue #10) and what estimate and solve say with them.

The records are measured (benchmarks/accuracy.py --record); these tests hold them to the
constants and the data they were measured with, and pin which evaluation applies to a model
on a GPU and the SLA arithmetic to hand-computed values."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.calibration.profile_file import write_profile
from planner.calibration.record import accuracy_record, data_sha256, fold_errors
from planner.cli import cli
from planner.errors import InputError
from planner.inputs.catalog import load_catalog
from planner.perf.candidates import Price
from planner.perf.table import Table, values
from planner.planning.accuracy import (
    FAMILY_OUT,
    GPU_OUT,
    IN_SAMPLE,
    MODEL_OUT,
    Margin,
    expected_error,
    margin_of,
    planning_margins,
    prediction_errors,
    safe_target,
    sla_notes,
    with_margins,
)
from planner.schema.engine import EngineProfile, ErrorStat, FoldErrors, ProfileAccuracy
from planner.schema.plan import Deployment, RequestClassPlan

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ("vllm", "sglang", "trtllm", "llamacpp")
RERECORD = (
    "re-measure it: python benchmarks/accuracy.py --record --jobs 2 --folds "
    "leave-one-model-out,leave-one-GPU-out,leave-one-GPU-family-out"
)


@pytest.mark.parametrize("engine", RECORDED)
def test_each_shipped_profile_carries_the_record_of_its_own_constants_and_data(catalog, engine):
    profile = catalog.engine(engine)
    acc = profile.accuracy
    assert acc is not None, f"catalogs/engines/{engine}.yaml has no accuracy record: {RERECORD}"
    assert acc.constants_sha256 == profile.constants_sha256(), (
        f"catalogs/engines/{engine}.yaml was refitted after its accuracy was measured: {RERECORD}"
    )
    assert acc.data_sha256 == data_sha256(), f"the calibration data changed: {RERECORD}"
    assert acc.leave_one_gpu_out is not None and acc.leave_one_gpu_out.tpot is not None
    if engine != "llamacpp":  # llama.cpp's rows are one source: only a GPU is left out
        assert acc.leave_one_model_out is not None and acc.leave_one_model_out.tpot is not None
        assert acc.leave_one_family_out is not None and acc.leave_one_family_out.tpot is not None


@pytest.mark.parametrize("engine", ("vllm", "sglang", "trtllm"))
def test_server_records_hold_the_models_and_gpus_of_their_rows(catalog, engine):
    acc = catalog.engine(engine).accuracy
    assert acc is not None and "h100-sxm" in acc.gpus
    assert all(m in catalog.models for m in acc.models)
    assert all(g in catalog.gpus for g in acc.gpus)
    assert acc.in_sample.tpot is not None and acc.in_sample.tpot.rows >= 100


def _stats(t: float, f: float) -> FoldErrors:
    return FoldErrors(
        tpot=ErrorStat(median_pct=t, p90_pct=2 * t, rows=10, margin_p90_pct=t),
        ttft=ErrorStat(median_pct=f, p90_pct=2 * f, rows=10, margin_p90_pct=f),
    )


def _record(models=("m1",), gpus=("g1",)) -> ProfileAccuracy:
    return ProfileAccuracy(
        as_of="2026-12-05",
        source="test",
        constants_sha256=VLLM_CONSTANTS,
        data_sha256="1" * 64,
        models=models,
        gpus=gpus,
        in_sample=_stats(5, 20),
        leave_one_model_out=_stats(12, 25),
        leave_one_gpu_out=_stats(10, 30),
        leave_one_family_out=_stats(20, 15),
    )


VLLM_CONSTANTS = load_catalog().engine("vllm").constants_sha256()


@pytest.fixture
def profile(catalog) -> EngineProfile:
    return catalog.engine("vllm").model_copy(update={"accuracy": _record()})


def test_a_record_of_other_constants_is_not_shown(profile):
    assert expected_error(profile, "m1", "g1") is not None
    edited = profile.default.model_copy(update={"eta_mem": 0.5})
    stale = profile.model_copy(update={"default": edited})
    assert expected_error(stale, "m1", "g1") is None  # a user's edited copy, say


@pytest.mark.parametrize(
    ("model", "gpu", "evaluation", "tpot", "ttft"),
    [
        ("m1", "g1", IN_SAMPLE, 5, 20),
        ("m2", "g1", MODEL_OUT, 12, 25),
        ("m1", "g2", GPU_OUT, 10, 30),  # no catalog: the GPU's family is not looked up
        # neither in the fit: per metric the fold with the larger median
        ("m2", "g2", f"{MODEL_OUT} + {GPU_OUT}", 12, 30),
    ],
)
def test_the_evaluation_that_applies_is_the_one_that_leaves_out_what_the_fit_lacks(
    profile, model, gpu, evaluation, tpot, ttft
):
    err = expected_error(profile, model, gpu)
    assert err is not None and err.evaluation == evaluation
    assert err.tpot is not None and err.tpot.median_pct == tpot
    assert err.ttft is not None and err.ttft.median_pct == ttft
    assert err.throughput is None
    assert err.model_in_fit == (model == "m1") and err.gpu_in_fit == (gpu == "g1")


@pytest.mark.parametrize(
    ("model", "gpu", "evaluation", "tpot", "ttft"),
    [
        ("m1", "h200", GPU_OUT, 10, 30),  # Hopper, as the fitted H100: a GPU out
        ("m1", "l40s", FAMILY_OUT, 20, 15),  # Ada: no GPU of its family in the fit
        ("m2", "l40s", f"{MODEL_OUT} + {FAMILY_OUT}", 20, 25),
    ],
)
def test_a_gpu_whose_family_is_not_in_the_fit_takes_the_family_fold(
    catalog, profile, model, gpu, evaluation, tpot, ttft
):
    on_h100 = profile.model_copy(update={"accuracy": _record(gpus=("h100-sxm",))})
    err = expected_error(on_h100, model, gpu, catalog)
    assert err is not None and err.evaluation == evaluation
    assert (err.tpot.median_pct, err.ttft.median_pct) == (tpot, ttft)  # type: ignore[union-attr]
    assert err.family_in_fit == (gpu == "h200")
    if gpu == "l40s":
        assert "nor any GPU of its family" in err.why


def test_no_record_means_no_figure_and_a_missing_fold_is_said(profile):
    bare = profile.model_copy(update={"accuracy": None})
    assert expected_error(bare, "m1", "g1") is None
    no_gpu_fold = _record().model_copy(update={"leave_one_gpu_out": None})
    partial = profile.model_copy(update={"accuracy": no_gpu_fold})
    err = expected_error(partial, "m1", "g2")
    assert err is not None and err.missing == (GPU_OUT,) and err.evaluation == IN_SAMPLE
    assert "no leave-one-GPU-out fold, so the error is likely larger" in err.why
    both = expected_error(partial, "m2", "g2")
    assert both is not None and both.evaluation == MODEL_OUT and both.missing == (GPU_OUT,)


def test_safe_target_holds_the_sla_at_the_p90_margin():
    # in 90% of rows a TPOT was measured at most 25% over its prediction: a 50 ms SLA holds
    # for predictions up to 50 / 1.25 = 40 ms
    stat = ErrorStat(median_pct=5.0, p90_pct=22.0, rows=10, margin_p90_pct=25.0)
    assert safe_target(50.0, stat) == pytest.approx(40.0)
    assert safe_target(50.0, stat.model_copy(update={"margin_p90_pct": 0.0})) == 50.0


def _line(gpu: str, tpot: float, ttft: float) -> Deployment:
    return Deployment(
        gpu=gpu, tp=1, quant="fp8", kv_dtype="fp8", batch=64, replicas=1, gpus=1,
        price_usd_per_gpu_hour=1.0, price_provider="x", cost_per_hour_usd=1.0,
        requests_per_s=1.0, capacity_requests_per_s=1.0, load_by_class={"all": 1.0},
        tpot_ms=tpot, ttft_ms=ttft, tpot_ms_by_class={"all": tpot},
        ttft_ms_by_class={"all": ttft},
    )  # fmt: skip


def test_sla_notes_flag_a_prediction_that_would_miss_its_sla_at_the_p90_margin(profile):
    cls = RequestClassPlan("all", 1.0, 1024, 256, tpot_ms=50.0, ttft_ms=1000.0, statistic="p90")
    err = expected_error(profile, "m1", "g1")  # in sample: margins TPOT 5%, TTFT 20%
    # TPOT 48 ms x 1.05 = 50.4 > 50: flagged, 50 / 1.05 = 47.62 (shown rounded down, 47.6)
    # holds it; TTFT 700 ms x 1.2 = 840 < 1000: not flagged
    (note,) = sla_notes({"g1": err}, "vllm", (_line("g1", 48.0, 700.0),), (cls,))
    assert "in sample" in note and "TPOT 5% median, 10% p90" in note
    assert "TPOT 48.0 ms is 4% under the 50 ms SLA (class all on g1)" in note
    assert "more than 5% over its prediction; tpot_ms 47.6 would hold it there" in note
    assert "TTFT 700" not in note
    (ttft,) = sla_notes({"g1": err}, "vllm", (_line("g1", 40.0, 900.0),), (cls,))
    assert "TTFT 900.0 ms is 10% under the 1,000 ms SLA" in ttft and "ttft_ms 833.3 would" in ttft
    assert "TPOT" not in ttft.split(". ", 1)[1]  # 40 x 1.05 = 42 < 50
    (far,) = sla_notes({"g1": err}, "vllm", (_line("g1", 40.0, 500.0),), (cls,))
    assert "SLA" not in far  # both hold at the margin


def test_a_record_survives_the_profile_file(tmp_path, catalog):
    profile = catalog.engine("trtllm")
    errs = {
        "tpot": (100, 8.04, 22.0, 14.96),
        "ttft": (90, 23.0, 67.0, -3.0),  # slow even at its p90: no margin, never a negative one
        "throughput": (0, 0.0, 0.0, 0.0),
    }
    assert fold_errors(errs) == FoldErrors(
        tpot=ErrorStat(median_pct=8.0, p90_pct=22.0, rows=100, margin_p90_pct=15.0),
        ttft=ErrorStat(median_pct=23.0, p90_pct=67.0, rows=90, margin_p90_pct=0.0),
    )
    import pandas as pd

    rows = pd.DataFrame({"model_id": ["b", "a", "a"], "gpu_id": ["h200", "h100-sxm", None]})
    acc = accuracy_record(profile, rows, errs, {"leave-one-GPU-out": errs}, "2026-12-05")
    assert acc.models == ("a", "b") and acc.gpus == ("h100-sxm", "h200")
    assert acc.leave_one_model_out is None and acc.leave_one_gpu_out == acc.in_sample
    path = write_profile(profile.model_copy(update={"accuracy": acc}), tmp_path / "t.yaml")
    loaded = EngineProfile.model_validate(yaml.safe_load(path.read_text()))
    assert loaded.accuracy == acc and loaded.constants_sha256() == profile.constants_sha256()


def test_estimate_says_which_error_applies(catalog):
    acc = catalog.engine("trtllm").accuracy
    assert acc is not None and "llama-3.1-8b" in acc.models and "h100-sxm" in acc.gpus
    args = ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "trtllm"]
    args += ["--quant", "fp8", "--concurrency", "8"]
    text = CliRunner().invoke(cli, args).output
    assert "Prediction error (trtllm profile, in sample; public measurements" in text
    assert f"TPOT {acc.in_sample.tpot.median_pct:g}% median" in text  # type: ignore[union-attr]
    assert "At the p90 margin (what 90% of the measured rows came within" in " ".join(text.split())
    whole = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    out = whole["expected_error"]
    assert out["evaluation"] == IN_SAMPLE and out["model_in_fit"] and out["gpu_in_fit"]
    assert out["tpot"] == acc.in_sample.tpot.model_dump()  # type: ignore[union-attr]
    # the answer at its margin: latencies x (1 + m), throughput / (1 + m)
    bound = out["at_p90_margin"]
    assert bound["tpot_ms"] == pytest.approx(
        whole["tpot_ms"] * (1 + out["tpot"]["margin_p90_pct"] / 100)
    )
    assert bound["ttft_ms"] == pytest.approx(
        whole["ttft_ms"] * (1 + out["ttft"]["margin_p90_pct"] / 100)
    )
    assert bound["throughput_tok_s"] == pytest.approx(
        whole["throughput_tok_s"] / (1 + out["throughput"]["margin_p90_pct"] / 100)
    )
    unseen = "qwen2.5-7b"
    assert unseen not in acc.models
    args[2] = unseen
    out = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)["expected_error"]
    assert out["evaluation"] == MODEL_OUT and not out["model_in_fit"]
    assert out["tpot"] == acc.leave_one_model_out.tpot.model_dump()  # type: ignore[union-attr]


def test_a_plan_carries_the_error_of_each_fleet_gpu_in_its_notes_json_and_assumptions(catalog):
    from planner import load_scenario, plan
    from planner.render.json import plan_dict

    scenario, cat = load_scenario(ROOT / "scenarios" / "chatbot.yaml", catalog)
    result = plan(scenario, cat)
    gpus = {d.gpu for d in result.fleet.deployments}
    assert {e.gpu for e in result.prediction_errors} == gpus
    acc = catalog.engine(result.engine).accuracy
    assert acc is not None
    assert sum(n.startswith("Prediction error") for n in result.notes) == len(gpus)
    facts = result.assumptions[result.assumptions["category"] == "prediction error"]
    assert len(facts) == 36  # 4 evaluations x 3 metrics x (median, p90, p90 margin)
    lomo = facts[facts["item"] == f"{result.engine}/leave-one-model-out"]
    tpot = lomo[lomo["field"].str.startswith("tpot median")]["value"]
    assert tpot.tolist() == [acc.leave_one_model_out.tpot.median_pct]  # type: ignore[union-attr]
    out = plan_dict(result)["prediction_error"]
    assert [e["gpu"] for e in out] == [e.gpu for e in result.prediction_errors]


def test_a_disaggregated_estimate_says_its_error_was_measured_on_aggregated_serving():
    args = ["estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4"]
    args += ["--quant", "fp8", "--disaggregated", "--rate", "2", "--wide"]
    text = CliRunner().invoke(cli, args).output
    assert "Prediction error (vllm profile, in sample" in text
    assert "measured on aggregated deployments only" in text
    out = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    assert out["expected_error"]["evaluation"] == IN_SAMPLE


def test_the_engine_catalog_lists_each_profiles_out_of_sample_medians(catalog):
    acc = catalog.engine("trtllm").accuracy
    assert acc is not None and acc.leave_one_model_out is not None
    lomo = acc.leave_one_model_out
    cells = [lomo.tpot, lomo.ttft, lomo.throughput]
    want = " / ".join(f"{c.median_pct:.1f}" for c in cells if c is not None)
    text = CliRunner().invoke(cli, ["catalog", "engines"]).output
    assert want in next(line for line in text.splitlines() if line.startswith("trtllm"))
    records = json.loads(CliRunner().invoke(cli, ["catalog", "engines", "--json"]).output)
    (trt,) = [r for r in records["engines"] if r["id"] == "trtllm"]
    assert trt["accuracy"]["leave_one_model_out"]["tpot"]["median_pct"] == lomo.tpot.median_pct  # type: ignore[union-attr]


def test_capacity_and_job_answers_note_the_error_for_each_gpu_they_use(catalog):
    from planner import load_scenario
    from planner.planning.batch_job import price_job
    from planner.planning.capacity import fleet_capacity

    scenario, cat = load_scenario(ROOT / "scenarios" / "fleet-16xh100.yaml", catalog)
    cap = fleet_capacity(scenario, cat)
    errs = [n for n in cap.notes if n.startswith("Prediction error")]
    assert len(errs) == len({d.gpu for d in cap.deployments}) >= 1
    scenario, cat = load_scenario(ROOT / "scenarios" / "batch-job.yaml", catalog)
    job = price_job(scenario, cat)
    errs = [n for n in job.notes if n.startswith("Prediction error")]
    assert len(errs) == len({x.gpu for x in job.lines}) >= 1
    assert all(any(x.gpu in n for n in errs) for x in job.lines)  # each note names its GPU


# ---- planning to the p90 margin (search.prediction_margin) --------------------------------
def test_the_margin_is_the_records_unsafe_side_p90(profile):
    err = expected_error(profile, "m2", "g1")  # a model out: margins TPOT 12%, TTFT 25%
    assert err is not None
    m = margin_of(err)
    assert (m.tpot, m.ttft, m.throughput) == pytest.approx((1.12, 1.25, 1.0))  # no thr stat


def test_margins_scale_each_gpus_latencies_up_and_its_rates_down(profile):
    err = expected_error(profile, "m1", "g1")
    assert err is not None
    names = ["tpot_ms", "tpot_step_ms", "ttft_ms", "ttft_unloaded_ms", "ttft_scheduler_lag_ms"]
    names += ["prefill_share_ms", "requests_per_s", "capacity_requests_per_s"]
    names += ["throughput_tok_s", "total_tok_s", "cost_per_request_usd"]
    names += ["cost_per_1k_output_tokens_usd", "batch"]
    rows = Table({"gpu": np.array(["g1", "g2"]), **{n: np.array([10.0, 10.0]) for n in names}})
    out = with_margins(rows, {"g1": Margin(err, 1.05, 1.2, 1.25)})
    g1 = {n: float(out[n][0]) for n in names}
    assert g1["tpot_ms"] == g1["tpot_step_ms"] == pytest.approx(10.5)
    assert g1["ttft_ms"] == g1["ttft_unloaded_ms"] == g1["prefill_share_ms"] == pytest.approx(12)
    assert g1["capacity_requests_per_s"] == g1["throughput_tok_s"] == pytest.approx(8.0)
    assert g1["cost_per_1k_output_tokens_usd"] == pytest.approx(12.5)
    assert g1["batch"] == 10.0  # not a prediction
    assert all(float(out[n][1]) == 10.0 for n in names)  # g2 has no margin: unchanged
    assert with_margins(rows, {}) is rows


def _margins(catalog, gpus, kind):
    return planning_margins(prediction_errors(catalog, "vllm", "llama-3.1-8b", gpus), "vllm", kind)


def test_planning_to_a_margin_needs_a_record(catalog, profile):
    assert _margins(catalog, ["h100-sxm"], "none") == {}
    bare = replace(catalog, engines={**catalog.engines, "vllm": profile.model_copy(
        update={"accuracy": None})})  # fmt: skip
    with pytest.raises(InputError, match="search.prediction_margin: p90 plans to the error"):
        _margins(bare, ["h100-sxm"], "p90")
    got = _margins(catalog, ["h100-sxm", "h200"], "p90")
    assert set(got) == {"h100-sxm", "h200"} and all(m.tpot > 1.0 for m in got.values())


@pytest.fixture(scope="module")
def chatbot_both_ways(catalog):
    """chatbot.yaml planned at the predictions and at the p90 margin."""
    from planner import load_scenario, plan

    scenario, cat = load_scenario(ROOT / "scenarios" / "chatbot.yaml", catalog)
    search = scenario.search.model_copy(update={"prediction_margin": "p90"})
    return plan(scenario, cat), plan(scenario.model_copy(update={"search": search}), cat)


def test_a_plan_to_the_p90_margin_costs_at_least_the_plan_to_the_predictions(chatbot_both_ways):
    from planner.render.json import plan_dict

    exact, margined = chatbot_both_ways
    assert margined.fleet.status == exact.fleet.status == "optimal"
    assert margined.fleet.total_cost_per_hour_usd >= exact.fleet.total_cost_per_hour_usd - 1e-9
    assert plan_dict(exact)["prediction_margin"] == []
    factors = plan_dict(margined)["prediction_margin"]
    assert {f["gpu"] for f in factors} == {d.gpu for d in margined.fleet.deployments}
    assert all(f["tpot"] > 1.0 and f["ttft"] > 1.0 for f in factors)
    assert any("Planned to the p90 margin" in n for n in margined.notes)
    assert not any("would hold it there" in n for n in margined.notes)  # the margin holds them
    from planner.planning.report import plan_report
    from planner.render.text import render_plan

    assert plan_report(margined, None).subtitle.endswith("at the p90 prediction margin")
    assert "at the p90 prediction margin" not in plan_report(exact, None).subtitle
    assert "capacity at the p90 prediction margin" in render_plan(margined).replace("\n", " ")


def test_a_plan_to_the_margin_lists_the_factors_it_applied_and_its_workbook_says_so(
    chatbot_both_ways, tmp_path
):
    import openpyxl

    from planner.render.xlsx.workbook import write_workbook

    exact, margined = chatbot_both_ways
    rows = margined.assumptions[margined.assumptions["category"] == "prediction margin"]
    assert (exact.assumptions["category"] == "prediction margin").sum() == 0
    for m in margined.prediction_margins:
        mine = rows[rows["item"] == f"vllm/llama-3.1-70b on {m.error.gpu}"]
        by_field = dict(zip(mine["field"], mine["value"], strict=True))
        stat = m.error.tpot
        assert stat is not None
        assert by_field["TPOT factor (x predicted)"] == pytest.approx(
            1 + stat.margin_p90_pct / 100, abs=1e-4
        )
        assert set(by_field) == {
            "TPOT factor (x predicted)",
            "TTFT factor (x predicted)",
            "throughput factor (predicted / this)",
        }
        assert (mine["source"].str.endswith(m.error.label)).all()
    notes = {}
    for name, p in (("exact", exact), ("margined", margined)):
        path = tmp_path / f"{name}.xlsx"
        write_workbook(p, path)
        ws = openpyxl.load_workbook(path)["Summary"]
        notes[name] = next(r[3] for r in ws.iter_rows(values_only=True) if r[0] == "engine")
    assert not notes["exact"]
    assert "planned at the p90 prediction margin" in notes["margined"]


def test_a_plan_to_the_margin_holds_its_slas_at_the_margined_predictions(chatbot_both_ways):
    _, margined = chatbot_both_ways
    factor = {m.error.gpu: m for m in margined.prediction_margins}
    for d in margined.fleet.deployments:
        for cl in margined.classes:
            if d.load_by_class.get(cl.name, 0.0) <= 0:
                continue
            assert cl.tpot_ms is not None and cl.ttft_ms is not None
            assert d.tpot_ms_by_class[cl.name] <= cl.tpot_ms + 1e-9
            assert d.ttft_ms_by_class[cl.name] <= cl.ttft_ms + 1e-9
            assert factor[d.gpu].tpot > 1.0  # so the raw prediction sits at least that far under


def _at_margin(scenario):
    return scenario.model_copy(
        update={"search": scenario.search.model_copy(update={"prediction_margin": "p90"})}
    )


def test_capacity_and_a_job_at_the_margin_serve_less_or_cost_more_and_say_so(catalog):
    from planner import load_scenario
    from planner.planning.batch_job import price_job
    from planner.planning.capacity import fleet_capacity

    scenario, cat = load_scenario(ROOT / "scenarios" / "fleet-16xh100.yaml", catalog)
    exact, margined = fleet_capacity(scenario, cat), fleet_capacity(_at_margin(scenario), cat)
    assert margined.max_requests_per_second < exact.max_requests_per_second
    assert any("Planned to the p90 margin" in n for n in margined.notes)
    assert not any("Planned to the p90 margin" in n for n in exact.notes)
    from planner.render.capacity import capacity_dict, render_capacity

    assert "predictions at the p90 margin" in " ".join(render_capacity(margined).split())
    assert "margin" not in render_capacity(exact).split("\n\n")[0]
    assert (
        capacity_dict(margined)["prediction_margin"],
        capacity_dict(exact)["prediction_margin"],
    ) == ("p90", "none")
    scenario, cat = load_scenario(ROOT / "scenarios" / "batch-job.yaml", catalog)
    exact_job, margined_job = price_job(scenario, cat), price_job(_at_margin(scenario), cat)
    assert margined_job.gpu_hours > exact_job.gpu_hours
    assert margined_job.cost_usd >= exact_job.cost_usd
    assert any("Planned to the p90 margin" in n for n in margined_job.notes)
    from planner.render.capacity import job_dict, render_job

    assert "predictions at the p90 margin" in " ".join(render_job(margined_job).split())
    assert job_dict(margined_job)["prediction_margin"] == "p90"


def test_a_platform_at_the_margin_plans_each_model_to_it(catalog):
    from planner.inputs.platforms import load_platform
    from planner.planning.platform import plan_platform

    platform, cat = load_platform(ROOT / "scenarios" / "platforms" / "platform.yaml", catalog)
    exact, margined = plan_platform(platform, cat), plan_platform(_at_margin(platform), cat)
    assert margined.total_cost_per_hour_usd >= exact.total_cost_per_hour_usd - 1e-9
    for section in margined.sections:
        assert {m.error.gpu for m in section.prediction_margins} == {
            d.gpu for d in section.fleet.deployments
        }
        assert any("Planned to the p90 margin" in n for n in section.notes)
    assert any(n.startswith("planning every model to the p90 prediction") for n in margined.notes)
    assert not any("prediction margin costs" in n for n in exact.notes)


def test_solve_takes_the_margin_on_the_command_line_and_an_infeasible_plan_names_it(tmp_path):
    args = ["solve", str(ROOT / "scenarios" / "chatbot.yaml"), "--no-export", "--json"]
    out = json.loads(CliRunner().invoke(cli, [*args, "--prediction-margin", "p90"]).output)
    assert {f["gpu"] for f in out["prediction_margin"]} == {d["gpu"] for d in out["fleet"]}
    assert any(n.startswith("planning to the p90 prediction margin costs $") for n in out["notes"])
    for command, name in (("capacity", "fleet-16xh100"), ("job", "batch-job")):
        path = str(ROOT / "scenarios" / f"{name}.yaml")
        res = CliRunner().invoke(cli, [command, path, "--prediction-margin", "p90", "--json"])
        assert res.exit_code == 0, res.output
        assert "Planned to the p90 margin" in " ".join(json.loads(res.output)["notes"])
    bad = CliRunner().invoke(cli, [*args, "--prediction-margin", "p95"])
    assert bad.exit_code == 2 and "'p95' is not one of 'none', 'p90'" in bad.output
    text = (ROOT / "scenarios" / "chatbot.yaml").read_text().replace("tpot_ms: 50", "tpot_ms: 9")
    tight = tmp_path / "tight.yaml"
    tight.write_text(text)
    res = CliRunner().invoke(
        cli, ["solve", str(tight), "--no-export", "--prediction-margin", "p90"]
    )
    assert res.exit_code == 1, res.output
    assert "is at the p90 prediction margin (search.prediction_margin" in res.output


@pytest.fixture(scope="module")
def chatbot_rows(catalog):
    """chatbot.yaml's candidates evaluated at the predictions, and its one class."""
    from planner import load_scenario
    from planner.planning.pipeline import evaluate_classes, request_classes

    scenario, cat = load_scenario(ROOT / "scenarios" / "chatbot.yaml", catalog)
    classes = request_classes(scenario)
    prices = {g: Price(1.0, "test") for g in cat.gpus}
    return evaluate_classes(scenario, cat, cat.model(scenario.model), classes, prices), classes[0]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(1.0, 3.0), min_size=3, max_size=3))
def test_a_wider_margin_never_admits_a_candidate_or_adds_capacity(chatbot_rows, factors):
    from planner.fleet.selection import sla_met

    rows, cls = chatbot_rows
    gpus = sorted(set(values(rows, "gpu").tolist()))
    err = expected_error(load_catalog().engine("vllm"), "llama-3.1-70b", "h100-sxm")
    assert err is not None
    t, f, thr = factors
    wide = {g: Margin(err, t, f, thr) for g in gpus[::2]}  # every other GPU: some left as is
    out = with_margins(rows, wide)
    for name in ("tpot_ms", "ttft_ms", "ttft_unloaded_ms"):
        assert (values(out, name, float) >= values(rows, name, float) - 1e-9).all()
    cap = values(out, "capacity_requests_per_s", float)
    assert (cap <= values(rows, "capacity_requests_per_s", float) + 1e-9).all()
    ok_before = sla_met(rows, cls.tpot_ms, cls.ttft_ms)
    ok_after = sla_met(out, cls.tpot_ms, cls.ttft_ms)
    assert not (ok_after & ~ok_before).any()  # a margin only ever removes candidates
