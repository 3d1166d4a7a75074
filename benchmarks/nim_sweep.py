"""Predicted against measured for the NVIDIA NIM Llama-3.3-70B sweep on 2x H100 80GB, fp8 TP2,
5000 input / 500 output tokens, concurrency 1 to 100 (held out: never fitted).

Source: https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance (NIM container
Llama-3.3-70b-Instruct version 1.8.0, AIPerf closed loop at each concurrency; TTFT, ITL and
output throughput as published). NIM serves this profile with TensorRT-LLM, so the trtllm
engine profile predicts it: `planner estimate --concurrency C`.

    python benchmarks/nim_sweep.py
"""

from __future__ import annotations

import json
import subprocess
import sys

# concurrency: (TTFT ms, ITL ms, output tokens/s), NIM 1.8.0 table
MEASURED = {
    1: (406.77, 18.58, 51.67),
    5: (546.7, 21.83, 218.48),
    25: (688.69, 38.75, 623.4),
    50: (834.51, 59.73, 814.37),
    100: (7996.25, 92.91, 917.26),
}
ARGS = ["--model", "llama-3.3-70b", "--gpu", "h100-sxm", "--tp", "2", "--quant", "fp8"]
SHAPE = ["--input-len", "5000", "--output-len", "500", "--engine", "trtllm", "--json"]


def predict(concurrency: int) -> dict:
    """One `planner estimate --concurrency C` as JSON."""
    cmd = [sys.executable, "-m", "planner", "estimate", *ARGS, "--concurrency"]
    out = subprocess.run([*cmd, str(concurrency), *SHAPE], capture_output=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    """Print the table: predicted / measured and the error of each metric."""
    print("| C | TTFT pred / meas (ms) | TPOT pred / meas (ms) | tok/s pred / meas | in flight |")
    print("|---|---|---|---|---|")
    for c, (ttft, itl, tput) in MEASURED.items():
        d = predict(c)
        cells = [
            f"{d['ttft_ms']:.0f} / {ttft:.0f} ({d['ttft_ms'] / ttft - 1:+.0%})",
            f"{d['tpot_ms']:.1f} / {itl:.1f} ({d['tpot_ms'] / itl - 1:+.0%})",
            f"{d['throughput_tok_s']:.0f} / {tput:.0f} ({d['throughput_tok_s'] / tput - 1:+.0%})",
        ]
        print(f"| {c} | " + " | ".join(cells) + f" | {d['load']['batch_in_flight']} |")


if __name__ == "__main__":
    main()
