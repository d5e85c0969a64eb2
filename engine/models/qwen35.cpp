// Qwen3.5 text models (Qwen3_5ForConditionalGeneration's language model, Qwen3_5ForCausalLM, and
// the MoE variants) and Qwen3-Next, following transformers' modeling_qwen3_5.py,
// modeling_qwen3_5_moe.py and modeling_qwen3_next.py (notes: ../shared/specs/arch-specs.md section 3):
//
//   h = embed(tokens)
//   per layer:  h += mixer(rms_norm₁₊w(h)),  h += ffn(rms_norm₁₊w(h))
//     ffn = SwiGLU, or (MoE) routed SwiGLU experts + a shared expert times sigmoid(x · gate)
//     mixer = Gated DeltaNet ("linear_attention" layers) or gated attention ("full_attention")
//   logits = lm_head(rms_norm₁₊w(h))
//
// Gated attention: q_proj yields [query | gate] per head; zero-centred q/k norms; RoPE on the first
// head_dim · partial_rotary_factor values (text positions on every M-RoPE axis, which makes the
// interleaved sections the plain split-half layout); the output times sigmoid(gate).
// Gated DeltaNet: in_proj_qkv → causal depthwise conv (with its rolling state) → SiLU → q, k, v;
// β = sigmoid(in_proj_b), g = −exp(A_log)·softplus(in_proj_a + dt_bias) (Qwen3-Next fuses qkv
// with z, and b with a, grouped per key head); L2-normalised q, k; the
// delta rule over a float32 state per value head (kernels/gated_delta_net.h); a gated RMSNorm
// (weight as stored, times silu(in_proj_z)); out_proj.
//
// The sequence state holds the attention layers' KV cache and the DeltaNet layers' conv and
// recurrent states. Those cannot be rolled back, so the state keeps snapshots: one before the last
// token of every multi-token evaluation (a prompt), which is where regenerating or editing the last
// message resumes.

#include "models/causal_lm.h"
#include "models/kv_cache.h"
#include "models/layers.h"
#include "models/moe.h"
#include "models/rope_frequencies.h"
#include "models/weights.h"

#include "kernels/gated_delta_net.h"
#include "kernels/ops.h"
#include "kernels/thread_pool.h"

#include <oxinfer/checkpoint.h>
#include <oxinfer/error.h>
#include <oxinfer/profiler.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>

namespace oxinfer::models {
namespace {

using kernels::WeightMatrix;

// Tokens per prefill step, as in the Llama family.
constexpr int64_t kPrefillChunk = 512;
// Snapshots of the recurrent state kept per sequence (the latest prompts).
constexpr size_t kMaxSnapshots = 4;

struct DeltaNetShape {
    int64_t key_heads = 0, value_heads = 0, key_dim = 0, value_dim = 0, kernel = 0;
    int64_t key_channels() const { return key_heads * key_dim; }
    int64_t value_channels() const { return value_heads * value_dim; }
    int64_t conv_channels() const { return 2 * key_channels() + value_channels(); }
    int64_t conv_floats() const { return (kernel - 1) * conv_channels(); }
    int64_t state_floats() const { return value_heads * key_dim * value_dim; }
};

class HybridState final : public SequenceState {
public:
    HybridState(int64_t attention_layers, int64_t kv_heads, int64_t head_dim, DType kv_type, int64_t capacity, int64_t delta_layers,
                const DeltaNetShape& shape)
        : cache(attention_layers, kv_heads, head_dim, kv_type, capacity),
          conv(static_cast<size_t>(delta_layers * shape.conv_floats())),
          recurrent(static_cast<size_t>(delta_layers * shape.state_floats())) {}

    int64_t size() const override { return cache.size(); }
    int64_t capacity() const override { return cache.capacity(); }
    uint64_t bytes_per_position() const override { return cache.bytes_per_position(); }
    uint64_t allocated_bytes() const override {
        uint64_t bytes = cache.allocated_bytes() + (conv.size() + recurrent.size()) * sizeof(float);
        for (const Snapshot& s : snapshots) bytes += (s.conv.size() + s.recurrent.size()) * sizeof(float);
        return bytes + (trail_conv_.size() + trail_recurrent_.size()) * sizeof(float);
    }

