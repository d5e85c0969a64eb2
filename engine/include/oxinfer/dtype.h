#pragma once
// Element types of every checkpoint format we read: the safetensors dtypes, the torch storage
// types, and ggml's block-quantised types. Block types store `block_elements` values in
// `block_bytes` bytes; plain types are blocks of one element.

#include <cstdint>
#include <optional>
#include <string_view>

namespace oxinfer {

enum class DType : uint8_t {
    // plain types
    F64, F32, F16, BF16, F8_E4M3, F8_E5M2,
    I64, I32, I16, I8, U64, U32, U16, U8, Bool,
    // ggml block types
    Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1,
    Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K,
    IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, IQ4_NL, IQ4_XS,
    TQ1_0, TQ2_0, MXFP4,
};

struct DTypeTraits {
    std::string_view name;   // lower-case, as `inspect` prints it: "f32", "bf16", "q4_k", "iq4_xs"
    int64_t block_elements;  // 1 for plain types
    int64_t block_bytes;
    bool quantized;          // a ggml block type
};

const DTypeTraits& dtype_traits(DType type);
inline std::string_view dtype_name(DType type) { return dtype_traits(type).name; }

// Parses the lower- or upper-case name ("Q4_K", "bf16", "BOOL").
std::optional<DType> dtype_from_name(std::string_view name);
// ggml's numeric type ids as stored in GGUF tensor infos.
std::optional<DType> dtype_from_ggml_id(uint32_t id);
std::optional<uint32_t> ggml_id(DType type);

// Bytes taken by `elements` values of `type`; nullopt when `elements` is not a whole number of
// blocks or the product overflows.
std::optional<uint64_t> dtype_bytes(DType type, uint64_t elements);

// Whether convert_to_f32 handles the type (every plain type; the block types we implement).
bool can_convert_to_f32(DType type);

// Converts `count` values (a whole number of blocks) to float32, exactly: every stored value is
// representable in float32 except F64 and the 64/32-bit integers, which are rounded to nearest.
// Throws oxinfer::Error for a type that can_convert_to_f32 refuses.
void convert_to_f32(DType type, const void* src, float* dst, int64_t count);

// Scalar conversions used by the formats and kernels.
float f16_to_f32(uint16_t bits);
float bf16_to_f32(uint16_t bits);
uint16_t f32_to_f16(float value);    // round to nearest even
uint16_t f32_to_bf16(float value);   // round to nearest even, NaN kept quiet

}  // namespace oxinfer
