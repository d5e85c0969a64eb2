#include <oxinfer/synth.h>

#include "formats/ggml_quantize.h"
#include "formats/gguf_writer.h"
#include "kernels/thread_pool.h"
#include "models/rope_frequencies.h"

#include <oxinfer/atomic_file.h>
#include <oxinfer/error.h>
#include <oxinfer/model_config.h>
#include <oxinfer/tensor_names.h>

#include <cmath>
#include <cstring>
#include <fstream>

namespace oxinfer {
namespace {

// general.file_type holds llama.cpp's llama_ftype (what the file mostly is), not a ggml type id.
uint32_t llama_file_type(DType type) {
    switch (type) {
        case DType::F32: return 0;
        case DType::F16: return 1;
        case DType::Q4_0: return 2;
        case DType::Q8_0: return 7;
        case DType::Q4_K: return 14;  // MOSTLY_Q4_K_S: every matrix Q4_K
        case DType::Q6_K: return 18;
        case DType::BF16: return 32;
        default: throw Error("synth", "no llama.cpp file type for " + std::string(dtype_name(type)));
    }
}

using json = nlohmann::json;

json qwen3_dense(int64_t hidden, int64_t inter, int64_t layers, bool tied) {
    return {{"architectures", {"Qwen3ForCausalLM"}}, {"model_type", "qwen3"}, {"vocab_size", 151936}, {"hidden_size", hidden},
            {"intermediate_size", inter}, {"num_hidden_layers", layers}, {"num_attention_heads", 16}, {"num_key_value_heads", 8},
            {"head_dim", 128}, {"max_position_embeddings", 40960}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0},
            {"tie_word_embeddings", tied}, {"attention_bias", false}, {"torch_dtype", "bfloat16"}, {"eos_token_id", 151645},
            {"bos_token_id", 151643}};
}

// Qwen3.5 text models as their text-only export (Qwen3_5ForCausalLM); sizes from the released
// configs (../shared/specs/arch-specs.md section 3.1).
json qwen35_dense(int64_t hidden, int64_t inter, int64_t layers, int64_t heads, int64_t kv_heads, int64_t value_heads, bool tied) {
    return {{"architectures", {"Qwen3_5ForCausalLM"}}, {"model_type", "qwen3_5_text"}, {"vocab_size", 248320}, {"hidden_size", hidden},
            {"intermediate_size", inter}, {"num_hidden_layers", layers}, {"num_attention_heads", heads},
            {"num_key_value_heads", kv_heads}, {"head_dim", 256}, {"linear_num_key_heads", 16}, {"linear_num_value_heads", value_heads},
            {"linear_key_head_dim", 128}, {"linear_value_head_dim", 128}, {"linear_conv_kernel_dim", 4}, {"full_attention_interval", 4},
            {"max_position_embeddings", 262144}, {"rms_norm_eps", 1e-6}, {"hidden_act", "silu"},
            {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 10000000.0}, {"partial_rotary_factor", 0.25},
                                 {"mrope_section", {11, 11, 10}}, {"mrope_interleaved", true}}},
            {"tie_word_embeddings", tied}, {"attention_bias", false}, {"torch_dtype", "bfloat16"}, {"eos_token_id", 248044},
            {"mtp_num_hidden_layers", 1}};
}

// Gemma 4 text models as their text-only export (Gemma4ForCausalLM); sizes from the released
// configs (../shared/specs/arch-specs.md section 2.1). `full_every`: each full_every-th layer is
// full attention, the last one always.
json gemma4_text(int64_t hidden, int64_t inter, int64_t layers, int64_t kv_heads, int64_t full_every, int64_t shared, bool double_wide) {
    json types = json::array();
    for (int64_t i = 0; i < layers; ++i)
        types.push_back((i + 1) % full_every == 0 || i + 1 == layers ? "full_attention" : "sliding_attention");
    return {{"architectures", {"Gemma4ForCausalLM"}}, {"model_type", "gemma4_text"}, {"vocab_size", 262144}, {"hidden_size", hidden},
            {"intermediate_size", inter}, {"num_hidden_layers", layers}, {"num_attention_heads", 8}, {"num_key_value_heads", kv_heads},
            {"head_dim", 256}, {"global_head_dim", 512}, {"attention_k_eq_v", false}, {"hidden_activation", "gelu_pytorch_tanh"},
            {"rms_norm_eps", 1e-6}, {"sliding_window", 512}, {"layer_types", types},
            {"rope_parameters", {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
                                 {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1000000.0}}}}},
            {"final_logit_softcapping", 30.0}, {"vocab_size_per_layer_input", 262144}, {"hidden_size_per_layer_input", 256},
            {"num_kv_shared_layers", shared}, {"use_double_wide_mlp", double_wide}, {"enable_moe_block", false},
            {"max_position_embeddings", 131072}, {"tie_word_embeddings", true}, {"torch_dtype", "bfloat16"}, {"bos_token_id", 2},
            {"eos_token_id", {1, 106}}, {"pad_token_id", 0}};
}

