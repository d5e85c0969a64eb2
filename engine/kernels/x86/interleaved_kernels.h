#pragma once
// Kernels for interleaved Q4_K and Q8_0 weights in groups of 8 rows (kernels/interleave.h): a
// group's 8 rows in the 8 int32 lanes of a 256-bit vector, each 4 codes of a row multiplied by the
// same 4 activations broadcast from memory. Q8_0 and Q4_K for AVX2, and the Q4_K scale unpacking
// that the AVX-512 VNNI kernel for groups of 16 (matmul_avx512bf16.cpp) shares. Internal linkage, as
// k_quant_kernels.h (which this builds on); include after <immintrin.h> (or the tests' AVX-512
// emulation header).

#include "kernels/block_layouts.h"
#include "kernels/interleave.h"
#include "kernels/matmul_table.h"
#include "kernels/x86/k_quant_kernels.h"
#include "kernels/x86/weight_prefetch.h"

namespace oxinfer::kernels {
namespace {

inline __m256i broadcast_4_bytes(const int8_t* p) {
    int32_t v;
    __builtin_memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

// A Q4_K group block's scales and mins, unpacked for its 8 rows at once (or for one half of a
// 16-row group block: kPieces 64, see interleave.h).
struct Q4KGroupScales {
    // Byte 8 j + r: sub-block j's 6-bit scale of row r (sub-blocks 0-3 in the first, 4-7 in the second).
    __m256i scales[2];
    // The mins of sub-blocks 2c and 2c+1 as an int16 pair per row lane: madd's first operand.
    __m256i min_pairs[4];
};

template <int kPieces = 32>  // bytes from one 32-byte piece of the 8 rows to the next
inline Q4KGroupScales unpack_q4_k_group_scales(const uint8_t* p) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), low6 = _mm256_set1_epi8(63), bits45 = _mm256_set1_epi8(0x30);
    // Byte i of the 12 scale bytes of all 8 rows, 4 values of i per vector (see k4_scale_min).
    const __m256i s03 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kPieces));
    const __m256i s47 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * kPieces));
    const __m256i s811 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 3 * kPieces));
    Q4KGroupScales out;
    out.scales[0] = _mm256_and_si256(s03, low6);
    out.scales[1] = _mm256_or_si256(_mm256_and_si256(s811, low4), _mm256_and_si256(_mm256_srli_epi16(s03, 2), bits45));
    const __m256i mins03 = _mm256_and_si256(s47, low6);
    const __m256i mins47 =
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(s811, 4), low4), _mm256_and_si256(_mm256_srli_epi16(s47, 2), bits45));
    for (int half = 0; half < 2; ++half) {
        const __m256i mins = half ? mins47 : mins03;
        const __m256i pairs = _mm256_unpacklo_epi8(mins, _mm256_srli_si256(mins, 8));
        out.min_pairs[2 * half] = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(pairs));
        out.min_pairs[2 * half + 1] = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(pairs, 1));
    }
    return out;
}

// The scales of sub-blocks 2c (low nibbles) and 2c+1 (high nibbles), one int32 per row lane.
inline void q4_k_pair_scales(const Q4KGroupScales& s, int c, __m256i& low, __m256i& high) {
    const __m128i bytes = c % 2 ? _mm256_extracti128_si256(s.scales[c / 2], 1) : _mm256_castsi256_si128(s.scales[c / 2]);
    low = _mm256_cvtepu8_epi32(bytes);
    high = _mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8));
}

// acc[t] + the block's part of token t's 8 dot products, as dot_q4_k_scalar computes it: d times
// the scaled integer sums (sumi[t]), less dmin times the mins weighted by the activations'
// 32-value sums, both times the activations' d.
template <int T>
inline void add_q4_k_group_block(const uint8_t* p, const Q4KGroupScales& s, const __m256i (&sumi)[T], const ActBlock256* const* act,
                                 int64_t b, __m256 (&acc)[T]) {
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
    for (int t = 0; t < T; ++t) {
        __m256i summ = _mm256_setzero_si256();
        for (int pair = 0; pair < 4; ++pair) {
            int32_t sums;  // the activations' sums of sub-blocks 2 pair and 2 pair + 1
            __builtin_memcpy(&sums, act[t][b].sums32 + 2 * pair, 4);
            summ = _mm256_add_epi32(summ, _mm256_madd_epi16(s.min_pairs[pair], _mm256_set1_epi32(sums)));
        }
        const __m256 ad = _mm256_set1_ps(act[t][b].d);
        acc[t] = _mm256_add_ps(acc[t], _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(d, ad), _mm256_cvtepi32_ps(sumi[t])),
                                                     _mm256_mul_ps(_mm256_mul_ps(dmin, ad), _mm256_cvtepi32_ps(summ))));
    }
}

