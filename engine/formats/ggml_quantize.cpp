#include "formats/ggml_quantize.h"

#include <oxinfer/error.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace oxinfer {
namespace {

void put_half(std::byte* p, float value) {
    const uint16_t bits = f32_to_f16(value);
    std::memcpy(p, &bits, 2);
}

// ggml's quantize_row_q8_0_ref: 34-byte blocks of a half scale and 32 signed bytes.
void q8_0_block(const float* x, std::byte* out) {
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(out, d);
    for (int i = 0; i < 32; ++i) out[2 + i] = static_cast<std::byte>(static_cast<int8_t>(std::lround(x[i] * id)));
}

// ggml's quantize_row_q4_0_ref: the value of largest magnitude (with its sign) maps to -8.
void q4_0_block(const float* x, std::byte* out) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < 32; ++i)
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(out, d);
    for (int i = 0; i < 16; ++i) {
        const auto lo = static_cast<uint8_t>(std::min(15, static_cast<int>(x[i] * id + 8.5f)));
        const auto hi = static_cast<uint8_t>(std::min(15, static_cast<int>(x[i + 16] * id + 8.5f)));
        out[2 + i] = static_cast<std::byte>(lo | (hi << 4));
    }
}

// Q4_K: 144-byte blocks of 256 values: half d, half dmin, 12 bytes of packed 6-bit sub-block
// scales and mins, 128 bytes of nibbles (each 32-byte group holds sub-block 2g in its low nibbles
// and 2g+1 in its high nibbles). A value decodes as d·sc·q - dmin·m.
void q4_k_block(const float* x, std::byte* out) {
    float scales[8], mins[8];
    for (int j = 0; j < 8; ++j) {
        const float* sub = x + 32 * j;
        const float lo = std::min(0.0f, *std::min_element(sub, sub + 32));
        const float hi = *std::max_element(sub, sub + 32);
        scales[j] = (hi - lo) / 15.0f;
        mins[j] = -lo;
    }
    const float max_scale = *std::max_element(scales, scales + 8);
    const float max_min = *std::max_element(mins, mins + 8);
    // The decoder multiplies by the stored (rounded) halves, so codes are chosen against those.
    const float d = f16_to_f32(f32_to_f16(max_scale / 63.0f));
    const float dmin = f16_to_f32(f32_to_f16(max_min / 63.0f));
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) {
        sc[j] = d > 0.0f ? static_cast<uint8_t>(std::clamp<long>(std::lround(scales[j] / d), 0, 63)) : 0;
        m[j] = dmin > 0.0f ? static_cast<uint8_t>(std::clamp<long>(std::lround(mins[j] / dmin), 0, 63)) : 0;
    }
    put_half(out, d);
    put_half(out + 2, dmin);
    auto* packed = reinterpret_cast<uint8_t*>(out + 4);
    for (int j = 0; j < 4; ++j) {
        packed[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        packed[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        packed[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
    }
    auto* qs = reinterpret_cast<uint8_t*>(out + 16);
    for (int j = 0; j < 8; ++j) {
        const float step = d * sc[j];
        const float offset = dmin * m[j];
        for (int i = 0; i < 32; ++i) {
            const int q = step > 0.0f ? static_cast<int>(std::clamp<long>(std::lround((x[32 * j + i] + offset) / step), 0, 15)) : 0;
            uint8_t& byte = qs[32 * (j / 2) + i];
            byte = (j % 2 == 0) ? static_cast<uint8_t>((byte & 0xF0) | q) : static_cast<uint8_t>((byte & 0x0F) | (q << 4));
        }
    }
}

}  // namespace

bool can_quantize(DType type) {
    return type == DType::F32 || type == DType::F16 || type == DType::BF16 || type == DType::Q8_0 || type == DType::Q4_0 ||
           type == DType::Q4_K;
}

void quantize_row(DType type, const float* src, std::byte* dst, int64_t count) {
    if (!can_quantize(type)) throw Error(std::string(dtype_name(type)), "quantisation to this type is not supported (f32, f16, bf16, q8_0, q4_0, q4_k are)");
    const int64_t block = dtype_traits(type).block_elements;
    if (count % block != 0)
        throw Error(std::string(dtype_name(type)), "rows of " + std::to_string(count) + " values are not a whole number of " +
                                                       std::to_string(block) + "-value blocks");
    switch (type) {
        case DType::F32: std::memcpy(dst, src, static_cast<size_t>(count) * 4); break;
        case DType::F16:
            for (int64_t i = 0; i < count; ++i) put_half(dst + 2 * i, src[i]);
            break;
        case DType::BF16:
            for (int64_t i = 0; i < count; ++i) {
                const uint16_t bits = f32_to_bf16(src[i]);
                std::memcpy(dst + 2 * i, &bits, 2);
            }
            break;
        case DType::Q8_0:
            for (int64_t b = 0; b < count / 32; ++b) q8_0_block(src + 32 * b, dst + 34 * b);
            break;
        case DType::Q4_0:
            for (int64_t b = 0; b < count / 32; ++b) q4_0_block(src + 32 * b, dst + 18 * b);
            break;
        case DType::Q4_K:
            for (int64_t b = 0; b < count / 256; ++b) {
                std::memset(dst + 144 * b, 0, 144);
                q4_k_block(src + 256 * b, dst + 144 * b);
            }
            break;
        default: break;
    }
}

}  // namespace oxinfer
