// AVX-512 with BF16 and VNNI, on top of the AVX-512 table: Q8_0 and Q4_0 row dots through vpdpbusd,
// the Q4_K and Q6_K row dots and prefill tiles through vpdpwssd (k_quant_kernels.h), the
// interleaved Q4_K (here, in 512-bit vectors) and Q8_0 (interleaved_kernels.h) kernels through vpdpbusd,
// and the bf16 GEMM through vdpbf16ps (two multiply-adds per lane per instruction, on bf16 pairs) for
// matrices that allow bf16-rounded activations (WeightMatrix::bf16_activations).
//
// Compiled with -mavx512bf16 -mavx512vnni (and the AVX-512 flags) and run only after run-time
// detection; self-contained for the same reason as the other x86 files. fill_matmul_avx512bf16 is
// the only exported symbol.

#include "kernels/block_layouts.h"
#include "kernels/matmul_table.h"

#ifdef OXINFER_SIMD_EMULATION  // the tests' second build of this file, on any x86 CPU (tests/CMakeLists.txt)
#include "avx512_emulation.h"
#define fill_matmul_avx512bf16 fill_matmul_avx512bf16_emulated
#else
#include <immintrin.h>
#endif

#include "kernels/x86/block32_kernels.h"
#include "kernels/x86/interleaved_kernels.h"
#include "kernels/x86/k_quant_kernels.h"

namespace oxinfer::kernels {
namespace {

using U8 = const uint8_t*;

// Gathers pair p (bf16 values 2p, 2p+1 as one 32-bit word) of every row with one masked gather
// from the first row's address plus each row's byte offset.
void pack_panel_bf16_avx512(const std::byte* const* rows, int valid_rows, int64_t kc, uint32_t* packed) {
    alignas(64) int32_t offsets[kGemmRows] = {};
    for (int r = 1; r < valid_rows; ++r) offsets[r] = static_cast<int32_t>(rows[r] - rows[0]);
    const __m512i index = _mm512_load_si512(offsets);
    const __mmask16 valid = static_cast<__mmask16>((1u << valid_rows) - 1u);
    const int64_t full_pairs = kc / 2;
    for (int64_t p = 0; p < full_pairs; ++p) {
        const __m512i words = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, index, rows[0] + 4 * p, 1);
        _mm512_storeu_si512(packed + p * kGemmRows, words);
    }
    if (kc % 2) {  // the last pair has one value: read only its two bytes, the rest of the row may not exist
        for (int r = 0; r < kGemmRows; ++r)
            packed[full_pairs * kGemmRows + r] = r < valid_rows ? blocks::load_u16(reinterpret_cast<U8>(rows[r]) + 4 * full_pairs) : 0u;
    }
}

// The 6 x 16 tile over pairs of k: each vdpbf16ps adds two products per lane. Even and odd pairs
// accumulate separately (12 chains) to cover the instruction's latency.
void gemm_tile_bf16_avx512(int64_t pairs, const uint32_t* xp, const uint32_t* wp, float* c, int64_t ldc, bool accumulate) {
    static_assert(kGemmTokens == 6 && kGemmRows == 16, "the register tile is 6 x 16");
    __m512 e[6], o[6];
    for (int t = 0; t < 6; ++t) e[t] = o[t] = _mm512_setzero_ps();
    auto x = [](const uint32_t* v) { return (__m512bh)_mm512_set1_epi32(static_cast<int>(*v)); };
    int64_t p = 0;
    for (; p + 2 <= pairs; p += 2, xp += 12, wp += 32) {
        const __m512bh w0 = (__m512bh)_mm512_loadu_si512(wp);
        const __m512bh w1 = (__m512bh)_mm512_loadu_si512(wp + 16);
        for (int t = 0; t < 6; ++t) e[t] = _mm512_dpbf16_ps(e[t], x(xp + t), w0);
        for (int t = 0; t < 6; ++t) o[t] = _mm512_dpbf16_ps(o[t], x(xp + 6 + t), w1);
    }
    if (p < pairs) {
        const __m512bh w0 = (__m512bh)_mm512_loadu_si512(wp);
        for (int t = 0; t < 6; ++t) e[t] = _mm512_dpbf16_ps(e[t], x(xp + t), w0);
    }
    for (int t = 0; t < 6; ++t) {
        float* out = c + t * ldc;
        const __m512 sum = _mm512_add_ps(e[t], o[t]);
        _mm512_storeu_ps(out, accumulate ? _mm512_add_ps(_mm512_loadu_ps(out), sum) : sum);
    }
}

// acc + vpdpbusd(codes, the 4 bytes at `act` in every lane), with the broadcast folded into the
// instruction ({1to16}). GCC 12 emits a vpbroadcastd of its own for each: 64 more ops a group
// block of interleaved Q4_K for the out-of-order window to hold while the kernel waits on memory.
// On a 2-core Zen 5 VM, builds with and without taking turns (bench -p 0 -n 128 -r 3 --bandwidth,
// six rounds): Qwen3-0.6B and Llama-3.2-1B q4_k at a share of the bound 3 points higher on average,
// higher in 9 of 12 pairs and lower in 1.
inline __m512i dpbusd_broadcast(__m512i acc, __m512i codes, const void* act) {
#if defined(OXINFER_SIMD_EMULATION) || !defined(__GNUC__)
    int32_t word;
    __builtin_memcpy(&word, act, 4);
    return _mm512_dpbusd_epi32(acc, codes, _mm512_set1_epi32(word));
#else
    asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(codes), "m"(*static_cast<const int32_t*>(act)));
    return acc;
#endif
}

