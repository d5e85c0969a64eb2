// Added tokens, matched before the model as Hugging Face's AddedVocabulary: leftmost-longest
// matches, first of the tokens that are not normalized (on the raw input), then of the normalized
// ones (on each normalized part), with single_word, lstrip and rstrip.

#include "components.h"

namespace oxinfer::tokenizer {

int32_t AddedVocabulary::Trie::child(int32_t node, unsigned char c) const {
    for (const auto& [label, target] : next[static_cast<size_t>(node)])
        if (label == c) return target;
    return -1;
}

size_t AddedVocabulary::Trie::longest(std::string_view text, size_t pos, int32_t& index) const {
    size_t best = 0;
    int32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
        node = child(node, static_cast<unsigned char>(text[i]));
        if (node < 0) break;
        if (value[static_cast<size_t>(node)] >= 0) {
            best = i + 1 - pos;
            index = value[static_cast<size_t>(node)];
        }
    }
    return best;
}

void AddedVocabulary::add(AddedToken token) {
    if (token.content.empty()) return;
    const auto existing = by_content_.find(token.content);
    if (existing != by_content_.end()) {
        const AddedToken& old = tokens_[by_id_.at(existing->second)];
        if (old.id == token.id && old.special == token.special && old.normalized == token.normalized && old.lstrip == token.lstrip &&
            old.rstrip == token.rstrip && old.single_word == token.single_word)
            return;
    }
    by_content_[token.content] = token.id;
    if (token.special) special_.insert(token.content);
    max_id_ = std::max(max_id_, token.id);
    const auto slot = by_id_.find(token.id);
    if (slot != by_id_.end()) {
        tokens_[slot->second] = std::move(token);
    } else {
        by_id_[token.id] = tokens_.size();
        tokens_.push_back(std::move(token));
    }
}

void AddedVocabulary::build(Trie& trie, const std::vector<std::pair<std::string, int32_t>>& entries) {
    trie.next.assign(1, {});
    trie.value.assign(1, -1);
    std::fill(std::begin(trie.first_byte), std::end(trie.first_byte), false);
    for (const auto& [key, index] : entries) {
        if (key.empty()) continue;
        int32_t node = 0;
        for (unsigned char c : key) {
            int32_t target = trie.child(node, c);
            if (target < 0) {
                target = static_cast<int32_t>(trie.value.size());
                trie.next[static_cast<size_t>(node)].emplace_back(c, target);
                trie.next.emplace_back();
                trie.value.push_back(-1);
            }
            node = target;
        }
        trie.value[static_cast<size_t>(node)] = index;
        trie.first_byte[static_cast<unsigned char>(key[0])] = true;
    }
}

void AddedVocabulary::finalize(const Normalizer* normalizer) {
    normalized_form_.clear();
    std::vector<std::pair<std::string, int32_t>> raw, normalized;
    for (size_t i = 0; i < tokens_.size(); ++i) {
        const AddedToken& token = tokens_[i];
        // A content that was re-assigned to another id is matched for that id only.
        const auto current = by_content_.find(token.content);
        if (current == by_content_.end() || current->second != token.id) continue;
        if (token.normalized) {
            std::string form = token.content;
            if (normalizer) normalizer->normalize(form);
            if (form != token.content) normalized_form_[token.id] = form;
            normalized.emplace_back(form, static_cast<int32_t>(i));
        } else {
            raw.emplace_back(token.content, static_cast<int32_t>(i));
        }
    }
    build(raw_trie_, raw);
    build(normalized_trie_, normalized);
}

const AddedToken* AddedVocabulary::find(int32_t id) const {
    const auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<int32_t> AddedVocabulary::find(std::string_view content) const {
    const auto it = by_content_.find(content);
    if (it == by_content_.end()) return std::nullopt;
    return it->second;
}

const std::string* AddedVocabulary::decode_string(int32_t id) const {
    const auto form = normalized_form_.find(id);
    if (form != normalized_form_.end()) return &form->second;
    const AddedToken* token = find(id);
    return token ? &token->content : nullptr;
}

namespace {

char32_t last_char(std::string_view text) {
    size_t start = text.size() - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    char32_t cp;
    utf8_next(text, start, cp);
    return cp;
}

}  // namespace

void AddedVocabulary::split(Piece&& piece, const Trie& trie, Pieces& out) const {
    const std::string& text = piece.text;
    if (text.empty()) return;
    if (trie.empty()) {
        out.push_back(std::move(piece));
        return;
    }
    auto emit = [&](size_t begin, size_t end, int32_t id) {
        if (begin >= end) return;
        Piece part;
        part.text.assign(text, begin, end - begin);
        part.id = id;
        part.at_origin = piece.at_origin && begin == 0;
        out.push_back(std::move(part));
    };
    size_t start_offset = 0;
    size_t pos = 0;
    while (pos < text.size()) {
        if (!trie.first_byte[static_cast<unsigned char>(text[pos])]) {
            ++pos;
            continue;
        }
        int32_t index = -1;
        const size_t length = trie.longest(text, pos, index);
        if (length == 0) {
            ++pos;
            continue;
        }
        size_t start = pos, stop = pos + length;
        pos = stop;  // the next search starts after this match, used or not
        const AddedToken& token = tokens_[static_cast<size_t>(index)];
        if (token.single_word) {
            bool start_space = start == 0 || !is_word_char(last_char(std::string_view(text).substr(0, start)));
            bool stop_space = true;
            if (stop < text.size()) {
                char32_t cp;
                utf8_next(text, stop, cp);
                stop_space = !is_word_char(cp);
            }
            if (!start_space || !stop_space) continue;
        }
        if (token.lstrip) {
            size_t new_start = start;
            while (new_start > 0) {
                size_t previous = new_start - 1;
                while (previous > 0 && (static_cast<unsigned char>(text[previous]) & 0xC0) == 0x80) --previous;
                char32_t cp;
                utf8_next(text, previous, cp);
                if (!is_whitespace(cp)) break;
                new_start = previous;
            }
            start = std::max(new_start, start_offset);
        }
        if (token.rstrip) {
            while (stop < text.size()) {
                char32_t cp;
                const size_t step = utf8_next(text, stop, cp);
                if (!is_whitespace(cp)) break;
                stop += step;
            }
        }
        emit(start_offset, start, -1);
        emit(start, stop, token.id);
        start_offset = stop;
    }
    emit(start_offset, text.size(), -1);
}

Pieces AddedVocabulary::extract_and_normalize(std::string_view text, const Normalizer* normalizer) const {
    Pieces raw;
    Piece whole;
    whole.text = std::string(text);
    whole.at_origin = true;
    split(std::move(whole), raw_trie_, raw);
    Pieces out;
    out.reserve(raw.size());
    for (Piece& piece : raw) {
        if (piece.id >= 0) {
            out.push_back(std::move(piece));
            continue;
        }
        if (normalizer) {
            if (piece.at_origin && !normalizer->keeps_start(piece.text)) piece.at_origin = false;
            normalizer->normalize(piece.text);
        }
        split(std::move(piece), normalized_trie_, out);
    }
    return out;
}

}  // namespace oxinfer::tokenizer