json shape_config(const std::string& shape) {
    if (shape == "gemma-3-1b")
        return {{"architectures", {"Gemma3ForCausalLM"}}, {"model_type", "gemma3_text"}, {"vocab_size", 262144}, {"hidden_size", 1152},
                {"intermediate_size", 6912}, {"num_hidden_layers", 26}, {"num_attention_heads", 4}, {"num_key_value_heads", 1},
                {"head_dim", 256}, {"query_pre_attn_scalar", 256}, {"sliding_window", 512}, {"sliding_window_pattern", 6},
                {"rope_theta", 1000000.0}, {"rope_local_base_freq", 10000.0}, {"rms_norm_eps", 1e-6},
                {"hidden_activation", "gelu_pytorch_tanh"}, {"max_position_embeddings", 32768}, {"tie_word_embeddings", true},
                {"torch_dtype", "bfloat16"}, {"bos_token_id", 2}, {"eos_token_id", {1, 106}}, {"pad_token_id", 0}};
    if (shape == "gemma-4-e2b") return gemma4_text(1536, 6144, 35, 1, 5, 20, true);
    if (shape == "gemma-4-e2b-assistant") {
        // The E2B drafter's released config, without the centroids (as llama.cpp's converter
        // writes it: full-vocabulary logits).
        json text = gemma4_text(256, 2048, 4, 1, 4, 4, false);
        text.update({{"num_attention_heads", 4}, {"hidden_size_per_layer_input", 0}, {"vocab_size_per_layer_input", 0},
                     {"final_logit_softcapping", nullptr}});
        text.erase("architectures");
        return {{"architectures", {"Gemma4AssistantForCausalLM"}}, {"model_type", "gemma4_assistant"}, {"backbone_hidden_size", 1536},
                {"use_ordered_embeddings", false}, {"tie_word_embeddings", true}, {"text_config", text}};
    }
    if (shape == "gemma-4-e4b") return gemma4_text(2560, 10240, 42, 2, 6, 18, false);
    if (shape == "qwen3.5-0.8b") return qwen35_dense(1024, 3584, 24, 8, 2, 16, true);
    if (shape == "qwen3.5-2b") return qwen35_dense(2048, 6144, 24, 8, 2, 16, true);
    if (shape == "qwen3.5-4b") return qwen35_dense(2560, 9216, 32, 16, 4, 32, true);
    if (shape == "qwen3.5-35b-a3b") {
        json config = qwen35_dense(2048, 0, 4, 16, 2, 32, false);
        config["architectures"] = {"Qwen3_5MoeForCausalLM"};
        config["model_type"] = "qwen3_5_moe_text";
        config.erase("intermediate_size");
        config.update({{"num_experts", 256}, {"num_experts_per_tok", 8}, {"moe_intermediate_size", 512},
                       {"shared_expert_intermediate_size", 512}});
        return config;
    }
    if (shape == "qwen3-0.6b") return qwen3_dense(1024, 3072, 28, true);
    if (shape == "qwen3-1.7b") return qwen3_dense(2048, 6144, 28, true);
    if (shape == "llama-3.2-1b")
        return {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"vocab_size", 128256}, {"hidden_size", 2048},
                {"intermediate_size", 8192}, {"num_hidden_layers", 16}, {"num_attention_heads", 32}, {"num_key_value_heads", 8},
                {"head_dim", 64}, {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-5}, {"rope_theta", 500000.0},
                {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                                  {"original_max_position_embeddings", 8192}}},
                {"tie_word_embeddings", true}, {"attention_bias", false}, {"mlp_bias", false}, {"torch_dtype", "bfloat16"},
                {"bos_token_id", 128000}, {"eos_token_id", 128001}};
    if (shape == "qwen2.5-0.5b")
        return {{"architectures", {"Qwen2ForCausalLM"}}, {"model_type", "qwen2"}, {"vocab_size", 151936}, {"hidden_size", 896},
                {"intermediate_size", 4864}, {"num_hidden_layers", 24}, {"num_attention_heads", 14}, {"num_key_value_heads", 2},
                {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0}, {"tie_word_embeddings", true},
                {"use_sliding_window", false}, {"torch_dtype", "bfloat16"}, {"eos_token_id", 151643}};
    if (shape == "qwen3-30b-a3b")
        return {{"architectures", {"Qwen3MoeForCausalLM"}}, {"model_type", "qwen3_moe"}, {"vocab_size", 151936}, {"hidden_size", 2048},
                {"intermediate_size", 6144}, {"num_hidden_layers", 2}, {"num_attention_heads", 32}, {"num_key_value_heads", 4},
                {"head_dim", 128}, {"max_position_embeddings", 40960}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0},
                {"tie_word_embeddings", false}, {"attention_bias", false}, {"num_experts", 128}, {"num_experts_per_tok", 8},
                {"moe_intermediate_size", 768}, {"norm_topk_prob", true}, {"decoder_sparse_step", 1}, {"mlp_only_layers", json::array()},
                {"torch_dtype", "bfloat16"}, {"eos_token_id", 151645}};
    return nullptr;
}

