// The prefetch policy of block-quantised rows for this CPU (weight_prefetch.h), chosen once.

#include <immintrin.h>

#include "kernels/x86/weight_prefetch.h"

#include <oxinfer/platform.h>

namespace oxinfer::kernels {

// Measured on one Intel (a Xeon VM with AVX-512) and one AMD (an EPYC Zen 3 VM) machine; other
// Intel generations follow the Xeon untested, other vendors the AMD policy, under which the page
// bursts were first measured.
const BlockPrefetch block_prefetch =
    platform().cpu_vendor == "GenuineIntel" ? BlockPrefetch{4096, false} : BlockPrefetch{kPrefetchBytes, true};

}  // namespace oxinfer::kernels
