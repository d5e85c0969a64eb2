#pragma once
// The kernel levels the tests check against the scalar reference: every level this CPU runs
// natively, then, on x86 CPUs with AVX2, the AVX-512 levels they lack, built from the same sources
// on SIMDe's intrinsics over AVX2 (tests/CMakeLists.txt, helpers/avx512_emulation.h). Emulated
// tables start from the native table below them, as ops_table()/matmul_table() build theirs.

#include "kernels/isa.h"
#include "kernels/matmul_table.h"
#include "kernels/ops_table.h"

#include <string>
#include <vector>

#if OXINFER_AVX512_EMULATION
namespace oxinfer::kernels {
void fill_ops_avx512_emulated(OpsTable& table);
void fill_matmul_avx512_emulated(MatmulTable& table);
void fill_matmul_avx512bf16_emulated(MatmulTable& table);
}  // namespace oxinfer::kernels
#endif

namespace oxinfer::test {

struct KernelLevel {
    std::string name;  // "avx2", "avx512 (emulated)"
    Isa isa;           // the level it is
    bool emulated;
    const kernels::OpsTable* ops;
    const kernels::MatmulTable* matmul;
};

inline const std::vector<KernelLevel>& kernel_levels() {
    static const std::vector<KernelLevel> levels = [] {
        std::vector<KernelLevel> out;
        for (Isa isa : supported_isas())
            out.push_back({std::string(isa_name(isa)), isa, false, &kernels::ops_table(isa), &kernels::matmul_table(isa)});
#if OXINFER_AVX512_EMULATION
        static kernels::OpsTable ops512;
        static kernels::MatmulTable matmul512, matmul512bf16;
        if (!isa_supported(Isa::Avx2)) return out;  // the emulation itself runs on AVX2
        if (!isa_supported(Isa::Avx512)) {
            ops512 = kernels::ops_table(Isa::Avx2);
            kernels::fill_ops_avx512_emulated(ops512);
            matmul512 = kernels::matmul_table(Isa::Avx2);
            kernels::fill_matmul_avx512_emulated(matmul512);
            out.push_back({"avx512 (emulated)", Isa::Avx512, true, &ops512, &matmul512});
        }
        if (!isa_supported(Isa::Avx512Bf16)) {
            const bool native512 = isa_supported(Isa::Avx512);
            matmul512bf16 = native512 ? kernels::matmul_table(Isa::Avx512) : matmul512;
            kernels::fill_matmul_avx512bf16_emulated(matmul512bf16);
            out.push_back({"avx512bf16 (emulated)", Isa::Avx512Bf16, true, native512 ? &kernels::ops_table(Isa::Avx512) : &ops512,
                           &matmul512bf16});
        }
#endif
        return out;
    }();
    return levels;
}

// "scalar, avx2, avx512 (emulated), ...", for the tests' first log line.
inline std::string kernel_level_names() {
    std::string names;
    for (const KernelLevel& level : kernel_levels()) names += (names.empty() ? "" : ", ") + level.name;
    return names;
}

}  // namespace oxinfer::test
