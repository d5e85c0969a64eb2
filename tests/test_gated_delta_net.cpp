// The Gated DeltaNet kernels (kernels/gated_delta_net.h) against double-precision loops written
// here from the definitions (transformers' torch_recurrent_gated_delta_rule and the causal
// depthwise conv1d): the delta rule for one token and for sequences that cross the 64-token chunk
// (1, 2, 63, 64, 65, 130 and 200 tokens, fed whole and split in pieces that continue the state),
// with grouped and tiled key heads, dk != dv (sizes off the 8- and 16-lane blocks), 1 and 2 threads,
// at every kernel level; the conv with its state across calls of
// 1, 2 and 5 tokens.
//
// Tolerance: 2e-5 relative to the largest output (plus the same on the state). The state is a sum
// of up to ~64 decayed rank-one terms (|k| = 1, |v| <= 1), each rounded in float32; the chunked
// form also solves a 64x64 unit triangular system whose entries are below 1. Measured errors are
// ~1e-6; a wrong index or a missing decay gives errors of order 1.

#include "kernels/gated_delta_net.h"
#include "kernels/thread_pool.h"
#include "kernel_levels.h"

#include <QObject>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace oxinfer;
using namespace oxinfer::kernels;

namespace {

struct Inputs {
    DeltaRuleShape shape;
    int64_t tokens = 0;
    std::vector<float> q, k, v, g, beta, state;
};

void normalise(std::vector<float>& x, int64_t dim, double scale) {
    for (size_t row = 0; row < x.size() / static_cast<size_t>(dim); ++row) {
        double sum = 0;
        for (int64_t i = 0; i < dim; ++i) sum += double(x[row * dim + i]) * x[row * dim + i];
        for (int64_t i = 0; i < dim; ++i) x[row * dim + i] = static_cast<float>(x[row * dim + i] * scale / std::sqrt(sum + 1e-6));
    }
}

Inputs make_inputs(const DeltaRuleShape& shape, int64_t tokens, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f), unit(0.0f, 1.0f);
    Inputs in{shape, tokens, {}, {}, {}, {}, {}, {}};
    const auto fill = [&](std::vector<float>& x, int64_t n, auto& dist) {
        x.resize(static_cast<size_t>(n));
        for (float& value : x) value = dist(rng);
    };
    fill(in.q, tokens * shape.key_heads * shape.key_dim, uniform);
    fill(in.k, tokens * shape.key_heads * shape.key_dim, uniform);
    fill(in.v, tokens * shape.value_heads * shape.value_dim, uniform);
    fill(in.beta, tokens * shape.value_heads, unit);
    // Log-decays from nearly none (the state carried across chunks) to strong.
    in.g.resize(static_cast<size_t>(tokens * shape.value_heads));
    for (float& value : in.g) value = -std::pow(unit(rng), 3.0f) * 2.0f;
    normalise(in.q, shape.key_dim, 1.0 / std::sqrt(double(shape.key_dim)));
    normalise(in.k, shape.key_dim, 1.0);
    fill(in.state, shape.value_heads * shape.key_dim * shape.value_dim, uniform);
    return in;
}

// The token loop in double: out [tokens][Hv][dv]; the state is advanced.
std::vector<double> reference(const Inputs& in, std::vector<double>& state) {
    const DeltaRuleShape& s = in.shape;
    const int64_t group = s.value_heads / s.key_heads, dk = s.key_dim, dv = s.value_dim;
    std::vector<double> out(static_cast<size_t>(in.tokens * s.value_heads * dv));
    for (int64_t t = 0; t < in.tokens; ++t)
        for (int64_t h = 0; h < s.value_heads; ++h) {
            double* S = state.data() + h * dk * dv;
            const int64_t key_head = s.key_heads_tiled ? h % s.key_heads : h / group;
            const float* q = in.q.data() + (t * s.key_heads + key_head) * dk;
            const float* k = in.k.data() + (t * s.key_heads + key_head) * dk;
            const float* v = in.v.data() + (t * s.value_heads + h) * dv;
            const double decay = std::exp(double(in.g[t * s.value_heads + h])), beta = in.beta[t * s.value_heads + h];
            for (int64_t i = 0; i < dk * dv; ++i) S[i] *= decay;
            for (int64_t j = 0; j < dv; ++j) {
                double memory = 0;
                for (int64_t i = 0; i < dk; ++i) memory += S[i * dv + j] * k[i];
                const double u = beta * (v[j] - memory);
                for (int64_t i = 0; i < dk; ++i) S[i * dv + j] += k[i] * u;
            }
            for (int64_t j = 0; j < dv; ++j) {
                double o = 0;
                for (int64_t i = 0; i < dk; ++i) o += S[i * dv + j] * q[i];
                out[static_cast<size_t>((t * s.value_heads + h) * dv + j)] = o;
            }
        }
    return out;
}

double worst_delta_rule_error = 0;  // printed at the end

double relative_error(const std::vector<float>& got, const std::vector<double>& expected) {
    double worst = 0, scale = 1e-30;
    for (size_t i = 0; i < got.size(); ++i) {
        worst = std::max(worst, std::fabs(got[i] - expected[i]));
        scale = std::max(scale, std::fabs(expected[i]));
    }
    return worst / scale;
}

}  // namespace

