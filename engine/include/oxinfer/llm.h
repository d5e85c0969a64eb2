#pragma once
// The engine API for text generation: what the CLI and the app use.
//
//   auto model = oxinfer::Model::load("Qwen/Qwen3-0.6B", {.threads = 4});
//   oxinfer::Conversation chat(*model, "You are terse.");
//   chat.reply("Hi!", {}, [](int32_t, std::string_view text) { std::cout << text; return true; });
//
// Threading contract: a Model is read-only after load, but it owns one thread pool, so at most
// one thread at a time may run computation (Session::evaluate/generate, Conversation::reply) on a
// given Model and the Sessions and Conversations built on it: the engine thread. cancel() is the
// exception: it may be called from any thread at any time, and the generation in progress stops
// before it evaluates another token. Callbacks run on the engine thread, between tokens. The Model
// must outlive its Sessions and Conversations.

#include <oxinfer/dtype.h>
#include <oxinfer/model_config.h>
#include <oxinfer/sampling.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace oxinfer {

class Tokenizer;
struct ModelChatTemplate;

struct LoadOptions {
    int threads = 0;                        // 0: the physical cores
    int64_t context_length = 0;             // 0: the config's max_position_embeddings
    DType kv_type = DType::F32;             // F32, F16 or BF16
    std::optional<DType> convert_weights;   // convert every matrix at load (--quant: BF16, Q8_0, Q4_K; also F32, F16, Q4_0)
    // Prefill of bf16 weights with activations rounded to bf16 (vdpbf16ps, on CPUs with AVX-512
    // BF16), as llama.cpp computes bf16: up to 2^-8 relative error per activation. Off: exact
    // float32 products on every CPU (the instruction-set levels differ only in summation order).
    bool bf16_activations = false;
    // Matrices copied at load into huge pages (2 MB, where the system offers them), Q4_K and Q8_0
    // ones in a layout of 8 or 16 rows side by side, which the CPU's kernels multiply faster (prefill
    // 1.5-2x, as llama.cpp's repacked weights). Decoding reads weights through one address
    // translation per 2 MB instead of per 4 KB: 1.17-1.43x tokens/s on a 2-core Xeon VM. The copy
    // is read instead of the mapped file, whose pages the system may then drop. Embedding tables
    // stay mapped unless they are also the LM head. Off (--no-repack), or when the weights (with a
    // draft model's) would leave less than a fifth of the available memory: they are read in
    // place from the mapped file.
    bool repack_weights = true;
    // A draft model made for this one, for speculative decoding (GenerateOptions::draft): a folder,
    // .gguf file or repo id of Gemma 4's assistant. Empty: none.
    std::string draft_model;
};

// "bf16" -> BF16, "q8" / "q8_0" -> Q8_0, "q4" / "q4_k" -> Q4_K, also "f16", "f32"; nullopt otherwise.
std::optional<DType> quant_type_from_name(std::string_view name);

// The architectures Model::load runs ("LlamaForCausalLM", ...).
const std::vector<std::string>& supported_architectures();

class Model {
public:
    // A Hugging Face folder (config.json + safetensors or pytorch_model.bin), a .gguf file or a repo
    // id in the Hugging Face cache. Weights stay memory-mapped in their stored type unless
    // converted. A model whose converted weights do not fit in the available memory is refused;
    // one whose mapped weights are larger than it loads with a warning (pages are read on demand).
    // Throws oxinfer::Error naming the file and the problem.
    static std::unique_ptr<Model> load(const std::string& model, const LoadOptions& options = {});
    ~Model();
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    const TransformerConfig& config() const;
    const std::filesystem::path& path() const;
    bool has_tokenizer() const;
    const Tokenizer& tokenizer() const;           // throws when the model ships none
    const ModelChatTemplate& chat_template() const;  // throws when the model ships none
    // EOS ids of generation_config.json (or config.json / GGUF) and tokenizer_config.json.
    const std::vector<int32_t>& stop_tokens() const;
    const GenerationConfig& generation_config() const;
    int64_t context_length() const;
    DType kv_type() const;
    int threads() const;
    // Whether the model has a multi-token-prediction head (GenerateOptions::draft uses it).
    bool has_draft_head() const;
    // Whether a draft model was loaded with it (LoadOptions::draft_model).
    bool has_draft_model() const;
    uint64_t weight_bytes() const;  // matrices as used (mapped and converted)
    std::string weight_type() const;  // "bf16", "q4_k", ...
    double load_seconds() const;

