#pragma once
// Choosing the next token from logits: repetition, presence and frequency penalties, then
// temperature, top-k, top-p and min-p in that order (transformers' order of logits processors),
// then a seeded draw. Temperature 0 is greedy (argmax after the penalties).

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace oxinfer {

struct SamplingParams {
    float temperature = 0.0f;         // 0: greedy
    int64_t top_k = 0;                // 0: off; ties with the k-th value are kept, as transformers does
    float top_p = 1.0f;               // 1: off
    float min_p = 0.0f;               // 0: off; drops tokens below min_p times the top probability
    float repetition_penalty = 1.0f;  // transformers: a seen token's logit l becomes l/r (l > 0) or l*r
    float presence_penalty = 0.0f;    // OpenAI: l -= presence for a seen token
    float frequency_penalty = 0.0f;   // OpenAI: l -= frequency * times seen
    int64_t penalty_last_n = 0;       // penalties look at the last n tokens of the context; 0: all of it
    uint64_t seed = 0;
};

// The penalties, in place, for the tokens of `context` (the prompt and what was generated).
void apply_penalties(const SamplingParams& params, std::span<const int32_t> context, float* logits, int64_t vocab);

// The probability of every token after temperature, top-k, top-p and min-p (logits already
// penalised). Greedy: 1 for the argmax. For tests and for callers that show the distribution.
std::vector<float> sampling_distribution(const SamplingParams& params, const float* logits, int64_t vocab);

class Sampler {
public:
    explicit Sampler(const SamplingParams& params);
    // The next token. `logits` is modified (penalties).
    int32_t sample(float* logits, int64_t vocab, std::span<const int32_t> context);
    const SamplingParams& params() const { return params_; }

private:
    SamplingParams params_;
    std::mt19937_64 rng_;
};

}  // namespace oxinfer
