// Llama 3 (LlamaForCausalLM), Qwen2 (q/k/v biases), Qwen3 (per-head q/k RMSNorm) and Qwen3-MoE
// (softmax router, top-k experts, optional renormalisation), following transformers'
// modeling_llama.py, modeling_qwen2.py, modeling_qwen3.py and modeling_qwen3_moe.py:
//
//   h = embed(tokens)
//   per layer:  h += o_proj(attention(rope(norm_q(q_proj(n))), rope(norm_k(k_proj(n))), v_proj(n))),  n = rms_norm(h)
//               h += mlp(rms_norm(h))        mlp = down(silu(gate(x)) * up(x)), or the routed experts
//   logits = lm_head(rms_norm(h))
//
// GGUF files of the llama architecture hold q/k rows permuted by llama.cpp's converter so that
// each rotary pair is adjacent; they are used as stored with the interleaved RoPE layout, which
// gives the same attention scores (q and k of a head are permuted alike).

#include "models/causal_lm.h"
#include "models/kv_cache.h"
#include "models/layers.h"
#include "models/moe.h"
#include "models/rope_frequencies.h"
#include "models/weights.h"

#include "kernels/interleave.h"
#include "kernels/ops.h"
#include "kernels/thread_pool.h"

#include <oxinfer/checkpoint.h>
#include <oxinfer/error.h>
#include <oxinfer/profiler.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <mutex>
#include <optional>

namespace oxinfer::models {
namespace {

using kernels::WeightMatrix;

class KvState final : public SequenceState {
public:
    KvState(int64_t layers, int64_t kv_heads, int64_t head_dim, DType dtype, int64_t capacity)
        : cache(layers, kv_heads, head_dim, dtype, capacity) {}
    int64_t size() const override { return cache.size(); }
    int64_t capacity() const override { return cache.capacity(); }
    int64_t truncate(int64_t size) override {
        cache.truncate(size);
        return cache.size();
    }
    uint64_t allocated_bytes() const override { return cache.allocated_bytes(); }
    uint64_t bytes_per_position() const override { return cache.bytes_per_position(); }
    KvCache cache;
};

struct Layer {
    std::vector<float> attn_norm, ffn_norm, q_norm, k_norm;
    Linear q, k, v;
    // o_proj and down_proj as column parts (matmul_column_parts): one a thread where decoding
    // splits the layer over the threads (ParallelDecode), else the whole matrix.
    std::vector<WeightMatrix> o, down;
    std::vector<float> o_bias;
    Linear gate, up;  // dense MLP, with down
    std::optional<MoeWeights> moe;
};

// A decoded token's layers as one parallel job, as tensor parallelism splits a layer over
// devices: each thread takes a share of the kv heads, computes their q/k/v rows, attends them and
// multiplies the result by its columns of o_proj; then, after one barrier, each adds every
// thread's partial output to its own copy of the hidden state, takes a share of the MLP's
// intermediate values (their gate and up rows, then its columns of down_proj) and, after a second
// barrier, adds the partial outputs again. Two barriers a layer where the GEMVs, attention and
// output projections otherwise synchronise the threads five times (qkv, attention, o_proj,
// gate/up, down), each with the caller alone norming and quantising in between; the sums are
// added in thread order, so a token's logits do not depend on timing.
struct ParallelDecode {
    int threads = 0;                 // 0: decoding takes the per-product sections
    int64_t kv_heads_per_thread = 0;
    std::vector<int64_t> head_columns;  // thread t's columns of o_proj: [head_columns[t], head_columns[t + 1])
    std::vector<int64_t> intermediate;  // thread t's intermediate values: [intermediate[t], intermediate[t + 1])
};

// Tokens per prefill step: big enough for GEMM to reach its speed, small enough for the scratch.
constexpr int64_t kPrefillChunk = 512;

class LlamaFamily final : public CausalLm {
public:
    LlamaFamily(const Checkpoint& checkpoint, const TransformerConfig& config, const ModelLoadSettings& settings, ThreadPool& pool)
        : config_(config), pool_(pool), weights_(checkpoint, settings, pool) {
        const std::string subject = checkpoint.path().string();
        const bool qwen3 = config.architecture == "Qwen3ForCausalLM" || config.architecture == "Qwen3MoeForCausalLM";
        const bool qwen2 = config.architecture == "Qwen2ForCausalLM";
        attention_bias_ = qwen2 || config.raw.value("attention_bias", false);
        qk_norm_ = qwen3;
        if (config.raw.value("use_sliding_window", false))
            throw Error(subject, "use_sliding_window is set; sliding-window Qwen2 attention is not supported");
        if (config.raw.value("mlp_bias", false)) throw Error(subject, "mlp_bias is not supported");
        if (config.vocab_size <= 0) throw Error(subject, "vocab_size is missing");
        const bool gguf = checkpoint.format() == CheckpointFormat::Gguf;
        const std::string gguf_arch = gguf ? checkpoint.metadata().value("general.architecture", "") : "";
        layout_ = gguf_arch == "llama" ? kernels::RopeLayout::Interleaved : kernels::RopeLayout::SplitHalf;
        inv_freq_ = rope_inverse_frequencies(config, config.head_dim, subject);
        if (const TensorInfo* factors = gguf ? checkpoint.find("rope_freqs.weight") : nullptr) {
            // llama.cpp stores llama3 scaling as per-frequency divisors.
            const std::vector<float> divisors = checkpoint.read_f32(*factors);
            if (divisors.size() != inv_freq_.size()) throw Error(subject, "rope_freqs.weight has the wrong length");
            for (size_t i = 0; i < divisors.size(); ++i) inv_freq_[i] /= divisors[i];
        }
        load_weights(gguf, gguf_arch);
    }

