// The BPE model: the lowest-ranked adjacent pair is merged first (the leftmost among equals), as
// Hugging Face's Word::merge_all. Words are cached per thread; merges live in an open-addressing
// table keyed by the pair of ids, and the per-word work reuses thread-local buffers.

#include "components.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>

namespace oxinfer::tokenizer {
namespace {

// (left id, right id) -> (rank, merged id), open addressing with linear probing.
class MergeTable {
public:
    void reserve(size_t count) {
        size_t capacity = 16;
        while (capacity < count * 2) capacity <<= 1;
        slots_.assign(capacity, Slot{});
        mask_ = capacity - 1;
    }
    void put(int32_t left, int32_t right, uint32_t rank, int32_t merged) {
        const uint64_t key = pack(left, right);
        size_t i = hash(key) & mask_;
        while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask_;
        slots_[i] = {key, rank, merged};
    }
    // False when the pair has no merge.
    bool get(int32_t left, int32_t right, uint32_t& rank, int32_t& merged) const {
        if (slots_.empty()) return false;
        const uint64_t key = pack(left, right);
        size_t i = hash(key) & mask_;
        while (true) {
            const Slot& slot = slots_[i];
            if (slot.key == key) {
                rank = slot.rank;
                merged = slot.merged;
                return true;
            }
            if (slot.key == kEmpty) return false;
            i = (i + 1) & mask_;
        }
    }

private:
    static constexpr uint64_t kEmpty = ~0ull;
    struct Slot {
        uint64_t key = kEmpty;
        uint32_t rank = 0;
        int32_t merged = 0;
    };
    static uint64_t pack(int32_t left, int32_t right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }
    static size_t hash(uint64_t key) {
        key ^= key >> 33;
        key *= 0xff51afd7ed558ccdull;
        key ^= key >> 33;
        return static_cast<size_t>(key);
    }
    std::vector<Slot> slots_;
    size_t mask_ = 0;
};

struct Symbol {
    int32_t id;
    int32_t prev, next;
    uint32_t len;  // bytes of the word it covers; 0 once merged away
};

struct Candidate {
    uint32_t rank;
    uint32_t pos;
    int32_t merged;
    // std heaps are max-heaps: the "largest" is the lowest rank, then the leftmost position.
    bool operator<(const Candidate& other) const {
        if (rank != other.rank) return rank > other.rank;
        return pos > other.pos;
    }
};

std::atomic<uint64_t> next_instance{1};

class Bpe : public Model {
public:
    Bpe(std::vector<std::string> vocab, std::vector<bool> missing, const std::vector<std::pair<std::string, std::string>>& merges,
        const BpeOptions& options)
        : vocab_r_(std::move(vocab)), missing_(std::move(missing)), options_(options), instance_(next_instance++) {
        vocab_.reserve(vocab_r_.size());
        for (size_t id = 0; id < vocab_r_.size(); ++id)
            if (present(id)) vocab_[vocab_r_[id]] = static_cast<int32_t>(id);
        merges_.reserve(merges.size());
        const size_t prefix_length = options_.continuing_subword_prefix.size();
        std::string merged;
        for (size_t rank = 0; rank < merges.size(); ++rank) {
            const auto& [left, right] = merges[rank];
            const auto a = vocab_.find(left), b = vocab_.find(right);
            if (a == vocab_.end()) throw ConfigError("BPE merge token '" + left + "' is not in the vocabulary");
            if (b == vocab_.end()) throw ConfigError("BPE merge token '" + right + "' is not in the vocabulary");
            merged = left;
            merged.append(right, std::min(prefix_length, right.size()), std::string::npos);
            const auto m = vocab_.find(merged);
            if (m == vocab_.end()) throw ConfigError("BPE merge result '" + merged + "' is not in the vocabulary");
            merges_.put(a->second, b->second, static_cast<uint32_t>(rank), m->second);
        }
        if (options_.unk_token) {
            const auto u = vocab_.find(*options_.unk_token);
            unk_id_ = u == vocab_.end() ? -1 : u->second;
        }
        byte_ids_.fill(-1);
        if (options_.byte_fallback) {
            bool all = true;
            for (int b = 0; b < 256; ++b) {
                char name[8];
                std::snprintf(name, sizeof name, "<0x%02X>", b);
                const auto it = vocab_.find(std::string_view(name));
                if (it == vocab_.end()) all = false;
                else byte_ids_[b] = it->second;
            }
            (void)all;
        }
        plain_chars_ = options_.continuing_subword_prefix.empty() && options_.end_of_word_suffix.empty();
        if (plain_chars_) {
            char_ids_.assign(kCharTable, -1);
            std::string text;
            for (char32_t cp = 0; cp < kCharTable; ++cp) {
                text.clear();
                utf8_append(text, cp);
                const auto it = vocab_.find(text);
                if (it != vocab_.end()) char_ids_[cp] = it->second;
            }
        }
    }

