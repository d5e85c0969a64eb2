#include <oxinfer/llm.h>

#include "kernels/thread_pool.h"
#include "kernels/ops.h"
#include "models/causal_lm.h"

#include <oxinfer/chat_template.h>
#include <oxinfer/checkpoint.h>
#include <oxinfer/error.h>
#include <oxinfer/hf_cache.h>
#include <oxinfer/log.h>
#include <oxinfer/platform.h>
#include <oxinfer/profiler.h>
#include <oxinfer/tokenizer.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <cstdlib>

namespace oxinfer {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Memory the system can give us now; tests stand for a small machine with OXINFER_TEST_AVAILABLE_RAM.
uint64_t available_ram() {
    if (const char* forced = std::getenv("OXINFER_TEST_AVAILABLE_RAM")) return std::strtoull(forced, nullptr, 10);
    return detect_platform().available_ram_bytes;
}

// Bytes the matrices take once converted to `type` (2-D and stacked 3-D tensors).
uint64_t converted_matrix_bytes(const Checkpoint& checkpoint, DType type) {
    uint64_t total = 0;
    for (const TensorInfo& t : checkpoint.tensors())
        if (t.shape.size() >= 2) total += dtype_bytes(type, static_cast<uint64_t>(t.elements())).value_or(static_cast<uint64_t>(t.elements()) * 4);
    return total;
}

}  // namespace

std::optional<DType> quant_type_from_name(std::string_view name) {
    if (name == "bf16") return DType::BF16;
    if (name == "f16") return DType::F16;
    if (name == "f32") return DType::F32;
    if (name == "q8" || name == "q8_0") return DType::Q8_0;
    if (name == "q4" || name == "q4_k") return DType::Q4_K;
    return std::nullopt;
}

const std::vector<std::string>& supported_architectures() { return models::supported_architectures(); }

std::string_view stop_reason_name(StopReason reason) {
    switch (reason) {
        case StopReason::StopToken: return "stop_token";
        case StopReason::StopString: return "stop_string";
        case StopReason::MaxTokens: return "max_tokens";
        case StopReason::ContextFull: return "context_full";
        case StopReason::Cancelled: return "cancelled";
        case StopReason::Callback: return "callback";
    }
    return "unknown";
}

double GenerationStats::prefill_tokens_per_second() const {
    const int64_t n = prompt_tokens - reused_prompt_tokens;
    return prefill_seconds > 0 ? static_cast<double>(n) / prefill_seconds : 0.0;
}

double GenerationStats::decode_tokens_per_second() const {
    return decode_seconds > 0 && generated_tokens > 1 ? static_cast<double>(generated_tokens - 1) / decode_seconds : 0.0;
}

struct Model::Impl {
    std::filesystem::path path;
    std::unique_ptr<Checkpoint> checkpoint;
    std::unique_ptr<Checkpoint> draft_checkpoint;  // mapped by the draft model inside lm
    TransformerConfig config;
    GenerationConfig generation;
    std::unique_ptr<ThreadPool> pool;
    std::unique_ptr<models::CausalLm> lm;
    std::unique_ptr<Tokenizer> tokenizer;
    std::optional<ModelChatTemplate> chat_template;
    std::vector<int32_t> stop_tokens;
    LoadOptions options;
    int64_t context_length = 0;
    double load_seconds = 0;
};

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

