// The per-level kernel tables and the dispatching entry points of kernels/ops.h, plus the ops that
// are the same code at every level (the RoPE driver, embedding lookup, argmax, top-k).

#include "kernels/interleave.h"
#include "kernels/ops_table.h"

#include <oxinfer/error.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace oxinfer::kernels {
namespace {

// Builds a level's table: scalar entries, then each `fill` in turn. The support check comes first
// because each fill function is compiled for its own ISA: even building a table must not happen
// on a CPU without it. It runs once per level (a throwing initializer leaves the static unset).
template <class... Fill>
OpsTable build_table(Isa isa, Fill... fill) {
    if (!isa_supported(isa))
        throw Error("cpu", "the " + std::string(isa_name(isa)) + " kernels are not available on this CPU or in this build");
    OpsTable table{};
    fill_ops_scalar(table);
    fill_delta_rule_scalar(table);
    (fill(table), ...);
    return table;
}

const OpsTable& active() { return ops_table(active_isa()); }

}  // namespace

const OpsTable& ops_table(Isa isa) {
    switch (isa) {
        case Isa::Scalar: {
            static const OpsTable table = build_table(Isa::Scalar);
            return table;
        }
#if defined(__x86_64__) || defined(_M_X64)
        case Isa::Avx2: {
            static const OpsTable table = build_table(Isa::Avx2, fill_ops_avx2, fill_delta_rule_avx2);
            return table;
        }
        case Isa::Avx512: {
            static const OpsTable table = build_table(Isa::Avx512, fill_ops_avx2, fill_delta_rule_avx2, fill_ops_avx512);
            return table;
        }
        case Isa::Avx512Bf16: {
            static const OpsTable table = build_table(Isa::Avx512Bf16, fill_ops_avx2, fill_delta_rule_avx2, fill_ops_avx512);
            return table;
        }
#endif
#if defined(__aarch64__)
        case Isa::Neon: {
            static const OpsTable table = build_table(Isa::Neon, fill_ops_neon);
            return table;
        }
#elif defined(_M_ARM64)
        case Isa::Neon: {  // the NEON file needs GCC/clang's arm_neon.h; MSVC builds get the scalar code
            static const OpsTable table = build_table(Isa::Neon);
            return table;
        }
#endif
        default: break;
    }
    throw Error("cpu", "the " + std::string(isa_name(isa)) + " kernels are not available on this CPU or in this build");
}

void rms_norm(const float* x, const float* weight, float* y, int64_t rows, int64_t n, float eps, bool weight_offset_one) {
    active().rms_norm(x, weight, y, rows, n, eps, weight_offset_one);
}
void layer_norm(const float* x, const float* weight, const float* bias, float* y, int64_t rows, int64_t n, float eps) {
    active().layer_norm(x, weight, bias, y, rows, n, eps);
}
void softmax(float* x, int64_t rows, int64_t n) { active().softmax(x, rows, n); }

namespace {

void check_rotary_dim(int64_t rotary_dim, int64_t head_dim) {
    if (rotary_dim < 0 || rotary_dim % 2 != 0 || rotary_dim > head_dim)
        throw Error("rope", "rotary_dim " + std::to_string(rotary_dim) + " must be even and at most head_dim " +
                                std::to_string(head_dim));
}

}  // namespace

void rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rotary_dim, const int64_t* positions,
          const float* inv_freq, RopeLayout layout, float attention_factor) {
    check_rotary_dim(rotary_dim, head_dim);
    const int64_t half = rotary_dim / 2;
    if (half == 0) return;
    // cos/sin once per token, shared by all its heads.
    constexpr int64_t kStack = 256;
    float stack_cos[kStack], stack_sin[kStack];
    std::vector<float> heap;
    float* cos = stack_cos;
    float* sin = stack_sin;
    if (half > kStack) {
        heap.resize(static_cast<size_t>(2 * half));
        cos = heap.data();
        sin = heap.data() + half;
    }
    for (int64_t t = 0; t < tokens; ++t) {
        rope_angles(positions + t, 1, inv_freq, rotary_dim, cos, sin, attention_factor);
        rope(x + t * heads * head_dim, 1, heads, head_dim, rotary_dim, cos, sin, layout);
    }
}

void rope_angles(const int64_t* positions, int64_t tokens, const float* inv_freq, int64_t rotary_dim, float* cos, float* sin,
                 float attention_factor) {
    const int64_t half = rotary_dim / 2;
    for (int64_t t = 0; t < tokens; ++t) rope_angles(positions[t], inv_freq, half, attention_factor, cos + t * half, sin + t * half);
}

void rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rotary_dim, const float* cos, const float* sin,
          RopeLayout layout) {
    check_rotary_dim(rotary_dim, head_dim);
    const int64_t half = rotary_dim / 2;
    if (half == 0) return;
    const OpsTable& table = active();
    for (int64_t t = 0; t < tokens; ++t)
        table.rope_rotate(x + t * heads * head_dim, heads, head_dim, rotary_dim, cos + t * half, sin + t * half, layout);
}

