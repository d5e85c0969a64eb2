// Tool calls pulled out of model output for the Hermes/Qwen, Llama 3 and Gemma 4 formats, on outputs
// written the way those models write them; malformed calls are reported, not dropped. Round trips:
// calls parsed from the real Qwen3 template's goldens render back to the same text, and a
// Gemma-4-style rendering parses back to the calls it was made from.

#include "test_support.h"

#include <oxinfer/chat_template.h>
#include <oxinfer/tool_calls.h>

#include <QTest>

#include <fstream>
#include <sstream>

using namespace oxinfer;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

const fs::path kChatDir = fs::path(OXINFER_REFERENCE_DIR) / "chat";

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

std::string calls_json(const ParsedModelOutput& out) {
    ojson calls = ojson::array();
    for (const ToolCall& call : out.tool_calls) calls.push_back({{"name", call.name}, {"arguments", call.arguments}});
    return calls.dump();
}

// JSON written with single quotes (keeps moc away from raw strings): "{'a': 1}" -> {"a": 1}.
std::string j(const char* text) {
    std::string out(text);
    for (char& c : out)
        if (c == '\'') c = '"';
    return out;
}

}  // namespace

class ToolCallsTest : public QObject {
    Q_OBJECT

private slots:
    // ---- Hermes / Qwen ----

    void qwenThinkingAndTwoCalls() {
        const auto out = parse_model_output(
            "<think>\nThe user wants the weather in two cities; I'll call the tool twice.\n</think>\n\n"
            "I'll check both cities.\n"
            "<tool_call>\n{\"name\": \"get_current_weather\", \"arguments\": {\"location\": \"Paris, France\", \"unit\": \"celsius\"}}\n</tool_call>\n"
            "<tool_call>\n{\"name\": \"get_current_weather\", \"arguments\": {\"location\": \"東京\"}}\n</tool_call><|im_end|>",
            ToolCallFormat::Hermes);
        QCOMPARE(out.content, std::string("I'll check both cities."));
        QVERIFY(out.reasoning);
        QCOMPARE(*out.reasoning, std::string("The user wants the weather in two cities; I'll call the tool twice."));
        QCOMPARE(calls_json(out), j("[{'name':'get_current_weather','arguments':{'location':'Paris, France','unit':'celsius'}},"
 "{'name':'get_current_weather','arguments':{'location':'東京'}}]"));
        QVERIFY(out.problems.empty());
        QVERIFY(out.tool_calls[0].raw.rfind("<tool_call>", 0) == 0);
    }

    void qwenThinkingOpenedByThePrompt() {
        // With the thinking prompt, the template already wrote "<think>\n": the output starts inside it.
        const auto out = parse_model_output("Two plus two is four.\n</think>\n\n4", ToolCallFormat::Hermes);
        QCOMPARE(*out.reasoning, std::string("Two plus two is four."));
        QCOMPARE(out.content, std::string("4"));
        QVERIFY(out.tool_calls.empty());
    }

    void qwenPlainAnswerAndUnfinishedThinking() {
        auto out = parse_model_output("Paris is the capital of France.", ToolCallFormat::Hermes);
        QCOMPARE(out.content, std::string("Paris is the capital of France."));
        QVERIFY(!out.reasoning);
        out = parse_model_output("<think>\nstill thinking when the budget ran out", ToolCallFormat::Hermes);
        QCOMPARE(*out.reasoning, std::string("still thinking when the budget ran out"));
        QCOMPARE(out.content, std::string(""));
    }

