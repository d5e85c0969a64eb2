#include <oxinfer/checkpoint.h>
#include <oxinfer/error.h>
#include <oxinfer/model_config.h>
#include <oxinfer/tensor_names.h>

#include <algorithm>

namespace oxinfer {
namespace {

using json = nlohmann::json;

// Typed field access that names the file and key in every error.
class Fields {
public:
    Fields(const json& object, std::string subject) : object_(object), subject_(std::move(subject)) {}

    const json* find(const std::string& key) const {
        const auto it = object_.find(key);
        return it == object_.end() || it->is_null() ? nullptr : &*it;
    }

    int64_t integer(const std::string& key) const {
        const json* value = find(key);
        if (!value) throw Error(subject_, "missing '" + key + "'");
        return to_integer(*value, key);
    }

    std::optional<int64_t> optional_integer(const std::string& key) const {
        const json* value = find(key);
        return value ? std::optional(to_integer(*value, key)) : std::nullopt;
    }

    // A value llama.cpp writes as one number or one per layer (Gemma 4's feed_forward_length and
    // head_count_kv): the first layer's; the model reads the whole list.
    std::optional<int64_t> optional_first_integer(const std::string& key) const {
        const json* value = find(key);
        if (value && value->is_array()) {
            if (value->empty()) throw Error(subject_, "'" + key + "' is an empty list");
            return to_integer(value->front(), key);
        }
        return optional_integer(key);
    }

    std::optional<double> optional_number(const std::string& key) const {
        const json* value = find(key);
        if (!value) return std::nullopt;
        if (!value->is_number()) throw Error(subject_, "'" + key + "' is not a number");
        return value->get<double>();
    }

    std::optional<std::string> optional_string(const std::string& key) const {
        const json* value = find(key);
        if (!value) return std::nullopt;
        if (!value->is_string()) throw Error(subject_, "'" + key + "' is not a string");
        return value->get<std::string>();
    }

    std::optional<bool> optional_bool(const std::string& key) const {
        const json* value = find(key);
        if (!value) return std::nullopt;
        if (!value->is_boolean()) throw Error(subject_, "'" + key + "' is not true or false");
        return value->get<bool>();
    }

    // An id or a list of ids (eos_token_id is either).
    std::vector<int64_t> integer_list(const std::string& key) const {
        const json* value = find(key);
        if (!value) return {};
        if (!value->is_array()) return {to_integer(*value, key)};
        std::vector<int64_t> out;
        for (const json& item : *value) out.push_back(to_integer(item, key));
        return out;
    }

private:
    int64_t to_integer(const json& value, const std::string& key) const {
        if (!value.is_number_integer()) throw Error(subject_, "'" + key + "' is not an integer");
        return value.get<int64_t>();
    }

