#pragma once
// The gated delta rule for one value head, written once over a few vector primitives and compiled
// per ISA: kernels/gated_delta_net.cpp includes it with scalar primitives (the reference table),
// kernels/x86/delta_rule_avx2.cpp with AVX2 + FMA ones. Like every per-ISA file, it keeps to an
// anonymous namespace, plain loops and C functions (expf, memcpy): no std:: templates, whose
// ISA-specific copies the linker could share with other files (see x86/ops_avx2.cpp).
//
// Ops provides, for row-major float arrays:
//   axpy(y, a, x, n):                  y[0..n) += a · x[0..n)
//   gemm_acc(y, ldy, x, ldx, b, ldb, m, k, n):  y[i][j] += Σ_kk x[i][kk] · b[kk][j]  (i < m, j < n)

#include "kernels/ops_table.h"

#include <math.h>
#include <string.h>

namespace oxinfer::kernels {
namespace {

constexpr int64_t kDeltaChunk = 64;

// Scratch floats one head's chunk needs.
constexpr int64_t delta_scratch_floats(int64_t dk, int64_t dv) {
    return kDeltaChunk * (3 * dk + 2 * dv + kDeltaChunk + 2) + dk * kDeltaChunk;
}

// One token: S ← exp(g) S; u = β (v − Sᵀk); S ← S + k uᵀ; o = Sᵀq. The state (the bulk of the
// memory traffic when decoding) is read once, then read and written once.
template <class Ops>
void delta_rule_step(const DeltaRuleHead& h, float* scratch) {
    const int64_t dk = h.key_dim, dv = h.value_dim;
    float* memory = scratch;
    const float decay = expf(h.g[0]);
    memset(memory, 0, static_cast<size_t>(dv) * sizeof(float));
    for (int64_t i = 0; i < dk; ++i) Ops::axpy(memory, h.k[i], h.state + i * dv, dv);  // Sᵀk before the decay
    for (int64_t j = 0; j < dv; ++j) memory[j] = h.beta[0] * (h.v[j] - decay * memory[j]);  // u
    memset(h.out, 0, static_cast<size_t>(dv) * sizeof(float));
    for (int64_t i = 0; i < dk; ++i) {
        float* row = h.state + i * dv;
        for (int64_t j = 0; j < dv; ++j) row[j] *= decay;
        Ops::axpy(row, h.k[i], memory, dv);  // S += k uᵀ
        Ops::axpy(h.out, h.q[i], row, dv);   // o = Sᵀq
    }
}

// One chunk of n <= 64 tokens. With G the cumulative log-decay inside the chunk and
// Γ_ij = exp(G_i − G_j) for j <= i:
//   A_ij = β_i (k_i·k_j) Γ_ij (j < i);  (I + A) U = β v;  (I + A) W = β k exp(G)
//   v'_i = U_i − W_i S;  o_i = exp(G_i) Sᵀq_i + Σ_{j<=i} (q_i·k_j) Γ_ij v'_j
//   S ← exp(G_last) S + Σ_j exp(G_last − G_j) k_j v'_jᵀ
template <class Ops>
void delta_rule_chunk(const DeltaRuleHead& h, int64_t n, float* scratch) {
    const int64_t dk = h.key_dim, dv = h.value_dim, C = kDeltaChunk;
    float* Q = scratch;          // [C][dk], then scaled by exp(G)
    float* K = Q + C * dk;       // [C][dk]
    float* W = K + C * dk;       // [C][dk]
    float* U = W + C * dk;       // [C][dv]: U, then v'
    float* O = U + C * dv;       // [C][dv]
    float* P = O + C * dv;       // [C][C]: k_i·k_j, then q_i·k_j
    float* G = P + C * C;        // [C]
    float* beta = G + C;         // [C]
    float* KT = beta + C;        // [dk][C]
    for (int64_t i = 0; i < n; ++i) {
        memcpy(Q + i * dk, h.q + i * h.key_stride, static_cast<size_t>(dk) * sizeof(float));
        memcpy(K + i * dk, h.k + i * h.key_stride, static_cast<size_t>(dk) * sizeof(float));
        beta[i] = h.beta[i * h.gate_stride];
        G[i] = (i ? G[i - 1] : 0.0f) + h.g[i * h.gate_stride];
        for (int64_t a = 0; a < dk; ++a) KT[a * C + i] = K[i * dk + a];
    }
    // k_i·k_j (all pairs; the upper half is unused).
    memset(P, 0, static_cast<size_t>(n * C) * sizeof(float));
    Ops::gemm_acc(P, C, K, dk, KT, C, n, dk, n);
    // U and W by forward substitution, row by row.
    for (int64_t i = 0; i < n; ++i) {
        float* u = U + i * dv;
        float* w = W + i * dk;
        const float* v = h.v + i * h.value_stride;
        const float bw = beta[i] * expf(G[i]);
        for (int64_t j = 0; j < dv; ++j) u[j] = beta[i] * v[j];
        for (int64_t j = 0; j < dk; ++j) w[j] = bw * K[i * dk + j];
        for (int64_t j = 0; j < i; ++j) {
            const float a = -beta[i] * P[i * C + j] * expf(G[i] - G[j]);
            Ops::axpy(u, a, U + j * dv, dv);
            Ops::axpy(w, a, W + j * dk, dk);
        }
    }
    // v' = U − W S.
    for (int64_t i = 0; i < n * dk; ++i) W[i] = -W[i];
    Ops::gemm_acc(U, dv, W, dk, h.state, dv, n, dk, dv);
    // q_i·k_j weighted by Γ_ij (j <= i), zero above the diagonal.
    memset(P, 0, static_cast<size_t>(n * C) * sizeof(float));
    Ops::gemm_acc(P, C, Q, dk, KT, C, n, dk, n);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) P[i * C + j] = j <= i ? P[i * C + j] * expf(G[i] - G[j]) : 0.0f;
    // o = exp(G) Sᵀq + P v'.
    for (int64_t i = 0; i < n; ++i) {
        const float e = expf(G[i]);
        for (int64_t a = 0; a < dk; ++a) Q[i * dk + a] *= e;
    }
    memset(O, 0, static_cast<size_t>(n * dv) * sizeof(float));
    Ops::gemm_acc(O, dv, Q, dk, h.state, dv, n, dk, dv);
    Ops::gemm_acc(O, dv, P, C, U, dv, n, n, dv);
    for (int64_t i = 0; i < n; ++i) memcpy(h.out + i * h.out_stride, O + i * dv, static_cast<size_t>(dv) * sizeof(float));
    // S ← exp(G_last) S + (k ⊙ exp(G_last − G))ᵀ v'.
    const float last = G[n - 1];
    const float e = expf(last);
    for (int64_t a = 0; a < dk * dv; ++a) h.state[a] *= e;
    for (int64_t j = 0; j < n; ++j) {
        const float weight = expf(last - G[j]);
        for (int64_t a = 0; a < dk; ++a) KT[a * C + j] *= weight;
    }
    Ops::gemm_acc(h.state, dv, KT, C, U, dv, dk, n, dv);
}

}  // namespace
}  // namespace oxinfer::kernels
