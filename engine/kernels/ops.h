#pragma once
// The engine's element-wise, row-wise and attention kernels on float32 activations (row-major).
// Every function here runs the kernels of the active ISA level (kernels/isa.h); the per-level
// tables behind them are in kernels/ops_table.h. Sizes are element counts; pointers need no
// particular alignment. Out-of-place functions accept out == in unless said otherwise.

#include "kernels/matmul.h"

#include <oxinfer/dtype.h>

#include <cstddef>
#include <cstdint>

namespace oxinfer {
class ThreadPool;
}

namespace oxinfer::kernels {

// ---- normalisation ------------------------------------------------------------------------------

// y = x / sqrt(mean(x²) + eps) · w per row of n values; the sum of squares is accumulated in
// double. weight may be null (no scale); weight_offset_one uses (1 + w) as Gemma 1-3 and Qwen3.5
// store their zero-centred weights. y may equal x.
void rms_norm(const float* x, const float* weight, float* y, int64_t rows, int64_t n, float eps, bool weight_offset_one = false);
// y = (x - mean) / sqrt(var + eps) · w + b per row (biased variance, as torch); weight and bias may
// be null.
void layer_norm(const float* x, const float* weight, const float* bias, float* y, int64_t rows, int64_t n, float eps);

// In-place softmax of each row, max-subtracted. A row must hold at least one value > -inf; NaNs
// are skipped when taking the max (and then spread through the sum, as in torch).
void softmax(float* x, int64_t rows, int64_t n);

// ---- rotary position embedding -----------------------------------------------------------------

enum class RopeLayout {
    SplitHalf,    // NeoX / HF rotate_half: element i pairs with i + rotary_dim/2
    Interleaved,  // GPT-J / Meta original: elements 2i and 2i+1 form a pair
};

// Rotates the first rotary_dim values of every head of x[tokens][heads][head_dim] in place (the
// rest pass through: partial rotary). Pair i of token t turns by angle = float(positions[t]) ·
// inv_freq[i], multiplied in float32 exactly as HF does, then cos and sin are taken in float32
// (libm cosf/sinf, correctly rounded to within an ulp) and scaled by attention_factor (YaRN's
// mscale; 1 otherwise). The caller owns inv_freq (rotary_dim/2 values): each model has its own
// theta and scaling rules. rotary_dim must be even and <= head_dim.
void rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rotary_dim, const int64_t* positions,
          const float* inv_freq, RopeLayout layout, float attention_factor = 1.0f);

// rope()'s angles computed once for calls that share them (q and k of every layer of a step):
// cos and sin [tokens][rotary_dim / 2], then the rotation by them, the same arithmetic as rope().
void rope_angles(const int64_t* positions, int64_t tokens, const float* inv_freq, int64_t rotary_dim, float* cos, float* sin,
                 float attention_factor = 1.0f);
void rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rotary_dim, const float* cos, const float* sin,
          RopeLayout layout);

// ---- activations and element-wise ops (y may equal x) -------------------------------------------

void silu(const float* x, float* y, int64_t n);       // x / (1 + exp(-x))
// GELU, tanh form: 0.5x(1 + tanh(u)), u = √(2/π)(x + 0.044715x³), computed as x / (1 + exp(-2u)),
// the same function without the cancellation of 1 + tanh(u) for negative x.
void gelu_tanh(const float* x, float* y, int64_t n);
// GELU, erf form: 0.5x(1 + erf(x/√2)), computed as 0.5x·erfc(-x/√2) for the same reason.
void gelu_erf(const float* x, float* y, int64_t n);
void swiglu(const float* gate, const float* up, float* out, int64_t n);      // silu(gate) · up
void geglu_tanh(const float* gate, const float* up, float* out, int64_t n);  // gelu_tanh(gate) · up
void add(const float* a, const float* b, float* out, int64_t n);             // residual add
void mul(const float* a, const float* b, float* out, int64_t n);
void scale(float* x, float s, int64_t n);
// x = cap · tanh(x / cap) in place: Gemma's final-logit (and Gemma 2's attention) softcapping.
void softcap(float* x, float cap, int64_t n);

