"""What-if sweeps: a grid over scenario keys, or Monte Carlo draws, each point a full plan.

A point is a set of overrides `{key.path: value}` applied to the validated scenario, which is
then validated again through the Scenario model (so a point is exactly as strict as a file).
Points are built up front, in a fixed order from the seed, and each is planned by the pure
`plan()`: where they run (here, a process pool, Ray) cannot change a result.
"""

from __future__ import annotations

import itertools
import math
import os
import signal
import time
import types
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import numpy as np
import pandas as pd

from planner.errors import (
    InfeasibleError,
    InputError,
    PlannerError,
    SolverError,
    close_match,
    did_you_mean,
    short_name,
)
from planner.inputs.catalog import Catalog
from planner.inputs.loading import validate
from planner.inputs.sweep import check_ids
from planner.planning import sweep_table as tables
from planner.planning.pipeline import plan
from planner.schema.scenario import Scenario
from planner.schema.sweep import Choice, Lognormal, Normal, Uniform, VaryFile

Overrides = dict[str, Any]
Progress = Callable[[int], None]
MAX_GRID_POINTS = 100_000


@dataclass(frozen=True)
class Point:
    """One point of a sweep: its number and the scenario keys it sets."""

    index: int
    overrides: Overrides


# ---- key paths ---------------------------------------------------------------------------


def split_key(key: str, origin: str = "--set") -> list[str | int]:
    """`workload.classes[0].share` or `workload.classes.0.share` as ['workload', 'classes',
    0, 'share']; errors name the key as `origin` gave it (--set, or a --vary file's key)."""
    parts: list[str | int] = []
    for raw in key.replace("[", ".").replace("]", "").split("."):
        if raw == "":
            raise InputError(f"{origin} {key}: empty part in the key path")
        parts.append(int(raw) if raw.isdigit() else raw)
    return parts


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "model_fields")


def _unwrap(tp: Any) -> Any:
    """The type inside Optional[...] and Annotated[...]."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def _child_type(tp: Any, part: str | int, key: str, walked: str, origin: str) -> Any:
    """The type one step down a key path; an unknown key names a close match."""
    tp = _unwrap(tp)
    if _is_model(tp):
        fields = tp.model_fields
        if part not in fields:
            hint = close_match(str(part), fields)
            msg = f"{origin} {key}: unknown key '{part}'" + (f" under {walked}" if walked else "")
            msg += f" (did you mean '{hint}'?)" if hint else ""
            raise InputError(msg + f"; allowed here: {', '.join(fields)}")
        return fields[part].annotation
    origin = get_origin(tp)
    if origin is dict:
        return get_args(tp)[1]
    if origin in (list, tuple) and isinstance(part, int):
        return get_args(tp)[0]
    raise InputError(f"{origin} {key}: {walked} holds a value, not keys ('{part}' is too deep)")


def check_key(key: str, origin: str = "--set") -> list[str | int]:
    """The parts of a key path, checked against the Scenario schema."""
    parts, tp, walked = split_key(key, origin), Scenario, ""
    for part in parts:
        tp = _child_type(tp, part, key, walked, origin)
        walked += f"[{part}]" if isinstance(part, int) else ("." if walked else "") + part
    return parts


def _set_in(doc: Any, parts: list[str | int], value: Any, key: str) -> None:
    """Set doc[parts...] = value in a scenario's plain-data dump."""
    node = doc
    for depth, part in enumerate(parts[:-1]):
        child = node[part] if _has(node, part) else None
        if child is None:
            if isinstance(part, int) or isinstance(node, list):
                raise InputError(f"--set {key}: {_path(parts[: depth + 1])} does not exist")
            child = {}
            node[part] = child
        node = child
    last = parts[-1]
    if isinstance(node, list) and not _has(node, last):
        raise InputError(f"--set {key}: {_path(parts)} does not exist (list of {len(node)})")
    node[last] = value


def _has(node: Any, part: str | int) -> bool:
    if isinstance(node, list):
        return isinstance(part, int) and 0 <= part < len(node)
    return isinstance(node, dict) and part in node


