// AVX2 + FMA + F16C matmul kernels. This file is compiled with -mavx2 -mfma -mf16c and runs only
// after run-time detection: everything it defines stays in an anonymous namespace, and it uses
// no shared inline functions or templates (std::min, containers...), whose AVX2-compiled copies
// the linker could otherwise hand to code running on older CPUs. fill_matmul_avx2 is the only
// symbol it exports. (over_rows from matmul_table.h is instantiated only with this file's
// anonymous-namespace functions, which gives each instantiation internal linkage.)

#include "kernels/block_layouts.h"
#include "kernels/matmul_table.h"

#include <immintrin.h>

#include "kernels/x86/block32_kernels.h"
#include "kernels/x86/interleaved_kernels.h"
#include "kernels/x86/k_quant_kernels.h"
#include "kernels/x86/weight_prefetch.h"

namespace oxinfer::kernels {
namespace {

using U8 = const uint8_t*;

// max |x| of 8 floats, reduced to one.
inline float abs_max(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

// Quantises 32 floats with the scalar rule (d = amax/127, q = nearbyint(x * (1/d))), giving
// identical codes; returns the codes packed in order and their sum.
inline __m256i quantize32(const float* v, float& d_out, int& sum_out) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 x[4];
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
        x[i] = _mm256_loadu_ps(v + 8 * i);
        amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, x[i]));
    }
    const float max = abs_max(amax);
    const float d = max / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    const __m256 scale = _mm256_set1_ps(id);
    __m256i q[4];
    for (int i = 0; i < 4; ++i)
        q[i] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(x[i], scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    // packs interleave 128-bit lanes; the final permute restores element order.
    const __m256i q01 = _mm256_packs_epi32(q[0], q[1]);
    const __m256i q23 = _mm256_packs_epi32(q[2], q[3]);
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q01, q23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    sum_out = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    d_out = d;
    return bytes;
}

void quantize_blocks32_avx2(const float* x, ActBlock32* out, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b) {
        float d;
        int sum;
        const __m256i q = quantize32(x + 32 * b, d, sum);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].q), q);
        out[b].d = d;
        out[b].qsum = sum;
    }
}

void quantize_blocks256_avx2(const float* x, ActBlock256* out, int64_t n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n / 256; ++b) {
        const float* v = x + 256 * b;
        __m256 amax = _mm256_setzero_ps();
        for (int i = 0; i < 32; ++i) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(v + 8 * i)));
        const float d = abs_max(amax) / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        const __m256 scale = _mm256_set1_ps(id);
        for (int g = 0; g < 16; ++g) {
            const __m256i q0 = _mm256_cvtps_epi32(
                _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(v + 16 * g), scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            const __m256i q1 = _mm256_cvtps_epi32(
                _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(v + 16 * g + 8), scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            const __m256i words = _mm256_permute4x64_epi64(_mm256_packs_epi32(q0, q1), 0xd8);
            const __m128i bytes = _mm_packs_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].q + 16 * g), bytes);
            out[b].bsums[g] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q0, q1)));
        }
        for (int s = 0; s < 8; ++s) out[b].sums32[s] = static_cast<int16_t>(out[b].bsums[2 * s] + out[b].bsums[2 * s + 1]);
        out[b].d = d;
    }
}

float dot_f32_avx2(int64_t n, const std::byte* w, const void* a) {
    const auto* wf = reinterpret_cast<const float*>(w);
    const auto* af = static_cast<const float*>(a);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        prefetch_weights(wf + i);
        prefetch_weights(wf + i + 16);
        prefetch_page_ahead(wf + i, 128);
        for (int j = 0; j < 4; ++j) acc[j] = _mm256_fmadd_ps(_mm256_loadu_ps(wf + i + 8 * j), _mm256_loadu_ps(af + i + 8 * j), acc[j]);
    }
    for (; i + 8 <= n; i += 8) acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(wf + i), _mm256_loadu_ps(af + i), acc[0]);
    float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    for (; i < n; ++i) sum += wf[i] * af[i];
    return sum;
}

template <bool kBf16>
inline __m256 load8_half(U8 p) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (kBf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
    else return _mm256_cvtph_ps(bits);
}

float dot_f16_avx2(int64_t n, const std::byte* w, const void* a) {
    auto* p = reinterpret_cast<U8>(w);
    const auto* af = static_cast<const float*>(a);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        prefetch_weights(p + 2 * i);
        prefetch_page_ahead(p + 2 * i, 64);
        for (int j = 0; j < 4; ++j) acc[j] = _mm256_fmadd_ps(load8_half<false>(p + 2 * (i + 8 * j)), _mm256_loadu_ps(af + i + 8 * j), acc[j]);
    }
    for (; i + 8 <= n; i += 8) acc[0] = _mm256_fmadd_ps(load8_half<false>(p + 2 * i), _mm256_loadu_ps(af + i), acc[0]);
    float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    for (; i < n; ++i) sum += _cvtsh_ss(blocks::load_u16(p + 2 * i)) * af[i];
    return sum;
}

