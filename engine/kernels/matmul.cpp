#include "kernels/matmul.h"

#include "kernels/block_layouts.h"
#include "kernels/interleave.h"
#include "kernels/matmul_table.h"
#include "kernels/thread_pool.h"

#include <oxinfer/checkpoint.h>
#include <oxinfer/error.h>
#include <oxinfer/platform.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <new>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace oxinfer::kernels {
namespace {

using blocks::load_u16;
using U8 = const uint8_t*;

// ---- scalar reference kernels -------------------------------------------------------------

void quantize_blocks32_scalar(const float* x, ActBlock32* out, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b) {
        const float* v = x + 32 * b;
        float amax = 0;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[i]));
        const float d = amax / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        int32_t sum = 0;
        for (int i = 0; i < 32; ++i) {
            out[b].q[i] = static_cast<int8_t>(std::nearbyint(v[i] * id));
            sum += out[b].q[i];
        }
        out[b].d = d;
        out[b].qsum = sum;
    }
}

void quantize_blocks256_scalar(const float* x, ActBlock256* out, int64_t n) {
    for (int64_t b = 0; b < n / 256; ++b) {
        const float* v = x + 256 * b;
        float amax = 0;
        for (int i = 0; i < 256; ++i) amax = std::max(amax, std::fabs(v[i]));
        const float d = amax / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        for (int i = 0; i < 256; ++i) out[b].q[i] = static_cast<int8_t>(std::nearbyint(v[i] * id));
        for (int g = 0; g < 16; ++g) {
            int sum = 0;
            for (int i = 0; i < 16; ++i) sum += out[b].q[16 * g + i];
            out[b].bsums[g] = static_cast<int16_t>(sum);
        }
        for (int s = 0; s < 8; ++s) out[b].sums32[s] = static_cast<int16_t>(out[b].bsums[2 * s] + out[b].bsums[2 * s + 1]);
        out[b].d = d;
    }
}

float dot_f32_scalar(int64_t n, const std::byte* w, const void* a) {
    const auto* wf = reinterpret_cast<const float*>(w);
    const auto* af = static_cast<const float*>(a);
    float sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += wf[i] * af[i];
    return sum;
}

float dot_f16_scalar(int64_t n, const std::byte* w, const void* a) {
    const auto* af = static_cast<const float*>(a);
    float sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += f16_to_f32(load_u16(reinterpret_cast<U8>(w) + 2 * i)) * af[i];
    return sum;
}

float dot_bf16_scalar(int64_t n, const std::byte* w, const void* a) {
    const auto* af = static_cast<const float*>(a);
    float sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += bf16_to_f32(load_u16(reinterpret_cast<U8>(w) + 2 * i)) * af[i];
    return sum;
}

float dot_q8_0_scalar(int64_t n, const std::byte* w, const void* a) {
    const auto* act = static_cast<const ActBlock32*>(a);
    auto* p = reinterpret_cast<U8>(w);
    float sum = 0;
    for (int64_t b = 0; b < n / 32; ++b, p += blocks::kQ8_0Bytes) {
        int32_t isum = 0;
        for (int i = 0; i < 32; ++i) isum += static_cast<int8_t>(p[2 + i]) * act[b].q[i];
        sum += f16_to_f32(load_u16(p)) * act[b].d * static_cast<float>(isum);
    }
    return sum;
}

float dot_q4_0_scalar(int64_t n, const std::byte* w, const void* a) {
    const auto* act = static_cast<const ActBlock32*>(a);
    auto* p = reinterpret_cast<U8>(w);
    float sum = 0;
    for (int64_t b = 0; b < n / 32; ++b, p += blocks::kQ4_0Bytes) {
        int32_t isum = 0;
        for (int i = 0; i < 16; ++i) isum += (p[2 + i] & 0xF) * act[b].q[i] + (p[2 + i] >> 4) * act[b].q[i + 16];
        isum -= 8 * act[b].qsum;  // codes are stored +8
        sum += f16_to_f32(load_u16(p)) * act[b].d * static_cast<float>(isum);
    }
    return sum;
}

float dot_q4_k_scalar(int64_t n, const std::byte* w, const void* a) {
    const auto* act = static_cast<const ActBlock256*>(a);
    auto* p = reinterpret_cast<U8>(w);
    float sum = 0;
    for (int64_t b = 0; b < n / 256; ++b, p += blocks::kQ4_KBytes) {
        const U8 qs = p + 16;
        int32_t sumi = 0, summ = 0;
        for (int s = 0; s < 8; ++s) {
            int sc, m;
            blocks::k4_scale_min(p + 4, s, sc, m);
            const int shift = 4 * (s % 2);
            int32_t isum = 0;
            for (int l = 0; l < 32; ++l) isum += ((qs[32 * (s / 2) + l] >> shift) & 0xF) * act[b].q[32 * s + l];
            sumi += sc * isum;
            summ += m * act[b].sums32[s];
        }
        const float d = f16_to_f32(load_u16(p)) * act[b].d;
        const float dmin = f16_to_f32(load_u16(p + 2)) * act[b].d;
        sum += d * static_cast<float>(sumi) - dmin * static_cast<float>(summ);
    }
    return sum;
}

