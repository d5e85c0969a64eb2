// NEON (AArch64 Advanced SIMD) versions of the hottest ops, on top of the scalar table
// (kernels/ops_table.h): rms_norm, softmax, RoPE, SiLU/SwiGLU, add/mul/scale, f16/bf16 rows and
// the attention inner loops. The rest stays scalar on Arm for now.
//
// NEON is part of every AArch64 CPU, so this file needs no special flags; it still follows the
// rule of the x86 ISA files (anonymous namespace, intrinsics and plain loops, one exported
// fill_ops_neon()) so that a later file built with +dotprod or SVE can be added the same way.
// Math is the same as ops_avx2.cpp: Cephes expf (1.4 ulp), double accumulation of reductions, and
// no FMA where the scalar code has none.

// GCC fuses a multiply and an add written as separate intrinsics into one FMA (-ffp-contract=fast
// is its default even in ISO mode), which would make RoPE and the GELU argument differ from the
// scalar code. Explicit _fmadd_ intrinsics still give FMAs. (Clang and MSVC do not fuse across
// statements.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "kernels/ops_table.h"

#if defined(__aarch64__)

#include <arm_neon.h>

namespace oxinfer::kernels {
namespace {

// Tails: fewer than 4 floats go through a zero-filled buffer so every kernel is vector code.
inline float32x4_t load_tail(const float* p, int64_t rem) {
    float buffer[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < rem; ++i) buffer[i] = p[i];
    return vld1q_f32(buffer);
}
inline void store_tail(float* p, float32x4_t v, int64_t rem) {
    float buffer[4];
    vst1q_f32(buffer, v);
    for (int64_t i = 0; i < rem; ++i) p[i] = buffer[i];
}
inline uint16x4_t load_tail16(const uint16_t* p, int64_t rem) {
    uint16_t buffer[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < rem; ++i) buffer[i] = p[i];
    return vld1_u16(buffer);
}

inline float32x4_t f16x4_to_f32(uint16x4_t h) { return vcvt_f32_f16(vreinterpret_f16_u16(h)); }
inline float32x4_t bf16x4_to_f32(uint16x4_t h) { return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); }

inline float32x4_t exp4(float32x4_t x) {
    x = vminq_f32(x, vdupq_n_f32(89.0f));  // FMIN/FMAX propagate NaN
    x = vmaxq_f32(x, vdupq_n_f32(-104.0f));
    const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    const float32x4_t y = vaddq_f32(vfmaq_f32(r, p, vmulq_f32(r, r)), vdupq_n_f32(1.0f));
    // 2^n in two halves: n reaches -150 (denormal results) and 128 (overflow to inf).
    const int32x4_t ni = vcvtq_s32_f32(n);
    const int32x4_t n1 = vshrq_n_s32(ni, 1);
    const int32x4_t n2 = vsubq_s32(ni, n1);
    const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, vdupq_n_s32(127)), 23));
    const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, vdupq_n_s32(127)), 23));
    return vmulq_f32(vmulq_f32(y, s1), s2);
}

inline float32x4_t silu4(float32x4_t x) { return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(x)))); }

inline float inv_sqrt_double(double value) { return static_cast<float>(1.0 / vget_lane_f64(vsqrt_f64(vdup_n_f64(value)), 0)); }

void rms_norm_neon(const float* x, const float* weight, float* y, int64_t rows, int64_t n, float eps, bool offset_one) {
    for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
        float64x2_t s0 = vdupq_n_f64(0), s1 = vdupq_n_f64(0);
        for (int64_t i = 0; i < n; i += 4) {
            const float32x4_t v = n - i >= 4 ? vld1q_f32(x + i) : load_tail(x + i, n - i);
            const float64x2_t lo = vcvt_f64_f32(vget_low_f32(v)), hi = vcvt_high_f64_f32(v);
            s0 = vfmaq_f64(s0, lo, lo);
            s1 = vfmaq_f64(s1, hi, hi);
        }
        const double sum = vaddvq_f64(vaddq_f64(s0, s1));
        const float32x4_t inv = vdupq_n_f32(inv_sqrt_double(sum / static_cast<double>(n) + eps));
        for (int64_t i = 0; i < n; i += 4) {
            const int64_t rem = n - i;
            float32x4_t v = vmulq_f32(rem >= 4 ? vld1q_f32(x + i) : load_tail(x + i, rem), inv);
            if (weight) {
                float32x4_t w = rem >= 4 ? vld1q_f32(weight + i) : load_tail(weight + i, rem);
                if (offset_one) w = vaddq_f32(vdupq_n_f32(1.0f), w);
                v = vmulq_f32(v, w);
            }
            if (rem >= 4)
                vst1q_f32(y + i, v);
            else
                store_tail(y + i, v, rem);
        }
    }
}

