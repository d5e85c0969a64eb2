#include <oxinfer/kernel_bench.h>

#include "kernels/huge_pages.h"
#include "kernels/interleave.h"
#include "kernels/isa.h"
#include "kernels/matmul.h"
#include "kernels/matmul_table.h"
#include "kernels/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

namespace oxinfer {
namespace {

using Clock = std::chrono::steady_clock;

template <class Body>
double seconds_of(Body&& body) {
    const auto start = Clock::now();
    body();
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs `body` repeatedly for about `seconds` (at least twice) and returns the fastest run.
template <class Body>
double best_seconds(double seconds, Body&& body) {
    double best = 1e30;
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    for (int run = 0; run < 2 || Clock::now() < deadline; ++run) best = std::min(best, seconds_of(body));
    return best;
}

struct RatePair {
    double measured, reference;  // work per second
};
// Measures the reference (`reference_rate` returns its work per second) and runs `measured` in
// turn for about 2 x `seconds` (at least 3 pairs) and returns the pair whose ratio measured /
// reference is the median: both rates come from the same fraction of a second, on a machine whose
// speed drifts within seconds (other virtual machines on its cores), where the fastest run of
// each, taken apart, compares different moments.
template <class Reference, class Measured>
RatePair median_pair_in_turn(double seconds, Reference&& reference_rate, Measured&& measured, double measured_work) {
    std::vector<RatePair> pairs;
    const auto deadline = Clock::now() + std::chrono::duration<double>(2 * seconds);
    while (pairs.size() < 3 || Clock::now() < deadline) {
        const double reference = reference_rate();
        pairs.push_back({measured_work / seconds_of(measured), reference});
    }
    const auto middle = pairs.begin() + static_cast<std::ptrdiff_t>(pairs.size() / 2);
    std::nth_element(pairs.begin(), middle, pairs.end(),
                     [](const RatePair& a, const RatePair& b) { return a.measured / a.reference < b.measured / b.reference; });
    return *middle;
}

// Byte offsets of the half-float scales in each block, set to a normal value so that no
// measurement runs on NaN or subnormal scales (random bytes elsewhere are valid codes).
std::vector<int> half_scale_offsets(DType type) {
    switch (type) {
        case DType::Q8_0: case DType::Q4_0: case DType::Q5_0: case DType::IQ4_NL: case DType::IQ4_XS: return {0};
        case DType::Q4_1: case DType::Q5_1: case DType::Q4_K: case DType::Q5_K: return {0, 2};
        case DType::Q2_K: return {80, 82};
        case DType::Q3_K: return {108};
        case DType::Q6_K: return {208};
        default: return {};
    }
}

// `count` values of `type` with realistic magnitudes, written (not just reserved) so that the
// pages are real memory.
std::vector<std::byte> make_weights(DType type, int64_t elements, uint32_t seed) {
    const DTypeTraits& traits = dtype_traits(type);
    std::vector<std::byte> bytes(*dtype_bytes(type, static_cast<uint64_t>(elements)));
    std::mt19937 random(seed);
    if (traits.quantized) {
        for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
            const uint32_t word = random();
            std::memcpy(bytes.data() + i, &word, 4);
        }
        const uint16_t scale = f32_to_f16(0.01f);
        for (size_t block = 0; block + static_cast<size_t>(traits.block_bytes) <= bytes.size(); block += static_cast<size_t>(traits.block_bytes))
            for (int offset : half_scale_offsets(type)) std::memcpy(bytes.data() + block + offset, &scale, 2);
        return bytes;
    }
    std::uniform_real_distribution<float> values(-0.05f, 0.05f);
    for (int64_t i = 0; i < elements; ++i) {
        const float v = values(random);
        if (type == DType::F32) std::memcpy(bytes.data() + 4 * i, &v, 4);
        else {
            const uint16_t bits = type == DType::F16 ? f32_to_f16(v) : f32_to_bf16(v);
            std::memcpy(bytes.data() + 2 * i, &bits, 2);
        }
    }
    return bytes;
}

// One run of a peak-rate probe on every thread, and the operations it does (the probes count
// them in proportion to their iterations).
struct PeakRun {
    double (*probe)(int64_t, float*);
    ThreadPool& pool;
    static constexpr int64_t kIterations = 20'000'000;
    void operator()() const {
        std::vector<float> sinks(static_cast<size_t>(pool.size()));
        pool.run([&](int index, int) { probe(kIterations, &sinks[static_cast<size_t>(index)]); });
    }
    double flops() const {
        float sink;
        return probe(1, &sink) * static_cast<double>(kIterations) * pool.size();
    }
    double rate() const { return flops() / seconds_of(*this); }
};

}  // namespace

KernelBenchReport run_kernel_bench(const KernelBenchOptions& options) {
    ThreadPool pool(options.threads);
    const Isa isa = active_isa();
    const kernels::MatmulTable& table = kernels::matmul_table(isa);
    KernelBenchReport report;
    report.threads = pool.size();
    report.isa = std::string(isa_name(isa));
    auto say = [&](const std::string& line) {
        if (options.progress) options.progress(line);
    };

    ReadBandwidthProbe probe(options.threads);
    report.bandwidth_gbs = probe.measure(options.seconds_per_test);
    // Bytes per second of one read of the probe's buffer each way, the faster.
    const auto read_rate = [&] {
        double rate = 0;
        for (int method = 0; method < probe.methods(); ++method) {
            ReadBandwidthProbe::wait_for_idle_workers();
            rate = std::max(rate, static_cast<double>(probe.bytes()) / seconds_of([&] { probe.read(probe.bytes(), method); }));
        }
        return rate;
    };
    say("memory read bandwidth: " + std::to_string(report.bandwidth_gbs) + " GB/s");
    const PeakRun fma_peak{table.peak_flops_probe, pool};
    report.peak_gflops = fma_peak.flops() / best_seconds(options.seconds_per_test, fma_peak) / 1e9;
    say("peak arithmetic: " + std::to_string(report.peak_gflops) + " GFLOP/s");
    const PeakRun bf16_peak{table.peak_bf16_probe, pool};
    std::vector<DType> types = options.types;
    if (types.empty()) types = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K};
    // A weight matrix of `type` in the layout measured, plain rows or interleaved as the engine
    // loads the types this level has interleaved kernels for, in huge pages as the engine holds
    // the weights it repacks (WeightStore).
    struct Matrix {
        kernels::HugePageBuffer bytes;
        kernels::WeightMatrix w;
    };
    auto make_matrix = [&](DType type, int64_t rows, int64_t cols, uint32_t seed, bool interleaved) {
        const std::vector<std::byte> plain = make_weights(type, rows * cols, seed);
        const kernels::WeightMatrix stored{type, rows, cols, plain.data(), static_cast<int64_t>(*dtype_bytes(type, static_cast<uint64_t>(cols)))};
        Matrix m{kernels::HugePageBuffer(plain.size()), stored};
        if (interleaved) {
            m.w = kernels::interleave_rows(stored, kernels::interleaved_group_rows(table, type), m.bytes.data(), pool);
        } else {
            std::copy(plain.begin(), plain.end(), m.bytes.data());
            m.w.data = m.bytes.data();
        }
        return m;
    };
    const int64_t cols = 4096;
    auto measure = [&](DType type, bool interleaved) {
        KernelBenchResult result{type};
        result.interleaved = interleaved;
        {
            const int64_t row_bytes = static_cast<int64_t>(*dtype_bytes(type, cols));
            const int64_t rows = std::max<int64_t>(16, options.gemv_bytes / row_bytes);
            const Matrix m = make_matrix(type, rows, cols, 1, interleaved);
            std::vector<float> x(cols, 0.5f), y(static_cast<size_t>(rows));
            const auto [gemv, bandwidth] =
                median_pair_in_turn(options.seconds_per_test, read_rate, [&] { kernels::gemv(m.w, x.data(), 1, y.data(), pool); },
                                    static_cast<double>(rows * row_bytes));
            result.gemv_gbs = gemv / 1e9;
            result.gemv_bandwidth_gbs = bandwidth / 1e9;
        }
        {
            const int64_t size = options.gemm_size, tokens = options.gemm_tokens;
            const Matrix m = make_matrix(type, size, size, 2, interleaved);
            std::vector<float> x(static_cast<size_t>(tokens * size), 0.25f), y(static_cast<size_t>(tokens * size));
            const double flops = 2.0 * static_cast<double>(tokens * size * size);
            const auto [gemm, peak] = median_pair_in_turn(options.seconds_per_test, [&] { return fma_peak.rate(); },
                                                          [&] { kernels::gemm(m.w, x.data(), tokens, y.data(), pool); }, flops);
            result.gemm_gflops = gemm / 1e9;
            result.gemm_peak_gflops = peak / 1e9;
            if (type == DType::BF16 && table.gemm_tile_bf16 && table.peak_bf16_probe) {
                kernels::WeightMatrix rounded = m.w;
                rounded.bf16_activations = true;
                const auto [rounded_gemm, bf16_dot_peak] =
                    median_pair_in_turn(options.seconds_per_test, [&] { return bf16_peak.rate(); },
                                        [&] { kernels::gemm(rounded, x.data(), tokens, y.data(), pool); }, flops);
                result.gemm_bf16_activations_gflops = rounded_gemm / 1e9;
                result.bf16_dot_peak_gflops = bf16_dot_peak / 1e9;
            }
        }
        char line[200];
        std::snprintf(line, sizeof line, "%s%s: gemv %.1f GB/s, gemm %.1f GFLOP/s", dtype_name(type).data(), interleaved ? " (interleaved)" : "",
                      result.gemv_gbs, result.gemm_gflops);
        if (result.gemm_bf16_activations_gflops > 0)
            std::snprintf(line + std::strlen(line), sizeof line - std::strlen(line), " (%.1f on bf16 activations)", result.gemm_bf16_activations_gflops);
        say(line);
        report.kernels.push_back(result);
    };
    for (DType type : types) {
        measure(type, false);
        if (kernels::has_interleaved_layout(type) && kernels::interleaved_tile(table, type)) measure(type, true);
    }
    return report;
}