    int64_t truncate(int64_t size) override {
        if (size >= cache.size()) return cache.size();
        if (conv.empty() && recurrent.empty()) {  // attention only (the MTP head's): exact
            cache.truncate(size);
            return size;
        }
        if (trail_count_ > 0 && size > trail_first_ && size < trail_first_ + trail_count_) {
            // Inside the last short evaluation (a speculative verification): its per-token states.
            const size_t slot = static_cast<size_t>(size - trail_first_ - 1);
            std::copy_n(trail_conv_.begin() + static_cast<std::ptrdiff_t>(slot * conv.size()), conv.size(), conv.begin());
            std::copy_n(trail_recurrent_.begin() + static_cast<std::ptrdiff_t>(slot * recurrent.size()), recurrent.size(),
                        recurrent.begin());
            while (!snapshots.empty() && snapshots.back().position > size) snapshots.pop_back();
            trail_count_ = 0;
            cache.truncate(size);
            return size;
        }
        trail_count_ = 0;
        // The latest snapshot at or before `size`; those after it describe tokens being dropped.
        while (!snapshots.empty() && snapshots.back().position > size) snapshots.pop_back();
        if (snapshots.empty()) {
            std::fill(conv.begin(), conv.end(), 0.0f);
            std::fill(recurrent.begin(), recurrent.end(), 0.0f);
            cache.truncate(0);
            return 0;
        }
        const Snapshot& s = snapshots.back();
        conv = s.conv;
        recurrent = s.recurrent;
        cache.truncate(s.position);
        return s.position;
    }

    void snapshot() {
        if (!snapshots.empty() && snapshots.back().position == size()) return;
        if (snapshots.size() == kMaxSnapshots) snapshots.pop_front();
        snapshots.push_back({size(), conv, recurrent});
    }

    // Short evaluations (2 to kMaxTrail tokens, as a speculative verification) keep the DeltaNet
    // states after each of their tokens but the last, so that truncate() can return into them.
    void begin_trail(int64_t tokens) {
        trail_first_ = size();
        trail_count_ = tokens;
        trail_conv_.resize(static_cast<size_t>(tokens - 1) * conv.size());
        trail_recurrent_.resize(static_cast<size_t>(tokens - 1) * recurrent.size());
    }
    void end_trail() { trail_count_ = 0; }
    bool recording_trail() const { return trail_count_ > 0; }
    // Where the state of DeltaNet state `offset` (a float offset into conv or recurrent) after
    // token `token` of the evaluation goes.
    float* trail_conv(int64_t token, int64_t offset) { return trail_conv_.data() + static_cast<size_t>(token) * conv.size() + offset; }
    float* trail_recurrent(int64_t token, int64_t offset) {
        return trail_recurrent_.data() + static_cast<size_t>(token) * recurrent.size() + offset;
    }

    KvCache cache;  // the full-attention layers, in order
    std::vector<float> conv, recurrent;  // per DeltaNet layer, in order

private:
    struct Snapshot {
        int64_t position;
        std::vector<float> conv, recurrent;
    };
    std::deque<Snapshot> snapshots;  // ascending positions
    int64_t trail_first_ = 0, trail_count_ = 0;
    std::vector<float> trail_conv_, trail_recurrent_;  // [token][conv or recurrent]
};

// Evaluations this short keep a trail (see HybridState::begin_trail) instead of a snapshot.
constexpr int64_t kMaxTrail = 4;

struct Layer {
    bool full_attention = false;
    int64_t index = 0;  // among the layers of its kind: its KV cache or recurrent state
    std::vector<float> attn_norm, ffn_norm;  // 1 + the stored zero-centred weight
    // Gated attention.
    Linear q, k, v, o;  // q: [heads · 2 · head_dim, hidden], query and gate per head
    std::vector<float> q_norm, k_norm;  // 1 + w, as the layer norms
    // Gated DeltaNet: separate projections (Qwen3.5; llama.cpp's attn_qkv / attn_gate for both
    // families), or Qwen3-Next's fused ones, grouped per key head (qkvz and/or ba; the others empty).
    Linear qkv, z, b, a, out;
    Linear qkvz, ba;
    std::vector<float> conv_weight;  // [kernel][channels]
    std::vector<float> decay_rate;   // −exp(A_log) per value head
    std::vector<float> dt_bias, norm;
    // Feed-forward: dense, or the sparse MoE block (Qwen3.5-MoE).
    Linear gate, up, down;
    std::optional<MoeWeights> moe;
};

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
// torch.nn.functional.softplus with its default threshold: linear above 20.
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

class Qwen35 final : public CausalLm {
    // The MTP head (see causal_lm.h): a full-attention decoder layer with its own KV cache,
    // sharing the model's embedding, head and scratch.
    class Mtp final : public DraftHead {
    public:
        explicit Mtp(Qwen35& model) : model_(model) {}
        std::unique_ptr<SequenceState> new_state(DType kv_type, int64_t context_length) const override {
            const TransformerConfig& c = model_.config_;
            return std::make_unique<HybridState>(1, c.num_key_value_heads, c.head_dim, kv_type, context_length, 0, model_.shape_);
        }
        void forward(const float* hidden, const int32_t* next_tokens, int64_t count, SequenceState& state, float* logits) override {
            model_.mtp_forward(*this, hidden, next_tokens, count, static_cast<HybridState&>(state), logits);
        }

        WeightMatrix fc;  // [hidden, 2 · hidden]
        std::vector<float> embedding_norm, hidden_norm, final_norm;  // 1 + w
        Layer layer;

