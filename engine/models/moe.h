#pragma once
// The sparse mixture-of-experts feed-forward of Qwen3-MoE, Qwen3.5-MoE, Qwen3-Next and Gemma 4: a
// float32 softmax router over all experts, the top k kept (renormalised to sum 1 where the model
// says so, then times a per-expert scale where it has one), each chosen expert a SwiGLU or GeGLU,
// and optionally a shared expert scaled by sigmoid(x · gate).

#include "models/layers.h"
#include "models/weights.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace oxinfer {
class ThreadPool;
}

namespace oxinfer::models {

struct Expert {
    kernels::WeightMatrix gate, up, down;
};

struct MoeWeights {
    kernels::WeightMatrix router;  // [experts, hidden]
    std::vector<Expert> experts;
    int64_t top_k = 0;
    bool renormalize = false;
    GateActivation activation = GateActivation::Silu;
    std::vector<float> expert_scale;  // Gemma 4's per_expert_scale (empty: none)
    // The shared expert (empty when none) and its gate [1, hidden].
    std::optional<Expert> shared;
    kernels::WeightMatrix shared_gate;
};

// Loads layer `prefix` ("model.layers.3."): experts stored one tensor each
// (mlp.experts.E.{gate,up,down}_proj.weight), stacked (mlp.experts.{gate,up,down}_proj.weight, as
// GGUF's ffn_*_exps), or fused as transformers 5 keeps them (mlp.experts.gate_up_proj [E, 2I, d],
// gate rows first, and mlp.experts.down_proj [E, d, I]); with_shared adds mlp.shared_expert.* and
// mlp.shared_expert_gate.weight.
MoeWeights load_moe(WeightStore& weights, const std::string& prefix, int64_t experts, int64_t hidden, int64_t expert_width,
                    int64_t top_k, bool renormalize, int64_t shared_width);

// Experts fused as transformers 5 keeps them: gate_up [E, 2I, d] (gate rows first), down [E, d, I].
std::vector<Expert> load_fused_experts(WeightStore& weights, const TensorInfo& gate_up, const TensorInfo& down, int64_t experts,
                                       int64_t hidden, int64_t width);

class SparseMoe {
public:
    // out[n][hidden] = the block applied to x[n][hidden], routed on router_x (x when null: Gemma 4
    // routes on another view of the token). Tokens are grouped by expert so that each expert's
    // matrices are read once per call.
    void forward(const MoeWeights& moe, const float* x, int64_t n, int64_t hidden, float* out, ThreadPool& pool,
                 const float* router_x = nullptr);

private:
    // Scratch kept between calls (decoding routes every token of every layer).
    std::vector<float> router_, expert_in_, expert_out_, shared_gate_;
    std::vector<std::vector<std::pair<int64_t, float>>> routed_;  // per expert: (token, weight)
    std::vector<int32_t> top_ids_;
    std::vector<float> top_weights_;
    FeedForwardScratch feed_forward_;
};

}  // namespace oxinfer::models
