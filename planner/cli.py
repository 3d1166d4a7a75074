"""The only click user: parse, call the library, render; PlannerError -> exit code."""

from __future__ import annotations

import os

# Before numpy loads: OpenBLAS otherwise starts a busy-waiting thread per core, which costs
# more CPU than a plan's whole grid (numpy + pandas import 0.38 -> 0.25 CPU s on 2 cores,
# issue 16); planner's arrays are elementwise, with no matrix product worth threading. A
# user's own setting wins, and sweep workers started from here inherit it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import contextlib  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

import click  # noqa: E402

from planner.errors import InputError, OutputError, PlannerError, short_name, shorten  # noqa: E402

EXPORTS_DIR = Path("exports")
GC_YOUNG_THRESHOLD = 200_000  # allocations between young-generation collections (`main`)


class PlannerGroup(click.Group):
    """Maps PlannerError to one message and its exit code; tracebacks only with --debug.
    Exit codes mean one thing each: 1 infeasible, 2 bad input or unwritable output, 3 the
    solver stopped without a plan, 70 a bug, 130 interrupted (Ctrl-C)."""

    def invoke(self, ctx: click.Context):
        try:
            out = super().invoke(ctx)
            _flush_stdout()
            return out
        except KeyboardInterrupt:
            _exit_interrupted()
        except PlannerError as exc:
            if _INTERRUPTED:  # a solver killed by the same Ctrl-C reports a failure
                _exit_interrupted()
            if ctx.params.get("debug"):
                traceback.print_exc()
            _fail(exc.message, exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except OSError as exc:  # the environment, not a bug: a file or folder that fails
            if ctx.params.get("debug"):
                traceback.print_exc()
            _fail(_os_message(exc), 2)
        except Exception as exc:  # a bug: say so plainly, trace only on request
            if ctx.params.get("debug"):
                raise
            _fail(
                f"internal error: {type(exc).__name__}: {shorten(str(exc), 300)} (rerun with "
                "--debug for the traceback and report it)",
                70,
                prefix="",
            )


_INTERRUPTED = False  # set by the SIGINT handler: later failures are the interrupt's


def _on_sigint(signum, frame) -> None:
    """Ctrl-C: remember it (a solver child dies of it too), then interrupt as Python does."""
    global _INTERRUPTED
    _INTERRUPTED = True
    raise KeyboardInterrupt


def _exit_interrupted() -> None:
    _fail("interrupted", 130)


def _fail(message: str, code: int, prefix: str = "error: ") -> None:
    """Print one message to stderr and exit with `code`."""
    with contextlib.suppress(OSError):
        click.echo(f"{prefix}{message}", err=True)
    sys.exit(code)


def _os_message(exc: OSError) -> str:
    """'cannot use <path>: <reason>' for an OSError that escaped the writers."""
    where = f" {exc.filename}" if exc.filename else ""
    return f"cannot use{where}: {exc.strerror or exc}"


def _mute_stdout() -> None:
    """After a failed write to stdout, point it at /dev/null so the exit flush is quiet."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _flush_stdout() -> None:
    """Flush stdout now, so a full disk or a closed pipe is exit 2 naming it."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        _mute_stdout()
        raise OutputError(f"cannot write to standard output: {exc.strerror or exc}") from None


def _echo(text: str = "", nl: bool = True) -> None:
    """click.echo to stdout; a failed write (disk full, closed pipe) is an OutputError."""
    try:
        click.echo(text, nl=nl)
    except OSError as exc:
        _mute_stdout()
        raise OutputError(f"cannot write to standard output: {exc.strerror or exc}") from None


@click.group(cls=PlannerGroup)
@click.option(
    "--catalog",
    "catalog_dir",
    type=click.Path(file_okay=False),
    multiple=True,
    help="User catalog folder (gpus/, models/, quants/, engines/, apis/) whose entries add to "
    "or replace the shipped ones; repeatable, the first wins (default: $PLANNER_CATALOG_DIR, "
    f"folders separated by '{os.pathsep}').",
)
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.pass_context
def cli(ctx: click.Context, catalog_dir: tuple[str, ...], debug: bool) -> None:
    """planner: cost and capacity planning for LLM inference.

    Example: planner solve scenarios/chatbot.yaml
    """
    ctx.ensure_object(dict)
    ctx.obj["catalog_dir"] = catalog_dir


def _wide_option(func):
    """--wide: every column, unwrapped (default: fit 100 columns)."""
    return click.option(
        "--wide", is_flag=True, help="Show every column unwrapped (default: fit 100 columns)."
    )(func)


def _layout(wide: bool):
    from planner.render.tables import Layout

    return Layout(wide=wide)


def _catalog(ctx: click.Context):
    from planner.inputs.catalog import load_catalog

    return load_catalog(ctx.obj.get("catalog_dir"))


# issue #10: plan to the engine profile's measured error (solve, capacity, job)
_margin_option = click.option(
    "--prediction-margin",
    type=click.Choice(["none", "p90"]),
    default=None,
    help="Plan to the engine profile's measured error: p90 takes each GPU's TPOT and TTFT "
    "longer, and its throughput lower, by what covered 90% of its measured rows "
    "(default: the scenario's search.prediction_margin, else none).",
)


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
    help="MIP backend (default: the scenario's, else highs).",
)
@click.option("--time-limit", type=float, default=None, help="Solver time limit in seconds.")
@_margin_option
@click.option("--plot", is_flag=True, help="Also write PNG charts next to the workbook.")
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write an interactive, self-contained HTML report to this file.",
)
@_wide_option
@click.pass_context
def solve(
    ctx,
    scenario,
    output,
    as_json,
    no_export,
    solver,
    time_limit,
    prediction_margin,
    plot,
    html_path,
    wide,
) -> None:
    """Plan the cheapest fleet that meets a scenario's SLAs.

    Example: planner solve scenarios/chatbot.yaml -o exports/chatbot.xlsx
    """
    from planner.inputs.platforms import is_platform
    from planner.inputs.scenarios import load_scenario
    from planner.planning.pipeline import plan as make_plan
    from planner.render.json import plan_dict, to_json
    from planner.render.text import render_plan

    if is_platform(scenario):  # multi-model platform (issue 12)
        if plot or html_path:
            raise InputError("--plot and --html are not supported yet for a platform (models:)")
        overrides = (solver, time_limit, prediction_margin)
        _solve_platform(ctx, scenario, output, as_json, no_export, overrides, wide)
        return
    sc, catalog = load_scenario(scenario, _catalog(ctx))
    sc = _with_margin(_solver_overrides(sc, solver, time_limit), prediction_margin)
    result = make_plan(sc, catalog)
    analysis = None
    written, charts = None, []
    default_book = EXPORTS_DIR / f"{Path(scenario).stem}.xlsx"
    if not no_export or plot or html_path:
        from planner.planning.breakeven import analyse

        analysis = _with_progress(analyse, result)
    if not no_export:
        from planner.render.xlsx import write_workbook

        target = Path(output) if output else default_book
        if output is None:
            target.parent.mkdir(parents=True, exist_ok=True)
        written = write_workbook(result, target, analysis)
    if plot:
        charts = _write_plots(result, analysis, written or Path(output or default_book))
    report = None
    if html_path:
        from planner.planning.report import plan_report
        from planner.render.html import write_html

        report = write_html(plan_report(result, analysis), html_path)
    if as_json:
        _echo(to_json(plan_dict(result)), nl=False)
    else:
        _echo(render_plan(result, _layout(wide)))
        if written:
            _echo(f"Workbook: {written}")
        for chart in charts:
            _echo(f"Chart: {chart}")
        if report:
            _echo(f"Report: {report}")


