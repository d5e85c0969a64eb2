// AVX-512 (F/BW/VL/DQ) versions of the hot ops, on top of the AVX2 table (kernels/ops_table.h).
//
// This file is compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq and must stay
// self-contained: everything lives in an anonymous namespace and uses only intrinsics and plain
// loops. Calling an inline function or template shared with other files (std::min on floats,
// std::vector methods, <cmath> overloads, lambdas handed to templates from other headers) would
// emit an AVX-512 copy of it under its common name, which the linker may keep for the whole
// program; it would then die with "Illegal instruction" on a CPU without AVX-512. The only
// exported symbol is fill_ops_avx512().
//
// The algorithms and their accuracy are those of ops_avx2.cpp (Cephes exp and tanh, NR erfc,
// double accumulation of reductions, no FMA where the scalar code has none), 16 lanes wide, with
// mask registers for the tails instead of scalar loops, and vscalefps for the 2^n of exp.
// Attention's prefill tiles are the AVX2 table's; decoding has its own (kv_dot_group_avx512).

// GCC fuses a multiply and an add written as separate intrinsics into one FMA (-ffp-contract=fast
// is its default even in ISO mode), which would make RoPE and the GELU argument differ from the
// scalar code. Explicit _fmadd_ intrinsics still give FMAs. (Clang and MSVC do not fuse across
// statements.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "kernels/ops_table.h"

#ifdef OXINFER_SIMD_EMULATION  // the tests' second build of this file, on any x86 CPU (tests/CMakeLists.txt)
#include "avx512_emulation.h"
#define fill_ops_avx512 fill_ops_avx512_emulated
#else
#include <immintrin.h>
#endif

#include "kernels/x86/kv_prefetch.h"

namespace oxinfer::kernels {
namespace {

// ---- helpers ----------------------------------------------------------------------------------

inline __mmask16 tail_mask(int64_t rem) {  // lanes [0, rem) set, rem in [0, 16]
    return static_cast<__mmask16>(rem >= 16 ? 0xffffu : (1u << rem) - 1u);
}
inline __m512 load_tail(const float* p, int64_t rem) { return _mm512_maskz_loadu_ps(tail_mask(rem), p); }
inline void store_tail(float* p, __m512 v, int64_t rem) { _mm512_mask_storeu_ps(p, tail_mask(rem), v); }

inline float inv_sqrt_double(double value) {  // (float)(1 / sqrt(value)), as the scalar code
    const double root = _mm_cvtsd_f64(_mm_sqrt_sd(_mm_setzero_pd(), _mm_set_sd(value)));
    return static_cast<float>(1.0 / root);
}

inline __m512d widen_lo(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
inline __m512d widen_hi(__m512 v) {
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

inline __m512 exp512(__m512 x) {
    // min/max return their second operand when one is NaN, so a NaN passes through.
    x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(y, n);  // y · 2^n, overflowing to inf and underflowing to denormals correctly
}

inline __m512 abs512(__m512 x) { return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff))); }
inline __m512 sign512(__m512 x) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
}
inline __m512 or512(__m512 a, __m512 b) {
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}

inline __m512 tanh512(__m512 x) {
    const __m512 a = abs512(x);
    const __m512 z = _mm512_mul_ps(a, a);
    __m512 p = _mm512_set1_ps(-5.70498872745e-3f);
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.06390887954e-2f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.37397155531e-2f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.33314422036e-1f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.33332819422e-1f));
    const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), a, a);
    const __m512 e = exp512(_mm512_add_ps(a, a));
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 large = _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
    const __mmask16 is_small = _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.625f), _CMP_LT_OQ);
    return or512(_mm512_mask_blend_ps(is_small, large, small), sign512(x));
}

