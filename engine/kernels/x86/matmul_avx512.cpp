// AVX-512 (F/BW/VL/DQ) matmul kernels, on top of the AVX2 table: the f32/f16/bf16 row dots, the
// GEMM register tile and the benchmark probes, 16 lanes wide. The integer dots of the block types
// stay AVX2 (they are bound by memory bandwidth; the VNNI level replaces them).
//
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq and run only after run-time detection:
// everything lives in an anonymous namespace and uses only intrinsics and plain loops (no shared
// inline functions or templates, whose AVX-512 copies the linker could hand to code running on
// older CPUs). fill_matmul_avx512 is the only exported symbol (over_rows, a template from
// matmul_table.h, gets internal linkage from this file's anonymous-namespace functions).

#include "kernels/block_layouts.h"
#include "kernels/matmul_table.h"

#ifdef OXINFER_SIMD_EMULATION  // the tests' second build of this file, on any x86 CPU (tests/CMakeLists.txt)
#include "avx512_emulation.h"
#define fill_matmul_avx512 fill_matmul_avx512_emulated
#else
#include <immintrin.h>
#endif

#include "kernels/x86/weight_prefetch.h"

namespace oxinfer::kernels {
namespace {

using U8 = const uint8_t*;

inline __mmask16 tail_mask(int64_t rem) { return static_cast<__mmask16>(rem >= 16 ? 0xffffu : (1u << rem) - 1u); }


float dot_f32_avx512(int64_t n, const std::byte* w, const void* a) {
    const auto* wf = reinterpret_cast<const float*>(w);
    const auto* af = static_cast<const float*>(a);
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        for (int j = 0; j < 4; ++j) prefetch_weights(wf + i + 16 * j);
        prefetch_page_ahead(wf + i, 256);
        for (int j = 0; j < 4; ++j) acc[j] = _mm512_fmadd_ps(_mm512_loadu_ps(wf + i + 16 * j), _mm512_loadu_ps(af + i + 16 * j), acc[j]);
    }
    for (; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        acc[0] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, wf + i), _mm512_maskz_loadu_ps(m, af + i), acc[0]);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

template <bool kBf16>
inline __m512 widen16(__m256i bits) {
    if constexpr (kBf16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
    else return _mm512_cvtph_ps(bits);
}

float dot_f16_avx512(int64_t n, const std::byte* w, const void* a) {
    auto* p = reinterpret_cast<U8>(w);
    const auto* af = static_cast<const float*>(a);
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        prefetch_weights(p + 2 * i);
        prefetch_weights(p + 2 * i + 64);
        prefetch_page_ahead(p + 2 * i, 128);
        for (int j = 0; j < 4; ++j) {
            const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * (i + 16 * j)));
            acc[j] = _mm512_fmadd_ps(widen16<false>(bits), _mm512_loadu_ps(af + i + 16 * j), acc[j]);
        }
    }
    for (; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m256i bits = _mm256_maskz_loadu_epi16(m, p + 2 * i);
        acc[0] = _mm512_fmadd_ps(widen16<false>(bits), _mm512_maskz_loadu_ps(m, af + i), acc[0]);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

// R (1 or 2) bf16 rows, row_bytes apart, against ActivationFormat::F32EvenOdd activations (groups
// of 32): each 32-bit lane of a 64-byte weight load holds values 2j (low half) and 2j+1 (high
// half), which become floats by a shift and a mask, and two rows share each activation load. A
// last partial group is in order and widened 16 values at a time. On a 2-core Xeon VM, 1.2 GB of
// 1024-value rows in 4 KB pages, 2 threads, in alternating rounds: 18 GB/s widening 16 values per
// 32-byte load (the kernel before this one), 20.5 one row at a time this way, 21.6-24 two rows
// (four rows: 20-21).
// It asks for each line `ahead` bytes ahead (bf16_row_streaming) and, unlike the other float rows,
// without the page bursts: one row with them read 17-19 GB/s on the Xeon, without 20-22. Each
// row's stream starts its next pages' address translations early (touch_page_ahead): on a 2-core
// Zen 5 VM, tg128 with tokens of both ways taking turns in one process (median tokens, 3 runs of
// 128), Qwen3-0.6B bf16 33.7% and 40.8% faster, Llama-3.2-1B bf16 27.6% and 32.7%. The
// interleaved Q8_0 kernels start theirs too (prefetch_group_block); the AVX-512 VNNI Q4_K kernel,
// which was faster without, does not (matmul_avx512bf16.cpp).
template <int R>
void dot_bf16_even_odd_avx512(int64_t n, const uint8_t* p, int64_t row_bytes, const float* af, float* y, int ahead) {
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    __m512 even[R], odd[R];
    for (int r = 0; r < R; ++r) even[r] = odd[r] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512 a_even = _mm512_loadu_ps(af + i), a_odd = _mm512_loadu_ps(af + i + 16);
        for (int r = 0; r < R; ++r) {
            const uint8_t* row = p + r * row_bytes + 2 * i;
            prefetch_line(row + ahead);
            touch_page_ahead(row, 64);
            const __m512i bits = _mm512_loadu_si512(row);
            even[r] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(bits, 16)), a_even, even[r]);
            odd[r] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(bits, high)), a_odd, odd[r]);
        }
    }
    for (; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m512 a = _mm512_maskz_loadu_ps(m, af + i);
        for (int r = 0; r < R; ++r)
            even[r] = _mm512_fmadd_ps(widen16<true>(_mm256_maskz_loadu_epi16(m, p + r * row_bytes + 2 * i)), a, even[r]);
    }
    for (int r = 0; r < R; ++r) y[r] = _mm512_reduce_add_ps(_mm512_add_ps(even[r], odd[r]));
}

