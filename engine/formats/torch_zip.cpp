// PyTorch checkpoints as torch.save writes them since torch 1.6: a zip archive of stored entries
//   <folder>/data.pkl    the pickled object (usually a state dict of tensors)
//   <folder>/byteorder   "little" (torch >= 1.10; absent means little)
//   <folder>/version     the archive format version ("3")
//   <folder>/data/<key>  one entry per storage: the raw little-endian elements
// The pickle is read by a machine that never runs code (formats/pickle.h); the tensor rebuild
// functions torch uses are recognised by name and become views into the storage entries.
// References: torch/serialization.py (_save, _load, persistent_id), torch/_utils.py
// (_rebuild_tensor_v2 and friends), torch/_tensor.py (Tensor.__reduce_ex__).

#include "formats/parsed_tensors.h"
#include "formats/pickle.h"
#include "formats/zip_archive.h"

#include <oxinfer/error.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace oxinfer {
namespace {

using pickle::Kind;
using pickle::Value;

constexpr size_t kMaxRank = 64;            // torch's own limit on tensor dimensions
constexpr int kMaxNesting = 64;            // nested dicts/lists walked when collecting tensors
constexpr uint64_t kMaxVisits = 1u << 24;  // values visited while collecting (shared subtrees count each time)
constexpr int kMaxCallDepth = 8;           // _rebuild_from_type_v2 wrapping another rebuild function

// The storage classes torch names in persistent ids. Typed storages hold elements of one dtype;
// complex and quantized ones are sized but have no oxinfer dtype. UntypedStorage holds bytes
// (torch 2 writes it for dtypes without a legacy class, with _rebuild_tensor_v3 naming the dtype).
struct StorageClass {
    std::string_view name;
    std::optional<DType> dtype;
    uint64_t element_bytes;
};

constexpr StorageClass kStorageClasses[] = {
    {"DoubleStorage", DType::F64, 8},  {"FloatStorage", DType::F32, 4},     {"HalfStorage", DType::F16, 2},
    {"BFloat16Storage", DType::BF16, 2}, {"LongStorage", DType::I64, 8},    {"IntStorage", DType::I32, 4},
    {"ShortStorage", DType::I16, 2},   {"CharStorage", DType::I8, 1},       {"ByteStorage", DType::U8, 1},
    {"BoolStorage", DType::Bool, 1},   {"ComplexDoubleStorage", std::nullopt, 16}, {"ComplexFloatStorage", std::nullopt, 8},
    {"QInt8Storage", std::nullopt, 1}, {"QUInt8Storage", std::nullopt, 1},  {"QInt32Storage", std::nullopt, 4},
    {"QUInt4x2Storage", std::nullopt, 1}, {"QUInt2x4Storage", std::nullopt, 1},
    {"UntypedStorage", DType::U8, 1},  {"_UntypedStorage", DType::U8, 1},
};

const StorageClass* find_storage_class(const Value& global) {
    if (global.kind != Kind::Global) return nullptr;
    if (global.text != "torch" && global.text != "torch.storage" && global.text != "torch.cuda") return nullptr;
    for (const StorageClass& entry : kStorageClasses)
        if (global.name == entry.name) return &entry;
    return nullptr;
}

// torch.<dtype> globals, as _rebuild_tensor_v3 names the element type.
std::optional<DType> torch_dtype(const Value& global) {
    if (global.kind != Kind::Global || global.text != "torch") return std::nullopt;
    static const std::pair<std::string_view, DType> kNames[] = {
        {"float64", DType::F64}, {"double", DType::F64},   {"float32", DType::F32},       {"float", DType::F32},
        {"float16", DType::F16}, {"half", DType::F16},     {"bfloat16", DType::BF16},     {"int64", DType::I64},
        {"long", DType::I64},    {"int32", DType::I32},    {"int", DType::I32},           {"int16", DType::I16},
        {"short", DType::I16},   {"int8", DType::I8},      {"uint8", DType::U8},          {"uint16", DType::U16},
        {"uint32", DType::U32},  {"uint64", DType::U64},   {"bool", DType::Bool},         {"float8_e4m3fn", DType::F8_E4M3},
        {"float8_e5m2", DType::F8_E5M2},
    };
    for (const auto& [name, type] : kNames)
        if (global.name == name) return type;
    return std::nullopt;
}

// Rebuild functions for tensors we cannot represent as a view of one storage. A state dict that
// holds one gets an error naming the tensor rather than silently losing it.
bool unsupported_tensor_function(const Value& global) {
    if (global.kind != Kind::Global || global.text != "torch._utils") return false;
    static const std::string_view kNames[] = {
        "_rebuild_qtensor",          "_rebuild_sparse_tensor",          "_rebuild_sparse_csr_tensor",
        "_rebuild_nested_tensor",    "_rebuild_meta_tensor_no_storage", "_rebuild_wrapper_subclass",
        "_rebuild_device_tensor_from_numpy", "_rebuild_device_tensor_from_cpu_tensor", "_rebuild_xla_tensor",
        "_rebuild_mtia_tensor",      "_rebuild_mps_tensor",
    };
    return std::find(std::begin(kNames), std::end(kNames), global.name) != std::end(kNames);
}

enum NativeTag : uint32_t { kStorageTag = 1, kTensorTag = 2, kUnsupportedTensorTag = 3 };

struct Storage {
    std::string entry_name;            // "archive/data/0"
    std::string type_name;             // "torch.FloatStorage"
    std::optional<DType> dtype;
    uint64_t element_bytes = 1;
    std::span<const std::byte> bytes;  // the declared elements (numel * element_bytes)
};

struct PickledTensor {
    uint32_t storage = 0;
    std::optional<DType> dtype;        // nullopt: the storage's class has no oxinfer dtype
    int64_t storage_offset = 0;        // in elements of `dtype`
    std::vector<int64_t> shape;
    std::vector<int64_t> stride;
};

std::string join(const std::vector<int64_t>& values) {
    std::string out = "[";
    for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
    return out + "]";
}

class TorchHooks : public pickle::Hooks {
public:
    TorchHooks(const ZipArchive& zip, std::string folder) : zip_(zip), folder_(std::move(folder)) {}