// Interleaved Q4_K (interleave.h) in groups of 16 rows, in 512-bit vectors: each
// 64-byte line of codes is one 4-byte step of all 16 rows (rows 0-7 in lanes 0-7, 8-15 in lanes
// 8-15), so every lane takes the same 4 activations, which vpdpbusd reads as a broadcast. vpdpbusd
// takes the low nibbles, and the high nibbles left in place (16 times the code: at most 32 * 240
// * 127 per lane and sub-block), whose sum is shifted back (exact: a multiple of 16). The rest is
// the AVX2 kernel's arithmetic (interleaved_kernels.h) in 16 lanes. The lines are read in memory
// order, and A accumulators per nibble half and token (steps k % A) cover vpdpbusd's latency:
// reading the quarters side by side instead (a chain per quarter) streamed from memory at half
// the speed on a 2-core Zen 4 VM. There, one core on 288 KB of groups in L2: 52 GB/s, against 40
// for the 8-row kernel this replaced (64-byte loads holding two steps of 8 rows, the activations
// placed by vpermd); 300 MB from memory, in turn with the probe, both asking for the group blocks
// 4 KB ahead: 0.68-0.79 of it against 0.54-0.58 on one core, 0.85-0.90 against 0.79-0.81 on two.
// Without asking ahead, as on Zen 4 now (group_bytes_ahead, weight_prefetch.cpp): 0.88-0.90 and 0.96.
// Each line is asked for as the kernel reaches it rather than the block's 36 at its start: on a
// 2-core Zen 5 VM (8 KB ahead, weight_prefetch.cpp), an 87 MB matrix of Qwen3-0.6B's LM head
// shape read in turn with the probe at 0.91 of it against 0.80-0.82, and tokens taking turns in
// one process (medians, 3 runs of 128) were 17% faster for Qwen3-0.6B q4_k, 5.5% for Llama-3.2-1B
// q4_k. The same reads without the arithmetic streamed at the probe's rate either way.
// Unlike the Q8_0 kernels, it does not also start the translation of the page 16 KB ahead
// (touch_page_ahead): on a 2-core Zen 5 VM, tokens with and without it taking turns eight at a
// time in one process (tg128 -r 20, four runs), those without took 1.2-2.1% less time (Qwen3-0.6B
// q4_k three times, Llama-3.2-1B q4_k once, faster in 11-19 of 21 runs), where the Q8_0 kernels
// lost 1-2% without theirs (the same runs). The bandwidth probe reads this way too (its fifth).
template <int T>
struct Q4KInterleavedAvx512 {
    static constexpr int A = T == 1 ? 4 : T == 2 ? 2 : 1;  // accumulators per nibble half and token
    static void run(int64_t blocks, const uint8_t* p, const ActBlock256* const* act, float* y, int64_t ldy) {
        constexpr int kGroupBlock = 2 * kInterleavedRows * blocks::kQ4_KBytes;
        const __m512i low4 = _mm512_set1_epi8(0x0F);
        // The halves' 8 f16 values at `at` and at + 32 (their first pieces), in rows 0-15.
        const auto halves_f16 = [](const uint8_t* at) {
            return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at))),
                                                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(at + 32)), 1));
        };
        const auto both = [](__m256i half0, __m256i half1) { return _mm512_inserti64x4(_mm512_castsi256_si512(half0), half1, 1); };
        __m512 acc[T];
        for (__m512& a : acc) a = _mm512_setzero_ps();
        for (int64_t b = 0; b < blocks; ++b, p += kGroupBlock) {
            // The block's 36 lines asked for one at a time as the block reaches them (its scales
            // first), not all at its start: see the comment above.
            for (int line = 0; line < 4; ++line) prefetch_group_line(p + 64 * line);
            const Q4KGroupScales s[2] = {unpack_q4_k_group_scales<64>(p), unpack_q4_k_group_scales<64>(p + 32)};
            __m512i sumi[T];
            for (__m512i& sum : sumi) sum = _mm512_setzero_si512();
            for (int c = 0; c < 4; ++c) {
                __m512i lo_sum[T][A], hi_sum[T][A];
                for (int t = 0; t < T; ++t)
                    for (int a = 0; a < A; ++a) lo_sum[t][a] = hi_sum[t][a] = _mm512_setzero_si512();
                for (int k = 0; k < 8; ++k) {
                    const uint8_t* line = p + 64 * (4 + 8 * c + k);
                    prefetch_group_line(line);
                    const __m512i codes = _mm512_loadu_si512(line);
                    const __m512i lo = _mm512_and_si512(codes, low4), hi = _mm512_andnot_si512(low4, codes);
                    for (int t = 0; t < T; ++t) {
                        lo_sum[t][k % A] = dpbusd_broadcast(lo_sum[t][k % A], lo, act[t][b].q + 64 * c + 4 * k);
                        hi_sum[t][k % A] = dpbusd_broadcast(hi_sum[t][k % A], hi, act[t][b].q + 64 * c + 32 + 4 * k);
                    }
                }
                __m256i scale_lo[2], scale_hi[2];
                for (int h = 0; h < 2; ++h) q4_k_pair_scales(s[h], c, scale_lo[h], scale_hi[h]);
                const __m512i lo_scales = both(scale_lo[0], scale_lo[1]), hi_scales = both(scale_hi[0], scale_hi[1]);
                for (int t = 0; t < T; ++t) {
                    for (int a = 1; a < A; ++a) {
                        lo_sum[t][0] = _mm512_add_epi32(lo_sum[t][0], lo_sum[t][a]);
                        hi_sum[t][0] = _mm512_add_epi32(hi_sum[t][0], hi_sum[t][a]);
                    }
                    sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(lo_sum[t][0], lo_scales));
                    sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(_mm512_srai_epi32(hi_sum[t][0], 4), hi_scales));
                }
            }
            // add_q4_k_group_block in 16 lanes.
            const __m512 d = halves_f16(p), dmin = halves_f16(p + 16);
            __m512i min_pairs[4];
            for (int pair = 0; pair < 4; ++pair) min_pairs[pair] = both(s[0].min_pairs[pair], s[1].min_pairs[pair]);
            for (int t = 0; t < T; ++t) {
                __m512i summ = _mm512_setzero_si512();
                for (int pair = 0; pair < 4; ++pair) {
                    int32_t sums;  // the activations' sums of sub-blocks 2 pair and 2 pair + 1
                    __builtin_memcpy(&sums, act[t][b].sums32 + 2 * pair, 4);
                    summ = _mm512_add_epi32(summ, _mm512_madd_epi16(min_pairs[pair], _mm512_set1_epi32(sums)));
                }
                const __m512 ad = _mm512_set1_ps(act[t][b].d);
                acc[t] = _mm512_add_ps(acc[t], _mm512_sub_ps(_mm512_mul_ps(_mm512_mul_ps(d, ad), _mm512_cvtepi32_ps(sumi[t])),
                                                             _mm512_mul_ps(_mm512_mul_ps(dmin, ad), _mm512_cvtepi32_ps(summ))));
            }
        }
        for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * ldy, acc[t]);
    }
};

