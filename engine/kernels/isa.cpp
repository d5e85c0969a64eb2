#include "kernels/isa.h"

#include <oxinfer/error.h>
#include <oxinfer/platform.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace oxinfer {
namespace {

constexpr std::pair<Isa, std::string_view> kNames[] = {
    {Isa::Scalar, "scalar"}, {Isa::Avx2, "avx2"}, {Isa::Avx512, "avx512"}, {Isa::Avx512Bf16, "avx512bf16"}, {Isa::Neon, "neon"},
};

bool built_with(Isa isa) {
#if defined(__x86_64__) || defined(_M_X64)
    return isa != Isa::Neon;
#elif defined(__aarch64__) || defined(_M_ARM64)
    return isa == Isa::Scalar || isa == Isa::Neon;
#else
    return isa == Isa::Scalar;
#endif
}

Isa initial_isa() {
    const char* forced = std::getenv("OXINFER_CPU");
    if (!forced || !*forced) return best_isa();
    const auto isa = isa_from_name(forced);
    if (!isa) throw Error("OXINFER_CPU", std::string("unknown level '") + forced + "' (use scalar, avx2, avx512, avx512bf16 or neon)");
    if (!isa_supported(*isa)) throw Error("OXINFER_CPU", std::string("this CPU does not support '") + forced + "'");
    return *isa;
}

std::atomic<int> active{-1};

}  // namespace

std::string_view isa_name(Isa isa) {
    for (const auto& [value, name] : kNames)
        if (value == isa) return name;
    return "unknown";
}

std::optional<Isa> isa_from_name(std::string_view name) {
    for (const auto& [value, text] : kNames)
        if (text == name) return value;
    return std::nullopt;
}

bool isa_supported(Isa isa) {
    if (!built_with(isa)) return false;
    const CpuFeatures& f = platform().features;
    switch (isa) {
        case Isa::Scalar: return true;
        case Isa::Avx2: return f.avx2 && f.fma && f.f16c;
        case Isa::Avx512: return isa_supported(Isa::Avx2) && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
        case Isa::Avx512Bf16: return isa_supported(Isa::Avx512) && f.avx512_bf16 && f.avx512_vnni;
        case Isa::Neon: return f.neon;
    }
    return false;
}

std::vector<Isa> supported_isas() {
    std::vector<Isa> out;
    for (const auto& [isa, name] : kNames)
        if (isa_supported(isa)) out.push_back(isa);
    return out;
}

Isa best_isa() { return supported_isas().back(); }

Isa active_isa() {
    int value = active.load(std::memory_order_acquire);
    if (value < 0) {
        value = static_cast<int>(initial_isa());
        active.store(value, std::memory_order_release);
    }
    return static_cast<Isa>(value);
}

void set_active_isa(Isa isa) {
    if (!isa_supported(isa)) throw Error("cpu", "this CPU does not support the " + std::string(isa_name(isa)) + " kernels");
    active.store(static_cast<int>(isa), std::memory_order_release);
}

}  // namespace oxinfer
