// Gemma 3 and Gemma 4 text models (Gemma3ForCausalLM, Gemma4ForCausalLM and the language models of
// their ForConditionalGeneration checkpoints), following transformers' modeling_gemma3.py and
// modeling_gemma4.py (notes: ../shared/specs/arch-specs.md sections 2 and 4.3):
//
//   h = embed(tokens) · √hidden
//   per layer:  h += post_attn_norm(attention(input_norm(h)))
//               h += post_ffw_norm(down(gelu_tanh(gate(x)) · up(x))),  x = pre_ffw_norm(h)
//               Gemma 4 with per-layer embeddings (PLE): h += post_ple_norm(proj(gelu_tanh(ple_gate(h)) · ple_i))
//               Gemma 4: h *= layer_scalar
//   logits = softcap(lm_head(norm(h)))
//
// Gemma 3's RMSNorms multiply by 1 + w (the stored weights are zero-centred), Gemma 4's by w.
// Attention: per-head q/k norms before RoPE (Gemma 4 also normalises v, without a weight); scale
// query_pre_attn_scalar^-1/2 (Gemma 3) or 1 (Gemma 4). Layers alternate between sliding-window
// attention (window W: a query sees itself and W - 1 keys before it) and full attention, each
// type with its own RoPE; Gemma 4's full layers have their own head size and "proportional" RoPE
// (the frequencies of a partial rotary share, over the whole head: pair j rotates with j + d/2,
// the pairs past the share do not turn). Gemma 4 specifics: the last num_kv_shared_layers layers
// compute only queries and read the keys and values of the last earlier layer of their type;
// attention_k_eq_v full layers use their raw keys as values; shared layers may have a double-wide
// MLP; the 26B-A4B adds to each layer's MLP a routed GeGLU mixture of experts:
//   m = post_ffw_norm(post_ffw_norm_1(mlp(pre_ffw_norm(h))) + post_ffw_norm_2(experts(pre_ffw_norm_2(h))))
// routed on norm(h) · router.scale / √hidden, the top k renormalised, times per_expert_scale.
//
// The sequence state has a cache for the sliding layers, a ring bounded by the window (memory stays
// flat in long chats), and one for the full layers; only layers that produce keys have a slot.
//
// Gemma 4's assistant (Gemma4AssistantForCausalLM, GGUF gemma4-assistant; transformers'
// modeling_gemma4_assistant.py) is a small stack of the same layers, all KV-shared: a draft step
// projects [embed(token) · √hidden of the main model | h] (pre_projection; h the main model's
// final-normed hidden state, then the assistant's own post_projection of its output), runs its
// layers with queries only, at the fixed position of the token, over the main model's caches (the
// last producing layer of each type: a sliding layer sees the window keys before the position, a
// full layer all of them), and scores the vocabulary with its tied head, restricted to the tokens
// of the top centroid clusters when the checkpoint has them (use_ordered_embeddings).

#include "models/causal_lm.h"
#include "models/kv_cache.h"
#include "models/layers.h"
#include "models/moe.h"
#include "models/rope_frequencies.h"
#include "models/weights.h"

#include "kernels/ops.h"
#include "kernels/thread_pool.h"

#include <oxinfer/checkpoint.h>
#include <oxinfer/error.h>
#include <oxinfer/profiler.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>

namespace oxinfer::models {
namespace {

using kernels::WeightMatrix;

class GemmaState final : public SequenceState {
public:
    GemmaState(KvCache sliding_cache, KvCache full_cache) : sliding(std::move(sliding_cache)), full(std::move(full_cache)) {}
    int64_t size() const override { return full.size(); }
    int64_t capacity() const override { return full.capacity(); }
    int64_t truncate(int64_t size) override {
        const int64_t kept = sliding.truncate(size);
        return full.truncate(kept);
    }
    uint64_t allocated_bytes() const override { return sliding.allocated_bytes() + full.allocated_bytes(); }
    uint64_t bytes_per_position() const override { return sliding.bytes_per_position() + full.bytes_per_position(); }

    KvCache sliding, full;  // the producing layers of each type, in order
};

// One attention type's shape and RoPE.
struct AttentionKind {
    int64_t head_dim = 0, kv_heads = 0;
    int64_t window = 0;           // 0: full attention
    std::vector<float> inv_freq;  // head_dim / 2 values (zeros past a proportional RoPE's share)
    int64_t producers = 0;        // layers of this kind with their own keys and values
};

struct Layer {
    bool sliding = false;
    int64_t slot = 0;       // the cache slot it reads (its own, or its producer's)
    bool produces = true;   // computes keys and values (else reads its producer's)
    bool values = true;     // has v_proj (else values are the raw keys: attention_k_eq_v)
    std::vector<float> input_norm, post_attention_norm, pre_ffw_norm, post_ffw_norm, q_norm, k_norm;
    Linear q, k, v, o, gate, up, down;
    float scalar = 1.0f;                // Gemma 4's layer_scalar
    Linear ple_gate, ple_projection;    // per-layer embeddings
    std::vector<float> ple_norm;
    std::optional<MoeWeights> moe;      // Gemma 4's mixture of experts, beside the MLP
    std::vector<float> pre_ffw_norm_2, post_ffw_norm_1, post_ffw_norm_2, router_scale;
};

class Gemma final : public CausalLm, public DraftModel {
public:
    // `target`: the main model when this is its assistant.
    Gemma(const Checkpoint& checkpoint, const TransformerConfig& config, const ModelLoadSettings& settings, ThreadPool& pool,
          const Gemma* target = nullptr)
        : config_(config), pool_(pool), weights_(checkpoint, settings, pool), target_(target) {
        subject_ = checkpoint.path().string();
        gemma4_ = config.architecture.rfind("Gemma4", 0) == 0;
        gguf_ = weights_.is_gguf();
        if (gguf_) gguf_prefix_ = config.raw.value("general.architecture", "") + ".";
        if (config.vocab_size <= 0) throw Error(subject_, "vocab_size is missing");
        if (target_ && config.vocab_size != target_->config_.vocab_size)
            throw Error(subject_, "the draft model's vocabulary (" + std::to_string(config.vocab_size) + ") is not the model's (" +
                                      std::to_string(target_->config_.vocab_size) + ")");
        read_layout();
        load_weights();
        if (target_) load_assistant(checkpoint);
    }