def _path(parts: Sequence[str | int]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else ("." if out else "") + p
    return out


def apply(
    base: Scenario, overrides: Overrides, catalog: Catalog, source: str | None = None
) -> Scenario:
    """The base scenario with `overrides` set, validated again through the Scenario model and
    its catalog ids checked: an invalid value is an InputError naming the key."""
    if not overrides:
        return base
    doc = base.model_dump()
    for key, value in overrides.items():
        _set_in(doc, check_key(key), value, key)
    source = source or "--set " + ", ".join(
        f"{k}={tables.input_cell(v)}" for k, v in overrides.items()
    )
    scenario = validate(doc, Scenario, source)
    check_ids(scenario, source, catalog)
    return scenario


def current_value(base: Scenario, key: str) -> Any:
    """The base scenario's value at a key path (None where unset)."""
    node: Any = base.model_dump()
    for part in check_key(key):
        if not _has(node, part):
            return None
        node = node[part]
    return node


# ---- points ------------------------------------------------------------------------------


def grid_points(grid: Sequence[tuple[str, list[Any]]]) -> list[Point]:
    """The full factorial of `--set` values, the last key varying fastest."""
    keys = [k for k, _ in grid]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise InputError(f"--set {dup}: given twice; list every value in one --set")
    size = int(np.prod([len(v) for _, v in grid])) if grid else 1
    if size > MAX_GRID_POINTS:
        raise InputError(f"--set: the grid has {size:,} points, more than {MAX_GRID_POINTS:,}")
    combos = itertools.product(*[values for _, values in grid])
    return [Point(i, dict(zip(keys, combo, strict=True))) for i, combo in enumerate(combos)]


def _draw(dist: Uniform | Normal | Lognormal | Choice, rng: np.random.Generator) -> Any:
    """One draw of one distribution, clipped to its bounds."""
    if isinstance(dist, Choice):
        weights = None
        if dist.weights is not None:
            weights = np.asarray(dist.weights, float) / sum(dist.weights)
        return dist.values[int(rng.choice(len(dist.values), p=weights))]
    if isinstance(dist, Uniform):
        x = rng.uniform(dist.low, dist.high)
    elif isinstance(dist, Normal):
        x = rng.normal(dist.mean, dist.sd)
    else:
        x = dist.median * math.exp(rng.normal(0.0, dist.sigma))
    low = dist.min if dist.min is not None else -math.inf
    high = dist.max if dist.max is not None else math.inf
    return float(min(max(x, low), high))


def sample_points(
    vary: VaryFile, samples: int, seed: int, fixed: Sequence[tuple[str, Any]] = ()
) -> list[Point]:
    """`samples` Monte Carlo points from one seeded generator, point by point and each key in
    file order: the same seed and file give the same points anywhere, and a larger --samples
    extends the same sequence (its first points are those of a smaller run)."""
    if samples < 1:
        raise InputError(f"--samples: must be at least 1, got {samples}")
    rng = np.random.default_rng(seed)
    points = []
    for i in range(samples):
        drawn = {key: _draw(dist, rng) for key, dist in vary.vary.items()}
        points.append(Point(i, {**dict(fixed), **drawn}))
    return points


def check_points(
    base: Scenario,
    catalog: Catalog,
    points: Iterable[Point],
    drawn: Sequence[str] = (),
    vary_name: str = "--vary",
) -> None:
    """Every point's scenario validates, before anything runs (bad input: exit 2 up front).
    A key or value a Monte Carlo drew (`drawn` keys) is named as the --vary file's, with how
    to keep its distribution in range, not as a `--set` the user never typed."""
    for point in points:
        for key in point.overrides:
            check_key(key, f"{vary_name}: vary key" if key in drawn else "--set")
        draws = [k for k in point.overrides if k in drawn]
        if not draws:
            apply(base, point.overrides, catalog)
            continue
        shown = ", ".join(f"{k}={tables.input_cell(point.overrides[k])}" for k in draws)
        source = f"{vary_name}: point {point.index} drew {shown}, which the scenario refuses"
        try:
            apply(base, point.overrides, catalog, source)
        except InputError as exc:
            raise InputError(
                f"{exc.message}; keep the draws in range with min:/max: on the distribution "
                "(a choice draws only its values)"
            ) from None


# ---- running -----------------------------------------------------------------------------


def run_point(base: Scenario, catalog: Catalog, point: Point) -> dict[str, Any]:
    """Plan one point into a table row; infeasible or failed points are rows with a reason."""
    start = time.perf_counter()
    try:
        scenario = apply(base, point.overrides, catalog)
        # the row reads the fleet and the plan over time only: no comparison plans (#14)
        outcome = tables.outcome_of_plan(plan(scenario, catalog, comparisons=False))
    except InfeasibleError as exc:
        outcome = tables.outcome_of_failure("infeasible", exc.message)
    except SolverError as exc:
        outcome = tables.outcome_of_failure("solver_error", exc.message)
    except PlannerError as exc:
        outcome = tables.outcome_of_failure("error", exc.message)
    inputs = {k: point.overrides[k] for k in point.overrides}
    return {"point": point.index, **inputs, **outcome, "seconds": time.perf_counter() - start}


_WORKER: dict[str, Any] = {}


def _init_worker(base: Scenario, catalog: Catalog) -> None:
    """Pool initializer: the scenario and catalog arrive once per worker process; Ctrl-C is
    the parent's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER["inputs"] = (base, catalog)


def _pool_task(point: Point) -> dict[str, Any]:
    base, catalog = _WORKER["inputs"]
    return run_point(base, catalog, point)


@dataclass
class Collected:
    """Rows gathered so far, and whether the run was cut short."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False


def run_local(
    base: Scenario,
    catalog: Catalog,
    points: Sequence[Point],
    jobs: int,
    progress: Progress | None = None,
) -> Collected:
    """Plan the points on `jobs` worker processes (1: in this process). Ctrl-C stops
    dispatching, lets the points in flight finish and keeps every finished row."""
    out = Collected()
    if jobs <= 1:
        try:
            for point in points:
                out.rows.append(run_point(base, catalog, point))
                if progress:
                    progress(1)
        except KeyboardInterrupt:
            out.interrupted = True
        return out
    pool = ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(base, catalog))
    pending: set[Future] = {pool.submit(_pool_task, p) for p in points}
    try:
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            _gather(done, out, progress)
    except KeyboardInterrupt:
        out.interrupted = True
        for fut in pending:
            fut.cancel()
        finished, _ = wait(pending)
        _gather({f for f in finished if not f.cancelled()}, out, progress)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return out


