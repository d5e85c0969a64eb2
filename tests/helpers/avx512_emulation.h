#pragma once
// AVX-512 intrinsics in portable C++, so that the tests can run the AVX-512 kernels on CPUs
// without AVX-512 (tests/CMakeLists.txt compiles engine/kernels/x86/*_avx512*.cpp a second time
// with OXINFER_SIMD_EMULATION). SIMDe (Debian's libsimde-dev) provides most of them under their
// Intel names; this header adds the ones SIMDe 0.7.4 lacks, each written from Intel's definition
// of the instruction, lane by lane. Emulation checks the kernels' logic (lanes, masks, tails,
// shuffles, reductions); it cannot check timing or the rare corner cases where hardware differs
// from the written definition (denormals in vdpbf16ps).

#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>

#include <cmath>
#include <cstdint>
#include <cstring>

using __mmask8 = simde__mmask8;
using __mmask16 = simde__mmask16;

#ifndef _MM_FROUND_TO_NEAREST_INT
#define _MM_FROUND_TO_NEAREST_INT SIMDE_MM_FROUND_TO_NEAREST_INT
#endif
#ifndef _MM_FROUND_NO_EXC
#define _MM_FROUND_NO_EXC SIMDE_MM_FROUND_NO_EXC
#endif

namespace oxinfer_emulation {

template <class T, class V>
inline void to_lanes(V v, T* lanes) { std::memcpy(lanes, &v, sizeof(V)); }
template <class V, class T>
inline V from_lanes(const T* lanes) {
    V v;
    std::memcpy(&v, lanes, sizeof(V));
    return v;
}
inline bool lane_on(unsigned mask, int i) { return (mask >> i) & 1u; }

inline float half_to_float(uint16_t h) { return simde_float16_to_float32(simde_uint16_as_float16(h)); }
inline uint16_t float_to_half(float f) { return simde_float16_as_uint16(simde_float16_from_float32(f)); }


inline __m512 mm512_mask_loadu_ps(__m512 src, __mmask16 k, const void* p) {
    float lanes[16];
    to_lanes(src, lanes);
    for (int i = 0; i < 16; ++i)
        if (lane_on(k, i)) std::memcpy(&lanes[i], static_cast<const float*>(p) + i, 4);
    return from_lanes<__m512>(lanes);
}
inline __m512 mm512_maskz_loadu_ps(__mmask16 k, const void* p) { return mm512_mask_loadu_ps(_mm512_setzero_ps(), k, p); }
inline void mm512_mask_storeu_ps(void* p, __mmask16 k, __m512 v) {
    float lanes[16];
    to_lanes(v, lanes);
    for (int i = 0; i < 16; ++i)
        if (lane_on(k, i)) std::memcpy(static_cast<float*>(p) + i, &lanes[i], 4);
}
inline __m256 mm256_maskz_loadu_ps(__mmask8 k, const void* p) {
    float lanes[8] = {};
    for (int i = 0; i < 8; ++i)
        if (lane_on(k, i)) std::memcpy(&lanes[i], static_cast<const float*>(p) + i, 4);
    return from_lanes<__m256>(lanes);
}
inline __m256i mm256_maskz_loadu_epi16(__mmask16 k, const void* p) {
    uint16_t lanes[16] = {};
    for (int i = 0; i < 16; ++i)
        if (lane_on(k, i)) std::memcpy(&lanes[i], static_cast<const uint16_t*>(p) + i, 2);
    return from_lanes<__m256i>(lanes);
}
inline void mm256_mask_storeu_epi16(void* p, __mmask16 k, __m256i v) {
    uint16_t lanes[16];
    to_lanes(v, lanes);
    for (int i = 0; i < 16; ++i)
        if (lane_on(k, i)) std::memcpy(static_cast<uint16_t*>(p) + i, &lanes[i], 2);
}

// Reductions: the hardware-free definitions add pairwise halves (as GCC's own headers do).
inline float mm512_reduce_add_ps(__m512 v) {
    float l[16];
    to_lanes(v, l);
    for (int width = 8; width >= 1; width /= 2)
        for (int i = 0; i < width; ++i) l[i] += l[i + width];
    return l[0];
}
inline float mm512_reduce_max_ps(__m512 v) {
    float l[16];
    to_lanes(v, l);
    for (int width = 8; width >= 1; width /= 2)
        for (int i = 0; i < width; ++i) l[i] = l[i] > l[i + width] ? l[i] : l[i + width];
    return l[0];
}
inline double mm512_reduce_add_pd(__m512d v) {
    double l[8];
    to_lanes(v, l);
    for (int width = 4; width >= 1; width /= 2)
        for (int i = 0; i < width; ++i) l[i] += l[i + width];
    return l[0];
}

inline __m512d mm512_cvtps_pd(__m256 v) {
    float in[8];
    double out[8];
    to_lanes(v, in);
    for (int i = 0; i < 8; ++i) out[i] = in[i];
    return from_lanes<__m512d>(out);
}
inline __m512 mm512_cvtph_ps(__m256i v) {
    uint16_t in[16];
    float out[16];
    to_lanes(v, in);
    for (int i = 0; i < 16; ++i) out[i] = half_to_float(in[i]);
    return from_lanes<__m512>(out);
}
inline __m256i mm512_cvtps_ph(__m512 v, int /*rounding: nearest even, the only mode the kernels use*/) {
    float in[16];
    uint16_t out[16];
    to_lanes(v, in);
    for (int i = 0; i < 16; ++i) out[i] = float_to_half(in[i]);
    return from_lanes<__m256i>(out);
}
inline __m512i mm512_cvtepu16_epi32(__m256i v) {
    uint16_t in[16];
    uint32_t out[16];
    to_lanes(v, in);
    for (int i = 0; i < 16; ++i) out[i] = in[i];
    return from_lanes<__m512i>(out);
}
// GCC's own header defines these two as functions for AVX-512 targets only, and SIMDe 0.7.4 leaves
// their names to it.
inline __m512i mm512_srai_epi32(__m512i a, unsigned int count) {
    int32_t l[16];
    to_lanes(a, l);
    for (int32_t& x : l) x = count > 31 ? (x < 0 ? -1 : 0) : x >> count;
    return from_lanes<__m512i>(l);
}
inline __m512 mm512_cvtepi32_ps(__m512i a) {
    int32_t in[16];
    float out[16];
    to_lanes(a, in);
    for (int i = 0; i < 16; ++i) out[i] = static_cast<float>(in[i]);
    return from_lanes<__m512>(out);
}
inline __m256i mm512_cvtepi32_epi16(__m512i v) {  // truncation
    uint32_t in[16];
    uint16_t out[16];
    to_lanes(v, in);
    for (int i = 0; i < 16; ++i) out[i] = static_cast<uint16_t>(in[i]);
    return from_lanes<__m256i>(out);
}
inline __m512 mm512_permute_ps(__m512 v, int control) {  // the same 4-lane shuffle in each 128-bit lane
    float in[16], out[16];
    to_lanes(v, in);
    for (int i = 0; i < 16; ++i) out[i] = in[(i & ~3) + ((control >> (2 * (i & 3))) & 3)];
    return from_lanes<__m512>(out);
}
// 128-bit lanes 0 and 1 from a, 2 and 3 from b, each chosen by two bits of control.
inline __m512 mm512_shuffle_f32x4(__m512 a, __m512 b, int control) {
    float from_a[16], from_b[16], out[16];
    to_lanes(a, from_a);
    to_lanes(b, from_b);
    for (int lane = 0; lane < 4; ++lane) {
        const float* source = (lane < 2 ? from_a : from_b) + 4 * ((control >> (2 * lane)) & 3);
        std::memcpy(out + 4 * lane, source, 16);
    }
    return from_lanes<__m512>(out);
}
inline __m512i mm512_mask_i32gather_epi32(__m512i src, __mmask16 k, __m512i index, const void* base, int scale) {
    int32_t lanes[16], offsets[16];
    to_lanes(src, lanes);
    to_lanes(index, offsets);
    for (int i = 0; i < 16; ++i)
        if (lane_on(k, i))
            std::memcpy(&lanes[i], static_cast<const char*>(base) + static_cast<int64_t>(offsets[i]) * scale, 4);
    return from_lanes<__m512i>(lanes);
}
inline float cvtsh_ss(unsigned short h) { return half_to_float(h); }
// SIMDe 0.7.4's alias of this name takes the masked form's 4 arguments.
inline __m512i mm512_madd_epi16(__m512i a, __m512i b) {
    int16_t x[32], y[32];
    int32_t out[16];
    to_lanes(a, x);
    to_lanes(b, y);
    for (int i = 0; i < 16; ++i) out[i] = int32_t{x[2 * i]} * y[2 * i] + int32_t{x[2 * i + 1]} * y[2 * i + 1];
    return from_lanes<__m512i>(out);
}

}  // namespace oxinfer_emulation