// Rows go two at a time where bf16_row_streaming says. On Intel up to 2 KB: from huge pages, on
// the Xeon VM (2 threads, 1 GB, rounds alternating): 1024-value rows 35 GB/s two at a time, 34-35
// one at a time; 2048-value rows 30 two at a time, 32-33 one at a time; 3072 and 8192 alike.
// tg128 in alternating runs, two rows only up to 2 KB against always: Qwen3-0.6B bf16 1.04,
// Llama-3.2-1B bf16 1.04; one row always: Qwen3-0.6B 0.97. AMD: rows from 16 KB, except on Zen 5
// (weight_prefetch.cpp). Both ways give each row the same operations.
void dot_bf16_rows_avx512(int64_t cols, const std::byte* weights, int64_t row_bytes, int64_t rows, const void* activations, float* y) {
    const auto* p = reinterpret_cast<U8>(weights);
    const auto* af = static_cast<const float*>(activations);
    const int ahead = bf16_row_streaming.bytes_ahead;
    int64_t r = 0;
    if (row_bytes <= bf16_row_streaming.paired_up_to || row_bytes >= bf16_row_streaming.paired_from)
        for (; r + 2 <= rows; r += 2) dot_bf16_even_odd_avx512<2>(cols, p + r * row_bytes, row_bytes, af, y + r, ahead);
    for (; r < rows; ++r) dot_bf16_even_odd_avx512<1>(cols, p + r * row_bytes, row_bytes, af, y + r, ahead);
}