    private:
        Qwen35& model_;
    };

public:
    Qwen35(const Checkpoint& checkpoint, const TransformerConfig& config, const ModelLoadSettings& settings, ThreadPool& pool)
        : config_(config), pool_(pool), weights_(checkpoint, settings, pool) {
        const std::string subject = checkpoint.path().string();
        if (config.vocab_size <= 0) throw Error(subject, "vocab_size is missing");
        const std::string gguf_arch = weights_.is_gguf() ? config.raw.value("general.architecture", "") : "";
        tiled_value_heads_ = gguf_arch == "qwen35" || gguf_arch == "qwen35moe";
        // Qwen3.5-MoE always renormalises the top k; Qwen3-Next when norm_topk_prob says so.
        if (config.architecture == "Qwen3NextForCausalLM")
            renormalize_experts_ = gguf_arch.empty() ? config.raw.value("norm_topk_prob", true)
                                                     : config.raw.value(gguf_arch + ".expert_weights_norm", true);
        read_shape(subject);
        // Rounded: GGUF gives the rotary size, stored here as a factor of head_dim.
        rotary_dim_ = std::llround(static_cast<double>(config.head_dim) * config.partial_rotary_factor);
        if (rotary_dim_ <= 0 || rotary_dim_ % 2 != 0 || rotary_dim_ > config.head_dim)
            throw Error(subject, "partial_rotary_factor " + std::to_string(config.partial_rotary_factor) + " gives an unusable rotary size");
        inv_freq_ = rope_inverse_frequencies(config, rotary_dim_, subject);
        load_weights(subject);
    }

    const TransformerConfig& config() const override { return config_; }
    uint64_t mapped_weight_bytes() const override { return weights_.mapped_bytes(); }
    uint64_t owned_weight_bytes() const override { return weights_.owned_bytes(); }
    std::string weight_type() const override { return weights_.matrix_type(); }

    std::unique_ptr<SequenceState> new_state(DType kv_type, int64_t context_length) const override {
        return std::make_unique<HybridState>(attention_layers_, config_.num_key_value_heads, config_.head_dim, kv_type, context_length,
                                             delta_layers_, shape_);
    }

    void forward(const int32_t* tokens, int64_t count, SequenceState& sequence, float* logits, bool all_positions,
                 float* hidden) override {
        auto& state = static_cast<HybridState&>(sequence);
        state.end_trail();
        if (count <= kMaxTrail) {
            if (count > 1) state.begin_trail(count);
            forward_chunks(tokens, count, state, logits, all_positions, hidden);
            return;
        }
        // A prompt: the state before its last token is kept (regenerating resumes there).
        const int64_t vocab = config_.vocab_size;
        forward_chunks(tokens, count - 1, state, all_positions ? logits : nullptr, all_positions, hidden);
        state.snapshot();
        forward_chunks(tokens + count - 1, 1, state, all_positions ? logits + (count - 1) * vocab : logits, all_positions,
                       hidden ? hidden + (count - 1) * config_.hidden_size : nullptr);
    }

    DraftHead* draft_head() override { return mtp_ ? &*mtp_ : nullptr; }

private:
    // The DeltaNet sizes and the layer pattern, from config.json or llama.cpp's GGUF keys.
    void read_shape(const std::string& subject) {
        const nlohmann::json& raw = config_.raw;
        const std::string gguf = weights_.is_gguf() ? raw.value("general.architecture", "") + "." : "";
        const auto field = [&](const std::string& key) -> int64_t {
            const auto it = raw.find(gguf + key);
            if (it == raw.end() || !it->is_number_integer() || it->get<int64_t>() <= 0)
                throw Error(subject, "config needs a positive '" + gguf + key + "'");
            return it->get<int64_t>();
        };
        if (gguf.empty()) {
            shape_.key_heads = field("linear_num_key_heads");
            shape_.value_heads = field("linear_num_value_heads");
            shape_.key_dim = field("linear_key_head_dim");
            shape_.value_dim = field("linear_value_head_dim");
            shape_.kernel = field("linear_conv_kernel_dim");
        } else {
            shape_.key_heads = field("ssm.group_count");
            shape_.value_heads = field("ssm.time_step_rank");
            shape_.key_dim = field("ssm.state_size");
            shape_.value_dim = field("ssm.inner_size") / shape_.value_heads;
            shape_.kernel = field("ssm.conv_kernel");
            if (shape_.value_dim * shape_.value_heads != field("ssm.inner_size"))
                throw Error(subject, gguf + "ssm.inner_size is not a multiple of " + gguf + "ssm.time_step_rank");
        }
        if (shape_.value_heads % shape_.key_heads != 0)
            throw Error(subject, "the DeltaNet's value heads are not a multiple of its key heads");
        std::vector<std::string> types;
        if (const auto it = raw.find("layer_types"); gguf.empty() && it != raw.end() && it->is_array()) {
            for (const auto& t : *it) types.push_back(t.is_string() ? t.get<std::string>() : "");
        } else {
            const int64_t interval = raw.value(gguf + "full_attention_interval", int64_t{4});
            if (interval <= 0) throw Error(subject, "full_attention_interval must be positive");
            for (int64_t i = 0; i < config_.num_hidden_layers; ++i)
                types.push_back((i + 1) % interval == 0 ? "full_attention" : "linear_attention");
        }
        if (static_cast<int64_t>(types.size()) != config_.num_hidden_layers)
            throw Error(subject, "layer_types has " + std::to_string(types.size()) + " entries for " +
                                     std::to_string(config_.num_hidden_layers) + " layers");
        layers_.resize(types.size());
        for (size_t i = 0; i < types.size(); ++i) {
            if (types[i] != "full_attention" && types[i] != "linear_attention")
                throw Error(subject, "layer " + std::to_string(i) + " has the unknown type '" + types[i] + "'");
            Layer& layer = layers_[i];
            layer.full_attention = types[i] == "full_attention";
            layer.index = layer.full_attention ? attention_layers_++ : delta_layers_++;
        }
    }

