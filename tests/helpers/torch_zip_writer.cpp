#include "torch_zip_writer.h"

#include <array>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace oxinfer::test {
namespace {

template <class T>
void put_le(std::string& out, T value) {
    for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff));
}

int64_t element_bytes(const std::string& storage_class) {
    if (storage_class == "DoubleStorage" || storage_class == "LongStorage" || storage_class == "ComplexFloatStorage") return 8;
    if (storage_class == "FloatStorage" || storage_class == "IntStorage") return 4;
    if (storage_class == "HalfStorage" || storage_class == "BFloat16Storage" || storage_class == "ShortStorage") return 2;
    if (storage_class == "ComplexDoubleStorage") return 16;
    return 1;
}

}  // namespace

// ---- pickle ----------------------------------------------------------------------------------

PickleWriter& PickleWriter::proto(int version) {
    bytes_.push_back(static_cast<char>(0x80));
    bytes_.push_back(static_cast<char>(version));
    return *this;
}
PickleWriter& PickleWriter::op(uint8_t opcode) {
    bytes_.push_back(static_cast<char>(opcode));
    return *this;
}
PickleWriter& PickleWriter::raw(std::string_view bytes) {
    bytes_.append(bytes);
    return *this;
}
PickleWriter& PickleWriter::mark() { return op('('); }
PickleWriter& PickleWriter::stop() { return op('.'); }
PickleWriter& PickleWriter::none() { return op('N'); }
PickleWriter& PickleWriter::boolean(bool value) { return op(value ? 0x88 : 0x89); }

PickleWriter& PickleWriter::integer(int64_t value) {
    if (value >= 0 && value <= 0xff) {
        op('K');
        put_le<uint8_t>(bytes_, static_cast<uint8_t>(value));
    } else if (value >= 0 && value <= 0xffff) {
        op('M');
        put_le<uint16_t>(bytes_, static_cast<uint16_t>(value));
    } else if (value >= INT32_MIN && value <= INT32_MAX) {
        op('J');
        put_le<int32_t>(bytes_, static_cast<int32_t>(value));
    } else {
        // LONG1: the shortest little-endian two's complement form.
        std::string digits;
        put_le<int64_t>(digits, value);
        while (digits.size() > 1) {
            const auto last = static_cast<uint8_t>(digits.back());
            const auto before = static_cast<uint8_t>(digits[digits.size() - 2]);
            if ((last == 0x00 && !(before & 0x80)) || (last == 0xff && (before & 0x80))) {
                digits.pop_back();
            } else {
                break;
            }
        }
        op(0x8a);
        bytes_.push_back(static_cast<char>(digits.size()));
        bytes_ += digits;
    }
    return *this;
}

PickleWriter& PickleWriter::real(double value) {
    op('G');
    uint64_t bits;
    std::memcpy(&bits, &value, 8);
    for (int i = 7; i >= 0; --i) bytes_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    return *this;
}

PickleWriter& PickleWriter::str(std::string_view text) {
    op('X');
    put_le<uint32_t>(bytes_, static_cast<uint32_t>(text.size()));
    bytes_.append(text);
    return *this;
}

PickleWriter& PickleWriter::global(std::string_view module, std::string_view name) {
    op('c');
    bytes_.append(module);
    bytes_.push_back('\n');
    bytes_.append(name);
    bytes_.push_back('\n');
    return *this;
}

PickleWriter& PickleWriter::empty_tuple() { return op(')'); }
PickleWriter& PickleWriter::empty_list() { return op(']'); }
PickleWriter& PickleWriter::empty_dict() { return op('}'); }
PickleWriter& PickleWriter::tuple() { return op('t'); }

PickleWriter& PickleWriter::ints(const std::vector<int64_t>& values) {
    // As CPython's pickler: EMPTY_TUPLE, TUPLE1..3, or MARK ... TUPLE.
    if (values.empty()) return empty_tuple();
    if (values.size() > 3) mark();
    for (int64_t value : values) integer(value);
    if (values.size() > 3) return tuple();
    return op(static_cast<uint8_t>(0x85 + values.size() - 1));
}

PickleWriter& PickleWriter::reduce() { return op('R'); }
PickleWriter& PickleWriter::build() { return op('b'); }
PickleWriter& PickleWriter::setitem() { return op('s'); }
PickleWriter& PickleWriter::setitems() { return op('u'); }
PickleWriter& PickleWriter::append() { return op('a'); }
PickleWriter& PickleWriter::appends() { return op('e'); }
PickleWriter& PickleWriter::binpersid() { return op('Q'); }

PickleWriter& PickleWriter::put(uint32_t index) {
    if (index <= 0xff) {
        op('q');
        put_le<uint8_t>(bytes_, static_cast<uint8_t>(index));
    } else {
        op('r');
        put_le<uint32_t>(bytes_, index);
    }
    return *this;
}