    const json& object_;
    std::string subject_;
};

void require_positive(int64_t value, const char* key, const std::string& subject) {
    if (value <= 0) throw Error(subject, std::string("'") + key + "' must be positive, not " + std::to_string(value));
}

void finish(TransformerConfig& config, const std::string& subject) {
    require_positive(config.hidden_size, "hidden_size", subject);
    require_positive(config.num_hidden_layers, "num_hidden_layers", subject);
    require_positive(config.num_attention_heads, "num_attention_heads", subject);
    if (config.num_key_value_heads == 0) config.num_key_value_heads = config.num_attention_heads;
    if (config.num_attention_heads % config.num_key_value_heads != 0)
        throw Error(subject, "num_attention_heads (" + std::to_string(config.num_attention_heads) +
                                 ") is not a multiple of num_key_value_heads (" + std::to_string(config.num_key_value_heads) + ")");
    if (config.head_dim == 0) {
        if (config.hidden_size % config.num_attention_heads != 0)
            throw Error(subject, "hidden_size is not divisible by num_attention_heads and no head_dim is given");
        config.head_dim = config.hidden_size / config.num_attention_heads;
    }
}

}  // namespace

TransformerConfig transformer_config_from_hf(const json& root, const std::string& subject) {
    if (!root.is_object()) throw Error(subject, "config is not a JSON object");
    TransformerConfig config;
    const Fields top(root, subject);
    if (const json* architectures = top.find("architectures"); architectures && architectures->is_array() && !architectures->empty() &&
                                                               (*architectures)[0].is_string())
        config.architecture = (*architectures)[0].get<std::string>();
    // Multimodal checkpoints keep the language model's settings in text_config.
    const json* text = top.find("text_config");
    const json& object = text && text->is_object() ? *text : root;
    const Fields fields(object, subject);

    config.model_type = fields.optional_string("model_type").value_or(top.optional_string("model_type").value_or(""));
    config.vocab_size = fields.integer("vocab_size");
    config.hidden_size = fields.integer("hidden_size");
    config.intermediate_size = fields.optional_integer("intermediate_size").value_or(0);
    config.num_hidden_layers = fields.integer("num_hidden_layers");
    config.num_attention_heads = fields.integer("num_attention_heads");
    config.num_key_value_heads = fields.optional_integer("num_key_value_heads").value_or(0);
    config.head_dim = fields.optional_integer("head_dim").value_or(0);
    config.max_position_embeddings = fields.optional_integer("max_position_embeddings").value_or(0);
    config.rms_norm_eps = fields.optional_number("rms_norm_eps").value_or(1e-6);
    config.rope_theta = fields.optional_number("rope_theta").value_or(10000.0);
    config.tie_word_embeddings =
        fields.optional_bool("tie_word_embeddings").value_or(top.optional_bool("tie_word_embeddings").value_or(false));
    config.torch_dtype = fields.optional_string("torch_dtype").value_or(top.optional_string("torch_dtype").value_or(""));
    config.num_experts = fields.optional_integer("num_experts").value_or(fields.optional_integer("num_local_experts").value_or(0));
    config.num_experts_per_token = fields.optional_integer("num_experts_per_tok").value_or(0);
    config.moe_intermediate_size = fields.optional_integer("moe_intermediate_size").value_or(0);
    config.partial_rotary_factor = fields.optional_number("partial_rotary_factor").value_or(1.0);
    // Newer configs (transformers 5) gather theta, scaling and partial rotary in rope_parameters.
    const json* parameters = fields.find("rope_parameters");
    if (parameters && parameters->is_object()) {
        const Fields rope(*parameters, subject + " rope_parameters");
        config.rope_theta = rope.optional_number("rope_theta").value_or(config.rope_theta);
        config.partial_rotary_factor = rope.optional_number("partial_rotary_factor").value_or(config.partial_rotary_factor);
    }
    const json* scaling = fields.find("rope_scaling");
    if (!(scaling && scaling->is_object()) && parameters && parameters->is_object()) scaling = parameters;
    if (scaling && scaling->is_object()) {
        const Fields rope(*scaling, subject + " rope_scaling");
        RopeScaling parsed;
        parsed.type = rope.optional_string("rope_type").value_or(rope.optional_string("type").value_or(""));
        parsed.factor = rope.optional_number("factor").value_or(1.0);
        parsed.low_freq_factor = rope.optional_number("low_freq_factor");
        parsed.high_freq_factor = rope.optional_number("high_freq_factor");
        parsed.original_max_position_embeddings = rope.optional_integer("original_max_position_embeddings");
        config.rope_scaling = parsed;
    }
    config.raw = object;
    finish(config, subject);
    return config;
}

TransformerConfig transformer_config_from_gguf(const json& metadata, const std::string& subject) {
    const Fields top(metadata, subject);
    const auto arch = top.optional_string("general.architecture");
    if (!arch) throw Error(subject, "missing 'general.architecture'");
    const std::string p = *arch + ".";
    TransformerConfig config;
    config.model_type = *arch;
    config.architecture = hf_architecture(*arch).value_or("");
    config.hidden_size = top.integer(p + "embedding_length");
    // block_count includes the multi-token-prediction layers llama.cpp appends after the trunk; a
    // draft model made only of such layers (gemma4-assistant) keeps them all.
    const int64_t blocks = top.integer(p + "block_count"), nextn = top.optional_integer(p + "nextn_predict_layers").value_or(0);
    if (nextn < 0 || nextn > blocks) throw Error(subject, "'" + p + "nextn_predict_layers' is not in [0, block_count]");
    config.num_hidden_layers = *arch == "gemma4-assistant" ? blocks : blocks - nextn;
    config.intermediate_size = top.optional_first_integer(p + "feed_forward_length").value_or(0);
    config.num_attention_heads = top.integer(p + "attention.head_count");
    config.num_key_value_heads = top.optional_first_integer(p + "attention.head_count_kv").value_or(0);
    config.head_dim = top.optional_integer(p + "attention.key_length").value_or(0);
    config.max_position_embeddings = top.optional_integer(p + "context_length").value_or(0);
    config.rms_norm_eps = top.optional_number(p + "attention.layer_norm_rms_epsilon").value_or(1e-6);
    config.rope_theta = top.optional_number(p + "rope.freq_base").value_or(10000.0);
    config.num_experts = top.optional_integer(p + "expert_count").value_or(0);
    config.num_experts_per_token = top.optional_integer(p + "expert_used_count").value_or(0);
    config.moe_intermediate_size = top.optional_integer(p + "expert_feed_forward_length").value_or(0);
    if (auto vocab = top.optional_integer(p + "vocab_size")) {
        config.vocab_size = *vocab;
    } else if (const json* tokens = top.find("tokenizer.ggml.tokens"); tokens && tokens->is_array()) {
        config.vocab_size = static_cast<int64_t>(tokens->size());
    }
    if (auto type = top.optional_string(p + "rope.scaling.type"); type && *type != "none") {
        RopeScaling scaling;
        scaling.type = *type;
        scaling.factor = top.optional_number(p + "rope.scaling.factor").value_or(1.0);
        scaling.original_max_position_embeddings = top.optional_integer(p + "rope.scaling.original_context_length");
        config.rope_scaling = scaling;
    }
    config.raw = metadata;
    finish(config, subject);
    if (auto rotary = top.optional_integer(p + "rope.dimension_count"))
        config.partial_rotary_factor = static_cast<double>(*rotary) / static_cast<double>(config.head_dim);
    return config;
}

GenerationConfig generation_config_from_hf(const json& object, const std::string& subject) {
    if (!object.is_object()) throw Error(subject, "generation config is not a JSON object");
    const Fields fields(object, subject);
    GenerationConfig config;
    config.bos_token_id = fields.optional_integer("bos_token_id");
    config.pad_token_id = fields.optional_integer("pad_token_id");
    config.eos_token_ids = fields.integer_list("eos_token_id");
    config.do_sample = fields.optional_bool("do_sample").value_or(false);
    config.temperature = fields.optional_number("temperature");
    config.top_p = fields.optional_number("top_p");
    config.min_p = fields.optional_number("min_p");
    config.repetition_penalty = fields.optional_number("repetition_penalty");
    config.top_k = fields.optional_integer("top_k");
    config.max_new_tokens = fields.optional_integer("max_new_tokens");
    return config;
}

TransformerConfig read_transformer_config(const Checkpoint& checkpoint) {
    const json& metadata = checkpoint.metadata();
    TransformerConfig config;
    if (auto it = metadata.find("config"); it != metadata.end()) {
        config = transformer_config_from_hf(*it, (checkpoint.path() / "config.json").string());
    } else if (metadata.contains("general.architecture")) {
        config = transformer_config_from_gguf(metadata, checkpoint.path().string());
        // GGUF has no flag for tied embeddings: an absent output.weight means the head reuses them.
        config.tie_word_embeddings = checkpoint.find("output.weight") == nullptr;
    } else {
        throw Error(checkpoint.path().string(), "has no model configuration (no config.json beside the weights, no GGUF metadata)");
    }
    return config;
}

GenerationConfig read_generation_config(const Checkpoint& checkpoint) {
    const json& metadata = checkpoint.metadata();
    if (auto it = metadata.find("generation_config"); it != metadata.end())
        return generation_config_from_hf(*it, (checkpoint.path() / "generation_config.json").string());
    if (auto it = metadata.find("config"); it != metadata.end()) {
        const json& config = it->contains("text_config") && (*it)["text_config"].contains("eos_token_id") ? (*it)["text_config"] : *it;
        return generation_config_from_hf(config, (checkpoint.path() / "config.json").string());
    }
    GenerationConfig config;
    const Fields fields(metadata, checkpoint.path().string());
    config.bos_token_id = fields.optional_integer("tokenizer.ggml.bos_token_id");
    config.pad_token_id = fields.optional_integer("tokenizer.ggml.padding_token_id");
    config.eos_token_ids = fields.integer_list("tokenizer.ggml.eos_token_id");
    if (auto eot = fields.optional_integer("tokenizer.ggml.eot_token_id"); eot && std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), *eot) == config.eos_token_ids.end())
        config.eos_token_ids.push_back(*eot);
    return config;
}

}  // namespace oxinfer