    void qwenMalformedCallsAreReported() {
        const auto out = parse_model_output(
            "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n"
            "<tool_call>\n{\"name\": \"search_flights\", \"arguments\": {\"origin\": \"CDG\",}}\n</tool_call>\n"
            "<tool_call>\n{\"arguments\": {\"x\": 1}}\n</tool_call>\n"
            "<tool_call>\n{\"name\": \"get_current_weather\", \"arguments\": {\"location\": \"Ber",
            ToolCallFormat::Hermes);
        QCOMPARE(out.tool_calls.size(), size_t(1));
        QCOMPARE(out.tool_calls[0].name, std::string("get_time"));
        QCOMPARE(out.problems.size(), size_t(3));
        QVERIFY2(out.problems[0].message.find("not valid JSON") != std::string::npos, out.problems[0].message.c_str());
        QVERIFY(out.problems[0].raw.find("search_flights") != std::string::npos);
        QVERIFY2(out.problems[1].message.find("no \"name\"") != std::string::npos, out.problems[1].message.c_str());
        QVERIFY2(out.problems[2].message.find("unterminated <tool_call>") != std::string::npos, out.problems[2].message.c_str());
        QVERIFY(out.problems[2].raw.find("\"Ber") != std::string::npos);
    }

    void qwenArgumentsAsJsonString() {
        const auto out = parse_model_output(
            "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"z\\\": 1, \\\"a\\\": [true, null]}\"}\n</tool_call>"
            "<tool_call>{\"name\": \"g\", \"arguments\": \"not json\"}</tool_call>",
            ToolCallFormat::Hermes);
        QCOMPARE(calls_json(out), j("[{'name':'f','arguments':{'z':1,'a':[true,null]}}]"));
        QCOMPARE(out.problems.size(), size_t(1));
        QVERIFY2(out.problems[0].message.find("is not a JSON object") != std::string::npos, out.problems[0].message.c_str());
    }

    void qwenCoderXmlCalls() {
        const auto out = parse_model_output(
            "Searching now.\n<tool_call>\n<function=search_flights>\n<parameter=origin>\nCDG\n</parameter>\n"
            "<parameter=passengers>\n{\"adults\": 2}\n</parameter>\n<parameter=date>\n2026-05-01\n</parameter>\n"
            "<parameter=direct>\ntrue\n</parameter>\n</function>\n</tool_call>",
            ToolCallFormat::Hermes);
        QCOMPARE(out.content, std::string("Searching now."));
        QCOMPARE(calls_json(out),
                 j("[{'name':'search_flights','arguments':{'origin':'CDG','passengers':{'adults':2},'date':'2026-05-01','direct':true}}]"));
    }

    // Calls parsed out of the real Qwen3 template's renders give the messages they were rendered from.
    void qwenRoundTripThroughTheRealTemplate() {
        const ojson conversations = ojson::parse(read_text(kChatDir / "conversations.json"));
        const auto golden = read_text(kChatDir / "qwen3" / "tool_call_with_content_and_nested_arguments.txt");
        const std::string marker = "<|im_start|>assistant\n";
        const size_t start = golden.find(marker) + marker.size();
        const size_t end = golden.find("<|im_end|>", start);
        const auto parsed = parse_model_output(std::string_view(golden).substr(start, end - start), ToolCallFormat::Hermes);
        QVERIFY(parsed.problems.empty());

        const ojson* conversation = nullptr;
        for (const ojson& c : conversations["cases"])
            if (c["name"] == "tool_call_with_content_and_nested_arguments") conversation = &c;
        QVERIFY(conversation);
        const ojson& original = (*conversation)["messages"][1];
        QCOMPARE(parsed.content, original["content"].get<std::string>());
        QCOMPARE(parsed.tool_calls.size(), original["tool_calls"].size());
        QCOMPARE(parsed.tool_calls[0].arguments.dump(), original["tool_calls"][0]["function"]["arguments"].dump());

        // Put the parsed message in place of the original and render again: same bytes.
        const char* data = std::getenv("OXINFER_TEST_DATA");
        const fs::path folder = fs::path(data ? data : "") / "tokenizers" / "qwen3";
        if (!fs::exists(folder / "tokenizer_config.json")) QFAIL("no Qwen3 tokenizer files: run scripts/fetch-test-data.sh");
        ojson messages = (*conversation)["messages"];
        messages[1] = parsed.to_message();
        const ModelChatTemplate model = load_chat_template(folder);
        QCOMPARE(model.apply(messages, conversations["tools"]["weather_and_flights"], true), golden);
    }

