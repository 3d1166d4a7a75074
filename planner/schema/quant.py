"""Quantization schemes: bytes per weight, the dtype the math runs in, KV dtypes, GPUs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from planner.schema.common import Provenance, Strict
from planner.schema.hardware import ComputeDtype

KvDtype = Literal["bf16", "fp16", "fp8"]

KV_BYTES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0}


class Quant(Strict):
    """One weight-quantization scheme.

    `compute_dtypes` is ordered by preference: the first one a GPU has a dense peak for is
    what the matrix math runs at (fp8 weights on an A100 fall back to 16-bit, W8A16).
    """

    id: str
    name: str
    weight_bytes_per_param: float = Field(gt=0, le=4, description="scales included")
    embedding_bytes_per_param: float = Field(
        default=2.0, gt=0, description="embedding and LM head usually stay 16-bit"
    )
    compute_dtypes: tuple[ComputeDtype, ...] = Field(min_length=1)
    kv_dtypes: tuple[KvDtype, ...] = Field(min_length=1)
    default_kv_dtype: KvDtype
    gpus: tuple[str, ...] | Literal["all"] = "all"
    quality_note: str | None = None
    provenance: Provenance
