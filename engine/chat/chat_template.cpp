// The public chat-template API: parsing and rendering with errors that name the template, line
// and column; apply_chat_template's variables; loading a model's templates and special tokens.

#include <oxinfer/chat_template.h>

#include <oxinfer/checkpoint.h>
#include <oxinfer/error.h>

#include "chat/interpreter.h"
#include "chat/lexer.h"
#include "chat/parser.h"
#include "chat/text.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace oxinfer {

namespace fs = std::filesystem;

struct ChatTemplate::Impl {
    std::string name;
    std::string source;
    std::string normalized;
    std::unique_ptr<jinja::SourceMap> map;
    jinja::Body body;

    std::string subject() const { return "chat template '" + name + "'"; }
    std::string where(size_t offset) const {
        return "line " + std::to_string(map->line(offset)) + ", column " + std::to_string(map->column(offset)) + ": ";
    }
};

ChatTemplate::ChatTemplate(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

const std::string& ChatTemplate::name() const { return impl_->name; }
const std::string& ChatTemplate::source() const { return impl_->source; }

ChatTemplate ChatTemplate::parse(std::string source, std::string name_for_errors) {
    auto impl = std::make_unique<Impl>();
    impl->name = std::move(name_for_errors);
    impl->source = std::move(source);
    impl->normalized = jinja::normalize_source(impl->source);
    impl->map = std::make_unique<jinja::SourceMap>(impl->normalized);
    size_t bad = 0;
    if (!jinja::text::valid_utf8(impl->normalized, &bad))
        throw Error(impl->subject(), impl->where(bad) + "the template is not valid UTF-8");
    try {
        impl->body = jinja::parse(jinja::tokenize(impl->normalized, {}));
    } catch (const jinja::SyntaxError& error) {
        throw Error(impl->subject(), impl->where(error.offset) + error.message);
    }
    return ChatTemplate(std::move(impl));
}

std::string ChatTemplate::render(const nlohmann::ordered_json& context, const ChatTemplateOptions& options) const {
    if (!context.is_object()) throw Error(impl_->subject(), "the render context must be a JSON object");
    jinja::RenderSettings settings;
    settings.now = options.now;
    jinja::Interpreter interpreter(settings);
    try {
        return interpreter.render(impl_->body, jinja::Value::from_json(context));
    } catch (const jinja::RenderError& error) {
        std::string message = error.type == "TemplateError" ? error.message : error.type + ": " + error.message;
        throw Error(impl_->subject(), (error.located ? impl_->where(error.offset) : std::string()) + message);
    }
}

std::string render_chat(const ChatTemplate& chat_template, const nlohmann::ordered_json& messages,
                        const nlohmann::ordered_json& tools, bool add_generation_prompt,
                        const nlohmann::ordered_json& extra_vars, const std::optional<std::string>& bos_token,
                        const std::optional<std::string>& eos_token, const ChatTemplateOptions& options) {
    nlohmann::ordered_json context = nlohmann::ordered_json::object();
    context["messages"] = messages;
    context["tools"] = tools;
    context["documents"] = nullptr;
    context["add_generation_prompt"] = add_generation_prompt;
    if (bos_token) context["bos_token"] = *bos_token;
    if (eos_token) context["eos_token"] = *eos_token;
    if (!extra_vars.is_null()) {
        if (!extra_vars.is_object()) throw Error(chat_template.name(), "extra template variables must be a JSON object");
        for (const auto& [key, value] : extra_vars.items()) context[key] = value;
    }
    return chat_template.render(context, options);
}

const ChatTemplate& ModelChatTemplate::select(bool with_tools) const {
    if (with_tools) {
        const auto it = templates.find("tool_use");
        if (it != templates.end()) return *it->second;
    }
    const auto it = templates.find("default");
    if (it != templates.end()) return *it->second;
    std::string names;
    for (const auto& [name, t] : templates) names += (names.empty() ? "" : ", ") + name;
    throw Error(origin.string(), "no 'default' chat template (it has: " + (names.empty() ? "none" : names) +
                                     "); transformers would ask for chat_template=NAME");
}

std::string ModelChatTemplate::apply(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                     bool add_generation_prompt, const nlohmann::ordered_json& extra_vars,
                                     const ChatTemplateOptions& options) const {
    const ChatTemplate& chosen = select(!tools.is_null());
    nlohmann::ordered_json context = nlohmann::ordered_json::object();
    context["messages"] = messages;
    context["tools"] = tools;
    context["documents"] = nullptr;
    context["add_generation_prompt"] = add_generation_prompt;
    for (const auto& [key, value] : special_tokens.items()) context[key] = value;
    if (!extra_vars.is_null()) {
        if (!extra_vars.is_object()) throw Error(chosen.name(), "extra template variables must be a JSON object");
        for (const auto& [key, value] : extra_vars.items()) context[key] = value;
    }
    return chosen.render(context, options);
}

namespace {

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path.string(), "cannot open the file");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

nlohmann::ordered_json read_json(const fs::path& path) {
    try {
        return nlohmann::ordered_json::parse(read_text(path));
    } catch (const nlohmann::json::exception& error) {
        throw Error(path.string(), std::string("invalid JSON: ") + error.what());
    }
}

// A special token as tokenizer_config.json writes it: a string, or an AddedToken object.
std::optional<std::string> token_text(const nlohmann::ordered_json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_object() && value.contains("content") && value["content"].is_string())
        return value["content"].get<std::string>();
    return std::nullopt;
}