// The kernels call them by their Intel names (GCC's own headers declare some of these names too).
#undef _mm512_mask_loadu_ps
#undef _mm512_maskz_loadu_ps
#undef _mm512_mask_storeu_ps
#undef _mm256_maskz_loadu_ps
#undef _mm256_maskz_loadu_epi16
#undef _mm256_mask_storeu_epi16
#undef _mm512_reduce_add_ps
#undef _mm512_reduce_max_ps
#undef _mm512_reduce_add_pd
#undef _mm512_cvtps_pd
#undef _mm512_cvtph_ps
#undef _mm512_cvtps_ph
#undef _mm512_cvtepu16_epi32
#undef _mm512_cvtepi32_epi16
#undef _mm512_permute_ps
#undef _mm512_mask_i32gather_epi32
#undef _mm512_shuffle_f32x4
#undef _cvtsh_ss
#undef _mm512_madd_epi16
#undef _mm512_srai_epi32
#undef _mm512_cvtepi32_ps
#define _mm512_mask_loadu_ps oxinfer_emulation::mm512_mask_loadu_ps
#define _mm512_maskz_loadu_ps oxinfer_emulation::mm512_maskz_loadu_ps
#define _mm512_mask_storeu_ps oxinfer_emulation::mm512_mask_storeu_ps
#define _mm256_maskz_loadu_ps oxinfer_emulation::mm256_maskz_loadu_ps
#define _mm256_maskz_loadu_epi16 oxinfer_emulation::mm256_maskz_loadu_epi16
#define _mm256_mask_storeu_epi16 oxinfer_emulation::mm256_mask_storeu_epi16
#define _mm512_reduce_add_ps oxinfer_emulation::mm512_reduce_add_ps
#define _mm512_reduce_max_ps oxinfer_emulation::mm512_reduce_max_ps
#define _mm512_reduce_add_pd oxinfer_emulation::mm512_reduce_add_pd
#define _mm512_cvtps_pd oxinfer_emulation::mm512_cvtps_pd
#define _mm512_cvtph_ps oxinfer_emulation::mm512_cvtph_ps
#define _mm512_cvtps_ph oxinfer_emulation::mm512_cvtps_ph
#define _mm512_cvtepu16_epi32 oxinfer_emulation::mm512_cvtepu16_epi32
#define _mm512_cvtepi32_epi16 oxinfer_emulation::mm512_cvtepi32_epi16
#define _mm512_permute_ps oxinfer_emulation::mm512_permute_ps
#define _mm512_mask_i32gather_epi32 oxinfer_emulation::mm512_mask_i32gather_epi32
#define _mm512_shuffle_f32x4 oxinfer_emulation::mm512_shuffle_f32x4
#define _cvtsh_ss oxinfer_emulation::cvtsh_ss
#define _mm512_madd_epi16 oxinfer_emulation::mm512_madd_epi16
#define _mm512_srai_epi32 oxinfer_emulation::mm512_srai_epi32
#define _mm512_cvtepi32_ps oxinfer_emulation::mm512_cvtepi32_ps
