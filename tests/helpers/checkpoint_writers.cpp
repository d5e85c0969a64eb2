#include "checkpoint_writers.h"

#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

namespace oxinfer::test {
namespace {

template <class T>
void append(std::vector<std::byte>& out, T value) {
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    out.insert(out.end(), p, p + sizeof(T));
}

void append_string(std::vector<std::byte>& out, const std::string& text) {
    append<uint64_t>(out, text.size());
    const auto* p = reinterpret_cast<const std::byte*>(text.data());
    out.insert(out.end(), p, p + text.size());
}

template <class T>
std::vector<std::byte> encode(T value) {
    std::vector<std::byte> out;
    append(out, value);
    return out;
}

}  // namespace

TestTensor f32_tensor(std::string name, std::vector<int64_t> shape, const std::vector<float>& values) {
    std::vector<std::byte> bytes(values.size() * 4);
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    return {std::move(name), DType::F32, std::move(shape), std::move(bytes)};
}

TestTensor raw_tensor(std::string name, DType dtype, std::vector<int64_t> shape, std::vector<std::byte> bytes) {
    return {std::move(name), dtype, std::move(shape), std::move(bytes)};
}

std::vector<float> random_floats(size_t count, uint32_t seed) {
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> out(count);
    for (float& v : out) v = dist(engine);
    return out;
}

std::string safetensors_dtype_name(DType dtype) {
    switch (dtype) {
        case DType::F64: return "F64";
        case DType::F32: return "F32";
        case DType::F16: return "F16";
        case DType::BF16: return "BF16";
        case DType::I64: return "I64";
        case DType::I32: return "I32";
        case DType::I16: return "I16";
        case DType::I8: return "I8";
        case DType::U64: return "U64";
        case DType::U32: return "U32";
        case DType::U16: return "U16";
        case DType::U8: return "U8";
        case DType::Bool: return "BOOL";
        case DType::F8_E4M3: return "F8_E4M3";
        case DType::F8_E5M2: return "F8_E5M2";
        default: throw std::invalid_argument("no safetensors name for this dtype");
    }
}

std::vector<std::byte> safetensors_bytes(const std::vector<TestTensor>& tensors, const nlohmann::json& metadata) {
    nlohmann::json header = nlohmann::json::object();
    if (!metadata.is_null()) header["__metadata__"] = metadata;
    uint64_t offset = 0;
    for (const TestTensor& tensor : tensors) {
        header[tensor.name] = {{"dtype", safetensors_dtype_name(tensor.dtype)},
                               {"shape", tensor.shape},
                               {"data_offsets", {offset, offset + tensor.bytes.size()}}};
        offset += tensor.bytes.size();
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');  // the reference writer pads the header to 8 bytes
    std::vector<std::byte> out;
    append<uint64_t>(out, text.size());
    const auto* p = reinterpret_cast<const std::byte*>(text.data());
    out.insert(out.end(), p, p + text.size());
    for (const TestTensor& tensor : tensors) out.insert(out.end(), tensor.bytes.begin(), tensor.bytes.end());
    return out;
}

void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path.string());
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(chars.size());
    if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
    return out;
}

void write_hf_folder(const std::filesystem::path& folder, const nlohmann::json& config, const std::vector<TestTensor>& tensors, int shards) {
    std::filesystem::create_directories(folder);
    if (!config.is_null()) {
        std::ofstream(folder / "config.json") << config.dump(2);
    }
    if (shards <= 1) {
        write_bytes(folder / "model.safetensors", safetensors_bytes(tensors));
        return;
    }
    nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
    uint64_t total = 0;
    for (int shard = 0; shard < shards; ++shard) {
        char name[64];
        std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", shard + 1, shards);
        std::vector<TestTensor> part;
        for (size_t i = static_cast<size_t>(shard); i < tensors.size(); i += static_cast<size_t>(shards)) {
            part.push_back(tensors[i]);
            index["weight_map"][tensors[i].name] = name;
            total += tensors[i].bytes.size();
        }
        write_bytes(folder / name, safetensors_bytes(part));
    }
    index["metadata"]["total_size"] = total;
    std::ofstream(folder / "model.safetensors.index.json") << index.dump(2);
}