    std::vector<Storage> storages;
    std::vector<PickledTensor> tensors;
    std::vector<std::string> unsupported;  // the rebuild function of each unsupported tensor

    // ('storage', storage_class, key, location, numel)
    Value& persistent_load(pickle::Machine& machine, Value& pid) override {
        if (pid.kind != Kind::Tuple || pid.items.empty() || !pid.items[0]->is_string())
            machine.fail("persistent id is a " + pid.describe() + ", not a ('storage', ...) tuple");
        if (pid.items[0]->text != "storage")
            machine.fail("persistent id of unknown kind '" + std::string(pid.items[0]->text) + "' (torch writes only 'storage')");
        if (pid.items.size() != 5) machine.fail("storage persistent id has " + std::to_string(pid.items.size()) + " fields, not 5");
        const Value& type = *pid.items[1];
        const Value& key = *pid.items[2];
        const Value& numel = *pid.items[4];
        const StorageClass* storage_class = find_storage_class(type);
        if (!storage_class) machine.fail("persistent id names unknown storage type " + type.describe());
        if (!key.is_string()) machine.fail("storage key is a " + key.describe() + ", not a string");
        if (numel.kind != Kind::Int || numel.integer < 0) machine.fail("storage size is not a non-negative integer");

        Storage storage;
        storage.entry_name = folder_ + "/data/" + std::string(key.text);
        storage.type_name = type.describe();
        storage.dtype = storage_class->dtype;
        storage.element_bytes = storage_class->element_bytes;
        const ZipEntry* entry = zip_.find(storage.entry_name);
        if (!entry) machine.fail("tensor storage '" + storage.entry_name + "' is missing from the archive");
        const auto count = static_cast<uint64_t>(numel.integer);
        if (count > std::numeric_limits<uint64_t>::max() / storage.element_bytes || count * storage.element_bytes > entry->data.size())
            machine.fail("storage '" + storage.entry_name + "' declares " + std::to_string(count) + " elements of " + storage.type_name +
                         " but its zip entry holds only " + std::to_string(entry->data.size()) + " bytes");
        storage.bytes = entry->data.first(static_cast<size_t>(count * storage.element_bytes));
        storages.push_back(std::move(storage));
        return native(machine, kStorageTag, storages.size() - 1);
    }