    // Zero-centred norms multiply by 1 + w; llama.cpp's converter stores 1 + w already.
    std::vector<float> centred_norm(const std::string& name, int64_t size) const {
        std::vector<float> w = weights_.vector(name, size);
        if (!weights_.is_gguf())
            for (float& x : w) x += 1.0f;
        return w;
    }

    void load_weights(const std::string& subject) {
        const TransformerConfig& c = config_;
        const int64_t hidden = c.hidden_size;
        // Released checkpoints put the text model under model.language_model; text-only exports
        // (and GGUF names, which the store maps from model.*) under model.
        const std::string root = weights_.find("model.language_model.embed_tokens.weight") ? "model.language_model." : "model.";
        const TensorInfo* head = weights_.find("lm_head.weight");
        embedding_ = weights_.embedding(weights_.get(root + "embed_tokens.weight"), c.vocab_size, hidden, !head || c.tie_word_embeddings);
        final_norm_ = centred_norm(root + "norm.weight", hidden);
        if (!head && !c.tie_word_embeddings) throw Error(subject, "has no lm_head.weight and tie_word_embeddings is false");
        lm_head_ = head && !c.tie_word_embeddings ? weights_.matrix(*head, c.vocab_size, hidden) : embedding_;
        for (size_t i = 0; i < layers_.size(); ++i)
            load_layer(layers_[i], static_cast<int64_t>(i), root + "layers." + std::to_string(i) + ".", subject);
        load_mtp(subject);
    }

    // `index` in the stack, or -1 for the MTP layer.
    void load_layer(Layer& layer, int64_t index, const std::string& p, const std::string& subject) {
        const TransformerConfig& c = config_;
        const int64_t hidden = c.hidden_size, hd = c.head_dim;
        const DeltaNetShape& s = shape_;
        layer.attn_norm = centred_norm(p + "input_layernorm.weight", hidden);
        layer.ffn_norm = centred_norm(p + "post_attention_layernorm.weight", hidden);
        if (layer.full_attention) {
            layer.q = weights_.linear(p + "self_attn.q_proj", c.num_attention_heads * hd * 2, hidden);
            layer.k = weights_.linear(p + "self_attn.k_proj", c.num_key_value_heads * hd, hidden);
            layer.v = weights_.linear(p + "self_attn.v_proj", c.num_key_value_heads * hd, hidden);
            layer.o = weights_.linear(p + "self_attn.o_proj", hidden, c.num_attention_heads * hd);
            layer.q_norm = centred_norm(p + "self_attn.q_norm.weight", hd);
            layer.k_norm = centred_norm(p + "self_attn.k_norm.weight", hd);
        } else {
            const std::string q = p + "linear_attn.";
            if (weights_.find(q + "in_proj_qkvz.weight")) {
                layer.qkvz = weights_.linear(q + "in_proj_qkvz", s.conv_channels() + s.value_channels(), hidden);
            } else {
                layer.qkv = weights_.linear(q + "in_proj_qkv", s.conv_channels(), hidden);
                layer.z = weights_.linear(q + "in_proj_z", s.value_channels(), hidden);
            }
            if (weights_.find(q + "in_proj_ba.weight")) {
                layer.ba = weights_.linear(q + "in_proj_ba", 2 * s.value_heads, hidden);
            } else {
                layer.b = weights_.linear(q + "in_proj_b", s.value_heads, hidden);
                layer.a = weights_.linear(q + "in_proj_a", s.value_heads, hidden);
            }
            layer.out = weights_.linear(q + "out_proj", hidden, s.value_channels());
            // conv1d.weight [channels][1][kernel] → [kernel][channels]
            const std::vector<float> conv = weights_.vector(q + "conv1d.weight", s.conv_channels() * s.kernel);
            layer.conv_weight.resize(conv.size());
            for (int64_t ch = 0; ch < s.conv_channels(); ++ch)
                for (int64_t j = 0; j < s.kernel; ++j)
                    layer.conv_weight[static_cast<size_t>(j * s.conv_channels() + ch)] = conv[static_cast<size_t>(ch * s.kernel + j)];
            layer.decay_rate = weights_.vector(q + "A_log", s.value_heads);
            if (!weights_.is_gguf())  // llama.cpp stores −exp(A_log)
                for (float& r : layer.decay_rate) r = -std::exp(r);
            layer.dt_bias = weights_.vector(q + "dt_bias", s.value_heads);
            layer.norm = weights_.vector(q + "norm.weight", s.value_dim);
        }
        if (sparse(index, p)) {
            // Qwen3_5MoeSparseMoeBlock / Qwen3NextSparseMoeBlock: a shared expert with a sigmoid gate.
            layer.moe = load_moe(weights_, p, c.num_experts, hidden, c.moe_intermediate_size, c.num_experts_per_token,
                                 renormalize_experts_, shared_expert_width(subject));
        } else {
            layer.gate = weights_.linear(p + "mlp.gate_proj", c.intermediate_size, hidden);
            layer.up = weights_.linear(p + "mlp.up_proj", c.intermediate_size, hidden);
            layer.down = weights_.linear(p + "mlp.down_proj", hidden, c.intermediate_size);
        }
    }

