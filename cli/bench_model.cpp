// oxinfer bench --model MODEL [-p 512] [-n 128] [-r 5] [-d 0] [-t N] [--mtp] [--bandwidth] [--json]:
// prompt processing (pp) and generation (tg) speed as llama-bench measures them. pp: p tokens in
// one prefill. tg: n tokens decoded one at a time. Both start from a cache holding d tokens
// (llama-bench's depth), evaluated before the timing starts. One untimed warm-up run each, then r
// timed repetitions; tokens/s as mean and sample standard deviation.
// --bandwidth: tg against the bound that the memory read bandwidth sets (weight bytes per token /
// bandwidth), run by run; not with -d, whose cache reads that bound leaves out. The bandwidth is
// read in turn with the tokens: after every kTokensPerProbeRead tokens and after a run's last, the
// probe reads as many bytes as a token's weights (at least 256 MiB), outside the tokens' time, its
// ways of reading (ReadBandwidthProbe::methods) taking turns; the faster way's rate counts.
// A machine whose bandwidth swings with its neighbours' load (a cloud VM: 35 to 70 GB/s from one
// second to the next on a 2-core EPYC) then gives the tokens and the probe the same conditions,
// which one measurement before each run does not. The probe empties the caches, and a token right
// after a read is slower than one after a token: on a 2-core Zen 5 VM, with a read after every
// second token, medians of 6 x 64 tokens of each kind, 1.7% (Qwen3-0.6B q4_k), 4.3% (q8_0) and
// 0.7% (Llama-3.2-1B q4_k) slower. A read every fourth token leaves that to a quarter of the
// tokens and still reads every few tens of milliseconds; the share errs low, by about a quarter as
// much as with a read after every token. Neither side's idle threads spin into the other's time:
// each read waits until the engine's workers sleep, and the probe's sleep at once (its spinning
// worker took a core from the first parallel sections of the next token).

#include "bench_model.h"
#include "model_options.h"

#include <oxinfer/error.h>
#include <oxinfer/kernel_bench.h>
#include <oxinfer/llm.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>