// erfc(z) for z >= 0 (NR erfcc): t = 1/(1 + z/2), erfc = t·exp(-z²)·exp(P(t)), 0 beyond z = 10;
// see ops_avx2.cpp.
inline __m512 erfc_positive512(__m512 z) {
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.5f), z, one));
    __m512 p = _mm512_set1_ps(0.17087277f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.82215223f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.48851587f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.13520398f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.27886807f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.18628806f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.09678418f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.37409196f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.00002368f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.26551223f));
    const __m512 z2 = _mm512_mul_ps(z, z);
    const __m512 z2_error = _mm512_fmsub_ps(z, z, z2);
    const __m512 gauss = _mm512_mul_ps(exp512(_mm512_sub_ps(_mm512_setzero_ps(), z2)), _mm512_sub_ps(one, z2_error));
    const __m512 erfc = _mm512_mul_ps(_mm512_mul_ps(t, gauss), exp512(p));
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(z, _mm512_set1_ps(10.0f), _CMP_NGT_UQ), erfc);  // 0 beyond 10; NaN stays NaN
}

inline __m512 silu512(__m512 x) {
    const __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), x));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

inline __m512 gelu_tanh512(__m512 x) {
    const __m512 cube = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.044715f), x), x), x);
    const __m512 inner = _mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f), _mm512_add_ps(x, cube));
    const __m512 e = exp512(_mm512_mul_ps(_mm512_set1_ps(-2.0f), inner));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

inline __m512 gelu_erf512(__m512 x) {
    const __m512 e = erfc_positive512(_mm512_mul_ps(abs512(x), _mm512_set1_ps(0.7071067811865476f)));
    const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    const __m512 factor = _mm512_mask_blend_ps(negative, _mm512_sub_ps(_mm512_set1_ps(2.0f), e), e);
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), factor);
}

// ---- row ops ----------------------------------------------------------------------------------

void rms_norm_avx512(const float* x, const float* weight, float* y, int64_t rows, int64_t n, float eps, bool offset_one) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
        __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd(), s2 = _mm512_setzero_pd(), s3 = _mm512_setzero_pd();
        int64_t i = 0;
        for (; i + 32 <= n; i += 32) {
            const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
            const __m512d a0 = widen_lo(a), a1 = widen_hi(a), b0 = widen_lo(b), b1 = widen_hi(b);
            s0 = _mm512_fmadd_pd(a0, a0, s0);
            s1 = _mm512_fmadd_pd(a1, a1, s1);
            s2 = _mm512_fmadd_pd(b0, b0, s2);
            s3 = _mm512_fmadd_pd(b1, b1, s3);
        }
        for (; i < n; i += 16) {
            const __m512 a = load_tail(x + i, n - i);
            const __m512d a0 = widen_lo(a), a1 = widen_hi(a);
            s0 = _mm512_fmadd_pd(a0, a0, s0);
            s1 = _mm512_fmadd_pd(a1, a1, s1);
        }
        const double sum = _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(s0, s1), _mm512_add_pd(s2, s3)));
        const __m512 inv = _mm512_set1_ps(inv_sqrt_double(sum / static_cast<double>(n) + eps));
        for (i = 0; i < n; i += 16) {
            const __mmask16 mask = tail_mask(n - i);
            __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, x + i), inv);
            if (weight) {
                __m512 w = _mm512_maskz_loadu_ps(mask, weight + i);
                if (offset_one) w = _mm512_add_ps(one, w);
                v = _mm512_mul_ps(v, w);
            }
            _mm512_mask_storeu_ps(y + i, mask, v);
        }
    }
}

double exp_sum_avx512(float* x, int64_t n, float max) {
    const __m512 m = _mm512_set1_ps(max);
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 mask = tail_mask(n - i);
        const __m512 e = _mm512_maskz_mov_ps(mask, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + i), m)));
        _mm512_mask_storeu_ps(x + i, mask, e);
        s0 = _mm512_add_pd(s0, widen_lo(e));
        s1 = _mm512_add_pd(s1, widen_hi(e));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}

void scale_avx512(float* x, float s, int64_t n);

