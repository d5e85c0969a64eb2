#include "kernels/gated_delta_net.h"

#include "kernels/thread_pool.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace oxinfer::kernels {
namespace {

constexpr int64_t kChunk = 64;

float silu(float x) { return x / (1.0f + std::exp(-x)); }

// y[0..n) += a · x[0..n)
inline void axpy(float* y, float a, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

inline float dot(const float* a, const float* b, int64_t n) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

// Strides of one head's rows in the [tokens][heads][dim] inputs.
struct HeadInputs {
    const float *q, *k, *v, *g, *beta;
    int64_t key_stride, value_stride, gate_stride;  // floats from one token to the next
};

void recurrent_step(float* state, const float* q, const float* k, const float* v, float g, float beta, int64_t dk, int64_t dv,
                    float* memory, float* out) {
    const float decay = std::exp(g);
    std::fill(memory, memory + dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
        float* row = state + i * dv;
        for (int64_t j = 0; j < dv; ++j) row[j] *= decay;
        axpy(memory, k[i], row, dv);  // Sᵀk
    }
    for (int64_t j = 0; j < dv; ++j) memory[j] = beta * (v[j] - memory[j]);  // u
    std::fill(out, out + dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
        float* row = state + i * dv;
        axpy(row, k[i], memory, dv);
        axpy(out, q[i], row, dv);
    }
}

// Scratch of one head's chunk.
struct ChunkScratch {
    explicit ChunkScratch(int64_t dk, int64_t dv)
        : cumulative(kChunk), u(kChunk * dv), w(kChunk * dk), queries_state(dv) {}
    std::vector<float> cumulative, u, w, queries_state;
};

// One chunk of `n` <= 64 tokens of one head, from its first token's inputs, continuing `state`.
// With G the cumulative log-decay inside the chunk and Γ_ij = exp(G_i − G_j) (j <= i):
//   A_ij = β_i (k_i·k_j) Γ_ij for j < i;  (I + A) U = β v;  (I + A) W = β k exp(G)
//   v'_i = U_i − W_i S;  o_i = exp(G_i) Sᵀq_i + Σ_{j<=i} (q_i·k_j) Γ_ij v'_j
//   S ← exp(G_last) S + Σ_j exp(G_last − G_j) k_j v'_jᵀ
void chunk(const HeadInputs& in, int64_t n, int64_t dk, int64_t dv, float* state, float* out, int64_t out_stride, ChunkScratch& s) {
    float* G = s.cumulative.data();
    float running = 0.0f;
    for (int64_t i = 0; i < n; ++i) G[i] = running += in.g[i * in.gate_stride];
    const auto key = [&](int64_t i) { return in.k + i * in.key_stride; };
    // U and W by forward substitution, row by row (A_ij is used once, as it is computed).
    for (int64_t i = 0; i < n; ++i) {
        const float beta = in.beta[i * in.gate_stride];
        float* u = s.u.data() + i * dv;
        float* w = s.w.data() + i * dk;
        const float* v = in.v + i * in.value_stride;
        const float* k = key(i);
        const float e = std::exp(G[i]);
        for (int64_t j = 0; j < dv; ++j) u[j] = beta * v[j];
        for (int64_t j = 0; j < dk; ++j) w[j] = beta * e * k[j];
        for (int64_t j = 0; j < i; ++j) {
            const float a = beta * dot(k, key(j), dk) * std::exp(G[i] - G[j]);
            axpy(u, -a, s.u.data() + j * dv, dv);
            axpy(w, -a, s.w.data() + j * dk, dk);
        }
    }
    // v' = U − W S, in place of U.
    for (int64_t i = 0; i < n; ++i) {
        float* u = s.u.data() + i * dv;
        const float* w = s.w.data() + i * dk;
        for (int64_t a = 0; a < dk; ++a) axpy(u, -w[a], state + a * dv, dv);
    }
    // Outputs, from the state at the chunk's start and the chunk's own keys.
    for (int64_t i = 0; i < n; ++i) {
        const float* q = in.q + i * in.key_stride;
        float* o = out + i * out_stride;
        float* qs = s.queries_state.data();
        std::fill(qs, qs + dv, 0.0f);
        for (int64_t a = 0; a < dk; ++a) axpy(qs, q[a], state + a * dv, dv);
        const float e = std::exp(G[i]);
        for (int64_t j = 0; j < dv; ++j) o[j] = e * qs[j];
        for (int64_t j = 0; j <= i; ++j) axpy(o, dot(q, key(j), dk) * std::exp(G[i] - G[j]), s.u.data() + j * dv, dv);
    }
    // The state at the chunk's end.
    const float last = G[n - 1];
    const float e = std::exp(last);
    for (int64_t a = 0; a < dk * dv; ++a) state[a] *= e;
    for (int64_t j = 0; j < n; ++j) {
        const float* k = key(j);
        const float* v_new = s.u.data() + j * dv;
        const float weight = std::exp(last - G[j]);
        for (int64_t a = 0; a < dk; ++a) axpy(state + a * dv, weight * k[a], v_new, dv);
    }
}

}  // namespace

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

void gated_delta_rule(const DeltaRuleShape& shape, const float* q, const float* k, const float* v, const float* g,
                      const float* beta, int64_t tokens, float* state, float* out, ThreadPool& pool) {
    const int64_t hv = shape.value_heads, hk = shape.key_heads, dk = shape.key_dim, dv = shape.value_dim;
    const int64_t group = hv / hk;
    pool.parallel_for(hv, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> memory(static_cast<size_t>(dv));
        std::optional<ChunkScratch> scratch;
        for (int64_t h = begin; h < end; ++h) {
            const int64_t kh = shape.key_heads_tiled ? h % hk : h / group;
            const HeadInputs in{q + kh * dk, k + kh * dk, v + h * dv, g + h, beta + h, hk * dk, hv * dv, hv};
            float* head_state = state + h * dk * dv;
            float* head_out = out + h * dv;
            if (tokens == 1) {
                recurrent_step(head_state, in.q, in.k, in.v, *in.g, *in.beta, dk, dv, memory.data(), head_out);
                continue;
            }
            if (!scratch) scratch.emplace(dk, dv);
            for (int64_t first = 0; first < tokens; first += kChunk) {
                const HeadInputs at{in.q + first * in.key_stride, in.k + first * in.key_stride, in.v + first * in.value_stride,
                                    in.g + first * in.gate_stride, in.beta + first * in.gate_stride,
                                    in.key_stride, in.value_stride, in.gate_stride};
                chunk(at, std::min(kChunk, tokens - first), dk, dv, head_state, head_out + first * hv * dv, hv * dv, *scratch);
            }
        }
    });
}

}  // namespace oxinfer::kernels
