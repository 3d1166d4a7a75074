"""Which speculative-decoding settings a plan or an estimate evaluates (issue #11).

`off` is plain decoding; `mtp` the model's own multi-token-prediction module; `draft` a
smaller draft model; `auto` is off plus every setting data/speculative.yaml lists for the
model. k and the acceptance come from the scenario (or the command line) where given, else
from that file's published default, and each default used is listed as an assumption.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.errors import InputError
from planner.inputs.catalog import Catalog
from planner.inputs.speculative import spec_defaults
from planner.perf.speculative import OFF, SpecOption, draft_option, mtp_option
from planner.schema.model import Model
from planner.schema.speculative import SpecDefault


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
        raise InputError(
            f"{req.where}: {mode} for {model.id} needs spec_tokens and spec_acceptance "
            f"(data/speculative.yaml has no published default for it; it lists: {listed})"
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
    if mode == "mtp":
        if known is None and "mtp" not in published(model.id):
            raise InputError(
                f"{req.where}: mtp: {model.id} has no MTP module in data/speculative.yaml "
                f"(models with one: {', '.join(mtp_models())}); use draft"
            )
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
