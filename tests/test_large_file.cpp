// A 4.5 GB GGUF (sparse on disk) is opened and one tensor past the 4 GiB mark read, while the
// process stays far below the file's size: the readers map files and touch only what they need.

#include "checkpoint_writers.h"

#include <oxinfer/checkpoint.h>

#include <QTemporaryDir>
#include <QTest>

#include <cstring>
#include <fstream>

#include <sys/resource.h>

using namespace oxinfer;
using namespace oxinfer::test;
namespace fs = std::filesystem;

namespace {

long peak_rss_kib() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;  // KiB on Linux
}

}  // namespace

class LargeFileTest : public QObject {
    Q_OBJECT

private slots:
    void readsPastFourGibWithoutLoadingTheFile() {
        QTemporaryDir dir;
        const fs::path path = fs::path(dir.path().toStdString()) / "large.gguf";
        GgufWriter writer;
        writer.add_string("general.architecture", "llama");
        const int64_t rows = int64_t{1} << 20;  // 2 GiB of f16 each
        writer.add_tensor(raw_tensor("blk.0.ffn_up.weight", DType::F16, {rows, 1024}, {}));
        writer.add_tensor(raw_tensor("blk.1.ffn_up.weight", DType::F16, {rows, 1024}, {}));
        writer.add_tensor(raw_tensor("blk.2.ffn_up.weight", DType::F16, {rows / 4, 1024}, {}));
        writer.add_tensor(raw_tensor("output_norm.weight", DType::F32, {4}, {}));
        const auto header = writer.header_bytes();
        write_bytes(path, header);
        const uint64_t tail_offset = header.size() + (uint64_t{4} << 30) + (uint64_t{1} << 29);
        fs::resize_file(path, tail_offset + 32);  // a hole: no disk blocks, reads as zeros
        const float tail[4] = {1.5f, -2.0f, 3.25f, 0.0f};
        {
            std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
            file.seekp(static_cast<std::streamoff>(tail_offset));
            file.write(reinterpret_cast<const char*>(tail), sizeof tail);
        }
        QVERIFY(fs::file_size(path) > (uint64_t{9} << 29));

        const long before = peak_rss_kib();
        const auto checkpoint = Checkpoint::open(path);
        QCOMPARE(checkpoint->tensors().size(), size_t{4});
        const TensorInfo& norm = checkpoint->get("output_norm.weight");
        QCOMPARE(checkpoint->read_f32(norm), std::vector<float>(tail, tail + 4));
        QCOMPARE(checkpoint->get("blk.1.ffn_up.weight").nbytes, uint64_t{2} << 30);
        const long grown = peak_rss_kib() - before;
        qInfo("peak RSS grew by %ld KiB while opening a %llu-byte file", grown, static_cast<unsigned long long>(fs::file_size(path)));
        QVERIFY2(grown < 64 * 1024, "opening the checkpoint read far more than its header");
    }
};

QTEST_APPLESS_MAIN(LargeFileTest)
#include "test_large_file.moc"
