#!/usr/bin/env python3
"""Writes the chat-template goldens in tests/data/templates/.

For every template family (a .jinja file here) it renders a fixed set of
conversations with Python's jinja2 set up exactly as HF transformers'
apply_chat_template does (src/transformers/utils/chat_template_utils.py):

  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[AssistantTracker, loopcontrols])
  filters["tojson"] = json.dumps(ensure_ascii=False, ...)
  globals["raise_exception"], globals["strftime_now"]
  render(messages=..., tools=... or None, documents=None,
         add_generation_prompt=..., bos_token=..., eos_token=..., **kwargs)

strftime_now reads a fixed clock (NOW, shown in UTC) so the goldens are
deterministic; the C side gets the same instant.

Output: conversations.json (the inputs) and <family>.golden.json with, for
each conversation and add_generation_prompt, the expected text or the error
the template raises; features.golden.json holds small single-feature
templates with their expected output. Re-run after changing a template or a case:

  python3 scripts/gen_template_golden.py
"""
import json
import os
import sys
from datetime import datetime, timezone

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data", "templates")
NOW = 1721980800  # 2024-07-26 08:00:00 UTC

# family -> (template file, bos_token or None, eos_token)
FAMILIES = {
    "smollm2": ("smollm2.jinja", "<|im_start|>", "<|im_end|>"),
    "qwen2.5": ("qwen2.5.jinja", None, "<|im_end|>"),
    "qwen3": ("qwen3.jinja", None, "<|im_end|>"),
    "llama3.2": ("llama3.2.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    "llama3.3": ("llama3.3.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    "gemma2": ("gemma2.jinja", "<bos>", "<eos>"),
    "gemma3": ("gemma3.jinja", "<bos>", "<eos>"),
    "mistral-nemo": ("mistral-nemo.jinja", "<s>", "</s>"),
    "mistral-small-3.2": ("mistral-small-3.2.jinja", "<s>", "</s>"),
    "phi3.5": ("phi3.5.jinja", "<s>", "<|endoftext|>"),
    # more published templates (copies in llama.cpp's models/templates/)
    "gpt-oss": ("gpt-oss.jinja", "<|startoftext|>", "<|return|>"),
    "hermes3": ("hermes3.jinja", "<|begin_of_text|>", "<|im_end|>"),
    "deepseek-r1-distill": ("deepseek-r1-distill.jinja", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "granite3.3": ("granite3.3.jinja", "<|end_of_text|>", "<|end_of_text|>"),
    "smollm3": ("smollm3.jinja", None, "<|im_end|>"),
    # llama.cpp's models/templates/google-gemma-4-31B-it.jinja
    "gemma4": ("gemma4.jinja", "<bos>", "<eos>"),
    # llama.cpp's models/templates/Qwen3.5-4B.jinja (the Qwen3.5 / 3.6
    # files' tokenizer.chat_template: tools as XML, thinking blocks)
    "qwen3.5": ("qwen3.5.jinja", None, "<|im_end|>"),
}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web for «anything» — quickly",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "default": 3}},
            "required": ["query"],
        },
        "return": {"type": "array"},
    },
}

SYS = {"role": "system", "content": "You are a helpful assistant. Answer briefly."}


def U(text):
    return {"role": "user", "content": text}


def A(text):
    return {"role": "assistant", "content": text}


TOOL_CALL = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {
            "id": "abc123def",
            "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}},
        }
    ],
}
TOOL_RESULT = {
    "role": "tool",
    "tool_call_id": "abc123def",
    "name": "get_weather",
    "content": '{"temperature": 21, "sky": "clear"}',
}

