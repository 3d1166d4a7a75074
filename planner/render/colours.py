"""Series colours every chart uses: distinct for any number of series, never repeating."""

from __future__ import annotations

import colorsys

# matplotlib's tab10 then the lighter half of tab20: 20 well-separated colours
PALETTE = (
    "1F77B4", "FF7F0E", "2CA02C", "D62728", "9467BD",
    "8C564B", "E377C2", "7F7F7F", "BCBD22", "17BECF",
    "AEC7E8", "FFBB78", "98DF8A", "FF9896", "C5B0D5",
    "C49C94", "F7B6D2", "C7C7C7", "DBDB8D", "9EDAE5",
)  # fmt: skip
GOLDEN = 0.618033988749895


def colour(k: int) -> str:
    """The k-th series colour as hex RGB: the palette, then hues spaced by the golden ratio
    (distinct for every k) at two lightnesses."""
    if k < len(PALETTE):
        return PALETTE[k]
    n = k - len(PALETTE)
    hue = (0.07 + n * GOLDEN) % 1.0
    light = 0.42 if n % 2 == 0 else 0.62
    r, g, b = colorsys.hls_to_rgb(hue, light, 0.75)
    return f"{round(r * 255):02X}{round(g * 255):02X}{round(b * 255):02X}"