float dot_q6_k_scalar(int64_t n, const std::byte* w, const void* a) {
    const auto* act = static_cast<const ActBlock256*>(a);
    auto* p = reinterpret_cast<U8>(w);
    float sum = 0;
    for (int64_t b = 0; b < n / 256; ++b, p += blocks::kQ6_KBytes) {
        const U8 ql = p, qh = p + 128;
        const auto* scales = reinterpret_cast<const int8_t*>(p + 192);
        int32_t sumi = 0;
        for (int j = 0; j < 16; ++j) {
            int32_t isum = 0;
            for (int i = 0; i < 16; ++i) {
                const int o = 16 * j + i, half = o / 128, g = (o / 32) % 4, l = o % 32;
                const int low = (ql[64 * half + 32 * (g % 2) + l] >> (4 * (g / 2))) & 0xF;
                const int high = (qh[32 * half + l] >> (2 * g)) & 3;
                isum += ((low | (high << 4)) - 32) * act[b].q[o];
            }
            sumi += scales[j] * isum;
        }
        sum += f16_to_f32(load_u16(p + 208)) * act[b].d * static_cast<float>(sumi);
    }
    return sum;
}

void pack_panel_scalar(DType type, const std::byte* const* rows, int valid_rows, int64_t kc, float* packed) {
    float row[kGemmKc];
    for (int r = 0; r < kGemmRows; ++r) {
        if (r < valid_rows) convert_to_f32(type, rows[r], row, kc);
        else std::fill(row, row + kc, 0.0f);
        for (int64_t k = 0; k < kc; ++k) packed[k * kGemmRows + r] = row[k];
    }
}

void gemm_tile_scalar(int64_t k, const float* xp, const float* wp, float* c, int64_t ldc, bool accumulate) {
    float tile[kGemmTokens * kGemmRows] = {};
    for (int64_t kk = 0; kk < k; ++kk)
        for (int t = 0; t < kGemmTokens; ++t)
            for (int r = 0; r < kGemmRows; ++r) tile[t * kGemmRows + r] += xp[kk * kGemmTokens + t] * wp[kk * kGemmRows + r];
    for (int t = 0; t < kGemmTokens; ++t)
        for (int r = 0; r < kGemmRows; ++r) c[t * ldc + r] = (accumulate ? c[t * ldc + r] : 0.0f) + tile[t * kGemmRows + r];
}

float read_sum_scalar(const float* data, int64_t n) {
    float sums[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; ++j) sums[j] += data[i + j];
    for (; i < n; ++i) sums[0] += data[i];
    float total = 0;
    for (float s : sums) total += s;
    return total;
}

double peak_flops_probe_scalar(int64_t iterations, float* sink) {
    // 8 independent multiply-add chains hide the latency of each.
    float chains[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const float a = 0.999999f, b = 1e-7f;
    for (int64_t i = 0; i < iterations; ++i)
        for (float& c : chains) c = c * a + b;
    float total = 0;
    for (float c : chains) total += c;
    *sink = total;
    return 2.0 * 8 * static_cast<double>(iterations);
}

MatmulTable scalar_table() {
    return {quantize_blocks32_scalar, quantize_blocks256_scalar, over_rows<dot_f32_scalar>,  over_rows<dot_f16_scalar>,
            over_rows<dot_bf16_scalar>, over_rows<dot_q8_0_scalar>, over_rows<dot_q4_0_scalar>, over_rows<dot_q4_k_scalar>,
            over_rows<dot_q6_k_scalar>, pack_panel_scalar, gemm_tile_scalar,
            nullptr,                  nullptr,                  {read_sum_scalar, nullptr}, peak_flops_probe_scalar, nullptr,
            nullptr,                  nullptr,                  0,                        nullptr,                  nullptr,
            nullptr,                  nullptr,                  0};
}

// ---- drivers ------------------------------------------------------------------------------

void check_supported(const MatmulTable& table, const WeightMatrix& w) {
    if (!can_convert_to_f32(w.dtype))
        throw Error("matmul", "weights of type " + std::string(dtype_name(w.dtype)) + " cannot be used: unsupported tensor type");
    if (w.interleaved() && !interleaved_tile(table, w.dtype))
        throw Error("matmul", "interleaved " + std::string(dtype_name(w.dtype)) + " weights need a kernel this instruction-set level lacks");
    if (w.interleaved() && w.group_rows != interleaved_group_rows(table, w.dtype))
        throw Error("matmul", "interleaved " + std::string(dtype_name(w.dtype)) + " weights in groups of " + std::to_string(w.group_rows) +
                                  " rows, where this instruction-set level's kernel takes " +
                                  std::to_string(interleaved_group_rows(table, w.dtype)));
}

// The interleaved part of w's rows: whole groups (none for a plain matrix).
int64_t interleaved_rows(const WeightMatrix& w) { return w.interleaved() ? w.rows / w.group_rows * w.group_rows : 0; }

// Storage that starts on a cache line. The AVX-512 row dots load the activations 64 bytes at a
// time, and a load that straddles two lines costs: on a 2-core Zen 5 VM the bf16 row dot over 4
// MB of rows in cache ran at 98 GB/s with its activations on a line and at 56-62 with them 16, 32
// or 48 bytes off (where std::vector's 16-byte alignment puts them), and over 768 MB in memory at
// 43.6 against 38.8-39.4 GB/s.
template <class T>
struct CacheLineAllocator {
    using value_type = T;
    static constexpr std::align_val_t kAlignment{64};
    CacheLineAllocator() = default;
    template <class U>
    CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
    T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlignment)); }
    void deallocate(T* p, size_t) noexcept { ::operator delete(p, kAlignment); }
    template <class U>
    bool operator==(const CacheLineAllocator<U>&) const noexcept { return true; }
};
template <class T>
using CacheLineVector = std::vector<T, CacheLineAllocator<T>>;

