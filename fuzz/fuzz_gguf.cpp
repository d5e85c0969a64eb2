// libFuzzer target for the GGUF parser. Any exception other than oxinfer::Error, any
// crash and any sanitizer report is a finding. On success every byte of every tensor is read and
// the first few thousand values converted, so a data pointer outside the input trips ASan.

#include "formats/parsed_tensors.h"

#include <oxinfer/dtype.h>
#include <oxinfer/error.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

namespace {

constexpr int64_t kMaxConverted = 4096;  // a multiple of every block size (32, 256)
volatile uint32_t g_sink;

void touch(const oxinfer::TensorInfo& tensor) {
    uint32_t sum = 0;
    for (uint64_t i = 0; i < tensor.nbytes; ++i) sum += static_cast<uint8_t>(tensor.data[i]);
    if (!oxinfer::can_convert_to_f32(tensor.dtype)) {
        g_sink = sum;
        return;
    }
    const int64_t count = std::min(tensor.elements(), kMaxConverted);
    if (count > 0) {
        const auto& traits = oxinfer::dtype_traits(tensor.dtype);
        const auto bytes = static_cast<uint64_t>(count / traits.block_elements * traits.block_bytes);
        if (count % traits.block_elements != 0 || bytes > tensor.nbytes) {
            std::fprintf(stderr, "tensor '%s': %lld values need %llu bytes, but nbytes is %llu\n", tensor.name.c_str(),
                         static_cast<long long>(count), static_cast<unsigned long long>(bytes),
                         static_cast<unsigned long long>(tensor.nbytes));
            std::abort();
        }
        std::vector<float> values(static_cast<size_t>(count));
        oxinfer::convert_to_f32(tensor.dtype, tensor.data, values.data(), count);
        for (float v : values) sum += static_cast<uint32_t>(v == v);
    }
    g_sink = sum;
}

// As `oxinfer inspect` prints metadata: invalid UTF-8 in a string is replaced, not an error.
std::string dump(const nlohmann::json& value) { return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string subject = "fuzz.gguf";
    const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
    try {
        const oxinfer::ParsedTensors parsed = oxinfer::parse_gguf(file, subject);
        for (const auto& tensor : parsed.tensors) touch(tensor);
        g_sink = static_cast<uint32_t>(dump(parsed.metadata).size() + dump(parsed.metadata_types).size());
    } catch (const oxinfer::Error&) {
        // malformed input, reported properly
    }
    return 0;
}
