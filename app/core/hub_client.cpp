#include "core/hub_client.h"

#include <oxinfer/hub/downloader.h>
#include <oxinfer/hub/file_selection.h>
#include <oxinfer/hub/hub_api.h>

#include <QDir>

#include <memory>

namespace studio {

using oxinfer::hub::HubError;
using oxinfer::hub::RepoFile;

// On the hub thread: the API and the downloader, created there so that their network objects
// belong to it.
class HubWorker : public QObject {
    Q_OBJECT
public:
    HubWorker() = default;

    void search(const QString& text) {
        oxinfer::hub::SearchQuery query;
        query.search = text;
        query.filters = {QStringLiteral("text-generation")};
        query.limit = 30;
        api().search(query, [this](const QList<oxinfer::hub::SearchHit>& hits, const HubError& error) {
            emit searchFinished(hits, error ? error.text() : QString());
        });
    }

    void listVariants(const QString& repo) {
        api().repo_files(repo, QString(), [this, repo](const oxinfer::hub::RepoInfo& info, const HubError& error) {
            if (error) return emit variantsListed(repo, {}, error.text());
            emit variantsListed(repo, variants(info.files), QString());
        });
    }

    void download(const QString& repo, const QString& variant) {
        downloader_.reset();
        cancelPending_ = pausePending_ = false;
        api().repo_files(repo, QString(), [this, repo, variant](const oxinfer::hub::RepoInfo& info, const HubError& error) {
            if (error) return emit failed(repo, error.text());
            if (cancelPending_) return emit failed(repo, QStringLiteral("%1: download cancelled").arg(repo));
            QList<RepoFile> files;
            QString first;
            for (const ModelVariant& v : variants(info.files)) {
                if (v.name != variant) continue;
                for (const RepoFile& file : info.files)
                    if (v.files.contains(file.path)) files.append(file);
                if (variant != QLatin1String("safetensors")) first = v.files.first();
            }
            if (files.isEmpty()) return emit failed(repo, QStringLiteral("%1: no '%2' in the repo").arg(repo, variant));
            downloader_ = std::make_unique<oxinfer::hub::Downloader>(oxinfer::hub::HubConfig::from_environment());
            connect(downloader_.get(), &oxinfer::hub::Downloader::progress, this, &HubWorker::progress);
            connect(downloader_.get(), &oxinfer::hub::Downloader::finished, this, [this, repo, first](const QString& snapshot) {
                emit finished(repo, first.isEmpty() ? snapshot : QDir(snapshot).filePath(first));
            });
            connect(downloader_.get(), &oxinfer::hub::Downloader::failed, this,
                    [this, repo](const HubError& problem) { emit failed(repo, problem.text()); });
            downloader_->start(repo, QStringLiteral("main"), info.sha, files);
            if (pausePending_) downloader_->pause();
        });
    }

    // Before the file list arrives there is no downloader yet: the wish waits for it.
    void pause() {
        if (downloader_) downloader_->pause();
        else pausePending_ = true;
    }
    void resume() {
        if (downloader_) downloader_->resume();
        else pausePending_ = false;
    }
    void cancel() {
        if (downloader_) downloader_->cancel();
        else cancelPending_ = true;
    }

signals:
    void searchFinished(const QList<oxinfer::hub::SearchHit>& hits, const QString& error);
    void variantsListed(const QString& repo, const QList<studio::ModelVariant>& variants, const QString& error);
    void progress(const oxinfer::hub::DownloadProgress& progress);
    void finished(const QString& repo, const QString& modelPath);
    void failed(const QString& repo, const QString& error);

private:
    oxinfer::hub::HubApi& api() {
        if (!api_) api_ = std::make_unique<oxinfer::hub::HubApi>(oxinfer::hub::HubConfig::from_environment());
        return *api_;
    }

