"""Quantization schemes: bytes per weight, the dtype the math runs in, KV dtypes, GPUs."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from planner.schema.bounded import EntryId, NoRepeats, between
from planner.schema.common import Provenance, Strict
from planner.schema.hardware import ComputeDtype

KvDtype = Literal["bf16", "fp16", "fp8"]

KV_BYTES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0}


class Quant(Strict):
    """One weight-quantization scheme.

    `compute_dtypes` is ordered by preference: the first one a GPU has a dense peak for is
    what the matrix math runs at (fp8 weights on an A100 fall back to 16-bit, W8A16).
    """

    id: EntryId
    name: str
    weight_bytes_per_param: Annotated[
        float, between(0, 4, unit="bytes", low_open=True), Field(description="scales included")
    ]
    embedding_bytes_per_param: Annotated[
        float,
        between(0, 8, unit="bytes", low_open=True),
        Field(description="embedding and LM head usually stay 16-bit"),
    ] = 2.0
    compute_dtypes: Annotated[tuple[ComputeDtype, ...], Field(min_length=1), NoRepeats]
    kv_dtypes: Annotated[tuple[KvDtype, ...], Field(min_length=1), NoRepeats]
    default_kv_dtype: KvDtype
    gpus: Annotated[tuple[str, ...], NoRepeats] | Literal["all"] = "all"
    quality_note: str | None = None
    provenance: Provenance
