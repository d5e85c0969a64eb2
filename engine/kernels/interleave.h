#pragma once
// Weight rows interleaved in groups, for the GEMV and int8 GEMM kernels that compute 8 rows in
// the 8 lanes of one 256-bit vector, or 16 in a 512-bit one (as llama.cpp's repacked Q4_0/Q4_K
// types do). The row-at-a-time kernels spend most of their instructions per block on unpacking
// one row's scales and on summing one row's lanes; with rows side by side each block's scales
// unpack once for all of them, every multiply-add serves 8 or 16 rows and no lane sums are
// needed. The bytes are the same blocks in another order, so the matrix keeps its size.
//
// A group of rows takes the bytes of its plain rows, block by block (each group block holds the
// same block of all the group's rows):
//  - Q8_0, groups of 8 rows, 272 bytes per group block: d of the 8 rows (f16, row order), then for
//    each 4-value step k, row r's q[4k .. +3] at 16 + 32k + 4r.
//  - Q4_K, groups of 8 rows, 1152 bytes per group block: d of the 8 rows, then dmin; the 12 scale
//    bytes with byte i of row r at 32 + 8i + r; then the codes: for each 32-byte quarter c of qs
//    and each 4-byte step k in it, row r's qs[32c + 4k .. +3] at 128 + 32 (8c + k) + 4r.
//  - Q4_K, groups of 16 rows (for 512-bit kernels), 2304 bytes per group block: rows 0-7 and
//    8-15 each laid out as a group of 8, the two halves interleaved 32 bytes at a time: byte o of
//    half h at 64 (o / 32) + 32 h + o % 32. Each 64-byte line of codes then holds one step of all
//    16 rows, which the kernel reads in memory order with one load a step. (Two 8-row groups read
//    side by side, two streams a group apart, read memory at a third of the speed of one stream
//    on a 2-core Zen 4 VM; so does one stream read a line of each quarter in turn.)
// Rows past the last whole group stay plain, where a plain matrix has them.

#include "kernels/matmul.h"

#include <oxinfer/dtype.h>

#include <cstddef>
#include <cstdint>

namespace oxinfer {
class ThreadPool;
}

namespace oxinfer::kernels {

// Rows in the lanes of one 256-bit vector: a Q8_0 group, a Q4_K group or half of one.
constexpr int64_t kInterleavedRows = 8;

// The types with an interleaved layout.
bool has_interleaved_layout(DType type);

// Writes the rows of plain matrix w (w.interleaved() false, a type with the layout) interleaved in
// groups of group_rows (8, or 16 for Q4_K) into out (w.rows * w.row_bytes bytes), and returns the
// matrix over out. The level that will read it says how many: interleaved_group_rows (matmul_table.h).
WeightMatrix interleave_rows(const WeightMatrix& w, int64_t group_rows, std::byte* out, ThreadPool& pool);

// Rows [begin, end) of w as a matrix over the same memory (whole groups of interleaved rows: begin
// a multiple of the group, and end too unless it is w.rows).
WeightMatrix row_range(const WeightMatrix& w, int64_t begin, int64_t end);

// Columns [begin, end) of w (whole blocks of its type) written to out ((end - begin) / block
// values * block bytes per row, w.rows rows) as a matrix of the same layout, returned: a group of
// interleaved rows keeps its group blocks of those columns, a plain row its blocks.
WeightMatrix copy_columns(const WeightMatrix& w, int64_t begin, int64_t end, std::byte* out);

// Row `row` of w in the plain layout (w.row_bytes bytes into out), whichever layout w has.
void copy_plain_row(const WeightMatrix& w, int64_t row, std::byte* out);

}  // namespace oxinfer::kernels
