#include "models/kv_cache.h"

#include <oxinfer/error.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace oxinfer::models {
namespace {

int64_t element_bytes(DType dtype) { return dtype == DType::F32 ? 4 : 2; }

void convert(DType dtype, const float* src, std::byte* dst, int64_t n) {
    switch (dtype) {
        case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); break;
        case DType::F16: kernels::f32_to_f16_row(src, reinterpret_cast<uint16_t*>(dst), n); break;
        default: kernels::f32_to_bf16_row(src, reinterpret_cast<uint16_t*>(dst), n); break;
    }
}

}  // namespace

KvCache::KvCache(int64_t layers, int64_t kv_heads, int64_t head_dim, DType dtype, int64_t capacity, int64_t window)
    : kv_heads_(kv_heads), head_dim_(head_dim), dtype_(dtype), capacity_(capacity), window_(window),
      ring_(window > 0 && window + kMaxStoreTokens < capacity ? window + kMaxStoreTokens : 0),
      layers_(static_cast<size_t>(layers)) {
    if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
        throw Error("kv cache", "type " + std::string(dtype_name(dtype)) + " is not supported (f32, f16, bf16 are)");
}

uint64_t KvCache::bytes_per_position() const {
    return 2 * layers_.size() * static_cast<uint64_t>(kv_heads_ * row_bytes());
}

uint64_t KvCache::allocated_bytes() const { return bytes_per_position() * static_cast<uint64_t>(reserved_); }

int64_t KvCache::truncate(int64_t size) {
    if (size >= size_) return size_;
    // A full ring holds positions [size_ - ring_, size_); the queries after `size` need the window
    // before it (a draft model's query at `size` one key more: position size - window).
    const bool overwritten = ring_ > 0 && size_ > ring_ && size > 0 && size - window_ < size_ - ring_;
    size_ = overwritten ? 0 : size;
    return size_;
}

void KvCache::reserve(int64_t end) {
    if (end > capacity_)
        throw Error("context", std::to_string(end) + " tokens do not fit in the context length of " + std::to_string(capacity_) +
                                   " (--ctx sets it)");
    const int64_t slots = ring_ > 0 ? std::min(end, ring_) : end;
    if (slots <= reserved_) return;
    const int64_t grown = std::min(ring_ > 0 ? ring_ : capacity_, std::max({slots, reserved_ * 2, int64_t{256}}));
    const int64_t row_bytes = this->row_bytes();  // kept in a local: the loops below use it often
    const size_t kept = static_cast<size_t>(reserved_ * row_bytes);  // of each head
    for (kernels::HugePageBuffer& layer : layers_) {
        kernels::HugePageBuffer bigger(static_cast<size_t>(2 * kv_heads_ * grown * row_bytes));
        if (kept)
            for (int64_t head = 0; head < 2 * kv_heads_; ++head)  // the keys' heads, then the values'
                std::memcpy(bigger.data() + head * grown * row_bytes, layer.data() + head * reserved_ * row_bytes, kept);
        layer = std::move(bigger);
    }
    reserved_ = grown;
}

void KvCache::store(int64_t layer, int64_t first, int64_t count, const float* k, const float* v, int64_t head, int64_t heads) {
    const int64_t head_end = heads < 0 ? kv_heads_ : head + heads;
    if (ring_ > 0 && count > kMaxStoreTokens) throw Error("kv cache", "a store of more than kMaxStoreTokens positions into a ring");
    const int64_t row_bytes = this->row_bytes();  // kept in a local: the loops below use it often
    std::byte* keys = half(layer, 0);
    std::byte* values = half(layer, 1);
    for (int64_t t = 0; t < count; ++t) {
        const int64_t slot = ring_ > 0 ? (first + t) % ring_ : first + t;
        for (int64_t h = head; h < head_end; ++h) {
            const int64_t offset = (h * reserved_ + slot) * row_bytes;
            const int64_t source = (t * kv_heads_ + h) * head_dim_;
            convert(dtype_, k + source, keys + offset, head_dim_);
            convert(dtype_, v + source, values + offset, head_dim_);
        }
    }
}

int64_t KvCache::row_bytes() const { return head_dim_ * element_bytes(dtype_); }

std::byte* KvCache::half(int64_t layer, int index) const {
    return layers_[static_cast<size_t>(layer)].data() + index * kv_heads_ * reserved_ * row_bytes();
}

kernels::KvCacheView KvCache::view(int64_t layer, int index) const {
    kernels::KvCacheView view;
    view.dtype = dtype_;
    view.data = half(layer, index);
    view.position_stride = row_bytes();
    view.head_stride = reserved_ * view.position_stride;
    view.ring_size = ring_;
    return view;
}

}  // namespace oxinfer::models
