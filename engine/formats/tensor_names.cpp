#include <oxinfer/tensor_names.h>

#include <charconv>
#include <vector>

namespace oxinfer {
namespace {

struct NamePair {
    std::string_view gguf;
    std::string_view hf;
};

// Whole-tensor names outside the layer stack.
constexpr NamePair kGlobalNames[] = {
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
    // Gemma 4's per-layer embeddings (PLE).
    {"per_layer_token_embd.weight", "model.embed_tokens_per_layer.weight"},
    {"per_layer_model_proj.weight", "model.per_layer_model_projection.weight"},
    {"per_layer_proj_norm.weight", "model.per_layer_projection_norm.weight"},
    // Gemma 4's assistant (draft model): to and from the main model's width.
    {"nextn.pre_projection.weight", "pre_projection.weight"},
    {"nextn.post_projection.weight", "post_projection.weight"},
};

// Per-layer suffixes, after "blk.N." and "model.layers.N.". Fused MoE expert tensors (one 3-D
// tensor per projection) map to the stacked names that newer transformers versions use.
constexpr NamePair kLayerNames[] = {
    {"attn_norm", "input_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
    {"ffn_gate_inp", "mlp.gate"},
    {"ffn_gate_exps", "mlp.experts.gate_proj"},
    {"ffn_up_exps", "mlp.experts.up_proj"},
    {"ffn_down_exps", "mlp.experts.down_proj"},
    {"ffn_gate_shexp", "mlp.shared_expert.gate_proj"},
    {"ffn_up_shexp", "mlp.shared_expert.up_proj"},
    {"ffn_down_shexp", "mlp.shared_expert.down_proj"},
    {"ffn_gate_inp_shexp", "mlp.shared_expert_gate"},
};

// Gemma places norms around both blocks: llama.cpp's names keep their positions, HF's their roles.
constexpr NamePair kGemmaLayerNames[] = {
    {"attn_norm", "input_layernorm"},
    {"post_attention_norm", "post_attention_layernorm"},
    {"ffn_norm", "pre_feedforward_layernorm"},
    {"post_ffw_norm", "post_feedforward_layernorm"},
    {"inp_gate", "per_layer_input_gate"},  // Gemma 4's per-layer input
    {"proj", "per_layer_projection"},
    {"post_norm", "post_per_layer_input_norm"},
    {"ffn_gate_inp", "router.proj"},  // Gemma 4's experts (26B-A4B)
    {"pre_ffw_norm_2", "pre_feedforward_layernorm_2"},
    {"post_ffw_norm_1", "post_feedforward_layernorm_1"},
    {"post_ffw_norm_2", "post_feedforward_layernorm_2"},
};

// Gemma 4 layer tensors whose whole names map.
constexpr NamePair kGemmaWholeNames[] = {
    {"layer_output_scale.weight", "layer_scalar"},
    {"ffn_gate_inp.scale", "router.scale"},
    {"ffn_down_exps.scale", "router.per_expert_scale"},
    {"ffn_gate_up_exps.weight", "experts.gate_up_proj"},
    {"ffn_down_exps.weight", "experts.down_proj"},
};

// Qwen3.5 and Qwen3-Next: the pre-FFN norm under its llama.cpp name, and the Gated DeltaNet
// tensors. Two of them have no ".weight" (see kQwen35WholeNames).
constexpr NamePair kQwen35LayerNames[] = {
    {"post_attention_norm", "post_attention_layernorm"},
    {"attn_qkv", "linear_attn.in_proj_qkv"},
    {"attn_gate", "linear_attn.in_proj_z"},
    {"ssm_beta", "linear_attn.in_proj_b"},
    {"ssm_alpha", "linear_attn.in_proj_a"},
    {"ssm_ba", "linear_attn.in_proj_ba"},  // Qwen3-Next: b and a fused, grouped per key head
    {"ssm_conv1d", "linear_attn.conv1d"},
    {"ssm_norm", "linear_attn.norm"},
    {"ssm_out", "linear_attn.out_proj"},
};

// Layer tensors whose whole names map (after "blk.N." / "model.layers.N.").
constexpr NamePair kQwen35WholeNames[] = {
    {"ssm_a", "linear_attn.A_log"},  // llama.cpp stores -exp(A_log)
    {"ssm_dt.bias", "linear_attn.dt_bias"},
};

struct ArchPair {
    std::string_view gguf;
    std::string_view hf;
};

constexpr ArchPair kArchitectures[] = {
    {"llama", "LlamaForCausalLM"},     {"qwen2", "Qwen2ForCausalLM"},       {"qwen3", "Qwen3ForCausalLM"},
    {"qwen3moe", "Qwen3MoeForCausalLM"}, {"gemma", "GemmaForCausalLM"},     {"gemma2", "Gemma2ForCausalLM"},
    {"gemma3", "Gemma3ForCausalLM"},   {"gemma4", "Gemma4ForCausalLM"},     {"gemma4-assistant", "Gemma4AssistantForCausalLM"},     {"qwen35", "Qwen3_5ForCausalLM"},    {"qwen35moe", "Qwen3_5MoeForCausalLM"},
    {"qwen3next", "Qwen3NextForCausalLM"},
};

bool is_gemma(std::string_view arch) { return arch.rfind("gemma", 0) == 0; }
bool is_qwen35(std::string_view arch) { return arch == "qwen35" || arch == "qwen35moe" || arch == "qwen3next"; }

std::vector<NamePair> layer_names(std::string_view arch) {
    std::vector<NamePair> names;
    if (is_gemma(arch)) names.assign(std::begin(kGemmaLayerNames), std::end(kGemmaLayerNames));
    if (is_qwen35(arch)) names.assign(std::begin(kQwen35LayerNames), std::end(kQwen35LayerNames));
    for (const NamePair& pair : kLayerNames) {
        bool overridden = false;
        for (const NamePair& taken : names) overridden = overridden || taken.gguf == pair.gguf || taken.hf == pair.hf;
        if (!overridden) names.push_back(pair);
    }
    return names;
}

// Splits "<prefix><layer>.<rest>" into layer and rest.
bool split_layer(std::string_view name, std::string_view prefix, int& layer, std::string_view& rest) {
    if (name.substr(0, prefix.size()) != prefix) return false;
    name.remove_prefix(prefix.size());
    const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), layer);
    if (error != std::errc() || end == name.data() || end == name.data() + name.size() || *end != '.') return false;
    rest = std::string_view(end + 1, static_cast<size_t>(name.data() + name.size() - end - 1));
    return true;
}

// Maps "<suffix>.<weight|bias|...>" through the pairs, `from` side to `to` side.
std::optional<std::string> map_suffix(std::string_view rest, std::string_view arch, bool to_hf) {
    if (is_qwen35(arch))
        for (const NamePair& pair : kQwen35WholeNames)
            if ((to_hf ? pair.gguf : pair.hf) == rest) return std::string(to_hf ? pair.hf : pair.gguf);
    if (is_gemma(arch))
        for (const NamePair& pair : kGemmaWholeNames)
            if ((to_hf ? pair.gguf : pair.hf) == rest) return std::string(to_hf ? pair.hf : pair.gguf);
    const std::vector<NamePair> pairs = layer_names(arch);
    const auto dot = rest.rfind('.');
    if (dot == std::string_view::npos) return std::nullopt;
    const std::string_view stem = rest.substr(0, dot);
    for (const NamePair& pair : pairs)
        if ((to_hf ? pair.gguf : pair.hf) == stem) return std::string(to_hf ? pair.hf : pair.gguf) + std::string(rest.substr(dot));
    return std::nullopt;
}

}  // namespace