struct SynthTensor {
    std::string name;  // as written
    std::vector<int64_t> shape;
    bool norm;  // filled with ones, stored f32 in GGUF
    bool f32_in_gguf = false;  // small random tensors llama.cpp keeps in f32 (the DeltaNet's conv, A, dt bias)
    bool negative = false;     // GGUF ssm_a holds -exp(A_log): decays must stay below 0
};

bool is_qwen35(const TransformerConfig& c) { return c.architecture == "Qwen3_5ForCausalLM" || c.architecture == "Qwen3_5MoeForCausalLM"; }
bool is_gemma_assistant(const TransformerConfig& c) { return c.architecture == "Gemma4AssistantForCausalLM"; }
bool is_gemma4(const TransformerConfig& c) { return c.architecture == "Gemma4ForCausalLM" || is_gemma_assistant(c); }
bool is_gemma(const TransformerConfig& c) { return c.architecture == "Gemma3ForCausalLM" || is_gemma4(c); }

// Gemma's layer pattern: layer_types, or every sliding_window_pattern-th layer full (Gemma 3).
bool sliding_layer(const TransformerConfig& c, int64_t layer) {
    if (const auto it = c.raw.find("layer_types"); it != c.raw.end() && it->is_array())
        return (*it)[static_cast<size_t>(layer)] == "sliding_attention";
    return (layer + 1) % c.raw.value("sliding_window_pattern", int64_t{6}) != 0;
}

int64_t gemma_head_dim(const TransformerConfig& c, int64_t layer) {
    return is_gemma4(c) && !sliding_layer(c, layer) ? c.raw.value("global_head_dim", c.head_dim) : c.head_dim;
}

// The MLP width of a layer: Gemma 4's KV-shared layers are twice as wide with use_double_wide_mlp.
int64_t mlp_width(const TransformerConfig& c, int64_t layer) {
    const int64_t first_shared = c.num_hidden_layers - c.raw.value("num_kv_shared_layers", int64_t{0});
    const bool wide = is_gemma4(c) && c.raw.value("use_double_wide_mlp", false) && first_shared > 0 && layer >= first_shared;
    return c.intermediate_size * (wide ? 2 : 1);
}

// Gated DeltaNet layers: every layer but each full_attention_interval-th.
bool linear_attention_layer(const TransformerConfig& c, int64_t layer) {
    if (!is_qwen35(c)) return false;
    const int64_t interval = c.raw.value("full_attention_interval", int64_t{4});
    if (interval <= 0) throw Error("config", "full_attention_interval must be positive");
    return (layer + 1) % interval != 0;
}

