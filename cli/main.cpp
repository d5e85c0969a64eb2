// oxinfer: the command line. The contract of every subcommand is ../shared/specs/cli.md.

#include "commands.h"

#include <oxinfer/error.h>
#include <oxinfer/profiler.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

using oxinfer::cli::Command;

constexpr Command kCommands[] = {
    {"inspect", "format, architecture, metadata and tensor table of a checkpoint", oxinfer::cli::run_inspect},
    {"tensor", "write one tensor, dequantised to float32, as a .npy file", oxinfer::cli::run_tensor},
    {"logits", "run a prompt as one prefill and write its logits as a .npy file", oxinfer::cli::run_logits},
    {"generate", "generate a continuation of a prompt, streamed", oxinfer::cli::run_generate},
    {"chat", "interactive chat in the terminal", oxinfer::cli::run_chat},
    {"bench", "measure model speed (--model, as llama-bench) or kernel speed (--kernels)", oxinfer::cli::run_bench},
    {"synth", "write a random-weight checkpoint with a real model's shape", oxinfer::cli::run_synth},
    {"tokenize", "token ids of a text (tokenizer.json or GGUF vocabulary)", oxinfer::cli::run_tokenize},
    {"detokenize", "the text of token ids", oxinfer::cli::run_detokenize},
    {"template", "render the chat template as transformers' apply_chat_template does", oxinfer::cli::run_template},
    {"pull", "download a model from the Hugging Face hub into its cache (resumable, sha256-checked)", oxinfer::cli::run_pull},
    {"models", "list the local models (Hugging Face cache and OXINFER_MODEL_PATH)", oxinfer::cli::run_models},
};

void print_usage(std::FILE* out) {
    std::fprintf(out, "usage: oxinfer COMMAND [options]\n\ncommands:\n");
    for (const Command& command : kCommands) std::fprintf(out, "  %-12s %s\n", command.name, command.summary);
    std::fprintf(out, "\n'oxinfer COMMAND --help' describes a command. 'oxinfer --version' prints the version.\n");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    const std::string name = argv[1];
    if (name == "--help" || name == "-h" || name == "help") {
        print_usage(stdout);
        return 0;
    }
    if (name == "--version") {
        std::printf("oxinfer %s\n", OXINFER_VERSION);
        return 0;
    }
    std::vector<std::string> args(argv + 2, argv + argc);
    for (const std::string& arg : args)
        if (arg == "--profile") oxinfer::profiler::set_enabled(true);
    for (const Command& command : kCommands) {
        if (name != command.name) continue;
        int status = 1;
        try {
            status = command.run(args);
        } catch (const std::exception& error) {
            std::fflush(stdout);
            std::fprintf(stderr, "oxinfer: error: %s\n", error.what());
            status = 1;
        }
        if (oxinfer::profiler::enabled()) std::fputs(oxinfer::profiler::report().c_str(), stderr);
        return status;
    }
    std::fprintf(stderr, "oxinfer: error: unknown command '%s'\n", name.c_str());
    print_usage(stderr);
    return 2;
}