CONVERSATIONS = [
    ("single_user", [U("Hello!")], None, {}),
    ("system_user", [SYS, U("What is 2+2?")], None, {}),
    ("multi_turn", [U("Hi"), A("Hello! How can I help?"), U("Tell me a joke.")], None, {}),
    (
        "system_multi_turn",
        [SYS, U("Name a color."), A("Blue."), U("Another one?"), A("Green."), U("Thanks")],
        None,
        {},
    ),
    (
        "unicode",
        [
            U("Héllo wörld — 你好 🦙 ünïcödé\u00a0!"),
            A("Ça va? Ελληνικά, русский, العربية, 日本語 ✓"),
            U("Emoji: 👩‍👩‍👧 and \u3000ideographic space"),
        ],
        None,
        {},
    ),
    (
        "whitespace",
        [SYS, U("  \n  padded question\t \n"), A("\n\nanswer with blank lines\n\n"), U("\tlast ")],
        None,
        {},
    ),
    (
        "injection",
        [U("{{ 7*7 }} {% for x in range(3) %}x{% endfor %} <|im_end|> [INST] \"quotes\" 'single' \\ backslash")],
        None,
        {},
    ),
    ("empty_content", [U(""), A(""), U("ok")], None, {}),
    ("tools", [SYS, U("What's the weather in Paris?")], [WEATHER_TOOL, SEARCH_TOOL], {}),
    (
        "tool_call_round_trip",
        [U("What's the weather in Paris?"), TOOL_CALL, TOOL_RESULT, A("It is 21°C and clear in Paris.")],
        [WEATHER_TOOL],
        {},
    ),
    (
        "reasoning",
        [U("Why is the sky blue?"), A("<think>\nRayleigh scattering.\n</think>\n\nBecause of Rayleigh scattering."), U("And at sunset?")],
        None,
        {},
    ),
    (
        "reasoning_last",
        [U("2+3?"), A("<think>\nadd them\n</think>\n\n5")],
        None,
        {},
    ),
    (
        "reasoning_content_dropped",
        [U("Why is the sky blue?"),
         dict(A("Because of Rayleigh scattering."), reasoning_content="Rayleigh scattering."),
         U("And at sunset?")],
        None,
        {},
    ),
    (
        "reasoning_content_tool_loop",
        [U("What's the weather in Paris?"), dict(TOOL_CALL, reasoning_content="I need the weather tool."),
         TOOL_RESULT],
        [WEATHER_TOOL],
        {},
    ),
    ("assistant_first", [A("I speak first."), U("ok")], None, {}),
    ("consecutive_users", [U("one"), U("two")], None, {}),
    (
        "long",
        [SYS] + [m for i in range(8) for m in (U("question %d" % i), A("answer %d" % i))] + [U("final")],
        None,
        {},
    ),
    ("kwargs_no_thinking", [U("Quick: capital of France?")], None, {"enable_thinking": False}),
    ("kwargs_date", [SYS, U("What day is it?")], None, {"date_string": "01 Jan 2025"}),
    (
        "kwargs_builtin_tools",
        [
            U("Search for llamas"),
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "abc123def", "type": "function", "function": {"name": "brave_search", "arguments": {"query": "llamas"}}}],
            },
        ],
        None,
        {"builtin_tools": ["brave_search", "wolfram_alpha", "code_interpreter"]},
    ),
    ("kwargs_tools_in_system", [SYS, U("Weather?")], [WEATHER_TOOL], {"tools_in_user_message": False}),
    (
        "multimodal_parts",
        [
            {"role": "system", "content": [{"type": "text", "text": "System as parts."}]},
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "  Describe this image. "}]},
        ],
        None,
        {},
    ),
]

