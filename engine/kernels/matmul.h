#pragma once
// Matrix products of the models: Y[tokens, rows] = X[tokens, cols] · W[rows, cols]ᵀ, with f32
// activations and W in any stored type (f32, f16, bf16, every ggml block type we dequantise).
//
// Two paths. GEMV (a few tokens, decoding): all threads share the rows and stream W once; the
// common types use integer dot products on 8-bit-quantised activations as llama.cpp does (or
// f16/bf16 widened in registers), others dequantise row by row. GEMM (prefill): activations are
// packed once, W is dequantised panel by panel into cache-sized f32 blocks and multiplied by a
// register-blocked FMA kernel.

#include <oxinfer/dtype.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace oxinfer {

class ThreadPool;
struct TensorInfo;

namespace kernels {

struct WeightMatrix {
    DType dtype = DType::F32;
    int64_t rows = 0;       // output features
    int64_t cols = 0;       // input features
    const std::byte* data = nullptr;
    int64_t row_bytes = 0;  // dtype_bytes(cols)
    // bf16 weights only: the GEMM may round the activations to bf16 and multiply with vdpbf16ps
    // where the CPU has it (two products per lane per instruction), as llama.cpp always does for
    // bf16. That moves each activation by up to 2^-8 of itself (the logits of the tests' tiny
    // models by up to 0.4), and on a Xeon with AVX-512 BF16 it measured no faster than exact
    // float32 FMAs (bf16 GEMM 143 against 147 GFLOP/s, one quick run). Off: exact float32
    // products on every level.
    bool bf16_activations = false;
    // Rows in groups of group_rows side by side (kernels/interleave.h; 8, or 16 for Q4_K on some
    // levels), for the levels whose table has kernels for that layout (MatmulTable::interleaved_q4_k,
    // interleaved_group_rows); data is then not row-major. 0: plain rows.
    int64_t group_rows = 0;
    bool interleaved() const { return group_rows > 0; }
};

// A 2-D tensor as a weight matrix; throws oxinfer::Error if it is not 2-D or not contiguous.
WeightMatrix weight_matrix(const TensorInfo& tensor);

// At most this many tokens take the GEMV path.
constexpr int64_t kGemvMaxTokens = 4;

// y[t * w.rows + r] = sum_c x[t * w.cols + c] * W[r, c]. Throws oxinfer::Error for a type that
// cannot be dequantised.
void matmul(const WeightMatrix& w, const float* x, int64_t tokens, float* y, ThreadPool& pool);

// One product of several matrices that read the same input (q/k/v, gate/up): y of each target
// = x · Wᵀ. Decoding then synchronises the threads once for all of them, not once per matrix.
struct MatmulTarget {
    const WeightMatrix* w;
    float* y;
};
constexpr size_t kMaxMatmulTargets = 4;
void matmul_many(std::span<const MatmulTarget> targets, const float* x, int64_t tokens, ThreadPool& pool);

// A callable on a range [begin, end) (of rows; of kv heads for attention()), passed without a
// copy or an allocation: the callable must outlive it.
class RangeCallback {
public:
    template <class F>
    RangeCallback(const F& f)  // NOLINT: converts from any callable, as std::function does
        : call_([](const void* f, int64_t begin, int64_t end) { (*static_cast<const F*>(f))(begin, end); }), f_(&f) {}
    void operator()(int64_t begin, int64_t end) const { call_(f_, begin, end); }

private:
    void (*call_)(const void*, int64_t, int64_t);
    const void* f_;
};

// matmul_many of matrices with the same number of rows (gate and up), followed by
// rows_done(begin, end) once for every row: while decoding, on the thread that has just computed
// rows [begin, end) of every matrix, so that an elementwise step combining them (SwiGLU) runs
// in parallel on outputs still in that core's cache; for prompts, once for all rows after the
// products. rows_done covers those rows of every token.
void matmul_rows_together(std::span<const MatmulTarget> targets, const float* x, int64_t tokens, RangeCallback rows_done,
                          ThreadPool& pool);

// The same through one path, whatever the token count (tests and benchmarks).
void gemv(const WeightMatrix& w, const float* x, int64_t tokens, float* y, ThreadPool& pool);
void gemm(const WeightMatrix& w, const float* x, int64_t tokens, float* y, ThreadPool& pool);

}  // namespace kernels
}  // namespace oxinfer
