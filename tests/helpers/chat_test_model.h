#pragma once
// A chat model for app tests: the reference Qwen3's tokenizer and chat template on random weights
// of a real model's width (Qwen3-0.6B's, fewer layers), so that a reply takes long enough to
// watch it stream, stop it and measure the UI meanwhile (tens of milliseconds a token). It has no
// stop tokens: a reply ends at its token limit, a stop or a full context, never by chance.

#include <filesystem>

namespace oxinfer::test {

// Writes the model folder into `folder` (created) and returns it. `layers` sets the cost of a token.
std::filesystem::path write_chat_test_model(const std::filesystem::path& folder, int layers = 4);

}  // namespace oxinfer::test
