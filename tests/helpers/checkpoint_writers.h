#pragma once
// Writers of real checkpoint files for tests: safetensors (single files and sharded folders with
// their index) and GGUF (typed metadata, any tensor type, chosen alignment). They follow the
// published format descriptions, not the engine's readers, and can also write broken files.

#include <oxinfer/dtype.h>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace oxinfer::test {

struct TestTensor {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;  // row-major
    std::vector<std::byte> bytes;
};

// A float32 tensor; `values` must match the shape.
TestTensor f32_tensor(std::string name, std::vector<int64_t> shape, const std::vector<float>& values);
// A tensor of any type from raw bytes.
TestTensor raw_tensor(std::string name, DType dtype, std::vector<int64_t> shape, std::vector<std::byte> bytes);
// Deterministic pseudo-random floats in [-1, 1).
std::vector<float> random_floats(size_t count, uint32_t seed);

std::string safetensors_dtype_name(DType dtype);  // "F32", "BF16", ...
std::vector<std::byte> safetensors_bytes(const std::vector<TestTensor>& tensors, const nlohmann::json& metadata = nullptr);

void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes);
std::vector<std::byte> read_bytes(const std::filesystem::path& path);

// A Hugging Face folder: config.json, and the tensors split over `shards` files with
// model.safetensors.index.json when shards > 1.
void write_hf_folder(const std::filesystem::path& folder, const nlohmann::json& config, const std::vector<TestTensor>& tensors, int shards = 1);

class GgufWriter {
public:
    enum Type : uint32_t { U8 = 0, I8, U16, I16, U32, I32, F32, Bool, String, Array, U64, I64, F64 };

    void add_u8(const std::string& key, uint8_t value);
    void add_i8(const std::string& key, int8_t value);
    void add_u16(const std::string& key, uint16_t value);
    void add_i16(const std::string& key, int16_t value);
    void add_u32(const std::string& key, uint32_t value);
    void add_i32(const std::string& key, int32_t value);
    void add_u64(const std::string& key, uint64_t value);
    void add_i64(const std::string& key, int64_t value);
    void add_f32(const std::string& key, float value);
    void add_f64(const std::string& key, double value);
    void add_bool(const std::string& key, bool value);
    void add_string(const std::string& key, const std::string& value);
    void add_strings(const std::string& key, const std::vector<std::string>& values);
    void add_i32s(const std::string& key, const std::vector<int32_t>& values);
    void add_f32s(const std::string& key, const std::vector<float>& values);
    // An array of arrays of strings (the format allows nesting; no real model uses it).
    void add_nested_strings(const std::string& key, const std::vector<std::vector<std::string>>& values);
    // Any encoded value, for malformed-file tests.
    void add_raw(const std::string& key, uint32_t type, std::vector<std::byte> encoded);

    void add_tensor(const TestTensor& tensor);
    void set_alignment(uint32_t alignment);  // also writes general.alignment
    void set_version(uint32_t version) { version_ = version; }

    std::vector<std::byte> bytes() const;
    // Everything before the tensor data; tensor sizes come from their shapes and types, so a test
    // can describe tensors of many GB and make the data a sparse hole with resize_file.
    std::vector<std::byte> header_bytes() const;
    void write(const std::filesystem::path& path) const;

private:
    uint64_t aligned(uint64_t offset) const;

    struct Entry {
        std::string key;
        uint32_t type;
        std::vector<std::byte> encoded;
    };
    std::vector<Entry> entries_;
    std::vector<TestTensor> tensors_;
    uint32_t alignment_ = 32;
    uint32_t version_ = 3;
};

}  // namespace oxinfer::test
