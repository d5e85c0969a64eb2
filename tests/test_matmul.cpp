// Matrix products for every weight type and every instruction-set level (helpers/kernel_levels.h:
// this CPU's, and AVX-512 emulated where it lacks them), checked
// against an independent double-precision product of the exactly dequantised weights (the
// dequantisation itself is bit-exact against numpy, see test_ggml_blocks), and each level
// against the scalar kernels.

#include "checkpoint_writers.h"
#include "kernel_levels.h"
#include "kernels/interleave.h"
#include "kernels/isa.h"
#include "kernels/matmul.h"
#include "kernels/matmul_table.h"
#include "kernels/thread_pool.h"
#include "test_support.h"

#include <QTest>

#include <atomic>
#include <cmath>
#include <ctime>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

using namespace oxinfer;
using namespace oxinfer::kernels;
using oxinfer::test::KernelLevel;
using oxinfer::test::kernel_levels;

namespace {

// A weight matrix of `rows` x `cols` values. Block types are assembled from the finite golden
// blocks the numpy reference wrote (real encodings, edge cases included) in random order; plain
// types from random floats.
struct TestMatrix {
    WeightMatrix w;
    std::vector<std::byte> bytes;
    std::vector<float> dequantised;  // rows x cols, exactly as convert_to_f32 gives
};

// QCOMPARE of floats is fuzzy (qFuzzyCompare); these checks promise identical bits.
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// One output's reference in double, and the error bound of each path (see `products`).
struct Expected {
    double value, float_bound, quant_bound, bf16_bound;
};
Expected expected(const TestMatrix& m, const float* x, int64_t t, int64_t r, int64_t quant_block) {
    const int64_t cols = m.w.cols;
    double sum = 0, magnitude = 0, qerr = 0;
    for (int64_t c = 0; c < cols; ++c) {
        const double w = m.dequantised[static_cast<size_t>(r * cols + c)];
        sum += w * x[t * cols + c];
        magnitude += std::fabs(w * x[t * cols + c]);
    }
    if (quant_block)
        for (int64_t b = 0; b < cols / quant_block; ++b) {
            double amax = 0, wsum = 0;
            for (int64_t i = 0; i < quant_block; ++i) {
                const int64_t c = b * quant_block + i;
                amax = std::max(amax, std::fabs(double(x[t * cols + c])));
                wsum += std::fabs(double(m.dequantised[static_cast<size_t>(r * cols + c)]));
            }
            qerr += wsum * amax / 127.0 / 2.0;
        }
    const double float_bound = static_cast<double>(cols) * std::ldexp(1.0, -23) * magnitude + 1e-30;
    return {sum, float_bound, qerr * 1.0001 + float_bound, std::ldexp(1.0, -8) * magnitude + float_bound};
}

TestMatrix make_matrix(DType type, int64_t rows, int64_t cols, uint32_t seed) {
    TestMatrix m;
    const DTypeTraits& traits = dtype_traits(type);
    const int64_t per_row = cols / traits.block_elements;
    std::mt19937 random(seed);
    if (traits.quantized) {
        const std::string base = std::string(OXINFER_REFERENCE_DIR) + "/ggml_blocks/" + std::string(traits.name);
        const auto blocks = test::read_bytes(base + ".blocks");
        const auto values = test::read_bytes(base + ".f32");
        const int64_t count = static_cast<int64_t>(blocks.size()) / traits.block_bytes;
        std::vector<int64_t> finite;
        for (int64_t b = 0; b < count; ++b) {
            bool ok = true;
            for (int64_t i = 0; i < traits.block_elements; ++i) {
                float v;
                std::memcpy(&v, values.data() + 4 * (b * traits.block_elements + i), 4);
                ok = ok && std::isfinite(v) && std::fabs(v) < 1e4f;
            }
            if (ok) finite.push_back(b);
        }
        if (finite.empty()) qFatal("no finite golden blocks for %s", traits.name.data());
        for (int64_t i = 0; i < rows * per_row; ++i) {
            const int64_t b = finite[random() % finite.size()];
            m.bytes.insert(m.bytes.end(), blocks.begin() + b * traits.block_bytes, blocks.begin() + (b + 1) * traits.block_bytes);
        }
    } else {
        const auto floats = test::random_floats(static_cast<size_t>(rows * cols), seed);
        m.bytes.resize(static_cast<size_t>(*dtype_bytes(type, static_cast<uint64_t>(rows * cols))));
        for (size_t i = 0; i < floats.size(); ++i) {
            if (type == DType::F32) std::memcpy(m.bytes.data() + 4 * i, &floats[i], 4);
            else {
                const uint16_t bits = type == DType::F16 ? f32_to_f16(floats[i]) : f32_to_bf16(floats[i]);
                std::memcpy(m.bytes.data() + 2 * i, &bits, 2);
            }
        }
    }
    m.w = {type, rows, cols, m.bytes.data(), static_cast<int64_t>(*dtype_bytes(type, static_cast<uint64_t>(cols)))};
    m.dequantised.resize(static_cast<size_t>(rows * cols));
    convert_to_f32(type, m.bytes.data(), m.dequantised.data(), rows * cols);
    return m;
}

}  // namespace

class MatmulTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        qInfo("instruction-set levels covered: %s", oxinfer::test::kernel_level_names().c_str());
    }

    void products_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("cols");
        const DType types[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,  DType::Q4_1,  DType::Q5_0,
                               DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,  DType::Q6_K,  DType::IQ4_NL,
                               DType::IQ4_XS, DType::TQ1_0, DType::TQ2_0, DType::MXFP4};
        for (DType type : types) {
            const int64_t block = dtype_traits(type).block_elements;
            // awkward shapes: one row, rows that are not a multiple of the 16-row tile or the
            // 16-row thread granule, widths that cross the 256-value cache block; 90 rows: two
            // blocks of 4 GEMM panels (the second a partial pair) and two threads' ranges, for the
            // panel packers (float, Q8_0/Q4_0 by the level, the rest dequantised as Q5_0 is).
            // Float widths 48 and 63 leave 16 and 31 values after the last 32-value group (one and
            // two masked steps of 16); 1100 bf16 values pass the 2 KB up to which AVX-512 takes
            // two rows at a time on Intel, 8200 the 16 KB from which it does on AMD (with a
            // partial group of 8 at the end); 1056 Q8_0-like rows pass 1 KB, so that several
            // tokens walk them in steps of fewer than 16 rows.
            std::vector<int64_t> widths = block == 1    ? std::vector<int64_t>{1, 7, 33, 48, 63, 300, 1100}
                                          : block == 32 ? std::vector<int64_t>{32, 64, 96, 288, 1056}
                                                        : std::vector<int64_t>{256, 768};
            if (type == DType::BF16) widths.push_back(8200);
            std::vector<int> row_counts{1, 7, 33};
            if (type == DType::F32 || type == DType::F16 || type == DType::BF16 || type == DType::Q8_0 || type == DType::Q4_0 || type == DType::Q5_0)
                row_counts.push_back(90);
            for (int rows : row_counts)
                for (int64_t cols : widths)
                    QTest::addRow("%s %dx%d", dtype_name(type).data(), rows, static_cast<int>(cols)) << static_cast<int>(type) << rows << static_cast<int>(cols);
        }
    }

    void products() {
        QFETCH(int, type);
        QFETCH(int, rows);
        QFETCH(int, cols);
        const TestMatrix m = make_matrix(static_cast<DType>(type), rows, cols, static_cast<uint32_t>(rows * 131 + cols));
        const bool direct = has_direct_dot(m.w.dtype);
        const ActivationFormat format = activation_format(m.w.dtype);
        const int64_t quant_block = !direct ? 0 : format == ActivationFormat::Q8Blocks32 ? 32 : format == ActivationFormat::Q8Blocks256 ? 256 : 0;
        for (int tokens : {1, 2, 4, 5, 6, 15}) {  // 15: a last group of 3 in the 4-token K-quant tiles
            const auto x = test::random_floats(static_cast<size_t>(tokens * cols), static_cast<uint32_t>(tokens + 7));
            // Reference in double, and the error bound of each path:
            //  - f32 arithmetic over `cols` terms: |err| <= cols * 2^-23 * sum|w*x| (a loose,
            //    order-independent bound on recursive and blocked summation);
            //  - 8-bit activations (GEMV of block types): each x is off by at most d/2 with
            //    d = max|x in block| / 127, so |err| <= sum over blocks of sum|w| * d/2;
            //  - bf16 activations (GEMM of bf16 weights on levels with vdpbf16ps): rounding x to
            //    8 significant bits moves it by at most 2^-8 |x|, so |err| <= 2^-8 sum|w*x| more
            //    (the bf16 products themselves are exact in f32).
            std::vector<double> reference(static_cast<size_t>(tokens * rows)), float_bound(reference.size()), quant_bound(reference.size()),
                bf16_bound(reference.size());
            for (int t = 0; t < tokens; ++t)
                for (int r = 0; r < rows; ++r) {
                    const Expected e = expected(m, x.data(), t, r, quant_block);
                    reference[static_cast<size_t>(t * rows + r)] = e.value;
                    float_bound[static_cast<size_t>(t * rows + r)] = e.float_bound;
                    quant_bound[static_cast<size_t>(t * rows + r)] = e.quant_bound;
                    bf16_bound[static_cast<size_t>(t * rows + r)] = e.bf16_bound;
                }

            std::vector<float> scalar_gemv;
            for (const KernelLevel& level : kernel_levels()) {
                if (!level.emulated) set_active_isa(level.isa);
                for (int threads : {1, 2}) {
                    ThreadPool pool(threads);
                    std::vector<float> y_gemv(reference.size()), y_gemm(reference.size()), y(reference.size());
                    gemv_with(*level.matmul, m.w, x.data(), tokens, y_gemv.data(), pool);
                    gemm_with(*level.matmul, m.w, x.data(), tokens, y_gemm.data(), pool);
                    // bf16 weights that allow bf16 activations: the vdpbf16ps GEMM where the level has it.
                    std::vector<float> y_gemm_rounded(reference.size());
                    WeightMatrix rounded = m.w;
                    rounded.bf16_activations = true;
                    gemm_with(*level.matmul, rounded, x.data(), tokens, y_gemm_rounded.data(), pool);
                    if (!level.emulated) matmul(m.w, x.data(), tokens, y.data(), pool);  // the dispatching entry point
                    if (level.isa == Isa::Scalar && threads == 1) scalar_gemv = y_gemv;
                    // Several Q4_K tokens (a speculative verification) give each token its one-token
                    // bits, so that a verified draft's logits are the plain decode's.
                    if (m.w.dtype == DType::Q4_K)
                        for (int t = 0; t < tokens; ++t) {
                            std::vector<float> alone(static_cast<size_t>(rows));
                            gemv_with(*level.matmul, m.w, x.data() + t * cols, 1, alone.data(), pool);
                            for (int r = 0; r < rows; ++r) QVERIFY(same_bits(y_gemv[static_cast<size_t>(t * rows + r)], alone[static_cast<size_t>(r)]));
                        }
                    const bool bf16_activations = m.w.dtype == DType::BF16 && level.matmul->gemm_tile_bf16;
                    // Q4_K prefill multiplies int8 activations, as its GEMV does, and so does Q6_K's
                    // where the level has a tile for it.
                    const bool int8_gemm = m.w.dtype == DType::Q4_K || (m.w.dtype == DType::Q6_K && level.matmul->gemm_q6_k_tile);
                    const std::vector<double>& gemm_bound = int8_gemm ? quant_bound : float_bound;
                    const std::vector<double>& rounded_bound = bf16_activations ? bf16_bound : gemm_bound;
                    for (size_t i = 0; i < reference.size(); ++i) {
                        const QString where = QStringLiteral("%1, %2 threads, %3 tokens, output %4").arg(QString::fromStdString(level.name)).arg(threads).arg(tokens).arg(i);
                        QVERIFY2(std::fabs(y_gemm[i] - reference[i]) <= gemm_bound[i],
                                 qPrintable(QStringLiteral("gemm %1: %2 vs reference %3").arg(where).arg(y_gemm[i]).arg(reference[i])));
                        QVERIFY2(std::fabs(y_gemm_rounded[i] - reference[i]) <= rounded_bound[i],
                                 qPrintable(QStringLiteral("gemm, bf16 activations allowed, %1: %2 vs reference %3").arg(where).arg(y_gemm_rounded[i]).arg(reference[i])));
                        // Exact bf16 products differ from the rounded ones only where vdpbf16ps is used.
                        if (!bf16_activations) QVERIFY(same_bits(y_gemm_rounded[i], y_gemm[i]));
                        QVERIFY2(std::fabs(y_gemv[i] - reference[i]) <= (quant_block ? quant_bound[i] : float_bound[i]),
                                 qPrintable(QStringLiteral("gemv %1: %2 vs reference %3").arg(where).arg(y_gemv[i]).arg(reference[i])));
                        // Every level computes the same quantised products; only the order of
                        // float additions differs from the scalar kernels.
                        QVERIFY2(std::fabs(y_gemv[i] - scalar_gemv[i]) <= float_bound[i] + (quant_block ? 1e-6 * quant_bound[i] : 0),
                                 qPrintable(QStringLiteral("gemv %1: %2 vs scalar %3").arg(where).arg(y_gemv[i]).arg(scalar_gemv[i])));
                        if (!level.emulated) QCOMPARE(y[i], tokens <= kGemvMaxTokens ? y_gemv[i] : y_gemm[i]);
                    }
                }
            }
            set_active_isa(best_isa());
        }
    }

    // Every way the bandwidth probe reads sums every value once, tails included (quarters, so that
    // any order of the sum is exact); the plain way exists on every level, the page bursts, the
    // interleaved kernels' way and the page touch on x86, the AVX-512 Q4_K kernel's way on AVX-512.
    void readSumsReadEveryValue() {
        std::vector<float> values(20000 + 64);
        for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 7) * 0.25f;
        for (const KernelLevel& level : kernel_levels()) {
            const MatmulTable& table = *level.matmul;
            QVERIFY2(table.read_sum[0], level.name.c_str());
            if (level.isa != Isa::Scalar && level.isa != Isa::Neon) {
                QVERIFY2(table.read_sum[1], level.name.c_str());
                QVERIFY2(table.read_sum[2], level.name.c_str());
                QVERIFY2(table.read_sum[3], level.name.c_str());
            }
            if (level.isa == Isa::Avx512 || level.isa == Isa::Avx512Bf16) QVERIFY2(table.read_sum[4], level.name.c_str());
            for (int method = 0; method < kReadMethods; ++method) {
                if (!table.read_sum[method]) continue;
                for (int64_t n : {int64_t{0}, int64_t{5}, int64_t{31}, int64_t{64}, int64_t{1000}, int64_t{4099}, int64_t{20000}})
                    for (int64_t offset : {0, 3}) {  // 3 floats later: unaligned, and every page crossing moves
                        double expected = 0;
                        for (int64_t i = 0; i < n; ++i) expected += values[static_cast<size_t>(offset + i)];
                        QVERIFY2(table.read_sum[method](values.data() + offset, n) == static_cast<float>(expected),
                                 qPrintable(QStringLiteral("%1, method %2, n %3").arg(QString::fromStdString(level.name)).arg(method).arg(n)));
                    }
            }
        }
    }

    // The two-panel GEMM tile gives exactly the bits of two one-panel tiles (so a product does not
    // depend on which panels a thread happens to pair), for odd and even depths, stored or added.
    void pairTileIsTwoTiles() {
        int levels_with_pair = 0;
        for (const KernelLevel& level : kernel_levels()) {
            const MatmulTable& table = *level.matmul;
            if (!table.gemm_tile_pair) continue;
            ++levels_with_pair;
            for (int64_t k : {1, 2, 7, 256})
                for (bool accumulate : {false, true}) {
                    const auto x = test::random_floats(static_cast<size_t>(k * kGemmTokens), static_cast<uint32_t>(k));
                    const auto w0 = test::random_floats(static_cast<size_t>(k * kGemmRows), static_cast<uint32_t>(k + 1));
                    const auto w1 = test::random_floats(static_cast<size_t>(k * kGemmRows), static_cast<uint32_t>(k + 2));
                    const int64_t ldc = 2 * kGemmRows + 3;
                    const auto start = test::random_floats(static_cast<size_t>(kGemmTokens * ldc), 99);
                    std::vector<float> pair = start, single = start;
                    table.gemm_tile_pair(k, x.data(), w0.data(), w1.data(), pair.data(), ldc, accumulate);
                    table.gemm_tile(k, x.data(), w0.data(), single.data(), ldc, accumulate);
                    table.gemm_tile(k, x.data(), w1.data(), single.data() + kGemmRows, ldc, accumulate);
                    for (size_t i = 0; i < pair.size(); ++i)
                        QVERIFY2(same_bits(pair[i], single[i]),
                                 qPrintable(QStringLiteral("%1, k %2, element %3: %4 vs %5").arg(QString::fromStdString(level.name)).arg(k).arg(i).arg(pair[i]).arg(single[i])));
                }
        }
        if (levels_with_pair == 0) QSKIP("no instruction-set level here has a two-panel GEMM tile");
    }

    // Matrices of different types and row counts sharing one input (q/k/v of a GGUF that mixes
    // quantisations) in one call: each output equals that matrix's own gemv, whose accuracy the
    // test above checks, for every level and thread count.
    void severalMatricesShareOneInput() {
        const int64_t cols = 512;
        const TestMatrix matrices[] = {make_matrix(DType::Q4_K, 7, cols, 1), make_matrix(DType::Q6_K, 33, cols, 2),
                                       make_matrix(DType::BF16, 1, cols, 3), make_matrix(DType::IQ4_NL, 20, cols, 4)};
        for (int tokens : {1, 3}) {
            const auto x = test::random_floats(static_cast<size_t>(tokens * cols), 11);
            for (const KernelLevel& level : kernel_levels())
                for (int threads : {1, 2, 3}) {
                    ThreadPool pool(threads);
                    std::vector<std::vector<float>> fused(std::size(matrices)), alone(std::size(matrices));
                    std::vector<MatmulTarget> targets;
                    for (size_t i = 0; i < std::size(matrices); ++i) {
                        fused[i].assign(static_cast<size_t>(tokens * matrices[i].w.rows), NAN);
                        alone[i].resize(fused[i].size());
                        targets.push_back({&matrices[i].w, fused[i].data()});
                        gemv_with(*level.matmul, matrices[i].w, x.data(), tokens, alone[i].data(), pool);
                    }
                    gemv_many_with(*level.matmul, targets, x.data(), tokens, pool);
                    for (size_t i = 0; i < std::size(matrices); ++i)
                        for (size_t j = 0; j < fused[i].size(); ++j) {
                            // Against the double-precision reference (Q4_K and Q6_K take int8
                            // activations per 256 values), then bit for bit against the lone GEMV.
                            const TestMatrix& m = matrices[i];
                            const int64_t t = static_cast<int64_t>(j) / m.w.rows, r = static_cast<int64_t>(j) % m.w.rows;
                            const bool int8 = m.w.dtype == DType::Q4_K || m.w.dtype == DType::Q6_K;
                            const Expected e = expected(m, x.data(), t, r, int8 ? 256 : 0);
                            QVERIFY2(std::fabs(fused[i][j] - e.value) <= (int8 ? e.quant_bound : e.float_bound),
                                     qPrintable(QStringLiteral("%1, matrix %2 output %3: %4 vs reference %5")
                                                    .arg(QString::fromStdString(level.name)).arg(i).arg(j).arg(fused[i][j]).arg(e.value)));
                            QVERIFY2(fused[i][j] == alone[i][j], qPrintable(QStringLiteral("%1, %2 threads, %3 tokens, matrix %4 output %5: %6 vs %7")
                                                                                .arg(QString::fromStdString(level.name)).arg(threads).arg(tokens)
                                                                                .arg(i).arg(j).arg(fused[i][j]).arg(alone[i][j])));
                        }
                }
        }
        ThreadPool pool(1);
        const TestMatrix narrow = make_matrix(DType::F32, 4, 256, 5);
        std::vector<float> x(512), y(8);
        const MatmulTarget mismatched[] = {{&matrices[0].w, y.data()}, {&narrow.w, y.data()}};
        OXINFER_EXPECT_ERROR(matmul_many(mismatched, x.data(), 1, pool), "same number of columns");
    }

    // matmul_rows_together: each row range is handed to rows_done once, and only after every
    // matrix's rows of it are computed, with the bits of matmul_many; while decoding, on the
    // thread that computed them (one or more threads), for prompts once for all rows.
    void rowsDoneFollowEveryMatrixsRows() {
        const int64_t rows = 45, cols = 512;  // 45: a partial unit of 16 rows and a partial group
        const TestMatrix plain[] = {make_matrix(DType::Q4_K, rows, cols, 21), make_matrix(DType::Q4_K, rows, cols, 22),
                                    make_matrix(DType::BF16, rows, cols, 23)};
        ThreadPool setup(2);
        std::vector<std::vector<std::byte>> interleaved_bytes;
        std::vector<WeightMatrix> weights;
        for (const TestMatrix& m : plain) {
            interleaved_bytes.emplace_back(m.bytes.size());
            const int64_t group_rows = interleaved_group_rows(matmul_table(active_isa()), DType::Q4_K);
            weights.push_back(m.w.dtype == DType::Q4_K ? interleave_rows(m.w, group_rows, interleaved_bytes.back().data(), setup) : m.w);
        }
        for (int tokens : {1, 3, 40})
            for (int threads : {1, 2, 3}) {
                ThreadPool pool(threads);
                const auto x = test::random_floats(static_cast<size_t>(tokens * cols), static_cast<uint32_t>(tokens));
                const size_t n = static_cast<size_t>(tokens * rows);
                std::vector<std::vector<float>> want(weights.size(), std::vector<float>(n)), got(weights.size(), std::vector<float>(n, NAN));
                std::vector<MatmulTarget> want_targets, got_targets;
                for (size_t i = 0; i < weights.size(); ++i) {
                    want_targets.push_back({&weights[i], want[i].data()});
                    got_targets.push_back({&weights[i], got[i].data()});
                }
                matmul_many(want_targets, x.data(), tokens, pool);
                std::vector<int> calls(static_cast<size_t>(rows));
                std::atomic<int> rows_not_ready{0};
                matmul_rows_together(got_targets, x.data(), tokens, [&](int64_t begin, int64_t end) {
                    for (int64_t r = begin; r < end; ++r) {
                        calls[static_cast<size_t>(r)] += 1;  // ranges are disjoint: no two threads share a row
                        for (size_t i = 0; i < weights.size(); ++i)
                            for (int64_t t = 0; t < tokens; ++t)
                                if (!same_bits(got[i][static_cast<size_t>(t * rows + r)], want[i][static_cast<size_t>(t * rows + r)])) rows_not_ready += 1;
                    }
                }, pool);
                const QString where = QStringLiteral("%1 tokens, %2 threads").arg(tokens).arg(threads);
                QVERIFY2(rows_not_ready == 0, qPrintable(where + QStringLiteral(": %1 rows handed over before their products were done").arg(rows_not_ready.load())));
                for (int64_t r = 0; r < rows; ++r)
                    QVERIFY2(calls[static_cast<size_t>(r)] == 1, qPrintable(where + QStringLiteral(": row %1 handed over %2 times").arg(r).arg(calls[static_cast<size_t>(r)])));
            }
        ThreadPool pool(2);
        const TestMatrix shorter = make_matrix(DType::F32, rows - 1, cols, 24);
        std::vector<float> x(static_cast<size_t>(cols)), y(static_cast<size_t>(rows));
        const MatmulTarget mismatched[] = {{&weights[0], y.data()}, {&shorter.w, y.data()}};
        OXINFER_EXPECT_ERROR(matmul_rows_together(mismatched, x.data(), 1, [](int64_t, int64_t) {}, pool), "as many rows");
    }

    // A GEMV of 2 to kGemvMaxTokens tokens (a speculative verification) gives every token the same
    // bits as decoding it alone: the verified logits are the plain decode's, so a draft never
    // changes a near-tie. For every type and level, 1 and 2 threads, a width that is not a multiple
    // of the row granule.
    void severalTokensGiveEachTokenItsOneTokenBits() {
        const int64_t cols = 512, rows = 37;
        for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K}) {
            const TestMatrix m = make_matrix(type, rows, cols, 21);
            for (int64_t tokens = 2; tokens <= kGemvMaxTokens; ++tokens) {
                const auto x = test::random_floats(static_cast<size_t>(tokens * cols), 13 + static_cast<uint64_t>(tokens));
                for (const KernelLevel& level : kernel_levels())
                    for (int threads : {1, 2}) {
                        ThreadPool pool(threads);
                        std::vector<float> together(static_cast<size_t>(tokens * rows)), alone(static_cast<size_t>(rows));
                        gemv_with(*level.matmul, m.w, x.data(), tokens, together.data(), pool);
                        for (int64_t t = 0; t < tokens; ++t) {
                            gemv_with(*level.matmul, m.w, x.data() + t * cols, 1, alone.data(), pool);
                            for (int64_t r = 0; r < rows; ++r)
                                QVERIFY2(together[static_cast<size_t>(t * rows + r)] == alone[static_cast<size_t>(r)],
                                         qPrintable(QStringLiteral("%1 %2, %3 tokens, token %4 row %5: %6 vs %7")
                                                        .arg(QString::fromStdString(level.name)).arg(dtype_name(type).data()).arg(tokens).arg(t)
                                                        .arg(r).arg(together[static_cast<size_t>(t * rows + r)]).arg(alone[static_cast<size_t>(r)])));
                        }
                    }
            }
        }
    }

    // Interleaved Q4_K and Q8_0 (kernels/interleave.h) in each group size, on every level with
    // kernels for it: the layout gives every row back byte for byte; GEMV and GEMM match the
    // double-precision reference within the int8-activation bound, the same level's plain row dots
    // within the float bound, and give each token its one-token bits; a level whose kernel takes
    // another group size refuses the matrix. Row counts with and without a plain tail, token counts
    // with a last partial group of the 4-token tiles; Q8_0 rows of 129 blocks pass the 4 KB from
    // which decoding on AMD takes two groups per call (45 rows: an odd group last).
    void interleavedWeights() {
        int levels_with_kernels = 0;
        for (DType type : {DType::Q4_K, DType::Q8_0}) {
            const int64_t block = dtype_traits(type).block_elements;
            std::vector<int64_t> widths{block, 3 * block};
            if (type == DType::Q8_0) widths.push_back(129 * block);
            std::vector<int64_t> group_sizes{kInterleavedRows};
            if (type == DType::Q4_K) group_sizes.push_back(2 * kInterleavedRows);
            for (int64_t group_rows : group_sizes)
            for (int64_t rows : {5, 8, 16, 37, 45, 51})
                for (int64_t cols : widths) {
                    const TestMatrix m = make_matrix(type, rows, cols, static_cast<uint32_t>(rows * 7 + cols));
                    std::vector<std::byte> bytes(m.bytes.size());
                    ThreadPool setup(2);
                    const WeightMatrix w = interleave_rows(m.w, group_rows, bytes.data(), setup);
                    QVERIFY(w.interleaved());
                    QCOMPARE(std::memcmp(bytes.data(), m.bytes.data(), bytes.size()) != 0, rows >= group_rows);  // fewer: all plain
                    std::vector<std::byte> row(static_cast<size_t>(m.w.row_bytes));
                    for (int64_t r = 0; r < rows; ++r) {
                        copy_plain_row(w, r, row.data());
                        QVERIFY2(std::memcmp(row.data(), m.bytes.data() + r * m.w.row_bytes, row.size()) == 0,
                                 qPrintable(QStringLiteral("%1 in %2 %3x%4 row %5").arg(dtype_name(type).data()).arg(group_rows).arg(rows).arg(cols).arg(r)));
                    }
                    for (int tokens : {1, 2, 4, 5, 15}) {
                        const auto x = test::random_floats(static_cast<size_t>(tokens * cols), static_cast<uint32_t>(tokens + 3));
                        for (const KernelLevel& level : kernel_levels()) {
                            if (!interleaved_tile(*level.matmul, type)) continue;
                            if (interleaved_group_rows(*level.matmul, type) != group_rows) {
                                ThreadPool pool(1);
                                std::vector<float> y(static_cast<size_t>(tokens * rows));
                                OXINFER_EXPECT_ERROR(gemv_with(*level.matmul, w, x.data(), 1, y.data(), pool), "groups of");
                                continue;
                            }
                            levels_with_kernels += 1;
                            for (int threads : {1, 2}) {
                                ThreadPool pool(threads);
                                const size_t n = static_cast<size_t>(tokens * rows);
                                std::vector<float> gemv_out(n), gemm_out(n), plain(n), alone(static_cast<size_t>(rows));
                                gemv_with(*level.matmul, w, x.data(), tokens, gemv_out.data(), pool);
                                gemm_with(*level.matmul, w, x.data(), tokens, gemm_out.data(), pool);
                                gemv_with(*level.matmul, m.w, x.data(), tokens, plain.data(), pool);
                                for (int64_t t = 0; t < tokens; ++t) {
                                    if (tokens <= kGemvMaxTokens) gemv_with(*level.matmul, w, x.data() + t * cols, 1, alone.data(), pool);
                                    for (int64_t r = 0; r < rows; ++r) {
                                        const size_t i = static_cast<size_t>(t * rows + r);
                                        const Expected e = expected(m, x.data(), t, r, block == 32 ? 32 : 256);
                                        const QString where = QStringLiteral("%1 %2 %3x%4, %5 threads, %6 tokens, token %7 row %8")
                                                                  .arg(QString::fromStdString(level.name)).arg(dtype_name(type).data()).arg(rows).arg(cols)
                                                                  .arg(threads).arg(tokens).arg(t).arg(r);
                                        QVERIFY2(std::fabs(gemv_out[i] - e.value) <= e.quant_bound, qPrintable(QStringLiteral("gemv %1: %2 vs reference %3").arg(where).arg(gemv_out[i]).arg(e.value)));
                                        QVERIFY2(std::fabs(gemm_out[i] - e.value) <= e.quant_bound, qPrintable(QStringLiteral("gemm %1: %2 vs reference %3").arg(where).arg(gemm_out[i]).arg(e.value)));
                                        QVERIFY2(std::fabs(gemv_out[i] - plain[i]) <= e.float_bound,
                                                 qPrintable(QStringLiteral("gemv %1: %2 vs plain rows %3").arg(where).arg(gemv_out[i]).arg(plain[i])));
                                        if (tokens <= kGemvMaxTokens) QVERIFY2(same_bits(gemv_out[i], alone[static_cast<size_t>(r)]), qPrintable(where));
                                    }
                                }
                            }
                        }
                    }
                    // A level without kernels for the layout refuses it rather than misread it.
                    ThreadPool pool(1);
                    std::vector<float> x(static_cast<size_t>(cols)), y(static_cast<size_t>(rows));
                    OXINFER_EXPECT_ERROR(gemv_with(matmul_table(Isa::Scalar), w, x.data(), 1, y.data(), pool), "interleaved");
                }
        }
        if (levels_with_kernels == 0) QSKIP("no instruction-set level here has kernels for interleaved weights");
    }

    // copy_columns keeps each row's blocks of the columns, in either layout: every row of a part
    // read back plain is that row's bytes of those blocks, and the parts' products with their
    // columns of x add up to the whole matrix's (within float summation order).
    void columnRangesAreMatricesOfTheirOwn() {
        for (DType type : {DType::F32, DType::BF16, DType::Q8_0, DType::Q4_K}) {
            const DTypeTraits& traits = dtype_traits(type);
            const int64_t block = traits.block_elements;
            for (int64_t group_rows : {int64_t{0}, kInterleavedRows, 2 * kInterleavedRows}) {
                if (group_rows > 0 && !has_interleaved_layout(type)) continue;
                if (group_rows == 2 * kInterleavedRows && type != DType::Q4_K) continue;
                const int64_t rows = 37, cols = 4 * block;  // whole groups of 8 or 16, then plain rows
                const TestMatrix m = make_matrix(type, rows, cols, static_cast<uint32_t>(group_rows + 11));
                std::vector<std::byte> layout(m.bytes.size());
                ThreadPool pool(1);
                const WeightMatrix w = group_rows ? interleave_rows(m.w, group_rows, layout.data(), pool) : m.w;
                const std::vector<int64_t> bounds{0, block, 4 * block};
                // The products where the active level reads this layout.
                const MatmulTable& active = matmul_table(active_isa());
                const bool multiply = !group_rows || (interleaved_tile(active, type) && interleaved_group_rows(active, type) == group_rows);
                const auto x = test::random_floats(static_cast<size_t>(cols), 5);
                std::vector<float> whole(static_cast<size_t>(rows)), sum(static_cast<size_t>(rows), 0.0f), part_out(sum.size());
                if (multiply) gemv(w, x.data(), 1, whole.data(), pool);
                for (size_t p = 0; p + 1 < bounds.size(); ++p) {
                    const int64_t begin = bounds[p], end = bounds[p + 1];
                    std::vector<std::byte> bytes(static_cast<size_t>(rows * (end - begin) / block * traits.block_bytes));
                    const WeightMatrix part = copy_columns(w, begin, end, bytes.data());
                    QCOMPARE(part.cols, end - begin);
                    QCOMPARE(part.group_rows, w.group_rows);
                    std::vector<std::byte> row(static_cast<size_t>(part.row_bytes));
                    for (int64_t r = 0; r < rows; ++r) {
                        copy_plain_row(part, r, row.data());
                        QVERIFY2(std::memcmp(row.data(), m.bytes.data() + r * m.w.row_bytes + begin / block * traits.block_bytes, row.size()) == 0,
                                 qPrintable(QStringLiteral("%1 in groups of %2, columns %3-%4, row %5").arg(dtype_name(type).data()).arg(group_rows).arg(begin).arg(end).arg(r)));
                    }
                    if (!multiply) continue;
                    gemv(part, x.data() + begin, 1, part_out.data(), pool);
                    for (size_t r = 0; r < sum.size(); ++r) sum[r] += part_out[r];
                }
                for (size_t r = 0; r < sum.size(); ++r)
                    QVERIFY2(std::fabs(sum[r] - whole[r]) <= 1e-4f * (1 + std::fabs(whole[r])),
                             qPrintable(QStringLiteral("%1 in groups of %2, row %3: %4 vs %5").arg(dtype_name(type).data()).arg(group_rows).arg(r).arg(sum[r]).arg(whole[r])));
                std::vector<std::byte> unused(m.bytes.size());
                OXINFER_EXPECT_ERROR(copy_columns(w, 1, block, unused.data()), "whole blocks");
            }
        }
    }

    // Each level's interleaved Q8_0 tile, called directly with two groups at once (as prefill
    // calls it) and with one (as decoding does), whatever CPU runs the test: every
    // output within the int8-activation bound of the double-precision reference.
    void interleavedQ8_0TileOfOneAndTwoGroups() {
        constexpr int64_t kRows = 2 * kInterleavedRows, kCols = 129 * 32;
        const TestMatrix m = make_matrix(DType::Q8_0, kRows, kCols, 17);
        std::vector<std::byte> bytes(m.bytes.size());
        ThreadPool setup(1);
        const WeightMatrix w = interleave_rows(m.w, kInterleavedRows, bytes.data(), setup);
        int levels = 0;
        for (const KernelLevel& level : kernel_levels()) {
            const InterleavedTile tile = level.matmul->interleaved_q8_0;
            if (!tile) continue;
            levels += 1;
            for (int tokens = 1; tokens <= kKQuantTileTokens; ++tokens) {
                const auto x = test::random_floats(static_cast<size_t>(tokens * kCols), static_cast<uint32_t>(tokens + 40));
                std::vector<std::vector<ActBlock32>> blocks(static_cast<size_t>(tokens), std::vector<ActBlock32>(kCols / 32));
                std::vector<const void*> acts;
                for (int t = 0; t < tokens; ++t) {
                    level.matmul->quantize_blocks32(x.data() + t * kCols, blocks[static_cast<size_t>(t)].data(), kCols);
                    acts.push_back(blocks[static_cast<size_t>(t)].data());
                }
                std::vector<float> two(static_cast<size_t>(tokens * kRows)), one(two.size());
                tile(kCols, w.data, 2, acts.data(), tokens, two.data(), kRows);
                const int64_t group_bytes = kInterleavedRows * w.row_bytes;
                for (int g = 0; g < 2; ++g) tile(kCols, w.data + g * group_bytes, 1, acts.data(), tokens, one.data() + g * kInterleavedRows, kRows);
                for (int t = 0; t < tokens; ++t)
                    for (int64_t r = 0; r < kRows; ++r) {
                        const Expected e = expected(m, x.data(), t, r, 32);
                        const size_t i = static_cast<size_t>(t * kRows + r);
                        const QString where = QStringLiteral("%1, %2 tokens, token %3 row %4").arg(QString::fromStdString(level.name)).arg(tokens).arg(t).arg(r);
                        QVERIFY2(std::fabs(two[i] - e.value) <= e.quant_bound, qPrintable(QStringLiteral("two groups %1: %2 vs %3").arg(where).arg(two[i]).arg(e.value)));
                        QVERIFY2(std::fabs(one[i] - e.value) <= e.quant_bound, qPrintable(QStringLiteral("one group %1: %2 vs %3").arg(where).arg(one[i]).arg(e.value)));
                    }
            }
        }
        if (levels == 0) QSKIP("no instruction-set level here has an interleaved Q8_0 kernel");
    }

    void activationQuantisationIsIdenticalOnEveryLevel() {
        const auto x = test::random_floats(1024, 99);
        std::vector<ActBlock32> reference32(32), blocks32(32);
        std::vector<ActBlock256> reference256(4), blocks256(4);
        matmul_table(Isa::Scalar).quantize_blocks32(x.data(), reference32.data(), 1024);
        matmul_table(Isa::Scalar).quantize_blocks256(x.data(), reference256.data(), 1024);
        // independent check of the rule on one block
        float amax = 0;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[static_cast<size_t>(i)]));
        QCOMPARE(reference32[0].d, amax / 127.0f);
        for (int i = 0; i < 32; ++i) QVERIFY(std::fabs(reference32[0].q[i] * reference32[0].d - x[static_cast<size_t>(i)]) <= reference32[0].d / 2 * 1.0001f);
        for (const ActBlock256& block : reference256)  // the sums of 16 and of 32 codes, from the codes
            for (int i = 0; i < 16; ++i) {
                const int sum16 = std::accumulate(block.q + 16 * i, block.q + 16 * i + 16, 0);
                QCOMPARE(int{block.bsums[i]}, sum16);
                if (i % 2 == 0) QCOMPARE(int{block.sums32[i / 2]}, std::accumulate(block.q + 16 * i, block.q + 16 * i + 32, 0));
            }
        for (const KernelLevel& level : kernel_levels()) {
            level.matmul->quantize_blocks32(x.data(), blocks32.data(), 1024);
            level.matmul->quantize_blocks256(x.data(), blocks256.data(), 1024);
            for (size_t b = 0; b < 32; ++b) {
                QCOMPARE(blocks32[b].d, reference32[b].d);
                QCOMPARE(blocks32[b].qsum, reference32[b].qsum);
                QCOMPARE(std::memcmp(blocks32[b].q, reference32[b].q, 32), 0);
            }
            for (size_t b = 0; b < 4; ++b) {
                QCOMPARE(blocks256[b].d, reference256[b].d);
                QCOMPARE(std::memcmp(blocks256[b].q, reference256[b].q, 256), 0);
                QCOMPARE(std::memcmp(blocks256[b].bsums, reference256[b].bsums, 32), 0);
                QCOMPARE(std::memcmp(blocks256[b].sums32, reference256[b].sums32, 16), 0);
            }
        }
    }

    // The activations the GEMV packs for its row dots (bf16's even/odd floats, the int8 blocks of
    // Q8_0 and Q4_K) start on a 64-byte line (the first token's: a later token's Q4_K blocks follow the
    // first's at 308 bytes a block), as the AVX-512 row dots read them fastest. Row dots
    // that record the address they are given stand in for the level's; the widths grow so that
    // the packed buffers are allocated anew, past 128 KB too (where malloc's blocks sit 16 bytes
    // into a page).
    void packedActivationsStartOnACacheLine() {
        static std::atomic<int> calls, misaligned;
        const RowDot record = [](int64_t, const std::byte*, int64_t, int64_t rows, const void* activations, float* y) {
            calls.fetch_add(1);
            if (reinterpret_cast<uintptr_t>(activations) % 64 != 0) misaligned.fetch_add(1);
            std::fill(y, y + rows, 0.0f);
        };
        MatmulTable table = matmul_table(Isa::Scalar);
        table.dot_bf16 = table.dot_q8_0 = table.dot_q4_k = record;
        table.bf16_even_odd_group = 32;
        ThreadPool pool(2);
        for (DType type : {DType::BF16, DType::Q8_0, DType::Q4_K}) {
            calls = misaligned = 0;
            for (int64_t cols = 256; cols <= 65536; cols *= 2) {
                const int64_t row_bytes = static_cast<int64_t>(*dtype_bytes(type, static_cast<uint64_t>(cols)));
                std::vector<std::byte> bytes(static_cast<size_t>(2 * row_bytes));
                const WeightMatrix w{type, 2, cols, bytes.data(), row_bytes};
                std::vector<float> x(static_cast<size_t>(cols), 0.5f), y(2);
                gemv_with(table, w, x.data(), 1, y.data(), pool);
            }
            QVERIFY2(calls > 0, dtype_name(type).data());
            QVERIFY2(misaligned == 0, (std::string(dtype_name(type)) + ": " + std::to_string(misaligned.load()) + " of " + std::to_string(calls.load()) + " calls off a line").c_str());
        }
    }

    void unsupportedTypeIsAnError() {
        ThreadPool pool(1);
        std::vector<std::byte> bytes(66);
        const WeightMatrix w{DType::IQ2_XXS, 1, 256, bytes.data(), 66};
        std::vector<float> x(256), y(1);
        OXINFER_EXPECT_ERROR(matmul(w, x.data(), 1, y.data(), pool), "unsupported tensor type");
    }

    void threadPoolRunsEveryIndexOnce() {
        for (int threads : {1, 2, 3, 8}) {
            ThreadPool pool(threads);
            QCOMPARE(pool.size(), threads);
            for (int repeat = 0; repeat < 1000; ++repeat) {
                std::vector<std::atomic<int>> hits(257);
                std::atomic<bool> misaligned{false};
                pool.parallel_for(257, 16, [&](int64_t begin, int64_t end) {
                    if (begin % 16 != 0 || (end % 16 != 0 && end != 257) || begin >= end) misaligned = true;
                    for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
                });
                for (auto& hit : hits) QCOMPARE(hit.load(), 1);
                QVERIFY(!misaligned);
            }
        }
        QVERIFY(ThreadPool().size() >= 1);
    }

    // Ranges tile [0, n) exactly, also where n has more units than a share counts in 32 bits, up
    // to the largest n.
    void threadPoolCoversHugeRanges() {
        ThreadPool pool(3);
        for (const int64_t n : {int64_t{1}, int64_t{5}, (int64_t{1} << 33) + 7, std::numeric_limits<int64_t>::max()}) {
            std::mutex mutex;
            std::vector<std::pair<int64_t, int64_t>> ranges;
            pool.parallel_for(n, 1, [&](int64_t begin, int64_t end) {
                const std::lock_guard lock(mutex);
                ranges.emplace_back(begin, end);
            });
            std::sort(ranges.begin(), ranges.end());
            int64_t covered = 0;
            for (const auto& [begin, end] : ranges) {
                QCOMPARE(begin, covered);
                QVERIFY(end > begin);
                covered = end;
            }
            QCOMPARE(covered, n);
        }
    }

    // A thread slowed down (here the caller, sleeping in every range it takes) leaves most of its
    // share to the others.
    void threadPoolRelievesASlowThread() {
        ThreadPool pool(2);
        const auto caller = std::this_thread::get_id();
        std::atomic<int64_t> caller_units{0};
        pool.parallel_for(64, 1, [&](int64_t begin, int64_t end) {
            if (std::this_thread::get_id() != caller) return;
            caller_units += end - begin;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        });
        QVERIFY2(caller_units < 32, qPrintable(QString("the slow thread did %1 of 64 units").arg(caller_units.load())));
    }

    // A thread's pieces of its own share come first and follow each other in memory: the caller's
    // begin at 0 and run without a gap to the end of its half, whatever the other thread does
    // (here it sleeps in each piece, so that the caller also takes work from it; the caller's first
    // piece waits long enough for the other thread to have taken its first).
    void threadPoolStreamsEachShareInOrder() {
        ThreadPool pool(2);
        const auto caller = std::this_thread::get_id();
        std::vector<std::pair<int64_t, int64_t>> caller_pieces;  // only the caller writes it
        pool.parallel_for(64, 1, [&](int64_t begin, int64_t end) {
            if (std::this_thread::get_id() != caller) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                return;
            }
            if (caller_pieces.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
            caller_pieces.emplace_back(begin, end);
        });
        int64_t next = 0;
        for (const auto& [begin, end] : caller_pieces) {
            if (next == 32) break;
            QCOMPARE(begin, next);
            next = end;
        }
        QCOMPARE(next, int64_t{32});
    }

    // barrier() holds every thread of a job until all have reached it: each round, every thread
    // writes its round, passes the barrier, then reads every thread's round; a second
    // barrier keeps the next round's writes out until all have read. With a worker spinning
    // 2 us, the waits also cross into sleep (a thread asleep and never woken would hang the job).
    void threadPoolBarrierHoldsEveryThread() {
        for (int threads : {1, 2, 3}) {
            for (const auto spin : {ThreadPool::kIdleSpin, std::chrono::microseconds(2)}) {
                ThreadPool pool(threads, spin);
                std::vector<std::atomic<int>> written(static_cast<size_t>(threads));
                std::atomic<int> mismatches{0};
                pool.run([&](int index, int count) {
                    std::mt19937 random(static_cast<uint32_t>(index));
                    for (int round = 0; round < 2000; ++round) {
                        if (random() % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(random() % 50));
                        written[static_cast<size_t>(index)].store(round, std::memory_order_relaxed);
                        pool.barrier();
                        for (int other = 0; other < count; ++other)
                            if (written[static_cast<size_t>(other)].load(std::memory_order_relaxed) != round) ++mismatches;
                        pool.barrier();
                    }
                });
                QCOMPARE(mismatches.load(), 0);
            }
        }
    }

    // Jobs published as workers give up spinning and go to sleep: every job runs on every thread
    // and returns (a worker asleep without having seen its job would hang run()). Gaps of 0-6 us
    // against a 2 us spin put many jobs in the moment a worker starts to sleep.
    void threadPoolWakesWorkersThatJustFellAsleep() {
        for (int threads : {2, 3}) {
            ThreadPool pool(threads, std::chrono::microseconds(2));
            std::vector<std::atomic<int>> runs(static_cast<size_t>(threads));
            std::mt19937 random(7);
            constexpr int kJobs = 20000;
            for (int job = 0; job < kJobs; ++job) {
                const auto gap_end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(random() % 6000);
                while (std::chrono::steady_clock::now() < gap_end) {
                }
                pool.run([&](int index, int) { runs[static_cast<size_t>(index)]++; });
            }
            for (const auto& count : runs) QCOMPARE(count.load(), kJobs);
        }
    }

    // An idle worker spins for the pool's idle_spin before it sleeps: with jobs 1 ms apart, the
    // default pool's worker burns about kIdleSpin of processor time per gap, one with zero spin
    // next to none (a wake-up and a few pauses). The worker reads its own thread's processor time.
    void threadPoolIdleSpinIsTheWorkersChoice() {
#if !defined(__unix__) && !defined(__APPLE__)
        QSKIP("reads a thread's processor time through POSIX clock_gettime");
#else
        const auto worker_cpu_ms = [](ThreadPool& pool) {
            const auto caller = std::this_thread::get_id();
            double milliseconds = 0;
            for (int job = 0; job < 100; ++job) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
                pool.run([&](int, int) {
                    if (std::this_thread::get_id() == caller) return;
                    timespec cpu{};
                    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
                    milliseconds = static_cast<double>(cpu.tv_sec) * 1e3 + static_cast<double>(cpu.tv_nsec) / 1e6;
                });
            }
            return milliseconds;
        };
        ThreadPool spinning(2), sleeping(2, std::chrono::microseconds(0));
        const double spun = worker_cpu_ms(spinning), slept = worker_cpu_ms(sleeping);
        // 100 gaps of at least 1 ms: about 20 ms spun; well under that for wake-ups alone.
        QVERIFY2(spun > 8 && slept < 8, qPrintable(QString("worker processor time: %1 ms spinning, %2 ms with zero spin").arg(spun).arg(slept)));
#endif
    }
};

QTEST_APPLESS_MAIN(MatmulTest)
#include "test_matmul.moc"
