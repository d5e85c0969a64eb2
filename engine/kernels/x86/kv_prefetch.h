#pragma once
// How the decoding attention kernels (kv_dot_group / kv_axpy_group in ops_table.h) ask for the
// cache rows they stream from memory, and the loop that takes the kv heads' rows side by side. Shared by the x86 ops files; every function has internal
// linkage, so each instruction-set level keeps its own copy (see ops_avx512.cpp). Include it after
// <immintrin.h> (or the tests' AVX-512 emulation header).

#include "kernels/ops_table.h"
#include "kernels/x86/prefetch.h"

#include <cstddef>
#include <cstdint>

namespace oxinfer::kernels {
namespace {

// Each row's lines are asked for this many bytes ahead of it (see ops_avx2.cpp). Once the
// prefetch was really issued (prefetch.h), on a 2-core Zen 5 VM (decoding 1500 tokens, each
// thread's attention timed inside, tokens of both distances taking turns): 4 KB against 2 KB,
// Llama-3.2-1B (64-value heads) 84-86 against 95 us a layer, Qwen3-0.6B (128 values) 160-167
// against 163-171; at 512 tokens of Qwen3-0.6B 54-57 against 57-60 (8 KB as 4 KB; none 93).
constexpr int64_t kKvAheadBytes = 4096;

// The rows a decoding kernel streams: kv head h's `count` rows at rows + h·head_stride, then the
// caller's next `next_count` rows at next + h·head_stride (next nullptr: none), `stride` bytes apart.
struct KvStream {
    const std::byte* rows;
    const std::byte* next;
    int64_t next_count, head_stride, stride, count;
    int64_t row_bytes;  // of the `dim` values each row holds
    int64_t ahead;      // rows asked for ahead: kKvAheadBytes of them, at least one

    KvStream(int kv_type, int64_t dim, const std::byte* rows, int64_t head_stride, int64_t stride, int64_t count, const std::byte* next,
             int64_t next_count)
        : rows(rows), next(next), next_count(next_count), head_stride(head_stride), stride(stride), count(count),
          row_bytes(dim * (kv_type == KvF32 ? 4 : 2)), ahead(stride > 0 && stride < kKvAheadBytes ? kKvAheadBytes / stride : 1) {}

    // Asks for every cache line of kv head h's rows [j, j + n) shifted `ahead` on.
    void ask_ahead(int64_t h, int64_t j, int n) const {
        for (int64_t row = j + ahead; row < j + ahead + n; ++row) {
            const std::byte* at = row < count                  ? rows + h * head_stride + row * stride
                                  : next && row - count < next_count ? next + h * head_stride + (row - count) * stride
                                                                     : nullptr;
            if (!at) return;
            const auto first = reinterpret_cast<uintptr_t>(at), end = first + static_cast<uintptr_t>(row_bytes);
            for (uintptr_t line = first & ~uintptr_t{63}; line < end; line += 64) prefetch_line(reinterpret_cast<const char*>(line));
        }
    }
};

// step<K>(h, j) for rows j.. of every kv head h in turn, K rows a step, then the last ones one by
// one: the kv heads' rows side by side, one stream each.
template <int K, class Step>
inline void by_key_steps(int64_t count, int64_t heads, const Step& step) {
    int64_t j = 0;
    for (; j + K <= count; j += K)
        for (int64_t h = 0; h < heads; ++h) step.template operator()<K>(h, j);
    for (; j < count; ++j)
        for (int64_t h = 0; h < heads; ++h) step.template operator()<1>(h, j);
}

}  // namespace
}  // namespace oxinfer::kernels
