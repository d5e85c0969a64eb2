#pragma once
// The per-instruction-set pieces of matmul: activation quantisers, row dot products per weight
// type, and the GEMM register kernel. matmul.cpp holds the scalar versions (the reference every
// other level is tested against) and the drivers; the files under x86/ override entries.

#include "kernels/isa.h"
#include "kernels/matmul.h"

#include <oxinfer/dtype.h>

#include <cstddef>
#include <cstdint>

namespace oxinfer::kernels {

// Activations quantised to 8 bits per 32 values (for Q8_0, Q4_0 weights): x ≈ d * q.
struct ActBlock32 {
    float d;
    int32_t qsum;  // sum of q: the zero-point term of offset formats
    int8_t q[32];
};

// Per 256 values (for the K-quants), with the sum of each 16 values (Q6_K's scale groups) and of
// each 32 (Q4_K's sub-blocks, the weights of its mins).
struct ActBlock256 {
    float d;
    int16_t bsums[16];
    int16_t sums32[8];
    int8_t q[256];
};

// F32EvenOdd: f32 values with each full group of the level's bf16_even_odd_group values (16 or 32:
// twice the 32-bit lanes of its vectors) stored evens first, then odds (x0, x2, .., x1, x3, ..);
// a last partial group stays in order. bf16 weights read two values per 32-bit lane, so on levels
// that say so they meet their activations this way.
enum class ActivationFormat { F32, F32EvenOdd, Q8Blocks32, Q8Blocks256 };

// Which activation format the direct dot kernel of a weight type reads, if it has one.
bool has_direct_dot(DType type);
ActivationFormat activation_format(DType type);

// Dot products of `rows` consecutive weight rows of `cols` values (row_bytes apart) with one
// activation row in its format, into y[0..rows). The loop over rows is inside the kernel, where
// the one-row dot can inline: decode's rows are short (1024 Q8_0 values are 1088 bytes), and an
// indirect call per row from the driver held Q8_0 GEMV to 74-82% of the read bandwidth (90-102%
// with the loop inside, alternating in one process).
using RowDot = void (*)(int64_t cols, const std::byte* weights, int64_t row_bytes, int64_t rows, const void* activations, float* y);
// A level's RowDot from its one-row dot. Instantiated with functions of an anonymous namespace,
// each instantiation stays in its own file (and instruction set).
template <float (*kOneRow)(int64_t cols, const std::byte* weights, const void* activations)>
void over_rows(int64_t cols, const std::byte* weights, int64_t row_bytes, int64_t rows, const void* activations, float* y) {
    for (int64_t r = 0; r < rows; ++r) y[r] = kOneRow(cols, weights + r * row_bytes, activations);
}
// One row against several tokens' activations: out[t] = the type's RowDot of that one row with
// activations[t], bit for bit (the same operations in the same order), the row read once.
using RowDotTokens = void (*)(int64_t cols, const std::byte* weights, const void* const* activations, int tokens, float* out);

constexpr int kGemmTokens = 6;   // register tile: tokens
constexpr int kGemmRows = 16;    // register tile: weight rows
// Values of K per packed weight panel (16 KB of f32, L1-resident; a pair of panels for
// gemm_tile_pair is 32 KB, measured only on a 48 KB L1D); a multiple of every block size.
constexpr int kGemmKc = 256;

// The ways the read-bandwidth probe reads (MatmulTable::read_sum), as the GEMVs stream weights: 0:
// each cache line asked for 2 KB ahead; 1: the same, and at each 4 KB page the page after the next
// in one burst (weight_prefetch.h), as the float rows and, on AMD, the block rows do; 2: as the
// interleaved Q8_0 kernels and the AVX2 Q4_K one ask (prefetch_group_block: each line
// group_bytes_ahead ahead, 4-8 KB on most AMD CPUs, or not at all where they do not, and the page
// touch of way 3); 3: as 0, and one line of each page 16 KB ahead (touch_page_ahead,
// weight_prefetch.h), as the AVX-512 bf16 row dot asks; 4 (AVX-512 levels): each line
// group_bytes_ahead ahead without the page touch, as the AVX-512 VNNI Q4_K kernel asks
// (matmul_avx512bf16.cpp); the plain AVX-512 level, whose Q4_K kernel is the AVX2 one, reads this
// way too, which can only make its bound stricter. The fastest sets the bound: on a 2-core EPYC VM
// (Zen 3) the bursts read 5-10% faster and the bf16 GEMV outran the plain read; where they cost
// (Intel), the plain read stays the faster. On a Zen 5 VM, decoding Llama-3.2-1B q4_k ran at
// 101-108% of a bound read only ways 0 and 1; there (2026-12-07) way 3 read 4-60% faster than ways
// 0-2, 72-102 GB/s where they read 44-82.
constexpr int kReadMethods = 5;

// Interleaved weights (interleave.h): `groups` (1 or 2) consecutive groups (of the type's
// interleaved_group_rows) from `group` times `tokens` (1 to kKQuantTileTokens) tokens' activations
// in the type's GEMV format: y[t * ldy + r] = the dot of row r (of the groups' rows) with acts[t] (the row dot's products;
// float sums in another order). Each result is the same whatever `tokens` and `groups` are.
using InterleavedTile = void (*)(int64_t cols, const std::byte* group, int groups, const void* const* acts, int tokens, float* y,
                                 int64_t ldy);

using KQuantTile = void (*)(int64_t blocks, const std::byte* w, int64_t row_bytes, int64_t rows, const ActBlock256* const* acts,
                           int valid_tokens, float* y, int64_t ldy);

struct MatmulTable {
    // d = max|x| / 127, q = round-to-nearest-even(x * (1/d)): every level must produce the same q.
    void (*quantize_blocks32)(const float* x, ActBlock32* out, int64_t n);
    void (*quantize_blocks256)(const float* x, ActBlock256* out, int64_t n);
    RowDot dot_f32;  // f32 weights, also the generic path after dequantising a row
    RowDot dot_f16;
    RowDot dot_bf16;
    RowDot dot_q8_0;
    RowDot dot_q4_0;
    RowDot dot_q4_k;
    RowDot dot_q6_k;
    // Packs a weight panel of f32, f16, bf16, Q8_0 or Q4_0 rows for gemm_tile: packed[k * kGemmRows + r] =
    // rows[r][k] for k < kc (kc <= kGemmKc), zero for r >= valid_rows.
    void (*pack_panel)(DType type, const std::byte* const* rows, int valid_rows, int64_t kc, float* packed);
    // c[t * ldc + r] (+)= sum_k packed_x[k][t] * packed_w[k][r] for a kGemmTokens x kGemmRows
    // tile: added to c when `accumulate`, else stored.
    void (*gemm_tile)(int64_t k, const float* packed_x, const float* packed_w, float* c, int64_t ldc, bool accumulate);
    // bf16 weights on levels with a bf16 dot product (nullptr elsewhere): the same tile over pairs
    // of k, each packed value a 32-bit word holding bf16 values k (low half) and k+1 (high half).
    // packed_w[p * kGemmRows + r] = row r's pair p (zero past kc or valid_rows); packed_x likewise
    // with kGemmTokens per pair. Activations are rounded to bf16 (round to nearest even).
    void (*pack_panel_bf16)(const std::byte* const* rows, int valid_rows, int64_t kc, uint32_t* packed);
    void (*gemm_tile_bf16)(int64_t pairs, const uint32_t* packed_x, const uint32_t* packed_w, float* c, int64_t ldc, bool accumulate);
    // Benchmark probes: the sum of n floats read as the level's GEMVs stream weights (memory
    // bandwidth), in each of the ways they ask for them (kReadMethods; nullptr where a level has
    // fewer), and `iterations` rounds of independent multiply-adds, returning the number of
    // floating-point operations done (peak arithmetic rate; the sum lands in *sink).
    float (*read_sum[kReadMethods])(const float* data, int64_t n);
    double (*peak_flops_probe)(int64_t iterations, float* sink);
    // The same for the bf16 dot product that gemm_tile_bf16 uses (nullptr where there is none).
    double (*peak_bf16_probe)(int64_t iterations, float* sink);
    // Q4_K weights times int8 activations (the GEMV's Q8Blocks256 format) for up to kKQuantTileTokens
    // tokens and `rows` consecutive rows from w (row_bytes apart), over `blocks` super-blocks of
    // 256 values: y[t * ldy + r] = dot_q4_k(row r, acts[t]) (up to float summation order) for
    // t < valid_tokens; only those tokens are computed. nullptr where the level has none: gemm
    // then takes the row dots.
    KQuantTile gemm_q4_k_tile;
    // The same for Q6_K (dot_q6_k's products). nullptr: gemm dequantises the rows to float.
    KQuantTile gemm_q6_k_tile;
    // When not 0, dot_bf16 reads ActivationFormat::F32EvenOdd in groups of this many values rather
    // than plain f32.
    int bf16_even_odd_group;
    // dot_q4_k for 2 to kKQuantTileTokens tokens at once (a speculative verification); nullptr: the
    // GEMV calls dot_q4_k per token.
    RowDotTokens dot_q4_k_tokens;
    // gemm_tile over two panels at once (rows r0..r0+15 from packed_w0, the next 16 from packed_w1,
    // which may be a zero-padded part; c at row r0), bit for bit two gemm_tile calls: each
    // broadcast activation feeds two weight vectors, which halves the broadcasts per multiply-add
    // where they, not the FMAs, bound the tile. nullptr where the level has none.
    void (*gemm_tile_pair)(int64_t k, const float* packed_x, const float* packed_w0, const float* packed_w1, float* c, int64_t ldc,
                           bool accumulate);
    // Kernels for interleaved Q4_K and Q8_0 weights; nullptr where the level has none (its
    // matrices then stay plain: models::WeightStore interleaves only what the active level reads).
    InterleavedTile interleaved_q4_k;
    InterleavedTile interleaved_q8_0;
    // Rows per group of the interleaved Q4_K layout that interleaved_q4_k reads (interleave.h).
    int interleaved_q4_k_rows;
};
constexpr int kKQuantTileTokens = 4;  // tokens per call of the K-quant tiles and of dot_q4_k_tokens

// The table of a level this build contains and this CPU supports (built on first use); throws
// oxinfer::Error for any other level, so that no SIMD code runs on a CPU without it.
const MatmulTable& matmul_table(Isa isa);
RowDot row_dot(const MatmulTable& table, DType type);  // nullptr when the type has none
InterleavedTile interleaved_tile(const MatmulTable& table, DType type);  // nullptr when none
// Rows per group of the interleaved layout that interleaved_tile(table, type) reads.
int64_t interleaved_group_rows(const MatmulTable& table, DType type);

// gemv() and gemm() with the entries of a given table (tests compare levels through them).
void gemv_with(const MatmulTable& table, const WeightMatrix& w, const float* x, int64_t tokens, float* y, ThreadPool& pool);
// rows_done (optional): the targets have the same rows, each thread takes the same rows of all of
// them, and calls rows_done on them (matmul_rows_together).
void gemv_many_with(const MatmulTable& table, std::span<const MatmulTarget> targets, const float* x, int64_t tokens, ThreadPool& pool,
                    const RangeCallback* rows_done = nullptr);
void gemm_with(const MatmulTable& table, const WeightMatrix& w, const float* x, int64_t tokens, float* y, ThreadPool& pool);

void fill_matmul_avx2(MatmulTable& table);
void fill_matmul_avx512(MatmulTable& table);      // on top of the AVX2 entries
void fill_matmul_avx512bf16(MatmulTable& table);  // on top of the AVX-512 entries

}  // namespace oxinfer::kernels