class GatedDeltaNetTest : public QObject {
    Q_OBJECT

private slots:
    void cleanupTestCase() { qInfo("delta rule: worst relative error %.3g", worst_delta_rule_error); }

    void delta_rule_matches_token_loop_data() {
        QTest::addColumn<int>("tokens");
        QTest::addColumn<int>("piece");  // tokens per call (continuing the state), 0: all in one
        QTest::addColumn<int>("threads");
        for (int tokens : {1, 2, 63, 64, 65, 130, 200})
            for (int threads : {1, 2}) {
                QTest::addRow("%d tokens, one call, %d threads", tokens, threads) << tokens << 0 << threads;
                if (tokens > 1) QTest::addRow("%d tokens, calls of 1, %d threads", tokens, threads) << tokens << 1 << threads;
                if (tokens > 64) QTest::addRow("%d tokens, calls of 37, %d threads", tokens, threads) << tokens << 37 << threads;
            }
    }

    void delta_rule_matches_token_loop() {
        QFETCH(int, tokens);
        QFETCH(int, piece);
        QFETCH(int, threads);
        ThreadPool pool(threads);
        for (const test::KernelLevel& level : test::kernel_levels())
        for (const DeltaRuleShape shape : {DeltaRuleShape{4, 2, 16, 8}, DeltaRuleShape{6, 2, 16, 8, true}, DeltaRuleShape{3, 3, 5, 9},
                                           DeltaRuleShape{2, 1, 128, 128}, DeltaRuleShape{2, 2, 33, 40}}) {
            const Inputs in = make_inputs(shape, tokens, static_cast<uint32_t>(tokens * 7 + shape.key_dim));
            std::vector<double> expected_state(in.state.begin(), in.state.end());
            const std::vector<double> expected = reference(in, expected_state);

            std::vector<float> state = in.state, out(expected.size());
            const int64_t step = piece ? piece : tokens;
            for (int64_t first = 0; first < tokens; first += step) {
                const int64_t n = std::min<int64_t>(step, tokens - first);
                const int64_t key_row = shape.key_heads * shape.key_dim, value_row = shape.value_heads * shape.value_dim;
                gated_delta_rule_with(*level.ops, shape, in.q.data() + first * key_row, in.k.data() + first * key_row, in.v.data() + first * value_row,
                                 in.g.data() + first * shape.value_heads, in.beta.data() + first * shape.value_heads, n, state.data(),
                                 out.data() + first * value_row, pool);
            }
            const double out_error = relative_error(out, expected), state_error = relative_error(state, expected_state);
            worst_delta_rule_error = std::max({worst_delta_rule_error, out_error, state_error});
            if (out_error > 2e-5 || state_error > 2e-5)
                QFAIL(qPrintable(QString("%1, shape %2/%3/%4/%5: output error %6, state error %7")
                                     .arg(QString::fromStdString(level.name))
                                     .arg(shape.value_heads).arg(shape.key_heads).arg(shape.key_dim).arg(shape.value_dim)
                                     .arg(out_error).arg(state_error)));
        }
    }

    void conv_matches_definition() {
        const int64_t channels = 11, kernel = 4, tokens = 9;
        std::mt19937 rng(3);
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        std::vector<float> x(tokens * channels), weight(kernel * channels);
        for (float& v : x) v = dist(rng);
        for (float& v : weight) v = dist(rng);
        // Expected: zeros before the start; weight row kernel-1 on the current token.
        std::vector<double> expected(x.size());
        for (int64_t t = 0; t < tokens; ++t)
            for (int64_t c = 0; c < channels; ++c) {
                double sum = 0;
                for (int64_t j = 0; j < kernel; ++j) {
                    const int64_t source = t - (kernel - 1) + j;
                    if (source >= 0) sum += double(weight[j * channels + c]) * x[source * channels + c];
                }
                expected[t * channels + c] = sum / (1 + std::exp(-sum));
            }
        for (int64_t piece : {int64_t{1}, int64_t{2}, int64_t{5}, tokens}) {
            std::vector<float> state((kernel - 1) * channels, 0.0f), out(x.size());
            for (int64_t first = 0; first < tokens; first += piece) {
                const int64_t n = std::min(piece, tokens - first);
                causal_conv1d_silu(x.data() + first * channels, n, channels, weight.data(), kernel, state.data(), out.data() + first * channels);
            }
            QVERIFY2(relative_error(out, expected) < 1e-6, qPrintable(QString("calls of %1 tokens").arg(piece)));
            // The state holds the last kernel-1 inputs.
            QVERIFY(std::equal(state.begin(), state.end(), x.end() - (kernel - 1) * channels));
        }
    }

    void l2_normalize_scales_rows() {
        std::vector<float> x = {3.0f, 4.0f, 0.0f, 0.0f};
        l2_normalize(x.data(), 2, 2, 1e-6f, 2.0f);
        QVERIFY(std::fabs(x[0] - 2.0f * 3.0f / std::sqrt(25.0f + 1e-6f)) < 1e-6f && std::fabs(x[1] - 1.6f) < 1e-6f);
        QCOMPARE(x[2], 0.0f);  // eps inside the root: a zero row stays zero, not NaN
    }
};

QTEST_GUILESS_MAIN(GatedDeltaNetTest)
#include "test_gated_delta_net.moc"