@cli.command()
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=V1,V2,...",
    help="A scenario key and the values to try (YAML), e.g. workload.requests_per_second=10,20; "
    "repeatable: the grid is every combination.",
)
@click.option(
    "--vary",
    "vary_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="YAML of distributions (uniform, normal, lognormal, choice) to draw --samples from.",
)
@click.option("--samples", type=int, default=None, help="Monte Carlo points to draw.")
@click.option("--seed", type=int, default=None, help="Random seed (default: the file's, else 0).")
@click.option("--jobs", type=int, default=None, help="Local worker processes (default: CPUs).")
@click.option(
    "--ray",
    "ray_address",
    default=None,
    metavar="ADDRESS|local",
    help="Run the points as Ray tasks on the cluster at ADDRESS (or 'auto'), or on a local "
    "Ray started for the run ('local'); needs pip install -e '.[ray]'.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the result table: FILE.csv or FILE.parquet.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the sweep as one JSON object.")
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write an interactive, self-contained HTML report of the sweep.",
)
@click.option(
    "--metric",
    default=None,
    help="Cost the tornado ranks inputs by (default: over_time_per_month_usd with a finance "
    "section, else cost_per_month_usd).",
)
@_wide_option
@click.pass_context
def sweep(
    ctx,
    scenario,
    sets,
    vary_path,
    samples,
    seed,
    jobs,
    ray_address,
    output,
    as_json,
    html_path,
    metric,
    wide,
) -> None:
    """What-if: a grid over scenario keys, or a Monte Carlo, each point a full plan.

    Example: planner sweep scenarios/chatbot.yaml --set workload.requests_per_second=10,20,40
    """
    from planner.inputs.scenarios import load_scenario
    from planner.inputs.sweep import load_vary, parse_set
    from planner.planning import sweep as sweeps

    if jobs is not None and jobs < 1:
        raise InputError(f"--jobs: must be at least 1, got {jobs}")
    grid = tuple((k, tuple(v)) for k, v in map(parse_set, sets))
    vary = load_vary(vary_path) if vary_path else None
    spec = sweeps.SweepSpec(
        grid=grid,
        vary=vary,
        samples=samples,
        seed=seed,
        metric=metric,
        vary_name=f"--vary {vary_path}" if vary_path else "--vary",
    )
    base, catalog = load_scenario(scenario, _catalog(ctx))
    _, _, points = spec.points()
    result = _run_sweep(sweeps, base, catalog, spec, points, jobs, ray_address)
    _sweep_outputs(result, output, as_json, html_path, wide)
    if result.interrupted:
        sys.exit(130)


