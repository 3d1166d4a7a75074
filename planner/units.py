"""Unit constants and conversions: the one home of 1e9 and 1e12.

GB means 1e9 bytes and TB/s means 1e12 bytes per second, as vendors label them.
"""

BYTES_PER_GB = 1e9
FLOPS_PER_TFLOPS = 1e12
MS_PER_S = 1e3
US_PER_S = 1e6
HOURS_PER_MONTH = 730.0  # 8760 h / 12, the convention cloud price pages use
SECONDS_PER_HOUR = 3600.0
TOKENS_PER_1K = 1e3
TOKENS_PER_1M = 1e6
