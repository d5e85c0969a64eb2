#pragma once
// Bounds-checked little-endian reading of untrusted bytes. Every read that would pass the end
// throws oxinfer::Error naming the file and the offset: parsers never index raw pointers.

#include <oxinfer/error.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace oxinfer {

static_assert(std::endian::native == std::endian::little, "oxinfer reads little-endian files on little-endian hosts only");

class ByteReader {
public:
    ByteReader(std::span<const std::byte> data, std::string subject)
        : data_(data), subject_(std::move(subject)) {}

    std::size_t offset() const { return offset_; }
    std::size_t size() const { return data_.size(); }
    std::size_t remaining() const { return data_.size() - offset_; }
    bool at_end() const { return offset_ == data_.size(); }
    const std::string& subject() const { return subject_; }

    template <class T>
    T read() {
        static_assert(std::is_trivially_copyable_v<T>);
        T value;
        std::memcpy(&value, take(sizeof(T)).data(), sizeof(T));
        return value;
    }

    std::span<const std::byte> take(std::size_t count) {
        if (count > remaining())
            fail("truncated: " + std::to_string(count) + " bytes needed at offset " + std::to_string(offset_) +
                 " but the data ends at " + std::to_string(data_.size()));
        auto out = data_.subspan(offset_, count);
        offset_ += count;
        return out;
    }

    std::string_view take_string(std::size_t count) {
        auto bytes = take(count);
        return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
    }

    void seek(std::size_t offset) {
        if (offset > data_.size())
            fail("offset " + std::to_string(offset) + " is past the end of the data (" + std::to_string(data_.size()) + " bytes)");
        offset_ = offset;
    }

    [[noreturn]] void fail(const std::string& problem) const { throw Error(subject_, problem); }

private:
    std::span<const std::byte> data_;
    std::string subject_;
    std::size_t offset_ = 0;
};

}  // namespace oxinfer
