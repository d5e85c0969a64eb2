#pragma once
// Random-weight checkpoints with the shapes of real models, for benchmarks and tests
// (`oxinfer synth`). Weights are uniform with the variance of a scaled initialisation (1/fan_in),
// norms are ones; the output is a GGUF file (any type synth can quantise to) or a Hugging Face
// folder (config.json + model.safetensors; f32, f16 or bf16).

#include <oxinfer/dtype.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace oxinfer {

struct SynthShape {
    std::string name;  // "qwen3-0.6b"
    std::string arch;  // "qwen3", as --arch takes it
    std::string note;  // what it mirrors
};

const std::vector<SynthShape>& synth_shapes();

// The config.json of a named shape; `layers` > 0 overrides num_hidden_layers. Throws
// oxinfer::Error listing the shapes when `arch`/`shape` are unknown or do not match.
nlohmann::json synth_config(const std::string& arch, const std::string& shape, int64_t layers = 0);

struct SynthOptions {
    DType type = DType::BF16;  // matrices; norms are always f32 in GGUF and `type` in folders
    uint64_t seed = 1;
    int threads = 0;
};

// Writes a .gguf file or, for any other path, a folder. Throws oxinfer::Error for types the output
// cannot hold or architectures synth does not know.
void write_synthetic_checkpoint(const nlohmann::json& config, const std::filesystem::path& out, const SynthOptions& options);

}  // namespace oxinfer