def _gather(done: Iterable[Future], out: Collected, progress: Progress | None) -> None:
    for fut in done:
        out.rows.append(fut.result())
        if progress:
            progress(1)


# ---- the sweep ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepResult:
    """A finished (or interrupted) sweep: the table, its summary, the tornado, how it ran."""

    scenario_name: str
    mode: Literal["grid", "monte_carlo"]
    keys: tuple[str, ...]
    table: pd.DataFrame
    summary: pd.DataFrame
    tornado: tables.Tornado | None
    metric: str
    seed: int | None
    runner: str
    seconds: float
    points_total: int
    interrupted: bool = False
    notes: tuple[str, ...] = ()  # what the reader should know (a key that moved nothing)

    @property
    def points_per_second(self) -> float:
        return len(self.table) / self.seconds if self.seconds > 0 else float("nan")


def default_jobs() -> int:
    """Worker processes for a local run: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def finish(
    base: Scenario,
    mode: Literal["grid", "monte_carlo"],
    keys: tuple[str, ...],
    collected: Collected,
    points_total: int,
    runner: str,
    seconds: float,
    seed: int | None = None,
    metric: str | None = None,
) -> SweepResult:
    """The rows turned into the result table, its summary statistics and tornado."""
    table = tables.build_table(keys, collected.rows)
    metric = metric or tables.default_metric(table)
    check_metric(metric)
    if mode == "grid":
        reference = {k: _reference(base, k, table) for k in keys}
        tornado = tables.grid_tornado(table, keys, reference, metric)
    else:
        tornado = tables.sample_tornado(table, keys, metric)
    return SweepResult(
        scenario_name=base.name or "scenario",
        mode=mode,
        keys=keys,
        table=table,
        summary=tables.summary(table),
        tornado=tornado,
        metric=metric,
        seed=seed,
        runner=runner,
        seconds=seconds,
        points_total=points_total,
        interrupted=collected.interrupted,
        notes=_inert_keys(base, table, keys, metric) if mode == "grid" else (),
    )


def _inert_keys(
    base: Scenario, table: pd.DataFrame, keys: tuple[str, ...], metric: str
) -> tuple[str, ...]:
    """A note for each swept key whose values planned the same metric at every setting of
    the other keys, which the tornado's $0 swing alone leaves unexplained: a top-level sla
    key no class reads (every class has its own sla), or a plan not sensitive to the key
    over the values swept."""
    planned = table[table["status"].isin(["optimal", "time_limit"])]
    classes = base.workload.classes or []
    unread = bool(classes) and all(c.sla is not None for c in classes)
    notes = []
    for key in keys:
        others = [k for k in keys if k != key]
        groups = planned.groupby(others, dropna=False) if others else [((), planned)]
        compared = [g for _, g in groups if g[key].astype(str).nunique() > 1]
        if not compared or any(g[metric].round(6).nunique() > 1 for g in compared):
            continue
        if unread and key.startswith("sla."):
            notes.append(
                f"{key}: no class reads it: every class of workload.classes has its own sla; "
                f"sweep workload.classes[i].{key} instead"
            )
        else:
            notes.append(
                f"{key}: every value planned the same {metric}: the plan is not sensitive "
                "to it over these values"
            )
    return tuple(notes)


def _reference(base: Scenario, key: str, table: pd.DataFrame) -> Any:
    """A grid key's reference value: the scenario's own if the grid lists it, else the
    first value listed."""
    own = tables.input_cell(current_value(base, key))
    if own is None:
        return None if table[key].isna().any() else table[key].iloc[0]
    values = list(table[key].astype(object))
    if any(v == own for v in values):
        return own
    return values[0] if values else own


def execute(
    base: Scenario,
    catalog: Catalog,
    points: Sequence[Point],
    jobs: int,
    ray_address: str | None = None,
    progress: Progress | None = None,
) -> tuple[Collected, str]:
    """Run the points locally on `jobs` processes, or as Ray tasks at `ray_address`."""
    if ray_address:
        from planner.planning.sweep_ray import run_on_ray

        return run_on_ray(base, catalog, points, ray_address, jobs, progress)
    jobs = max(1, min(jobs, len(points)))
    where = "this process" if jobs <= 1 else f"{jobs} local processes"
    return run_local(base, catalog, points, jobs, progress), f"local ({where})"


def check_metric(metric: str) -> None:
    """Exit 2 for a --metric that is not a cost column, with the close match."""
    if metric in tables.COST_COLUMNS:
        return
    also = did_you_mean(metric, tables.COST_COLUMNS)
    raise InputError(
        f"--metric: '{short_name(metric)}' is not a cost column{also}; one of "
        f"{', '.join(tables.COST_COLUMNS)}"
    )


@dataclass(frozen=True)
class SweepSpec:
    """What to sweep: `--set` keys and values, or a Monte Carlo over a `--vary` file."""

    grid: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    vary: VaryFile | None = None
    samples: int | None = None
    seed: int | None = None
    metric: str | None = None
    vary_name: str = "--vary"  # how errors name the --vary file ("--vary FILE")

    def points(self) -> tuple[Literal["grid", "monte_carlo"], tuple[str, ...], list[Point]]:
        """The mode, the varied keys and every point, in order."""
        grid = [(k, list(v)) for k, v in self.grid]
        if self.vary is None:
            if self.samples is not None:
                raise InputError("--samples: Monte Carlo needs --vary FILE with distributions")
            if not grid:
                raise InputError("nothing to sweep: give --set key=v1,v2,... or --vary FILE")
            return "grid", tuple(k for k, _ in grid), grid_points(grid)
        if self.samples is None:
            raise InputError("--vary: say how many points to draw with --samples N")
        several = [k for k, v in grid if len(v) > 1]
        if several:
            raise InputError(
                f"--set {several[0]}: with --samples, --set fixes one value per key "
                "(several values make a grid)"
            )
        clash = [k for k, _ in grid if k in self.vary.vary]
        if clash:
            raise InputError(f"--set {clash[0]}: also drawn by --vary; give it in one place")
        fixed = [(k, v[0]) for k, v in grid]
        points = sample_points(self.vary, self.samples, self.used_seed)
        points = [Point(p.index, {**dict(fixed), **p.overrides}) for p in points]
        return "monte_carlo", tuple(self.vary.vary), points

    @property
    def used_seed(self) -> int:
        """--seed, else the --vary file's seed, else 0."""
        if self.seed is not None:
            return self.seed
        return self.vary.seed if self.vary and self.vary.seed is not None else 0


def sweep(
    base: Scenario,
    catalog: Catalog,
    spec: SweepSpec,
    jobs: int | None = None,
    ray_address: str | None = None,
    progress: Progress | None = None,
    points: list[Point] | None = None,
) -> SweepResult:
    """Validate every point, plan them all (locally or on Ray), and summarise."""
    mode, keys, all_points = spec.points()
    if spec.metric is not None:
        check_metric(spec.metric)  # before the points run, not after
    points = all_points if points is None else points
    drawn = tuple(spec.vary.vary) if spec.vary else ()
    check_points(base, catalog, points, drawn, spec.vary_name)
    start = time.perf_counter()
    collected, runner = execute(
        base, catalog, points, jobs or default_jobs(), ray_address, progress
    )
    seconds = time.perf_counter() - start
    seed = spec.used_seed if mode == "monte_carlo" else None
    return finish(base, mode, keys, collected, len(points), runner, seconds, seed, spec.metric)