// The tensors of the config in Hugging Face names or llama.cpp's. Experts: Qwen3-MoE one tensor
// each (transformers 4), Qwen3.5-MoE fused gate_up_proj / down_proj (transformers 5), GGUF stacked.
std::vector<SynthTensor> tensor_list(const TransformerConfig& c, bool gguf) {
    const std::string arch = gguf ? *gguf_architecture(c.architecture) : "";
    auto name = [&](const std::string& hf) { return gguf ? *gguf_tensor_name(hf, arch) : hf; };
    const int64_t h = c.hidden_size, hd = c.head_dim;
    std::vector<SynthTensor> out;
    const auto add = [&](const std::string& hf, std::vector<int64_t> shape) { out.push_back({name(hf), std::move(shape), false}); };
    const auto add_norm = [&](const std::string& hf, int64_t size) { out.push_back({name(hf), {size}, true}); };
    const bool qwen3 = c.architecture == "Qwen3ForCausalLM" || c.architecture == "Qwen3MoeForCausalLM" || is_qwen35(c);
    const bool bias = c.architecture == "Qwen2ForCausalLM";
    const nlohmann::json& r = c.raw;

    const auto delta_net = [&](const std::string& q) {
        const int64_t keys = r.value("linear_num_key_heads", int64_t{0}) * r.value("linear_key_head_dim", int64_t{0});
        const int64_t value_heads = r.value("linear_num_value_heads", int64_t{0});
        const int64_t values = value_heads * r.value("linear_value_head_dim", int64_t{0});
        const int64_t kernel = r.value("linear_conv_kernel_dim", int64_t{0});
        add(q + "in_proj_qkv.weight", {2 * keys + values, h});
        add(q + "in_proj_z.weight", {values, h});
        add(q + "in_proj_b.weight", {value_heads, h});
        add(q + "in_proj_a.weight", {value_heads, h});
        if (gguf) out.push_back({name(q + "conv1d.weight"), {2 * keys + values, kernel}, false, true});
        else add(q + "conv1d.weight", {2 * keys + values, 1, kernel});
        out.push_back({name(q + "A_log"), {value_heads}, false, true, gguf});
        out.push_back({name(q + "dt_bias"), {value_heads}, false, true});
        add_norm(q + "norm.weight", r.value("linear_value_head_dim", int64_t{0}));
        add(q + "out_proj.weight", {h, values});
    };
    const auto attention = [&](const std::string& q, int64_t hd) {
        // Qwen3.5's q_proj yields a query and an output gate per head.
        add(q + "q_proj.weight", {c.num_attention_heads * hd * (is_qwen35(c) ? 2 : 1), h});
        add(q + "o_proj.weight", {h, c.num_attention_heads * hd});
        if (is_gemma_assistant(c)) {  // queries only: it reads its model's keys and values
            add_norm(q + "q_norm.weight", hd);
            return;
        }
        add(q + "k_proj.weight", {c.num_key_value_heads * hd, h});
        add(q + "v_proj.weight", {c.num_key_value_heads * hd, h});
        if (bias) {
            add_norm(q + "q_proj.bias", c.num_attention_heads * hd);
            add_norm(q + "k_proj.bias", c.num_key_value_heads * hd);
            add_norm(q + "v_proj.bias", c.num_key_value_heads * hd);
        }
        if (qwen3 || is_gemma(c)) {
            add_norm(q + "q_norm.weight", hd);
            add_norm(q + "k_norm.weight", hd);
        }
    };
    const auto feed_forward = [&](const std::string& p, int64_t width) {
        if (c.num_experts <= 0) {
            add(p + "mlp.gate_proj.weight", {width, h});
            add(p + "mlp.up_proj.weight", {width, h});
            add(p + "mlp.down_proj.weight", {h, width});
            return;
        }
        const int64_t e = c.num_experts, mi = c.moe_intermediate_size;
        out.push_back({name(p + "mlp.gate.weight"), {e, h}, false, true});  // routers stay f32, as llama.cpp keeps them
        if (gguf) {
            add(p + "mlp.experts.gate_proj.weight", {e, mi, h});
            add(p + "mlp.experts.up_proj.weight", {e, mi, h});
            add(p + "mlp.experts.down_proj.weight", {e, h, mi});
        } else if (is_qwen35(c)) {
            add(p + "mlp.experts.gate_up_proj", {e, 2 * mi, h});
            add(p + "mlp.experts.down_proj", {e, h, mi});
        } else {
            for (int64_t j = 0; j < e; ++j) {
                const std::string q = p + "mlp.experts." + std::to_string(j) + ".";
                add(q + "gate_proj.weight", {mi, h});
                add(q + "up_proj.weight", {mi, h});
                add(q + "down_proj.weight", {h, mi});
            }
        }
        if (const int64_t shared = r.value("shared_expert_intermediate_size", int64_t{0}); shared > 0) {
            add(p + "mlp.shared_expert.gate_proj.weight", {shared, h});
            add(p + "mlp.shared_expert.up_proj.weight", {shared, h});
            add(p + "mlp.shared_expert.down_proj.weight", {h, shared});
            out.push_back({name(p + "mlp.shared_expert_gate.weight"), {1, h}, false, true});
        }
    };

    add("model.embed_tokens.weight", {c.vocab_size, h});
    const int64_t ple = is_gemma4(c) ? r.value("hidden_size_per_layer_input", int64_t{0}) : 0;
    const int64_t layers = c.num_hidden_layers;
    if (ple > 0) {
        add("model.embed_tokens_per_layer.weight", {r.value("vocab_size_per_layer_input", c.vocab_size), layers * ple});
        add("model.per_layer_model_projection.weight", {layers * ple, h});
        add_norm("model.per_layer_projection_norm.weight", ple);
    }
    for (int64_t i = 0; i < layers; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        add_norm(p + "input_layernorm.weight", h);
        if (linear_attention_layer(c, i)) delta_net(p + "linear_attn.");
        else attention(p + "self_attn.", is_gemma(c) ? gemma_head_dim(c, i) : hd);
        add_norm(p + "post_attention_layernorm.weight", h);
        if (is_gemma(c)) {
            add_norm(p + "pre_feedforward_layernorm.weight", h);
            add_norm(p + "post_feedforward_layernorm.weight", h);
        }
        feed_forward(p, is_gemma(c) ? mlp_width(c, i) : c.intermediate_size);
        if (is_gemma4(c)) {
            add_norm(p + "layer_scalar", 1);
            if (ple > 0) {
                add(p + "per_layer_input_gate.weight", {ple, h});
                add(p + "per_layer_projection.weight", {h, ple});
                add_norm(p + "post_per_layer_input_norm.weight", h);
            }
        }
    }
    // Qwen3.5's multi-token-prediction head: mtp.* in HF folders, llama.cpp's nextn block (one more
    // layer, with blk.N.nextn.*) in GGUF.
    if (is_qwen35(c) && r.value("mtp_num_hidden_layers", int64_t{0}) > 0) {
        const std::string layer = gguf ? "model.layers." + std::to_string(c.num_hidden_layers) + "." : "mtp.layers.0.";
        const std::string nextn = "blk." + std::to_string(c.num_hidden_layers) + ".nextn.";
        out.push_back({gguf ? nextn + "eh_proj.weight" : "mtp.fc.weight", {h, 2 * h}, false});
        for (const auto& [hf, gg] : {std::pair{"pre_fc_norm_embedding", "enorm"}, {"pre_fc_norm_hidden", "hnorm"}, {"norm", "shared_head_norm"}})
            out.push_back({gguf ? nextn + gg + ".weight" : std::string("mtp.") + hf + ".weight", {h}, true});
        add_norm(layer + "input_layernorm.weight", h);
        attention(layer + "self_attn.", hd);
        add_norm(layer + "post_attention_layernorm.weight", h);
        feed_forward(layer, c.intermediate_size);
    }
    add_norm("model.norm.weight", h);
    if (!c.tie_word_embeddings) add("lm_head.weight", {c.vocab_size, h});
    if (is_gemma_assistant(c)) {
        const int64_t backbone = r.value("backbone_hidden_size", int64_t{0});
        add("pre_projection.weight", {h, 2 * backbone});
        add("post_projection.weight", {backbone, h});
    }
    return out;
}

