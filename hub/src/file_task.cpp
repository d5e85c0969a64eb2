#include "file_task.h"

#include <oxinfer/hub/hub_api.h>
#include <oxinfer/platform.h>

#include <QDir>
#include <QFileInfo>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QRegularExpression>

#include <algorithm>
#include <filesystem>
#include <system_error>

#ifndef _WIN32
#include <unistd.h>
#endif

namespace fs = std::filesystem;

namespace oxinfer::hub {
namespace {

constexpr qint64 kHashChunk = 8 << 20;  // bytes of a partial file hashed per event-loop turn
constexpr int kLockPollMs = 200;
constexpr int kMaxRedirects = 10;

fs::path to_path(const QString& text) { return fs::path(text.toStdU16String()); }

bool is_hex(const QString& text, int length) {
    static const QRegularExpression hex(QStringLiteral("^[0-9a-f]+$"));
    return text.size() == length && hex.match(text).hasMatch();
}

bool transient_status(int status) { return status == 408 || status == 429 || status >= 500; }

QString seconds_text(int ms) { return QString::number(ms / 1000.0, 'g', 3) + " s"; }

}  // namespace

FileTask::FileTask(const TaskContext& context, RepoFile file, QObject* parent)
    : QObject(parent), context_(context), file_(std::move(file)) {
    stall_timer_.setSingleShot(true);
    retry_timer_.setSingleShot(true);
    lock_timer_.setSingleShot(true);
    connect(&stall_timer_, &QTimer::timeout, this, [this] {
        if (!reply_) return;
        stalled_ = true;
        reply_->abort();
    });
    connect(&lock_timer_, &QTimer::timeout, this, [this] { try_lock(); });
}

FileTask::~FileTask() {
    if (reply_) {
        reply_->disconnect(this);
        reply_->abort();
        reply_->deleteLater();
    }
    release_lock();
}

HubError FileTask::error(HubError::Kind kind, const QString& message) const {
    HubError error;
    error.kind = kind;
    error.subject = context_.repo + "/" + file_.path;
    error.message = message;
    return error;
}

qint64 FileTask::total() const { return expected_size_ >= 0 ? expected_size_ : std::max<qint64>(file_.size, 0); }

qint64 FileTask::bytes_on_disk() const { return step_ == Step::Done ? total() : written_; }

bool FileTask::park(std::function<void()> action) {
    if (!paused_) return false;
    parked_ = std::move(action);
    return true;
}

void FileTask::start() {
    if (step_ != Step::Idle) return;
    head(context_.api->resolve_url(context_.repo, context_.commit, file_.path), 0);
}

void FileTask::pause() {
    if (ended() || paused_) return;
    paused_ = true;
    if (step_ == Step::Get && reply_) {
        reply_->abort();  // on_get_finished parks the next request
    } else if (step_ == Step::Backoff && retry_timer_.isActive()) {
        retry_timer_.stop();
        parked_ = [this] { retry_timer_.start(0); };
    } else if (step_ == Step::Lock && lock_timer_.isActive()) {
        lock_timer_.stop();
        parked_ = [this] { try_lock(); };
    }
}

void FileTask::resume() {
    if (!paused_) return;
    paused_ = false;
    if (parked_) {
        auto action = std::move(parked_);
        parked_ = nullptr;
        action();
    }
}

void FileTask::cancel() {
    if (ended()) return;
    step_ = Step::Failed;
    stall_timer_.stop();
    retry_timer_.stop();
    lock_timer_.stop();
    if (reply_) {
        reply_->disconnect(this);
        reply_->abort();
        reply_->deleteLater();
        reply_.clear();
    }
    partial_.close();  // the partial file stays for a later resume
    release_lock();
}

// ---- HEAD: etag, commit, size and where the bytes are ------------------------------------------

void FileTask::head(const QUrl& url, int redirects) {
    if (park([this, url, redirects] { head(url, redirects); })) return;
    step_ = Step::Head;
    QNetworkRequest request = context_.api->request(url);
    request.setRawHeader("Accept-Encoding", "identity");
    request.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::ManualRedirectPolicy);
    QNetworkReply* reply = context_.api->network()->head(request);
    connect(reply, &QNetworkReply::finished, this, [this, reply, redirects] {
        reply->deleteLater();
        if (step_ != Step::Head) return;
        on_head(reply, redirects);
    });
}

