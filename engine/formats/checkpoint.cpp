// Opening a checkpoint: picks the format (by content, not by file name), maps the files, runs the
// format's parser, and for Hugging Face folders reads the shard index and the config files.

#include "formats/parsed_tensors.h"

#include <oxinfer/checkpoint.h>
#include <oxinfer/error.h>
#include <oxinfer/mapped_file.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

namespace oxinfer {

namespace fs = std::filesystem;

struct Checkpoint::Impl {
    std::vector<MappedFile> mappings;
    std::unordered_map<std::string, size_t> index;
};

namespace {

nlohmann::json read_json_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path.string(), "cannot open file");
    std::ostringstream text;
    text << in.rdbuf();
    try {
        return nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::exception& e) {
        throw Error(path.string(), std::string("not valid JSON: ") + e.what());
    }
}

CheckpointFormat detect_format(std::span<const std::byte> bytes, const fs::path& path) {
    auto starts_with = [&](const char* magic) {
        const size_t n = std::strlen(magic);
        return bytes.size() >= n && std::memcmp(bytes.data(), magic, n) == 0;
    };
    if (starts_with("GGUF")) return CheckpointFormat::Gguf;
    if (starts_with("PK\x03\x04") || starts_with("PK\x05\x06")) return CheckpointFormat::Torch;
    // Safetensors before the pickle check: its 8-byte header length may well start with 0x80.
    if (bytes.size() >= 9 && bytes[8] == std::byte{'{'}) return CheckpointFormat::Safetensors;
    // A legacy torch file is a bare pickle stream (0x80 = PROTO); the torch parser explains it.
    if (!bytes.empty() && bytes[0] == std::byte{0x80}) return CheckpointFormat::Torch;
    throw Error(path.string(), bytes.empty() ? "file is empty" : "unknown checkpoint format (expected safetensors, GGUF or a PyTorch zip archive)");
}

ParsedTensors parse(CheckpointFormat format, std::span<const std::byte> bytes, const std::string& subject) {
    switch (format) {
        case CheckpointFormat::Safetensors: return parse_safetensors(bytes, subject);
        case CheckpointFormat::Gguf: return parse_gguf(bytes, subject);
        case CheckpointFormat::Torch: return parse_torch_zip(bytes, subject);
    }
    throw Error(subject, "unknown format");
}

// Weight files of a Hugging Face folder, in load order, from the shard index when there is one.
std::vector<fs::path> folder_weight_files(const fs::path& folder) {
    for (const char* index_name : {"model.safetensors.index.json", "pytorch_model.bin.index.json"}) {
        const fs::path index_path = folder / index_name;
        if (!fs::exists(index_path)) continue;
        const nlohmann::json index = read_json_file(index_path);
        const auto map = index.find("weight_map");
        if (!index.is_object() || map == index.end() || !map->is_object())
            throw Error(index_path.string(), "has no \"weight_map\" object");
        std::vector<fs::path> files;
        std::set<std::string> seen;
        for (const auto& [tensor, shard] : map->items()) {
            if (!shard.is_string()) throw Error(index_path.string(), "weight_map entry for '" + tensor + "' is not a file name");
            const std::string name = shard.get<std::string>();
            if (name.empty() || fs::path(name).is_absolute() || name.find("..") != std::string::npos)
                throw Error(index_path.string(), "weight_map names an invalid shard path '" + name + "'");
            if (!seen.insert(name).second) continue;
            if (!fs::exists(folder / name))
                throw Error(index_path.string(), "names shard '" + name + "' (for tensor '" + tensor + "') which does not exist");
            files.push_back(folder / name);
        }
        std::sort(files.begin(), files.end());
        if (files.empty()) throw Error(index_path.string(), "weight_map is empty");
        return files;
    }
    for (const char* single : {"model.safetensors", "pytorch_model.bin"})
        if (fs::exists(folder / single)) return {folder / single};

    std::vector<fs::path> safetensors, gguf;
    for (const auto& entry : fs::directory_iterator(folder)) {
        if (!entry.is_regular_file()) continue;
        const auto extension = entry.path().extension();
        if (extension == ".safetensors") safetensors.push_back(entry.path());
        if (extension == ".gguf") gguf.push_back(entry.path());
    }
    std::sort(safetensors.begin(), safetensors.end());
    if (!safetensors.empty()) return safetensors;
    if (gguf.size() == 1) return gguf;
    if (gguf.size() > 1) throw Error(folder.string(), "holds several GGUF files: name the one to open");
    throw Error(folder.string(), "no model weights found (expected *.safetensors, pytorch_model.bin or a .gguf file)");
}

}  // namespace

std::string_view format_name(CheckpointFormat format) {
    switch (format) {
        case CheckpointFormat::Safetensors: return "safetensors";
        case CheckpointFormat::Gguf: return "gguf";
        case CheckpointFormat::Torch: return "torch";
    }
    return "unknown";
}

