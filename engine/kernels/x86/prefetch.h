#pragma once
// Software prefetch of one cache line, as an instruction the compiler always keeps. GCC 12.2
// deletes _mm_prefetch (__builtin_prefetch) where, after inlining, a branch or a loop holds nothing
// else, as code without effect. In the -O3 build it had deleted the decoding attention kernels' row
// prefetch (kv_prefetch.h) everywhere: with it back, Qwen3-0.6B bf16 tg64 at depth 4096 ran at
// 18.7-19.3 tokens/s against 15.8-17.2 (2-core Zen 5 VM, alternating runs). The interleaved Q8_0
// and Q4_K kernels lost theirs in an experiment that gave their group-block prefetch a branch.
// Volatile asm it keeps. Include after <immintrin.h> (or the tests' AVX-512 emulation header):
// compilers without GNU asm use _mm_prefetch.

namespace oxinfer::kernels {
namespace {

#if defined(__GNUC__)
// Into every cache level (prefetcht0).
inline void prefetch_line(const void* p) { asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p))); }
// Into L2 and the last level, not L1 (prefetcht1).
inline void prefetch_line_l2(const void* p) { asm volatile("prefetcht1 %0" : : "m"(*static_cast<const char*>(p))); }
#else
inline void prefetch_line(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
inline void prefetch_line_l2(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T1); }
#endif

}  // namespace
}  // namespace oxinfer::kernels
