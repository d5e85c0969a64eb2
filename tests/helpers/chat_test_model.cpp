#include "chat_test_model.h"

#include <oxinfer/synth.h>

#include <fstream>

namespace oxinfer::test {

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
    const auto copy_without = [&](const char* file, const char* key) {
        std::ifstream in(reference / file);
        nlohmann::json value = nlohmann::json::parse(in);
        value.erase(key);
        std::ofstream(folder / file) << value.dump(2);
    };
    copy_without("tokenizer_config.json", "eos_token");
    copy_without("generation_config.json", "eos_token_id");
    return folder;
}

}  // namespace oxinfer::test
