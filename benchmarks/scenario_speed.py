"""CPU seconds of `planner solve` on every shipped single-period scenario, with and without the
workbook (issue 16), each also as a ratio to the CPU time of `python -c "import numpy"`
measured in the same run, so that figures compare across machines.

    python benchmarks/scenario_speed.py [repeats]
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu(args: list[str]) -> float:
    """User + system CPU seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def single_period() -> list[Path]:
    """Shipped scenarios without a `finance:` section (no plan over time)."""
    return [
        p
        for p in sorted((ROOT / "scenarios").glob("*.yaml"))
        if "\nfinance:" not in p.read_text(encoding="utf-8")
    ]


def main(repeats: str = "1") -> None:
    n = int(repeats)
    unit = min(cpu([sys.executable, "-c", "import numpy"]) for _ in range(n))
    solve = [sys.executable, "-m", "planner.cli", "solve"]
    print(f'baseline: python -c "import numpy" = {unit:.3f} CPU s (best of {n})')
    print("| scenario | no export CPU s | x baseline | workbook CPU s | x baseline |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as out:
        for path in single_period():
            bare = min(cpu([*solve, str(path), "--no-export"]) for _ in range(n))
            book = str(Path(out) / f"{path.stem}.xlsx")
            full = min(cpu([*solve, str(path), "-o", book]) for _ in range(n))
            print(
                f"| {path.stem} | {bare:.2f} | {bare / unit:.1f} | {full:.2f} | "
                f"{full / unit:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main(*sys.argv[1:])