uint64_t splitmix(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t name_hash(const std::string& name) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
    return h;
}

// Fills the tensor's bytes in `type`, row by row in parallel; each row has its own random stream.
void fill_tensor(const SynthTensor& t, DType type, uint64_t seed, std::byte* out, ThreadPool& pool) {
    const int64_t cols = t.shape.back();
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < t.shape.size(); ++i) rows *= t.shape[i];
    const int64_t row_bytes = static_cast<int64_t>(*dtype_bytes(type, static_cast<uint64_t>(cols)));
    // Uniform on [-a, a] has variance a²/3: a = sqrt(3 / fan_in) gives variance 1/fan_in.
    const float a = std::sqrt(3.0f / static_cast<float>(cols));
    const uint64_t base = seed ^ name_hash(t.name);
    pool.parallel_for(rows, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> row(static_cast<size_t>(cols));
        for (int64_t r = begin; r < end; ++r) {
            uint64_t state = base + static_cast<uint64_t>(r) * 0x632BE59BD9B4E019ull;
            for (float& v : row) {
                v = t.norm ? 1.0f : a * (static_cast<float>(splitmix(state) >> 40) * 0x1.0p-23f - 1.0f);
                if (t.negative) v = -std::exp(v);
            }
            quantize_row(type, row.data(), out + r * row_bytes, cols);
        }
    });
}

