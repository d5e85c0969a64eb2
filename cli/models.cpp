// oxinfer models [--json]: the models on this computer, in the Hugging Face cache and in the
// folders of OXINFER_MODEL_PATH (':'-separated; ';' on Windows).

#include "args.h"
#include "commands.h"

#include <oxinfer/checkpoint.h>
#include <oxinfer/hf_cache.h>
#include <oxinfer/platform.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <system_error>

namespace oxinfer::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct Entry {
    std::string id;
    std::string source;  // "cache" or "folder"
    fs::path path;
    std::string format;
    std::string type;          // GGUF quantization, or the config's dtype
    std::string architecture;
    uint64_t bytes = 0;
    std::vector<std::string> files;
    std::string repo, commit;
};

std::string lower(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

bool has_suffix(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() && lower(text.substr(text.size() - suffix.size())) == suffix;
}

// Architecture and dtype of a folder from its config.json, without reading the weights.
void read_config(const fs::path& folder, Entry& entry) {
    std::ifstream in(folder / "config.json");
    if (!in) return;
    const json config = json::parse(in, nullptr, false);
    if (!config.is_object()) return;
    if (config.contains("architectures") && config["architectures"].is_array() && !config["architectures"].empty() &&
        config["architectures"][0].is_string())
        entry.architecture = config["architectures"][0].get<std::string>();
    else if (config.contains("model_type") && config["model_type"].is_string())
        entry.architecture = config["model_type"].get<std::string>();
    for (const char* key : {"torch_dtype", "dtype"})
        if (config.contains(key) && config[key].is_string()) entry.type = config[key].get<std::string>();
}

void describe(Entry& entry) {
    if (entry.format == "gguf") {
        try {
            entry.architecture = Checkpoint::open(entry.path)->architecture();
        } catch (const std::exception& error) {
            entry.architecture = std::string("(unreadable: ") + error.what() + ")";
        }
        return;
    }
    if (fs::is_directory(entry.path)) read_config(entry.path, entry);
}

uint64_t size_of(const fs::path& path) {
    std::error_code error;
    if (fs::is_regular_file(path, error)) return fs::file_size(path, error);
    uint64_t total = 0;
    for (auto it = fs::recursive_directory_iterator(path, error); !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
        std::error_code entry_error;
        if (fs::is_regular_file(it->path(), entry_error)) total += fs::file_size(it->path(), entry_error);
    }
    return total;
}

std::string folder_format(const fs::path& folder) {
    std::error_code error;
    bool torch = false;
    for (const auto& item : fs::directory_iterator(folder, error)) {
        const std::string name = lower(item.path().filename().string());
        if (has_suffix(name, ".safetensors")) return "safetensors";
        if ((name.rfind("pytorch_model", 0) == 0 && has_suffix(name, ".bin")) || has_suffix(name, ".pt") || has_suffix(name, ".pth"))
            torch = true;
    }
    if (torch) return "torch";
    return fs::exists(folder / "config.json", error) ? "other" : "";
}

// GGUF files directly in `folder` (split files as one), as entries named by their path.
void add_gguf_files(const fs::path& folder, const std::string& prefix, std::vector<Entry>& out) {
    std::vector<std::pair<std::string, uint64_t>> files;
    std::error_code error;
    for (const auto& item : fs::directory_iterator(folder, error)) {
        std::error_code status;
        if (item.is_regular_file(status) && has_suffix(item.path().filename().string(), ".gguf"))
            files.emplace_back(item.path().filename().string(), item.file_size(status));
    }
    for (const hf::GgufVariant& variant : hf::group_gguf_files(files)) {
        Entry entry;
        entry.id = prefix + variant.files.front();
        entry.source = "folder";
        entry.path = folder / variant.files.front();
        entry.format = "gguf";
        entry.type = variant.quant;
        entry.bytes = variant.bytes;
        entry.files = variant.files;
        out.push_back(entry);
    }
}

void add_folder(const fs::path& root, std::vector<Entry>& out) {
    std::error_code error;
    if (!fs::is_directory(root, error)) return;
    const auto add_model_folder = [&](const fs::path& folder, const std::string& id) {
        const std::string format = folder_format(folder);
        if (format.empty()) return false;
        Entry entry;
        entry.id = id;
        entry.source = "folder";
        entry.path = folder;
        entry.format = format;
        entry.bytes = size_of(folder);
        out.push_back(entry);
        return true;
    };
    if (add_model_folder(root, root.filename().string())) return;
    add_gguf_files(root, "", out);
    for (const auto& item : fs::directory_iterator(root, error)) {
        std::error_code status;
        if (!item.is_directory(status)) continue;
        const std::string name = item.path().filename().string();
        if (!add_model_folder(item.path(), name)) add_gguf_files(item.path(), name + "/", out);
    }
}

std::vector<fs::path> model_path_folders() {
    const char* value = std::getenv("OXINFER_MODEL_PATH");
    std::vector<fs::path> folders;
    if (!value) return folders;
#ifdef _WIN32
    const char separator = ';';
#else
    const char separator = ':';
#endif
    std::string text = value, current;
    for (char c : text + separator) {
        if (c == separator) {
            if (!current.empty()) folders.emplace_back(current);
            current.clear();
        } else {
            current += c;
        }
    }
    return folders;
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
    std::vector<Entry> entries;
    const fs::path cache = hf::hub_cache_dir();
    for (const hf::CachedModel& model : hf::scan_cache(cache)) {
        Entry entry;
        entry.id = model.id;
        entry.source = "cache";
        entry.path = model.path;
        entry.format = model.format;
        entry.bytes = model.bytes;
        entry.files = model.files;
        entry.repo = model.repo_id;
        entry.commit = model.commit;
        if (model.format == "gguf") entry.type = hf::gguf_quant_name(model.files.front());
        entries.push_back(entry);
    }
    for (const fs::path& folder : model_path_folders()) add_folder(folder, entries);
    for (Entry& entry : entries) describe(entry);

    if (args.flag("json")) {
        json out;
        out["cache"] = cache.string();
        out["models"] = json::array();
        for (const Entry& entry : entries) {
            json item = {{"id", entry.id},     {"source", entry.source},          {"path", entry.path.string()},
                         {"format", entry.format}, {"type", entry.type},          {"architecture", entry.architecture},
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
    for (const Entry& entry : entries)
        std::printf("%-48s %-26s %-12s %-10s %10s  %s\n", entry.id.c_str(),
                    entry.architecture.empty() ? "-" : entry.architecture.c_str(), entry.format.c_str(),
                    entry.type.empty() ? "-" : entry.type.c_str(), format_bytes(entry.bytes).c_str(), entry.path.string().c_str());
    return 0;
}

}  // namespace oxinfer::cli