namespace oxinfer::cli {
namespace {

struct Measurement {
    std::string test;
    double mean = 0, stddev = 0;
    std::vector<double> samples;  // tokens/s of each timed run, as llama-bench's samples_ts
    std::optional<double> draft_acceptance;  // tgN+mtp: accepted / drafted over the timed runs
    std::vector<double> bandwidth_gbs;       // --bandwidth: measured in turn with each timed run's tokens
};

// --bandwidth: the probe reads after every this many tokens, and after a run's last (see the top
// of this file).
constexpr int64_t kTokensPerProbeRead = 4;

double seconds_of(const std::function<void()>& work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// `run` does one run and returns the seconds it timed.
Measurement measure(const std::string& test, int repetitions, int64_t tokens, const std::function<double()>& run) {
    std::vector<double> rates;
    for (int r = 0; r <= repetitions; ++r) {
        const double seconds = run();
        if (r > 0) rates.push_back(static_cast<double>(tokens) / seconds);  // run 0 warms up
    }
    Measurement m;
    m.test = test;
    m.samples = rates;
    for (double x : rates) m.mean += x / static_cast<double>(rates.size());
    for (double x : rates) m.stddev += (x - m.mean) * (x - m.mean);
    m.stddev = rates.size() > 1 ? std::sqrt(m.stddev / static_cast<double>(rates.size() - 1)) : 0.0;
    return m;
}

}  // namespace

int run_model_bench(const Args& args) {
    auto number = [&](const char* name, int64_t fallback) { return args.value(name) ? std::stoll(*args.value(name)) : fallback; };
    const int64_t prompt = number("n-prompt", 512), generate = number("n-gen", 128), depth = number("n-depth", 0);
    const int repetitions = static_cast<int>(number("repetitions", 5));
    if (prompt < 0 || generate < 0 || depth < 0 || repetitions < 1)
        throw Error("bench", "-p, -n and -d must not be negative, -r must be at least 1");
    if (depth > 0 && (args.flag("mtp") || args.value("draft-model")))
        throw Error("bench", "-d is for pp and tg; the drafting tests run from an empty cache");
    if (depth > 0 && args.flag("bandwidth"))
        throw Error("bench", "--bandwidth sets its bound by the weight bytes alone, which -d's cache reads would outweigh");
    LoadOptions load = load_options(args);
    load.context_length = depth + std::max<int64_t>({prompt, generate, 1});
    auto model = Model::load(args.required("model"), load);
    const int64_t vocab = model->config().vocab_size;
    std::mt19937 rng(1);
    // The depth's tokens, then those of the test.
    std::vector<int32_t> ids(static_cast<size_t>(depth + std::max(prompt, generate)));
    for (int32_t& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
    const std::string at_depth = depth > 0 ? " @ d" + std::to_string(depth) : "";

    Session session(*model);
    std::vector<Measurement> results;
    std::unique_ptr<ReadBandwidthProbe> probe;
    std::vector<double> bandwidths;
    if (args.flag("bandwidth")) probe = std::make_unique<ReadBandwidthProbe>(model->threads());
    // A fresh cache holding the depth's tokens; the test's tokens start at ids + depth.
    const auto start = [&] {
        session.reset();
        if (depth > 0) session.evaluate(std::span(ids.data(), static_cast<size_t>(depth)));
    };
    const int32_t* test_ids = ids.data() + depth;
    if (prompt > 0)
        results.push_back(measure("pp" + std::to_string(prompt) + at_depth, repetitions, prompt, [&] {
            start();
            return seconds_of([&] { session.evaluate(std::span(test_ids, static_cast<size_t>(prompt))); });
        }));
    if (generate > 0) {
        // The probe's read after every kTokensPerProbeRead tokens: as many bytes as a token's
        // weights, at least 256 MiB (more than the caches hold), at most its buffer.
        const int64_t probe_bytes = probe ? std::clamp<int64_t>(model->weight_bytes(), int64_t{256} << 20, probe->bytes()) : 0;
        // Its ways of reading take turns, token by token; the run's bandwidth is the faster one's.
        const int methods = probe ? probe->methods() : 0;
        results.push_back(measure("tg" + std::to_string(generate) + at_depth, repetitions, generate, [&] {
            start();
            double token_seconds = 0;
            std::vector<double> probe_seconds(static_cast<size_t>(methods));
            std::vector<int64_t> probe_reads(static_cast<size_t>(methods));
            for (int64_t i = 0; i < generate; ++i) {
                token_seconds += seconds_of([&] { session.evaluate(std::span(test_ids + i, 1)); });
                if (!probe || ((i + 1) % kTokensPerProbeRead != 0 && i + 1 != generate)) continue;
                const auto method = static_cast<size_t>(i / kTokensPerProbeRead % methods);
                ReadBandwidthProbe::wait_for_idle_workers();
                probe_seconds[method] += seconds_of([&] { probe->read(probe_bytes, static_cast<int>(method)); });
                probe_reads[method] += 1;
            }
            double bandwidth = 0;
            for (size_t m = 0; m < probe_reads.size(); ++m)
                if (probe_reads[m] > 0) bandwidth = std::max(bandwidth, static_cast<double>(probe_bytes * probe_reads[m]) / probe_seconds[m] / 1e9);
            if (probe) bandwidths.push_back(bandwidth);
            return token_seconds;
        }));
        if (!bandwidths.empty()) results.back().bandwidth_gbs.assign(bandwidths.begin() + 1, bandwidths.end());  // not the warm-up's
    }
    probe.reset();  // its 1 GiB is not needed past here

    // --mtp / --draft-model: greedy generation drafting with the MTP head or the draft model
    // (GenerateOptions::draft) from a one-token prompt; its tokens/s against tgN's is the speed-up,
    // at the acceptance this model gives.
    const bool draft_model = args.value("draft-model").has_value();
    if (generate > 0 && (args.flag("mtp") || draft_model)) {
        if (args.flag("mtp") && draft_model) throw Error("bench", "give --mtp or --draft-model, not both");
        if (args.flag("mtp") && !model->has_draft_head()) throw Error(args.required("model"), "has no multi-token-prediction head for --mtp");
        GenerateOptions draft;
        draft.max_tokens = generate;
        draft.stop_at_model_stop_tokens = false;
        draft.draft = true;
        draft.draft_tokens = draft_tokens_option(args);
        int64_t drafted = 0, accepted = 0;
        Measurement m = measure("tg" + std::to_string(generate) + (draft_model ? "+draft" : "+mtp"), repetitions, generate, [&] {
            session.reset();
            return seconds_of([&] {
                const GenerationResult result = session.generate(std::span(ids.data(), 1), draft);
                drafted += result.stats.draft_tokens;
                accepted += result.stats.accepted_draft_tokens;
            });
        });
        m.draft_acceptance = drafted ? static_cast<double>(accepted) / static_cast<double>(drafted) : 0.0;
        results.push_back(m);
    }

    const std::string type = model->weight_type();
    // Over the runs, the median (the upper middle one for an even count) of tokens/s x weight bytes
    // per token / the bandwidth measured in turn with that run's tokens.
    const auto bound_fraction = [&](const Measurement& m) {
        std::vector<double> shares;
        for (size_t i = 0; i < m.samples.size() && i < m.bandwidth_gbs.size(); ++i)
            shares.push_back(m.samples[i] * static_cast<double>(model->weight_bytes()) / (m.bandwidth_gbs[i] * 1e9));
        std::sort(shares.begin(), shares.end());
        return shares.empty() ? 0.0 : shares[shares.size() / 2];
    };
    if (args.flag("json")) {
        nlohmann::json out = nlohmann::json::array();
        for (const Measurement& m : results) {
            nlohmann::json row = {{"test", m.test}, {"tok_s", m.mean}, {"stddev", m.stddev}, {"samples_ts", m.samples}, {"n_depth", depth},
                                  {"threads", model->threads()}, {"model_bytes", model->weight_bytes()}, {"type", type}};
            if (m.draft_acceptance) row["draft_acceptance"] = *m.draft_acceptance;
            if (!m.bandwidth_gbs.empty()) {
                row["bandwidth_gbs"] = m.bandwidth_gbs;
                row["bound_fraction"] = bound_fraction(m);
            }
            out.push_back(row);
        }
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
    }
    std::printf("| model | size | type | threads | test | t/s |\n|---|---|---|---|---|---|\n");
    for (const Measurement& m : results)
        std::printf("| %s | %.2f GiB | %s | %d | %s | %.2f ± %.2f |\n", model->config().architecture.c_str(),
                    static_cast<double>(model->weight_bytes()) / (1024.0 * 1024.0 * 1024.0), type.c_str(), model->threads(), m.test.c_str(),
                    m.mean, m.stddev);
    for (const Measurement& m : results)
        if (!m.bandwidth_gbs.empty()) {
            const auto [low, high] = std::minmax_element(m.bandwidth_gbs.begin(), m.bandwidth_gbs.end());
            std::printf("\n%s: %.0f%% of the bandwidth bound (median of the runs; read bandwidth %.1f-%.1f GB/s, measured in turn with the tokens)\n",
                        m.test.c_str(), 100 * bound_fraction(m), *low, *high);
        }
    for (const Measurement& m : results)
        if (m.draft_acceptance) std::printf("\n%s: %.0f%% of the MTP head's drafts accepted\n", m.test.c_str(), 100 * *m.draft_acceptance);
    return 0;
}

}  // namespace oxinfer::cli
