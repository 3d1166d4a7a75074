"""A GPU family's constants carried from other engines into an engine without rows of it.

Issue #10, leaving a GPU family out. Much of what differs between Hopper and Blackwell is the
hardware and the kernels the engines share (cuBLAS/CUTLASS GEMMs, FlashAttention/FlashInfer,
NCCL), so when engine X has no (or too few) rows of family F but other engines have an
override fitted on their rows of F, those overrides say more about F than X's own default.

`pooled_family` averages the donors' F overrides in the fit's z-space (the logistic transform
of each constant inside its BOUNDS: a mean there stays inside the bounds and treats 0.30 ->
0.35 and 0.90 -> 0.95 alike). `transfer_family` gives X an F override: X's default with the
pooled constants in place of its own. Only the constants a family override may change
(`params`, the recipe's family params) move; X's per-request latency, wave share, memory
budget and scheduler stay X's.

Whole constants are transferred, not offsets: the donors' offset between families (z(F) -
z(G)) added to X's own G constants was tried and is ill-conditioned where a donor sits at a
bound (TensorRT-LLM's Hopper step_overhead_ms of 0.0 made an offset of ~20 ms for SGLang),
and a precision-weighted mix of X's own and the donors' constant, one constant at a time,
breaks the trade between constants within one fit (vLLM's eta_mem 0.95 with a 2.9 ms step
cost): SGLang 22 / 37 / 18% and vLLM 11 / 32 / 10% (median TPOT / TTFT / throughput), worse
than each engine's better choice (benchmarks/results/s23-family-transfer-prototypes.txt).

When to transfer (`needs_transfer`): X has no override of F and the rows X's own constants
were fitted on cover fewer than `min_models` models. Constants fitted on one model's rows
are that model's as much as the engine's (SGLang's Blackwell rows are all DeepSeek-V3; in
session 23 its 28 gave eta_mem 0.38 and eta_compute_prefill at its 0.3 bound, and Hopper's
dense Qwen3-32B was predicted 1.8x slow; 9 are left since aic.AIC_CONTRADICTED_QUANT); an
engine fitted on several models keeps its own default, which
for vLLM is better than the donors' (TPOT 6% own, 10-24% transferred).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from planner.calibration.fit import _from_z, _to_z
from planner.schema.engine import EngineProfile

# An engine's constants fitted on fewer models than this are not trusted for a family it has
# no rows of when other engines have that family (needs_transfer).
TRANSFER_MIN_MODELS = 2


def pooled_family(
    donors: Iterable[EngineProfile],
    family: str,
    params: Sequence[str],
    donor_params: Mapping[str, Sequence[str]] | None = None,
) -> tuple[dict[str, float], list[str]]:
    """The mean of the donors' `family` overrides in z-space, per constant of `params`, and
    the ids of the donors that gave one. `donor_params` (donor id -> the constants its
    recipe fits per family): a donor gives only those (a constant it holds at a start value,
    vLLM's prefill_overhead_ms or TensorRT-LLM's moe_layer_us of 0, says nothing about the
    family); a constant no donor gives is left out of the result."""
    having = [d for d in donors if family in d.families]
    pooled: dict[str, float] = {}
    used: set[str] = set()
    for n in params:
        givers = [d for d in having if donor_params is None or n in donor_params.get(d.id, params)]
        if givers:
            z = float(np.mean([_to_z(n, getattr(d.families[family], n)) for d in givers]))
            pooled[n] = _from_z(n, z)
            used.update(d.id for d in givers)
    return pooled, sorted(used)


def needs_transfer(profile: EngineProfile, family: str, n_models: int, min_models: int) -> bool:
    """Whether `profile` (fitted on rows of `n_models` models) should take `family`'s
    constants from other engines: it has no override of its own and too few models."""
    return family not in profile.families and n_models < min_models


def transfer_family(
    profile: EngineProfile,
    family: str,
    donors: Mapping[str, EngineProfile],
    params: Sequence[str],
    donor_params: Mapping[str, Sequence[str]] | None = None,
) -> tuple[EngineProfile, str]:
    """`profile` with an override of `family`: its default with the donors' pooled constants
    of `params` (donors with the profile's own id are ignored; `donor_params` as in
    `pooled_family`). Returns the profile and a note naming the constants and the donors
    ('' and the profile unchanged when no donor has the family)."""
    others = [d for k, d in donors.items() if k != profile.id and d.id != profile.id]
    pooled, used = pooled_family(others, family, params, donor_params)
    if not pooled:
        return profile, ""
    override = profile.default.model_copy(update=pooled)
    families = {**profile.families, family: override}
    note = f"{family} constants ({', '.join(pooled)}) pooled from {', '.join(used)}"
    return profile.model_copy(update={"families": families}), note