def _solve_platform(ctx, scenario, output, as_json, no_export, overrides, wide) -> None:
    """`planner solve` of a platform file: one fleet for several models (issue 12);
    `overrides`: solve's --solver, --time-limit and --prediction-margin."""
    from planner.inputs.platforms import load_platform
    from planner.planning.platform import plan_platform
    from planner.render.json import to_json
    from planner.render.platform import platform_dict, render_platform

    pf, catalog = load_platform(scenario, _catalog(ctx))
    solver, time_limit, margin = overrides
    result = plan_platform(_with_margin(_solver_overrides(pf, solver, time_limit), margin), catalog)
    written = []
    if not no_export:
        from planner.render.xlsx.platform import write_platform_workbooks

        target = Path(output) if output else EXPORTS_DIR / f"{Path(scenario).stem}.xlsx"
        if output is None:
            target.parent.mkdir(parents=True, exist_ok=True)
        written = write_platform_workbooks(result, target)
    if as_json:
        _echo(to_json(platform_dict(result)), nl=False)
        return
    _echo(render_platform(result, _layout(wide)))
    for path in written:
        _echo(f"Workbook: {path}")


def _run_sweep(sweeps, base, catalog, spec, points, jobs, ray_address):
    """The sweep, with a progress bar on an interactive terminal."""
    if not sys.stderr.isatty():
        return sweeps.sweep(base, catalog, spec, jobs, ray_address, None, points)
    with click.progressbar(length=len(points), label="sweep", file=sys.stderr) as bar:
        return sweeps.sweep(base, catalog, spec, jobs, ray_address, bar.update, points)


def _sweep_outputs(result, output, as_json, html_path, wide=False) -> None:
    """Write the table and the report, print the sweep (text or JSON)."""
    from planner.render.json import to_json
    from planner.render.sweep import render_sweep, sweep_dict, write_table

    written = []
    if output:
        written.append(write_table(result, output))
    if html_path:
        from planner.planning.report import sweep_report
        from planner.render.html import write_html

        written.append(write_html(sweep_report(result), html_path))
    if as_json:
        _echo(to_json(sweep_dict(result)), nl=False)
    else:
        _echo(render_sweep(result, _layout(wide)), nl=False)
        for path in written:
            _echo(f"Wrote {path}")
    if result.interrupted:
        click.echo(
            f"interrupted: kept {len(result.table)} of {result.points_total} points", err=True
        )


def _write_plots(result, analysis, workbook: Path) -> list[Path]:
    """PNG charts next to the workbook: frontier, demand and fleet, break-even."""
    from planner.render import png as plots

    if workbook.parent == EXPORTS_DIR:
        workbook.parent.mkdir(parents=True, exist_ok=True)
    stem = workbook.with_suffix("")
    out = [plots.frontier(result, Path(f"{stem}-frontier.png"))]
    if result.over_time is not None:
        out.append(plots.demand_and_fleet(result, Path(f"{stem}-demand.png")))
    if analysis.curves is not None:
        target = Path(f"{stem}-break-even.png")
        out.append(plots.break_even_all(analysis, result.total_requests_per_s, target))
    return out


def _with_progress(analyse, result):
    """Run the build-vs-buy analysis with a progress bar on an interactive terminal."""
    if not sys.stderr.isatty() or not result.api_quotes:
        return analyse(result)
    with click.progressbar(
        length=len(result.api_quotes), label="break-even vs APIs", file=sys.stderr
    ) as bar:
        return analyse(result, bar.update)


def _with_margin(sc, margin):
    """The scenario (or platform) with solve's --prediction-margin, when given (issue #10)."""
    from planner.planning.accuracy import with_margin_setting

    return with_margin_setting(sc, margin)


