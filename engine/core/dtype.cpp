#include <oxinfer/dtype.h>
#include <oxinfer/error.h>

#include "formats/ggml_blocks.h"

#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace oxinfer {
namespace {

struct Entry {
    DType type;
    DTypeTraits traits;
    int ggml_id;  // -1: not a ggml type
};

// Block sizes are ggml's (ggml-common.h block structs); ids are GGUF's tensor type numbers.
constexpr Entry kEntries[] = {
    {DType::F64, {"f64", 1, 8, false}, 28},
    {DType::F32, {"f32", 1, 4, false}, 0},
    {DType::F16, {"f16", 1, 2, false}, 1},
    {DType::BF16, {"bf16", 1, 2, false}, 30},
    {DType::F8_E4M3, {"f8_e4m3", 1, 1, false}, -1},
    {DType::F8_E5M2, {"f8_e5m2", 1, 1, false}, -1},
    {DType::I64, {"i64", 1, 8, false}, 27},
    {DType::I32, {"i32", 1, 4, false}, 26},
    {DType::I16, {"i16", 1, 2, false}, 25},
    {DType::I8, {"i8", 1, 1, false}, 24},
    {DType::U64, {"u64", 1, 8, false}, -1},
    {DType::U32, {"u32", 1, 4, false}, -1},
    {DType::U16, {"u16", 1, 2, false}, -1},
    {DType::U8, {"u8", 1, 1, false}, -1},
    {DType::Bool, {"bool", 1, 1, false}, -1},
    {DType::Q4_0, {"q4_0", 32, 18, true}, 2},
    {DType::Q4_1, {"q4_1", 32, 20, true}, 3},
    {DType::Q5_0, {"q5_0", 32, 22, true}, 6},
    {DType::Q5_1, {"q5_1", 32, 24, true}, 7},
    {DType::Q8_0, {"q8_0", 32, 34, true}, 8},
    {DType::Q8_1, {"q8_1", 32, 36, true}, 9},
    {DType::Q2_K, {"q2_k", 256, 84, true}, 10},
    {DType::Q3_K, {"q3_k", 256, 110, true}, 11},
    {DType::Q4_K, {"q4_k", 256, 144, true}, 12},
    {DType::Q5_K, {"q5_k", 256, 176, true}, 13},
    {DType::Q6_K, {"q6_k", 256, 210, true}, 14},
    {DType::Q8_K, {"q8_k", 256, 292, true}, 15},
    {DType::IQ2_XXS, {"iq2_xxs", 256, 66, true}, 16},
    {DType::IQ2_XS, {"iq2_xs", 256, 74, true}, 17},
    {DType::IQ2_S, {"iq2_s", 256, 82, true}, 22},
    {DType::IQ3_XXS, {"iq3_xxs", 256, 98, true}, 18},
    {DType::IQ3_S, {"iq3_s", 256, 110, true}, 21},
    {DType::IQ1_S, {"iq1_s", 256, 50, true}, 19},
    {DType::IQ1_M, {"iq1_m", 256, 56, true}, 29},
    {DType::IQ4_NL, {"iq4_nl", 32, 18, true}, 20},
    {DType::IQ4_XS, {"iq4_xs", 256, 136, true}, 23},
    {DType::TQ1_0, {"tq1_0", 256, 54, true}, 34},
    {DType::TQ2_0, {"tq2_0", 256, 66, true}, 35},
    {DType::MXFP4, {"mxfp4", 32, 17, true}, 39},
};

const Entry& entry(DType type) {
    for (const Entry& e : kEntries)
        if (e.type == type) return e;
    throw Error("dtype", "unknown type id " + std::to_string(static_cast<int>(type)));
}

// Float8 e4m3fn: bias 7, no infinities, S.1111.111 is NaN. e5m2: bias 15, IEEE-like.
float f8_to_f32(uint8_t bits, int mantissa_bits, int bias, bool has_infinity) {
    const int exponent_bits = 7 - mantissa_bits;
    const int max_exponent = (1 << exponent_bits) - 1;
    const bool negative = bits & 0x80;
    const int exponent = (bits >> mantissa_bits) & max_exponent;
    const int mantissa = bits & ((1 << mantissa_bits) - 1);
    float value;
    if (exponent == max_exponent && has_infinity) {
        value = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    } else if (exponent == max_exponent && !has_infinity && mantissa == (1 << mantissa_bits) - 1) {
        value = std::numeric_limits<float>::quiet_NaN();
    } else if (exponent == 0) {
        value = std::ldexp(static_cast<float>(mantissa), 1 - bias - mantissa_bits);
    } else {
        value = std::ldexp(static_cast<float>(mantissa | (1 << mantissa_bits)), exponent - bias - mantissa_bits);
    }
    return negative ? -value : value;
}

template <class T>
void widen(const void* src, float* dst, int64_t count) {
    const auto* bytes = static_cast<const unsigned char*>(src);
    for (int64_t i = 0; i < count; ++i) {
        T value;
        std::memcpy(&value, bytes + i * sizeof(T), sizeof(T));
        dst[i] = static_cast<float>(value);
    }
}

}  // namespace

