"""nucleus serve with the official openai Python client: chat and
completions, streaming and not, n > 1, logprobs, stop, seeds, typed
errors. Real binary, real default model; max_tokens stays small."""

import openai
import pytest


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "1024")


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base_url, api_key="unused",
                         max_retries=0, timeout=120)


MESSAGES = [{"role": "user", "content": "Name three colors."}]


def test_chat_completion(client):
    r = client.chat.completions.create(model="anything", messages=MESSAGES,
                                       max_tokens=8, temperature=0)
    assert r.object == "chat.completion"
    assert r.id.startswith("chatcmpl-")
    assert r.model == "anything"
    assert len(r.choices) == 1
    choice = r.choices[0]
    assert choice.index == 0
    assert choice.message.role == "assistant"
    assert isinstance(choice.message.content, str) and choice.message.content
    assert choice.finish_reason in ("stop", "length")
    assert r.usage.prompt_tokens > 0
    assert 0 < r.usage.completion_tokens <= 8
    assert r.usage.total_tokens == (r.usage.prompt_tokens
                                    + r.usage.completion_tokens)


def test_max_tokens_gives_finish_reason_length(client):
    r = client.chat.completions.create(
        model="m", messages=MESSAGES, max_completion_tokens=3, temperature=0,
        extra_body={"ignore_eos": True})
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 3


def test_chat_stream_matches_non_stream(client):
    kw = dict(model="m", messages=MESSAGES, max_tokens=10, temperature=0)
    full = client.chat.completions.create(**kw).choices[0].message.content
    chunks = list(client.chat.completions.create(
        stream=True, stream_options={"include_usage": True}, **kw))
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks
                   if c.choices)
    assert text == full
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] in ("stop", "length")
    assert all(f is None for f in finishes[:-1])
    usage_chunk = chunks[-1]
    assert usage_chunk.choices == []
    assert usage_chunk.usage.completion_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])


def test_completion_and_stream(client):
    kw = dict(model="m", prompt="The capital of France is", max_tokens=6,
              temperature=0)
    r = client.completions.create(**kw)
    assert r.object == "text_completion"
    assert r.id.startswith("cmpl-")
    text = r.choices[0].text
    assert text
    streamed = "".join(c.choices[0].text
                       for c in client.completions.create(stream=True, **kw)
                       if c.choices)
    assert streamed == text


def test_completion_token_id_prompt(client, server):
    import requests
    ids = requests.post(server.url + "/tokenize",
                        json={"content": "Once upon a time"},
                        timeout=30).json()["tokens"]
    a = client.completions.create(model="m", prompt=ids, max_tokens=4,
                                  temperature=0)
    b = client.completions.create(model="m", prompt="Once upon a time",
                                  max_tokens=4, temperature=0)
    assert a.choices[0].text == b.choices[0].text


def test_n_choices(client):
    r = client.chat.completions.create(model="m", messages=MESSAGES, n=3,
                                       max_tokens=4, temperature=1.0, seed=7)
    assert [c.index for c in r.choices] == [0, 1, 2]
    assert all(c.message.content is not None for c in r.choices)
    stream = client.chat.completions.create(model="m", messages=MESSAGES,
                                            n=2, max_tokens=4, stream=True)
    seen = {c.choices[0].index for c in stream if c.choices}
    assert seen == {0, 1}


def test_chat_logprobs(client):
    r = client.chat.completions.create(model="m", messages=MESSAGES,
                                       max_tokens=5, temperature=0,
                                       logprobs=True, top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    for entry in content:
        assert entry.logprob <= 0
        assert isinstance(entry.token, str)
        assert isinstance(entry.bytes, list)
        assert 1 <= len(entry.top_logprobs) <= 3
        assert entry.top_logprobs[0].logprob >= entry.top_logprobs[-1].logprob
        # greedy: the chosen token is the most likely one
        assert entry.top_logprobs[0].logprob == pytest.approx(entry.logprob,
                                                              abs=1e-4)


def test_completion_logprobs(client):
    r = client.completions.create(model="m", prompt="One, two, three,",
                                  max_tokens=4, temperature=0, logprobs=2)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs)
    assert len(lp.text_offset) == len(lp.tokens)
    assert all(v <= 0 for v in lp.token_logprobs)
    assert all(1 <= len(t) <= 2 for t in lp.top_logprobs)


