#pragma once
// The goldens tests/reference/*_reference.py write per model case (golden.json with the prompt and
// greedy tokens per weight variant, <variant>_logits.npy with the logits of prompt + greedy[:-1]
// from one pass), and the checks the reference tests share.

#include <oxinfer/llm.h>
#include <oxinfer/npy.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace oxinfer::test {

struct LogitGolden {
    std::vector<int32_t> prompt, greedy, sequence;  // sequence: prompt + greedy[:-1]
    double min_gap = 0;                             // the smallest top-1 / top-2 gap of the greedy run
    NpyArray logits;                                // (sequence positions, vocab)
};

LogitGolden load_logit_golden(const std::filesystem::path& case_dir, const std::string& variant);

// A Hugging Face folder under `parent` with the case's hf/ config and tokenizer files and the case's
// file `weights` as `file_name`.
std::filesystem::path folder_with_weights(const std::filesystem::path& parent, const std::filesystem::path& case_dir,
                                          const std::string& weights, const std::string& file_name);

// Max |diff| between `count` rows of logits and the golden's rows from `first_row`.
double logits_error(const std::vector<float>& logits, const LogitGolden& golden, size_t first_row, size_t count, int64_t vocab);

std::span<const int32_t> token_slice(const std::vector<int32_t>& tokens, size_t begin, size_t end);

// Model::load with 2 threads (the suite's machines have 2 cores).
std::unique_ptr<Model> load_with_two_threads(const std::filesystem::path& path);

}  // namespace oxinfer::test