    const TransformerConfig& config() const override { return config_; }
    uint64_t mapped_weight_bytes() const override { return weights_.mapped_bytes(); }
    uint64_t owned_weight_bytes() const override { return weights_.owned_bytes(); }
    std::string weight_type() const override { return weights_.matrix_type(); }

    std::unique_ptr<SequenceState> new_state(DType kv_type, int64_t context_length) const override {
        const AttentionKind& s = kinds_[0];
        const AttentionKind& f = kinds_[1];
        return std::make_unique<GemmaState>(KvCache(s.producers, s.kv_heads, s.head_dim, kv_type, context_length, s.window),
                                            KvCache(f.producers, f.kv_heads, f.head_dim, kv_type, context_length));
    }

    void forward(const int32_t* tokens, int64_t count, SequenceState& sequence, float* logits, bool all_positions,
                 float* hidden) override {
        if (target_) throw Error(subject_, "a draft model runs only beside its main model");
        auto& state = static_cast<GemmaState&>(sequence);
        const int64_t vocab = config_.vocab_size;
        for (int64_t begin = 0; begin < count; begin += kMaxStoreTokens) {
            const int64_t n = std::min(kMaxStoreTokens, count - begin);
            const bool last_chunk = begin + n == count;
            float* out = !logits ? nullptr : all_positions ? logits + begin * vocab : (last_chunk ? logits : nullptr);
            forward_chunk(tokens + begin, n, state, out, all_positions, hidden ? hidden + begin * config_.hidden_size : nullptr);
        }
    }

    void attach_draft_model(const Checkpoint& checkpoint, const TransformerConfig& config, const ModelLoadSettings& settings) override {
        if (!gemma4_ || config.architecture != "Gemma4AssistantForCausalLM") CausalLm::attach_draft_model(checkpoint, config, settings);
        assistant_ = std::make_unique<Gemma>(checkpoint, config, settings, pool_, this);
    }
    DraftModel* draft_model() override { return assistant_.get(); }

    void draft(const SequenceState& sequence, const float* hidden, int32_t token, int64_t count, int32_t* drafts) override {
        if (!target_) throw Error(subject_, "is not a draft model");
        // The assistant's layers only read the main model's caches (none of them produces keys).
        const auto& state = static_cast<const GemmaState&>(sequence);
        const Gemma& main = *target_;
        const int64_t backbone = main.config_.hidden_size, h = config_.hidden_size;
        const int64_t position = state.size();
        const float eps = static_cast<float>(config_.rms_norm_eps);
        profiler::Scope scope("draft");
        grow(draft_input_, 2 * backbone);
        grow(x_, h);
        grow(normed_, h);
        grow(residual_, h);
        positions_.assign(1, position);
        std::copy_n(hidden, backbone, draft_input_.data() + backbone);
        for (int64_t i = 0; i < count; ++i) {
            const WeightMatrix& table = main.embedding_;
            kernels::embedding_rows(table, backbone, &token, 1, draft_input_.data());
            kernels::scale(draft_input_.data(), std::sqrt(static_cast<float>(backbone)), backbone);
            kernels::matmul(pre_projection_, draft_input_.data(), 1, x_.data(), pool_);
            decoder_layers(1, position, state, nullptr);
            kernels::rms_norm(x_.data(), final_norm_.data(), normed_.data(), 1, h, eps);
            kernels::matmul(post_projection_, normed_.data(), 1, draft_input_.data() + backbone, pool_);
            token = best_token(normed_.data());
            drafts[i] = token;
        }
    }

private:
    // Typed config access: config.json keys, or llama.cpp's GGUF keys under "<arch>."; absent or
    // null gives the fallback.
    template <class T>
    T setting(const std::string& hf_key, const std::string& gguf_key, T fallback) const {
        const std::string key = gguf_ ? gguf_prefix_ + gguf_key : hf_key;
        const auto it = config_.raw.find(key);
        if (it == config_.raw.end() || it->is_null()) return fallback;
        if (!(std::is_integral_v<T> ? it->is_number_integer() : it->is_number()))
            throw Error(subject_, "'" + key + "' is not " + (std::is_integral_v<T> ? "an integer" : "a number"));
        return it->get<T>();
    }
    int64_t integer(const std::string& hf_key, const std::string& gguf_key, int64_t fallback) const {
        return setting<int64_t>(hf_key, gguf_key, fallback);
    }
    double number(const std::string& hf_key, const std::string& gguf_key, double fallback) const {
        return setting<double>(hf_key, gguf_key, fallback);
    }