double exp_sum_neon(float* x, int64_t n, float max) {
    const float32x4_t m = vdupq_n_f32(max);
    float64x2_t s0 = vdupq_n_f64(0), s1 = vdupq_n_f64(0);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), m));
        vst1q_f32(x + i, e);
        s0 = vaddq_f64(s0, vcvt_f64_f32(vget_low_f32(e)));
        s1 = vaddq_f64(s1, vcvt_high_f64_f32(e));
    }
    double sum = vaddvq_f64(vaddq_f64(s0, s1));
    if (i < n) {
        float buffer[4];
        vst1q_f32(buffer, exp4(vsubq_f32(load_tail(x + i, n - i), m)));
        for (int64_t k = 0; k < n - i; ++k) {
            x[i + k] = buffer[k];
            sum += buffer[k];
        }
    }
    return sum;
}

void scale_neon(float* x, float s, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), s));
    if (i < n) store_tail(x + i, vmulq_n_f32(load_tail(x + i, n - i), s), n - i);
}

void softmax_neon(float* x, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; ++r, x += n) {
        float max = -__builtin_inff();
        for (int64_t i = 0; i < n; ++i)
            if (x[i] > max) max = x[i];  // skips NaN like the scalar code
        const float inv = static_cast<float>(1.0 / exp_sum_neon(x, n, max));
        scale_neon(x, inv, n);
    }
}

void rope_rotate_neon(float* x, int64_t heads, int64_t head_dim, int64_t rotary_dim, const float* cos, const float* sin,
                      RopeLayout layout) {
    const int64_t half = rotary_dim / 2;
    for (int64_t h = 0; h < heads; ++h, x += head_dim) {
        if (layout == RopeLayout::SplitHalf) {
            for (int64_t i = 0; i < half; i += 4) {
                const int64_t rem = half - i < 4 ? half - i : 4;
                const float32x4_t a = load_tail(x + i, rem), b = load_tail(x + half + i, rem);
                const float32x4_t c = load_tail(cos + i, rem), s = load_tail(sin + i, rem);
                store_tail(x + i, vsubq_f32(vmulq_f32(a, c), vmulq_f32(b, s)), rem);
                store_tail(x + half + i, vaddq_f32(vmulq_f32(b, c), vmulq_f32(a, s)), rem);
            }
        } else {
            for (int64_t i = 0; i < half; i += 4) {  // 4 pairs, de-interleaved by vld2
                const int64_t rem = half - i < 4 ? half - i : 4;
                float pairs[8] = {0, 0, 0, 0, 0, 0, 0, 0};
                for (int64_t k = 0; k < 2 * rem; ++k) pairs[k] = x[2 * i + k];
                float32x4x2_t v = vld2q_f32(pairs);
                const float32x4_t c = load_tail(cos + i, rem), s = load_tail(sin + i, rem);
                const float32x4_t a = v.val[0], b = v.val[1];
                v.val[0] = vsubq_f32(vmulq_f32(a, c), vmulq_f32(b, s));
                v.val[1] = vaddq_f32(vmulq_f32(b, c), vmulq_f32(a, s));
                vst2q_f32(pairs, v);
                for (int64_t k = 0; k < 2 * rem; ++k) x[2 * i + k] = pairs[k];
            }
        }
    }
}

void silu_neon(const float* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, silu4(vld1q_f32(x + i)));
    if (i < n) store_tail(y + i, silu4(load_tail(x + i, n - i)), n - i);
}
void swiglu_neon(const float* gate, const float* up, float* out, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vmulq_f32(silu4(vld1q_f32(gate + i)), vld1q_f32(up + i)));
    if (i < n) store_tail(out + i, vmulq_f32(silu4(load_tail(gate + i, n - i)), load_tail(up + i, n - i)), n - i);
}
void add_neon(const float* a, const float* b, float* out, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
    if (i < n) store_tail(out + i, vaddq_f32(load_tail(a + i, n - i), load_tail(b + i, n - i)), n - i);
}
void mul_neon(const float* a, const float* b, float* out, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vmulq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
    if (i < n) store_tail(out + i, vmulq_f32(load_tail(a + i, n - i), load_tail(b + i, n - i)), n - i);
}

void f16_to_f32_neon(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, f16x4_to_f32(vld1_u16(src + i)));
    if (i < n) store_tail(dst + i, f16x4_to_f32(load_tail16(src + i, n - i)), n - i);
}
void bf16_to_f32_neon(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, bf16x4_to_f32(vld1_u16(src + i)));
    if (i < n) store_tail(dst + i, bf16x4_to_f32(load_tail16(src + i, n - i)), n - i);
}

// ---- attention inner loops --------------------------------------------------------------------