# Conversations of one family's own features, rendered for that family only
# (their names are in conversations.json too). gpt-oss (harmony): the
# reasoning effort of the system header, the developer message, tools, and
# a conversation with reasoning ("thinking", as the template reads it), a
# tool call and its result, and a final answer.
HARMONY_CALL = {
    "role": "assistant",
    "content": "",
    "thinking": "The user wants the weather; call get_weather for Paris.",
    "tool_calls": [
        {
            "id": "abc123def",
            "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}},
        }
    ],
}
# Gemma 4: thinking on (enable_thinking: <|think|> in the system turn) and
# off (an empty thought channel after the generation prompt), tools (its
# own declaration syntax, <|"|> quoting), a call with its reasoning
# (reasoning_content, rendered in the thought channel), the tool's result
# (a <|tool_response> block found by tool_call_id), a final answer whose
# own thinking is stripped, a developer message.
GEMMA4_CALL = {
    "role": "assistant",
    "content": "",
    "reasoning_content": "The user wants the weather; call get_weather for Paris.",
    "tool_calls": [
        {
            "id": "abc123def",
            "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}},
        }
    ],
}
FAMILY_CONVERSATIONS = {
    "gemma4": [
        ("gemma4_thinking", [SYS, U("What is 2+2?")], None, {"enable_thinking": True}),
        ("gemma4_thinking_tools", [U("What's the weather in Paris?")], [WEATHER_TOOL, SEARCH_TOOL],
         {"enable_thinking": True}),
        (
            "gemma4_reasoning_tool_round_trip",
            [SYS, U("What's the weather in Paris?"), GEMMA4_CALL, TOOL_RESULT],
            [WEATHER_TOOL],
            {"enable_thinking": True},
        ),
        (
            "gemma4_reasoning_final",
            [SYS, U("What's the weather in Paris?"), GEMMA4_CALL, TOOL_RESULT,
             {"role": "assistant",
              "content": "<|channel>thought\nThe tool says 21 and clear.<channel|>It is 21°C and clear in Paris."}],
            [WEATHER_TOOL],
            {"enable_thinking": True},
        ),
        ("gemma4_developer", [{"role": "developer", "content": "Answer in French."}, U("Hello!")], None, {}),
    ],
    "gpt-oss": [
        ("harmony_effort_low", [SYS, U("What is 2+2?")], None, {"reasoning_effort": "low"}),
        ("harmony_effort_medium", [SYS, U("What is 2+2?")], None, {"reasoning_effort": "medium"}),
        ("harmony_effort_high", [SYS, U("What is 2+2?")], None, {"reasoning_effort": "high"}),
        ("harmony_developer", [{"role": "developer", "content": "Answer in French."}, U("Hello!")], None, {}),
        ("harmony_tools", [SYS, U("What's the weather in Paris?")], [WEATHER_TOOL, SEARCH_TOOL],
         {"reasoning_effort": "high"}),
        (
            "harmony_reasoning_tool_round_trip",
            [SYS, U("What's the weather in Paris?"), HARMONY_CALL, TOOL_RESULT],
            [WEATHER_TOOL],
            {},
        ),
        (
            "harmony_reasoning_final",
            [SYS, U("What's the weather in Paris?"), HARMONY_CALL, TOOL_RESULT,
             {"role": "assistant", "content": "It is 21°C and clear in Paris.",
              "thinking": "The tool says 21 and clear."}],
            [WEATHER_TOOL],
            {},
        ),
        ("harmony_identity", [U("Who are you?")], None, {"model_identity": "You are a test model."}),
    ],
}


# Small templates exercising one feature each (filters, tests, slicing,
# whitespace control, loops, macros, ...), rendered with these variables.
FEATURE_VARS = {
    "s": "  Hello, World  ",
    "u": "héllo wörld ß straße",
    "n": 7,
    "f": 2.5,
    "big": 12345678901234,
    "items": [3, 1, 2],
    "words": ["b", "A", "c", "a"],
    "d": {"b": 2, "a": 1, "items": "x"},
    "msgs": [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None},
        {"role": "user", "content": "bye", "name": "bob"},
    ],
    "nested": {"x": {"y": [10, 20, {"z": "deep"}]}},
    "empty": [],
    "t": True,
    "nil": None,
}

