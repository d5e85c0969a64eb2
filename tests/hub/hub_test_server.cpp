#include "hub_test_server.h"

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QHostAddress>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMutexLocker>
#include <QPointer>
#include <QRegularExpression>
#include <QSet>
#include <QTcpServer>
#include <QTcpSocket>
#include <QThread>
#include <QTimer>
#include <QUrl>
#include <QUrlQuery>

#include <algorithm>

namespace oxinfer::test {

struct HubTestServer::State {
    mutable QMutex mutex;
    QList<TestHubRepo> repos;
    QMap<QString, TestHubFaults> faults;
    int tree_page_size = 0;
    QList<TestHubRequest> log;
    quint16 port = 0;
    QElapsedTimer clock;
};

qint64 TestHubRequest::range_start() const {
    static const QRegularExpression pattern(QStringLiteral(R"(bytes=(\d+)-)"));
    const auto match = pattern.match(QString::fromLatin1(range));
    return match.hasMatch() ? match.captured(1).toLongLong() : -1;
}

QString HubTestServer::sha256_hex(const QByteArray& data) {
    return QString::fromLatin1(QCryptographicHash::hash(data, QCryptographicHash::Sha256).toHex());
}

QString HubTestServer::git_sha1_hex(const QByteArray& data) {
    QCryptographicHash hash(QCryptographicHash::Sha1);
    hash.addData(QByteArray("blob ") + QByteArray::number(data.size()) + '\0');
    hash.addData(data);
    return QString::fromLatin1(hash.result().toHex());
}

namespace {

struct Response {
    int status = 200;
    QList<QPair<QByteArray, QByteArray>> headers;
    QByteArray body;
    qint64 content_length = -1;  // for HEAD: what GET would send
    TestHubFaults faults;         // applied to the body
    bool file_body = false;

    void header(const QByteArray& name, const QByteArray& value) { headers.append({name, value}); }
};

QByteArray reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 206: return "Partial Content";
    case 302: return "Found";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 416: return "Range Not Satisfiable";
    default: return "Status";
    }
}

Response json_response(const QJsonDocument& document) {
    Response response;
    response.body = document.toJson(QJsonDocument::Compact);
    response.header("Content-Type", "application/json; charset=utf-8");
    return response;
}

Response hub_error(int status, const QByteArray& code, const QString& message) {
    Response response = json_response(QJsonDocument(QJsonObject{{"error", message}}));
    response.status = status;
    if (!code.isEmpty()) response.header("X-Error-Code", code);
    response.header("X-Error-Message", message.toUtf8());
    return response;
}

QString lfs_pointer_oid(const TestHubFile& file) {
    // The git blob of an LFS file is its small pointer text; its exact form does not matter here.
    const QByteArray pointer = "oid sha256:" + HubTestServer::sha256_hex(file.content).toLatin1() + "\nsize " +
                               QByteArray::number(file.content.size()) + "\n";
    return HubTestServer::git_sha1_hex(pointer);
}

QString etag_of(const TestHubFile& file) {
    return file.lfs ? HubTestServer::sha256_hex(file.content) : HubTestServer::git_sha1_hex(file.content);
}

}  // namespace

class ServerWorker : public QTcpServer {
public:
    explicit ServerWorker(HubTestServer::State* state) : state_(state) {}

    bool start() {
        if (!listen(QHostAddress::LocalHost, 0)) return false;
        connect(this, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket* socket = nextPendingConnection()) accept_socket(socket);
        });
        return true;
    }

