#pragma once
// Writes torch.save-style checkpoints for tests: a zip archive of stored entries
// (<archive>/data.pkl, <archive>/byteorder, <archive>/version, <archive>/data/<key>) whose pickle
// uses the opcodes torch.save emits. Every part can be bent to make bad inputs: the pickle can be
// written by hand with PickleWriter, entries can be dropped, compressed-flagged or replaced, and
// the zip writer can be asked for ZIP64 records.

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace oxinfer::test {

// Emits pickle opcodes (protocol 2 unless proto() says otherwise).
class PickleWriter {
public:
    PickleWriter& proto(int version = 2);
    PickleWriter& op(uint8_t opcode);         // one raw opcode byte
    PickleWriter& raw(std::string_view bytes);
    PickleWriter& mark();
    PickleWriter& stop();
    PickleWriter& none();
    PickleWriter& boolean(bool value);
    PickleWriter& integer(int64_t value);     // BININT1 / BININT2 / BININT / LONG1, as CPython picks
    PickleWriter& real(double value);         // BINFLOAT
    PickleWriter& str(std::string_view text); // BINUNICODE
    PickleWriter& global(std::string_view module, std::string_view name);  // GLOBAL
    PickleWriter& empty_tuple();
    PickleWriter& empty_list();
    PickleWriter& empty_dict();
    PickleWriter& tuple();                    // TUPLE (closes a mark)
    PickleWriter& ints(const std::vector<int64_t>& values);  // a tuple of ints, as torch.Size pickles
    PickleWriter& reduce();
    PickleWriter& build();
    PickleWriter& setitem();
    PickleWriter& setitems();
    PickleWriter& append();
    PickleWriter& appends();
    PickleWriter& binpersid();
    PickleWriter& put(uint32_t index);        // BINPUT / LONG_BINPUT
    PickleWriter& get(uint32_t index);        // BINGET / LONG_BINGET

    const std::string& bytes() const { return bytes_; }

private:
    std::string bytes_;
};

// One file of a zip archive. `method` and `flags` are written as given (the data is never
// compressed: a non-zero method only makes the entry claim to be).
struct ZipFile {
    std::string name;
    std::string data;
    uint16_t method = 0;
    uint16_t flags = 0x0800;  // UTF-8 names, as torch writes
};

struct ZipOptions {
    bool zip64 = true;        // torch always writes the ZIP64 end record and locator
    bool zip64_extra = false; // store sizes and offsets in ZIP64 extra fields (0xffffffff in the headers)
    uint32_t alignment = 64;  // pad local headers (torch's "FB" extra field) so data starts aligned; 0: none
};

std::string write_zip(const std::vector<ZipFile>& files, const ZipOptions& options = {});

// A storage: the raw little-endian bytes of `data/<key>`.
struct TorchStorage {
    std::string key;
    std::string storage_class = "FloatStorage";  // torch.<class> in the persistent id
    std::string data;
    int64_t numel = -1;                          // the persistent id's element count; -1: data size / element size
};

// A tensor of the state dict: a view of a storage.
struct TorchTensor {
    std::string name;
    std::string key;                 // its storage
    std::vector<int64_t> shape;
    std::vector<int64_t> stride;     // empty: contiguous row-major
    int64_t storage_offset = 0;
    bool parameter = false;          // wrap in torch._utils._rebuild_parameter
};

class TorchCheckpointWriter {
public:
    std::string archive = "archive";  // the top-level folder
    std::vector<TorchStorage> storages;
    std::vector<TorchTensor> tensors;
    std::string nest_under;          // non-empty: {nest_under: state_dict}
    std::string byteorder = "little"; // empty: no byteorder entry
    std::string version = "3";

    TorchStorage& add_storage(std::string key, std::string storage_class, std::string data, int64_t numel = -1);
    TorchTensor& add_tensor(std::string name, std::string key, std::vector<int64_t> shape, std::vector<int64_t> stride = {},
                            int64_t storage_offset = 0);
    // A contiguous float32 tensor with its own storage (key = its index).
    TorchTensor& add_f32(std::string name, std::vector<int64_t> shape, const std::vector<float>& values);

    std::string pickle() const;              // the state dict, as torch.save pickles it
    std::vector<ZipFile> entries() const;    // data.pkl, byteorder, data/<key>..., version
    std::string build(const ZipOptions& options = {}) const { return write_zip(entries(), options); }
};

std::string f32_bytes(const std::vector<float>& values);
uint32_t zip_crc32(std::string_view data);
void write_string_file(const std::filesystem::path& path, std::string_view bytes);  // throws std::runtime_error

}  // namespace oxinfer::test
