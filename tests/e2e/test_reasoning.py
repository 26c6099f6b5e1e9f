"""Reasoning through the server with the official openai client, on the
default model (SmolLM2) given thinking templates (tests/data/templates:
Qwen3's, whose model opens <think> itself; Qwen3.5's, whose generation
prompt opens it). A grammar forces the think format (the small model would
not think by itself): the thinking becomes message.reasoning_content (never
in content), the answer content; streamed deltas join to the non-streamed
message; reasoning_format "none" (and --reasoning-format none) keep the
raw text in content; a bad reasoning_format is a 400 naming it. Then the
thinking budget (closed at exactly N tokens by the engine's forced end
marker; its errors), JSON schemas and required calls on the answer only,
reasoning_effort and history, the other families on random-weight files
(qwen3, Gemma 4's thought channel, gpt-oss's analysis channel), and
`nucleus chat`'s display of the thinking."""

import pathlib

import openai
import pytest
import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "tests/data/templates"
ASK = [{"role": "user", "content": "What is the capital of France?"}]
LOWER = set("abcdefghijklmnopqrstuvwxyz ")

# The model opens the block itself (Qwen3), then answers.
THINK_THEN_ANSWER = ('root ::= "<think>\\n" [a-z ]{3,40} "\\n</think>\\n\\n" '
                     '[a-z ]{3,40}')
# The prompt opened the block (Qwen3.5's generation prompt ends "<think>\n").
INSIDE_THEN_ANSWER = 'root ::= [a-z ]{3,40} "\\n</think>\\n\\n" [a-z ]{3,40}'


@pytest.fixture(scope="module")
def qwen3(start_server):
    return start_server("-c", "1024", "-t", "2", "--chat-template",
                        str(TEMPLATES / "qwen3.jinja"))


@pytest.fixture(scope="module")
def client(qwen3):
    return openai.OpenAI(base_url=qwen3.url + "/v1", api_key="unused")


def whole_and_streamed(client, **args):
    m = client.chat.completions.create(**args).choices[0].message
    r_text, c_text, finish = "", "", None
    for chunk in client.chat.completions.create(stream=True, **args):
        d = chunk.choices[0].delta
        r_text += (d.model_extra or {}).get("reasoning_content") or ""
        c_text += d.content or ""
        finish = chunk.choices[0].finish_reason or finish
    return m, (r_text, c_text), finish


def test_think_block_is_reasoning_content(client):
    for seed in (1, 2):
        m, streamed, finish = whole_and_streamed(
            client, model="m", messages=ASK, temperature=1, seed=seed,
            max_tokens=100, extra_body={"grammar": THINK_THEN_ANSWER})
        reasoning = m.model_extra["reasoning_content"]
        assert reasoning and set(reasoning) <= LOWER, reasoning
        assert reasoning == reasoning.strip()
        assert m.content and set(m.content) <= LOWER, m.content
        assert "<" not in m.content
        assert streamed == (reasoning, m.content)
        assert finish == "stop"


def test_reasoning_format_none_keeps_the_text(client):
    args = dict(model="m", messages=ASK, temperature=1, seed=3,
                max_tokens=100, extra_body={"grammar": THINK_THEN_ANSWER})
    split = client.chat.completions.create(**args).choices[0].message
    args["extra_body"] = {"grammar": THINK_THEN_ANSWER,
                          "reasoning_format": "none"}
    m, streamed, _ = whole_and_streamed(client, **args)
    assert "reasoning_content" not in (m.model_extra or {})
    assert m.content == (f"<think>\n{split.model_extra['reasoning_content']}"
                         f"\n</think>\n\n{split.content}")
    assert streamed == ("", m.content)


def test_bad_reasoning_format(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model="m", messages=ASK, max_tokens=2,
            extra_body={"reasoning_format": "deepseek-legacy"})
    assert e.value.body["param"] == "reasoning_format"


def test_prompt_opens_the_block(start_server):
    srv = start_server("-c", "1024", "-t", "2", "--chat-template",
                       str(TEMPLATES / "qwen3.5.jinja"))
    c = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused")
    prompt = requests.post(srv.url + "/apply-template",
                           json={"messages": ASK}, timeout=30).json()["prompt"]
    assert prompt.endswith("<think>\n")
    m, streamed, _ = whole_and_streamed(
        c, model="m", messages=ASK, temperature=1, seed=4, max_tokens=100,
        extra_body={"grammar": INSIDE_THEN_ANSWER})
    reasoning = m.model_extra["reasoning_content"]
    assert reasoning and set(reasoning) <= LOWER
    assert m.content and "<" not in m.content
    assert streamed == (reasoning, m.content)