void write_gguf(const TransformerConfig& c, const std::filesystem::path& out, const SynthOptions& options, ThreadPool& pool) {
    const std::string arch = *gguf_architecture(c.architecture);
    const std::vector<SynthTensor> tensors = tensor_list(c, true);
    GgufFileWriter writer;
    writer.add_string("general.architecture", arch);
    writer.add_string("general.name", "oxinfer synth");
    writer.add_u32("general.file_type", llama_file_type(options.type));
    const int64_t mtp_layers = is_qwen35(c) ? c.raw.value("mtp_num_hidden_layers", int64_t{0}) : 0;
    writer.add_u32(arch + ".block_count", static_cast<uint32_t>(c.num_hidden_layers + mtp_layers));
    if (mtp_layers > 0) writer.add_u32(arch + ".nextn_predict_layers", static_cast<uint32_t>(mtp_layers));
    if (is_gemma_assistant(c)) {  // llama.cpp's drafter: every layer a nextn layer, outputs at the main model's width
        writer.add_u32(arch + ".nextn_predict_layers", static_cast<uint32_t>(c.num_hidden_layers));
        writer.add_u32(arch + ".embedding_length_out", static_cast<uint32_t>(c.raw.value("backbone_hidden_size", int64_t{0})));
    }
    writer.add_u32(arch + ".context_length", static_cast<uint32_t>(c.max_position_embeddings));
    writer.add_u32(arch + ".embedding_length", static_cast<uint32_t>(c.hidden_size));
    writer.add_u32(arch + ".attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
    writer.add_u32(arch + ".attention.head_count_kv", static_cast<uint32_t>(c.num_key_value_heads));
    if (!is_gemma4(c)) {  // Gemma 4 gives these per layer type (below)
        writer.add_u32(arch + ".feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
        writer.add_u32(arch + ".attention.key_length", static_cast<uint32_t>(c.head_dim));
        writer.add_u32(arch + ".attention.value_length", static_cast<uint32_t>(c.head_dim));
        writer.add_u32(arch + ".rope.dimension_count", static_cast<uint32_t>(static_cast<double>(c.head_dim) * c.partial_rotary_factor));
        writer.add_f32(arch + ".rope.freq_base", static_cast<float>(c.rope_theta));
    }
    writer.add_f32(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
    writer.add_u32(arch + ".vocab_size", static_cast<uint32_t>(c.vocab_size));
    // No vocabulary, said the way llama.cpp understands (it then makes vocab_size dummy tokens), so
    // that its tools, llama-bench among them, run these files too.
    writer.add_string("tokenizer.ggml.model", "none");
    if (is_qwen35(c)) {
        const nlohmann::json& r = c.raw;
        const auto u32 = [&](const char* key) { return static_cast<uint32_t>(r.value(key, int64_t{0})); };
        writer.add_u32(arch + ".ssm.conv_kernel", u32("linear_conv_kernel_dim"));
        writer.add_u32(arch + ".ssm.state_size", u32("linear_key_head_dim"));
        writer.add_u32(arch + ".ssm.group_count", u32("linear_num_key_heads"));
        writer.add_u32(arch + ".ssm.time_step_rank", u32("linear_num_value_heads"));
        writer.add_u32(arch + ".ssm.inner_size", u32("linear_num_value_heads") * u32("linear_value_head_dim"));
        writer.add_u32(arch + ".full_attention_interval", u32("full_attention_interval"));
        std::vector<int32_t> sections =
            r.value("rope_parameters", nlohmann::json::object()).value("mrope_section", std::vector<int32_t>{11, 11, 10});
        sections.resize(4, 0);
        writer.add_i32_array(arch + ".rope.dimension_sections", sections);
    }
    if (is_gemma(c)) {
        // llama.cpp's gemma3 / gemma4 keys (conversion/gemma.py).
        const nlohmann::json& r = c.raw;
        writer.add_u32(arch + ".attention.sliding_window", static_cast<uint32_t>(r.value("sliding_window", int64_t{0})));
        writer.add_f32(arch + ".rope.freq_base_swa", 10000.0f);
        if (is_gemma4(c)) {
            const int64_t full_dim = r.value("global_head_dim", c.head_dim);
            std::vector<bool> pattern;
            std::vector<int32_t> widths;
            for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
                pattern.push_back(sliding_layer(c, i));
                widths.push_back(static_cast<int32_t>(mlp_width(c, i)));
            }
            writer.add_bool_array(arch + ".attention.sliding_window_pattern", pattern);
            writer.add_i32_array(arch + ".feed_forward_length", widths);
            writer.add_u32(arch + ".attention.key_length", static_cast<uint32_t>(full_dim));
            writer.add_u32(arch + ".attention.value_length", static_cast<uint32_t>(full_dim));
            writer.add_u32(arch + ".attention.key_length_swa", static_cast<uint32_t>(c.head_dim));
            writer.add_u32(arch + ".attention.value_length_swa", static_cast<uint32_t>(c.head_dim));
            writer.add_u32(arch + ".rope.dimension_count", static_cast<uint32_t>(full_dim));
            writer.add_f32(arch + ".rope.freq_base", 1000000.0f);
            writer.add_u32(arch + ".rope.dimension_count_swa", static_cast<uint32_t>(c.head_dim));
            writer.add_u32(arch + ".attention.shared_kv_layers", static_cast<uint32_t>(r.value("num_kv_shared_layers", int64_t{0})));
            writer.add_u32(arch + ".embedding_length_per_layer_input", static_cast<uint32_t>(r.value("hidden_size_per_layer_input", int64_t{0})));
            if (const auto cap = r.find("final_logit_softcapping"); cap != r.end() && cap->is_number())
                writer.add_f32(arch + ".final_logit_softcapping", cap->get<float>());
        }
    }
    if (c.num_experts > 0) {
        writer.add_u32(arch + ".expert_count", static_cast<uint32_t>(c.num_experts));
        writer.add_u32(arch + ".expert_used_count", static_cast<uint32_t>(c.num_experts_per_token));
        writer.add_u32(arch + ".expert_feed_forward_length", static_cast<uint32_t>(c.moe_intermediate_size));
        if (const int64_t shared = c.raw.value("shared_expert_intermediate_size", int64_t{0}); shared > 0)
            writer.add_u32(arch + ".expert_shared_feed_forward_length", static_cast<uint32_t>(shared));
    }
    const auto gguf_type = [&](const SynthTensor& t) { return t.norm || t.f32_in_gguf ? DType::F32 : options.type; };
    for (const SynthTensor& t : tensors) writer.add_tensor(t.name, gguf_type(t), t.shape);
    // llama3 rope scaling goes into GGUF as llama.cpp stores it: a divisor per frequency.
    std::vector<float> divisors;
    if (is_gemma4(c)) {
        // Proportional RoPE on full layers: the first quarter of the pairs turn, the rest do not.
        const int64_t pairs = c.raw.value("global_head_dim", c.head_dim) / 2;
        for (int64_t i = 0; i < pairs; ++i) divisors.push_back(i < pairs / 4 ? 1.0f : 1e30f);
        writer.add_tensor("rope_freqs.weight", DType::F32, {pairs});
    } else if (c.rope_scaling && c.rope_scaling->type == "llama3") {
        TransformerConfig plain = c;
        plain.rope_scaling.reset();
        const std::vector<float> scaled = models::rope_inverse_frequencies(c, c.head_dim, "config");
        const std::vector<float> unscaled = models::rope_inverse_frequencies(plain, c.head_dim, "config");
        for (size_t i = 0; i < scaled.size(); ++i) divisors.push_back(unscaled[i] / scaled[i]);
        writer.add_tensor("rope_freqs.weight", DType::F32, {static_cast<int64_t>(divisors.size())});
    }
    writer.write(out, [&](size_t i, std::byte* bytes) {
        if (i == tensors.size()) std::memcpy(bytes, divisors.data(), divisors.size() * sizeof(float));
        else fill_tensor(tensors[i], gguf_type(tensors[i]), options.seed, bytes, pool);
    });
}

void write_folder(const json& config, const TransformerConfig& c, const std::filesystem::path& out, const SynthOptions& options,
                  ThreadPool& pool) {
    if (options.type != DType::F32 && options.type != DType::F16 && options.type != DType::BF16)
        throw Error(out.string(), "a Hugging Face folder holds f32, f16 or bf16 weights; write a .gguf file for " +
                                      std::string(dtype_name(options.type)));
    const std::vector<SynthTensor> tensors = tensor_list(c, false);
    const std::string dtype = options.type == DType::F32 ? "F32" : options.type == DType::F16 ? "F16" : "BF16";
    json header = json::object();
    uint64_t offset = 0;
    std::vector<uint64_t> sizes;
    for (const SynthTensor& t : tensors) {
        uint64_t elements = 1;
        for (int64_t d : t.shape) elements *= static_cast<uint64_t>(d);
        sizes.push_back(*dtype_bytes(options.type, elements));
        header[t.name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + sizes.back()}}};
        offset += sizes.back();
    }
    header["__metadata__"] = {{"format", "pt"}};
    std::string text = header.dump();
    text.resize((text.size() + 7) / 8 * 8, ' ');
    std::filesystem::create_directories(out);
    const std::filesystem::path file = out / "model.safetensors", partial = out / "model.safetensors.partial";
    {
        std::ofstream stream(partial, std::ios::binary | std::ios::trunc);
        if (!stream) throw Error(partial.string(), "cannot create the file");
        const uint64_t length = text.size();
        stream.write(reinterpret_cast<const char*>(&length), 8);
        stream.write(text.data(), static_cast<std::streamsize>(text.size()));
        std::vector<std::byte> buffer;
        for (size_t i = 0; i < tensors.size(); ++i) {
            buffer.resize(sizes[i]);
            fill_tensor(tensors[i], options.type, options.seed, buffer.data(), pool);
            stream.write(reinterpret_cast<const char*>(buffer.data()), static_cast<std::streamsize>(buffer.size()));
        }
        if (!stream.flush()) throw Error(file.string(), "write failed (disk full?)");
    }
    std::filesystem::rename(partial, file);
    write_file_atomically(out / "config.json", config.dump(2) + "\n");
}

}  // namespace

