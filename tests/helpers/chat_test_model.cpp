#include "chat_test_model.h"

#include <oxinfer/synth.h>

#include <fstream>

namespace oxinfer::test {

namespace {

nlohmann::json read_json(const std::filesystem::path& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

void write_json(const std::filesystem::path& path, const nlohmann::json& value) {
    std::ofstream(path) << value.dump(2);
}

}  // namespace

std::filesystem::path write_chat_test_model(const std::filesystem::path& folder, int layers) {
    namespace fs = std::filesystem;
    const fs::path reference = fs::path(OXINFER_REFERENCE_DIR) / "llm" / "qwen3" / "hf";
    nlohmann::json config = synth_config("qwen3", "qwen3-0.6b", layers);
    config["vocab_size"] = 128;  // the reference tokenizer's
    config["max_position_embeddings"] = 4096;
    config.erase("eos_token_id");
    SynthOptions options;
    options.type = DType::BF16;
    write_synthetic_checkpoint(config, folder, options);
    fs::copy_file(reference / "tokenizer.json", folder / "tokenizer.json", fs::copy_options::overwrite_existing);
    // No stop tokens: the greedy path of random weights reaches one after a few dozen tokens on
    // some CPUs and not on others, and the tests need replies that run to their limits.
    nlohmann::json tokenizer_config = read_json(reference / "tokenizer_config.json");
    tokenizer_config.erase("eos_token");
    write_json(folder / "tokenizer_config.json", tokenizer_config);
    nlohmann::json generation_config = read_json(reference / "generation_config.json");
    generation_config.erase("eos_token_id");
    write_json(folder / "generation_config.json", generation_config);
    return folder;
}

}  // namespace oxinfer::test
