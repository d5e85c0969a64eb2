#include "models/weights.h"

#include "formats/ggml_quantize.h"
#include "kernels/interleave.h"
#include "kernels/isa.h"
#include "kernels/matmul_table.h"
#include "kernels/thread_pool.h"

#include <oxinfer/error.h>
#include <oxinfer/tensor_names.h>

#include <algorithm>
#include <memory>

namespace oxinfer::models {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string text = "(";
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

WeightStore::WeightStore(const Checkpoint& checkpoint, const ModelLoadSettings& settings, ThreadPool& pool)
    : checkpoint_(checkpoint), settings_(settings), pool_(pool) {
    if (settings_.convert_weights && !can_quantize(*settings_.convert_weights))
        throw Error(std::string(dtype_name(*settings_.convert_weights)), "weights cannot be converted to this type at load");
    if (is_gguf()) {
        const auto& meta = checkpoint.metadata();
        if (auto it = meta.find("general.architecture"); it != meta.end() && it->is_string()) gguf_arch_ = it->get<std::string>();
    }
}

const TensorInfo* WeightStore::find(const std::string& hf_name) const {
    if (!is_gguf()) return checkpoint_.find(hf_name);
    const auto gguf_name = gguf_tensor_name(hf_name, gguf_arch_);
    return gguf_name ? checkpoint_.find(*gguf_name) : nullptr;
}

const TensorInfo& WeightStore::get(const std::string& hf_name) const {
    if (const TensorInfo* tensor = find(hf_name)) return *tensor;
    const auto gguf_name = is_gguf() ? gguf_tensor_name(hf_name, gguf_arch_) : std::nullopt;
    throw Error(checkpoint_.path().string(), "has no tensor '" + (gguf_name ? *gguf_name : hf_name) + "'" +
                                                 (gguf_name ? " (Hugging Face '" + hf_name + "')" : ""));
}

kernels::WeightMatrix WeightStore::matrix(const TensorInfo& tensor, int64_t rows, int64_t cols) {
    return shaped_matrix(tensor, rows, cols, true);
}

kernels::WeightMatrix WeightStore::embedding(const TensorInfo& tensor, int64_t rows, int64_t cols, bool also_head) {
    return shaped_matrix(tensor, rows, cols, also_head);
}

void WeightStore::check_shape(const TensorInfo& tensor, int64_t rows, int64_t cols) const {
    if (tensor.shape != std::vector<int64_t>{rows, cols})
        throw Error(checkpoint_.path().string(), "tensor '" + tensor.name + "' has shape " + shape_text(tensor.shape) +
                                                     ", the config says " + shape_text({rows, cols}));
}

kernels::WeightMatrix WeightStore::shaped_matrix(const TensorInfo& tensor, int64_t rows, int64_t cols, bool may_repack) {
    check_shape(tensor, rows, cols);
    return adopt(kernels::weight_matrix(tensor), tensor.name, may_repack);
}

kernels::WeightMatrix WeightStore::stacked_matrix(const TensorInfo& tensor, int64_t index, int64_t rows, int64_t cols, int64_t first_row,
                                                  int64_t row_count) {
    if (tensor.shape.size() != 3 || tensor.shape[1] != rows || tensor.shape[2] != cols || index >= tensor.shape[0])
        throw Error(checkpoint_.path().string(), "tensor '" + tensor.name + "' has shape " + shape_text(tensor.shape) +
                                                     ", expected (experts, " + std::to_string(rows) + ", " + std::to_string(cols) + ")");
    if (!tensor.contiguous()) throw Error(checkpoint_.path().string(), "tensor '" + tensor.name + "' is a strided view");
    if (row_count < 0) row_count = rows;
    kernels::WeightMatrix w;
    w.dtype = tensor.dtype;
    w.rows = row_count;
    w.cols = cols;
    const auto row_bytes = dtype_bytes(tensor.dtype, static_cast<uint64_t>(cols));
    if (!row_bytes) throw Error(checkpoint_.path().string(), "tensor '" + tensor.name + "' rows are not whole blocks");
    w.row_bytes = static_cast<int64_t>(*row_bytes);
    w.data = tensor.data + (index * rows + first_row) * w.row_bytes;
    return adopt(w, tensor.name);
}

kernels::WeightMatrix WeightStore::adopt(kernels::WeightMatrix w, const std::string& name, bool may_repack) {
    w.bf16_activations = settings_.bf16_activations;  // read only for bf16 matrices
    const Holding holding = this->holding(w.dtype, may_repack);
    if (holding.type == w.dtype) {
        if (!can_convert_to_f32(w.dtype))
            throw Error(checkpoint_.path().string(), "tensor '" + name + "' has unsupported type " + std::string(dtype_name(w.dtype)));
        matrix_types_.push_back(w.dtype);
        if (holding.copied) return repacked(w, holding.group_rows);
        mapped_bytes_ += static_cast<uint64_t>(w.rows * w.row_bytes);
        return w;
    }
    const DType target = holding.type;
    const auto row_bytes = dtype_bytes(target, static_cast<uint64_t>(w.cols));
    if (!row_bytes)
        throw Error(checkpoint_.path().string(), "tensor '" + name + "' cannot be converted to " + std::string(dtype_name(target)) + ": rows of " +
                                                     std::to_string(w.cols) + " values are not whole " +
                                                     std::to_string(dtype_traits(target).block_elements) + "-value blocks");
    // Converted rows that are to be interleaved go through a buffer of their own first.
    const size_t bytes = static_cast<size_t>(w.rows) * *row_bytes;
    const bool interleave = holding.group_rows > 0;
    std::vector<std::byte> before_interleaving(interleave ? bytes : 0);
    std::byte* out = interleave ? before_interleaving.data() : owned_.allocate(bytes);
    pool_.parallel_for(w.rows, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> row(static_cast<size_t>(w.cols));
        for (int64_t r = begin; r < end; ++r) {
            convert_to_f32(w.dtype, w.data + r * w.row_bytes, row.data(), w.cols);
            quantize_row(target, row.data(), out + r * static_cast<int64_t>(*row_bytes), w.cols);
        }
    });
    kernels::WeightMatrix converted = w;
    converted.dtype = target;
    converted.row_bytes = static_cast<int64_t>(*row_bytes);
    converted.data = out;
    matrix_types_.push_back(target);
    if (interleave) return repacked(converted, holding.group_rows);
    owned_bytes_ += bytes;
    return converted;
}