// The 6 x 16 tile: one zmm of weights per k, six broadcast activations. Six accumulators cannot
// hide the FMA latency on two ports, so even and odd k accumulate separately (12 chains).
void gemm_tile_avx512(int64_t k, const float* xp, const float* wp, float* c, int64_t ldc, bool accumulate) {
    static_assert(kGemmTokens == 6 && kGemmRows == 16, "the register tile is 6 x 16");
    __m512 e0 = _mm512_setzero_ps(), e1 = e0, e2 = e0, e3 = e0, e4 = e0, e5 = e0;
    __m512 o0 = e0, o1 = e0, o2 = e0, o3 = e0, o4 = e0, o5 = e0;
    int64_t kk = 0;
    for (; kk + 2 <= k; kk += 2, xp += 12, wp += 32) {
        const __m512 w0 = _mm512_loadu_ps(wp);
        const __m512 w1 = _mm512_loadu_ps(wp + 16);
        e0 = _mm512_fmadd_ps(_mm512_set1_ps(xp[0]), w0, e0);
        e1 = _mm512_fmadd_ps(_mm512_set1_ps(xp[1]), w0, e1);
        e2 = _mm512_fmadd_ps(_mm512_set1_ps(xp[2]), w0, e2);
        e3 = _mm512_fmadd_ps(_mm512_set1_ps(xp[3]), w0, e3);
        e4 = _mm512_fmadd_ps(_mm512_set1_ps(xp[4]), w0, e4);
        e5 = _mm512_fmadd_ps(_mm512_set1_ps(xp[5]), w0, e5);
        o0 = _mm512_fmadd_ps(_mm512_set1_ps(xp[6]), w1, o0);
        o1 = _mm512_fmadd_ps(_mm512_set1_ps(xp[7]), w1, o1);
        o2 = _mm512_fmadd_ps(_mm512_set1_ps(xp[8]), w1, o2);
        o3 = _mm512_fmadd_ps(_mm512_set1_ps(xp[9]), w1, o3);
        o4 = _mm512_fmadd_ps(_mm512_set1_ps(xp[10]), w1, o4);
        o5 = _mm512_fmadd_ps(_mm512_set1_ps(xp[11]), w1, o5);
    }
    if (kk < k) {
        const __m512 w0 = _mm512_loadu_ps(wp);
        e0 = _mm512_fmadd_ps(_mm512_set1_ps(xp[0]), w0, e0);
        e1 = _mm512_fmadd_ps(_mm512_set1_ps(xp[1]), w0, e1);
        e2 = _mm512_fmadd_ps(_mm512_set1_ps(xp[2]), w0, e2);
        e3 = _mm512_fmadd_ps(_mm512_set1_ps(xp[3]), w0, e3);
        e4 = _mm512_fmadd_ps(_mm512_set1_ps(xp[4]), w0, e4);
        e5 = _mm512_fmadd_ps(_mm512_set1_ps(xp[5]), w0, e5);
    }
    const __m512 rows[6] = {_mm512_add_ps(e0, o0), _mm512_add_ps(e1, o1), _mm512_add_ps(e2, o2),
                            _mm512_add_ps(e3, o3), _mm512_add_ps(e4, o4), _mm512_add_ps(e5, o5)};
    for (int t = 0; t < 6; ++t) {
        float* out = c + t * ldc;
        _mm512_storeu_ps(out, accumulate ? _mm512_add_ps(_mm512_loadu_ps(out), rows[t]) : rows[t]);
    }
}

