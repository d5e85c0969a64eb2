// The downloader against a real HTTP server on 127.0.0.1: the redirect to a separate storage path,
// Range resumes of partial files, a connection dropped mid-file, a stalled server, a server that
// ignores Range, a wrong sha256 (nothing left in blobs/), 401 on a gated repo, 404 for a missing
// file, a disk too small (refused before any transfer), pause/resume/cancel, progress, several files
// at once, and two downloads of the same repo at the same time.

#include "hub_test_support.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTest>

using namespace oxinfer;
using namespace oxinfer::test;

namespace {

constexpr qint64 kBig = 1 << 20;  // 1 MiB files: fast, yet several reads long

}  // namespace

class HubDownloaderTest : public QObject {
    Q_OBJECT

    HubTestServer server_;
    QTemporaryDir dir_;
    int cache_count_ = 0;

    // A fresh cache per test.
    QString new_cache() { return dir_.path() + "/cache" + QString::number(++cache_count_); }

    TestHubRepo repo(const QString& id, QList<TestHubFile> files) {
        TestHubRepo repo;
        repo.id = id;
        repo.commit = commit_of(id);
        repo.files = std::move(files);
        server_.add_repo(repo);
        return repo;
    }

    QList<hub::RepoFile> listed(const hub::HubConfig& config, const QString& id) {
        hub::HubApi api(config);
        hub::HubError error;
        const hub::RepoInfo info = fetch_repo(api, id, "main", &error);
        if (error) qWarning() << error.text();
        return info.files;
    }

    QString blobs(const QString& cache, const QString& id) {
        return cache + "/models--" + QString(id).replace('/', "--") + "/blobs";
    }

private slots:
    void initTestCase() { QVERIFY(dir_.isValid()); }
    void cleanup() { server_.clear_faults(); }

    void redirectToStorage() {
        const TestHubRepo r = repo("t/redirect", {{"model.safetensors", random_bytes(kBig, 10), true, {}},
                                                  {"config.json", "{\"a\": 1}", false, {}}});
        const QString cache = new_cache();
        hub::HubConfig config = test_config(server_, cache);
        const auto files = listed(config, r.id);
        server_.clear_requests();
        hub::Downloader downloader(config);
        const DownloadRun run = run_download(downloader, r.id, r.commit, files);
        QVERIFY2(run.ended && !run.error, qPrintable(run.error.text()));
        const QString sha = HubTestServer::sha256_hex(r.files[0].content);
        // HEAD on the hub answers 302 to the storage path; the bytes come from there.
        const auto heads = server_.requests_for("/t/redirect/resolve/" + r.commit + "/model.safetensors", "HEAD");
        QCOMPARE(heads.size(), 1);
        QCOMPARE(heads[0].status, 302);
        const auto gets = server_.requests_for("/storage/" + sha);
        QCOMPARE(gets.size(), 1);
        QCOMPARE(gets[0].status, 200);
        QCOMPARE(gets[0].range, QByteArray());
        QCOMPARE(file_sha256(run.snapshot + "/model.safetensors"), sha);
        // Small files are served by the hub itself, named by their git sha1.
        QCOMPARE(server_.requests_for("/resolve/" + r.commit + "/config.json", "GET").size(), 1);
        QVERIFY(QFileInfo::exists(blobs(cache, r.id) + "/" + HubTestServer::git_sha1_hex("{\"a\": 1}")));
    }

    void resumesPartialFileWithRange() {
        const TestHubRepo r = repo("t/range", {{"weights.bin", random_bytes(kBig, 11), true, {}}});
        const QString cache = new_cache();
        const QString sha = HubTestServer::sha256_hex(r.files[0].content);
        const qint64 kept = 300000;
        QDir().mkpath(blobs(cache, r.id));
        QFile partial(blobs(cache, r.id) + "/" + sha + ".incomplete");
        QVERIFY(partial.open(QIODevice::WriteOnly));
        partial.write(r.files[0].content.left(kept));
        partial.close();
        hub::HubConfig config = test_config(server_, cache);
        const auto files = listed(config, r.id);
        server_.clear_requests();
        hub::Downloader downloader(config);
        const DownloadRun run = run_download(downloader, r.id, r.commit, files);
        QVERIFY2(run.ended && !run.error, qPrintable(run.error.text()));
        const auto gets = server_.requests_for("/storage/" + sha);
        QCOMPARE(gets.size(), 1);
        QCOMPARE(gets[0].range, QByteArray("bytes=300000-"));
        QCOMPARE(gets[0].status, 206);
        QCOMPARE(downloader.results().value(0).resumed_from, kept);
        QCOMPARE(file_sha256(run.snapshot + "/weights.bin"), sha);
        QVERIFY(!QFileInfo::exists(partial.fileName()));
    }