void GgufWriter::add_u8(const std::string& key, uint8_t value) { entries_.push_back({key, U8, encode(value)}); }
void GgufWriter::add_i8(const std::string& key, int8_t value) { entries_.push_back({key, I8, encode(value)}); }
void GgufWriter::add_u16(const std::string& key, uint16_t value) { entries_.push_back({key, U16, encode(value)}); }
void GgufWriter::add_i16(const std::string& key, int16_t value) { entries_.push_back({key, I16, encode(value)}); }
void GgufWriter::add_u32(const std::string& key, uint32_t value) { entries_.push_back({key, U32, encode(value)}); }
void GgufWriter::add_i32(const std::string& key, int32_t value) { entries_.push_back({key, I32, encode(value)}); }
void GgufWriter::add_u64(const std::string& key, uint64_t value) { entries_.push_back({key, U64, encode(value)}); }
void GgufWriter::add_i64(const std::string& key, int64_t value) { entries_.push_back({key, I64, encode(value)}); }
void GgufWriter::add_f32(const std::string& key, float value) { entries_.push_back({key, F32, encode(value)}); }
void GgufWriter::add_f64(const std::string& key, double value) { entries_.push_back({key, F64, encode(value)}); }
void GgufWriter::add_bool(const std::string& key, bool value) { entries_.push_back({key, Bool, encode<uint8_t>(value ? 1 : 0)}); }

void GgufWriter::add_string(const std::string& key, const std::string& value) {
    std::vector<std::byte> out;
    append_string(out, value);
    entries_.push_back({key, String, std::move(out)});
}

void GgufWriter::add_strings(const std::string& key, const std::vector<std::string>& values) {
    std::vector<std::byte> out;
    append<uint32_t>(out, String);
    append<uint64_t>(out, values.size());
    for (const auto& value : values) append_string(out, value);
    entries_.push_back({key, Array, std::move(out)});
}

void GgufWriter::add_i32s(const std::string& key, const std::vector<int32_t>& values) {
    std::vector<std::byte> out;
    append<uint32_t>(out, I32);
    append<uint64_t>(out, values.size());
    for (int32_t value : values) append(out, value);
    entries_.push_back({key, Array, std::move(out)});
}

void GgufWriter::add_f32s(const std::string& key, const std::vector<float>& values) {
    std::vector<std::byte> out;
    append<uint32_t>(out, F32);
    append<uint64_t>(out, values.size());
    for (float value : values) append(out, value);
    entries_.push_back({key, Array, std::move(out)});
}

void GgufWriter::add_nested_strings(const std::string& key, const std::vector<std::vector<std::string>>& values) {
    std::vector<std::byte> out;
    append<uint32_t>(out, Array);
    append<uint64_t>(out, values.size());
    for (const auto& inner : values) {
        append<uint32_t>(out, String);
        append<uint64_t>(out, inner.size());
        for (const auto& value : inner) append_string(out, value);
    }
    entries_.push_back({key, Array, std::move(out)});
}

void GgufWriter::add_raw(const std::string& key, uint32_t type, std::vector<std::byte> encoded) {
    entries_.push_back({key, type, std::move(encoded)});
}

void GgufWriter::add_tensor(const TestTensor& tensor) { tensors_.push_back(tensor); }

uint64_t GgufWriter::aligned(uint64_t offset) const { return (offset + alignment_ - 1) / alignment_ * alignment_; }

void GgufWriter::set_alignment(uint32_t alignment) {
    alignment_ = alignment;
    add_u32("general.alignment", alignment);
}

std::vector<std::byte> GgufWriter::header_bytes() const {
    std::vector<std::byte> out;
    const char magic[4] = {'G', 'G', 'U', 'F'};
    const auto* m = reinterpret_cast<const std::byte*>(magic);
    out.insert(out.end(), m, m + 4);
    append<uint32_t>(out, version_);
    append<uint64_t>(out, tensors_.size());
    append<uint64_t>(out, entries_.size());
    for (const Entry& entry : entries_) {
        append_string(out, entry.key);
        append<uint32_t>(out, entry.type);
        out.insert(out.end(), entry.encoded.begin(), entry.encoded.end());
    }
    uint64_t offset = 0;
    for (const TestTensor& tensor : tensors_) {
        append_string(out, tensor.name);
        append<uint32_t>(out, static_cast<uint32_t>(tensor.shape.size()));
        uint64_t elements = 1;
        for (auto it = tensor.shape.rbegin(); it != tensor.shape.rend(); ++it) {
            append<uint64_t>(out, static_cast<uint64_t>(*it));
            elements *= static_cast<uint64_t>(*it);
        }
        append<uint32_t>(out, *ggml_id(tensor.dtype));
        append<uint64_t>(out, offset);
        offset = aligned(offset + dtype_bytes(tensor.dtype, elements).value_or(tensor.bytes.size()));
    }
    out.resize(aligned(out.size()));
    return out;
}

std::vector<std::byte> GgufWriter::bytes() const {
    std::vector<std::byte> out = header_bytes();
    for (const TestTensor& tensor : tensors_) {
        out.insert(out.end(), tensor.bytes.begin(), tensor.bytes.end());
        out.resize(aligned(out.size()));
    }
    return out;
}

void GgufWriter::write(const std::filesystem::path& path) const { write_bytes(path, bytes()); }

}  // namespace oxinfer::test
