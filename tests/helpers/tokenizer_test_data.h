#pragma once
// Shared by the tokenizer tests: where the fetched test data is (OXINFER_TEST_DATA, filled by
// scripts/fetch-test-data.sh), the goldens of tests/reference/tokenizer_goldens.mjs, and a check
// of streaming detokenization.

#include "tokenizer/unicode.h"

#include <oxinfer/tokenizer.h>

#include <nlohmann/json.hpp>

#include <QTest>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

// (aliases for the test files)
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace oxinfer::test {

inline fs::path data_dir() {
    const char* env = std::getenv("OXINFER_TEST_DATA");
    return env ? fs::path(env) : fs::path();
}

// Empty when the tokenizer files scripts/fetch-test-data.sh fetches are there, else why not (the
// tests fail with it: without their data they would prove nothing).
inline std::string missing_test_data() {
    const fs::path dir = data_dir();
    if (!dir.empty() && fs::exists(dir / "tokenizers" / "qwen3" / "tokenizer.json") &&
        fs::exists(dir / "tokenizers" / "spm-unigram" / "tokenizer.json"))
        return {};
    return "tokenizer test data is missing (OXINFER_TEST_DATA='" + dir.string() + "'): run scripts/fetch-test-data.sh " + dir.string();
}

// The fetched tokenizers by folder name, each loaded once per test process.
class TokenizerCache {
public:
    const Tokenizer& load(const std::string& name) {
        auto& slot = loaded_[name];
        if (!slot) slot = Tokenizer::from_folder(data_dir() / "tokenizers" / name);
        return *slot;
    }

private:
    std::map<std::string, std::unique_ptr<Tokenizer>> loaded_;
};

inline std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

inline json golden(const std::string& name) {
    const fs::path path = fs::path(OXINFER_REFERENCE_DIR) / "tokenizers" / (name + ".json");
    if (!fs::exists(path)) throw std::runtime_error("missing golden " + path.string());
    return json::parse(read_file(path));
}

inline std::string show(const std::vector<int32_t>& ids, size_t limit = 40) {
    std::string out = "[";
    for (size_t i = 0; i < ids.size() && i < limit; ++i) out += (i ? " " : "") + std::to_string(ids[i]);
    if (ids.size() > limit) out += " ... (" + std::to_string(ids.size()) + ")";
    return out + "]";
}

inline std::string shorten(const std::string& text) { return text.size() > 80 ? text.substr(0, 80) + "..." : text; }

inline const std::vector<std::string> kTokenizers = {"qwen3",        "gemma3",          "llama3",          "bert-wordpiece", "bert-variant",
                                              "albert-unigram", "spm-unigram",   "qwen3-gpt2",      "qwen3-splits",   "qwen3-metaspace",
                                              "qwen3-whitespace", "qwen3-bert"};

// A "name" column with a row per tokenizer of kTokenizers (the suites' data functions).
inline void add_tokenizer_rows() {
    QTest::addColumn<QString>("name");
    for (const std::string& name : kTokenizers) QTest::newRow(name.c_str()) << QString::fromStdString(name);
}

// Streams ids one at a time; every chunk must be valid UTF-8 and the chunks must add up to decode().
inline std::string stream_check(const Tokenizer& tokenizer, const std::vector<int32_t>& ids, bool skip, const std::string& expected) {
    oxinfer::StreamingDecoder stream(tokenizer, skip);
    std::string text;
    for (int32_t id : ids) {
        const std::string chunk = stream.feed(id);
        if (!oxinfer::tokenizer::is_valid_utf8(chunk)) return "chunk is not valid UTF-8";
        text += chunk;
    }
    const std::string rest = stream.finish();
    if (!oxinfer::tokenizer::is_valid_utf8(rest)) return "final chunk is not valid UTF-8";
    text += rest;
    if (text != expected) return "streamed \"" + shorten(text) + "\" but decode gives \"" + shorten(expected) + "\"";
    return "";
}

}  // namespace oxinfer::test
