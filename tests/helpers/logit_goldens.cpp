#include "logit_goldens.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

namespace oxinfer::test {

namespace fs = std::filesystem;

LogitGolden load_logit_golden(const fs::path& case_dir, const std::string& variant) {
    std::ifstream in(case_dir / "golden.json");
    const nlohmann::json summary = nlohmann::json::parse(in);
    LogitGolden g;
    g.prompt = summary["prompt"].get<std::vector<int32_t>>();
    g.greedy = summary[variant]["greedy"].get<std::vector<int32_t>>();
    g.min_gap = summary[variant]["min_greedy_gap"].get<double>();
    g.logits = read_npy_f32(case_dir / (variant + "_logits.npy"));
    g.sequence = g.prompt;
    g.sequence.insert(g.sequence.end(), g.greedy.begin(), g.greedy.end() - 1);
    return g;
}

fs::path folder_with_weights(const fs::path& parent, const fs::path& case_dir, const std::string& weights, const std::string& file_name) {
    const fs::path folder = parent / (case_dir.filename().string() + "-" + file_name);
    fs::create_directories(folder);
    for (const char* file : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
        fs::copy_file(case_dir / "hf" / file, folder / file, fs::copy_options::overwrite_existing);
    fs::copy_file(case_dir / weights, folder / file_name, fs::copy_options::overwrite_existing);
    return folder;
}

double logits_error(const std::vector<float>& logits, const LogitGolden& golden, size_t first_row, size_t count, int64_t vocab) {
    double worst = 0;
    const float* expected = golden.logits.values.data() + first_row * static_cast<size_t>(vocab);
    for (size_t i = 0; i < count * static_cast<size_t>(vocab); ++i)
        worst = std::max(worst, std::fabs(static_cast<double>(logits[i]) - expected[i]));
    return worst;
}

std::span<const int32_t> token_slice(const std::vector<int32_t>& tokens, size_t begin, size_t end) {
    return std::span<const int32_t>(tokens).subspan(begin, end - begin);
}

std::unique_ptr<Model> load_with_two_threads(const fs::path& path) {
    LoadOptions options;
    options.threads = 2;
    return Model::load(path.string(), options);
}

}  // namespace oxinfer::test