// Activations of one call in each format the row dots of its weight types read.
struct PackedActivations {
    CacheLineVector<ActBlock32> blocks32;
    CacheLineVector<ActBlock256> blocks256;
    CacheLineVector<float> even_odd;
    const float* f32 = nullptr;
    int64_t cols = 0;

    const void* row(ActivationFormat format, int64_t t) const {
        switch (format) {
            case ActivationFormat::Q8Blocks32: return blocks32.data() + t * (cols / 32);
            case ActivationFormat::Q8Blocks256: return blocks256.data() + t * (cols / 256);
            case ActivationFormat::F32EvenOdd: return even_odd.data() + t * cols;
            case ActivationFormat::F32: break;
        }
        return f32 + t * cols;
    }
};

void to_even_odd(const float* x, float* out, int64_t n, int64_t group) {
    int64_t i = 0;
    for (; i + group <= n; i += group)
        for (int64_t j = 0; j < group / 2; ++j) {
            out[i + j] = x[i + 2 * j];
            out[i + group / 2 + j] = x[i + 2 * j + 1];
        }
    std::copy(x + i, x + n, out + i);
}

}  // namespace

bool has_direct_dot(DType type) {
    switch (type) {
        case DType::F32: case DType::F16: case DType::BF16: case DType::Q8_0: case DType::Q4_0: case DType::Q4_K: case DType::Q6_K:
            return true;
        default: return false;
    }
}

ActivationFormat activation_format(DType type) {
    switch (type) {
        case DType::Q8_0: case DType::Q4_0: return ActivationFormat::Q8Blocks32;
        case DType::Q4_K: case DType::Q6_K: return ActivationFormat::Q8Blocks256;
        default: return ActivationFormat::F32;
    }
}

InterleavedTile interleaved_tile(const MatmulTable& table, DType type) {
    switch (type) {
        case DType::Q4_K: return table.interleaved_q4_k;
        case DType::Q8_0: return table.interleaved_q8_0;
        default: return nullptr;
    }
}

int64_t interleaved_group_rows(const MatmulTable& table, DType type) {
    return type == DType::Q4_K ? table.interleaved_q4_k_rows : kInterleavedRows;
}

RowDot row_dot(const MatmulTable& table, DType type) {
    switch (type) {
        case DType::F32: return table.dot_f32;
        case DType::F16: return table.dot_f16;
        case DType::BF16: return table.dot_bf16;
        case DType::Q8_0: return table.dot_q8_0;
        case DType::Q4_0: return table.dot_q4_0;
        case DType::Q4_K: return table.dot_q4_k;
        case DType::Q6_K: return table.dot_q6_k;
        default: return nullptr;
    }
}

namespace {

// The fill functions are compiled for their own ISA, so a level's table is only built on a CPU
// that has it (even storing its pointers may use that ISA's instructions).
MatmulTable build_matmul_table(Isa isa) {
    if (!isa_supported(isa))
        throw Error("cpu", "the " + std::string(isa_name(isa)) + " kernels are not available on this CPU or in this build");
    MatmulTable table = scalar_table();
#if defined(__x86_64__) || defined(_M_X64)
    // Each x86 level overrides the entries it accelerates on top of the level below.
    if (isa == Isa::Avx2 || isa == Isa::Avx512 || isa == Isa::Avx512Bf16) fill_matmul_avx2(table);
    if (isa == Isa::Avx512 || isa == Isa::Avx512Bf16) fill_matmul_avx512(table);
    if (isa == Isa::Avx512Bf16) fill_matmul_avx512bf16(table);
#endif
    return table;
}

}  // namespace

const MatmulTable& matmul_table(Isa isa) {
    switch (isa) {
        case Isa::Scalar: { static const MatmulTable table = build_matmul_table(Isa::Scalar); return table; }
        case Isa::Avx2: { static const MatmulTable table = build_matmul_table(Isa::Avx2); return table; }
        case Isa::Avx512: { static const MatmulTable table = build_matmul_table(Isa::Avx512); return table; }
        case Isa::Avx512Bf16: { static const MatmulTable table = build_matmul_table(Isa::Avx512Bf16); return table; }
        case Isa::Neon: { static const MatmulTable table = build_matmul_table(Isa::Neon); return table; }
    }
    throw Error("cpu", "unknown instruction set level");
}

