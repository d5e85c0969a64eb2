// Engine core: platform detection (checked against what the OS reports independently), the
// memory-mapped file, errors, logging, the profiler, .npy files and atomic writes.

#include "test_support.h"

#include <oxinfer/atomic_file.h>
#include <oxinfer/log.h>
#include <oxinfer/mapped_file.h>
#include <oxinfer/npy.h>
#include <oxinfer/platform.h>
#include <oxinfer/profiler.h>

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <fstream>
#include <thread>

using namespace oxinfer;
namespace fs = std::filesystem;

class CoreTest : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    fs::path root() const { return dir_.path().toStdString(); }

private slots:
    void platformMatchesTheOperatingSystem() {
        const PlatformInfo info = detect_platform();
        QVERIFY(!info.arch.empty());
        QCOMPARE(info.logical_cores, QThread::idealThreadCount());
        QVERIFY(info.physical_cores >= 1 && info.physical_cores <= info.logical_cores);
        QVERIFY(info.total_ram_bytes > 0);
        QVERIFY(info.available_ram_bytes <= info.total_ram_bytes);
#if defined(__linux__) && defined(__x86_64__)
        // /proc/cpuinfo's family and flags are the kernel's own reading of cpuid: every feature we
        // claim must be there (the kernel also hides what the OS does not enable).
        QFile cpuinfo("/proc/cpuinfo");
        QVERIFY(cpuinfo.open(QIODevice::ReadOnly));
        QString flags;
        int family = -1;
        for (const QByteArray& line : cpuinfo.readAll().split('\n')) {
            if (family < 0 && line.startsWith("cpu family")) family = line.mid(line.indexOf(':') + 1).trimmed().toInt();
            if (line.startsWith("flags")) {
                flags = QString::fromLatin1(line) + ' ';
                break;
            }
        }
        QCOMPARE(info.cpu_family, family);
        const std::pair<bool, const char*> expectations[] = {
            {info.features.sse42, " sse4_2 "},        {info.features.avx, " avx "},
            {info.features.avx2, " avx2 "},           {info.features.fma, " fma "},
            {info.features.f16c, " f16c "},           {info.features.avx512f, " avx512f "},
            {info.features.avx512bw, " avx512bw "},   {info.features.avx512vl, " avx512vl "},
            {info.features.avx512_vnni, " avx512_vnni "}, {info.features.avx512_bf16, " avx512_bf16 "},
        };
        for (const auto& [detected, flag] : expectations) QCOMPARE(detected, flags.contains(QLatin1String(flag)));
        // Physical cores: distinct "core id" per "physical id", as /proc/cpuinfo lists them.
        QProcess lscpu;
        lscpu.start("sh", {"-c", "grep -E '^(physical id|core id)' /proc/cpuinfo | paste - - | sort -u | wc -l"});
        QVERIFY(lscpu.waitForFinished());
        const int cores = lscpu.readAllStandardOutput().trimmed().toInt();
        if (cores > 0) QCOMPARE(info.physical_cores, cores);
#endif
        const std::string summary = info.summary();
        QVERIFY(summary.find(std::to_string(info.physical_cores) + " core") != std::string::npos);
        for (const std::string& name : info.features.names()) QVERIFY(summary.find(name) != std::string::npos);
        QVERIFY(summary.find(format_bytes(info.total_ram_bytes)) != std::string::npos);
    }

    void formatsBytes() {
        QCOMPARE(format_bytes(17), std::string("17 B"));
        QCOMPARE(format_bytes(12 * 1024), std::string("12.0 KiB"));
        QCOMPARE(format_bytes(1536ull * 1024 * 1024), std::string("1.50 GiB"));
        QCOMPARE(format_bytes(512ull * 1024 * 1024), std::string("512 MiB"));
    }

    void mapsFiles() {
        const fs::path path = root() / "data.bin";
        std::string content(10000, 'x');
        content[9999] = 'y';
        std::ofstream(path, std::ios::binary) << content;
        MappedFile file(path, AccessPattern::Sequential);
        QCOMPARE(file.size(), content.size());
        QCOMPARE(static_cast<char>(file.data()[9999]), 'y');
        file.advise(5000, 100000, AccessPattern::Random);  // clipped, never an error
        file.advise(20000, 10, AccessPattern::WillNeed);
        MappedFile moved = std::move(file);
        QCOMPARE(moved.size(), content.size());
        QCOMPARE(file.data(), nullptr);

        const fs::path empty = root() / "empty.bin";
        std::ofstream(empty).close();
        QCOMPARE(MappedFile(empty).size(), size_t{0});
        OXINFER_EXPECT_ERROR(MappedFile(root() / "nope.bin"), "nope.bin: cannot open file: No such file or directory");
        OXINFER_EXPECT_ERROR(MappedFile directory{root()}, "is a directory, not a file");
    }

    void errorsNameTheirSubject() {
        const Error error("model.gguf", "truncated");
        QCOMPARE(std::string(error.what()), std::string("model.gguf: truncated"));
        QCOMPARE(error.subject(), std::string("model.gguf"));
        QCOMPARE(error.problem(), std::string("truncated"));
    }

    void logsThroughSink() {
        std::vector<std::string> lines;
        set_log_sink([&](LogLevel, std::string_view message) { lines.emplace_back(message); });
        set_log_level(LogLevel::Info);
        log_info("shown");
        log_debug("hidden");
        set_log_level(LogLevel::Warn);
        log_info("hidden too");
        log_warn("warned");
        set_log_sink({});
        QCOMPARE(lines, (std::vector<std::string>{"shown", "warned"}));
    }

    void profilerAccumulates() {
        profiler::reset();
        { profiler::Scope off("never"); }
        profiler::set_enabled(true);
        for (int i = 0; i < 3; ++i) {
            profiler::Scope scope("sleep");
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        profiler::add("manual", 0.5);
        profiler::set_enabled(false);
        const std::string report = profiler::report();
        QVERIFY(report.find("never") == std::string::npos);
        QVERIFY(report.find("sleep") != std::string::npos);
        QVERIFY(report.find(" 3 ") != std::string::npos);  // three calls
        QVERIFY(report.find("manual") < report.find("sleep"));  // longest first
    }

    void npyRoundTrip() {
        const fs::path path = root() / "a.npy";
        const std::vector<int64_t> shape{2, 3};
        const std::vector<float> values{1, 2, 3, 4, 5, -6.5f};
        write_npy_f32(path, shape, values);
        const NpyArray back = read_npy_f32(path);
        QCOMPARE(back.shape, shape);
        QCOMPARE(back.values, values);
        // The data starts on a 64-byte boundary, as numpy writes it.
        QCOMPARE(fs::file_size(path), size_t{128 + 24});
        write_npy_f32(root() / "scalar.npy", std::vector<int64_t>{}, std::vector<float>{3});
        QVERIFY(read_npy_f32(root() / "scalar.npy").shape.empty());
        OXINFER_EXPECT_ERROR(write_npy_f32(root() / "bad.npy", shape, std::vector<float>{1}), "array shape holds 6 values but 1 were given");
        QVERIFY(!fs::exists(root() / "bad.npy"));
    }

    void atomicWritesLeaveNothingOnFailure() {
        const fs::path target = root() / "out.txt";
        write_file_atomically(target, "first");
        write_file_atomically(target, "second");
        std::ifstream in(target);
        std::string text;
        in >> text;
        QCOMPARE(text, std::string("second"));
        OXINFER_EXPECT_ERROR(write_file_atomically(root() / "no-such-dir" / "x", "data"), "cannot create file");
        int leftovers = 0;
        for (const auto& entry : fs::directory_iterator(root()))
            if (entry.path().string().find(".tmp-") != std::string::npos) ++leftovers;
        QCOMPARE(leftovers, 0);
    }
};

QTEST_GUILESS_MAIN(CoreTest)
#include "test_core.moc"
