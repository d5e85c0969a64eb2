#pragma once
// The oxinfer subcommands. Each takes its arguments (after the subcommand name) and returns the
// process exit code; errors are thrown as oxinfer::Error and reported by main.

#include <string>
#include <vector>

namespace oxinfer::cli {

struct Command {
    const char* name;
    const char* summary;
    int (*run)(const std::vector<std::string>& args);
};

int run_inspect(const std::vector<std::string>& args);
int run_tensor(const std::vector<std::string>& args);
int run_bench(const std::vector<std::string>& args);
int run_tokenize(const std::vector<std::string>& args);
int run_detokenize(const std::vector<std::string>& args);
int run_template(const std::vector<std::string>& args);
int run_pull(const std::vector<std::string>& args);
int run_models(const std::vector<std::string>& args);
int run_logits(const std::vector<std::string>& args);
int run_generate(const std::vector<std::string>& args);
int run_chat(const std::vector<std::string>& args);
int run_synth(const std::vector<std::string>& args);

}  // namespace oxinfer::cli
