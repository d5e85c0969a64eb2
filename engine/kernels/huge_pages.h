#pragma once
// Memory that the kernels stream from, asked of the system in 2 MB-aligned pieces backed by huge
// pages where it offers them (Linux's transparent huge pages, which most distributions give to
// memory that asks for them). Reading weights through 4 KB pages costs a translation every 4 KB:
// on a 2-core Xeon VM the bf16 GEMV streamed 1.2 GB at 26-29 GB/s from 4 KB pages (the mapped
// file or anonymous memory) and at 32.5-33 GB/s from huge pages.
//
// Elsewhere (Windows, macOS) the memory is ordinary pages: large pages there need privileges or
// are not offered to applications.

#include <cstddef>
#include <memory>
#include <vector>

namespace oxinfer::kernels {

// One zero-filled allocation of `bytes` (rounded up to whole pages of the system's size),
// aligned to kHugePageBytes (on Windows to its allocation granularity): the whole huge pages it
// spans can be huge pages, a last part smaller than one is ordinary pages, so that nothing is
// allocated beyond what was asked for.
class HugePageBuffer {
public:
    static constexpr size_t kHugePageBytes = size_t{2} << 20;

    HugePageBuffer() = default;
    explicit HugePageBuffer(size_t bytes);  // throws oxinfer::Error when the system refuses
    ~HugePageBuffer();
    HugePageBuffer(HugePageBuffer&& other) noexcept;
    HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
    HugePageBuffer(const HugePageBuffer&) = delete;
    HugePageBuffer& operator=(const HugePageBuffer&) = delete;

    std::byte* data() const { return data_; }
    size_t size() const { return size_; }

private:
    void release() noexcept;

    std::byte* data_ = nullptr;
    size_t size_ = 0;  // what was asked for, rounded up to whole pages
};

// Many allocations carved in turn out of HugePageBuffers of `piece_bytes`: weight matrices are
// often smaller than a huge page (a 1024 x 1024 Q4_K matrix is 576 KB), and a buffer each would
// pad them to whole huge pages. One larger than half a piece gets a buffer of its own. Freed all
// at once with the arena.
class HugePageArena {
public:
    explicit HugePageArena(size_t piece_bytes = size_t{64} << 20) : piece_bytes_(piece_bytes) {}

    // `bytes` of zeroed memory, 64-byte aligned.
    std::byte* allocate(size_t bytes);
    size_t allocated_bytes() const { return allocated_; }

private:
    size_t piece_bytes_;
    std::vector<HugePageBuffer> pieces_;  // the last one is open
    std::vector<HugePageBuffer> own_buffers_;
    size_t used_ = 0;  // of the open piece
    size_t allocated_ = 0;
};

}  // namespace oxinfer::kernels
