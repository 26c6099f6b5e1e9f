"""A chat's next turn reuses every full KV block of the turns before it,
prompt and reply alike, with flash attention on and off, short turns and
long, and its output is bit-identical to a cold run (issue 38, item 1).

The engine computes every row in one float order (--row-orders reuse, the
default of serve and chat: docs/forward.md, "Row orders"), so a position's
K/V depend only on the tokens up to it: a reply computed token by token is
the K/V a later prompt holding that reply would compute. Each conversation
runs on a server with the prefix cache and on one with --no-prefix-cache;
every turn's text and logprobs must be equal, and every turn's
usage.prompt_tokens_details.cached_tokens must be the whole 16-token blocks
of its prompt that the previous turn's prompt and reply hold (the longest
common prefix of the two token lists, the last prompt token always
computed). The default model (SmolLM2, Q4_1) and Gemma 3 270M (Q4_K_M:
K-quant matmuls, which have their own two orders in llama.cpp; sliding
window layers)."""

import pathlib

import openai
import pytest
import requests
from conftest import DEFAULT_MODEL, NUCLEUS_BIN, require_binary_and_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = {"smollm2": DEFAULT_MODEL,
          "gemma3": str(ROOT / "models/gemma-3-270m-q4_k_m.gguf")}
BLOCK = 16  # the engine's default KV block

WORDS = ("bread flour water salt yeast oven crust crumb starter dough knead "
         "proof shape score bake cool slice butter jam honey").split()


def user_text(turn, n_words):
    """A deterministic user message of about n_words words."""
    words = [WORDS[(turn * 7 + i * 3) % len(WORDS)] for i in range(n_words)]
    return (f"Question {turn}: tell me about " + " ".join(words) +
            ". Answer in one short paragraph.")


def tokenize(srv, **body):
    r = requests.post(srv.url + "/tokenize", json=body, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["tokens"]


def common_prefix(a, b):
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def converse(srv, user_words, max_tokens):
    """Runs the conversation; per turn: (text, logprobs, cached, expected
    cached from the previous turn's tokens)."""
    client = openai.OpenAI(base_url=srv.base_url, api_key="unused",
                           max_retries=0, timeout=600)
    messages, out, previous = [], [], None
    for turn, n_words in enumerate(user_words):
        messages.append({"role": "user", "content": user_text(turn, n_words)})
        prompt = tokenize(srv, messages=messages)
        r = client.chat.completions.create(
            model="m", messages=messages, max_tokens=max_tokens,
            temperature=0, logprobs=True, extra_body={"ignore_eos": True})
        assert r.usage.prompt_tokens == len(prompt)
        text = r.choices[0].message.content
        lps = [t.logprob for t in r.choices[0].logprobs.content]
        assert len(lps) == r.usage.completion_tokens == max_tokens
        want = 0
        if previous is not None:
            # the previous turn's computed positions: its prompt and all of
            # its reply but the last token (sampled, never fed)
            lcp = common_prefix(previous[:-1], prompt)
            want = min(lcp, len(prompt) - 1) // BLOCK * BLOCK
        out.append((text, lps, r.usage.prompt_tokens_details.cached_tokens,
                    want, len(prompt)))
        reply = tokenize(srv, content=text, add_special=False,
                         parse_special=False)
        previous = prompt + reply
        messages.append({"role": "assistant", "content": text})
    return out


def check_conversation(start_server, model, fa, user_words, max_tokens):
    require_binary_and_model(MODELS[model])
    common = ("-c", "4096", "-fa", fa, "-t", "2")
    warm = start_server(*common, model=MODELS[model])
    cold = start_server(*common, "--no-prefix-cache", model=MODELS[model])
    got = converse(warm, user_words, max_tokens)
    ref = converse(cold, user_words, max_tokens)
    for turn, (g, c) in enumerate(zip(got, ref)):
        assert g[0] == c[0], (turn, g[0], c[0])  # the text
        assert g[1] == c[1], turn  # the logprobs, bit for bit
        assert c[2] == 0
        # every full block of the previous turn's prompt and reply
        assert g[2] == g[3], (turn, g[2], g[3], g[4])
        if turn > 0:
            assert g[2] > 0
    warm.stop()
    cold.stop()
    return got


@pytest.mark.parametrize("fa", ["on", "off"])
@pytest.mark.parametrize("model", ["smollm2", "gemma3"])
def test_second_turn_of_a_short_chat(start_server, model, fa):
    """The issue's case: a first turn of a short prompt (under 64 tokens,
    which llama.cpp computes in its per-row orders) and a 36-token reply;
    the second turn reuses both."""
    got = check_conversation(start_server, model, fa, [6, 8], 36)
    assert got[0][4] < 64
    # the first turn's prompt and reply, but for the last partial block
    assert got[1][2] >= (got[0][4] + 36 - 1) // BLOCK * BLOCK - BLOCK


@pytest.mark.parametrize("fa", ["on", "off"])
@pytest.mark.parametrize("model", ["smollm2", "gemma3"])
def test_turns_short_and_long(start_server, model, fa):
    """Five turns, each user message short or long (a prompt of 64+ new
    tokens, which llama.cpp computes in its tiled orders), 30-token
    replies: each turn reuses the previous turns' prompt blocks, the long
    prompts' last partial block and the replies included."""
    check_conversation(start_server, model, fa, [60, 5, 90, 12, 40], 30)


@pytest.mark.slow
@pytest.mark.parametrize("fa", ["on", "off"])
def test_twenty_turns_to_four_thousand_tokens(start_server, fa):
    """20 turns of about 190 tokens each (a user message and a 64-token
    reply): the last prompt holds about 3,800 tokens."""
    got = check_conversation(start_server, "smollm2", fa,
                             [70 + 9 * (t % 5) for t in range(20)], 64)
    assert got[-1][4] > 3500