    // Layer types, head shapes, RoPE per type, KV sharing.
    void read_layout() {
        const TransformerConfig& c = config_;
        const nlohmann::json& raw = c.raw;
        const int64_t layers = c.num_hidden_layers;
        std::vector<bool> sliding(static_cast<size_t>(layers));
        if (gguf_) {
            // llama.cpp: a bool per layer (true: sliding window); older Gemma 3 files have none.
            const auto it = raw.find(gguf_prefix_ + "attention.sliding_window_pattern");
            if (it != raw.end() && it->is_array()) {
                if (static_cast<int64_t>(it->size()) != layers) throw Error(subject_, "sliding_window_pattern has the wrong length");
                for (int64_t i = 0; i < layers; ++i) {
                    const nlohmann::json& v = (*it)[static_cast<size_t>(i)];
                    if (!v.is_boolean()) throw Error(subject_, "sliding_window_pattern holds a value that is not true or false");
                    sliding[static_cast<size_t>(i)] = v.get<bool>();
                }
            } else if (gemma4_) {
                throw Error(subject_, "has no " + gguf_prefix_ + "attention.sliding_window_pattern");
            } else {
                for (int64_t i = 0; i < layers; ++i) sliding[static_cast<size_t>(i)] = (i + 1) % 6 != 0;  // llama.cpp's gemma3 rule
            }
        } else if (const auto it = raw.find("layer_types"); it != raw.end() && it->is_array()) {
            if (static_cast<int64_t>(it->size()) != layers)
                throw Error(subject_, "layer_types has " + std::to_string(it->size()) + " entries for " + std::to_string(layers) + " layers");
            for (int64_t i = 0; i < layers; ++i) {
                const std::string type = (*it)[static_cast<size_t>(i)].is_string() ? (*it)[static_cast<size_t>(i)].get<std::string>() : "";
                if (type != "sliding_attention" && type != "full_attention")
                    throw Error(subject_, "layer " + std::to_string(i) + " has the unknown type '" + type + "'");
                sliding[static_cast<size_t>(i)] = type == "sliding_attention";
            }
        } else {
            const int64_t pattern = raw.value("sliding_window_pattern", int64_t{6});
            if (pattern <= 0) throw Error(subject_, "sliding_window_pattern must be positive");
            for (int64_t i = 0; i < layers; ++i) sliding[static_cast<size_t>(i)] = (i + 1) % pattern != 0;
        }
        if (gemma4_ && !gguf_) sliding.back() = false;  // Gemma4TextConfig forces the last layer to full attention

        const int64_t window = integer("sliding_window", "attention.sliding_window", 0);
        if (window <= 0 && std::find(sliding.begin(), sliding.end(), true) != sliding.end())
            throw Error(subject_, "sliding layers need a positive sliding_window");
        AttentionKind& s = kinds_[0];
        AttentionKind& f = kinds_[1];
        s.window = window;
        s.head_dim = c.head_dim;
        s.kv_heads = c.num_key_value_heads;
        f.head_dim = c.head_dim;
        f.kv_heads = c.num_key_value_heads;
        if (gemma4_) {
            k_eq_v_ = gguf_ ? false : raw.value("attention_k_eq_v", false);
            if (gguf_) {
                // llama.cpp: key_length is the full layers' head size, key_length_swa the sliding ones'.
                f.head_dim = integer("", "attention.key_length", c.head_dim);
                s.head_dim = integer("", "attention.key_length_swa", c.head_dim);
            } else {
                f.head_dim = integer("global_head_dim", "", c.head_dim);
                if (k_eq_v_) f.kv_heads = integer("num_global_key_value_heads", "", c.num_key_value_heads);
            }
            moe_ = gguf_ ? c.num_experts > 0 : raw_bool("enable_moe_block");
        }
        if (gguf_) read_kv_heads(sliding);
        read_rope(s, "sliding_attention");
        read_rope(f, "full_attention");

        // KV sharing: layers from `first_shared` read the last earlier layer of their type.
        const int64_t shared = gemma4_ ? integer("num_kv_shared_layers", "attention.shared_kv_layers", 0) : 0;
        first_shared_ = layers - shared;
        if (shared < 0 || first_shared_ < 0) throw Error(subject_, "num_kv_shared_layers exceeds the layer count");
        layers_.resize(static_cast<size_t>(layers));
        for (int64_t i = 0; i < layers; ++i) {
            Layer& layer = layers_[static_cast<size_t>(i)];
            layer.sliding = sliding[static_cast<size_t>(i)];
            AttentionKind& kind = kinds_[layer.sliding ? 0 : 1];
            layer.produces = i < first_shared_;
            layer.values = !(k_eq_v_ && !layer.sliding);
            if (target_) {
                // The assistant reads the main model's last producing layer of each type.
                const AttentionKind& main = target_->kinds_[layer.sliding ? 0 : 1];
                if (first_shared_ != 0) throw Error(subject_, "a draft model's layers must all be KV-shared (num_kv_shared_layers)");
                if (main.producers == 0 || main.head_dim != kind.head_dim || main.kv_heads != kind.kv_heads || main.window != kind.window)
                    throw Error(subject_, "the draft model's " + std::string(layer.sliding ? "sliding" : "full") +
                                              " attention (head size " + std::to_string(kind.head_dim) + ", " +
                                              std::to_string(kind.kv_heads) + " kv heads, window " + std::to_string(kind.window) +
                                              ") does not match the model's");
                layer.produces = false;
                layer.slot = main.producers - 1;
            } else if (layer.produces) {
                layer.slot = kind.producers++;
            } else {
                int64_t source = -1;
                for (int64_t j = 0; j < first_shared_; ++j)
                    if (sliding[static_cast<size_t>(j)] == layer.sliding) source = j;
                if (source < 0) throw Error(subject_, "KV-shared layer " + std::to_string(i) + " has no earlier layer of its type");
                layer.slot = layers_[static_cast<size_t>(source)].slot;
            }
        }
    }

