// The scalar reference kernels: plain loops and libm, written to be obviously right rather than
// fast. Every SIMD level is tested against these; they are also what runs on a CPU with no
// supported SIMD level. Reductions accumulate in double so the reference is accurate to a few
// float ulps whatever the row length.

#include "kernels/ops_table.h"

#include <oxinfer/dtype.h>

#include <cmath>
#include <cstring>

namespace oxinfer::kernels {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;
constexpr float kSqrt1_2 = 0.7071067811865476f;

void rms_norm_scalar(const float* x, const float* weight, float* y, int64_t rows, int64_t n, float eps, bool offset_one) {
    for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
        const float inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(n) + eps));
        for (int64_t i = 0; i < n; ++i) {
            const float normed = x[i] * inv;  // HF: x * rsqrt(...), then the weight
            y[i] = weight ? normed * (offset_one ? 1.0f + weight[i] : weight[i]) : normed;
        }
    }
}

void layer_norm_scalar(const float* x, const float* weight, const float* bias, float* y, int64_t rows, int64_t n, float eps) {
    for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) sum += x[i];
        const double mean = sum / static_cast<double>(n);
        double squares = 0;  // two passes: no cancellation in E[x²] - E[x]²
        for (int64_t i = 0; i < n; ++i) squares += (x[i] - mean) * (x[i] - mean);
        const float inv = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(n) + eps));
        const float mean_f = static_cast<float>(mean);
        for (int64_t i = 0; i < n; ++i) {
            float value = (x[i] - mean_f) * inv;
            if (weight) value *= weight[i];
            if (bias) value += bias[i];
            y[i] = value;
        }
    }
}

double exp_sum_scalar(float* x, int64_t n, float max) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    return sum;
}

void softmax_scalar(float* x, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; ++r, x += n) {
        float max = -INFINITY;
        for (int64_t i = 0; i < n; ++i)
            if (x[i] > max) max = x[i];
        const float inv = static_cast<float>(1.0 / exp_sum_scalar(x, n, max));
        for (int64_t i = 0; i < n; ++i) x[i] *= inv;
    }
}

void rope_rotate_scalar(float* x, int64_t heads, int64_t head_dim, int64_t rotary_dim, const float* cos, const float* sin,
                        RopeLayout layout) {
    const int64_t half = rotary_dim / 2;
    for (int64_t h = 0; h < heads; ++h, x += head_dim) {
        for (int64_t i = 0; i < half; ++i) {
            // HF: x·cos + rotate_half(x)·sin, i.e. each output is one product minus/plus another.
            const int64_t a = layout == RopeLayout::SplitHalf ? i : 2 * i;
            const int64_t b = layout == RopeLayout::SplitHalf ? i + half : 2 * i + 1;
            const float x0 = x[a], x1 = x[b];
            x[a] = x0 * cos[i] - x1 * sin[i];
            x[b] = x1 * cos[i] + x0 * sin[i];
        }
    }
}

float silu_one(float x) { return x / (1.0f + std::exp(-x)); }

// 0.5(1 + tanh(u)) == 1 / (1 + exp(-2u)): the same function without the cancellation that
// 1 + tanh(u) suffers for negative x, so the tail keeps full relative precision.
float gelu_tanh_one(float x) {
    const float inner = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
    return x / (1.0f + std::exp(-2.0f * inner));
}

// 1 + erf(z) == erfc(-z), accurate in the negative tail where 1 + erf(z) cancels.
float gelu_erf_one(float x) { return 0.5f * x * std::erfc(-x * kSqrt1_2); }

void silu_scalar(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = silu_one(x[i]);
}
void gelu_tanh_scalar(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = gelu_tanh_one(x[i]);
}
void gelu_erf_scalar(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = gelu_erf_one(x[i]);
}
void swiglu_scalar(const float* gate, const float* up, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = silu_one(gate[i]) * up[i];
}
void geglu_tanh_scalar(const float* gate, const float* up, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = gelu_tanh_one(gate[i]) * up[i];
}
void add_scalar(const float* a, const float* b, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
void mul_scalar(const float* a, const float* b, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}
void scale_scalar(float* x, float s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] *= s;
}
void softcap_scalar(float* x, float cap, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

void f16_to_f32_scalar(const uint16_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
void bf16_to_f32_scalar(const uint16_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}
void f32_to_f16_scalar(const float* src, uint16_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}
void f32_to_bf16_scalar(const float* src, uint16_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

// KV rows are read element by element through these (memcpy: rows need no alignment).
template <KvType T>
float kv_load(const std::byte* row, int64_t i) {
    if constexpr (T == KvF32) {
        float value;
        std::memcpy(&value, row + 4 * i, 4);
        return value;
    } else {
        uint16_t bits;
        std::memcpy(&bits, row + 2 * i, 2);
        return T == KvF16 ? f16_to_f32(bits) : bf16_to_f32(bits);
    }
}

template <KvType T>
void kv_dot_scalar(const float* q, const std::byte* rows, int64_t stride, int64_t count, int64_t dim, float* scores) {
    for (int64_t j = 0; j < count; ++j) {
        const std::byte* row = rows + j * stride;
        float sum = 0;
        for (int64_t i = 0; i < dim; ++i) sum += q[i] * kv_load<T>(row, i);
        scores[j] = sum;
    }
}

template <KvType T>
void kv_axpy_scalar(const float* weights, const std::byte* rows, int64_t stride, int64_t count, int64_t dim, float* acc) {
    for (int64_t j = 0; j < count; ++j) {
        const std::byte* row = rows + j * stride;
        for (int64_t i = 0; i < dim; ++i) acc[i] += weights[j] * kv_load<T>(row, i);
    }
}

}  // namespace

void rope_angles(int64_t position, const float* inv_freq, int64_t half, float attention_factor, float* cos, float* sin) {
    const float p = static_cast<float>(position);
    for (int64_t i = 0; i < half; ++i) {
        const float angle = p * inv_freq[i];  // float32 product, as HF's inv_freq @ position_ids
        cos[i] = std::cos(angle) * attention_factor;
        sin[i] = std::sin(angle) * attention_factor;
    }
}

void fill_ops_scalar(OpsTable& t) {
    t.rms_norm = rms_norm_scalar;
    t.layer_norm = layer_norm_scalar;
    t.softmax = softmax_scalar;
    t.rope_rotate = rope_rotate_scalar;
    t.silu = silu_scalar;
    t.gelu_tanh = gelu_tanh_scalar;
    t.gelu_erf = gelu_erf_scalar;
    t.swiglu = swiglu_scalar;
    t.geglu_tanh = geglu_tanh_scalar;
    t.add = add_scalar;
    t.mul = mul_scalar;
    t.scale = scale_scalar;
    t.softcap = softcap_scalar;
    t.f16_to_f32_row = f16_to_f32_scalar;
    t.bf16_to_f32_row = bf16_to_f32_scalar;
    t.f32_to_f16_row = f32_to_f16_scalar;
    t.f32_to_bf16_row = f32_to_bf16_scalar;
    t.exp_sum = exp_sum_scalar;
    t.kv_dot[KvF32] = kv_dot_scalar<KvF32>;
    t.kv_dot[KvF16] = kv_dot_scalar<KvF16>;
    t.kv_dot[KvBf16] = kv_dot_scalar<KvBf16>;
    t.kv_axpy[KvF32] = kv_axpy_scalar<KvF32>;
    t.kv_axpy[KvF16] = kv_axpy_scalar<KvF16>;
    t.kv_axpy[KvBf16] = kv_axpy_scalar<KvBf16>;
}

}  // namespace oxinfer::kernels
