#include "formats/gguf_writer.h"

#include <oxinfer/error.h>

#include <cstdio>
#include <cstring>
#include <fstream>

namespace oxinfer {
namespace {

constexpr uint64_t kAlignment = 32;
enum : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9 };

template <class T>
void put(std::string& out, T value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out.append(bytes, sizeof(T));
}

void put_string(std::string& out, const std::string& text) {
    put<uint64_t>(out, text.size());
    out += text;
}

uint64_t aligned(uint64_t offset) { return (offset + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

void GgufFileWriter::add_string(const std::string& key, const std::string& value) {
    put_string(metadata_, key);
    put<uint32_t>(metadata_, kString);
    put_string(metadata_, value);
    ++metadata_count_;
}

void GgufFileWriter::add_u32(const std::string& key, uint32_t value) {
    put_string(metadata_, key);
    put<uint32_t>(metadata_, kU32);
    put<uint32_t>(metadata_, value);
    ++metadata_count_;
}

void GgufFileWriter::add_f32(const std::string& key, float value) {
    put_string(metadata_, key);
    put<uint32_t>(metadata_, kF32);
    put<float>(metadata_, value);
    ++metadata_count_;
}

void GgufFileWriter::add_bool(const std::string& key, bool value) {
    put_string(metadata_, key);
    put<uint32_t>(metadata_, kBool);
    put<uint8_t>(metadata_, value ? 1 : 0);
    ++metadata_count_;
}

void GgufFileWriter::add_i32_array(const std::string& key, const std::vector<int32_t>& values) {
    put_string(metadata_, key);
    put<uint32_t>(metadata_, kArray);
    put<uint32_t>(metadata_, kI32);
    put<uint64_t>(metadata_, values.size());
    for (int32_t v : values) put<int32_t>(metadata_, v);
    ++metadata_count_;
}

void GgufFileWriter::add_bool_array(const std::string& key, const std::vector<bool>& values) {
    put_string(metadata_, key);
    put<uint32_t>(metadata_, kArray);
    put<uint32_t>(metadata_, kBool);
    put<uint64_t>(metadata_, values.size());
    for (bool v : values) put<uint8_t>(metadata_, v ? 1 : 0);
    ++metadata_count_;
}

void GgufFileWriter::add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape) {
    uint64_t elements = 1;
    for (int64_t d : shape) elements *= static_cast<uint64_t>(d);
    const auto bytes = dtype_bytes(dtype, elements);
    if (!bytes || shape.empty() || shape.back() % dtype_traits(dtype).block_elements != 0)
        throw Error("tensor '" + name + "'", "rows are not a whole number of " + std::string(dtype_name(dtype)) + " blocks");
    tensors_.push_back({name, dtype, shape, *bytes});
}

void GgufFileWriter::write(const std::filesystem::path& path, const std::function<void(size_t, std::byte*)>& fill) const {
    std::string header = "GGUF";
    put<uint32_t>(header, 3);
    put<uint64_t>(header, tensors_.size());
    put<uint64_t>(header, metadata_count_);
    header += metadata_;
    uint64_t offset = 0;
    for (const Tensor& t : tensors_) {
        put_string(header, t.name);
        put<uint32_t>(header, static_cast<uint32_t>(t.shape.size()));
        for (size_t i = t.shape.size(); i-- > 0;) put<uint64_t>(header, static_cast<uint64_t>(t.shape[i]));
        put<uint32_t>(header, *ggml_id(t.dtype));
        put<uint64_t>(header, offset);
        offset = aligned(offset + t.bytes);
    }
    header.resize(aligned(header.size()), '\0');

    const std::filesystem::path partial = path.string() + ".partial";
    {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        if (!out) throw Error(path.string(), "cannot create the file");
        out.write(header.data(), static_cast<std::streamsize>(header.size()));
        std::vector<std::byte> buffer;
        for (size_t i = 0; i < tensors_.size(); ++i) {
            buffer.assign(aligned(tensors_[i].bytes), std::byte{0});
            fill(i, buffer.data());
            out.write(reinterpret_cast<const char*>(buffer.data()), static_cast<std::streamsize>(buffer.size()));
        }
        out.flush();
        if (!out) {
            std::error_code ignored;
            std::filesystem::remove(partial, ignored);
            throw Error(path.string(), "write failed (disk full?)");
        }
    }
    std::filesystem::rename(partial, path);
}

}  // namespace oxinfer
