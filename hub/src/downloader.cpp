#include <oxinfer/hub/downloader.h>

#include "file_task.h"

#include <oxinfer/atomic_file.h>
#include <oxinfer/error.h>
#include <oxinfer/hf_cache.h>
#include <oxinfer/hub/hub_api.h>
#include <oxinfer/platform.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QMutex>
#include <QTemporaryDir>

#include <filesystem>

namespace fs = std::filesystem;

namespace oxinfer::hub {
namespace {

constexpr int kProgressMs = 250;
constexpr qint64 kRateWindowMs = 5000;

QString text_of_bytes(qint64 bytes) { return QString::fromStdString(format_bytes(uint64_t(std::max<qint64>(bytes, 0)))); }

}  // namespace

bool symlinks_supported(const QString& folder) {
    static QMutex mutex;
    static QHash<QString, bool> known;
    const QString key = QFileInfo(folder).absoluteFilePath();
    QMutexLocker locker(&mutex);
    if (const auto it = known.constFind(key); it != known.constEnd()) return *it;
    QDir().mkpath(key);
    bool supported = false;
    QTemporaryDir probe(key + "/.symlink-probe-XXXXXX");
    if (probe.isValid()) {
        QFile source(probe.path() + "/source");
        if (source.open(QIODevice::WriteOnly)) source.close();
        std::error_code failure;
        fs::create_symlink("source", fs::path(probe.path().toStdU16String()) / "link", failure);
        supported = !failure;
    }
    known.insert(key, supported);
    return supported;
}

Downloader::Downloader(HubConfig config, QObject* parent)
    : QObject(parent), config_(std::move(config)), api_(new HubApi(config_, this)) {
    progress_timer_.setInterval(kProgressMs);
    connect(&progress_timer_, &QTimer::timeout, this, &Downloader::emit_progress);
}

Downloader::~Downloader() {
    for (auto& task : tasks_) task->cancel();
}

QString Downloader::repo_folder() const {
    return config_.cache_dir + "/" + QString::fromStdString(hf::repo_folder_name(repo_.toStdString()));
}

QString Downloader::snapshot_dir() const { return repo_folder() + "/snapshots/" + commit_; }

void Downloader::start(const QString& repo, const QString& revision, const QString& commit, const QList<RepoFile>& files) {
    HubError problem;
    problem.subject = repo;
    if (running_) {
        problem.kind = HubError::Kind::BadResponse;
        problem.message = "a download is already running";
        QTimer::singleShot(0, this, [this, problem] { emit failed(problem); });
        return;
    }
    repo_ = repo;
    revision_ = revision.isEmpty() ? QStringLiteral("main") : revision;
    commit_ = commit;
    tasks_.clear();
    queue_.clear();
    results_.clear();
    samples_.clear();
    active_ = done_ = 0;
    network_bytes_ = 0;
    paused_ = false;

    if (commit_.isEmpty() || commit_.contains('/') || commit_.contains("..")) {
        problem.kind = HubError::Kind::BadResponse;
        problem.message = "no valid commit to download";
        QTimer::singleShot(0, this, [this, problem] { emit failed(problem); });
        return;
    }

    // Free space for every byte still missing, before anything is written.
    const QString folder = repo_folder();
    qint64 needed = 0;
    for (const RepoFile& file : files) {
        if (QFileInfo::exists(snapshot_dir() + "/" + file.path)) continue;
        const QString etag = file.etag();
        if (!etag.isEmpty() && QFileInfo::exists(folder + "/blobs/" + etag)) continue;
        qint64 have = 0;
        if (!etag.isEmpty()) have = QFileInfo(folder + "/blobs/" + etag + ".incomplete").size();
        needed += std::max<qint64>(0, std::max<qint64>(file.size, 0) - have);
    }
    const qint64 free = config_.free_bytes_at(folder + "/blobs");
    if (needed > 0 && free >= 0 && needed > free) {
        problem.kind = HubError::Kind::DiskSpace;
        problem.message = QStringLiteral("not enough disk space in %1: the download needs %2, %3 are free")
                              .arg(config_.cache_dir, text_of_bytes(needed), text_of_bytes(free));
        QTimer::singleShot(0, this, [this, problem] { emit failed(problem); });
        return;
    }

    if (!QDir().mkpath(folder + "/blobs") || !QDir().mkpath(snapshot_dir())) {
        problem.kind = HubError::Kind::Io;
        problem.message = "cannot create " + folder;
        QTimer::singleShot(0, this, [this, problem] { emit failed(problem); });
        return;
    }
    // Backup tools skip folders tagged this way (huggingface_hub tags its cache too).
    const QString tag = config_.cache_dir + "/CACHEDIR.TAG";
    if (!QFileInfo::exists(tag)) {
        QFile file(tag);
        if (file.open(QIODevice::WriteOnly))
            file.write("Signature: 8a477f597d28d172789f06886806bc55\n"
                       "# This file is a cache directory tag: the Hugging Face hub cache.\n");
    }
    // refs/<revision> -> commit, as huggingface_hub records branches and tags.
    if (revision_ != commit_) {
        const QString ref = folder + "/refs/" + revision_;
        QFile current(ref);
        const bool same = current.open(QIODevice::ReadOnly) && QString::fromLatin1(current.readAll()) == commit_;
        current.close();
        if (!same) {
            QDir().mkpath(QFileInfo(ref).path());
            try {
                write_file_atomically(fs::path(ref.toStdU16String()), commit_.toStdString());
            } catch (const Error& error) {
                problem.kind = HubError::Kind::Io;
                problem.message = QString::fromStdString(error.what());
                QTimer::singleShot(0, this, [this, problem] { emit failed(problem); });
                return;
            }
        }
    }

    symlinks_ = config_.use_symlinks && symlinks_supported(config_.cache_dir);
    TaskContext context;
    context.config = &config_;
    context.api = api_;
    context.repo = repo_;
    context.commit = commit_;
    context.repo_folder = folder;
    context.locks_folder = config_.cache_dir + "/.locks/" + QString::fromStdString(hf::repo_folder_name(repo_.toStdString()));
    context.symlinks = symlinks_;
    for (const RepoFile& file : files) {
        auto task = std::make_unique<FileTask>(context, file);
        FileTask* raw = task.get();
        connect(raw, &FileTask::done, this, [this, raw](const DownloadedFile& result) { on_task_done(raw, result); });
        connect(raw, &FileTask::failed, this, [this, raw](const HubError& error) { on_task_failed(raw, error); });
        connect(raw, &FileTask::message, this, &Downloader::message);
        queue_.push_back(raw);
        tasks_.push_back(std::move(task));
    }
    running_ = true;
    clock_.start();
    progress_timer_.start();
    QTimer::singleShot(0, this, [this] {
        if (tasks_.empty()) {
            running_ = false;
            progress_timer_.stop();
            emit_progress();
            emit finished(snapshot_dir());
            return;
        }
        start_more();
    });
}

void Downloader::start_more() {
    const int parallel = std::max(1, config_.parallel_files);
    while (running_ && !paused_ && active_ < parallel && !queue_.empty()) {
        FileTask* task = queue_.front();
        queue_.pop_front();
        ++active_;
        task->start();
    }
}

void Downloader::on_task_done(FileTask*, const DownloadedFile& file) {
    if (!running_) return;
    --active_;
    ++done_;
    results_ << file;
    emit file_finished(file);
    if (done_ == int(tasks_.size())) {
        running_ = false;
        progress_timer_.stop();
        emit_progress();
        emit finished(snapshot_dir());
        return;
    }
    start_more();
}

void Downloader::on_task_failed(FileTask*, const HubError& error) { fail(error); }

void Downloader::fail(const HubError& error) {
    if (!running_) return;
    running_ = false;
    progress_timer_.stop();
    for (auto& task : tasks_) task->cancel();
    queue_.clear();
    emit failed(error);
}

void Downloader::pause() {
    if (!running_ || paused_) return;
    paused_ = true;
    for (auto& task : tasks_) task->pause();
    emit message(QStringLiteral("paused"));
}

void Downloader::resume() {
    if (!running_ || !paused_) return;
    paused_ = false;
    emit message(QStringLiteral("resumed"));
    for (auto& task : tasks_) task->resume();
    start_more();
}

void Downloader::cancel() {
    HubError error;
    error.kind = HubError::Kind::Cancelled;
    error.subject = repo_;
    error.message = QStringLiteral("download cancelled; the partial files are kept and a later pull resumes them");
    fail(error);
}

DownloadProgress Downloader::current_progress() const {
    DownloadProgress progress;
    progress.files_total = int(tasks_.size());
    progress.files_done = done_;
    for (const auto& task : tasks_) {
        progress.done_bytes += task->bytes_on_disk();
        progress.total_bytes += task->total();
        if (!task->ended() && task->bytes_on_disk() > 0) progress.active_files << task->file().path;
    }
    if (samples_.size() >= 2) {
        const auto& [first_ms, first_bytes] = samples_.front();
        const auto& [last_ms, last_bytes] = samples_.back();
        if (last_ms - first_ms >= 200) progress.bytes_per_second = double(last_bytes - first_bytes) * 1000.0 / double(last_ms - first_ms);
    }
    if (progress.bytes_per_second > 0)
        progress.eta_seconds = double(std::max<qint64>(0, progress.total_bytes - progress.done_bytes)) / progress.bytes_per_second;
    if (progress.files_done == progress.files_total) progress.eta_seconds = 0;
    return progress;
}

void Downloader::emit_progress() {
    qint64 received = 0;
    for (const auto& task : tasks_) received += task->network_bytes();
    const qint64 now = clock_.isValid() ? clock_.elapsed() : 0;
    samples_.emplace_back(now, received);
    while (samples_.size() > 2 && now - samples_.front().first > kRateWindowMs) samples_.pop_front();
    emit progress(current_progress());
}

}  // namespace oxinfer::hub
