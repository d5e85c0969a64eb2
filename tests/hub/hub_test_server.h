#pragma once
// A real HTTP/1.1 server on 127.0.0.1 that speaks the Hugging Face hub's API for repos described in
// memory: model info (/api/models/{repo}[/revision/{rev}]), the tree (/api/models/{repo}/tree/{rev},
// paginated with Link headers), search (/api/models?search=&filter=&sort=), and files through
// /{repo}/resolve/{rev}/{path} with the hub's headers (X-Repo-Commit, ETag, X-Linked-Etag,
// X-Linked-Size), LFS files redirected to a separate /storage/ path, Range requests, and the
// hub's errors (401/403 GatedRepo, 401/404 RepoNotFound, 404 EntryNotFound, 404 RevisionNotFound).
// Faults can be switched on per file: drop the connection after N bytes, stall after N bytes,
// serve the wrong bytes, ignore Range, throttle. It runs on its own thread, so a test may block
// (QProcess::waitForFinished) while a client talks to it.

#include <QByteArray>
#include <QList>
#include <QMap>
#include <QMutex>
#include <QObject>
#include <QString>
#include <QStringList>

#include <memory>

class QThread;

namespace oxinfer::test {

struct TestHubFile {
    QString path;
    QByteArray content;
    bool lfs = true;         // LFS: served from /storage/<sha256> after a redirect, ETag = sha256
    QByteArray served;       // when not empty: the bytes actually sent (a corrupt storage)
};

struct TestHubRepo {
    QString id;
    QString commit;  // 40 hex digits
    QList<TestHubFile> files;
    QString gated;                 // "" or "manual": needs one of allowed_tokens
    QStringList allowed_tokens;
    QStringList tags;
    qint64 downloads = 0;
    qint64 likes = 0;
    QString pipeline_tag = "text-generation";
    QString library_name;
};

struct TestHubFaults {
    qint64 drop_after = -1;   // close the connection after this many body bytes...
    int drop_times = 0;       // ...for this many responses
    qint64 stall_after = -1;  // stop sending after this many body bytes (the connection stays open)...
    int stall_times = 0;      // ...for this many responses
    bool ignore_range = false;  // answer 200 with the whole file to Range requests
    qint64 bytes_per_second = 0;  // throttle file bodies (0: as fast as possible)
};

struct TestHubRequest {
    QString method;
    QString path;     // decoded path, no query
    QString query;
    QByteArray range;  // the Range header, "" if none
    QByteArray authorization;
    int status = 0;
    qint64 at_ms = 0;  // when it arrived, since the server started
    qint64 range_start() const;  // -1 without a Range header
};

class ServerWorker;

class HubTestServer {
public:
    HubTestServer();
    ~HubTestServer();
    HubTestServer(const HubTestServer&) = delete;
    HubTestServer& operator=(const HubTestServer&) = delete;

    quint16 port() const { return port_; }
    QString endpoint() const;  // "http://127.0.0.1:<port>"

    void add_repo(const TestHubRepo& repo);
    // Faults for the file `path` of any repo ("*": every file).
    void set_faults(const QString& path, const TestHubFaults& faults);
    void clear_faults();
    void set_tree_page_size(int files);  // 0: one page
    // Missing repos answer 401 (as the hub does without a token) unless a token is sent, then 404.

    QList<TestHubRequest> requests() const;
    QList<TestHubRequest> requests_for(const QString& path_fragment, const QString& method = "GET") const;
    void clear_requests();

    static QString sha256_hex(const QByteArray& data);
    static QString git_sha1_hex(const QByteArray& data);  // sha1("blob <n>\0" + data)

    struct State;  // shared with the worker thread

private:
    std::unique_ptr<State> state_;
    QThread* thread_ = nullptr;
    ServerWorker* worker_ = nullptr;
    quint16 port_ = 0;
};

}  // namespace oxinfer::test