void FileTask::on_head(QNetworkReply* reply, int redirects) {
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QUrl here = reply->url();
    if (status == 0 || transient_status(status)) {
        HubError why = HubApi::error_from(reply, *context_.config, context_.repo, context_.repo + "/" + file_.path);
        if (why.kind == HubError::Kind::Cancelled) why.kind = HubError::Kind::Network;
        return retry(why, [this, here, redirects] { head(here, redirects); });
    }
    progress_this_attempt_ = true;
    const bool redirect = status >= 300 && status < 400;
    if (redirect) {
        const QUrl location(QString::fromUtf8(reply->rawHeader("Location")));
        if (location.isEmpty()) return finish_error(error(HubError::Kind::BadResponse, "a redirect without a Location"));
        // Relative redirects (a renamed repo) are followed here; absolute ones lead to the storage host.
        if (location.isRelative() || location.host().isEmpty()) {
            if (redirects >= kMaxRedirects) return finish_error(error(HubError::Kind::BadResponse, "too many redirects"));
            return head(here.resolved(location), redirects + 1);
        }
        download_url_ = location;
    } else if (status >= 200 && status < 300) {
        download_url_ = here;
    } else {
        return finish_error(HubApi::error_from(reply, *context_.config, context_.repo, context_.repo + "/" + file_.path));
    }

    const QByteArray linked_etag = reply->rawHeader("X-Linked-Etag");
    etag_ = normalize_etag(linked_etag.isEmpty() ? reply->rawHeader("ETag") : linked_etag);
    lfs_ = !linked_etag.isEmpty() || (etag_.isEmpty() ? file_.is_lfs() : is_hex(etag_, 64));
    if (etag_.isEmpty()) etag_ = file_.etag();
    if (etag_.isEmpty() || etag_.contains('/') || etag_.contains('\\') || etag_.startsWith('.'))
        return finish_error(error(HubError::Kind::BadResponse, "the hub gave no usable ETag for this file"));
    const QByteArray commit = reply->rawHeader("X-Repo-Commit");
    if (!commit.isEmpty() && QString::fromLatin1(commit) != context_.commit)
        emit message(QStringLiteral("%1: the hub resolved commit %2, asked for %3")
                         .arg(file_.path, QString::fromLatin1(commit), context_.commit));
    bool ok = false;
    const QByteArray linked_size = reply->rawHeader("X-Linked-Size");
    qint64 size = linked_size.toLongLong(&ok);
    if (!ok && !redirect) size = reply->rawHeader("Content-Length").toLongLong(&ok);
    expected_size_ = ok ? size : file_.size;

    blob_path_ = context_.repo_folder + "/blobs/" + etag_;
    partial_path_ = blob_path_ + ".incomplete";
    pointer_path_ = context_.repo_folder + "/snapshots/" + context_.commit + "/" + file_.path;
    lock_path_ = context_.locks_folder + "/" + etag_ + ".lock";

    if (pointer_is_complete()) return finish(false);
    if (QFileInfo::exists(blob_path_)) {
        QString problem;
        if (!place_pointer(false, &problem)) return finish_error(error(HubError::Kind::Io, problem));
        return finish(false);
    }
    try_lock();
}

bool FileTask::pointer_is_complete() const {
    const QFileInfo pointer(pointer_path_);
    if (!pointer.exists()) return false;  // a link to a missing blob does not count
    return expected_size_ < 0 || pointer.size() == expected_size_;
}

// ---- The lock: one process per blob ------------------------------------------------------------

void FileTask::try_lock() {
    if (park([this] { try_lock(); })) return;
    step_ = Step::Lock;
    if (!lock_) {
        QDir().mkpath(context_.locks_folder);
        lock_ = std::make_unique<QLockFile>(lock_path_);
        // A live holder keeps its lock however long it downloads (Qt also locks the file natively);
        // a dead one's lock (SIGKILL, crash) is recognised by its process id and taken over.
        lock_->setStaleLockTime(10000);
    }
    if (!lock_->tryLock(0)) {
        if (lock_->error() == QLockFile::PermissionError)
            return finish_error(error(HubError::Kind::Io, "cannot create the lock file " + lock_path_));
        if (!lock_wait_noted_) {
            lock_wait_noted_ = true;
            emit message(QStringLiteral("%1: waiting for another download of the same file").arg(file_.path));
        }
        lock_timer_.start(kLockPollMs);
        return;
    }
    // Another process may have finished the blob while we waited.
    if (QFileInfo::exists(blob_path_)) {
        QString problem;
        if (!place_pointer(false, &problem)) return finish_error(error(HubError::Kind::Io, problem));
        return finish(false);
    }
    open_partial();
}

