#pragma once
// Internals of the tokenizer: the pipeline of Hugging Face tokenizers (added tokens, normalizer,
// pre-tokenizer, model, post-processor, decoder), one concern per .cpp file.

#include "unicode.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace oxinfer::tokenizer {

using json = nlohmann::json;

// Thrown while reading a component; the loader adds the file name.
struct ConfigError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A string hash that also finds std::string keys from string_views.
struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const noexcept;
};
using StringIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// One part of the input on its way through the pipeline. Parts that are added tokens carry
// their id and are left alone by normalizers, pre-tokenizers and the model.
struct Piece {
    std::string text;
    int32_t id = -1;         // >= 0: an added token, final
    bool at_origin = false;  // starts at offset 0 of the input (Metaspace prepend_scheme "first")
};
using Pieces = std::vector<Piece>;

// ---- normalizers.cpp
struct Normalizer {
    virtual ~Normalizer() = default;
    virtual void normalize(std::string& text) const = 0;
    // False when normalizing `text` deletes its first character, so that nothing of the result
    // lies at the start of the original (Hugging Face then sees offsets_original().0 != 0, which
    // Metaspace's prepend_scheme "first" looks at).
    virtual bool keeps_start(std::string_view text) const { return true; }
};
std::unique_ptr<Normalizer> make_normalizer(const json& config);  // null for a null config
// SentencePiece's precompiled_charsmap (raw bytes).
std::unique_ptr<Normalizer> make_precompiled_normalizer(const std::string& charsmap_bytes);

// ---- pre_tokenizers.cpp
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
SplitBehavior parse_behavior(const json& value);
struct Span {
    size_t begin, end;
    bool match;
};
// Turns the matches of a pattern in `text` (every byte covered, in order) into the parts that
// `behavior` keeps; appends them to `out` (empty parts dropped).
void split_by_behavior(const Piece& piece, const std::vector<Span>& spans, SplitBehavior behavior, Pieces& out);

struct PreTokenizer {
    virtual ~PreTokenizer() = default;
    virtual void pre_tokenize(Pieces& pieces) const = 0;
    // True when the pre-tokenizer maps bytes to the GPT-2 byte alphabet (ByteLevel).
    virtual bool byte_level() const { return false; }
};
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& config);
// GPT-2's byte alphabet: byte -> its character, and back.
const std::string& byte_to_unicode(uint8_t byte);  // UTF-8 of the character
int unicode_to_byte(char32_t cp);                   // -1 when not in the alphabet
void byte_level_map(std::string_view text, std::string& out);

// ---- models: bpe.cpp, wordpiece.cpp, unigram.cpp
struct Model {
    virtual ~Model() = default;
    // Appends the ids of one pre-tokenized word.
    virtual void tokenize(std::string_view word, std::vector<int32_t>& ids) const = 0;
    virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
    virtual const std::string* id_to_token(int32_t id) const = 0;
    virtual size_t vocab_size() const = 0;  // one past the largest id
};
std::unique_ptr<Model> make_model(const json& config);

struct BpeOptions {
    std::optional<std::string> unk_token;
    std::string continuing_subword_prefix;
    std::string end_of_word_suffix;
    bool fuse_unk = false;
    bool byte_fallback = false;
    bool ignore_merges = false;
};
std::unique_ptr<Model> make_bpe(std::vector<std::string> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                                const BpeOptions& options);
std::unique_ptr<Model> make_wordpiece(std::vector<std::string> vocab, std::string unk_token, std::string prefix,
                                      size_t max_input_chars_per_word);
std::unique_ptr<Model> make_unigram(std::vector<std::pair<std::string, double>> vocab, std::optional<int32_t> unk_id,
                                    bool byte_fallback);
std::unique_ptr<Model> make_bpe_from_map(const json& vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                                         const BpeOptions& options);

// ---- post_processors.cpp
struct PostProcessor {
    virtual ~PostProcessor() = default;
    virtual void process(std::vector<int32_t>& ids, bool add_special_tokens) const = 0;
};
std::unique_ptr<PostProcessor> make_post_processor(const json& config);

