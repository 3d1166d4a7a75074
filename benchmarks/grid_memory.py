"""Peak memory of evaluating one big grid (issue 16): every GPU x tp 1/2/4/8 x every
quantization x batch 1..1024 x `shapes` request shapes for one model, built and evaluated
once. Prints the rows, the table's own bytes, and the process's peak RSS; run it under
`/usr/bin/time -f %M` for the same figure from outside. Past the six listed shapes, more
are made up (prompt 128 x 2^k, answer 64 x 2^j): 5 shapes are 2.67M rows, 19 are 10.2M.

    python benchmarks/grid_memory.py [model-id] [shapes]
"""

from __future__ import annotations

import resource
import sys
import time

from planner.inputs.catalog import load_catalog
from planner.perf.candidates import GridSpec, Price, build_grid
from planner.perf.evaluate import evaluate

SHAPES = [(2048, 256), (512, 128), (8192, 512), (1024, 1024), (4096, 256), (256, 64)]


def shapes_of(n: int) -> list[tuple[int, int]]:
    """The first `n` request shapes: the listed six, then made-up ones."""
    extra = [(128 * 2**k, 64 * 2**j) for k in range(7) for j in range(5)]
    return (SHAPES + [s for s in extra if s not in SHAPES])[:n]


def main(model_id: str = "llama-3.1-70b", shapes: str = "1") -> None:
    catalog = load_catalog()
    model = catalog.model(model_id)
    gpus = list(catalog.gpus.values())
    spec = GridSpec(
        gpus=gpus,
        quants=list(catalog.quants.values()),
        tps=[1, 2, 4, 8],
        batches=list(range(1, 1025)),
        shapes=shapes_of(int(shapes)),
        prices={g.id: Price(1.0, "benchmark") for g in gpus},
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.process_time()
    grid, _ = build_grid(model, spec, catalog.engine("vllm"))
    out = evaluate(model, grid, 0.8)
    cpu = time.process_time() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    table = out.memory_usage(deep=True).sum() / 2**20
    print(f"{model_id}: {len(out):,} rows x {out.shape[1]} columns, {cpu:.1f} CPU s")
    print(f"  table {table:,.0f} MiB ({table * 2**20 / len(out):.0f} B/row)")
    per_row = out.memory_usage(deep=True, index=False) / len(out)
    by = per_row.groupby(out.dtypes.astype(str).to_numpy()).agg(["count", "sum"])
    parts = [f"{d} {n:.0f} x {b / n:.0f} B" for d, (n, b) in by.iterrows()]
    print("  by storage: " + ", ".join(parts))
    print(f"  peak RSS {peak:,.0f} MiB (after imports and catalog: {before:,.0f} MiB)")


if __name__ == "__main__":
    main(*sys.argv[1:])
