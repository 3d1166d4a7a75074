"""The only click user: parse, call the library, render; PlannerError -> exit code."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import click

from planner.errors import InputError, PlannerError

EXPORTS_DIR = Path("exports")


class PlannerGroup(click.Group):
    """Maps PlannerError to one message and its exit code; tracebacks only with --debug."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except PlannerError as exc:
            if ctx.params.get("debug"):
                traceback.print_exc()
            click.echo(f"error: {exc.message}", err=True)
            sys.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:  # a bug: say so plainly, trace only on request
            if ctx.params.get("debug"):
                raise
            click.echo(
                f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the "
                "traceback and report it)",
                err=True,
            )
            sys.exit(70)


@click.group(cls=PlannerGroup)
@click.option(
    "--catalog",
    "catalog_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Catalog folder (default: the project's catalogs/ or $PLANNER_CATALOG_DIR).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.pass_context
def cli(ctx: click.Context, catalog_dir: str | None, debug: bool) -> None:
    """planner: cost and capacity planning for LLM inference.

    Example: planner solve scenarios/chatbot.yaml
    """
    ctx.ensure_object(dict)
    ctx.obj["catalog_dir"] = catalog_dir


def _catalog(ctx: click.Context):
    from planner.catalog import load_catalog

    return load_catalog(ctx.obj.get("catalog_dir"))


@cli.command()
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Workbook path (default: exports/<scenario>.xlsx).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as one JSON object.")
@click.option("--no-export", is_flag=True, help="Do not write the workbook.")
@click.option(
    "--solver",
    type=click.Choice(["cbc", "highs"]),
    default=None,
    help="MIP backend (default: the scenario's, else cbc).",
)
@click.option("--time-limit", type=float, default=None, help="Solver time limit in seconds.")
@click.option("--plot", is_flag=True, help="Also write PNG charts next to the workbook.")
@click.pass_context
def solve(ctx, scenario, output, as_json, no_export, solver, time_limit, plot) -> None:
    """Plan the cheapest fleet that meets a scenario's SLAs.

    Example: planner solve scenarios/chatbot.yaml -o exports/chatbot.xlsx
    """
    from planner.pipeline import plan as make_plan
    from planner.report import plan_dict, render_plan, to_json
    from planner.scenarios import load_scenario

    sc, catalog = load_scenario(scenario, _catalog(ctx))
    sc = _solver_overrides(sc, solver, time_limit)
    result = make_plan(sc, catalog)
    written = None
    if not no_export:
        from planner.export import write_workbook

        target = Path(output) if output else EXPORTS_DIR / f"{Path(scenario).stem}.xlsx"
        if output is None:
            target.parent.mkdir(parents=True, exist_ok=True)
        written = write_workbook(result, target)
    charts = (
        _write_plots(result, written or EXPORTS_DIR / f"{Path(scenario).stem}.xlsx")
        if (plot)
        else []
    )
    if as_json:
        click.echo(to_json(plan_dict(result)), nl=False)
    else:
        click.echo(render_plan(result))
        if written:
            click.echo(f"Workbook: {written}")
        for chart in charts:
            click.echo(f"Chart: {chart}")


def _write_plots(result, workbook: Path) -> list[Path]:
    """PNG charts next to the workbook: frontier, demand and fleet, break-even."""
    from planner import plots
    from planner.buildvsbuy import cost_curves

    workbook.parent.mkdir(parents=True, exist_ok=True) if workbook.parent == EXPORTS_DIR else None
    stem = workbook.with_suffix("")
    out = [plots.frontier(result, Path(f"{stem}-frontier.png"))]
    if result.over_time is not None:
        out.append(plots.demand_and_fleet(result, Path(f"{stem}-demand.png")))
    if result.cheapest_api is not None:
        volume, own, api = cost_curves(
            result.problem, result, result.cheapest_api, result.average_demand_factor
        )
        label = f"{result.cheapest_api.provider} {result.cheapest_api.provider_model_id}"
        out.append(
            plots.break_even(
                volume, own, api, label, result.total_requests_per_s, Path(f"{stem}-break-even.png")
            )
        )
    return out


def _solver_overrides(sc, solver, time_limit):
    update = {}
    if solver:
        update["backend"] = solver
    if time_limit is not None:
        if time_limit <= 0:
            raise InputError(f"--time-limit: must be positive, got {time_limit}")
        update["time_limit_s"] = time_limit
    return sc.model_copy(update={"solver": sc.solver.model_copy(update=update)}) if update else sc


@cli.command()
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Chart path (default: exports/<scenario>-break-even.png).",
)
@click.option("--no-plot", is_flag=True, help="Do not draw the chart.")
@click.pass_context
def compare(ctx, scenario, as_json, plot_path, no_plot) -> None:
    """Self-hosting against every API offering of the model, with break-even volumes.

    Example: planner compare scenarios/build-vs-api.yaml
    """
    from planner.buildvsbuy import compare as run_compare
    from planner.buildvsbuy import cost_curves
    from planner.pipeline import plan as make_plan
    from planner.report import compare_dict, render_compare, to_json
    from planner.scenarios import load_scenario

    sc, catalog = load_scenario(scenario, _catalog(ctx))
    result = make_plan(sc, catalog)
    rows = run_compare(result, result.problem, result.average_demand_factor)
    chart = None
    if rows and not no_plot:
        from planner import plots

        target = (
            Path(plot_path) if plot_path else EXPORTS_DIR / f"{Path(scenario).stem}-break-even.png"
        )
        if plot_path is None:
            target.parent.mkdir(parents=True, exist_ok=True)
        best = rows[0].quote
        volume, own, api = cost_curves(result.problem, result, best, result.average_demand_factor)
        chart = plots.break_even(
            volume,
            own,
            api,
            f"{best.provider} {best.provider_model_id}",
            result.total_requests_per_s,
            target,
        )
    if as_json:
        click.echo(to_json(compare_dict(result, rows)), nl=False)
    else:
        click.echo(render_compare(result, rows))
        if chart:
            click.echo(f"Chart: {chart}")