    void connectionDropsMidFile() {
        const TestHubRepo r = repo("t/drop", {{"weights.bin", random_bytes(kBig, 12), true, {}}});
        TestHubFaults faults;
        faults.drop_after = 400000;
        faults.drop_times = 2;  // drops twice, each time 400000 bytes into the response
        server_.set_faults("weights.bin", faults);
        const QString cache = new_cache();
        hub::HubConfig config = test_config(server_, cache);
        const auto files = listed(config, r.id);
        server_.clear_requests();
        hub::Downloader downloader(config);
        const DownloadRun run = run_download(downloader, r.id, r.commit, files);
        QVERIFY2(run.ended && !run.error, qPrintable(run.error.text()));
        const QString sha = HubTestServer::sha256_hex(r.files[0].content);
        QList<qint64> starts;
        for (const TestHubRequest& request : server_.requests_for("/storage/" + sha)) starts << request.range_start();
        QCOMPARE(starts, QList<qint64>({-1, 400000, 800000}));
        QCOMPARE(file_sha256(run.snapshot + "/weights.bin"), sha);
        QVERIFY(run.messages.join('\n').contains("retrying"));
        QCOMPARE(QDir(blobs(cache, r.id)).entryList(QDir::Files), QStringList({sha}));
    }

    void stalledServerIsRetried() {
        const TestHubRepo r = repo("t/stall", {{"weights.bin", random_bytes(kBig, 13), true, {}}});
        TestHubFaults faults;
        faults.stall_after = 250000;
        faults.stall_times = 1;
        server_.set_faults("weights.bin", faults);
        const QString cache = new_cache();
        hub::HubConfig config = test_config(server_, cache);
        config.stall_timeout_ms = 700;
        const auto files = listed(config, r.id);
        server_.clear_requests();
        QElapsedTimer clock;
        clock.start();
        hub::Downloader downloader(config);
        const DownloadRun run = run_download(downloader, r.id, r.commit, files);
        QVERIFY2(run.ended && !run.error, qPrintable(run.error.text()));
        QVERIFY(clock.elapsed() >= 700);
        QVERIFY(clock.elapsed() < 10000);
        const QString sha = HubTestServer::sha256_hex(r.files[0].content);
        const auto gets = server_.requests_for("/storage/" + sha);
        // The retry resumes where the bytes stopped (250000, or earlier if a loaded machine
        // delayed them past the stall limit too).
        QVERIFY(gets.size() >= 2);
        QVERIFY(gets[1].range_start() > 0 && gets[1].range_start() <= 250000);
        QVERIFY(run.messages.join('\n').contains("no data for"));
        QCOMPARE(file_sha256(run.snapshot + "/weights.bin"), sha);
    }

    void serverThatAlwaysStallsFailsAfterBoundedAttempts() {
        const TestHubRepo r = repo("t/dead", {{"weights.bin", random_bytes(kBig, 14), true, {}}});
        TestHubFaults faults;
        faults.stall_after = 0;  // headers, then silence
        faults.stall_times = 100;
        server_.set_faults("weights.bin", faults);
        const QString cache = new_cache();
        hub::HubConfig config = test_config(server_, cache);
        config.stall_timeout_ms = 300;
        config.max_attempts = 3;
        const auto files = listed(config, r.id);
        server_.clear_requests();
        hub::Downloader downloader(config);
        const DownloadRun run = run_download(downloader, r.id, r.commit, files);
        QVERIFY(run.ended);
        QCOMPARE(run.error.kind, hub::HubError::Kind::Stalled);
        QVERIFY2(run.error.message.contains("gave up after 3 attempts"), qPrintable(run.error.message));
        QCOMPARE(server_.requests_for("/storage/").size(), 3);
        const QString sha = HubTestServer::sha256_hex(r.files[0].content);
        QVERIFY(QFileInfo::exists(blobs(cache, r.id) + "/" + sha + ".incomplete"));  // kept for a later resume
        QVERIFY(!QFileInfo::exists(blobs(cache, r.id) + "/" + sha));
        QVERIFY(QDir(cache + "/.locks/models--t--dead").entryList(QDir::Files).isEmpty());
    }

