// The element-wise, row-wise and attention-loop kernels (kernels/ops.h, kernels/ops_table.h):
// every entry of every ISA level against the scalar table on random inputs of awkward sizes, in
// the spirit of llama.cpp's test-backend-ops; the scalar table itself against independent
// double-precision loops written here; and the dispatching entry points following
// set_active_isa. The levels are those this CPU runs plus the AVX-512 levels it lacks, emulated
// (helpers/kernel_levels.h; initTestCase says which ran). Tolerances are relative errors in ulps of the expected value (kUlp = 2^-23, one ulp of a
// float in [1, 2)) unless said otherwise; each one is justified where it is used, and the worst
// error seen per op and level is printed at the end.

#include "kernels/interleave.h"
#include "kernels/isa.h"
#include "kernels/ops.h"
#include "kernels/ops_table.h"
#include "kernels/thread_pool.h"
#include "kernel_levels.h"

#include <oxinfer/dtype.h>
#include <oxinfer/error.h>

#include "test_support.h"

#include <QObject>
#include <QTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <numbers>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace oxinfer;
using namespace oxinfer::kernels;
using oxinfer::test::KernelLevel;
using oxinfer::test::kernel_levels;

namespace {

constexpr double kUlp = 0x1p-23;  // relative size of one float ulp (at most)
// Row lengths: 1, around the 8- and 16-lane widths, odd, and one past a 4096 hidden size.
constexpr int64_t kSizes[] = {1, 3, 7, 8, 15, 16, 17, 31, 33, 100, 257, 4096 + 3};

std::vector<float> random_floats(size_t n, float lo, float hi, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> out(n);
    for (float& v : out) v = dist(rng);
    return out;
}

// Activation inputs: edge values first (zeros, tiny, where exp over/underflows, infinities), then
// random values in [lo, hi].
std::vector<float> activation_inputs(size_t n, float lo, float hi, uint32_t seed) {
    std::vector<float> out = random_floats(n, lo, hi, seed);
    const float edges[] = {0.0f, -0.0f, 1e-20f, -1e-20f, 88.5f, -88.5f, 100.0f, -100.0f, 20.0f, -20.0f, INFINITY, -INFINITY};
    for (size_t i = 0; i < std::size(edges) && i < n; ++i) out[i] = edges[i];
    return out;
}

// Per "op level": the worst relative error in ulps (over values above 1e-30) and the worst
// error as a fraction of what was allowed, printed by cleanupTestCase.
struct Worst {
    double ulps = 0, of_tolerance = 0;
};
std::map<std::string, Worst>& worst_errors() {
    static std::map<std::string, Worst> errors;
    return errors;
}

// Empty when every got[i] is within atol[i] + rtol·|want[i]| of want[i] (NaN matches NaN,
// infinities must be equal); else the first failure. Records the worst relative error under `key`.
QString compare(const float* got, const float* want, int64_t n, double rtol, const std::vector<double>& atol,
                const std::string& key) {
    for (int64_t i = 0; i < n; ++i) {
        const double g = got[i], w = want[i];
        if (std::isnan(w) || std::isnan(g)) {
            if (std::isnan(w) && std::isnan(g)) continue;
            return QStringLiteral("element %1: got %2, expected %3").arg(i).arg(g, 0, 'g', 9).arg(w, 0, 'g', 9);
        }
        if (std::isinf(w) || std::isinf(g)) {
            if (g == w) continue;
            return QStringLiteral("element %1: got %2, expected %3").arg(i).arg(g, 0, 'g', 9).arg(w, 0, 'g', 9);
        }
        const double error = std::abs(g - w);
        const double allowed = (atol.empty() ? 0.0 : atol[static_cast<size_t>(i)]) + rtol * std::abs(w);
        Worst& worst = worst_errors()[key];
        if (std::abs(w) > 1e-30) worst.ulps = std::max(worst.ulps, error / std::abs(w) / kUlp);
        if (error > 0) worst.of_tolerance = std::max(worst.of_tolerance, allowed > 0 ? error / allowed : INFINITY);
        if (error > allowed)
            return QStringLiteral("element %1: got %2, expected %3 (error %4, allowed %5)")
                .arg(i)
                .arg(g, 0, 'g', 9)
                .arg(w, 0, 'g', 9)
                .arg(error, 0, 'g', 3)
                .arg(allowed, 0, 'g', 3);
    }
    return {};
}
QString compare(const float* got, const float* want, int64_t n, double rtol, double atol, const std::string& key) {
    return compare(got, want, n, rtol, std::vector<double>(static_cast<size_t>(n), atol), key);
}

#define EXPECT_CLOSE(call, context)                                                     \
    do {                                                                                \
        const QString failure_ = (call);                                                \
        if (!failure_.isEmpty()) QFAIL(qPrintable(QString(context) + ": " + failure_)); \
    } while (false)

QString shape(const char* op, int64_t rows, int64_t n) { return QStringLiteral("%1 rows=%2 n=%3").arg(op).arg(rows).arg(n); }

const KernelLevel& level_of_row() {
    QFETCH(int, level);
    return kernel_levels()[static_cast<size_t>(level)];
}
std::string key(const char* op, const KernelLevel& level) { return std::string(op) + " " + level.name; }
std::string key(const char* op, Isa isa) { return std::string(op) + " " + std::string(isa_name(isa)); }

// `count` cache rows of `width` values of KvType `type`, random in [-1, 1]; `rounded` gets the
// values as the rows hold them (rounded to f16 / bf16).
std::vector<std::byte> kv_rows(int type, int64_t count, int64_t width, uint32_t seed, std::vector<float>& rounded) {
    const auto values = random_floats(static_cast<size_t>(count * width), -1, 1, seed);
    std::vector<std::byte> rows(values.size() * (type == KvF32 ? 4 : 2));
    rounded.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
        if (type == KvF32) {
            std::memcpy(rows.data() + 4 * i, &values[i], 4);
            rounded[i] = values[i];
        } else {
            const uint16_t bits = type == KvF16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
            std::memcpy(rows.data() + 2 * i, &bits, 2);
            rounded[i] = type == KvF16 ? f16_to_f32(bits) : bf16_to_f32(bits);
        }
    }
    return rows;
}

