// The memory the engine repacks weights into (kernels/huge_pages.h): sizes, alignment, zeroed and
// disjoint allocations, and on Linux the kernel's own account (/proc/self/smaps) that the memory
// may be backed by transparent huge pages.

#include "kernels/huge_pages.h"

#include <QTest>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#ifdef _WIN32
#include <windows.h>
#else
#include <unistd.h>
#endif
#ifdef __linux__
#include <sys/prctl.h>
#endif

using namespace oxinfer::kernels;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

bool all_zero(const std::byte* data, size_t bytes) {
    return std::all_of(data, data + bytes, [](std::byte b) { return b == std::byte{0}; });
}

uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

size_t system_page_bytes() {
#ifdef _WIN32
    SYSTEM_INFO info;
    GetSystemInfo(&info);
    return info.dwPageSize;
#else
    return static_cast<size_t>(sysconf(_SC_PAGESIZE));
#endif
}

#ifdef __linux__
// The value of `field` ("THPeligible") in /proc/self/smaps for the mapping holding `p`; -1 when
// the kernel does not report it.
long smaps_field(const void* p, const std::string& field) {
    std::ifstream smaps("/proc/self/smaps");
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        uintptr_t begin = 0, end = 0;
        // A mapping's header: "begin-end perms offset dev inode [path]", addresses in hex.
        if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 && line.find(':') > line.find(' ')) {
            inside = begin <= address(p) && address(p) < end;
            continue;
        }
        if (inside && line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
    }
    return -1;
}

// The size of the kernel's transparent huge pages; 0 when it does not say.
size_t huge_page_bytes() {
    std::ifstream file("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
    size_t bytes = 0;
    return file >> bytes ? bytes : 0;
}

std::string transparent_huge_pages_mode() {
    std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string modes;
    std::getline(file, modes);
    const size_t open = modes.find('['), close = modes.find(']');
    return open == std::string::npos || close == std::string::npos ? "" : modes.substr(open + 1, close - open - 1);
}
#endif

}  // namespace

class HugePagesTest : public QObject {
    Q_OBJECT

private slots:
    void bufferIsAlignedZeroedWholePages() {
        const size_t page = system_page_bytes();
        const HugePageBuffer buffer(3 * kMiB + 1);
        QCOMPARE(buffer.size(), 3 * kMiB + page);  // whole pages, not whole huge pages
#ifndef _WIN32  // Windows aligns to its allocation granularity (64 KB)
        QCOMPARE(address(buffer.data()) % HugePageBuffer::kHugePageBytes, uintptr_t{0});
#endif
        QVERIFY(all_zero(buffer.data(), buffer.size()));
        std::fill(buffer.data(), buffer.data() + buffer.size(), std::byte{0x5a});  // every byte is writable
        QCOMPARE(buffer.data()[buffer.size() - 1], std::byte{0x5a});

        const HugePageBuffer empty(0);
        QCOMPARE(empty.size(), size_t{0});
        QVERIFY(empty.data() == nullptr);
    }

    void bufferMovesItsMemory() {
        HugePageBuffer first(kMiB);
        std::byte* const data = first.data();
        HugePageBuffer second(std::move(first));
        QVERIFY(first.data() == nullptr);
        QCOMPARE(first.size(), size_t{0});
        QVERIFY(second.data() == data);
        HugePageBuffer third(kMiB);
        third = std::move(second);
        QVERIFY(third.data() == data);
        QCOMPARE(third.size(), kMiB);
    }

    void arenaHandsOutDisjointAlignedZeroedMemory() {
        HugePageArena arena(4 * kMiB);
        const size_t sizes[] = {100, 64, 1, 1500 * 1024, 3 * kMiB, 70, 2 * kMiB + 1, 5};
        std::vector<std::pair<std::byte*, size_t>> blocks;
        size_t expected_total = 0;
        for (size_t i = 0; i < std::size(sizes); ++i) {
            std::byte* p = arena.allocate(sizes[i]);
            QCOMPARE(address(p) % 64, uintptr_t{0});
            QVERIFY(all_zero(p, sizes[i]));
            std::fill(p, p + sizes[i], static_cast<std::byte>(i + 1));
            blocks.emplace_back(p, sizes[i]);
            expected_total += (sizes[i] + 63) / 64 * 64;
        }
        QCOMPARE(arena.allocated_bytes(), expected_total);
        // Each block still holds its own pattern: none overlaps another.
        for (size_t i = 0; i < blocks.size(); ++i) {
            const auto [p, n] = blocks[i];
            QVERIFY2(std::all_of(p, p + n, [&](std::byte b) { return b == static_cast<std::byte>(i + 1); }), qPrintable(QString::number(i)));
        }
        // The allocations larger than half a piece (3 MiB, 2 MiB + 1) took buffers of their own, and
        // the small ones after them went on filling the open piece.
        QCOMPARE(address(blocks[5].first), address(blocks[3].first) + (1500 * 1024 + 63) / 64 * 64);
        QCOMPARE(address(blocks[7].first), address(blocks[5].first) + 128);
    }

    void memoryMayBeBackedByHugePages() {
#ifndef __linux__
        QSKIP("huge pages are asked for on Linux only");
#else
        const std::string mode = transparent_huge_pages_mode();
        if (mode.empty() || mode == "never") QSKIP("transparent huge pages are off on this system");
        if (prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1) QSKIP("transparent huge pages are off for this process");
        // The buffer spans whole huge pages of the kernel's size (2 MB on x86-64, larger with
        // bigger base pages on arm64), or the kernel never finds it eligible.
        const size_t huge_page = huge_page_bytes();
        if (huge_page != HugePageBuffer::kHugePageBytes) QSKIP("this kernel's huge pages are not the 2 MB the buffers align to");
        const HugePageBuffer buffer(4 * huge_page);
        std::fill(buffer.data(), buffer.data() + buffer.size(), std::byte{1});
        const long eligible = smaps_field(buffer.data(), "THPeligible");
        if (eligible < 0) QSKIP("this kernel does not report THPeligible in /proc/self/smaps");
        // In "madvise" mode only because the buffer asked for huge pages; in "always" mode any
        // large anonymous mapping is eligible, and this check cannot tell.
        QCOMPARE(eligible, 1L);
#endif
    }
};

QTEST_GUILESS_MAIN(HugePagesTest)
#include "test_huge_pages.moc"
