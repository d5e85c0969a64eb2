// oxinfer models [--json]: the models on this computer, in the Hugging Face cache and in the
// folders of OXINFER_MODEL_PATH (':'-separated; ';' on Windows).

#include "args.h"
#include "commands.h"

#include <oxinfer/hf_cache.h>
#include <oxinfer/local_models.h>
#include <oxinfer/platform.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace oxinfer::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The architecture column: what the header says, or why it could not be read.
std::string architecture_text(const LocalModel& model) {
    return model.problem.empty() ? model.architecture : "(unreadable: " + model.problem + ")";
}

}  // namespace

int run_models(const std::vector<std::string>& argv) {
    auto options = common_options();
    options.push_back({"json", "", "", "print one JSON object: {\"models\": [...]}"});
    Args args("models", "[--json]",
              "Lists the models on this computer: the Hugging Face cache ($HF_HUB_CACHE, else $HF_HOME/hub, else\n"
              "~/.cache/huggingface/hub) and the folders in OXINFER_MODEL_PATH (':'-separated), with their\n"
              "architecture, size and type. Each id works as MODEL in the other commands.",
              options);
    args.parse(argv);
    if (args.help_requested()) {
        std::fputs(args.help().c_str(), stdout);
        return 0;
    }
    const fs::path cache = hf::hub_cache_dir();
    const std::vector<LocalModel> entries = find_local_models(cache, model_path_folders());
    if (args.flag("json")) {
        json out;
        out["cache"] = cache.string();
        out["models"] = json::array();
        for (const LocalModel& entry : entries) {
            json item = {{"id", entry.id},     {"source", entry.source},          {"path", entry.path.string()},
                         {"format", entry.format}, {"type", entry.type},          {"architecture", architecture_text(entry)},
                         {"size_bytes", entry.bytes}, {"files", entry.files}};
            if (!entry.repo.empty()) {
                item["repo"] = entry.repo;
                item["commit"] = entry.commit;
            }
            out["models"].push_back(item);
        }
        std::printf("%s\n", out.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
        return 0;
    }
    if (entries.empty()) {
        std::printf("no models in %s%s\n", cache.string().c_str(),
                    model_path_folders().empty() ? " (OXINFER_MODEL_PATH is not set)" : " or OXINFER_MODEL_PATH");
        return 0;
    }
    std::printf("%-48s %-26s %-12s %-10s %10s  %s\n", "ID", "ARCHITECTURE", "FORMAT", "TYPE", "SIZE", "PATH");
    for (const LocalModel& entry : entries)
        std::printf("%-48s %-26s %-12s %-10s %10s  %s\n", entry.id.c_str(),
                    architecture_text(entry).empty() ? "-" : architecture_text(entry).c_str(), entry.format.c_str(),
                    entry.type.empty() ? "-" : entry.type.c_str(), format_bytes(entry.bytes).c_str(), entry.path.string().c_str());
    return 0;
}

}  // namespace oxinfer::cli