    // The MTP head: mtp.* in Hugging Face checkpoints, llama.cpp's nextn block (layer
    // num_hidden_layers, with blk.N.nextn.*) in GGUF. Absent in many files: then no draft head.
    void load_mtp(const std::string& subject) {
        const int64_t hidden = config_.hidden_size;
        const bool gguf = weights_.is_gguf();
        const Checkpoint& checkpoint = weights_.checkpoint();
        const std::string nextn = "blk." + std::to_string(config_.num_hidden_layers) + ".nextn.";
        const TensorInfo* fc = gguf ? checkpoint.find(nextn + "eh_proj.weight") : weights_.find("mtp.fc.weight");
        if (!fc) return;
        const auto norm = [&](const std::string& hf, const std::string& gg) {
            if (!gguf) return centred_norm("mtp." + hf + ".weight", hidden);
            const TensorInfo* t = checkpoint.find(nextn + gg + ".weight");
            if (!t || t->elements() != hidden) throw Error(subject, "the MTP block lacks " + nextn + gg + ".weight of " + std::to_string(hidden));
            return checkpoint.read_f32(*t);
        };
        Mtp& head = mtp_.emplace(*this);
        head.fc = weights_.matrix(*fc, hidden, 2 * hidden);
        head.embedding_norm = norm("pre_fc_norm_embedding", "enorm");
        head.hidden_norm = norm("pre_fc_norm_hidden", "hnorm");
        head.final_norm = norm("norm", "shared_head_norm");
        head.layer.full_attention = true;
        load_layer(head.layer, -1, gguf ? "model.layers." + std::to_string(config_.num_hidden_layers) + "." : "mtp.layers.0.", subject);
    }

    // The MTP head's positions [state.size(), + total): position i from hidden[i] and next[i].
    void mtp_forward(const Mtp& head, const float* hidden_in, const int32_t* next, int64_t total, HybridState& state, float* logits) {
        const int64_t hidden = config_.hidden_size;
        const float eps = static_cast<float>(config_.rms_norm_eps);
        profiler::Scope scope("mtp");
        for (int64_t begin = 0; begin < total; begin += kPrefillChunk) {
            const int64_t n = std::min(kPrefillChunk, total - begin);
            const int64_t first = state.cache.size();
            begin_positions(state, first, n);
            // fc([rms_norm(embed(x_{i+1})) | rms_norm(h_i)]), the embedding half first.
            kernels::embedding_rows(embedding_, hidden, next + begin, n,
                                    x_.data());
            for (int64_t t = 0; t < n; ++t) {
                float* row = normed_.data() + t * 2 * hidden;
                kernels::rms_norm(x_.data() + t * hidden, head.embedding_norm.data(), row, 1, hidden, eps);
                kernels::rms_norm(hidden_in + (begin + t) * hidden, head.hidden_norm.data(), row + hidden, 1, hidden, eps);
            }
            kernels::matmul(head.fc, normed_.data(), n, x_.data(), pool_);
            decoder_layer(head.layer, n, first, state);
            state.cache.set_size(first + n);
            if (logits && begin + n == total) {
                kernels::rms_norm(x_.data() + (n - 1) * hidden, head.final_norm.data(), normed_.data(), 1, hidden, eps);
                kernels::matmul(lm_head_, normed_.data(), 1, logits, pool_);
            }
        }
    }

    // MoE models: layers in mlp_only_layers, or off the decoder_sparse_step, stay dense. GGUF has
    // no such keys (llama.cpp makes every layer sparse), and the MTP layer is none of the stack:
    // there a layer is sparse when it has a router.
    bool sparse(int64_t layer, const std::string& prefix) const {
        if (config_.num_experts <= 0) return false;
        if (weights_.is_gguf() || layer < 0) return weights_.find(prefix + "mlp.gate.weight") != nullptr;
        const int64_t step = config_.raw.value("decoder_sparse_step", int64_t{1});
        if (step <= 0 || (layer + 1) % step != 0) return false;
        const auto only = config_.raw.find("mlp_only_layers");
        if (only == config_.raw.end() || !only->is_array()) return true;
        return std::find(only->begin(), only->end(), layer) == only->end();
    }