    // llama.cpp gives head_count_kv per layer when full layers have their own count, and marks
    // attention_k_eq_v by leaving the full layers without attn_v.
    void read_kv_heads(const std::vector<bool>& sliding) {
        const auto it = config_.raw.find(gguf_prefix_ + "attention.head_count_kv");
        if (it != config_.raw.end() && it->is_array()) {
            if (it->size() != sliding.size()) throw Error(subject_, gguf_prefix_ + "attention.head_count_kv has the wrong length");
            bool seen[2] = {false, false};
            for (size_t i = 0; i < sliding.size(); ++i) {
                const nlohmann::json& v = (*it)[i];
                const int kind = sliding[i] ? 0 : 1;
                if (!v.is_number_integer() || v.get<int64_t>() <= 0 || config_.num_attention_heads % v.get<int64_t>() != 0 ||
                    (seen[kind] && v.get<int64_t>() != kinds_[kind].kv_heads))
                    throw Error(subject_, gguf_prefix_ + "attention.head_count_kv must divide the heads and agree within each layer type");
                kinds_[kind].kv_heads = v.get<int64_t>();
                seen[kind] = true;
            }
        }
        const auto full = std::find(sliding.begin(), sliding.end(), false);
        if (gemma4_ && full != sliding.end()) {
            const int64_t layer = full - sliding.begin();
            k_eq_v_ = !weights_.checkpoint().find("blk." + std::to_string(layer) + ".attn_v.weight");
        }
    }

    // The inverse frequencies of one attention type, from rope_parameters (per type, as Gemma 4 and
    // transformers 5 write them), Gemma 3's rope_theta / rope_local_base_freq / rope_scaling, or
    // llama.cpp's keys (rope.freq_base[_swa], scaling on full layers, rope_freqs for proportional).
    void read_rope(AttentionKind& kind, const std::string& type) {
        const bool is_sliding = type == "sliding_attention";
        TransformerConfig rope = config_;
        rope.partial_rotary_factor = 1.0;
        std::string rope_type = "default";
        double partial = 1.0;
        if (gguf_) {
            rope.rope_theta = is_sliding ? number("", "rope.freq_base_swa", 10000.0) : number("", "rope.freq_base", 1000000.0);
            if (is_sliding) rope.rope_scaling.reset();
        } else if (const auto it = config_.raw.find("rope_parameters");
                   it != config_.raw.end() && it->is_object() && it->contains(type)) {
            const nlohmann::json& p = (*it)[type];
            rope.rope_theta = p.value("rope_theta", 10000.0);
            rope_type = p.value("rope_type", std::string("default"));
            partial = p.value("partial_rotary_factor", 1.0);
            rope.rope_scaling.reset();
            if (rope_type != "default" && rope_type != "proportional") {
                RopeScaling scaling;
                scaling.type = rope_type;
                scaling.factor = p.value("factor", 1.0);
                rope.rope_scaling = scaling;
            }
        } else {
            rope.rope_theta = is_sliding ? number("rope_local_base_freq", "", 10000.0) : config_.rope_theta;
            if (is_sliding) rope.rope_scaling.reset();
        }
        if (rope_type == "proportional") {
            // Frequencies over the whole head (exponent 2j / head_dim) for the first
            // partial_rotary_factor share of the pairs; the other pairs do not turn.
            const double factor = config_.raw["rope_parameters"][type].value("factor", 1.0);
            if (!(partial > 0.0 && partial <= 1.0) || !(factor > 0.0))
                throw Error(subject_, type + " proportional RoPE needs partial_rotary_factor in (0, 1] and a positive factor");
            const int64_t rotated = static_cast<int64_t>(partial * static_cast<double>(kind.head_dim)) / 2;
            kind.inv_freq = rope_inverse_frequencies(rope, kind.head_dim, subject_);
            std::fill(kind.inv_freq.begin() + rotated, kind.inv_freq.end(), 0.0f);
            for (float& x : kind.inv_freq) x /= static_cast<float>(factor);
            return;
        }
        kind.inv_freq = rope_inverse_frequencies(rope, kind.head_dim, subject_);
        if (gguf_ && !is_sliding) {
            // llama.cpp stores proportional RoPE as per-pair divisors (1e30 for the pairs that stay).
            if (const TensorInfo* factors = weights_.checkpoint().find("rope_freqs.weight")) {
                const std::vector<float> divisors = weights_.checkpoint().read_f32(*factors);
                if (divisors.size() != kind.inv_freq.size()) throw Error(subject_, "rope_freqs.weight has the wrong length");
                for (size_t i = 0; i < divisors.size(); ++i) kind.inv_freq[i] = divisors[i] >= 1e29f ? 0.0f : kind.inv_freq[i] / divisors[i];
            }
        }
    }

    // Gemma 3's norms multiply by 1 + w; llama.cpp's converter stores 1 + w already.
    std::vector<float> norm(const std::string& name, int64_t size) const {
        std::vector<float> w = weights_.vector(name, size);
        if (!gemma4_ && !gguf_)
            for (float& x : w) x += 1.0f;
        return w;
    }