// bf16 weights against ActivationFormat::F32EvenOdd activations (groups of 16): each 32-bit lane
// of a weight load holds values 2j (low half) and 2j+1 (high half), which become floats by a
// shift and a mask. Half the instructions of widening 8 values at a time, which kept bf16 GEMV
// below the memory bandwidth of a core. Unlike the other row dots it asks for no prefetch 2 KB
// ahead, only for the page bursts: Llama-3.2-1B bf16 decoded 7-19% faster without it (5 of 5
// alternating runs, before the page bursts; with them, adding it back measured within the noise).
float dot_bf16_even_odd_avx2(int64_t n, const std::byte* w, const void* a) {
    auto* p = reinterpret_cast<U8>(w);
    const auto* af = static_cast<const float*>(a);
    const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    const auto step = [&](int64_t i, __m256& even_acc, __m256& odd_acc) {
        const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * i));
        even_acc = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(bits, 16)), _mm256_loadu_ps(af + i), even_acc);
        odd_acc = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(bits, high)), _mm256_loadu_ps(af + i + 8), odd_acc);
    };
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        prefetch_page_ahead(p + 2 * i, 64);
        step(i, acc[0], acc[1]);
        step(i + 16, acc[2], acc[3]);
    }
    if (i + 16 <= n) {
        step(i, acc[0], acc[1]);
        i += 16;
    }
    float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    for (; i < n; ++i) {
        const uint32_t wide = static_cast<uint32_t>(blocks::load_u16(p + 2 * i)) << 16;
        float value;
        __builtin_memcpy(&value, &wide, 4);
        sum += value * af[i];
    }
    return sum;
}

// Eight consecutive values of a row as floats, from k (a multiple of 8): f32, f16 and bf16 rows,
// and Q8_0 and Q4_0 rows dequantised as convert_to_f32 does (d times the code, one rounding).
inline __m256 load8_float(DType type, const std::byte* row, int64_t k) {
    auto* p = reinterpret_cast<U8>(row);
    switch (type) {
        case DType::F32: return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + k);
        case DType::BF16: return load8_half<true>(p + 2 * k);
        case DType::Q8_0: {
            const U8 block = p + (k / 32) * blocks::kQ8_0Bytes;
            const __m256i codes = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + k % 32)));
            return _mm256_mul_ps(_mm256_set1_ps(half(block)), _mm256_cvtepi32_ps(codes));
        }
        case DType::Q4_0: {
            // Values 0..15 of a block are the low nibbles of its 16 code bytes, 16..31 the high ones.
            const U8 block = p + (k / 32) * blocks::kQ4_0Bytes;
            const int64_t in_block = k % 32;
            const __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + in_block % 16)));
            const __m256i nibbles = _mm256_and_si256(in_block < 16 ? bytes : _mm256_srli_epi32(bytes, 4), _mm256_set1_epi32(0xF));
            return _mm256_mul_ps(_mm256_set1_ps(half(block)), _mm256_cvtepi32_ps(_mm256_sub_epi32(nibbles, _mm256_set1_epi32(8))));
        }
        case DType::F16: return load8_half<false>(p + 2 * k);
        default: return _mm256_setzero_ps();  // no other type reaches pack_panel (matmul.cpp); zeros would fail test_matmul
    }
}

inline float load1_float(DType type, const std::byte* row, int64_t k) {
    auto* p = reinterpret_cast<U8>(row);
    if (type == DType::F32) {
        float value;
        __builtin_memcpy(&value, p + 4 * k, 4);
        return value;
    }
    const uint16_t bits = blocks::load_u16(p + 2 * k);
    if (type == DType::F16) return _cvtsh_ss(bits);
    const uint32_t wide = static_cast<uint32_t>(bits) << 16;
    float value;
    __builtin_memcpy(&value, &wide, 4);
    return value;
}