// Restores the active level when a test that changes it ends, even on failure.
struct ActiveLevelGuard {
    Isa saved = active_isa();
    ~ActiveLevelGuard() { set_active_isa(saved); }
};

}  // namespace

class KernelOpsTest : public QObject {
    Q_OBJECT

private:
    static void level_rows() {
        QTest::addColumn<int>("level");
        for (size_t i = 0; i < kernel_levels().size(); ++i) QTest::newRow(kernel_levels()[i].name.c_str()) << static_cast<int>(i);
    }

private slots:
    void initTestCase() {
        qInfo("instruction-set levels covered: %s", oxinfer::test::kernel_level_names().c_str());
    }

    void cleanupTestCase() {
        for (const auto& [name, worst] : worst_errors())
            qInfo("worst error %-24s %9.2f ulp, %4.0f%% of the tolerance", name.c_str(), worst.ulps, 100 * worst.of_tolerance);
    }

    // ---- every level against the scalar table ------------------------------------------------

    void rms_norm_data() { level_rows(); }
    void rms_norm() {
        // Both levels sum squares in double (differing only in order, ~1e-16) and then do the
        // same float multiplies, so the result may differ only where 1/sqrt rounds differently:
        // one ulp of the scale, plus one ulp for each of the two products it feeds -> 3 ulp.
        const KernelLevel& level = level_of_row();
        const OpsTable& scalar = ops_table(Isa::Scalar);
        const OpsTable& simd = (*level.ops);
        for (int64_t rows : {1, 3})
            for (int64_t n : kSizes)
                for (int variant = 0; variant < 3; ++variant) {
                    const auto x = random_floats(static_cast<size_t>(rows * n), -4, 4, 1);
                    const auto w = random_floats(static_cast<size_t>(n), -2, 2, 2);
                    const float* weight = variant == 0 ? nullptr : w.data();
                    std::vector<float> want(x.size()), got(x.size());
                    scalar.rms_norm(x.data(), weight, want.data(), rows, n, 1e-6f, variant == 2);
                    simd.rms_norm(x.data(), weight, got.data(), rows, n, 1e-6f, variant == 2);
                    EXPECT_CLOSE(compare(got.data(), want.data(), rows * n, 3 * kUlp, 0.0, key("rms_norm", level)),
                                 shape("rms_norm", rows, n) + QStringLiteral(" variant %1").arg(variant));
                    // in place
                    std::vector<float> inplace = x;
                    simd.rms_norm(inplace.data(), weight, inplace.data(), rows, n, 1e-6f, variant == 2);
                    QCOMPARE(std::memcmp(inplace.data(), got.data(), got.size() * 4), 0);
                }
    }

    void layer_norm_data() { level_rows(); }
    void layer_norm() {
        // Every level runs the scalar layer_norm today (it is not on the decoding path of the LLMs);
        // the check keeps that honest if a level overrides it: 4 ulp covers a re-ordered double
        // sum (no effect) and fused multiply-adds on the three float operations per element.
        const KernelLevel& level = level_of_row();
        for (int64_t rows : {1, 2})
            for (int64_t n : kSizes) {
                const auto x = random_floats(static_cast<size_t>(rows * n), -3, 5, 3);
                const auto w = random_floats(static_cast<size_t>(n), -2, 2, 4);
                const auto b = random_floats(static_cast<size_t>(n), -1, 1, 5);
                std::vector<float> want(x.size()), got(x.size());
                ops_table(Isa::Scalar).layer_norm(x.data(), w.data(), b.data(), want.data(), rows, n, 1e-5f);
                (*level.ops).layer_norm(x.data(), w.data(), b.data(), got.data(), rows, n, 1e-5f);
                EXPECT_CLOSE(compare(got.data(), want.data(), rows * n, 4 * kUlp, 1e-6, key("layer_norm", level)),
                             shape("layer_norm", rows, n));
            }
    }

    void softmax_data() { level_rows(); }
    void softmax() {
        // exp differs by at most 1.4 ulp (SIMD polynomial) + 0.5 ulp (libm) per term; the double
        // sum of terms that are each within ~2 ulp is itself within ~2 ulp; the final product adds
        // half an ulp on each side: < 5 ulp, allowed 6.
        const KernelLevel& level = level_of_row();
        for (int64_t rows : {1, 4})
            for (int64_t n : kSizes) {
                const auto x = random_floats(static_cast<size_t>(rows * n), -20, 20, 6);
                std::vector<float> want = x, got = x;
                ops_table(Isa::Scalar).softmax(want.data(), rows, n);
                (*level.ops).softmax(got.data(), rows, n);
                EXPECT_CLOSE(compare(got.data(), want.data(), rows * n, 6 * kUlp, 0.0, key("softmax", level)), shape("softmax", rows, n));
            }
    }

    void rope_data() { level_rows(); }
    void rope() {
        // Every level multiplies and adds exactly as the scalar code (a·c - b·s, b·c + a·s), so on
        // x86 the results are bit-identical. A compiler may fuse the scalar code into an FMA on
        // targets where FMA is baseline (AArch64), which moves each output by at most one rounding
        // of a product: |error| <= 2^-24 (|a| + |b|) max(|c|, |s|), allowed twice that.
        const KernelLevel& level = level_of_row();
        struct Case {
            int64_t heads, head_dim, rotary_dim;
        };
        const Case cases[] = {{1, 2, 2}, {1, 8, 8}, {4, 64, 64}, {2, 128, 64}, {3, 80, 40}, {2, 96, 34}, {1, 512, 128}, {2, 6, 6}};
        for (const Case& c : cases)
            for (RopeLayout layout : {RopeLayout::SplitHalf, RopeLayout::Interleaved})
                for (int64_t tokens : {1, 3}) {
                    const int64_t half = c.rotary_dim / 2;
                    const auto x = random_floats(static_cast<size_t>(tokens * c.heads * c.head_dim), -3, 3, 7);
                    std::vector<float> want = x, got = x;
                    for (int64_t t = 0; t < tokens; ++t) {
                        std::vector<float> cos(static_cast<size_t>(half)), sin(static_cast<size_t>(half)), inv_freq(static_cast<size_t>(half));
                        for (int64_t i = 0; i < half; ++i) inv_freq[i] = static_cast<float>(std::pow(10000.0, -2.0 * i / c.rotary_dim));
                        rope_angles(12345 * t + 7, inv_freq.data(), half, 1.0f, cos.data(), sin.data());
                        float* w = want.data() + t * c.heads * c.head_dim;
                        float* g = got.data() + t * c.heads * c.head_dim;
                        ops_table(Isa::Scalar).rope_rotate(w, c.heads, c.head_dim, c.rotary_dim, cos.data(), sin.data(), layout);
                        (*level.ops).rope_rotate(g, c.heads, c.head_dim, c.rotary_dim, cos.data(), sin.data(), layout);
                    }
                    std::vector<double> atol(x.size());
                    for (size_t i = 0; i < x.size(); ++i) atol[i] = 2 * 0x1p-24 * 6.0;  // |a| + |b| <= 6
                    EXPECT_CLOSE(compare(got.data(), want.data(), static_cast<int64_t>(x.size()), 0.0, atol, key("rope", level)),
                                 QStringLiteral("rope heads=%1 head_dim=%2 rotary=%3 layout=%4 tokens=%5")
                                     .arg(c.heads).arg(c.head_dim).arg(c.rotary_dim).arg(int(layout)).arg(tokens));
                }
    }