void softmax_avx512(float* x, int64_t rows, int64_t n) {
    const __m512 minus_inf = _mm512_set1_ps(-__builtin_inff());
    for (int64_t r = 0; r < rows; ++r, x += n) {
        __m512 m = minus_inf;
        for (int64_t i = 0; i < n; i += 16)  // masked-off lanes load as -inf; NaN in x keeps m
            m = _mm512_max_ps(_mm512_mask_loadu_ps(minus_inf, tail_mask(n - i), x + i), m);
        const float inv = static_cast<float>(1.0 / exp_sum_avx512(x, n, _mm512_reduce_max_ps(m)));
        scale_avx512(x, inv, n);
    }
}

void rope_rotate_avx512(float* x, int64_t heads, int64_t head_dim, int64_t rotary_dim, const float* cos, const float* sin,
                        RopeLayout layout) {
    const int64_t half = rotary_dim / 2;
    // Interleaved: lane 2k and 2k+1 both use pair k's cos/sin; even lanes take -sin (a·c + b·(-s)).
    const __m512i duplicate = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m512i even_sign = _mm512_setr_epi32(static_cast<int>(0x80000000u), 0, static_cast<int>(0x80000000u), 0,
                                                static_cast<int>(0x80000000u), 0, static_cast<int>(0x80000000u), 0,
                                                static_cast<int>(0x80000000u), 0, static_cast<int>(0x80000000u), 0,
                                                static_cast<int>(0x80000000u), 0, static_cast<int>(0x80000000u), 0);
    for (int64_t h = 0; h < heads; ++h, x += head_dim) {
        if (layout == RopeLayout::SplitHalf) {
            float* lo = x;
            float* hi = x + half;
            for (int64_t i = 0; i < half; i += 16) {
                const __mmask16 mask = tail_mask(half - i);
                const __m512 a = _mm512_maskz_loadu_ps(mask, lo + i), b = _mm512_maskz_loadu_ps(mask, hi + i);
                const __m512 c = _mm512_maskz_loadu_ps(mask, cos + i), s = _mm512_maskz_loadu_ps(mask, sin + i);
                _mm512_mask_storeu_ps(lo + i, mask, _mm512_sub_ps(_mm512_mul_ps(a, c), _mm512_mul_ps(b, s)));
                _mm512_mask_storeu_ps(hi + i, mask, _mm512_add_ps(_mm512_mul_ps(b, c), _mm512_mul_ps(a, s)));
            }
        } else {
            for (int64_t i = 0; i < half; i += 8) {  // 8 pairs per vector
                const int64_t pairs = half - i < 8 ? half - i : 8;
                const __mmask8 mask8 = static_cast<__mmask8>((1u << pairs) - 1u);
                const __mmask16 mask = tail_mask(2 * pairs);
                const __m512 c8 = _mm512_castps256_ps512(_mm256_maskz_loadu_ps(mask8, cos + i));
                const __m512 s8 = _mm512_castps256_ps512(_mm256_maskz_loadu_ps(mask8, sin + i));
                const __m512 c = _mm512_permutexvar_ps(duplicate, c8);
                const __m512 s = _mm512_castsi512_ps(
                    _mm512_xor_si512(_mm512_castps_si512(_mm512_permutexvar_ps(duplicate, s8)), even_sign));
                const __m512 v = _mm512_maskz_loadu_ps(mask, x + 2 * i);  // a0 b0 a1 b1 ...
                const __m512 swapped = _mm512_permute_ps(v, 0xB1);        // b0 a0 b1 a1 ...
                _mm512_mask_storeu_ps(x + 2 * i, mask, _mm512_add_ps(_mm512_mul_ps(v, c), _mm512_mul_ps(swapped, s)));
            }
        }
    }
}

// ---- element-wise -----------------------------------------------------------------------------

