#include <oxinfer/sampling.h>

#include "kernels/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace oxinfer {
namespace {

struct Candidate {
    int32_t id;
    float prob;
};

// The surviving tokens with their renormalised probabilities, most probable first.
std::vector<Candidate> filtered_candidates(const SamplingParams& params, const float* logits, int64_t vocab) {
    std::vector<Candidate> c;
    if (params.temperature <= 0.0f) {
        c.push_back({static_cast<int32_t>(kernels::argmax(logits, vocab)), 1.0f});
        return c;
    }
    c.reserve(static_cast<size_t>(vocab));
    for (int64_t i = 0; i < vocab; ++i) c.push_back({static_cast<int32_t>(i), logits[i] / params.temperature});
    const auto before = [](const Candidate& a, const Candidate& b) { return a.prob > b.prob || (a.prob == b.prob && a.id < b.id); };
    if (params.top_k > 0 && params.top_k < vocab) {
        // Only the k largest (and ties with the k-th) need sorting: a partition first.
        const auto kth = c.begin() + (params.top_k - 1);
        std::nth_element(c.begin(), kth, c.end(), before);
        const float threshold = kth->prob;
        c.erase(std::partition(c.begin(), c.end(), [&](const Candidate& x) { return x.prob >= threshold; }), c.end());
    }
    std::sort(c.begin(), c.end(), before);
    // Softmax over the survivors (the scaled logits are in .prob until here).
    const float max = c.front().prob;
    double sum = 0.0;
    for (Candidate& x : c) sum += (x.prob = std::exp(x.prob - max));
    for (Candidate& x : c) x.prob = static_cast<float>(x.prob / sum);
    if (params.top_p < 1.0f) {
        // transformers' TopPLogitsWarper: ascending order, drop while the running sum <= 1 - top_p,
        // never the most probable token.
        float cumulative = 0.0f;
        size_t drop = 0;
        for (size_t i = c.size(); i-- > 1;) {
            cumulative += c[i].prob;
            if (cumulative > 1.0f - params.top_p) break;
            ++drop;
        }
        c.resize(c.size() - drop);
    }
    if (params.min_p > 0.0f) {
        const float threshold = params.min_p * c.front().prob;
        c.erase(std::remove_if(c.begin() + 1, c.end(), [&](const Candidate& x) { return x.prob < threshold; }), c.end());
    }
    double total = 0.0;
    for (const Candidate& x : c) total += x.prob;
    for (Candidate& x : c) x.prob = static_cast<float>(x.prob / total);
    return c;
}

}  // namespace

void apply_penalties(const SamplingParams& params, std::span<const int32_t> context, float* logits, int64_t vocab) {
    if (params.repetition_penalty == 1.0f && params.presence_penalty == 0.0f && params.frequency_penalty == 0.0f) return;
    if (params.penalty_last_n > 0 && static_cast<int64_t>(context.size()) > params.penalty_last_n)
        context = context.last(static_cast<size_t>(params.penalty_last_n));
    std::unordered_map<int32_t, int> counts;
    for (int32_t id : context)
        if (id >= 0 && id < vocab) ++counts[id];
    for (const auto& [id, count] : counts) {
        float& l = logits[id];
        if (params.repetition_penalty != 1.0f) l = l < 0.0f ? l * params.repetition_penalty : l / params.repetition_penalty;
        l -= params.presence_penalty + params.frequency_penalty * static_cast<float>(count);
    }
}

std::vector<float> sampling_distribution(const SamplingParams& params, const float* logits, int64_t vocab) {
    std::vector<float> probs(static_cast<size_t>(vocab), 0.0f);
    for (const Candidate& c : filtered_candidates(params, logits, vocab)) probs[static_cast<size_t>(c.id)] = c.prob;
    return probs;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

int32_t Sampler::sample(float* logits, int64_t vocab, std::span<const int32_t> context) {
    apply_penalties(params_, context, logits, vocab);
    if (params_.temperature <= 0.0f) return static_cast<int32_t>(kernels::argmax(logits, vocab));
    const std::vector<Candidate> c = filtered_candidates(params_, logits, vocab);
    // A uniform double in [0, 1) from 53 random bits: the same draw on every platform.
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    double cumulative = 0.0;
    for (const Candidate& x : c) {
        cumulative += x.prob;
        if (u < cumulative) return x.id;
    }
    return c.back().id;
}

}  // namespace oxinfer
