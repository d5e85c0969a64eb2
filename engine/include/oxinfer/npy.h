#pragma once
// NumPy .npy files (format version 1.0, little-endian float32, C order): how the CLI hands tensors
// and logits to scripts. Writing is atomic: a temporary file is renamed into place when complete.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace oxinfer {

void write_npy_f32(const std::filesystem::path& path, std::span<const int64_t> shape, std::span<const float> values);

struct NpyArray {
    std::vector<int64_t> shape;
    std::vector<float> values;
};
// Reads a little-endian float32 C-order .npy file; throws oxinfer::Error for anything else.
NpyArray read_npy_f32(const std::filesystem::path& path);

}  // namespace oxinfer
