#pragma once
// Helpers of the hub tests: repos with random content, a config pointing at the test server, and
// a Downloader / HubApi call run to its end on a local event loop (bounded in time).

#include "hub_test_server.h"

#include <oxinfer/hub/downloader.h>
#include <oxinfer/hub/hub_api.h>

#include <QCryptographicHash>
#include <QDir>
#include <QDirIterator>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QRandomGenerator>
#include <QTimer>

#include <filesystem>
#include <functional>

namespace oxinfer::test {

inline QByteArray random_bytes(qint64 size, quint32 seed) {
    QRandomGenerator generator(seed);
    QByteArray bytes(size, Qt::Uninitialized);
    for (qint64 i = 0; i < size; ++i) bytes[i] = char(generator.generate() & 0xff);
    return bytes;
}

// A stable 40-digit commit hash for a name.
inline QString commit_of(const QString& name) {
    return QString::fromLatin1(QCryptographicHash::hash(name.toUtf8(), QCryptographicHash::Sha1).toHex());
}

inline hub::HubConfig test_config(const HubTestServer& server, const QString& cache) {
    hub::HubConfig config;
    config.endpoint = server.endpoint();
    config.cache_dir = cache;
    config.token.clear();
    config.stall_timeout_ms = 5000;  // tests of stalls set their own (under a second)
    config.retry_base_ms = 20;
    config.retry_max_ms = 200;
    config.max_attempts = 5;
    config.parallel_files = 4;
    config.request_timeout_ms = 10000;
    config.free_bytes = [](const QString&) { return qint64(1) << 40; };
    return config;
}

inline QString file_sha256(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return {};
    QCryptographicHash hash(QCryptographicHash::Sha256);
    hash.addData(&file);
    return QString::fromLatin1(hash.result().toHex());
}

// Runs an asynchronous call that reports through `done`, at most `timeout_ms`.
inline bool run_loop(const std::function<void(std::function<void()> done)>& start, int timeout_ms = 20000) {
    QEventLoop loop;
    bool finished = false;
    QTimer::singleShot(timeout_ms, &loop, &QEventLoop::quit);
    start([&] {
        finished = true;
        loop.quit();
    });
    if (!finished) loop.exec();
    return finished;
}

inline hub::RepoInfo fetch_repo(hub::HubApi& api, const QString& repo, const QString& revision, hub::HubError* error) {
    hub::RepoInfo info;
    run_loop([&](std::function<void()> done) {
        api.repo_files(repo, revision, [&, done](const hub::RepoInfo& answer, const hub::HubError& problem) {
            info = answer;
            *error = problem;
            done();
        });
    });
    return info;
}

struct DownloadRun {
    bool ended = false;
    QString snapshot;
    hub::HubError error;
    QStringList messages;
    QList<hub::DownloadProgress> progress;
};

// Starts `downloader` and waits for finished/failed. `on_progress` may pause, resume or cancel.
inline DownloadRun run_download(hub::Downloader& downloader, const QString& repo, const QString& commit,
                                const QList<hub::RepoFile>& files, int timeout_ms = 20000,
                                const std::function<void(const hub::DownloadProgress&)>& on_progress = {}) {
    DownloadRun run;
    QEventLoop loop;
    QTimer::singleShot(timeout_ms, &loop, &QEventLoop::quit);
    const auto c1 = QObject::connect(&downloader, &hub::Downloader::finished, &loop, [&](const QString& snapshot) {
        run.ended = true;
        run.snapshot = snapshot;
        loop.quit();
    });
    const auto c2 = QObject::connect(&downloader, &hub::Downloader::failed, &loop, [&](const hub::HubError& error) {
        run.ended = true;
        run.error = error;
        loop.quit();
    });
    const auto c3 = QObject::connect(&downloader, &hub::Downloader::message, &loop, [&](const QString& text) { run.messages << text; });
    const auto c4 = QObject::connect(&downloader, &hub::Downloader::progress, &loop, [&](const hub::DownloadProgress& progress) {
        run.progress << progress;
        if (on_progress) on_progress(progress);
    });
    downloader.start(repo, "main", commit, files);
    if (!run.ended) loop.exec();
    for (const auto& connection : {c1, c2, c3, c4}) QObject::disconnect(connection);
    return run;
}

// Every file, folder and link under `root`, relative, sorted: "dir/", "file (N bytes)", "link -> target".
inline QStringList tree_listing(const QString& root) {
    QStringList out;
    QDirIterator it(root, QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        const QFileInfo info(path);
        const QString relative = QDir(root).relativeFilePath(path);
        if (info.isSymLink()) out << relative + " -> " + QString::fromStdString(std::filesystem::read_symlink(path.toStdString()).string());
        else if (info.isDir()) out << relative + "/";
        else out << relative + " (" + QString::number(info.size()) + " bytes)";
    }
    out.sort();
    return out;
}

inline QByteArray read_all(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

}  // namespace oxinfer::test