std::unique_ptr<Model> Model::load(const std::string& model, const LoadOptions& options) {
    const auto start = Clock::now();
    profiler::Scope scope("load model");
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    impl->path = hf::resolve_model(model);
    impl->checkpoint = Checkpoint::open(impl->path);
    const Checkpoint& checkpoint = *impl->checkpoint;
    const std::string subject = impl->path.string();
    impl->config = read_transformer_config(checkpoint);
    impl->generation = read_generation_config(checkpoint);
    if (options.kv_type != DType::F32 && options.kv_type != DType::F16 && options.kv_type != DType::BF16)
        throw Error("kv cache", "type " + std::string(dtype_name(options.kv_type)) + " is not supported (f32, f16, bf16 are)");
    if (options.context_length < 0) throw Error("--ctx", "must be positive");
    impl->context_length = options.context_length > 0 ? options.context_length
                           : impl->config.max_position_embeddings > 0 ? impl->config.max_position_embeddings
                                                                     : 4096;

    // Memory: converted weights must fit; mapped ones may exceed RAM (the kernel pages them in).
    const uint64_t available = available_ram();
    uint64_t mapped = 0;
    for (const TensorInfo& t : checkpoint.tensors()) mapped += t.nbytes;
    if (options.convert_weights) {
        const uint64_t needed = converted_matrix_bytes(checkpoint, *options.convert_weights);
        if (needed > available)
            throw Error(subject, "converting the weights to " + std::string(dtype_name(*options.convert_weights)) + " needs " +
                                     format_bytes(needed) + " of memory, only " + format_bytes(available) + " is available");
    } else if (mapped > available) {
        log_warn(subject + ": the weights (" + format_bytes(mapped) + ") are larger than the available memory (" + format_bytes(available) +
                 "); they stay memory-mapped and are read from disk as needed, which is slow");
    }

    uint64_t draft_mapped = 0;
    if (!options.draft_model.empty()) {
        impl->draft_checkpoint = Checkpoint::open(hf::resolve_model(options.draft_model));
        for (const TensorInfo& t : impl->draft_checkpoint->tensors()) draft_mapped += t.nbytes;
        if (!options.convert_weights && mapped <= available && mapped + draft_mapped > available)
            log_warn(options.draft_model + ": the model and its draft model (" + format_bytes(mapped + draft_mapped) +
                     ") are larger than the available memory (" + format_bytes(available) + "); pages are read from disk as needed");
    }

    impl->pool = std::make_unique<ThreadPool>(options.threads);
    models::ModelLoadSettings settings;
    settings.convert_weights = options.convert_weights;
    settings.bf16_activations = options.bf16_activations;
    // The repacked copy is memory the system cannot page out, as it can the mapped file's pages:
    // made only when both models' weights leave a fifth of the memory free (KV cache, activations,
    // other programs). Converted weights are owned memory already, and their copy replaces them.
    settings.repack = options.repack_weights && (options.convert_weights || mapped + draft_mapped <= available / 5 * 4);
    impl->lm = models::create_causal_lm(checkpoint, impl->config, settings, *impl->pool);
    if (impl->draft_checkpoint) {
        const TransformerConfig draft_config = read_transformer_config(*impl->draft_checkpoint);
        impl->lm->attach_draft_model(*impl->draft_checkpoint, draft_config, settings);
    }

    // Tokenizer and chat template are optional: logits and benchmarks run from ids alone.
    const bool gguf = checkpoint.format() == CheckpointFormat::Gguf;
    const bool folder = std::filesystem::is_directory(impl->path);
    if ((folder && std::filesystem::exists(impl->path / "tokenizer.json")) || (gguf && checkpoint.metadata().contains("tokenizer.ggml.tokens"))) {
        impl->tokenizer = Tokenizer::from_path(impl->path);
        try {
            impl->chat_template = load_chat_template(impl->path);
        } catch (const Error&) {
            // No template: generate without --chat still works; chat says so when asked.
        }
    }
    for (int64_t id : impl->generation.eos_token_ids) impl->stop_tokens.push_back(static_cast<int32_t>(id));
    if (impl->tokenizer)
        for (int32_t id : impl->tokenizer->eos_ids()) impl->stop_tokens.push_back(id);
    std::sort(impl->stop_tokens.begin(), impl->stop_tokens.end());
    impl->stop_tokens.erase(std::unique(impl->stop_tokens.begin(), impl->stop_tokens.end()), impl->stop_tokens.end());
    impl->load_seconds = seconds_since(start);
    return std::unique_ptr<Model>(new Model(std::move(impl)));
}

