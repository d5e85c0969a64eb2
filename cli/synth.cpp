// oxinfer synth --arch ARCH --shape NAME|--config config.json --type TYPE --out FILE.gguf|FOLDER

#include "args.h"
#include "commands.h"

#include <oxinfer/error.h>
#include <oxinfer/synth.h>

#include <cstdio>
#include <fstream>

namespace oxinfer::cli {

int run_synth(const std::vector<std::string>& argv) {
    auto options = common_options();
    options.push_back({"arch", "", "ARCH", "llama, qwen2, qwen3, qwen3moe, qwen35 or qwen35moe (checked against the shape)"});
    options.push_back({"shape", "", "NAME", "a real model's shape (see below)"});
    options.push_back({"config", "", "config.json", "a Hugging Face config.json instead of a named shape"});
    options.push_back({"layers", "", "N", "override the number of layers"});
    options.push_back({"type", "", "TYPE", "f32, bf16, f16, q8_0, q4_0 or q4_k (q4_k needs rows of multiples of 256)"});
    options.push_back({"seed", "", "S", "random seed (default 1)"});
    options.push_back({"out", "o", "FILE.gguf|FOLDER", "a .gguf file, or a Hugging Face folder (f32, f16, bf16)"});
    std::string shapes;
    for (const SynthShape& s : synth_shapes()) shapes += "  " + s.name + " (" + s.arch + "): " + s.note + "\n";
    Args args("synth", "--arch ARCH --shape NAME|--config config.json --type TYPE --out FILE.gguf|FOLDER",
              "Writes a checkpoint with random weights of a real model's shape, for benchmarks and tests.\nShapes:\n" + shapes, options);
    args.parse(argv);
    if (args.help_requested()) {
        std::fputs(args.help().c_str(), stdout);
        return 0;
    }
    const std::string out = args.required("out");
    const auto type = dtype_from_name(args.required("type"));
    if (!type) throw Error("--type", "unknown type '" + args.required("type") + "'");
    const int64_t layers = args.value("layers") ? std::stoll(*args.value("layers")) : 0;
    nlohmann::json config;
    if (auto path = args.value("config")) {
        std::ifstream in(*path);
        if (!in) throw Error(*path, "cannot open file");
        config = nlohmann::json::parse(in, nullptr, false);
        if (config.is_discarded()) throw Error(*path, "is not valid JSON");
        if (layers > 0) config["num_hidden_layers"] = layers;
    } else {
        config = synth_config(args.value("arch").value_or(""), args.required("shape"), layers);
    }
    SynthOptions synth;
    synth.type = *type;
    if (auto seed = args.value("seed")) synth.seed = std::stoull(*seed);
    if (auto threads = args.value("threads")) synth.threads = std::stoi(*threads);
    write_synthetic_checkpoint(config, out, synth);
    std::printf("%s\n", out.c_str());
    return 0;
}

}  // namespace oxinfer::cli