constexpr const char* kSpecialTokenNames[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                             "pad_token", "cls_token", "mask_token"};

ModelChatTemplate load_from_folder(const fs::path& folder) {
    ModelChatTemplate result;
    const fs::path config_path = folder / "tokenizer_config.json";
    nlohmann::ordered_json config = nlohmann::ordered_json::object();
    if (fs::exists(config_path)) config = read_json(config_path);
    if (!config.is_object()) throw Error(config_path.string(), "tokenizer_config.json is not a JSON object");

    const auto add = [&](const std::string& name, std::string source, const fs::path& from) {
        const std::string label = name == "default" ? from.filename().string() : from.filename().string() + ":" + name;
        result.templates[name] = std::make_shared<const ChatTemplate>(ChatTemplate::parse(std::move(source), label));
    };

    const fs::path jinja_path = folder / "chat_template.jinja";
    if (fs::exists(jinja_path)) {
        add("default", read_text(jinja_path), jinja_path);
        result.origin = jinja_path;
        const fs::path extra = folder / "additional_chat_templates";
        if (fs::is_directory(extra)) {
            for (const auto& entry : fs::directory_iterator(extra))
                if (entry.path().extension() == ".jinja") add(entry.path().stem().string(), read_text(entry.path()), entry.path());
        }
    } else if (config.contains("chat_template") && !config["chat_template"].is_null()) {
        const auto& value = config["chat_template"];
        result.origin = config_path;
        if (value.is_string()) {
            add("default", value.get<std::string>(), config_path);
        } else if (value.is_array()) {
            for (const auto& item : value) {
                if (!item.is_object() || !item.contains("name") || !item.contains("template") || !item["name"].is_string() ||
                    !item["template"].is_string())
                    throw Error(config_path.string(), "chat_template list entries must be {\"name\": ..., \"template\": ...}");
                add(item["name"].get<std::string>(), item["template"].get<std::string>(), config_path);
            }
        } else {
            throw Error(config_path.string(), "chat_template must be a string or a list of named templates");
        }
    } else if (fs::exists(folder / "chat_template.json")) {
        const fs::path path = folder / "chat_template.json";
        const nlohmann::ordered_json processor = read_json(path);
        if (!processor.is_object() || !processor.contains("chat_template") || !processor["chat_template"].is_string())
            throw Error(path.string(), "no \"chat_template\" string");
        add("default", processor["chat_template"].get<std::string>(), path);
        result.origin = path;
    }
    if (result.templates.empty())
        throw Error(folder.string(), "no chat template (looked for chat_template.jinja, tokenizer_config.json "
                                     "\"chat_template\" and chat_template.json)");

    for (const char* name : kSpecialTokenNames) {
        if (!config.contains(name)) continue;
        if (const auto text = token_text(config[name])) result.special_tokens[name] = *text;
    }
    if (config.contains("additional_special_tokens") && config["additional_special_tokens"].is_array()) {
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (const auto& item : config["additional_special_tokens"])
            if (const auto text = token_text(item)) list.push_back(*text);
        if (!list.empty()) result.special_tokens["additional_special_tokens"] = std::move(list);
    }
    return result;
}

