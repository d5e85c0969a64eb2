#pragma once
// The interface every text decoder implements, and the registry that picks one by architecture.
// A model holds weights only; each sequence's state (its KV cache, and for recurrent families
// their states) is a separate SequenceState, so several conversations can share one model.

#include <oxinfer/dtype.h>
#include <oxinfer/model_config.h>

#include "models/weights.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace oxinfer {
class Checkpoint;
class ThreadPool;
}  // namespace oxinfer

namespace oxinfer::models {

class SequenceState {
public:
    virtual ~SequenceState() = default;
    virtual int64_t size() const = 0;      // positions processed
    virtual int64_t capacity() const = 0;  // the context length
    // Goes back to the first `size` positions and returns how many it kept: all of them for KV
    // caches; recurrent states can only return to positions where they kept a snapshot, so they
    // may keep fewer (down to 0), and the caller evaluates the tokens after that again.
    virtual int64_t truncate(int64_t size) = 0;
    virtual uint64_t allocated_bytes() const = 0;
    virtual uint64_t bytes_per_position() const = 0;
};

// A multi-token-prediction head (Qwen3.5's mtp.*): from the model's final-normed hidden state at
// position i and the token at position i + 1 it predicts the token at i + 2. It keeps its own
// sequence state, one position per main-model position it has seen.
class DraftHead {
public:
    virtual ~DraftHead() = default;
    virtual std::unique_ptr<SequenceState> new_state(DType kv_type, int64_t context_length) const = 0;
    // Runs `count` positions after the state's: hidden [count][hidden_size] and next_tokens[count];
    // writes the last position's logits [vocab] (when logits is not null).
    virtual void forward(const float* hidden, const int32_t* next_tokens, int64_t count, SequenceState& state, float* logits) = 0;
};

// A separate draft model that reads the main model's sequence state instead of keeping its own
// (Gemma 4's assistant: a small decoder that attends to the main model's KV caches).
class DraftModel {
public:
    virtual ~DraftModel() = default;
    // Greedy drafts of the `count` tokens after `token`, which the main model sampled for position
    // state.size() and has not evaluated yet; `hidden` is the main model's final-normed hidden
    // state of the position before it.
    virtual void draft(const SequenceState& state, const float* hidden, int32_t token, int64_t count, int32_t* drafts) = 0;
};

class CausalLm {
public:
    virtual ~CausalLm() = default;
    virtual const TransformerConfig& config() const = 0;
    virtual std::unique_ptr<SequenceState> new_state(DType kv_type, int64_t context_length) const = 0;
    // Runs `count` tokens after the state's positions, appends them to it, and writes logits:
    // [count][vocab] when all_positions, else the last position's [vocab]. `hidden`, when given and
    // the model has a draft head or draft model, receives the final-normed hidden states
    // [count][hidden_size].
    virtual void forward(const int32_t* tokens, int64_t count, SequenceState& state, float* logits, bool all_positions,
                         float* hidden = nullptr) = 0;
    // The model's multi-token-prediction head; null when it has none.
    virtual DraftHead* draft_head() { return nullptr; }
    // Loads a separate draft model made for this one (its checkpoint must outlive this model);
    // throws oxinfer::Error naming the drafter when it does not fit this model or the model takes none.
    virtual void attach_draft_model(const Checkpoint& checkpoint, const TransformerConfig& config, const ModelLoadSettings& settings);
    virtual DraftModel* draft_model() { return nullptr; }
    virtual uint64_t mapped_weight_bytes() const = 0;
    virtual uint64_t owned_weight_bytes() const = 0;
    virtual std::string weight_type() const = 0;
};

// The architectures create_causal_lm knows ("LlamaForCausalLM", ...).
const std::vector<std::string>& supported_architectures();

// Throws oxinfer::Error naming the checkpoint for an unsupported architecture (listing the
// supported ones) or for tensors that do not match the config.
std::unique_ptr<CausalLm> create_causal_lm(const Checkpoint& checkpoint, const TransformerConfig& config,
                                           const ModelLoadSettings& settings, ThreadPool& pool);

// The Llama family (Llama 3, Qwen2, Qwen3, Qwen3-MoE): one implementation with per-architecture switches.
std::unique_ptr<CausalLm> create_llama_family(const Checkpoint& checkpoint, const TransformerConfig& config,
                                              const ModelLoadSettings& settings, ThreadPool& pool);
// Gemma 3 and Gemma 4 text: sliding and full attention layers, Gemma 4's per-layer embeddings and KV sharing.
std::unique_ptr<CausalLm> create_gemma(const Checkpoint& checkpoint, const TransformerConfig& config,
                                       const ModelLoadSettings& settings, ThreadPool& pool);
// Qwen3.5: Gated DeltaNet layers interleaved with gated full attention.
std::unique_ptr<CausalLm> create_qwen35(const Checkpoint& checkpoint, const TransformerConfig& config,
                                        const ModelLoadSettings& settings, ThreadPool& pool);

}  // namespace oxinfer::models