    void load_weights() {
        const TransformerConfig& c = config_;
        const int64_t hidden = c.hidden_size, heads = c.num_attention_heads;
        // Released multimodal checkpoints put the text model under model.language_model (Gemma 4,
        // transformers 5) or language_model.model (Gemma 3 as first released); text-only ones and
        // GGUF (mapped from model.*) under model.
        root_ = "model.";
        for (const char* prefix : {"model.language_model.", "language_model.model."})
            if (weights_.find(std::string(prefix) + "embed_tokens.weight")) root_ = prefix;
        const TensorInfo* head = weights_.find("lm_head.weight");
        if (!head) head = weights_.find("language_model.lm_head.weight");
        embedding_ = weights_.embedding(weights_.get(root_ + "embed_tokens.weight"), c.vocab_size, hidden, !head);
        final_norm_ = norm(root_ + "norm.weight", hidden);
        if (!head && !c.tie_word_embeddings && !gemma4_)
            throw Error(subject_, "has no lm_head.weight and tie_word_embeddings is false");
        lm_head_ = head ? weights_.matrix(*head, c.vocab_size, hidden) : embedding_;
        // llama.cpp's gemma4 loader softcaps at 30 when the key is absent; config.json's absent means none.
        softcap_ = static_cast<float>(number("final_logit_softcapping", "final_logit_softcapping", gguf_ && gemma4_ ? 30.0 : 0.0));
        if (number("attn_logit_softcapping", "attn_logit_softcapping", 0.0) != 0.0)
            throw Error(subject_, "attention logit softcapping (Gemma 2) is not supported");
        // Gemma 3's query_pre_attn_scalar: llama.cpp has no key for it; its gemma3 graph uses
        // hidden / heads for the 27B (62 layers), as that config says, and head_dim otherwise.
        const double scalar = gguf_ ? static_cast<double>(c.num_hidden_layers == 62 ? hidden / heads : c.head_dim)
                                    : number("query_pre_attn_scalar", "", static_cast<double>(c.head_dim));
        if (!(scalar > 0.0)) throw Error(subject_, "query_pre_attn_scalar must be positive");
        attention_scale_ = gemma4_ ? 1.0f : static_cast<float>(1.0 / std::sqrt(scalar));
        ple_size_ = gemma4_ ? integer("hidden_size_per_layer_input", "embedding_length_per_layer_input", 0) : 0;
        const int64_t layers = c.num_hidden_layers;
        if (ple_size_ > 0) {
            const TensorInfo& table = weights_.get(root_ + "embed_tokens_per_layer.weight");
            if (table.shape.size() != 2 || table.shape[1] != layers * ple_size_)
                throw Error(subject_, "embed_tokens_per_layer has the wrong shape for " + std::to_string(layers) + " layers of " +
                                          std::to_string(ple_size_));
            // A lookup table read a few rows per token: kept mapped as stored (never converted by
            // --quant) and not counted with the matrices every token streams through.
            if (!dtype_bytes(table.dtype, static_cast<uint64_t>(layers * ple_size_)) || !can_convert_to_f32(table.dtype))
                throw Error(subject_, "embed_tokens_per_layer has the unsupported type " + std::string(dtype_name(table.dtype)));
            ple_table_ = kernels::weight_matrix(table);
            ple_model_projection_ = weights_.matrix(weights_.get(root_ + "per_layer_model_projection.weight"), layers * ple_size_, hidden);
            ple_projection_norm_ = weights_.vector(root_ + "per_layer_projection_norm.weight", ple_size_);
        }
        const int64_t inter = c.intermediate_size;
        const bool double_wide = gemma4_ && raw_bool("use_double_wide_mlp");
        for (int64_t i = 0; i < layers; ++i) {
            Layer& layer = layers_[static_cast<size_t>(i)];
            const AttentionKind& kind = kinds_[layer.sliding ? 0 : 1];
            const std::string p = root_ + "layers." + std::to_string(i) + ".";
            layer.input_norm = norm(p + "input_layernorm.weight", hidden);
            layer.post_attention_norm = norm(p + "post_attention_layernorm.weight", hidden);
            layer.pre_ffw_norm = norm(p + "pre_feedforward_layernorm.weight", hidden);
            layer.post_ffw_norm = norm(p + "post_feedforward_layernorm.weight", hidden);
            const int64_t hd = kind.head_dim;
            layer.q = weights_.linear(p + "self_attn.q_proj", heads * hd, hidden);
            layer.o = weights_.linear(p + "self_attn.o_proj", hidden, heads * hd);
            layer.q_norm = norm(p + "self_attn.q_norm.weight", hd);
            if (layer.produces) {  // a shared layer's k/v weights, present in released files, are never used
                layer.k = weights_.linear(p + "self_attn.k_proj", kind.kv_heads * hd, hidden);
                if (layer.values) layer.v = weights_.linear(p + "self_attn.v_proj", kind.kv_heads * hd, hidden);
                layer.k_norm = norm(p + "self_attn.k_norm.weight", hd);
            }
            // The MLP width: from the tensor when GGUF (llama.cpp may list it per layer), doubled on
            // shared layers when use_double_wide_mlp.
            int64_t width = inter * (double_wide && first_shared_ > 0 && i >= first_shared_ ? 2 : 1);
            const TensorInfo& gate = weights_.get(p + "mlp.gate_proj.weight");
            if (gguf_ && gate.shape.size() == 2) width = gate.shape[0];
            layer.gate = weights_.linear(p + "mlp.gate_proj", width, hidden);
            layer.up = weights_.linear(p + "mlp.up_proj", width, hidden);
            layer.down = weights_.linear(p + "mlp.down_proj", hidden, width);
            if (moe_) load_moe_block(layer, p);
            if (gemma4_) {
                if (weights_.find(p + "layer_scalar") || !gguf_) {
                    const std::vector<float> scalar = weights_.vector(p + "layer_scalar", 1);
                    layer.scalar = scalar[0];
                }
                if (ple_size_ > 0) {
                    layer.ple_gate = weights_.linear(p + "per_layer_input_gate", ple_size_, hidden);
                    layer.ple_projection = weights_.linear(p + "per_layer_projection", hidden, ple_size_);
                    layer.ple_norm = weights_.vector(p + "post_per_layer_input_norm.weight", hidden);
                }
            }
        }
    }

