#include <oxinfer/profiler.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace oxinfer::profiler {
namespace {

struct Totals {
    double seconds = 0;
    long long calls = 0;
};

std::atomic<bool> is_enabled{false};
std::mutex totals_mutex;
std::map<std::string, Totals> totals;

long long now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void set_enabled(bool enabled) { is_enabled.store(enabled, std::memory_order_relaxed); }
bool enabled() { return is_enabled.load(std::memory_order_relaxed); }

void add(const char* category, double seconds) {
    std::lock_guard lock(totals_mutex);
    Totals& entry = totals[category];
    entry.seconds += seconds;
    ++entry.calls;
}

void reset() {
    std::lock_guard lock(totals_mutex);
    totals.clear();
}

std::string report() {
    std::vector<std::pair<std::string, Totals>> rows;
    {
        std::lock_guard lock(totals_mutex);
        rows.assign(totals.begin(), totals.end());
    }
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    double sum = 0;
    for (const auto& row : rows) sum += row.second.seconds;

    std::string out = "profile: category                       total ms     calls    ms/call   share\n";
    char line[256];
    for (const auto& [name, entry] : rows) {
        std::snprintf(line, sizeof line, "profile: %-28s %12.3f %9lld %10.4f %6.1f%%\n", name.c_str(), entry.seconds * 1e3,
                      entry.calls, entry.seconds * 1e3 / static_cast<double>(std::max(entry.calls, 1LL)),
                      sum > 0 ? 100.0 * entry.seconds / sum : 0.0);
        out += line;
    }
    return out;
}

Scope::Scope(const char* category) : category_(category), start_ns_(enabled() ? now_ns() : 0) {}

Scope::~Scope() {
    if (start_ns_ != 0) add(category_, static_cast<double>(now_ns() - start_ns_) * 1e-9);
}

}  // namespace oxinfer::profiler