Checkpoint::Checkpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Checkpoint::~Checkpoint() = default;

std::unique_ptr<Checkpoint> Checkpoint::open(const fs::path& file_or_folder) {
    std::error_code error;
    if (!fs::exists(file_or_folder, error)) throw Error(file_or_folder.string(), "no such file or folder");
    const bool folder = fs::is_directory(file_or_folder, error);
    const std::vector<fs::path> weight_files = folder ? folder_weight_files(file_or_folder) : std::vector<fs::path>{file_or_folder};

    std::unique_ptr<Checkpoint> checkpoint(new Checkpoint(std::make_unique<Impl>()));
    checkpoint->path_ = file_or_folder;
    checkpoint->metadata_ = nlohmann::json::object();
    checkpoint->metadata_types_ = nlohmann::json::object();
    if (folder) {
        for (const char* name : {"config", "generation_config"}) {
            const fs::path config = file_or_folder / (std::string(name) + ".json");
            if (fs::exists(config)) checkpoint->metadata_[name] = read_json_file(config);
        }
    }

    Impl& impl = *checkpoint->impl_;
    for (size_t i = 0; i < weight_files.size(); ++i) {
        const fs::path& path = weight_files[i];
        MappedFile mapping(path, AccessPattern::Random);
        const CheckpointFormat format = detect_format(mapping.bytes(), path);
        if (i == 0) {
            checkpoint->format_ = format;
        } else if (format != checkpoint->format_) {
            throw Error(path.string(), "is a " + std::string(format_name(format)) + " file among " +
                                           std::string(format_name(checkpoint->format_)) + " shards");
        }
        ParsedTensors parsed = parse(format, mapping.bytes(), path.string());
        for (TensorInfo& tensor : parsed.tensors) {
            tensor.file_index = static_cast<int>(i);
            if (!impl.index.emplace(tensor.name, checkpoint->tensors_.size()).second)
                throw Error(path.string(), "tensor '" + tensor.name + "' also appears in " +
                                               weight_files[static_cast<size_t>(checkpoint->tensors_[impl.index[tensor.name]].file_index)].filename().string());
            checkpoint->tensors_.push_back(std::move(tensor));
        }
        if (format == CheckpointFormat::Gguf) {
            checkpoint->metadata_.update(parsed.metadata);
            checkpoint->metadata_types_ = std::move(parsed.metadata_types);
        } else if (!parsed.metadata.empty()) {
            checkpoint->metadata_[std::string(format_name(format))][path.filename().string()] = std::move(parsed.metadata);
        }
        checkpoint->files_.push_back(path);
        impl.mappings.push_back(std::move(mapping));  // moving a MappedFile keeps its address range
    }
    return checkpoint;
}

std::string Checkpoint::architecture() const {
    if (auto config = metadata_.find("config"); config != metadata_.end() && config->is_object()) {
        if (auto architectures = config->find("architectures");
            architectures != config->end() && architectures->is_array() && !architectures->empty() && (*architectures)[0].is_string())
            return (*architectures)[0].get<std::string>();
    }
    if (auto arch = metadata_.find("general.architecture"); arch != metadata_.end() && arch->is_string()) return arch->get<std::string>();
    return {};
}

const TensorInfo* Checkpoint::find(std::string_view name) const {
    const auto it = impl_->index.find(std::string(name));
    return it == impl_->index.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& Checkpoint::get(std::string_view name) const {
    if (const TensorInfo* tensor = find(name)) return *tensor;
    throw Error(path_.string(), "has no tensor named '" + std::string(name) + "'");
}

std::vector<float> Checkpoint::read_f32(const TensorInfo& tensor) const {
    if (!can_convert_to_f32(tensor.dtype))
        throw Error(path_.string(), "tensor '" + tensor.name + "' has unsupported tensor type " + std::string(dtype_name(tensor.dtype)));
    const auto count = static_cast<size_t>(tensor.elements());
    std::vector<float> out(count);
    if (tensor.contiguous()) {
        convert_to_f32(tensor.dtype, tensor.data, out.data(), static_cast<int64_t>(count));
        return out;
    }
    // A strided view (torch only, plain types): gather element by element in row-major order.
    const auto element_bytes = static_cast<size_t>(dtype_traits(tensor.dtype).block_bytes);
    const size_t rank = tensor.shape.size();
    std::vector<int64_t> position(rank, 0);
    for (size_t i = 0; i < count; ++i) {
        int64_t offset = 0;
        for (size_t d = 0; d < rank; ++d) offset += position[d] * tensor.strides[d];
        convert_to_f32(tensor.dtype, tensor.data + static_cast<size_t>(offset) * element_bytes, &out[i], 1);
        for (size_t d = rank; d-- > 0;) {
            if (++position[d] < tensor.shape[d]) break;
            position[d] = 0;
        }
    }
    return out;
}

}  // namespace oxinfer
