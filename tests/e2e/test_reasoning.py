"""Reasoning through the server with the official openai client, on the
default model (SmolLM2) given thinking templates (tests/data/templates:
Qwen3's, whose model opens <think> itself; Qwen3.5's, whose generation
prompt opens it). A grammar forces the think format (the small model would
not think by itself): the thinking becomes message.reasoning_content (never
in content), the answer content; streamed deltas join to the non-streamed
message; reasoning_format "none" (and --reasoning-format none) keep the
raw text in content; a bad reasoning_format is a 400 naming it."""

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