ModelChatTemplate load_from_gguf(const fs::path& file) {
    const auto checkpoint = Checkpoint::open(file);
    const nlohmann::json& metadata = checkpoint->metadata();
    ModelChatTemplate result;
    result.origin = file;
    const auto add = [&](const std::string& name, const nlohmann::json& value) {
        if (!value.is_string()) throw Error(file.string(), "chat template metadata is not a string");
        const std::string label = file.filename().string() + (name == "default" ? "" : ":" + name);
        result.templates[name] = std::make_shared<const ChatTemplate>(ChatTemplate::parse(value.get<std::string>(), label));
    };
    if (metadata.contains("tokenizer.chat_template")) add("default", metadata["tokenizer.chat_template"]);
    if (metadata.contains("tokenizer.chat_templates") && metadata["tokenizer.chat_templates"].is_array()) {
        for (const auto& name : metadata["tokenizer.chat_templates"]) {
            if (!name.is_string()) continue;
            const std::string key = "tokenizer.chat_template." + name.get<std::string>();
            if (metadata.contains(key)) add(name.get<std::string>(), metadata[key]);
        }
    }
    if (result.templates.empty()) throw Error(file.string(), "no chat template (GGUF key tokenizer.chat_template is missing)");
    if (metadata.contains("tokenizer.ggml.tokens") && metadata["tokenizer.ggml.tokens"].is_array()) {
        const auto& tokens = metadata["tokenizer.ggml.tokens"];
        static const std::pair<const char*, const char*> ids[] = {
            {"tokenizer.ggml.bos_token_id", "bos_token"},       {"tokenizer.ggml.eos_token_id", "eos_token"},
            {"tokenizer.ggml.unknown_token_id", "unk_token"},   {"tokenizer.ggml.seperator_token_id", "sep_token"},
            {"tokenizer.ggml.padding_token_id", "pad_token"},   {"tokenizer.ggml.cls_token_id", "cls_token"},
            {"tokenizer.ggml.mask_token_id", "mask_token"},
        };
        for (const auto& [key, name] : ids) {
            if (!metadata.contains(key) || !metadata[key].is_number_integer()) continue;
            const auto id = metadata[key].get<int64_t>();
            if (id >= 0 && static_cast<size_t>(id) < tokens.size() && tokens[static_cast<size_t>(id)].is_string())
                result.special_tokens[name] = tokens[static_cast<size_t>(id)].get<std::string>();
        }
    }
    return result;
}

}  // namespace

ModelChatTemplate load_chat_template(const fs::path& folder_or_gguf) {
    if (fs::is_directory(folder_or_gguf)) return load_from_folder(folder_or_gguf);
    if (fs::is_regular_file(folder_or_gguf)) {
        if (folder_or_gguf.filename() == "tokenizer_config.json" || folder_or_gguf.filename() == "chat_template.jinja")
            return load_from_folder(folder_or_gguf.parent_path().empty() ? fs::path(".") : folder_or_gguf.parent_path());
        return load_from_gguf(folder_or_gguf);
    }
    throw Error(folder_or_gguf.string(), "no such folder or file");
}

}  // namespace oxinfer
