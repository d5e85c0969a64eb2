#pragma once
// Tokenizers exactly as Hugging Face's `tokenizers` library runs them, from a tokenizer.json (with
// tokenizer_config.json) or from a GGUF vocabulary (tokenizer.ggml.*).
//
// Supported: models BPE (byte-level or SentencePiece-style with byte_fallback, ignore_merges,
// continuing_subword_prefix/end_of_word_suffix, merges as "a b" strings or pairs), WordPiece and
// Unigram; the normalizers, pre-tokenizers, post-processors and decoders that real models use;
// added tokens (special, normalized, lstrip, rstrip, single_word) matched before the model.
// Errors are oxinfer::Error naming the file: "tokenizer.json: unknown pre_tokenizer type 'Foo'".

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oxinfer {

class Checkpoint;

namespace tokenizer {
struct Pipeline;
}

class Tokenizer {
public:
    // A folder with tokenizer.json and tokenizer_config.json (special_tokens_map.json and
    // chat_template.jinja are read when present), or a .gguf file.
    static std::unique_ptr<Tokenizer> from_folder(const std::filesystem::path& folder);
    // A folder, or a .gguf file (only its metadata is read).
    static std::unique_ptr<Tokenizer> from_path(const std::filesystem::path& folder_or_gguf);
    // tokenizer.json text and tokenizer_config.json text ("" when there is none). `source` names
    // the file in error messages.
    static std::unique_ptr<Tokenizer> from_json(std::string_view tokenizer_json, std::string_view config_json = {},
                                                std::string source = "tokenizer.json");
    // The tokenizer.ggml.* keys of a GGUF file.
    static std::unique_ptr<Tokenizer> from_gguf(const Checkpoint& checkpoint);
    // The same from GGUF metadata as JSON (Checkpoint::metadata()).
    static std::unique_ptr<Tokenizer> from_gguf_metadata(const nlohmann::json& metadata, std::string source = "gguf");

    ~Tokenizer();
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;

    // Token ids of `text`; special tokens (BOS, [CLS] ...) added as the post-processor says when
    // add_special_tokens. Text that is not valid UTF-8 is read with U+FFFD for each bad sequence.
    std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
    // The token strings of encode(), as the vocabulary spells them ("Ġworld").
    std::vector<std::string> tokens(const std::vector<int32_t>& ids) const;
    // The text of `ids`, as Hugging Face tokenizers' decode(ids, skip_special_tokens). Unknown ids
    // are skipped, as there.
    std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;
    // decode() followed, when clean_up_tokenization_spaces, by transformers' clean_up_tokenization
    // (" ." -> ".", " n't" -> "n't", ...), which transformers' decode applies when
    // tokenizer_config.json sets clean_up_tokenization_spaces (see clean_up_tokenization_spaces()).
    std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens, bool clean_up_tokenization_spaces) const;
    // tokenizer_config.json's clean_up_tokenization_spaces (false when absent).
    bool clean_up_tokenization_spaces() const;

    // The token string of `id` (added tokens included); nullopt when out of range.
    std::optional<std::string> id_to_token(int32_t id) const;
    std::optional<int32_t> token_to_id(std::string_view token) const;
    // One past the largest id (the model's vocabulary and the added tokens).
    size_t vocab_size() const;
    bool is_special(int32_t id) const;

    // From tokenizer_config.json (or GGUF tokenizer.ggml.bos_token_id ...): the BOS token id, or -1.
    int32_t bos_id() const;
    // EOS ids: eos_token of the config (and GGUF eos/eot ids), without duplicates.
    const std::vector<int32_t>& eos_ids() const;
    std::optional<std::string> bos_token() const;
    std::optional<std::string> eos_token() const;
    // tokenizer_config.json's add_bos_token / add_eos_token when given.
    std::optional<bool> add_bos_token() const;
    std::optional<bool> add_eos_token() const;
    // The chat template: chat_template.jinja, else tokenizer_config.json's chat_template (a string,
    // or the one named "default" of a list), else GGUF tokenizer.chat_template; "" when none.
    const std::string& chat_template() const;
    // Named templates when tokenizer_config.json lists several ({"name": ..., "template": ...}).
    std::optional<std::string> chat_template(std::string_view name) const;
    // tokenizer_config.json as read (null when there was none).
    const nlohmann::json& config() const;

    const tokenizer::Pipeline& pipeline() const { return *pipeline_; }

private:
    explicit Tokenizer(std::unique_ptr<tokenizer::Pipeline> pipeline);
    std::unique_ptr<tokenizer::Pipeline> pipeline_;
};

// Text for ids that arrive one at a time (generation). Each step returns only new, complete text:
// an incomplete UTF-8 sequence (a character split over byte tokens) is held back, and spaces are
// produced exactly as Tokenizer::decode of the whole sequence produces them (no stray leading
// space), so the concatenation of everything returned, finish() included, equals
// decode(all ids, skip_special_tokens).
class StreamingDecoder {
public:
    explicit StreamingDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);

    // The new text that `id` completes ("" when it is held back).
    std::string feed(int32_t id);
    // Whatever is still held back (an incomplete sequence at the end decodes as U+FFFD, as in decode).
    std::string finish();
    // Starts over (a new sequence).
    void reset();

    const std::vector<int32_t>& ids() const { return ids_; }

private:
    const Tokenizer& tokenizer_;
    bool skip_special_;
    std::vector<int32_t> ids_;
    size_t prefix_offset_ = 0;  // window start: decoding starts here
    size_t read_offset_ = 0;    // ids before this are emitted
    size_t emitted_bytes_ = 0;  // bytes of text returned so far
};

}  // namespace oxinfer