template <int T>
inline float32x4_t kv_load4(const std::byte* row, int64_t i) {
    if constexpr (T == KvF32)
        return vld1q_f32(reinterpret_cast<const float*>(row) + i);
    else if constexpr (T == KvF16)
        return f16x4_to_f32(vld1_u16(reinterpret_cast<const uint16_t*>(row) + i));
    else
        return bf16x4_to_f32(vld1_u16(reinterpret_cast<const uint16_t*>(row) + i));
}
template <int T>
inline float32x4_t kv_load_tail(const std::byte* row, int64_t i, int64_t rem) {
    if constexpr (T == KvF32)
        return load_tail(reinterpret_cast<const float*>(row) + i, rem);
    else if constexpr (T == KvF16)
        return f16x4_to_f32(load_tail16(reinterpret_cast<const uint16_t*>(row) + i, rem));
    else
        return bf16x4_to_f32(load_tail16(reinterpret_cast<const uint16_t*>(row) + i, rem));
}

template <int T>
void kv_dot_neon(const float* q, const std::byte* rows, int64_t stride, int64_t count, int64_t dim, float* scores) {
    const int64_t full = dim & ~int64_t{3}, rem = dim - full;
    const float32x4_t q_tail = rem ? load_tail(q + full, rem) : vdupq_n_f32(0);
    for (int64_t j = 0; j < count; ++j) {
        const std::byte* r = rows + j * stride;
        float32x4_t a0 = vdupq_n_f32(0), a1 = vdupq_n_f32(0);
        int64_t i = 0;
        for (; i + 8 <= full; i += 8) {
            a0 = vfmaq_f32(a0, vld1q_f32(q + i), kv_load4<T>(r, i));
            a1 = vfmaq_f32(a1, vld1q_f32(q + i + 4), kv_load4<T>(r, i + 4));
        }
        if (i < full) a0 = vfmaq_f32(a0, vld1q_f32(q + i), kv_load4<T>(r, i));
        if (rem) a1 = vfmaq_f32(a1, q_tail, kv_load_tail<T>(r, full, rem));
        scores[j] = vaddvq_f32(vaddq_f32(a0, a1));
    }
}

template <int T>
void kv_axpy_neon(const float* weights, const std::byte* rows, int64_t stride, int64_t count, int64_t dim, float* acc) {
    int64_t i = 0;
    for (; i + 16 <= dim; i += 16) {
        float32x4_t c0 = vld1q_f32(acc + i), c1 = vld1q_f32(acc + i + 4), c2 = vld1q_f32(acc + i + 8), c3 = vld1q_f32(acc + i + 12);
        for (int64_t j = 0; j < count; ++j) {
            const float w = weights[j];
            const std::byte* r = rows + j * stride;
            c0 = vfmaq_n_f32(c0, kv_load4<T>(r, i), w);
            c1 = vfmaq_n_f32(c1, kv_load4<T>(r, i + 4), w);
            c2 = vfmaq_n_f32(c2, kv_load4<T>(r, i + 8), w);
            c3 = vfmaq_n_f32(c3, kv_load4<T>(r, i + 12), w);
        }
        vst1q_f32(acc + i, c0);
        vst1q_f32(acc + i + 4, c1);
        vst1q_f32(acc + i + 8, c2);
        vst1q_f32(acc + i + 12, c3);
    }
    for (; i < dim; i += 4) {
        const int64_t rem = dim - i < 4 ? dim - i : 4;
        float32x4_t c = load_tail(acc + i, rem);
        for (int64_t j = 0; j < count; ++j) c = vfmaq_n_f32(c, kv_load_tail<T>(rows + j * stride, i, rem), weights[j]);
        store_tail(acc + i, c, rem);
    }
}

}  // namespace

void fill_ops_neon(OpsTable& t) {
    t.rms_norm = rms_norm_neon;
    t.softmax = softmax_neon;
    t.rope_rotate = rope_rotate_neon;
    t.silu = silu_neon;
    t.swiglu = swiglu_neon;
    t.add = add_neon;
    t.mul = mul_neon;
    t.scale = scale_neon;
    t.f16_to_f32_row = f16_to_f32_neon;
    t.bf16_to_f32_row = bf16_to_f32_neon;
    t.exp_sum = exp_sum_neon;
    t.kv_dot[KvF32] = kv_dot_neon<KvF32>;
    t.kv_dot[KvF16] = kv_dot_neon<KvF16>;
    t.kv_dot[KvBf16] = kv_dot_neon<KvBf16>;
    t.kv_axpy[KvF32] = kv_axpy_neon<KvF32>;
    t.kv_axpy[KvF16] = kv_axpy_neon<KvF16>;
    t.kv_axpy[KvBf16] = kv_axpy_neon<KvBf16>;
}

}  // namespace oxinfer::kernels

#endif  // __aarch64__
