#pragma once
// The engine's thread pool: persistent workers that spin briefly, then sleep, waiting for the
// next job, so that the many small parallel sections of token-by-token decoding start within
// microseconds. The calling thread takes part as thread 0.
//
// Threading contract: one thread at a time calls run()/parallel_for() on a pool (the engine
// thread that owns it); jobs must not call back into the same pool.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace oxinfer {

class ThreadPool {
public:
    // `threads` counts the caller: a pool of 1 runs every job inline. 0 means physical cores.
    explicit ThreadPool(int threads = 0);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return size_; }

    // Calls job(thread_index, thread_count) once on every thread and returns when all are done.
    template <class Job>
    void run(Job&& job) {
        if (size_ == 1) {
            job(0, 1);
            return;
        }
        auto* context = &job;
        dispatch([](void* self, int index, int count) { (*static_cast<decltype(context)>(self))(index, count); }, context);
    }

    // Splits [0, n) into one contiguous range per thread and calls body(begin, end) for each
    // non-empty range. Ranges are multiples of `granule` (except the last), e.g. a SIMD width or
    // a cache line of output rows.
    template <class Body>
    void parallel_for(int64_t n, int64_t granule, Body&& body) {
        if (n <= 0) return;
        const int64_t units = (n + granule - 1) / granule;
        run([&](int index, int count) {
            const int64_t begin = units * index / count * granule;
            const int64_t end = std::min(n, units * (index + 1) / count * granule);
            if (begin < end) body(begin, end);
        });
    }

private:
    using Trampoline = void (*)(void*, int, int);
    void dispatch(Trampoline trampoline, void* context);
    void worker_loop(int index);

    int size_ = 1;
    std::vector<std::thread> workers_;
    Trampoline trampoline_ = nullptr;
    void* context_ = nullptr;
    alignas(64) std::atomic<uint64_t> generation_{0};
    alignas(64) std::atomic<int> pending_{0};
    std::atomic<bool> stopping_{false};
};

}  // namespace oxinfer
