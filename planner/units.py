"""Unit constants and conversions: the one home of 1e9 and 1e12.

GB means 1e9 bytes and TB/s means 1e12 bytes per second, as vendors label them.
"""

BYTES_PER_GB = 1e9
BYTES_PER_GIB = 2**30
FLOPS_PER_TFLOPS = 1e12
BYTES_PER_S_PER_GB_PER_S = 1e9
MS_PER_S = 1e3
US_PER_S = 1e6
HOURS_PER_MONTH = 730.0  # 8760 h / 12, the convention cloud price pages use
SECONDS_PER_HOUR = 3600.0
TOKENS_PER_1K = 1e3
TOKENS_PER_1M = 1e6


def gb_to_bytes(gb: float) -> float:
    """Decimal gigabytes to bytes."""
    return gb * BYTES_PER_GB


def bytes_to_gb(n_bytes: float) -> float:
    """Bytes to decimal gigabytes."""
    return n_bytes / BYTES_PER_GB


def tflops_to_flops(tflops: float) -> float:
    """TFLOPS to FLOP/s."""
    return tflops * FLOPS_PER_TFLOPS


def s_to_ms(seconds: float) -> float:
    """Seconds to milliseconds."""
    return seconds * MS_PER_S


def ms_to_s(ms: float) -> float:
    """Milliseconds to seconds."""
    return ms / MS_PER_S


def us_to_s(us: float) -> float:
    """Microseconds to seconds."""
    return us / US_PER_S
