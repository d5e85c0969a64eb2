#pragma once
// The engine's thread pool: persistent workers that spin briefly, then sleep, waiting for the
// next job, so that the many small parallel sections of token-by-token decoding start within
// microseconds. The calling thread takes part as thread 0.
//
// Threading contract: one thread at a time calls run()/parallel_for() on a pool (the engine
// thread that owns it); jobs must not call back into the same pool, but for barrier(). A pool of
// one thread runs every job inline and keeps no state between calls: any threads may use it at
// once (each thread of a job that splits a token's layers runs its own products on one).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace oxinfer {

class ThreadPool {
public:
    // How long an idle worker spins before it sleeps: long enough to cover the gap between two
    // kernels of one decode step, short enough not to burn a core between user turns.
    static constexpr std::chrono::microseconds kIdleSpin{200};

    // `threads` counts the caller: a pool of 1 runs every job inline. 0 means physical cores.
    // `idle_spin`: kIdleSpin, or zero for a pool whose jobs come far apart (the bandwidth probe),
    // whose spinning workers would take the cores from another pool's jobs that follow.
    explicit ThreadPool(int threads = 0, std::chrono::microseconds idle_spin = kIdleSpin);
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

    // Inside a run() job: returns once every thread of the job has called it as many times, for a
    // job whose steps read each other's results (a decoded token's layers: ParallelDecode in
    // models/llama_family.cpp). Waits as the workers wait for a job: spinning for the pool's
    // idle_spin, then asleep.
    void barrier();

    // Calls body(begin, end) on contiguous, non-empty ranges that together cover [0, n) once,
    // spread over the threads. Ranges begin at multiples of `granule` (e.g. a SIMD width or a
    // cache line of output rows). Each thread has a share of [0, n) that it takes from the front
    // in pieces of half what is left of it, so that its pieces follow each other in memory as one
    // stream; a thread done with its share takes half of what another has left from the back.
    // A thread that another process slows down is so relieved of all but the piece it is in, and
    // threads that keep their pace finish within about one of the last, small pieces of each
    // other, where equal shares would leave the others waiting at the end of every section.
    template <class Body>
    void parallel_for(int64_t n, int64_t granule, Body&& body) {
        if (n <= 0) return;
        if (size_ == 1) {
            body(0, n);
            return;
        }
        const int64_t step = share_step(n, granule);
        const int64_t last = (n - 1) / step;  // the last step, which ends at n (end * step could overflow there)
        run([&](int index, int) {
            for (int64_t begin, end; take_piece(index, begin, end);) body(begin * step, end > last ? n : end * step);
        });
    }

private:
    // Splits [0, n) into steps of a multiple of `granule` (few enough to count in 32 bits) and
    // shares them out among the threads; returns the step.
    int64_t share_step(int64_t n, int64_t granule);
    // The next piece for thread `index`, in steps: from the front of its share, or else from the
    // back of the share with the most left. False when nothing is left.
    bool take_piece(int index, int64_t& begin, int64_t& end);

    // A thread's share, [front, back) in steps, in one word: the owner moves the front and the
    // others the back, each by compare-and-swap.
    struct alignas(64) Share {
        std::atomic<uint64_t> bounds{0};
    };
    using Trampoline = void (*)(void*, int, int);
    void dispatch(Trampoline trampoline, void* context);
    void worker_loop(int index);

    int size_ = 1;
    std::chrono::microseconds idle_spin_;
    std::vector<std::thread> workers_;
    std::unique_ptr<Share[]> shares_;
    // The job, on the line the workers watch.
    alignas(64) std::atomic<uint64_t> generation_{0};
    Trampoline trampoline_ = nullptr;
    void* context_ = nullptr;
    alignas(64) std::atomic<int> pending_{0};
    std::atomic<bool> stopping_{false};
    alignas(64) std::atomic<int> sleepers_{0};  // workers asleep, or about to sleep, in wait_for_change
    // barrier(): the threads arrived at the current one, and how many have been passed.
    alignas(64) std::atomic<int> barrier_arrived_{0};
    alignas(64) std::atomic<uint32_t> barrier_phase_{0};
    std::atomic<int> barrier_sleepers_{0};
};

}  // namespace oxinfer
