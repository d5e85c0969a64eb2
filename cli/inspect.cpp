// oxinfer inspect FILE_OR_FOLDER [--json]

#include "args.h"
#include "commands.h"

#include <oxinfer/checkpoint.h>
#include <oxinfer/hf_cache.h>
#include <oxinfer/platform.h>
#include <oxinfer/profiler.h>

#include <cstdio>
#include <string>

namespace oxinfer::cli {
namespace {

using json = nlohmann::json;

// Checkpoint text may hold invalid UTF-8 (token pieces of byte-level vocabularies): replace it
// rather than fail.
std::string dump(const json& value, int indent = -1) { return value.dump(indent, ' ', false, json::error_handler_t::replace); }

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string out = "[";
    for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

// Long arrays (vocabularies of 150k tokens) are abbreviated in the text view; --json has them all.
std::string short_value(const json& value) {
    constexpr size_t kShown = 8;
    if (value.is_array() && value.size() > kShown) {
        json head = json::array();
        for (size_t i = 0; i < kShown; ++i) head.push_back(value[i]);
        std::string text = dump(head);
        text.pop_back();
        return text + ", ... " + std::to_string(value.size() - kShown) + " more]";
    }
    std::string text = dump(value);
    if (text.size() > 200) text = text.substr(0, 200) + "... (" + std::to_string(text.size()) + " chars)";
    return text;
}

void print_text(const Checkpoint& checkpoint) {
    std::printf("path:         %s\n", checkpoint.path().string().c_str());
    std::printf("format:       %s\n", std::string(format_name(checkpoint.format())).c_str());
    const std::string arch = checkpoint.architecture();
    std::printf("architecture: %s\n", arch.empty() ? "(unknown)" : arch.c_str());
    if (checkpoint.files().size() > 1) {
        std::printf("files:        %zu\n", checkpoint.files().size());
        for (const auto& file : checkpoint.files()) std::printf("  %s\n", file.filename().string().c_str());
    }
    const json& metadata = checkpoint.metadata();
    const json& types = checkpoint.metadata_types();
    std::printf("\nmetadata (%zu entries):\n", metadata.size());
    for (const auto& [key, value] : metadata.items()) {
        const auto type = types.find(key);
        std::string label = type != types.end() ? type->get<std::string>() : value.is_object() ? "object" : "";
        if (value.is_array()) label += " (" + std::to_string(value.size()) + ")";
        std::printf("  %-44s %-22s %s\n", key.c_str(), label.c_str(), short_value(value).c_str());
    }
    uint64_t total = 0;
    for (const TensorInfo& tensor : checkpoint.tensors()) total += tensor.nbytes;
    std::printf("\ntensors (%zu, %s):\n", checkpoint.tensors().size(), format_bytes(total).c_str());
    for (const TensorInfo& tensor : checkpoint.tensors())
        std::printf("  %-52s %-8s %-24s %s\n", tensor.name.c_str(), std::string(dtype_name(tensor.dtype)).c_str(),
                    shape_text(tensor.shape).c_str(), format_bytes(tensor.nbytes).c_str());
}

void print_json(const Checkpoint& checkpoint) {
    json out;
    out["format"] = format_name(checkpoint.format());
    out["architecture"] = checkpoint.architecture();
    out["metadata"] = checkpoint.metadata();
    out["files"] = json::array();
    for (const auto& file : checkpoint.files()) out["files"].push_back(file.string());
    out["tensors"] = json::array();
    for (const TensorInfo& tensor : checkpoint.tensors()) {
        out["tensors"].push_back({{"name", tensor.name},
                                  {"dtype", dtype_name(tensor.dtype)},
                                  {"shape", tensor.shape},
                                  {"nbytes", tensor.nbytes},
                                  {"file", tensor.file_index}});
    }
    std::printf("%s\n", dump(out).c_str());
}

}  // namespace

int run_inspect(const std::vector<std::string>& argv) {
    auto options = common_options();
    options.push_back({"json", "", "", "print one JSON object instead of text"});
    Args args("inspect", "FILE_OR_FOLDER [--json]",
              "Shows a checkpoint's format, architecture, all metadata and its tensor table (name, type, shape, size).\n"
              "Reads safetensors files and folders, GGUF files and PyTorch .bin/.pt archives; tensor data is not read.",
              options);
    args.parse(argv);
    if (args.help_requested()) {
        std::fputs(args.help().c_str(), stdout);
        return 0;
    }
    const auto checkpoint = [&] {
        profiler::Scope scope("open checkpoint");
        return Checkpoint::open(hf::resolve_model(args.positional(0, "FILE_OR_FOLDER")));  // or a cached repo id
    }();
    if (args.flag("json")) print_json(*checkpoint);
    else print_text(*checkpoint);
    return 0;
}

}  // namespace oxinfer::cli
