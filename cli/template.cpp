// oxinfer template --model MODEL --messages MSGS.json [--tools TOOLS.json] [--no-generation-prompt]
//                  [--var NAME=JSON]... [--chat-template NAME] [--template-file FILE]

#include "args.h"
#include "commands.h"

#include <oxinfer/chat_template.h>
#include <oxinfer/error.h>
#include <oxinfer/hf_cache.h>
#include <oxinfer/profiler.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace oxinfer::cli {
namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path, "cannot open file");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

nlohmann::ordered_json read_json_file(const std::string& path) {
    try {
        return nlohmann::ordered_json::parse(read_file(path));
    } catch (const nlohmann::json::exception& error) {
        throw Error(path, std::string("invalid JSON: ") + error.what());
    }
}

}  // namespace

int run_template(const std::vector<std::string>& argv) {
    auto options = common_options();
    options.push_back({"model", "m", "MODEL", "model folder (tokenizer_config.json, chat_template.jinja), GGUF file or cached repo id"});
    options.push_back({"messages", "", "MSGS.json", "OpenAI-style message list (or an object with \"messages\" and \"tools\")"});
    options.push_back({"tools", "", "TOOLS.json", "list of tools as OpenAI JSON schemas"});
    options.push_back({"no-generation-prompt", "", "", "do not add the assistant prompt at the end"});
    options.push_back({"var", "", "NAME=JSON", "extra template variable, e.g. enable_thinking=false (repeatable)"});
    options.push_back({"chat-template", "", "NAME", "use the model's template of this name (as chat_template=NAME)"});
    options.push_back({"template-file", "", "FILE", "render this Jinja file instead of the model's template"});
    Args args("template", "--model MODEL --messages MSGS.json [--tools TOOLS.json] [--no-generation-prompt] [--var NAME=JSON]...",
              "Renders the model's chat template exactly as Hugging Face transformers'\n"
              "apply_chat_template(messages, tools=..., add_generation_prompt=..., **vars, tokenize=False) does,\n"
              "and prints the text with no added newline.",
              options);
    args.parse(argv);
    if (args.help_requested()) {
        std::fputs(args.help().c_str(), stdout);
        return 0;
    }
    const std::string model_arg = args.required("model");
    const std::string messages_path = args.required("messages");

    nlohmann::ordered_json messages = read_json_file(messages_path);
    nlohmann::ordered_json tools = nullptr;
    if (messages.is_object()) {
        if (messages.contains("tools")) tools = messages["tools"];
        if (!messages.contains("messages")) throw Error(messages_path, "expected a list of messages or {\"messages\": [...]}");
        messages = nlohmann::ordered_json(messages["messages"]);
    }
    if (!messages.is_array()) throw Error(messages_path, "expected a list of messages");
    if (const auto tools_path = args.value("tools")) {
        tools = read_json_file(*tools_path);
        if (!tools.is_array()) throw Error(*tools_path, "expected a list of tools");
    }

    nlohmann::ordered_json vars = nlohmann::ordered_json::object();
    for (const std::string& assignment : args.values("var")) {
        const size_t equals = assignment.find('=');
        if (equals == std::string::npos || equals == 0)
            throw Error("template", "--var takes NAME=JSON, got '" + assignment + "'");
        const std::string name = assignment.substr(0, equals);
        const std::string value = assignment.substr(equals + 1);
        try {
            vars[name] = nlohmann::ordered_json::parse(value);
        } catch (const nlohmann::json::exception&) {
            throw Error("template", "--var " + name + ": '" + value + "' is not JSON (write strings quoted: --var " + name +
                                        "='\"text\"')");
        }
    }

    ModelChatTemplate model;
    {
        profiler::Scope scope("load chat template");
        model = load_chat_template(hf::resolve_model(model_arg));
    }
    if (const auto file = args.value("template-file")) {
        model.templates.clear();
        model.templates["default"] = std::make_shared<const ChatTemplate>(ChatTemplate::parse(read_file(*file), *file));
    }
    if (const auto name = args.value("chat-template")) {
        const auto it = model.templates.find(*name);
        if (it == model.templates.end()) throw Error(model_arg, "no chat template named '" + *name + "'");
        const auto chosen = it->second;
        model.templates.clear();
        model.templates["default"] = chosen;
    }

    std::string text;
    {
        profiler::Scope scope("render");
        text = model.apply(messages, tools, !args.flag("no-generation-prompt"), vars);
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return 0;
}

}  // namespace oxinfer::cli