void FileTask::release_lock() {
    if (lock_ && lock_->isLocked()) lock_->unlock();  // removes the .lock file
    lock_.reset();
}

// ---- The partial file: resume what is there ----------------------------------------------------

void FileTask::open_partial() {
    QDir().mkpath(context_.repo_folder + "/blobs");
    partial_.setFileName(partial_path_);
    if (!partial_.open(QIODevice::ReadWrite | QIODevice::Unbuffered))
        return finish_error(error(HubError::Kind::Io, "cannot open " + partial_path_ + ": " + partial_.errorString()));
    const qint64 existing = partial_.size();
    if (existing > 0 && expected_size_ >= 0 && existing > expected_size_) {
        emit message(QStringLiteral("%1: the partial file is larger than the file; starting again").arg(file_.path));
        partial_.resize(0);
    }
    reset_hashes();
    written_ = 0;
    resumed_from_ = partial_.size();
    if (resumed_from_ > 0) {
        resumed_ = true;
        emit message(QStringLiteral("%1: resuming from byte %2 of %3")
                         .arg(file_.path)
                         .arg(resumed_from_)
                         .arg(expected_size_));
    }
    partial_.seek(0);
    hash_partial();
}

void FileTask::hash_partial() {
    if (step_ == Step::Failed) return;
    step_ = Step::Hash;
    const qint64 size = partial_.size();
    if (written_ < size) {
        const QByteArray chunk = partial_.read(std::min(kHashChunk, size - written_));
        if (chunk.isEmpty()) return finish_error(error(HubError::Kind::Io, "cannot read " + partial_path_));
        sha256_.addData(chunk);
        if (!lfs_) git_sha1_.addData(chunk);
        written_ += chunk.size();
        QTimer::singleShot(0, this, [this] { hash_partial(); });
        return;
    }
    partial_.seek(written_);
    if (expected_size_ >= 0 && written_ == expected_size_) return complete();
    get();
}

void FileTask::reset_hashes() {
    sha256_.reset();
    git_sha1_.reset();
    // A git blob's id is the sha1 of "blob <size>\0" and the content.
    if (!lfs_ && expected_size_ >= 0) git_sha1_.addData(QByteArray("blob ") + QByteArray::number(expected_size_) + '\0');
}

void FileTask::restart_from_zero() {
    partial_.resize(0);
    partial_.seek(0);
    written_ = 0;
    resumed_from_ = 0;
    reset_hashes();
}

// ---- GET with Range, stall detection and retries -----------------------------------------------

void FileTask::get() {
    if (park([this] { get(); })) return;
    step_ = Step::Get;
    QNetworkRequest request = context_.api->request(download_url_);
    request.setRawHeader("Accept-Encoding", "identity");
    request.setTransferTimeout(0);  // stalls are this class's own timer
    if (written_ > 0) request.setRawHeader("Range", "bytes=" + QByteArray::number(written_) + "-");
    response_checked_ = false;
    response_ok_ = false;
    restart_requested_ = false;
    stalled_ = false;
    progress_this_attempt_ = false;
    QNetworkReply* reply = context_.api->network()->get(request);
    reply_ = reply;
    connect(reply, &QNetworkReply::readyRead, this, &FileTask::on_ready_read);
    connect(reply, &QNetworkReply::finished, this, &FileTask::on_get_finished);
    stall_timer_.start(context_.config->stall_timeout_ms);
}

bool FileTask::check_response() {
    response_checked_ = true;
    const int status = reply_->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status == 206) {
        static const QRegularExpression range(QStringLiteral(R"(^bytes\s+(\d+)-(\d+)/(\d+|\*)$)"));
        const auto match = range.match(QString::fromLatin1(reply_->rawHeader("Content-Range")).trimmed());
        if (!match.hasMatch() || match.captured(1).toLongLong() != written_) {
            emit message(QStringLiteral("%1: the server answered a different range (%2); starting again from zero")
                             .arg(file_.path, QString::fromLatin1(reply_->rawHeader("Content-Range"))));
            restart_from_zero();
            restart_requested_ = true;
            reply_->abort();
            return false;
        }
        if (expected_size_ < 0 && match.captured(3) != QLatin1String("*")) expected_size_ = match.captured(3).toLongLong();
        response_ok_ = true;
    } else if (status == 200) {
        if (written_ > 0) {
            emit message(QStringLiteral("%1: the server ignored the Range request; starting again from zero").arg(file_.path));
            restart_from_zero();
        }
        response_ok_ = true;
    }
    return response_ok_;
}

