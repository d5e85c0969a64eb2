#include <oxinfer/error.h>
#include <oxinfer/mapped_file.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#ifdef _WIN32
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace oxinfer {
namespace {

std::string display(const std::filesystem::path& path) { return path.string(); }

#ifndef _WIN32
int posix_advice(AccessPattern pattern) {
    switch (pattern) {
        case AccessPattern::Sequential: return POSIX_MADV_SEQUENTIAL;
        case AccessPattern::Random: return POSIX_MADV_RANDOM;
        case AccessPattern::WillNeed: return POSIX_MADV_WILLNEED;
        case AccessPattern::Normal: break;
    }
    return POSIX_MADV_NORMAL;
}
#endif

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path, AccessPattern pattern) : path_(path) {
#ifdef _WIN32
    HANDLE file = CreateFileW(path.wstring().c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                              pattern == AccessPattern::Sequential ? FILE_FLAG_SEQUENTIAL_SCAN
                              : pattern == AccessPattern::Random   ? FILE_FLAG_RANDOM_ACCESS
                                                                   : FILE_ATTRIBUTE_NORMAL,
                              nullptr);
    if (file == INVALID_HANDLE_VALUE) throw Error(display(path), "cannot open file (Windows error " + std::to_string(GetLastError()) + ")");
    LARGE_INTEGER size{};
    if (!GetFileSizeEx(file, &size)) {
        CloseHandle(file);
        throw Error(display(path), "cannot read the file size");
    }
    file_handle_ = file;
    size_ = static_cast<std::size_t>(size.QuadPart);
    if (size_ == 0) return;
    HANDLE mapping = CreateFileMappingW(file, nullptr, PAGE_READONLY, 0, 0, nullptr);
    if (!mapping) {
        release();
        throw Error(display(path), "cannot map file (Windows error " + std::to_string(GetLastError()) + ")");
    }
    mapping_handle_ = mapping;
    data_ = static_cast<const std::byte*>(MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, 0));
    if (!data_) {
        release();
        throw Error(display(path), "cannot map file view (Windows error " + std::to_string(GetLastError()) + ")");
    }
#else
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(display(path), std::string("cannot open file: ") + std::strerror(errno));
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
        const int error = errno;
        ::close(fd);
        throw Error(display(path), std::string("cannot stat file: ") + std::strerror(error));
    }
    if (S_ISDIR(info.st_mode)) {
        ::close(fd);
        throw Error(display(path), "is a directory, not a file");
    }
    size_ = static_cast<std::size_t>(info.st_size);
    if (size_ > 0) {
        void* address = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
        if (address == MAP_FAILED) {
            const int error = errno;
            ::close(fd);
            throw Error(display(path), std::string("cannot map file: ") + std::strerror(error));
        }
        data_ = static_cast<const std::byte*>(address);
    }
    ::close(fd);  // the mapping keeps the file alive
    if (pattern != AccessPattern::Normal) advise(0, size_, pattern);
#endif
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {
#ifdef _WIN32
    file_handle_ = std::exchange(other.file_handle_, nullptr);
    mapping_handle_ = std::exchange(other.mapping_handle_, nullptr);
#endif
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        release();
        path_ = std::move(other.path_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
#ifdef _WIN32
        file_handle_ = std::exchange(other.file_handle_, nullptr);
        mapping_handle_ = std::exchange(other.mapping_handle_, nullptr);
#endif
    }
    return *this;
}

void MappedFile::advise(std::size_t offset, std::size_t length, AccessPattern pattern) const {
    if (!data_ || offset >= size_) return;
    if (length > size_ - offset) length = size_ - offset;
#ifdef _WIN32
    if (pattern == AccessPattern::WillNeed) {
        WIN32_MEMORY_RANGE_ENTRY range{const_cast<std::byte*>(data_ + offset), length};
        PrefetchVirtualMemory(GetCurrentProcess(), 1, &range, 0);
    }
#else
    // madvise wants a page-aligned start: widen the range down to the page holding `offset`.
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t start = offset / page * page;
    ::posix_madvise(const_cast<std::byte*>(data_ + start), length + (offset - start), posix_advice(pattern));
#endif
}

void MappedFile::release() noexcept {
#ifdef _WIN32
    if (data_) UnmapViewOfFile(data_);
    if (mapping_handle_) CloseHandle(static_cast<HANDLE>(mapping_handle_));
    if (file_handle_) CloseHandle(static_cast<HANDLE>(file_handle_));
    mapping_handle_ = nullptr;
    file_handle_ = nullptr;
#else
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
#endif
    data_ = nullptr;
    size_ = 0;
}

}  // namespace oxinfer
