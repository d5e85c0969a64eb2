#pragma once
// Tool calls in model output: the text a model generates (decoded with its special tokens) split
// into prose, reasoning and structured calls {name, arguments}, for the formats the chat
// templates teach:
//
//   Hermes / Qwen   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>  (Qwen2.5, Qwen3,
//                   Hermes), also the XML body Qwen3-Coder / Qwen3.5 use inside <tool_call>:
//                   <function=f><parameter=k>v</parameter></function>; reasoning in <think>...</think>.
//   Llama 3         {"name": "f", "parameters": {...}} as the whole reply (Llama 3.1-3.3 JSON tool
//                   calling), after <|python_tag|> (also `tool.call(k="v")` built-in calls, and
//                   plain code for the code interpreter), or the pythonic list [f(k=v), g()] of Llama 3.2.
//   Gemma 4         <|tool_call>call:f{k:<|"|>text<|"|>,n:3,o:{a:true},l:[1,2]}<tool_call|>, reasoning
//                   in <|channel>thought\n...<channel|>.
//
// Calls that cannot be read are reported in `problems` with their text, never dropped silently.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oxinfer {

enum class ToolCallFormat { Hermes, Llama3, Gemma4 };

std::string_view tool_call_format_name(ToolCallFormat format);  // "hermes", "llama3", "gemma4"
// "hermes" (or "qwen"), "llama3" (or "llama"), "gemma4"; nullopt otherwise.
std::optional<ToolCallFormat> tool_call_format_from_name(std::string_view name);
// The format a chat template teaches, from the markers in its source; nullopt when none is found.
std::optional<ToolCallFormat> detect_tool_call_format(std::string_view chat_template_source);

struct ToolCall {
    std::string name;
    nlohmann::ordered_json arguments = nlohmann::ordered_json::object();  // key order as written
    std::string raw;  // the call as it appeared in the output
};

struct ToolCallProblem {
    std::string message;  // what is wrong with it
    std::string raw;      // the text that could not be read as a call
};

struct ParsedModelOutput {
    std::string content;                   // the prose around the calls, trimmed
    std::optional<std::string> reasoning;  // the thinking text, when the model wrote one
    std::vector<ToolCall> tool_calls;
    std::vector<ToolCallProblem> problems;

    // As an OpenAI-style assistant message: {"role": "assistant", "content": ..., "reasoning_content":
    // ..., "tool_calls": [{"type": "function", "function": {"name": ..., "arguments": {...}}}]}, the
    // shape the chat templates read back.
    nlohmann::ordered_json to_message() const;
};

ParsedModelOutput parse_model_output(std::string_view text, ToolCallFormat format);

}  // namespace oxinfer
