#pragma once
// One table of kernel entry points per ISA level. The scalar table is the reference; each SIMD
// level starts from the level below it and overrides the entries it accelerates (AVX2 on scalar,
// AVX-512 on AVX2, NEON on scalar). Tests run every entry of every supported level against
// ops_table(Isa::Scalar); the functions of kernels/ops.h call ops_table(active_isa()).

#include "kernels/isa.h"
#include "kernels/ops.h"

#include <cstddef>
#include <cstdint>

namespace oxinfer::kernels {

// Index of a KV-cache element type in the kv_dot/kv_axpy arrays.
enum KvType : int { KvF32 = 0, KvF16 = 1, KvBf16 = 2, KvTypeCount = 3 };

// One value head of the gated delta rule (kernels/gated_delta_net.h): its inputs from the first
// token on, consecutive tokens `*_stride` floats apart, its state [dk][dv] and its output rows.
struct DeltaRuleHead {
    const float *q, *k, *v, *g, *beta;
    int64_t key_stride, value_stride, gate_stride;
    int64_t key_dim, value_dim;
    float* state;
    float* out;
    int64_t out_stride;
};

struct OpsTable {
    void (*rms_norm)(const float* x, const float* weight, float* y, int64_t rows, int64_t n, float eps, bool weight_offset_one);
    void (*layer_norm)(const float* x, const float* weight, const float* bias, float* y, int64_t rows, int64_t n, float eps);
    void (*softmax)(float* x, int64_t rows, int64_t n);
    // Rotates one token's heads (x[heads][head_dim]) by precomputed cos/sin[rotary_dim/2]; see rope().
    void (*rope_rotate)(float* x, int64_t heads, int64_t head_dim, int64_t rotary_dim, const float* cos, const float* sin,
                        RopeLayout layout);

    void (*silu)(const float* x, float* y, int64_t n);
    void (*gelu_tanh)(const float* x, float* y, int64_t n);
    void (*gelu_erf)(const float* x, float* y, int64_t n);
    void (*swiglu)(const float* gate, const float* up, float* out, int64_t n);
    void (*geglu_tanh)(const float* gate, const float* up, float* out, int64_t n);
    void (*add)(const float* a, const float* b, float* out, int64_t n);
    void (*mul)(const float* a, const float* b, float* out, int64_t n);
    void (*scale)(float* x, float s, int64_t n);
    void (*softcap)(float* x, float cap, int64_t n);

    void (*f16_to_f32_row)(const uint16_t* src, float* dst, int64_t n);
    void (*bf16_to_f32_row)(const uint16_t* src, float* dst, int64_t n);
    void (*f32_to_f16_row)(const float* src, uint16_t* dst, int64_t n);
    void (*f32_to_bf16_row)(const float* src, uint16_t* dst, int64_t n);

    // Attention inner loops. exp_sum: x[i] = exp(x[i] - max), returns the sum (accumulated in
    // double). kv_dot: scores[j] = q · row_j. kv_axpy: acc += Σ_j weights[j] · row_j. Row j
    // starts at rows + j·stride bytes and holds dim values of the indexed KvType.
    double (*exp_sum)(float* x, int64_t n, float max);
    void (*kv_dot[KvTypeCount])(const float* q, const std::byte* rows, int64_t stride, int64_t count, int64_t dim, float* scores);
    void (*kv_axpy[KvTypeCount])(const float* weights, const std::byte* rows, int64_t stride, int64_t count, int64_t dim,
                                 float* acc);
    // The same for `rows` queries at once (prefill tiles), each key and value row read once for
    // all of them: scores[r·ld + j] = q_r · row_j with q_r = q + r·q_stride; acc_r += Σ_j
    // weights[r·ld + j] · row_j with acc_r = acc + r·acc_stride. Each output value's arithmetic
    // does not depend on `rows` or on the row's place among them. nullptr: attention runs kv_dot
    // and kv_axpy row by row.
    void (*kv_dot_rows[KvTypeCount])(const float* q, int64_t q_stride, int64_t rows, const std::byte* keys, int64_t stride,
                                     int64_t count, int64_t dim, float* scores, int64_t ld);
    void (*kv_axpy_rows[KvTypeCount])(const float* weights, int64_t ld, int64_t rows, const std::byte* values, int64_t stride,
                                      int64_t count, int64_t dim, float* acc, int64_t acc_stride);
    // The same while decoding, for the `rows` query heads of each of `heads` kv heads (query row
    // r = h·rows + g is q + r·dim, query head g of kv head h, whose rows start at h·head_stride
    // bytes from keys, values and next), in the order that streams the rows from memory: each row
    // used by every query of its kv head before the next, the kv heads' j-th rows one after
    // another (one stream each), their lines asked for ahead, on into `next_count` rows at `next`
    // (the caller's next rows, at the same strides; nullptr if none) past the last. nullptr:
    // attention runs kv_dot and kv_axpy query by query.
    void (*kv_dot_group[KvTypeCount])(const float* q, int64_t rows, int64_t heads, const std::byte* keys, int64_t head_stride,
                                      int64_t stride, int64_t count, int64_t dim, float* scores, int64_t ld, const std::byte* next,
                                      int64_t next_count);
    void (*kv_axpy_group[KvTypeCount])(const float* weights, int64_t ld, int64_t rows, int64_t heads, const std::byte* values,
                                       int64_t head_stride, int64_t stride, int64_t count, int64_t dim, float* acc, int64_t acc_stride,
                                       const std::byte* next, int64_t next_count);

    // The gated delta rule for one head: one token (the recurrence), or a chunk of up to 64 tokens
    // (the chunked form); scratch holds delta_rule_scratch_floats(dk, dv) floats.
    void (*delta_rule_step)(const DeltaRuleHead& head, float* scratch);
    void (*delta_rule_chunk)(const DeltaRuleHead& head, int64_t tokens, float* scratch);
};

int64_t delta_rule_scratch_floats(int64_t key_dim, int64_t value_dim);

// The table of a level this build contains and this CPU supports (built on first use); throws
// oxinfer::Error for any other level, so that no SIMD code runs on a CPU without it.
const OpsTable& ops_table(Isa isa);

// attention() with the inner loops of a given table (tests compare levels through it).
void attention_with(const OpsTable& table, const AttentionParams& params, const float* q, int64_t tokens,
                    const int64_t* query_positions, const KvCacheView& k, const KvCacheView& v, int64_t kv_begin,
                    int64_t kv_end, float* out, ThreadPool& pool, const RangeCallback* prepare = nullptr);

// Angles of one token for rope(): cos[i] and sin[i] of float(position) · inv_freq[i], scaled by
// attention_factor, for i < half. Plain scalar code shared by every level, so all levels rotate by
// the very same cos/sin.
void rope_angles(int64_t position, const float* inv_freq, int64_t half, float attention_factor, float* cos, float* sin);

// Filled by each level's own file. Each fill function is itself compiled for its ISA: call it only
// on a CPU that has it (ops_table() does).
void fill_ops_scalar(OpsTable& table);
void fill_delta_rule_scalar(OpsTable& table);  // kernels/gated_delta_net.cpp
#if defined(__x86_64__) || defined(_M_X64)
void fill_ops_avx2(OpsTable& table);
void fill_delta_rule_avx2(OpsTable& table);  // kernels/x86/delta_rule_avx2.cpp
void fill_ops_avx512(OpsTable& table);
#endif
#if defined(__aarch64__)
void fill_ops_neon(OpsTable& table);
#endif

}  // namespace oxinfer::kernels