template <class F>
inline void map1(const float* x, float* y, int64_t n, F f) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, f(_mm512_loadu_ps(x + i)));
    if (i < n) store_tail(y + i, f(load_tail(x + i, n - i)), n - i);
}
template <class F>
inline void map2(const float* a, const float* b, float* y, int64_t n, F f) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, f(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
    if (i < n) store_tail(y + i, f(load_tail(a + i, n - i), load_tail(b + i, n - i)), n - i);
}

void silu_avx512(const float* x, float* y, int64_t n) { map1(x, y, n, [](__m512 v) { return silu512(v); }); }
void gelu_tanh_avx512(const float* x, float* y, int64_t n) { map1(x, y, n, [](__m512 v) { return gelu_tanh512(v); }); }
void gelu_erf_avx512(const float* x, float* y, int64_t n) { map1(x, y, n, [](__m512 v) { return gelu_erf512(v); }); }
void swiglu_avx512(const float* gate, const float* up, float* out, int64_t n) {
    map2(gate, up, out, n, [](__m512 g, __m512 u) { return _mm512_mul_ps(silu512(g), u); });
}
void geglu_tanh_avx512(const float* gate, const float* up, float* out, int64_t n) {
    map2(gate, up, out, n, [](__m512 g, __m512 u) { return _mm512_mul_ps(gelu_tanh512(g), u); });
}
void add_avx512(const float* a, const float* b, float* out, int64_t n) {
    map2(a, b, out, n, [](__m512 u, __m512 v) { return _mm512_add_ps(u, v); });
}
void mul_avx512(const float* a, const float* b, float* out, int64_t n) {
    map2(a, b, out, n, [](__m512 u, __m512 v) { return _mm512_mul_ps(u, v); });
}
void scale_avx512(float* x, float s, int64_t n) {
    const __m512 sv = _mm512_set1_ps(s);
    map1(x, x, n, [sv](__m512 v) { return _mm512_mul_ps(v, sv); });
}
void softcap_avx512(float* x, float cap, int64_t n) {
    const __m512 c = _mm512_set1_ps(cap);
    map1(x, x, n, [c](__m512 v) { return _mm512_mul_ps(c, tanh512(_mm512_div_ps(v, c))); });
}

// ---- conversions ------------------------------------------------------------------------------

inline __m512 f16x16_to_f32(__m256i h) { return _mm512_cvtph_ps(h); }
inline __m512 bf16x16_to_f32(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }

inline __m256i to_f16(__m512 v) {
    const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // The scalar conversion writes every NaN as sign|0x7e00; the instruction would keep part of the payload.
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __m256i quiet =
        _mm256_or_si256(_mm256_and_si256(h, _mm256_set1_epi16(static_cast<short>(0x8000))), _mm256_set1_epi16(0x7e00));
    return _mm256_mask_blend_epi16(nan, h, quiet);
}
inline __m256i to_bf16(__m512 v) {  // round to nearest even; NaN -> (bits >> 16) | 0x40, as the scalar code
    const __m512i bits = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet));
}

void f16_to_f32_avx512(const uint16_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 mask = tail_mask(n - i);
        _mm512_mask_storeu_ps(dst + i, mask, f16x16_to_f32(_mm256_maskz_loadu_epi16(mask, src + i)));
    }
}
void bf16_to_f32_avx512(const uint16_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 mask = tail_mask(n - i);
        _mm512_mask_storeu_ps(dst + i, mask, bf16x16_to_f32(_mm256_maskz_loadu_epi16(mask, src + i)));
    }
}
void f32_to_f16_avx512(const float* src, uint16_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 mask = tail_mask(n - i);
        _mm256_mask_storeu_epi16(dst + i, mask, to_f16(_mm512_maskz_loadu_ps(mask, src + i)));
    }
}
void f32_to_bf16_avx512(const float* src, uint16_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 mask = tail_mask(n - i);
        _mm256_mask_storeu_epi16(dst + i, mask, to_bf16(_mm512_maskz_loadu_ps(mask, src + i)));
    }
}

