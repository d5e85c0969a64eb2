#pragma once
// Hugging Face hub access for the app: search, the quantizations of a repo, and one download at a
// time into the shared cache with progress, pause, resume and cancel (oxinfer_hub does the
// work: resumable, verified). The network objects live on a thread of their own rather than the
// engine thread: a generation keeps the engine thread busy between tokens, and a download must
// not stall meanwhile. The UI talks to it through queued signals only.

#include <oxinfer/hub/hub_types.h>

#include <QList>
#include <QObject>
#include <QString>
#include <QThread>

namespace studio {

// What can be downloaded from a repo: one GGUF quantization, or the safetensors model.
struct ModelVariant {
    QString name;   // "Q4_K_M", or "safetensors"
    qint64 bytes = 0;
    QStringList files;
};

class HubWorker;

class HubClient : public QObject {
    Q_OBJECT
public:
    enum class DownloadState { Idle, Running, Paused };
    Q_ENUM(DownloadState)

    explicit HubClient(QObject* parent = nullptr);
    ~HubClient() override;

    DownloadState downloadState() const { return state_; }
    QString downloadingRepo() const { return repo_; }

    void search(const QString& text);
    void listVariants(const QString& repo);
    // `variant` as listVariants named it. Emits downloadFinished with the path to load.
    void download(const QString& repo, const QString& variant);
    void pause();
    void resume();
    void cancel();  // keeps the partial files: the next download of the same files resumes them

signals:
    void searchFinished(const QList<oxinfer::hub::SearchHit>& hits, const QString& error);
    void variantsListed(const QString& repo, const QList<studio::ModelVariant>& variants, const QString& error);
    void downloadStateChanged(studio::HubClient::DownloadState state);
    void downloadProgress(const oxinfer::hub::DownloadProgress& progress);
    void downloadFinished(const QString& repo, const QString& modelPath);
    void downloadFailed(const QString& repo, const QString& error);

    // To the worker (queued).
    void searchRequested(const QString& text);
    void variantsRequested(const QString& repo);
    void downloadRequested(const QString& repo, const QString& variant);
    void pauseRequested();
    void resumeRequested();
    void cancelRequested();

private:
    void setState(DownloadState state);

    QThread thread_;
    HubWorker* worker_ = nullptr;
    DownloadState state_ = DownloadState::Idle;
    QString repo_;
};

}  // namespace studio

Q_DECLARE_METATYPE(studio::ModelVariant)