    const TransformerConfig& config() const override { return config_; }
    uint64_t mapped_weight_bytes() const override { return weights_.mapped_bytes(); }
    uint64_t owned_weight_bytes() const override { return weights_.owned_bytes(); }
    std::string weight_type() const override { return weights_.matrix_type(); }

    std::unique_ptr<SequenceState> new_state(DType kv_type, int64_t context_length) const override {
        return std::make_unique<KvState>(config_.num_hidden_layers, config_.num_key_value_heads, config_.head_dim, kv_type, context_length);
    }

    void forward(const int32_t* tokens, int64_t count, SequenceState& state, float* logits, bool all_positions, float*) override {
        auto& cache = static_cast<KvState&>(state).cache;
        const int64_t vocab = config_.vocab_size;
        for (int64_t begin = 0; begin < count; begin += kPrefillChunk) {
            const int64_t n = std::min(kPrefillChunk, count - begin);
            const bool last_chunk = begin + n == count;
            float* out = all_positions ? logits + begin * vocab : (last_chunk ? logits : nullptr);
            forward_chunk(tokens + begin, n, cache, out, all_positions);
        }
    }

private:
    void load_weights(bool gguf, const std::string& gguf_arch) {
        const TransformerConfig& c = config_;
        const int64_t hidden = c.hidden_size, hd = c.head_dim;
        const Checkpoint& checkpoint = weights_.checkpoint();
        const TensorInfo* head = weights_.find("lm_head.weight");
        embedding_ = weights_.embedding(weights_.get("model.embed_tokens.weight"), c.vocab_size, hidden, !head || c.tie_word_embeddings);
        final_norm_ = weights_.vector("model.norm.weight", hidden);
        lm_head_ = head && !c.tie_word_embeddings ? weights_.matrix(*head, c.vocab_size, hidden) : embedding_;
        if (!head && !c.tie_word_embeddings) throw Error(checkpoint.path().string(), "has no lm_head.weight and tie_word_embeddings is false");

        const bool moe_arch = c.architecture == "Qwen3MoeForCausalLM";
        norm_topk_prob_ = gguf ? checkpoint.metadata().value(gguf_arch + ".expert_weights_norm", true) : c.raw.value("norm_topk_prob", false);
        const int64_t sparse_step = c.raw.value("decoder_sparse_step", int64_t{1});
        const std::vector<int64_t> mlp_only = c.raw.value("mlp_only_layers", std::vector<int64_t>{});
        if (moe_arch && (c.num_experts <= 0 || c.num_experts_per_token <= 0 || c.num_experts_per_token > c.num_experts ||
                         c.moe_intermediate_size <= 0))
            throw Error(checkpoint.path().string(), "MoE config needs num_experts, num_experts_per_tok (<= num_experts) and moe_intermediate_size");
        if (!moe_arch) plan_parallel_decode();

        layers_.resize(static_cast<size_t>(c.num_hidden_layers));
        for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
            Layer& layer = layers_[static_cast<size_t>(i)];
            const std::string p = "model.layers." + std::to_string(i) + ".";
            layer.attn_norm = weights_.vector(p + "input_layernorm.weight", hidden);
            layer.ffn_norm = weights_.vector(p + "post_attention_layernorm.weight", hidden);
            layer.q = weights_.linear(p + "self_attn.q_proj", c.num_attention_heads * hd, hidden, attention_bias_);
            layer.k = weights_.linear(p + "self_attn.k_proj", c.num_key_value_heads * hd, hidden, attention_bias_);
            layer.v = weights_.linear(p + "self_attn.v_proj", c.num_key_value_heads * hd, hidden, attention_bias_);
            const TensorInfo& o = weights_.get(p + "self_attn.o_proj.weight");
            layer.o = parallel_.threads ? weights_.matrix_columns(o, hidden, c.num_attention_heads * hd, parallel_.head_columns)
                                        : std::vector{weights_.matrix(o, hidden, c.num_attention_heads * hd)};
            if (attention_bias_ && c.architecture == "LlamaForCausalLM") layer.o_bias = weights_.vector(p + "self_attn.o_proj.bias", hidden);
            if (qk_norm_) {
                layer.q_norm = weights_.vector(p + "self_attn.q_norm.weight", hd);
                layer.k_norm = weights_.vector(p + "self_attn.k_norm.weight", hd);
            }
            const bool sparse = moe_arch && std::find(mlp_only.begin(), mlp_only.end(), i) == mlp_only.end() && (i + 1) % sparse_step == 0;
            if (sparse) {
                layer.moe = load_moe(weights_, p, c.num_experts, hidden, c.moe_intermediate_size, c.num_experts_per_token, norm_topk_prob_, 0);
            } else {
                layer.gate = weights_.linear(p + "mlp.gate_proj", c.intermediate_size, hidden);
                layer.up = weights_.linear(p + "mlp.up_proj", c.intermediate_size, hidden);
                const TensorInfo& down = weights_.get(p + "mlp.down_proj.weight");
                layer.down = parallel_.threads ? weights_.matrix_columns(down, hidden, c.intermediate_size, parallel_.intermediate)
                                               : std::vector{weights_.matrix(down, hidden, c.intermediate_size)};
            }
        }
    }

