#pragma once
// `oxinfer bench --model`: the model benchmark, called by run_bench with its parsed arguments.

#include "args.h"

namespace oxinfer::cli {

int run_model_bench(const Args& args);

}  // namespace oxinfer::cli