WeightStore::Holding WeightStore::holding(DType source, bool may_repack) const {
    const DType type = settings_.convert_weights.value_or(source);
    const bool repack = may_repack && settings_.repack;
    const kernels::MatmulTable& table = kernels::matmul_table(active_isa());
    // Interleaved where the level has kernels for the type's layout.
    const bool interleaved = repack && kernels::has_interleaved_layout(type) && kernels::interleaved_tile(table, type);
    return {type, repack || type != source, interleaved ? kernels::interleaved_group_rows(table, type) : 0};
}

kernels::WeightMatrix WeightStore::repacked(const kernels::WeightMatrix& w, int64_t group_rows) {
    const size_t bytes = static_cast<size_t>(w.rows * w.row_bytes);
    std::byte* out = owned_.allocate(bytes);
    owned_bytes_ += bytes;
    // Also a matrix of fewer rows than a group is interleaved (all of it plain rows then), so that
    // every matrix of the type takes the same arithmetic (int8 activations in the prefill).
    if (group_rows > 0) return kernels::interleave_rows(w, group_rows, out, pool_);
    // Copied by the threads that will read it, each its own rows: its pages are then near them.
    pool_.parallel_for(w.rows, 1, [&](int64_t begin, int64_t end) {
        std::copy(w.data + begin * w.row_bytes, w.data + end * w.row_bytes, out + begin * w.row_bytes);
    });
    kernels::WeightMatrix copy = w;
    copy.data = out;
    return copy;
}

std::vector<kernels::WeightMatrix> WeightStore::matrix_columns(const TensorInfo& tensor, int64_t rows, int64_t cols,
                                                               const std::vector<int64_t>& bounds) {
    check_shape(tensor, rows, cols);
    if (!copies_matrix(tensor)) throw Error(checkpoint_.path().string(), "tensor '" + tensor.name + "' is used in place, not split by columns");
    if (bounds.size() < 2 || bounds.front() != 0 || bounds.back() != cols)
        throw Error(checkpoint_.path().string(), "column ranges of '" + tensor.name + "' must cover it from 0 to " + std::to_string(cols));
    const kernels::WeightMatrix whole = kernels::weight_matrix(tensor);
    const int64_t block = dtype_traits(whole.dtype).block_elements;
    for (size_t i = 0; i + 1 < bounds.size(); ++i)
        if (bounds[i] >= bounds[i + 1] || bounds[i] % block != 0)
            throw Error(checkpoint_.path().string(), "column ranges of '" + tensor.name + "' must be non-empty and whole " +
                                                         std::string(dtype_name(whole.dtype)) + " blocks");
    std::vector<kernels::WeightMatrix> parts;
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
        // The range's plain rows, which adopt() then copies as it copies a whole matrix; gathered
        // by the threads in turn, rows apart, into memory not first zeroed.
        const int64_t row_bytes = static_cast<int64_t>(*dtype_bytes(whole.dtype, static_cast<uint64_t>(bounds[i + 1] - bounds[i])));
        const std::unique_ptr<std::byte[]> plain(new std::byte[static_cast<size_t>(rows * row_bytes)]);
        pool_.parallel_for(rows, 1, [&](int64_t begin, int64_t end) {
            kernels::copy_columns(kernels::row_range(whole, begin, end), bounds[i], bounds[i + 1], plain.get() + begin * row_bytes);
        });
        kernels::WeightMatrix part = whole;
        part.cols = bounds[i + 1] - bounds[i];
        part.row_bytes = row_bytes;
        part.data = plain.get();
        parts.push_back(adopt(part, tensor.name));
    }
    // One tensor, one vote in matrix_type().
    matrix_types_.resize(matrix_types_.size() - (parts.size() - 1));
    return parts;
}

Linear WeightStore::linear(const std::string& prefix, int64_t rows, int64_t cols, bool with_bias) {
    Linear linear;
    linear.weight = matrix(get(prefix + ".weight"), rows, cols);
    if (with_bias) linear.bias = vector(prefix + ".bias", rows);
    return linear;
}

std::vector<float> WeightStore::vector(const std::string& hf_name, int64_t size) const {
    const TensorInfo& tensor = get(hf_name);
    if (tensor.elements() != size)
        throw Error(checkpoint_.path().string(), "tensor '" + tensor.name + "' has shape " + shape_text(tensor.shape) + ", expected " +
                                                     std::to_string(size) + " values");
    return checkpoint_.read_f32(tensor);
}

std::string WeightStore::matrix_type() const {
    if (matrix_types_.empty()) return "none";
    // The type of most matrices (GGUF "Q4_K_M" files mix in Q6_K for a few).
    std::vector<std::pair<uint64_t, DType>> counts;
    for (DType type : matrix_types_) {
        auto it = std::find_if(counts.begin(), counts.end(), [&](auto& c) { return c.second == type; });
        if (it == counts.end()) counts.push_back({1, type});
        else ++it->first;
    }
    return std::string(dtype_name(std::max_element(counts.begin(), counts.end())->second));
}

}  // namespace oxinfer::models
