// AVX2 + FMA + F16C versions of the hot ops (kernels/ops_table.h).
//
// This file is compiled with -mavx2 -mfma -mf16c and must stay self-contained: everything lives in
// an anonymous namespace and uses only intrinsics and plain loops. Calling an inline function or
// template shared with other files (std::min on floats, std::vector methods, <cmath> overloads,
// lambdas handed to templates from other headers) would emit an AVX2 copy of it under its common
// name, which the linker may keep for the whole program; it would then die with "Illegal
// instruction" on an older CPU. The only exported symbol is fill_ops_avx2().
//
// Accuracy (checked against double precision over their whole useful range, see the tests):
//   exp:  Cephes expf reduction and polynomial, max relative error 1.4 ulp (1e-7), right from
//         2^-149 up to overflow; NaN in, NaN out.
//   tanh: Cephes tanhf (odd polynomial below 0.625, 1 - 2/(e^2x + 1) above), 2.2 ulp.
//   erfc: Numerical Recipes' erfcc fit (relative error 1.05e-7 everywhere) on top of exp, with
//         exp(-z²) taken from the exactly split z² so the large exponent adds no error.
// Reductions (sums of squares, softmax sums) accumulate in double like the scalar reference.
// RoPE, add, mul, scale and the conversions do the same float operations in the same order as the
// scalar code (no FMA contraction), so they match it bit for bit.

// GCC fuses a multiply and an add written as separate intrinsics into one FMA (-ffp-contract=fast
// is its default even in ISO mode), which would make RoPE and the GELU argument differ from the
// scalar code. Explicit _fmadd_ intrinsics still give FMAs. (Clang and MSVC do not fuse across
// statements.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "kernels/ops_table.h"

#include <immintrin.h>

#include "kernels/x86/kv_prefetch.h"
#include "kernels/x86/vec256.h"

namespace oxinfer::kernels {
namespace {

// ---- helpers ----------------------------------------------------------------------------------

inline __m256i tail_mask(int64_t rem) {  // lanes [0, rem) set, rem in [0, 8]
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rem)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline __m256 load_tail(const float* p, int64_t rem) { return _mm256_maskload_ps(p, tail_mask(rem)); }
inline void store_tail(float* p, __m256 v, int64_t rem) { _mm256_maskstore_ps(p, tail_mask(rem), v); }

inline double hsum(__m256d v) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
}
inline __m256d widen_lo(__m256 v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
inline __m256d widen_hi(__m256 v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }

inline float inv_sqrt_double(double value) {  // (float)(1 / sqrt(value)), as the scalar code
    const double root = _mm_cvtsd_f64(_mm_sqrt_sd(_mm_setzero_pd(), _mm_set_sd(value)));
    return static_cast<float>(1.0 / root);
}

inline __m256 exp256(__m256 x) {
    // min/max return their second operand when one is NaN, so a NaN passes through.
    x = _mm256_min_ps(_mm256_set1_ps(89.0f), x);
    x = _mm256_max_ps(_mm256_set1_ps(-104.0f), x);
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    // 2^n in two halves: n reaches -150 (denormal results) and 128 (overflow to inf).
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
}

inline __m256 abs256(__m256 x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }

inline __m256 tanh256(__m256 x) {
    const __m256 a = abs256(x);
    const __m256 z = _mm256_mul_ps(a, a);
    __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
    const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), a, a);
    const __m256 e = exp256(_mm256_add_ps(a, a));
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 large = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
    const __m256 t = _mm256_blendv_ps(large, small, _mm256_cmp_ps(a, _mm256_set1_ps(0.625f), _CMP_LT_OQ));
    return _mm256_or_ps(t, _mm256_and_ps(x, _mm256_set1_ps(-0.0f)));
}

// erfc(z) for z >= 0 (NR erfcc): t = 1/(1 + z/2), erfc = t·exp(-z²)·exp(P(t)); exactly 0 beyond
// z = 10 (erfc(10) = 2e-45), so that gelu_erf(±inf) is ±inf·{0, 2} as in the scalar code.
inline __m256 erfc_positive256(__m256 z) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.5f), z, one));
    __m256 p = _mm256_set1_ps(0.17087277f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.82215223f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.48851587f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.13520398f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.27886807f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.18628806f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.09678418f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.37409196f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.00002368f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.26551223f));
    const __m256 z2 = _mm256_mul_ps(z, z);
    const __m256 z2_error = _mm256_fmsub_ps(z, z, z2);  // z² = z2 + z2_error exactly
    // exp(-z²) = exp(-z2) · exp(-z2_error) ≈ exp(-z2) · (1 - z2_error); |z2_error| < 4e-6.
    const __m256 gauss = _mm256_mul_ps(exp256(_mm256_sub_ps(_mm256_setzero_ps(), z2)), _mm256_sub_ps(one, z2_error));
    const __m256 erfc = _mm256_mul_ps(_mm256_mul_ps(t, gauss), exp256(p));
    return _mm256_andnot_ps(_mm256_cmp_ps(z, _mm256_set1_ps(10.0f), _CMP_GT_OQ), erfc);  // NaN stays NaN
}