const std::vector<SynthShape>& synth_shapes() {
    static const std::vector<SynthShape> shapes = {
        {"qwen3-0.6b", "qwen3", "Qwen/Qwen3-0.6B"},
        {"qwen3-1.7b", "qwen3", "Qwen/Qwen3-1.7B"},
        {"llama-3.2-1b", "llama", "meta-llama/Llama-3.2-1B"},
        {"qwen2.5-0.5b", "qwen2", "Qwen/Qwen2.5-0.5B"},
        {"qwen3-30b-a3b", "qwen3moe", "Qwen/Qwen3-30B-A3B with 2 of its 48 layers (--layers changes it)"},
        {"qwen3.5-0.8b", "qwen35", "Qwen/Qwen3.5-0.8B (text)"},
        {"qwen3.5-2b", "qwen35", "Qwen/Qwen3.5-2B (text)"},
        {"qwen3.5-4b", "qwen35", "Qwen/Qwen3.5-4B (text)"},
        {"qwen3.5-35b-a3b", "qwen35moe", "Qwen/Qwen3.5-35B-A3B (text) with 4 of its 40 layers (--layers changes it)"},
        {"gemma-3-1b", "gemma3", "google/gemma-3-1b-it"},
        {"gemma-4-e2b", "gemma4", "google/gemma-4-E2B-it (text)"},
        {"gemma-4-e4b", "gemma4", "google/gemma-4-E4B-it (text)"},
        {"gemma-4-e2b-assistant", "gemma4-assistant", "google/gemma-4-E2B-it-assistant, the drafter, without its centroids"},
    };
    return shapes;
}