const TransformerConfig& Model::config() const { return impl_->config; }
const std::filesystem::path& Model::path() const { return impl_->path; }
bool Model::has_tokenizer() const { return impl_->tokenizer != nullptr; }
const Tokenizer& Model::tokenizer() const {
    if (!impl_->tokenizer) throw Error(impl_->path.string(), "has no tokenizer (tokenizer.json or GGUF vocabulary); use token ids");
    return *impl_->tokenizer;
}
const ModelChatTemplate& Model::chat_template() const {
    if (!impl_->chat_template) throw Error(impl_->path.string(), "has no chat template");
    return *impl_->chat_template;
}
const std::vector<int32_t>& Model::stop_tokens() const { return impl_->stop_tokens; }
const GenerationConfig& Model::generation_config() const { return impl_->generation; }
int64_t Model::context_length() const { return impl_->context_length; }
DType Model::kv_type() const { return impl_->options.kv_type; }
int Model::threads() const { return impl_->pool->size(); }
bool Model::has_draft_head() const { return impl_->lm->draft_head() != nullptr; }
bool Model::has_draft_model() const { return impl_->lm->draft_model() != nullptr; }
uint64_t Model::weight_bytes() const { return impl_->lm->mapped_weight_bytes() + impl_->lm->owned_weight_bytes(); }
std::string Model::weight_type() const { return impl_->lm->weight_type(); }
double Model::load_seconds() const { return impl_->load_seconds; }

// ---- Session ------------------------------------------------------------------------------------

struct Session::State {
    std::unique_ptr<models::SequenceState> sequence;
    // Drafting (GenerateOptions::draft): the MTP head's state (at most one position per evaluated
    // token but the last) and the final-normed hidden states of the evaluated positions
    // [hidden_first, hidden_rows) that the head has not consumed yet (hidden_first <= its size); a
    // draft model needs only the last of them.
    std::unique_ptr<models::SequenceState> draft;
    std::vector<float> hidden;
    int64_t hidden_first = 0, hidden_rows = 0;

    // After the sequence kept `kept` tokens: the head keeps the positions whose next token is
    // kept; if it would need rows already dropped, drafting starts over from the beginning.
    void keep(int64_t kept) {
        hidden_rows = std::min(hidden_rows, kept);
        if (!draft) {
            if (hidden_rows < hidden_first) restart_hidden(kept);
            return;
        }
        draft->truncate(std::max<int64_t>(kept - 1, 0));
        if (draft->size() < hidden_first || hidden_rows < hidden_first) {
            draft->truncate(0);
            restart_hidden(0);
        }
    }
    // The hidden states are kept from `position` on.
    void restart_hidden(int64_t position) {
        hidden.clear();
        hidden_first = hidden_rows = position;
    }
};

Session::Session(Model& model) : model_(model), state_(std::make_unique<State>()) {
    state_->sequence = model.impl().lm->new_state(model.kv_type(), model.context_length());
}

Session::~Session() = default;

uint64_t Session::kv_cache_bytes() const { return state_->sequence->allocated_bytes(); }

int64_t Session::truncate(int64_t tokens) {
    if (tokens < static_cast<int64_t>(tokens_.size())) tokens_.resize(static_cast<size_t>(std::max<int64_t>(tokens, 0)));
    tokens_.resize(static_cast<size_t>(state_->sequence->truncate(static_cast<int64_t>(tokens_.size()))));
    const int64_t kept = static_cast<int64_t>(tokens_.size());
    state_->keep(kept);
    return kept;
}

std::vector<float> Session::evaluate(std::span<const int32_t> tokens, bool all_positions) { return run(tokens, all_positions, false); }

std::vector<float> Session::run(std::span<const int32_t> tokens, bool all_positions, bool keep_hidden) {
    if (tokens.empty()) throw Error("evaluate", "no tokens");
    const TransformerConfig& config = model_.config();
    for (int32_t id : tokens)
        if (id < 0 || id >= config.vocab_size)
            throw Error("token " + std::to_string(id), "is outside the vocabulary of " + std::to_string(config.vocab_size));
    if (static_cast<int64_t>(tokens_.size() + tokens.size()) > model_.context_length())
        throw Error("context", std::to_string(tokens_.size() + tokens.size()) + " tokens do not fit in the context length of " +
                                   std::to_string(model_.context_length()) + " (--ctx sets it)");
    std::vector<float> logits(static_cast<size_t>((all_positions ? tokens.size() : 1) * config.vocab_size));
    // Hidden states are kept only while they cover every evaluated token. A draft model needs only
    // the last one: a prompt is evaluated without them but for its last token.
    State& st = *state_;
    if (keep_hidden && !all_positions && !st.draft && tokens.size() > static_cast<size_t>(GenerateOptions::kMaxDraftTokens + 1) &&
        st.hidden_rows == static_cast<int64_t>(tokens_.size())) {
        run(tokens.first(tokens.size() - 1), false, false);
        st.restart_hidden(static_cast<int64_t>(tokens_.size()));
        return run(tokens.last(1), all_positions, true);
    }
    float* hidden = nullptr;
    if (keep_hidden && st.hidden_rows == static_cast<int64_t>(tokens_.size())) {
        const int64_t rows = static_cast<int64_t>(tokens_.size()) - st.hidden_first;
        st.hidden.resize(static_cast<size_t>((rows + static_cast<int64_t>(tokens.size())) * config.hidden_size));
        hidden = st.hidden.data() + rows * config.hidden_size;
    }
    model_.impl().lm->forward(tokens.data(), static_cast<int64_t>(tokens.size()), *st.sequence, logits.data(), all_positions, hidden);
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    if (hidden) st.hidden_rows = static_cast<int64_t>(tokens_.size());
    return logits;
}

