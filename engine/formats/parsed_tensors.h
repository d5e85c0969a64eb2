#pragma once
// What each format parser returns: tensors whose `data` points into the bytes it was given, and
// the file's metadata as JSON. Parsers take bytes, not files, so the fuzzers can call them.

#include <oxinfer/checkpoint.h>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace oxinfer {

struct ParsedTensors {
    std::vector<TensorInfo> tensors;
    nlohmann::json metadata = nlohmann::json::object();
    nlohmann::json metadata_types = nlohmann::json::object();  // GGUF only
};

// Checks that `tensor` (shape, dtype, strides, data, nbytes set) lies inside `file` and that its
// element count and byte size do not overflow; throws Error(subject, ...) naming the tensor.
void validate_tensor_bounds(const TensorInfo& tensor, std::span<const std::byte> file, const std::string& subject);

// Each throws oxinfer::Error(subject, problem) on malformed input; `subject` is usually the path.
ParsedTensors parse_safetensors(std::span<const std::byte> file, const std::string& subject);
ParsedTensors parse_gguf(std::span<const std::byte> file, const std::string& subject);
ParsedTensors parse_torch_zip(std::span<const std::byte> file, const std::string& subject);

}  // namespace oxinfer