    void forward_chunk(const int32_t* tokens, int64_t n, KvCache& cache, float* logits, bool all_positions) {
        const TransformerConfig& c = config_;
        const int64_t hidden = c.hidden_size, hd = c.head_dim, heads = c.num_attention_heads, kv_heads = c.num_key_value_heads;
        const int64_t first = cache.size();
        const float eps = static_cast<float>(c.rms_norm_eps);
        cache.reserve(first + n);
        grow(x_, n * hidden);
        grow(normed_, n * hidden);
        grow(q_, n * heads * hd);
        grow(k_, n * kv_heads * hd);
        grow(v_, n * kv_heads * hd);
        grow(attn_, n * heads * hd);
        grow(residual_, n * hidden);
        positions_.resize(static_cast<size_t>(n));
        for (int64_t t = 0; t < n; ++t) positions_[static_cast<size_t>(t)] = first + t;
        // RoPE's cos and sin once for the step, for q and k of every layer.
        grow(rope_cos_, n * hd / 2);
        grow(rope_sin_, n * hd / 2);
        kernels::rope_angles(positions_.data(), n, inv_freq_.data(), hd, rope_cos_.data(), rope_sin_.data());

        {
            profiler::Scope scope("embedding");
            kernels::embedding_rows(embedding_, hidden, tokens, n, x_.data());
        }
        if (n == 1 && parallel_.threads > 0) {
            {
                profiler::Scope scope("layers");  // one job: its parts are not timed apart
                decode_layers_in_parallel(cache, first);
            }
            cache.set_size(first + 1);
            profiler::Scope scope("lm_head");
            final_norm_and_head(x_.data(), 1, hidden, final_norm_, eps, lm_head_, all_positions, logits, nullptr, normed_, pool_);
            return;
        }
        kernels::AttentionParams params;
        params.heads = heads;
        params.kv_heads = kv_heads;
        params.head_dim = hd;
        params.scale = 1.0f / std::sqrt(static_cast<float>(hd));

        for (size_t l = 0; l < layers_.size(); ++l) {
            const Layer& layer = layers_[l];
            kernels::rms_norm(x_.data(), layer.attn_norm.data(), normed_.data(), n, hidden, eps);
            {
                profiler::Scope scope("qkv");
                project({{&layer.q, q_.data()}, {&layer.k, k_.data()}, {&layer.v, v_.data()}}, normed_.data(), n, pool_);
            }
            const auto prepare = [&](int64_t kv_head, int64_t end) { prepare_heads(l, cache, first, n, kv_head, end); };
            const kernels::RangeCallback prepare_heads = prepare;
            {
                profiler::Scope scope("attention");
                kernels::attention(params, q_.data(), n, positions_.data(), cache.keys(static_cast<int64_t>(l)),
                                   cache.values(static_cast<int64_t>(l)), 0, first + n, attn_.data(), pool_, &prepare_heads);
            }
            {
                profiler::Scope scope("attn_output");
                matmul_column_parts(layer.o, attn_.data(), n, residual_.data(), parts_scratch_, pool_);
                if (!layer.o_bias.empty())
                    for (int64_t t = 0; t < n; ++t) kernels::add(residual_.data() + t * hidden, layer.o_bias.data(), residual_.data() + t * hidden, hidden);
            }
            kernels::add(x_.data(), residual_.data(), x_.data(), n * hidden);
            kernels::rms_norm(x_.data(), layer.ffn_norm.data(), normed_.data(), n, hidden, eps);
            if (!layer.moe) {
                profiler::Scope scope("mlp");
                gated_feed_forward(layer.gate.weight, layer.up.weight, layer.down, normed_.data(), n, residual_.data(), feed_forward_, pool_);
            } else {
                profiler::Scope scope("moe");
                moe_.forward(*layer.moe, normed_.data(), n, hidden, residual_.data(), pool_);
            }
            kernels::add(x_.data(), residual_.data(), x_.data(), n * hidden);
        }
        cache.set_size(first + n);
        profiler::Scope scope("lm_head");
        final_norm_and_head(x_.data(), n, hidden, final_norm_, eps, lm_head_, all_positions, logits, nullptr, normed_, pool_);
    }