WeightMatrix weight_matrix(const TensorInfo& tensor) {
    if (tensor.shape.size() != 2) throw Error("tensor '" + tensor.name + "'", "is not a 2-D weight matrix");
    if (!tensor.contiguous()) throw Error("tensor '" + tensor.name + "'", "is a strided view, not a contiguous matrix");
    WeightMatrix w;
    w.dtype = tensor.dtype;
    w.rows = tensor.shape[0];
    w.cols = tensor.shape[1];
    w.data = tensor.data;
    w.row_bytes = static_cast<int64_t>(*dtype_bytes(tensor.dtype, static_cast<uint64_t>(w.cols)));
    return w;
}

namespace {

// Calls visit(begin, count) for each step of `step` rows in [begin, end) (the last may be short),
// taking the steps of `streams` equal parts of the range in turn, so that a thread reads that many
// sequential streams of weights at once (read_streams says how many).
template <class Visit>
void for_each_step_in_streams(int64_t begin, int64_t end, int64_t step, int64_t streams, Visit&& visit) {
    const int64_t steps = (end - begin + step - 1) / step;
    if (steps <= 0) return;
    streams = std::min(streams, steps);
    const int64_t per_stream = (steps + streams - 1) / streams;
    for (int64_t i = 0; i < per_stream; ++i)
        for (int64_t s = 0; s < streams; ++s) {
            const int64_t index = s * per_stream + i;
            if (index >= steps) break;
            const int64_t first = begin + index * step;
            visit(first, std::min(step, end - first));
        }
}

// The GEMV driver's streaming choice measured on AMD (read_streams).
bool on_amd() {
    static const bool amd = platform().cpu_vendor == "AuthenticAMD";
    return amd;
}

// Streams per thread for a GEMV over w: the hardware prefetchers follow each, and more cache lines
// are in flight than one stream keeps. On a 2-core Xeon VM (AVX-512), 2 threads reading 1 GB:
// 23-27 GB/s with one stream per thread, 27-29 with two, 30-32 with four. Rows whose arithmetic
// per byte is high gain from two: tg128 in alternating runs, interleaved Q4_K +13% (Qwen3-0.6B and
// Llama-3.2-1B), plain Q4_K and Q8_0 rows +3% and +5% (Qwen3-0.6B); more than two gained less.
// The cheapest kernels keep one: interleaved Q8_0 (Qwen3 +1%, Llama -3%) and float rows (bf16
// -2%, within the noise). On AMD, interleaved Q4_K keeps one too: on a 2-core EPYC VM (Zen 5), with
// the AVX-512 kernel that computes it in 512-bit vectors, tg128 of Qwen3-0.6B q4_k with
// --bandwidth in rotating runs, medians of 5: one stream 0.78 of the bound, two 0.71.
int64_t read_streams(const WeightMatrix& w) {
    if (w.dtype == DType::Q4_K && w.interleaved() && on_amd()) return 1;
    const bool interleaved_q8_0 = w.dtype == DType::Q8_0 && w.interleaved();
    return dtype_traits(w.dtype).quantized && !interleaved_q8_0 ? 2 : 1;
}

}  // namespace

void gemv_with(const MatmulTable& table, const WeightMatrix& w, const float* x, int64_t tokens, float* y, ThreadPool& pool) {
    const MatmulTarget target{&w, y};
    gemv_many_with(table, {&target, 1}, x, tokens, pool);
}