PickleWriter& PickleWriter::get(uint32_t index) {
    if (index <= 0xff) {
        op('h');
        put_le<uint8_t>(bytes_, static_cast<uint8_t>(index));
    } else {
        op('j');
        put_le<uint32_t>(bytes_, index);
    }
    return *this;
}

// ---- zip -------------------------------------------------------------------------------------

uint32_t zip_crc32(std::string_view data) {
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    uint32_t crc = 0xffffffffu;
    for (char ch : data) crc = table[(crc ^ static_cast<uint8_t>(ch)) & 0xff] ^ (crc >> 8);
    return ~crc;
}

std::string write_zip(const std::vector<ZipFile>& files, const ZipOptions& options) {
    std::string out;
    std::string central;
    const uint16_t version_needed = options.zip64 || options.zip64_extra ? 45 : 20;
    for (const ZipFile& file : files) {
        const uint64_t offset = out.size();
        const uint32_t crc = zip_crc32(file.data);
        const uint64_t size = file.data.size();

        std::string local_extra;
        if (options.zip64_extra) {
            put_le<uint16_t>(local_extra, 0x0001);
            put_le<uint16_t>(local_extra, 16);
            put_le<uint64_t>(local_extra, size);
            put_le<uint64_t>(local_extra, size);
        }
        if (options.alignment > 0) {
            // torch's padding: an extra field with id "FB" filled with 'Z' so the data is aligned.
            const uint64_t header_end = offset + 30 + file.name.size() + local_extra.size();
            uint64_t pad = (options.alignment - (header_end + 4) % options.alignment) % options.alignment;
            put_le<uint16_t>(local_extra, 0x4246);
            put_le<uint16_t>(local_extra, static_cast<uint16_t>(pad));
            local_extra.append(pad, 'Z');
        }
        put_le<uint32_t>(out, 0x04034b50);
        put_le<uint16_t>(out, version_needed);
        put_le<uint16_t>(out, file.flags);
        put_le<uint16_t>(out, file.method);
        put_le<uint16_t>(out, 0);  // time
        put_le<uint16_t>(out, 0);  // date
        put_le<uint32_t>(out, crc);
        put_le<uint32_t>(out, options.zip64_extra ? 0xffffffffu : static_cast<uint32_t>(size));
        put_le<uint32_t>(out, options.zip64_extra ? 0xffffffffu : static_cast<uint32_t>(size));
        put_le<uint16_t>(out, static_cast<uint16_t>(file.name.size()));
        put_le<uint16_t>(out, static_cast<uint16_t>(local_extra.size()));
        out += file.name;
        out += local_extra;
        out += file.data;

        std::string central_extra;
        if (options.zip64_extra) {
            put_le<uint16_t>(central_extra, 0x0001);
            put_le<uint16_t>(central_extra, 24);
            put_le<uint64_t>(central_extra, size);
            put_le<uint64_t>(central_extra, size);
            put_le<uint64_t>(central_extra, offset);
        }
        put_le<uint32_t>(central, 0x02014b50);
        put_le<uint16_t>(central, 0x031e);  // made by: Unix, 3.0
        put_le<uint16_t>(central, version_needed);
        put_le<uint16_t>(central, file.flags);
        put_le<uint16_t>(central, file.method);
        put_le<uint16_t>(central, 0);
        put_le<uint16_t>(central, 0);
        put_le<uint32_t>(central, crc);
        put_le<uint32_t>(central, options.zip64_extra ? 0xffffffffu : static_cast<uint32_t>(size));
        put_le<uint32_t>(central, options.zip64_extra ? 0xffffffffu : static_cast<uint32_t>(size));
        put_le<uint16_t>(central, static_cast<uint16_t>(file.name.size()));
        put_le<uint16_t>(central, static_cast<uint16_t>(central_extra.size()));
        put_le<uint16_t>(central, 0);  // comment
        put_le<uint16_t>(central, 0);  // disk
        put_le<uint16_t>(central, 0);  // internal attributes
        put_le<uint32_t>(central, 0);  // external attributes
        put_le<uint32_t>(central, options.zip64_extra ? 0xffffffffu : static_cast<uint32_t>(offset));
        central += file.name;
        central += central_extra;
    }
    const uint64_t cd_offset = out.size();
    out += central;
    if (options.zip64) {
        const uint64_t end64_offset = out.size();
        put_le<uint32_t>(out, 0x06064b50);
        put_le<uint64_t>(out, 44);
        put_le<uint16_t>(out, 45);
        put_le<uint16_t>(out, 45);
        put_le<uint32_t>(out, 0);
        put_le<uint32_t>(out, 0);
        put_le<uint64_t>(out, files.size());
        put_le<uint64_t>(out, files.size());
        put_le<uint64_t>(out, central.size());
        put_le<uint64_t>(out, cd_offset);
        put_le<uint32_t>(out, 0x07064b50);
        put_le<uint32_t>(out, 0);
        put_le<uint64_t>(out, end64_offset);
        put_le<uint32_t>(out, 1);
    }
    put_le<uint32_t>(out, 0x06054b50);
    put_le<uint16_t>(out, 0);
    put_le<uint16_t>(out, 0);
    put_le<uint16_t>(out, static_cast<uint16_t>(files.size()));
    put_le<uint16_t>(out, static_cast<uint16_t>(files.size()));
    put_le<uint32_t>(out, options.zip64_extra ? 0xffffffffu : static_cast<uint32_t>(central.size()));
    put_le<uint32_t>(out, options.zip64_extra ? 0xffffffffu : static_cast<uint32_t>(cd_offset));
    put_le<uint16_t>(out, 0);
    return out;
}

