#pragma once
// Quantisation of float32 rows into ggml block types, for `--quant` at load time and `oxinfer
// synth`. Q8_0 and Q4_0 follow ggml's reference quantize_row_q8_0 / quantize_row_q4_0. Q4_K is a
// plain min/max quantiser (not llama.cpp's iterative search): per 32-value sub-block a scale and a
// minimum, both then coded on 6 bits against the super-block's half-precision d and dmin. Its
// output is a valid Q4_K block that every Q4_K reader decodes; its error is a little larger than
// llama-quantize's.

#include <oxinfer/dtype.h>

#include <cstddef>
#include <cstdint>

namespace oxinfer {

// Whether quantize_row handles the type (F32, F16, BF16, Q8_0, Q4_0, Q4_K).
bool can_quantize(DType type);

// Writes `count` values (a whole number of blocks of `type`) as dtype_bytes(type, count) bytes.
// Throws oxinfer::Error for another type or a count that is not a whole number of blocks.
void quantize_row(DType type, const float* src, std::byte* dst, int64_t count);

}  // namespace oxinfer
