"""The documented limits of what planner accepts: physical ranges and input sizes.

Every number a user gives is finite and inside a range stated here (and in the message that
refuses it); every input file is a regular file no larger than its size limit. The ranges
are generous: an order of magnitude or more beyond any real deployment, tight enough that
the arithmetic (int64 counts, float costs, the MIPs) cannot overflow. README, "Limits".
"""

from __future__ import annotations

# ---- demand and request shapes ------------------------------------------------------------
MIN_REQUESTS_PER_S = 1e-6  # a class's arrival rate: below it (one a fortnight) is no demand
MAX_REQUESTS_PER_S = 1e6  # peak arrival rate of a scenario (and of every class), requests/s
MAX_TOKENS = 10_000_000  # input or output tokens of one request
MAX_LATENCY_MS = 86_400_000.0  # an SLA (TPOT, TTFT) of at most one day
MAX_JOB_REQUESTS = 10**13  # requests of one batch job (issue #12)
MAX_JOB_TOKENS = 1e16  # tokens of one batch job
MAX_JOB_HOURS = 87_600.0  # a batch job's deadline: ten years
MAX_CLASSES = 64  # request classes of one scenario: evaluation is linear in them (README)

# ---- the deployment space ----------------------------------------------------------------
MAX_TP = 1024  # tensor-parallel degree
MAX_BATCH = 1_000_000  # concurrent sequences of one replica
MAX_GPU_COUNT = 10_000_000  # inventory, max_gpus
MAX_REPLICAS = 1_000_000  # min_replicas
MAX_TIME_LIMIT_S = 3600.0  # solver.time_limit_s and --time-limit
MAX_LIST = 4096  # entries of a list of ids, degrees or batch sizes in a scenario

# ---- money ------------------------------------------------------------------------------
MIN_USD = 0.0001  # a price, purchase or budget: smaller amounts are not money but noise
MAX_USD_PER_GPU_HOUR = 10_000.0  # a price per GPU-hour
MAX_USD_PER_1M_TOKENS = 10_000.0  # an API price per million tokens
MAX_USD_PER_MONTH = 1e12  # a monthly budget
MAX_USD_PER_GPU = 10_000_000.0  # a purchase price per GPU
MAX_USD_PER_KWH = 5.0

# ---- hardware and model entries ---------------------------------------------------------
MAX_MEMORY_GB = 100_000.0  # per GPU
MAX_BANDWIDTH_GB_PER_S = 1_000_000.0  # HBM or scale-up link, per GPU
MAX_TFLOPS = 1_000_000.0  # dense peak per GPU
MAX_WATTS = 100_000.0
MAX_DOMAIN_GPUS = 100_000  # GPUs of one scale-up domain
MAX_MODEL_WIDTH = 10_000_000  # hidden, intermediate, head and LoRA sizes of a model
MAX_MODEL_COUNT = 100_000  # layers, heads, experts of a model
MAX_VOCAB = 100_000_000
MAX_CONTEXT = 1_000_000_000  # a model's max_position_embeddings, tokens
MAX_PARAMS_B = 1_000_000.0  # stated parameter count, billions

# ---- measurements -------------------------------------------------------------------------
MAX_METRIC_MS = 1e9  # a measured TPOT, TTFT or end-to-end latency
MAX_THROUGHPUT = 1e9  # a measured tokens/s
MAX_MEASUREMENT_ROWS = 20_000  # rows of all `validate` / `calibrate` inputs together

# ---- input files ----------------------------------------------------------------------------
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024  # a scenario, catalog entry or config.json
MAX_DATA_BYTES = 64 * 1024 * 1024  # a demand CSV or a measurements CSV / JSON
MAX_NESTING = 64  # levels of nested lists and mappings in a YAML or JSON document
MAX_NODES = 1_000_000  # values of a document once its YAML aliases are expanded