// Interleaved Q8_0 (interleave.h) in 512-bit vectors, G consecutive row groups at once (two share
// each permute: prefill calls for two, gemm_interleaved in matmul.cpp). Each 64-byte load holds two
// 4-value steps of a group's 8 rows (step 2j in the low 8 lanes, 2j + 1 in the high 8), and one
// permute places the matching activations for all G groups, so a block takes 4 loads, permutes and
// vpdpbusd per group where 256-bit vectors took 8 of each and 8 broadcasts (tg128 of Qwen3-0.6B
// q8_0 on a 2-core Zen 5 VM, tokens of both kernels taking turns in one process: 9-23% faster). The
// halves are added at the block's end: the same integer sums as the AVX2 kernel's
// (interleaved_kernels.h), so the same results.
template <int T, int G>
void q8_0_interleaved_avx512(int64_t blocks, const uint8_t* p, const ActBlock32* const* act, float* y, int64_t ldy) {
    constexpr int kGroupBlock = kInterleavedRows * blocks::kQ8_0Bytes;
    const int64_t group_stride = blocks * kGroupBlock;
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    __m512i pick[4];  // activation words 2j and 2j + 1, each in one half
    for (int j = 0; j < 4; ++j) pick[j] = _mm512_inserti64x4(_mm512_set1_epi32(2 * j), _mm256_set1_epi32(2 * j + 1), 1);
    __m256 acc[G][T];
    for (auto& row : acc)
        for (__m256& a : row) a = _mm256_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b, p += kGroupBlock) {
        for (int g = 0; g < G; ++g) prefetch_group_block<kGroupBlock>(p + g * group_stride);
        __m512i sums[G][T][2];  // two chains per group and token
        for (auto& group : sums)
            for (auto& chains : group) chains[0] = chains[1] = _mm512_setzero_si512();
        __m512i a[T];
        for (int t = 0; t < T; ++t) a[t] = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[t][b].q)));
        for (int j = 0; j < 4; ++j) {
            __m512i codes[G];
            for (int g = 0; g < G; ++g) codes[g] = _mm512_xor_si512(_mm512_loadu_si512(p + g * group_stride + 16 + 64 * j), flip);
            for (int t = 0; t < T; ++t) {
                const __m512i steps = _mm512_permutexvar_epi32(pick[j], a[t]);
                for (int g = 0; g < G; ++g) sums[g][t][j % 2] = _mm512_dpbusd_epi32(sums[g][t][j % 2], codes[g], steps);
            }
        }
        for (int g = 0; g < G; ++g) {
            const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + g * group_stride)));
            for (int t = 0; t < T; ++t) {
                // vpdpbusd is unsigned in its first operand, and the codes with their sign bit
                // flipped are code + 128: less 128 times the activations' sum.
                const __m512i sum = _mm512_add_epi32(sums[g][t][0], sums[g][t][1]);
                const __m256i isum = _mm256_add_epi32(_mm256_add_epi32(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1)),
                                                      _mm256_set1_epi32(-128 * act[t][b].qsum));
                acc[g][t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(act[t][b].d)), _mm256_cvtepi32_ps(isum), acc[g][t]);
            }
        }
    }
    for (int g = 0; g < G; ++g)
        for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ldy + g * kInterleavedRows, acc[g][t]);
}