namespace {

// Text that may be the beginning of a stop string stays held back until it is known not to be.
size_t held_back_length(std::string_view text, const std::vector<std::string>& stops) {
    size_t held = 0;
    for (const std::string& stop : stops)
        for (size_t n = std::min(stop.size() - 1, text.size()); n > held; --n)
            if (text.substr(text.size() - n) == std::string_view(stop).substr(0, n)) {
                held = n;
                break;
            }
    return held;
}

}  // namespace

std::vector<int32_t> Session::draft_after(int32_t next, int64_t count) {
    State& st = *state_;
    const int64_t d = model_.config().hidden_size, P = static_cast<int64_t>(tokens_.size());
    if (models::DraftModel* drafter = model_.impl().lm->draft_model()) {
        // From the hidden state of the last evaluated position; the rows before it are no longer needed.
        std::vector<int32_t> drafts(static_cast<size_t>(count));
        drafter->draft(*st.sequence, st.hidden.data() + (P - 1 - st.hidden_first) * d, next, count, drafts.data());
        st.hidden.erase(st.hidden.begin(), st.hidden.begin() + (P - 1 - st.hidden_first) * d);
        st.hidden_first = P - 1;
        return drafts;
    }
    // The head's positions [m, P): position i from the hidden state of token i and the token after
    // it, the last one being `next`, sampled but not yet evaluated.
    st.draft->truncate(P - 1);  // a position left by an evaluation that threw after drafting
    const int64_t m = st.draft->size();
    std::vector<int32_t> following(tokens_.begin() + m + 1, tokens_.end());
    following.push_back(next);
    std::vector<float> logits(static_cast<size_t>(model_.config().vocab_size));
    model_.impl().lm->draft_head()->forward(st.hidden.data() + (m - st.hidden_first) * d, following.data(), P - m, *st.draft,
                                            logits.data());
    // The head has consumed the rows before P - 1's successor: keep only [P, hidden_rows).
    st.hidden.erase(st.hidden.begin(), st.hidden.begin() + (P - st.hidden_first) * d);
    st.hidden_first = P;
    return {static_cast<int32_t>(kernels::argmax(logits.data(), model_.config().vocab_size))};
}

namespace {
// Prompt tokens evaluated between two looks at cancel(): the models' prefill chunk.
constexpr size_t kPromptChunk = 512;
}  // namespace

