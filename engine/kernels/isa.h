#pragma once
// Run-time choice of the CPU instruction set the kernels use. One binary runs everywhere: the
// level is the best the CPU (and OS) supports, or a lower one forced with OXINFER_CPU=scalar|
// avx2|avx512|avx512bf16|neon (tests and benchmarks use it). Asking for a level the CPU lacks is
// an error, never an "Illegal instruction".

#include <optional>
#include <string_view>
#include <vector>

namespace oxinfer {

enum class Isa {
    Scalar,      // portable C++, the reference every other level is checked against
    Avx2,        // AVX2 + FMA + F16C
    Avx512,      // AVX-512 F/BW/VL/DQ
    Avx512Bf16,  // AVX-512 with BF16 (vdpbf16ps) and VNNI (vpdpbusd)
    Neon,        // Arm64 Advanced SIMD (+ dotprod where present)
};

std::string_view isa_name(Isa isa);
std::optional<Isa> isa_from_name(std::string_view name);

// Whether this CPU can run kernels of that level (and this build contains them).
bool isa_supported(Isa isa);
// Every supported level, lowest first (always starts with Scalar).
std::vector<Isa> supported_isas();
Isa best_isa();

// The level in use: OXINFER_CPU if set (checked at first use), else best_isa().
Isa active_isa();
// Forces a level (tests, benchmarks); throws oxinfer::Error if the CPU does not support it.
void set_active_isa(Isa isa);

}  // namespace oxinfer
