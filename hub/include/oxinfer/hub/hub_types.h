#pragma once
// What the hub client talks about: its settings, its errors, a repo's files and a search hit.

#include <QJsonObject>
#include <QList>
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <functional>

namespace oxinfer::hub {

inline constexpr const char* kDefaultEndpoint = "https://huggingface.co";

struct HubConfig {
    QString endpoint = kDefaultEndpoint;  // $HF_ENDPOINT
    QString token;                        // $HF_TOKEN, else the token file ($HF_TOKEN_PATH, $HF_HOME/token)
    QString cache_dir;                    // $HF_HUB_CACHE, else $HF_HOME/hub (see oxinfer/hf_cache.h)
    bool use_symlinks = true;             // false when $HF_HUB_DISABLE_SYMLINKS is set, or links fail

    int stall_timeout_ms = 30000;   // a download that receives nothing for this long is aborted and retried
    int max_attempts = 5;           // failed attempts in a row (no byte received) before a file fails
    int retry_base_ms = 1000;       // backoff: base * 2^(attempt-1), at most retry_max_ms
    int retry_max_ms = 16000;
    int request_timeout_ms = 30000; // API and HEAD requests
    int parallel_files = 4;         // files downloaded at once

    // Free bytes on the volume holding `folder`. Null: QStorageInfo, or $OXINFER_TEST_FREE_BYTES when
    // set (tests use it to stand for a small disk).
    std::function<qint64(const QString& folder)> free_bytes;

    // The settings from the environment, as huggingface_hub reads them, plus
    // $OXINFER_HUB_STALL_SECONDS, $OXINFER_HUB_RETRIES, $OXINFER_HUB_RETRY_MS and $OXINFER_HUB_PARALLEL.
    static HubConfig from_environment();

    qint64 free_bytes_at(const QString& folder) const;
};

struct HubError {
    enum class Kind {
        None,
        Network,           // connection refused, dropped, DNS...
        Stalled,           // no data for stall_timeout_ms, attempts exhausted
        RepoNotFound,      // or private/gated without a token (the hub answers 401)
        RevisionNotFound,
        EntryNotFound,     // the file is not in the repo at that revision
        Gated,             // the repo's license must be accepted on the hub first
        Unauthorized,      // the token was refused
        Forbidden,
        Http,              // another HTTP status
        Checksum,          // sha256 / git sha1 mismatch
        DiskSpace,
        Io,
        Cancelled,
        BadResponse,       // the server said something that is not the hub's API
    };
    Kind kind = Kind::None;
    int http_status = 0;
    QString subject;  // "org/name" or "org/name/file"
    QString message;

    bool failed() const { return kind != Kind::None; }
    explicit operator bool() const { return failed(); }
    QString text() const { return subject.isEmpty() ? message : subject + ": " + message; }
};

// One file of a repo at a revision (from the tree endpoint).
struct RepoFile {
    QString path;        // "model-00001-of-00002.safetensors", "1_Pooling/config.json"
    qint64 size = -1;    // the real size (the LFS object's for LFS files)
    QString oid;         // git blob sha1
    QString lfs_sha256;  // sha256 of the content for LFS files, else ""

    bool is_lfs() const { return !lfs_sha256.isEmpty(); }
    // The name of its blob in the cache: the sha256 for LFS files, the git blob sha1 otherwise.
    QString etag() const { return is_lfs() ? lfs_sha256 : oid; }
};

struct RepoInfo {
    QString id;              // "org/name"
    QString sha;             // the commit the revision points at
    QString revision;        // as asked ("main")
    bool is_private = false;
    QString gated;           // "" (not gated), "auto" or "manual"
    bool disabled = false;
    qint64 downloads = 0;
    qint64 likes = 0;
    QStringList tags;
    QString pipeline_tag;
    QString library_name;
    QString last_modified;
    QList<RepoFile> files;   // filled by HubApi::repo_files (the tree); siblings' names otherwise
    QJsonObject raw;         // the whole answer of /api/models/{repo}
};

struct SearchQuery {
    QString search;          // substring of the repo id
    QStringList filters;     // tags: "gguf", "text-generation", "safetensors", ...
    QString author;
    QString sort = "downloads";  // "downloads", "likes", "lastModified", "trendingScore", "createdAt"
    int limit = 20;
};

struct SearchHit {
    QString id;
    qint64 downloads = 0;
    qint64 likes = 0;
    QStringList tags;
    QString pipeline_tag;
    QString library_name;
    QString last_modified;
    bool is_private = false;
};

struct DownloadProgress {
    qint64 done_bytes = 0;      // on disk, partial files included
    qint64 total_bytes = 0;
    double bytes_per_second = 0;  // over the last few seconds
    double eta_seconds = -1;      // -1 while unknown
    int files_done = 0;
    int files_total = 0;
    QStringList active_files;
};

struct DownloadedFile {
    QString path;        // in the repo
    QString local_path;  // snapshots/<commit>/<path>
    QString blob;        // blobs/<etag> (empty when moved into snapshots for want of symlinks)
    QString etag;
    qint64 size = 0;
    bool downloaded = false;  // false when the cache already had it
    qint64 resumed_from = 0;  // bytes of a partial file that were kept (0: from the start)
};

}  // namespace oxinfer::hub

Q_DECLARE_METATYPE(oxinfer::hub::HubError)
Q_DECLARE_METATYPE(oxinfer::hub::DownloadProgress)
Q_DECLARE_METATYPE(oxinfer::hub::DownloadedFile)
