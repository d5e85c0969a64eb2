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

    // Calls body(begin, end) on contiguous, non-empty ranges that together cover [0, n) once,
    // spread over the threads. Ranges begin at multiples of `granule` (e.g. a SIMD width or a
    // cache line of output rows). The ranges are kChunksPerThread per thread, taken in turn from a
    // shared counter: a thread that another process slows down takes fewer of them, where equal
    // shares would leave the others waiting for it at the end of every parallel section.
    template <class Body>
    void parallel_for(int64_t n, int64_t granule, Body&& body) {
        if (n <= 0) return;
        if (size_ == 1) {
            body(0, n);
            return;
        }
        const int64_t units = (n + granule - 1) / granule;
        const int64_t chunks = std::min<int64_t>(units, int64_t{kChunksPerThread} * size_);
        std::atomic<int64_t> next{0};
        run([&](int, int) {
            for (int64_t chunk; (chunk = next.fetch_add(1, std::memory_order_relaxed)) < chunks;) {
                const int64_t begin = units * chunk / chunks * granule;
                const int64_t end = std::min(n, units * (chunk + 1) / chunks * granule);
                if (begin < end) body(begin, end);
            }
        });
    }

private:
    // Each range a GEMV thread starts is a new stream of weights, which the prefetchers take a
    // while to follow: decoding from huge pages on a 2-core Xeon VM, tg128 in alternating runs,
    // 2 per thread against 4: Qwen3-0.6B q4_k 1.03, q8_0 1.04, Llama-3.2-1B q4_k 1.03; pp512 alike.
    static constexpr int kChunksPerThread = 2;
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
