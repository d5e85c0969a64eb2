// safetensors: an 8-byte little-endian header length, a JSON header, then the raw tensor data.
// https://github.com/huggingface/safetensors (format description in its README).

#include "formats/byte_reader.h"
#include "formats/parsed_tensors.h"

#include <oxinfer/error.h>

#include <algorithm>
#include <limits>
#include <string>

namespace oxinfer {
namespace {

// The safetensors library refuses headers above 100 MB; so do we, before allocating anything.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

DType safetensors_dtype(const std::string& name, const std::string& subject, const std::string& tensor) {
    static const std::pair<const char*, DType> kNames[] = {
        {"F64", DType::F64},  {"F32", DType::F32},          {"F16", DType::F16},         {"BF16", DType::BF16},
        {"I64", DType::I64},  {"I32", DType::I32},          {"I16", DType::I16},         {"I8", DType::I8},
        {"U64", DType::U64},  {"U32", DType::U32},          {"U16", DType::U16},         {"U8", DType::U8},
        {"BOOL", DType::Bool}, {"F8_E4M3", DType::F8_E4M3}, {"F8_E5M2", DType::F8_E5M2},
    };
    for (const auto& [text, type] : kNames)
        if (name == text) return type;
    throw Error(subject, "tensor '" + tensor + "' has unknown dtype '" + name + "'");
}

uint64_t as_u64(const nlohmann::json& value, const std::string& subject, const std::string& what) {
    if (value.is_number_unsigned()) return value.get<uint64_t>();
    if (value.is_number_integer() && value.get<int64_t>() >= 0) return static_cast<uint64_t>(value.get<int64_t>());
    throw Error(subject, what + " is not a non-negative integer");
}

}  // namespace

ParsedTensors parse_safetensors(std::span<const std::byte> file, const std::string& subject) {
    ByteReader reader(file, subject);
    if (file.size() < 8) reader.fail("not a safetensors file: only " + std::to_string(file.size()) + " bytes");
    const auto header_bytes = reader.read<uint64_t>();
    if (header_bytes > kMaxHeaderBytes)
        reader.fail("safetensors header length " + std::to_string(header_bytes) + " exceeds the 100 MB limit");
    if (header_bytes > reader.remaining())
        reader.fail("safetensors header length " + std::to_string(header_bytes) + " is larger than the file (" +
                    std::to_string(file.size()) + " bytes): truncated or not a safetensors file");
    const std::string_view header_text = reader.take_string(header_bytes);
    const auto data = file.subspan(reader.offset());

    nlohmann::json header;
    try {
        header = nlohmann::json::parse(header_text);
    } catch (const nlohmann::json::exception& e) {
        reader.fail(std::string("safetensors header is not valid JSON: ") + e.what());
    }
    if (!header.is_object()) reader.fail("safetensors header is not a JSON object");

    ParsedTensors out;
    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") {
            if (!entry.is_object()) reader.fail("__metadata__ is not a JSON object");
            out.metadata = entry;
            continue;
        }
        const std::string what = "tensor '" + name + "'";
        if (!entry.is_object()) reader.fail(what + " entry is not a JSON object");
        const auto dtype = entry.find("dtype");
        const auto shape = entry.find("shape");
        const auto offsets = entry.find("data_offsets");
        if (dtype == entry.end() || !dtype->is_string()) reader.fail(what + " has no dtype string");
        if (shape == entry.end() || !shape->is_array()) reader.fail(what + " has no shape array");
        if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2)
            reader.fail(what + " has no data_offsets pair");

        TensorInfo tensor;
        tensor.name = name;
        tensor.dtype = safetensors_dtype(dtype->get<std::string>(), subject, name);
        for (const auto& dim : *shape) {
            const uint64_t value = as_u64(dim, subject, what + " shape entry");
            if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) reader.fail(what + " has a dimension too large");
            tensor.shape.push_back(static_cast<int64_t>(value));
        }
        const uint64_t begin = as_u64((*offsets)[0], subject, what + " data_offsets[0]");
        const uint64_t end = as_u64((*offsets)[1], subject, what + " data_offsets[1]");
        if (begin > end) reader.fail(what + " has data_offsets that end before they begin");
        if (end > data.size())
            reader.fail(what + " data (bytes " + std::to_string(begin) + ".." + std::to_string(end) +
                        " of the data section) ends past the end of the file: truncated?");
        tensor.data = data.data() + begin;
        tensor.nbytes = end - begin;
        validate_tensor_bounds(tensor, file, subject);
        out.tensors.push_back(std::move(tensor));
    }
    // The header is a JSON object (unordered); list tensors in file order, as the data lies.
    std::stable_sort(out.tensors.begin(), out.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) { return a.data < b.data; });
    return out;
}

}  // namespace oxinfer