    void serverIgnoringRangeRestartsFromZero() {
        const TestHubRepo r = repo("t/norange", {{"weights.bin", random_bytes(kBig, 15), true, {}}});
        const QString cache = new_cache();
        const QString sha = HubTestServer::sha256_hex(r.files[0].content);
        QDir().mkpath(blobs(cache, r.id));
        QFile partial(blobs(cache, r.id) + "/" + sha + ".incomplete");
        QVERIFY(partial.open(QIODevice::WriteOnly));
        partial.write(QByteArray(5000, 'x'));  // not even the right bytes
        partial.close();
        TestHubFaults faults;
        faults.ignore_range = true;
        server_.set_faults("weights.bin", faults);
        hub::HubConfig config = test_config(server_, cache);
        const auto files = listed(config, r.id);
        hub::Downloader downloader(config);
        const DownloadRun run = run_download(downloader, r.id, r.commit, files);
        QVERIFY2(run.ended && !run.error, qPrintable(run.error.text()));
        QVERIFY(run.messages.join('\n').contains("ignored the Range request"));
        QCOMPARE(file_sha256(run.snapshot + "/weights.bin"), sha);
    }

    void wrongShaLeavesNothing() {
        QByteArray good = random_bytes(kBig, 16);
        QByteArray bad = good;
        bad[12345] = char(bad[12345] ^ 0x5a);
        const TestHubRepo r = repo("t/corrupt", {{"weights.bin", good, true, bad}});
        const QString cache = new_cache();
        hub::HubConfig config = test_config(server_, cache);
        const auto files = listed(config, r.id);
        hub::Downloader downloader(config);
        const DownloadRun run = run_download(downloader, r.id, r.commit, files);
        QVERIFY(run.ended);
        QCOMPARE(run.error.kind, hub::HubError::Kind::Checksum);
        const QString expected = HubTestServer::sha256_hex(good);
        QVERIFY2(run.error.message.contains("sha256 mismatch: expected " + expected + ", got " + HubTestServer::sha256_hex(bad)),
                 qPrintable(run.error.message));
        QVERIFY(run.error.message.contains("partial file was removed"));
        QCOMPARE(QDir(blobs(cache, r.id)).entryList(QDir::Files | QDir::Hidden), QStringList());
        QVERIFY(!QFileInfo::exists(downloader.snapshot_dir() + "/weights.bin"));
        QVERIFY(QDir(cache + "/.locks/models--t--corrupt").entryList(QDir::Files).isEmpty());
    }

    void gatedRepoAndMissingFile() {
        TestHubRepo gated;
        gated.id = "t/gated";
        gated.commit = commit_of("t/gated");
        gated.gated = "manual";
        gated.allowed_tokens = {"hf_ok"};
        gated.files = {{"config.json", "{}", false, {}}};
        server_.add_repo(gated);
        const QString cache = new_cache();
        hub::HubConfig config = test_config(server_, cache);
        hub::Downloader downloader(config);
        hub::RepoFile file{"config.json", 2, HubTestServer::git_sha1_hex("{}"), ""};
        DownloadRun run = run_download(downloader, gated.id, gated.commit, {file});
        QCOMPARE(run.error.kind, hub::HubError::Kind::Gated);
        QCOMPARE(run.error.http_status, 401);
        QVERIFY(run.error.message.contains("accept its license at " + server_.endpoint() + "/t/gated"));
        config.token = "hf_ok";
        hub::Downloader allowed(config);
        run = run_download(allowed, gated.id, gated.commit, {file});
        QVERIFY2(!run.error, qPrintable(run.error.text()));

        hub::RepoFile missing{"no-such-file.bin", 10, "", QString(64, 'a')};
        hub::Downloader lost(config);
        run = run_download(lost, gated.id, gated.commit, {missing});
        QCOMPARE(run.error.kind, hub::HubError::Kind::EntryNotFound);
        QCOMPARE(run.error.http_status, 404);
        QCOMPARE(run.error.subject, QString("t/gated/no-such-file.bin"));
    }