    void tokenize(std::string_view word, std::vector<int32_t>& ids) const override {
        if (word.empty()) return;
        if (options_.ignore_merges) {
            const auto it = vocab_.find(word);
            if (it != vocab_.end()) {
                ids.push_back(it->second);
                return;
            }
        }
        Cache& cache = thread_cache();
        if (cache.owner != instance_) {
            cache.map.clear();
            cache.owner = instance_;
        }
        const auto hit = cache.map.find(word);
        if (hit != cache.map.end()) {
            ids.insert(ids.end(), hit->second.begin(), hit->second.end());
            return;
        }
        const size_t first = ids.size();
        merge_word(word, ids);
        if (word.size() < kMaxCachedLength && cache.map.size() < kCacheCapacity)
            cache.map.emplace(std::string(word), std::vector<int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(first), ids.end()));
    }

    std::optional<int32_t> token_to_id(std::string_view token) const override {
        const auto it = vocab_.find(token);
        if (it == vocab_.end()) return std::nullopt;
        return it->second;
    }
    const std::string* id_to_token(int32_t id) const override {
        if (id < 0 || static_cast<size_t>(id) >= vocab_r_.size() || !present(static_cast<size_t>(id))) return nullptr;
        return &vocab_r_[static_cast<size_t>(id)];
    }
    size_t vocab_size() const override { return vocab_r_.size(); }

private:
    static constexpr size_t kCharTable = 0x800;
    static constexpr size_t kMaxCachedLength = 256;
    static constexpr size_t kCacheCapacity = 200000;

    struct Cache {
        uint64_t owner = 0;
        std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> map;
    };
    static Cache& thread_cache() {
        thread_local Cache cache;
        return cache;
    }

    bool present(size_t id) const { return missing_.empty() || !missing_[id]; }

    int32_t lookup_char(std::string_view word, size_t pos, size_t length, bool first, bool last) const {
        if (plain_chars_) {
            if (length == 1) return char_ids_[static_cast<unsigned char>(word[pos])];
            char32_t cp;
            utf8_next(word, pos, cp);
            if (cp < kCharTable) return char_ids_[cp];
            const auto it = vocab_.find(word.substr(pos, length));
            return it == vocab_.end() ? -1 : it->second;
        }
        thread_local std::string text;
        text.clear();
        if (!first) text += options_.continuing_subword_prefix;
        text.append(word.substr(pos, length));
        if (last) text += options_.end_of_word_suffix;
        const auto it = vocab_.find(text);
        return it == vocab_.end() ? -1 : it->second;
    }