const DTypeTraits& dtype_traits(DType type) { return entry(type).traits; }

std::optional<DType> dtype_from_name(std::string_view name) {
    std::string lower(name);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const Entry& e : kEntries)
        if (e.traits.name == lower) return e.type;
    return std::nullopt;
}

std::optional<DType> dtype_from_ggml_id(uint32_t id) {
    for (const Entry& e : kEntries)
        if (e.ggml_id >= 0 && static_cast<uint32_t>(e.ggml_id) == id) return e.type;
    return std::nullopt;
}

std::optional<uint32_t> ggml_id(DType type) {
    const int id = entry(type).ggml_id;
    if (id < 0) return std::nullopt;
    return static_cast<uint32_t>(id);
}

std::optional<uint64_t> dtype_bytes(DType type, uint64_t elements) {
    const DTypeTraits& t = dtype_traits(type);
    const auto block = static_cast<uint64_t>(t.block_elements);
    if (elements % block != 0) return std::nullopt;
    const uint64_t blocks = elements / block;
    const auto per_block = static_cast<uint64_t>(t.block_bytes);
    if (blocks > std::numeric_limits<uint64_t>::max() / per_block) return std::nullopt;
    return blocks * per_block;
}

bool can_convert_to_f32(DType type) { return !dtype_traits(type).quantized || ggml_blocks_supported(type); }

void convert_to_f32(DType type, const void* src, float* dst, int64_t count) {
    if (count <= 0) return;  // empty tensors may have null data
    const auto* bytes = static_cast<const unsigned char*>(src);
    switch (type) {
        case DType::F32: std::memcpy(dst, src, static_cast<size_t>(count) * 4); return;
        case DType::F64: widen<double>(src, dst, count); return;
        case DType::I64: widen<int64_t>(src, dst, count); return;
        case DType::I32: widen<int32_t>(src, dst, count); return;
        case DType::I16: widen<int16_t>(src, dst, count); return;
        case DType::I8: widen<int8_t>(src, dst, count); return;
        case DType::U64: widen<uint64_t>(src, dst, count); return;
        case DType::U32: widen<uint32_t>(src, dst, count); return;
        case DType::U16: widen<uint16_t>(src, dst, count); return;
        case DType::U8: widen<uint8_t>(src, dst, count); return;
        case DType::Bool:
            for (int64_t i = 0; i < count; ++i) dst[i] = bytes[i] ? 1.0f : 0.0f;
            return;
        case DType::F16:
        case DType::BF16:
            for (int64_t i = 0; i < count; ++i) {
                uint16_t bits;
                std::memcpy(&bits, bytes + 2 * i, 2);
                dst[i] = type == DType::F16 ? f16_to_f32(bits) : bf16_to_f32(bits);
            }
            return;
        case DType::F8_E4M3:
            for (int64_t i = 0; i < count; ++i) dst[i] = f8_to_f32(bytes[i], 3, 7, false);
            return;
        case DType::F8_E5M2:
            for (int64_t i = 0; i < count; ++i) dst[i] = f8_to_f32(bytes[i], 2, 15, true);
            return;
        default: break;
    }
    if (!ggml_blocks_supported(type))
        throw Error(std::string(dtype_name(type)), "unsupported tensor type: no dequantisation for it is implemented");
    dequantize_ggml_blocks(type, static_cast<const std::byte*>(src), dst, count);
}

float f16_to_f32(uint16_t bits) {
    const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    const uint32_t exponent = (bits >> 10) & 0x1fu;
    uint32_t mantissa = bits & 0x3ffu;
    uint32_t out;
    if (exponent == 0x1f) {
        out = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {
        out = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        out = sign;
    } else {  // subnormal half: normalise
        int shift = 0;
        while (!(mantissa & 0x400u)) {
            mantissa <<= 1;
            ++shift;
        }
        mantissa &= 0x3ffu;
        out = sign | (static_cast<uint32_t>(113 - shift) << 23) | (mantissa << 13);
    }
    return std::bit_cast<float>(out);
}

float bf16_to_f32(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t f32_to_bf16(float value) {
    const uint32_t bits = std::bit_cast<uint32_t>(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
    const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>((bits + rounding) >> 16);
}

uint16_t f32_to_f16(float value) {
    const uint32_t bits = std::bit_cast<uint32_t>(value);
    const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) return sign | 0x7e00u;        // NaN
    if (magnitude >= 0x477ff000u) return sign | 0x7c00u;       // rounds to infinity
    if (magnitude < 0x38800000u) {                              // subnormal or zero in half
        // value = magnitude_float; half subnormal step is 2^-24
        const float scaled = std::bit_cast<float>(magnitude) * 16777216.0f;  // exact: power of two
        return sign | static_cast<uint16_t>(std::nearbyint(scaled));
    }
    const uint32_t rounding = 0xfffu + ((magnitude >> 13) & 1u);
    return sign | static_cast<uint16_t>((magnitude - 0x38000000u + rounding) >> 13);
}

}  // namespace oxinfer
