#pragma once
// Downloads files of a repo at one commit into the Hugging Face cache, exactly as huggingface_hub
// lays it out (see oxinfer/hf_cache.h), and never leaves a corrupt file behind:
//
//  - each file: HEAD /{repo}/resolve/{commit}/{path} (X-Repo-Commit, X-Linked-Etag / ETag,
//    X-Linked-Size, Location of the storage host), then GET from there into
//    blobs/<etag>.incomplete, under the lock .locks/models--org--name/<etag>.lock (QLockFile: a
//    second process waits, then finds the blob; a killed process's lock is taken over);
//  - a partial file left by a pause, a dropped connection, a crash or SIGKILL is resumed with
//    "Range: bytes=N-" (206 + Content-Range checked; a 200 restarts from zero), the sha256 of its
//    bytes recomputed first;
//  - no byte for stall_timeout_ms aborts the request; failed attempts are retried with exponential
//    backoff, max_attempts in a row;
//  - the free space is checked for all missing bytes before anything starts;
//  - sha256 (LFS files) or the git blob sha1 (small files) is computed while downloading and
//    checked before the atomic rename into blobs/; a mismatch deletes the partial file;
//  - snapshots/<commit>/<path> is a relative symlink to ../../blobs/<etag> (where symlinks are not
//    allowed, the new blob is moved there instead, or an existing one copied, as huggingface_hub
//    does), and refs/<revision> holds the commit.
//
// Everything runs on the thread that owns the Downloader (signals; no blocking), several files at once.

#include <oxinfer/hub/hub_types.h>

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <deque>
#include <memory>
#include <vector>

class QNetworkAccessManager;

namespace oxinfer::hub {

class HubApi;
class FileTask;

class Downloader : public QObject {
    Q_OBJECT
public:
    explicit Downloader(HubConfig config, QObject* parent = nullptr);
    ~Downloader() override;

    // Starts downloading `files` (from HubApi::repo_files) of `repo` at `commit`; `revision` is the
    // branch or tag refs/ records. Emits finished() or failed() once.
    void start(const QString& repo, const QString& revision, const QString& commit, const QList<RepoFile>& files);

    // Pause keeps the partial files and locks; resume continues them with Range requests. Cancel
    // stops everything and keeps the partial files for a later download to resume.
    void pause();
    void resume();
    void cancel();

    bool running() const { return running_; }
    bool paused() const { return paused_; }
    const HubConfig& config() const { return config_; }
    QString repo_folder() const;    // <cache>/models--org--name
    QString snapshot_dir() const;   // <cache>/models--org--name/snapshots/<commit>
    const QList<DownloadedFile>& results() const { return results_; }
    DownloadProgress current_progress() const;

signals:
    void progress(const oxinfer::hub::DownloadProgress& progress);
    void file_finished(const oxinfer::hub::DownloadedFile& file);
    void message(const QString& text);  // retries, resumes, waits for another process
    void finished(const QString& snapshot_dir);
    void failed(const oxinfer::hub::HubError& error);

private:
    void start_more();
    void on_task_done(FileTask* task, const DownloadedFile& file);
    void on_task_failed(FileTask* task, const HubError& error);
    void fail(const HubError& error);
    void emit_progress();

    HubConfig config_;
    HubApi* api_;
    QString repo_, revision_, commit_;
    std::vector<std::unique_ptr<FileTask>> tasks_;
    std::deque<FileTask*> queue_;
    int active_ = 0;
    int done_ = 0;
    bool running_ = false;
    bool paused_ = false;
    bool symlinks_ = true;
    QList<DownloadedFile> results_;
    QTimer progress_timer_;
    QElapsedTimer clock_;
    std::deque<std::pair<qint64, qint64>> samples_;  // (ms, bytes received over the network)
    qint64 network_bytes_ = 0;
};

// Whether symbolic links can be created in `folder` (probed once per folder, as huggingface_hub).
bool symlinks_supported(const QString& folder);

}  // namespace oxinfer::hub
