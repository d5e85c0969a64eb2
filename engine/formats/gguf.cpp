// GGUF (versions 2 and 3): header, typed key/value metadata, tensor infos, aligned tensor data.
// Layout as documented in ggml's docs/gguf.md.

#include "formats/byte_reader.h"
#include "formats/parsed_tensors.h"

#include <oxinfer/error.h>

#include <limits>
#include <string>

namespace oxinfer {
namespace {

enum GgufType : uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
    String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};

constexpr uint32_t kMaxDims = 4;            // GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 8;         // real files nest at most once
constexpr uint64_t kDefaultAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT

const char* type_name(uint32_t type) {
    static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
    return type <= F64 ? names[type] : "unknown";
}

// Smallest encoded size of one value of the type: bounds array counts before any allocation.
uint64_t min_encoded_size(uint32_t type) {
    switch (type) {
        case U8: case I8: case Bool: return 1;
        case U16: case I16: return 2;
        case U32: case I32: case F32: return 4;
        case U64: case I64: case F64: case String: return 8;
        case Array: return 12;
        default: return 1;
    }
}

class GgufParser {
    struct RawInfo {
        TensorInfo tensor;
        uint64_t offset = 0;
    };

public:
    GgufParser(std::span<const std::byte> file, const std::string& subject) : reader_(file, subject), file_(file) {}

    ParsedTensors parse() {
        if (file_.size() < 4 || reader_.take_string(4) != "GGUF") reader_.fail("not a GGUF file (bad magic)");
        const auto version = reader_.read<uint32_t>();
        if (version == 1) reader_.fail("GGUF version 1 is not supported (re-convert the model with a current llama.cpp)");
        if (version != 2 && version != 3) reader_.fail("unsupported GGUF version " + std::to_string(version));
        const auto tensor_count = reader_.read<uint64_t>();
        const auto kv_count = reader_.read<uint64_t>();
        // Each key/value takes at least 12 bytes and each tensor info at least 24: a count that
        // cannot fit in the file is corrupt.
        if (kv_count > reader_.remaining() / 12) reader_.fail("metadata count " + std::to_string(kv_count) + " cannot fit in the file (truncated or corrupt)");
        if (tensor_count > reader_.remaining() / 24) reader_.fail("tensor count " + std::to_string(tensor_count) + " cannot fit in the file (truncated or corrupt)");

        ParsedTensors out;
        out.metadata["GGUF.version"] = version;
        out.metadata_types["GGUF.version"] = "u32";
        for (uint64_t i = 0; i < kv_count; ++i) {
            std::string key = read_string();
            const auto type = reader_.read<uint32_t>();
            std::string stored_type;
            nlohmann::json value = read_value(type, 0, stored_type);
            if (out.metadata.contains(key)) reader_.fail("duplicate metadata key '" + key + "'");
            out.metadata[key] = std::move(value);
            out.metadata_types[key] = stored_type;
        }

        uint64_t alignment = kDefaultAlignment;
        if (auto it = out.metadata.find("general.alignment"); it != out.metadata.end()) {
            if (out.metadata_types["general.alignment"] != "u32") reader_.fail("general.alignment is not a u32");
            alignment = it->get<uint64_t>();
            if (alignment == 0 || (alignment & (alignment - 1)) != 0)
                reader_.fail("general.alignment " + std::to_string(alignment) + " is not a power of two");
        }

        std::vector<RawInfo> infos;
        infos.reserve(tensor_count);
        for (uint64_t i = 0; i < tensor_count; ++i) infos.push_back(read_tensor_info());

        const uint64_t data_start = (reader_.offset() + alignment - 1) / alignment * alignment;
        if (tensor_count > 0 && data_start > file_.size())
            reader_.fail("tensor data section starts at " + std::to_string(data_start) + ", past the end of the file (truncated?)");

        for (auto& [tensor, offset] : infos) {
            const std::string what = "tensor '" + tensor.name + "'";
            if (offset % alignment != 0)
                reader_.fail(what + " data offset " + std::to_string(offset) + " is not a multiple of the alignment " + std::to_string(alignment));
            uint64_t elements = 1;
            for (int64_t dim : tensor.shape) {
                if (dim != 0 && elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(dim))
                    reader_.fail(what + " has a shape whose element count overflows");
                elements *= static_cast<uint64_t>(dim);
            }
            const auto bytes = dtype_bytes(tensor.dtype, elements);
            if (!bytes) reader_.fail(what + " has " + std::to_string(elements) + " values, not a whole number of " + std::string(dtype_name(tensor.dtype)) + " blocks");
            const uint64_t available = file_.size() > data_start ? file_.size() - data_start : 0;
            if (offset > available || *bytes > available - offset)
                reader_.fail(what + " data (" + std::to_string(*bytes) + " bytes at offset " + std::to_string(data_start + offset) +
                             ") ends past the end of the file (" + std::to_string(file_.size()) + " bytes): truncated?");
            tensor.data = file_.data() + data_start + offset;
            tensor.nbytes = *bytes;
            validate_tensor_bounds(tensor, file_, reader_.subject());
            out.tensors.push_back(std::move(tensor));
        }
        return out;
    }

private:
    std::string read_string() {
        const auto length = reader_.read<uint64_t>();
        if (length > reader_.remaining())
            reader_.fail("string of " + std::to_string(length) + " bytes at offset " + std::to_string(reader_.offset() - 8) + " runs past the end of the file");
        return std::string(reader_.take_string(length));
    }

