#include "formats/parsed_tensors.h"

#include <oxinfer/error.h>

#include <limits>
#include <string>

namespace oxinfer {

int64_t TensorInfo::elements() const {
    int64_t count = 1;
    for (int64_t dim : shape) count *= dim;
    return count;
}

void validate_tensor_bounds(const TensorInfo& tensor, std::span<const std::byte> file, const std::string& subject) {
    const std::string what = "tensor '" + tensor.name + "'";
    uint64_t elements = 1;
    for (int64_t dim : tensor.shape) {
        if (dim < 0) throw Error(subject, what + " has a negative dimension " + std::to_string(dim));
        if (dim != 0 && elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(dim))
            throw Error(subject, what + " has a shape whose element count overflows");
        elements *= static_cast<uint64_t>(dim);
    }
    const DTypeTraits& traits = dtype_traits(tensor.dtype);
    if (traits.block_elements > 1 && !tensor.shape.empty() && tensor.shape.back() % traits.block_elements != 0)
        throw Error(subject, what + " has rows of " + std::to_string(tensor.shape.back()) + " values, not a multiple of the " +
                                 std::string(traits.name) + " block size " + std::to_string(traits.block_elements));
    const auto expected = dtype_bytes(tensor.dtype, elements);
    if (!expected) throw Error(subject, what + " has a byte size that overflows");
    if (tensor.contiguous() && *expected != tensor.nbytes)
        throw Error(subject, what + " holds " + std::to_string(tensor.nbytes) + " bytes but its shape and " + std::string(traits.name) +
                                 " type need " + std::to_string(*expected));
    const auto* begin = file.data();
    const auto* end = file.data() + file.size();
    if (tensor.nbytes > 0 && (tensor.data < begin || tensor.data > end || tensor.nbytes > static_cast<uint64_t>(end - tensor.data)))
        throw Error(subject, what + " data lies outside the file (" + std::to_string(file.size()) + " bytes)");
}

}  // namespace oxinfer
