// oxinfer tensor FILE_OR_FOLDER NAME --out OUT.npy

#include "args.h"
#include "commands.h"

#include <oxinfer/checkpoint.h>
#include <oxinfer/hf_cache.h>
#include <oxinfer/npy.h>
#include <oxinfer/profiler.h>

#include <cstdio>

namespace oxinfer::cli {

int run_tensor(const std::vector<std::string>& argv) {
    auto options = common_options();
    options.push_back({"out", "o", "OUT.npy", "where to write the float32 array (required)"});
    Args args("tensor", "FILE_OR_FOLDER NAME --out OUT.npy",
              "Writes one tensor, converted or dequantised to float32, as a NumPy .npy file in row-major order\n"
              "(GGUF shapes reversed, so a [out, in] weight is (out, in)).",
              options);
    args.parse(argv);
    if (args.help_requested()) {
        std::fputs(args.help().c_str(), stdout);
        return 0;
    }
    const std::string out = args.required("out");
    const auto checkpoint = Checkpoint::open(hf::resolve_model(args.positional(0, "FILE_OR_FOLDER")));  // or a cached repo id
    const TensorInfo& tensor = checkpoint->get(args.positional(1, "NAME"));
    std::vector<float> values;
    {
        profiler::Scope scope("dequantize");
        values = checkpoint->read_f32(tensor);
    }
    profiler::Scope scope("write npy");
    write_npy_f32(out, tensor.shape, values);
    return 0;
}

}  // namespace oxinfer::cli