void gemv_many_with(const MatmulTable& table, std::span<const MatmulTarget> targets, const float* x, int64_t tokens, ThreadPool& pool,
                    const RangeCallback* rows_done) {
    if (targets.empty()) return;
    if (rows_done)
        for (const MatmulTarget& target : targets)
            if (target.w->rows != targets[0].w->rows) throw Error("matmul", "matrices whose rows go together must have as many rows");
    const int64_t cols = targets[0].w->cols;
    struct Part {
        const WeightMatrix* w;
        float* y;
        RowDot dot;  // the type's own row dot, or nullptr for the generic dequantise-a-row path
        InterleavedTile tile;  // for the interleaved groups, if any
        ActivationFormat format;
        int64_t first_unit;  // in the concatenation of every matrix's rows, in units of kRowGranule
    };
    // Rows go to threads in multiples of 16, so that threads never write to the same cache line;
    // and so in whole interleaved groups.
    constexpr int64_t kRowGranule = 16;
    static_assert(kRowGranule % (2 * kInterleavedRows) == 0, "a granule holds whole groups of every size");
    Part parts[kMaxMatmulTargets];
    if (targets.size() > kMaxMatmulTargets) throw Error("matmul", "too many matrices in one call");
    // Kept between calls on each calling thread: decoding runs gemv for every matrix of every
    // token, and the quantised activations would otherwise be a fresh allocation each time.
    // (A named reference: the workers' lambda would otherwise see their own thread_local copy.)
    thread_local PackedActivations scratch;
    PackedActivations& act = scratch;
    act.cols = cols;
    act.f32 = x;
    bool need32 = false, need256 = false, need_even_odd = false;
    int64_t units = 0;
    for (size_t i = 0; i < targets.size(); ++i) {
        const WeightMatrix& w = *targets[i].w;
        check_supported(table, w);
        if (w.cols != cols) throw Error("matmul", "matrices sharing an input must have the same number of columns");
        const RowDot dot = row_dot(table, w.dtype);
        const ActivationFormat format = !dot                                                 ? ActivationFormat::F32
                                        : w.dtype == DType::BF16 && table.bf16_even_odd_group ? ActivationFormat::F32EvenOdd
                                                                                              : activation_format(w.dtype);
        need32 |= format == ActivationFormat::Q8Blocks32;
        need256 |= format == ActivationFormat::Q8Blocks256;
        need_even_odd |= format == ActivationFormat::F32EvenOdd;
        // The matrices' units one after another; or, rows going together, every matrix's row r in unit r / kRowGranule.
        const int64_t matrix_units = (w.rows + kRowGranule - 1) / kRowGranule;
        parts[i] = {&w, targets[i].y, dot, w.interleaved() ? interleaved_tile(table, w.dtype) : nullptr, format, rows_done ? 0 : units};
        units = rows_done ? matrix_units : units + matrix_units;
    }
    if (need32) {
        act.blocks32.resize(static_cast<size_t>(tokens * (cols / 32)));
        for (int64_t t = 0; t < tokens; ++t) table.quantize_blocks32(x + t * cols, act.blocks32.data() + t * (cols / 32), cols);
    }
    if (need_even_odd) {
        act.even_odd.resize(static_cast<size_t>(tokens * cols));
        for (int64_t t = 0; t < tokens; ++t) to_even_odd(x + t * cols, act.even_odd.data() + t * cols, cols, table.bf16_even_odd_group);
    }
    if (need256) {
        act.blocks256.resize(static_cast<size_t>(tokens * (cols / 256)));
        for (int64_t t = 0; t < tokens; ++t) table.quantize_blocks256(x + t * cols, act.blocks256.data() + t * (cols / 256), cols);
    }
    const size_t count = targets.size();
    pool.parallel_for(units, 1, [&](int64_t unit_begin, int64_t unit_end) {
        thread_local std::vector<float> row;  // the generic path's dequantised row, kept like `act`
        for (size_t i = 0; i < count; ++i) {
            const Part& part = parts[i];
            const WeightMatrix& w = *part.w;
            int64_t begin = std::max<int64_t>(0, (unit_begin - part.first_unit) * kRowGranule);
            const int64_t end = std::min(w.rows, (unit_end - part.first_unit) * kRowGranule);
            // Interleaved groups (begin is a multiple of the granule, and so of the group), then
            // any plain rows after them through the paths below.
            const int64_t streams = read_streams(w);
            const int64_t group_end = std::max(begin, std::min(end, interleaved_rows(w)));
            // One group per call: two at once (two streams, sharing the activations' permutes)
            // decoded Qwen3-0.6B and Llama-3.2-1B q8_0 7% slower on a 2-core Zen 5 VM, once the
            // group kernels started their pages' translations ahead (weight_prefetch.h).
            const int64_t group_rows = w.interleaved() ? w.group_rows : kInterleavedRows;  // any step for no groups
            for_each_step_in_streams(begin, group_end, group_rows, streams, [&](int64_t r, int64_t) {
                for (int64_t t = 0; t < tokens; t += kKQuantTileTokens) {
                    const int n = static_cast<int>(std::min<int64_t>(kKQuantTileTokens, tokens - t));
                    const void* rows_of[kKQuantTileTokens];
                    for (int i = 0; i < n; ++i) rows_of[i] = act.row(part.format, t + i);
                    part.tile(cols, w.data + r * w.row_bytes, 1, rows_of, n, part.y + t * w.rows + r, w.rows);
                }
            });
            begin = group_end;
            if (begin >= end) continue;
            if (part.dot && !(tokens > 1 && w.dtype == DType::Q4_K && table.dot_q4_k_tokens)) {
                // Several tokens take the rows a few at a time (about 16 KB), so that every token
                // after the first finds them in L1.
                const int64_t step = tokens == 1 ? kRowGranule : std::clamp<int64_t>(16384 / w.row_bytes, 1, kRowGranule);
                for_each_step_in_streams(begin, end, step, streams, [&](int64_t r, int64_t rows) {
                    for (int64_t t = 0; t < tokens; ++t)
                        part.dot(cols, w.data + r * w.row_bytes, w.row_bytes, rows, act.row(part.format, t), part.y + t * w.rows + r);
                });
                continue;
            }
            if (!part.dot && static_cast<int64_t>(row.size()) < cols) row.resize(static_cast<size_t>(cols));
            for (int64_t r = begin; r < end; ++r) {
                const std::byte* weights = w.data + r * w.row_bytes;
                if (!part.dot) {  // the generic path: the row dequantised, then the f32 dot
                    convert_to_f32(w.dtype, weights, row.data(), cols);
                    for (int64_t t = 0; t < tokens; ++t)
                        table.dot_f32(cols, reinterpret_cast<const std::byte*>(row.data()), 0, 1, act.row(part.format, t), part.y + t * w.rows + r);
                    continue;
                }
                // Q4_K for several tokens: the row read once for every token (up to kKQuantTileTokens at a time), the row dot's arithmetic.
                for (int64_t t = 0; t < tokens; t += kKQuantTileTokens) {
                    const int n = static_cast<int>(std::min<int64_t>(kKQuantTileTokens, tokens - t));
                    const void* rows_of[kKQuantTileTokens];
                    float out[kKQuantTileTokens];
                    for (int i = 0; i < n; ++i) rows_of[i] = act.row(part.format, t + i);
                    table.dot_q4_k_tokens(cols, weights, rows_of, n, out);
                    for (int i = 0; i < n; ++i) part.y[(t + i) * w.rows + r] = out[i];
                }
            }
        }
        if (rows_done) (*rows_done)(unit_begin * kRowGranule, std::min(targets[0].w->rows, unit_end * kRowGranule));
    });
}