// The probe reads memory as the GEMVs read weights: from huge pages (kernels/huge_pages.h), in the
// level's ways (kernels::kReadMethods). On a 2-core Xeon VM, 2 threads reading 1 GB in turn: 28-29
// GB/s from huge pages without a prefetch, 33 with each line asked for 2 KB ahead; the bf16 GEMV
// streamed 33 GB/s. On a 2-core EPYC VM (Zen 3), 1 GiB in turn with the bf16 GEMV of as many
// bytes, 12 rounds: 2 KB ahead 19.5-25.4 GB/s, with page bursts 20.5-28.2 (faster in 11), the
// GEMV 19.5-25.6 (faster than the plain read in 9).
struct ReadBandwidthProbe::State {
    explicit State(int threads)
        : pool(threads, std::chrono::microseconds(0)), memory(static_cast<size_t>(kCount) * sizeof(float)) {
        const kernels::MatmulTable& table = kernels::matmul_table(active_isa());
        for (auto* read_sum : table.read_sum)
            if (read_sum) reads.push_back(read_sum);
        // The threads write a half each, so that the pages lie near the cores that read them.
        pool.run([&](int index, int threads) {
            std::fill(buffer() + kCount * index / threads, buffer() + kCount * (index + 1) / threads, 1.0f);
        });
    }
    float* buffer() const { return reinterpret_cast<float*>(memory.data()); }
    static constexpr int64_t kCount = int64_t{1} << 28;  // floats: 1 GiB
    ThreadPool pool;
    kernels::HugePageBuffer memory;  // written once, so that its pages are real memory
    std::atomic<float> sink{0.0f};  // each piece's sum, so that no read is optimised away
    std::vector<float (*)(const float*, int64_t)> reads;  // the level's read methods
};

