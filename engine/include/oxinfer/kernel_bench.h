#pragma once
// Kernel benchmarks for `oxinfer bench --kernels`: the machine's measured memory read bandwidth
// and FMA peak, then for each weight type the GEMV rate (weight bytes streamed per second, to
// compare with the bandwidth) and the GEMM rate (GFLOP/s, to compare with the peak), all on
// matrices far larger than the caches. Each kernel runs in turn with the measurement it is
// compared with (GEMV with the read bandwidth, GEMM with its instruction's peak), and of those
// pairs the one with the median ratio is kept: both of its rates come from the same fraction of a
// second, on machines whose speed drifts within seconds (other virtual machines on their cores).

#include <oxinfer/dtype.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace oxinfer {

struct KernelBenchOptions {
    int threads = 0;                 // 0: physical cores
    std::vector<DType> types;        // empty: the default set (f32, f16, bf16, q8_0, q4_0, q4_k, q6_k)
    int64_t gemv_bytes = int64_t{512} << 20;  // weight bytes per GEMV matrix
    int64_t gemm_tokens = 512;
    int64_t gemm_size = 4096;        // GEMM weight matrix is gemm_size x gemm_size
    double seconds_per_test = 1.0;   // repeat each measurement for about this long (twice that for a pair in turn)
    std::function<void(const std::string&)> progress;  // a line per finished measurement
};

struct KernelBenchResult {
    DType type;
    // Rows interleaved as the engine loads this type on this level (kernels/interleave.h): each
    // such type is measured in both layouts. Their GEMM multiplies int8 activations; its share
    // is still of the FMA peak (what a float GEMM could reach).
    bool interleaved = false;
    // Rates of the pair with the median ratio (see above).
    double gemv_gbs = 0;            // weight bytes / second
    double gemv_bandwidth_gbs = 0;  // the read bandwidth, measured in turn with the GEMV
    double gemm_gflops = 0;         // 2 * tokens * rows * cols / second
    double gemm_peak_gflops = 0;    // the peak of the instruction this type's GEMM uses (FMA), in turn with it
    // bf16 on CPUs with vdpbf16ps: the GEMM on bf16-rounded activations (LoadOptions::bf16_activations)
    // and that instruction's peak, in turn with it; 0 elsewhere.
    double gemm_bf16_activations_gflops = 0, bf16_dot_peak_gflops = 0;
};

struct KernelBenchReport {
    int threads = 0;
    std::string isa;           // the instruction-set level in use
    double bandwidth_gbs = 0;  // memory read bandwidth with all threads, measured first (the best run)
    double peak_gflops = 0;    // FMA peak with all threads at that level, measured first (the best run)
    std::vector<KernelBenchResult> kernels;
};

KernelBenchReport run_kernel_bench(const KernelBenchOptions& options);

// The memory read bandwidth of run_kernel_bench (every thread summing its own part of 1 GiB), kept
// ready to be measured again and again: beside each run of a model benchmark, on a machine whose
// bandwidth drifts from one minute to the next. Holds the 1 GiB and its own threads. It reads in
// each of the ways the GEMVs ask for weights on this CPU (methods()); the faster one is the
// bandwidth, so that no kernel's way of streaming outruns the bound.
class ReadBandwidthProbe {
public:
    explicit ReadBandwidthProbe(int threads = 0);  // 0: physical cores
    ~ReadBandwidthProbe();
    ReadBandwidthProbe(const ReadBandwidthProbe&) = delete;
    ReadBandwidthProbe& operator=(const ReadBandwidthProbe&) = delete;
    // GB/s: the fastest read of the buffer within about `seconds` (at least two reads each way).
    double measure(double seconds);
    // One read of the first `bytes` of the buffer (at most bytes()) by every thread, the way
    // `method` (0 to methods() - 1) streams: for callers that time reads in turn with something
    // else and keep the faster method's rate.
    void read(int64_t bytes, int method);
    // Sleeps until the engine's idle workers have stopped spinning (they spin a while after each
    // parallel section, waiting for the next), so that a read timed next has the cores to itself.
    // The probe's own workers sleep as soon as a read is done: they take no core from what follows.
    static void wait_for_idle_workers();
    int methods() const;
    int64_t bytes() const;

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace oxinfer