namespace {

// How many 16-row panels share one pass over a K slice of the packed activations: that slice (all
// tokens, kGemmKc values each: 512 KB at 512 tokens) is then read from the shared last-level cache
// once per block of panels, and from the core's L2 for the other panels of the block.
constexpr int64_t kPanelsPerBlock = 4;

// The blocked GEMM loop, shared by the f32 path and the bf16-pair path. Each thread owns panels of
// kGemmRows output rows, taken kPanelsPerBlock at a time. For each K slice, each panel's weights
// are packed once (L1-resident) and every token group is multiplied by them, accumulating into
// the block's outputs. Packed is float (one value per k) or
// uint32_t (two bf16 values per pair of k); x_group_stride is the packed length of a token group.
// With a pair tile (float panels, levels that have one), two panels of a block go together.
//
// The block's outputs accumulate in a buffer of its own, kPanelsPerBlock * kGemmRows floats per
// token, copied to y once the last K slice is done: y's rows lie w.rows floats apart (16 KB for
// 4096 rows), and tiles that far apart share a few cache sets, so the block's part of y missed in
// L2 at every K slice (perf: 8-10% of a 4096 x 4096 bf16 GEMM on the loads of the outputs). The
// buffer is padded to whole tiles (packed activations and panels are zero-padded), so every tile
// is a full one.
template <class Packed, class PackPanel, class Tile, class PairTile = std::nullptr_t>
void gemm_panels(const WeightMatrix& w, const std::vector<Packed>& packed_x, int64_t x_group_stride, int64_t tokens, float* y,
                 ThreadPool& pool, PackPanel pack_panel, Tile tile_kernel, PairTile pair_tile = nullptr) {
    const int64_t K = w.cols;
    const int64_t groups = (tokens + kGemmTokens - 1) / kGemmTokens;
    const int64_t panels = (w.rows + kGemmRows - 1) / kGemmRows;
    const auto block_elements = dtype_traits(w.dtype).block_elements;
    const auto block_bytes = static_cast<uint64_t>(dtype_traits(w.dtype).block_bytes);
    constexpr int64_t kPerK = std::is_same_v<Packed, uint32_t> ? 2 : 1;  // k values per packed step
    constexpr int64_t kPanelValues = kGemmKc / kPerK * kGemmRows;
    constexpr int64_t kBlockRows = kPanelsPerBlock * kGemmRows;  // the output buffer's row stride
    // Ranges of whole blocks of kPanelsPerBlock panels, so that each block's panels share their
    // pass over the packed activations.
    pool.parallel_for(panels, kPanelsPerBlock, [&](int64_t panel_begin, int64_t panel_end) {
        std::vector<Packed> packed_w(static_cast<size_t>(2 * kPanelValues));
        // Not zeroed: the first K slice overwrites every element.
        const auto block_out = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(groups * kGemmTokens * kBlockRows));
        const std::byte* rows[kGemmRows];
        for (int64_t block = panel_begin; block < panel_end; block += kPanelsPerBlock) {
            const int64_t block_end = std::min(panel_end, block + kPanelsPerBlock);
            for (int64_t k0 = 0; k0 < K; k0 += kGemmKc) {
                const int64_t kc = std::min<int64_t>(kGemmKc, K - k0);
                const int64_t steps = (kc + kPerK - 1) / kPerK;
                const uint64_t byte_offset = static_cast<uint64_t>(k0 / block_elements) * block_bytes;
                for (int64_t panel = block; panel < block_end;) {
                    bool paired = false;
                    if constexpr (!std::is_same_v<PairTile, std::nullptr_t>) paired = pair_tile && panel + 1 < block_end;
                    const int count = paired ? 2 : 1;
                    for (int i = 0; i < count; ++i) {
                        const int64_t r0 = (panel + i) * kGemmRows;
                        const int valid_rows = static_cast<int>(std::min<int64_t>(kGemmRows, w.rows - r0));
                        for (int r = 0; r < valid_rows; ++r) rows[r] = w.data + (r0 + r) * w.row_bytes + byte_offset;
                        pack_panel(w.dtype, rows, valid_rows, kc, packed_w.data() + i * kPanelValues);
                    }
                    for (int64_t g = 0; g < groups; ++g) {
                        const Packed* xs = packed_x.data() + g * x_group_stride + k0 / kPerK * kGemmTokens;
                        float* out = block_out.get() + g * kGemmTokens * kBlockRows + (panel - block) * kGemmRows;
                        if constexpr (!std::is_same_v<PairTile, std::nullptr_t>)
                            if (paired) {
                                pair_tile(steps, xs, packed_w.data(), packed_w.data() + kPanelValues, out, kBlockRows, k0 > 0);
                                continue;
                            }
                        tile_kernel(steps, xs, packed_w.data(), out, kBlockRows, k0 > 0);
                    }
                    panel += count;
                }
            }
            const int64_t r0 = block * kGemmRows, valid_rows = std::min(w.rows, block_end * kGemmRows) - r0;
            for (int64_t t = 0; t < tokens; ++t)
                std::copy_n(block_out.get() + t * kBlockRows, valid_rows, y + t * w.rows + r0);
        }
    });
}