    // ---- Llama 3 ----

    void llamaJsonCall() {
        const auto out = parse_model_output(
            "{\"name\": \"get_current_weather\", \"parameters\": {\"location\": \"San Francisco, CA\", \"unit\": \"fahrenheit\"}}<|eot_id|>",
            ToolCallFormat::Llama3);
        QCOMPARE(out.content, std::string(""));
        QCOMPARE(calls_json(out),
                 j("[{'name':'get_current_weather','arguments':{'location':'San Francisco, CA','unit':'fahrenheit'}}]"));
    }

    void llamaPythonTagJsonAndSeveralCalls() {
        auto out = parse_model_output("<|python_tag|>{\"name\": \"get_time\", \"parameters\": {}}<|eom_id|>", ToolCallFormat::Llama3);
        QCOMPARE(calls_json(out), j("[{'name':'get_time','arguments':{}}]"));
        out = parse_model_output(
            "{\"name\": \"a\", \"parameters\": {\"x\": 1}}; {\"name\": \"b\", \"arguments\": {\"y\": \"}\"}}",
            ToolCallFormat::Llama3);
        QCOMPARE(calls_json(out), j("[{'name':'a','arguments':{'x':1}},{'name':'b','arguments':{'y':'}'}}]"));
        out = parse_model_output("[{\"name\": \"a\", \"parameters\": {}}, {\"name\": \"b\", \"parameters\": {\"k\": [1]}}]", ToolCallFormat::Llama3);
        QCOMPARE(calls_json(out), j("[{'name':'a','arguments':{}},{'name':'b','arguments':{'k':[1]}}]"));
    }

    void llamaBuiltInToolsAndCode() {
        auto out = parse_model_output("<|python_tag|>brave_search.call(query=\"current weather in Menlo Park, California\")<|eom_id|>",
                                      ToolCallFormat::Llama3);
        QCOMPARE(calls_json(out), j("[{'name':'brave_search','arguments':{'query':'current weather in Menlo Park, California'}}]"));
        out = parse_model_output("<|python_tag|>wolfram_alpha.call(query='solve x^2 + 2x = 3', precise=True, n=2)", ToolCallFormat::Llama3);
        QCOMPARE(calls_json(out), j("[{'name':'wolfram_alpha','arguments':{'query':'solve x^2 + 2x = 3','precise':true,'n':2}}]"));
        out = parse_model_output("Let me compute it.<|python_tag|>import math\nprint(math.factorial(20))<|eom_id|>", ToolCallFormat::Llama3);
        QCOMPARE(out.content, std::string("Let me compute it."));
        QCOMPARE(calls_json(out), j("[{'name':'python','arguments':{'code':'import math\\nprint(math.factorial(20))'}}]"));
    }

    void llamaPythonicList() {
        const auto out = parse_model_output("[get_weather(city=\"Paris\", days=3), get_time(), convert(amount=12.5, to=['EUR', 'USD'])]",
                                            ToolCallFormat::Llama3);
        QCOMPARE(calls_json(out), j("[{'name':'get_weather','arguments':{'city':'Paris','days':3}},"
 "{'name':'get_time','arguments':{}},{'name':'convert','arguments':{'amount':12.5,'to':['EUR','USD']}}]"));
    }