    void merge_word(std::string_view word, std::vector<int32_t>& ids) const {
        thread_local std::vector<Symbol> symbols;
        thread_local std::vector<Candidate> heap;
        symbols.clear();
        heap.clear();
        auto add = [&](int32_t id, uint32_t len) {
            const int32_t index = static_cast<int32_t>(symbols.size());
            symbols.push_back({id, index - 1, -1, len});
            if (index > 0) symbols[static_cast<size_t>(index - 1)].next = index;
        };
        int32_t pending_unk = -1;
        uint32_t pending_unk_len = 0;
        size_t pos = 0;
        while (pos < word.size()) {
            const size_t length = utf8_length(static_cast<unsigned char>(word[pos]));
            const bool first = pos == 0, last = pos + length >= word.size();
            const int32_t id = lookup_char(word, pos, length, first, last);
            if (id >= 0) {
                if (pending_unk >= 0) {
                    add(pending_unk, pending_unk_len);
                    pending_unk = -1;
                }
                add(id, static_cast<uint32_t>(length));
            } else {
                bool done = false;
                if (options_.byte_fallback) {
                    // The bytes of the character as written, prefix and suffix included.
                    std::string text;
                    if (!first) text += options_.continuing_subword_prefix;
                    text.append(word.substr(pos, length));
                    if (last) text += options_.end_of_word_suffix;
                    bool all = true;
                    for (unsigned char c : text) all = all && byte_ids_[c] >= 0;
                    if (all) {
                        for (unsigned char c : text) add(byte_ids_[c], 1);
                        done = true;
                    }
                }
                if (!done && options_.unk_token) {
                    if (unk_id_ < 0) throw std::runtime_error("BPE unk_token '" + *options_.unk_token + "' is not in the vocabulary");
                    if (pending_unk >= 0 && options_.fuse_unk) {
                        pending_unk_len += static_cast<uint32_t>(length);
                    } else {
                        if (pending_unk >= 0) add(pending_unk, pending_unk_len);
                        pending_unk = unk_id_;
                        pending_unk_len = static_cast<uint32_t>(length);
                    }
                }
            }
            pos += length;
        }
        if (pending_unk >= 0) add(pending_unk, pending_unk_len);

        uint32_t rank;
        int32_t merged;
        for (size_t i = 0; i + 1 < symbols.size(); ++i)
            if (merges_.get(symbols[i].id, symbols[i + 1].id, rank, merged)) heap.push_back({rank, static_cast<uint32_t>(i), merged});
        std::make_heap(heap.begin(), heap.end());
        while (!heap.empty()) {
            std::pop_heap(heap.begin(), heap.end());
            const Candidate top = heap.back();
            heap.pop_back();
            Symbol& current = symbols[top.pos];
            if (current.len == 0 || current.next < 0) continue;
            const size_t next_pos = static_cast<size_t>(current.next);
            const Symbol right = symbols[next_pos];
            if (!merges_.get(current.id, right.id, rank, merged) || merged != top.merged) continue;
            current.id = top.merged;
            current.len += right.len;
            current.next = right.next;
            symbols[next_pos].len = 0;
            if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = static_cast<int32_t>(top.pos);
            if (current.prev >= 0) {
                const Symbol& previous = symbols[static_cast<size_t>(current.prev)];
                if (merges_.get(previous.id, current.id, rank, merged)) {
                    heap.push_back({rank, static_cast<uint32_t>(current.prev), merged});
                    std::push_heap(heap.begin(), heap.end());
                }
            }
            if (current.next >= 0) {
                const Symbol& following = symbols[static_cast<size_t>(current.next)];
                if (merges_.get(current.id, following.id, rank, merged)) {
                    heap.push_back({rank, top.pos, merged});
                    std::push_heap(heap.begin(), heap.end());
                }
            }
        }
        for (const Symbol& symbol : symbols)
            if (symbol.len) ids.push_back(symbol.id);
    }

    std::vector<std::string> vocab_r_;
    std::vector<bool> missing_;
    StringIdMap vocab_;
    MergeTable merges_;
    BpeOptions options_;
    int32_t unk_id_ = -1;
    std::array<int32_t, 256> byte_ids_{};
    bool plain_chars_ = true;
    std::vector<int32_t> char_ids_;
    uint64_t instance_;
};

}  // namespace

std::unique_ptr<Model> make_bpe(std::vector<std::string> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                                const BpeOptions& options) {
    return std::make_unique<Bpe>(std::move(vocab), std::vector<bool>{}, merges, options);
}

// Vocabularies given as {token: id} may leave ids unused: those are marked missing.
std::unique_ptr<Model> make_bpe_from_map(const json& vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                                         const BpeOptions& options) {
    size_t size = 0;
    for (const auto& [token, id] : vocab.items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > (1 << 30))
            throw ConfigError("BPE vocab id of '" + token + "' is not a valid id");
        size = std::max(size, static_cast<size_t>(id.get<int64_t>()) + 1);
    }
    std::vector<std::string> tokens(size);
    std::vector<bool> missing(size, true);
    bool any_missing = false;
    for (const auto& [token, id] : vocab.items()) {
        tokens[id.get<size_t>()] = token;
        missing[id.get<size_t>()] = false;
    }
    for (bool m : missing) any_missing = any_missing || m;
    if (!any_missing) missing.clear();
    return std::make_unique<Bpe>(std::move(tokens), std::move(missing), merges, options);
}

}  // namespace oxinfer::tokenizer
