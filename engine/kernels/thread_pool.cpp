#include "kernels/thread_pool.h"

#include <oxinfer/platform.h>

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace oxinfer {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(_M_X64)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Waits until `value` differs from `old`: spins for `spin`, then sleeps in the kernel, counted in
// `sleepers` (if given) from before its last look at `value` until it wakes.
template <class T>
T wait_for_change(const std::atomic<T>& value, T old, std::chrono::microseconds spin, std::atomic<int>* sleepers = nullptr) {
    const auto deadline = std::chrono::steady_clock::now() + spin;
    for (int spins = 0;; ++spins) {
        const T current = value.load(std::memory_order_acquire);
        if (current != old) return current;
        if ((spins & 63) == 63 && std::chrono::steady_clock::now() > deadline) break;
        cpu_relax();
    }
    if (sleepers) {
        sleepers->fetch_add(1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with the one in dispatch()
    }
    for (;;) {
        value.wait(old, std::memory_order_acquire);
        const T current = value.load(std::memory_order_acquire);
        if (current != old) {
            if (sleepers) sleepers->fetch_sub(1, std::memory_order_relaxed);
            return current;
        }
    }
}

}  // namespace

ThreadPool::ThreadPool(int threads, std::chrono::microseconds idle_spin) : idle_spin_(idle_spin) {
    size_ = threads > 0 ? threads : std::max(1, platform().physical_cores);
    shares_ = std::make_unique<Share[]>(static_cast<size_t>(size_));
    workers_.reserve(static_cast<size_t>(size_ - 1));
    for (int index = 1; index < size_; ++index) workers_.emplace_back([this, index] { worker_loop(index); });
}

ThreadPool::~ThreadPool() {
    stopping_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    generation_.notify_all();
    for (std::thread& worker : workers_) worker.join();
}

namespace {

uint64_t pack(uint64_t front, uint64_t back) { return front | back << 32; }
uint64_t front_of(uint64_t bounds) { return bounds & 0xFFFFFFFFu; }
uint64_t back_of(uint64_t bounds) { return bounds >> 32; }

}  // namespace

int64_t ThreadPool::share_step(int64_t n, int64_t granule) {
    const uint64_t units = static_cast<uint64_t>(n / granule + (n % granule != 0));
    const uint64_t per_step = units / 0x7FFFFFFFu + 1;  // steps must count in 32 bits
    const uint64_t steps = (units + per_step - 1) / per_step;
    const uint64_t threads = static_cast<uint64_t>(size_);
    for (uint64_t i = 0; i < threads; ++i)
        shares_[i].bounds.store(pack(steps * i / threads, steps * (i + 1) / threads), std::memory_order_relaxed);
    return granule * static_cast<int64_t>(per_step);  // the shares are published to the workers by dispatch()
}

bool ThreadPool::take_piece(int index, int64_t& begin, int64_t& end) {
    std::atomic<uint64_t>& own = shares_[static_cast<size_t>(index)].bounds;
    for (uint64_t bounds = own.load(std::memory_order_relaxed); front_of(bounds) < back_of(bounds);) {
        const uint64_t front = front_of(bounds), back = back_of(bounds);
        const uint64_t piece_end = front + std::max<uint64_t>(1, (back - front) / 2);
        if (own.compare_exchange_weak(bounds, pack(piece_end, back), std::memory_order_relaxed)) {
            begin = static_cast<int64_t>(front);
            end = static_cast<int64_t>(piece_end);
            return true;
        }
    }
    for (;;) {
        std::atomic<uint64_t>* fullest = nullptr;
        uint64_t bounds = 0, most = 0;
        for (int i = 0; i < size_; ++i) {
            const uint64_t other = shares_[static_cast<size_t>(i)].bounds.load(std::memory_order_relaxed);
            const uint64_t left = back_of(other) - front_of(other);
            if (left > most) {
                most = left;
                bounds = other;
                fullest = &shares_[static_cast<size_t>(i)].bounds;
            }
        }
        if (!fullest) return false;
        const uint64_t front = front_of(bounds), back = back_of(bounds);
        const uint64_t piece_begin = back - std::max<uint64_t>(1, (back - front) / 2);
        if (fullest->compare_exchange_weak(bounds, pack(front, piece_begin), std::memory_order_relaxed)) {
            begin = static_cast<int64_t>(piece_begin);
            end = static_cast<int64_t>(back);
            return true;
        }
    }
}

// The job is published by a plain store, and the caller wakes sleeping workers only: a locked
// read-modify-write (fetch_add, or notify_all's count of waiters) would hold the caller until the
// spinning workers' cores gave up their copies of the line, before it starts on its own share.
// On a 2-core Zen 5 VM, whose cores hand a line over in about 0.3 us idle and in microseconds
// while both stream weights, 28 sections of 1.15 MB read from memory in a row took 22.3-22.8 us
// each against 23.8-24.7 (medians of 30 rounds in turn with the locked increment).
void ThreadPool::dispatch(Trampoline trampoline, void* context) {
    trampoline_ = trampoline;
    context_ = context;
    pending_.store(size_ - 1, std::memory_order_relaxed);
    generation_.store(generation_.load(std::memory_order_relaxed) + 1, std::memory_order_release);  // only the caller writes it
    if (sleepers_.load(std::memory_order_relaxed) != 0) generation_.notify_all();
    trampoline(context, 0, size_);
    // A worker may have gone to sleep while the job was being published, having seen neither it
    // nor been seen: after the fence, either its count or its last look at generation_ is ordered
    // after the publication, so it either runs the job or is woken here.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_relaxed) != 0) generation_.notify_all();
    // The caller waits for the workers spinning, whatever idle_spin_ is: it has a job in flight.
    for (int left = pending_.load(std::memory_order_acquire); left != 0;) left = wait_for_change(pending_, left, kIdleSpin);
}

void ThreadPool::barrier() {
    if (size_ == 1) return;
    // Read before arriving: the phase cannot move on until this thread has arrived.
    const uint32_t phase = barrier_phase_.load(std::memory_order_acquire);
    if (barrier_arrived_.fetch_add(1, std::memory_order_acq_rel) == size_ - 1) {
        barrier_arrived_.store(0, std::memory_order_relaxed);  // before the phase's release: the next arrivals see it
        barrier_phase_.store(phase + 1, std::memory_order_release);
        std::atomic_thread_fence(std::memory_order_seq_cst);  // as in dispatch(): a thread going to sleep is seen or sees the phase
        if (barrier_sleepers_.load(std::memory_order_relaxed) != 0) barrier_phase_.notify_all();
        return;
    }
    wait_for_change(barrier_phase_, phase, idle_spin_, &barrier_sleepers_);
}

void ThreadPool::worker_loop(int index) {
    uint64_t seen = 0;
    for (;;) {
        seen = wait_for_change(generation_, seen, idle_spin_, &sleepers_);
        if (stopping_.load(std::memory_order_acquire)) return;
        trampoline_(context_, index, size_);
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
    }
}

}  // namespace oxinfer
