#include "models/rope_frequencies.h"

#include <oxinfer/error.h>

#include <cmath>
#include <numbers>

namespace oxinfer::models {

std::vector<float> rope_inverse_frequencies(const TransformerConfig& config, int64_t rotary_dim, const std::string& subject) {
    // inv_freq = 1 / base ** (arange(0, dim, 2) / dim), all in float32 as torch does it.
    std::vector<float> inv(static_cast<size_t>(rotary_dim / 2));
    const float base = static_cast<float>(config.rope_theta);
    for (size_t i = 0; i < inv.size(); ++i)
        inv[i] = 1.0f / std::pow(base, static_cast<float>(2 * i) / static_cast<float>(rotary_dim));
    if (!config.rope_scaling || config.rope_scaling->type.empty() || config.rope_scaling->type == "default") return inv;
    const RopeScaling& scaling = *config.rope_scaling;
    const float factor = static_cast<float>(scaling.factor);
    if (scaling.type == "linear") {
        for (float& f : inv) f /= factor;
        return inv;
    }
    if (scaling.type == "llama3") {
        // _compute_llama3_parameters: long wavelengths slowed by `factor`, short ones kept, the
        // band between blended linearly in the wavelength's inverse.
        if (!scaling.low_freq_factor || !scaling.high_freq_factor || !scaling.original_max_position_embeddings)
            throw Error(subject, "llama3 rope_scaling needs low_freq_factor, high_freq_factor and original_max_position_embeddings");
        const float low = static_cast<float>(*scaling.low_freq_factor);
        const float high = static_cast<float>(*scaling.high_freq_factor);
        const float old_context = static_cast<float>(*scaling.original_max_position_embeddings);
        const float low_freq_wavelen = old_context / low;
        const float high_freq_wavelen = old_context / high;
        for (float& f : inv) {
            const float wavelen = 2.0f * std::numbers::pi_v<float> / f;
            float scaled = wavelen > low_freq_wavelen ? f / factor : f;
            const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
            if (medium) {
                const float smooth = (old_context / wavelen - low) / (high - low);
                scaled = (1.0f - smooth) * scaled / factor + smooth * scaled;
            }
            f = scaled;
        }
        return inv;
    }
    throw Error(subject, "rope_scaling type '" + scaling.type + "' is not supported (default, linear and llama3 are)");
}

}  // namespace oxinfer::models
