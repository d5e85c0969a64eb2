#pragma once
// What machine we run on: CPU features (cpuid on x86, getauxval/sysctl on Arm), cores and memory.

#include <cstdint>
#include <string>
#include <vector>

namespace oxinfer {

struct CpuFeatures {
    // x86-64. AVX and AVX-512 flags are set only when the OS also saves the wider registers.
    bool sse42 = false, avx = false, avx2 = false, fma = false, f16c = false;
    bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
    bool avx512_vnni = false, avx512_bf16 = false, avx512_fp16 = false, avx_vnni = false;
    bool amx_tile = false, amx_int8 = false, amx_bf16 = false;
    // Arm64
    bool neon = false, dotprod = false, i8mm = false, arm_fp16 = false, arm_bf16 = false, sve = false;

    // Short names of the features present, e.g. {"AVX2", "FMA", "AVX512F", "AVX512_BF16"}.
    std::vector<std::string> names() const;
};

struct PlatformInfo {
    std::string arch;        // "x86_64", "aarch64", ...
    std::string cpu_name;    // brand string, or "unknown"
    std::string cpu_vendor;  // x86 cpuid vendor ("GenuineIntel", "AuthenticAMD"), or "unknown"
    int cpu_family = 0;      // x86 family as cpuid leaf 1 composes it (AMD Zen 3 and 4: 25, Zen 5: 26); 0 elsewhere
    CpuFeatures features;
    int physical_cores = 1;
    int logical_cores = 1;
    uint64_t total_ram_bytes = 0;
    uint64_t available_ram_bytes = 0;

    // One line for status bars and logs: "<cpu> · 8 cores / 16 threads · AVX2 FMA ... · 31.2 GiB RAM (20.1 GiB free)"
    std::string summary() const;
};

// Detects the machine afresh (memory figures change over time).
PlatformInfo detect_platform();

// Detected once, then cached; the available-RAM figure is from that moment.
const PlatformInfo& platform();

// "1.5 GiB", "512 MiB", "12 KiB", "17 B".
std::string format_bytes(uint64_t bytes);

}  // namespace oxinfer