inline __m256 silu256(__m256 x) {
    const __m256 e = exp256(_mm256_xor_ps(x, _mm256_set1_ps(-0.0f)));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

inline __m256 gelu_tanh256(__m256 x) {  // x / (1 + exp(-2u)), u as the scalar code rounds it
    const __m256 cube = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.044715f), x), x), x);
    const __m256 inner = _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f), _mm256_add_ps(x, cube));
    const __m256 e = exp256(_mm256_mul_ps(_mm256_set1_ps(-2.0f), inner));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

inline __m256 gelu_erf256(__m256 x) {  // 0.5x · erfc(-x/√2)
    const __m256 z = _mm256_mul_ps(abs256(x), _mm256_set1_ps(0.7071067811865476f));
    const __m256 e = erfc_positive256(z);  // erfc(|x|/√2); erfc(-a) = 2 - erfc(a)
    const __m256 negative = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    const __m256 factor = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.0f), e), e, negative);
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), factor);
}

// ---- row ops ----------------------------------------------------------------------------------

void rms_norm_avx2(const float* x, const float* weight, float* y, int64_t rows, int64_t n, float eps, bool offset_one) {
    const __m256 one = _mm256_set1_ps(1.0f);
    for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
        __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd(), s2 = _mm256_setzero_pd(), s3 = _mm256_setzero_pd();
        int64_t i = 0;
        for (; i + 16 <= n; i += 16) {
            const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
            const __m256d a0 = widen_lo(a), a1 = widen_hi(a), b0 = widen_lo(b), b1 = widen_hi(b);
            s0 = _mm256_fmadd_pd(a0, a0, s0);
            s1 = _mm256_fmadd_pd(a1, a1, s1);
            s2 = _mm256_fmadd_pd(b0, b0, s2);
            s3 = _mm256_fmadd_pd(b1, b1, s3);
        }
        for (; i < n; i += 8) {
            const __m256 a = n - i >= 8 ? _mm256_loadu_ps(x + i) : load_tail(x + i, n - i);
            const __m256d a0 = widen_lo(a), a1 = widen_hi(a);
            s0 = _mm256_fmadd_pd(a0, a0, s0);
            s1 = _mm256_fmadd_pd(a1, a1, s1);
        }
        const double sum = hsum(_mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
        const __m256 inv = _mm256_set1_ps(inv_sqrt_double(sum / static_cast<double>(n) + eps));
        for (i = 0; i < n; i += 8) {
            const int64_t rem = n - i;
            __m256 v = _mm256_mul_ps(rem >= 8 ? _mm256_loadu_ps(x + i) : load_tail(x + i, rem), inv);
            if (weight) {
                __m256 w = rem >= 8 ? _mm256_loadu_ps(weight + i) : load_tail(weight + i, rem);
                if (offset_one) w = _mm256_add_ps(one, w);
                v = _mm256_mul_ps(v, w);
            }
            if (rem >= 8)
                _mm256_storeu_ps(y + i, v);
            else
                store_tail(y + i, v, rem);
        }
    }
}

double exp_sum_avx2(float* x, int64_t n, float max) {
    const __m256 m = _mm256_set1_ps(max);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
        _mm256_storeu_ps(x + i, e);
        s0 = _mm256_add_pd(s0, widen_lo(e));
        s1 = _mm256_add_pd(s1, widen_hi(e));
    }
    if (i < n) {
        const __m256i mask = tail_mask(n - i);
        const __m256 e = _mm256_and_ps(exp256(_mm256_sub_ps(_mm256_maskload_ps(x + i, mask), m)), _mm256_castsi256_ps(mask));
        _mm256_maskstore_ps(x + i, mask, e);
        s0 = _mm256_add_pd(s0, widen_lo(e));
        s1 = _mm256_add_pd(s1, widen_hi(e));
    }
    return hsum(_mm256_add_pd(s0, s1));
}

void scale_avx2(float* x, float s, int64_t n);

void softmax_avx2(float* x, int64_t rows, int64_t n) {
    const __m256 minus_inf = _mm256_set1_ps(-__builtin_inff());
    for (int64_t r = 0; r < rows; ++r, x += n) {
        __m256 m = minus_inf;
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) m = _mm256_max_ps(_mm256_loadu_ps(x + i), m);  // NaN in x: m kept
        if (i < n) {
            const __m256i mask = tail_mask(n - i);
            m = _mm256_max_ps(_mm256_blendv_ps(minus_inf, _mm256_maskload_ps(x + i, mask), _mm256_castsi256_ps(mask)), m);
        }
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        const float inv = static_cast<float>(1.0 / exp_sum_avx2(x, n, _mm_cvtss_f32(h)));
        scale_avx2(x, inv, n);
    }
}

