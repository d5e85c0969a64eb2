#pragma once
// Writes GGUF v3 files: typed metadata, then tensors streamed one at a time (a checkpoint of
// many GB is never held in memory). The file appears only when complete: it is written beside
// the target and renamed over it.

#include <oxinfer/dtype.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace oxinfer {

class GgufFileWriter {
public:
    void add_string(const std::string& key, const std::string& value);
    void add_u32(const std::string& key, uint32_t value);
    void add_f32(const std::string& key, float value);
    void add_bool(const std::string& key, bool value);
    void add_i32_array(const std::string& key, const std::vector<int32_t>& values);
    void add_bool_array(const std::string& key, const std::vector<bool>& values);
    // `shape` row-major (numpy order); stored reversed as GGUF dimensions.
    void add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape);

    // `fill(index, out)` writes the bytes of tensor `index` (dtype_bytes of its elements).
    void write(const std::filesystem::path& path, const std::function<void(size_t, std::byte*)>& fill) const;

private:
    struct Tensor {
        std::string name;
        DType dtype;
        std::vector<int64_t> shape;
        uint64_t bytes;
    };
    std::string metadata_;  // encoded key/value pairs
    uint64_t metadata_count_ = 0;
    std::vector<Tensor> tensors_;
};

}  // namespace oxinfer
