#include "kernels/huge_pages.h"

#include <oxinfer/error.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#ifdef _WIN32
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#else
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace oxinfer::kernels {
namespace {

size_t round_up(size_t bytes, size_t multiple) { return (bytes + multiple - 1) / multiple * multiple; }

std::string megabytes(size_t bytes) { return std::to_string((bytes + (size_t{1} << 20) - 1) >> 20) + " MB"; }

size_t page_bytes() {
#ifdef _WIN32
    SYSTEM_INFO info;
    GetSystemInfo(&info);
    return info.dwPageSize;
#else
    return static_cast<size_t>(::sysconf(_SC_PAGESIZE));
#endif
}

}  // namespace

HugePageBuffer::HugePageBuffer(size_t bytes) : size_(round_up(bytes, page_bytes())) {
    if (size_ == 0) return;
#ifdef _WIN32
    data_ = static_cast<std::byte*>(VirtualAlloc(nullptr, size_, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE));
    if (!data_) {
        const DWORD error = GetLastError();
        throw Error("memory", "cannot allocate " + megabytes(size_) + " (Windows error " + std::to_string(error) + ")");
    }
#else
    // Over-allocated by one huge page, then trimmed to an aligned range, which the kernel can
    // back with huge pages from its first byte (up to the last whole one).
    const size_t mapped = size_ + kHugePageBytes;
    void* address = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (address == MAP_FAILED) {
        const int error = errno;
        throw Error("memory", "cannot allocate " + megabytes(size_) + ": " + std::strerror(error));
    }
    const auto start = reinterpret_cast<uintptr_t>(address);
    const uintptr_t aligned = round_up(start, kHugePageBytes);
    if (aligned > start) ::munmap(address, aligned - start);
    if (const uintptr_t end = start + mapped, used_end = aligned + size_; end > used_end) ::munmap(reinterpret_cast<void*>(used_end), end - used_end);
    data_ = reinterpret_cast<std::byte*>(aligned);
#ifdef MADV_HUGEPAGE
    ::madvise(data_, size_, MADV_HUGEPAGE);  // advice: without transparent huge pages the memory is still good
#endif
#endif
}

HugePageBuffer::~HugePageBuffer() { release(); }

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
    if (this != &other) {
        release();
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

void HugePageBuffer::release() noexcept {
    if (!data_) return;
#ifdef _WIN32
    VirtualFree(data_, 0, MEM_RELEASE);
#else
    ::munmap(data_, size_);
#endif
    data_ = nullptr;
    size_ = 0;
}

std::byte* HugePageArena::allocate(size_t bytes) {
    constexpr size_t kAlignment = 64;
    bytes = round_up(bytes, kAlignment);
    std::byte* out = nullptr;
    if (bytes > piece_bytes_ / 2) {
        out = own_buffers_.emplace_back(bytes).data();  // the open piece stays open
    } else {
        if (pieces_.empty() || used_ + bytes > pieces_.back().size()) {
            pieces_.emplace_back(piece_bytes_);
            used_ = 0;
        }
        out = pieces_.back().data() + used_;
        used_ += bytes;
    }
    allocated_ += bytes;
    return out;
}

}  // namespace oxinfer::kernels