// 8x8 transpose: v[i] holds row i; afterwards v[j] holds column j.
inline void transpose8(__m256 v[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; ++i) {
        t[2 * i] = _mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    for (int i = 0; i < 2; ++i) {
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
    }
    for (int i = 0; i < 4; ++i) {
        v[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        v[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

void pack_panel_avx2(DType type, const std::byte* const* rows, int valid_rows, int64_t kc, float* packed) {
    int64_t k = 0;
    for (; k + 8 <= kc; k += 8) {
        for (int half_index = 0; half_index < 2; ++half_index) {
            __m256 v[8];
            for (int i = 0; i < 8; ++i) {
                const int r = 8 * half_index + i;
                v[i] = r < valid_rows ? load8_float(type, rows[r], k) : _mm256_setzero_ps();
            }
            transpose8(v);
            for (int j = 0; j < 8; ++j) _mm256_storeu_ps(packed + (k + j) * kGemmRows + 8 * half_index, v[j]);
        }
    }
    // Only float rows can end between multiples of 8: kc is a multiple of the 32-value blocks.
    for (; k < kc; ++k)
        for (int r = 0; r < kGemmRows; ++r) packed[k * kGemmRows + r] = r < valid_rows ? load1_float(type, rows[r], k) : 0.0f;
}

void gemm_tile_avx2(int64_t k, const float* xp, const float* wp, float* c, int64_t ldc, bool accumulate) {
    static_assert(kGemmTokens == 6 && kGemmRows == 16, "the register tile is 6 x 16");
    // Twelve named accumulators: GCC keeps an accumulator array in memory, storing it on every
    // iteration, which halves the rate.
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int64_t kk = 0; kk < k; ++kk, xp += 6, wp += 16) {
        const __m256 w0 = _mm256_loadu_ps(wp);
        const __m256 w1 = _mm256_loadu_ps(wp + 8);
        __m256 x = _mm256_broadcast_ss(xp);
        c00 = _mm256_fmadd_ps(x, w0, c00);
        c01 = _mm256_fmadd_ps(x, w1, c01);
        x = _mm256_broadcast_ss(xp + 1);
        c10 = _mm256_fmadd_ps(x, w0, c10);
        c11 = _mm256_fmadd_ps(x, w1, c11);
        x = _mm256_broadcast_ss(xp + 2);
        c20 = _mm256_fmadd_ps(x, w0, c20);
        c21 = _mm256_fmadd_ps(x, w1, c21);
        x = _mm256_broadcast_ss(xp + 3);
        c30 = _mm256_fmadd_ps(x, w0, c30);
        c31 = _mm256_fmadd_ps(x, w1, c31);
        x = _mm256_broadcast_ss(xp + 4);
        c40 = _mm256_fmadd_ps(x, w0, c40);
        c41 = _mm256_fmadd_ps(x, w1, c41);
        x = _mm256_broadcast_ss(xp + 5);
        c50 = _mm256_fmadd_ps(x, w0, c50);
        c51 = _mm256_fmadd_ps(x, w1, c51);
    }
    const __m256 rows[12] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
    for (int i = 0; i < 12; ++i) {
        float* out = c + (i / 2) * ldc + 8 * (i % 2);
        _mm256_storeu_ps(out, accumulate ? _mm256_add_ps(_mm256_loadu_ps(out), rows[i]) : rows[i]);
    }
}

// kWay: which of the kReadMethods ways (matmul_table.h).
template <int kWay>
float read_sum_avx2(const float* data, int64_t n) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        // As the GEMVs read weights (kReadMethods).
        if constexpr (kWay == 2) {
            prefetch_group_block<128>(data + i);
        } else {
            prefetch_weights(data + i);
            prefetch_weights(data + i + 16);
        }
        if constexpr (kWay == 1) prefetch_page_ahead(data + i, 128);
        if constexpr (kWay == 3) touch_page_ahead(data + i, 128);
        for (int j = 0; j < 4; ++j) acc[j] = _mm256_add_ps(acc[j], _mm256_loadu_ps(data + i + 8 * j));
    }
    float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    for (; i < n; ++i) sum += data[i];
    return sum;
}

double peak_flops_probe_avx2(int64_t iterations, float* sink) {
    // 12 independent FMA chains: enough to cover 4-cycle latency on two FMA ports.
    __m256 c[12];
    for (int j = 0; j < 12; ++j) c[j] = _mm256_set1_ps(static_cast<float>(j));
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int64_t i = 0; i < iterations; ++i)
        for (int j = 0; j < 12; ++j) c[j] = _mm256_fmadd_ps(c[j], a, b);
    __m256 total = c[0];
    for (int j = 1; j < 12; ++j) total = _mm256_add_ps(total, c[j]);
    *sink = hsum(total);
    return 2.0 * 8 * 12 * static_cast<double>(iterations);
}

}  // namespace

void fill_matmul_avx2(MatmulTable& table) {
    table.quantize_blocks32 = quantize_blocks32_avx2;
    table.quantize_blocks256 = quantize_blocks256_avx2;
    table.dot_f32 = over_rows<dot_f32_avx2>;
    table.dot_f16 = over_rows<dot_f16_avx2>;
    table.dot_bf16 = over_rows<dot_bf16_even_odd_avx2>;
    table.bf16_even_odd_group = 16;
    table.dot_q8_0 = over_rows<dot_q8_0<false>>;
    table.dot_q4_0 = over_rows<dot_q4_0<false>>;
    table.dot_q4_k = over_rows<dot_q4_k<false>>;
    table.gemm_q4_k_tile = gemm_q4_k_tile<false>;
    table.gemm_q6_k_tile = gemm_q6_k_tile<false>;
    table.dot_q4_k_tokens = dot_q4_k_tokens<false>;
    table.interleaved_q4_k = interleaved_q4_k<Q4KInterleavedAvx2, kInterleavedRows>;
    table.interleaved_q4_k_rows = kInterleavedRows;
    table.interleaved_q8_0 = interleaved_q8_0_avx2;
    table.dot_q6_k = over_rows<dot_q6_k<false>>;
    table.pack_panel = pack_panel_avx2;
    table.gemm_tile = gemm_tile_avx2;
    table.read_sum[0] = read_sum_avx2<0>;
    table.read_sum[1] = read_sum_avx2<1>;
    table.read_sum[2] = read_sum_avx2<2>;
    table.read_sum[3] = read_sum_avx2<3>;
    table.peak_flops_probe = peak_flops_probe_avx2;
}

}  // namespace oxinfer::kernels