void rope_rotate_avx2(float* x, int64_t heads, int64_t head_dim, int64_t rotary_dim, const float* cos, const float* sin,
                      RopeLayout layout) {
    const int64_t half = rotary_dim / 2;
    for (int64_t h = 0; h < heads; ++h, x += head_dim) {
        if (layout == RopeLayout::SplitHalf) {
            float* lo = x;
            float* hi = x + half;
            for (int64_t i = 0; i < half; i += 8) {
                const int64_t rem = half - i;
                const __m256i mask = tail_mask(rem < 8 ? rem : 8);
                const __m256 a = _mm256_maskload_ps(lo + i, mask), b = _mm256_maskload_ps(hi + i, mask);
                const __m256 c = _mm256_maskload_ps(cos + i, mask), s = _mm256_maskload_ps(sin + i, mask);
                _mm256_maskstore_ps(lo + i, mask, _mm256_sub_ps(_mm256_mul_ps(a, c), _mm256_mul_ps(b, s)));
                _mm256_maskstore_ps(hi + i, mask, _mm256_add_ps(_mm256_mul_ps(b, c), _mm256_mul_ps(a, s)));
            }
        } else {
            for (int64_t i = 0; i < half; i += 4) {  // 4 pairs per vector
                const int64_t rem = half - i < 4 ? half - i : 4;
                const __m256i mask = tail_mask(2 * rem);
                const __m128i mask4 = _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>(rem)), _mm_setr_epi32(0, 1, 2, 3));
                const __m128 c4 = _mm_maskload_ps(cos + i, mask4), s4 = _mm_maskload_ps(sin + i, mask4);
                const __m256 c = _mm256_set_m128(_mm_unpackhi_ps(c4, c4), _mm_unpacklo_ps(c4, c4));
                const __m256 s = _mm256_set_m128(_mm_unpackhi_ps(s4, s4), _mm_unpacklo_ps(s4, s4));
                const __m256 v = _mm256_maskload_ps(x + 2 * i, mask);  // a0 b0 a1 b1 ...
                const __m256 swapped = _mm256_permute_ps(v, 0xB1);      // b0 a0 b1 a1 ...
                // addsub: even lanes a·c - b·s, odd lanes b·c + a·s
                _mm256_maskstore_ps(x + 2 * i, mask, _mm256_addsub_ps(_mm256_mul_ps(v, c), _mm256_mul_ps(swapped, s)));
            }
        }
    }
}

// ---- element-wise -----------------------------------------------------------------------------

// Applies f to 8 lanes at a time; the tail goes through masked loads and stores.
template <class F>
inline void map1(const float* x, float* y, int64_t n, F f) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
    if (i < n) store_tail(y + i, f(load_tail(x + i, n - i)), n - i);
}
template <class F>
inline void map2(const float* a, const float* b, float* y, int64_t n, F f) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    if (i < n) store_tail(y + i, f(load_tail(a + i, n - i), load_tail(b + i, n - i)), n - i);
}

void silu_avx2(const float* x, float* y, int64_t n) { map1(x, y, n, [](__m256 v) { return silu256(v); }); }
void gelu_tanh_avx2(const float* x, float* y, int64_t n) { map1(x, y, n, [](__m256 v) { return gelu_tanh256(v); }); }
void gelu_erf_avx2(const float* x, float* y, int64_t n) { map1(x, y, n, [](__m256 v) { return gelu_erf256(v); }); }
void swiglu_avx2(const float* gate, const float* up, float* out, int64_t n) {
    map2(gate, up, out, n, [](__m256 g, __m256 u) { return _mm256_mul_ps(silu256(g), u); });
}
void geglu_tanh_avx2(const float* gate, const float* up, float* out, int64_t n) {
    map2(gate, up, out, n, [](__m256 g, __m256 u) { return _mm256_mul_ps(gelu_tanh256(g), u); });
}
void add_avx2(const float* a, const float* b, float* out, int64_t n) {
    map2(a, b, out, n, [](__m256 u, __m256 v) { return _mm256_add_ps(u, v); });
}
void mul_avx2(const float* a, const float* b, float* out, int64_t n) {
    map2(a, b, out, n, [](__m256 u, __m256 v) { return _mm256_mul_ps(u, v); });
}
void scale_avx2(float* x, float s, int64_t n) {
    const __m256 sv = _mm256_set1_ps(s);
    map1(x, x, n, [sv](__m256 v) { return _mm256_mul_ps(v, sv); });
}
void softcap_avx2(float* x, float cap, int64_t n) {
    const __m256 c = _mm256_set1_ps(cap);
    map1(x, x, n, [c](__m256 v) { return _mm256_mul_ps(c, tanh256(_mm256_div_ps(v, c))); });
}

// ---- conversions ------------------------------------------------------------------------------