    Value* call(pickle::Machine& machine, Value& callee, Value& args) override { return call(machine, callee, args, 0); }

private:
    Value& native(pickle::Machine& machine, NativeTag tag, size_t index) {
        Value& value = machine.make(Kind::Native);
        value.native_tag = tag;
        value.native_index = static_cast<uint32_t>(index);
        return value;
    }

    Value* call(pickle::Machine& machine, Value& callee, Value& args, int depth) {
        if (callee.text == "torch._utils") {
            if (callee.name == "_rebuild_tensor") return &rebuild_tensor(machine, callee, args, 4, 4, false);
            if (callee.name == "_rebuild_tensor_v2") return &rebuild_tensor(machine, callee, args, 6, 7, false);
            if (callee.name == "_rebuild_tensor_v3") return &rebuild_tensor(machine, callee, args, 7, 8, true);
            if (callee.name == "_rebuild_parameter" || callee.name == "_rebuild_parameter_with_state") {
                // (data, requires_grad, backward_hooks[, state]): the parameter is its data.
                if (args.kind == Kind::Tuple && !args.items.empty() && args.items[0]->kind == Kind::Native) return args.items[0];
                return nullptr;
            }
            if (unsupported_tensor_function(callee)) {
                unsupported.push_back(callee.describe());
                return &native(machine, kUnsupportedTensorTag, unsupported.size() - 1);
            }
        }
        if (callee.is_global("torch._tensor", "_rebuild_from_type_v2")) {
            // (func, new_type, args, state): a tensor subclass; the data comes from func(*args).
            if (depth < kMaxCallDepth && args.kind == Kind::Tuple && args.items.size() >= 3 && args.items[0]->kind == Kind::Global &&
                args.items[2]->kind == Kind::Tuple)
                return call(machine, *args.items[0], *args.items[2], depth + 1);
        }
        return nullptr;
    }

    static int64_t integer(pickle::Machine& machine, const Value& value, const std::string& what) {
        if (value.kind != Kind::Int) machine.fail(what + " is a " + value.describe() + ", not an integer");
        return value.integer;
    }

    static std::vector<int64_t> integers(pickle::Machine& machine, const Value& value, const std::string& what) {
        if (value.kind != Kind::Tuple && value.kind != Kind::List) machine.fail(what + " is a " + value.describe() + ", not a tuple");
        if (value.items.size() > kMaxRank)
            machine.fail(what + " has " + std::to_string(value.items.size()) + " dimensions (at most " + std::to_string(kMaxRank) + ")");
        std::vector<int64_t> out;
        out.reserve(value.items.size());
        for (const Value* item : value.items) out.push_back(integer(machine, *item, what + " entry"));
        return out;
    }