// ---- attention while decoding -----------------------------------------------------------------
//
// With the rows in L1 or L2, the AVX2 group kernels ran at about an eighth of the FMA units' rate:
// every score ended in a horizontal sum of its own, and the value sums' accumulators went through
// memory every four rows. Here a score's 16-lane partial sums are reduced eight at a time
// (sum_lanes8), and 16 values a step halve the instructions. Measured on the 2-core Zen 5 VM
// with Qwen3-0.6B's heads (16 queries of 128 values over 8 kv heads, 2 threads), a layer's
// decoding attention, medians of 30 in three alternating rounds against the AVX2 kernels: one
// layer's cache over and over (in L2) at 64 positions 1.21-1.27x faster with f32 (one round
// 0.89x) and 1.16-1.82x with f16; 28 layers' caches in turn (in L3) at 256 positions 1.07-1.41x
// (f32) and 1.13-1.44x (f16). From memory, where the rows arrive more slowly than either computes,
// no difference stood out of that VM's noise (tg32 of Qwen3-0.6B and Llama-3.2-1B at 1024
// positions). The gain is where the rows come from cache: short contexts, and calls of a few
// tokens (a draft's verification), whose tokens after the first read rows just read. Four tokens
// at once, 28 layers from memory: 1.04-1.17x (f32) and 1.13-1.45x (f16) at 256 and 1024 positions.

// 16 values of a row of cache type T from value i on; with `mask`, its lanes only (zeros after).
template <int T>
inline __m512 kv_load16(const std::byte* row, int64_t i) {
    if constexpr (T == KvF32) return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(row) + i));
    return T == KvF16 ? f16x16_to_f32(h) : bf16x16_to_f32(h);
}
template <int T>
inline __m512 kv_load16(const std::byte* row, int64_t i, __mmask16 mask) {
    if constexpr (T == KvF32) return _mm512_maskz_loadu_ps(mask, reinterpret_cast<const float*>(row) + i);
    const __m256i h = _mm256_maskz_loadu_epi16(mask, reinterpret_cast<const uint16_t*>(row) + i);
    return T == KvF16 ? f16x16_to_f32(h) : bf16x16_to_f32(h);
}