inline __m256 load8_f16(const void* p) { return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p))); }
inline __m256 load8_bf16(const void* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p))), 16));
}
// The first `count` 16-bit values at p (count < 8), zero-filled, without reading past them.
inline __m128i load_tail16(const void* p, int64_t count) {
    alignas(16) unsigned char buffer[16] = {};
    const unsigned char* bytes = static_cast<const unsigned char*>(p);
    for (int64_t i = 0; i < 2 * count; ++i) buffer[i] = bytes[i];
    return _mm_load_si128(reinterpret_cast<const __m128i*>(buffer));
}
inline void store_tail16(uint16_t* p, __m128i v, int64_t count) {
    alignas(16) uint16_t buffer[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(buffer), v);
    for (int64_t i = 0; i < count; ++i) p[i] = buffer[i];
}

inline __m128i to_f16(__m256 v) {
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // The scalar conversion writes every NaN as sign|0x7e00; F16C would keep part of the payload.
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
    const __m128i quiet = _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16(static_cast<short>(0x8000))), _mm_set1_epi16(0x7e00));
    return _mm_blendv_epi8(h, quiet, nan16);
}
inline __m128i to_bf16(__m256 v) {  // round to nearest even; NaN -> (bits >> 16) | 0x40, as the scalar code
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
    const __m256i out = _mm256_blendv_epi8(rounded, quiet, nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(out), _mm256_extracti128_si256(out, 1));
}

void f16_to_f32_avx2(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8_f16(src + i));
    if (i < n) store_tail(dst + i, _mm256_cvtph_ps(load_tail16(src + i, n - i)), n - i);
}
void bf16_to_f32_avx2(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8_bf16(src + i));
    if (i < n) {
        const __m128i h = load_tail16(src + i, n - i);
        store_tail(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)), n - i);
    }
}
void f32_to_f16_avx2(const float* src, uint16_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), to_f16(_mm256_loadu_ps(src + i)));
    if (i < n) store_tail16(dst + i, to_f16(load_tail(src + i, n - i)), n - i);
}
void f32_to_bf16_avx2(const float* src, uint16_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), to_bf16(_mm256_loadu_ps(src + i)));
    if (i < n) store_tail16(dst + i, to_bf16(load_tail(src + i, n - i)), n - i);
}

// ---- attention inner loops --------------------------------------------------------------------

// 8 values of a KV row of type T at element offset i (full), or its last `rem` (< 8) zero-filled.
template <int T>
inline __m256 kv_load8(const std::byte* row, int64_t i) {
    if constexpr (T == KvF32)
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
    else if constexpr (T == KvF16)
        return load8_f16(row + 2 * i);
    else
        return load8_bf16(row + 2 * i);
}
template <int T>
inline __m256 kv_load_tail(const std::byte* row, int64_t i, int64_t rem) {
    if constexpr (T == KvF32)
        return load_tail(reinterpret_cast<const float*>(row) + i, rem);
    else if constexpr (T == KvF16)
        return _mm256_cvtph_ps(load_tail16(row + 2 * i, rem));
    else
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load_tail16(row + 2 * i, rem)), 16));
}