    // _rebuild_tensor(storage, storage_offset, size, stride)
    // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
    // _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype[, metadata])
    Value& rebuild_tensor(pickle::Machine& machine, const Value& callee, const Value& args, size_t min_args, size_t max_args, bool v3) {
        const std::string function = callee.describe();
        if (args.kind != Kind::Tuple || args.items.size() < min_args || args.items.size() > max_args)
            machine.fail(function + " called with " + (args.kind == Kind::Tuple ? std::to_string(args.items.size()) + " arguments" : "a " + args.describe()));
        const Value& storage_value = *args.items[0];
        if (storage_value.kind != Kind::Native || storage_value.native_tag != kStorageTag)
            machine.fail(function + " storage argument is a " + storage_value.describe() + ", not a persistent storage");
        PickledTensor tensor;
        tensor.storage = storage_value.native_index;
        tensor.dtype = storages[tensor.storage].dtype;
        tensor.storage_offset = integer(machine, *args.items[1], function + " storage offset");
        tensor.shape = integers(machine, *args.items[2], function + " size");
        tensor.stride = integers(machine, *args.items[3], function + " stride");
        if (tensor.shape.size() != tensor.stride.size())
            machine.fail(function + " size " + join(tensor.shape) + " and stride " + join(tensor.stride) + " differ in length");
        if (v3) {
            const Value& dtype = *args.items[6];
            tensor.dtype = torch_dtype(dtype);
            if (!tensor.dtype) {
                // An unknown dtype (complex32, a future float type...) is refused when a state dict holds it.
                unsupported.push_back(function + " with dtype " + dtype.describe());
                return native(machine, kUnsupportedTensorTag, unsupported.size() - 1);
            }
        }
        tensors.push_back(std::move(tensor));
        return native(machine, kTensorTag, tensors.size() - 1);
    }

    const ZipArchive& zip_;
    std::string folder_;
};

bool contiguous_strides(const std::vector<int64_t>& shape, const std::vector<int64_t>& stride) {
    int64_t expected = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        if (shape[i] != 1 && stride[i] != expected) return false;  // a size-1 dim's stride is never used
        expected *= shape[i];
    }
    return true;
}

// Turns a pickled tensor into a TensorInfo after checking that every element it can reach lies
// inside its storage entry.
TensorInfo make_tensor_info(const std::string& name, const PickledTensor& pickled, const Storage& storage, const std::string& subject) {
    const std::string what = "tensor '" + name + "'";
    if (!pickled.dtype)
        throw Error(subject, what + " is stored as " + storage.type_name + ", an element type oxinfer does not support");
    TensorInfo tensor;
    tensor.name = name;
    tensor.dtype = *pickled.dtype;
    tensor.shape = pickled.shape;
    const auto element_bytes = static_cast<uint64_t>(dtype_traits(tensor.dtype).block_bytes);
    const uint64_t storage_elements = storage.bytes.size() / element_bytes;
    const std::string view = " (size " + join(pickled.shape) + ", stride " + join(pickled.stride) + ", storage offset " +
                             std::to_string(pickled.storage_offset) + ")";

    constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (pickled.storage_offset < 0) throw Error(subject, what + " has a negative storage offset" + view);
    uint64_t elements = 1;
    for (size_t i = 0; i < pickled.shape.size(); ++i) {
        if (pickled.shape[i] < 0) throw Error(subject, what + " has a negative dimension" + view);
        if (pickled.stride[i] < 0) throw Error(subject, what + " has a negative stride" + view);
        const auto dim = static_cast<uint64_t>(pickled.shape[i]);
        if (dim != 0 && elements > kMax / dim) throw Error(subject, what + " has a shape whose element count overflows" + view);
        elements *= dim;
    }
    if (!dtype_bytes(tensor.dtype, elements)) throw Error(subject, what + " has a byte size that overflows" + view);

    const auto offset = static_cast<uint64_t>(pickled.storage_offset);
    if (elements == 0) {
        // An empty view touches nothing; torch accepts any storage offset for it.
        tensor.data = storage.bytes.data() + std::min<uint64_t>(offset, storage_elements) * element_bytes;
        tensor.nbytes = 0;
        return tensor;
    }
    // The farthest element: storage_offset + sum((size - 1) * stride), all checked for overflow.
    uint64_t last = offset;
    for (size_t i = 0; i < pickled.shape.size(); ++i) {
        const auto reach = static_cast<uint64_t>(pickled.shape[i] - 1);
        const auto stride = static_cast<uint64_t>(pickled.stride[i]);
        if (stride != 0 && reach > (kMax - last) / stride) throw Error(subject, what + " reaches past any storage" + view);
        last += reach * stride;
    }
    if (last >= storage_elements)
        throw Error(subject, what + view + " needs " + std::to_string(last + 1) + " elements of " + std::string(dtype_name(tensor.dtype)) +
                                 " but its storage '" + storage.entry_name + "' holds " + std::to_string(storage_elements));
    tensor.data = storage.bytes.data() + offset * element_bytes;
    tensor.nbytes = (last - offset + 1) * element_bytes;
    if (!contiguous_strides(pickled.shape, pickled.stride)) tensor.strides = pickled.stride;
    validate_tensor_bounds(tensor, storage.bytes, subject);  // the checks every format shares
    return tensor;
}