// gemm_tile over two panels, 6 x 32: each broadcast activation (embedded in the FMA) feeds both
// panels' weight vectors, 2 weight loads and 6 broadcasts per 12 FMAs where the single tile needs
// 1 and 6 per 6, so the two FMA ports rather than the loads bound it. The same operations per
// output as gemm_tile_avx512 (even and odd k apart, then added), so the results are its bits:
// 24 accumulators and 4 weight vectors of the 32 registers.
void gemm_tile_pair_avx512(int64_t k, const float* xp, const float* wp0, const float* wp1, float* c, int64_t ldc, bool accumulate) {
    static_assert(kGemmTokens == 6 && kGemmRows == 16, "the register tile is 6 x 2 x 16");
    __m512 e[2][6], o[2][6];
    for (int p = 0; p < 2; ++p)
        for (int t = 0; t < 6; ++t) e[p][t] = o[p][t] = _mm512_setzero_ps();
    int64_t kk = 0;
    for (; kk + 2 <= k; kk += 2, xp += 12, wp0 += 32, wp1 += 32) {
        const __m512 w0_even = _mm512_loadu_ps(wp0), w1_even = _mm512_loadu_ps(wp1);
        const __m512 w0_odd = _mm512_loadu_ps(wp0 + 16), w1_odd = _mm512_loadu_ps(wp1 + 16);
        for (int t = 0; t < 6; ++t) {
            const __m512 x_even = _mm512_set1_ps(xp[t]), x_odd = _mm512_set1_ps(xp[6 + t]);
            e[0][t] = _mm512_fmadd_ps(x_even, w0_even, e[0][t]);
            e[1][t] = _mm512_fmadd_ps(x_even, w1_even, e[1][t]);
            o[0][t] = _mm512_fmadd_ps(x_odd, w0_odd, o[0][t]);
            o[1][t] = _mm512_fmadd_ps(x_odd, w1_odd, o[1][t]);
        }
    }
    if (kk < k) {
        const __m512 w0 = _mm512_loadu_ps(wp0), w1 = _mm512_loadu_ps(wp1);
        for (int t = 0; t < 6; ++t) {
            e[0][t] = _mm512_fmadd_ps(_mm512_set1_ps(xp[t]), w0, e[0][t]);
            e[1][t] = _mm512_fmadd_ps(_mm512_set1_ps(xp[t]), w1, e[1][t]);
        }
    }
    for (int t = 0; t < 6; ++t)
        for (int p = 0; p < 2; ++p) {
            float* out = c + t * ldc + 16 * p;
            const __m512 row = _mm512_add_ps(e[p][t], o[p][t]);
            _mm512_storeu_ps(out, accumulate ? _mm512_add_ps(_mm512_loadu_ps(out), row) : row);
        }
}

// kWay: which of the kReadMethods ways (matmul_table.h).
template <int kWay>
float read_sum_avx512(const float* data, int64_t n) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        if constexpr (kWay == 1) prefetch_page_ahead(data + i, 256);
        if constexpr (kWay == 3) touch_page_ahead(data + i, 256);
        for (int j = 0; j < 4; ++j) {
            // As the GEMVs read weights (kReadMethods).
            if constexpr (kWay == 2) prefetch_group_block<64>(data + i + 16 * j);
            else if constexpr (kWay == 4) prefetch_group_line(data + i + 16 * j);
            else prefetch_weights(data + i + 16 * j);
            acc[j] = _mm512_add_ps(acc[j], _mm512_loadu_ps(data + i + 16 * j));
        }
    }
    for (; i < n; i += 16) acc[0] = _mm512_add_ps(acc[0], _mm512_maskz_loadu_ps(tail_mask(n - i), data + i));
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

double peak_flops_probe_avx512(int64_t iterations, float* sink) {
    // 12 independent 16-lane FMA chains: enough to cover 4-cycle latency on two FMA ports.
    __m512 c[12];
    for (int j = 0; j < 12; ++j) c[j] = _mm512_set1_ps(static_cast<float>(j));
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int64_t i = 0; i < iterations; ++i)
        for (int j = 0; j < 12; ++j) c[j] = _mm512_fmadd_ps(c[j], a, b);
    __m512 total = c[0];
    for (int j = 1; j < 12; ++j) total = _mm512_add_ps(total, c[j]);
    *sink = _mm512_reduce_add_ps(total);
    return 2.0 * 16 * 12 * static_cast<double>(iterations);
}

}  // namespace

void fill_matmul_avx512(MatmulTable& table) {
    table.dot_f32 = over_rows<dot_f32_avx512>;
    table.dot_f16 = over_rows<dot_f16_avx512>;
    table.dot_bf16 = dot_bf16_rows_avx512;
    table.bf16_even_odd_group = 32;
    table.gemm_tile = gemm_tile_avx512;
    table.gemm_tile_pair = gemm_tile_pair_avx512;
    table.read_sum[0] = read_sum_avx512<0>;
    table.read_sum[1] = read_sum_avx512<1>;
    table.read_sum[2] = read_sum_avx512<2>;
    table.read_sum[3] = read_sum_avx512<3>;
    table.read_sum[4] = read_sum_avx512<4>;
    table.peak_flops_probe = peak_flops_probe_avx512;
}

}  // namespace oxinfer::kernels
