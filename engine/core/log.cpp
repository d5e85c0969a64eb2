#include <oxinfer/log.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace oxinfer {
namespace {

LogLevel level_from_environment() {
    const char* value = std::getenv("OXINFER_LOG");
    if (!value) return LogLevel::Warn;
    const std::string text = value;
    if (text == "error") return LogLevel::Error;
    if (text == "info") return LogLevel::Info;
    if (text == "debug") return LogLevel::Debug;
    return LogLevel::Warn;
}

std::atomic<int> current_level{static_cast<int>(level_from_environment())};
std::mutex sink_mutex;
LogSink current_sink;

const char* level_name(LogLevel level) {
    switch (level) {
        case LogLevel::Error: return "error";
        case LogLevel::Warn: return "warning";
        case LogLevel::Info: return "info";
        case LogLevel::Debug: return "debug";
    }
    return "";
}

}  // namespace

void set_log_level(LogLevel level) { current_level.store(static_cast<int>(level), std::memory_order_relaxed); }
LogLevel log_level() { return static_cast<LogLevel>(current_level.load(std::memory_order_relaxed)); }

void set_log_sink(LogSink sink) {
    std::lock_guard lock(sink_mutex);
    current_sink = std::move(sink);
}

void log(LogLevel level, std::string_view message) {
    if (static_cast<int>(level) > current_level.load(std::memory_order_relaxed)) return;
    std::lock_guard lock(sink_mutex);
    if (current_sink) {
        current_sink(level, message);
        return;
    }
    std::fprintf(stderr, "oxinfer: %s: %.*s\n", level_name(level), static_cast<int>(message.size()), message.data());
}

}  // namespace oxinfer
