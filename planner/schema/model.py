"""Model architectures (the fields of MODEL.md) and parameter counts computed from them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from planner.schema import limits
from planner.schema.bounded import EntryId, Flag, between, whole
from planner.schema.common import Provenance, Strict

Width = Annotated[int, whole(0, limits.MAX_MODEL_WIDTH, low_open=True)]
Count = Annotated[int, whole(0, limits.MAX_MODEL_COUNT, low_open=True)]
CountOrZero = Annotated[int, whole(0, limits.MAX_MODEL_COUNT)]
Billions = Annotated[float, between(0, limits.MAX_PARAMS_B, unit="billion", low_open=True)]


class MoeSpec(Strict):
    """Mixture of experts: routed experts, top-k, shared experts and dense leading layers."""

    n_routed_experts: Annotated[int, whole(2, limits.MAX_MODEL_COUNT)]
    num_experts_per_tok: Count
    moe_intermediate_size: Width
    n_shared_experts: CountOrZero = 0
    shared_intermediate_size: Width | None = None
    first_k_dense_layers: CountOrZero = 0
    router_bias: Flag = False
    expert_bias: Flag = False

    @model_validator(mode="after")
    def _k_within_e(self) -> MoeSpec:
        if self.num_experts_per_tok > self.n_routed_experts:
            raise ValueError("num_experts_per_tok cannot exceed n_routed_experts")
        return self


class MlaSpec(Strict):
    """Multi-head latent attention (DeepSeek-V3): the KV cache holds a latent, not heads."""

    q_lora_rank: Width | None = None
    kv_lora_rank: Width
    qk_nope_head_dim: Width
    qk_rope_head_dim: Width
    v_head_dim: Width


class SlidingWindowSpec(Strict):
    """Layers that attend to the last `window` tokens only; their KV stops growing there."""

    window: Annotated[int, whole(0, limits.MAX_CONTEXT, unit="tokens", low_open=True)]
    n_sliding_layers: CountOrZero


class Model(Strict):
    """A decoder-only transformer as its config.json describes it."""

    id: EntryId
    name: str
    hf_repo: str | None = None
    family: str
    hidden_size: Width
    intermediate_size: Annotated[Width, Field(description="dense FFN size (gated: 3 matrices)")]
    num_hidden_layers: Count
    num_attention_heads: Count
    num_key_value_heads: Count
    head_dim: Width
    vocab_size: Annotated[int, whole(0, limits.MAX_VOCAB, low_open=True)]
    max_position_embeddings: Annotated[
        int, whole(0, limits.MAX_CONTEXT, unit="tokens", low_open=True)
    ]
    tie_word_embeddings: Flag = False
    qkv_bias: Flag = False
    attention_output_bias: Flag = False
    attention_sinks: Flag = False
    qk_norm: Flag = False
    norms_per_layer: Annotated[int, whole(0, 16)] = 2
    gated_ffn: Flag = True
    moe: MoeSpec | None = None
    mla: MlaSpec | None = None
    sliding_window: SlidingWindowSpec | None = None
    stated_total_params_b: Billions
    stated_active_params_b: Billions | None = None
    provenance: Provenance

    @model_validator(mode="after")
    def _heads_consistent(self) -> Model:
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) must be a multiple of "
                f"num_key_value_heads ({self.num_key_value_heads})"
            )
        if self.sliding_window and self.sliding_window.n_sliding_layers > self.num_hidden_layers:
            raise ValueError("sliding_window.n_sliding_layers exceeds num_hidden_layers")
        if self.moe and self.moe.first_k_dense_layers > self.num_hidden_layers:
            raise ValueError("moe.first_k_dense_layers exceeds num_hidden_layers")
        return self

    # ---- structure -------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    @property
    def n_moe_layers(self) -> int:
        return 0 if self.moe is None else self.num_hidden_layers - self.moe.first_k_dense_layers

    @property
    def n_dense_layers(self) -> int:
        return self.num_hidden_layers - self.n_moe_layers

    @property
    def n_sliding_layers(self) -> int:
        return 0 if self.sliding_window is None else self.sliding_window.n_sliding_layers

    @property
    def n_global_layers(self) -> int:
        return self.num_hidden_layers - self.n_sliding_layers

    # ---- parameter counts --------------------------------------------------------
    @property
    def params_embedding(self) -> int:
        """The input embedding table (V x d)."""
        return self.vocab_size * self.hidden_size

    @property
    def params_lm_head(self) -> int:
        """The output projection; zero when tied to the embedding."""
        return 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size

    @property
    def params_attention_per_layer(self) -> int:
        """Q, K, V, O projections with biases, sinks, QK-norm (or MLA's low-rank maps)."""
        d, h, h_kv, d_h = (
            self.hidden_size,
            self.num_attention_heads,
            self.num_key_value_heads,
            self.head_dim,
        )
        if self.mla is not None:
            return self._params_mla_per_layer()
        n = d * h * d_h + 2 * d * h_kv * d_h + h * d_h * d
        if self.qkv_bias:
            n += h * d_h + 2 * h_kv * d_h
        if self.attention_output_bias:
            n += d
        if self.attention_sinks:
            n += h
        if self.qk_norm:
            n += 2 * d_h
        return n

    def _params_mla_per_layer(self) -> int:
        mla, d, h = self.mla, self.hidden_size, self.num_attention_heads
        assert mla is not None
        qk_head = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        if mla.q_lora_rank:
            q = d * mla.q_lora_rank + mla.q_lora_rank + mla.q_lora_rank * h * qk_head
        else:
            q = d * h * qk_head
        kv = (
            d * (mla.kv_lora_rank + mla.qk_rope_head_dim)
            + mla.kv_lora_rank
            + mla.kv_lora_rank * h * (mla.qk_nope_head_dim + mla.v_head_dim)
        )
        return q + kv + h * mla.v_head_dim * d

    def _ffn_params(self, inner: int) -> int:
        return (3 if self.gated_ffn else 2) * self.hidden_size * inner

    @property
    def params_dense_ffn_per_layer(self) -> int:
        return self._ffn_params(self.intermediate_size)

    @property
    def params_per_expert(self) -> int:
        """One routed expert's weights (with biases where the model has them)."""
        assert self.moe is not None
        n = self._ffn_params(self.moe.moe_intermediate_size)
        if self.moe.expert_bias:
            n += 2 * self.moe.moe_intermediate_size + self.hidden_size
        return n

    @property
    def params_moe_fixed_per_layer(self) -> int:
        """Router plus shared experts: read every step whatever the routing."""
        assert self.moe is not None
        moe = self.moe
        router = self.hidden_size * moe.n_routed_experts + (
            moe.n_routed_experts if moe.router_bias else 0
        )
        shared_inner = moe.shared_intermediate_size or moe.moe_intermediate_size
        return router + moe.n_shared_experts * self._ffn_params(shared_inner)

    @property
    def params_norms(self) -> int:
        return (self.norms_per_layer * self.num_hidden_layers + 1) * self.hidden_size

    @property
    def params_non_expert(self) -> int:
        """Everything but the routed experts: attention, dense FFNs, routers, shared, norms."""
        n = self.params_embedding + self.params_lm_head + self.params_norms
        n += self.num_hidden_layers * self.params_attention_per_layer
        n += self.n_dense_layers * self.params_dense_ffn_per_layer
        if self.moe is not None:
            n += self.n_moe_layers * self.params_moe_fixed_per_layer
        return n

    @property
    def params_total(self) -> int:
        """All parameters, counting a tied embedding once."""
        if self.moe is None:
            return self.params_non_expert
        experts = self.n_moe_layers * self.moe.n_routed_experts * self.params_per_expert
        return self.params_non_expert + experts

    @property
    def params_active(self) -> int:
        """Parameters one token uses: non-expert weights plus top-k routed experts."""
        if self.moe is None:
            return self.params_total
        experts = self.n_moe_layers * self.moe.num_experts_per_tok * self.params_per_expert
        return self.params_non_expert + experts

    @property
    def params_active_matmul(self) -> int:
        """Parameters in matrix products per token (no embedding lookup): the FLOPs base."""
        head = self.params_lm_head or self.params_embedding
        return self.params_active - self.params_embedding - self.params_lm_head + head

    # ---- KV cache --------------------------------------------------------------
    @property
    def kv_elements_per_token_per_layer(self) -> int:
        """Cached values per token per layer: 2*h_kv*d_h, or MLA's latent + rope key."""
        if self.mla is not None:
            return self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        return 2 * self.num_key_value_heads * self.head_dim

    @property
    def kv_heads_splittable(self) -> int:
        """How many ways tensor parallelism can split the KV cache (MLA's latent: none)."""
        return 1 if self.mla is not None else self.num_key_value_heads


ModelArch = Literal["dense", "moe"]
