#pragma once
// A model's weights as the forward pass uses them: matrices in their stored type, read in place
// from the mapped checkpoint, or converted once at load time (`--quant`) or repacked for the
// kernels (ModelLoadSettings::repack) into memory the store owns. Tensors are asked for by their
// Hugging Face names; GGUF checkpoints are looked up under llama.cpp's names
// (oxinfer/tensor_names.h).

#include "kernels/huge_pages.h"
#include "kernels/matmul.h"

#include <oxinfer/checkpoint.h>

#include <optional>
#include <string>
#include <vector>

namespace oxinfer {
class ThreadPool;
}

namespace oxinfer::models {

struct Linear {
    kernels::WeightMatrix weight;
    std::vector<float> bias;  // empty when the layer has none
};

// How a model's weights are to be held, from LoadOptions.
struct ModelLoadSettings {
    // Any type quantize_row writes (F32, F16, BF16, Q8_0, Q4_0, Q4_K) to convert every matrix at
    // load (--quant); nullopt keeps them as stored.
    std::optional<DType> convert_weights;
    // bf16 matrices may take bf16-rounded activations in the GEMM (--bf16-activations,
    // kernels::WeightMatrix::bf16_activations).
    bool bf16_activations = false;
    // Matrices are copied at load into huge pages (kernels/huge_pages.h), Q4_K and Q8_0 ones in
    // the interleaved layout (kernels/interleave.h) when the active instruction-set level has
    // kernels for it; the copy is owned memory of the same size, read instead of the mapped file.
    bool repack = false;
};

class WeightStore {
public:
    WeightStore(const Checkpoint& checkpoint, const ModelLoadSettings& settings, ThreadPool& pool);

    const Checkpoint& checkpoint() const { return checkpoint_; }
    bool is_gguf() const { return checkpoint_.format() == CheckpointFormat::Gguf; }

    // The tensor stored under a Hugging Face name (or its GGUF name); null when absent.
    const TensorInfo* find(const std::string& hf_name) const;
    const TensorInfo& get(const std::string& hf_name) const;  // throws naming the checkpoint

    // "<prefix>.weight" (and "<prefix>.bias" when with_bias) as a matrix of `rows` x `cols`.
    Linear linear(const std::string& prefix, int64_t rows, int64_t cols, bool with_bias = false);
    // Matrix `index` of a 3-D stack [count, rows, cols] (fused MoE experts), or `row_count` of its
    // rows from `first_row` (one half of a fused gate_up_proj).
    kernels::WeightMatrix stacked_matrix(const TensorInfo& tensor, int64_t index, int64_t rows, int64_t cols, int64_t first_row = 0,
                                         int64_t row_count = -1);
    // A 2-D tensor as a matrix of the expected shape (converted when the store converts).
    kernels::WeightMatrix matrix(const TensorInfo& tensor, int64_t rows, int64_t cols);
    // An embedding table: each token reads one row, so it stays mapped, not copied, unless it is
    // also the LM head, which the repacked copy speeds up as it does the other matrices.
    kernels::WeightMatrix embedding(const TensorInfo& tensor, int64_t rows, int64_t cols, bool also_head);
    // A 1-D tensor of `size` values as float32 (norm weights, biases).
    std::vector<float> vector(const std::string& hf_name, int64_t size) const;

    // A 2-D tensor as the matrices of its column ranges [bounds[i], bounds[i + 1]) (bounds from 0
    // to cols, whole blocks of stored_type), each with every row, copied into the store as matrix()
    // copies (converted, repacked): only for a tensor the store copies (copies_matrix).
    std::vector<kernels::WeightMatrix> matrix_columns(const TensorInfo& tensor, int64_t rows, int64_t cols, const std::vector<int64_t>& bounds);
    // How matrix() will hold a tensor: whether it copies it into owned memory (converted or
    // repacked) rather than using it in place; its type then; and the rows of its interleaved
    // groups (0: plain rows).
    bool copies_matrix(const TensorInfo& tensor) const { return holding(tensor.dtype, true).copied; }
    DType stored_type(const TensorInfo& tensor) const { return holding(tensor.dtype, true).type; }
    int64_t stored_group_rows(const TensorInfo& tensor) const { return holding(tensor.dtype, true).group_rows; }

    uint64_t mapped_bytes() const { return mapped_bytes_; }  // matrices used in place
    uint64_t owned_bytes() const { return owned_bytes_; }    // matrices converted or repacked at load
    // The type most matrices have ("q4_k"; GGUF Q4_K_M files mix in a few q6_k).
    std::string matrix_type() const;

private:
    void check_shape(const TensorInfo& tensor, int64_t rows, int64_t cols) const;  // throws naming the checkpoint
    // A 2-D tensor checked against the expected shape, then adopted.
    kernels::WeightMatrix shaped_matrix(const TensorInfo& tensor, int64_t rows, int64_t cols, bool may_repack);
    kernels::WeightMatrix adopt(kernels::WeightMatrix w, const std::string& name, bool may_repack = true);
    // What adopt() makes of a matrix of type `source`, the one rule for it and for the queries above.
    struct Holding {
        DType type;          // converted to, or the source's
        bool copied;         // converted or repacked into owned memory, not read in place
        int64_t group_rows;  // of its interleaved layout; 0: plain rows
    };
    Holding holding(DType source, bool may_repack) const;
    // w copied into the store's huge pages, interleaved in groups of group_rows (0: plain rows).
    kernels::WeightMatrix repacked(const kernels::WeightMatrix& w, int64_t group_rows);

    const Checkpoint& checkpoint_;
    ModelLoadSettings settings_;
    ThreadPool& pool_;
    std::string gguf_arch_;
    kernels::HugePageArena owned_;
    uint64_t mapped_bytes_ = 0, owned_bytes_ = 0;
    std::vector<DType> matrix_types_;
};

}  // namespace oxinfer::models
