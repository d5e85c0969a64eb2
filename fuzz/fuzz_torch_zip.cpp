// libFuzzer target for the torch.save zip parser (zip archive, pickle machine, tensor rebuild).
// Any exception other than oxinfer::Error, any crash and any sanitizer report is a finding. On
// success every byte of every tensor is read and its first few thousand elements gathered through
// its strides (as Checkpoint::read_f32 does), so a view reaching outside the input trips ASan, and
// one reaching past the `nbytes` the parser promised aborts.
//
// The parser checks data.pkl's CRC-32, which almost every mutation of the pickle breaks. So each
// input is parsed twice: as it is, and (when its zip structure opens) with every central
// directory CRC rewritten to match its entry's data, which lets mutations reach the pickle machine.

#include "formats/parsed_tensors.h"
#include "formats/zip_archive.h"

#include <oxinfer/dtype.h>
#include <oxinfer/error.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

constexpr int64_t kMaxConverted = 4096;
volatile uint32_t g_sink;

[[noreturn]] void broken_promise(const oxinfer::TensorInfo& tensor, const char* what, int64_t value) {
    std::fprintf(stderr, "tensor '%s': %s %lld is outside its nbytes %llu\n", tensor.name.c_str(), what,
                 static_cast<long long>(value), static_cast<unsigned long long>(tensor.nbytes));
    std::abort();
}

void touch(const oxinfer::TensorInfo& tensor) {
    uint32_t sum = 0;
    for (uint64_t i = 0; i < tensor.nbytes; ++i) sum += static_cast<uint8_t>(tensor.data[i]);
    const auto& traits = oxinfer::dtype_traits(tensor.dtype);
    const int64_t count = std::min(tensor.elements(), kMaxConverted);
    if (count <= 0 || !oxinfer::can_convert_to_f32(tensor.dtype) || traits.block_elements != 1) {
        g_sink = sum;
        return;
    }
    const auto element_bytes = traits.block_bytes;
    std::vector<float> values(static_cast<size_t>(count));
    if (tensor.contiguous()) {
        if (static_cast<uint64_t>(count * element_bytes) > tensor.nbytes) broken_promise(tensor, "byte count", count * element_bytes);
        oxinfer::convert_to_f32(tensor.dtype, tensor.data, values.data(), count);
    } else {
        if (tensor.strides.size() != tensor.shape.size()) broken_promise(tensor, "stride count", static_cast<int64_t>(tensor.strides.size()));
        const size_t rank = tensor.shape.size();
        std::vector<int64_t> position(rank, 0);
        for (int64_t i = 0; i < count; ++i) {
            int64_t offset = 0;
            for (size_t d = 0; d < rank; ++d) offset += position[d] * tensor.strides[d];
            if (offset < 0 || static_cast<uint64_t>((offset + 1) * element_bytes) > tensor.nbytes) broken_promise(tensor, "element offset", offset);
            oxinfer::convert_to_f32(tensor.dtype, tensor.data + offset * element_bytes, &values[static_cast<size_t>(i)], 1);
            for (size_t d = rank; d-- > 0;) {
                if (++position[d] < tensor.shape[d]) break;
                position[d] = 0;
            }
        }
    }
    for (float v : values) sum += static_cast<uint32_t>(v == v);
    g_sink = sum;
}

// The input with each central directory record's CRC-32 set to its entry's actual CRC, or empty
// when the archive does not open or nothing changes. Deterministic, so crash inputs reproduce.
std::vector<uint8_t> with_repaired_crcs(const uint8_t* data, size_t size, const std::string& subject) {
    std::unordered_map<std::string_view, uint32_t> crcs;
    try {
        const oxinfer::ZipArchive zip(std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size), subject);
        for (const auto& entry : zip.entries())
            if (entry.crc32 != oxinfer::crc32(entry.data)) crcs[entry.name] = oxinfer::crc32(entry.data);
    } catch (const oxinfer::Error&) {
        return {};
    }
    if (crcs.empty()) return {};
    std::vector<uint8_t> out(data, data + size);
    constexpr size_t kFixedHeader = 46;  // central directory file header before the name
    for (size_t at = 0; at + kFixedHeader <= size; ++at) {
        if (std::memcmp(data + at, "PK\x01\x02", 4) != 0) continue;
        const size_t name_length = data[at + 28] | (size_t{data[at + 29]} << 8);
        if (at + kFixedHeader + name_length > size) continue;
        const std::string_view name(reinterpret_cast<const char*>(data + at + kFixedHeader), name_length);
        if (const auto it = crcs.find(name); it != crcs.end()) {
            const uint32_t crc = it->second;  // little-endian, at offset 16 of the record
            for (int i = 0; i < 4; ++i) out[at + 16 + static_cast<size_t>(i)] = static_cast<uint8_t>(crc >> (8 * i));
        }
    }
    return out;
}

void parse_and_touch(std::span<const std::byte> file, const std::string& subject) {
    try {
        const oxinfer::ParsedTensors parsed = oxinfer::parse_torch_zip(file, subject);
        for (const auto& tensor : parsed.tensors) touch(tensor);
        g_sink = static_cast<uint32_t>(parsed.metadata.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size());
    } catch (const oxinfer::Error&) {
        // malformed input, reported properly
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string subject = "fuzz.pt";
    parse_and_touch(std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size), subject);
    const std::vector<uint8_t> repaired = with_repaired_crcs(data, size, subject);
    if (!repaired.empty()) parse_and_touch(std::as_bytes(std::span<const uint8_t>(repaired)), subject);
    return 0;
}
