#pragma once
// The interface every text decoder implements, and the registry that picks one by architecture.
// A model holds weights only; each sequence's state (its KV cache, and for recurrent families
// their states) is a separate SequenceState, so several conversations can share one model.

#include <oxinfer/dtype.h>
#include <oxinfer/model_config.h>

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

struct ModelLoadSettings {
    std::optional<DType> convert_weights;  // --quant
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

class CausalLm {
public:
    virtual ~CausalLm() = default;
    virtual const TransformerConfig& config() const = 0;
    virtual std::unique_ptr<SequenceState> new_state(DType kv_type, int64_t context_length) const = 0;
    // Runs `count` tokens after the state's positions, appends them to it, and writes logits:
    // [count][vocab] when all_positions, else the last position's [vocab]. `hidden`, when given and
    // the model has a draft head, receives the final-normed hidden states [count][hidden_size].
    virtual void forward(const int32_t* tokens, int64_t count, SequenceState& state, float* logits, bool all_positions,
                         float* hidden = nullptr) = 0;
    // The model's multi-token-prediction head; null when it has none.
    virtual DraftHead* draft_head() { return nullptr; }
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
// Qwen3.5: Gated DeltaNet layers interleaved with gated full attention.
std::unique_ptr<CausalLm> create_qwen35(const Checkpoint& checkpoint, const TransformerConfig& config,
                                        const ModelLoadSettings& settings, ThreadPool& pool);

}  // namespace oxinfer::models
