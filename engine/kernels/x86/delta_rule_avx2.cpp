// The gated delta rule (kernels/delta_rule_impl.h) on AVX2 + FMA primitives: an 8-wide axpy and a
// register-blocked product (4 rows × 16 columns of accumulators, the B rows streamed once per row
// block). Compiled with -mavx2 -mfma; self-contained like ops_avx2.cpp (see its comment). The only
// exported symbol is fill_delta_rule_avx2().

#include "kernels/delta_rule_impl.h"

#include <immintrin.h>

namespace oxinfer::kernels {
namespace {

struct Avx2DeltaOps {
    static void axpy(float* y, float a, const float* x, int64_t n) {
        const __m256 va = _mm256_set1_ps(a);
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
        for (; i < n; ++i) y[i] += a * x[i];
    }

    // Rows [i, i + R) × columns [j, j + 16).
    template <int R>
    static void block16(float* y, int64_t ldy, const float* x, int64_t ldx, const float* b, int64_t ldb, int64_t k) {
        __m256 acc[R][2];
        for (int r = 0; r < R; ++r) {
            acc[r][0] = _mm256_loadu_ps(y + r * ldy);
            acc[r][1] = _mm256_loadu_ps(y + r * ldy + 8);
        }
        for (int64_t kk = 0; kk < k; ++kk) {
            const __m256 b0 = _mm256_loadu_ps(b + kk * ldb), b1 = _mm256_loadu_ps(b + kk * ldb + 8);
            for (int r = 0; r < R; ++r) {
                const __m256 xr = _mm256_broadcast_ss(x + r * ldx + kk);
                acc[r][0] = _mm256_fmadd_ps(xr, b0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(xr, b1, acc[r][1]);
            }
        }
        for (int r = 0; r < R; ++r) {
            _mm256_storeu_ps(y + r * ldy, acc[r][0]);
            _mm256_storeu_ps(y + r * ldy + 8, acc[r][1]);
        }
    }

    static void gemm_acc(float* y, int64_t ldy, const float* x, int64_t ldx, const float* b, int64_t ldb, int64_t m, int64_t k,
                         int64_t n) {
        const int64_t n16 = n / 16 * 16;
        for (int64_t j = 0; j < n16; j += 16) {
            int64_t i = 0;
            for (; i + 4 <= m; i += 4) block16<4>(y + i * ldy + j, ldy, x + i * ldx, ldx, b + j, ldb, k);
            for (; i < m; ++i) block16<1>(y + i * ldy + j, ldy, x + i * ldx, ldx, b + j, ldb, k);
        }
        if (n16 == n) return;
        for (int64_t i = 0; i < m; ++i)  // the last n % 16 columns
            for (int64_t kk = 0; kk < k; ++kk) axpy(y + i * ldy + n16, x[i * ldx + kk], b + kk * ldb + n16, n - n16);
    }
};

}  // namespace

void fill_delta_rule_avx2(OpsTable& table) {
    table.delta_rule_step = delta_rule_step<Avx2DeltaOps>;
    table.delta_rule_chunk = delta_rule_chunk<Avx2DeltaOps>;
}

}  // namespace oxinfer::kernels