    int64_t shared_expert_width(const std::string& subject) const {
        const TransformerConfig& c = config_;
        if (c.num_experts_per_token <= 0 || c.num_experts_per_token > c.num_experts || c.moe_intermediate_size <= 0)
            throw Error(subject, "MoE config needs num_experts, num_experts_per_tok (<= num_experts) and moe_intermediate_size");
        const std::string key = weights_.is_gguf() ? c.raw.value("general.architecture", "") + ".expert_shared_feed_forward_length"
                                                   : "shared_expert_intermediate_size";
        const int64_t width = c.raw.value(key, int64_t{0});
        if (width <= 0) throw Error(subject, "config needs a positive '" + key + "'");
        return width;
    }

    void forward_chunks(const int32_t* tokens, int64_t count, HybridState& state, float* logits, bool all_positions, float* hidden) {
        const int64_t vocab = config_.vocab_size;
        for (int64_t begin = 0; begin < count; begin += kPrefillChunk) {
            const int64_t n = std::min(kPrefillChunk, count - begin);
            const bool last_chunk = begin + n == count;
            float* out = !logits ? nullptr : all_positions ? logits + begin * vocab : (last_chunk ? logits : nullptr);
            forward_chunk(tokens + begin, n, state, out, all_positions, hidden ? hidden + begin * config_.hidden_size : nullptr);
        }
    }

    // Scratch for n positions after `first`, and their positions.
    void begin_positions(HybridState& state, int64_t first, int64_t n) {
        const int64_t hidden = config_.hidden_size;
        state.cache.reserve(first + n);
        grow(x_, n * hidden);
        grow(normed_, n * 2 * hidden);  // the MTP head's concatenated input is twice as wide
        grow(residual_, n * hidden);
        positions_.resize(static_cast<size_t>(n));
        for (int64_t t = 0; t < n; ++t) positions_[static_cast<size_t>(t)] = first + t;
    }

    void forward_chunk(const int32_t* tokens, int64_t n, HybridState& state, float* logits, bool all_positions, float* hidden_out) {
        const TransformerConfig& c = config_;
        const int64_t hidden = c.hidden_size;
        const int64_t first = state.cache.size();
        const float eps = static_cast<float>(c.rms_norm_eps);
        begin_positions(state, first, n);
        {
            profiler::Scope scope("embedding");
            kernels::embedding_rows(embedding_, hidden, tokens, n, x_.data());
        }
        for (const Layer& layer : layers_) decoder_layer(layer, n, first, state);
        state.cache.set_size(first + n);
        profiler::Scope scope("lm_head");
        final_norm_and_head(x_.data(), n, hidden, final_norm_, eps, lm_head_, all_positions, logits, hidden_out, normed_, pool_);
    }

    // x_ → x_ through one decoder layer for positions [first, first + n).
    void decoder_layer(const Layer& layer, int64_t n, int64_t first, HybridState& state) {
        const int64_t hidden = config_.hidden_size;
        const float eps = static_cast<float>(config_.rms_norm_eps);
        kernels::rms_norm(x_.data(), layer.attn_norm.data(), normed_.data(), n, hidden, eps);
        if (layer.full_attention) {
            profiler::Scope scope("attention");
            gated_attention(layer, n, first, state);
        } else {
            profiler::Scope scope("delta_net");
            gated_delta_net(layer, n, state);
        }
        kernels::add(x_.data(), residual_.data(), x_.data(), n * hidden);
        kernels::rms_norm(x_.data(), layer.ffn_norm.data(), normed_.data(), n, hidden, eps);
        if (layer.moe) {
            profiler::Scope scope("moe");
            moe_.forward(*layer.moe, normed_.data(), n, hidden, residual_.data(), pool_);
        } else {
            profiler::Scope scope("mlp");
            gated_feed_forward(layer.gate.weight, layer.up.weight, {&layer.down.weight, 1}, normed_.data(), n, residual_.data(),
                               feed_forward_, pool_);
        }
        kernels::add(x_.data(), residual_.data(), x_.data(), n * hidden);
    }