// ---- decoders.cpp
struct Decoder {
    virtual ~Decoder() = default;
    virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};
std::unique_ptr<Decoder> make_decoder(const json& config);

// ---- added_tokens.cpp
struct AddedToken {
    std::string content;
    int32_t id = -1;
    bool special = false;
    bool normalized = true;
    bool lstrip = false;
    bool rstrip = false;
    bool single_word = false;
};

class AddedVocabulary {
public:
    void add(AddedToken token);
    // Builds the matchers; normalized tokens are matched in their normalized form.
    void finalize(const Normalizer* normalizer);
    // Splits the input on added tokens, normalizing the other parts (Hugging Face's
    // extract_and_normalize).
    Pieces extract_and_normalize(std::string_view text, const Normalizer* normalizer) const;

    const AddedToken* find(int32_t id) const;
    std::optional<int32_t> find(std::string_view content) const;
    // The string decode uses for an added token (its normalized form when normalized).
    const std::string* decode_string(int32_t id) const;
    bool is_special_content(std::string_view content) const { return special_.count(std::string(content)) != 0; }
    int32_t max_id() const { return max_id_; }
    const std::vector<AddedToken>& tokens() const { return tokens_; }

private:
    struct Trie {
        std::vector<std::vector<std::pair<unsigned char, int32_t>>> next;  // children of each node
        std::vector<int32_t> value;                                         // token index or -1
        bool first_byte[256] = {};
        bool empty() const { return value.size() <= 1; }
        int32_t child(int32_t node, unsigned char c) const;
        // Length and token index of the longest token at `pos`, or 0.
        size_t longest(std::string_view text, size_t pos, int32_t& index) const;
    };
    static void build(Trie& trie, const std::vector<std::pair<std::string, int32_t>>& entries);
    void split(Piece&& piece, const Trie& trie, Pieces& out) const;

    std::vector<AddedToken> tokens_;
    std::unordered_map<int32_t, size_t> by_id_;
    StringIdMap by_content_;
    std::unordered_map<int32_t, std::string> normalized_form_;
    std::unordered_set<std::string> special_;
    Trie raw_trie_, normalized_trie_;
    int32_t max_id_ = -1;
};

// ---- tokenizer.cpp: the whole pipeline
struct Pipeline {
    std::string source;  // file name for messages
    std::unique_ptr<Normalizer> normalizer;
    std::unique_ptr<PreTokenizer> pre_tokenizer;
    std::unique_ptr<Model> model;
    std::unique_ptr<PostProcessor> post_processor;
    std::unique_ptr<Decoder> decoder;
    AddedVocabulary added;

    json config;  // tokenizer_config.json (null when none)
    std::optional<std::string> bos_token, eos_token;
    int32_t bos_id = -1;
    std::vector<int32_t> eos_ids;
    std::optional<bool> add_bos, add_eos;
    std::string chat_template;
    std::vector<std::pair<std::string, std::string>> named_templates;

    std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
    std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const;
    const std::string* id_to_token(int32_t id) const;
    std::optional<int32_t> token_to_id(std::string_view token) const;
    size_t vocab_size() const;

    // Reads the added tokens, bos/eos and chat template settings of tokenizer_config.json (and
    // special_tokens_map.json); call after the components are set.
    void apply_config(const json& tokenizer_config, const json& special_tokens_map);
    void finalize();  // builds the added-token matchers
};

std::unique_ptr<Pipeline> load_tokenizer_json(const json& tokenizer, std::string source);
std::unique_ptr<Pipeline> load_gguf_vocab(const json& metadata, std::string source);

// JSON helpers: a field's value or a default; type errors become ConfigError.
std::string json_string(const json& object, const char* key, const std::string& fallback = "");
bool json_bool(const json& object, const char* key, bool fallback);
const json& json_field(const json& object, const char* key);  // null json when absent

}  // namespace oxinfer::tokenizer
