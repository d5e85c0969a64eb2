// oxinfer pull REPO[:QUANT_OR_FILE] [--revision R] [--include GLOB]... [--json]

#include "args.h"
#include "commands.h"

#include <oxinfer/error.h>
#include <oxinfer/hf_cache.h>
#include <oxinfer/hub/downloader.h>
#include <oxinfer/hub/file_selection.h>
#include <oxinfer/hub/hub_api.h>
#include <oxinfer/platform.h>

#include <nlohmann/json.hpp>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#ifdef _WIN32
#include <io.h>
#define OXINFER_ISATTY _isatty
#define OXINFER_FILENO _fileno
#else
#include <unistd.h>
#define OXINFER_ISATTY isatty
#define OXINFER_FILENO fileno
#endif

namespace oxinfer::cli {
namespace {

using hub::DownloadProgress;
using hub::HubError;
using hub::RepoFile;

bool is_terminal(std::FILE* file) { return OXINFER_ISATTY(OXINFER_FILENO(file)) != 0; }

std::string bytes_text(qint64 bytes) { return format_bytes(uint64_t(std::max<qint64>(bytes, 0))); }

std::string duration_text(double seconds) {
    if (seconds < 0) return "--:--";
    const long total = long(seconds + 0.5);
    char text[32];
    if (total >= 3600) std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
    else std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
    return text;
}

[[noreturn]] void throw_hub_error(const HubError& error) {
    throw Error(error.subject.toStdString(), error.message.toStdString());
}

// QCoreApplication for the network code, made once for the process.
void ensure_application() {
    if (QCoreApplication::instance()) return;
    static int argc = 1;
    static char name[] = "oxinfer";
    static char* argv[] = {name, nullptr};
    // Never destroyed: it must outlive every Qt object, and static destruction order is not ours.
    static QCoreApplication* application = new QCoreApplication(argc, argv);
    (void)application;
}

// Shows the download: a bar redrawn in place on a terminal, plain lines (every 2 s) otherwise.
class ProgressView {
public:
    explicit ProgressView(bool terminal) : terminal_(terminal) { since_line_.start(); }

    void update(const DownloadProgress& progress) {
        last_ = progress;
        if (terminal_) return draw_bar();
        if (since_line_.elapsed() < 2000) return;
        since_line_.restart();
        std::fprintf(stderr, "pull: %s\n", summary().c_str());
    }

    void note(const std::string& text) {
        clear_bar();
        std::fprintf(stderr, "pull: %s\n", text.c_str());
        if (terminal_) draw_bar();
    }

    void done() {
        if (terminal_) {
            draw_bar();
            std::fputc('\n', stderr);
            drawn_ = false;
        } else {
            std::fprintf(stderr, "pull: %s\n", summary().c_str());
        }
    }

private:
    std::string summary() const {
        const int percent = last_.total_bytes > 0 ? int(100.0 * double(last_.done_bytes) / double(last_.total_bytes)) : 100;
        std::string text = std::to_string(percent) + "% " + bytes_text(last_.done_bytes) + " / " + bytes_text(last_.total_bytes) +
                           ", " + bytes_text(qint64(last_.bytes_per_second)) + "/s, ETA " + duration_text(last_.eta_seconds) +
                           ", files " + std::to_string(last_.files_done) + "/" + std::to_string(last_.files_total);
        return text;
    }

    void clear_bar() {
        if (!terminal_ || !drawn_) return;
        std::fprintf(stderr, "\r\033[K");
        drawn_ = false;
    }

    void draw_bar() {
        constexpr int kWidth = 28;
        const double fraction = last_.total_bytes > 0 ? double(last_.done_bytes) / double(last_.total_bytes) : 1.0;
        const int filled = std::min(kWidth, int(fraction * kWidth));
        std::string bar(size_t(filled), '#');
        bar.append(size_t(kWidth - filled), '.');
        std::fprintf(stderr, "\r\033[K%3d%% [%s] %s / %s  %s/s  ETA %s  (%d/%d files)", int(fraction * 100), bar.c_str(),
                     bytes_text(last_.done_bytes).c_str(), bytes_text(last_.total_bytes).c_str(),
                     bytes_text(qint64(last_.bytes_per_second)).c_str(), duration_text(last_.eta_seconds).c_str(),
                     last_.files_done, last_.files_total);
        std::fflush(stderr);
        drawn_ = true;
    }

