#pragma once
// A read-only memory-mapped file. Weights are used in place from the page cache: loading a
// checkpoint maps it and never copies tensor data that can be used as stored.

#include <cstddef>
#include <filesystem>
#include <span>

namespace oxinfer {

enum class AccessPattern { Normal, Sequential, Random, WillNeed };

class MappedFile {
public:
    // Throws oxinfer::Error naming the file when it cannot be opened or mapped.
    explicit MappedFile(const std::filesystem::path& path, AccessPattern pattern = AccessPattern::Normal);
    ~MappedFile();
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::byte* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
    const std::filesystem::path& path() const noexcept { return path_; }

    // Advice for a byte range (widened to whole pages); ranges outside the file are clipped.
    void advise(std::size_t offset, std::size_t length, AccessPattern pattern) const;

private:
    void release() noexcept;

    std::filesystem::path path_;
    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
#ifdef _WIN32
    void* file_handle_ = nullptr;
    void* mapping_handle_ = nullptr;
#endif
};

}  // namespace oxinfer