    void diskTooSmallIsRefusedBeforeAnyTransfer() {
        const TestHubRepo r = repo("t/big", {{"a.bin", random_bytes(kBig, 17), true, {}}, {"b.bin", random_bytes(kBig, 18), true, {}}});
        const QString cache = new_cache();
        hub::HubConfig config = test_config(server_, cache);
        const auto files = listed(config, r.id);
        QString asked;
        config.free_bytes = [&](const QString& folder) {
            asked = folder;
            return kBig + 10;
        };
        server_.clear_requests();
        hub::Downloader downloader(config);
        DownloadRun run = run_download(downloader, r.id, r.commit, files);
        QCOMPARE(run.error.kind, hub::HubError::Kind::DiskSpace);
        QVERIFY2(run.error.message.contains("needs 2.00 MiB"), qPrintable(run.error.message));
        QVERIFY(asked.endsWith("models--t--big/blobs"));
        QVERIFY(server_.requests().isEmpty());
        QVERIFY(!QFileInfo::exists(cache + "/models--t--big"));

        // The same through OXINFER_TEST_FREE_BYTES, the switch the CLI tests use.
        config.free_bytes = nullptr;
        qputenv("OXINFER_TEST_FREE_BYTES", "1000");
        hub::Downloader env_limited(config);
        run = run_download(env_limited, r.id, r.commit, files);
        qunsetenv("OXINFER_TEST_FREE_BYTES");
        QCOMPARE(run.error.kind, hub::HubError::Kind::DiskSpace);
        QVERIFY(server_.requests().isEmpty());
    }

    void pauseResumeAndCancel() {
        const TestHubRepo r = repo("t/pause", {{"weights.bin", random_bytes(kBig, 19), true, {}}});
        TestHubFaults slow;
        slow.bytes_per_second = kBig;  // a second per file: time to pause, wait and cancel
        server_.set_faults("weights.bin", slow);
        const QString cache = new_cache();
        hub::HubConfig config = test_config(server_, cache);
        const auto files = listed(config, r.id);
        const QString sha = HubTestServer::sha256_hex(r.files[0].content);
        const QString partial = blobs(cache, r.id) + "/" + sha + ".incomplete";
        server_.clear_requests();

        hub::Downloader downloader(config);
        bool paused_once = false;
        qint64 size_when_paused = -1, size_after_wait = -1;
        const DownloadRun run = run_download(downloader, r.id, r.commit, files, 20000, [&](const hub::DownloadProgress& progress) {
            if (paused_once || progress.done_bytes < 200000) return;
            paused_once = true;
            downloader.pause();
            QVERIFY(downloader.paused());
            QTimer::singleShot(400, &downloader, [&] {
                size_when_paused = QFileInfo(partial).size();
                QTimer::singleShot(400, &downloader, [&] {
                    size_after_wait = QFileInfo(partial).size();
                    downloader.resume();
                });
            });
        });
        QVERIFY2(run.ended && !run.error, qPrintable(run.error.text()));
        QVERIFY(paused_once);
        QVERIFY(size_when_paused >= 200000);
        QCOMPARE(size_after_wait, size_when_paused);  // nothing arrives while paused
        const auto gets = server_.requests_for("/storage/" + sha);
        QCOMPARE(gets.size(), 2);
        QVERIFY(gets[1].range_start() >= 200000);
        QCOMPARE(file_sha256(run.snapshot + "/weights.bin"), sha);
        // Progress carried sizes, a rate and a time left.
        bool rate_seen = false;
        for (const hub::DownloadProgress& progress : run.progress) {
            QCOMPARE(progress.total_bytes, kBig);
            QCOMPARE(progress.files_total, 1);
            rate_seen = rate_seen || (progress.bytes_per_second > 0 && progress.eta_seconds >= 0);
        }
        QVERIFY(rate_seen);
        QCOMPARE(run.progress.last().done_bytes, kBig);
        QCOMPARE(run.progress.last().files_done, 1);

        // Cancel keeps the partial file and releases the lock; the next download resumes it.
        const QString cache2 = new_cache();
        hub::HubConfig config2 = test_config(server_, cache2);
        hub::Downloader cancelled(config2);
        const DownloadRun stopped = run_download(cancelled, r.id, r.commit, files, 20000, [&](const hub::DownloadProgress& progress) {
            if (progress.done_bytes >= 150000 && cancelled.running()) cancelled.cancel();
        });
        QCOMPARE(stopped.error.kind, hub::HubError::Kind::Cancelled);
        const QString partial2 = blobs(cache2, r.id) + "/" + sha + ".incomplete";
        const qint64 kept = QFileInfo(partial2).size();
        QVERIFY(kept >= 150000);
        QVERIFY(QDir(cache2 + "/.locks/models--t--pause").entryList(QDir::Files).isEmpty());
        server_.clear_faults();
        server_.clear_requests();
        hub::Downloader again(config2);
        const DownloadRun resumed = run_download(again, r.id, r.commit, files);
        QVERIFY2(resumed.ended && !resumed.error, qPrintable(resumed.error.text()));
        QCOMPARE(server_.requests_for("/storage/" + sha).value(0).range_start(), kept);
        QCOMPARE(file_sha256(resumed.snapshot + "/weights.bin"), sha);
    }