    // normed_ → residual_ for the positions [first, first + n).
    void gated_attention(const Layer& layer, int64_t n, int64_t first, HybridState& state) {
        const TransformerConfig& c = config_;
        const int64_t hd = c.head_dim, heads = c.num_attention_heads, kv_heads = c.num_key_value_heads;
        const float eps = static_cast<float>(c.rms_norm_eps);
        grow(projected_, n * heads * 2 * hd);
        grow(q_, n * heads * hd);
        grow(gate_, n * heads * hd);
        grow(k_, n * kv_heads * hd);
        grow(v_, n * kv_heads * hd);
        grow(attn_, n * heads * hd);
        project({{&layer.q, projected_.data()}, {&layer.k, k_.data()}, {&layer.v, v_.data()}}, normed_.data(), n, pool_);
        for (int64_t row = 0; row < n * heads; ++row) {
            const float* src = projected_.data() + row * 2 * hd;
            std::copy(src, src + hd, q_.data() + row * hd);
            std::copy(src + hd, src + 2 * hd, gate_.data() + row * hd);
        }
        kernels::rms_norm(q_.data(), layer.q_norm.data(), q_.data(), n * heads, hd, eps);
        kernels::rms_norm(k_.data(), layer.k_norm.data(), k_.data(), n * kv_heads, hd, eps);
        kernels::rope(q_.data(), n, heads, hd, rotary_dim_, positions_.data(), inv_freq_.data(), kernels::RopeLayout::SplitHalf);
        kernels::rope(k_.data(), n, kv_heads, hd, rotary_dim_, positions_.data(), inv_freq_.data(), kernels::RopeLayout::SplitHalf);
        state.cache.store(layer.index, first, n, k_.data(), v_.data());
        kernels::AttentionParams params;
        params.heads = heads;
        params.kv_heads = kv_heads;
        params.head_dim = hd;
        params.scale = 1.0f / std::sqrt(static_cast<float>(hd));
        kernels::attention(params, q_.data(), n, positions_.data(), state.cache.keys(layer.index), state.cache.values(layer.index), 0,
                           first + n, attn_.data(), pool_);
        for (int64_t i = 0; i < n * heads * hd; ++i) attn_[static_cast<size_t>(i)] *= sigmoid(gate_[static_cast<size_t>(i)]);
        project({{&layer.o, residual_.data()}}, attn_.data(), n, pool_);
    }

    // The conv input (projected_: all q heads, all k heads, all v heads), z (gate_), and the
    // pre-activation beta (beta_) and alpha (decay_) of n tokens.
    void project_delta_inputs(const Layer& layer, int64_t n) {
        const DeltaNetShape& s = shape_;
        const bool fused_qkvz = layer.qkvz.weight.rows > 0, fused_ba = layer.ba.weight.rows > 0;
        if (!fused_qkvz && !fused_ba) {
            project({{&layer.qkv, projected_.data()}, {&layer.z, gate_.data()}, {&layer.b, beta_.data()}, {&layer.a, decay_.data()}},
                    normed_.data(), n, pool_);
            return;
        }
        // Qwen3-Next: per key head g, qkvz rows are [q_g (dk) | k_g (dk) | v (r·dv) | z (r·dv)] and ba
        // rows [b (r) | a (r)] for the value heads g·r .. g·r + r − 1.
        const int64_t qkvz_rows = s.conv_channels() + s.value_channels(), ba_rows = 2 * s.value_heads;
        grow(fused_qkvz_, n * qkvz_rows);
        grow(fused_ba_, n * ba_rows);
        if (fused_qkvz && fused_ba)
            project({{&layer.qkvz, fused_qkvz_.data()}, {&layer.ba, fused_ba_.data()}}, normed_.data(), n, pool_);
        else if (fused_ba)  // llama.cpp splits qkvz into attn_qkv and attn_gate but keeps ssm_ba
            project({{&layer.qkv, projected_.data()}, {&layer.z, gate_.data()}, {&layer.ba, fused_ba_.data()}}, normed_.data(), n, pool_);
        else
            project({{&layer.qkvz, fused_qkvz_.data()}, {&layer.b, beta_.data()}, {&layer.a, decay_.data()}}, normed_.data(), n, pool_);
        const int64_t r = s.value_heads / s.key_heads, dk = s.key_dim, group_values = r * s.value_dim;
        const int64_t keys = s.key_channels(), channels = s.conv_channels(), values = s.value_channels();
        for (int64_t t = 0; t < n; ++t)
            for (int64_t g = 0; g < s.key_heads; ++g) {
                if (fused_qkvz) {
                    const float* src = fused_qkvz_.data() + t * qkvz_rows + g * (2 * dk + 2 * group_values);
                    float* conv_in = projected_.data() + t * channels;
                    std::copy(src, src + dk, conv_in + g * dk);
                    std::copy(src + dk, src + 2 * dk, conv_in + keys + g * dk);
                    std::copy(src + 2 * dk, src + 2 * dk + group_values, conv_in + 2 * keys + g * group_values);
                    std::copy(src + 2 * dk + group_values, src + 2 * dk + 2 * group_values, gate_.data() + t * values + g * group_values);
                }
                if (fused_ba) {
                    const float* src = fused_ba_.data() + t * ba_rows + g * 2 * r;
                    std::copy(src, src + r, beta_.data() + t * s.value_heads + g * r);
                    std::copy(src + r, src + 2 * r, decay_.data() + t * s.value_heads + g * r);
                }
            }
    }

