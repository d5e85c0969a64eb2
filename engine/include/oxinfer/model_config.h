#pragma once
// Typed model configuration, read from config.json (Hugging Face folders) or from GGUF metadata.
// TransformerConfig holds what every decoder-only family shares; families add their own fields
// (and parse them from `raw`) when they arrive.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oxinfer {

class Checkpoint;

struct RopeScaling {
    std::string type;  // "linear", "dynamic", "yarn", "llama3", ...
    double factor = 1.0;
    std::optional<double> low_freq_factor, high_freq_factor;
    std::optional<int64_t> original_max_position_embeddings;
};

struct TransformerConfig {
    std::string architecture;  // Hugging Face class name, e.g. "Qwen3ForCausalLM"
    std::string model_type;    // "qwen3"
    int64_t vocab_size = 0;
    int64_t hidden_size = 0;
    int64_t intermediate_size = 0;
    int64_t num_hidden_layers = 0;
    int64_t num_attention_heads = 0;
    int64_t num_key_value_heads = 0;
    int64_t head_dim = 0;  // hidden_size / num_attention_heads unless given
    int64_t max_position_embeddings = 0;
    double rms_norm_eps = 1e-6;
    double rope_theta = 10000.0;
    double partial_rotary_factor = 1.0;  // the share of head_dim that RoPE rotates
    std::optional<RopeScaling> rope_scaling;
    bool tie_word_embeddings = false;
    std::string torch_dtype;  // "bfloat16", ... ("" when unknown)
    // Mixture of experts (0 when dense).
    int64_t num_experts = 0;
    int64_t num_experts_per_token = 0;
    int64_t moe_intermediate_size = 0;
    // The text model's own config object (config.json, or its text_config for multimodal models).
    nlohmann::json raw;
};

struct GenerationConfig {
    std::optional<int64_t> bos_token_id, pad_token_id;
    std::vector<int64_t> eos_token_ids;
    bool do_sample = false;
    std::optional<double> temperature, top_p, min_p, repetition_penalty;
    std::optional<int64_t> top_k, max_new_tokens;
};

// `subject` names the source in errors ("config.json").
TransformerConfig transformer_config_from_hf(const nlohmann::json& config, const std::string& subject);
TransformerConfig transformer_config_from_gguf(const nlohmann::json& metadata, const std::string& subject);
GenerationConfig generation_config_from_hf(const nlohmann::json& config, const std::string& subject);

// From whichever the checkpoint has; throws oxinfer::Error when it has neither.
TransformerConfig read_transformer_config(const Checkpoint& checkpoint);
// From generation_config.json, falling back to config.json / GGUF tokenizer ids; empty when none.
GenerationConfig read_generation_config(const Checkpoint& checkpoint);

}  // namespace oxinfer