def _solver_overrides(sc, solver, time_limit):
    update = {}
    if solver:
        update["backend"] = solver
    if time_limit is not None:
        from planner.schema.bounded import Range
        from planner.schema.limits import MAX_TIME_LIMIT_S

        try:
            Range(0, MAX_TIME_LIMIT_S, low_open=True, unit="s").check(time_limit)
        except ValueError as exc:
            raise InputError(f"--time-limit: {exc} (got {shorten(time_limit)})") from None
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
    help="Chart path, .png, .pdf or .svg (default: exports/<scenario>-break-even.png).",
)
@click.option("--no-plot", is_flag=True, help="Do not draw the chart.")
@_wide_option
@click.pass_context
def compare(ctx, scenario, as_json, plot_path, no_plot, wide) -> None:
    """Self-hosting against every API offering of the model, with break-even volumes.

    Example: planner compare scenarios/build-vs-api.yaml
    """
    from planner.inputs.scenarios import load_scenario
    from planner.planning.breakeven import analyse
    from planner.planning.pipeline import plan as make_plan
    from planner.render.json import compare_dict, to_json
    from planner.render.text import render_compare

    if plot_path is not None and not no_plot:  # a name matplotlib cannot write: before planning
        from planner.render.png import chart_format

        chart_format(Path(plot_path))
    sc, catalog = load_scenario(scenario, _catalog(ctx))
    result = make_plan(sc, catalog)
    analysis = _with_progress(analyse, result)
    rows, chart = analysis.comparisons, None
    if analysis.curves is not None and not no_plot:
        from planner.render import png as plots

        default = EXPORTS_DIR / f"{Path(scenario).stem}-break-even.png"
        target = Path(plot_path) if plot_path else default
        if plot_path is None:
            target.parent.mkdir(parents=True, exist_ok=True)
        chart = plots.break_even_all(analysis, result.total_requests_per_s, target)
    if as_json:
        _echo(to_json(compare_dict(result, rows, analysis.notes)), nl=False)
    else:
        _echo(render_compare(result, rows, _layout(wide), analysis.notes))
        if chart:
            _echo(f"Chart: {chart}")


def _speculation_options(f):
    """`planner estimate`'s speculative-decoding and prefix-cache options (issue #11)."""
    options = [
        click.option(
            "--speculative",
            type=click.Choice(["off", "mtp", "draft"]),
            default="off",
            show_default=True,
            help="Speculative decoding: the model's MTP module or a draft model.",
        ),
        click.option(
            "--spec-tokens", type=int, default=None, help="Draft tokens per step k (default: "
            "data/speculative.yaml's published value for the model)."
        ),
        click.option(
            "--spec-acceptance", type=float, default=None,
            help="Per-token acceptance rate of the draft, 0-1 (default: published value).",
        ),
        click.option(
            "--draft-model", default=None, help="Draft model id (with --speculative draft)."
        ),
        click.option(
            "--prefix-cached-tokens", type=int, default=0, show_default=True,
            help="Prompt tokens served from the prefix cache (prefill skips them).",
        ),
    ]  # fmt: skip
    for option in reversed(options):
        f = option(f)
    return f