// Scores of `count` keys. An FMA takes 4-5 cycles and two can start per cycle, so at least 8
// independent chains keep the unit busy: four keys at once, each summed in two halves (even and
// odd 8-value steps), all sharing each q load.
template <int T>
void kv_dot_avx2(const float* q, const std::byte* rows, int64_t stride, int64_t count, int64_t dim, float* scores) {
    const int64_t full = dim & ~int64_t{7}, pairs = dim & ~int64_t{15}, rem = dim - full;
    const __m256 q_tail = rem ? load_tail(q + full, rem) : _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 4 <= count; j += 4) {
        const std::byte* r0 = rows + j * stride;
        const std::byte* r1 = r0 + stride;
        const std::byte* r2 = r1 + stride;
        const std::byte* r3 = r2 + stride;
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
        __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps(), b2 = _mm256_setzero_ps(), b3 = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i < pairs; i += 16) {
            const __m256 qa = _mm256_loadu_ps(q + i), qb = _mm256_loadu_ps(q + i + 8);
            a0 = _mm256_fmadd_ps(qa, kv_load8<T>(r0, i), a0);
            a1 = _mm256_fmadd_ps(qa, kv_load8<T>(r1, i), a1);
            a2 = _mm256_fmadd_ps(qa, kv_load8<T>(r2, i), a2);
            a3 = _mm256_fmadd_ps(qa, kv_load8<T>(r3, i), a3);
            b0 = _mm256_fmadd_ps(qb, kv_load8<T>(r0, i + 8), b0);
            b1 = _mm256_fmadd_ps(qb, kv_load8<T>(r1, i + 8), b1);
            b2 = _mm256_fmadd_ps(qb, kv_load8<T>(r2, i + 8), b2);
            b3 = _mm256_fmadd_ps(qb, kv_load8<T>(r3, i + 8), b3);
        }
        if (i < full) {
            const __m256 qa = _mm256_loadu_ps(q + i);
            a0 = _mm256_fmadd_ps(qa, kv_load8<T>(r0, i), a0);
            a1 = _mm256_fmadd_ps(qa, kv_load8<T>(r1, i), a1);
            a2 = _mm256_fmadd_ps(qa, kv_load8<T>(r2, i), a2);
            a3 = _mm256_fmadd_ps(qa, kv_load8<T>(r3, i), a3);
        }
        if (rem) {
            b0 = _mm256_fmadd_ps(q_tail, kv_load_tail<T>(r0, full, rem), b0);
            b1 = _mm256_fmadd_ps(q_tail, kv_load_tail<T>(r1, full, rem), b1);
            b2 = _mm256_fmadd_ps(q_tail, kv_load_tail<T>(r2, full, rem), b2);
            b3 = _mm256_fmadd_ps(q_tail, kv_load_tail<T>(r3, full, rem), b3);
        }
        a0 = _mm256_add_ps(a0, b0);
        a1 = _mm256_add_ps(a1, b1);
        a2 = _mm256_add_ps(a2, b2);
        a3 = _mm256_add_ps(a3, b3);
        const __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
        _mm_storeu_ps(scores + j, _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)));
    }
    for (; j < count; ++j) {
        const std::byte* r = rows + j * stride;
        __m256 a = _mm256_setzero_ps();
        for (int64_t i = 0; i < full; i += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), kv_load8<T>(r, i), a);
        if (rem) a = _mm256_fmadd_ps(q_tail, kv_load_tail<T>(r, full, rem), a);
        scores[j] = hsum(a);
    }
}

// acc += sum_j weights[j] * row_j. The accumulators stay in registers over all keys, 64 values
// (8 chains, see kv_dot_avx2) at a time.
template <int T>
void kv_axpy_avx2(const float* weights, const std::byte* rows, int64_t stride, int64_t count, int64_t dim, float* acc) {
    int64_t i = 0;
    for (; i + 64 <= dim; i += 64) {
        __m256 c[8];
        for (int u = 0; u < 8; ++u) c[u] = _mm256_loadu_ps(acc + i + 8 * u);
        for (int64_t j = 0; j < count; ++j) {
            const __m256 w = _mm256_broadcast_ss(weights + j);
            const std::byte* r = rows + j * stride;
            for (int u = 0; u < 8; ++u) c[u] = _mm256_fmadd_ps(w, kv_load8<T>(r, i + 8 * u), c[u]);
        }
        for (int u = 0; u < 8; ++u) _mm256_storeu_ps(acc + i + 8 * u, c[u]);
    }
    for (; i + 32 <= dim; i += 32) {  // 32 values: the same with two keys' chains kept apart
        __m256 c[4], d[4];
        for (int u = 0; u < 4; ++u) {
            c[u] = _mm256_loadu_ps(acc + i + 8 * u);
            d[u] = _mm256_setzero_ps();
        }
        int64_t j = 0;
        for (; j + 2 <= count; j += 2) {
            const __m256 w0 = _mm256_broadcast_ss(weights + j), w1 = _mm256_broadcast_ss(weights + j + 1);
            const std::byte* r0 = rows + j * stride;
            const std::byte* r1 = r0 + stride;
            for (int u = 0; u < 4; ++u) {
                c[u] = _mm256_fmadd_ps(w0, kv_load8<T>(r0, i + 8 * u), c[u]);
                d[u] = _mm256_fmadd_ps(w1, kv_load8<T>(r1, i + 8 * u), d[u]);
            }
        }
        if (j < count) {
            const __m256 w = _mm256_broadcast_ss(weights + j);
            for (int u = 0; u < 4; ++u) c[u] = _mm256_fmadd_ps(w, kv_load8<T>(rows + j * stride, i + 8 * u), c[u]);
        }
        for (int u = 0; u < 4; ++u) _mm256_storeu_ps(acc + i + 8 * u, _mm256_add_ps(c[u], d[u]));
    }
    for (; i + 8 <= dim; i += 8) {
        __m256 c = _mm256_loadu_ps(acc + i);
        for (int64_t j = 0; j < count; ++j)
            c = _mm256_fmadd_ps(_mm256_broadcast_ss(weights + j), kv_load8<T>(rows + j * stride, i), c);
        _mm256_storeu_ps(acc + i, c);
    }
    if (i < dim) {
        const int64_t rem = dim - i;
        __m256 c = load_tail(acc + i, rem);
        for (int64_t j = 0; j < count; ++j)
            c = _mm256_fmadd_ps(_mm256_broadcast_ss(weights + j), kv_load_tail<T>(rows + j * stride, i, rem), c);
        store_tail(acc + i, c, rem);
    }
}