    // normed_ → residual_, advancing the layer's conv and recurrent states by n tokens.
    void gated_delta_net(const Layer& layer, int64_t n, HybridState& state) {
        const DeltaNetShape& s = shape_;
        const int64_t channels = s.conv_channels(), keys = s.key_channels(), values = s.value_channels(), hv = s.value_heads;
        grow(projected_, n * channels);
        grow(conv_out_, n * channels);
        grow(q_, n * keys);
        grow(k_, n * keys);
        grow(v_, n * values);
        grow(gate_, n * values);  // z
        grow(beta_, n * hv);
        grow(decay_, n * hv);
        grow(attn_, n * values);
        project_delta_inputs(layer, n);
        float* conv_state = state.conv.data() + layer.index * s.conv_floats();
        float* recurrent_state = state.recurrent.data() + layer.index * s.state_floats();
        // While recording a trail the states advance a token at a time, each kept but the last.
        const int64_t step = state.recording_trail() ? 1 : n;
        for (int64_t t = 0; t < n; t += step) {
            kernels::causal_conv1d_silu(projected_.data() + t * channels, step, channels, layer.conv_weight.data(), s.kernel, conv_state,
                                        conv_out_.data() + t * channels);
            if (step == 1 && t + 1 < n)
                std::copy_n(conv_state, s.conv_floats(), state.trail_conv(t, layer.index * s.conv_floats()));
        }
        for (int64_t t = 0; t < n; ++t) {
            const float* row = conv_out_.data() + t * channels;
            std::copy(row, row + keys, q_.data() + t * keys);
            std::copy(row + keys, row + 2 * keys, k_.data() + t * keys);
            std::copy(row + 2 * keys, row + channels, v_.data() + t * values);
            for (int64_t h = 0; h < hv; ++h) {
                float& beta = beta_[static_cast<size_t>(t * hv + h)];
                float& decay = decay_[static_cast<size_t>(t * hv + h)];
                beta = sigmoid(beta);
                decay = layer.decay_rate[static_cast<size_t>(h)] * softplus(decay + layer.dt_bias[static_cast<size_t>(h)]);
            }
        }
        constexpr float kL2Eps = 1e-6f;
        kernels::l2_normalize(q_.data(), n * s.key_heads, s.key_dim, kL2Eps, 1.0f / std::sqrt(static_cast<float>(s.key_dim)));
        kernels::l2_normalize(k_.data(), n * s.key_heads, s.key_dim, kL2Eps);
        const kernels::DeltaRuleShape rule{s.value_heads, s.key_heads, s.key_dim, s.value_dim, tiled_value_heads_};
        for (int64_t t = 0; t < n; t += step) {
            kernels::gated_delta_rule(rule, q_.data() + t * keys, k_.data() + t * keys, v_.data() + t * values, decay_.data() + t * hv,
                                      beta_.data() + t * hv, step, recurrent_state, attn_.data() + t * values, pool_);
            if (step == 1 && t + 1 < n)
                std::copy_n(recurrent_state, s.state_floats(), state.trail_recurrent(t, layer.index * s.state_floats()));
        }
        // Gated RMSNorm per value head: weight · norm(o) · silu(z).
        kernels::rms_norm(attn_.data(), layer.norm.data(), attn_.data(), n * hv, s.value_dim, static_cast<float>(config_.rms_norm_eps));
        kernels::swiglu(gate_.data(), attn_.data(), attn_.data(), n * values);
        project({{&layer.out, residual_.data()}}, attn_.data(), n, pool_);
    }

    TransformerConfig config_;
    ThreadPool& pool_;
    WeightStore weights_;
    DeltaNetShape shape_;
    int64_t attention_layers_ = 0, delta_layers_ = 0;
    // llama.cpp's converter reorders Qwen3.5's value heads (and every tensor indexed by them) so
    // that value head h reads key head h % Hk; transformers' order (and llama.cpp's Qwen3-Next)
    // groups them: h / (Hv / Hk).
    bool tiled_value_heads_ = false;
    bool renormalize_experts_ = true;
    int64_t rotary_dim_ = 0;
    std::vector<float> inv_freq_;
    WeightMatrix embedding_, lm_head_;
    std::vector<float> final_norm_;
    std::vector<Layer> layers_;
    // Scratch, grown to the largest chunk seen.
    std::vector<float> x_, normed_, residual_, projected_, conv_out_, q_, k_, v_, gate_, attn_, beta_, decay_, fused_qkvz_, fused_ba_;
    std::vector<int64_t> positions_;
    FeedForwardScratch feed_forward_;
    SparseMoe moe_;
    std::optional<Mtp> mtp_;
};

}  // namespace

std::unique_ptr<CausalLm> create_qwen35(const Checkpoint& checkpoint, const TransformerConfig& config, const ModelLoadSettings& settings,
                                        ThreadPool& pool) {
    return std::make_unique<Qwen35>(checkpoint, config, settings, pool);
}

}  // namespace oxinfer::models