class Collector {
public:
    Collector(const TorchHooks& hooks, const std::string& subject) : hooks_(hooks), subject_(subject) {}

    std::vector<TensorInfo> tensors;

    void visit(const Value& value, const std::string& name, int depth) {
        if (++visits_ > kMaxVisits) throw Error(subject_, "the pickled object is too large to walk (more than " + std::to_string(kMaxVisits) + " values)");
        switch (value.kind) {
            case Kind::Dict:
            case Kind::Object:  // an object of a dict subclass keeps its SETITEMs here
                for (const auto& [key, item] : value.entries) {
                    std::string key_text;
                    if (key->is_string()) {
                        key_text = std::string(key->text);
                    } else if (key->kind == Kind::Int) {
                        key_text = std::to_string(key->integer);  // optimizer state is keyed by parameter index
                    } else {
                        continue;
                    }
                    descend(*item, name.empty() ? key_text : name + "." + key_text, depth);
                }
                break;
            case Kind::List:
            case Kind::Tuple:
                for (size_t i = 0; i < value.items.size(); ++i)
                    descend(*value.items[i], name.empty() ? std::to_string(i) : name + "." + std::to_string(i), depth);
                break;
            case Kind::Native: {
                // A bare torch.save(tensor) has no name of its own: call it "tensor".
                const std::string tensor_name = name.empty() ? "tensor" : name;
                if (value.native_tag == kTensorTag) {
                    const PickledTensor& pickled = hooks_.tensors[value.native_index];
                    add(make_tensor_info(tensor_name, pickled, hooks_.storages[pickled.storage], subject_));
                } else if (value.native_tag == kUnsupportedTensorTag) {
                    throw Error(subject_, "tensor '" + tensor_name + "' is built by " + hooks_.unsupported[value.native_index] +
                                              " (a quantized, sparse, nested, meta or subclass tensor), which oxinfer does not support");
                }
                break;
            }
            default: break;  // ints, strings, opaque objects...: not tensors
        }
    }

private:
    void descend(const Value& value, const std::string& name, int depth) {
        if (depth + 1 > kMaxNesting) throw Error(subject_, "'" + name + "' is nested more than " + std::to_string(kMaxNesting) + " levels deep");
        visit(value, name, depth + 1);
    }

    void add(TensorInfo tensor) {
        if (!names_.insert(tensor.name).second) throw Error(subject_, "the checkpoint holds two tensors named '" + tensor.name + "'");
        tensors.push_back(std::move(tensor));
    }

    const TorchHooks& hooks_;
    const std::string& subject_;
    std::unordered_set<std::string> names_;
    uint64_t visits_ = 0;
};

std::string_view as_text(std::span<const std::byte> bytes) { return {reinterpret_cast<const char*>(bytes.data()), bytes.size()}; }

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
    return text;
}

// Metadata is JSON, which must be valid UTF-8: keep printable ASCII only.
std::string printable(std::string_view text) {
    std::string out(text.substr(0, 256));
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
    return out;
}

