#pragma once
// One file of a Downloader: HEAD, lock, resume, GET with stall detection and retries, verify,
// move into blobs/, link from snapshots/. Internal to oxinfer_hub.

#include <oxinfer/hub/hub_types.h>

#include <QCryptographicHash>
#include <QFile>
#include <QLockFile>
#include <QObject>
#include <QPointer>
#include <QTimer>
#include <QUrl>

#include <functional>
#include <memory>

class QNetworkReply;

namespace oxinfer::hub {

class HubApi;

struct TaskContext {
    const HubConfig* config = nullptr;
    HubApi* api = nullptr;
    QString repo;
    QString commit;
    QString repo_folder;   // <cache>/models--org--name
    QString locks_folder;  // <cache>/.locks/models--org--name
    bool symlinks = true;
};

class FileTask : public QObject {
    Q_OBJECT
public:
    FileTask(const TaskContext& context, RepoFile file, QObject* parent = nullptr);
    ~FileTask() override;

    void start();
    void pause();
    void resume();
    void cancel();

    const RepoFile& file() const { return file_; }
    bool ended() const { return step_ == Step::Done || step_ == Step::Failed; }
    qint64 bytes_on_disk() const;
    qint64 total() const;
    qint64 network_bytes() const { return network_bytes_; }

signals:
    void done(const oxinfer::hub::DownloadedFile& file);
    void failed(const oxinfer::hub::HubError& error);
    void message(const QString& text);

private:
    enum class Step { Idle, Head, Lock, Hash, Get, Backoff, Done, Failed };

    void head(const QUrl& url, int redirects);
    void on_head(QNetworkReply* reply, int redirects);
    void try_lock();
    void open_partial();
    void hash_partial();
    void get();
    void on_ready_read();
    void on_get_finished();
    bool check_response();
    void retry(HubError why, std::function<void()> again);
    void complete();
    void restart_from_zero();
    void reset_hashes();
    bool place_pointer(bool new_blob, QString* problem);
    bool pointer_is_complete() const;
    void finish(bool downloaded);
    void finish_error(HubError error);
    void release_lock();
    HubError error(HubError::Kind kind, const QString& message) const;
    bool park(std::function<void()> action);

    TaskContext context_;
    RepoFile file_;
    Step step_ = Step::Idle;
    bool paused_ = false;
    std::function<void()> parked_;

    QUrl download_url_;
    QString etag_;
    qint64 expected_size_ = -1;
    bool lfs_ = false;
    QString blob_path_, partial_path_, pointer_path_, lock_path_;
    std::unique_ptr<QLockFile> lock_;
    QFile partial_;
    QCryptographicHash sha256_{QCryptographicHash::Sha256};
    QCryptographicHash git_sha1_{QCryptographicHash::Sha1};
    qint64 written_ = 0;
    qint64 resumed_from_ = 0;
    bool resumed_ = false;
    bool restarted_after_mismatch_ = false;

    QPointer<QNetworkReply> reply_;
    bool response_checked_ = false;
    bool response_ok_ = false;
    bool restart_requested_ = false;
    bool stalled_ = false;
    int attempts_ = 0;
    bool progress_this_attempt_ = false;
    qint64 network_bytes_ = 0;
    QTimer stall_timer_;
    QTimer retry_timer_;
    QTimer lock_timer_;
    bool lock_wait_noted_ = false;
};

}  // namespace oxinfer::hub