    // The assistant's projections to and from the main model's width, and its centroids.
    void load_assistant(const Checkpoint& checkpoint) {
        const int64_t h = config_.hidden_size, backbone = target_->config_.hidden_size;
        const nlohmann::json top = gguf_ ? config_.raw : checkpoint.metadata().value("config", nlohmann::json::object());
        const int64_t declared = gguf_ ? integer("", "embedding_length_out", backbone) : top.value("backbone_hidden_size", backbone);
        if (declared != backbone)
            throw Error(subject_, "the draft model is made for a model of width " + std::to_string(declared) + ", not " + std::to_string(backbone));
        if (ple_size_ > 0) throw Error(subject_, "a draft model with per-layer embeddings is not supported");
        pre_projection_ = weights_.matrix(weights_.get("pre_projection.weight"), h, 2 * backbone);
        post_projection_ = weights_.matrix(weights_.get("post_projection.weight"), backbone, h);
        softcap_ = 0.0f;  // the assistant's logits are only ranked
        if (!top.value("use_ordered_embeddings", false)) return;
        const int64_t clusters = top.value("num_centroids", int64_t{2048});
        cluster_top_k_ = top.value("centroid_intermediate_top_k", int64_t{32});
        if (clusters <= 0 || config_.vocab_size % clusters != 0 || cluster_top_k_ <= 0 || cluster_top_k_ > clusters)
            throw Error(subject_, "num_centroids must divide the vocabulary and centroid_intermediate_top_k be in [1, num_centroids]");
        centroids_ = weights_.matrix(weights_.get("masked_embedding.centroids.weight"), clusters, h);
        const TensorInfo& ordering = weights_.get("masked_embedding.token_ordering");
        if (ordering.elements() != config_.vocab_size) throw Error(subject_, "masked_embedding.token_ordering has the wrong length");
        for (float id : checkpoint.read_f32(ordering)) {
            if (!(id >= 0.0f && id < static_cast<float>(config_.vocab_size)) || id != std::floor(id))
                throw Error(subject_, "masked_embedding.token_ordering holds something that is not a token id");
            token_ordering_.push_back(static_cast<int32_t>(id));
        }
    }

    // The assistant's greedy token for the normed hidden state y: over the whole vocabulary, or
    // (ordered embeddings) over the tokens of the centroid_intermediate_top_k best clusters.
    int32_t best_token(const float* y) {
        const int64_t h = config_.hidden_size, vocab = config_.vocab_size;
        if (centroids_.rows == 0) {
            grow(draft_logits_, vocab);
            kernels::matmul(lm_head_, y, 1, draft_logits_.data(), pool_);
            return static_cast<int32_t>(kernels::argmax(draft_logits_.data(), vocab));
        }
        const int64_t clusters = centroids_.rows, per_cluster = vocab / clusters;
        grow(draft_logits_, clusters);
        kernels::matmul(centroids_, y, 1, draft_logits_.data(), pool_);
        cluster_ids_.resize(static_cast<size_t>(cluster_top_k_));
        kernels::top_k(draft_logits_.data(), clusters, cluster_top_k_, cluster_ids_.data(), nullptr);
        candidates_.clear();
        for (int32_t c : cluster_ids_)
            candidates_.insert(candidates_.end(), token_ordering_.begin() + c * per_cluster, token_ordering_.begin() + (c + 1) * per_cluster);
        const auto count = static_cast<int64_t>(candidates_.size());
        grow(candidate_rows_, count * h);
        kernels::embedding_rows(lm_head_, h, candidates_.data(), count,
                                candidate_rows_.data());
        int32_t best = -1;
        float best_score = 0;
        for (int64_t i = 0; i < count; ++i) {
            float score = 0;
            for (int64_t j = 0; j < h; ++j) score += candidate_rows_[static_cast<size_t>(i * h + j)] * y[j];
            const int32_t id = candidates_[static_cast<size_t>(i)];
            if (best < 0 || score > best_score || (score == best_score && id < best)) {
                best = id;
                best_score = score;
            }
        }
        return best;
    }

    // The 26B-A4B's experts: router.{proj, scale, per_expert_scale}, experts.{gate_up_proj [E, 2I, d]
    // (gate rows first), down_proj [E, d, I]} and the three extra norms (llama.cpp's names through
    // the tensor-name map).
    void load_moe_block(Layer& layer, const std::string& p) {
        const TransformerConfig& c = config_;
        const int64_t hidden = c.hidden_size, experts = c.num_experts, width = c.moe_intermediate_size;
        const int64_t top_k = gguf_ ? c.num_experts_per_token : integer("top_k_experts", "", 0);
        if (experts <= 0 || width <= 0 || top_k <= 0 || top_k > experts)
            throw Error(subject_, "the mixture of experts needs num_experts, moe_intermediate_size and top_k_experts in [1, num_experts]");
        MoeWeights& moe = layer.moe.emplace();
        moe.top_k = top_k;
        moe.renormalize = true;
        moe.activation = GateActivation::GeluTanh;
        moe.router = weights_.matrix(weights_.get(p + "router.proj.weight"), experts, hidden);
        moe.expert_scale = weights_.vector(p + "router.per_expert_scale", experts);
        moe.experts = load_fused_experts(weights_, weights_.get(p + "experts.gate_up_proj"), weights_.get(p + "experts.down_proj"),
                                         experts, hidden, width);
        // The router's input scale, with its 1/√hidden folded in.
        layer.router_scale = weights_.vector(p + "router.scale", hidden);
        for (float& x : layer.router_scale) x /= std::sqrt(static_cast<float>(hidden));
        layer.pre_ffw_norm_2 = norm(p + "pre_feedforward_layernorm_2.weight", hidden);
        layer.post_ffw_norm_1 = norm(p + "post_feedforward_layernorm_1.weight", hidden);
        layer.post_ffw_norm_2 = norm(p + "post_feedforward_layernorm_2.weight", hidden);
    }

