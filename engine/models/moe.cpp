#include "models/moe.h"

#include "kernels/ops.h"

#include <oxinfer/error.h>

#include <algorithm>
#include <cmath>

namespace oxinfer::models {

std::vector<Expert> load_fused_experts(WeightStore& weights, const TensorInfo& gate_up, const TensorInfo& down, int64_t experts,
                                       int64_t hidden, int64_t width) {
    std::vector<Expert> out(static_cast<size_t>(experts));
    for (int64_t e = 0; e < experts; ++e) {
        Expert& expert = out[static_cast<size_t>(e)];
        expert.gate = weights.stacked_matrix(gate_up, e, 2 * width, hidden, 0, width);
        expert.up = weights.stacked_matrix(gate_up, e, 2 * width, hidden, width, width);
        expert.down = weights.stacked_matrix(down, e, hidden, width);
    }
    return out;
}

MoeWeights load_moe(WeightStore& weights, const std::string& p, int64_t experts, int64_t hidden, int64_t width, int64_t top_k,
                    bool renormalize, int64_t shared_width) {
    MoeWeights moe;
    moe.top_k = top_k;
    moe.renormalize = renormalize;
    moe.router = weights.matrix(weights.get(p + "mlp.gate.weight"), experts, hidden);
    if (const TensorInfo* gate_up = weights.find(p + "mlp.experts.gate_up_proj")) {
        moe.experts = load_fused_experts(weights, *gate_up, weights.get(p + "mlp.experts.down_proj"), experts, hidden, width);
    } else {
        const TensorInfo* gate_stack = weights.find(p + "mlp.experts.gate_proj.weight");
        moe.experts.resize(static_cast<size_t>(experts));
        for (int64_t e = 0; e < experts; ++e) {
            Expert& expert = moe.experts[static_cast<size_t>(e)];
            if (gate_stack) {
                expert.gate = weights.stacked_matrix(*gate_stack, e, width, hidden);
                expert.up = weights.stacked_matrix(weights.get(p + "mlp.experts.up_proj.weight"), e, width, hidden);
                expert.down = weights.stacked_matrix(weights.get(p + "mlp.experts.down_proj.weight"), e, hidden, width);
            } else {
                const std::string q = p + "mlp.experts." + std::to_string(e) + ".";
                expert.gate = weights.matrix(weights.get(q + "gate_proj.weight"), width, hidden);
                expert.up = weights.matrix(weights.get(q + "up_proj.weight"), width, hidden);
                expert.down = weights.matrix(weights.get(q + "down_proj.weight"), hidden, width);
            }
        }
    }
    if (shared_width > 0) {
        const std::string q = p + "mlp.shared_expert.";
        moe.shared = Expert{weights.matrix(weights.get(q + "gate_proj.weight"), shared_width, hidden),
                            weights.matrix(weights.get(q + "up_proj.weight"), shared_width, hidden),
                            weights.matrix(weights.get(q + "down_proj.weight"), hidden, shared_width)};
        // [1, hidden] in transformers; llama.cpp's {hidden, 1} reads as [1, hidden] too.
        const TensorInfo& gate = weights.get(p + "mlp.shared_expert_gate.weight");
        if (gate.elements() != hidden)
            throw Error(weights.checkpoint().path().string(), "tensor '" + gate.name + "' should hold " + std::to_string(hidden) + " values");
        TensorInfo as_row = gate;
        as_row.shape = {1, hidden};
        moe.shared_gate = weights.matrix(as_row, 1, hidden);
    }
    return moe;
}

void SparseMoe::forward(const MoeWeights& moe, const float* x, int64_t n, int64_t hidden, float* out, ThreadPool& pool,
                        const float* router_x) {
    const int64_t experts = static_cast<int64_t>(moe.experts.size()), k = moe.top_k;
    grow(router_, n * experts);
    kernels::matmul(moe.router, router_x ? router_x : x, n, router_.data(), pool);
    kernels::softmax(router_.data(), n, experts);
    routed_.resize(static_cast<size_t>(experts));
    for (auto& tokens : routed_) tokens.clear();
    top_ids_.resize(static_cast<size_t>(k));
    top_weights_.resize(static_cast<size_t>(k));
    for (int64_t t = 0; t < n; ++t) {
        kernels::top_k(router_.data() + t * experts, experts, k, top_ids_.data(), top_weights_.data());
        float sum = 0.0f;
        for (float w : top_weights_) sum += w;
        for (int64_t j = 0; j < k; ++j) {
            const int32_t e = top_ids_[static_cast<size_t>(j)];
            float w = top_weights_[static_cast<size_t>(j)];
            if (moe.renormalize) w /= sum;
            if (!moe.expert_scale.empty()) w *= moe.expert_scale[static_cast<size_t>(e)];
            routed_[static_cast<size_t>(e)].push_back({t, w});
        }
    }
    // The shared expert first: its output is the base the routed ones add to.
    if (moe.shared) {
        gated_feed_forward(moe.shared->gate, moe.shared->up, {&moe.shared->down, 1}, x, n, out, feed_forward_, pool);
        grow(shared_gate_, n);
        kernels::matmul(moe.shared_gate, x, n, shared_gate_.data(), pool);
        for (int64_t t = 0; t < n; ++t) {
            const float g = 1.0f / (1.0f + std::exp(-shared_gate_[static_cast<size_t>(t)]));
            for (int64_t j = 0; j < hidden; ++j) out[t * hidden + j] *= g;
        }
    } else {
        std::fill(out, out + n * hidden, 0.0f);
    }
    grow(expert_in_, n * hidden);
    grow(expert_out_, n * hidden);
    for (int64_t e = 0; e < experts; ++e) {
        const auto& tokens = routed_[static_cast<size_t>(e)];
        if (tokens.empty()) continue;
        const int64_t m = static_cast<int64_t>(tokens.size());
        for (int64_t i = 0; i < m; ++i)
            std::copy_n(x + tokens[static_cast<size_t>(i)].first * hidden, hidden, expert_in_.data() + i * hidden);
        const Expert& expert = moe.experts[static_cast<size_t>(e)];
        // An expert's share of a prefill may be a few tokens: GEMM anyway (see gated_feed_forward).
        gated_feed_forward(expert.gate, expert.up, {&expert.down, 1}, expert_in_.data(), m, expert_out_.data(), feed_forward_, pool,
                           moe.activation, n > kernels::kGemvMaxTokens);
        for (int64_t i = 0; i < m; ++i) {
            float* row = out + tokens[static_cast<size_t>(i)].first * hidden;
            const float w = tokens[static_cast<size_t>(i)].second;
            const float* y = expert_out_.data() + i * hidden;
            for (int64_t j = 0; j < hidden; ++j) row[j] += w * y[j];
        }
    }
}

}  // namespace oxinfer::models
