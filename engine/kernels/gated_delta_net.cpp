#include "kernels/gated_delta_net.h"

#include "kernels/delta_rule_impl.h"
#include "kernels/thread_pool.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace oxinfer::kernels {
namespace {

// The reference primitives of delta_rule_impl.h: plain loops in summation order.
struct ScalarDeltaOps {
    static void axpy(float* y, float a, const float* x, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
    }
    static void gemm_acc(float* y, int64_t ldy, const float* x, int64_t ldx, const float* b, int64_t ldb, int64_t m, int64_t k,
                         int64_t n) {
        for (int64_t i = 0; i < m; ++i)
            for (int64_t kk = 0; kk < k; ++kk) axpy(y + i * ldy, x[i * ldx + kk], b + kk * ldb, n);
    }
};

float silu(float x) { return x / (1.0f + std::exp(-x)); }

}  // namespace

int64_t delta_rule_scratch_floats(int64_t key_dim, int64_t value_dim) { return delta_scratch_floats(key_dim, value_dim); }

void fill_delta_rule_scalar(OpsTable& table) {
    table.delta_rule_step = delta_rule_step<ScalarDeltaOps>;
    table.delta_rule_chunk = delta_rule_chunk<ScalarDeltaOps>;
}

void causal_conv1d_silu(const float* x, int64_t tokens, int64_t channels, const float* weight, int64_t kernel, float* state,
                        float* out) {
    const int64_t history = kernel - 1;
    // Row r of the sequence state ++ x: r < history from the state, the rest from x.
    const auto row = [&](int64_t r) { return r < history ? state + r * channels : x + (r - history) * channels; };
    for (int64_t t = 0; t < tokens; ++t) {
        float* o = out + t * channels;
        std::fill(o, o + channels, 0.0f);
        for (int64_t j = 0; j < kernel; ++j) {
            const float* in = row(t + j);
            const float* w = weight + j * channels;
            for (int64_t c = 0; c < channels; ++c) o[c] += w[c] * in[c];
        }
        for (int64_t c = 0; c < channels; ++c) o[c] = silu(o[c]);
    }
    // The last `history` rows of state ++ x become the state.
    const int64_t kept = std::min(history, tokens);
    std::copy(state + kept * channels, state + history * channels, state);  // older rows still needed (tokens < history)
    std::copy(x + (tokens - kept) * channels, x + tokens * channels, state + (history - kept) * channels);
}

void l2_normalize(float* x, int64_t rows, int64_t n, float eps, float scale) {
    for (int64_t r = 0; r < rows; ++r) {
        float* v = x + r * n;
        double sum = 0.0;
        for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(v[i]) * v[i];
        const float factor = scale / std::sqrt(static_cast<float>(sum) + eps);
        for (int64_t i = 0; i < n; ++i) v[i] *= factor;
    }
}

void gated_delta_rule_with(const OpsTable& table, const DeltaRuleShape& shape, const float* q, const float* k, const float* v,
                           const float* g, const float* beta, int64_t tokens, float* state, float* out, ThreadPool& pool) {
    const int64_t hv = shape.value_heads, hk = shape.key_heads, dk = shape.key_dim, dv = shape.value_dim;
    const int64_t group = hv / hk;
    pool.parallel_for(hv, 1, [&](int64_t begin, int64_t end) {
        // Kept between calls on each thread: decoding runs this for every DeltaNet layer of every
        // token, and a chunk's scratch is ~200 KB (a step needs only dv floats of it).
        thread_local std::vector<float> scratch;
        const int64_t needed = tokens == 1 ? dv : delta_rule_scratch_floats(dk, dv);
        if (static_cast<int64_t>(scratch.size()) < needed) scratch.resize(static_cast<size_t>(needed));
        for (int64_t h = begin; h < end; ++h) {
            const int64_t kh = shape.key_heads_tiled ? h % hk : h / group;
            DeltaRuleHead head{q + kh * dk, k + kh * dk, v + h * dv, g + h, beta + h, hk * dk, hv * dv, hv, dk, dv,
                               state + h * dk * dv, out + h * dv, hv * dv};
            if (tokens == 1) {
                table.delta_rule_step(head, scratch.data());
                continue;
            }
            for (int64_t first = 0; first < tokens; first += kDeltaChunk) {
                DeltaRuleHead chunk = head;
                chunk.q += first * head.key_stride;
                chunk.k += first * head.key_stride;
                chunk.v += first * head.value_stride;
                chunk.g += first * head.gate_stride;
                chunk.beta += first * head.gate_stride;
                chunk.out += first * head.out_stride;
                table.delta_rule_chunk(chunk, std::min(kDeltaChunk, tokens - first), scratch.data());
            }
        }
    });
}

void gated_delta_rule(const DeltaRuleShape& shape, const float* q, const float* k, const float* v, const float* g,
                      const float* beta, int64_t tokens, float* state, float* out, ThreadPool& pool) {
    gated_delta_rule_with(ops_table(active_isa()), shape, q, k, v, g, beta, tokens, state, out, pool);
}

}  // namespace oxinfer::kernels