void FileTask::on_ready_read() {
    if (!reply_ || step_ != Step::Get || !reply_->isOpen()) return;
    if (!response_checked_ && !check_response()) return;
    if (!response_ok_) return;  // an error body: on_get_finished reports it
    const QByteArray data = reply_->readAll();
    if (data.isEmpty()) return;
    if (partial_.write(data) != data.size()) {
        const HubError problem = error(HubError::Kind::DiskSpace, "cannot write " + partial_path_ + ": " + partial_.errorString() +
                                                                  " (disk full?); the partial file is kept");
        return finish_error(problem);
    }
    sha256_.addData(data);
    if (!lfs_) git_sha1_.addData(data);
    written_ += data.size();
    network_bytes_ += data.size();
    if (!progress_this_attempt_) {
        progress_this_attempt_ = true;
        attempts_ = 0;
    }
    stall_timer_.start(context_.config->stall_timeout_ms);
}

void FileTask::on_get_finished() {
    QNetworkReply* reply = reply_;
    if (!reply || step_ != Step::Get) return;
    stall_timer_.stop();
    on_ready_read();
    reply_.clear();
    reply->deleteLater();
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QString position = QStringLiteral(" at byte %1 of %2").arg(written_).arg(expected_size_);

    if (paused_) {
        parked_ = [this] { get(); };
        return;
    }
    if (restart_requested_) return retry(error(HubError::Kind::BadResponse, "unexpected Content-Range"), [this] { get(); });
    if (stalled_) {
        return retry(error(HubError::Kind::Stalled, "no data for " + seconds_text(context_.config->stall_timeout_ms) + position),
                     [this] { get(); });
    }
    if (status == 416) {
        restart_from_zero();
        return retry(error(HubError::Kind::BadResponse, "the server refused the range (HTTP 416)"), [this] { get(); });
    }
    if (status >= 400 || (status >= 300 && status < 400)) {
        HubError why = HubApi::error_from(reply, *context_.config, context_.repo, context_.repo + "/" + file_.path);
        if (status >= 300 && status < 400) why = error(HubError::Kind::BadResponse, "too many redirects");
        if (transient_status(status)) return retry(why, [this] { get(); });
        return finish_error(why);
    }
    if (reply->error() != QNetworkReply::NoError && (expected_size_ < 0 || written_ < expected_size_)) {
        return retry(error(HubError::Kind::Network, "download interrupted (" + reply->errorString() + ")" + position),
                     [this] { get(); });
    }
    if (expected_size_ >= 0 && written_ < expected_size_)
        return retry(error(HubError::Kind::Network, "the connection closed early" + position), [this] { get(); });
    if (expected_size_ >= 0 && written_ > expected_size_) {
        partial_.close();
        QFile::remove(partial_path_);
        return finish_error(error(HubError::Kind::Checksum, QStringLiteral("the server sent %1 bytes, the hub announced %2; "
                                                                           "the partial file was removed")
                                                                .arg(written_)
                                                                .arg(expected_size_)));
    }
    complete();
}

void FileTask::retry(HubError why, std::function<void()> again) {
    if (progress_this_attempt_) attempts_ = 0;
    ++attempts_;
    const int max_attempts = std::max(1, context_.config->max_attempts);
    if (attempts_ >= max_attempts) {
        why.message += QStringLiteral(" (gave up after %1 attempts; the partial file is kept for the next try)").arg(attempts_);
        return finish_error(why);
    }
    const int delay = std::min(context_.config->retry_max_ms,
                               context_.config->retry_base_ms * (1 << std::min(attempts_ - 1, 16)));
    emit message(QStringLiteral("%1: %2; retrying in %3").arg(file_.path, why.message, seconds_text(delay)));
    step_ = Step::Backoff;
    retry_timer_.disconnect();
    connect(&retry_timer_, &QTimer::timeout, this, [this, again = std::move(again)] {
        if (step_ != Step::Backoff) return;
        if (park([this] { retry_timer_.start(0); })) return;
        again();
    });
    retry_timer_.start(delay);
}

// ---- Verify, move into blobs/, link from snapshots/ --------------------------------------------