@cli.command()
@click.option("--model", required=True, help="Model id, e.g. llama-3.1-70b.")
@click.option("--gpu", required=True, help="GPU id, e.g. h100-sxm.")
@click.option("--tp", type=int, default=1, show_default=True, help="Tensor-parallel degree.")
@click.option("--quant", default="bf16", show_default=True, help="Quantization id.")
@click.option("--batch", type=int, default=1, show_default=True, help="Concurrent sequences.")
@click.option("--input-len", type=int, default=1024, show_default=True, help="Prompt tokens.")
@click.option("--output-len", type=int, default=256, show_default=True, help="Output tokens.")
@click.option(
    "--kv-dtype",
    type=click.Choice(["bf16", "fp16", "fp8"]),
    default=None,
    help="KV-cache dtype (default: the quantization's default).",
)
@click.option("--engine", default="vllm", show_default=True, help="Engine profile id.")
@click.option(
    "--utilization",
    type=float,
    default=0.8,
    show_default=True,
    help="Load for the TTFT queueing estimate (fraction of capacity).",
)
@click.option("--price", type=float, default=None, help="Override $/GPU-hour.")
@click.option("--ideal", is_flag=True, help="Pure roofline floor: efficiency 1, no overheads.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def estimate(
    ctx,
    model,
    gpu,
    tp,
    quant,
    batch,
    input_len,
    output_len,
    kv_dtype,
    engine,
    utilization,
    price,
    ideal,
    as_json,
) -> None:
    """Estimate TPOT, TTFT, throughput, memory and cost of one deployment.

    Example: planner estimate --model llama-3.1-70b --gpu h100-sxm --tp 4 --quant fp8
    --batch 32 --input-len 2048 --output-len 256
    """
    from planner.estimate import EstimateRequest
    from planner.estimate import estimate as run
    from planner.report import estimate_dict, render_estimate, to_json

    req = EstimateRequest(
        model=model,
        gpu=gpu,
        tp=tp,
        quant=quant,
        batch=batch,
        input_len=input_len,
        output_len=output_len,
        kv_dtype=kv_dtype,
        ideal=ideal,
        engine=engine,
        utilisation=utilization,
        price_usd_per_gpu_hour=price,
    )
    row = run(req, _catalog(ctx))
    click.echo(to_json(estimate_dict(row)) if as_json else render_estimate(row), nl=not as_json)


@cli.command(name="catalog")
@click.argument("kind", type=click.Choice(["gpus", "models", "quants", "apis", "engines"]))
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_context
def catalog_cmd(ctx, kind, as_json) -> None:
    """List what the catalog knows.

    Example: planner catalog gpus
    """
    from planner.listing import catalog_records, catalog_table
    from planner.report import to_json

    records = catalog_records(_catalog(ctx), kind)
    click.echo(
        to_json({kind: records}) if as_json else catalog_table(kind, records), nl=not as_json
    )


@cli.group()
def model() -> None:
    """Work with model entries."""


@model.command(name="import")
@click.argument("config", type=click.Path(dir_okay=False))
@click.option("--id", "model_id", default=None, help="Catalog id (default: folder or file name).")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Where to write the YAML (default: <catalog>/models/<id>.yaml; - for stdout).",
)
@click.option("--force", is_flag=True, help="Overwrite an existing entry.")
@click.pass_context
def import_model(ctx, config, model_id, output, force) -> None:
    """Turn a Hugging Face config.json into a catalog entry.

    Example: planner model import ./Llama-3.1-8B/config.json --id my-llama
    """
    from planner.catalog import catalog_dir
    from planner.hf_import import model_from_hf_config, model_to_yaml
    from planner.loading import read_json
    from planner.writing import write_text_atomic

    path = Path(config)
    default_id = path.parent.name if path.name == "config.json" else path.stem
    model_id = model_id or default_id.lower().replace(" ", "-")
    entry = model_from_hf_config(read_json(path), model_id, str(path))
    text = model_to_yaml(entry)
    if output == "-":
        click.echo(text, nl=False)
        return
    target = (
        Path(output)
        if output
        else catalog_dir(ctx.obj.get("catalog_dir")) / "models" / (f"{model_id}.yaml")
    )
    if target.exists() and not force:
        raise InputError(f"{target} exists; pass --force to overwrite or --id to rename")
    write_text_atomic(target, text)
    click.echo(
        f"Wrote {target}: {entry.params_total / 1e9:.2f}B parameters "
        f"({entry.params_active / 1e9:.2f}B active), {entry.num_hidden_layers} layers"
    )


def main() -> None:
    """Console entry point."""
    cli(obj={})


if __name__ == "__main__":  # pragma: no cover
    main()
