#pragma once
// How the decoding attention kernels (kv_dot_group / kv_axpy_group in ops_table.h) ask for the
// cache rows they stream from memory. Shared by the x86 ops files; every function has internal
// linkage, so each instruction-set level keeps its own copy (see ops_avx512.cpp). Include it after
// <immintrin.h> (or the tests' AVX-512 emulation header).

#include <cstddef>
#include <cstdint>

namespace oxinfer::kernels {
namespace {

// Each row's lines are asked for this many bytes ahead of it (measured in ops_avx2.cpp).
constexpr int64_t kKvAheadBytes = 2048;

// Asks for every cache line of row `row`: of these rows, or of the next ones past the last.
inline void prefetch_kv_row(const std::byte* rows, int64_t stride, int64_t count, const std::byte* next, int64_t next_count,
                            int64_t row, int64_t row_bytes) {
    const std::byte* at = row < count ? rows + row * stride : row - count < next_count ? next + (row - count) * stride : nullptr;
    if (!at) return;
    const auto first = reinterpret_cast<uintptr_t>(at), end = first + static_cast<uintptr_t>(row_bytes);
    for (uintptr_t line = first & ~uintptr_t{63}; line < end; line += 64) _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T0);
}

// Rows of `stride` bytes to ask for ahead.
inline int64_t kv_rows_ahead(int64_t stride) { return stride > 0 && stride < kKvAheadBytes ? kKvAheadBytes / stride : 1; }

}  // namespace
}  // namespace oxinfer::kernels
