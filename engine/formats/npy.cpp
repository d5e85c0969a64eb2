// NumPy .npy version 1.0: magic, version, a 2-byte header length, a Python dict literal padded so
// that the data starts on a 64-byte boundary, then the raw array.

#include <oxinfer/atomic_file.h>
#include <oxinfer/error.h>
#include <oxinfer/mapped_file.h>
#include <oxinfer/npy.h>

#include "formats/byte_reader.h"

#include <cstring>
#include <string>

namespace oxinfer {

void write_npy_f32(const std::filesystem::path& path, std::span<const int64_t> shape, std::span<const float> values) {
    int64_t count = 1;
    std::string shape_text = "(";
    for (size_t i = 0; i < shape.size(); ++i) {
        count *= shape[i];
        shape_text += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
    }
    shape_text += ")";
    if (count != static_cast<int64_t>(values.size()))
        throw Error(path.string(), "array shape holds " + std::to_string(count) + " values but " + std::to_string(values.size()) + " were given");
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_text + ", }";
    const size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    out += header;
    out.append(reinterpret_cast<const char*>(values.data()), values.size_bytes());
    write_file_atomically(path, out);
}

NpyArray read_npy_f32(const std::filesystem::path& path) {
    const MappedFile file(path, AccessPattern::Sequential);
    ByteReader reader(file.bytes(), path.string());
    if (file.size() < 10 || reader.take_string(6) != "\x93NUMPY") reader.fail("not a .npy file");
    const auto major = reader.read<uint8_t>();
    reader.read<uint8_t>();
    const size_t header_length = major == 1 ? reader.read<uint16_t>() : reader.read<uint32_t>();
    const std::string header(reader.take_string(header_length));
    if (header.find("'descr': '<f4'") == std::string::npos) reader.fail("not a little-endian float32 array");
    if (header.find("'fortran_order': False") == std::string::npos) reader.fail("Fortran-order arrays are not supported");
    const auto open = header.find("'shape': (");
    const auto close = header.find(')', open);
    if (open == std::string::npos || close == std::string::npos) reader.fail("header has no shape");
    NpyArray array;
    int64_t count = 1;
    for (size_t i = open + 10; i < close;) {
        size_t used = 0;
        const long long dim = std::stoll(header.substr(i, close - i), &used);
        if (dim < 0) reader.fail("negative dimension in shape");
        array.shape.push_back(dim);
        count *= dim;
        i += used;
        while (i < close && (header[i] == ',' || header[i] == ' ')) ++i;
    }
    const auto data = reader.take(static_cast<size_t>(count) * 4);
    array.values.resize(static_cast<size_t>(count));
    std::memcpy(array.values.data(), data.data(), data.size());
    return array;
}

}  // namespace oxinfer
