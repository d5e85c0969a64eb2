#pragma once
// Dequantisation of ggml's block-quantised types to float32, bit-exact with ggml's reference
// dequantize_row_* functions (the same float operations in the same order).

#include <oxinfer/dtype.h>

#include <cstddef>
#include <cstdint>

namespace oxinfer {

bool ggml_blocks_supported(DType type);

// `count` must be a whole number of blocks of `type`; `src` holds count / block_elements blocks.
void dequantize_ggml_blocks(DType type, const std::byte* src, float* dst, int64_t count);

}  // namespace oxinfer
