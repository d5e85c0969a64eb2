#pragma once
// The Q8_0 and Q4_0 row dots (32-value blocks against ActBlock32 activations) on 256-bit integer
// vectors, for AVX2 (kVnni false: maddubs and madd) and AVX-512 VNNI (kVnni true: vpdpbusd).
// Internal linkage, like k_quant_kernels.h; include it after <immintrin.h> (or the tests'
// AVX-512 emulation header).
//
// A block is one vector of products and one multiply-add into a float accumulator, so with a
// single accumulator each block waited for the previous block's multiply-add (4 cycles), about
// the whole of a block's time from L2: the blocks alternate between two accumulators instead.

#include "kernels/block_layouts.h"
#include "kernels/matmul_table.h"
#include "kernels/x86/vec256.h"
#include "kernels/x86/weight_prefetch.h"

namespace oxinfer::kernels {
namespace {

// Products of unsigned bytes u and signed bytes s, summed in fours into 8 int32 lanes (u <= 128
// and |s| <= 127 keep maddubs's pair sums within int16).
template <bool kVnni>
inline __m256i dot_u8_i8(__m256i u, __m256i s) {
    if constexpr (kVnni) return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
    else return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// A Q8_0 block's products with its activations: |w| times a with w's sign moved onto it.
template <bool kVnni>
inline __m256i q8_0_block_sums(const uint8_t* block, const ActBlock32& a) {
    const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
    const __m256i aq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q));
    return dot_u8_i8<kVnni>(_mm256_abs_epi8(wq), _mm256_sign_epi8(aq, wq));
}

// A Q4_0 block's: the codes (0..15, stored +8; values 0..15 of the block in the low nibbles, 16..31
// in the high ones) times the activations, less 8 times their sum, all in integers.
template <bool kVnni>
inline __m256i q4_0_block_sums(const uint8_t* block, const ActBlock32& a) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
    const __m256i codes = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0xF));
    const __m256i sums = dot_u8_i8<kVnni>(codes, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q)));
    return _mm256_sub_epi32(sums, _mm256_zextsi128_si256(_mm_cvtsi32_si128(8 * a.qsum)));
}

// The row dot of blocks of kBlockBytes bytes (an f16 scale, then codes) for 32 values each: per
// block, its integer sums times the two scales into a float accumulator.
template <int kBlockBytes, __m256i (*kBlockSums)(const uint8_t*, const ActBlock32&)>
float dot_blocks32(int64_t n, const std::byte* w, const void* a) {
    const auto* act = static_cast<const ActBlock32*>(a);
    auto* p = reinterpret_cast<const uint8_t*>(w);
    __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
    const auto add_block = [&](int64_t b, __m256& acc) {
        const uint8_t* block = p + b * kBlockBytes;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(half(block) * act[b].d), _mm256_cvtepi32_ps(kBlockSums(block, act[b])), acc);
    };
    const int64_t count = n / 32;
    int64_t b = 0;
    for (; b + 2 <= count; b += 2) {
        prefetch_blocks(p + b * kBlockBytes);
        if constexpr (2 * kBlockBytes > 64) prefetch_blocks(p + b * kBlockBytes + 64);  // every cache line of the pair
        prefetch_blocks_page_ahead(p + b * kBlockBytes, 2 * kBlockBytes);
        add_block(b, even);
        add_block(b + 1, odd);
    }
    if (b < count) add_block(b, even);
    return hsum(_mm256_add_ps(even, odd));
}

template <bool kVnni>
float dot_q8_0(int64_t n, const std::byte* w, const void* a) {
    return dot_blocks32<blocks::kQ8_0Bytes, q8_0_block_sums<kVnni>>(n, w, a);
}
template <bool kVnni>
float dot_q4_0(int64_t n, const std::byte* w, const void* a) {
    return dot_blocks32<blocks::kQ4_0Bytes, q4_0_block_sums<kVnni>>(n, w, a);
}

}  // namespace
}  // namespace oxinfer::kernels
