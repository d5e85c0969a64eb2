#pragma once
// Software prefetch for GEMV, which streams each thread's rows of weights from memory once.
// Shared by the x86 kernel files; every function has internal linkage, so each instruction-set
// level keeps its own copy (see matmul_avx512.cpp on shared inline functions). Include it after
// <immintrin.h> (or the tests' AVX-512 emulation header), as prefetch.h.

#include "kernels/x86/prefetch.h"

#include <cstdint>

namespace oxinfer::kernels {

// How the row dots of block-quantised weights (Q8_0, Q4_0, Q4_K, Q6_K), which do several times the
// arithmetic per byte of the float ones, ask for their weights: chosen once for the CPU
// (weight_prefetch.cpp). On the 2-core AMD EPYC VM the page bursts below helped them a little.
// On a 2-core Xeon VM (AVX-512) the bursts cost them 10-20% and a plain prefetch 4 KB ahead
// streamed fastest: 600 MB of 1024-value rows (mapped file, anonymous memory), medians of 12
// rounds interleaved in one process, Q4_K 14.6-16.7 GB/s with bursts, 16.6-20.7 without;
// decoding Qwen3-0.6B and Llama-3.2-1B in Q8_0 and Q4_K, 5-10% faster in 9 of 12 alternating
// runs. The float rows keep the bursts on both (bf16 decoding on the Xeon: about 25 GB/s with
// them, 21-23 without).
struct BlockPrefetch {
    int bytes_ahead;
    bool page_bursts;
};
extern const BlockPrefetch block_prefetch;

// How the AVX-512 bf16 row dot (matmul_avx512.cpp) streams its rows on this CPU: each cache line
// asked for `bytes_ahead` ahead, and rows of up to `paired_up_to` bytes or of at least
// `paired_from` two at a time (sharing each activation load), the others one at a time.
struct Bf16RowStreaming {
    int bytes_ahead;
    int64_t paired_up_to;
    int64_t paired_from;
};
extern const Bf16RowStreaming bf16_row_streaming;

// How far ahead the interleaved Q4_K and Q8_0 kernels (interleaved_kernels.h) ask for the lines of
// their group blocks; 0: not at all, each thread's stream left to the hardware prefetchers.
extern const int group_bytes_ahead;

namespace {

// Asking for the weights this far ahead of a row dot keeps more cache-line reads in flight than
// the out-of-order window alone; past the end of a row it fetches the next row, which comes next.
constexpr int kPrefetchBytes = 2048;
inline void prefetch_weights(const void* p) { prefetch_line(static_cast<const char*>(p) + kPrefetchBytes); }

// The hardware prefetchers follow a stream only within one 4 KB page, so at every page boundary
// the stream starts again from demand misses. When a row dot's step of `step` bytes begins in the
// first `step` bytes of a page (once per page as a thread streams its contiguous rows; a page
// boundary inside a row's tail loop gets none), this asks for the whole page after the next in
// one burst. On the 2-core EPYC VM it
// lifted bf16 GEMV from about 80% of the read bandwidth to all of it, and the others a little.
constexpr uintptr_t kPageBytes = 4096;
constexpr uintptr_t kPagesAhead = 2;
// Whether a stream's step of `step` bytes from `address` is its first in a page.
inline bool starts_page(uintptr_t address, uintptr_t step) { return (address & (kPageBytes - 1)) < step; }
inline void prefetch_page_ahead(const void* p, uintptr_t step) {
    const auto address = reinterpret_cast<uintptr_t>(p);
    if (!starts_page(address, step)) return;
    const char* page = reinterpret_cast<const char*>((address & ~(kPageBytes - 1)) + kPagesAhead * kPageBytes);
    for (uintptr_t line = 0; line < kPageBytes; line += 64) prefetch_line_l2(page + line);
}

// One line of the page kPageTouchBytes ahead, asked for when a step of `step` bytes begins in the
// first `step` bytes of a page: the page's address translation then starts before the stream
// reaches it. On a 2-core Zen 5 VM, random reads over 1 GB took 309 ns in huge pages and 319 ns in
// 4 KB pages (so the host maps the guest's memory in small pages, and each 4 KB of a stream waits
// for a walk through both page tables); 256 MB read by 2 threads with each line asked for 2 KB
// ahead, in turn with and without this, medians of 96 rounds: +6-8% at 55 GB/s, +20% at 41 GB/s.
// The AVX-512 bf16 row dot asks so (matmul_avx512.cpp), and the bandwidth probe's fourth way
// reads so (matmul_table.h).
constexpr uintptr_t kPageTouchBytes = 16384;
inline void touch_page_ahead(const void* p, uintptr_t step) {
    const auto address = reinterpret_cast<uintptr_t>(p);
    if (!starts_page(address, step)) return;
    prefetch_line(reinterpret_cast<const char*>(address + kPageTouchBytes));
}

// The line at p of a thread's group stream asked for group_bytes_ahead ahead, if at all.
inline void prefetch_group_line(const void* p) {
    if (group_bytes_ahead != 0) prefetch_line(static_cast<const char*>(p) + group_bytes_ahead);
}

// Starts the address translation of the page kPageTouchBytes ahead when a group block of kBytes
// (interleaved_kernels.h) begins a page, and asks for all the block's lines group_bytes_ahead ahead,
// if at all: a thread's groups are one contiguous stream. (Kernels with long blocks ask for each
// line as they reach it, without the page touch: the AVX-512 VNNI Q4_K kernel,
// matmul_avx512bf16.cpp.) On a 2-core Zen 5 VM the page touch made the streams of the interleaved
// Q8_0 kernel 1.3-1.5x faster (weight_prefetch.cpp). Also the bandwidth probe's third way of reading.
template <int kBytes>
inline void prefetch_group_block(const void* p) {
    touch_page_ahead(p, kBytes);
    for (int line = 0; line < kBytes; line += 64) prefetch_group_line(static_cast<const char*>(p) + line);
}

inline void prefetch_blocks(const void* p) { prefetch_line(static_cast<const char*>(p) + block_prefetch.bytes_ahead); }
inline void prefetch_blocks_page_ahead(const void* p, uintptr_t step) {
    if (block_prefetch.page_bursts) prefetch_page_ahead(p, step);
}

}  // namespace
}  // namespace oxinfer::kernels
