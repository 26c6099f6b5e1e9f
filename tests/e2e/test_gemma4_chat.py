"""Chat on the random-weight Gemma 4 file (scripts/make_arch_gguf.py gemma4,
`make arch-models`) with Gemma 4's published template
(tests/data/templates/gemma4.jinja, given with --chat-template): the server
renders the conversation through it (system turn, tool declarations,
thinking, the call and its result as the template writes them), reads the
template's call syntax as the "gemma4" format, and answers a chat with
tools in OpenAI's structure. The weights are random: the structure is
checked, not the text."""

import pathlib

import openai
import pytest
import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
GEMMA4 = ROOT / "build/arch/gemma4.gguf"
TEMPLATE = ROOT / "tests/data/templates/gemma4.jinja"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
ASK = [{"role": "system", "content": "Be brief."},
       {"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def server(start_server):
    assert GEMMA4.is_file(), f"{GEMMA4} is missing: `make arch-models`"
    return start_server("-c", "1024", "-t", "2", "--chat-template",
                        str(TEMPLATE), model=str(GEMMA4))


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused")


def test_template_renders_tools_and_thinking(server):
    call = {"role": "assistant", "content": "",
            "reasoning_content": "Call the tool.",
            "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "21 C"}
    r = requests.post(server.url + "/apply-template", timeout=30, json={
        "messages": ASK + [call, result], "tools": [WEATHER],
        "add_generation_prompt": True,
        "chat_template_kwargs": {"enable_thinking": True}})
    assert r.status_code == 200, r.text
    p = r.json()["prompt"]
    # (the file's BOS is the default model's vocabulary's <|im_start|>)
    assert p.startswith("<|im_start|><|turn>system\n<|think|>\nBe brief."
                        "<|tool>declaration:get_weather{")
    assert "<|turn>user\nWhat is the weather in Paris?<turn|>\n" in p
    assert ("<|turn>model\n<|channel>thought\nCall the tool.\n<channel|>"
            # the arguments' JSON text read as an object, key by key
            "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>"
            "<|tool_response>response:get_weather{value:<|\"|>21 C<|\"|>}"
            "<tool_response|>") in p


def test_chat_with_tools_answers_in_structure(client):
    r = client.chat.completions.create(model="m", messages=ASK, tools=[WEATHER],
                                       max_tokens=8, temperature=0)
    choice = r.choices[0]
    assert choice.message.role == "assistant"
    assert choice.finish_reason in ("stop", "length", "tool_calls")
    assert r.usage.completion_tokens <= 8
    assert choice.message.content is not None or choice.message.tool_calls


def test_forced_call_refused_by_name(client):
    # no grammar writes Gemma 4's call syntax yet: a clear refusal
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="m", messages=ASK,
                                       tools=[WEATHER], tool_choice="required",
                                       max_tokens=8)
    assert e.value.body["param"] == "tool_choice"
    assert "gemma4" in e.value.body["message"]
