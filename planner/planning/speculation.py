"""Which speculative-decoding settings a plan or an estimate evaluates (issue #11).

`off` is plain decoding; `mtp` a one-layer head on the target (its own multi-token-prediction
module, or, given k and acceptance, an EAGLE-style head: the same physics); `draft` a
smaller draft model; `auto` is off plus every setting data/speculative.yaml lists for the
model. k and the acceptance come from the scenario (or the command line) where given, else
from that file's published default, and each default used is listed as an assumption.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.errors import InputError
from planner.fleet.selection import fleet_problem, offered_capacity, prune_dominated
from planner.fleet.steady import solve_fleet
from planner.inputs.catalog import Catalog
from planner.inputs.speculative import spec_defaults
from planner.perf.speculative import OFF, SpecOption, draft_option, mtp_option
from planner.perf.table import values
from planner.planning.plan import Plan
from planner.schema.model import Model
from planner.schema.scenario import Scenario
from planner.schema.speculative import SpecDefault
from planner.units import HOURS_PER_MONTH


@dataclass(frozen=True)
class SpecRequest:
    """What was asked: modes, and overrides of k, acceptance and the draft model."""

    modes: Sequence[str] = ("off",)
    spec_tokens: int | None = None
    acceptance: float | None = None
    draft_model: str | None = None
    where: str = "search.speculative"


def published(model_id: str) -> dict[str, SpecDefault]:
    """The defaults file's settings for one model, by mode."""
    return {d.mode: d for d in spec_defaults().models.get(model_id, [])}


def _default(model: Model, mode: str, req: SpecRequest) -> SpecDefault | None:
    known = published(model.id).get(mode)
    if known is None and (req.spec_tokens is None or req.acceptance is None):
        listed = ", ".join(published(model.id)) or "none"
        hint = f" (models with an MTP module: {', '.join(mtp_models())})" if mode == "mtp" else ""
        raise InputError(
            f"{req.where}: {mode} for {model.id} needs spec_tokens and spec_acceptance "
            f"(data/speculative.yaml has no published default for it; it lists: {listed})"
            f"{hint}"
        )
    return known


def _draft_id(model: Model, req: SpecRequest, known: SpecDefault | None) -> str:
    draft = req.draft_model or (known.draft_model if known else None)
    if draft is None:
        raise InputError(f"{req.where}: draft for {model.id} needs a draft_model (catalog id)")
    return draft


def _option(model: Model, mode: str, req: SpecRequest, catalog: Catalog) -> SpecOption:
    known = _default(model, mode, req)
    k = req.spec_tokens if req.spec_tokens is not None else known.spec_tokens  # type: ignore[union-attr]
    a = req.acceptance if req.acceptance is not None else known.acceptance  # type: ignore[union-attr]
    if mode == "mtp":  # the model's MTP module, or (k and a given) an EAGLE-style head
        return mtp_option(model, k, a)
    draft = catalog.model(_draft_id(model, req, known))
    if draft.vocab_size != model.vocab_size:
        raise InputError(
            f"{req.where}: draft model {draft.id} has a {draft.vocab_size}-token vocabulary, "
            f"{model.id} {model.vocab_size}: a draft must share the target's tokenizer"
        )
    return draft_option(draft, k, a)


def mtp_models() -> list[str]:
    """Models the defaults file lists with an MTP module."""
    return sorted(
        m for m, rows in spec_defaults().models.items() if any(r.mode == "mtp" for r in rows)
    )


def spec_options(model: Model, req: SpecRequest, catalog: Catalog) -> list[SpecOption]:
    """The grid's speculation options, off first; auto adds every published setting."""
    modes: list[str] = []
    for m in req.modes:
        add = ["off", *published(model.id)] if m == "auto" else [m]
        modes += [x for x in add if x not in modes]
    return [OFF if m == "off" else _option(model, m, req, catalog) for m in modes]