    void llamaTextAndMalformed() {
        auto out = parse_model_output("The set {1, 2} has two elements. [1] is a citation.<|eot_id|>", ToolCallFormat::Llama3);
        QCOMPARE(out.content, std::string("The set {1, 2} has two elements. [1] is a citation."));
        QVERIFY(out.tool_calls.empty() && out.problems.empty());
        out = parse_model_output("{\"answer\": 42}", ToolCallFormat::Llama3);
        QCOMPARE(out.content, std::string("{\"answer\": 42}"));
        out = parse_model_output("{\"name\": \"get_time\", \"parameters\": {\"tz\": }}", ToolCallFormat::Llama3);
        QVERIFY(out.tool_calls.empty());
        QCOMPARE(out.problems.size(), size_t(1));
        QVERIFY(out.problems[0].raw.find("get_time") != std::string::npos);
        out = parse_model_output("<|python_tag|>brave_search.call(query=\"unterminated)", ToolCallFormat::Llama3);
        QCOMPARE(out.problems.size(), size_t(1));
        QVERIFY2(out.problems[0].message.find("unterminated string") != std::string::npos, out.problems[0].message.c_str());
        out = parse_model_output("<|python_tag|>{\"parameters\": {}}", ToolCallFormat::Llama3);
        QCOMPARE(out.problems.size(), size_t(1));
    }

    // ---- Gemma 4 ----

    void gemmaThoughtAndCall() {
        const auto out = parse_model_output(
            "<|channel>thought\nThe user asks for the weather; call the tool.<channel|>"
            "<|tool_call>call:get_current_weather{location:<|\"|>Paris, France<|\"|>,unit:<|\"|>celsius<|\"|>}<tool_call|><|tool_response>",
            ToolCallFormat::Gemma4);
        QCOMPARE(*out.reasoning, std::string("The user asks for the weather; call the tool."));
        QCOMPARE(out.content, std::string(""));
        QCOMPARE(calls_json(out), j("[{'name':'get_current_weather','arguments':{'location':'Paris, France','unit':'celsius'}}]"));
        QVERIFY(out.problems.empty());
    }

    void gemmaNestedArguments() {
        const auto out = parse_model_output(
            "Searching.<|tool_call>call:search_flights{date:<|\"|>2026-05-01<|\"|>,destination:<|\"|>JFK<|\"|>,origin:<|\"|>CDG<|\"|>,"
            "passengers:{adults:2,children:1},preferences:{max_price:650.0,meals:[<|\"|>vegetarian<|\"|>],nonstop:false,"
            "seat:<|\"|>window<|\"|>,note:null,offset:-3,ratio:1e-3}}<tool_call|>"
            "<|tool_call>call:tools.shell-exec{cmd:<|\"|>echo {a, b} [c]: d<|\"|>}<tool_call|><turn|>",
            ToolCallFormat::Gemma4);
        QCOMPARE(out.content, std::string("Searching."));
        QCOMPARE(calls_json(out),
                 j("[{'name':'search_flights','arguments':{'date':'2026-05-01','destination':'JFK','origin':'CDG',"
                   "'passengers':{'adults':2,'children':1},'preferences':{'max_price':650.0,'meals':['vegetarian'],'nonstop':false,"
                   "'seat':'window','note':null,'offset':-3,'ratio':0.001}}},"
                   "{'name':'tools.shell-exec','arguments':{'cmd':'echo {a, b} [c]: d'}}]"));
    }

    void gemmaMalformedCallsAreReported() {
        const auto out = parse_model_output(
            "<|tool_call>call:get_time{}<tool_call|>"
            "<|tool_call>get_time{}<tool_call|>"
            "<|tool_call>call:bad name{a:1}<tool_call|>"
            "<|tool_call>call:f{a 1}<tool_call|>"
            "<|tool_call>call:f{a:<|\"|>open}<tool_call|>"
            "<|tool_call>call:f{a:1} trailing<tool_call|>"
            "<|tool_call>call:get_current_weather{location:<|\"|>Par",
            ToolCallFormat::Gemma4);
        QCOMPARE(calls_json(out), j("[{'name':'get_time','arguments':{}}]"));
        QCOMPARE(out.problems.size(), size_t(6));
        const char* expected[] = {"does not start with 'call:'", "invalid function name", "expected ':'", "unterminated <|\"|> string",
                                  "unexpected text after the arguments", "unterminated <|tool_call>"};
        for (size_t i = 0; i < 6; ++i)
            QVERIFY2(out.problems[i].message.find(expected[i]) != std::string::npos, out.problems[i].message.c_str());
    }

