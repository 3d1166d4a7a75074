"""Fitting efficiency constants: bounded least squares on the log error.

`fit_profile(measurements, catalog, base_profile, engine_filter)` runs
scipy.optimize.least_squares (the only user of scipy in planner), with the uncertainty of
every constant from the Jacobian of the log residuals; `identifiable` and `support` say
what the rows can see.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize

from planner.calibration.measurements import MEASURED, METRICS, PREDICTED, SERVER_ENGINES
from planner.calibration.prediction import Design, build_design
from planner.inputs.catalog import Catalog
from planner.schema.engine import Efficiency, EngineProfile

FIT_PARAMS: tuple[str, ...] = (
    "eta_mem",
    "eta_compute_decode",
    "eta_compute_prefill",
    "allreduce_latency_us",
    "step_overhead_ms",
    "prefill_overhead_ms",
    # issue #10: per-sequence step cost, per-request TTFT latency, benchmark wave share
    "step_per_seq_us",
    "request_overhead_ms",
    "benchmark_wave_share",
)
BOUNDS: dict[str, tuple[float, float]] = {
    "eta_mem": (0.3, 1.0),
    "eta_compute_decode": (0.3, 1.0),
    "eta_compute_prefill": (0.3, 1.0),
    "eta_kv": (0.3, 1.0),
    "allreduce_latency_us": (1.0, 100.0),
    "step_overhead_ms": (0.0, 20.0),
    "prefill_overhead_ms": (0.0, 20.0),
    "step_per_seq_us": (0.0, 200.0),
    "request_overhead_ms": (0.0, 500.0),
    "benchmark_wave_share": (0.0, 1.0),
    "step_seq_layer_us": (0.0, 5.0),  # issue #10 (s40): TensorRT-LLM's per-sequence cost a layer
    "moe_layer_us": (0.0, 500.0),  # issue #10 (t10v): vLLM's per-MoE-layer decode cost
    "prefill_layer_us": (0.0, 2000.0),  # issue #10 (t10p): host floor of an eager prefill pass
    "ep_cross_node_layer_us": (0.0, 1000.0),  # issue #10 (ep-lead): EP across nodes
    "ep_cross_node_token_us": (0.0, 200.0),
}
# Width of the prior that pulls a GPU-family override towards the default (natural units).
FAMILY_PRIOR_SCALE: dict[str, float] = {
    "eta_mem": 0.1,
    "eta_compute_decode": 0.1,
    "eta_compute_prefill": 0.1,
    "eta_kv": 0.1,
    "allreduce_latency_us": 10.0,
    "step_overhead_ms": 1.0,
    "prefill_overhead_ms": 2.0,
    "step_per_seq_us": 20.0,
    "step_seq_layer_us": 0.3,
    "request_overhead_ms": 50.0,
    "benchmark_wave_share": 0.2,
    "moe_layer_us": 20.0,
    "prefill_layer_us": 200.0,
    "ep_cross_node_layer_us": 200.0,
    "ep_cross_node_token_us": 20.0,
}


def _to_z(name: str, value: float) -> float:
    lo, hi = BOUNDS[name]
    u = min(max((value - lo) / (hi - lo), 1e-6), 1 - 1e-6)
    return math.log(u / (1.0 - u))


def _from_z(name: str, z: float) -> float:
    lo, hi = BOUNDS[name]
    return lo + (hi - lo) / (1.0 + math.exp(-min(max(z, -30.0), 30.0)))


# Robust loss on the log errors: soft_l1 grows like |r| beyond LOSS_SCALE (0.25 = 28%), so a
# few rows the model cannot represent (aic SGLang TTFTs of 7-29 s where the engine queued
# for KV memory the model thinks it has) do not drag every constant. Plain least squares
# ("linear") on the aic set fitted SGLang to a median TPOT error of 24% against 16% unfitted.
LOSS = "soft_l1"
LOSS_SCALE = 0.25


# Closed-loop TTFTs (the aic rows) are fitted since #10 gave them a timing that can follow
# them (prediction.closed_loop_benchmark_ms: a share of wave arrivals plus the steady state
# and a per-request latency). Before, neither waves (growing linearly in C) nor the steady
# state (one prefill) reproduced TTFTs nearly flat in C (Llama-3.1-8B on one H100,
# TensorRT-LLM, 1024 in: 191/144/128/177 ms at C = 8/16/32/64), and fitting them drove
# vLLM's eta_compute_prefill to its bound.
FIT_CLOSED_LOOP_TTFT = True


def least_squares_fit(
    fun: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, max_nfev: int = 200
) -> tuple[np.ndarray, np.ndarray, int]:
    """Minimise ||fun(x)||^2 from x0 with scipy.optimize.least_squares (trust region
    reflective, 2-point Jacobian, Jacobian scaling). Returns (x, residuals at x, evaluations).

    scipy replaced the hand-written Levenberg-Marquardt of the 58-row fit: it offers a
    robust loss (LOSS) for the 1,000-row set's outliers, and its step control and scaling
    are better tested than ours."""
    res = optimize.least_squares(
        fun, np.asarray(x0, dtype=float), jac="2-point", x_scale="jac", max_nfev=max_nfev,
        ftol=1e-8, xtol=1e-8, gtol=1e-8, diff_step=1e-4, loss=LOSS, f_scale=LOSS_SCALE,
    )  # fmt: skip
    return res.x, res.fun, int(res.nfev)


@dataclass
class _Problem:
    """Residuals of one fit: which rows, which metrics, weights, and which params move."""

    design: Design
    base: Efficiency
    names: tuple[str, ...]
    targets: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]  # metric, pos, meas, w
    prior: Mapping[str, float] | None = None
    prior_weight: float = 0.0
    sigma: float = 1.0  # data residuals are log errors / sigma (matters with a prior only)
    evaluations: int = 0

    def eff(self, values: Mapping[str, float]) -> Efficiency:
        return self.base.model_copy(update=dict(values))

    def values(self, z: np.ndarray) -> dict[str, float]:
        return {n: _from_z(n, zi) for n, zi in zip(self.names, z, strict=True)}

    def residuals(self, z: np.ndarray) -> np.ndarray:
        self.evaluations += 1
        res = self.design.evaluate(self.eff(self.values(z)))
        parts = [
            np.sqrt(w) * np.log(res[PREDICTED[m]].to_numpy()[pos] / meas) / self.sigma
            for m, pos, meas, w in self.targets
        ]
        if self.prior is not None and self.prior_weight > 0:
            vals = self.values(z)
            parts.append(
                np.array(
                    [
                        math.sqrt(self.prior_weight)
                        * (vals[n] - self.prior[n])
                        / FAMILY_PRIOR_SCALE[n]
                        for n in self.names
                    ]
                )
            )
        return np.concatenate(parts) if parts else np.zeros(0)


def _targets(
    design: Design, weighting: str
) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    rows = design.rows
    counts = rows["source_key"].value_counts()
    out = []
    closed = rows["scenario_kind"].to_numpy() == "closed_loop"
    for m in METRICS:
        meas = rows[MEASURED[m]].to_numpy(dtype=float)
        seen = np.isfinite(meas) & (meas > 0)
        if m == "ttft" and not FIT_CLOSED_LOOP_TTFT:
            seen &= ~closed
        pos = np.flatnonzero(seen)
        if len(pos) == 0:
            continue
        if weighting == "sqrt_source":
            w = 1.0 / np.sqrt(counts[rows["source_key"].to_numpy()[pos]].to_numpy(float))
        else:
            w = np.ones(len(pos))
        out.append((m, pos, meas[pos], w))
    mean_w = np.mean(np.concatenate([t[3] for t in out])) if out else 1.0
    return [(m, pos, meas, w / mean_w) for m, pos, meas, w in out]  # mean weight 1


def _fit_mask(
    design: Design,
    engine_filter: Iterable[str] | str | None,
    row_filter: Callable[[pd.DataFrame], pd.Series] | None,
) -> np.ndarray:
    rows = design.rows
    mask = np.array(rows["skip_reason"] == "", dtype=bool)
    if engine_filter is not None:
        engines = {engine_filter} if isinstance(engine_filter, str) else set(engine_filter)
        mask = mask & np.array(rows["engine"].isin(engines), dtype=bool)
    if row_filter is not None:
        mask = mask & np.array(row_filter(rows), dtype=bool)
    return mask


def _jacobian_natural(problem: _Problem, values: Mapping[str, float]) -> np.ndarray:
    """d residual / d constant in natural units; one-sided steps of 1e-4 of each constant's
    range, pointing into the bounds (so constants at a bound get a finite derivative)."""
    names = problem.names
    r0 = problem.residuals(np.array([_to_z(n, values[n]) for n in names]))
    cols = []
    for name in names:
        lo, hi = BOUNDS[name]
        step = 1e-4 * (hi - lo)
        step = step if values[name] + step <= hi else -step
        moved = {**values, name: values[name] + step}
        z = np.array([_to_z(n, moved[n]) for n in names])
        cols.append((problem.residuals(z) - r0) / step)
    return np.column_stack(cols) if cols else np.zeros((len(r0), 0))


def _identified(problem: _Problem, values: Mapping[str, float]) -> list[bool]:
    """A constant is identified when moving it changes some data residual."""
    jac = _jacobian_natural(problem, values)
    n_data = sum(len(t[1]) for t in problem.targets)
    return [bool(np.max(np.abs(jac[:n_data, j]), initial=0.0) > 1e-9) for j in range(jac.shape[1])]


def _starts(names: Sequence[str], base: Efficiency, n_starts: int) -> list[np.ndarray]:
    z_base = np.array([_to_z(n, getattr(base, n)) for n in names])
    starts = [z_base]
    rng = np.random.default_rng(0)
    for _ in range(max(n_starts - 1, 0)):
        starts.append(rng.normal(0.0, 1.0, size=len(names)))
    return starts


def _solve(problem: _Problem, n_starts: int) -> tuple[np.ndarray, np.ndarray]:
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for z0 in _starts(problem.names, problem.base, n_starts):
        z, r, _ = least_squares_fit(problem.residuals, z0)
        cost = float(r @ r)
        if best is None or cost < best[0] - 1e-12:
            best = (cost, z, r)
    assert best is not None
    return best[1], best[2]


def _uncertainty(problem: _Problem, values: Mapping[str, float], r: np.ndarray) -> dict:
    """1-sigma of each fitted constant: s^2 (J^T J)^-1 with J the Jacobian of the (weighted)
    log residuals in natural units and s^2 the residual variance per degree of freedom
    (prior rows included, so family overrides get their posterior width). For a constant at
    a bound this is the width of the one-sided curvature only."""
    jac = _jacobian_natural(problem, values)
    dof = max(len(r) - len(values), 1)
    s2 = float(r @ r) / dof
    try:
        cov = s2 * np.linalg.pinv(jac.T @ jac)
        sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    except np.linalg.LinAlgError:  # pragma: no cover
        sd = np.full(len(values), np.nan)
    return {n: float(x) for n, x in zip(problem.names, sd, strict=True)}


def _fit_one(
    design: Design,
    base: Efficiency,
    params: Sequence[str],
    weighting: str,
    n_starts: int,
    prior: Mapping[str, float] | None = None,
    prior_weight: float = 0.0,
    sigma: float = 1.0,
    start: Efficiency | None = None,
) -> tuple[Efficiency, dict]:
    """Fit `params` of `base` on `design`; `start` (a warm start, e.g. the fit on all rows
    when cross-validating) replaces the starting point of the identified constants only."""
    if prior is not None:  # start at, and freeze unseen constants to, the prior's values
        base = base.model_copy(update={n: prior[n] for n in params})
    targets = _targets(design, weighting)
    problem = _Problem(design, base, tuple(params), targets)
    base_values = {n: getattr(base, n) for n in params}
    ident = _identified(problem, base_values) if targets else [False] * len(params)
    free = tuple(n for n, ok in zip(params, ident, strict=True) if ok)
    problem = _Problem(design, base, free, targets, prior, prior_weight, sigma)
    report: dict = {
        "rows": len(design.rows),
        "residuals": int(sum(len(t[1]) for t in targets)),
        "fitted": list(free),
        "not_identified": [n for n in params if n not in free],
    }
    if not free:
        return base, report
    r0 = problem.residuals(np.array([_to_z(n, getattr(base, n)) for n in free]))
    if start is not None:
        problem.base = base.model_copy(update={n: getattr(start, n) for n in free})
    z, r = _solve(problem, n_starts)
    values = problem.values(z)
    sd = _uncertainty(problem, values, r)
    n_data = report["residuals"]
    report.update(
        values=values,
        sd=sd,
        at_bound=[
            n
            for n, v in values.items()
            if min(abs(v - b) for b in BOUNDS[n]) < 1e-3 * (BOUNDS[n][1] - BOUNDS[n][0])
        ],
        rms_log_before=float(sigma * np.sqrt(np.mean(r0[:n_data] ** 2))),
        rms_log_after=float(sigma * np.sqrt(np.mean(r[:n_data] ** 2))),
        evaluations=problem.evaluations,
    )
    return problem.eff(values), report


def fit_profile(
    measurements: pd.DataFrame,
    catalog: Catalog,
    base_profile: EngineProfile,
    engine_filter: Iterable[str] | str | None = SERVER_ENGINES,
    params: Sequence[str] = FIT_PARAMS,
    families: Sequence[str] = (),
    min_family_rows: int = 8,
    family_prior_weight: float = 1.0,
    weighting: str = "sqrt_source",
    n_starts: int = 3,
    row_filter: Callable[[pd.DataFrame], pd.Series] | None = None,
    prior_profile: EngineProfile | None = None,
    prior_weight: float = 1.0,
    family_params: Sequence[str] | None = None,
    start: EngineProfile | None = None,
) -> tuple[EngineProfile, dict]:
    """Fit efficiency constants of `base_profile` on the usable rows of the chosen engines.

    Least squares on the log error of every measured metric (TPOT, TTFT, throughput, e2e),
    each row weighted 1/sqrt(rows of its source) so one big table cannot drown the others
    (weighting='equal' to switch off). Parameters move inside BOUNDS through a logistic
    transform; a parameter the rows cannot see (no residual changes with it, e.g.
    allreduce latency without tp > 1 rows) keeps its base value and is reported as not
    identified. Multi-start (base values + random starts) guards against the kinks of the
    roofline max().

    `families`: GPU families that get their own override when they have >= min_family_rows
    rows; an override is fitted on that family's rows only, with a Gaussian prior pulling
    it towards the default: residuals are log errors / s (s = the default fit's weighted rms
    log error, the noise level of these rows) and (constant - default) / FAMILY_PRIOR_SCALE
    times sqrt(family_prior_weight).

    `family_params`: the constants an override may change (default: `params`).

    `start`: a warm start (its default's constants start the default fit; the overrides
    start at the fitted default as always): cross-validation starts each fold at the fit on
    all rows, which cuts its evaluations several-fold on the 1,000-row set.

    `prior_profile`: partial pooling for engines whose rows leave some directions loose (the
    TensorRT-LLM tables have no small-batch decode, so eta_mem trades against the step
    overhead): the default is pulled towards `prior_profile.default` exactly as a family
    override is pulled towards the default (s from a first unpooled fit).

    Returns the profile (default fitted, overrides added, everything else from base) and a
    report: rows used, per-constant value and 1-sigma, constants at a bound, rms log error
    before and after, per family.
    """
    full = build_design(measurements, catalog, base_profile)
    design = full.subset(_fit_mask(full, engine_filter, row_filter))
    warm = None if start is None else start.default
    if prior_profile is None:
        default, rep = _fit_one(
            design, base_profile.default, params, weighting, n_starts, start=warm
        )
    else:
        _, first = _fit_one(design, base_profile.default, params, weighting, 1, start=warm)
        default, rep = _fit_one(
            design,
            base_profile.default,
            params,
            weighting,
            n_starts,
            {n: getattr(prior_profile.default, n) for n in params},
            prior_weight,
            max(first.get("rms_log_after", 0.1), 0.03),
            start=warm,
        )
        rep["prior"] = prior_profile.id
    report: dict = {
        "default": rep,
        "row_ids": design.rows["row_id"].tolist(),
        "sources": design.rows["source_key"].value_counts().to_dict(),
        "families": {},
    }
    fam_col = design.families()
    overrides: dict[str, Efficiency] = {}
    for fam in families:
        fam_mask = fam_col == fam
        if fam_mask.sum() < min_family_rows:
            report["families"][fam] = {"rows": int(fam_mask.sum()), "skipped": "too few rows"}
            continue
        fparams = tuple(family_params or params)
        prior = {n: getattr(default, n) for n in fparams}
        sigma = max(rep.get("rms_log_after", 0.1), 0.03)
        eff, fam_rep = _fit_one(
            design.subset(fam_mask),
            default,
            fparams,
            weighting,
            n_starts,
            prior,
            family_prior_weight,
            sigma,
        )
        overrides[fam] = eff
        report["families"][fam] = fam_rep
    profile = base_profile.model_copy(update={"default": default, "families": overrides})
    return profile, report


def identifiable(
    measurements: pd.DataFrame,
    catalog: Catalog,
    base_profile: EngineProfile,
    params: Sequence[str] = FIT_PARAMS,
    engine_filter: Iterable[str] | str | None = None,
) -> dict:
    """What `fit_profile` would see before it fits: the rows it would use, the measured
    values (rows x metrics) and the constants some residual moves with ('identified'; the
    others keep their base value). A fit of more constants than values is underdetermined:
    `planner calibrate` refuses it and names the constants to drop."""
    full = build_design(measurements, catalog, base_profile)
    design = full.subset(_fit_mask(full, engine_filter, None))
    targets = _targets(design, "equal")
    problem = _Problem(design, base_profile.default, tuple(params), targets)
    base_values = {n: getattr(base_profile.default, n) for n in params}
    ident = _identified(problem, base_values) if targets else [False] * len(params)
    return {
        "rows": len(design.rows),
        "values": int(sum(len(t[1]) for t in targets)),
        "identified": [n for n, ok in zip(params, ident, strict=True) if ok],
        "not_identified": [n for n, ok in zip(params, ident, strict=True) if not ok],
        "rejected": design.rejected,
    }


def support(
    measurements: pd.DataFrame,
    catalog: Catalog,
    profile: EngineProfile,
    params: Sequence[str] = FIT_PARAMS,
) -> dict[str, int]:
    """How many usable rows' predictions move with each constant at `profile`'s default
    values: a constant seen by one or two rows (eta_compute_decode when a single point is
    past the ridge) is fitted to those rows' noise."""
    full = build_design(measurements, catalog, profile)
    design = full.subset(_fit_mask(full, None, None))
    targets = _targets(design, "equal")
    if not targets:
        return dict.fromkeys(params, 0)
    problem = _Problem(design, profile.default, tuple(params), targets)
    jac = _jacobian_natural(problem, {n: getattr(profile.default, n) for n in params})
    pos = np.concatenate([t[1] for t in targets])
    return {n: len(set(pos[np.abs(jac[:, j]) > 1e-9])) for j, n in enumerate(params)}
