#include "chat_test_model.h"

#include <oxinfer/synth.h>

namespace oxinfer::test {

std::filesystem::path write_chat_test_model(const std::filesystem::path& folder, int layers) {
    namespace fs = std::filesystem;
    const fs::path reference = fs::path(OXINFER_REFERENCE_DIR) / "llm" / "qwen3" / "hf";
    nlohmann::json config = synth_config("qwen3", "qwen3-0.6b", layers);
    config["vocab_size"] = 128;  // the reference tokenizer's
    config["max_position_embeddings"] = 4096;
    config["eos_token_id"] = 127;
    SynthOptions options;
    options.type = DType::BF16;
    write_synthetic_checkpoint(config, folder, options);
    for (const char* file : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
        fs::copy_file(reference / file, folder / file, fs::copy_options::overwrite_existing);
    return folder;
}

}  // namespace oxinfer::test
