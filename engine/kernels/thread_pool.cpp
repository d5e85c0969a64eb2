#include "kernels/thread_pool.h"

#include <oxinfer/platform.h>

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace oxinfer {
namespace {

// How long an idle thread spins before it sleeps: long enough to cover the gap between two
// kernels of one decode step, short enough not to burn a core between user turns.
constexpr auto kSpinTime = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(_M_X64)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Waits until `value` differs from `old`: spins for kSpinTime, then sleeps in the kernel.
template <class T>
T wait_for_change(const std::atomic<T>& value, T old) {
    const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
    for (int spins = 0;; ++spins) {
        const T current = value.load(std::memory_order_acquire);
        if (current != old) return current;
        if ((spins & 63) == 63 && std::chrono::steady_clock::now() > deadline) break;
        cpu_relax();
    }
    for (;;) {
        value.wait(old, std::memory_order_acquire);
        const T current = value.load(std::memory_order_acquire);
        if (current != old) return current;
    }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
    size_ = threads > 0 ? threads : std::max(1, platform().physical_cores);
    workers_.reserve(static_cast<size_t>(size_ - 1));
    for (int index = 1; index < size_; ++index) workers_.emplace_back([this, index] { worker_loop(index); });
}

ThreadPool::~ThreadPool() {
    stopping_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    generation_.notify_all();
    for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::dispatch(Trampoline trampoline, void* context) {
    trampoline_ = trampoline;
    context_ = context;
    pending_.store(size_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_acq_rel);  // publishes the job to the workers
    generation_.notify_all();
    trampoline(context, 0, size_);
    for (int left = pending_.load(std::memory_order_acquire); left != 0;) left = wait_for_change(pending_, left);
}

void ThreadPool::worker_loop(int index) {
    uint64_t seen = 0;
    for (;;) {
        seen = wait_for_change(generation_, seen);
        if (stopping_.load(std::memory_order_acquire)) return;
        trampoline_(context_, index, size_);
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
    }
}

}  // namespace oxinfer
