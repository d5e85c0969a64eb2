#pragma once
// Options shared by the commands that run a model: loading (--quant, --ctx, --kv-type, -t) and
// sampling (--temp, --top-k, ...), turned into the engine's structs.

#include "args.h"

#include <oxinfer/llm.h>

#include <vector>

namespace oxinfer::cli {

std::vector<OptionSpec> model_load_options();
LoadOptions load_options(const Args& args);
// --draft-max (default 3), checked.
int64_t draft_tokens_option(const Args& args);

std::vector<OptionSpec> sampling_options();
// Sampling and stopping; `default_max_tokens` when -n is not given.
GenerateOptions generate_options(const Args& args, int64_t default_max_tokens);

// "1 2 3" (spaces or commas) as token ids; throws naming the option on anything else.
std::vector<int32_t> parse_token_list(const std::string& text, const std::string& option);

}  // namespace oxinfer::cli