    // GGUF quantizations (smallest first), or the engine's files of a safetensors repo.
    static QList<ModelVariant> variants(const QList<RepoFile>& files) {
        QList<ModelVariant> out;
        if (oxinfer::hub::is_gguf_repo(files)) {
            for (const auto& variant : oxinfer::hub::gguf_variants(files)) {
                ModelVariant v;
                v.name = QString::fromStdString(variant.quant);
                for (const RepoFile& file : oxinfer::hub::select_gguf_variant(files, variant)) {
                    v.files << file.path;
                    v.bytes += file.size;
                }
                // The projector (for images) comes along, but the model file is what loads.
                const QString model = QString::fromStdString(variant.files.front());
                v.files.removeAll(model);
                v.files.prepend(model);
                out.append(v);
            }
            return out;
        }
        const QList<RepoFile> engine = oxinfer::hub::select_engine_files(files);
        if (engine.isEmpty()) return out;
        ModelVariant v;
        v.name = QStringLiteral("safetensors");
        for (const RepoFile& file : engine) v.files << file.path;
        v.bytes = oxinfer::hub::total_size(engine);
        out.append(v);
        return out;
    }

    std::unique_ptr<oxinfer::hub::HubApi> api_;
    std::unique_ptr<oxinfer::hub::Downloader> downloader_;
    bool cancelPending_ = false;
    bool pausePending_ = false;
};

HubClient::HubClient(QObject* parent) : QObject(parent) {
    static const bool registered = [] {
        qRegisterMetaType<ModelVariant>();
        qRegisterMetaType<QList<ModelVariant>>();
        qRegisterMetaType<oxinfer::hub::SearchHit>();
        qRegisterMetaType<QList<oxinfer::hub::SearchHit>>();
        qRegisterMetaType<oxinfer::hub::DownloadProgress>();
        qRegisterMetaType<oxinfer::hub::HubError>();
        return true;
    }();
    Q_UNUSED(registered);
    thread_.setObjectName(QStringLiteral("oxinfer hub"));
    worker_ = new HubWorker;
    worker_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
    connect(this, &HubClient::searchRequested, worker_, &HubWorker::search);
    connect(this, &HubClient::variantsRequested, worker_, &HubWorker::listVariants);
    connect(this, &HubClient::downloadRequested, worker_, &HubWorker::download);
    connect(this, &HubClient::pauseRequested, worker_, &HubWorker::pause);
    connect(this, &HubClient::resumeRequested, worker_, &HubWorker::resume);
    connect(this, &HubClient::cancelRequested, worker_, &HubWorker::cancel);
    connect(worker_, &HubWorker::searchFinished, this, &HubClient::searchFinished);
    connect(worker_, &HubWorker::variantsListed, this, &HubClient::variantsListed);
    connect(worker_, &HubWorker::progress, this, &HubClient::downloadProgress);
    connect(worker_, &HubWorker::finished, this, [this](const QString& repo, const QString& path) {
        setState(DownloadState::Idle);
        emit downloadFinished(repo, path);
    });
    connect(worker_, &HubWorker::failed, this, [this](const QString& repo, const QString& error) {
        setState(DownloadState::Idle);
        emit downloadFailed(repo, error);
    });
    thread_.start();
}

HubClient::~HubClient() {
    thread_.quit();
    thread_.wait();
}

void HubClient::setState(DownloadState state) {
    if (state_ == state) return;
    state_ = state;
    emit downloadStateChanged(state);
}

void HubClient::search(const QString& text) { emit searchRequested(text); }
void HubClient::listVariants(const QString& repo) { emit variantsRequested(repo); }

void HubClient::download(const QString& repo, const QString& variant) {
    if (state_ != DownloadState::Idle) return;
    repo_ = repo;
    setState(DownloadState::Running);
    emit downloadRequested(repo, variant);
}

void HubClient::pause() {
    if (state_ != DownloadState::Running) return;
    setState(DownloadState::Paused);
    emit pauseRequested();
}

void HubClient::resume() {
    if (state_ != DownloadState::Paused) return;
    setState(DownloadState::Running);
    emit resumeRequested();
}

void HubClient::cancel() {
    if (state_ == DownloadState::Idle) return;
    emit cancelRequested();  // the downloader then reports a Cancelled failure, which ends the state
}

}  // namespace studio

#include "hub_client.moc"
