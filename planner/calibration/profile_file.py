"""Engine profile YAML: the document, its text and the file (`write_profile` is the only
function of planner.calibration that writes a file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planner.schema.engine import ChunkTier, Efficiency, EngineProfile
from planner.writing import write_text_atomic


def _round_eff(eff: Efficiency) -> dict[str, float | int | bool]:
    """The constants as written to YAML: efficiencies and shares to 3 digits, the rest to 2."""
    out: dict[str, float | int | bool] = {}
    for name, value in eff.model_dump().items():
        if value is None:  # an optional constant not given (draft_forward_ms): left out
            continue
        if isinstance(value, bool | int):
            out[name] = value
            continue
        fraction = name.startswith("eta") or name in ("mem_util", "benchmark_wave_share")
        digits = 3 if fraction else 2
        out[name] = round(float(value), digits)
    return out


def _tier(tier: ChunkTier) -> dict:
    """One prefill-chunk tier as YAML: families as a list, defaults left out."""
    out: dict = {"min_memory_gib": tier.min_memory_gib, "tokens": tier.tokens}
    if tier.except_families:
        out["except_families"] = list(tier.except_families)
    if tier.max_num_seqs is not None:
        out["max_num_seqs"] = tier.max_num_seqs
    return out


def profile_document(profile: EngineProfile) -> dict:
    """The YAML document of an engine profile (schema of planner/schema/engine.py)."""
    doc: dict[str, Any] = {
        "id": profile.id,
        "name": profile.name,
        "source": profile.source,
        "as_of": profile.as_of,
        "notes": profile.notes,
        "max_num_seqs": profile.max_num_seqs,
        "fp8_kv_with_fp8_checkpoint": profile.fp8_kv_with_fp8_checkpoint,
        "default": _round_eff(profile.default),
        "families": {k: _round_eff(v) for k, v in sorted(profile.families.items())},
        # issue #10: the engine's scheduler (not fitted)
        "mixes_prefill": profile.mixes_prefill,
        "prefill_chunk_tiers": [_tier(tier) for tier in profile.prefill_chunk_tiers],
    }
    if not profile.chunked_prefill:  # issue #10 (s39): whole prompts a pass
        doc["chunked_prefill"] = False
    if profile.gpu_families:  # the hardware the engine documents (not fitted)
        doc["gpu_families"] = list(profile.gpu_families)
        doc["gpu_families_source"] = profile.gpu_families_source
    if profile.quants:  # the checkpoint formats the engine documents loading (not fitted)
        doc["quants"] = list(profile.quants)
        doc["quants_source"] = profile.quants_source
    if profile.accuracy is not None:  # issue #10: its measured error (accuracy.py --record)
        doc["accuracy"] = profile.accuracy.model_dump(mode="json", exclude_none=True)
    EngineProfile.model_validate(doc)
    return doc


def profile_yaml(profile: EngineProfile, header: str = "") -> str:
    """The text of an engine profile YAML file: `header` as a comment block, then the
    document of `profile_document`."""
    import yaml

    text = yaml.safe_dump(profile_document(profile), sort_keys=False, width=100, allow_unicode=True)
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return comment + text


def write_profile(profile: EngineProfile, path: str | Path, header: str = "") -> Path:
    """Write an engine profile YAML (the only function here that writes a file)."""
    return write_text_atomic(Path(path), profile_yaml(profile, header))