// ---- torch checkpoints -----------------------------------------------------------------------

TorchStorage& TorchCheckpointWriter::add_storage(std::string key, std::string storage_class, std::string data, int64_t numel) {
    storages.push_back({std::move(key), std::move(storage_class), std::move(data), numel});
    return storages.back();
}

TorchTensor& TorchCheckpointWriter::add_tensor(std::string name, std::string key, std::vector<int64_t> shape,
                                               std::vector<int64_t> stride, int64_t storage_offset) {
    TorchTensor tensor;
    tensor.name = std::move(name);
    tensor.key = std::move(key);
    tensor.shape = std::move(shape);
    tensor.stride = std::move(stride);
    tensor.storage_offset = storage_offset;
    tensors.push_back(std::move(tensor));
    return tensors.back();
}

TorchTensor& TorchCheckpointWriter::add_f32(std::string name, std::vector<int64_t> shape, const std::vector<float>& values) {
    const std::string key = std::to_string(storages.size());
    add_storage(key, "FloatStorage", f32_bytes(values));
    return add_tensor(std::move(name), key, std::move(shape));
}

std::string TorchCheckpointWriter::pickle() const {
    // Memo slots as torch's pickler would number them are not needed; the globals that repeat
    // are memoised once and fetched with BINGET, as torch does.
    PickleWriter p;
    uint32_t memo = 0;
    p.proto(2);
    if (!nest_under.empty()) {
        p.empty_dict().put(memo++);
        p.str(nest_under).put(memo++);
    }
    p.global("collections", "OrderedDict");
    const uint32_t ordered_dict = memo++;
    p.put(ordered_dict).empty_tuple().reduce().put(memo++);
    p.mark();
    int64_t rebuild = -1;
    for (const TorchTensor& tensor : tensors) {
        p.str(tensor.name).put(memo++);
        if (tensor.parameter) p.global("torch._utils", "_rebuild_parameter").put(memo++).mark();
        if (rebuild < 0) {
            p.global("torch._utils", "_rebuild_tensor_v2");
            rebuild = memo++;
            p.put(static_cast<uint32_t>(rebuild));
        } else {
            p.get(static_cast<uint32_t>(rebuild));
        }
        const TorchStorage* storage = nullptr;
        for (const TorchStorage& s : storages)
            if (s.key == tensor.key) storage = &s;
        const std::string storage_class = storage ? storage->storage_class : "FloatStorage";
        int64_t numel = storage ? storage->numel : 0;
        if (storage && numel < 0) numel = static_cast<int64_t>(storage->data.size()) / element_bytes(storage_class);

        std::vector<int64_t> stride = tensor.stride;
        if (stride.empty() && !tensor.shape.empty()) {
            stride.assign(tensor.shape.size(), 1);
            for (size_t i = tensor.shape.size() - 1; i-- > 0;) stride[i] = stride[i + 1] * tensor.shape[i + 1];
        }
        p.mark();
        p.mark().str("storage").global("torch", storage_class).str(tensor.key).str("cpu").integer(numel).tuple();
        p.put(memo++).binpersid();
        p.integer(tensor.storage_offset).ints(tensor.shape);
        p.put(memo++).ints(stride);
        p.put(memo++).boolean(false).get(ordered_dict).empty_tuple().reduce();
        p.put(memo++).tuple();
        p.put(memo++).reduce();
        p.put(memo++);
        if (tensor.parameter) {
            p.boolean(false).get(ordered_dict).empty_tuple().reduce().tuple().reduce();
            p.put(memo++);
        }
    }
    p.setitems();
    if (!nest_under.empty()) p.setitem();
    p.stop();
    return p.bytes();
}

std::vector<ZipFile> TorchCheckpointWriter::entries() const {
    std::vector<ZipFile> files;
    files.push_back({archive + "/data.pkl", pickle()});
    if (!byteorder.empty()) files.push_back({archive + "/byteorder", byteorder});
    for (const TorchStorage& storage : storages) files.push_back({archive + "/data/" + storage.key, storage.data});
    files.push_back({archive + "/version", version + "\n"});
    return files;
}

std::string f32_bytes(const std::vector<float>& values) {
    std::string out(values.size() * 4, '\0');
    if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
    return out;
}

void write_string_file(const std::filesystem::path& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace oxinfer::test
