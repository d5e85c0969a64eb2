#pragma once
// A checkpoint: the tensors and metadata of a model, whatever the file format. One loader serves
// Hugging Face folders (safetensors, single or sharded; pytorch_model.bin), GGUF files and torch
// zip archives. Tensor data stays in the memory-mapped files; nothing is copied at open.

#include <oxinfer/dtype.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace oxinfer {

enum class CheckpointFormat { Safetensors, Gguf, Torch };
std::string_view format_name(CheckpointFormat format);  // "safetensors", "gguf", "torch"

struct TensorInfo {
    std::string name;              // as stored in the file
    DType dtype = DType::F32;
    std::vector<int64_t> shape;    // row-major, outermost first (numpy order; GGUF dims reversed)
    std::vector<int64_t> strides;  // in elements; empty when contiguous (only torch views have them)
    const std::byte* data = nullptr;  // first element, inside a mapped file
    uint64_t nbytes = 0;           // bytes from `data` that the tensor may touch
    int file_index = 0;            // which of the checkpoint's files holds it

    int64_t elements() const;
    bool contiguous() const { return strides.empty(); }
};

class Checkpoint {
public:
    // Opens a file (.safetensors, .gguf, .bin/.pt/.pth) or a Hugging Face model folder.
    // Throws oxinfer::Error naming the file and the problem.
    static std::unique_ptr<Checkpoint> open(const std::filesystem::path& file_or_folder);

    ~Checkpoint();
    Checkpoint(const Checkpoint&) = delete;
    Checkpoint& operator=(const Checkpoint&) = delete;

    CheckpointFormat format() const { return format_; }
    const std::filesystem::path& path() const { return path_; }

    // "LlamaForCausalLM" from config.json, or "llama" from GGUF general.architecture; "" if unknown.
    std::string architecture() const;

    // GGUF: every key/value ({"general.architecture": "llama", ...}).
    // Folders: {"config": config.json, "generation_config": ..., "safetensors": {file: __metadata__}}.
    // A single safetensors file: {"safetensors": {file: __metadata__}}.
    const nlohmann::json& metadata() const { return metadata_; }
    // GGUF only: the stored type of each metadata key ("u32", "string", "array[string]", ...).
    const nlohmann::json& metadata_types() const { return metadata_types_; }

    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const std::vector<std::filesystem::path>& files() const { return files_; }
    const TensorInfo* find(std::string_view name) const;
    const TensorInfo& get(std::string_view name) const;  // throws naming the checkpoint

    // The tensor converted to float32 in row-major order (strided views gathered).
    std::vector<float> read_f32(const TensorInfo& tensor) const;

    struct Impl;

private:
    explicit Checkpoint(std::unique_ptr<Impl> impl);

    std::unique_ptr<Impl> impl_;
    CheckpointFormat format_;
    std::filesystem::path path_;
    nlohmann::json metadata_;
    nlohmann::json metadata_types_;
    std::vector<TensorInfo> tensors_;
    std::vector<std::filesystem::path> files_;
};

}  // namespace oxinfer