// The archive's single top-level folder: the one holding data.pkl.
std::string find_folder(const ZipArchive& zip) {
    std::string folder;
    int found = 0;
    for (const ZipEntry& entry : zip.entries()) {
        const size_t slash = entry.name.find('/');
        if (slash == std::string_view::npos || entry.name.substr(slash + 1) != "data.pkl") continue;
        if (found++ == 0) folder = std::string(entry.name.substr(0, slash));
    }
    if (found > 1) throw Error(zip.subject(), "the zip archive holds several top-level folders with a data.pkl; not a torch checkpoint");
    if (found == 0) {
        if (zip.find("data.pkl")) throw Error(zip.subject(), "data.pkl is not inside a folder; not a torch.save archive");
        throw Error(zip.subject(), "the zip archive has no <folder>/data.pkl entry; not a torch checkpoint");
    }
    return folder;
}

}  // namespace

ParsedTensors parse_torch_zip(std::span<const std::byte> file, const std::string& subject) {
    // Before torch 1.6 (or with _use_new_zipfile_serialization=False) torch.save wrote a bare
    // pickle stream (starting with PROTO) or, much earlier, a tar file.
    const bool pickle_start = file.size() >= 2 && file[0] == std::byte{0x80} && static_cast<uint8_t>(file[1]) <= 5;
    const bool tar = file.size() >= 262 && std::memcmp(file.data() + 257, "ustar", 5) == 0;
    if (pickle_start || tar) throw Error(subject, "legacy (non-zip) torch format is not supported; re-save with torch>=1.6");

    const ZipArchive zip(file, subject);
    const std::string folder = find_folder(zip);
    const std::string prefix = folder + "/";

    const bool torchscript = zip.find(prefix + "constants.pkl") != nullptr ||
                             std::any_of(zip.entries().begin(), zip.entries().end(),
                                         [&](const ZipEntry& entry) { return entry.name.starts_with(prefix + "code/"); });
    if (torchscript)
        throw Error(subject, "this is a TorchScript archive (torch.jit.save), not a torch.save checkpoint; "
                             "load it in Python and save its state_dict() with torch.save");
    if (const ZipEntry* byteorder = zip.find(prefix + "byteorder")) {
        const std::string_view order = trim(as_text(byteorder->data));
        if (order != "little")
            throw Error(subject, "the checkpoint's byte order is '" + std::string(order) + "'; only little-endian checkpoints are supported");
    }
    std::string version;
    if (const ZipEntry* entry = zip.find(prefix + "version")) version = std::string(trim(as_text(entry->data)));
    if (const ZipEntry* entry = zip.find(prefix + ".format_version"); entry && version.empty())
        version = std::string(trim(as_text(entry->data)));

    const ZipEntry& data_pkl = *zip.find(prefix + "data.pkl");
    zip.verify_crc(data_pkl);

    TorchHooks hooks(zip, folder);
    pickle::Machine machine(data_pkl.data, subject, std::string(data_pkl.name));
    const Value& root = machine.run(hooks);

    Collector collector(hooks, subject);
    collector.visit(root, "", 0);

    std::unordered_set<std::string_view> distinct_storages;
    for (const Storage& storage : hooks.storages) distinct_storages.insert(storage.entry_name);

    ParsedTensors out;
    out.tensors = std::move(collector.tensors);
    out.metadata = {
        {"archive", printable(folder)},
        {"entries", zip.entries().size()},
        {"pickle_protocol", machine.protocol()},
        {"root", printable(root.describe())},
        {"storages", distinct_storages.size()},
        {"zip64", zip.zip64()},
    };
    if (!version.empty()) out.metadata["version"] = printable(version);
    if (zip.find(prefix + "byteorder")) out.metadata["byteorder"] = "little";
    return out;
}

}  // namespace oxinfer
