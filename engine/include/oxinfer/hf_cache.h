#pragma once
// The Hugging Face hub cache, read exactly as huggingface_hub lays it out, without Qt:
//
//   <cache>/models--org--name/refs/main                   the commit hash "main" points at (no newline)
//   <cache>/models--org--name/blobs/<etag>                one file per content: sha256 for LFS files,
//                                                         the git blob sha1 for small files
//   <cache>/models--org--name/snapshots/<commit>/<path>   relative symlinks to ../../blobs/<etag>
//                                                         (plain files where symlinks are not allowed)
//
// <cache> is $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, where $HF_HOME
// defaults to $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface. Models that Python tools
// downloaded are found here, and the other way round. The downloading side is oxinfer_hub (Qt).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oxinfer::hf {

std::filesystem::path home_dir();       // $HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface
std::filesystem::path hub_cache_dir();  // $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else home_dir()/hub
std::filesystem::path token_path();     // $HF_TOKEN_PATH, else home_dir()/token
// $HF_TOKEN (or the older $HUGGING_FACE_HUB_TOKEN), else the token file huggingface_hub's login
// writes; "" when there is none.
std::string read_token();

// "models--org--name" for "org/name".
std::string repo_folder_name(std::string_view repo_id);
// 40 lower-case hex digits (a full git commit hash).
bool is_commit_hash(std::string_view text);
// "org/name" (or "name") with the characters the hub allows in repo ids.
bool is_repo_id(std::string_view text);

// A MODEL argument naming a repo: "org/name" or "org/name:Q4_K_M" / "org/name:path/in/repo.gguf".
struct ModelRef {
    std::string repo_id;
    std::string selector;  // quantization or file; "" for the whole repo
};
std::optional<ModelRef> parse_model_ref(std::string_view text);

// GGUF files of a repo grouped by quantization, multi-part files (-00001-of-00003.gguf) as one.
// "Qwen3-0.6B-Q4_K_M.gguf" -> "Q4_K_M"; "model.q8_0.gguf" -> "Q8_0"; "x-UD-Q4_K_XL-00001-of-00002.gguf"
// -> "UD-Q4_K_XL"; a name with no recognisable type is its own group, named by its stem.
std::string gguf_quant_name(std::string_view path);
// True for "-00002-of-00005.gguf" style names; part and count are 1-based.
bool gguf_split_part(std::string_view path, int* part = nullptr, int* count = nullptr);
// Multimodal projector files (mmproj-*.gguf): not a quantization of the model itself.
bool is_gguf_projector(std::string_view path);

struct GgufVariant {
    std::string quant;               // "Q4_K_M"
    std::vector<std::string> files;  // repo paths, parts in order
    uint64_t bytes = 0;
};
// `files` is (repo path, size); non-GGUF and projector files are ignored. Sorted by size.
std::vector<GgufVariant> group_gguf_files(const std::vector<std::pair<std::string, uint64_t>>& files);
// The variant whose quant equals `selector` (any case), or that holds the file `selector`.
const GgufVariant* find_gguf_variant(const std::vector<GgufVariant>& variants, std::string_view selector);

// The commit that `revision` (a branch or tag through refs/, or a commit hash) names in the
// cache, if that snapshot exists. A missing refs/main falls back to the only (or newest) snapshot.
std::optional<std::string> cached_commit(const std::filesystem::path& cache, std::string_view repo_id,
                                         std::string_view revision = "main");
std::optional<std::filesystem::path> snapshot_folder(const std::filesystem::path& cache, std::string_view repo_id,
                                                     std::string_view revision = "main");

// Turns a MODEL argument into a file or folder. A path that exists wins; otherwise a repo id is
// resolved through the cache: the snapshot folder for a safetensors/torch repo, the first file of
// the one GGUF variant (or of the one `selector` names), or the file `selector` names. Anything else
// is returned unchanged (the loader then says it does not exist). Throws oxinfer::Error when a repo
// id is not in the cache, or when a GGUF repo holds several variants and none is named.
std::filesystem::path resolve_model(std::string_view model);
std::filesystem::path resolve_model(std::string_view model, const std::filesystem::path& cache);

// The models in a cache: one entry per safetensors/torch snapshot and per GGUF variant, at
// refs/main (else the newest snapshot).
struct CachedModel {
    std::string id;    // "org/name", or "org/name:Q4_K_M" when the repo has several GGUF variants
    std::string repo_id;
    std::string commit;
    std::filesystem::path path;  // the snapshot folder, or the GGUF variant's first file
    std::string format;          // "gguf", "safetensors", "torch" or "other"
    uint64_t bytes = 0;          // the files' sizes (through the links)
    std::vector<std::string> files;  // paths inside the snapshot
};
std::vector<CachedModel> scan_cache(const std::filesystem::path& cache);

}  // namespace oxinfer::hf