private:
    void accept_socket(QTcpSocket* socket) {
        auto buffer = std::make_shared<QByteArray>();
        auto handled = std::make_shared<bool>(false);
        connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
        connect(socket, &QTcpSocket::readyRead, this, [this, socket, buffer, handled] {
            buffer->append(socket->readAll());
            if (*handled) return;
            const qsizetype end = buffer->indexOf("\r\n\r\n");
            if (end < 0) {
                if (buffer->size() > 65536) socket->abort();
                return;
            }
            *handled = true;
            handle(socket, buffer->left(end));
        });
    }

    void handle(QTcpSocket* socket, const QByteArray& head) {
        const QList<QByteArray> lines = head.split('\n');
        const QList<QByteArray> request_line = lines.value(0).trimmed().split(' ');
        TestHubRequest request;
        request.method = QString::fromLatin1(request_line.value(0));
        const QByteArray target = request_line.value(1);
        QMap<QByteArray, QByteArray> headers;
        for (qsizetype i = 1; i < lines.size(); ++i) {
            const QByteArray line = lines[i].trimmed();
            const qsizetype colon = line.indexOf(':');
            if (colon > 0) headers.insert(line.left(colon).trimmed().toLower(), line.mid(colon + 1).trimmed());
        }
        request.range = headers.value("range");
        request.authorization = headers.value("authorization");
        const qsizetype question = target.indexOf('?');
        const QByteArray raw_path = question >= 0 ? target.left(question) : target;
        request.query = QString::fromUtf8(question >= 0 ? target.mid(question + 1) : QByteArray());
        QStringList segments;
        for (const QByteArray& segment : raw_path.split('/'))
            if (!segment.isEmpty()) segments << QUrl::fromPercentEncoding(segment);
        request.path = "/" + segments.join('/');

        Response response = route(request, segments);
        if (request.method == QLatin1String("HEAD")) {
            if (response.content_length < 0) response.content_length = response.body.size();
            response.body.clear();
        }
        request.status = response.status;
        {
            QMutexLocker locker(&state_->mutex);
            request.at_ms = state_->clock.elapsed();
            state_->log.append(request);
        }
        send(socket, response, request.method == QLatin1String("HEAD"));
    }

    void send(QTcpSocket* socket, const Response& response, bool head_only) {
        QByteArray text = "HTTP/1.1 " + QByteArray::number(response.status) + " " + reason(response.status) + "\r\n";
        for (const auto& [name, value] : response.headers) text += name + ": " + value + "\r\n";
        text += "Content-Length: " + QByteArray::number(head_only ? response.content_length : response.body.size()) + "\r\n";
        text += "Connection: close\r\n\r\n";
        socket->write(text);
        if (head_only || response.body.isEmpty()) {
            socket->disconnectFromHost();
            return;
        }
        const TestHubFaults& faults = response.faults;
        qint64 limit = response.body.size();
        enum class End { Close, Drop, Stall } end = End::Close;
        if (faults.drop_after >= 0 && faults.drop_after < limit) {
            limit = faults.drop_after;
            end = End::Drop;
        }
        if (faults.stall_after >= 0 && faults.stall_after < limit) {
            limit = faults.stall_after;
            end = End::Stall;
        }
        const QByteArray body = response.body.left(limit);
        const auto finish = [socket, end] {
            if (end == End::Stall) {
                // Say nothing more; the client's stall detection must give up on us.
                QTimer::singleShot(20000, socket, [socket] { socket->abort(); });
                return;
            }
            socket->disconnectFromHost();  // after the pending bytes: a short body for Drop
        };
        if (faults.bytes_per_second <= 0) {
            socket->write(body);
            finish();
            return;
        }
        // Throttled: a slice every 20 ms.
        const qint64 slice = std::max<qint64>(1, faults.bytes_per_second / 50);
        auto sent = std::make_shared<qint64>(0);
        auto* timer = new QTimer(socket);
        connect(timer, &QTimer::timeout, socket, [socket, timer, body, slice, sent, finish] {
            if (socket->state() != QAbstractSocket::ConnectedState) {
                timer->stop();
                return;
            }
            const qint64 count = std::min<qint64>(slice, body.size() - *sent);
            socket->write(body.constData() + *sent, count);
            *sent += count;
            if (*sent >= body.size()) {
                timer->stop();
                finish();
            }
        });
        timer->start(20);
    }

    // ---- Routes ----------------------------------------------------------------------------

    Response route(const TestHubRequest& request, const QStringList& segments) {
        QMutexLocker locker(&state_->mutex);
        if (segments.value(0) == QLatin1String("api") && segments.value(1) == QLatin1String("models")) {
            if (segments.size() == 2) return search(request);
            if (segments.size() < 4) return hub_error(404, "", "Not found");
            const QString repo_id = segments[2] + "/" + segments[3];
            const QStringList rest = segments.mid(4);
            const TestHubRepo* repo = find_repo(repo_id);
            if (Response denied; !allowed(repo, repo_id, request, &denied)) return denied;
            if (rest.isEmpty()) return info(*repo, "main", request);
            if (rest[0] == QLatin1String("revision") && rest.size() >= 2) return info(*repo, rest.mid(1).join('/'), request);
            if (rest[0] == QLatin1String("tree") && rest.size() >= 2) return tree(*repo, rest[1], request);
            return hub_error(404, "", "Not found");
        }
        if (segments.value(0) == QLatin1String("storage") && segments.size() == 2) return storage(segments[1], request);
        if (segments.size() >= 5 && segments[2] == QLatin1String("resolve")) {
            const QString repo_id = segments[0] + "/" + segments[1];
            const TestHubRepo* repo = find_repo(repo_id);
            if (Response denied; !allowed(repo, repo_id, request, &denied)) return denied;
            return resolve(*repo, segments[3], segments.mid(4).join('/'), request);
        }
        return hub_error(404, "", "Not found");
    }

    const TestHubRepo* find_repo(const QString& id) const {
        for (const TestHubRepo& repo : state_->repos)
            if (repo.id == id) return &repo;
        return nullptr;
    }

    QString endpoint() const { return QStringLiteral("http://127.0.0.1:%1").arg(state_->port); }

    bool allowed(const TestHubRepo* repo, const QString& id, const TestHubRequest& request, Response* denied) const {
        const QString token = QString::fromLatin1(request.authorization).remove(QStringLiteral("Bearer ")).trimmed();
        if (!repo) {
            // The hub hides whether a repo exists from anonymous callers.
            *denied = hub_error(token.isEmpty() ? 401 : 404, "RepoNotFound", "Repository not found");
            return false;
        }
        if (!repo->gated.isEmpty() && !repo->allowed_tokens.contains(token)) {
            if (token.isEmpty())
                *denied = hub_error(401, "GatedRepo", "Access to model " + id + " is restricted. You must have access to it and be "
                                                      "authenticated to access it. Please log in.");
            else
                *denied = hub_error(403, "GatedRepo", "Access to model " + id + " is restricted and you are not in the authorized "
                                                      "list. Visit " + endpoint() + "/" + id + " to ask for access.");
            return false;
        }
        return true;
    }

    bool known_revision(const TestHubRepo& repo, const QString& revision) const {
        return revision == QLatin1String("main") || revision == repo.commit;
    }

    QJsonObject info_object(const TestHubRepo& repo, bool blobs) const {
        QJsonArray siblings;
        for (const TestHubFile& file : repo.files) {
            QJsonObject sibling{{"rfilename", file.path}};
            if (blobs) {
                sibling["size"] = qint64(file.content.size());
                sibling["blobId"] = file.lfs ? lfs_pointer_oid(file) : HubTestServer::git_sha1_hex(file.content);
                if (file.lfs)
                    sibling["lfs"] = QJsonObject{{"sha256", HubTestServer::sha256_hex(file.content)},
                                                 {"size", qint64(file.content.size())},
                                                 {"pointerSize", 134}};
            }
            siblings.append(sibling);
        }
        return QJsonObject{{"_id", QString(repo.commit.left(24))},
                           {"id", repo.id},
                           {"modelId", repo.id},
                           {"author", repo.id.section('/', 0, 0)},
                           {"sha", repo.commit},
                           {"lastModified", "2025-01-01T00:00:00.000Z"},
                           {"createdAt", "2024-06-01T00:00:00.000Z"},
                           {"private", false},
                           {"disabled", false},
                           {"gated", repo.gated.isEmpty() ? QJsonValue(false) : QJsonValue(repo.gated)},
                           {"downloads", repo.downloads},
                           {"likes", repo.likes},
                           {"tags", QJsonArray::fromStringList(repo.tags)},
                           {"pipeline_tag", repo.pipeline_tag},
                           {"library_name", repo.library_name},
                           {"siblings", siblings}};
    }

    Response info(const TestHubRepo& repo, const QString& revision, const TestHubRequest& request) const {
        if (!known_revision(repo, revision)) return hub_error(404, "RevisionNotFound", "Invalid rev id: " + revision);
        return json_response(QJsonDocument(info_object(repo, QUrlQuery(request.query).queryItemValue("blobs") == "true")));
    }

    Response tree(const TestHubRepo& repo, const QString& revision, const TestHubRequest& request) const {
        if (!known_revision(repo, revision)) return hub_error(404, "RevisionNotFound", "Invalid rev id: " + revision);
        const QUrlQuery query(request.query);
        const bool recursive = query.queryItemValue("recursive") == QLatin1String("true");
        QJsonArray entries;
        QSet<QString> folders;
        for (const TestHubFile& file : repo.files) {
            const QStringList parts = file.path.split('/');
            for (qsizetype depth = 1; depth < parts.size(); ++depth) {
                const QString folder = parts.mid(0, depth).join('/');
                if ((recursive || depth == 1) && !folders.contains(folder)) {
                    folders.insert(folder);
                    entries.append(QJsonObject{{"type", "directory"},
                                               {"oid", HubTestServer::git_sha1_hex(folder.toUtf8())},
                                               {"size", 0},
                                               {"path", folder}});
                }
            }
            if (!recursive && parts.size() > 1) continue;
            QJsonObject entry{{"type", "file"},
                              {"oid", file.lfs ? lfs_pointer_oid(file) : HubTestServer::git_sha1_hex(file.content)},
                              {"size", qint64(file.content.size())},
                              {"path", file.path}};
            if (file.lfs)
                entry["lfs"] = QJsonObject{{"oid", HubTestServer::sha256_hex(file.content)},
                                           {"size", qint64(file.content.size())},
                                           {"pointerSize", 134}};
            entries.append(entry);
        }
        const int page = state_->tree_page_size;
        if (page <= 0) return json_response(QJsonDocument(entries));
        const int cursor = query.queryItemValue("cursor").toInt();
        QJsonArray slice;
        for (int i = cursor; i < std::min<int>(cursor + page, int(entries.size())); ++i) slice.append(entries[i]);
        Response response = json_response(QJsonDocument(slice));
        if (cursor + page < entries.size()) {
            const QString next = endpoint() + "/api/models/" + repo.id + "/tree/" + revision +
                                 "?recursive=" + (recursive ? "true" : "false") + "&cursor=" + QString::number(cursor + page);
            response.header("Link", "<" + next.toUtf8() + ">; rel=\"next\"");
        }
        return response;
    }

    Response search(const TestHubRequest& request) const {
        const QUrlQuery query(request.query);
        const QString text = query.queryItemValue("search", QUrl::FullyDecoded);
        const QStringList filters = query.allQueryItemValues("filter", QUrl::FullyDecoded);
        const QString author = query.queryItemValue("author");
        const QString sort = query.queryItemValue("sort");
        const int limit = query.hasQueryItem("limit") ? query.queryItemValue("limit").toInt() : 1000;
        QList<const TestHubRepo*> hits;
        for (const TestHubRepo& repo : state_->repos) {
            if (!text.isEmpty() && !repo.id.contains(text, Qt::CaseInsensitive)) continue;
            if (!author.isEmpty() && repo.id.section('/', 0, 0) != author) continue;
            bool all = true;
            for (const QString& filter : filters)
                all = all && (repo.tags.contains(filter, Qt::CaseInsensitive) || repo.library_name == filter ||
                              repo.pipeline_tag == filter);
            if (all) hits << &repo;
        }
        if (sort == QLatin1String("downloads") || sort == QLatin1String("likes")) {
            const bool by_likes = sort == QLatin1String("likes");
            std::stable_sort(hits.begin(), hits.end(), [by_likes](const TestHubRepo* a, const TestHubRepo* b) {
                return by_likes ? a->likes > b->likes : a->downloads > b->downloads;
            });
        }
        QJsonArray out;
        for (const TestHubRepo* repo : hits.mid(0, limit))
            out.append(QJsonObject{{"_id", QString(repo->commit.left(24))},
                                   {"id", repo->id},
                                   {"modelId", repo->id},
                                   {"likes", repo->likes},
                                   {"downloads", repo->downloads},
                                   {"trendingScore", 0},
                                   {"private", false},
                                   {"tags", QJsonArray::fromStringList(repo->tags)},
                                   {"pipeline_tag", repo->pipeline_tag},
                                   {"library_name", repo->library_name},
                                   {"createdAt", "2024-06-01T00:00:00.000Z"}});
        return json_response(QJsonDocument(out));
    }

    // Faults for `path`, counting down the responses they still apply to.
    TestHubFaults take_faults(const QString& path) {
        TestHubFaults applied;
        for (const QString& key : {path, QStringLiteral("*")}) {
            auto it = state_->faults.find(key);
            if (it == state_->faults.end()) continue;
            TestHubFaults& faults = *it;
            applied.ignore_range = applied.ignore_range || faults.ignore_range;
            if (faults.bytes_per_second > 0) applied.bytes_per_second = faults.bytes_per_second;
            if (faults.drop_after >= 0 && faults.drop_times > 0) {
                applied.drop_after = faults.drop_after;
                --faults.drop_times;
            }
            if (faults.stall_after >= 0 && faults.stall_times > 0) {
                applied.stall_after = faults.stall_after;
                --faults.stall_times;
            }
        }
        return applied;
    }

    Response file_body(const TestHubFile& file, const TestHubRequest& request) {
        const QByteArray bytes = file.served.isEmpty() ? file.content : file.served;
        Response response;
        response.file_body = true;
        response.header("Accept-Ranges", "bytes");
        response.header("Content-Type", "application/octet-stream");
        const bool is_get = request.method == QLatin1String("GET");
        response.faults = is_get ? take_faults(file.path) : TestHubFaults{};
        const qint64 start = request.range_start();
        if (start >= 0 && !response.faults.ignore_range) {
            if (start >= bytes.size()) {
                response.status = 416;
                response.header("Content-Range", "bytes */" + QByteArray::number(bytes.size()));
                return response;
            }
            static const QRegularExpression until(QStringLiteral(R"(bytes=\d+-(\d+))"));
            const auto match = until.match(QString::fromLatin1(request.range));
            const qint64 last = match.hasMatch() ? std::min<qint64>(match.captured(1).toLongLong(), bytes.size() - 1)
                                                 : bytes.size() - 1;
            response.status = 206;
            response.header("Content-Range", "bytes " + QByteArray::number(start) + "-" + QByteArray::number(last) + "/" +
                                                 QByteArray::number(bytes.size()));
            response.body = bytes.mid(start, last - start + 1);
            return response;
        }
        response.body = bytes;
        return response;
    }

    Response resolve(const TestHubRepo& repo, const QString& revision, const QString& path, const TestHubRequest& request) {
        if (!known_revision(repo, revision)) return hub_error(404, "RevisionNotFound", "Invalid rev id: " + revision);
        const auto it = std::find_if(repo.files.begin(), repo.files.end(), [&](const TestHubFile& file) { return file.path == path; });
        if (it == repo.files.end()) {
            Response response = hub_error(404, "EntryNotFound", "Entry not found");
            response.header("X-Repo-Commit", repo.commit.toLatin1());
            return response;
        }
        const TestHubFile& file = *it;
        if (file.lfs) {
            Response response;
            response.status = 302;
            response.header("Location", (endpoint() + "/storage/" + etag_of(file)).toUtf8());
            response.header("X-Repo-Commit", repo.commit.toLatin1());
            response.header("X-Linked-Etag", "\"" + etag_of(file).toLatin1() + "\"");
            response.header("X-Linked-Size", QByteArray::number(file.content.size()));
            response.header("ETag", "\"" + lfs_pointer_oid(file).toLatin1() + "\"");
            response.content_length = 0;
            return response;
        }
        Response response = file_body(file, request);
        response.header("X-Repo-Commit", repo.commit.toLatin1());
        response.header("ETag", "\"" + etag_of(file).toLatin1() + "\"");
        return response;
    }

    Response storage(const QString& sha256, const TestHubRequest& request) {
        for (const TestHubRepo& repo : state_->repos)
            for (const TestHubFile& file : repo.files)
                if (file.lfs && etag_of(file) == sha256) {
                    Response response = file_body(file, request);
                    response.header("ETag", "\"" + sha256.toLatin1() + "\"");
                    return response;
                }
        return hub_error(404, "", "No such object");
    }

    HubTestServer::State* state_;
};

