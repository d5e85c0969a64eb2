#pragma once
// Small pieces the 256-bit kernel files share: an f16 scale read as float and horizontal sums.
// Internal linkage, so each including file keeps its own copy in its own instruction set (see
// matmul_avx512.cpp on shared inline functions). Include it after <immintrin.h> (or the tests'
// AVX-512 emulation header).

#include "kernels/block_layouts.h"

namespace oxinfer::kernels {
namespace {

inline float half(const uint8_t* p) { return _cvtsh_ss(blocks::load_u16(p)); }
inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

}  // namespace
}  // namespace oxinfer::kernels
