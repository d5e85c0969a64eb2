// oxinfer generate --model MODEL (--prompt TEXT | --tokens "ID ...") [-n N] [sampling] [--chat] [--json]
// oxinfer chat --model MODEL [--system TEXT]

#include "args.h"
#include "commands.h"
#include "model_options.h"

#include <oxinfer/error.h>
#include <oxinfer/llm.h>
#include <oxinfer/tokenizer.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <unistd.h>

namespace oxinfer::cli {
namespace {

std::vector<OptionSpec> run_options() {
    auto options = common_options();
    for (auto& o : model_load_options()) options.push_back(o);
    for (auto& o : sampling_options()) options.push_back(o);
    options.push_back({"model", "m", "MODEL", "model folder, .gguf file or cached repo id"});
    options.push_back({"no-thinking", "", "", "enable_thinking=false for templates that have it (Qwen3)"});
    return options;
}

void print_stats(const GenerationResult& result) {
    const GenerationStats& s = result.stats;
    std::fprintf(stderr, "\n[%lld prompt tokens (%lld cached), %.1f tok/s prefill; %lld generated, %.1f tok/s; first token after %.0f ms; %s]\n",
                 static_cast<long long>(s.prompt_tokens), static_cast<long long>(s.reused_prompt_tokens), s.prefill_tokens_per_second(),
                 static_cast<long long>(s.generated_tokens), s.decode_tokens_per_second(), 1000 * s.time_to_first_token,
                 stop_reason_name(result.stop).data());
    if (s.draft_tokens > 0)
        std::fprintf(stderr, "[%lld drafted by the MTP head, %lld accepted]\n", static_cast<long long>(s.draft_tokens),
                     static_cast<long long>(s.accepted_draft_tokens));
}

// Streams text as it comes; a model without a tokenizer streams ids.
TokenCallback streaming_printer(bool has_tokenizer) {
    return [has_tokenizer](int32_t token, std::string_view text) {
        if (has_tokenizer) std::fwrite(text.data(), 1, text.size(), stdout);
        else std::printf("%d ", token);
        std::fflush(stdout);
        return true;
    };
}

// Ctrl-C during a reply cancels it; at the prompt it ends the program.
std::atomic<Conversation*> g_replying{nullptr};

void on_interrupt(int) {
    if (Conversation* conversation = g_replying.load()) {
        conversation->cancel();
        return;
    }
    const char newline = '\n';
    (void)!write(STDOUT_FILENO, &newline, 1);
    _exit(130);
}

}  // namespace

int run_generate(const std::vector<std::string>& argv) {
    auto options = run_options();
    options.push_back({"prompt", "p", "TEXT", "the prompt text (special tokens added as `tokenize` does, unless --chat)"});
    options.push_back({"tokens", "", "IDS", "the prompt as token ids"});
    options.push_back({"chat", "", "", "wrap the prompt as one user message with the chat template"});
    options.push_back({"json", "", "", "print {ids, text, prompt_tokens, pp_tok_s, tg_tok_s} at the end instead of streaming"});
    options.push_back({"stats", "", "", "print speed statistics and why generation stopped to stderr"});
    options.push_back({"mtp", "", "", "draft tokens with the model's multi-token-prediction head (Qwen3.5), verified by the model: "
                                      "the same output, faster when the head agrees often"});
    Args args("generate", "--model MODEL (--prompt TEXT | --tokens \"ID ...\") [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P] "
                          "[--repeat-penalty R] [--seed S] [--chat] [--json]",
              "Generates a continuation of the prompt and streams it to stdout. --temp 0 (the default) is greedy.", options);
    args.parse(argv);
    if (args.help_requested()) {
        std::fputs(args.help().c_str(), stdout);
        return 0;
    }
    if (args.value("tokens") && args.value("prompt")) throw Error("generate", "give --prompt or --tokens, not both");
    if (!args.value("tokens") && !args.value("prompt")) throw Error("generate", "give --prompt or --tokens");
    if (args.flag("chat") && !args.value("prompt")) throw Error("generate", "--chat needs --prompt");
    GenerateOptions generate = generate_options(args, 128);
    if (args.flag("mtp") && args.value("draft-model")) throw Error("generate", "give --mtp or --draft-model, not both");
    generate.draft = generate.draft || args.flag("mtp");
    auto model = Model::load(args.required("model"), load_options(args));
    if (args.flag("mtp") && !model->has_draft_head())
        throw Error(args.required("model"), "has no multi-token-prediction head (mtp.* or GGUF nextn tensors) for --mtp");
    const bool as_json = args.flag("json");
    const TokenCallback stream = as_json ? TokenCallback{} : streaming_printer(model->has_tokenizer());

    GenerationResult result;
    if (args.flag("chat")) {
        Conversation conversation(*model);
        if (args.flag("no-thinking")) conversation.set_thinking(false);
        result = conversation.reply(*args.value("prompt"), generate, stream);
    } else {
        const std::vector<int32_t> prompt =
            args.value("tokens") ? parse_token_list(*args.value("tokens"), "--tokens") : model->tokenizer().encode(*args.value("prompt"), true);
        Session session(*model);
        result = session.generate(prompt, generate, stream);
    }
    if (result.stop == StopReason::ContextFull && result.tokens.empty())
        throw Error("generate", "the prompt's " + std::to_string(result.stats.prompt_tokens) + " tokens do not fit in the context length of " +
                                    std::to_string(model->context_length()) + " (--ctx sets it)");
    if (as_json) {
        nlohmann::json out = {{"ids", result.tokens},
                              {"text", result.text},
                              {"prompt_tokens", result.stats.prompt_tokens},
                              {"pp_tok_s", result.stats.prefill_tokens_per_second()},
                              {"tg_tok_s", result.stats.decode_tokens_per_second()}};
        if (generate.draft) {
            const GenerationStats& s = result.stats;
            out["draft_tokens"] = s.draft_tokens;
            out["accepted_draft_tokens"] = s.accepted_draft_tokens;
            out["draft_acceptance"] = s.draft_tokens ? static_cast<double>(s.accepted_draft_tokens) / static_cast<double>(s.draft_tokens) : 0.0;
        }
        std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
        std::printf("\n");
    }
    if (args.flag("stats")) print_stats(result);
    return 0;
}

int run_chat(const std::vector<std::string>& argv) {
    auto options = run_options();
    options.push_back({"system", "s", "TEXT", "system prompt"});
    Args args("chat", "--model MODEL [--system TEXT]",
              "Interactive chat in the terminal. Commands: /reset (forget the conversation), /system TEXT (new system\n"
              "prompt, conversation reset), /quit. Ctrl-C stops the current reply; at the prompt it quits.",
              options);
    args.parse(argv);
    if (args.help_requested()) {
        std::fputs(args.help().c_str(), stdout);
        return 0;
    }
    GenerateOptions generate = generate_options(args, 4096);
    auto model = Model::load(args.required("model"), load_options(args));
    model->chat_template();  // fails early, naming the model, when it has none
    // Without --temp, chat samples as the model's generation_config.json says (greedy if it does not).
    const GenerationConfig& defaults = model->generation_config();
    if (!args.value("temp") && defaults.do_sample) {
        generate.sampling.temperature = static_cast<float>(defaults.temperature.value_or(1.0));
        if (!args.value("top-k") && defaults.top_k) generate.sampling.top_k = *defaults.top_k;
        if (!args.value("top-p") && defaults.top_p) generate.sampling.top_p = static_cast<float>(*defaults.top_p);
        if (!args.value("min-p") && defaults.min_p) generate.sampling.min_p = static_cast<float>(*defaults.min_p);
    }
    Conversation conversation(*model, args.value("system").value_or(""));
    if (args.flag("no-thinking")) conversation.set_thinking(false);
    std::signal(SIGINT, on_interrupt);
    const bool terminal = isatty(STDIN_FILENO);
    std::string line;
    while (true) {
        if (terminal) std::printf("> ");
        std::fflush(stdout);
        if (!std::getline(std::cin, line)) break;
        if (line.empty()) continue;
        if (line == "/quit" || line == "/exit") break;
        if (line == "/reset") {
            conversation.clear();
            std::printf("(conversation reset)\n");
            continue;
        }
        if (line.rfind("/system", 0) == 0) {
            conversation.set_system_prompt(line.size() > 8 ? line.substr(8) : "");
            conversation.clear();
            std::printf("(system prompt set, conversation reset)\n");
            continue;
        }
        g_replying.store(&conversation);
        const GenerationResult result = conversation.reply(line, generate, streaming_printer(true));
        g_replying.store(nullptr);
        if (result.stop == StopReason::ContextFull && result.tokens.empty())
            std::printf("(the conversation no longer fits in the context of %lld tokens: /reset starts over, --ctx sets the length)",
                        static_cast<long long>(model->context_length()));
        std::printf("\n");
        if (terminal || args.flag("profile")) print_stats(result);
    }
    return 0;
}

}  // namespace oxinfer::cli