def test_server_reasoning_format_none(start_server):
    srv = start_server("-c", "1024", "-t", "2", "--reasoning-format", "none",
                       "--chat-template", str(TEMPLATES / "qwen3.jinja"))
    c = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused")
    args = dict(model="m", messages=ASK, temperature=1, seed=5,
                max_tokens=100)
    m = c.chat.completions.create(
        extra_body={"grammar": THINK_THEN_ANSWER}, **args).choices[0].message
    assert m.content.startswith("<think>\n")
    assert "reasoning_content" not in (m.model_extra or {})
    # the request's own field wins over the server's
    m = c.chat.completions.create(
        extra_body={"grammar": THINK_THEN_ANSWER, "reasoning_format": "auto"},
        **args).choices[0].message
    assert m.model_extra["reasoning_content"]
    assert not m.content.startswith("<think>")


# ---------------------------------------------------------------- budget

def test_budget_closes_at_exactly_n(start_server):
    """Qwen3.5's prompt opens the block: after N tokens of thinking the
    engine writes </think> itself (the tokens the logprobs list show), and
    the answer follows; usage counts the block's tokens."""
    srv = start_server("-c", "1024", "-t", "2", "--chat-template",
                       str(TEMPLATES / "qwen3.5.jinja"))
    c = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused")
    for n, seed in ((8, 1), (3, 2), (0, 3)):
        r = c.chat.completions.create(
            model="m", messages=ASK, temperature=1, seed=seed, max_tokens=40,
            logprobs=True, extra_body={"max_reasoning_tokens": n,
                                       "reasoning_format": "none"})
        toks = [t.token for t in r.choices[0].logprobs.content]
        assert "</think>" not in "".join(toks[:n]), toks
        k = next(i for i in range(n, len(toks))
                 if "".join(toks[n:i + 1]) == "</think>") + 1 - n
        assert r.usage.completion_tokens_details.reasoning_tokens == n + k
        # split: the same reply, its first n tokens the reasoning
        s = c.chat.completions.create(
            model="m", messages=ASK, temperature=1, seed=seed, max_tokens=40,
            extra_body={"max_reasoning_tokens": n}).choices[0].message
        assert (s.model_extra.get("reasoning_content") or "") == \
            "".join(toks[:n]).strip()
        streamed = whole_and_streamed(
            c, model="m", messages=ASK, temperature=1, seed=seed,
            max_tokens=40, extra_body={"max_reasoning_tokens": n})
        assert streamed[1] == ((s.model_extra.get("reasoning_content") or ""),
                               s.content)


def test_budget_errors(client, start_server):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model="m", messages=ASK, max_tokens=6,
            extra_body={"max_reasoning_tokens": 8})
    assert e.value.body["param"] == "max_reasoning_tokens"
    assert "max_tokens (6)" in e.value.body["message"]
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model="m", messages=ASK, max_tokens=6,
            extra_body={"max_reasoning_tokens": -2})
    assert e.value.body["param"] == "max_reasoning_tokens"
    # thinking switched off: no block to budget
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model="m", messages=ASK, max_tokens=6,
            extra_body={"max_reasoning_tokens": 2,
                        "chat_template_kwargs": {"enable_thinking": False}})
    assert e.value.body["param"] == "max_reasoning_tokens"
    # a model without thinking
    plain = start_server("-c", "512", "-t", "1")
    r = requests.post(plain.url + "/v1/chat/completions", json={
        "messages": ASK, "max_tokens": 4, "max_reasoning_tokens": 2},
        timeout=30)
    assert r.status_code == 400
    assert r.json()["error"]["param"] == "max_reasoning_tokens"


def test_server_budget_default(start_server):
    srv = start_server("-c", "1024", "-t", "2", "--reasoning-budget", "5",
                       "--chat-template", str(TEMPLATES / "qwen3.5.jinja"))
    c = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused")
    r = c.chat.completions.create(
        model="m", messages=ASK, temperature=1, seed=1, max_tokens=30,
        logprobs=True, extra_body={"reasoning_format": "none"})
    toks = [t.token for t in r.choices[0].logprobs.content]
    assert "".join(toks[5:]).startswith("</think>"), toks


# ------------------------------------------------- grammars on the answer

SCHEMA = {"type": "object",
          "properties": {"city": {"type": "string", "maxLength": 12}},
          "required": ["city"], "additionalProperties": False}


