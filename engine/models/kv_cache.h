#pragma once
// The keys and values of one sequence, per layer, laid out [kv head][slot][head_dim] in f32, f16
// or bf16: attention reads a head's keys (and values) in order, so each head's are one contiguous
// stream. Laid out [slot][kv head] instead, a head's rows were 4 KB apart at f32 in Qwen3-0.6B: a
// new page for the prefetchers at every key, and every row in the same few L1 sets. Memory grows
// with the positions used (doubling, up to the context length, each head's rows moved to their
// place in the larger buffer), so a short chat on a 128k-context model takes what it needs, not
// the whole window. It is in huge pages where it spans them (kernels/huge_pages.h), as the weights:
// a layer's keys and values share one buffer, which at 256 positions is a whole huge page for
// many models (Qwen3-0.6B's f32 cache: 1 MB of keys, 1 MB of values). In separate 1 MB buffers
// each 4 KB page faulted on first use, 56 a token there: on a 2-core Zen 5 VM, whose faults cost
// about 11 us, the store of a layer's first use of a position took 31 us against 4.5 us after.
//
// A sliding-window cache (window > 0: each query sees itself and window - 1 keys before it) is a
// ring of window + kMaxStoreTokens slots, so memory stays bounded in long chats: a store of up to
// kMaxStoreTokens positions never overwrites a key the stored queries still see, and the slots
// beyond that let a chat step back up to kMaxStoreTokens positions (regenerate, rejected drafts).

#include "kernels/huge_pages.h"
#include "kernels/ops.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace oxinfer::models {

// The most positions one store() may take (a prefill step).
constexpr int64_t kMaxStoreTokens = 512;

class KvCache {
public:
    KvCache(int64_t layers, int64_t kv_heads, int64_t head_dim, DType dtype, int64_t capacity, int64_t window = 0);

    int64_t capacity() const { return capacity_; }  // the context length
    int64_t size() const { return size_; }          // positions [0, size) hold valid entries
    DType dtype() const { return dtype_; }
    int64_t window() const { return window_; }
    // Goes back to the first `size` positions and returns how many it kept: `size`, or for a ring
    // that no longer holds the window keys before `size`, 0 (everything is evaluated again).
    int64_t truncate(int64_t size);
    void set_size(int64_t size) { size_ = size; }
    // The first key a query at position `query` sees: attention's kv_begin for queries from there.
    int64_t first_visible(int64_t query) const { return window_ > 0 ? std::max<int64_t>(0, query - window_ + 1) : 0; }

    // Makes room for positions [0, end); throws oxinfer::Error past the context length.
    void reserve(int64_t end);
    // Stores `count` positions from `first` of layer `layer`, of kv heads [head, head + heads) (-1:
    // to the last): k and v are [count][kv_heads][head_dim] f32.
    void store(int64_t layer, int64_t first, int64_t count, const float* k, const float* v, int64_t head = 0, int64_t heads = -1);

    kernels::KvCacheView keys(int64_t layer) const { return view(layer, 0); }
    kernels::KvCacheView values(int64_t layer) const { return view(layer, 1); }

    uint64_t bytes_per_position() const;
    uint64_t allocated_bytes() const;

private:
    int64_t row_bytes() const;  // one head's keys or values at one position
    // Keys (half 0) or values (half 1) of a layer: each kv_heads * reserved_ rows.
    std::byte* half(int64_t layer, int index) const;
    kernels::KvCacheView view(int64_t layer, int index) const;

    int64_t kv_heads_, head_dim_;
    DType dtype_;
    int64_t capacity_;
    int64_t window_ = 0, ring_ = 0;  // ring_: slots of a sliding-window cache (0: one per position)
    int64_t size_ = 0;
    int64_t reserved_ = 0;
    std::vector<kernels::HugePageBuffer> layers_;  // each layer's keys, then its values
};

}  // namespace oxinfer::models
