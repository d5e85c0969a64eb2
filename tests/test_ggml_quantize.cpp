// Quantisation to ggml blocks (formats/ggml_quantize.h), checked by decoding with the dequantiser
// that test_ggml_blocks proves bit-exact against an independent numpy reference: every value must
// come back within the error bound its format allows, and exactly representable values exactly.

#include "formats/ggml_quantize.h"
#include "test_support.h"

#include <oxinfer/dtype.h>
#include <oxinfer/error.h>

#include <QObject>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace {

std::vector<float> round_trip(oxinfer::DType type, const std::vector<float>& x) {
    std::vector<std::byte> blocks(*oxinfer::dtype_bytes(type, x.size()));
    oxinfer::quantize_row(type, x.data(), blocks.data(), static_cast<int64_t>(x.size()));
    std::vector<float> y(x.size());
    oxinfer::convert_to_f32(type, blocks.data(), y.data(), static_cast<int64_t>(x.size()));
    return y;
}

std::vector<float> gaussian(size_t n, unsigned seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

double rms(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
    return std::sqrt(s / static_cast<double>(a.size()));
}

}  // namespace

class GgmlQuantizeTest : public QObject {
    Q_OBJECT

private slots:
    void q8_0_within_half_a_step() {
        const auto x = gaussian(32 * 64, 1);
        const auto y = round_trip(oxinfer::DType::Q8_0, x);
        for (size_t b = 0; b < x.size() / 32; ++b) {
            float amax = 0;
            for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[32 * b + i]));
            const float d = amax / 127;
            // Half a step, plus the half-precision rounding of d times the largest code.
            for (size_t i = 32 * b; i < 32 * b + 32; ++i) QVERIFY(std::fabs(x[i] - y[i]) <= 0.5f * d + 127 * d * 0x1p-11f);
        }
    }

    void q4_0_within_a_step() {
        const auto x = gaussian(32 * 64, 2);
        const auto y = round_trip(oxinfer::DType::Q4_0, x);
        for (size_t b = 0; b < x.size() / 32; ++b) {
            float amax = 0;
            for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[32 * b + i]));
            // Steps of amax/8; the code of +amax saturates at 7 when the extreme is negative.
            for (size_t i = 32 * b; i < 32 * b + 32; ++i) QVERIFY(std::fabs(x[i] - y[i]) <= amax / 8 * 1.01f);
        }
        QVERIFY(rms(x, y) < 0.1);
    }

    void q4_k_bounds() {
        for (const float offset : {0.0f, 0.7f, -2.0f}) {  // centred, mostly positive, all negative rows
            auto x = gaussian(256 * 32, 3, 0.5f);
            for (float& v : x) v += offset;
            const auto y = round_trip(oxinfer::DType::Q4_K, x);
            for (size_t s = 0; s < x.size() / 32; ++s) {
                const auto [lo, hi] = std::minmax_element(x.begin() + 32 * s, x.begin() + 32 * s + 32);
                const float range = *hi - std::min(0.0f, *lo);
                // A step of range/15 (half of it from rounding) plus the 6-bit coding of scale and
                // minimum against the block's largest (at most 1/126 of their range each, times 15
                // steps for the scale), and the codes clamped at the ends.
                for (size_t i = 32 * s; i < 32 * s + 32; ++i)
                    QVERIFY2(std::fabs(x[i] - y[i]) <= range / 15 + 0.15f, qPrintable(QString("value %1 -> %2").arg(x[i]).arg(y[i])));
            }
            QVERIFY2(rms(x, y) < 0.05, qPrintable(QString("rms %1").arg(rms(x, y))));
        }
    }

    void zeros_and_representable_values_are_exact() {
        const std::vector<float> zeros(256, 0.0f);
        for (auto type : {oxinfer::DType::Q8_0, oxinfer::DType::Q4_0, oxinfer::DType::Q4_K, oxinfer::DType::BF16, oxinfer::DType::F16})
            QVERIFY(round_trip(type, zeros) == zeros);
        // Integers -127..127 scaled by a power of two: Q8_0 codes them exactly.
        std::vector<float> ints(32 * 8);
        for (size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<float>(static_cast<int>(i % 255) - 127) * 0.25f;
        for (size_t b = 0; b < 8; ++b) ints[32 * b] = -127 * 0.25f;  // each block's amax is 127 steps
        QVERIFY(round_trip(oxinfer::DType::Q8_0, ints) == ints);
    }

    void refuses_what_it_cannot_write() {
        std::vector<float> x(100, 1.0f);
        std::vector<std::byte> out(1024);
        OXINFER_EXPECT_ERROR(oxinfer::quantize_row(oxinfer::DType::Q4_K, x.data(), out.data(), 100),
                             std::string("rows of 100 values are not a whole number of 256-value blocks"));
        OXINFER_EXPECT_ERROR(oxinfer::quantize_row(oxinfer::DType::Q6_K, x.data(), out.data(), 256), std::string("not supported"));
    }
};

QTEST_GUILESS_MAIN(GgmlQuantizeTest)
#include "test_ggml_quantize.moc"
