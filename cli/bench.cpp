// oxinfer bench --kernels [--json]
// oxinfer bench --model MODEL [-p 512] [-n 128] [-r 5] [--json]   (bench_model.cpp)

#include "args.h"
#include "bench_model.h"
#include "commands.h"
#include "model_options.h"

#include <oxinfer/error.h>
#include <oxinfer/kernel_bench.h>
#include <oxinfer/platform.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

namespace oxinfer::cli {

int run_bench(const std::vector<std::string>& argv) {
    auto options = common_options();
    options.push_back({"kernels", "", "", "benchmark the matmul kernels against measured bandwidth and FMA peak"});
    options.push_back({"model", "m", "MODEL", "benchmark a model: prompt processing (pp) and generation (tg) tokens/s"});
    options.push_back({"n-prompt", "p", "N", "--model: prompt tokens for pp (default 512; 0 skips pp)"});
    options.push_back({"n-gen", "n", "N", "--model: generated tokens for tg (default 128; 0 skips tg)"});
    options.push_back({"repetitions", "r", "N", "--model: repetitions (default 5), after one warm-up run"});
    options.push_back({"n-depth", "d", "N", "--model: tokens already in the cache before each pp and tg run, evaluated untimed (default 0), as llama-bench's -d; tests are named \"pp512 @ d4096\""});
    options.push_back({"mtp", "", "", "--model: also tgN+mtp, greedy generation drafting with the multi-token-prediction head (Qwen3.5), and its acceptance"});
    options.push_back({"bandwidth", "", "", "--model: read memory in turn with the tg tokens and report tg against the bound that bandwidth sets"});
    // --draft-model (a model load option): also tgN+draft, drafting with it.
    for (auto& o : model_load_options()) options.push_back(o);
    options.push_back({"types", "", "LIST", "comma-separated weight types for --kernels (default f32,f16,bf16,q8_0,q4_0,q4_k,q6_k)"});
    options.push_back({"quick", "", "", "shorter measurements (about 0.3 s each, smaller GEMV matrices)"});
    options.push_back({"json", "", "", "print one JSON object"});
    Args args("bench", "--kernels [--json] [-t N] | --model MODEL [-p 512] [-n 128] [-r 5] [-d 0] [--json] [-t N]",
              "Measures speed. --kernels: memory read bandwidth, FMA peak, and for each weight type the GEMV rate\n"
              "(GB/s of weights, compare with the bandwidth) and the 512-token GEMM rate (GFLOP/s, compare with the peak).\n"
              "--model: as llama-bench, pp = p tokens in one prefill, tg = n tokens decoded one by one, both after d\n"
              "tokens already in the cache (default none); tokens/s as mean ± standard deviation over r runs.",
              options);
    args.parse(argv);
    if (args.help_requested()) {
        std::fputs(args.help().c_str(), stdout);
        return 0;
    }
    if (args.value("model")) return run_model_bench(args);
    if (!args.flag("kernels")) throw Error("bench", "nothing to measure: pass --kernels or --model (see oxinfer bench --help)");

    KernelBenchOptions bench;
    if (auto threads = args.value("threads")) bench.threads = std::stoi(*threads);
    if (auto list = args.value("types")) {
        std::stringstream stream(*list);
        std::string name;
        while (std::getline(stream, name, ',')) {
            const auto type = dtype_from_name(name);
            if (!type) throw Error("bench", "unknown weight type '" + name + "'");
            bench.types.push_back(*type);
        }
    }
    if (args.flag("quick")) {
        bench.seconds_per_test = 0.3;
        bench.gemv_bytes = int64_t{256} << 20;
    }
    const bool json_output = args.flag("json");
    if (!json_output) bench.progress = [](const std::string& line) { std::printf("%s\n", line.c_str()); std::fflush(stdout); };
    const KernelBenchReport report = run_kernel_bench(bench);

    if (json_output) {
        nlohmann::json out = {{"threads", report.threads}, {"isa", report.isa}, {"bandwidth_gbs", report.bandwidth_gbs},
                              {"peak_gflops", report.peak_gflops}, {"cpu", platform().cpu_name}, {"kernels", nlohmann::json::array()}};
        for (const KernelBenchResult& k : report.kernels) {
            nlohmann::json entry = {{"type", dtype_name(k.type)}, {"layout", k.interleaved ? "interleaved" : "rows"}, {"gemv_gbs", k.gemv_gbs}, {"gemm_gflops", k.gemm_gflops}, {"isa", report.isa},
                                    {"gemv_bandwidth_gbs", k.gemv_bandwidth_gbs}, {"gemv_fraction_of_bandwidth", k.gemv_gbs / k.gemv_bandwidth_gbs},
                                    {"gemm_peak_gflops", k.gemm_peak_gflops}, {"gemm_fraction_of_peak", k.gemm_gflops / k.gemm_peak_gflops}};
            if (k.gemm_bf16_activations_gflops > 0) {
                entry["gemm_bf16_activations_gflops"] = k.gemm_bf16_activations_gflops;
                entry["bf16_dot_peak_gflops"] = k.bf16_dot_peak_gflops;
            }
            out["kernels"].push_back(entry);
        }
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
    }
    std::printf("\n%s\n%d threads, %s kernels: bandwidth %.1f GB/s, peak %.1f GFLOP/s\n\n", platform().summary().c_str(), report.threads,
                report.isa.c_str(), report.bandwidth_gbs, report.peak_gflops);
    std::printf("Each kernel ran in turn with the bandwidth or peak it is compared with; each row is the pair with the median share.\n\n");
    std::printf("| type | GEMV GB/s | bandwidth | of bandwidth | GEMM GFLOP/s | peak | of peak |\n|---|---|---|---|---|---|---|\n");
    for (const KernelBenchResult& k : report.kernels)
        std::printf("| %s%s | %.1f | %.1f | %.0f%% | %.1f | %.1f | %.0f%% |\n", dtype_name(k.type).data(), k.interleaved ? " (interleaved)" : "",
                    k.gemv_gbs, k.gemv_bandwidth_gbs,
                    100 * k.gemv_gbs / k.gemv_bandwidth_gbs, k.gemm_gflops, k.gemm_peak_gflops, 100 * k.gemm_gflops / k.gemm_peak_gflops);
    for (const KernelBenchResult& k : report.kernels)
        if (k.gemm_bf16_activations_gflops > 0)
            std::printf("\n%s GEMM on bf16-rounded activations (--bf16-activations, vdpbf16ps): %.1f GFLOP/s, %.0f%% of that instruction's peak %.1f\n",
                        dtype_name(k.type).data(), k.gemm_bf16_activations_gflops, 100 * k.gemm_bf16_activations_gflops / k.bf16_dot_peak_gflops,
                        k.bf16_dot_peak_gflops);
    return 0;
}

}  // namespace oxinfer::cli