def test_json_schema_constrains_the_answer_only(client):
    """Qwen3's model opens the block itself: the server opens it in the
    prompt, the thinking is free text (the budget closes it), the answer
    after </think> validates."""
    import json

    import jsonschema
    for seed in (1, 2):
        args = dict(model="m", messages=ASK, temperature=1, seed=seed,
                    max_tokens=80,
                    response_format={"type": "json_schema", "json_schema": {
                        "name": "city", "schema": SCHEMA}},
                    extra_body={"max_reasoning_tokens": 12})
        m, streamed, finish = whole_and_streamed(client, **args)
        assert m.model_extra["reasoning_content"]
        jsonschema.validate(json.loads(m.content), SCHEMA)
        assert streamed == (m.model_extra["reasoning_content"], m.content)
        assert finish == "stop"


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": SCHEMA}}


def test_required_call_after_thinking(client):
    import json

    import jsonschema
    r = client.chat.completions.create(
        model="m", messages=ASK, tools=[WEATHER], tool_choice="required",
        temperature=1, seed=4, max_tokens=80,
        extra_body={"max_reasoning_tokens": 10})
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls"
    assert ch.message.model_extra["reasoning_content"]
    call = ch.message.tool_calls[0]
    assert call.function.name == "get_weather"
    jsonschema.validate(json.loads(call.function.arguments), SCHEMA)


# ------------------------------------------------------------- switches

def test_reasoning_effort_switches_thinking_on(client, qwen3):
    def prompt(**body):
        r = requests.post(qwen3.url + "/apply-template",
                          json={"messages": ASK, **body}, timeout=30)
        assert r.status_code == 200, r.text
        return r.json()["prompt"]
    off = {"chat_template_kwargs": {"enable_thinking": False}}
    assert prompt(**off).endswith("<think>\n\n</think>\n\n")
    # the effort turns thinking on; the request's own kwargs win
    assert prompt(reasoning_effort="high").endswith("assistant\n")
    assert prompt(reasoning_effort="low", **off).endswith("</think>\n\n")
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="m", messages=ASK, max_tokens=2,
                                       reasoning_effort="extreme")
    assert e.value.body["param"] == "reasoning_effort"
    # thinking off: the reply is all answer, nothing tracked
    r = client.chat.completions.create(
        model="m", messages=ASK, max_tokens=8, temperature=0,
        extra_body=off)
    assert "reasoning_content" not in (r.choices[0].message.model_extra or {})
    assert r.usage.completion_tokens_details is None


def test_multi_turn_reasoning_reaches_the_template(qwen3):
    """Qwen3 keeps reasoning_content only in the turns after the last user
    message (a tool loop) and drops it from earlier ones."""
    msgs = [ASK[0],
            {"role": "assistant", "content": "Paris.",
             "reasoning_content": "Easy: the capital is Paris."},
            {"role": "user", "content": "And of Italy?"}]
    prompt = requests.post(qwen3.url + "/apply-template",
                           json={"messages": msgs}, timeout=30).json()["prompt"]
    assert "Easy: the capital" not in prompt
    assert "<|im_start|>assistant\nParis.<|im_end|>" in prompt
    loop = msgs[:1] + [{"role": "assistant", "content": "Checking.",
                        "reasoning_content": "I should look it up."}]
    prompt = requests.post(qwen3.url + "/apply-template",
                           json={"messages": loop,
                                 "add_generation_prompt": False},
                           timeout=30).json()["prompt"]
    assert ("<|im_start|>assistant\n<think>\nI should look it up.\n</think>"
            "\n\nChecking.") in prompt


# ------------------------------------------ the other families (random weights)

GEMMA4 = ROOT / "build/arch/gemma4.gguf"
GPTOSS = ROOT / "build/arch/gptoss.gguf"


def test_gemma4_thought_channel(start_server):
    """Gemma 4's template: thinking on (enable_thinking, or any
    reasoning_effort), a JSON schema: the server opens <|channel>thought,
    the budget closes it with <channel|>, the answer validates; thinking
    off (the template's empty thought channel): nothing is tracked."""
    import json

    import jsonschema
    assert GEMMA4.is_file(), f"{GEMMA4} is missing: `make arch-models`"
    srv = start_server("-c", "1024", "-t", "2", "--chat-template",
                       str(TEMPLATES / "gemma4.jinja"), model=str(GEMMA4))
    c = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused")
    fmt = {"type": "json_schema", "json_schema": {"name": "c",
                                                  "schema": SCHEMA}}
    r = c.chat.completions.create(
        model="m", messages=ASK, temperature=1, seed=1, max_tokens=60,
        response_format=fmt, reasoning_effort="high", logprobs=True,
        extra_body={"max_reasoning_tokens": 6, "reasoning_format": "none"})
    toks = [t.token for t in r.choices[0].logprobs.content]
    assert "".join(toks[6:]).startswith("<channel|>"), toks
    r = c.chat.completions.create(
        model="m", messages=ASK, temperature=1, seed=1, max_tokens=60,
        response_format=fmt, reasoning_effort="high",
        extra_body={"max_reasoning_tokens": 6})
    m = r.choices[0].message
    assert m.model_extra["reasoning_content"] == "".join(toks[:6]).strip()
    jsonschema.validate(json.loads(m.content), SCHEMA)
    assert r.usage.completion_tokens_details.reasoning_tokens > 6
    r = c.chat.completions.create(
        model="m", messages=ASK, temperature=1, seed=1, max_tokens=60,
        response_format=fmt)
    assert "reasoning_content" not in (r.choices[0].message.model_extra or {})
    jsonschema.validate(json.loads(r.choices[0].message.content), SCHEMA)


