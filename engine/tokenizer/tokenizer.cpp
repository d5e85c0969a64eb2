// The tokenizer pipeline and the public API: tokenizer.json + tokenizer_config.json, GGUF
// vocabularies (gguf_vocab.cpp), encode and decode as Hugging Face tokenizers.

#include <oxinfer/tokenizer.h>

#include "components.h"

#include <oxinfer/checkpoint.h>
#include <oxinfer/error.h>

#include <fstream>
#include <sstream>

namespace oxinfer {
namespace tokenizer {

std::string json_string(const json& object, const char* key, const std::string& fallback) {
    if (!object.is_object()) return fallback;
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    if (!it->is_string()) throw ConfigError(std::string("'") + key + "' must be a string, not " + it->dump());
    return it->get<std::string>();
}

bool json_bool(const json& object, const char* key, bool fallback) {
    if (!object.is_object()) return fallback;
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) throw ConfigError(std::string("'") + key + "' must be true or false, not " + it->dump());
    return it->get<bool>();
}

const json& json_field(const json& object, const char* key) {
    static const json null_value;
    if (!object.is_object()) return null_value;
    const auto it = object.find(key);
    return it == object.end() ? null_value : *it;
}

namespace {

class WordLevel : public Model {
public:
    WordLevel(std::vector<std::string> vocab, std::string unk) : vocab_r_(std::move(vocab)), unk_(std::move(unk)) {
        for (size_t id = 0; id < vocab_r_.size(); ++id)
            if (!vocab_r_[id].empty()) vocab_[vocab_r_[id]] = static_cast<int32_t>(id);
    }
    void tokenize(std::string_view word, std::vector<int32_t>& ids) const override {
        auto it = vocab_.find(word);
        if (it == vocab_.end()) it = vocab_.find(unk_);
        if (it == vocab_.end()) throw std::runtime_error("WordLevel unk_token '" + unk_ + "' is not in the vocabulary");
        ids.push_back(it->second);
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
    std::vector<std::string> vocab_r_;
    StringIdMap vocab_;
    std::string unk_;
};

std::vector<std::string> vocab_by_id(const json& vocab, const char* model) {
    if (!vocab.is_object()) throw ConfigError(std::string(model) + " vocab must be an object {token: id}");
    size_t size = 0;
    for (const auto& [token, id] : vocab.items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > (1 << 30))
            throw ConfigError(std::string(model) + " vocab id of '" + token + "' is not a valid id");
        size = std::max(size, static_cast<size_t>(id.get<int64_t>()) + 1);
    }
    std::vector<std::string> tokens(size);
    for (const auto& [token, id] : vocab.items()) tokens[id.get<size_t>()] = token;
    return tokens;
}

}  // namespace

std::unique_ptr<Model> make_model(const json& config) {
    if (!config.is_object()) throw ConfigError("model must be an object");
    std::string type = json_string(config, "type");
    if (type.empty()) {
        // Files written before "type" was serialized: tell the models apart by their fields.
        if (config.contains("merges")) type = "BPE";
        else if (config.contains("max_input_chars_per_word")) type = "WordPiece";
        else if (json_field(config, "vocab").is_array()) type = "Unigram";
        else type = "WordLevel";
    }
    if (type == "BPE") {
        BpeOptions options;
        const json& unk = json_field(config, "unk_token");
        if (unk.is_string()) options.unk_token = unk.get<std::string>();
        options.continuing_subword_prefix = json_string(config, "continuing_subword_prefix");
        options.end_of_word_suffix = json_string(config, "end_of_word_suffix");
        options.fuse_unk = json_bool(config, "fuse_unk", false);
        options.byte_fallback = json_bool(config, "byte_fallback", false);
        options.ignore_merges = json_bool(config, "ignore_merges", false);
        std::vector<std::pair<std::string, std::string>> merges;
        const json& list = json_field(config, "merges");
        if (!list.is_null() && !list.is_array()) throw ConfigError("BPE merges must be a list");
        if (list.is_array()) {
            merges.reserve(list.size());
            size_t line = 0;
            for (const json& merge : list) {
                ++line;
                if (merge.is_string()) {
                    const std::string& text = merge.get_ref<const std::string&>();
                    if (text.rfind("#version", 0) == 0) continue;
                    const size_t space = text.find(' ');
                    if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
                        throw ConfigError("BPE merge " + std::to_string(line) + " is not two tokens separated by a space: '" + text + "'");
                    merges.emplace_back(text.substr(0, space), text.substr(space + 1));
                } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
                    merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
                } else {
                    throw ConfigError("BPE merge " + std::to_string(line) + " must be \"a b\" or [\"a\", \"b\"]");
                }
            }
        }
        const json& vocab = json_field(config, "vocab");
        if (!vocab.is_object()) throw ConfigError("BPE vocab must be an object {token: id}");
        return make_bpe_from_map(vocab, merges, options);
    }
    if (type == "WordPiece") {
        const json& max_chars = json_field(config, "max_input_chars_per_word");
        return make_wordpiece(vocab_by_id(json_field(config, "vocab"), "WordPiece"), json_string(config, "unk_token", "[UNK]"),
                              json_string(config, "continuing_subword_prefix", "##"),
                              max_chars.is_number_unsigned() ? max_chars.get<size_t>() : 100);
    }
    if (type == "Unigram") {
        const json& list = json_field(config, "vocab");
        if (!list.is_array()) throw ConfigError("Unigram vocab must be a list of [piece, score]");
        std::vector<std::pair<std::string, double>> vocab;
        vocab.reserve(list.size());
        for (const json& entry : list) {
            if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number())
                throw ConfigError("Unigram vocab entries must be [piece, score]");
            vocab.emplace_back(entry[0].get<std::string>(), entry[1].get<double>());
        }
        const json& unk = json_field(config, "unk_id");
        std::optional<int32_t> unk_id;
        if (unk.is_number_integer()) unk_id = unk.get<int32_t>();
        return make_unigram(std::move(vocab), unk_id, json_bool(config, "byte_fallback", false));
    }
    if (type == "WordLevel") return std::make_unique<WordLevel>(vocab_by_id(json_field(config, "vocab"), "WordLevel"), json_string(config, "unk_token", "<unk>"));
    throw ConfigError("unknown model type '" + type + "'");
}

