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

// Interleaved Q4_K (interleave.h) in 512-bit vectors: one 64-byte load holds two 4-byte steps of
// the 8 rows' codes (lanes 0-7 step k, lanes 8-15 step k + 1), and vpermd puts each step's 4
// activations in its half from one 64-byte load of the sub-block pair's activations. Per sub-block
// the two halves' sums add up before the scale weights them; the rest is the AVX2 kernel's
// (interleaved_kernels.h). vpdpbusd takes the low nibbles, and the high nibbles left in place (16
// times the code: at most 8 * 4 * 240 * 127 per lane and sub-block), whose sum is shifted back
// (exact: a multiple of 16). On a 2-core EPYC VM (Zen 5), one core on 36 KB of groups in L1/L2:
// 65 GB/s, against 41 GB/s for the same steps in 256-bit vectors with broadcast activations (the
// kernel this one replaced); tg128 of Qwen3-0.6B q4_k with --bandwidth, alternating runs: 0.72 of
// the bound before, 0.77 after.
template <int T>
struct Q4KInterleavedAvx512 {
    static void run(int64_t blocks, const uint8_t* p, const ActBlock256* const* act, float* y, int64_t ldy) {
        constexpr int kGroupBlock = kInterleavedRows * blocks::kQ4_KBytes;
        const __m512i low4 = _mm512_set1_epi8(0x0F);
        // place[j], j < 4: lanes 0-7 take 32-bit word 2j of the pair's activations, lanes 8-15
        // word 2j + 1 (steps 2j, 2j + 1 of the low nibbles' sub-block); j >= 4: the same 8 words
        // on (the high nibbles' sub-block).
        __m512i place[8];
        for (int j = 0; j < 8; ++j) {
            const int word = 2 * (j % 4) + 8 * (j / 4);
            place[j] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(word)), _mm256_set1_epi32(word + 1), 1);
        }
        __m256 acc[T];
        for (__m256& a : acc) a = _mm256_setzero_ps();
        for (int64_t b = 0; b < blocks; ++b, p += kGroupBlock) {
            prefetch_group_block<kGroupBlock>(p);
            const Q4KGroupScales s = unpack_q4_k_group_scales(p);
            __m256i sumi[T];
            for (__m256i& sum : sumi) sum = _mm256_setzero_si256();
            for (int c = 0; c < 4; ++c) {
                __m512i a[T], lo_sum[T], hi_sum[T];
                for (int t = 0; t < T; ++t) {
                    a[t] = _mm512_loadu_si512(act[t][b].q + 64 * c);
                    lo_sum[t] = hi_sum[t] = _mm512_setzero_si512();
                }
                for (int step = 0; step < 4; ++step) {
                    const __m512i codes = _mm512_loadu_si512(p + 128 + 32 * (8 * c + 2 * step));
                    const __m512i lo = _mm512_and_si512(codes, low4), hi = _mm512_andnot_si512(low4, codes);
                    for (int t = 0; t < T; ++t) {
                        lo_sum[t] = _mm512_dpbusd_epi32(lo_sum[t], lo, _mm512_permutexvar_epi32(place[step], a[t]));
                        hi_sum[t] = _mm512_dpbusd_epi32(hi_sum[t], hi, _mm512_permutexvar_epi32(place[4 + step], a[t]));
                    }
                }
                __m256i scale_lo, scale_hi;
                q4_k_pair_scales(s, c, scale_lo, scale_hi);
                for (int t = 0; t < T; ++t) {
                    const __m256i lo = _mm256_add_epi32(_mm512_castsi512_si256(lo_sum[t]), _mm512_extracti64x4_epi64(lo_sum[t], 1));
                    const __m256i hi = _mm256_add_epi32(_mm512_castsi512_si256(hi_sum[t]), _mm512_extracti64x4_epi64(hi_sum[t], 1));
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_mullo_epi32(lo, scale_lo));
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_mullo_epi32(_mm256_srai_epi32(hi, 4), scale_hi));
                }
            }
            add_q4_k_group_block<T>(p, s, sumi, act, b, acc);
        }
        for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);
    }
};

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
    table.interleaved_q4_k = interleaved_q4_k<Q4KInterleavedAvx512>;
    table.interleaved_q8_0 = interleaved_q8_0<true, true>;
    table.pack_panel_bf16 = pack_panel_bf16_avx512;
    table.gemm_tile_bf16 = gemm_tile_bf16_avx512;
    table.peak_bf16_probe = peak_bf16_probe_avx512;
}

}  // namespace oxinfer::kernels