void silu(const float* x, float* y, int64_t n) { active().silu(x, y, n); }
void gelu_tanh(const float* x, float* y, int64_t n) { active().gelu_tanh(x, y, n); }
void gelu_erf(const float* x, float* y, int64_t n) { active().gelu_erf(x, y, n); }
void swiglu(const float* gate, const float* up, float* out, int64_t n) { active().swiglu(gate, up, out, n); }
void geglu_tanh(const float* gate, const float* up, float* out, int64_t n) { active().geglu_tanh(gate, up, out, n); }
void add(const float* a, const float* b, float* out, int64_t n) { active().add(a, b, out, n); }
void mul(const float* a, const float* b, float* out, int64_t n) { active().mul(a, b, out, n); }
void scale(float* x, float s, int64_t n) { active().scale(x, s, n); }
void softcap(float* x, float cap, int64_t n) { active().softcap(x, cap, n); }

void f16_to_f32_row(const uint16_t* src, float* dst, int64_t n) { active().f16_to_f32_row(src, dst, n); }
void bf16_to_f32_row(const uint16_t* src, float* dst, int64_t n) { active().bf16_to_f32_row(src, dst, n); }
void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) { active().f32_to_f16_row(src, dst, n); }
void f32_to_bf16_row(const float* src, uint16_t* dst, int64_t n) { active().f32_to_bf16_row(src, dst, n); }

void embedding_rows(const WeightMatrix& table, int64_t cols, const int32_t* ids, int64_t count, float* out) {
    const DType type = table.dtype;
    const auto bytes = dtype_bytes(type, static_cast<uint64_t>(cols));
    if (cols < 0 || !bytes || static_cast<int64_t>(*bytes) > table.row_bytes)
        throw Error("embedding", std::to_string(cols) + " values of " + std::string(dtype_name(type)) + " do not fit rows of " +
                                     std::to_string(table.row_bytes) + " bytes");
    if (!can_convert_to_f32(type))
        throw Error(std::string(dtype_name(type)), "unsupported tensor type: no dequantisation for it is implemented");
    const OpsTable& ops = active();
    std::vector<std::byte> plain(table.interleaved() ? static_cast<size_t>(table.row_bytes) : 0);
    for (int64_t i = 0; i < count; ++i) {
        if (ids[i] < 0 || ids[i] >= table.rows)
            throw Error("embedding", "token id " + std::to_string(ids[i]) + " is outside the table's " +
                                         std::to_string(table.rows) + " rows");
        const std::byte* row = table.data + ids[i] * table.row_bytes;
        if (table.interleaved()) {
            copy_plain_row(table, ids[i], plain.data());
            row = plain.data();
        }
        float* dst = out + i * cols;
        switch (type) {
            case DType::F32: std::memcpy(dst, row, static_cast<size_t>(cols) * 4); break;
            case DType::F16: ops.f16_to_f32_row(reinterpret_cast<const uint16_t*>(row), dst, cols); break;
            case DType::BF16: ops.bf16_to_f32_row(reinterpret_cast<const uint16_t*>(row), dst, cols); break;
            default: convert_to_f32(type, row, dst, cols); break;
        }
    }
}

int64_t argmax(const float* x, int64_t n) {
    int64_t best = 0;
    // `>` is false for NaN on either side: a NaN never wins, and a NaN at 0 loses to any number.
    for (int64_t i = 1; i < n; ++i)
        if (x[i] > x[best] || (x[best] != x[best] && x[i] == x[i])) best = i;
    return best;
}

int64_t top_k(const float* x, int64_t n, int64_t k, int32_t* ids, float* values) {
    k = std::clamp<int64_t>(k, 0, n);
    if (k == 0) return 0;
    // "a ranks before b": larger value first, NaN last, then lower index.
    const auto before = [x](int32_t a, int32_t b) {
        const bool a_nan = x[a] != x[a], b_nan = x[b] != x[b];
        if (a_nan != b_nan) return b_nan;
        if (!a_nan && x[a] != x[b]) return x[a] > x[b];
        return a < b;
    };
    // A heap of the k best so far whose top is the worst of them: one pass, O(n log k).
    std::vector<int32_t> heap;
    heap.reserve(static_cast<size_t>(k));
    for (int64_t i = 0; i < n; ++i) {
        const auto id = static_cast<int32_t>(i);
        if (static_cast<int64_t>(heap.size()) < k) {
            heap.push_back(id);
            std::push_heap(heap.begin(), heap.end(), before);
        } else if (before(id, heap.front())) {
            std::pop_heap(heap.begin(), heap.end(), before);
            heap.back() = id;
            std::push_heap(heap.begin(), heap.end(), before);
        }
    }
    std::sort_heap(heap.begin(), heap.end(), before);
    for (int64_t i = 0; i < k; ++i) {
        ids[i] = heap[static_cast<size_t>(i)];
        if (values) values[i] = x[heap[static_cast<size_t>(i)]];
    }
    return k;
}

}  // namespace oxinfer::kernels