@cli.command()
@click.option("--model", required=True, help="Model id, e.g. llama-3.1-70b.")
@click.option("--gpu", required=True, help="GPU id, e.g. h100-sxm.")
@click.option("--tp", type=int, default=1, show_default=True, help="Tensor-parallel degree.")
@click.option("--pp", type=int, default=1, show_default=True, help="Pipeline stages (nodes).")
@click.option("--ep", type=int, default=1, show_default=True, help="Expert-parallel ranks.")
@click.option(
    "--dp-attention",
    type=int,
    default=1,
    show_default=True,
    help="Attention data-parallel ranks per stage (MoE with --ep).",
)
@click.option("--quant", default="bf16", show_default=True, help="Quantization id.")
@click.option(
    "--batch",
    type=int,
    default=None,
    help="The engine's max_num_seqs: most sequences it runs at once (default: the engine "
    "profile's; without --concurrency or --rate, 1 sequence at --utilization load).",
)
@click.option(
    "--concurrency",
    type=int,
    default=None,
    help="Closed loop: C clients, each sending its next request when the last finishes "
    "(vllm bench serve --max-concurrency C).",
)
@click.option(
    "--num-prompts",
    type=int,
    default=None,
    help="With --concurrency: the benchmark's prompts in all (vllm bench serve --num-prompts "
    "N). Its first C arrive at once, so the means mix that first round (C / N of them) with "
    "the steady state (default: the steady state alone).",
)
@click.option("--rate", type=float, default=None, help="Open loop: Poisson arrivals, requests/s.")
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
    help="Without --concurrency or --rate: the planned load, a fraction of capacity (as "
    "solve plans).",
)
@click.option("--price", type=float, default=None, help="Override $/GPU-hour.")
@click.option("--ideal", is_flag=True, help="Pure roofline floor: efficiency 1, no overheads.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
# disaggregated prefill/decode (issue #11)
@click.option("--disaggregated", is_flag=True, help="A prefill pool and a decode pool.")
@click.option("--prefill-tp", type=int, default=None, help="TP per prefill worker (--tp).")
@click.option("--prefill-workers", type=int, default=1, show_default=True, help="Prefill workers.")
@click.option("--decode-tp", type=int, default=None, help="TP per decode worker (--tp).")
@click.option("--decode-workers", type=int, default=1, show_default=True, help="Decode workers.")
@click.option("--prefill-ep", type=int, default=1, show_default=True, help="EP per prefill worker.")
@click.option("--decode-ep", type=int, default=1, show_default=True, help="EP per decode worker.")
@click.option(
    "--prefill-dp-attention",
    type=int,
    default=1,
    show_default=True,
    help="DP-attention ranks per prefill worker (MoE, with --prefill-ep).",
)
@click.option(
    "--decode-dp-attention",
    type=int,
    default=1,
    show_default=True,
    help="DP-attention ranks per decode worker (MoE, with --decode-ep).",
)
@_wide_option
@_speculation_options
@click.pass_context
def estimate(
    ctx,
    model,
    gpu,
    tp,
    pp,
    ep,
    dp_attention,
    quant,
    batch,
    concurrency,
    num_prompts,
    rate,
    input_len,
    output_len,
    kv_dtype,
    engine,
    utilization,
    price,
    ideal,
    as_json,
    disaggregated,
    prefill_tp,
    prefill_workers,
    decode_tp,
    decode_workers,
    prefill_ep,
    decode_ep,
    prefill_dp_attention,
    decode_dp_attention,
    wide,
    **issue11,
) -> None:
    """Estimate TPOT, TTFT, throughput, memory and cost of one deployment.

    Example: planner estimate --model llama-3.3-70b --gpu h100-sxm --tp 2 --quant fp8
    --concurrency 25 --input-len 5000 --output-len 500 --engine trtllm
    """
    from planner.planning.accuracy import at_margin, expected_error
    from planner.planning.estimate import EstimateRequest, check_used
    from planner.planning.estimate import estimate_row as run
    from planner.render.json import estimate_dict, to_json
    from planner.render.text import render_estimate

    check_used(_given(ctx))
    req = EstimateRequest(
        model=model,
        gpu=gpu,
        tp=tp,
        pp=pp,
        ep=ep,
        dp_attention=dp_attention,
        quant=quant,
        batch=batch if batch is not None or concurrency or rate else 1,
        concurrency=concurrency,
        num_prompts=num_prompts,
        rate=rate,
        input_len=input_len,
        output_len=output_len,
        kv_dtype=kv_dtype,
        ideal=ideal,
        engine=engine,
        utilisation=utilization,
        price_usd_per_gpu_hour=price,
        **issue11,  # speculative, spec_tokens, spec_acceptance, draft_model, prefix_cached_tokens
    )
    if disaggregated:
        shape = (prefill_tp, prefill_workers, decode_tp, decode_workers)
        moe = (prefill_ep, prefill_dp_attention, decode_ep, decode_dp_attention)
        _estimate_disaggregated(ctx, req, shape, moe)
        return
    catalog = _catalog(ctx)
    row = run(req, catalog)
    err = expected_error(catalog.engine(req.engine), req.model, req.gpu, catalog)
    figures = (float(row["tpot_ms"]), float(row["ttft_ms"]), float(row["throughput_tok_s"]))
    bounds = None if err is None else at_margin(err, *figures)
    if as_json:
        text = to_json(estimate_dict(row, err, bounds))
    else:
        text = render_estimate(row, _layout(wide), err, bounds)
    _echo(text, nl=not as_json)


def _given(ctx) -> dict:
    """The options given on the command line (not left at their defaults), by name: an
    option another one leaves unused is refused (`planning.estimate.check_used`)."""
    default = click.core.ParameterSource.DEFAULT
    return {k: v for k, v in ctx.params.items() if ctx.get_parameter_source(k) != default}


def _estimate_disaggregated(ctx, req, shape: tuple, moe: tuple) -> None:
    """`estimate --disaggregated`: a prefill pool and a decode pool (issue #11)."""
    from dataclasses import replace

    from planner.planning.accuracy import expected_error
    from planner.planning.estimate_disagg import Pools, estimate_disaggregated
    from planner.render.disagg import render_disaggregated
    from planner.render.json import error_dict, to_json

    if req.num_prompts is not None:
        raise InputError(
            "--num-prompts: a benchmark's first round is not modelled for disaggregated pools; "
            "leave it out (the steady state of --concurrency C)"
        )
    p_tp, p_n, d_tp, d_n = shape
    pools = Pools(p_tp or req.tp, p_n, d_tp or req.tp, d_n, *moe)
    given = replace(req, batch=ctx.params.get("batch"))  # None: the engine's max_num_seqs
    catalog = _catalog(ctx)
    out = estimate_disaggregated(given, pools, catalog)
    err = expected_error(catalog.engine(req.engine), req.model, req.gpu, catalog)
    as_json = ctx.params.get("as_json")
    if as_json:
        text = to_json({**out, "expected_error": None if err is None else error_dict(err)})
    else:
        text = render_disaggregated(out, _layout(ctx.params["wide"]), err, req.engine)
    _echo(text, nl=not as_json)


@cli.command(name="catalog")
@click.argument("kind", type=click.Choice(["gpus", "models", "quants", "apis", "engines"]))
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@_wide_option
@click.pass_context
def catalog_cmd(ctx, kind, as_json, wide) -> None:
    """List what the catalog knows.

    Example: planner catalog gpus
    """
    from planner.render.catalog_tables import catalog_records, catalog_table
    from planner.render.json import to_json

    records = catalog_records(_catalog(ctx), kind)
    text = to_json({kind: records}) if as_json else catalog_table(kind, records, _layout(wide))
    _echo(text, nl=not as_json)


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
    help="Where to write the YAML (default: <first user catalog folder, else ./catalogs>/"
    "models/<id>.yaml; - for stdout).",
)
@click.option("--force", is_flag=True, help="Overwrite an existing entry.")
@click.pass_context
def import_model(ctx, config, model_id, output, force) -> None:
    """Turn a Hugging Face config.json into a catalog entry.

    Example: planner model import ./Llama-3.1-8B/config.json --id my-llama
    """
    from planner.inputs.hf_import import model_from_hf_config, model_to_yaml
    from planner.inputs.loading import read_json
    from planner.writing import write_text_atomic

    path = Path(config)
    model_id = _entry_id(model_id, path)
    entry = model_from_hf_config(read_json(path), model_id, str(path))
    text = model_to_yaml(entry)
    if output == "-":
        _echo(text, nl=False)
        return
    target = Path(output) if output else _default_target(ctx, "models", model_id)
    if target.exists() and not force:
        raise InputError(f"{target} exists; pass --force to overwrite or --id to rename")
    if not output:
        target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, text)
    _echo(
        f"Wrote {target}: {entry.params_total / 1e9:.2f}B parameters "
        f"({entry.params_active / 1e9:.2f}B active), {entry.num_hidden_layers} layers"
    )
    if not output:
        _echo(_catalog_note(ctx, target, "models", model_id), nl=False)