HARMONY = ('root ::= "<|channel|>analysis<|message|>" [a-z ]{1,200} '
           '"<|end|><|start|>assistant<|channel|>final<|message|>" '
           '[a-z ]{1,20}')


def test_harmony_budget(start_server):
    """gpt-oss: the analysis channel is the block; when the budget is spent
    the engine writes its end and the final channel's header."""
    assert GPTOSS.is_file(), f"{GPTOSS} is missing: `make arch-models`"
    srv = start_server("-c", "1024", "-t", "2", model=str(GPTOSS))
    c = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused")
    args = dict(model="m", messages=ASK, temperature=1, seed=2,
                max_tokens=60, extra_body={"grammar": HARMONY,
                                           "max_reasoning_tokens": 4})
    r = c.chat.completions.create(logprobs=True, **args)
    toks = [t.token for t in r.choices[0].logprobs.content]
    # the grammar matches text, so the model may spell the header's special
    # tokens in pieces: the block starts after the token that ends the text
    # "<|channel|>analysis<|message|>"
    i = next(k for k in range(len(toks) + 1)
             if "".join(toks[:k]) == "<|channel|>analysis<|message|>")
    assert toks[i + 4] == "<|end|>", toks
    m = r.choices[0].message
    assert m.model_extra["reasoning_content"] == "".join(toks[i:i + 4])
    assert m.content
    assert whole_and_streamed(c, **args)[1] == (
        m.model_extra["reasoning_content"], m.content)


# ------------------------------------------------------------ nucleus chat

def chat(*flags, tty=False):
    """One turn of `nucleus chat` with the Qwen3.5 template and a budget of
    5: stdout's bytes (a pseudo-terminal when tty)."""
    import os
    import pty
    import subprocess

    from conftest import NUCLEUS_BIN
    args = [NUCLEUS_BIN, "chat", "--chat-template",
            str(TEMPLATES / "qwen3.5.jinja"), "-t", "2", "-n", "30",
            "--seed", "1", "--reasoning-budget", "5", *flags]
    if not tty:
        return subprocess.run(args, input=b"What is the capital of France?\n",
                              capture_output=True, timeout=120).stdout
    master, slave = pty.openpty()
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=slave,
                         stderr=subprocess.DEVNULL)
    os.close(slave)
    p.stdin.write(b"What is the capital of France?\n")
    p.stdin.close()
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait(timeout=120)
    os.close(master)
    return out


def test_chat_shows_thinking(model_required):
    raw = chat("--reasoning-format", "none")
    thinking = raw.split(b"</think>")[0].strip()
    assert thinking and b"\x1b" not in raw
    plain = chat()
    assert plain.startswith(thinking) and b"</think>" not in plain
    assert b"\x1b" not in plain
    assert thinking not in chat("--hide-thinking")
    # on a terminal: each piece of thinking dimmed, then back to normal
    dimmed = chat(tty=True)
    joined = dimmed.replace(b"\x1b[0m\x1b[2m", b"")
    assert b"\x1b[2m" + thinking + b"\x1b[0m" in joined, dimmed


QWEN3 = ROOT / "build/arch/qwen3.gguf"


def test_qwen3_random_weights(start_server):
    """The qwen3 architecture (random weights) with its template: a budget
    closes the block the server opened for the JSON answer, which
    validates, streamed as whole."""
    import json

    import jsonschema
    assert QWEN3.is_file(), f"{QWEN3} is missing: `make arch-models`"
    srv = start_server("-c", "1024", "-t", "2", "--chat-template",
                       str(TEMPLATES / "qwen3.jinja"), model=str(QWEN3))
    c = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused")
    args = dict(model="m", messages=ASK, temperature=1, seed=3,
                max_tokens=60,
                response_format={"type": "json_schema", "json_schema": {
                    "name": "c", "schema": SCHEMA}},
                extra_body={"max_reasoning_tokens": 5})
    m, streamed, _ = whole_and_streamed(c, **args)
    jsonschema.validate(json.loads(m.content), SCHEMA)
    assert streamed == (m.model_extra.get("reasoning_content") or "",
                        m.content)