    bool terminal_;
    bool drawn_ = false;
    DownloadProgress last_;
    QElapsedTimer since_line_;
};

void print_variants(const std::string& repo, const std::vector<hf::GgufVariant>& variants) {
    std::fprintf(stderr, "%s has %zu GGUF quantizations:\n", repo.c_str(), variants.size());
    for (const hf::GgufVariant& variant : variants) {
        const std::string parts = variant.files.size() > 1 ? "  (" + std::to_string(variant.files.size()) + " parts)" : "";
        std::fprintf(stderr, "  %-14s %10s%s\n", variant.quant.c_str(), format_bytes(variant.bytes).c_str(), parts.c_str());
    }
}

// The files to fetch: --include globs, the quantization or file after ':', the one GGUF variant
// (asking on a terminal when there are several), or what the engine needs from a safetensors repo.
QList<RepoFile> choose_files(const std::string& repo, const std::string& selector, const std::vector<std::string>& include,
                             const QList<RepoFile>& all) {
    if (!include.empty()) {
        QStringList patterns;
        for (const std::string& pattern : include) patterns << QString::fromStdString(pattern);
        QList<RepoFile> files = hub::filter_files(all, patterns);
        if (files.isEmpty()) throw Error(repo, "no file matches --include");
        return files;
    }
    const std::vector<hf::GgufVariant> variants = hub::gguf_variants(all);
    if (!selector.empty()) {
        if (const hf::GgufVariant* variant = hf::find_gguf_variant(variants, selector))
            return hub::select_gguf_variant(all, *variant);
        for (const RepoFile& file : all)
            if (file.path.toStdString() == selector) return {file};
        std::string known;
        for (const hf::GgufVariant& variant : variants) known += (known.empty() ? "" : ", ") + variant.quant;
        throw Error(repo, "no quantization or file '" + selector + "' in the repo" +
                              (known.empty() ? std::string() : " (quantizations: " + known + ")"));
    }
    if (hub::is_gguf_repo(all)) {
        if (variants.size() == 1) return hub::select_gguf_variant(all, variants.front());
        print_variants(repo, variants);
        if (is_terminal(stdin) && is_terminal(stderr)) {
            std::fprintf(stderr, "quantization to download (e.g. %s): ", variants.front().quant.c_str());
            std::fflush(stderr);
            std::string answer;
            if (std::getline(std::cin, answer)) {
                while (!answer.empty() && std::isspace(static_cast<unsigned char>(answer.back()))) answer.pop_back();
                if (const hf::GgufVariant* variant = hf::find_gguf_variant(variants, answer))
                    return hub::select_gguf_variant(all, *variant);
                throw Error(repo, "no quantization '" + answer + "'");
            }
        }
        throw Error(repo, std::to_string(variants.size()) + " quantizations: pick one as " + repo + ":" +
                              variants.front().quant + " (or choose files with --include)");
    }
    QList<RepoFile> files = hub::select_engine_files(all);
    if (files.isEmpty()) throw Error(repo, "no model files found in the repo (choose files with --include)");
    return files;
}

}  // namespace

int run_pull(const std::vector<std::string>& argv) {
    auto options = common_options();
    options.push_back({"revision", "", "R", "branch, tag or commit (default: main)"});
    options.push_back({"include", "", "GLOB", "download only the files matching GLOB (repeatable; '*' crosses folders)"});
    options.push_back({"json", "", "", "print one JSON object (snapshot folder and files) at the end"});
    Args args("pull", "REPO[:QUANT_OR_FILE] [--revision R] [--include GLOB]... [--json]",
              "Downloads a model from the Hugging Face hub into its cache, in huggingface_hub's layout (shared with\n"
              "Python tools): partial files are resumed, stalls retried, every file's sha256 checked before it is\n"
              "stored. A GGUF repo needs one quantization (REPO:Q4_K_M); a safetensors repo gets its config,\n"
              "tokenizer and weights. Prints the snapshot folder. HF_ENDPOINT, HF_TOKEN, HF_HOME and HF_HUB_CACHE\n"
              "are respected; OXINFER_HUB_STALL_SECONDS, OXINFER_HUB_RETRIES and OXINFER_HUB_PARALLEL tune it.",
              options);
    args.parse(argv);
    if (args.help_requested()) {
        std::fputs(args.help().c_str(), stdout);
        return 0;
    }
    const std::string target = args.positional(0, "REPO");
    std::string repo = target, selector;
    if (const auto ref = hf::parse_model_ref(target)) {
        repo = ref->repo_id;
        selector = ref->selector;
    } else if (!hf::is_repo_id(target)) {
        throw Error(target, "not a Hugging Face repo id (org/name, optionally org/name:Q4_K_M)");
    }
    const std::string revision = args.value("revision").value_or("main");
    const bool json_output = args.flag("json");

    ensure_application();
    const hub::HubConfig config = hub::HubConfig::from_environment();
    hub::HubApi api(config);

    hub::RepoInfo info;
    HubError error;
    {
        QEventLoop loop;
        bool done = false;
        api.repo_files(QString::fromStdString(repo), QString::fromStdString(revision),
                       [&](const hub::RepoInfo& answer, const HubError& problem) {
                           info = answer;
                           error = problem;
                           done = true;
                           loop.quit();
                       });
        if (!done) loop.exec();
    }
    if (error) throw_hub_error(error);

    const QList<RepoFile> files = choose_files(repo, selector, args.values("include"), info.files);
    const bool terminal = !json_output && is_terminal(stderr);
    ProgressView view(terminal);
    view.note(repo + " at " + info.sha.toStdString() + ": " + std::to_string(files.size()) + " files, " +
              bytes_text(hub::total_size(files)));

    hub::Downloader downloader(config);
    QEventLoop loop;
    QString snapshot;
    QObject::connect(&downloader, &hub::Downloader::progress, [&](const DownloadProgress& progress) { view.update(progress); });
    QObject::connect(&downloader, &hub::Downloader::message, [&](const QString& text) { view.note(text.toStdString()); });
    QObject::connect(&downloader, &hub::Downloader::file_finished, [&](const hub::DownloadedFile& file) {
        if (terminal) return;
        view.note(file.path.toStdString() + " (" + bytes_text(file.size) + ") " +
                  (file.downloaded ? (file.resumed_from > 0 ? "downloaded, resumed from byte " + std::to_string(file.resumed_from)
                                                            : std::string("downloaded"))
                                   : std::string("already in the cache")));
    });
    QObject::connect(&downloader, &hub::Downloader::finished, [&](const QString& folder) {
        snapshot = folder;
        loop.quit();
    });
    QObject::connect(&downloader, &hub::Downloader::failed, [&](const HubError& problem) {
        error = problem;
        loop.quit();
    });
    downloader.start(QString::fromStdString(repo), QString::fromStdString(revision), info.sha, files);
    loop.exec();
    if (error) {
        view.done();
        throw_hub_error(error);
    }
    view.done();

    if (json_output) {
        nlohmann::json out;
        out["repo"] = repo;
        out["revision"] = revision;
        out["commit"] = info.sha.toStdString();
        out["snapshot"] = snapshot.toStdString();
        out["files"] = nlohmann::json::array();
        for (const hub::DownloadedFile& file : downloader.results())
            out["files"].push_back({{"path", file.path.toStdString()},
                                    {"local_path", file.local_path.toStdString()},
                                    {"blob", file.blob.toStdString()},
                                    {"etag", file.etag.toStdString()},
                                    {"size", file.size},
                                    {"downloaded", file.downloaded},
                                    {"resumed_from", file.resumed_from}});
        std::printf("%s\n", out.dump().c_str());
    } else {
        std::printf("%s\n", snapshot.toStdString().c_str());
    }
    return 0;
}

}  // namespace oxinfer::cli
