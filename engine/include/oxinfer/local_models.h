#pragma once
// The models on this computer, and what they would cost to run: what `oxinfer models` lists and
// the app's Models pane shows. Everything here reads headers and config files only (weights stay
// on disk), so listing a shelf of large models is quick.

#include <oxinfer/dtype.h>
#include <oxinfer/model_config.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace oxinfer {

struct LocalModel {
    std::string id;       // what MODEL arguments take: "org/name", "org/name:Q4_K_M", a folder or file name
    std::string source;   // "cache" (the Hugging Face cache) or "folder" (a folder of the user's)
    std::filesystem::path path;  // the model folder, or the GGUF variant's first file
    std::string format;   // "gguf", "safetensors", "torch" or "other"
    std::string type;     // GGUF quantization ("Q4_K_M"), or the config's dtype ("bfloat16"); "" when unknown
    std::string architecture;  // "Qwen3ForCausalLM", GGUF "qwen3"; "" when unknown
    uint64_t bytes = 0;   // the files' sizes
    std::vector<std::string> files;
    std::string repo, commit;  // cache entries only
    std::string problem;  // why its header could not be read ("" when fine)
};

// The folders of $OXINFER_MODEL_PATH (':'-separated; ';' on Windows).
std::vector<std::filesystem::path> model_path_folders();

// The cache's models, then for each folder: the folder itself when it is a model, else its GGUF
// files and its sub-folders that are models (or hold GGUF files). Architecture and type come from
// config.json or the GGUF header.
std::vector<LocalModel> find_local_models(const std::filesystem::path& cache,
                                          const std::vector<std::filesystem::path>& folders);

// What a model needs in memory, from its config and tensor headers (no weight is read).
struct ModelFootprint {
    TransformerConfig config;
    int64_t parameters = 0;     // elements of every tensor in the checkpoint
    uint64_t weight_bytes = 0;  // as stored
    DType weight_type = DType::F32;  // the type holding most of the bytes ("q4_k" for a Q4_K_M file)
    // Bytes of KV cache one token adds in f32, over the layers that keep one for every position.
    uint64_t kv_bytes_per_token_f32 = 0;
    // Layers that keep at most `window` positions (sliding-window attention): bytes per position
    // in f32, and how many positions they hold.
    uint64_t window_kv_bytes_per_token_f32 = 0;
    int64_t window_positions = 0;
    // Fixed-size state of linear-attention layers (Qwen3.5's DeltaNet: convolution and recurrent
    // state, with the snapshots kept to resume a chat), always f32.
    uint64_t state_bytes = 0;

    // The KV cache at `context` positions of `kv_type` (F32, F16, BF16) plus the fixed state.
    uint64_t cache_bytes(int64_t context, DType kv_type) const;
    uint64_t total_bytes(int64_t context, DType kv_type) const { return weight_bytes + cache_bytes(context, kv_type); }
};

// Throws oxinfer::Error naming the file and the problem.
ModelFootprint model_footprint(const std::filesystem::path& model);

}  // namespace oxinfer
