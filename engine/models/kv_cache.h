#pragma once
// The keys and values of one sequence, per layer, laid out [position][kv head][head_dim] in f32,
// f16 or bf16. Memory grows with the positions used (doubling, up to the context length), so a
// short chat on a 128k-context model takes what it needs, not the whole window.

#include "kernels/ops.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace oxinfer::models {

class KvCache {
public:
    KvCache(int64_t layers, int64_t kv_heads, int64_t head_dim, DType dtype, int64_t capacity);

    int64_t capacity() const { return capacity_; }  // the context length
    int64_t size() const { return size_; }          // positions [0, size) hold valid entries
    DType dtype() const { return dtype_; }
    void truncate(int64_t size);
    void set_size(int64_t size) { size_ = size; }

    // Makes room for positions [0, end); throws oxinfer::Error past the context length.
    void reserve(int64_t end);
    // Stores `count` positions from `first` of layer `layer`: k and v are [count][kv_heads][head_dim] f32.
    void store(int64_t layer, int64_t first, int64_t count, const float* k, const float* v);

    kernels::KvCacheView keys(int64_t layer) const { return view(keys_[static_cast<size_t>(layer)]); }
    kernels::KvCacheView values(int64_t layer) const { return view(values_[static_cast<size_t>(layer)]); }

    uint64_t bytes_per_position() const;
    uint64_t allocated_bytes() const;

private:
    kernels::KvCacheView view(const std::vector<std::byte>& data) const;

    int64_t kv_heads_, head_dim_;
    DType dtype_;
    int64_t capacity_;
    int64_t size_ = 0;
    int64_t reserved_ = 0;
    std::vector<std::vector<std::byte>> keys_, values_;
};

}  // namespace oxinfer::models
