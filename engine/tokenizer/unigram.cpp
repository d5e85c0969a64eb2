// The Unigram model: the best-scoring segmentation (Viterbi over the log-probabilities of the
// pieces), characters outside the vocabulary scored as the unknown token (min score - 10) and
// consecutive unknowns fused; byte_fallback spells unknown pieces as <0xXX> tokens.

#include "components.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace oxinfer::tokenizer {
namespace {

// A byte trie over the pieces, for common-prefix search.
class Trie {
public:
    Trie() { nodes_.emplace_back(); }
    void insert(std::string_view key, int32_t id) {
        uint32_t node = 0;
        for (unsigned char c : key) {
            uint32_t child = find(node, c);
            if (child == 0) {
                child = static_cast<uint32_t>(nodes_.size());
                nodes_.emplace_back();
                nodes_[node].children.push_back({c, child});
            }
            node = child;
        }
        nodes_[node].id = id;
    }
    // Calls visit(length, id) for every piece that is a prefix of `text`, shortest first.
    template <typename Visit>
    void common_prefixes(std::string_view text, Visit&& visit) const {
        uint32_t node = 0;
        for (size_t i = 0; i < text.size(); ++i) {
            node = find(node, static_cast<unsigned char>(text[i]));
            if (node == 0) return;
            if (nodes_[node].id >= 0) visit(i + 1, nodes_[node].id);
        }
    }

private:
    struct Node {
        std::vector<std::pair<unsigned char, uint32_t>> children;
        int32_t id = -1;
    };
    uint32_t find(uint32_t node, unsigned char c) const {
        for (const auto& [label, child] : nodes_[node].children)
            if (label == c) return child;
        return 0;
    }
    std::vector<Node> nodes_;
};

class Unigram : public Model {
public:
    Unigram(std::vector<std::pair<std::string, double>> vocab, std::optional<int32_t> unk_id, bool byte_fallback)
        : vocab_(std::move(vocab)), unk_id_(unk_id), byte_fallback_(byte_fallback) {
        if (unk_id_ && (*unk_id_ < 0 || static_cast<size_t>(*unk_id_) >= vocab_.size()))
            throw ConfigError("Unigram unk_id " + std::to_string(*unk_id_) + " is outside the vocabulary");
        min_score_ = INFINITY;
        ids_.reserve(vocab_.size());
        for (size_t id = 0; id < vocab_.size(); ++id) {
            ids_[vocab_[id].first] = static_cast<int32_t>(id);
            min_score_ = std::min(min_score_, vocab_[id].second);
        }
        for (const auto& [token, id] : ids_) trie_.insert(token, id);
        byte_ids_.fill(-1);
        if (byte_fallback_) {
            for (int b = 0; b < 256; ++b) {
                char name[8];
                std::snprintf(name, sizeof name, "<0x%02X>", b);
                const auto it = ids_.find(std::string_view(name));
                if (it != ids_.end()) byte_ids_[b] = it->second;
            }
        }
    }

    void tokenize(std::string_view sentence, std::vector<int32_t>& ids) const override {
        if (sentence.empty()) return;
        struct Best {
            double score = 0;
            int32_t id = 0;
            int64_t start = -1;
        };
        const size_t size = sentence.size();
        const double unk_score = min_score_ - 10.0;
        std::vector<Best> best(size + 1);
        size_t start = 0;
        while (start < size) {
            const double base = best[start].score;
            const size_t mblen = utf8_length(static_cast<unsigned char>(sentence[start]));
            bool single = false;
            trie_.common_prefixes(sentence.substr(start), [&](size_t length, int32_t id) {
                Best& target = best[start + length];
                const double candidate = vocab_[static_cast<size_t>(id)].second + base;
                if (target.start < 0 || candidate > target.score) target = {candidate, id, static_cast<int64_t>(start)};
                if (length == mblen) single = true;
            });
            if (!single) {
                if (!unk_id_) throw std::runtime_error("Unigram model has no unk_id for a character outside its vocabulary");
                Best& target = best[start + mblen];
                const double candidate = unk_score + base;
                if (target.start < 0 || candidate > target.score) target = {candidate, *unk_id_, static_cast<int64_t>(start)};
            }
            start += mblen;
        }
        // Back from the end; consecutive unknowns are fused into one piece.
        std::vector<std::pair<size_t, size_t>> pieces;  // [begin, end)
        size_t end = size;
        bool fusing = false;
        while (end > 0) {
            const Best& node = best[end];
            const size_t begin = static_cast<size_t>(node.start);
            const bool unk = unk_id_ && node.id == *unk_id_;
            if (unk && fusing) pieces.back().first = begin;
            else pieces.emplace_back(begin, end);
            fusing = unk;
            end = begin;
        }
        std::reverse(pieces.begin(), pieces.end());
        for (const auto& [b, e] : pieces) {
            const std::string_view piece = sentence.substr(b, e - b);
            const auto it = ids_.find(piece);
            if (it != ids_.end()) {
                ids.push_back(it->second);
                continue;
            }
            if (byte_fallback_) {
                bool all = true;
                for (unsigned char c : piece) all = all && byte_ids_[c] >= 0;
                if (all) {
                    for (unsigned char c : piece) ids.push_back(byte_ids_[c]);
                    continue;
                }
            }
            if (!unk_id_) throw std::runtime_error("Unigram model has no unk_id");
            ids.push_back(*unk_id_);
        }
    }

    std::optional<int32_t> token_to_id(std::string_view token) const override {
        const auto it = ids_.find(token);
        if (it == ids_.end()) return std::nullopt;
        return it->second;
    }
    const std::string* id_to_token(int32_t id) const override {
        if (id < 0 || static_cast<size_t>(id) >= vocab_.size()) return nullptr;
        return &vocab_[static_cast<size_t>(id)].first;
    }
    size_t vocab_size() const override { return vocab_.size(); }

private:
    std::vector<std::pair<std::string, double>> vocab_;
    StringIdMap ids_;
    Trie trie_;
    std::optional<int32_t> unk_id_;
    bool byte_fallback_;
    double min_score_;
    std::array<int32_t, 256> byte_ids_{};
};

}  // namespace

std::unique_ptr<Model> make_unigram(std::vector<std::pair<std::string, double>> vocab, std::optional<int32_t> unk_id, bool byte_fallback) {
    return std::make_unique<Unigram>(std::move(vocab), unk_id, byte_fallback);
}

}  // namespace oxinfer::tokenizer
