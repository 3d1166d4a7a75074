"""Catalog listings for `planner catalog`: records and a terminal table."""

from __future__ import annotations

from typing import Any

from planner.inputs.catalog import Catalog
from planner.planning.accuracy import METRICS
from planner.render.tables import Col, Layout, table, wrap


def _gpu(g) -> dict:
    p = g.price()
    return {
        "id": g.id,
        "name": g.name,
        "memory_gb": g.memory_gb,
        # what the model sizes KV with: the device's own report where sourced, else the label
        "device_memory_gb": g.memory_bytes / 1e9,
        "hbm_bandwidth_gb_per_s": g.hbm_bandwidth_gb_per_s,
        "dense_tflops": dict(g.dense_tflops),
        "scaleup_domain_gpus": g.scaleup_domain_gpus,
        "tdp_w": g.tdp_w,
        "on_demand_usd_per_gpu_hour": p.usd_per_gpu_hour if p else None,
        "price_provider": p.provider if p else None,
    }


def _model(m) -> dict:
    kind = "MoE" if m.is_moe else "dense"
    if m.mla:
        kind += "+MLA"
    if m.sliding_window:
        kind += "+SWA"
    return {
        "id": m.id,
        "name": m.name,
        "arch": kind,
        "params_b": m.params_total / 1e9,
        "active_params_b": m.params_active / 1e9,
        "layers": m.num_hidden_layers,
        "kv_heads": m.num_key_value_heads,
        "context": m.max_position_embeddings,
    }


def _quant(q) -> dict:
    return {
        "id": q.id,
        "name": q.name,
        "weight_bytes_per_param": q.weight_bytes_per_param,
        "compute_dtypes": list(q.compute_dtypes),
        "kv_dtypes": list(q.kv_dtypes),
        "gpus": q.gpus if q.gpus == "all" else list(q.gpus),
    }


def _medians(accuracy: dict | None, fold: str) -> str:
    """'12.6 / 25.2 / 12.1' from an accuracy record's fold ('-' for what is not measured)."""
    errors = (accuracy or {}).get(fold) or {}
    cells = [f"{errors[m]['median_pct']:.1f}" if errors.get(m) else "-" for m in METRICS]
    return "-" if not errors else " / ".join(cells)


def catalog_records(catalog: Catalog, kind: str) -> list[dict]:
    """Plain records of one catalog section, sorted by id."""
    if kind == "gpus":
        return [_gpu(g) for _, g in sorted(catalog.gpus.items())]
    if kind == "models":
        return [_model(m) for _, m in sorted(catalog.models.items())]
    if kind == "quants":
        return [_quant(q) for _, q in sorted(catalog.quants.items())]
    if kind == "engines":
        return [
            {
                "id": e.id,
                "name": e.name,
                "families": sorted(e.families),
                "source": e.source,
                "accuracy": None if e.accuracy is None else e.accuracy.model_dump(mode="json"),
            }
            for _, e in sorted(catalog.engines.items())
        ]
    return [
        {
            "provider": p.name,
            "model": o.model,
            "provider_model_id": o.provider_model_id,
            "input_usd_per_1m": o.input_usd_per_1m,
            "output_usd_per_1m": o.output_usd_per_1m,
            "cached_input_usd_per_1m": o.cached_input_usd_per_1m,
            "as_of": o.as_of,
        }
        for _, p in sorted(catalog.apis.items())
        for o in p.offerings
    ]


def catalog_table(kind: str, records: list[dict], layout: Layout = Layout()) -> str:
    """A terminal table of the records, fitting the layout's width."""
    if not records:
        return f"(no {kind})"
    if kind == "gpus":
        rows: list[tuple[Any, ...]] = [
            (
                r["id"],
                f"{r['memory_gb']:g}",
                f"{r['device_memory_gb']:.1f}",
                f"{r['hbm_bandwidth_gb_per_s']:,.0f}",
                ", ".join(f"{k} {v:g}" for k, v in r["dense_tflops"].items()),
                r["scaleup_domain_gpus"],
                f"${r['on_demand_usd_per_gpu_hour']:.2f} {r['price_provider']}"
                if r["on_demand_usd_per_gpu_hour"]
                else "no price",
            )
            for r in records
        ]
        cols = [
            Col("id"),
            Col("GB", "r"),
            Col("device GB", "r"),
            Col("GB/s", "r"),
            Col("dense TFLOPS", max_width=36),
            Col("domain", "r", 1),
            Col("on-demand $/GPU-h"),
        ]
        legend = (
            "GB: the memory the card is sold as; device GB: the bytes it reports "
            "(nvidia-smi, rocm-smi), which size the KV cache, or the label where no report is "
            "sourced"
        )
        return table(cols, rows, layout) + "\n" + wrap(legend, layout)
    if kind == "models":
        rows = [
            (
                r["id"],
                r["arch"],
                f"{r['params_b']:.2f}",
                f"{r['active_params_b']:.2f}",
                r["layers"],
                r["kv_heads"],
                r["context"],
            )
            for r in records
        ]
        return table(
            ["id", "arch", "params B", "active B", "layers", "KV heads", "context"],
            rows,
            layout,
            "llrrrrr",
        )
    if kind == "quants":
        rows = [
            (
                r["id"],
                r["weight_bytes_per_param"],
                "/".join(r["compute_dtypes"]),
                "/".join(r["kv_dtypes"]),
                "all" if r["gpus"] == "all" else len(r["gpus"]),
            )
            for r in records
        ]
        return table(["id", "bytes/param", "math", "KV", "GPUs"], rows, layout, "lrllr")
    if kind == "engines":
        # the GPU families with constants of their own; every other family takes the default
        rows = [
            (
                r["id"],
                r["name"],
                ", ".join(r["families"]) or "none",
                _medians(r["accuracy"], "leave_one_model_out"),
                _medians(r["accuracy"], "leave_one_gpu_out"),
                _medians(r["accuracy"], "leave_one_family_out"),
                r["source"],
            )
            for r in records
        ]
        cols = [
            Col("id"),
            Col("name", "l", 2),
            Col("own constants for"),
            Col("new model", "r"),
            Col("new GPU", "r"),
            Col("new family", "r"),
            Col("source", "l", 1),
        ]
        legend = (
            "own constants for: GPU families the profile sets apart; every other family takes "
            "its default. new model, new GPU, new family: median absolute % error of TPOT / "
            "TTFT / throughput on public rows of a model (a GPU, a GPU family) left out of the "
            "fit (its accuracy record, benchmarks/accuracy.py --record; - not measured)"
        )
        return table(cols, rows, layout) + "\n" + wrap(legend, layout)
    rows = [
        (
            r["provider"],
            r["model"],
            r["provider_model_id"],
            f"{r['input_usd_per_1m']:g}",
            f"{r['output_usd_per_1m']:g}",
            "-" if r["cached_input_usd_per_1m"] is None else f"{r['cached_input_usd_per_1m']:g}",
            r["as_of"],
        )
        for r in records
    ]
    cols = [
        Col("provider"),
        Col("model"),
        Col("provider model id"),
        Col("$/1M in", "r"),
        Col("$/1M out", "r"),
        Col("$/1M cached in", "r", 1),
        Col("as of", "l", 1),
    ]
    return table(cols, rows, layout)
