#pragma once
// llama.cpp's GGUF tensor names ("blk.3.attn_q.weight") and the Hugging Face names they were
// converted from ("model.layers.3.self_attn.q_proj.weight"), so one loader serves both formats.
// Names depend on the architecture where llama.cpp reuses a GGUF name for another role (Gemma's
// ffn_norm is HF's pre_feedforward_layernorm). Note: llama.cpp's converter also permutes the
// rows of q/k projections for the llama architecture; that is a model concern, not a naming one.

#include <optional>
#include <string>
#include <string_view>

namespace oxinfer {

// `gguf_arch` is general.architecture ("llama", "qwen3", "qwen3moe", "gemma3", ...).
// Returns nullopt for tensors without a Hugging Face counterpart (e.g. llama's rope_freqs).
std::optional<std::string> hf_tensor_name(std::string_view gguf_name, std::string_view gguf_arch);
std::optional<std::string> gguf_tensor_name(std::string_view hf_name, std::string_view gguf_arch);

// The Hugging Face architecture class for a GGUF general.architecture ("qwen3" -> "Qwen3ForCausalLM").
std::optional<std::string> hf_architecture(std::string_view gguf_arch);
std::optional<std::string> gguf_architecture(std::string_view hf_architecture);

}  // namespace oxinfer