    nlohmann::json read_value(uint32_t type, int depth, std::string& stored_type) {
        stored_type = type_name(type);
        switch (type) {
            case U8: return reader_.read<uint8_t>();
            case I8: return reader_.read<int8_t>();
            case U16: return reader_.read<uint16_t>();
            case I16: return reader_.read<int16_t>();
            case U32: return reader_.read<uint32_t>();
            case I32: return reader_.read<int32_t>();
            case U64: return reader_.read<uint64_t>();
            case I64: return reader_.read<int64_t>();
            case F32: return reader_.read<float>();
            case F64: return reader_.read<double>();
            case Bool: {
                const auto byte = reader_.read<uint8_t>();
                if (byte > 1) reader_.fail("bool metadata value " + std::to_string(byte) + " is neither 0 nor 1");
                return byte == 1;
            }
            case String: return read_string();
            case Array: {
                if (depth >= kMaxArrayNesting) reader_.fail("metadata arrays nested deeper than " + std::to_string(kMaxArrayNesting));
                const auto element_type = reader_.read<uint32_t>();
                const auto count = reader_.read<uint64_t>();
                if (element_type > F64) reader_.fail("unknown metadata array element type " + std::to_string(element_type));
                if (count > reader_.remaining() / min_encoded_size(element_type))
                    reader_.fail("metadata array of " + std::to_string(count) + " " + type_name(element_type) + " values cannot fit in the file");
                nlohmann::json array = nlohmann::json::array();
                array.get_ref<nlohmann::json::array_t&>().reserve(count);
                std::string element_stored = type_name(element_type);
                for (uint64_t i = 0; i < count; ++i) array.push_back(read_value(element_type, depth + 1, element_stored));
                stored_type = "array[" + element_stored + "]";
                return array;
            }
            default:
                reader_.fail("unknown metadata value type " + std::to_string(type) + " at offset " + std::to_string(reader_.offset() - 4));
        }
    }

    RawInfo read_tensor_info() {
        RawInfo info{};
        info.tensor.name = read_string();
        const std::string what = "tensor '" + info.tensor.name + "'";
        const auto dims = reader_.read<uint32_t>();
        if (dims > kMaxDims) reader_.fail(what + " has " + std::to_string(dims) + " dimensions (at most 4)");
        std::vector<int64_t> ne(dims);
        for (auto& d : ne) {
            const auto value = reader_.read<uint64_t>();
            if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) reader_.fail(what + " has a dimension too large");
            d = static_cast<int64_t>(value);
        }
        const auto type_id = reader_.read<uint32_t>();
        const auto dtype = dtype_from_ggml_id(type_id);
        if (!dtype) reader_.fail(what + " has unsupported tensor type " + std::to_string(type_id));
        info.tensor.dtype = *dtype;
        info.offset = reader_.read<uint64_t>();
        // ggml lists dimensions innermost first; we keep numpy's row-major order.
        info.tensor.shape.assign(ne.rbegin(), ne.rend());
        return info;
    }

    ByteReader reader_;
    std::span<const std::byte> file_;
};

}  // namespace

ParsedTensors parse_gguf(std::span<const std::byte> file, const std::string& subject) { return GgufParser(file, subject).parse(); }

}  // namespace oxinfer
