#include "models/layers.h"

#include "kernels/ops.h"

#include <algorithm>

namespace oxinfer::models {

void grow(std::vector<float>& buffer, int64_t n) {
    if (static_cast<int64_t>(buffer.size()) < n) buffer.resize(static_cast<size_t>(n));
}

void project(std::initializer_list<std::pair<const Linear*, float*>> outputs, const float* x, int64_t tokens, ThreadPool& pool) {
    kernels::MatmulTarget targets[kernels::kMaxMatmulTargets];
    size_t count = 0;
    for (const auto& [linear, y] : outputs) targets[count++] = {&linear->weight, y};
    kernels::matmul_many({targets, count}, x, tokens, pool);
    for (const auto& [linear, y] : outputs) {
        if (linear->bias.empty()) continue;
        const int64_t rows = linear->weight.rows;
        for (int64_t t = 0; t < tokens; ++t) kernels::add(y + t * rows, linear->bias.data(), y + t * rows, rows);
    }
}

int64_t final_norm_and_head(const float* x, int64_t n, int64_t hidden, const std::vector<float>& norm, float eps,
                            const kernels::WeightMatrix& head, bool all_positions, float* logits, float* hidden_out,
                            std::vector<float>& scratch, ThreadPool& pool) {
    if (!logits && !hidden_out) return 0;
    const int64_t rows = all_positions || hidden_out ? n : 1;
    if (!hidden_out) grow(scratch, rows * hidden);
    float* normed = hidden_out ? hidden_out : scratch.data();
    kernels::rms_norm(x + (n - rows) * hidden, norm.data(), normed, rows, hidden, eps);
    if (!logits) return 0;
    const int64_t logit_rows = all_positions ? n : 1;
    kernels::matmul(head, normed + (rows - logit_rows) * hidden, logit_rows, logits, pool);
    return logit_rows;
}

void matmul_column_parts(std::span<const kernels::WeightMatrix> parts, const float* x, int64_t n, float* y, std::vector<float>& scratch,
                         ThreadPool& pool, bool force_gemm) {
    const auto product = force_gemm ? kernels::gemm : kernels::matmul;
    if (parts.size() == 1) {
        product(parts[0], x, n, y, pool);
        return;
    }
    const int64_t rows = parts[0].rows;
    int64_t cols = 0;
    for (const kernels::WeightMatrix& part : parts) cols += part.cols;
    grow(scratch, n * (cols + rows));
    float* columns = scratch.data();
    float* sum = columns + n * cols;
    int64_t first = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
        const int64_t width = parts[p].cols;
        for (int64_t t = 0; t < n; ++t) std::copy(x + t * cols + first, x + t * cols + first + width, columns + t * width);
        product(parts[p], columns, n, p == 0 ? y : sum, pool);
        if (p > 0) kernels::add(y, sum, y, n * rows);
        first += width;
    }
}

void gated_feed_forward(const kernels::WeightMatrix& gate, const kernels::WeightMatrix& up, std::span<const kernels::WeightMatrix> down,
                        const float* x, int64_t n, float* out, FeedForwardScratch& scratch, ThreadPool& pool, GateActivation activation,
                        bool force_gemm) {
    const int64_t inter = gate.rows;
    grow(scratch.gate, n * inter);
    grow(scratch.up, n * inter);
    const auto gated = activation == GateActivation::Silu ? kernels::swiglu : kernels::geglu_tanh;
    float* g = scratch.gate.data();
    const float* u = scratch.up.data();
    if (force_gemm) {
        kernels::gemm(gate, x, n, g, pool);
        kernels::gemm(up, x, n, scratch.up.data(), pool);
        gated(g, u, g, n * inter);
    } else {
        // While decoding, each thread gates the rows it has just computed.
        const kernels::MatmulTarget targets[] = {{&gate, g}, {&up, scratch.up.data()}};
        kernels::matmul_rows_together(targets, x, n, [&](int64_t begin, int64_t end) {
            for (int64_t t = 0; t < n; ++t) gated(g + t * inter + begin, u + t * inter + begin, g + t * inter + begin, end - begin);
        }, pool);
    }
    matmul_column_parts(down, scratch.gate.data(), n, out, scratch.down, pool, force_gemm);
}

}  // namespace oxinfer::models