// ---- conversions (bit-exact with oxinfer::f16_to_f32 and friends, round to nearest even) --------

void f16_to_f32_row(const uint16_t* src, float* dst, int64_t n);
void bf16_to_f32_row(const uint16_t* src, float* dst, int64_t n);
void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n);
void f32_to_bf16_row(const float* src, uint16_t* dst, int64_t n);

// Dequantises rows of an embedding table (or a head's rows): out[i][0..cols) = the first `cols`
// values of row ids[i] of `table`, in either layout (kernels/interleave.h). Any type
// convert_to_f32 supports (cols a whole number of blocks); f32, f16 and bf16 take fast paths.
// Throws oxinfer::Error for an id outside the table's rows or an unsupported type.
void embedding_rows(const WeightMatrix& table, int64_t cols, const int32_t* ids, int64_t count, float* out);

// ---- sampling helpers ---------------------------------------------------------------------------

// Index of the largest value; the first one on ties. NaNs are never chosen (they rank below
// -inf); if every value is NaN the answer is 0. n must be >= 1.
int64_t argmax(const float* x, int64_t n);
// The k largest values, sorted descending, ties broken by the lower index, NaNs ranked last.
// Writes min(k, n) ids and values (values may be null) and returns that count.
int64_t top_k(const float* x, int64_t n, int64_t k, int32_t* ids, float* values);

// ---- attention over a KV cache ------------------------------------------------------------------

// One layer's K or V cache: values of dtype F32, F16 or BF16, head_dim per (position, kv head).
struct KvCacheView {
    DType dtype = DType::F32;
    const std::byte* data = nullptr;
    int64_t position_stride = 0;  // bytes between consecutive slots of one head
    int64_t head_stride = 0;      // bytes between kv heads
    int64_t ring_size = 0;        // 0: slot = position; else slot = position % ring_size (sliding-window caches)
};

struct AttentionParams {
    int64_t heads = 0, kv_heads = 0, head_dim = 0;  // heads a multiple of kv_heads (GQA)
    float scale = 1.0f;     // scores = q·k · scale (1/sqrt(head_dim) for most models, 1 for Gemma 4)
    float softcap = 0.0f;   // 0: none; else scores = tanh(scores / softcap) · softcap, before masking
    int64_t window = 0;     // 0: unlimited; else key k is visible from query q iff q - window < k <= q (HF)
    bool causal = true;     // false: every cached key is visible (encoders); window must then be 0
};

// out[t][h] = softmax over the visible keys of (q[t][h] · k) applied to v. Query t sits at absolute
// position query_positions[t]; the cache holds positions [kv_begin, kv_end) (for a ring cache,
// kv_end - kv_begin <= ring_size). Query head h reads kv head h / (heads / kv_heads); the heads
// sharing a kv head go through each block of keys together, so it is read from memory once. Keys
// are visited in blocks with an online (flash-style) softmax and float32 accumulators. Below 32
// tokens (decoding), blocks of 64; long key ranges are split into fixed partitions of 512 keys
// that are merged in order (in parallel when there are fewer (token, kv head) pairs than threads).
// From 32 tokens (prompts), tiles of tokens share each block of 32 keys. Either way the result is
// the same bits for any thread count. A query that sees no key (none cached in its window) gets
// zeros. Throws oxinfer::Error on inconsistent parameters.
//
// `prepare`, if given, is the work that must come before kv heads [begin, end) are read: their
// query and key heads' norms and RoPE, the new keys' and values' store. For one token (decoding)
// each thread calls it for the kv heads it then attends, so that this work runs in parallel and
// the rows it stores are read by the core that wrote them; otherwise the caller calls it once for
// every kv head before any thread reads the cache.
void attention(const AttentionParams& params, const float* q, int64_t tokens, const int64_t* query_positions,
               const KvCacheView& k, const KvCacheView& v, int64_t kv_begin, int64_t kv_end, float* out,
               ThreadPool& pool, const RangeCallback* prepare = nullptr);

}  // namespace oxinfer::kernels
