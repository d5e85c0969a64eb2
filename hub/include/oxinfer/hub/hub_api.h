#pragma once
// The Hugging Face hub's HTTP API, asynchronous (QNetworkAccessManager on the caller's thread):
//   GET /api/models/{repo}                          model info
//   GET /api/models/{repo}/revision/{revision}      model info at a branch, tag or commit
//   GET /api/models/{repo}/tree/{revision}?recursive=true   every file with its size and LFS sha256
//   GET /api/models?search=..&filter=gguf&sort=downloads&direction=-1&limit=N
// Callbacks run on the thread that owns the HubApi (the CLI's event loop, the app's engine thread).

#include <oxinfer/hub/hub_types.h>

#include <QNetworkRequest>
#include <QObject>
#include <QUrl>

#include <functional>

class QNetworkAccessManager;
class QNetworkReply;

namespace oxinfer::hub {

class HubApi : public QObject {
    Q_OBJECT
public:
    explicit HubApi(HubConfig config, QObject* parent = nullptr);

    const HubConfig& config() const { return config_; }
    QNetworkAccessManager* network() const { return network_; }

    using InfoDone = std::function<void(const RepoInfo&, const HubError&)>;
    using FilesDone = std::function<void(const QList<RepoFile>&, const HubError&)>;
    using SearchDone = std::function<void(const QList<SearchHit>&, const HubError&)>;

    // `revision` empty: the repo's default branch through /api/models/{repo}.
    void model_info(const QString& repo, const QString& revision, InfoDone done);
    // Every file (recursively) at `revision`, following the Link pages.
    void list_files(const QString& repo, const QString& revision, FilesDone done);
    // model_info, then the tree at the commit it names: info.files has sizes and sha256.
    void repo_files(const QString& repo, const QString& revision, InfoDone done);
    void search(const SearchQuery& query, SearchDone done);

    // URLs of the API and of a file (/{repo}/resolve/{revision}/{path}), percent-encoded as
    // huggingface_hub does (the revision fully, the path except its slashes).
    QUrl api_url(const QString& path_and_query) const;
    QUrl resolve_url(const QString& repo, const QString& revision, const QString& path) const;
    // A request with the user agent, and the token when `url` is on the endpoint's host.
    QNetworkRequest request(const QUrl& url) const;

    // The error a finished reply stands for ("" kind None when it succeeded), named after
    // `subject`, with the hub's X-Error-Code read as huggingface_hub reads it.
    static HubError error_from(QNetworkReply* reply, const HubConfig& config, const QString& repo, const QString& subject);

private:
    void get_json(const QUrl& url, const QString& repo, const QString& subject,
                  std::function<void(QNetworkReply*, const QByteArray&, const HubError&)> done);
    void list_page(const QUrl& url, const QString& repo, QList<RepoFile> so_far, FilesDone done);

    HubConfig config_;
    QNetworkAccessManager* network_;
};

// Normalises an ETag header as huggingface_hub does: W/ prefix and quotes removed.
QString normalize_etag(const QByteArray& header);

}  // namespace oxinfer::hub
