#pragma once
// Building blocks the decoder families share: projections of one input through several linears,
// and the gated (SwiGLU / GeGLU) feed-forward.

#include "models/weights.h"

#include <cstdint>
#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

namespace oxinfer {
class ThreadPool;
}

namespace oxinfer::models {

// Grows a scratch buffer to at least n values (never shrinks: scratch is reused between calls).
void grow(std::vector<float>& buffer, int64_t n);

// y = x · Wᵀ + b for each (linear, y) pair; the linears share the input x[tokens] and are read
// in one pass (kernels::matmul_many).
void project(std::initializer_list<std::pair<const Linear*, float*>> outputs, const float* x, int64_t tokens, ThreadPool& pool);

// A decoder's outputs for its last chunk x[n][hidden]: the final RMSNorm (weight as given) of every
// row into hidden_out when it is not null, and the head's logits of every row (all_positions) or of
// the last one into logits when that is not null (normed into `scratch` when no hidden_out).
// Returns the rows of logits written.
int64_t final_norm_and_head(const float* x, int64_t n, int64_t hidden, const std::vector<float>& norm, float eps,
                            const kernels::WeightMatrix& head, bool all_positions, float* logits, float* hidden_out,
                            std::vector<float>& scratch, ThreadPool& pool);

// y[n][rows] = x[n][cols] · Wᵀ for W held as matrices of consecutive column ranges (WeightStore::
// matrix_columns; one matrix: W itself): the product of each with its columns of x, added in their
// order. `scratch` holds those columns and the products after the first. force_gemm: as in
// gated_feed_forward.
void matmul_column_parts(std::span<const kernels::WeightMatrix> parts, const float* x, int64_t n, float* y, std::vector<float>& scratch,
                         ThreadPool& pool, bool force_gemm = false);

struct FeedForwardScratch {
    std::vector<float> gate, up, down;
};

enum class GateActivation {
    Silu,      // SwiGLU (Llama, Qwen)
    GeluTanh,  // GeGLU with gelu_pytorch_tanh (Gemma)
};

// out = down(act(gate(x)) · up(x)) for n rows, down as column parts (matmul_column_parts). `force_gemm`: take the GEMM path even for a few
// rows (an expert's share of a prefill), so that a prefill's arithmetic does not depend on routing.
void gated_feed_forward(const kernels::WeightMatrix& gate, const kernels::WeightMatrix& up, std::span<const kernels::WeightMatrix> down,
                        const float* x, int64_t n, float* out, FeedForwardScratch& scratch, ThreadPool& pool,
                        GateActivation activation = GateActivation::Silu, bool force_gemm = false);

}  // namespace oxinfer::models