    // A template that writes calls the way Gemma 4's does (keys sorted, bare; strings in <|"|>)
    // and the parser agree.
    void gemmaRoundTrip() {
        const ChatTemplate t = ChatTemplate::parse(
            "{%- macro arg(v) -%}\n"
            "{%- if v is string -%}<|\"|>{{ v }}<|\"|>\n"
            "{%- elif v is boolean -%}{{ 'true' if v else 'false' }}\n"
            "{%- elif v is none -%}null\n"
            "{%- elif v is mapping -%}{{ '{' }}{% for k, x in v|dictsort %}{{ k }}:{{ arg(x) }}{{ ',' if not loop.last }}{% endfor %}{{ '}' }}\n"
            "{%- elif v is sequence -%}[{% for x in v %}{{ arg(x) }}{{ ',' if not loop.last }}{% endfor %}]\n"
            "{%- else -%}{{ v }}{%- endif -%}\n"
            "{%- endmacro -%}\n"
            "{%- for call in message.tool_calls -%}<|tool_call>call:{{ call.function.name }}{{ arg(call.function.arguments) }}<tool_call|>{%- endfor -%}",
            "gemma4-like");
        const ojson message = ojson::parse(j(
            "{'tool_calls': [{'function': {'name': 'plan', 'arguments': {'when': '2026-05-01 09:00', 'who': ['Ann', 'Bo'],"
            " 'where': {'city': 'Oslo', 'indoor': true}, 'budget': 120.5, 'count': 3, 'memo': null, 'text': 'a, b: {c}'}}},"
            " {'function': {'name': 'get_time', 'arguments': {}}}]}"));
        const std::string rendered = t.render({{"message", message}});
        QVERIFY2(detect_tool_call_format(t.source()) == ToolCallFormat::Gemma4, rendered.c_str());
        const auto parsed = parse_model_output(rendered, ToolCallFormat::Gemma4);
        QVERIFY(parsed.problems.empty());
        QCOMPARE(parsed.tool_calls.size(), size_t(2));
        QCOMPARE(parsed.tool_calls[0].name, std::string("plan"));
        // Same values (the template sorts keys, so compare as unordered JSON).
        QVERIFY(nlohmann::json::parse(parsed.tool_calls[0].arguments.dump()) ==
                nlohmann::json::parse(message["tool_calls"][0]["function"]["arguments"].dump()));
        QCOMPARE(parsed.tool_calls[1].arguments.dump(), std::string("{}"));
    }

    // ---- helpers ----

    void formatsByNameAndFromTemplates() {
        QVERIFY(tool_call_format_from_name("qwen") == ToolCallFormat::Hermes);
        QVERIFY(tool_call_format_from_name("llama3") == ToolCallFormat::Llama3);
        QVERIFY(tool_call_format_from_name("gemma4") == ToolCallFormat::Gemma4);
        QVERIFY(!tool_call_format_from_name("mistral"));
        QCOMPARE(std::string(tool_call_format_name(ToolCallFormat::Gemma4)), std::string("gemma4"));
        QVERIFY(detect_tool_call_format("...<tool_call>\n{\"name\": ...") == ToolCallFormat::Hermes);
        QVERIFY(detect_tool_call_format("{{ '<|python_tag|>' + x }}") == ToolCallFormat::Llama3);
        QVERIFY(!detect_tool_call_format("{% for m in messages %}{{ m.content }}{% endfor %}"));
    }

    void toMessage() {
        const auto out = parse_model_output("<think>r</think>hi<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>",
                                            ToolCallFormat::Hermes);
        QCOMPARE(out.to_message().dump(),
                 j("{'role':'assistant','content':'hi','reasoning_content':'r','tool_calls':[{'type':'function','function':{'name':'f','arguments':{'a':1}}}]}"));
    }
};

QTEST_MAIN(ToolCallsTest)
#include "test_tool_calls.moc"
