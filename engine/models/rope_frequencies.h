#pragma once
// RoPE inverse frequencies as Hugging Face's modeling_rope_utils computes them (float32), for the
// default, linear and llama3 rope types.

#include <oxinfer/model_config.h>

#include <string>
#include <vector>

namespace oxinfer::models {

// rotary_dim / 2 values. Throws oxinfer::Error naming `subject` for an unsupported rope type.
std::vector<float> rope_inverse_frequencies(const TransformerConfig& config, int64_t rotary_dim, const std::string& subject);

}  // namespace oxinfer::models