json synth_config(const std::string& arch, const std::string& shape, int64_t layers) {
    std::string names;
    for (const SynthShape& s : synth_shapes()) {
        names += (names.empty() ? "" : ", ") + s.name + " (" + s.arch + ")";
        if (s.name != shape) continue;
        if (!arch.empty() && arch != s.arch) throw Error("--shape " + shape, "is a " + s.arch + " shape, not " + arch);
        json config = shape_config(shape);
        if (layers > 0) {
            json& text = config.contains("text_config") ? config["text_config"] : config;
            const int64_t before = text["num_hidden_layers"].get<int64_t>();
            text["num_hidden_layers"] = layers;
            if (text.contains("layer_types")) {
                // Gemma: the layer pattern keeps its first `layers` entries, the KV-shared tail its share.
                if (layers > before) throw Error("--layers", "this shape has " + std::to_string(before) + " layers");
                text["layer_types"].erase(text["layer_types"].begin() + layers, text["layer_types"].end());
                if (text.contains("num_kv_shared_layers")) {
                    // As large a share as before, as far as every shared layer has an earlier layer of its type.
                    const json& types = text["layer_types"];
                    int64_t shared = text["num_kv_shared_layers"].get<int64_t>() * layers / before;
                    const auto has_producers = [&](int64_t first) {
                        for (int64_t i = first; i < layers; ++i) {
                            bool found = false;
                            for (int64_t j = 0; j < first; ++j) found = found || types[static_cast<size_t>(j)] == types[static_cast<size_t>(i)];
                            if (!found) return false;
                        }
                        return true;
                    };
                    while (shared > 0 && !has_producers(layers - shared)) --shared;
                    text["num_kv_shared_layers"] = shared;
                }
            }
        }
        return config;
    }
    throw Error("--shape", "unknown shape '" + shape + "'; known: " + names);
}

void write_synthetic_checkpoint(const json& config, const std::filesystem::path& out, const SynthOptions& options) {
    TransformerConfig c = transformer_config_from_hf(config, "config");
    // The drafter's link to its model sits beside text_config.
    if (is_gemma_assistant(c)) c.raw["backbone_hidden_size"] = config.value("backbone_hidden_size", int64_t{0});
    if (c.architecture != "LlamaForCausalLM" && c.architecture != "Qwen2ForCausalLM" && c.architecture != "Qwen3ForCausalLM" &&
        c.architecture != "Qwen3MoeForCausalLM" && !is_qwen35(c) && !is_gemma(c))
        throw Error("config", "synth writes LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, "
                              "Qwen3_5ForCausalLM, Qwen3_5MoeForCausalLM, Gemma3ForCausalLM, Gemma4ForCausalLM and "
                              "Gemma4AssistantForCausalLM, not '" +
                                  c.architecture + "'");
    if (!can_quantize(options.type))
        throw Error(std::string(dtype_name(options.type)), "synth cannot write this type (f32, f16, bf16, q8_0, q4_0, q4_k)");
    ThreadPool pool(options.threads);
    if (out.extension() == ".gguf") write_gguf(c, out, options, pool);
    else write_folder(config, c, out, options, pool);
}

}  // namespace oxinfer
