// The prefetch policies of the GEMV kernels for this CPU (weight_prefetch.h), chosen once.

#include <immintrin.h>

#include "kernels/x86/weight_prefetch.h"

#include <oxinfer/platform.h>

#include <limits>

namespace oxinfer::kernels {

// Measured on one Intel (a Xeon VM with AVX-512) and one AMD (an EPYC Zen 3 VM) machine; other
// Intel generations follow the Xeon untested, other vendors the AMD policy, under which the page
// bursts were first measured.
const BlockPrefetch block_prefetch =
    platform().cpu_vendor == "GenuineIntel" ? BlockPrefetch{4096, false} : BlockPrefetch{kPrefetchBytes, true};

// Intel: 2 KB ahead and rows of up to 2 KB in pairs, measured on the Xeon VM (matmul_avx512.cpp).
// AMD: one row at a time. On a 2-core EPYC VM (Zen 5), Qwen3-0.6B's layer matrices in
// bf16 (881 MB in huge pages), 2 threads, each pass timed in turn with an equal read of the
// bandwidth probe, medians of 8-10 alternating rounds: the Intel policy streamed at 74-80% of the
// probe's bandwidth; one row at a time 2 KB ahead 77-90%, 4 KB 85-94%, 8 KB 89-97%, 12-16 KB
// 90%; rows in pairs 8 KB ahead 84%. On another Zen 5 VM of the same kind two days later (35-66
// GB/s), 2 KB ahead was the faster: tg128 with --bandwidth, alternating runs, Llama-3.2-1B bf16
// 15.0-15.1 tokens/s against 12.9-13.4 (three pairs), Qwen3-0.6B bf16 28.7-29.3 against 23.2-25.6
// (two pairs); 768 MB of 2048-value rows read in turn with the probe, medians of 12 rounds, six
// runs: 2 KB at 0.86-1.08 of the probe, 8 KB at 0.80-1.00, lower in each run. So 2 KB ahead.
// Long rows go in pairs on AMD: a row's f32 activations (4 bytes a value, 32 KB for 8192 values)
// then no longer stay in the 48 KB L1 beside the weights streaming through it, and a pair reads
// them once for two rows. A Zen 5 VM (2026-12-05), 512 MB of rows in huge pages, 2 threads, in
// turn with the probe, medians of 12 rounds, two runs each: 8192 values a row 0.88-0.90 of the
// probe in pairs against 0.75 one at a time (0.94-1.03 one at a time against the same row's first
// 2048 activations over and over, timing only), 14336 values 0.90-0.95 against 0.75-0.76, 6144
// values 0.83 against 0.81-0.82; 4096 values 0.81-0.85 against 0.94-1.01 and 2048 values
// 0.73-0.74 against 0.97-1.00 (four rows at a time 0.45-0.62 at every length). Llama-3.2-1B bf16
// tg128 with --profile, two alternating pairs: the MLP (its down projection has 8192-value rows)
// 1.98-2.05 against 2.14-2.23 ms a layer.
// Zen 5 (family 26) asks 4 KB ahead. On a Zen 5 VM (2026-12-06, 34-63 GB/s), tokens of both
// distances taking turns in one process (tg128 with the probe's reads between them, each way's
// median token): Qwen3-0.6B bf16, whose q/k/v, gate and up rows and LM head are 1024 values,
// +5.0%, +2.3%, +3.1%, +3.0% at 46-63 GB/s (4 KB faster in all 12 runs of 128 tokens at 58-63
// GB/s), -2.4% in one run at 34 GB/s; 128 MB of 1024-value rows in turn with the probe, medians
// of 60 rounds: 0.93-0.94 of the probe against 0.86-0.91. Llama-3.2-1B bf16 (rows of 4 KB and
// more) with 4 KB in every row: +0.3%, +1.7%, +0.8%, -5.3%, so its rows kept 2 KB then. Once each
// row stream also started its pages' translations early (touch_page_ahead, 2026-12-07, 70-85
// GB/s), 4 KB in every row against 2 KB in rows over 2 KB: Llama-3.2-1B bf16 +11.3% and +6.4%,
// Qwen3-0.6B bf16 +2.5% (8 KB: as 4 KB). Other AMD CPUs keep 2 KB, as measured.
// Zen 5 now asks 8 KB ahead and takes every row alone: later that day on the same VM (65-83
// GB/s), tokens taking turns as above (3 runs of 64), Llama-3.2-1B bf16 one row at a time 3.6%
// and 5.1% faster than its 16 KB down-projection rows in pairs (that product had read at 51
// GB/s, its gate and up at 73); then 8 KB against 4 KB, Qwen3-0.6B bf16 +6.0% and +4.0%,
// Llama-3.2-1B +1.8%; 16 KB, as far as the page touch, 13-14% slower than 8 KB.
namespace {
Bf16RowStreaming bf16_streaming_for_cpu() {
    constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
    const PlatformInfo& p = platform();
    if (p.cpu_vendor == "GenuineIntel") return {kPrefetchBytes, 2048, kNever};
    const bool zen5 = p.cpu_vendor == "AuthenticAMD" && p.cpu_family == 26;
    return zen5 ? Bf16RowStreaming{8192, 0, kNever} : Bf16RowStreaming{kPrefetchBytes, 0, 16384};
}
}  // namespace
const Bf16RowStreaming bf16_row_streaming = bf16_streaming_for_cpu();

// Intel: 2 KB, not block_prefetch's 4 KB: on a 2-core Xeon VM (Sapphire Rapids class), GEMVs in the
// shapes of one Qwen3-0.6B token, 15 rounds alternating in one process, Q4_K decoded at a median
// 55.5 tokens/s with 2 KB (1.5-3 KB alike) and 51.6 with 4 KB; Q8_0 showed no difference.
// AMD: 4 KB, but 8 KB on Zen 5 (family 26) and none on Zen 4 (family 25 with AVX-512; Zen 3, the
// same family, has none), each thread's stream left to the hardware prefetchers there.
// - Zen 5, 8 KB: on a 2-core Zen 5 VM (2026-12-07), with each page's translation started 16 KB
//   ahead (prefetch_group_block), interleaved Q8_0 in one group a call, 260-660 MB of matrices
//   read by 2 threads in turn with the probe's fourth way (medians of 12 rounds): 3072 x 1024
//   66.5 GB/s against 60.8 with 4 KB and 49.9 with 4 KB and no page touch (probe 68.8); 1024 x
//   3072 69.1 against 60.5 and 49.0 (probe 68.5); 8192 x 2048 and 2048 x 8192 71-72 against
//   48-51 as the engine read before (probe 67-71). Decoding, tokens of both distances taking turns
//   in one process (medians, 3 runs of 128): Qwen3-0.6B q8_0 and Llama-3.2-1B q8_0 7% faster than
//   with 4 KB, 3.5% faster than with 12 KB (32 KB page touch); the q4_k files within 0.1% with 8 KB
//   and the page touch against 4 KB without.
// - A Zen 5 VM chose 4 KB among distances (tg128 with --bandwidth in rotating runs, medians of
//   4-5: Qwen3-0.6B q4_k at 0.75 of the bound with 2 KB, 0.77 with 4 KB, 0.73 with 8 KB; q8_0 0.86
//   with 2 KB, 0.87 with 4 KB). Another Zen 5 VM (2026-12-06, 53-60 GB/s), against none,
//   alternating runs of -r 2: Qwen3-0.6B q4_k 0.82-0.85 against 0.53-0.57 (four pairs),
//   Llama-3.2-1B q4_k 1.00-1.01 against 0.62-0.64 (two pairs at the same rate); q8_0 within the
//   noise (0.75-0.90 either way).
// - A Zen 4 VM (2026-12-06) was faster with none everywhere it was tried:
//   - 300 MB of 3072 x 1024 Q4_K matrices (groups of 16 rows), each pass timed in turn with the
//     probe, six alternating runs of six rounds at 27-34 GB/s: 2 threads 0.96 of the probe (mean
//     of 36 rounds) against 0.87 with 4 KB; one thread 0.88-0.90 against 0.76-0.79. 2, 8 and 16
//     KB ahead and prefetcht2 were slower than none too.
//   - tg128 with --bandwidth, alternating runs of -r 2, each run's share of the bound by the
//     probe's rate (under 36 GB/s; over 45): Qwen3-0.6B q4_k 0.83 (median of 14 runs) against
//     0.79 (of 22); 0.71 against 0.63. Llama-3.2-1B q4_k 0.98 against 0.96; 0.88 against 0.78.
//     Qwen3-0.6B q8_0 0.93 against 0.92, all runs 0.91 against 0.84; Llama-3.2-1B q8_0 1.00
//     against 0.99; 0.96 against 0.87. OXINFER_CPU=avx2 (groups of 8), Qwen3-0.6B q4_k: 0.82
//     against 0.76.
namespace {
int group_prefetch_distance() {
    const PlatformInfo& p = platform();
    if (p.cpu_vendor == "GenuineIntel") return kPrefetchBytes;
    const bool zen4 = p.cpu_vendor == "AuthenticAMD" && p.cpu_family == 25 && p.features.avx512f;
    const bool zen5 = p.cpu_vendor == "AuthenticAMD" && p.cpu_family == 26;
    return zen4 ? 0 : zen5 ? 8192 : 4096;
}
}  // namespace
const int group_bytes_ahead = group_prefetch_distance();

}  // namespace oxinfer::kernels