    // residual_ (the dense MLP's output) → the sum of both branches, each normed: the experts read
    // x_, the residual stream before the MLP.
    void add_experts(const Layer& layer, int64_t n) {
        const int64_t hidden = config_.hidden_size;
        const float eps = static_cast<float>(config_.rms_norm_eps);
        profiler::Scope scope("moe");
        grow(router_in_, n * hidden);
        grow(expert_in_, n * hidden);
        grow(expert_out_, n * hidden);
        kernels::rms_norm(x_.data(), nullptr, router_in_.data(), n, hidden, eps);
        for (int64_t t = 0; t < n; ++t)
            kernels::mul(router_in_.data() + t * hidden, layer.router_scale.data(), router_in_.data() + t * hidden, hidden);
        kernels::rms_norm(x_.data(), layer.pre_ffw_norm_2.data(), expert_in_.data(), n, hidden, eps);
        moe_block_.forward(*layer.moe, expert_in_.data(), n, hidden, expert_out_.data(), pool_, router_in_.data());
        kernels::rms_norm(residual_.data(), layer.post_ffw_norm_1.data(), residual_.data(), n, hidden, eps);
        kernels::rms_norm(expert_out_.data(), layer.post_ffw_norm_2.data(), expert_out_.data(), n, hidden, eps);
        kernels::add(residual_.data(), expert_out_.data(), residual_.data(), n * hidden);
    }

    bool raw_bool(const std::string& key) const {
        const auto it = config_.raw.find(key);
        return it != config_.raw.end() && it->is_boolean() && it->get<bool>();
    }

    // The per-layer inputs of n tokens: ple_[t][layer][P] = (norm(x0 · W_proj / √hidden) + E_ple[t] · √P) / √2.
    void per_layer_inputs(const int32_t* tokens, int64_t n) {
        const int64_t layers = config_.num_hidden_layers, width = layers * ple_size_, hidden = config_.hidden_size;
        grow(ple_, n * width);
        grow(ple_tokens_, n * width);
        // Ids past the per-layer table (multimodal placeholders) take the padding row, as HF does.
        ple_ids_.assign(tokens, tokens + n);
        for (int32_t& id : ple_ids_)
            if (id >= ple_table_.rows) id = 0;
        kernels::embedding_rows(ple_table_, width, ple_ids_.data(), n,
                                ple_tokens_.data());
        kernels::matmul(ple_model_projection_, x_.data(), n, ple_.data(), pool_);
        kernels::scale(ple_.data(), 1.0f / std::sqrt(static_cast<float>(hidden)), n * width);
        kernels::rms_norm(ple_.data(), ple_projection_norm_.data(), ple_.data(), n * layers, ple_size_, static_cast<float>(config_.rms_norm_eps));
        kernels::scale(ple_tokens_.data(), std::sqrt(static_cast<float>(ple_size_)), n * width);
        kernels::add(ple_.data(), ple_tokens_.data(), ple_.data(), n * width);
        kernels::scale(ple_.data(), 1.0f / std::sqrt(2.0f), n * width);
    }

    void forward_chunk(const int32_t* tokens, int64_t n, GemmaState& state, float* logits, bool all_positions, float* hidden_out) {
        const TransformerConfig& c = config_;
        const int64_t hidden = c.hidden_size;
        const int64_t first = state.full.size();
        const float eps = static_cast<float>(c.rms_norm_eps);
        state.sliding.reserve(first + n);
        state.full.reserve(first + n);
        grow(x_, n * hidden);
        grow(normed_, n * hidden);
        grow(residual_, n * hidden);
        positions_.resize(static_cast<size_t>(n));
        for (int64_t t = 0; t < n; ++t) positions_[static_cast<size_t>(t)] = first + t;
        {
            profiler::Scope scope("embedding");
            kernels::embedding_rows(embedding_, hidden, tokens, n, x_.data());
            kernels::scale(x_.data(), std::sqrt(static_cast<float>(hidden)), n * hidden);
            if (ple_size_ > 0) per_layer_inputs(tokens, n);
        }
        decoder_layers(n, first, state, &state);
        state.sliding.set_size(first + n);
        state.full.set_size(first + n);
        profiler::Scope scope("lm_head");
        const int64_t rows = final_norm_and_head(x_.data(), n, hidden, final_norm_, eps, lm_head_, all_positions, logits, hidden_out, normed_, pool_);
        if (softcap_ > 0.0f && rows > 0) kernels::softcap(logits, softcap_, rows * config_.vocab_size);
    }

    // x_ → x_ through every layer for the n positions from `first`.
    // `writable`: the state producing layers store their keys and values into (null for the
    // assistant, whose layers only read `state`).
    void decoder_layers(int64_t n, int64_t first, const GemmaState& state, GemmaState* writable) {
        const TransformerConfig& c = config_;
        const int64_t hidden = c.hidden_size;
        const float eps = static_cast<float>(c.rms_norm_eps);
        for (size_t i = 0; i < layers_.size(); ++i) {
            const Layer& layer = layers_[i];
            kernels::rms_norm(x_.data(), layer.input_norm.data(), normed_.data(), n, hidden, eps);
            {
                profiler::Scope scope("attention");
                attention(layer, n, first, state, writable);
            }
            kernels::rms_norm(residual_.data(), layer.post_attention_norm.data(), residual_.data(), n, hidden, eps);
            kernels::add(x_.data(), residual_.data(), x_.data(), n * hidden);
            kernels::rms_norm(x_.data(), layer.pre_ffw_norm.data(), normed_.data(), n, hidden, eps);
            {
                profiler::Scope scope("mlp");
                gated_feed_forward(layer.gate.weight, layer.up.weight, {&layer.down.weight, 1}, normed_.data(), n, residual_.data(),
                                   feed_forward_, pool_, GateActivation::GeluTanh);
            }
            if (layer.moe) add_experts(layer, n);
            kernels::rms_norm(residual_.data(), layer.post_ffw_norm.data(), residual_.data(), n, hidden, eps);
            kernels::add(x_.data(), residual_.data(), x_.data(), n * hidden);
            if (ple_size_ > 0) {
                profiler::Scope scope("per_layer_input");
                grow(ple_gate_, n * ple_size_);
                project({{&layer.ple_gate, ple_gate_.data()}}, x_.data(), n, pool_);
                kernels::gelu_tanh(ple_gate_.data(), ple_gate_.data(), n * ple_size_);
                const int64_t width = c.num_hidden_layers * ple_size_;
                for (int64_t t = 0; t < n; ++t)
                    kernels::mul(ple_gate_.data() + t * ple_size_, ple_.data() + t * width + static_cast<int64_t>(i) * ple_size_,
                                 ple_gate_.data() + t * ple_size_, ple_size_);
                project({{&layer.ple_projection, residual_.data()}}, ple_gate_.data(), n, pool_);
                kernels::rms_norm(residual_.data(), layer.ple_norm.data(), residual_.data(), n, hidden, eps);
                kernels::add(x_.data(), residual_.data(), x_.data(), n * hidden);
            }
            if (layer.scalar != 1.0f) kernels::scale(x_.data(), layer.scalar, n * hidden);
        }
    }