// Lane i of the result is the sum of v[i]'s 16 lanes, in a fixed order.
inline __m256 sum_lanes8(const __m512 v[8]) {
    __m512 pairs[4];  // each 128-bit lane: [v2p, v2p+1, v2p, v2p+1]
    for (int p = 0; p < 4; ++p)
        pairs[p] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * p], v[2 * p + 1]), _mm512_unpackhi_ps(v[2 * p], v[2 * p + 1]));
    __m512 quads[2];  // each 128-bit lane: [v4q, .., v4q+3]
    for (int q = 0; q < 2; ++q)
        quads[q] = _mm512_add_ps(_mm512_shuffle_ps(pairs[2 * q], pairs[2 * q + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_ps(pairs[2 * q], pairs[2 * q + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    // 128-bit lanes: v0-3 of lanes 0+1, of lanes 2+3, then v4-7 likewise.
    const __m512 halves = _mm512_add_ps(_mm512_shuffle_f32x4(quads[0], quads[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                        _mm512_shuffle_f32x4(quads[0], quads[1], _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512 total = _mm512_add_ps(_mm512_shuffle_f32x4(halves, halves, _MM_SHUFFLE(2, 0, 2, 0)),
                                       _mm512_shuffle_f32x4(halves, halves, _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_castps512_ps256(total);
}

// Scores of R queries (q_r = q + r·dim) against K consecutive rows, R·K <= 8 chains: lane k·R + r
// of the result is q_r · row_k.
template <int T, int R, int K>
inline __m256 kv_dot_keys16(const float* q, int64_t dim, const std::byte* rows, int64_t stride) {
    __m512 acc[8];
    for (int c = 0; c < 8; ++c) acc[c] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= dim; i += 16) {
        __m512 queries[R];
        for (int r = 0; r < R; ++r) queries[r] = _mm512_loadu_ps(q + r * dim + i);
        for (int k = 0; k < K; ++k) {
            const __m512 key = kv_load16<T>(rows + k * stride, i);
            for (int r = 0; r < R; ++r) acc[k * R + r] = _mm512_fmadd_ps(queries[r], key, acc[k * R + r]);
        }
    }
    if (i < dim) {
        const __mmask16 mask = tail_mask(dim - i);
        for (int k = 0; k < K; ++k) {
            const __m512 key = kv_load16<T>(rows + k * stride, i, mask);
            for (int r = 0; r < R; ++r) acc[k * R + r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, q + r * dim + i), key, acc[k * R + r]);
        }
    }
    return sum_lanes8(acc);
}

// block<R>(r) over the query rows in blocks of R = 4, then 2, then 1.
template <class Block>
inline void by_query_blocks(int64_t rows, const Block& block) {
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) block.template operator()<4>(r);
    if (r + 2 <= rows) {
        block.template operator()<2>(r);
        r += 2;
    }
    if (r < rows) block.template operator()<1>(r);
}

// Query rows [r, r + R) of every kv head (kv_dot_group's arguments), 8 / R keys a step.
template <int T, int R>
void kv_dot_rows16(const float* q, int64_t r, int64_t rows, int64_t heads, const std::byte* keys, int64_t head_stride, int64_t stride,
                   int64_t count, int64_t dim, float* scores, int64_t ld, const std::byte* next, int64_t next_count) {
    const KvStream stream(T, dim, keys, head_stride, stride, count, next, next_count);
    // Only the first rows stream the keys from memory (and ask for them ahead); the others read
    // the block again from L1 or L2.
    const bool streaming = r == 0;
    const auto step = [&]<int K>(int64_t h, int64_t j) {
        const std::byte* head_keys = keys + h * head_stride;
        if (streaming) stream.ask_ahead(h, j, K);
        const int64_t row = h * rows + r;
        float lanes[8];
        _mm256_storeu_ps(lanes, kv_dot_keys16<T, R, K>(q + row * dim, dim, head_keys + j * stride, stride));
        for (int k = 0; k < K; ++k)
            for (int g = 0; g < R; ++g) scores[(row + g) * ld + j + k] = lanes[k * R + g];
    };
    by_key_steps<8 / R>(count, heads, step);
}

template <int T>
void kv_dot_group_avx512(const float* q, int64_t rows, int64_t heads, const std::byte* keys, int64_t head_stride, int64_t stride,
                         int64_t count, int64_t dim, float* scores, int64_t ld, const std::byte* next, int64_t next_count) {
    by_query_blocks(rows, [&]<int R>(int64_t r) {
        kv_dot_rows16<T, R>(q, r, rows, heads, keys, head_stride, stride, count, dim, scores, ld, next, next_count);
    });
}

// acc_r += Σ_k weights[r·ld + k] · row_k for R rows (acc_r = acc + r·acc_stride) and K consecutive
// rows: each 16 values of the K rows loaded once for all R, each accumulator loaded and stored
// once, its FMAs in row order.
template <int T, int R, int K>
inline void kv_axpy_keys16(const float* weights, int64_t ld, const std::byte* values, int64_t stride, int64_t dim, float* acc,
                           int64_t acc_stride) {
    __m512 w[R][K];
    for (int r = 0; r < R; ++r)
        for (int k = 0; k < K; ++k) w[r][k] = _mm512_set1_ps(weights[r * ld + k]);
    int64_t i = 0;
    for (; i + 16 <= dim; i += 16) {
        __m512 v[K];
        for (int k = 0; k < K; ++k) v[k] = kv_load16<T>(values + k * stride, i);
        for (int r = 0; r < R; ++r) {
            float* out = acc + r * acc_stride + i;
            __m512 sum = _mm512_loadu_ps(out);
            for (int k = 0; k < K; ++k) sum = _mm512_fmadd_ps(w[r][k], v[k], sum);
            _mm512_storeu_ps(out, sum);
        }
    }
    if (i < dim) {
        const __mmask16 mask = tail_mask(dim - i);
        __m512 v[K];
        for (int k = 0; k < K; ++k) v[k] = kv_load16<T>(values + k * stride, i, mask);
        for (int r = 0; r < R; ++r) {
            float* out = acc + r * acc_stride + i;
            __m512 sum = _mm512_maskz_loadu_ps(mask, out);
            for (int k = 0; k < K; ++k) sum = _mm512_fmadd_ps(w[r][k], v[k], sum);
            _mm512_mask_storeu_ps(out, mask, sum);
        }
    }
}

constexpr int kAxpyKeys16 = 4;

// Value rows in steps of kAxpyKeys16 for accumulator rows [r, r + R) of every kv head.
template <int T, int R>
void kv_axpy_rows16(const float* weights, int64_t ld, int64_t r, int64_t rows, int64_t heads, const std::byte* values, int64_t head_stride,
                    int64_t stride, int64_t count, int64_t dim, float* acc, int64_t acc_stride, const std::byte* next, int64_t next_count) {
    const KvStream stream(T, dim, values, head_stride, stride, count, next, next_count);
    const bool streaming = r == 0;
    const auto step = [&]<int K>(int64_t h, int64_t j) {
        const std::byte* head_values = values + h * head_stride;
        if (streaming) stream.ask_ahead(h, j, K);
        const int64_t row = h * rows + r;
        kv_axpy_keys16<T, R, K>(weights + row * ld + j, ld, head_values + j * stride, stride, dim, acc + row * acc_stride, acc_stride);
    };
    by_key_steps<kAxpyKeys16>(count, heads, step);
}

template <int T>
void kv_axpy_group_avx512(const float* weights, int64_t ld, int64_t rows, int64_t heads, const std::byte* values, int64_t head_stride,
                          int64_t stride, int64_t count, int64_t dim, float* acc, int64_t acc_stride, const std::byte* next,
                          int64_t next_count) {
    by_query_blocks(rows, [&]<int R>(int64_t r) {
        kv_axpy_rows16<T, R>(weights, ld, r, rows, heads, values, head_stride, stride, count, dim, acc, acc_stride, next, next_count);
    });
}

}  // namespace

void fill_ops_avx512(OpsTable& t) {
    t.rms_norm = rms_norm_avx512;
    t.softmax = softmax_avx512;
    t.rope_rotate = rope_rotate_avx512;
    t.silu = silu_avx512;
    t.gelu_tanh = gelu_tanh_avx512;
    t.gelu_erf = gelu_erf_avx512;
    t.swiglu = swiglu_avx512;
    t.geglu_tanh = geglu_tanh_avx512;
    t.add = add_avx512;
    t.mul = mul_avx512;
    t.scale = scale_avx512;
    t.softcap = softcap_avx512;
    t.f16_to_f32_row = f16_to_f32_avx512;
    t.bf16_to_f32_row = bf16_to_f32_avx512;
    t.f32_to_f16_row = f32_to_f16_avx512;
    t.f32_to_bf16_row = f32_to_bf16_avx512;
    t.exp_sum = exp_sum_avx512;
    t.kv_dot_group[KvF32] = kv_dot_group_avx512<KvF32>;
    t.kv_dot_group[KvF16] = kv_dot_group_avx512<KvF16>;
    t.kv_dot_group[KvBf16] = kv_dot_group_avx512<KvBf16>;
    t.kv_axpy_group[KvF32] = kv_axpy_group_avx512<KvF32>;
    t.kv_axpy_group[KvF16] = kv_axpy_group_avx512<KvF16>;
    t.kv_axpy_group[KvBf16] = kv_axpy_group_avx512<KvBf16>;
}

}  // namespace oxinfer::kernels
