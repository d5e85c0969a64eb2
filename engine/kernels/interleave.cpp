#include "kernels/interleave.h"

#include "kernels/block_layouts.h"
#include "kernels/thread_pool.h"

#include <oxinfer/error.h>

#include <cstring>
#include <string>

namespace oxinfer::kernels {
namespace {

// Calls piece(group_offset, row, plain_offset, bytes) for every run of bytes of one group block:
// row `row`'s bytes plain_offset.. of its plain block sit at group_offset of the group block. One
// description of the layout (interleave.h) for both directions.
template <class Piece>
void for_each_piece(DType type, int64_t group_rows, Piece&& piece) {
    const int halves = static_cast<int>(group_rows / kInterleavedRows);
    for (int r = 0; r < group_rows; ++r) {
        if (type == DType::Q4_K) {
            // Offset o of the row's 8-row half h at its place among the halves' 32-byte pieces.
            const int h = r / kInterleavedRows, in_half = r % kInterleavedRows;
            const auto at = [h, halves](int o) { return 32 * halves * (o / 32) + 32 * h + o % 32; };
            piece(at(2 * in_half), r, 0, 2);       // d
            piece(at(16 + 2 * in_half), r, 2, 2);  // dmin
            for (int i = 0; i < 12; ++i) piece(at(32 + 8 * i + in_half), r, 4 + i, 1);
            for (int c = 0; c < 4; ++c)
                for (int k = 0; k < 8; ++k) piece(at(128 + 32 * (8 * c + k) + 4 * in_half), r, 16 + 32 * c + 4 * k, 4);
        } else {  // Q8_0
            piece(2 * r, r, 0, 2);
            for (int k = 0; k < 8; ++k) piece(16 + 32 * k + 4 * r, r, 2 + 4 * k, 4);
        }
    }
}

int64_t block_bytes(DType type) { return type == DType::Q4_K ? blocks::kQ4_KBytes : blocks::kQ8_0Bytes; }

}  // namespace

bool has_interleaved_layout(DType type) { return type == DType::Q4_K || type == DType::Q8_0; }

WeightMatrix interleave_rows(const WeightMatrix& w, int64_t group_rows, std::byte* out, ThreadPool& pool) {
    if (w.interleaved() || !has_interleaved_layout(w.dtype))
        throw Error("matmul", "weights of type " + std::string(dtype_name(w.dtype)) + " have no interleaved layout");
    if (group_rows != kInterleavedRows && !(w.dtype == DType::Q4_K && group_rows == 2 * kInterleavedRows))
        throw Error("matmul", "no interleaved layout of " + std::string(dtype_name(w.dtype)) + " in groups of " + std::to_string(group_rows) + " rows");
    const int64_t groups = w.rows / group_rows, blocks = w.row_bytes / block_bytes(w.dtype);
    const int64_t group_block = group_rows * block_bytes(w.dtype), group_bytes = group_rows * w.row_bytes;
    pool.parallel_for(groups, 1, [&](int64_t begin, int64_t end) {
        for (int64_t g = begin; g < end; ++g)
            for (int64_t b = 0; b < blocks; ++b) {
                std::byte* dst = out + g * group_bytes + b * group_block;
                const std::byte* src = w.data + g * group_bytes + b * block_bytes(w.dtype);
                for_each_piece(w.dtype, group_rows, [&](int group_offset, int row, int plain_offset, int bytes) {
                    std::memcpy(dst + group_offset, src + row * w.row_bytes + plain_offset, static_cast<size_t>(bytes));
                });
            }
    });
    const int64_t plain_start = groups * group_bytes;
    std::memcpy(out + plain_start, w.data + plain_start, static_cast<size_t>(w.rows * w.row_bytes - plain_start));
    WeightMatrix interleaved = w;
    interleaved.data = out;
    interleaved.group_rows = group_rows;
    return interleaved;
}

WeightMatrix row_range(const WeightMatrix& w, int64_t begin, int64_t end) {
    WeightMatrix part = w;
    part.rows = end - begin;
    part.data = w.data + begin * w.row_bytes;
    return part;
}

WeightMatrix copy_columns(const WeightMatrix& w, int64_t begin, int64_t end, std::byte* out) {
    const int64_t block_values = dtype_traits(w.dtype).block_elements, bytes = dtype_traits(w.dtype).block_bytes;
    if (begin < 0 || end > w.cols || begin >= end || begin % block_values || end % block_values)
        throw Error("matmul", "columns [" + std::to_string(begin) + ", " + std::to_string(end) + ") are not whole blocks of a " +
                                  std::to_string(w.cols) + "-column " + std::string(dtype_name(w.dtype)) + " matrix");
    WeightMatrix part = w;
    part.cols = end - begin;
    part.row_bytes = part.cols / block_values * bytes;
    part.data = out;
    // A group's rows hold each block side by side, so its columns are one range of its bytes, as
    // a plain row's are.
    const int64_t grouped = w.interleaved() ? w.rows / w.group_rows * w.group_rows : 0;
    for (int64_t r = 0; r < grouped; r += w.group_rows)
        std::memcpy(out + r * part.row_bytes, w.data + r * w.row_bytes + begin / block_values * w.group_rows * bytes,
                    static_cast<size_t>(w.group_rows * part.row_bytes));
    for (int64_t r = grouped; r < w.rows; ++r)
        std::memcpy(out + r * part.row_bytes, w.data + r * w.row_bytes + begin / block_values * bytes, static_cast<size_t>(part.row_bytes));
    return part;
}

void copy_plain_row(const WeightMatrix& w, int64_t row, std::byte* out) {
    const std::byte* src = w.data + row * w.row_bytes;
    const int64_t group_rows = w.group_rows;
    if (!w.interleaved() || row >= w.rows / group_rows * group_rows) {
        std::memcpy(out, src, static_cast<size_t>(w.row_bytes));
        return;
    }
    const int64_t group_block = group_rows * block_bytes(w.dtype), blocks = w.row_bytes / block_bytes(w.dtype);
    const std::byte* group = w.data + row / group_rows * group_rows * w.row_bytes;
    const int in_group = static_cast<int>(row % group_rows);
    for (int64_t b = 0; b < blocks; ++b)
        for_each_piece(w.dtype, group_rows, [&](int group_offset, int r, int plain_offset, int bytes) {
            if (r == in_group)
                std::memcpy(out + b * block_bytes(w.dtype) + plain_offset, group + b * group_block + group_offset, static_cast<size_t>(bytes));
        });
}

}  // namespace oxinfer::kernels