    void activations_data() { level_rows(); }
    void activations() {
        // SiLU and GELU-tanh: both levels compute the same float argument of exp; exp differs by
        // <= 1.4 ulp (SIMD) + 0.5 ulp (libm), 1 + e and the division add half an ulp each side:
        // <= 4 ulp, allowed 5. GELU-erf: the NR erfc fit is 1.05e-7 relative (0.9 ulp) and is
        // evaluated with two exps (1.4 ulp each), a division and a few products (~2 ulp), against
        // libm's erfcf (~1 ulp): allowed 8 ulp. Softcap: Cephes tanh 2.2 ulp + libm 1 ulp + the
        // division and product: allowed 6 ulp. Where exp underflows both sides are below 1e-30:
        // an absolute 1e-30 covers the denormal range, where ulps are meaningless.
        const KernelLevel& level = level_of_row();
        const OpsTable& scalar = ops_table(Isa::Scalar);
        const OpsTable& simd = (*level.ops);
        for (int64_t n : kSizes) {
            const auto x = activation_inputs(static_cast<size_t>(n), -12, 12, 8);
            const auto up = random_floats(static_cast<size_t>(n), -3, 3, 9);
            std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
            const auto check = [&](const char* op, double ulps) {
                return compare(got.data(), want.data(), n, ulps * kUlp, 1e-30, key(op, level));
            };
            scalar.silu(x.data(), want.data(), n);
            simd.silu(x.data(), got.data(), n);
            EXPECT_CLOSE(check("silu", 5), shape("silu", 1, n));
            scalar.gelu_tanh(x.data(), want.data(), n);
            simd.gelu_tanh(x.data(), got.data(), n);
            EXPECT_CLOSE(check("gelu_tanh", 5), shape("gelu_tanh", 1, n));
            scalar.gelu_erf(x.data(), want.data(), n);
            simd.gelu_erf(x.data(), got.data(), n);
            EXPECT_CLOSE(check("gelu_erf", 8), shape("gelu_erf", 1, n));
            // gated products: one more rounded product on each side
            scalar.swiglu(x.data(), up.data(), want.data(), n);
            simd.swiglu(x.data(), up.data(), got.data(), n);
            EXPECT_CLOSE(check("swiglu", 6), shape("swiglu", 1, n));
            scalar.geglu_tanh(x.data(), up.data(), want.data(), n);
            simd.geglu_tanh(x.data(), up.data(), got.data(), n);
            EXPECT_CLOSE(check("geglu_tanh", 6), shape("geglu_tanh", 1, n));
            // in place
            std::vector<float> inplace = x;
            simd.silu(inplace.data(), inplace.data(), n);
            simd.silu(x.data(), got.data(), n);
            QCOMPARE(std::memcmp(inplace.data(), got.data(), got.size() * 4), 0);
            for (float cap : {30.0f, 50.0f}) {
                const auto logits = activation_inputs(static_cast<size_t>(n), -300, 300, 10);
                want = logits;
                got = logits;
                scalar.softcap(want.data(), cap, n);
                simd.softcap(got.data(), cap, n);
                EXPECT_CLOSE(check("softcap", 6), shape("softcap", 1, n));
            }
        }
    }

    void elementwise_data() { level_rows(); }
    void elementwise() {
        // One IEEE operation per element on both sides: bit-identical.
        const KernelLevel& level = level_of_row();
        for (int64_t n : kSizes) {
            const auto a = random_floats(static_cast<size_t>(n), -5, 5, 11);
            const auto b = random_floats(static_cast<size_t>(n), -5, 5, 12);
            std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
            ops_table(Isa::Scalar).add(a.data(), b.data(), want.data(), n);
            (*level.ops).add(a.data(), b.data(), got.data(), n);
            QVERIFY2(want == got, qPrintable(shape("add", 1, n)));
            ops_table(Isa::Scalar).mul(a.data(), b.data(), want.data(), n);
            (*level.ops).mul(a.data(), b.data(), got.data(), n);
            QVERIFY2(want == got, qPrintable(shape("mul", 1, n)));
            want = a;
            got = a;
            ops_table(Isa::Scalar).scale(want.data(), 0.37f, n);
            (*level.ops).scale(got.data(), 0.37f, n);
            QVERIFY2(want == got, qPrintable(shape("scale", 1, n)));
        }
    }