    // The q/k norms, RoPE and the cache store of kv heads [kv_head, end) and their query heads, on
    // the thread that attends them (kernels::attention). Only all the heads come with several
    // tokens; a part of them, only with one, so that the heads of the part are contiguous in q_ and
    // k_ either way.
    void prepare_heads(size_t l, KvCache& cache, int64_t first, int64_t n, int64_t kv_head, int64_t end) {
        const Layer& layer = layers_[l];
        const int64_t hd = config_.head_dim, group = config_.num_attention_heads / config_.num_key_value_heads;
        const float eps = static_cast<float>(config_.rms_norm_eps);
        const int64_t count = end - kv_head;
        float* q = q_.data() + kv_head * group * hd;
        float* k = k_.data() + kv_head * hd;
        if (qk_norm_) {
            kernels::rms_norm(q, layer.q_norm.data(), q, n * count * group, hd, eps);
            kernels::rms_norm(k, layer.k_norm.data(), k, n * count, hd, eps);
        }
        kernels::rope(q, n, count * group, hd, hd, rope_cos_.data(), rope_sin_.data(), layout_);
        kernels::rope(k, n, count, hd, hd, rope_cos_.data(), rope_sin_.data(), layout_);
        cache.store(static_cast<int64_t>(l), first, n, k_.data(), v_.data(), kv_head, count);
    }

    // ParallelDecode where the pool has several threads, the kv heads share out evenly, the layers
    // are dense (not Qwen3-MoE) and the store copies their matrices at load (as it does unless
    // memory is short or --no-repack), so that o_proj and down_proj can be copied as one matrix of
    // columns a thread; and every share is whole blocks of the matrices' types and whole groups
    // of their interleaved rows.
    void plan_parallel_decode() {
        const TransformerConfig& c = config_;
        const int threads = pool_.size();
        if (threads < 2 || c.num_key_value_heads % threads != 0) return;
        const int64_t hd = c.head_dim, group = c.num_attention_heads / c.num_key_value_heads;
        const int64_t kv_share = c.num_key_value_heads / threads;
        const auto block = [&](const TensorInfo& tensor) {
            return std::max(dtype_traits(tensor.dtype).block_elements, dtype_traits(weights_.stored_type(tensor)).block_elements);
        };
        const auto group_rows = [&](const TensorInfo& tensor) { return std::max<int64_t>(1, weights_.stored_group_rows(tensor)); };
        // The intermediate values go out in steps that keep every fit: all powers of two, so the largest.
        int64_t step = 1;
        for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
            const std::string p = "model.layers." + std::to_string(i) + ".";
            const TensorInfo &q = weights_.get(p + "self_attn.q_proj.weight"), &k = weights_.get(p + "self_attn.k_proj.weight"),
                             &v = weights_.get(p + "self_attn.v_proj.weight"), &o = weights_.get(p + "self_attn.o_proj.weight"),
                             &gate = weights_.get(p + "mlp.gate_proj.weight"), &up = weights_.get(p + "mlp.up_proj.weight"),
                             &down = weights_.get(p + "mlp.down_proj.weight");
            if (!weights_.copies_matrix(o) || !weights_.copies_matrix(down)) return;
            if ((kv_share * group * hd) % group_rows(q) || (kv_share * hd) % group_rows(k) || (kv_share * hd) % group_rows(v) ||
                (kv_share * group * hd) % block(o))
                return;
            step = std::max({step, group_rows(gate), group_rows(up), block(down)});
        }
        const int64_t steps = c.intermediate_size / step;
        if (c.intermediate_size % step != 0 || steps < threads) return;
        parallel_.threads = threads;
        parallel_.kv_heads_per_thread = kv_share;
        for (int t = 0; t <= threads; ++t) {
            parallel_.head_columns.push_back(t * kv_share * group * hd);
            parallel_.intermediate.push_back(steps * t / threads * step);
        }
    }