// ---- Pipeline

std::vector<int32_t> Pipeline::encode(std::string_view input, bool add_special_tokens) const {
    const std::string text = to_valid_utf8(input);
    Pieces pieces = added.extract_and_normalize(text, normalizer.get());
    if (pre_tokenizer) pre_tokenizer->pre_tokenize(pieces);
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 4);
    for (const Piece& piece : pieces) {
        if (piece.id >= 0) ids.push_back(piece.id);
        else model->tokenize(piece.text, ids);
    }
    if (post_processor) post_processor->process(ids, add_special_tokens);
    return ids;
}

const std::string* Pipeline::id_to_token(int32_t id) const {
    if (const std::string* text = added.decode_string(id)) return text;
    return model->id_to_token(id);
}

std::optional<int32_t> Pipeline::token_to_id(std::string_view token) const {
    if (const auto id = added.find(token)) return id;
    return model->token_to_id(token);
}

size_t Pipeline::vocab_size() const {
    return std::max(model->vocab_size(), static_cast<size_t>(added.max_id() + 1));
}

std::string Pipeline::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
        const std::string* text = id_to_token(id);
        if (!text) continue;
        if (skip_special_tokens && added.is_special_content(*text)) continue;
        tokens.push_back(*text);
    }
    if (!decoder) {
        std::string joined;
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (i) joined.push_back(' ');
            joined += tokens[i];
        }
        return joined;
    }
    decoder->decode_chain(tokens);
    std::string joined;
    for (const std::string& token : tokens) joined += token;
    return joined;
}

namespace {

// A token setting of tokenizer_config.json: "text" or {"content": "text", ...}.
std::optional<std::string> token_setting(const json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_object() && value.contains("content") && value.at("content").is_string()) return value.at("content").get<std::string>();
    return std::nullopt;
}

}  // namespace

void Pipeline::apply_config(const json& tokenizer_config, const json& special_tokens_map) {
    config = tokenizer_config;
    auto setting = [&](const char* key) -> std::optional<std::string> {
        if (auto value = token_setting(json_field(tokenizer_config, key))) return value;
        return token_setting(json_field(special_tokens_map, key));
    };
    if (auto bos = setting("bos_token")) bos_token = bos;
    if (auto eos = setting("eos_token")) eos_token = eos;
    if (bos_token) {
        if (const auto id = token_to_id(*bos_token)) bos_id = *id;
    }
    if (eos_token) {
        if (const auto id = token_to_id(*eos_token))
            if (std::find(eos_ids.begin(), eos_ids.end(), *id) == eos_ids.end()) eos_ids.push_back(*id);
    }
    const json& add_bos_value = json_field(tokenizer_config, "add_bos_token");
    if (add_bos_value.is_boolean()) add_bos = add_bos_value.get<bool>();
    const json& add_eos_value = json_field(tokenizer_config, "add_eos_token");
    if (add_eos_value.is_boolean()) add_eos = add_eos_value.get<bool>();
    const json& templates = json_field(tokenizer_config, "chat_template");
    if (templates.is_string() && chat_template.empty()) chat_template = templates.get<std::string>();
    if (templates.is_array()) {
        for (const json& entry : templates) {
            const std::string name = json_string(entry, "name");
            const std::string text = json_string(entry, "template");
            named_templates.emplace_back(name, text);
            if (name == "default" && chat_template.empty()) chat_template = text;
        }
    }
}