def _entry_id(given: str | None, config: Path) -> str:
    """The catalog id of an imported model, which is also its file name: --id as given (a
    path such as ../../x is refused), else the folder or file name made safe."""
    import re

    from planner.schema.bounded import ENTRY_ID

    if given is not None:
        if not re.fullmatch(ENTRY_ID, given):
            raise InputError(
                f"--id: '{short_name(given, 80)}' is not a catalog id: letters, digits and "
                ". _ + - only, starting with a letter or digit, at most 100 characters (the id "
                "is the entry's file name)"
            )
        return given
    from planner.inputs.hf_import import default_model_id

    return default_model_id(config)


def _default_target(ctx: click.Context, kind: str, entry_id: str) -> Path:
    """A new entry's default file: <first user catalog folder, else ./catalogs>/<kind>/<id>.yaml
    (an installed package's own folder is never written)."""
    from planner.inputs.catalog import write_dir

    return write_dir(ctx.obj.get("catalog_dir")) / kind / f"{entry_id}.yaml"


def _catalog_note(ctx: click.Context, target: Path, kind: str, entry_id: str) -> str:
    """Notes on a new entry at its default place: it shadows a shipped entry of that id, or
    planner reads it only when told where its catalog folder is."""
    from planner.inputs.catalog import CATALOG_ENV, DEFAULT_CATALOG_DIR, is_loaded

    folder = target.parent.parent
    notes = []
    if (
        folder.resolve() != DEFAULT_CATALOG_DIR.resolve()
        and (DEFAULT_CATALOG_DIR / kind / target.name).is_file()
    ):
        notes.append(f"it replaces the shipped {kind[:-1]} '{entry_id}' where {folder} is read")
    if not is_loaded(folder, ctx.obj.get("catalog_dir")):
        notes.append(f"planner reads it with --catalog {folder} (or {CATALOG_ENV}={folder})")
    return "".join(f"Note: {n}.\n" for n in notes)