def test_stop_string(client):
    kw = dict(model="m", prompt="1, 2, 3, 4, 5, 6, 7,", max_tokens=12,
              temperature=0, extra_body={"ignore_eos": True})
    text = client.completions.create(**kw).choices[0].text
    assert len(text) >= 4
    stop = text[2:4]
    r = client.completions.create(stop=[stop], **kw)
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].text == text[:text.index(stop)]
    kept = client.completions.create(
        model="m", prompt=kw["prompt"], max_tokens=12, temperature=0,
        stop=stop, extra_body={"ignore_eos": True,
                               "include_stop_str_in_output": True})
    assert kept.choices[0].text == text[:text.index(stop) + len(stop)]


def test_seed_reproducible(client):
    kw = dict(model="m", messages=[{"role": "user",
                                    "content": "Tell me a story."}],
              max_tokens=12, temperature=1.0, top_p=0.95, seed=1234)
    a = client.chat.completions.create(**kw).choices[0].message.content
    b = client.chat.completions.create(**kw).choices[0].message.content
    assert a == b


def test_sampling_parameters_accepted(client):
    r = client.chat.completions.create(
        model="m", messages=MESSAGES, max_tokens=4, temperature=0.7,
        top_p=0.9, presence_penalty=0.5, frequency_penalty=0.5, seed=3,
        logit_bias={"0": -100}, stop=["\n\n"],
        extra_body={"top_k": 40, "min_p": 0.05, "typical_p": 0.9,
                    "repetition_penalty": 1.1, "min_tokens": 1,
                    "skip_special_tokens": True})
    assert r.choices[0].finish_reason in ("stop", "length")


@pytest.mark.parametrize("kw,param", [
    (dict(temperature=101), "temperature"),
    (dict(top_p=0), "top_p"),
    (dict(n=0), "n"),
    (dict(max_tokens=-5), "max_tokens"),
    (dict(logprobs=True, top_logprobs=50), "top_logprobs"),
    (dict(presence_penalty=9), "presence_penalty"),
    (dict(logit_bias={"-1": 3}), "logit_bias"),
])
def test_bad_parameters_raise_bad_request(client, kw, param):
    with pytest.raises(openai.BadRequestError) as exc:
        client.chat.completions.create(model="m", messages=MESSAGES,
                                       max_tokens=kw.pop("max_tokens", 2),
                                       **kw)
    assert exc.value.status_code == 400
    assert exc.value.body["param"] == param
    assert exc.value.body["type"] == "invalid_request_error"


def test_context_overflow_raises_bad_request(client):
    with pytest.raises(openai.BadRequestError) as exc:
        client.completions.create(model="m", prompt="word " * 3000,
                                  max_tokens=2)
    assert exc.value.body["code"] == "context_length_exceeded"


def test_server_still_serves_after_errors(client):
    r = client.completions.create(model="m", prompt="Hello", max_tokens=2)
    assert r.choices[0].text is not None


def test_stream_with_stop_matches_non_stream(client):
    kw = dict(model="m", prompt="1, 2, 3, 4, 5, 6, 7,", max_tokens=12,
              temperature=0, extra_body={"ignore_eos": True})
    text = client.completions.create(**kw).choices[0].text
    stop = text[3:5]
    full = client.completions.create(stop=[stop], **kw)
    chunks = list(client.completions.create(stop=[stop], stream=True, **kw))
    streamed = "".join(c.choices[0].text for c in chunks if c.choices)
    assert streamed == full.choices[0].text
    assert stop not in streamed
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_stream_chat_logprobs(client):
    chunks = list(client.chat.completions.create(
        model="m", messages=MESSAGES, max_tokens=5, temperature=0,
        logprobs=True, top_logprobs=2, stream=True,
        stream_options={"include_usage": True}))
    entries = [e for c in chunks if c.choices and c.choices[0].logprobs
               for e in c.choices[0].logprobs.content]
    assert len(entries) == chunks[-1].usage.completion_tokens
    assert all(e.logprob <= 0 and len(e.top_logprobs) <= 2 for e in entries)


def test_models_list_and_retrieve(client):
    models = client.models.list().data
    assert len(models) == 1
    assert client.models.retrieve(models[0].id).id == models[0].id