ReadBandwidthProbe::ReadBandwidthProbe(int threads) : state_(std::make_unique<State>(threads)) {}
ReadBandwidthProbe::~ReadBandwidthProbe() = default;

void ReadBandwidthProbe::read(int64_t bytes, int method) {
    State& s = *state_;
    const auto read_sum = s.reads.at(static_cast<size_t>(method));
    const int64_t count = std::clamp<int64_t>(bytes, 0, this->bytes()) / static_cast<int64_t>(sizeof(float));
    // The threads take their shares as the GEMVs take rows (ThreadPool::parallel_for), the faster
    // relieving the slower. Equal halves measured twice the slower core's rate: on a 2-core Zen 5
    // VM, whose cores read 30 and 39-45 GB/s at times, 340 MB read in balanced shares came out
    // 6-10% faster than in halves (medians of three runs of 30 alternating reads; single reads
    // 0.91-1.39 times).
    constexpr int64_t kPieceFloats = 4096;  // pieces of whole 16 KB: whole pages for the page bursts
    s.pool.parallel_for(count, kPieceFloats, [&](int64_t begin, int64_t end) {
        s.sink.store(read_sum(s.buffer() + begin, end - begin), std::memory_order_relaxed);
    });
}

void ReadBandwidthProbe::wait_for_idle_workers() { std::this_thread::sleep_for(2 * ThreadPool::kIdleSpin); }

int ReadBandwidthProbe::methods() const { return static_cast<int>(state_->reads.size()); }

int64_t ReadBandwidthProbe::bytes() const { return State::kCount * static_cast<int64_t>(sizeof(float)); }

double ReadBandwidthProbe::measure(double seconds) {
    double best = 1e30;
    for (int method = 0; method < methods(); ++method)
        best = std::min(best, best_seconds(seconds / methods(), [&] { read(bytes(), method); }));
    return static_cast<double>(bytes()) / best / 1e9;
}

}  // namespace oxinfer