    // The layers of one decoded token, x_ in and out (ParallelDecode).
    void decode_layers_in_parallel(KvCache& cache, int64_t first) {
        const int threads = parallel_.threads;
        // Each thread's hidden state, normed input, two partial outputs, gate and up values.
        int64_t widest = 0;  // the largest share of the intermediate values
        for (size_t t = 0; t + 1 < parallel_.intermediate.size(); ++t)
            widest = std::max(widest, parallel_.intermediate[t + 1] - parallel_.intermediate[t]);
        const int64_t stride = 4 * config_.hidden_size + 2 * widest;
        grow(parallel_scratch_, threads * stride);
        // A thread whose step throws passes the barriers it has left, so that the others finish
        // the job, and the first error is thrown again on the caller (out of a worker it would end
        // the process).
        const int64_t barriers = 2 * static_cast<int64_t>(layers_.size());
        std::exception_ptr failure;
        std::mutex failure_mutex;
        pool_.run([&](int t, int) {
            int64_t passed = 0;
            const auto barrier = [&] {
                pool_.barrier();
                ++passed;
            };
            try {
                decode_layers_on_thread(t, cache, first, stride, barrier);
            } catch (...) {
                {
                    const std::lock_guard lock(failure_mutex);
                    if (!failure) failure = std::current_exception();
                }
                while (passed < barriers) barrier();
            }
        });
        if (failure) std::rethrow_exception(failure);
    }