    void conversions_data() { level_rows(); }
    void conversions() {
        // Exact by definition: every 16-bit pattern one way, and floats of every magnitude (with
        // halfway cases, overflow, half denormals, infinities and NaNs) the other way.
        const KernelLevel& level = level_of_row();
        const OpsTable& scalar = ops_table(Isa::Scalar);
        const OpsTable& simd = (*level.ops);
        const auto same_float = [](float a, float b) {
            return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b));
        };
        std::vector<uint16_t> all(65536 + 5);  // + 5: a tail that is not a whole vector
        for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
        for (size_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
        for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{17}, static_cast<int64_t>(all.size())}) {
            std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
            scalar.f16_to_f32_row(all.data(), want.data(), n);
            simd.f16_to_f32_row(all.data(), got.data(), n);
            for (int64_t i = 0; i < n; ++i)
                QVERIFY2(same_float(got[i], want[i]), qPrintable(QStringLiteral("f16 0x%1").arg(all[i], 4, 16, QChar('0'))));
            scalar.bf16_to_f32_row(all.data(), want.data(), n);
            simd.bf16_to_f32_row(all.data(), got.data(), n);
            for (int64_t i = 0; i < n; ++i)
                QVERIFY2(same_float(got[i], want[i]), qPrintable(QStringLiteral("bf16 0x%1").arg(all[i], 4, 16, QChar('0'))));
        }
        std::mt19937 rng(13);
        std::vector<float> floats;
        for (int i = 0; i < 20000; ++i) {
            // random sign, exponent and mantissa, plus the exact half-way points of f16 and bf16
            uint32_t bits = static_cast<uint32_t>(rng());
            if (i % 4 == 1) bits = (bits & 0xffffe000u) | 0x1000u;  // f16 tie (when normal in f16)
            if (i % 4 == 2) bits = (bits & 0xffff0000u) | 0x8000u;  // bf16 tie
            if (i % 4 == 3) bits = (bits & 0x807fffffu) | (static_cast<uint32_t>(97 + rng() % 50) << 23);  // |x| in f16's range
            floats.push_back(std::bit_cast<float>(bits));
        }
        for (float special : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 65504.0f, 65520.0f, 65519.996f, 6e-8f, 3e-8f, 1e-40f, 3.4e38f})
            floats.push_back(special);
        const auto n = static_cast<int64_t>(floats.size());
        std::vector<uint16_t> want(floats.size()), got(floats.size());
        scalar.f32_to_f16_row(floats.data(), want.data(), n);
        simd.f32_to_f16_row(floats.data(), got.data(), n);
        for (int64_t i = 0; i < n; ++i)
            QVERIFY2(got[i] == want[i], qPrintable(QStringLiteral("f32 %1 -> f16: got 0x%2, expected 0x%3")
                                                       .arg(floats[i], 0, 'g', 9).arg(got[i], 4, 16, QChar('0')).arg(want[i], 4, 16, QChar('0'))));
        scalar.f32_to_bf16_row(floats.data(), want.data(), n);
        simd.f32_to_bf16_row(floats.data(), got.data(), n);
        for (int64_t i = 0; i < n; ++i)
            QVERIFY2(got[i] == want[i], qPrintable(QStringLiteral("f32 %1 -> bf16: got 0x%2, expected 0x%3")
                                                       .arg(floats[i], 0, 'g', 9).arg(got[i], 4, 16, QChar('0')).arg(want[i], 4, 16, QChar('0'))));
        for (int64_t count : {1, 5, 9, 15}) {  // short tails write nothing past the end
            std::vector<uint16_t> out(20, 0xabcd);
            simd.f32_to_f16_row(floats.data(), out.data(), count);
            simd.f32_to_bf16_row(floats.data(), out.data(), count);
            for (size_t i = static_cast<size_t>(count); i < out.size(); ++i) QCOMPARE(out[i], uint16_t{0xabcd});
        }
    }

    void attention_loops_data() { level_rows(); }
    void attention_loops() {
        const KernelLevel& level = level_of_row();
        const OpsTable& scalar = ops_table(Isa::Scalar);
        const OpsTable& simd = (*level.ops);
        // exp_sum: per value as softmax's exp (<= 1.9 ulp apart, allowed 3); the double sums of
        // such values are as close.
        for (int64_t n : kSizes) {
            const auto x = random_floats(static_cast<size_t>(n), -30, 2, 14);
            std::vector<float> want = x, got = x;
            const double want_sum = scalar.exp_sum(want.data(), n, 1.5f);
            const double got_sum = simd.exp_sum(got.data(), n, 1.5f);
            EXPECT_CLOSE(compare(got.data(), want.data(), n, 3 * kUlp, 0.0, key("exp_sum", level)), shape("exp_sum", 1, n));
            QVERIFY2(std::abs(got_sum - want_sum) <= 3 * kUlp * want_sum, qPrintable(shape("exp_sum total", 1, n)));
        }
        // kv_dot / kv_axpy over every cache type, rows padded (stride > dim) and odd dims. A float
        // dot product of d terms is within d·2^-24·Σ|q_i k_i| of the exact one whatever the order
        // (Higham's γ_d bound), so two of them are within twice that. Same for the axpy sums.
        for (int type = 0; type < KvTypeCount; ++type)
            for (int64_t dim : {1, 3, 8, 15, 16, 17, 33, 64, 80, 100, 128, 256})
                for (int64_t count : {1, 3, 4, 5, 17, 64}) {
                    const int64_t stride = (dim + 3) * (type == KvF32 ? 4 : 2);
                    const auto q = random_floats(static_cast<size_t>(dim), -1, 1, 15);
                    std::vector<float> rounded;  // the values the cache really holds
                    const std::vector<std::byte> rows = kv_rows(type, count, dim + 3, 16, rounded);
                    const QString context = QStringLiteral("type=%1 dim=%2 count=%3").arg(type).arg(dim).arg(count);
                    std::vector<float> want(static_cast<size_t>(count)), got(static_cast<size_t>(count));
                    scalar.kv_dot[type](q.data(), rows.data(), stride, count, dim, want.data());
                    simd.kv_dot[type](q.data(), rows.data(), stride, count, dim, got.data());
                    std::vector<double> atol(static_cast<size_t>(count));
                    for (int64_t j = 0; j < count; ++j) {
                        double magnitude = 0;
                        for (int64_t i = 0; i < dim; ++i) magnitude += std::abs(q[i] * rounded[j * (dim + 3) + i]);
                        atol[j] = 2.0 * dim * 0x1p-24 * magnitude;
                    }
                    EXPECT_CLOSE(compare(got.data(), want.data(), count, 0.0, atol, key("kv_dot", level)), "kv_dot " + context);

                    const auto weights = random_floats(static_cast<size_t>(count), 0, 1, 17);
                    const auto acc0 = random_floats(static_cast<size_t>(dim), -1, 1, 18);
                    std::vector<float> want_acc = acc0, got_acc = acc0;
                    scalar.kv_axpy[type](weights.data(), rows.data(), stride, count, dim, want_acc.data());
                    simd.kv_axpy[type](weights.data(), rows.data(), stride, count, dim, got_acc.data());
                    std::vector<double> acc_atol(static_cast<size_t>(dim));
                    for (int64_t i = 0; i < dim; ++i) {
                        double magnitude = std::abs(acc0[i]);
                        for (int64_t j = 0; j < count; ++j) magnitude += std::abs(weights[j] * rounded[j * (dim + 3) + i]);
                        acc_atol[i] = 2.0 * (count + 1) * 0x1p-24 * magnitude;
                    }
                    EXPECT_CLOSE(compare(got_acc.data(), want_acc.data(), dim, 0.0, acc_atol, key("kv_axpy", level)), "kv_axpy " + context);
                }
    }

    // kv_dot_group / kv_axpy_group (decoding: the query heads of one or two kv heads over each row
    // at once) against the scalar kv_dot / kv_axpy query by query, with the same bounds; rows
    // padded (stride > dim), the second kv head's rows after the first's (head_stride), scores and
    // accumulators at a larger stride whose padding must stay as it was, with and without rows to
    // read on into (`next`, which only changes what is asked for ahead). A level without them
    // decodes query by query; the AVX2 level must have them.
    void attention_group_loops_data() { level_rows(); }
    void attention_group_loops() {
        const KernelLevel& level = level_of_row();
        const OpsTable& scalar = ops_table(Isa::Scalar);
        const OpsTable& simd = (*level.ops);
        if (level.isa == Isa::Avx2)
            for (int type = 0; type < KvTypeCount; ++type) QVERIFY(simd.kv_dot_group[type] && simd.kv_axpy_group[type]);
        for (int type = 0; type < KvTypeCount; ++type) {
            if (!simd.kv_dot_group[type] || !simd.kv_axpy_group[type]) continue;
            for (int64_t dim : {3, 8, 16, 17, 33, 64, 100, 128})
                for (int64_t count : {1, 5, 64})
                    for (int64_t queries : {1, 2, 3, 4, 5, 8})
                        for (int64_t heads : {1, 2}) {
                            const int64_t row_values = dim + 3, stride = row_values * (type == KvF32 ? 4 : 2), ld = count + 2, acc_stride = dim + 2;
                            const int64_t head_rows = count + 1, head_stride = head_rows * stride, rows = heads * queries;
                            std::vector<float> rounded, ignored;
                            const std::vector<std::byte> keys = kv_rows(type, heads * head_rows, row_values, 22, rounded);
                            const std::vector<std::byte> next = kv_rows(type, (heads - 1) * head_rows + 3, row_values, 23, ignored);
                            const auto q = random_floats(static_cast<size_t>(rows * dim), -1, 1, 24);
                            const auto weights = random_floats(static_cast<size_t>(rows * ld), 0, 1, 25);
                            const auto acc0 = random_floats(static_cast<size_t>(rows * acc_stride), -1, 1, 26);
                            const QString context =
                                QStringLiteral("type=%1 dim=%2 count=%3 queries=%4 heads=%5").arg(type).arg(dim).arg(count).arg(queries).arg(heads);
                            // The rounded value i of row j of kv head h.
                            const auto value = [&](int64_t h, int64_t j, int64_t i) { return rounded[(h * head_rows + j) * row_values + i]; };
                            for (const bool with_next : {false, true}) {
                                const std::byte* then = with_next ? next.data() : nullptr;
                                const int64_t then_count = with_next ? 3 : 0;
                                std::vector<float> got(static_cast<size_t>(rows * ld), -7.0f), want(got.size(), -7.0f);
                                simd.kv_dot_group[type](q.data(), queries, heads, keys.data(), head_stride, stride, count, dim, got.data(), ld, then,
                                                        then_count);
                                std::vector<double> atol(got.size());
                                for (int64_t r = 0; r < rows; ++r) {
                                    const int64_t h = r / queries;
                                    scalar.kv_dot[type](q.data() + r * dim, keys.data() + h * head_stride, stride, count, dim, want.data() + r * ld);
                                    for (int64_t j = 0; j < count; ++j) {
                                        double magnitude = 0;
                                        for (int64_t i = 0; i < dim; ++i) magnitude += std::abs(q[r * dim + i] * value(h, j, i));
                                        atol[r * ld + j] = 2.0 * dim * 0x1p-24 * magnitude;
                                    }
                                }
                                EXPECT_CLOSE(compare(got.data(), want.data(), rows * ld, 0.0, atol, key("kv_dot_group", level)), "kv_dot_group " + context);

                                std::vector<float> got_acc = acc0, want_acc = acc0;
                                simd.kv_axpy_group[type](weights.data(), ld, queries, heads, keys.data(), head_stride, stride, count, dim, got_acc.data(),
                                                         acc_stride, then, then_count);
                                std::vector<double> acc_atol(acc0.size());
                                for (int64_t r = 0; r < rows; ++r) {
                                    const int64_t h = r / queries;
                                    scalar.kv_axpy[type](weights.data() + r * ld, keys.data() + h * head_stride, stride, count, dim,
                                                         want_acc.data() + r * acc_stride);
                                    for (int64_t i = 0; i < dim; ++i) {
                                        double magnitude = std::abs(acc0[r * acc_stride + i]);
                                        for (int64_t j = 0; j < count; ++j) magnitude += std::abs(weights[r * ld + j] * value(h, j, i));
                                        acc_atol[r * acc_stride + i] = 2.0 * (count + 1) * 0x1p-24 * magnitude;
                                    }
                                }
                                EXPECT_CLOSE(compare(got_acc.data(), want_acc.data(), rows * acc_stride, 0.0, acc_atol, key("kv_axpy_group", level)),
                                             "kv_axpy_group " + context);
                            }
                        }
        }
    }

    // ---- the scalar reference against independent double-precision loops ----------------------

    void reference_rms_norm_layer_norm() {
        const OpsTable& scalar = ops_table(Isa::Scalar);
        for (int64_t n : kSizes) {
            const auto x = random_floats(static_cast<size_t>(2 * n), -3, 5, 19);
            const auto w = random_floats(static_cast<size_t>(n), -2, 2, 20);
            const auto b = random_floats(static_cast<size_t>(n), -1, 1, 21);
            std::vector<float> got(x.size());
            std::vector<float> want(x.size());
            // RMSNorm with (1 + w): the exact double result rounded once, against a scale rounded
            // to float (0.5 ulp) and two float products (0.5 ulp each): < 2 ulp.
            scalar.rms_norm(x.data(), w.data(), got.data(), 2, n, 1e-6f, true);
            for (int64_t r = 0; r < 2; ++r) {
                double squares = 0;
                for (int64_t i = 0; i < n; ++i) squares += double(x[r * n + i]) * x[r * n + i];
                const double inv = 1.0 / std::sqrt(squares / n + 1e-6);
                for (int64_t i = 0; i < n; ++i) want[r * n + i] = static_cast<float>(x[r * n + i] * inv * (1.0 + w[i]));
            }
            EXPECT_CLOSE(compare(got.data(), want.data(), 2 * n, 2 * kUlp, 0.0, "rms_norm reference"), shape("rms_norm", 2, n));
            // LayerNorm: x - mean is rounded in float (half an ulp of |x| <= 5, scaled by 1/std
            // and |w| <= 2, i.e. <= 2^-24·5·inv·2 absolute), then three float operations (2 ulp).
            scalar.layer_norm(x.data(), w.data(), b.data(), got.data(), 2, n, 1e-5f);
            std::vector<double> atol(x.size());
            for (int64_t r = 0; r < 2; ++r) {
                double sum = 0;
                for (int64_t i = 0; i < n; ++i) sum += x[r * n + i];
                const double mean = sum / n;
                double var = 0;
                for (int64_t i = 0; i < n; ++i) var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
                const double inv = 1.0 / std::sqrt(var / n + 1e-5);
                for (int64_t i = 0; i < n; ++i) {
                    want[r * n + i] = static_cast<float>((x[r * n + i] - mean) * inv * w[i] + b[i]);
                    atol[r * n + i] = 0x1p-24 * (5 + std::abs(mean)) * inv * 2 + 2 * kUlp * (std::abs((x[r * n + i] - mean) * inv * w[i]) + 1);
                }
            }
            EXPECT_CLOSE(compare(got.data(), want.data(), 2 * n, 0.0, atol, "layer_norm reference"), shape("layer_norm", 2, n));
        }
    }

    void reference_softmax() {
        // x - max is rounded in float before exp (as in torch): half an ulp of |x - max| becomes a
        // relative error of 2^-24·|x - max| in the term; the sum mixes such terms. So each output
        // is allowed (|x_i - max| + max_j |x_j - max|)·2^-24 plus 3 ulp for expf, sum and product.
        for (int64_t n : kSizes) {
            const auto x = random_floats(static_cast<size_t>(n), -15, 15, 22);
            std::vector<float> got = x;
            ops_table(Isa::Scalar).softmax(got.data(), 1, n);
            const double max = *std::max_element(x.begin(), x.end());
            double sum = 0, spread = 0;
            for (float v : x) {
                sum += std::exp(v - max);
                spread = std::max(spread, max - v);
            }
            std::vector<float> want(x.size());
            std::vector<double> atol(x.size());
            for (int64_t i = 0; i < n; ++i) {
                const double p = std::exp(x[i] - max) / sum;
                want[i] = static_cast<float>(p);
                atol[i] = p * ((max - x[i] + spread) * 0x1p-24 + 3 * kUlp);
            }
            EXPECT_CLOSE(compare(got.data(), want.data(), n, 0.0, atol, "softmax reference"), shape("softmax", 1, n));
        }
    }

    void reference_rope() {
        // The rope() entry at every level against double: the angle is the float product (as HF),
        // cos/sin of it in double. cosf/sinf are within 1 ulp, then the attention factor, two
        // products and a sum: |error| <= 2^-24·5·(|a| + |b|)·factor; allowed 6.
        ActiveLevelGuard guard;
        for (Isa isa : supported_isas()) {
            set_active_isa(isa);
            for (RopeLayout layout : {RopeLayout::SplitHalf, RopeLayout::Interleaved})
                for (int64_t rotary_dim : {64, 32, 18}) {
                    const int64_t tokens = 4, heads = 3, head_dim = 64, half = rotary_dim / 2;
                    const float factor = rotary_dim == 32 ? 1.25f : 1.0f;
                    const auto x = random_floats(static_cast<size_t>(tokens * heads * head_dim), -2, 2, 23);
                    const int64_t positions[tokens] = {0, 1, 4097, 131071};
                    std::vector<float> inv_freq(static_cast<size_t>(half));
                    for (int64_t i = 0; i < half; ++i) inv_freq[i] = static_cast<float>(1.0 / std::pow(500000.0, 2.0 * i / rotary_dim));
                    std::vector<float> got = x;
                    kernels::rope(got.data(), tokens, heads, head_dim, rotary_dim, positions, inv_freq.data(), layout, factor);
                    // From the angles of all the tokens computed at once (a model's step): the same arithmetic.
                    std::vector<float> cos(static_cast<size_t>(tokens * half)), sin(cos.size());
                    kernels::rope_angles(positions, tokens, inv_freq.data(), rotary_dim, cos.data(), sin.data(), factor);
                    std::vector<float> from_angles = x;
                    kernels::rope(from_angles.data(), tokens, heads, head_dim, rotary_dim, cos.data(), sin.data(), layout);
                    QVERIFY(from_angles == got);
                    std::vector<float> want = x;
                    std::vector<double> atol(x.size(), 0.0);
                    for (int64_t t = 0; t < tokens; ++t)
                        for (int64_t h = 0; h < heads; ++h) {
                            const float* in = x.data() + (t * heads + h) * head_dim;
                            float* out = want.data() + (t * heads + h) * head_dim;
                            double* tol = atol.data() + (t * heads + h) * head_dim;
                            for (int64_t i = 0; i < half; ++i) {
                                const int64_t a = layout == RopeLayout::SplitHalf ? i : 2 * i;
                                const int64_t b = layout == RopeLayout::SplitHalf ? i + half : 2 * i + 1;
                                const float angle = static_cast<float>(positions[t]) * inv_freq[i];
                                const double c = std::cos(double(angle)) * factor, s = std::sin(double(angle)) * factor;
                                out[a] = static_cast<float>(in[a] * c - in[b] * s);
                                out[b] = static_cast<float>(in[b] * c + in[a] * s);
                                tol[a] = tol[b] = 6 * 0x1p-24 * (std::abs(in[a]) + std::abs(in[b])) * factor;
                            }
                        }
                    EXPECT_CLOSE(compare(got.data(), want.data(), static_cast<int64_t>(x.size()), 0.0, atol, key("rope reference", isa)),
                                 QStringLiteral("rope %1 layout=%2 rotary=%3").arg(isa_name(isa).data()).arg(int(layout)).arg(rotary_dim));
                }
        }
    }

    void reference_activations() {
        // The scalar activations against double math on the same float input. SiLU: expf (1 ulp),
        // 1 + e and the division: 2 ulp, allowed 3. GELU-tanh: u carries five float roundings
        // (two constants, three operations), so exp(-2u) carries 5·2^-24·|2u| relative error,
        // damped by e/(1+e) in the result; plus 3 ulp. GELU-erf: z = x·(1/√2)_float carries two
        // roundings (2·2^-24), which erfc amplifies by |z·erfc'(-z)/erfc(-z)| (~2z² in the
        // negative tail); plus 3 ulp. Softcap: x/cap rounds (tanh damps it), tanhf and the
        // product: 3 ulp.
        const OpsTable& scalar = ops_table(Isa::Scalar);
        const int64_t n = 20000;
        const auto x = activation_inputs(static_cast<size_t>(n), -10, 10, 24);
        std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
        std::vector<double> atol(static_cast<size_t>(n));

        scalar.silu(x.data(), got.data(), n);
        for (int64_t i = 0; i < n; ++i) want[i] = static_cast<float>(x[i] / (1.0 + std::exp(-double(x[i]))));
        EXPECT_CLOSE(compare(got.data(), want.data(), n, 3 * kUlp, 1e-37, "silu reference"), "silu");

        scalar.gelu_tanh(x.data(), got.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            const double v = x[i];
            const double u = std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v);
            // 1 + tanh(u) cancels even in double for u < -19: use e^2u / (1 + e^2u) there.
            const double y = u >= 0 ? 0.5 * v * (1.0 + std::tanh(u)) : v * std::exp(2 * u) / (1 + std::exp(2 * u));
            const double e = std::exp(-2.0 * u);
            want[i] = static_cast<float>(y);
            atol[i] = std::abs(y) * (3 * kUlp + (std::isinf(e) ? 0.0 : e / (1 + e)) * 5 * 0x1p-24 * std::abs(2 * u)) + 1e-37;
        }
        EXPECT_CLOSE(compare(got.data(), want.data(), n, 0.0, atol, "gelu_tanh reference"), "gelu_tanh");

        scalar.gelu_erf(x.data(), got.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            const double z = x[i] / std::sqrt(2.0);
            const double y = 0.5 * x[i] * std::erfc(-z);
            const double amplification = std::erfc(-z) > 0 ? std::abs(z) * 2 / std::sqrt(std::numbers::pi) * std::exp(-z * z) / std::erfc(-z) : 0;
            want[i] = static_cast<float>(y);
            atol[i] = std::abs(y) * (3 * kUlp + amplification * 2 * 0x1p-24) + 1e-37;
        }
        EXPECT_CLOSE(compare(got.data(), want.data(), n, 0.0, atol, "gelu_erf reference"), "gelu_erf");

        std::vector<float> logits = activation_inputs(static_cast<size_t>(n), -200, 200, 25);
        got = logits;
        scalar.softcap(got.data(), 30.0f, n);
        for (int64_t i = 0; i < n; ++i) want[i] = static_cast<float>(30.0 * std::tanh(logits[i] / 30.0));
        EXPECT_CLOSE(compare(got.data(), want.data(), n, 3 * kUlp, 0.0, "softcap reference"), "softcap");
    }

    // ---- level-independent ops -------------------------------------------------------------------

    void argmax_top_k() {
        const float nan = NAN;
        std::vector<float> x = {nan, 1.0f, 3.0f, -INFINITY, 3.0f, nan, 2.0f, 3.0f};
        QCOMPARE(kernels::argmax(x.data(), static_cast<int64_t>(x.size())), int64_t{2});  // first of the ties, NaN skipped
        const std::vector<float> all_nan = {nan, nan};
        QCOMPARE(kernels::argmax(all_nan.data(), 2), int64_t{0});
        QCOMPARE(kernels::argmax(x.data(), 1), int64_t{0});
        int32_t ids[8];
        float values[8];
        QCOMPARE(kernels::top_k(x.data(), 8, 8, ids, values), int64_t{8});
        const int32_t expected_ids[8] = {2, 4, 7, 6, 1, 3, 0, 5};  // ties by index, -inf before NaNs
        for (int i = 0; i < 8; ++i) QCOMPARE(ids[i], expected_ids[i]);
        QCOMPARE(values[0], 3.0f);
        QCOMPARE(kernels::top_k(x.data(), 8, 20, ids, nullptr), int64_t{8});
        QCOMPARE(kernels::top_k(x.data(), 8, 0, ids, values), int64_t{0});
        // Random vocabularies with many ties, against a stable sort.
        std::mt19937 rng(26);
        for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{1000}, int64_t{262144}}) {
            std::vector<float> logits(static_cast<size_t>(n));
            for (float& v : logits) v = static_cast<float>(static_cast<int>(rng() % 500)) * 0.25f;
            std::vector<int32_t> order(static_cast<size_t>(n));
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
            QCOMPARE(kernels::argmax(logits.data(), n), int64_t{order[0]});
            const int64_t k = std::min<int64_t>(n, 50);
            std::vector<int32_t> top(static_cast<size_t>(k));
            std::vector<float> top_values(static_cast<size_t>(k));
            QCOMPARE(kernels::top_k(logits.data(), n, k, top.data(), top_values.data()), k);
            for (int64_t i = 0; i < k; ++i) {
                QCOMPARE(top[i], order[i]);
                QCOMPARE(top_values[i], logits[order[i]]);
            }
        }
    }

    void embedding_rows() {
        // f32/f16/bf16 fast paths and ggml block types, each against convert_to_f32 of the row; Q8_0
        // also from the interleaved layout (one group of 8 rows, then 2 plain rows).
        const int64_t rows = 10, cols = 64;
        const auto values = random_floats(static_cast<size_t>(rows * cols), -2, 2, 27);
        const int32_t ids[] = {3, 0, 9, 3};
        for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0}) {
            const int64_t row_bytes = static_cast<int64_t>(*dtype_bytes(type, cols));
            std::vector<std::byte> table(static_cast<size_t>(rows * row_bytes));
            std::mt19937 rng(28);
            for (std::byte& b : table) b = static_cast<std::byte>(rng());
            if (type == DType::F32) std::memcpy(table.data(), values.data(), table.size());
            if (type == DType::F16 || type == DType::BF16)
                for (size_t i = 0; i < values.size(); ++i) {
                    const uint16_t bits = type == DType::F16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
                    std::memcpy(table.data() + 2 * i, &bits, 2);
                }
            if (type == DType::Q8_0 || type == DType::Q4_0)  // sane block scales (f16 at the start of each block)
                for (int64_t block = 0; block < rows * cols / 32; ++block) {
                    const uint16_t scale = f32_to_f16(0.01f * static_cast<float>(block + 1));
                    std::memcpy(table.data() + block * (row_bytes / 2), &scale, 2);
                }
            const kernels::WeightMatrix plain{type, rows, cols, table.data(), row_bytes};
            std::vector<std::byte> interleaved_bytes(table.size());
            ThreadPool pool(1);
            const kernels::WeightMatrix interleaved =
                type == DType::Q8_0 ? kernels::interleave_rows(plain, kernels::kInterleavedRows, interleaved_bytes.data(), pool) : plain;
            ActiveLevelGuard guard;
            for (Isa isa : supported_isas())
                for (const kernels::WeightMatrix& matrix : {plain, interleaved}) {
                    set_active_isa(isa);
                    std::vector<float> got(std::size(ids) * cols);
                    kernels::embedding_rows(matrix, cols, ids, std::size(ids), got.data());
                    for (size_t i = 0; i < std::size(ids); ++i) {
                        std::vector<float> want(static_cast<size_t>(cols));
                        convert_to_f32(type, table.data() + ids[i] * row_bytes, want.data(), cols);
                        QVERIFY2(std::memcmp(want.data(), got.data() + i * cols, want.size() * 4) == 0,
                                 qPrintable(QStringLiteral("%1 at %2, id %3").arg(dtype_name(type).data()).arg(isa_name(isa).data()).arg(ids[i])));
                    }
                }
        }
        const int32_t bad[] = {10};
        std::vector<float> out(cols);
        std::vector<std::byte> table(static_cast<size_t>(rows * cols * 4));
        OXINFER_EXPECT_ERROR(kernels::embedding_rows({DType::F32, rows, cols, table.data(), cols * 4}, cols, bad, 1, out.data()),
                             std::string("token id 10 is outside"));
        OXINFER_EXPECT_ERROR(kernels::embedding_rows({DType::IQ2_XXS, rows, 256, table.data(), 66}, 256, ids, 1, out.data()),
                             std::string("unsupported tensor type"));
    }

    void dispatch_follows_active_level() {
        // The entry points of ops.h must run the active level's table: bit-identical to calling
        // that table. SiLU's SIMD exp differs from libm in the last bit for some inputs, so with
        // more than one level the outputs also show that the levels really differ.
        ActiveLevelGuard guard;
        const int64_t n = 4096 + 3;
        const auto x = random_floats(static_cast<size_t>(n), -8, 8, 29);
        std::vector<std::vector<float>> outputs;
        for (Isa isa : supported_isas()) {
            set_active_isa(isa);
            QCOMPARE(active_isa(), isa);
            std::vector<float> via_entry(static_cast<size_t>(n)), via_table(static_cast<size_t>(n));
            kernels::rms_norm(x.data(), nullptr, via_entry.data(), 1, n, 1e-6f);
            ops_table(isa).rms_norm(x.data(), nullptr, via_table.data(), 1, n, 1e-6f, false);
            QVERIFY(std::memcmp(via_entry.data(), via_table.data(), via_entry.size() * 4) == 0);
            kernels::silu(x.data(), via_entry.data(), n);
            ops_table(isa).silu(x.data(), via_table.data(), n);
            QVERIFY(std::memcmp(via_entry.data(), via_table.data(), via_entry.size() * 4) == 0);
            outputs.push_back(via_entry);
        }
        if (outputs.size() > 1) QVERIFY(outputs.front() != outputs.back());
        for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16, Isa::Neon})
            if (!isa_supported(isa)) {
                OXINFER_EXPECT_ERROR(ops_table(isa), std::string("not available"));
                OXINFER_EXPECT_ERROR(set_active_isa(isa), std::string("does not support"));
            }
    }

    void bad_arguments() {
        std::vector<float> x(16);
        const int64_t position = 0;
        const float inv_freq[8] = {};
        OXINFER_EXPECT_ERROR(kernels::rope(x.data(), 1, 1, 16, 7, &position, inv_freq, RopeLayout::SplitHalf), std::string("must be even"));
        OXINFER_EXPECT_ERROR(kernels::rope(x.data(), 1, 1, 16, 18, &position, inv_freq, RopeLayout::SplitHalf), std::string("at most head_dim"));
        // rotary_dim 0: nothing to rotate
        const std::vector<float> before = x;
        kernels::rope(x.data(), 1, 1, 16, 0, &position, inv_freq, RopeLayout::Interleaved);
        QVERIFY(x == before);
    }
};

QTEST_APPLESS_MAIN(KernelOpsTest)
#include "test_kernel_ops.moc"
