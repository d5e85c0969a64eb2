// The WordPiece model: greedy longest-match-first, continuation pieces with their prefix ("##");
// a word with any part outside the vocabulary, or longer than max_input_chars_per_word
// characters, becomes the unknown token.

#include "components.h"

namespace oxinfer::tokenizer {
namespace {

class WordPiece : public Model {
public:
    WordPiece(std::vector<std::string> vocab, std::string unk, std::string prefix, size_t max_chars)
        : vocab_r_(std::move(vocab)), unk_(std::move(unk)), prefix_(std::move(prefix)), max_chars_(max_chars) {
        vocab_.reserve(vocab_r_.size());
        for (size_t id = 0; id < vocab_r_.size(); ++id) vocab_[vocab_r_[id]] = static_cast<int32_t>(id);
        const auto it = vocab_.find(unk_);
        unk_id_ = it == vocab_.end() ? -1 : it->second;
    }

    void tokenize(std::string_view word, std::vector<int32_t>& ids) const override {
        if (utf8_count(word) > max_chars_) {
            ids.push_back(unk());
            return;
        }
        const size_t first = ids.size();
        std::string candidate;
        size_t start = 0;
        while (start < word.size()) {
            size_t end = word.size();
            int32_t found = -1;
            while (start < end) {
                candidate.clear();
                if (start > 0) candidate = prefix_;
                candidate.append(word.substr(start, end - start));
                const auto it = vocab_.find(candidate);
                if (it != vocab_.end()) {
                    found = it->second;
                    break;
                }
                // Drop the last character.
                size_t back = end - 1;
                while (back > start && (static_cast<unsigned char>(word[back]) & 0xC0) == 0x80) --back;
                end = back;
            }
            if (found < 0) {
                ids.resize(first);
                ids.push_back(unk());
                return;
            }
            ids.push_back(found);
            start = end;
        }
    }

    std::optional<int32_t> token_to_id(std::string_view token) const override {
        const auto it = vocab_.find(token);
        if (it == vocab_.end()) return std::nullopt;
        return it->second;
    }
    const std::string* id_to_token(int32_t id) const override {
        if (id < 0 || static_cast<size_t>(id) >= vocab_r_.size()) return nullptr;
        return &vocab_r_[static_cast<size_t>(id)];
    }
    size_t vocab_size() const override { return vocab_r_.size(); }

private:
    int32_t unk() const {
        if (unk_id_ < 0) throw std::runtime_error("WordPiece unk_token '" + unk_ + "' is not in the vocabulary");
        return unk_id_;
    }

    std::vector<std::string> vocab_r_;
    StringIdMap vocab_;
    std::string unk_, prefix_;
    size_t max_chars_;
    int32_t unk_id_ = -1;
};

}  // namespace

std::unique_ptr<Model> make_wordpiece(std::vector<std::string> vocab, std::string unk_token, std::string prefix,
                                      size_t max_input_chars_per_word) {
    return std::make_unique<WordPiece>(std::move(vocab), std::move(unk_token), std::move(prefix), max_input_chars_per_word);
}

}  // namespace oxinfer::tokenizer
