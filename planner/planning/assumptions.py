"""The Assumptions table: every catalog fact and scenario value a plan used, with its source."""

from __future__ import annotations

from collections.abc import Iterable

from planner.inputs.catalog import Catalog
from planner.perf.candidates import Price, draft_forward_ms
from planner.planning.accuracy import Margin, margin_assumption_rows
from planner.planning.accuracy import assumption_rows as accuracy_rows
from planner.planning.speculation import assumption_rows
from planner.schema.hardware import Gpu
from planner.schema.model import Model
from planner.schema.scenario import Scenario

COLUMNS = ["category", "item", "field", "value", "unit", "source", "as_of", "assumption"]


def _gpu_rows(gpu: Gpu, price: Price | None) -> list[tuple]:
    src, date = gpu.spec.source, gpu.spec.as_of
    rows = [
        ("gpu", gpu.id, "memory", gpu.memory_gb, "GB", src, date, False),
        ("gpu", gpu.id, "HBM bandwidth", gpu.hbm_bandwidth_gb_per_s, "GB/s", src, date, False),
        ("gpu", gpu.id, "scale-up link", gpu.scaleup_link_gb_per_s, "GB/s", src, date, False),
        ("gpu", gpu.id, "scale-up domain", gpu.scaleup_domain_gpus, "GPUs", src, date, False),
    ]
    if gpu.tdp_w is not None:
        rows.append(("gpu", gpu.id, "TDP", gpu.tdp_w, "W", src, date, False))
    rows += [
        ("gpu", gpu.id, f"dense {dt} peak", v, "TFLOPS", src, date, False)
        for dt, v in gpu.dense_tflops.items()
    ]
    if price is not None:
        rows.append(
            (
                "price",
                gpu.id,
                f"$/GPU-hour ({price.provider})",
                price.usd_per_gpu_hour,
                "$/GPU-h",
                price.source,
                price.as_of,
                price.assumption,
            )
        )
    return rows


def _model_rows(model: Model) -> list[tuple]:
    src, date = model.provenance.source, model.provenance.as_of
    fields = [
        ("parameters (computed)", model.params_total, "params"),
        ("active parameters (computed)", model.params_active, "params"),
        ("layers", model.num_hidden_layers, ""),
        ("hidden size", model.hidden_size, ""),
        ("attention heads", model.num_attention_heads, ""),
        ("KV heads", model.num_key_value_heads, ""),
        ("head dim", model.head_dim, ""),
    ]
    return [("model", model.id, f, v, u, src, date, False) for f, v, u in fields]


def _scenario_rows(scenario: Scenario) -> list[tuple]:
    src = "scenario file"
    search = scenario.search
    given: list[tuple] = [
        ("scenario", "search", "target utilisation", search.target_utilization, "fraction"),
        # issue #10: whether predictions were planned at the record's p90 margin
        ("scenario", "search", "prediction margin", search.prediction_margin, ""),
    ]
    rows: list[tuple] = [(*r, src, "scenario", True) for r in given]
    for name, rate, i_len, o_len, _ in scenario.workload.resolved_classes():
        rows += [
            ("scenario", name, "demand", rate, "req/s", src, "scenario", True),
            ("scenario", name, "input tokens", i_len, "tokens", src, "scenario", True),
            ("scenario", name, "output tokens", o_len, "tokens", src, "scenario", True),
        ]
    return rows


def assumption_table(
    scenario: Scenario,
    catalog: Catalog,
    model: Model,
    gpus: list[Gpu],
    prices: dict[str, Price],
    margins: Iterable[Margin] = (),
) -> tuple[tuple, ...]:
    """One row per fact (`COLUMNS`): category, item, field, value, unit, source, date,
    assumption flag; `Plan.assumptions` is the same as a DataFrame. `margins`: the p90
    factors the plan applied (search.prediction_margin), one GPU at a time."""
    rows = _scenario_rows(scenario) + _model_rows(model)
    rows += assumption_rows(scenario, catalog, model)  # issue #11: speculation, prefix cache
    for gpu in gpus:
        rows += _gpu_rows(gpu, prices.get(gpu.id))
    for q_id in scenario.search.quants:
        if not catalog.engine(scenario.engine).runs_quant(q_id):  # left out of the search
            continue
        q = catalog.quant(q_id)
        rows.append(
            (
                "quant",
                q.id,
                "weight bytes per parameter",
                q.weight_bytes_per_param,
                "bytes",
                q.provenance.source,
                q.provenance.as_of,
                False,
            )
        )
    engine = catalog.engine(scenario.engine)
    for family, eff in [("default", engine.default), *engine.families.items()]:
        # draft_forward_ms as used: the whole step cost where the engine gives none (#11)
        for k, v in {**eff.model_dump(), "draft_forward_ms": draft_forward_ms(eff)}.items():
            rows.append(
                ("engine", f"{engine.id}/{family}", k, v, "", engine.source, engine.as_of, False)
            )
    rows += accuracy_rows(engine)  # issue #10: its measured error, in and out of sample
    rows += margin_assumption_rows(margins)  # and the factors a plan at its margin applied
    return tuple(tuple(r) for r in rows)