// Q4_K on AVX2: per group block, the 8 rows' scales and mins unpacked at once; per sub-block of 32
// values the 8 rows' integer sums in the lanes of one vector, weighted by their scales in
// integers; the block's d and dmin applied in float (add_q4_k_group_block). maddubs sums pairs of
// products into 16 bits; 8 of them per sub-block (at most 8 * 2 * 15 * 127 = 30480) add up in 16
// bits before madd weights them by the scale. The loop stays written out here and in the AVX-512
// kernel (matmul_avx512bf16.cpp): shared as a function taking the sub-block step as a lambda, GCC
// 12 kept this kernel's scales and sums in memory and it ran at a third of the speed.
template <int T>
struct Q4KInterleavedAvx2 {
    static void run(int64_t blocks, const uint8_t* p, const ActBlock256* const* act, float* y, int64_t ldy) {
        constexpr int kGroupBlock = kInterleavedRows * blocks::kQ4_KBytes;
        const __m256i low4 = _mm256_set1_epi8(0x0F);
        __m256 acc[T];
        for (__m256& a : acc) a = _mm256_setzero_ps();
        for (int64_t b = 0; b < blocks; ++b, p += kGroupBlock) {
            prefetch_group_block<kGroupBlock>(p);
            const Q4KGroupScales s = unpack_q4_k_group_scales(p);
            __m256i sumi[T];
            for (__m256i& sum : sumi) sum = _mm256_setzero_si256();
            for (int c = 0; c < 4; ++c) {
                __m256i lo_sum[T], hi_sum[T];
                for (int t = 0; t < T; ++t) lo_sum[t] = hi_sum[t] = _mm256_setzero_si256();
                for (int k = 0; k < 8; ++k) {
                    const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 128 + 32 * (8 * c + k)));
                    const __m256i lo = _mm256_and_si256(codes, low4), hi = _mm256_and_si256(_mm256_srli_epi16(codes, 4), low4);
                    for (int t = 0; t < T; ++t) {
                        lo_sum[t] = _mm256_add_epi16(lo_sum[t], _mm256_maddubs_epi16(lo, broadcast_4_bytes(act[t][b].q + 64 * c + 4 * k)));
                        hi_sum[t] =
                            _mm256_add_epi16(hi_sum[t], _mm256_maddubs_epi16(hi, broadcast_4_bytes(act[t][b].q + 64 * c + 32 + 4 * k)));
                    }
                }
                __m256i scale_lo, scale_hi;
                q4_k_pair_scales(s, c, scale_lo, scale_hi);
                // The scale in both halves of each lane: madd weights both 16-bit sums by it.
                scale_lo = _mm256_or_si256(scale_lo, _mm256_slli_epi32(scale_lo, 16));
                scale_hi = _mm256_or_si256(scale_hi, _mm256_slli_epi32(scale_hi, 16));
                for (int t = 0; t < T; ++t) {
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(lo_sum[t], scale_lo));
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(hi_sum[t], scale_hi));
                }
            }
            add_q4_k_group_block<T>(p, s, sumi, act, b, acc);
        }
        for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);
    }
};

// The interleaved Q4_K tile (InterleavedTile) of a level's one-group kernel for groups of kRows,
// Kernel<T>::run(blocks, group, acts, y, ldy) for T tokens.
template <template <int> class Kernel, int64_t kRows>
void interleaved_q4_k(int64_t cols, const std::byte* group, int groups, const void* const* acts, int tokens, float* y, int64_t ldy) {
    const int64_t group_stride = cols / 256 * kRows * blocks::kQ4_KBytes;
    with_tokens(tokens, [&](auto count) {
        for (int g = 0; g < groups; ++g)
            Kernel<decltype(count)::value>::run(cols / 256, reinterpret_cast<const uint8_t*>(group) + g * group_stride,
                                                 reinterpret_cast<const ActBlock256* const*>(acts), y + g * kRows, ldy);
    });
}

// Q8_0 in 256-bit vectors (AVX2), one group of 8 rows: maddubs of |code| and the activations
// carrying the code's sign (as dot_q8_0 does), each pair sum (up to 2 * 128 * 127) widened by madd
// at once; even and odd steps accumulate separately to cover the latency. The work per block and
// token besides the 8 products is 4 vector operations: a block is only 32 values. (AVX-512 VNNI
// has its own kernel, in 512-bit vectors: matmul_avx512bf16.cpp.)
template <int T>
void q8_0_interleaved_avx2(int64_t blocks, const uint8_t* p, const ActBlock32* const* act, float* y, int64_t ldy) {
    constexpr int kGroupBlock = kInterleavedRows * blocks::kQ8_0Bytes;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[T];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b, p += kGroupBlock) {
        prefetch_group_block<kGroupBlock>(p);
        __m256i sums[T][2];
        for (auto& chains : sums) chains[0] = chains[1] = _mm256_setzero_si256();
        for (int k = 0; k < 8; ++k) {
            const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16 + 32 * k));
            for (int t = 0; t < T; ++t) {
                const __m256i a = broadcast_4_bytes(act[t][b].q + 4 * k);
                sums[t][k % 2] = _mm256_add_epi32(sums[t][k % 2], _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(codes), _mm256_sign_epi8(a, codes)), ones));
            }
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        for (int t = 0; t < T; ++t)
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(act[t][b].d)), _mm256_cvtepi32_ps(_mm256_add_epi32(sums[t][0], sums[t][1])), acc[t]);
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

// The AVX2 interleaved Q8_0 tile, one group at a time (16 vector registers).
inline void interleaved_q8_0_avx2(int64_t cols, const std::byte* group, int groups, const void* const* acts, int tokens, float* y, int64_t ldy) {
    const auto* p = reinterpret_cast<const uint8_t*>(group);
    const auto* a = reinterpret_cast<const ActBlock32* const*>(acts);
    const int64_t blocks = cols / 32, group_stride = blocks * kInterleavedRows * blocks::kQ8_0Bytes;
    with_tokens(tokens, [&](auto count) {
        for (int g = 0; g < groups; ++g)
            q8_0_interleaved_avx2<decltype(count)::value>(blocks, p + g * group_stride, a, y + g * kInterleavedRows, ldy);
    });
}

}  // namespace
}  // namespace oxinfer::kernels