// Scores of R queries against K keys, the register tile of kv_dot_rows_avx2 (dim a multiple of
// 8): each key load serves R queries and each query load K keys, so a 4 x 2 tile does 8 FMAs per
// 6 loads, enough to keep the FMA units busy. Each score is its own chain over dim, then hsum.
template <int T, int R, int K>
inline void kv_dot_tile(const float* q, int64_t q_stride, const std::byte* keys, int64_t stride, int64_t dim, float* scores, int64_t ld) {
    __m256 acc[R][K];
    for (int r = 0; r < R; ++r)
        for (int k = 0; k < K; ++k) acc[r][k] = _mm256_setzero_ps();
    for (int64_t i = 0; i < dim; i += 8) {
        __m256 key[K];
        for (int k = 0; k < K; ++k) key[k] = kv_load8<T>(keys + k * stride, i);
        for (int r = 0; r < R; ++r) {
            const __m256 query = _mm256_loadu_ps(q + r * q_stride + i);
            for (int k = 0; k < K; ++k) acc[r][k] = _mm256_fmadd_ps(query, key[k], acc[r][k]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int k = 0; k < K; ++k) scores[r * ld + k] = hsum(acc[r][k]);
}

template <int T, int R>
inline void kv_dot_row_block(const float* q, int64_t q_stride, const std::byte* keys, int64_t stride, int64_t count, int64_t dim,
                             float* scores, int64_t ld) {
    int64_t j = 0;
    for (; j + 2 <= count; j += 2) kv_dot_tile<T, R, 2>(q, q_stride, keys + j * stride, stride, dim, scores + j, ld);
    if (j < count) kv_dot_tile<T, R, 1>(q, q_stride, keys + j * stride, stride, dim, scores + j, ld);
}

// block.template operator()<R>(r) for rows [r, r + R): blocks of 4, then one of the 1-3 left.
template <class Block>
inline void by_row_blocks(int64_t rows, const Block& block) {
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) block.template operator()<4>(r);
    switch (rows - r) {
        case 3: block.template operator()<3>(r); break;
        case 2: block.template operator()<2>(r); break;
        case 1: block.template operator()<1>(r); break;
        default: break;
    }
}

template <int T>
void kv_dot_rows_avx2(const float* q, int64_t q_stride, int64_t rows, const std::byte* keys, int64_t stride, int64_t count,
                      int64_t dim, float* scores, int64_t ld) {
    if (dim % 8 != 0) {
        for (int64_t r = 0; r < rows; ++r) kv_dot_avx2<T>(q + r * q_stride, keys, stride, count, dim, scores + r * ld);
        return;
    }
    by_row_blocks(rows, [&]<int R>(int64_t r) { kv_dot_row_block<T, R>(q + r * q_stride, q_stride, keys, stride, count, dim, scores + r * ld, ld); });
}

// acc_r += Σ_j weights[r·ld + j] · row_j for R rows and 16 values of dim: each value row load
// serves R rows; 2R accumulators stay in registers over all keys.
template <int T, int R>
inline void kv_axpy_tile(const float* weights, int64_t ld, const std::byte* values, int64_t stride, int64_t count, int64_t i,
                         float* acc, int64_t acc_stride) {
    __m256 c[R][2];
    for (int r = 0; r < R; ++r) {
        c[r][0] = _mm256_loadu_ps(acc + r * acc_stride + i);
        c[r][1] = _mm256_loadu_ps(acc + r * acc_stride + i + 8);
    }
    for (int64_t j = 0; j < count; ++j) {
        const std::byte* row = values + j * stride;
        const __m256 v0 = kv_load8<T>(row, i), v1 = kv_load8<T>(row, i + 8);
        for (int r = 0; r < R; ++r) {
            const __m256 w = _mm256_broadcast_ss(weights + r * ld + j);
            c[r][0] = _mm256_fmadd_ps(w, v0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(w, v1, c[r][1]);
        }
    }
    for (int r = 0; r < R; ++r) {
        _mm256_storeu_ps(acc + r * acc_stride + i, c[r][0]);
        _mm256_storeu_ps(acc + r * acc_stride + i + 8, c[r][1]);
    }
}

template <int T, int R>
inline void kv_axpy_row_block(const float* weights, int64_t ld, const std::byte* values, int64_t stride, int64_t count, int64_t dim,
                              float* acc, int64_t acc_stride) {
    for (int64_t i = 0; i < dim; i += 16) kv_axpy_tile<T, R>(weights, ld, values, stride, count, i, acc, acc_stride);
}

template <int T>
void kv_axpy_rows_avx2(const float* weights, int64_t ld, int64_t rows, const std::byte* values, int64_t stride, int64_t count,
                       int64_t dim, float* acc, int64_t acc_stride) {
    if (dim % 16 != 0) {
        for (int64_t r = 0; r < rows; ++r) kv_axpy_avx2<T>(weights + r * ld, values, stride, count, dim, acc + r * acc_stride);
        return;
    }
    by_row_blocks(rows, [&]<int R>(int64_t r) {
        kv_axpy_row_block<T, R>(weights + r * ld, ld, values, stride, count, dim, acc + r * acc_stride, acc_stride);
    });
}

// Decoding: the few query heads of one kv head against rows read from memory, each row used by
// every query before the next (kv_dot_group / kv_axpy_group in ops_table.h), the rows of several
// kv heads taken in turn (one stream each). Each row's lines are asked for kKvAheadBytes ahead of
// it, on into `next` past the last row. Qwen3-0.6B's heads
// (2 queries of 128 values a kv head, f32, head-major cache), 2 threads from memory on the Zen 3
// VM: 75-90% of the read bandwidth, against 50-65% for kv_dot and kv_axpy query by query, which
// read each block of rows twice, the second time while memory idled.
// Several rows per step (kv_dot_keys, kv_axpy_keys) took a layer's attention at 64 positions from
// 25 to 17 us with the cache in L3 (2 threads, the same VM; from memory 35 to 33 us), and tg32
// of Qwen3-0.6B q4_k at 1024 positions with an f16 cache from 46-51 to 55 tok/s. The lines are
// asked for kKvAheadBytes ahead (kv_prefetch.h).

// Scores of R queries (q_r = q + r·dim) against K consecutive key rows, each score in two
// chains (the even and odd 8-value steps, as kv_dot_avx2's), added and reduced by hsum. The K
// rows give 2·R·K independent chains, enough to keep the FMA units busy where one row's 2·R
// would wait on each FMA's latency; every score's arithmetic is the one-row loop's.
template <int T, int R, int K>
inline void kv_dot_keys(const float* q, int64_t dim, const std::byte* rows, int64_t stride, float* scores, int64_t ld) {
    __m256 a[R][K], b[R][K];
    for (int r = 0; r < R; ++r)
        for (int k = 0; k < K; ++k) a[r][k] = b[r][k] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= dim; i += 16)
        for (int k = 0; k < K; ++k) {
            const __m256 k0 = kv_load8<T>(rows + k * stride, i), k1 = kv_load8<T>(rows + k * stride, i + 8);
            for (int r = 0; r < R; ++r) {
                a[r][k] = _mm256_fmadd_ps(_mm256_loadu_ps(q + r * dim + i), k0, a[r][k]);
                b[r][k] = _mm256_fmadd_ps(_mm256_loadu_ps(q + r * dim + i + 8), k1, b[r][k]);
            }
        }
    if (i + 8 <= dim) {
        for (int k = 0; k < K; ++k) {
            const __m256 k0 = kv_load8<T>(rows + k * stride, i);
            for (int r = 0; r < R; ++r) a[r][k] = _mm256_fmadd_ps(_mm256_loadu_ps(q + r * dim + i), k0, a[r][k]);
        }
        i += 8;
    }
    if (i < dim)
        for (int k = 0; k < K; ++k) {
            const __m256 k0 = kv_load_tail<T>(rows + k * stride, i, dim - i);
            for (int r = 0; r < R; ++r) b[r][k] = _mm256_fmadd_ps(load_tail(q + r * dim + i, dim - i), k0, b[r][k]);
        }
    for (int r = 0; r < R; ++r)
        for (int k = 0; k < K; ++k) scores[r * ld + k] = hsum(_mm256_add_ps(a[r][k], b[r][k]));
}

// Keys taken at once for R queries: about 8 chains, within the 16 vector registers.
template <int R>
constexpr int kDotKeys = R == 1 ? 4 : R == 2 ? 2 : 1;

template <int T>
void kv_dot_group_avx2(const float* q, int64_t rows, int64_t heads, const std::byte* keys, int64_t head_stride, int64_t stride,
                       int64_t count, int64_t dim, float* scores, int64_t ld, const std::byte* next, int64_t next_count) {
    const KvStream stream(T, dim, keys, head_stride, stride, count, next, next_count);
    by_row_blocks(rows, [&]<int R>(int64_t r) {
        // Only the first block of up to 4 queries streams the rows from memory (and asks for them
        // ahead); the others (groups of 5 or more) read the block again from L1 or L2.
        const bool streaming = r == 0;
        // Keys j.. of kv head h, K at a time.
        const auto step = [&]<int K>(int64_t h, int64_t j) {
            const std::byte* head_keys = keys + h * head_stride;
            if (streaming) stream.ask_ahead(h, j, K);
            const int64_t row = h * rows + r;
            kv_dot_keys<T, R, K>(q + row * dim, dim, head_keys + j * stride, stride, scores + row * ld + j, ld);
        };
        by_key_steps<kDotKeys<R>>(count, heads, step);
    });
}

// acc_r += weights[r·ld + j] · row_j over the rows in order, kAxpyKeys rows at a time: each
// accumulator vector is loaded once, takes their FMAs in row order (the one-row loop's arithmetic)
// and is stored once, where row by row every FMA waited on the previous row's store.
constexpr int64_t kAxpyKeys = 4;

template <int T, int K>
inline void kv_axpy_keys(const float* weights, int64_t ld, int64_t rows, const std::byte* values, int64_t stride, int64_t dim,
                         float* acc, int64_t acc_stride) {
    for (int64_t r = 0; r < rows; ++r) {
        __m256 w[K];
        for (int k = 0; k < K; ++k) w[k] = _mm256_broadcast_ss(weights + r * ld + k);
        float* out = acc + r * acc_stride;
        int64_t i = 0;
        for (; i + 8 <= dim; i += 8) {
            __m256 sum = _mm256_loadu_ps(out + i);
            for (int k = 0; k < K; ++k) sum = _mm256_fmadd_ps(w[k], kv_load8<T>(values + k * stride, i), sum);
            _mm256_storeu_ps(out + i, sum);
        }
        if (i < dim) {
            __m256 sum = load_tail(out + i, dim - i);
            for (int k = 0; k < K; ++k) sum = _mm256_fmadd_ps(w[k], kv_load_tail<T>(values + k * stride, i, dim - i), sum);
            store_tail(out + i, sum, dim - i);
        }
    }
}

template <int T>
void kv_axpy_group_avx2(const float* weights, int64_t ld, int64_t rows, int64_t heads, const std::byte* values, int64_t head_stride,
                        int64_t stride, int64_t count, int64_t dim, float* acc, int64_t acc_stride, const std::byte* next,
                        int64_t next_count) {
    const KvStream stream(T, dim, values, head_stride, stride, count, next, next_count);
    // Values j.. of kv head h, K at a time.
    const auto step = [&]<int K>(int64_t h, int64_t j) {
        const std::byte* head_values = values + h * head_stride;
        stream.ask_ahead(h, j, K);
        kv_axpy_keys<T, K>(weights + h * rows * ld + j, ld, rows, head_values + j * stride, stride, dim, acc + h * rows * acc_stride,
                           acc_stride);
    };
    by_key_steps<kAxpyKeys>(count, heads, step);
}

}  // namespace