namespace {

// Ids of the added tokens as Hugging Face assigns them when it reads tokenizer.json: a content
// the model already has keeps the model's id; the others are numbered after the model's
// vocabulary in file order.
void add_tokens_from_json(Pipeline& pipeline, const json& list) {
    if (list.is_null()) return;
    if (!list.is_array()) throw ConfigError("added_tokens must be a list");
    int32_t next_id = static_cast<int32_t>(pipeline.model->vocab_size());
    for (const json& entry : list) {
        AddedToken token;
        token.content = json_string(entry, "content");
        token.special = json_bool(entry, "special", false);
        token.normalized = json_bool(entry, "normalized", !token.special);
        token.lstrip = json_bool(entry, "lstrip", false);
        token.rstrip = json_bool(entry, "rstrip", false);
        token.single_word = json_bool(entry, "single_word", false);
        if (token.content.empty()) continue;
        if (const auto id = pipeline.added.find(token.content)) token.id = *id;
        else if (const auto model_id = pipeline.model->token_to_id(token.content)) token.id = *model_id;
        else token.id = next_id++;
        pipeline.added.add(std::move(token));
    }
}

}  // namespace

std::unique_ptr<Pipeline> load_tokenizer_json(const json& root, std::string source) {
    auto pipeline = std::make_unique<Pipeline>();
    pipeline->source = source;
    try {
        if (!root.is_object()) throw ConfigError("not a tokenizer (the top level is not an object)");
        if (!root.contains("model")) throw ConfigError("not a tokenizer (no \"model\")");
        pipeline->normalizer = make_normalizer(json_field(root, "normalizer"));
        pipeline->pre_tokenizer = make_pre_tokenizer(json_field(root, "pre_tokenizer"));
        pipeline->model = make_model(json_field(root, "model"));
        pipeline->post_processor = make_post_processor(json_field(root, "post_processor"));
        pipeline->decoder = make_decoder(json_field(root, "decoder"));
        add_tokens_from_json(*pipeline, json_field(root, "added_tokens"));
        pipeline->added.finalize(pipeline->normalizer.get());
    } catch (const ConfigError& error) {
        throw Error(source, error.what());
    } catch (const json::exception& error) {
        throw Error(source, std::string("unexpected value: ") + error.what());
    }
    return pipeline;
}

}  // namespace tokenizer

// ---- Public API

namespace {

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path.string(), "cannot open file");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

nlohmann::json parse_json(std::string_view text, const std::string& source) {
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& error) {
        throw Error(source, std::string("invalid JSON: ") + error.what());
    }
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<tokenizer::Pipeline> pipeline) : pipeline_(std::move(pipeline)) {}
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_json(std::string_view tokenizer_json, std::string_view config_json, std::string source) {
    const nlohmann::json root = parse_json(tokenizer_json, source);
    auto pipeline = tokenizer::load_tokenizer_json(root, source);
    nlohmann::json config;
    if (!config_json.empty()) config = parse_json(config_json, "tokenizer_config.json");
    try {
        pipeline->apply_config(config, nullptr);
    } catch (const std::exception& error) {
        throw Error("tokenizer_config.json", error.what());
    }
    return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(pipeline)));
}

std::unique_ptr<Tokenizer> Tokenizer::from_folder(const std::filesystem::path& folder) {
    namespace fs = std::filesystem;
    if (fs::is_regular_file(folder)) return from_path(folder);
    const fs::path tokenizer_file = folder / "tokenizer.json";
    if (!fs::exists(folder)) throw Error(folder.string(), "no such file or folder");
    if (!fs::exists(tokenizer_file)) throw Error(tokenizer_file.string(), "not found (a tokenizer folder needs tokenizer.json)");
    const std::string source = tokenizer_file.string();
    auto pipeline = tokenizer::load_tokenizer_json(parse_json(read_text(tokenizer_file), source), source);
    nlohmann::json config, special_map;
    const fs::path config_file = folder / "tokenizer_config.json";
    if (fs::exists(config_file)) config = parse_json(read_text(config_file), config_file.string());
    const fs::path map_file = folder / "special_tokens_map.json";
    if (fs::exists(map_file)) special_map = parse_json(read_text(map_file), map_file.string());
    const fs::path template_file = folder / "chat_template.jinja";
    if (fs::exists(template_file)) pipeline->chat_template = read_text(template_file);
    try {
        pipeline->apply_config(config, special_map);
    } catch (const std::exception& error) {
        throw Error(config_file.string(), error.what());
    }
    return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(pipeline)));
}