GenerationResult Session::generate(std::span<const int32_t> prompt, const GenerateOptions& options, const TokenCallback& on_token) {
    const auto start = Clock::now();
    cancel_.store(false, std::memory_order_relaxed);
    if (prompt.empty()) throw Error("generate", "the prompt is empty");
    for (const std::string& stop : options.stop_strings)
        if (stop.empty()) throw Error("generate", "a stop string is empty");
    GenerationResult result;
    result.stats.load_seconds = model_.load_seconds();
    result.stats.prompt_tokens = static_cast<int64_t>(prompt.size());

    // Drafting needs the hidden states of the evaluated tokens: every one for the MTP head's input
    // (its state follows them), the last one for a draft model.
    models::CausalLm& lm = *model_.impl().lm;
    const bool draft_model = options.draft && lm.draft_model();
    const bool head = options.draft && !draft_model && lm.draft_head();
    const bool drafting = draft_model || head;
    if (draft_model && (options.draft_tokens < 1 || options.draft_tokens > GenerateOptions::kMaxDraftTokens))
        throw Error("generate", "draft_tokens must be 1 to " + std::to_string(GenerateOptions::kMaxDraftTokens));
    if (result.stats.prompt_tokens > model_.context_length()) {
        result.stop = StopReason::ContextFull;
        return result;
    }
    if (head && !state_->draft) state_->draft = lm.draft_head()->new_state(model_.kv_type(), model_.context_length());

    // Reuse the cached prefix; at least one prompt token is evaluated to get logits.
    size_t common = 0;
    while (common < tokens_.size() && common < prompt.size() && tokens_[common] == prompt[common]) ++common;
    common = std::min(common, prompt.size() - 1);
    if (head) common = std::min(common, static_cast<size_t>(state_->hidden_rows));
    common = static_cast<size_t>(truncate(static_cast<int64_t>(common)));
    if (head && state_->hidden_rows < static_cast<int64_t>(common))  // the rows were dropped: start over
        common = static_cast<size_t>(truncate(state_->hidden_rows));
    if (draft_model && state_->hidden_rows != static_cast<int64_t>(common)) state_->restart_hidden(static_cast<int64_t>(common));
    result.stats.reused_prompt_tokens = static_cast<int64_t>(common);
    // A long prompt goes in pieces of the models' own prefill chunk (the same work as one call),
    // so that cancel() stops it too. The last piece is a whole chunk: a model that treats a
    // prompt's end specially (Qwen3.5's snapshot before the last token) sees it as before.
    std::vector<float> logits;
    size_t at = common;
    while (prompt.size() - at > kPromptChunk) {
        const size_t piece = (prompt.size() - at - 1) % kPromptChunk + 1;
        run(prompt.subspan(at, piece), false, drafting);
        at += piece;
        if (cancel_.load(std::memory_order_relaxed)) {
            result.stop = StopReason::Cancelled;
            result.stats.prefill_seconds = seconds_since(start);
            return result;
        }
    }
    logits = run(prompt.subspan(at), false, drafting);
    result.stats.prefill_seconds = seconds_since(start);

    std::vector<int32_t> stops = options.stop_tokens;
    if (options.stop_at_model_stop_tokens) stops.insert(stops.end(), model_.stop_tokens().begin(), model_.stop_tokens().end());
    Sampler sampler(options.sampling);
    std::optional<StreamingDecoder> decoder;
    if (model_.has_tokenizer()) decoder.emplace(model_.tokenizer());
    std::string pending;  // decoded text not yet handed out
    const int64_t vocab = model_.config().vocab_size;
    Clock::time_point first_token_time;

    // The drafts evaluated after the last sampled token, each with the logits that follow it.
    std::deque<std::pair<int32_t, std::vector<float>>> drafted;
    result.stop = StopReason::MaxTokens;
    for (int64_t step = 0; step < options.max_tokens; ++step) {
        if (cancel_.load(std::memory_order_relaxed)) {
            result.stop = StopReason::Cancelled;
            break;
        }
        // With drafts in the cache, the history the sampler sees ends before them.
        const int32_t token = sampler.sample(logits.data(), vocab, std::span<const int32_t>(tokens_).first(tokens_.size() - drafted.size()));
        if (step == 0) {
            first_token_time = Clock::now();
            result.stats.time_to_first_token = seconds_since(start);
        }
        if (std::find(stops.begin(), stops.end(), token) != stops.end()) {
            result.stop = StopReason::StopToken;
            break;
        }
        result.tokens.push_back(token);
        result.stats.generated_tokens = static_cast<int64_t>(result.tokens.size());
        std::string piece;
        bool stop_string = false;
        if (decoder) {
            // Held-back text keeps every possible stop string inside `pending`.
            pending += decoder->feed(token);
            size_t at = std::string::npos;
            for (const std::string& stop : options.stop_strings) at = std::min(at, pending.find(stop));
            stop_string = at != std::string::npos;
            piece = stop_string ? pending.substr(0, at) : pending.substr(0, pending.size() - held_back_length(pending, options.stop_strings));
            pending.erase(0, piece.size());
            result.text += piece;
        }
        if (stop_string) {
            if (on_token) on_token(token, piece);
            result.stop = StopReason::StopString;
            break;
        }
        if (on_token && !on_token(token, piece)) {
            result.stop = StopReason::Callback;
            break;
        }
        if (step + 1 == options.max_tokens) break;
        // Pending drafts hold positions the sampled tokens may take: they do not count.
        if (static_cast<int64_t>(tokens_.size() - drafted.size()) >= model_.context_length()) {
            result.stop = StopReason::ContextFull;
            break;
        }
        if (cancel_.load(std::memory_order_relaxed)) {
            result.stop = StopReason::Cancelled;
            break;
        }
        if (!drafted.empty()) {
            if (drafted.front().first == token) {
                ++result.stats.accepted_draft_tokens;
                logits = std::move(drafted.front().second);
                drafted.pop_front();
                continue;
            }
            // Every cache returns a few positions exactly (rings and trails keep more than the drafts).
            const auto committed = static_cast<int64_t>(tokens_.size() - drafted.size());
            if (truncate(committed) != committed) throw Error("generate", "the cache could not return past rejected drafts");
            drafted.clear();
        }
        // Drafts for the tokens still wanted after the next one, as far as the context allows.
        const int64_t count = std::min({head ? int64_t{1} : options.draft_tokens, options.max_tokens - step - 2,
                                        model_.context_length() - static_cast<int64_t>(tokens_.size()) - 1});
        if (drafting && count >= 1 && state_->hidden_rows == static_cast<int64_t>(tokens_.size()) &&
            (!head || state_->draft->size() >= state_->hidden_first)) {
            // Verify the drafts with the next token in one pass: the logits of every position.
            std::vector<int32_t> batch = draft_after(token, count);
            result.stats.draft_tokens += static_cast<int64_t>(batch.size());
            batch.insert(batch.begin(), token);
            std::vector<float> rows = run(batch, true, true);
            for (size_t i = 1; i < batch.size(); ++i)
                drafted.emplace_back(batch[i], std::vector<float>(rows.begin() + static_cast<std::ptrdiff_t>(i) * vocab,
                                                                  rows.begin() + static_cast<std::ptrdiff_t>(i + 1) * vocab));
            rows.resize(static_cast<size_t>(vocab));
            logits = std::move(rows);
            continue;
        }
        const int32_t one[] = {token};
        logits = run(one, false, drafting);
    }
    // Drafts evaluated but not emitted, or emitted last, leave the cache (see tokens()); the head
    // keeps no position past the evaluated tokens.
    if (!drafted.empty()) truncate(static_cast<int64_t>(tokens_.size() - drafted.size()));
    state_->keep(static_cast<int64_t>(tokens_.size()));
    if (decoder && result.stop != StopReason::StopString) {
        std::string rest = pending + decoder->finish();
        if (!rest.empty()) {
            result.text += rest;
            if (on_token && !result.tokens.empty()) on_token(result.tokens.back(), rest);
        }
    }
    if (result.stats.generated_tokens > 0) result.stats.decode_seconds = seconds_since(first_token_time);
    return result;
}

