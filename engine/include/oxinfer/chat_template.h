#pragma once
// Chat templates: the Jinja2 templates models ship (tokenizer_config.json "chat_template",
// chat_template.jinja, GGUF tokenizer.chat_template) rendered exactly as Hugging Face transformers'
// apply_chat_template(..., tokenize=False) renders them: jinja2's ImmutableSandboxedEnvironment
// with trim_blocks and lstrip_blocks, the loopcontrols extension and {% generation %}, transformers'
// tojson (json.dumps with ensure_ascii=False, indent, separators, sort_keys), raise_exception and
// strftime_now. Template data is JSON (key order kept), the values transformers passes are
// messages, tools, documents, add_generation_prompt, the tokenizer's special tokens and any extra
// keyword arguments (enable_thinking, ...).

#include <nlohmann/json.hpp>

#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace oxinfer {

struct ChatTemplateOptions {
    // What strftime_now() reports (local time); the clock when unset. Tests pin it.
    std::optional<std::tm> now;
};

class ChatTemplate {
public:
    // Parses a template. Throws oxinfer::Error("chat template '<name>'", "line L, column C: ...") on
    // syntax errors (unknown tags, unclosed blocks, unknown filters or tests, ...).
    static ChatTemplate parse(std::string source, std::string name_for_errors = "template");

    ChatTemplate(ChatTemplate&&) noexcept;
    ChatTemplate& operator=(ChatTemplate&&) noexcept;
    ~ChatTemplate();

    // Renders with the variables of `context` (a JSON object). Errors, including messages from
    // raise_exception(), throw oxinfer::Error("chat template '<name>'", "line L, column C: ...").
    std::string render(const nlohmann::ordered_json& context, const ChatTemplateOptions& options = {}) const;

    const std::string& name() const;
    const std::string& source() const;  // as given

private:
    struct Impl;
    explicit ChatTemplate(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// transformers' apply_chat_template(messages, tools=tools, add_generation_prompt=..., **kwargs,
// tokenize=False): the template receives messages, tools (None when `tools` is null), documents
// (None), add_generation_prompt, then the special tokens (bos_token, eos_token, when given) and
// `extra_vars` on top (kwargs win over special tokens, as in transformers).
std::string render_chat(const ChatTemplate& chat_template, const nlohmann::ordered_json& messages,
                        const nlohmann::ordered_json& tools, bool add_generation_prompt,
                        const nlohmann::ordered_json& extra_vars = nlohmann::ordered_json::object(),
                        const std::optional<std::string>& bos_token = std::nullopt,
                        const std::optional<std::string>& eos_token = std::nullopt,
                        const ChatTemplateOptions& options = {});

// A model's chat template(s) and the special-token variables transformers passes with them.
struct ModelChatTemplate {
    // "default", and others by name when the model ships several ("tool_use", "rag", ...).
    std::map<std::string, std::shared_ptr<const ChatTemplate>> templates;
    // transformers' special_tokens_map: {"bos_token": "<s>", "eos_token": ..., "pad_token": ...,
    // "additional_special_tokens": [...]} with only the tokens that are set.
    nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();
    std::filesystem::path origin;  // the file the template came from

    // The template transformers would pick: "tool_use" when tools are given and it exists, else
    // "default". Throws when there is none.
    const ChatTemplate& select(bool with_tools) const;

    // apply_chat_template(..., tokenize=False) with this model's special tokens.
    std::string apply(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools = nullptr,
                      bool add_generation_prompt = true,
                      const nlohmann::ordered_json& extra_vars = nlohmann::ordered_json::object(),
                      const ChatTemplateOptions& options = {}) const;
};

// Loads the chat template of a Hugging Face model folder or a GGUF file, as transformers does:
// chat_template.jinja (and additional_chat_templates/*.jinja) when present, else tokenizer_config.json's
// "chat_template" (a string, or a list of {"name", "template"}), else chat_template.json; for GGUF,
// tokenizer.chat_template (and tokenizer.chat_template.<name>). Special tokens come from
// tokenizer_config.json (strings or AddedToken objects) or the GGUF vocabulary. Throws oxinfer::Error
// naming the folder or file when it has no chat template.
ModelChatTemplate load_chat_template(const std::filesystem::path& folder_or_gguf);

}  // namespace oxinfer