# ---- planner validate / planner calibrate: your own measurements ------------------------


def _identity_options(func):
    """The deployment a vLLM benchmark JSON measured (CSV rows carry their own)."""
    options = [
        click.option("--model", default=None, help="Model id (JSON inputs), e.g. llama-3.1-8b."),
        click.option("--gpu", default=None, help="GPU id (JSON inputs), e.g. h100-sxm."),
        click.option("--tp", type=int, default=None, help="Tensor-parallel degree (JSON inputs)."),
        click.option("--quant", default=None, help="Quantization id (JSON inputs), e.g. bf16."),
        click.option(
            "--kv-dtype",
            type=click.Choice(["bf16", "fp16", "fp8"]),
            default=None,
            help="KV-cache dtype (default: the quantization's default).",
        ),
        click.option(
            "--input-len",
            type=float,
            default=None,
            help="Prompt tokens (default: total_input_tokens / completed).",
        ),
        click.option(
            "--output-len",
            type=float,
            default=None,
            help="Output tokens (default: total_output_tokens / completed).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _read_inputs(ctx, inputs, model, gpu, tp, quant, kv_dtype, input_len, output_len):
    from planner.calibration import Identity, read_measurements

    catalog = _catalog(ctx)
    identity = Identity(model, gpu, tp, quant, kv_dtype, input_len, output_len)
    return read_measurements(inputs, catalog, identity), catalog


@cli.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_identity_options
@click.option(
    "--engine",
    default=None,
    help="Engine profile for every row (default: each row's engine's own profile where the "
    "catalog has one, else vllm).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@_wide_option
@click.pass_context
def validate(
    ctx, inputs, model, gpu, tp, quant, kv_dtype, input_len, output_len, engine, as_json, wide
):
    """Compare measurements with the model's predictions, row by row and per metric.

    INPUT is a CSV in the format of data/calibration/measured_public.csv or the JSON of
    `vllm bench serve --save-result` (then --model, --gpu, --tp and --quant say what ran).

    Example: planner validate data/calibration/measured_public.csv
    """
    from planner.calibration import validation
    from planner.render.calibration import render_validation
    from planner.render.json import to_json

    rows, catalog = _read_inputs(
        ctx, inputs, model, gpu, tp, quant, kv_dtype, input_len, output_len
    )
    result = validation(rows, catalog, engine)
    text = to_json(result) if as_json else render_validation(result, _layout(wide))
    _echo(text, nl=False)


@cli.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_identity_options
@click.option("--base", default="vllm", show_default=True, help="Engine profile to start from.")
@click.option(
    "--id", "profile_id", default=None, help="New profile id (default: <base>-calibrated)."
)
@click.option(
    "-o",
    "--output",
    default=None,
    help="Where to write the YAML (default: <first user catalog folder, else ./catalogs>/"
    "engines/<id>.yaml; - for stdout).",
)
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@click.option(
    "--params",
    default=None,
    help="Comma-separated constants to fit (default: eta_mem, eta_compute_decode, "
    "eta_compute_prefill, allreduce_latency_us, step_overhead_ms, prefill_overhead_ms).",
)
@click.option(
    "--only-engine",
    multiple=True,
    help="Fit only rows of this engine (vllm, sglang, trtllm, llamacpp, ...); repeatable.",
)
@click.option("--starts", type=int, default=3, show_default=True, help="Fit starting points.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@_wide_option
@click.pass_context
def calibrate(
    ctx,
    inputs,
    model,
    gpu,
    tp,
    quant,
    kv_dtype,
    input_len,
    output_len,
    base,
    profile_id,
    output,
    force,
    params,
    only_engine,
    starts,
    as_json,
    wide,
) -> None:
    """Fit an engine profile's efficiency constants to measurements; write a new profile.

    Least squares on the log error; prints the constants with their 1-sigma and the error
    before and after. Inputs as for `planner validate`.

    Example: planner calibrate results/*.json --model llama-3.1-8b --gpu h100-sxm --tp 1
    --quant bf16 --id vllm-h100
    """
    import datetime as dt

    from planner import calibration as cal
    from planner.render.calibration import render_calibration
    from planner.render.json import to_json
    from planner.writing import write_text_atomic

    if output == "-" and as_json:
        raise InputError("-o - and --json both print to stdout: choose one")
    if starts < 1:
        raise InputError(f"--starts: must be a positive integer, got {starts}")
    profile_id, target = _profile_target(ctx, base, profile_id, output, force)
    rows, catalog = _read_inputs(
        ctx, inputs, model, gpu, tp, quant, kv_dtype, input_len, output_len
    )
    fit_params = [p.strip() for p in params.split(",") if p.strip()] if params else cal.FIT_PARAMS
    result = cal.calibrate(
        rows,
        catalog,
        base,
        profile_id,
        fit_params,
        only_engine,
        starts,
        dt.date.today().isoformat(),
        [str(p) for p in inputs],
    )
    text = cal.profile_yaml(result.profile, cal.calibration_header(result))
    if target is None:
        _echo(text, nl=False)
        click.echo(render_calibration(result, None, _layout(wide)), err=True, nl=False)
        return
    if not output:
        target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, text)
    note = "" if output else _catalog_note(ctx, target, "engines", profile_id)
    if as_json:
        _echo(to_json(cal.calibration_dict(result, str(target))), nl=False)
        click.echo(note, err=True, nl=False)
    else:
        _echo(render_calibration(result, str(target), _layout(wide)) + note, nl=False)


def _profile_target(ctx, base, profile_id, output, force):
    """The new profile's id and file (None for stdout): the file name must be the id."""
    import re

    if output and output != "-":
        stem = Path(output).stem
        if profile_id and profile_id != stem:
            raise InputError(
                f"-o {output}: the file name must be the profile id ({profile_id}.yaml): "
                "the catalog loads engines/<id>.yaml"
            )
        profile_id = profile_id or stem
    profile_id = profile_id or f"{base}-calibrated"
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", profile_id):
        raise InputError(
            f"--id: '{profile_id}' is not a profile id (lower-case letters, digits, . _ -)"
        )
    if output == "-":
        return profile_id, None
    target = Path(output) if output else _default_target(ctx, "engines", profile_id)
    if target.exists() and not force:
        raise InputError(f"{target} exists; pass --force to overwrite or --id to rename")
    return profile_id, target


# ---- issue #12: a fixed fleet's capacity and a batch job's cost -----------------------------
@cli.command()
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option(
    "--rate",
    type=float,
    default=None,
    help="Also give the latency each class sees at this many requests/s on the fleet.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@_margin_option
@_wide_option
@click.pass_context
def capacity(ctx, scenario, rate, as_json, prediction_margin, wide) -> None:
    """The most requests/s a fixed fleet (hardware.fleet) serves within every class's SLA.

    Example: planner capacity scenarios/fleet-16xh100.yaml --rate 30
    """
    from planner.inputs.scenarios import load_scenario
    from planner.planning.capacity import fleet_capacity
    from planner.render.capacity import capacity_dict, render_capacity
    from planner.render.json import to_json

    sc, catalog = load_scenario(scenario, _catalog(ctx))
    result = fleet_capacity(_with_margin(sc, prediction_margin), catalog, rate)
    if as_json:
        _echo(to_json(capacity_dict(result)), nl=False)
    else:
        _echo(render_capacity(result, _layout(wide)))


@cli.command()
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@_margin_option
@_wide_option
@click.pass_context
def job(ctx, scenario, as_json, prediction_margin, wide) -> None:
    """The cheapest fleet that finishes a batch job (workload.job) by its deadline.

    Example: planner job scenarios/batch-job.yaml
    """
    from planner.inputs.scenarios import load_scenario
    from planner.planning.batch_job import price_job
    from planner.render.capacity import job_dict, render_job
    from planner.render.json import to_json

    sc, catalog = load_scenario(scenario, _catalog(ctx))
    result = price_job(_with_margin(sc, prediction_margin), catalog)
    if as_json:
        _echo(to_json(job_dict(result)), nl=False)
    else:
        _echo(render_job(result, _layout(wide)))


def main() -> None:
    """Console entry point: Ctrl-C exits 130, numpy's RuntimeWarnings stay off stderr (the
    test suite turns every warning into an error instead; --debug shows them)."""
    import gc
    import signal
    import warnings

    # one command is one short run: the cyclic collector's young generation, collected every
    # 700 allocations, re-scanned the long-lived catalog, tables and models 150 times a solve
    # (30-40 ms of mixed-traffic's 0.8 CPU s, issue 16); every 200,000 it does not run in one
    # plan, and a long sweep still collects, so memory stays bounded
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)
    if "--debug" not in sys.argv[1:]:
        warnings.simplefilter("ignore", RuntimeWarning)
    cli(obj={})


if __name__ == "__main__":  # pragma: no cover
    main()
