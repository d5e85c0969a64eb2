// The Hugging Face hub cache, read side (see oxinfer/hf_cache.h).

#include <oxinfer/error.h>
#include <oxinfer/hf_cache.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <system_error>

namespace fs = std::filesystem;

namespace oxinfer::hf {
namespace {

std::string env(const char* name) {
    const char* value = std::getenv(name);
    return value ? std::string(value) : std::string();
}

std::string trim(std::string text) {
    const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
    while (!text.empty() && space(static_cast<unsigned char>(text.back()))) text.pop_back();
    size_t start = 0;
    while (start < text.size() && space(static_cast<unsigned char>(text[start]))) ++start;
    return text.substr(start);
}

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string upper(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

fs::path user_home() {
#ifdef _WIN32
    if (std::string profile = env("USERPROFILE"); !profile.empty()) return profile;
#endif
    if (std::string home = env("HOME"); !home.empty()) return home;
    return fs::current_path();
}

// "~" and "~/x" as Python's os.path.expanduser reads them.
fs::path expand_user(const std::string& text) {
    if (text == "~") return user_home();
    if (text.rfind("~/", 0) == 0) return user_home() / text.substr(2);
    return text;
}

std::string read_first_line(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    std::string line;
    std::getline(in, line);
    return trim(line);
}

bool ends_with_ci(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && lower(text.substr(text.size() - suffix.size())) == lower(suffix);
}

std::string file_name(std::string_view path) {
    const size_t slash = path.find_last_of('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

const std::regex& split_suffix() {
    static const std::regex pattern(R"(-(\d{5})-of-(\d{5})\.gguf$)", std::regex::icase);
    return pattern;
}

// The path without its split-part suffix and .gguf: the name shared by every part of one variant.
std::string gguf_base(std::string_view path) {
    std::string text(path);
    std::smatch match;
    if (std::regex_search(text, match, split_suffix())) return text.substr(0, static_cast<size_t>(match.position(0)));
    if (ends_with_ci(text, ".gguf")) text.resize(text.size() - 5);
    return text;
}

bool is_quant_token(const std::string& token) {
    static const std::regex pattern(R"(^(I?Q[1-8](_[0-9A-Z]+)*|TQ[12]_0|B?F16|F32|F64|FP16|FP32|MXFP4(_MOE)?)$)",
                                    std::regex::icase);
    return std::regex_match(token, pattern);
}

std::vector<std::string> split_tokens(const std::string& text, const std::string& separators) {
    std::vector<std::string> tokens;
    std::string current;
    for (char c : text) {
        if (separators.find(c) != std::string::npos) {
            tokens.push_back(current);
            current.clear();
        } else {
            current += c;
        }
    }
    tokens.push_back(current);
    return tokens;
}

// The quant named in one path component ("" when none): the last token that looks like one.
std::string quant_in(const std::string& component) {
    const std::vector<std::string> tokens = split_tokens(component, "-.");
    for (size_t i = tokens.size(); i-- > 0;) {
        if (!is_quant_token(tokens[i])) continue;
        std::string quant = upper(tokens[i]);
        if (i > 0 && upper(tokens[i - 1]) == "UD") quant = "UD-" + quant;
        return quant;
    }
    return {};
}

struct SnapshotFile {
    std::string path;  // generic, relative to the snapshot
    uint64_t bytes = 0;
};

std::vector<SnapshotFile> snapshot_files(const fs::path& folder) {
    std::vector<SnapshotFile> files;
    std::error_code error;
    for (auto it = fs::recursive_directory_iterator(folder, fs::directory_options::skip_permission_denied, error);
         !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
        std::error_code status_error;
        if (!fs::is_regular_file(it->path(), status_error)) continue;  // follows the links; broken ones are skipped
        const uint64_t size = fs::file_size(it->path(), status_error);
        files.push_back({it->path().lexically_relative(folder).generic_string(), status_error ? 0 : size});
    }
    std::sort(files.begin(), files.end(), [](const SnapshotFile& a, const SnapshotFile& b) { return a.path < b.path; });
    return files;
}

std::vector<std::pair<std::string, uint64_t>> as_pairs(const std::vector<SnapshotFile>& files) {
    std::vector<std::pair<std::string, uint64_t>> pairs;
    for (const SnapshotFile& file : files) pairs.emplace_back(file.path, file.bytes);
    return pairs;
}

bool is_safetensors(const std::string& path) { return ends_with_ci(path, ".safetensors"); }
bool is_torch(const std::string& path) {
    const std::string name = lower(file_name(path));
    return (name.rfind("pytorch_model", 0) == 0 && ends_with_ci(name, ".bin")) || ends_with_ci(name, ".pt") ||
           ends_with_ci(name, ".pth");
}

std::string variant_list(const std::vector<GgufVariant>& variants) {
    std::string text;
    for (const GgufVariant& variant : variants) text += (text.empty() ? "" : ", ") + variant.quant;
    return text;
}

}  // namespace

fs::path home_dir() {
    if (std::string home = env("HF_HOME"); !home.empty()) return expand_user(home);
    if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) return expand_user(xdg) / "huggingface";
    return user_home() / ".cache" / "huggingface";
}

fs::path hub_cache_dir() {
    if (std::string cache = env("HF_HUB_CACHE"); !cache.empty()) return expand_user(cache);
    if (std::string legacy = env("HUGGINGFACE_HUB_CACHE"); !legacy.empty()) return expand_user(legacy);
    return home_dir() / "hub";
}

fs::path token_path() {
    if (std::string path = env("HF_TOKEN_PATH"); !path.empty()) return expand_user(path);
    return home_dir() / "token";
}

std::string read_token() {
    if (std::string token = trim(env("HF_TOKEN")); !token.empty()) return token;
    if (std::string token = trim(env("HUGGING_FACE_HUB_TOKEN")); !token.empty()) return token;
    return read_first_line(token_path());
}

std::string repo_folder_name(std::string_view repo_id) {
    std::string out = "models";
    for (const std::string& part : split_tokens(std::string(repo_id), "/")) out += "--" + part;
    return out;
}

bool is_commit_hash(std::string_view text) {
    return text.size() == 40 &&
           std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_repo_id(std::string_view text) {
    const std::vector<std::string> parts = split_tokens(std::string(text), "/");
    if (parts.empty() || parts.size() > 2) return false;
    for (const std::string& part : parts) {
        if (part.empty() || part.size() > 96) return false;
        if (part.find("--") != std::string::npos || part.find("..") != std::string::npos) return false;
        if (part.front() == '-' || part.front() == '.' || part.back() == '-' || part.back() == '.') return false;
        for (char c : part)
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
    }
    return !ends_with_ci(text, ".git");
}

std::optional<ModelRef> parse_model_ref(std::string_view text) {
    const size_t slash = text.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    const size_t colon = text.find(':', slash);
    ModelRef ref;
    ref.repo_id = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) ref.selector = std::string(text.substr(colon + 1));
    if (!is_repo_id(ref.repo_id) || ref.repo_id.find('/') == std::string::npos) return std::nullopt;
    if (colon != std::string_view::npos && ref.selector.empty()) return std::nullopt;
    return ref;
}

bool gguf_split_part(std::string_view path, int* part, int* count) {
    const std::string text(path);
    std::smatch match;
    if (!std::regex_search(text, match, split_suffix())) return false;
    if (part) *part = std::stoi(match[1].str());
    if (count) *count = std::stoi(match[2].str());
    return true;
}

bool is_gguf_projector(std::string_view path) {
    const std::string name = lower(file_name(path));
    return ends_with_ci(name, ".gguf") && (name.rfind("mmproj", 0) == 0 || name.find("-mmproj") != std::string::npos ||
                                           name.find(".mmproj") != std::string::npos);
}

std::string gguf_quant_name(std::string_view path) {
    const std::string base = gguf_base(path);
    const std::vector<std::string> components = split_tokens(base, "/");
    for (size_t i = components.size(); i-- > 0;)
        if (std::string quant = quant_in(components[i]); !quant.empty()) return quant;
    return file_name(base);
}

std::vector<GgufVariant> group_gguf_files(const std::vector<std::pair<std::string, uint64_t>>& files) {
    std::map<std::string, GgufVariant> by_base;
    for (const auto& [path, bytes] : files) {
        if (!ends_with_ci(path, ".gguf") || is_gguf_projector(path)) continue;
        GgufVariant& variant = by_base[gguf_base(path)];
        variant.quant = gguf_quant_name(path);
        variant.files.push_back(path);
        variant.bytes += bytes;
    }
    std::vector<GgufVariant> variants;
    std::map<std::string, int> uses;
    for (auto& entry : by_base) {
        GgufVariant& variant = entry.second;
        std::sort(variant.files.begin(), variant.files.end());
        ++uses[variant.quant];
        variants.push_back(variant);
    }
    // Two different files of one quant type (rare) are told apart by their names.
    for (GgufVariant& variant : variants)
        if (uses[variant.quant] > 1) variant.quant = file_name(gguf_base(variant.files.front()));
    std::stable_sort(variants.begin(), variants.end(),
                     [](const GgufVariant& a, const GgufVariant& b) { return a.bytes < b.bytes; });
    return variants;
}

const GgufVariant* find_gguf_variant(const std::vector<GgufVariant>& variants, std::string_view selector) {
    const std::string wanted = lower(selector);
    for (const GgufVariant& variant : variants)
        if (lower(variant.quant) == wanted) return &variant;
    for (const GgufVariant& variant : variants)
        for (const std::string& file : variant.files)
            if (lower(file) == wanted || lower(file_name(file)) == wanted || lower(gguf_base(file)) == wanted) return &variant;
    return nullptr;
}

std::optional<std::string> cached_commit(const fs::path& cache, std::string_view repo_id, std::string_view revision) {
    const fs::path repo = cache / repo_folder_name(repo_id);
    std::error_code error;
    if (!fs::is_directory(repo / "snapshots", error)) return std::nullopt;
    if (is_commit_hash(revision)) {
        if (fs::is_directory(repo / "snapshots" / std::string(revision), error)) return std::string(revision);
        return std::nullopt;
    }
    const std::string commit = read_first_line(repo / "refs" / std::string(revision));
    if (!commit.empty() && fs::is_directory(repo / "snapshots" / commit, error)) return commit;
    if (revision != "main" || !commit.empty()) return std::nullopt;
    // No refs/main (files fetched by commit hash): the newest snapshot.
    std::optional<std::string> newest;
    fs::file_time_type newest_time{};
    for (const auto& entry : fs::directory_iterator(repo / "snapshots", error)) {
        std::error_code entry_error;
        if (!entry.is_directory(entry_error)) continue;
        const auto time = fs::last_write_time(entry.path(), entry_error);
        if (!newest || time > newest_time) {
            newest = entry.path().filename().string();
            newest_time = time;
        }
    }
    return newest;
}

std::optional<fs::path> snapshot_folder(const fs::path& cache, std::string_view repo_id, std::string_view revision) {
    const auto commit = cached_commit(cache, repo_id, revision);
    if (!commit) return std::nullopt;
    return cache / repo_folder_name(repo_id) / "snapshots" / *commit;
}

fs::path resolve_model(std::string_view model) { return resolve_model(model, hub_cache_dir()); }

fs::path resolve_model(std::string_view model, const fs::path& cache) {
    const fs::path as_path{std::string(model)};
    std::error_code error;
    if (fs::exists(as_path, error)) return as_path;
    const auto ref = parse_model_ref(model);
    if (!ref) return as_path;
    const auto folder = snapshot_folder(cache, ref->repo_id);
    if (!folder)
        throw Error(std::string(model), "no such file or folder, and not in the Hugging Face cache " + cache.string() +
                                            " ('oxinfer pull " + ref->repo_id + "' downloads it)");
    const std::vector<SnapshotFile> files = snapshot_files(*folder);
    const std::vector<GgufVariant> variants = group_gguf_files(as_pairs(files));
    if (!ref->selector.empty()) {
        if (fs::exists(*folder / ref->selector, error)) return *folder / ref->selector;
        if (const GgufVariant* variant = find_gguf_variant(variants, ref->selector)) return *folder / variant->files.front();
        std::string known = variant_list(variants);
        throw Error(std::string(model), "no file or quantization '" + ref->selector + "' in the cached snapshot " +
                                            folder->string() + (known.empty() ? "" : " (quantizations: " + known + ")"));
    }
    const bool weights_folder = fs::exists(*folder / "config.json", error) ||
                                std::any_of(files.begin(), files.end(), [](const SnapshotFile& file) {
                                    return is_safetensors(file.path) || is_torch(file.path);
                                });
    if (weights_folder || variants.empty()) return *folder;
    if (variants.size() == 1) return *folder / variants.front().files.front();
    throw Error(std::string(model), std::to_string(variants.size()) + " GGUF quantizations are cached (" +
                                        variant_list(variants) + "); name one, e.g. " + ref->repo_id + ":" +
                                        variants.front().quant);
}

std::vector<CachedModel> scan_cache(const fs::path& cache) {
    std::vector<CachedModel> models;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(cache, error)) {
        const std::string folder_name = entry.path().filename().string();
        if (folder_name.rfind("models--", 0) != 0) continue;
        std::string repo_id;
        std::string rest = folder_name.substr(8);
        for (size_t at; (at = rest.find("--")) != std::string::npos; rest = rest.substr(at + 2)) repo_id += rest.substr(0, at) + "/";
        repo_id += rest;
        const auto commit = cached_commit(cache, repo_id);
        if (!commit) continue;
        const fs::path snapshot = entry.path() / "snapshots" / *commit;
        const std::vector<SnapshotFile> files = snapshot_files(snapshot);
        if (files.empty()) continue;
        const std::vector<GgufVariant> variants = group_gguf_files(as_pairs(files));

        CachedModel rest_model;
        rest_model.id = repo_id;
        rest_model.repo_id = repo_id;
        rest_model.commit = *commit;
        rest_model.path = snapshot;
        bool safetensors = false, torch = false;
        for (const SnapshotFile& file : files) {
            if (ends_with_ci(file.path, ".gguf") && !is_gguf_projector(file.path)) continue;
            safetensors = safetensors || is_safetensors(file.path);
            torch = torch || is_torch(file.path);
            rest_model.files.push_back(file.path);
            rest_model.bytes += file.bytes;
        }
        rest_model.format = safetensors ? "safetensors" : torch ? "torch" : "other";
        const bool weights = safetensors || torch;
        if (weights || variants.empty()) models.push_back(rest_model);
        for (const GgufVariant& variant : variants) {
            CachedModel model;
            model.repo_id = repo_id;
            model.id = (variants.size() > 1 || weights) ? repo_id + ":" + variant.quant : repo_id;
            model.commit = *commit;
            model.path = snapshot / variant.files.front();
            model.format = "gguf";
            model.files = variant.files;
            model.bytes = variant.bytes;
            models.push_back(model);
        }
    }
    std::sort(models.begin(), models.end(), [](const CachedModel& a, const CachedModel& b) { return a.id < b.id; });
    return models;
}

}  // namespace oxinfer::hf