    // normed_ → residual_ (before o_proj's output norm) for positions [first, first + n).
    void attention(const Layer& layer, int64_t n, int64_t first, const GemmaState& state, GemmaState* writable) {
        const TransformerConfig& c = config_;
        const AttentionKind& kind = kinds_[layer.sliding ? 0 : 1];
        const KvCache& cache = layer.sliding ? state.sliding : state.full;
        const int64_t hd = kind.head_dim, heads = c.num_attention_heads, kv_heads = kind.kv_heads;
        const float eps = static_cast<float>(c.rms_norm_eps);
        grow(q_, n * heads * hd);
        grow(attn_, n * heads * hd);
        const float* none = nullptr;
        if (layer.produces) {
            grow(k_, n * kv_heads * hd);
            grow(v_, n * kv_heads * hd);
            if (layer.values)
                project({{&layer.q, q_.data()}, {&layer.k, k_.data()}, {&layer.v, v_.data()}}, normed_.data(), n, pool_);
            else
                project({{&layer.q, q_.data()}, {&layer.k, k_.data()}}, normed_.data(), n, pool_);
            if (!layer.values) std::copy_n(k_.data(), n * kv_heads * hd, v_.data());  // values: the raw keys
            kernels::rms_norm(k_.data(), layer.k_norm.data(), k_.data(), n * kv_heads, hd, eps);
            kernels::rope(k_.data(), n, kv_heads, hd, hd, positions_.data(), kind.inv_freq.data(), kernels::RopeLayout::SplitHalf);
            if (gemma4_) kernels::rms_norm(v_.data(), none, v_.data(), n * kv_heads, hd, eps);
            if (!writable) throw Error(subject_, "a layer that produces keys cannot run read-only");
            (layer.sliding ? writable->sliding : writable->full).store(layer.slot, first, n, k_.data(), v_.data());
        } else {
            project({{&layer.q, q_.data()}}, normed_.data(), n, pool_);
        }
        kernels::rms_norm(q_.data(), layer.q_norm.data(), q_.data(), n * heads, hd, eps);
        kernels::rope(q_.data(), n, heads, hd, hd, positions_.data(), kind.inv_freq.data(), kernels::RopeLayout::SplitHalf);
        kernels::AttentionParams params;
        params.heads = heads;
        params.kv_heads = kv_heads;
        params.head_dim = hd;
        params.scale = attention_scale_;
        params.window = kind.window;
        int64_t kv_begin = cache.first_visible(first), kv_end = first + n;
        if (target_) {
            // The assistant's query sits at the position of a token not yet in the cache: it sees
            // the window keys before it (sliding) or all of them, as transformers' flipped mask.
            kv_end = first;
            kv_begin = kind.window > 0 ? std::max<int64_t>(0, first - kind.window) : 0;
            if (kind.window > 0) params.window = kind.window + 1;
        }
        kernels::attention(params, q_.data(), n, positions_.data(), cache.keys(layer.slot), cache.values(layer.slot), kv_begin, kv_end,
                           attn_.data(), pool_);
        project({{&layer.o, residual_.data()}}, attn_.data(), n, pool_);
    }

    TransformerConfig config_;
    ThreadPool& pool_;
    WeightStore weights_;
    const Gemma* target_ = nullptr;   // set in an assistant: its main model
    std::unique_ptr<Gemma> assistant_;  // set in a main model with a draft model attached
    std::string subject_, gguf_prefix_, root_;
    bool gemma4_ = false, gguf_ = false, k_eq_v_ = false, moe_ = false;
    AttentionKind kinds_[2];  // sliding, full
    int64_t first_shared_ = 0;
    float attention_scale_ = 1.0f, softcap_ = 0.0f;
    WeightMatrix embedding_, lm_head_;
    std::vector<float> final_norm_;
    int64_t ple_size_ = 0;
    WeightMatrix ple_table_, ple_model_projection_;
    std::vector<float> ple_projection_norm_;
    std::vector<Layer> layers_;
    // Scratch, grown to the largest chunk seen.
    std::vector<float> x_, normed_, residual_, q_, k_, v_, attn_, ple_, ple_tokens_, ple_gate_;
    std::vector<int32_t> ple_ids_;
    std::vector<int64_t> positions_;
    // The assistant's own weights and scratch.
    WeightMatrix pre_projection_, post_projection_, centroids_;
    std::vector<int32_t> token_ordering_, cluster_ids_, candidates_;
    int64_t cluster_top_k_ = 0;
    std::vector<float> draft_input_, draft_logits_, candidate_rows_;
    FeedForwardScratch feed_forward_;
    SparseMoe moe_block_;
    std::vector<float> router_in_, expert_in_, expert_out_;
};

}  // namespace

std::unique_ptr<CausalLm> create_gemma(const Checkpoint& checkpoint, const TransformerConfig& config, const ModelLoadSettings& settings,
                                       ThreadPool& pool) {
    return std::make_unique<Gemma>(checkpoint, config, settings, pool);
}

}  // namespace oxinfer::models
