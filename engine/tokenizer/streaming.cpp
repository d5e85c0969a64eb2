// Streaming detokenization: each new id is decoded in a window that starts at the previous
// emission's first token, and only the text past the window's already-emitted part is returned
// (the approach of Hugging Face's TextStreamer and vLLM's incremental detokenizer). Decoding the
// same first token in both texts keeps decoder rules that depend on position (Metaspace's or
// Strip's leading space, WordPiece's joining) identical to a decode of the whole sequence, and
// text that ends in U+FFFD (a character whose bytes have not all arrived) is held back.

#include <oxinfer/tokenizer.h>

#include "components.h"

namespace oxinfer {

namespace {

bool is_byte_token(const std::string& token) {
    auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); };
    return token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>' && hex(token[3]) && hex(token[4]);
}

bool ends_with_replacement(const std::string& text) {
    return text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

std::vector<int32_t> slice(const std::vector<int32_t>& ids, size_t begin, size_t end) {
    return std::vector<int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(begin), ids.begin() + static_cast<std::ptrdiff_t>(end));
}

}  // namespace

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}

void StreamingDecoder::reset() {
    ids_.clear();
    prefix_offset_ = read_offset_ = emitted_bytes_ = 0;
}

std::string StreamingDecoder::feed(int32_t id) {
    ids_.push_back(id);
    // A byte-fallback token ("<0xE4>") joins the byte tokens that follow it: decoded together they
    // may form one character, or, when they are not valid UTF-8, one U+FFFD per byte, which also
    // changes the text of the bytes before. Nothing is final until a token of another kind arrives.
    if (const auto token = tokenizer_.id_to_token(id); token && is_byte_token(*token)) return {};
    const std::string prefix = tokenizer_.decode(slice(ids_, prefix_offset_, read_offset_), skip_special_);
    const std::string text = tokenizer_.decode(slice(ids_, prefix_offset_, ids_.size()), skip_special_);
    if (text.size() <= prefix.size() || ends_with_replacement(text) || text.compare(0, prefix.size(), prefix) != 0) return {};
    std::string delta = text.substr(prefix.size());
    prefix_offset_ = read_offset_;
    read_offset_ = ids_.size();
    emitted_bytes_ += delta.size();
    return delta;
}

std::string StreamingDecoder::finish() {
    const std::string full = tokenizer_.decode(ids_, skip_special_);
    std::string rest = emitted_bytes_ < full.size() ? full.substr(emitted_bytes_) : std::string();
    emitted_bytes_ += rest.size();
    prefix_offset_ = read_offset_ = ids_.size();
    return rest;
}

}  // namespace oxinfer