// K-quant prefill as llama.cpp computes it: activations quantised to int8 per 256 values (the
// GEMV's format) and integer products, which on AVX2 run about twice the rate of float FMAs. Each
// thread takes blocks of kRowBlock rows; for each group of tokens (whose activations then stay in
// L1) the tile kernel runs over the rows of the block, whose weights stay in L1/L2.
void gemm_k_quant(KQuantTile tile, const MatmulTable& table, const WeightMatrix& w, const float* x, int64_t tokens, float* y,
                  ThreadPool& pool) {
    const int64_t blocks = w.cols / 256;
    std::vector<ActBlock256> act(static_cast<size_t>(tokens * blocks));
    pool.parallel_for(tokens, 1, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) table.quantize_blocks256(x + t * w.cols, act.data() + t * blocks, w.cols);
    });
    constexpr int64_t kRowBlock = 16;
    pool.parallel_for(w.rows, kRowBlock, [&](int64_t begin, int64_t end) {
        for (int64_t block = begin; block < end; block += kRowBlock) {
            const int64_t block_end = std::min(end, block + kRowBlock);
            for (int64_t t0 = 0; t0 < tokens; t0 += kKQuantTileTokens) {
                const int64_t valid_tokens = std::min<int64_t>(kKQuantTileTokens, tokens - t0);
                const ActBlock256* acts[kKQuantTileTokens];
                for (int i = 0; i < kKQuantTileTokens; ++i) acts[i] = act.data() + (t0 + std::min<int64_t>(i, valid_tokens - 1)) * blocks;
                tile(blocks, w.data + block * w.row_bytes, w.row_bytes, block_end - block, acts, static_cast<int>(valid_tokens),
                     y + t0 * w.rows + block, w.rows);
            }
        }
    });
}

// Prefill of interleaved weights: the GEMV's int8 activations and its kernels, each group's rows
// (L1-resident) multiplied by every token, kKQuantTileTokens at a time; the plain rows after the
// last group through the row dots.
void gemm_interleaved(const MatmulTable& table, const WeightMatrix& w, const float* x, int64_t tokens, float* y, ThreadPool& pool) {
    const bool blocks32 = activation_format(w.dtype) == ActivationFormat::Q8Blocks32;
    const int64_t act_bytes = blocks32 ? static_cast<int64_t>(sizeof(ActBlock32)) * (w.cols / 32) : static_cast<int64_t>(sizeof(ActBlock256)) * (w.cols / 256);
    std::vector<std::byte> act(static_cast<size_t>(tokens * act_bytes));
    pool.parallel_for(tokens, 1, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            void* out = act.data() + t * act_bytes;
            if (blocks32) table.quantize_blocks32(x + t * w.cols, static_cast<ActBlock32*>(out), w.cols);
            else table.quantize_blocks256(x + t * w.cols, static_cast<ActBlock256*>(out), w.cols);
        }
    });
    const InterleavedTile tile = interleaved_tile(table, w.dtype);
    const RowDot dot = row_dot(table, w.dtype);
    const int64_t grouped = interleaved_rows(w);
    // Each tile of activations serves kGroupsPerPass row groups while it is in L1, their weights
    // staying in L2; one group per pass read every token's activations from L3 for every group.
    constexpr int64_t kGroupsPerPass = 4;
    const int64_t group_rows = w.group_rows;
    pool.parallel_for(w.rows, 2 * group_rows, [&](int64_t begin, int64_t end) {
        for (int64_t r0 = begin; r0 < std::min(end, grouped); r0 += kGroupsPerPass * group_rows) {
            const int64_t r1 = std::min({end, grouped, r0 + kGroupsPerPass * group_rows});
            for (int64_t t0 = 0; t0 < tokens; t0 += kKQuantTileTokens) {
                const int n = static_cast<int>(std::min<int64_t>(kKQuantTileTokens, tokens - t0));
                const void* acts[kKQuantTileTokens];
                for (int i = 0; i < n; ++i) acts[i] = act.data() + (t0 + i) * act_bytes;
                for (int64_t r = r0; r < r1; r += 2 * group_rows)
                    tile(w.cols, w.data + r * w.row_bytes, r1 - r >= 2 * group_rows ? 2 : 1, acts, n, y + t0 * w.rows + r, w.rows);
            }
        }
        const int64_t plain_begin = std::max(begin, grouped);
        if (plain_begin < end)
            for (int64_t t = 0; t < tokens; ++t)
                dot(w.cols, w.data + plain_begin * w.row_bytes, w.row_bytes, end - plain_begin, act.data() + t * act_bytes, y + t * w.rows + plain_begin);
    });
}

}  // namespace

