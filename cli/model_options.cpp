#include "model_options.h"

#include <oxinfer/error.h>

#include <charconv>
#include <string>

namespace oxinfer::cli {
namespace {

template <class T>
T number(const Args& args, const std::string& name, T fallback) {
    const auto text = args.value(name);
    if (!text) return fallback;
    T value{};
    const char* end = text->data() + text->size();
    const auto [ptr, error] = std::from_chars(text->data(), end, value);
    if (error != std::errc() || ptr != end) throw Error("--" + name, "'" + *text + "' is not a valid number");
    return value;
}

}  // namespace

std::vector<OptionSpec> model_load_options() {
    return {
        {"quant", "", "TYPE", "convert the weights at load: bf16, q8 (Q8_0) or q4 (Q4_K)"},
        {"bf16-activations", "", "", "prefill of bf16 weights on bf16-rounded activations (vdpbf16ps where the CPU has AVX-512 BF16), as llama.cpp computes; less exact"},
        {"no-repack", "", "", "read weights in place from the mapped file, not copied into huge pages (Q4_K and Q8_0 in the kernels' faster layout)"},
        {"ctx", "", "N", "context length (default: the model's max_position_embeddings)"},
        {"kv-type", "", "TYPE", "KV cache type: f32 (default), f16 or bf16"},
        {"draft-model", "", "MODEL", "a draft model for speculative decoding (Gemma 4's assistant): folder, .gguf or repo id"},
        {"draft-max", "", "N", "tokens drafted per verification with --draft-model (default 3)"},
    };
}

LoadOptions load_options(const Args& args) {
    LoadOptions options;
    options.threads = number<int>(args, "threads", 0);
    if (options.threads < 0) throw Error("--threads", "must be positive");
    options.context_length = number<int64_t>(args, "ctx", 0);
    if (auto quant = args.value("quant")) {
        const auto type = quant_type_from_name(*quant);
        if (!type || (*type != DType::BF16 && *type != DType::Q8_0 && *type != DType::Q4_K))
            throw Error("--quant", "'" + *quant + "' is not one of bf16, q8, q4");
        options.convert_weights = type;
    }
    options.bf16_activations = args.flag("bf16-activations");
    options.repack_weights = !args.flag("no-repack");
    if (auto kv = args.value("kv-type")) {
        const auto type = dtype_from_name(*kv);
        if (!type || (*type != DType::F32 && *type != DType::F16 && *type != DType::BF16))
            throw Error("--kv-type", "'" + *kv + "' is not one of f32, f16, bf16");
        options.kv_type = *type;
    }
    if (auto draft = args.value("draft-model")) options.draft_model = *draft;
    return options;
}

int64_t draft_tokens_option(const Args& args) {
    const auto n = number<int64_t>(args, "draft-max", 3);
    if (n < 1 || n > GenerateOptions::kMaxDraftTokens)
        throw Error("--draft-max", "must be 1 to " + std::to_string(GenerateOptions::kMaxDraftTokens));
    return n;
}

std::vector<OptionSpec> sampling_options() {
    return {
        {"n-predict", "n", "N", "tokens to generate at most"},
        {"temp", "", "T", "temperature; 0 is greedy (default 0)"},
        {"top-k", "", "K", "keep the K most probable tokens (0: off)"},
        {"top-p", "", "P", "keep the most probable tokens up to probability P (1: off)"},
        {"min-p", "", "P", "drop tokens below P times the top probability (0: off)"},
        {"repeat-penalty", "", "R", "repetition penalty as transformers applies it (1: off)"},
        {"presence-penalty", "", "X", "subtract X from the logits of tokens already seen"},
        {"frequency-penalty", "", "X", "subtract X per occurrence of tokens already seen"},
        {"seed", "", "S", "random seed for sampling (default 0)"},
        {"stop", "", "TEXT", "stop before this text (repeatable)"},
        {"ignore-eos", "", "", "do not stop at the model's end-of-sequence tokens"},
    };
}

GenerateOptions generate_options(const Args& args, int64_t default_max_tokens) {
    GenerateOptions options;
    options.max_tokens = number<int64_t>(args, "n-predict", default_max_tokens);
    if (options.max_tokens < 0) throw Error("-n", "must not be negative");
    SamplingParams& s = options.sampling;
    s.temperature = number<float>(args, "temp", 0.0f);
    s.top_k = number<int64_t>(args, "top-k", 0);
    s.top_p = number<float>(args, "top-p", 1.0f);
    s.min_p = number<float>(args, "min-p", 0.0f);
    s.repetition_penalty = number<float>(args, "repeat-penalty", 1.0f);
    s.presence_penalty = number<float>(args, "presence-penalty", 0.0f);
    s.frequency_penalty = number<float>(args, "frequency-penalty", 0.0f);
    s.seed = number<uint64_t>(args, "seed", 0);
    if (s.temperature < 0) throw Error("--temp", "must not be negative");
    if (s.top_p <= 0 || s.top_p > 1) throw Error("--top-p", "must be in (0, 1]");
    if (s.min_p < 0 || s.min_p > 1) throw Error("--min-p", "must be in [0, 1]");
    if (s.repetition_penalty <= 0) throw Error("--repeat-penalty", "must be positive");
    options.stop_strings = args.values("stop");
    options.stop_at_model_stop_tokens = !args.flag("ignore-eos");
    options.draft = args.value("draft-model").has_value();
    options.draft_tokens = draft_tokens_option(args);
    return options;
}

std::vector<int32_t> parse_token_list(const std::string& text, const std::string& option) {
    std::vector<int32_t> ids;
    size_t pos = 0;
    while (pos < text.size()) {
        while (pos < text.size() && (text[pos] == ' ' || text[pos] == ',' || text[pos] == '\t' || text[pos] == '\n')) ++pos;
        if (pos == text.size()) break;
        int32_t id = 0;
        const auto [ptr, error] = std::from_chars(text.data() + pos, text.data() + text.size(), id);
        if (error != std::errc() || (ptr != text.data() + text.size() && *ptr != ' ' && *ptr != ',' && *ptr != '\t' && *ptr != '\n'))
            throw Error(option, "'" + text + "' is not a list of token ids");
        ids.push_back(id);
        pos = static_cast<size_t>(ptr - text.data());
    }
    if (ids.empty()) throw Error(option, "no token ids given");
    return ids;
}

}  // namespace oxinfer::cli