// ---- Conversation -------------------------------------------------------------------------------

Conversation::Conversation(Model& model, std::string system_prompt)
    : model_(model), session_(model), system_prompt_(std::move(system_prompt)) {}

nlohmann::ordered_json Conversation::rendered_messages(const std::string& user_message) const {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!system_prompt_.empty()) messages.push_back({{"role", "system"}, {"content", system_prompt_}});
    for (const auto& m : messages_) messages.push_back(m);
    messages.push_back({{"role", "user"}, {"content", user_message}});
    return messages;
}

std::vector<int32_t> Conversation::prompt_tokens(const std::string& user_message) const {
    nlohmann::ordered_json vars = nlohmann::ordered_json::object();
    if (thinking_) vars["enable_thinking"] = *thinking_;
    const std::string text = model_.chat_template().apply(rendered_messages(user_message), nullptr, true, vars);
    // As apply_chat_template(tokenize=True): the template writes the special tokens itself.
    return model_.tokenizer().encode(text, false);
}

GenerationResult Conversation::reply(const std::string& user_message, const GenerateOptions& options, const TokenCallback& on_token) {
    const std::vector<int32_t> prompt = prompt_tokens(user_message);
    GenerationResult result = session_.generate(prompt, options, on_token);
    if (result.stop == StopReason::ContextFull && result.tokens.empty()) return result;  // the prompt did not fit
    messages_.push_back({{"role", "user"}, {"content", user_message}});
    messages_.push_back({{"role", "assistant"}, {"content", result.text}});
    return result;
}

}  // namespace oxinfer