HubTestServer::HubTestServer() : state_(std::make_unique<State>()) {
    state_->clock.start();
    thread_ = new QThread;
    thread_->setObjectName("hub-test-server");
    worker_ = new ServerWorker(state_.get());
    worker_->moveToThread(thread_);
    thread_->start();
    bool listening = false;
    QMetaObject::invokeMethod(worker_, [this, &listening] { listening = worker_->start(); }, Qt::BlockingQueuedConnection);
    if (listening) {
        quint16 port = 0;
        QMetaObject::invokeMethod(worker_, [this, &port] { port = worker_->serverPort(); }, Qt::BlockingQueuedConnection);
        port_ = port;
        QMutexLocker locker(&state_->mutex);
        state_->port = port;
    }
}

HubTestServer::~HubTestServer() {
    QMetaObject::invokeMethod(worker_, [this] {
        for (QTcpSocket* socket : worker_->findChildren<QTcpSocket*>()) socket->abort();
        worker_->close();
        delete worker_;
    }, Qt::BlockingQueuedConnection);
    thread_->quit();
    thread_->wait();
    delete thread_;
}

QString HubTestServer::endpoint() const { return QStringLiteral("http://127.0.0.1:%1").arg(port_); }

void HubTestServer::add_repo(const TestHubRepo& repo) {
    QMutexLocker locker(&state_->mutex);
    state_->repos.append(repo);
}

void HubTestServer::set_faults(const QString& path, const TestHubFaults& faults) {
    QMutexLocker locker(&state_->mutex);
    state_->faults[path] = faults;
}

void HubTestServer::clear_faults() {
    QMutexLocker locker(&state_->mutex);
    state_->faults.clear();
}

void HubTestServer::set_tree_page_size(int files) {
    QMutexLocker locker(&state_->mutex);
    state_->tree_page_size = files;
}

QList<TestHubRequest> HubTestServer::requests() const {
    QMutexLocker locker(&state_->mutex);
    return state_->log;
}

QList<TestHubRequest> HubTestServer::requests_for(const QString& path_fragment, const QString& method) const {
    QList<TestHubRequest> out;
    for (const TestHubRequest& request : requests())
        if (request.path.contains(path_fragment) && (method.isEmpty() || request.method == method)) out << request;
    return out;
}

void HubTestServer::clear_requests() {
    QMutexLocker locker(&state_->mutex);
    state_->log.clear();
}

}  // namespace oxinfer::test
