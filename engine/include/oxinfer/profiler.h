#pragma once
// A tiny profiler: wall time accumulated per category, printed by `--profile`.
// When disabled (the default) a ProfileScope costs one relaxed atomic load.

#include <string>

namespace oxinfer::profiler {

void set_enabled(bool enabled);
bool enabled();

// Adds `seconds` to `category` (a string literal or other string that outlives the program).
void add(const char* category, double seconds);
void reset();

// One line per category, longest first: "category  total ms  calls  ms/call  share".
std::string report();

class Scope {
public:
    explicit Scope(const char* category);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

private:
    const char* category_;
    long long start_ns_;  // 0 when profiling was off at construction
};

}  // namespace oxinfer::profiler