    void severalFilesInParallel() {
        QList<TestHubFile> files;
        for (int i = 0; i < 6; ++i) files.append({QString("part-%1.bin").arg(i), random_bytes(300000, 30 + i), true, {}});
        const TestHubRepo r = repo("t/many", files);
        TestHubFaults slow;
        slow.bytes_per_second = 500000;
        server_.set_faults("*", slow);
        const QString cache = new_cache();
        hub::HubConfig config = test_config(server_, cache);
        config.parallel_files = 3;
        const auto listed_files = listed(config, r.id);
        hub::Downloader downloader(config);
        int most_active = 0;
        const DownloadRun run = run_download(downloader, r.id, r.commit, listed_files, 20000, [&](const hub::DownloadProgress& progress) {
            most_active = std::max<int>(most_active, int(progress.active_files.size()));
        });
        QVERIFY2(run.ended && !run.error, qPrintable(run.error.text()));
        QVERIFY2(most_active >= 2, qPrintable(QString::number(most_active)));
        QVERIFY(most_active <= 3);
        for (const TestHubFile& file : r.files)
            QCOMPARE(file_sha256(run.snapshot + "/" + file.path), HubTestServer::sha256_hex(file.content));
    }

    // Two downloads of the same repo into one cache at once: the lock serialises each blob, the
    // second finds it done, and neither corrupts the other.
    void twoDownloadsOfTheSameRepo() {
        const TestHubRepo r = repo("t/twice", {{"a.bin", random_bytes(kBig, 40), true, {}},
                                               {"b.bin", random_bytes(600000, 41), true, {}},
                                               {"config.json", "{\"x\": 2}", false, {}}});
        TestHubFaults slow;
        slow.bytes_per_second = 3 * kBig;
        server_.set_faults("*", slow);
        const QString cache = new_cache();
        hub::HubConfig config = test_config(server_, cache);
        const auto files = listed(config, r.id);
        server_.clear_requests();
        hub::Downloader first(config), second(config);
        int finished = 0;
        QStringList errors;
        for (hub::Downloader* downloader : {&first, &second}) {
            connect(downloader, &hub::Downloader::finished, this, [&] { ++finished; });
            connect(downloader, &hub::Downloader::failed, this, [&](const hub::HubError& error) { errors << error.text(); });
        }
        first.start(r.id, "main", r.commit, files);
        second.start(r.id, "main", r.commit, files);
        QTRY_VERIFY_WITH_TIMEOUT(finished + errors.size() == 2, 20000);
        QVERIFY2(errors.isEmpty(), qPrintable(errors.join('\n')));
        for (const TestHubFile& file : r.files) {
            const QString sha = HubTestServer::sha256_hex(file.content);
            QCOMPARE(file_sha256(first.snapshot_dir() + "/" + file.path), sha);
            if (file.lfs) QCOMPARE(server_.requests_for("/storage/" + sha).size(), 1);  // fetched once
        }
        int downloaded = 0;
        for (const auto& result : first.results() + second.results()) downloaded += result.downloaded ? 1 : 0;
        QCOMPARE(downloaded, 3);
        QStringList leftovers = QDir(blobs(cache, r.id)).entryList(QDir::Files);
        QCOMPARE(leftovers.size(), 3);
        for (const QString& name : leftovers) QVERIFY(!name.endsWith(".incomplete"));
        QVERIFY(QDir(cache + "/.locks/models--t--twice").entryList(QDir::Files).isEmpty());
    }
};

QTEST_GUILESS_MAIN(HubDownloaderTest)
#include "test_hub_downloader.moc"