FEATURES = [
    # literals and output
    ("lit_int", "{{ 1 }}|{{ -3 }}|{{ 1_000 }}|{{ 0 }}"),
    ("lit_float", "{{ 1.5 }}|{{ 2.0 }}|{{ 1e3 }}|{{ 0.1 + 0.2 }}|{{ 1e20 }}|{{ 1.5e-7 }}|{{ 3.0e16 }}"),
    ("lit_str", "{{ 'a\\tb\\n' }}|{{ \"x'y\" }}|{{ 'a' 'b' }}|{{ '\\u00e9\\x41' }}"),
    ("lit_bool_none", "{{ true }} {{ True }} {{ false }} {{ none }} {{ None }}"),
    ("lit_list", "{{ [1, 'a', none, true, 1.5] }}|{{ [] }}|{{ [[1], [2, [3]]] }}"),
    ("lit_dict", "{{ {'a': 1, 'b': [1, 2]} }}|{{ {} }}"),
    ("lit_tuple", "{{ (1, 2) }}|{{ (1,) }}|{{ () }}"),
    ("repr_quotes", "{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'nl\\n'] }}"),
    # arithmetic
    ("arith", "{{ 7 + 3 }} {{ 7 - 10 }} {{ 7 * 3 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }}"),
    ("arith_float", "{{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ f * 2 }} {{ n / 7 }} {{ 1 + true }}"),
    ("concat", "{{ 'a' + 'b' }} {{ 'a' ~ 1 ~ none ~ true }} {{ [1] + [2, 3] }} {{ 'ab' * 3 }} {{ 3 * [0] }}"),
    ("precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }} {{ 2 ** 3 ** 2 }} {{ not true or true }} {{ (1 + 2) ~ 3 }} {{ 1 ~ (2 + 3) }} {{ 2 * 3 ~ 4 }}"),
    ("filter_precedence", "{{ 'a' + s | trim + 'b' }}|{{ -n | abs }}|{{ ' x ' | trim | upper }}"),
    # comparisons and logic
    ("compare", "{{ 1 < 2 }} {{ 2 <= 2 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ 1 != 2 }} {{ [1, 2] < [1, 3] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}"),
    ("logic", "{{ true and 'x' }} {{ false or 'y' }} {{ none or [] }} {{ 0 and 1 }} {{ not none }}"),
    ("in_ops", "{{ 'ell' in 'hello' }} {{ 2 in items }} {{ 'a' in d }} {{ 'zz' not in d }} {{ 5 not in items }} {{ '' in 'x' }}"),
    ("condexpr", "{{ 'yes' if t else 'no' }} {{ 'yes' if nil else 'no' }} [{{ 'x' if false }}]"),
    # attribute and subscript
    ("attr_item", "{{ nested.x.y[1] }} {{ nested['x']['y'][2].z }} {{ nested.x.y.0 }} {{ msgs[-1].name }} {{ d['b'] }}"),
    ("attr_missing", "[{{ d.zzz }}][{{ msgs[0].nope }}][{{ items[10] }}][{{ nil.x }}][{{ 'abc'[5] }}]"),
    ("dict_method_attr", "{{ d.items is defined }} {{ d['items'] }} {{ d.get('a') }} {{ d.get('zz', 'dflt') }} {{ d.get('zz') }}"),
    ("slices", "{{ items[1:] }} {{ items[:-1] }} {{ items[::-1] }} {{ items[::2] }} {{ 'hello'[1:3] }} {{ 'héllo'[::-1] }} {{ u[2:5] }} {{ items[5:] }} {{ items[-10:1] }}"),
    ("str_index", "{{ 'héllo'[1] }} {{ 'abc'[-1] }}"),
    # strings: methods
    ("str_methods1", "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxhixx'.strip('x') }}|{{ s.upper() }}|{{ s.lower() }}"),
    ("str_methods2", "{{ 'a,b,,c'.split(',') }} {{ ' a  b c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ '  a b  '.split(None, 1) }}"),
    ("str_methods3", "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'hello'.replace('l', 'L') }} {{ 'hello'.replace('l', 'L', 1) }} {{ 'aaa'.replace('', '-') }}"),
    ("str_methods4", "{{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ '-'.join(['a', 'b']) }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }}"),
    ("str_methods5", "{{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ '  '.isspace() }} {{ 'ABC'.isupper() }} {{ 'abc'.islower() }} {{ 'a\\nb\\r\\nc'.splitlines() }}"),
    ("unicode_case", "{{ u.upper() }}|{{ u | upper }}|{{ u.title() }}|{{ u | title }}|{{ u | length }}"),
    # filters
    ("f_trim", "[{{ s | trim }}][{{ 'xxaxx' | trim('x') }}][{{ '\\u00a0\\u3000a\\u2003' | trim }}][{{ none | trim }}][{{ 5 | trim }}]"),
    ("f_case", "{{ 'hello world' | title }} {{ 'hello-world (foo) [bar] <baz>' | title }} {{ \"it's\" | title }} {{ 'HELLO' | capitalize }} {{ 'Ab' | lower }} {{ 'ab' | upper }}"),
    ("f_default", "{{ missing | default('dflt') }} {{ missing | d('dd') }} {{ '' | default('e') }} {{ '' | default('e', true) }} {{ none | default('n') }} {{ none | default('n', boolean=true) }}"),
    ("f_length", "{{ items | length }} {{ 'héllo' | length }} {{ d | length }} {{ missing | length }} {{ items | count }}"),
    ("f_first_last", "{{ items | first }} {{ items | last }} {{ 'abc' | first }} {{ 'abc' | last }} [{{ empty | first }}]"),
    ("f_join", "{{ items | join }} {{ items | join(', ') }} {{ msgs | join('|', attribute='role') }} {{ [1, none, 'a'] | join('-') }}"),
    ("f_list_string", "{{ 'abc' | list }} {{ d | list }} {{ 5 | string }} {{ none | string }} {{ [1, 'a'] | string }}"),
    ("f_int_float", "{{ '42' | int }} {{ ' 7 ' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(5) }} {{ 3.9 | int }} {{ '0x1A' | int(0, 16) }} {{ '2.5' | float }} {{ 'y' | float }} {{ 3 | float }}"),
    ("f_replace", "{{ 'aXbXc' | replace('X', '-') }} {{ 'aXbXc' | replace('X', '-', 1) }} {{ 5 | replace('5', 'five') }}"),
    ("f_items", "{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %}{% for k, v in d.items() %}{{ k }}:{{ v }},{% endfor %}"),
    ("f_select", "{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }} {{ msgs | rejectattr('role', 'eq', 'user') | map(attribute='role') | join(',') }}"),
    ("f_select2", "{{ msgs | selectattr('name') | list | length }} {{ msgs | selectattr('name', 'defined') | list | length }} {{ items | select('odd') | list }} {{ items | reject('odd') | list }} {{ [0, 1, '', 'a', none] | select | list }}"),
    ("generators", "{{ (msgs | selectattr('role', 'eq', 'x')) is true }}{% if empty | map('upper') %}T{% endif %}{% set g = msgs | map(attribute='role') %}[{{ g | first }}][{{ g | join(',') }}][{{ g | join(',') }}]{{ 'user' in (msgs | map(attribute='role')) }}{{ nil | selectattr('x') | list }}{{ nil | map('upper') | list }}"),
    ("err_generator_length", "{{ msgs | selectattr('role') | length }}"),
    ("err_generator_tojson", "{{ msgs | map(attribute='role') | tojson }}"),
    ("f_map", "{{ words | map('upper') | list }} {{ msgs | map(attribute='name', default='anon') | list }} {{ nested.x.y[:2] | map('string') | join }}"),
    ("f_sort", "{{ items | sort }} {{ words | sort }} {{ words | sort(case_sensitive=true) }} {{ items | sort(reverse=true) }} {{ msgs | sort(attribute='role') | map(attribute='role') | list }}"),
    ("f_misc", "{{ items | reverse | list }} {{ 'abc' | reverse }} {{ words | unique | list }} {{ items | min }} {{ items | max }} {{ items | sum }} {{ -3 | abs }} {{ 2.567 | round(1) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.1 | round(0, 'ceil') }}"),
    ("f_dictsort", "{{ d | dictsort }} {{ d | dictsort(reverse=true) }}"),
    ("f_indent", "{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent('> ', blank=true) }}"),
    ("f_tojson", "{{ d | tojson }}|{{ msgs[2] | tojson }}|{{ 'é\"\\\\\\n\\u0001' | tojson }}|{{ [1.0, 2.5, 1e20, true, none] | tojson }}"),
    ("f_tojson_indent", "{{ nested | tojson(indent=2) }}|{{ d | tojson(indent=4, sort_keys=true) }}|{{ [] | tojson(indent=2) }}|{{ {'a': {}} | tojson(indent=1) }}"),
    ("f_tojson_opts", "{{ u | tojson(ensure_ascii=true) }}|{{ d | tojson(separators=(',', ':')) }}|{{ '🦙' | tojson(ensure_ascii=true) }}"),
    ("f_escape_safe", "{{ '<a href=\"x\">&\\'</a>' | e }} {{ '<b>' | safe }}"),
    ("markup", "{{ ('a' | safe) + '<b>' }} {{ '<b>' + ('x' | safe) }} {{ ('<' | safe) ~ '<' }} {{ '<' | e + '<' }} {{ ('<' | safe) + ('>' | safe) }} {{ '<' | e | e }} {{ '<' | forceescape | forceescape }}"),
    ("f_wordcount", "{{ 'hello big_world, 42 times!' | wordcount }}"),
    ("f_format", "{{ '%s and %s' | format('a', 1) }} {{ '%5d|%-4s|%.2f|%x|%%|%r' % (42, 'ab', 3.14159, 255, 'q') }} {{ '%(a)s=%(b)d' | format(a='k', b=3) }} {{ 'n=%d' % 7 }}"),
    ("str_format", "{{ '{} + {} = {}'.format(1, 2, 3) }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{name}!r={name!r}'.format(name='x') }} {{ '{{literal}}'.format() }}"),
    # tests
    ("tests1", "{{ d is mapping }} {{ items is mapping }} {{ s is string }} {{ n is number }} {{ f is number }} {{ t is number }} {{ n is integer }} {{ f is float }} {{ t is boolean }}"),
    ("tests2", "{{ missing is defined }} {{ missing is undefined }} {{ nil is none }} {{ nil is defined }} {{ items is iterable }} {{ s is iterable }} {{ n is iterable }} {{ missing is iterable }} {{ d is sequence }} {{ n is sequence }}"),
    ("tests3", "{{ n is odd }} {{ n is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(2) }} {{ n is eq 7 }} {{ n is equalto(7) }} {{ n is ne 7 }} {{ n is gt 3 }} {{ n is lt(3) }} {{ n is ge 7 }} {{ n is le 6 }}"),
    ("tests4", "{{ t is true }} {{ 1 is true }} {{ false is false }} {{ '' is false }} {{ nil is sameas none }} {{ 'a' is in 'abc' }} {{ 2 is in items }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ range is callable }} {{ n is not none }}"),
    # control flow
    ("if_elif", "{% for x in [1, 2, 3, 4] %}{% if x == 1 %}one{% elif x == 2 %}two{% elif x == 3 %}three{% else %}many{% endif %},{% endfor %}"),
    ("for_loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}"),
    ("for_prev_next", "{% for x in items %}[{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}]{% endfor %}{% for x in items %}{{ loop.cycle('a', 'b') }}{% endfor %}"),
    ("for_else", "{% for x in empty %}x{% else %}empty{% endfor %}|{% for x in items if x > 5 %}{{ x }}{% else %}none above 5{% endfor %}"),
    ("for_filter", "{% for m in msgs if m.role == 'user' %}{{ loop.index }}/{{ loop.length }}:{{ m.content }} {% endfor %}"),
    ("for_unpack", "{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }} {% endfor %}{% for k in d %}{{ k }}{% endfor %}"),
    ("for_dict_str", "{% for c in 'hé' %}<{{ c }}>{% endfor %}{% for x in missing %}never{% endfor %}"),
    ("break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
    ("nested_loops", "{% for a in [1, 2] %}{% for b in [3, 4] %}{{ a }}{{ b }}({{ loop.index }}){% endfor %}/{{ loop.index }} {% endfor %}"),
    ("range", "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ range(0) | list }}"),
    # assignment and scoping
    ("set_scope", "{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}{% if true %}{% set x = 9 %}{% endif %}|{{ x }}"),
    ("set_tuple", "{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set c, d = 'xy' %}{{ c }}{{ d }}"),
    ("namespace", "{% set ns = namespace(count=0, last=none) %}{% for m in msgs %}{% set ns.count = ns.count + 1 %}{% set ns.last = m.role %}{% endfor %}{{ ns.count }} {{ ns.last }}"),
    ("namespace_empty", "{% set ns = namespace() %}{% set ns.a = [1] %}{{ ns.a }} {{ ns.b is defined }}"),
    ("set_block", "{% set block %}Hello {{ n }}!\n  indented{% endset %}[{{ block }}]{% set up | upper %}shout {{ n }}{% endset %}[{{ up }}]"),
    ("set_block_scope", "{% set b = 1 %}{% set blk %}{% set b = 2 %}{{ b }}{% endset %}{{ blk }}{{ b }}{% filter upper %}{% set b = 3 %}x{{ b }}{% endfilter %}{{ b }}"),
    ("for_else_continue", "{% for i in [1, 2] %}{% continue %}{% else %}E1{% endfor %}|{% for i in [1, 2] %}{% if i == 2 %}{% break %}{% endif %}{% else %}E2{% endfor %}|{% for i in [1] %}{% break %}{% else %}E3{% endfor %}"),
    ("lazy_select", "{% set g = n | select('odd') %}{% if g %}lazy{% endif %}{% if nil | map('upper') %}x{% else %}empty{% endif %}{{ 9 is divisibleby 3.0 }}{{ t is divisibleby 2 }}"),
    ("override_messages", "{% set msgs = msgs[1:] %}{{ msgs | length }}{% set msgs = [] %}{{ msgs | length }}"),
    # macros and call
    ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bo', '?') }} {{ greet(punct='.', name='Cy') }}"),
    ("macro_recursion", "{% macro fact(k) %}{% if k <= 1 %}1{% else %}{{ k * (fact(k - 1) | int) }}{% endif %}{% endmacro %}{{ fact(6) }}"),
    ("macro_scope", "{% set g = 'global' %}{% macro m() %}{{ g }}{% set g = 'local' %}{{ g }}{% endmacro %}{{ m() }} {{ g }}"),
    ("call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ n }}{% endcall %}"),
    ("filter_block", "{% filter upper %}shout {{ n }}{% endfilter %}|{% filter trim | title %}  two words  {% endfilter %}"),
    ("with_block", "{% with a = 1, b = n %}{{ a + b }}{% endwith %}[{{ a }}]"),
    # whitespace control (trim_blocks, lstrip_blocks, -, +)
    ("ws_trim_blocks", "{% if true %}\nline1\n{% endif %}\nline2\n"),
    ("ws_lstrip_blocks", "    {% if true %}\n    indented\n    {% endif %}\nend"),
    ("ws_minus", "a   {%- if true -%}   b   {%- endif -%}   c\n{{- ' d ' -}}\n   e {#- comment -#}  f"),
    ("ws_plus", "x\n    {%+ if true +%}\ny\n  {%+ endif %}z"),
    ("ws_vars_not_trimmed", "{{ 'a' }}\n{{ 'b' }}\n    {{ 'c' }}\n"),
    ("ws_comment", "a\n{# comment #}\nb\n  {# indented comment #}\nc {#- x #} d"),
    ("ws_trailing_newline", "text\n"),
    ("ws_crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc"),
    ("ws_mixed", "<<\n{%- for x in items %}\n  {{ x }}\n{%- endfor %}\n>>"),
    ("raw", "{% raw %}{{ not evaluated }} {% if %}{% endraw %}|{%- raw -%}  x  {%- endraw -%}  |"),
    ("generation_passthrough", "{% for m in msgs %}{% if m.role == 'assistant' %}{% generation %}A{% endgeneration %}{% else %}{{ m.role[0] }}{% endif %}{% endfor %}"),
    # globals
    ("strftime", "{{ strftime_now('%Y-%m-%d %H:%M %A %b') }}|{{ strftime_now('%d %b %Y') }}"),
    ("dict_global", "{{ dict(a=1, b='x') }} {{ dict(a=1) | tojson }}"),
    ("none_str_ops", "{{ msgs[2].content }} {{ msgs[2].content is none }} {{ msgs[2].content | string }} {{ (msgs[2].content or '') + 'x' }}"),
    ("undefined_ops", "[{{ missing }}][{{ missing ~ 'x' }}][{{ missing | trim }}][{{ missing | join }}][{{ missing | list }}][{{ missing == missing }}][{{ missing != 1 }}][{{ 'a' in missing }}]"),
    ("loop_in_loop_ns", "{% set ns = namespace(out='') %}{% for m in msgs %}{% for c in m.role %}{% if loop.first %}{% set ns.out = ns.out + c %}{% endif %}{% endfor %}{% endfor %}{{ ns.out }}"),
    ("reverse_index", "{% for m in msgs[::-1] %}{{ (msgs | length - 1) - loop.index0 }}{{ m.role[0] }} {% endfor %}"),
    ("bool_arith", "{{ true + true }} {{ 10 * false }} {{ [1, 2][true] }}"),
    ("big_int", "{{ big * 1000 }} {{ big | string | length }}"),
    ("edge_numbers", "{{ f is even }} {{ 4.0 is even }} {{ 3.0 is odd }} {{ n | round }} {{ -2 | round }} {{ 2.5 | round }} {{ '%s' % [1, 2] }} {{ 1 // 1.0 }} {{ 2 ** 0.5 }}"),
    ("err_slice_int", "{{ n[1:] }}"),
    ("err_slice_dict", "{{ d[1:] }}"),
    ("err_format_extra", "{{ 'no fields' % 'x' }}"),
    ("err_zero_pow", "{{ (n - 7) ** -1 }}"),
    ("err_indent_list", "{{ n | indent }}"),
    ("err_int_undefined", "{{ missing | int }}"),
    # errors (the goldens record that jinja2 fails too)
    ("err_undefined_attr", "{{ missing.attr }}"),
    ("err_undefined_call", "{{ missing() }}"),
    ("err_add_types", "{{ 'a' + 1 }}"),
    ("err_none_concat", "{{ msgs[2].content + 'x' }}"),
    ("err_raise", "{% if true %}{{ raise_exception('custom failure') }}{% endif %}"),
    ("err_div_zero", "{{ 1 / 0 }}"),
    ("err_unpack", "{% set a, b = [1, 2, 3] %}"),
    ("err_mutate", "{{ items.append(4) }}"),
    ("err_ns_assign", "{% set x = 1 %}{% set x.y = 2 %}"),
    ("err_compare", "{{ 1 < 'a' }}"),
    ("err_syntax_unclosed", "{% if true %}no end"),
    ("err_syntax_expr", "{{ 1 + }}"),
    ("err_syntax_tag", "{% frobnicate %}"),
    ("err_unknown_filter", "{{ 1 | nosuchfilter }}"),
    ("err_iterate_int", "{% for x in 5 %}{% endfor %}"),
    ("err_tojson_undefined", "{{ missing | tojson }}"),
]


class AssistantTracker(jinja2.ext.Extension):
    """transformers' {% generation %} tag: renders its body in place (the
    index tracking it also does is not needed for rendering)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.fromtimestamp(NOW, timezone.utc).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, bos, eos, messages, tools, agp, kwargs):
    tmpl = env.from_string(source)
    extra = dict(kwargs)
    if bos is not None:
        extra["bos_token"] = bos
    extra["eos_token"] = eos
    return tmpl.render(messages=messages, tools=tools, documents=None, add_generation_prompt=agp, **extra)


def main():
    env = make_env()
    total = ok = 0
    convs = [{"name": n, "messages": m, "tools": t, "kwargs": k} for n, m, t, k in CONVERSATIONS]
    for extra in FAMILY_CONVERSATIONS.values():
        convs += [{"name": n, "messages": m, "tools": t, "kwargs": k} for n, m, t, k in extra]
    with open(os.path.join(DATA, "conversations.json"), "w", encoding="utf-8") as f:
        json.dump(convs, f, ensure_ascii=False, indent=1)
        f.write("\n")
    for family, (fname, bos, eos) in FAMILIES.items():
        with open(os.path.join(DATA, fname), encoding="utf-8", newline="") as f:
            source = f.read()
        cases = []
        for name, messages, tools, kwargs in CONVERSATIONS + FAMILY_CONVERSATIONS.get(family, []):
            for agp in (True, False):
                case = {"conversation": name, "add_generation_prompt": agp}
                try:
                    case["expected"] = render(env, source, bos, eos, messages, tools, agp, kwargs)
                    ok += 1
                except Exception as e:  # the template refuses this conversation
                    case["error"] = "%s: %s" % (type(e).__name__, e)
                total += 1
                cases.append(case)
        out = {
            "family": family,
            "template": fname,
            "bos_token": bos,
            "eos_token": eos,
            "now": NOW,
            "conversations": "conversations.json",
            "cases": cases,
        }
        path = os.path.join(DATA, family + ".golden.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(out, f, ensure_ascii=False, indent=1)
            f.write("\n")
    features = []
    for name, source in FEATURES:
        case = {"name": name, "template": source}
        try:
            case["expected"] = env.from_string(source).render(**FEATURE_VARS)
        except Exception as e:
            case["error"] = "%s: %s" % (type(e).__name__, e)
        features.append(case)
    with open(os.path.join(DATA, "features.golden.json"), "w", encoding="utf-8") as f:
        json.dump({"vars": FEATURE_VARS, "now": NOW, "cases": features}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    total += len(features)
    print("wrote %d cases (%d rendered, %d errors) for %d families" % (total, ok, total - ok, len(FAMILIES)), file=sys.stderr)


if __name__ == "__main__":
    main()
