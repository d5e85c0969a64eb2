// Sampling (oxinfer/sampling.h) against small computations written out in the test: the
// distribution after temperature, top-k, top-p and min-p, the penalties, and the draws (a
// chi-square test of 40000 seeded draws against the computed distribution).

#include <oxinfer/sampling.h>

#include <QObject>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace {

// softmax(logits / temperature) over the ids in `kept`, zero elsewhere.
std::vector<double> softmax_over(const std::vector<float>& logits, float temperature, const std::vector<int>& kept) {
    std::vector<double> p(logits.size(), 0.0);
    double sum = 0;
    for (int i : kept) sum += std::exp(logits[static_cast<size_t>(i)] / temperature);
    for (int i : kept) p[static_cast<size_t>(i)] = std::exp(logits[static_cast<size_t>(i)] / temperature) / sum;
    return p;
}

void expect_distribution(const std::vector<float>& actual, const std::vector<double>& expected) {
    QCOMPARE(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i)
        QVERIFY2(std::fabs(actual[i] - expected[i]) < 1e-6, qPrintable(QString("token %1: %2 vs %3").arg(i).arg(actual[i]).arg(expected[i])));
}

const std::vector<float> kLogits = {1.0f, 3.0f, -0.5f, 2.5f, 0.0f, 2.0f};  // order by value: 1, 3, 5, 0, 4, 2

}  // namespace

class SamplingTest : public QObject {
    Q_OBJECT

private slots:
    void greedy_is_argmax() {
        oxinfer::SamplingParams params;
        std::vector<float> logits = kLogits;
        oxinfer::Sampler sampler(params);
        QCOMPARE(sampler.sample(logits.data(), 6, {}), 1);
        expect_distribution(oxinfer::sampling_distribution(params, kLogits.data(), 6), {0, 1, 0, 0, 0, 0});
    }

    void temperature_only() {
        oxinfer::SamplingParams params;
        params.temperature = 0.7f;
        expect_distribution(oxinfer::sampling_distribution(params, kLogits.data(), 6), softmax_over(kLogits, 0.7f, {0, 1, 2, 3, 4, 5}));
    }

    void top_k_keeps_the_k_largest() {
        oxinfer::SamplingParams params;
        params.temperature = 1.3f;
        params.top_k = 3;
        expect_distribution(oxinfer::sampling_distribution(params, kLogits.data(), 6), softmax_over(kLogits, 1.3f, {1, 3, 5}));
    }

    void top_k_keeps_ties_with_the_kth() {
        const std::vector<float> logits = {2.0f, 1.0f, 2.0f, 0.0f};
        oxinfer::SamplingParams params;
        params.temperature = 1.0f;
        params.top_k = 1;
        expect_distribution(oxinfer::sampling_distribution(params, logits.data(), 4), softmax_over(logits, 1.0f, {0, 2}));
    }

    void top_p_keeps_the_smallest_set_reaching_p() {
        oxinfer::SamplingParams params;
        params.temperature = 1.0f;
        const auto full = softmax_over(kLogits, 1.0f, {0, 1, 2, 3, 4, 5});
        // Descending: ids 1, 3, 5, ... ; choose p between the sums of the first two and three.
        const double two = full[1] + full[3], three = two + full[5];
        params.top_p = static_cast<float>((two + three) / 2);
        expect_distribution(oxinfer::sampling_distribution(params, kLogits.data(), 6), softmax_over(kLogits, 1.0f, {1, 3, 5}));
        params.top_p = static_cast<float>(full[1] / 2);  // below the top token: it alone stays
        expect_distribution(oxinfer::sampling_distribution(params, kLogits.data(), 6), {0, 1, 0, 0, 0, 0});
    }

    void min_p_drops_tokens_below_a_fraction_of_the_top() {
        oxinfer::SamplingParams params;
        params.temperature = 1.0f;
        params.min_p = 0.3f;  // p_i / p_max = exp(l_i - 3): id 3 0.61, id 5 0.37, id 0 0.135 -> ids 1, 3, 5 stay
        expect_distribution(oxinfer::sampling_distribution(params, kLogits.data(), 6), softmax_over(kLogits, 1.0f, {1, 3, 5}));
    }

    void filters_compose_in_transformers_order() {
        // top-k 4 then top-p on the renormalised four, then min-p.
        oxinfer::SamplingParams params;
        params.temperature = 0.5f;
        params.top_k = 4;
        const auto four = softmax_over(kLogits, 0.5f, {1, 3, 5, 0});
        params.top_p = static_cast<float>(four[1] + four[3] / 2);  // needs ids 1 and 3
        expect_distribution(oxinfer::sampling_distribution(params, kLogits.data(), 6), softmax_over(kLogits, 0.5f, {1, 3}));
    }

    void penalties() {
        oxinfer::SamplingParams params;
        params.repetition_penalty = 2.0f;
        params.presence_penalty = 0.25f;
        params.frequency_penalty = 0.5f;
        std::vector<float> logits = kLogits;
        const std::vector<int32_t> context = {1, 2, 2, 9};  // 9 is outside the vocabulary: ignored
        oxinfer::apply_penalties(params, context, logits.data(), 6);
        QCOMPARE(logits[1], 3.0f / 2 - 0.25f - 0.5f);        // positive: divided
        QCOMPARE(logits[2], -0.5f * 2 - 0.25f - 2 * 0.5f);    // negative: multiplied; seen twice
        QCOMPARE(logits[0], 1.0f);
        QCOMPARE(logits[3], 2.5f);
        params.penalty_last_n = 1;  // only the last token (9) counts
        logits = kLogits;
        oxinfer::apply_penalties(params, context, logits.data(), 6);
        QVERIFY(logits == kLogits);
    }

    void draws_follow_the_distribution() {
        oxinfer::SamplingParams params;
        params.temperature = 0.9f;
        params.top_k = 4;
        params.seed = 1234;
        const auto expected = softmax_over(kLogits, 0.9f, {1, 3, 5, 0});
        oxinfer::Sampler sampler(params);
        const int draws = 40000;
        std::vector<int> counts(6, 0);
        for (int i = 0; i < draws; ++i) {
            std::vector<float> logits = kLogits;
            ++counts[static_cast<size_t>(sampler.sample(logits.data(), 6, {}))];
        }
        double chi2 = 0;
        for (size_t i = 0; i < 6; ++i) {
            if (expected[i] == 0) {
                QCOMPARE(counts[i], 0);
                continue;
            }
            const double e = expected[i] * draws;
            chi2 += (counts[i] - e) * (counts[i] - e) / e;
        }
        // 3 degrees of freedom: P(chi2 > 16.27) = 0.001 for a correct sampler.
        QVERIFY2(chi2 < 16.27, qPrintable(QString("chi-square %1").arg(chi2)));
    }

    void seeds_repeat_and_differ() {
        auto run = [](uint64_t seed) {
            oxinfer::SamplingParams params;
            params.temperature = 1.0f;
            params.seed = seed;
            oxinfer::Sampler sampler(params);
            std::vector<int32_t> out;
            for (int i = 0; i < 50; ++i) {
                std::vector<float> logits = kLogits;
                out.push_back(sampler.sample(logits.data(), 6, {}));
            }
            return out;
        };
        QCOMPARE(run(7), run(7));
        QVERIFY(run(7) != run(8));
    }
};

QTEST_GUILESS_MAIN(SamplingTest)
#include "test_sampling.moc"