void FileTask::complete() {
    const QString sha256 = QString::fromLatin1(sha256_.result().toHex());
    QString expected, actual, kind;
    if (lfs_) {
        expected = etag_.toLower();
        actual = sha256;
        kind = "sha256";
    } else if (!file_.lfs_sha256.isEmpty()) {
        expected = file_.lfs_sha256.toLower();
        actual = sha256;
        kind = "sha256";
    } else if (is_hex(etag_.toLower(), 40) && expected_size_ >= 0) {
        expected = etag_.toLower();
        actual = QString::fromLatin1(git_sha1_.result().toHex());
        kind = "git sha1";
    }
    if (!expected.isEmpty() && expected != actual) {
        partial_.close();
        QFile::remove(partial_path_);
        if (resumed_ && !restarted_after_mismatch_) {
            // The kept bytes may be from another version of the file: one fresh try.
            restarted_after_mismatch_ = true;
            resumed_ = false;
            emit message(QStringLiteral("%1: %2 mismatch after resuming; downloading it again from zero").arg(file_.path, kind));
            return open_partial();
        }
        return finish_error(error(HubError::Kind::Checksum, QStringLiteral("%1 mismatch: expected %2, got %3; the partial "
                                                                           "file was removed and nothing was stored")
                                                                .arg(kind, expected, actual)));
    }
#ifndef _WIN32
    ::fsync(partial_.handle());
#endif
    partial_.close();
    std::error_code failure;
    fs::rename(to_path(partial_path_), to_path(blob_path_), failure);
    if (failure)
        return finish_error(error(HubError::Kind::Io, "cannot move " + partial_path_ + " into place: " +
                                                         QString::fromStdString(failure.message())));
    QString problem;
    if (!place_pointer(true, &problem)) return finish_error(error(HubError::Kind::Io, problem));
    finish(true);
}

bool FileTask::place_pointer(bool new_blob, QString* problem) {
    const fs::path pointer = to_path(pointer_path_);
    const fs::path blob = to_path(blob_path_);
    std::error_code failure;
    fs::create_directories(pointer.parent_path(), failure);
    if (failure) {
        *problem = "cannot create " + QString::fromStdU16String(pointer.parent_path().u16string());
        return false;
    }
    if (context_.symlinks) {
        // Relative, as huggingface_hub writes it: ../../blobs/<etag> (one more ../ per subfolder).
        const fs::path target = blob.lexically_relative(pointer.parent_path());
        std::error_code status;
        if (fs::is_symlink(fs::symlink_status(pointer, status)) && fs::read_symlink(pointer, status) == target) return true;
        fs::remove(pointer, status);
        fs::create_symlink(target, pointer, failure);
        if (!failure) return true;
        if (fs::is_symlink(fs::symlink_status(pointer, status)) && fs::read_symlink(pointer, status) == target)
            return true;  // another process linked it at the same moment
        *problem = "cannot link " + pointer_path_ + ": " + QString::fromStdString(failure.message());
        return false;
    }
    // No symlinks (Windows without developer mode): the file itself lives in snapshots/.
    fs::remove(pointer, failure);
    failure.clear();
    if (new_blob) {
        fs::rename(blob, pointer, failure);
        if (!failure) blob_path_.clear();
    } else {
        const fs::path temporary = pointer.string() + ".copying";
        fs::copy_file(blob, temporary, fs::copy_options::overwrite_existing, failure);
        if (!failure) fs::rename(temporary, pointer, failure);
    }
    if (failure) {
        *problem = "cannot place " + pointer_path_ + ": " + QString::fromStdString(failure.message());
        return false;
    }
    return true;
}

void FileTask::finish(bool downloaded) {
    step_ = Step::Done;
    release_lock();
    DownloadedFile result;
    result.path = file_.path;
    result.local_path = pointer_path_;
    result.blob = blob_path_;
    result.etag = etag_;
    result.size = QFileInfo(pointer_path_).size();
    result.downloaded = downloaded;
    result.resumed_from = downloaded ? resumed_from_ : 0;
    emit done(result);
}

void FileTask::finish_error(HubError problem) {
    if (step_ == Step::Failed || step_ == Step::Done) return;
    step_ = Step::Failed;
    stall_timer_.stop();
    retry_timer_.stop();
    lock_timer_.stop();
    if (reply_) {
        reply_->disconnect(this);
        reply_->abort();
        reply_->deleteLater();
        reply_.clear();
    }
    partial_.close();
    release_lock();
    emit failed(problem);
}

}  // namespace oxinfer::hub
