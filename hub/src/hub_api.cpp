#include <oxinfer/hub/hub_api.h>

#include <oxinfer/hf_cache.h>
#include <oxinfer/platform.h>

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QRegularExpression>
#include <QStorageInfo>
#include <QUrlQuery>

namespace oxinfer::hub {
namespace {

bool env_true(const char* name) {
    const QByteArray value = qgetenv(name).trimmed().toUpper();
    return value == "1" || value == "ON" || value == "YES" || value == "TRUE";
}

int env_int(const char* name, int fallback) {
    bool ok = false;
    const int value = qEnvironmentVariableIntValue(name, &ok);
    return ok ? value : fallback;
}

QString status_reason(QNetworkReply* reply) {
    return reply->attribute(QNetworkRequest::HttpReasonPhraseAttribute).toString();
}

QStringList string_list(const QJsonValue& value) {
    QStringList out;
    for (const QJsonValue& item : value.toArray()) out << item.toString();
    return out;
}

QString gated_value(const QJsonValue& value) {
    if (value.isString()) return value.toString();
    return value.toBool() ? QStringLiteral("manual") : QString();
}

RepoInfo parse_info(const QJsonObject& object, const QString& revision) {
    RepoInfo info;
    info.raw = object;
    info.id = object.value("id").toString(object.value("modelId").toString());
    info.sha = object.value("sha").toString();
    info.revision = revision;
    info.is_private = object.value("private").toBool();
    info.gated = gated_value(object.value("gated"));
    info.disabled = object.value("disabled").toBool();
    info.downloads = object.value("downloads").toInteger();
    info.likes = object.value("likes").toInteger();
    info.tags = string_list(object.value("tags"));
    info.pipeline_tag = object.value("pipeline_tag").toString();
    info.library_name = object.value("library_name").toString();
    info.last_modified = object.value("lastModified").toString();
    for (const QJsonValue& sibling : object.value("siblings").toArray()) {
        const QJsonObject file = sibling.toObject();
        RepoFile entry;
        entry.path = file.value("rfilename").toString();
        entry.size = file.contains("size") ? file.value("size").toInteger() : -1;
        entry.oid = file.value("blobId").toString();
        entry.lfs_sha256 = file.value("lfs").toObject().value("sha256").toString();
        info.files << entry;
    }
    return info;
}

// The "next" URL of a Link header (<url>; rel="next"), as GitHub and the hub paginate.
QUrl next_link(const QByteArray& header, const QUrl& base) {
    static const QRegularExpression pattern(QStringLiteral(R"(<([^>]*)>\s*;\s*rel\s*=\s*"?next"?)"));
    const auto match = pattern.match(QString::fromUtf8(header));
    if (!match.hasMatch()) return {};
    return base.resolved(QUrl(match.captured(1)));
}

}  // namespace

HubConfig HubConfig::from_environment() {
    HubConfig config;
    const QString endpoint = qEnvironmentVariable("HF_ENDPOINT").trimmed();
    config.endpoint = endpoint.isEmpty() ? QString(kDefaultEndpoint) : endpoint;
    while (config.endpoint.endsWith('/')) config.endpoint.chop(1);
    config.token = QString::fromStdString(hf::read_token());
    config.cache_dir = QString::fromStdString(hf::hub_cache_dir().string());
    config.use_symlinks = !env_true("HF_HUB_DISABLE_SYMLINKS");
    bool ok = false;
    const double stall = qEnvironmentVariable("OXINFER_HUB_STALL_SECONDS").toDouble(&ok);
    if (ok && stall > 0) config.stall_timeout_ms = static_cast<int>(stall * 1000);
    config.max_attempts = std::max(1, env_int("OXINFER_HUB_RETRIES", config.max_attempts));
    config.retry_base_ms = std::max(0, env_int("OXINFER_HUB_RETRY_MS", config.retry_base_ms));
    config.parallel_files = std::max(1, env_int("OXINFER_HUB_PARALLEL", config.parallel_files));
    return config;
}

qint64 HubConfig::free_bytes_at(const QString& folder) const {
    if (free_bytes) return free_bytes(folder);
    bool ok = false;
    const qint64 forced = qEnvironmentVariable("OXINFER_TEST_FREE_BYTES").toLongLong(&ok);
    if (ok) return forced;
    // The nearest folder that exists: the cache may not be there yet.
    QString existing = folder;
    while (!existing.isEmpty() && !QFileInfo::exists(existing)) {
        const QString parent = QFileInfo(existing).path();
        if (parent == existing) break;
        existing = parent;
    }
    QStorageInfo storage(existing);
    return storage.isValid() ? storage.bytesAvailable() : -1;
}

QString normalize_etag(const QByteArray& header) {
    QString etag = QString::fromLatin1(header).trimmed();
    if (etag.startsWith(QLatin1String("W/"))) etag = etag.mid(2);
    while (etag.startsWith('"')) etag.remove(0, 1);
    while (etag.endsWith('"')) etag.chop(1);
    return etag;
}

HubApi::HubApi(HubConfig config, QObject* parent)
    : QObject(parent), config_(std::move(config)), network_(new QNetworkAccessManager(this)) {
    qRegisterMetaType<HubError>();
    qRegisterMetaType<DownloadProgress>();
    qRegisterMetaType<DownloadedFile>();
    network_->setRedirectPolicy(QNetworkRequest::NoLessSafeRedirectPolicy);
}

QUrl HubApi::api_url(const QString& path_and_query) const { return QUrl(config_.endpoint + path_and_query); }

QUrl HubApi::resolve_url(const QString& repo, const QString& revision, const QString& path) const {
    const QByteArray encoded = config_.endpoint.toUtf8() + "/" + repo.toUtf8() + "/resolve/" +
                               QUrl::toPercentEncoding(revision) + "/" + QUrl::toPercentEncoding(path, "/");
    return QUrl::fromEncoded(encoded);
}

QNetworkRequest HubApi::request(const QUrl& url) const {
    QNetworkRequest request(url);
    request.setRawHeader("User-Agent", QByteArray("oxinfer/") + OXINFER_VERSION + " (Qt " + qVersion() + ")");
    const QUrl endpoint(config_.endpoint);
    // The token goes to the hub only, never to the storage host a download is redirected to.
    if (!config_.token.isEmpty() && url.host() == endpoint.host() && url.port(-1) == endpoint.port(-1))
        request.setRawHeader("Authorization", "Bearer " + config_.token.toUtf8());
    request.setTransferTimeout(config_.request_timeout_ms);
    return request;
}

HubError HubApi::error_from(QNetworkReply* reply, const HubConfig& config, const QString& repo, const QString& subject) {
    HubError error;
    error.subject = subject;
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    error.http_status = status;
    if (status >= 200 && status < 400 && reply->error() == QNetworkReply::NoError) return error;
    const QByteArray code = reply->rawHeader("X-Error-Code");
    const QString hub_message = QString::fromUtf8(reply->rawHeader("X-Error-Message"));
    const QString repo_page = config.endpoint + "/" + repo;
    const QString token_hint = config.token.isEmpty()
                                   ? QStringLiteral("no token is set: put one in HF_TOKEN or in ") +
                                         QString::fromStdString(hf::token_path().string())
                                   : QStringLiteral("the token in use has no access to it yet");
    if (status == 0) {
        error.kind = reply->error() == QNetworkReply::OperationCanceledError ? HubError::Kind::Cancelled
                                                                            : HubError::Kind::Network;
        error.message = QStringLiteral("cannot reach %1: %2").arg(reply->url().host(), reply->errorString());
        return error;
    }
    if (code == "GatedRepo") {
        error.kind = HubError::Kind::Gated;
        error.message = QStringLiteral("%1 is a gated model (HTTP %2): accept its license at %3 while logged in, "
                                       "then use a token of that account (%4)")
                            .arg(repo)
                            .arg(status)
                            .arg(repo_page, token_hint);
    } else if (code == "RevisionNotFound") {
        error.kind = HubError::Kind::RevisionNotFound;
        error.message = QStringLiteral("revision not found in %1 (HTTP %2)").arg(repo).arg(status);
    } else if (code == "EntryNotFound" || (status == 404 && code.isEmpty() && reply->url().path().contains("/resolve/"))) {
        error.kind = HubError::Kind::EntryNotFound;
        error.message = QStringLiteral("no such file in %1 (HTTP %2)").arg(repo).arg(status);
    } else if (code == "RepoNotFound" || (status == 404 && code.isEmpty()) ||
               (status == 401 && hub_message != QLatin1String("Invalid credentials in Authorization header"))) {
        error.kind = HubError::Kind::RepoNotFound;
        error.message = status == 404 ? QStringLiteral("repository not found on %1 (HTTP 404)").arg(config.endpoint)
                                      : QStringLiteral("repository not found on %1, or it is private or gated (HTTP %2; %3)")
                                            .arg(config.endpoint)
                                            .arg(status)
                                            .arg(token_hint);
    } else if (status == 401) {
        error.kind = HubError::Kind::Unauthorized;
        error.message = QStringLiteral("the hub refused the token (HTTP 401: %1)").arg(hub_message);
    } else if (status == 403) {
        error.kind = HubError::Kind::Forbidden;
        error.message = QStringLiteral("access denied (HTTP 403%1)").arg(hub_message.isEmpty() ? "" : ": " + hub_message);
    } else {
        error.kind = HubError::Kind::Http;
        error.message = QStringLiteral("HTTP %1 %2%3")
                            .arg(status)
                            .arg(status_reason(reply), hub_message.isEmpty() ? QString() : ": " + hub_message);
    }
    return error;
}

void HubApi::get_json(const QUrl& url, const QString& repo, const QString& subject,
                      std::function<void(QNetworkReply*, const QByteArray&, const HubError&)> done) {
    QNetworkRequest request = this->request(url);
    request.setRawHeader("Accept", "application/json");
    QNetworkReply* reply = network_->get(request);
    connect(reply, &QNetworkReply::finished, this, [this, reply, repo, subject, done = std::move(done)] {
        reply->deleteLater();
        const QByteArray body = reply->readAll();
        HubError error = error_from(reply, config_, repo, subject);
        if (!error && QJsonDocument::fromJson(body).isNull()) {
            error.kind = HubError::Kind::BadResponse;
            error.message = QStringLiteral("the hub's answer at %1 is not JSON").arg(reply->url().toString());
        }
        done(reply, body, error);
    });
}

void HubApi::model_info(const QString& repo, const QString& revision, InfoDone done) {
    QString path = "/api/models/" + repo;
    if (!revision.isEmpty()) path += "/revision/" + QString::fromLatin1(QUrl::toPercentEncoding(revision));
    get_json(QUrl::fromEncoded(config_.endpoint.toUtf8() + path.toUtf8()), repo, repo,
             [revision, done](QNetworkReply*, const QByteArray& body, const HubError& error) {
                 if (error) return done(RepoInfo{}, error);
                 RepoInfo info = parse_info(QJsonDocument::fromJson(body).object(), revision.isEmpty() ? "main" : revision);
                 if (info.sha.isEmpty()) {
                     HubError bad;
                     bad.kind = HubError::Kind::BadResponse;
                     bad.subject = info.id;
                     bad.message = QStringLiteral("the hub's model info has no commit (sha)");
                     return done(info, bad);
                 }
                 done(info, HubError{});
             });
}

void HubApi::list_files(const QString& repo, const QString& revision, FilesDone done) {
    const QByteArray path = "/api/models/" + repo.toUtf8() + "/tree/" + QUrl::toPercentEncoding(revision) + "?recursive=true";
    list_page(QUrl::fromEncoded(config_.endpoint.toUtf8() + path), repo, {}, std::move(done));
}

void HubApi::list_page(const QUrl& url, const QString& repo, QList<RepoFile> so_far, FilesDone done) {
    get_json(url, repo, repo, [this, url, repo, so_far, done](QNetworkReply* reply, const QByteArray& body, const HubError& error) mutable {
        if (error) return done({}, error);
        for (const QJsonValue& value : QJsonDocument::fromJson(body).array()) {
            const QJsonObject entry = value.toObject();
            if (entry.value("type").toString() != QLatin1String("file")) continue;
            RepoFile file;
            file.path = entry.value("path").toString();
            file.size = entry.value("size").toInteger(-1);
            file.oid = entry.value("oid").toString();
            const QJsonObject lfs = entry.value("lfs").toObject();
            if (!lfs.isEmpty()) {
                file.lfs_sha256 = lfs.value("oid").toString();
                if (lfs.contains("size")) file.size = lfs.value("size").toInteger(file.size);
            }
            so_far << file;
        }
        const QUrl next = next_link(reply->rawHeader("Link"), url);
        if (next.isValid() && !next.isEmpty()) return list_page(next, repo, std::move(so_far), std::move(done));
        done(so_far, HubError{});
    });
}

void HubApi::repo_files(const QString& repo, const QString& revision, InfoDone done) {
    model_info(repo, revision, [this, repo, done](const RepoInfo& info, const HubError& error) {
        if (error) return done(info, error);
        // The tree at the commit itself, so that the files match the sha even if the branch moves.
        list_files(repo, info.sha, [info, done](const QList<RepoFile>& files, const HubError& error) {
            RepoInfo full = info;
            if (!error) full.files = files;
            done(full, error);
        });
    });
}

void HubApi::search(const SearchQuery& query, SearchDone done) {
    QUrlQuery params;
    if (!query.search.isEmpty()) params.addQueryItem("search", query.search);
    for (const QString& filter : query.filters) params.addQueryItem("filter", filter);
    if (!query.author.isEmpty()) params.addQueryItem("author", query.author);
    if (!query.sort.isEmpty()) {
        params.addQueryItem("sort", query.sort);
        params.addQueryItem("direction", "-1");
    }
    if (query.limit > 0) params.addQueryItem("limit", QString::number(query.limit));
    QUrl url(config_.endpoint + "/api/models");
    url.setQuery(params);
    get_json(url, QString(), QStringLiteral("search"), [done](QNetworkReply*, const QByteArray& body, const HubError& error) {
        if (error) return done({}, error);
        QList<SearchHit> hits;
        for (const QJsonValue& value : QJsonDocument::fromJson(body).array()) {
            const QJsonObject object = value.toObject();
            SearchHit hit;
            hit.id = object.value("id").toString(object.value("modelId").toString());
            hit.downloads = object.value("downloads").toInteger();
            hit.likes = object.value("likes").toInteger();
            hit.tags = string_list(object.value("tags"));
            hit.pipeline_tag = object.value("pipeline_tag").toString();
            hit.library_name = object.value("library_name").toString();
            hit.last_modified = object.value("lastModified").toString(object.value("createdAt").toString());
            hit.is_private = object.value("private").toBool();
            hits << hit;
        }
        done(hits, HubError{});
    });
}

}  // namespace oxinfer::hub