void fill_ops_avx2(OpsTable& t) {
    t.rms_norm = rms_norm_avx2;
    t.softmax = softmax_avx2;
    t.rope_rotate = rope_rotate_avx2;
    t.silu = silu_avx2;
    t.gelu_tanh = gelu_tanh_avx2;
    t.gelu_erf = gelu_erf_avx2;
    t.swiglu = swiglu_avx2;
    t.geglu_tanh = geglu_tanh_avx2;
    t.add = add_avx2;
    t.mul = mul_avx2;
    t.scale = scale_avx2;
    t.softcap = softcap_avx2;
    t.f16_to_f32_row = f16_to_f32_avx2;
    t.bf16_to_f32_row = bf16_to_f32_avx2;
    t.f32_to_f16_row = f32_to_f16_avx2;
    t.f32_to_bf16_row = f32_to_bf16_avx2;
    t.exp_sum = exp_sum_avx2;
    t.kv_dot[KvF32] = kv_dot_avx2<KvF32>;
    t.kv_dot[KvF16] = kv_dot_avx2<KvF16>;
    t.kv_dot[KvBf16] = kv_dot_avx2<KvBf16>;
    t.kv_axpy[KvF32] = kv_axpy_avx2<KvF32>;
    t.kv_axpy[KvF16] = kv_axpy_avx2<KvF16>;
    t.kv_axpy[KvBf16] = kv_axpy_avx2<KvBf16>;
    t.kv_dot_rows[KvF32] = kv_dot_rows_avx2<KvF32>;
    t.kv_dot_rows[KvF16] = kv_dot_rows_avx2<KvF16>;
    t.kv_dot_rows[KvBf16] = kv_dot_rows_avx2<KvBf16>;
    t.kv_axpy_rows[KvF32] = kv_axpy_rows_avx2<KvF32>;
    t.kv_axpy_rows[KvF16] = kv_axpy_rows_avx2<KvF16>;
    t.kv_axpy_rows[KvBf16] = kv_axpy_rows_avx2<KvBf16>;
    t.kv_dot_group[KvF32] = kv_dot_group_avx2<KvF32>;
    t.kv_dot_group[KvF16] = kv_dot_group_avx2<KvF16>;
    t.kv_dot_group[KvBf16] = kv_dot_group_avx2<KvBf16>;
    t.kv_axpy_group[KvF32] = kv_axpy_group_avx2<KvF32>;
    t.kv_axpy_group[KvF16] = kv_axpy_group_avx2<KvF16>;
    t.kv_axpy_group[KvBf16] = kv_axpy_group_avx2<KvBf16>;
}

}  // namespace oxinfer::kernels