std::unique_ptr<Tokenizer> Tokenizer::from_path(const std::filesystem::path& folder_or_gguf) {
    namespace fs = std::filesystem;
    if (fs::is_directory(folder_or_gguf)) return from_folder(folder_or_gguf);
    if (!fs::exists(folder_or_gguf)) throw Error(folder_or_gguf.string(), "no such file or folder");
    const auto checkpoint = Checkpoint::open(folder_or_gguf);
    return from_gguf(*checkpoint);
}

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const Checkpoint& checkpoint) {
    if (checkpoint.format() != CheckpointFormat::Gguf)
        throw Error(checkpoint.path().string(), "not a GGUF file (a tokenizer needs a folder with tokenizer.json, or a GGUF)");
    return from_gguf_metadata(checkpoint.metadata(), checkpoint.path().string());
}

std::unique_ptr<Tokenizer> Tokenizer::from_gguf_metadata(const nlohmann::json& metadata, std::string source) {
    return std::unique_ptr<Tokenizer>(new Tokenizer(tokenizer::load_gguf_vocab(metadata, std::move(source))));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
    return pipeline_->encode(text, add_special_tokens);
}

std::vector<std::string> Tokenizer::tokens(const std::vector<int32_t>& ids) const {
    std::vector<std::string> out;
    out.reserve(ids.size());
    for (int32_t id : ids) {
        const tokenizer::AddedToken* added = pipeline_->added.find(id);
        if (added) out.push_back(added->content);
        else if (const std::string* text = pipeline_->model->id_to_token(id)) out.push_back(*text);
        else out.emplace_back();
    }
    return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
    return pipeline_->decode(ids, skip_special_tokens);
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens, bool clean_up_tokenization_spaces) const {
    std::string text = pipeline_->decode(ids, skip_special_tokens);
    if (!clean_up_tokenization_spaces) return text;
    static const std::pair<const char*, const char*> kReplacements[] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kReplacements) {
        const std::string_view pattern(from);
        std::string out;
        size_t last = 0, pos;
        while ((pos = text.find(pattern, last)) != std::string::npos) {
            out.append(text, last, pos - last);
            out += to;
            last = pos + pattern.size();
        }
        out.append(text, last, std::string::npos);
        text.swap(out);
    }
    return text;
}

bool Tokenizer::clean_up_tokenization_spaces() const {
    const nlohmann::json& value = tokenizer::json_field(pipeline_->config, "clean_up_tokenization_spaces");
    return value.is_boolean() && value.get<bool>();
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
    if (const tokenizer::AddedToken* added = pipeline_->added.find(id)) return added->content;
    if (const std::string* text = pipeline_->model->id_to_token(id)) return *text;
    return std::nullopt;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const { return pipeline_->token_to_id(token); }
size_t Tokenizer::vocab_size() const { return pipeline_->vocab_size(); }

bool Tokenizer::is_special(int32_t id) const {
    const tokenizer::AddedToken* added = pipeline_->added.find(id);
    return added && added->special;
}

int32_t Tokenizer::bos_id() const { return pipeline_->bos_id; }
const std::vector<int32_t>& Tokenizer::eos_ids() const { return pipeline_->eos_ids; }
std::optional<std::string> Tokenizer::bos_token() const { return pipeline_->bos_token; }
std::optional<std::string> Tokenizer::eos_token() const { return pipeline_->eos_token; }
std::optional<bool> Tokenizer::add_bos_token() const { return pipeline_->add_bos; }
std::optional<bool> Tokenizer::add_eos_token() const { return pipeline_->add_eos; }
const std::string& Tokenizer::chat_template() const { return pipeline_->chat_template; }

std::optional<std::string> Tokenizer::chat_template(std::string_view name) const {
    for (const auto& [template_name, text] : pipeline_->named_templates)
        if (template_name == name) return text;
    if (name == "default" && !pipeline_->chat_template.empty()) return pipeline_->chat_template;
    return std::nullopt;
}

const nlohmann::json& Tokenizer::config() const { return pipeline_->config; }

}  // namespace oxinfer
