#include "models/causal_lm.h"

#include <oxinfer/checkpoint.h>
#include <oxinfer/error.h>

#include <algorithm>

namespace oxinfer::models {
namespace {

using Factory = std::unique_ptr<CausalLm> (*)(const Checkpoint&, const TransformerConfig&, const ModelLoadSettings&, ThreadPool&);

struct Registration {
    const char* architecture;
    Factory create;
};

const Registration kRegistry[] = {
    {"LlamaForCausalLM", create_llama_family},
    {"Qwen2ForCausalLM", create_llama_family},
    {"Qwen3ForCausalLM", create_llama_family},
    {"Qwen3MoeForCausalLM", create_llama_family},
    {"Qwen3_5ForConditionalGeneration", create_qwen35},
    {"Qwen3_5ForCausalLM", create_qwen35},
    {"Qwen3_5MoeForConditionalGeneration", create_qwen35},
    {"Qwen3_5MoeForCausalLM", create_qwen35},
    {"Qwen3NextForCausalLM", create_qwen35},
    {"Gemma3ForCausalLM", create_gemma},
    {"Gemma3ForConditionalGeneration", create_gemma},
    {"Gemma4ForCausalLM", create_gemma},
    {"Gemma4ForConditionalGeneration", create_gemma},
};

}  // namespace

void CausalLm::attach_draft_model(const Checkpoint& checkpoint, const TransformerConfig& config, const ModelLoadSettings&) {
    throw Error(checkpoint.path().string(), "is a draft model ('" + config.architecture + "') for another architecture than '" +
                                                this->config().architecture + "'");
}

const std::vector<std::string>& supported_architectures() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const Registration& r : kRegistry) out.emplace_back(r.architecture);
        return out;
    }();
    return names;
}

std::unique_ptr<CausalLm> create_causal_lm(const Checkpoint& checkpoint, const TransformerConfig& config,
                                           const ModelLoadSettings& settings, ThreadPool& pool) {
    for (const Registration& r : kRegistry)
        if (config.architecture == r.architecture) return r.create(checkpoint, config, settings, pool);
    if (config.architecture == "Gemma4AssistantForCausalLM")
        throw Error(checkpoint.path().string(), "is a Gemma 4 assistant, a draft model: load it beside its main model (--draft-model)");
    std::string list;
    for (const std::string& name : supported_architectures()) list += (list.empty() ? "" : ", ") + name;
    const std::string shown = config.architecture.empty() ? "'" + config.model_type + "' (no known class)" : "'" + config.architecture + "'";
    throw Error(checkpoint.path().string(), "architecture " + shown + " is not supported; supported: " + list);
}

}  // namespace oxinfer::models