def _spec_rows(scenario: Scenario, model: Model) -> list[tuple]:
    """k, acceptance and drafter of every speculation setting the search allows."""
    s, rows = scenario.search, []
    modes = {m for c in s.speculative for m in (published(model.id) if c == "auto" else [c])}
    for mode in sorted(modes - {"off"}):
        known = published(model.id).get(mode)
        src = known.source if known else "scenario file"
        date = known.as_of if known else "scenario"
        k = s.spec_tokens if s.spec_tokens is not None else known.spec_tokens  # type: ignore[union-attr]
        a = s.spec_acceptance if s.spec_acceptance is not None else known.acceptance  # type: ignore[union-attr]
        k_src = "scenario search.spec_tokens" if s.spec_tokens is not None else src
        a_src = "scenario search.spec_acceptance" if s.spec_acceptance is not None else src
        item = f"{model.id}/{mode}"
        rows += [
            ("speculative", item, "draft tokens per step k", k, "tokens", k_src, date, True),
            ("speculative", item, "per-token acceptance a", a, "fraction", a_src, date, True),
        ]
        if mode == "draft":
            draft = s.draft_model or (known.draft_model if known else "")
            rows.append(("speculative", item, "draft model", draft, "id", src, date, True))
    return rows


def _prefix_rows(scenario: Scenario, catalog: Catalog, model: Model) -> list[tuple]:
    """The cached prefix per class, how it is modelled, and how each API bills it."""
    cached = {n: p for n, p in scenario.workload.prefix_cached().items() if p > 0}
    if not cached:
        return []
    rows: list[tuple] = [
        ("prefix cache", n, "prompt tokens served from cache", p, "tokens", "scenario file",
         "scenario", True)
        for n, p in cached.items()
    ]  # fmt: skip
    rows.append(
        ("prefix cache", "model", "shared prefix", "one copy per replica", "", PREFIX_RULE,
         "planner", True)
    )  # fmt: skip
    for provider, offer in catalog.api_offerings(model.id):
        price = offer.cached_input_usd_per_1m
        value = price if price is not None else "not listed: billed at the input price"
        rows.append(
            ("prefix cache", f"{provider.name}/{offer.provider_model_id}", "cached input price",
             value, "$/1M tokens", offer.source, offer.as_of, price is None)
        )  # fmt: skip
    return rows


PREFIX_RULE = (
    "assumption: every request of the class shares one cached prefix (a system prompt or "
    "corpus), held once per replica (vLLM automatic prefix caching, SGLang RadixAttention "
    "share its KV pages); prefill computes only the new tokens; decode still reads the full "
    "context per sequence; the cache is always warm (no eviction, no first-fill cost)"
)


def assumption_rows(scenario: Scenario, catalog: Catalog, model: Model) -> list[tuple]:
    """The Assumptions-table rows of speculation and the prefix cache (issue #11)."""
    return _spec_rows(scenario, model) + _prefix_rows(scenario, catalog, model)


def speculation_note(scenario: Scenario, result: Plan) -> str | None:
    """What speculative decoding is worth to this plan: the fleet re-solved over the same
    evaluated candidates with speculation off (None when the search allowed only off)."""
    rows = result.candidate_table
    off = values(rows, "speculative") == "off"
    if off.all():
        return None
    ok = values(rows, "sla_ok", bool) & off
    names = [c.name for c in result.classes]
    offered = prune_dominated(offered_capacity(rows[ok], names))
    c = scenario.constraints
    budget = c.max_monthly_budget_usd / HOURS_PER_MONTH if c.max_monthly_budget_usd else None
    demand = [cl.requests_per_second for cl in result.classes]
    inventory = dict(scenario.hardware.inventory)
    problem = fleet_problem(offered, demand, inventory, c.max_gpus, budget, c.min_replicas)
    plain = solve_fleet(problem, result.solver)
    used = sorted({f"{d.speculative} on {d.gpu}" for d in result.fleet.deployments})
    chosen = [u for u in used if not u.startswith("off ")]
    verdict = f"chosen ({', '.join(chosen)})" if chosen else "not chosen: it does not pay here"
    if plain.status == "infeasible":
        return f"speculative decoding: {verdict}; without it no fleet meets the SLA"
    cost = float(np.dot(problem.cost_per_hour, plain.replicas)) * HOURS_PER_MONTH
    saving = result.fleet.monthly_cost_usd - cost
    return (
        f"speculative decoding: {verdict}; the best fleet without it costs ${cost:,.0f} a "
        f"month (${-saving:,.0f} more)"
    )
