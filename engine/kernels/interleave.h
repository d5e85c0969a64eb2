#pragma once
// Weight rows interleaved in groups of 8, for the GEMV and int8 GEMM kernels that compute 8 rows
// in the 8 lanes of one vector (as llama.cpp's repacked Q4_0/Q4_K types do). The row-at-a-time
// kernels spend most of their instructions per block on unpacking one row's scales and on
// summing one row's lanes; with 8 rows side by side each block's scales unpack once for all 8,
// every multiply-add serves 8 rows and no lane sums are needed. The bytes are the same blocks in
// another order, so the matrix keeps its size.
//
// A group of rows 8g..8g+7 takes the bytes of those 8 plain rows, block by block (each group block
// holds the same block of all 8 rows):
//  - Q4_K, 1152 bytes per group block: d of the 8 rows (f16, row order), then dmin; the 12 scale
//    bytes with byte i of row r at 32 + 8i + r; then the codes: for each 32-byte quarter c of qs
//    and each 4-byte step k in it, row r's qs[32c + 4k .. +3] at 128 + 32 (8c + k) + 4r.
//  - Q8_0, 272 bytes: d of the 8 rows, then for each 4-value step k, row r's q[4k .. +3] at
//    16 + 32k + 4r.
// Rows past the last whole group (rows % 8) stay plain, where a plain matrix has them.

#include "kernels/matmul.h"

#include <oxinfer/dtype.h>

#include <cstddef>
#include <cstdint>

namespace oxinfer {
class ThreadPool;
}

namespace oxinfer::kernels {

constexpr int64_t kInterleavedRows = 8;

// The types with an interleaved layout.
bool has_interleaved_layout(DType type);

// Writes the rows of plain matrix w (w.interleaved false, a type with the layout) interleaved into
// out (w.rows * w.row_bytes bytes), and returns the matrix over out.
WeightMatrix interleave_rows(const WeightMatrix& w, std::byte* out, ThreadPool& pool);

// Row `row` of w in the plain layout (w.row_bytes bytes into out), whichever layout w has.
void copy_plain_row(const WeightMatrix& w, int64_t row, std::byte* out);

}  // namespace oxinfer::kernels