    struct Impl;
    Impl& impl() const { return *impl_; }

private:
    explicit Model(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Called with each generated token and the text it completes ("" while a character or a
// possible stop string is held back); returning false stops the generation.
using TokenCallback = std::function<bool(int32_t token, std::string_view text)>;

struct GenerateOptions {
    SamplingParams sampling;
    int64_t max_tokens = 512;
    bool stop_at_model_stop_tokens = true;  // Model::stop_tokens()
    std::vector<int32_t> stop_tokens;       // more
    std::vector<std::string> stop_strings;  // the text ends before the first one
    // Speculative decoding: draft the tokens after the next one with the model's draft model
    // (LoadOptions::draft_model, draft_tokens of them) or else its multi-token-prediction head
    // (Qwen3.5's MTP, one), and verify them in the same pass as the next token. The output is
    // exactly what plain decoding gives (a draft is used only when the sampled token equals it); it
    // pays when the drafts are often right. Ignored for models with neither.
    bool draft = false;
    int64_t draft_tokens = 3;  // 1 to kMaxDraftTokens
    static constexpr int64_t kMaxDraftTokens = 16;
};

enum class StopReason { StopToken, StopString, MaxTokens, ContextFull, Cancelled, Callback };
std::string_view stop_reason_name(StopReason reason);  // "stop_token", "max_tokens", ...

struct GenerationStats {
    double load_seconds = 0;
    int64_t prompt_tokens = 0;         // the whole prompt
    int64_t reused_prompt_tokens = 0;  // found in the KV cache from before
    int64_t generated_tokens = 0;
    double prefill_seconds = 0;        // the prompt tokens that were not cached
    double time_to_first_token = 0;    // seconds from the call to the first sampled token
    double decode_seconds = 0;         // after the first token
    int64_t draft_tokens = 0;          // drafted (GenerateOptions::draft)
    int64_t accepted_draft_tokens = 0; // of which the model sampled the same token
    double prefill_tokens_per_second() const;
    double decode_tokens_per_second() const;
};

struct GenerationResult {
    std::vector<int32_t> tokens;  // generated, without the stop token
    std::string text;             // their text, cut before a stop string
    StopReason stop = StopReason::MaxTokens;
    GenerationStats stats;
};

// One token sequence and its KV cache.
class Session {
public:
    explicit Session(Model& model);
    ~Session();

    // Appends `tokens` and returns their logits: [tokens][vocab] when all_positions, else the last
    // position's [vocab].
    std::vector<float> evaluate(std::span<const int32_t> tokens, bool all_positions = false);
    // Keeps the cache of the longest common prefix of the evaluated tokens and `prompt`, evaluates
    // the rest of the prompt, then generates. Afterwards tokens() holds the prompt and the
    // generated tokens except the last one, which was sampled but never needed evaluating. A
    // prompt longer than the context is not evaluated: stop is ContextFull, no token is generated
    // and the cache is left as it was.
    GenerationResult generate(std::span<const int32_t> prompt, const GenerateOptions& options, const TokenCallback& on_token = {});
    // Keeps the first `tokens` evaluated tokens and returns how many were kept: fewer when the
    // model's recurrent state (Qwen3.5's DeltaNet layers) holds no snapshot there; the caller
    // evaluates the rest again.
    int64_t truncate(int64_t tokens);
    void reset() { truncate(0); }
    const std::vector<int32_t>& tokens() const { return tokens_; }
    uint64_t kv_cache_bytes() const;  // allocated now
    // Thread-safe: stops the generation in progress before its next token (or, in a long prompt,
    // its next 512 prompt tokens). A generate() that has not started yet is not affected.
    void cancel() { cancel_.store(true, std::memory_order_relaxed); }

private:
    struct State;
    // evaluate(), keeping the final hidden states of the tokens when the session drafts.
    std::vector<float> run(std::span<const int32_t> tokens, bool all_positions, bool keep_hidden);
    // Drafts after `next` (sampled, not evaluated) with the MTP head (one) or the draft model.
    std::vector<int32_t> draft_after(int32_t next, int64_t count);

    Model& model_;
    std::unique_ptr<State> state_;
    std::vector<int32_t> tokens_;
    std::atomic<bool> cancel_{false};
};

// A chat: system prompt, messages and the model's chat template. Each reply renders the whole
// conversation and reuses the KV cache of the part that did not change.
class Conversation {
public:
    explicit Conversation(Model& model, std::string system_prompt = "");

    void set_system_prompt(std::string text) { system_prompt_ = std::move(text); }
    // Qwen3-style enable_thinking; nullopt leaves the template's default.
    void set_thinking(std::optional<bool> enabled) { thinking_ = enabled; }
    // Forgets the messages (the cache is kept and reused where the next prompt matches).
    void clear() { messages_ = nlohmann::ordered_json::array(); }
    // Replaces the messages before the next reply ({"role", "content"} objects, no system message):
    // how an app continues another branch of a chat, regenerates or resends an edited message. The
    // cache of the prefix the new prompt shares with the last one is still reused.
    void set_messages(nlohmann::ordered_json messages) { messages_ = std::move(messages); }
    const nlohmann::ordered_json& messages() const { return messages_; }

    // The prompt tokens for the conversation plus `user_message`, with the generation prompt.
    std::vector<int32_t> prompt_tokens(const std::string& user_message) const;
    // Generates the assistant's answer and adds both messages. When the conversation with
    // `user_message` no longer fits in the context, stop is ContextFull with no tokens and the
    // messages stay as they were.
    GenerationResult reply(const std::string& user_message, const GenerateOptions& options, const TokenCallback& on_token = {});
    void cancel() { session_.cancel(); }
    Session& session() { return session_; }

private:
    nlohmann::ordered_json rendered_messages(const std::string& user_message) const;

    Model& model_;
    Session session_;
    std::string system_prompt_;
    std::optional<bool> thinking_;
    nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
};

}  // namespace oxinfer
