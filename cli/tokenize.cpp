// oxinfer tokenize --model MODEL [--no-special] [--json] (TEXT | --file F) [--bench FILE]
// oxinfer detokenize --model MODEL [--skip-special] ID...

#include "args.h"
#include "commands.h"

#include <oxinfer/error.h>
#include <oxinfer/profiler.h>
#include <oxinfer/tokenizer.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace oxinfer::cli {
namespace {

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path, "cannot open file");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& model) {
    profiler::Scope scope("load tokenizer");
    return Tokenizer::from_path(model);
}

// Tokenizes FILE several times and prints the speed (the first pass starts with an empty word cache).
int bench(const Tokenizer& tokenizer, const std::string& path, bool add_special, bool as_json) {
    const std::string text = read_all(path);
    using clock = std::chrono::steady_clock;
    double first = 0, best = 1e30;
    size_t count = 0;
    // Line by line, each line with its newline (as tests/reference/tokenizer_bench.mjs does).
    std::vector<std::string_view> lines;
    for (size_t pos = 0; pos < text.size();) {
        size_t end = text.find('\n', pos);
        end = end == std::string::npos ? text.size() : end + 1;
        lines.emplace_back(text.data() + pos, end - pos);
        pos = end;
    }
    double cpu_best = 1e30;
    for (int run = 0; run < 3; ++run) {
        const auto start = clock::now();
        const std::clock_t cpu_start = std::clock();
        count = 0;
        for (std::string_view line : lines) count += tokenizer.encode(line, add_special).size();
        const double seconds = std::chrono::duration<double>(clock::now() - start).count();
        cpu_best = std::min(cpu_best, static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC);
        if (run == 0) first = seconds;
        best = std::min(best, seconds);
    }
    const double megabytes = static_cast<double>(text.size()) / 1e6;
    if (as_json) {
        nlohmann::json out = {{"bytes", text.size()},    {"tokens", count},
                              {"first_s", first},        {"best_s", best},
                              {"first_mb_s", megabytes / first}, {"best_mb_s", megabytes / best},
                              {"tokens_per_s", static_cast<double>(count) / best}, {"best_cpu_s", cpu_best},
                              {"best_cpu_mb_s", megabytes / cpu_best}};
        std::printf("%s\n", out.dump().c_str());
    } else {
        std::printf("%s: %.2f MB, %zu tokens\nfirst pass: %.3f s (%.2f MB/s)\nbest of 3:  %.3f s (%.2f MB/s, %.0f tokens/s)\n"
                    "best CPU time: %.3f s (%.2f MB/s of CPU time)\n",
                    path.c_str(), megabytes, count, first, megabytes / first, best, megabytes / best, static_cast<double>(count) / best,
                    cpu_best, megabytes / cpu_best);
    }
    return 0;
}

}  // namespace

int run_tokenize(const std::vector<std::string>& argv) {
    auto options = common_options();
    options.push_back({"model", "m", "MODEL", "tokenizer folder (tokenizer.json + tokenizer_config.json), model folder or .gguf"});
    options.push_back({"no-special", "", "", "do not add special tokens (BOS, [CLS] ...) around the text"});
    options.push_back({"json", "", "", "print {\"ids\": [...], \"tokens\": [...]}"});
    options.push_back({"file", "f", "FILE", "read the text from FILE instead of the command line"});
    options.push_back({"bench", "", "FILE", "measure tokenization speed on FILE, line by line (3 passes)"});
    Args args("tokenize", "--model MODEL [--no-special] [--json] (TEXT | --file FILE)",
              "Prints the token ids of TEXT, with special tokens added as the tokenizer's post-processor says\n"
              "(unless --no-special). Only the tokenizer is read: tokenizer.json, or a GGUF's vocabulary.",
              options);
    args.parse(argv);
    if (args.help_requested()) {
        std::fputs(args.help().c_str(), stdout);
        return 0;
    }
    const auto tokenizer = open_tokenizer(args.required("model"));
    const bool add_special = !args.flag("no-special");
    if (const auto bench_file = args.value("bench")) return bench(*tokenizer, *bench_file, add_special, args.flag("json"));
    std::string text;
    if (const auto file = args.value("file")) {
        if (!args.positionals().empty()) throw Error("tokenize", "give the text either as TEXT or with --file, not both");
        text = read_all(*file);
    } else {
        if (args.positionals().size() > 1) throw Error("tokenize", "give the text as one argument (quote it)");
        text = args.positional(0, "TEXT");
    }
    const auto ids = [&] {
        profiler::Scope scope("tokenize");
        return tokenizer->encode(text, add_special);
    }();
    if (args.flag("json")) {
        nlohmann::json out = {{"ids", ids}, {"tokens", tokenizer->tokens(ids)}};
        std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
        std::string line;
        for (size_t i = 0; i < ids.size(); ++i) line += (i ? " " : "") + std::to_string(ids[i]);
        std::printf("%s\n", line.c_str());
    }
    return 0;
}

int run_detokenize(const std::vector<std::string>& argv) {
    auto options = common_options();
    options.push_back({"model", "m", "MODEL", "tokenizer folder (tokenizer.json + tokenizer_config.json), model folder or .gguf"});
    options.push_back({"skip-special", "", "", "leave special tokens out of the text"});
    Args args("detokenize", "--model MODEL [--skip-special] ID...",
              "Prints the text of the token ids exactly, with no newline added (Hugging Face's decode).", options);
    args.parse(argv);
    if (args.help_requested()) {
        std::fputs(args.help().c_str(), stdout);
        return 0;
    }
    std::vector<int32_t> ids;
    for (const std::string& item : args.positionals()) {
        // Ids may also come as one quoted, space- or comma-separated argument.
        std::string token;
        auto flush = [&] {
            if (token.empty()) return;
            size_t used = 0;
            long long value = -1;
            try {
                value = std::stoll(token, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used != token.size() || value < 0 || value > INT32_MAX) throw Error("detokenize", "'" + token + "' is not a token id");
            ids.push_back(static_cast<int32_t>(value));
            token.clear();
        };
        for (char c : item) {
            if (c == ' ' || c == ',' || c == '\t' || c == '\n') flush();
            else token.push_back(c);
        }
        flush();
    }
    if (ids.empty()) throw Error("detokenize", "no token ids given");
    const auto tokenizer = open_tokenizer(args.required("model"));
    for (int32_t id : ids)
        if (static_cast<size_t>(id) >= tokenizer->vocab_size())
            throw Error("detokenize", "token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(tokenizer->vocab_size()));
    const std::string text = tokenizer->decode(ids, args.flag("skip-special"));
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
}

}  // namespace oxinfer::cli