std::optional<std::string> hf_tensor_name(std::string_view gguf_name, std::string_view gguf_arch) {
    for (const NamePair& pair : kGlobalNames)
        if (pair.gguf == gguf_name) return std::string(pair.hf);
    int layer = 0;
    std::string_view rest;
    if (!split_layer(gguf_name, "blk.", layer, rest)) return std::nullopt;
    auto mapped = map_suffix(rest, gguf_arch, true);
    if (!mapped) return std::nullopt;
    return "model.layers." + std::to_string(layer) + "." + *mapped;
}

std::optional<std::string> gguf_tensor_name(std::string_view hf_name, std::string_view gguf_arch) {
    for (const NamePair& pair : kGlobalNames)
        if (pair.hf == hf_name) return std::string(pair.gguf);
    int layer = 0;
    std::string_view rest;
    if (!split_layer(hf_name, "model.layers.", layer, rest)) return std::nullopt;
    auto mapped = map_suffix(rest, gguf_arch, false);
    if (!mapped) return std::nullopt;
    return "blk." + std::to_string(layer) + "." + *mapped;
}

std::optional<std::string> hf_architecture(std::string_view gguf_arch) {
    for (const ArchPair& pair : kArchitectures)
        if (pair.gguf == gguf_arch) return std::string(pair.hf);
    return std::nullopt;
}

std::optional<std::string> gguf_architecture(std::string_view hf_arch) {
    for (const ArchPair& pair : kArchitectures)
        if (pair.hf == hf_arch) return std::string(pair.gguf);
    return std::nullopt;
}

}  // namespace oxinfer
