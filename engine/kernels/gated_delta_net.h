#pragma once
// The kernels of the Gated DeltaNet (Qwen3.5 and Qwen3-Next linear-attention layers): the causal
// depthwise convolution with its rolling state, L2 normalisation, and the gated delta rule over a
// float32 state, in its recurrent form (a token at a time) and its chunked form (prefill).
// The delta rule runs per value head on the active ISA level's kernels (kernels/delta_rule_impl.h).

#include <cstdint>

namespace oxinfer {
class ThreadPool;
}

namespace oxinfer::kernels {

// out[t][c] = silu(Σ_j weight[j][c] · x[t - (kernel-1) + j][c]) for t in [0, tokens): a causal
// depthwise convolution over time. Inputs before x[0] come from state, the previous kernel-1 rows
// of x ([kernel-1][channels], zeros at the start of a sequence), which is then advanced to hold
// the last kernel-1 rows seen. weight is [kernel][channels]: row kernel-1 multiplies the current
// token (a checkpoint's conv1d.weight [channels][1][kernel], transposed). out must not alias x.
void causal_conv1d_silu(const float* x, int64_t tokens, int64_t channels, const float* weight, int64_t kernel, float* state,
                        float* out);

// x = x · scale / sqrt(Σx² + eps) per row of n values (FLA's l2norm: eps inside the square root).
void l2_normalize(float* x, int64_t rows, int64_t n, float eps, float scale = 1.0f);

struct DeltaRuleShape {
    int64_t value_heads = 0;  // Hv: one state per value head
    int64_t key_heads = 0;    // Hk: value head h reads key head h / (Hv / Hk) ...
    int64_t key_dim = 0;      // dk
    int64_t value_dim = 0;    // dv
    bool key_heads_tiled = false;  // ... or h % Hk (llama.cpp's GGUF order of the value heads)
};

// The gated delta rule for `tokens` tokens, continuing `state` ([Hv][dk][dv] float32, updated):
//
//   S ← exp(g_t) S;   u = β_t (v_t − Sᵀk_t);   S ← S + k_t uᵀ;   o_t = Sᵀ q_t
//
// q and k ([tokens][Hk][dk]) are already L2-normalised (q also scaled by dk^-1/2), v and out are
// [tokens][Hv][dv], g (log-decay, <= 0) and beta are [tokens][Hv]. One token takes the recurrence
// above; more take the chunked form of transformers' torch_chunk_gated_delta_rule (chunks of 64,
// exact within each chunk through a unit lower-triangular solve, the state carried between
// chunks), which gives the same values up to rounding. Heads run in parallel on the pool.
void gated_delta_rule(const DeltaRuleShape& shape, const float* q, const float* k, const float* v, const float* g,
                      const float* beta, int64_t tokens, float* state, float* out, ThreadPool& pool);

struct OpsTable;
// gated_delta_rule() with the per-head kernels of a given level (tests compare levels through it).
void gated_delta_rule_with(const OpsTable& table, const DeltaRuleShape& shape, const float* q, const float* k, const float* v,
                           const float* g, const float* beta, int64_t tokens, float* state, float* out, ThreadPool& pool);

}  // namespace oxinfer::kernels