// The level's interleaved Q8_0 tile: two groups at once where the caller asks (prefill), else one
// at a time.
void interleaved_q8_0_avx512(int64_t cols, const std::byte* group, int groups, const void* const* acts, int tokens, float* y, int64_t ldy) {
    const auto* p = reinterpret_cast<const uint8_t*>(group);
    const auto* a = reinterpret_cast<const ActBlock32* const*>(acts);
    const int64_t blocks = cols / 32, group_stride = blocks * kInterleavedRows * blocks::kQ8_0Bytes;
    with_tokens(tokens, [&](auto count) {
        constexpr int T = decltype(count)::value;
        if (groups == 2) {
            q8_0_interleaved_avx512<T, 2>(blocks, p, a, y, ldy);
            return;
        }
        for (int g = 0; g < groups; ++g) q8_0_interleaved_avx512<T, 1>(blocks, p + g * group_stride, a, y + g * kInterleavedRows, ldy);
    });
}

double peak_bf16_probe_avx512(int64_t iterations, float* sink) {
    // 12 independent vdpbf16ps chains; each lane adds two products (4 floating-point operations).
    __m512 c[12];
    for (int j = 0; j < 12; ++j) c[j] = _mm512_set1_ps(static_cast<float>(j));
    const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80), b = (__m512bh)_mm512_set1_epi32(0x33d633d6);  // bf16 1.0, 1e-7
    for (int64_t i = 0; i < iterations; ++i)
        for (int j = 0; j < 12; ++j) c[j] = _mm512_dpbf16_ps(c[j], a, b);
    __m512 total = c[0];
    for (int j = 1; j < 12; ++j) total = _mm512_add_ps(total, c[j]);
    *sink = _mm512_reduce_add_ps(total);
    return 4.0 * 16 * 12 * static_cast<double>(iterations);
}

}  // namespace

void fill_matmul_avx512bf16(MatmulTable& table) {
    table.dot_q8_0 = over_rows<dot_q8_0<true>>;
    table.dot_q4_0 = over_rows<dot_q4_0<true>>;
    table.dot_q4_k = over_rows<dot_q4_k<true>>;
    table.dot_q4_k_tokens = dot_q4_k_tokens<true>;
    table.gemm_q4_k_tile = gemm_q4_k_tile<true>;
    table.gemm_q6_k_tile = gemm_q6_k_tile<true>;
    table.dot_q6_k = over_rows<dot_q6_k<true>>;
    table.interleaved_q4_k = interleaved_q4_k<Q4KInterleavedAvx512, 2 * kInterleavedRows>;
    table.interleaved_q4_k_rows = 2 * kInterleavedRows;
    table.interleaved_q8_0 = interleaved_q8_0_avx512;
    table.pack_panel_bf16 = pack_panel_bf16_avx512;
    table.gemm_tile_bf16 = gemm_tile_bf16_avx512;
    table.peak_bf16_probe = peak_bf16_probe_avx512;
}

}  // namespace oxinfer::kernels