    // Thread t's part of decode_layers_in_parallel, calling `barrier` twice a layer.
    template <class Barrier>
    void decode_layers_on_thread(int t, KvCache& cache, int64_t first, int64_t stride, const Barrier& barrier) {
        const TransformerConfig& c = config_;
        const int64_t hidden = c.hidden_size, hd = c.head_dim, group = c.num_attention_heads / c.num_key_value_heads;
        const float eps = static_cast<float>(c.rms_norm_eps);
        const int threads = parallel_.threads;
        const int64_t kv_share = parallel_.kv_heads_per_thread;
        float* scratch = parallel_scratch_.data();
        const auto partial_of = [&](int u, int which) { return scratch + u * stride + (2 + which) * hidden; };
        float* x = scratch + t * stride;
        float* normed = x + hidden;
        float* gate = x + 4 * hidden;
        float* up = gate + (stride - 4 * hidden) / 2;
        std::copy(x_.data(), x_.data() + hidden, x);
        const int64_t kv_head = kv_share * t;
        const int64_t q_rows = kv_head * group * hd, kv_rows = kv_head * hd;
        const int64_t i0 = parallel_.intermediate[static_cast<size_t>(t)], i1 = parallel_.intermediate[static_cast<size_t>(t) + 1];
        kernels::AttentionParams params;
        params.heads = kv_share * group;
        params.kv_heads = kv_share;
        params.head_dim = hd;
        params.scale = 1.0f / std::sqrt(static_cast<float>(hd));
        // Every thread's partial outputs in thread order, so that all copies of x agree.
        const auto add_partials = [&](int which, const std::vector<float>& bias) {
            for (int u = 0; u < threads; ++u) kernels::add(x, partial_of(u, which), x, hidden);
            if (!bias.empty()) kernels::add(x, bias.data(), x, hidden);
        };
        for (size_t l = 0; l < layers_.size(); ++l) {
            const Layer& layer = layers_[l];
            kernels::rms_norm(x, layer.attn_norm.data(), normed, 1, hidden, eps);
            const WeightMatrix q = kernels::row_range(layer.q.weight, q_rows, q_rows + kv_share * group * hd);
            const WeightMatrix k = kernels::row_range(layer.k.weight, kv_rows, kv_rows + kv_share * hd);
            const WeightMatrix v = kernels::row_range(layer.v.weight, kv_rows, kv_rows + kv_share * hd);
            const kernels::MatmulTarget qkv[] = {{&q, q_.data() + q_rows}, {&k, k_.data() + kv_rows}, {&v, v_.data() + kv_rows}};
            kernels::matmul_many(qkv, normed, 1, one_thread_);
            if (attention_bias_) {
                kernels::add(q_.data() + q_rows, layer.q.bias.data() + q_rows, q_.data() + q_rows, q.rows);
                kernels::add(k_.data() + kv_rows, layer.k.bias.data() + kv_rows, k_.data() + kv_rows, k.rows);
                kernels::add(v_.data() + kv_rows, layer.v.bias.data() + kv_rows, v_.data() + kv_rows, v.rows);
            }
            const auto prepare = [&](int64_t begin, int64_t end) { prepare_heads(l, cache, first, 1, kv_head + begin, kv_head + end); };
            const kernels::RangeCallback prepare_own_heads = prepare;
            kernels::KvCacheView keys = cache.keys(static_cast<int64_t>(l)), values = cache.values(static_cast<int64_t>(l));
            keys.data += kv_head * keys.head_stride;
            values.data += kv_head * values.head_stride;
            float* attended = attn_.data() + q_rows;
            kernels::attention(params, q_.data() + q_rows, 1, positions_.data(), keys, values, 0, first + 1, attended, one_thread_,
                               &prepare_own_heads);
            kernels::matmul(layer.o[static_cast<size_t>(t)], attended, 1, partial_of(t, 0), one_thread_);
            barrier();
            add_partials(0, layer.o_bias);
            kernels::rms_norm(x, layer.ffn_norm.data(), normed, 1, hidden, eps);
            const WeightMatrix gate_rows = kernels::row_range(layer.gate.weight, i0, i1), up_rows = kernels::row_range(layer.up.weight, i0, i1);
            const kernels::MatmulTarget gate_up[] = {{&gate_rows, gate}, {&up_rows, up}};
            kernels::matmul_many(gate_up, normed, 1, one_thread_);
            kernels::swiglu(gate, up, gate, i1 - i0);
            kernels::matmul(layer.down[static_cast<size_t>(t)], gate, 1, partial_of(t, 1), one_thread_);
            // Past here every thread has read this layer's o_proj partials, which the next
            // layer overwrites; the down_proj partials, read next, are overwritten only after
            // the next layer's first barrier.
            barrier();
            add_partials(1, {});
        }
        if (t == 0) std::copy(x, x + hidden, x_.data());
    }

    TransformerConfig config_;
    ThreadPool& pool_;
    WeightStore weights_;
    bool attention_bias_ = false, qk_norm_ = false, norm_topk_prob_ = false;
    kernels::RopeLayout layout_ = kernels::RopeLayout::SplitHalf;
    std::vector<float> inv_freq_;
    WeightMatrix embedding_, lm_head_;
    std::vector<float> final_norm_;
    std::vector<Layer> layers_;
    // Scratch, grown to the largest chunk seen.
    std::vector<float> x_, normed_, q_, k_, v_, attn_, residual_, rope_cos_, rope_sin_;
    FeedForwardScratch feed_forward_;
    std::vector<float> parts_scratch_;     // matmul_column_parts of o_proj
    ParallelDecode parallel_;
    std::vector<float> parallel_scratch_;  // decode_layers_in_parallel's per-thread values
    ThreadPool one_thread_{1};             // each thread's products there, on that thread
    SparseMoe moe_;
    std::vector<int64_t> positions_;
};

}  // namespace

std::unique_ptr<CausalLm> create_llama_family(const Checkpoint& checkpoint, const TransformerConfig& config,
                                              const ModelLoadSettings& settings, ThreadPool& pool) {
    return std::make_unique<LlamaFamily>(checkpoint, config, settings, pool);
}

}  // namespace oxinfer::models
