#include <oxinfer/atomic_file.h>
#include <oxinfer/error.h>

#include <cstdio>
#include <random>
#include <string>
#include <system_error>

#ifndef _WIN32
#include <unistd.h>
#endif

namespace oxinfer {

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
    std::random_device entropy;
    const std::filesystem::path temporary = path.string() + ".tmp-" + std::to_string(entropy());
    std::FILE* file = std::fopen(temporary.string().c_str(), "wb");
    if (!file) throw Error(path.string(), "cannot create file");
    const bool written = std::fwrite(contents.data(), 1, contents.size(), file) == contents.size() && std::fflush(file) == 0
#ifndef _WIN32
                         && ::fsync(fileno(file)) == 0
#endif
        ;
    const bool closed = std::fclose(file) == 0;
    std::error_code ignored;
    if (!written || !closed) {
        std::filesystem::remove(temporary, ignored);
        throw Error(path.string(), "cannot write file (disk full?)");
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error) {
        std::filesystem::remove(temporary, ignored);
        throw Error(path.string(), "cannot move the finished file into place: " + error.message());
    }
}

}  // namespace oxinfer
