// Finding the models on this computer and estimating their memory (oxinfer/local_models.h).

#include <oxinfer/local_models.h>

#include <oxinfer/checkpoint.h>
#include <oxinfer/error.h>
#include <oxinfer/hf_cache.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <system_error>

namespace oxinfer {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string lower(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

bool has_suffix(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() && lower(text.substr(text.size() - suffix.size())) == suffix;
}

// Architecture and dtype of a folder from its config.json, without reading the weights.
void read_config(const fs::path& folder, LocalModel& model) {
    std::ifstream in(folder / "config.json");
    if (!in) return;
    const json config = json::parse(in, nullptr, false);
    if (!config.is_object()) {
        model.problem = "config.json is not a JSON object";
        return;
    }
    if (config.contains("architectures") && config["architectures"].is_array() && !config["architectures"].empty() &&
        config["architectures"][0].is_string())
        model.architecture = config["architectures"][0].get<std::string>();
    else if (config.contains("model_type") && config["model_type"].is_string())
        model.architecture = config["model_type"].get<std::string>();
    for (const char* key : {"torch_dtype", "dtype"})
        if (config.contains(key) && config[key].is_string()) model.type = config[key].get<std::string>();
}

void describe(LocalModel& model) {
    if (model.format == "gguf") {
        try {
            model.architecture = Checkpoint::open(model.path)->architecture();
        } catch (const std::exception& error) {
            model.problem = error.what();
        }
        return;
    }
    std::error_code error;
    if (fs::is_directory(model.path, error)) read_config(model.path, model);
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
void add_gguf_files(const fs::path& folder, const std::string& prefix, std::vector<LocalModel>& out) {
    std::vector<std::pair<std::string, uint64_t>> files;
    std::error_code error;
    for (const auto& item : fs::directory_iterator(folder, error)) {
        std::error_code status;
        if (item.is_regular_file(status) && has_suffix(item.path().filename().string(), ".gguf"))
            files.emplace_back(item.path().filename().string(), item.file_size(status));
    }
    for (const hf::GgufVariant& variant : hf::group_gguf_files(files)) {
        LocalModel model;
        model.id = prefix + variant.files.front();
        model.source = "folder";
        model.path = folder / variant.files.front();
        model.format = "gguf";
        model.type = variant.quant;
        model.bytes = variant.bytes;
        model.files = variant.files;
        out.push_back(model);
    }
}

void add_folder(const fs::path& root, std::vector<LocalModel>& out) {
    std::error_code error;
    if (!fs::is_directory(root, error)) return;
    const auto add_model_folder = [&](const fs::path& folder, const std::string& id) {
        const std::string format = folder_format(folder);
        if (format.empty()) return false;
        LocalModel model;
        model.id = id;
        model.source = "folder";
        model.path = folder;
        model.format = format;
        model.bytes = size_of(folder);
        out.push_back(model);
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

// ---- Memory footprint ----------------------------------------------------------------------------

enum class LayerCache { Full, Window, None };

// A value of the config (HF key) or of the GGUF metadata ("<arch>.<key>"), whichever the raw holds.
const json* find_key(const TransformerConfig& config, const std::string& hf_key, const std::string& gguf_key) {
    const json& raw = config.raw;
    if (!raw.is_object()) return nullptr;
    if (auto it = raw.find(hf_key); !hf_key.empty() && it != raw.end()) return &*it;
    if (gguf_key.empty()) return nullptr;
    const auto arch = raw.find("general.architecture");
    if (arch == raw.end() || !arch->is_string()) return nullptr;
    const auto it = raw.find(arch->get<std::string>() + "." + gguf_key);
    return it == raw.end() ? nullptr : &*it;
}

int64_t integer_key(const TransformerConfig& config, const std::string& hf_key, const std::string& gguf_key, int64_t fallback) {
    const json* value = find_key(config, hf_key, gguf_key);
    return value && value->is_number() ? value->get<int64_t>() : fallback;
}

// Which layers keep a KV cache for every position, for a window of positions, or none (linear
// attention, layers that read another layer's cache): layer_types, Gemma's sliding pattern or
// Qwen3.5's full-attention interval.
std::vector<LayerCache> layer_caches(const TransformerConfig& config) {
    const int64_t layers = config.num_hidden_layers;
    std::vector<LayerCache> kinds(static_cast<size_t>(std::max<int64_t>(layers, 0)), LayerCache::Full);
    const json* types = find_key(config, "layer_types", "");
    const json* pattern = find_key(config, "sliding_window_pattern", "attention.sliding_window_pattern");
    const int64_t interval = integer_key(config, "full_attention_interval", "full_attention_interval", 0);
    for (int64_t i = 0; i < layers; ++i) {
        auto& kind = kinds[static_cast<size_t>(i)];
        if (types && types->is_array() && static_cast<int64_t>(types->size()) == layers && (*types)[i].is_string()) {
            const std::string type = (*types)[i].get<std::string>();
            if (type == "sliding_attention") kind = LayerCache::Window;
            else if (type == "linear_attention") kind = LayerCache::None;
        } else if (pattern && pattern->is_array() && static_cast<int64_t>(pattern->size()) == layers) {
            if ((*pattern)[i].is_boolean() && (*pattern)[i].get<bool>()) kind = LayerCache::Window;
        } else if (pattern && pattern->is_number_integer() && pattern->get<int64_t>() > 0) {
            if ((i + 1) % pattern->get<int64_t>() != 0) kind = LayerCache::Window;
        } else if (interval > 0 && (i + 1) % interval != 0) {
            kind = LayerCache::None;
        }
    }
    const int64_t shared = integer_key(config, "num_kv_shared_layers", "attention.shared_kv_layers", 0);
    for (int64_t i = std::max<int64_t>(0, layers - shared); i < layers; ++i) kinds[static_cast<size_t>(i)] = LayerCache::None;
    return kinds;
}

// Whether the layers without a KV cache are linear-attention layers with a state of their own (as
// opposed to layers reading another layer's cache).
bool interval_layers_are_linear(const TransformerConfig& config) {
    return integer_key(config, "linear_num_value_heads", "ssm.time_step_rank", 0) > 0;
}

}  // namespace

std::vector<fs::path> model_path_folders() {
    const char* value = std::getenv("OXINFER_MODEL_PATH");
    std::vector<fs::path> folders;
    if (!value) return folders;
#ifdef _WIN32
    const char separator = ';';
#else
    const char separator = ':';
#endif
    std::string current;
    for (char c : std::string(value) + separator) {
        if (c == separator) {
            if (!current.empty()) folders.emplace_back(current);
            current.clear();
        } else {
            current += c;
        }
    }
    return folders;
}

std::vector<LocalModel> find_local_models(const fs::path& cache, const std::vector<fs::path>& folders) {
    std::vector<LocalModel> models;
    for (const hf::CachedModel& cached : hf::scan_cache(cache)) {
        LocalModel model;
        model.id = cached.id;
        model.source = "cache";
        model.path = cached.path;
        model.format = cached.format;
        model.bytes = cached.bytes;
        model.files = cached.files;
        model.repo = cached.repo_id;
        model.commit = cached.commit;
        if (cached.format == "gguf") model.type = hf::gguf_quant_name(cached.files.front());
        models.push_back(model);
    }
    for (const fs::path& folder : folders) add_folder(folder, models);
    for (LocalModel& model : models) describe(model);
    return models;
}

uint64_t ModelFootprint::cache_bytes(int64_t context, DType kv_type) const {
    const uint64_t positions = static_cast<uint64_t>(std::max<int64_t>(context, 0));
    const uint64_t window = std::min<uint64_t>(positions, static_cast<uint64_t>(std::max<int64_t>(window_positions, 0)));
    const uint64_t f32_bytes = kv_bytes_per_token_f32 * positions + window_kv_bytes_per_token_f32 * window;
    return f32_bytes / 4 * dtype_bytes(kv_type, 1).value_or(4) + state_bytes;
}

ModelFootprint model_footprint(const fs::path& model) {
    const auto checkpoint = Checkpoint::open(model);
    ModelFootprint footprint;
    footprint.config = read_transformer_config(*checkpoint);
    std::map<DType, uint64_t> bytes_by_type;
    for (const TensorInfo& tensor : checkpoint->tensors()) {
        footprint.parameters += tensor.elements();
        footprint.weight_bytes += tensor.nbytes;
        bytes_by_type[tensor.dtype] += tensor.nbytes;
    }
    if (!bytes_by_type.empty())
        footprint.weight_type = std::max_element(bytes_by_type.begin(), bytes_by_type.end(), [](const auto& a, const auto& b) {
                                    return a.second < b.second;
                                })->first;
    const TransformerConfig& c = footprint.config;
    // Full-attention layers may have their own head size and KV heads (Gemma 4's global layers).
    const int64_t full_head = integer_key(c, "global_head_dim", "attention.key_length", c.head_dim);
    const int64_t window_head = integer_key(c, "head_dim", "attention.key_length_swa", c.head_dim);
    const int64_t full_kv_heads = integer_key(c, "num_global_key_value_heads", "", c.num_key_value_heads);
    // Qwen3.5's DeltaNet layers (HF keys, else llama.cpp's ssm.*): the live state and up to 4 snapshots.
    const int64_t key_heads = integer_key(c, "linear_num_key_heads", "ssm.group_count", 0);
    const int64_t value_heads = integer_key(c, "linear_num_value_heads", "ssm.time_step_rank", 0);
    const int64_t key_dim = integer_key(c, "linear_key_head_dim", "ssm.state_size", 0);
    const int64_t value_dim = value_heads > 0 ? integer_key(c, "linear_value_head_dim", "", integer_key(c, "", "ssm.inner_size", 0) / value_heads) : 0;
    const int64_t kernel = integer_key(c, "linear_conv_kernel_dim", "ssm.conv_kernel", 0);
    const int64_t state_floats = value_heads * key_dim * value_dim + (kernel - 1) * (2 * key_heads * key_dim + value_heads * value_dim);
    constexpr int64_t kStatesKept = 1 + 4;
    for (LayerCache kind : layer_caches(c)) {
        if (kind == LayerCache::None && interval_layers_are_linear(c) && state_floats > 0)
            footprint.state_bytes += static_cast<uint64_t>(kStatesKept * state_floats) * 4;
        if (kind == LayerCache::Full)
            footprint.kv_bytes_per_token_f32 += static_cast<uint64_t>(2 * full_kv_heads * full_head) * 4;
        else if (kind == LayerCache::Window)
            footprint.window_kv_bytes_per_token_f32 += static_cast<uint64_t>(2 * c.num_key_value_heads * window_head) * 4;
    }
    // The engine keeps a sliding layer's window plus room to rewind (models/kv_cache: 512 positions).
    const int64_t window = integer_key(c, "sliding_window", "attention.sliding_window", 0);
    footprint.window_positions = window > 0 ? window + 512 : 0;
    if (window <= 0) {  // no window known: those layers keep every position
        footprint.kv_bytes_per_token_f32 += footprint.window_kv_bytes_per_token_f32;
        footprint.window_kv_bytes_per_token_f32 = 0;
    }
    return footprint;
}

}  // namespace oxinfer