void gemm_with(const MatmulTable& table, const WeightMatrix& w, const float* x, int64_t tokens, float* y, ThreadPool& pool) {
    check_supported(table, w);
    if (w.interleaved()) {
        gemm_interleaved(table, w, x, tokens, y, pool);
        return;
    }
    if (w.dtype == DType::Q4_K && !table.gemm_q4_k_tile) {  // the same arithmetic through the row dots
        gemv_with(table, w, x, tokens, y, pool);
        return;
    }
    if (const KQuantTile tile = w.dtype == DType::Q4_K ? table.gemm_q4_k_tile : w.dtype == DType::Q6_K ? table.gemm_q6_k_tile : nullptr) {
        gemm_k_quant(tile, table, w, x, tokens, y, pool);
        return;
    }
    const int64_t K = w.cols;
    const int64_t groups = (tokens + kGemmTokens - 1) / kGemmTokens;

    if (w.dtype == DType::BF16 && w.bf16_activations && table.gemm_tile_bf16) {
        // bf16 weights on a level with a bf16 dot product, when the matrix allows it: activations rounded to bf16 once,
        // packed as pairs of consecutive k (one 32-bit word per token and k pair), zero-padded.
        const int64_t pairs = (K + 1) / 2;
        std::vector<uint32_t> packed_x(static_cast<size_t>(groups * pairs * kGemmTokens));
        pool.parallel_for(groups, 1, [&](int64_t begin, int64_t end) {
            for (int64_t g = begin; g < end; ++g)
                for (int t = 0; t < kGemmTokens; ++t) {
                    const int64_t token = g * kGemmTokens + t;
                    for (int64_t p = 0; p < pairs; ++p) {
                        auto bits = [&](int64_t k) -> uint32_t { return token < tokens && k < K ? f32_to_bf16(x[token * K + k]) : 0u; };
                        packed_x[static_cast<size_t>((g * pairs + p) * kGemmTokens + t)] = bits(2 * p) | bits(2 * p + 1) << 16;
                    }
                }
        });
        gemm_panels(w, packed_x, pairs * kGemmTokens, tokens, y, pool,
                    [&](DType, const std::byte* const* rows, int valid_rows, int64_t kc, uint32_t* packed) {
                        table.pack_panel_bf16(rows, valid_rows, kc, packed);
                    },
                    table.gemm_tile_bf16);
        return;
    }

    // Activations packed once: group g holds K steps of kGemmTokens values, zero-padded.
    std::vector<float> packed_x(static_cast<size_t>(groups * K * kGemmTokens));
    pool.parallel_for(groups, 1, [&](int64_t begin, int64_t end) {
        for (int64_t g = begin; g < end; ++g) {
            float* out = packed_x.data() + g * K * kGemmTokens;
            for (int t = 0; t < kGemmTokens; ++t) {
                const int64_t token = g * kGemmTokens + t;
                for (int64_t k = 0; k < K; ++k) out[k * kGemmTokens + t] = token < tokens ? x[token * K + k] : 0.0f;
            }
        }
    });
    // f32, f16, bf16, Q8_0 and Q4_0 panels are packed by the level's own kernel; other types are
    // dequantised row by row (pack_panel_scalar's path through convert_to_f32).
    const bool level_packs = w.dtype == DType::F32 || w.dtype == DType::F16 || w.dtype == DType::BF16 || w.dtype == DType::Q8_0 ||
                             w.dtype == DType::Q4_0;
    gemm_panels(w, packed_x, K * kGemmTokens, tokens, y, pool, level_packs ? table.pack_panel : pack_panel_scalar, table.gemm_tile,
                table.gemm_tile_pair);
}

void gemv(const WeightMatrix& w, const float* x, int64_t tokens, float* y, ThreadPool& pool) {
    gemv_with(matmul_table(active_isa()), w, x, tokens, y, pool);
}

void gemm(const WeightMatrix& w, const float* x, int64_t tokens, float* y, ThreadPool& pool) {
    gemm_with(matmul_table(active_isa()), w, x, tokens, y, pool);
}

void matmul(const WeightMatrix& w, const float* x, int64_t tokens, float* y, ThreadPool& pool) {
    if (tokens <= kGemvMaxTokens) gemv(w, x, tokens, y, pool);
    else gemm(w, x, tokens, y, pool);
}

void matmul_many(std::span<const MatmulTarget> targets, const float* x, int64_t tokens, ThreadPool& pool) {
    if (tokens <= kGemvMaxTokens) {
        gemv_many_with(matmul_table(active_isa()), targets, x, tokens, pool);
        return;
    }
    for (const MatmulTarget& target : targets) gemm(*target.w, x, tokens, target.y, pool);
}

void matmul_rows_together(std::span<const MatmulTarget> targets, const float* x, int64_t tokens, RangeCallback rows_done,
                          ThreadPool& pool) {
    if (tokens <= kGemvMaxTokens) {
        gemv_many_with(matmul_table(active_isa()), targets, x, tokens, pool, &rows_done);
        return;
    }
    matmul_many(targets, x, tokens, pool);
    if (!targets.empty()) rows_done(0, targets[0].w->rows);
}

}  // namespace oxinfer::kernels
