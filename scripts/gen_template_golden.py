#!/usr/bin/env python3
"""Writes the chat-template goldens in tests/data/templates/.

For every template family (a .jinja file here) it renders a fixed set of
conversations with Python's jinja2 set up exactly as HF transformers'
apply_chat_template does (src/transformers/utils/chat_template_utils.py):

  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[loopcontrols])
  filters["tojson"] = json.dumps(ensure_ascii=False, ...)
  globals["raise_exception"], globals["strftime_now"]
  render(messages=..., tools=... or None, documents=None,
         add_generation_prompt=..., bos_token=..., eos_token=..., **kwargs)

strftime_now reads a fixed clock (NOW, shown in UTC) so the goldens are
deterministic; the C side gets the same instant.

Output: <family>.golden.json with the inputs and either the expected text or
the error the template raises. Re-run after changing a template or a case:

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


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.fromtimestamp(NOW, timezone.utc).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
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
    for family, (fname, bos, eos) in FAMILIES.items():
        with open(os.path.join(DATA, fname), encoding="utf-8", newline="") as f:
            source = f.read()
        cases = []
        for name, messages, tools, kwargs in CONVERSATIONS:
            for agp in (True, False):
                case = {
                    "name": "%s/%s" % (name, "gen" if agp else "nogen"),
                    "messages": messages,
                    "tools": tools,
                    "kwargs": kwargs,
                    "add_generation_prompt": agp,
                }
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
            "cases": cases,
        }
        path = os.path.join(DATA, family + ".golden.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(out, f, ensure_ascii=False, indent=1)
            f.write("\n")
    print("wrote %d cases (%d rendered, %d errors) for %d families" % (total, ok, total - ok, len(FAMILIES)), file=sys.stderr)


if __name__ == "__main__":
    main()
