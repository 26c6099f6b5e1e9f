"""Images through the server (issue 46) on the random gemma3 pair of
`make arch-models` (build/arch/gemma3.gguf + gemma3-mmproj.gguf, started
with --mmproj): the official openai and anthropic clients, and the
Responses API, send an image and a question; the greedy answer equals
`nucleus run --mmproj --image -p` on the same pair (one user turn, the
image before the text, as llama-mtmd-cli builds it), usage.prompt_tokens
counts the image's rows (as /tokenize returns them), a second turn about
the same image reuses the cached blocks past the image, and another image
with the same text shares none of them. `nucleus chat --mmproj` with
/image PATH gives the same answer."""

import base64
import pathlib
import re
import subprocess
import sys

import anthropic
import openai
import pytest
import requests
from PIL import Image

from conftest import NUCLEUS_BIN

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from gen_vision_goldens import IMAGES, pixels  # noqa: E402

LM = ROOT / "build/arch/gemma3.gguf"
MMPROJ = ROOT / "build/arch/gemma3-mmproj.gguf"
QUESTION = "Describe the image."
N = 12
IMAGE_ROW = -2  # NUCLEUS_TOKEN_IMAGE


@pytest.fixture(scope="module")
def pngs(tmp_path_factory):
    d = tmp_path_factory.mktemp("images")
    out = {}
    for name in ("wide", "tall", "square"):
        out[name] = d / f"{name}.png"
        Image.fromarray(pixels(*IMAGES[name])).save(out[name])
    return out


def b64(path):
    return base64.b64encode(path.read_bytes()).decode()


@pytest.fixture(scope="module")
def server(start_server):
    for f in (LM, MMPROJ):
        assert f.is_file(), f"{f} is missing: `make arch-models`"
    return start_server("--mmproj", str(MMPROJ), "-c", "1024", "-t", "1",
                        "--flash-attn", "off", model=str(LM))


def cli_answer(image):
    p = subprocess.run(
        [NUCLEUS_BIN, "run", "-m", str(LM), "--mmproj", str(MMPROJ),
         "--image", str(image), "-p", QUESTION, "-n", str(N),
         "--flash-attn", "off"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.endswith("\n")
    return p.stdout[:-1]


def user_turn(image):
    return {"role": "user", "content": [
        {"type": "image_url",
         "image_url": {"url": "data:image/png;base64," + b64(image)}},
        {"type": "text", "text": QUESTION}]}


def chat(server, messages):
    r = requests.post(server.url + "/v1/chat/completions", timeout=120, json={
        "messages": messages, "max_tokens": N, "temperature": 0})
    assert r.status_code == 200, r.text
    return r.json()


def test_openai_client_answer_is_the_cli_answer(server, pngs):
    client = openai.OpenAI(base_url=server.base_url, api_key="x",
                           max_retries=0)
    r = client.chat.completions.create(
        model="m", messages=[user_turn(pngs["wide"])], max_tokens=N,
        temperature=0)
    want = cli_answer(pngs["wide"])
    assert want and r.choices[0].message.content == want
    # prompt_tokens: the prompt's entries, the image's rows included
    ids = requests.post(server.url + "/tokenize", timeout=60, json={
        "messages": [user_turn(pngs["wide"])]}).json()["tokens"]
    rows = ids.count(IMAGE_ROW)
    assert rows > 0 and r.usage.prompt_tokens == len(ids)
    text_only = chat(server, [{"role": "user", "content": QUESTION}])
    # the rows, and the family's text around them (<start_of_image>, ...)
    assert r.usage.prompt_tokens - text_only["usage"]["prompt_tokens"] \
        >= rows + 2


def test_anthropic_and_responses_answers_are_the_cli_answer(server, pngs):
    want = cli_answer(pngs["tall"])
    client = anthropic.Anthropic(base_url=server.url, api_key="x",
                                 max_retries=0)
    m = client.messages.create(
        model="m", max_tokens=N, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64",
                                         "media_type": "image/png",
                                         "data": b64(pngs["tall"])}},
            {"type": "text", "text": QUESTION}]}],
        extra_body={"temperature": 0})
    assert m.content[0].text == want
    r = requests.post(server.url + "/v1/responses", timeout=120, json={
        "model": "m", "max_output_tokens": N, "temperature": 0,
        "input": [{"role": "user", "content": [
            {"type": "input_image",
             "image_url": "data:image/png;base64," + b64(pngs["tall"])},
            {"type": "input_text", "text": QUESTION}]}]})
    assert r.status_code == 200, r.text
    assert r.json()["output"][-1]["content"][0]["text"] == want


def images_encoded(server):
    text = requests.get(server.url + "/metrics", timeout=30).text
    m = re.search(r"^nucleus_images_encoded_total (\d+)$", text, re.M)
    assert m, text
    return int(m.group(1))


def test_one_image_twice_on_every_api(server, pngs):
    """The same file twice in one turn (decoded once, copied: test_image_
    input.c; encoded once: nucleus_images_encoded_total goes up by one for
    a picture no request sent before): both images' rows in the prompt,
    and the three APIs run the same prompt: usage.prompt_tokens (chat),
    usage.input_tokens (Messages: with its cache_read_input_tokens; its
    count_tokens; Responses) and the greedy text agree."""
    data = b64(pngs["square"])
    url = "data:image/png;base64," + data
    turn = {"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": url}},
        {"type": "image_url", "image_url": {"url": url}},
        {"type": "text", "text": QUESTION}]}
    ids = requests.post(server.url + "/tokenize", timeout=60, json={
        "messages": [turn]}).json()["tokens"]
    one = requests.post(server.url + "/tokenize", timeout=60, json={
        "messages": [user_turn(pngs["square"])]}).json()["tokens"]
    assert ids.count(IMAGE_ROW) == 2 * one.count(IMAGE_ROW) > 0
    before = images_encoded(server)
    c = chat(server, [turn])
    assert images_encoded(server) == before + 1
    assert c["usage"]["prompt_tokens"] == len(ids)
    want = c["choices"][0]["message"]["content"]
    block = {"type": "image", "source": {"type": "base64",
                                         "media_type": "image/png",
                                         "data": data}}
    body = {"model": "m", "max_tokens": N, "temperature": 0,
            "messages": [{"role": "user", "content": [
                block, block, {"type": "text", "text": QUESTION}]}]}
    m = requests.post(server.url + "/v1/messages", timeout=120, json=body)
    assert m.status_code == 200, m.text
    # Anthropic's input_tokens leave out the cached ones
    usage = m.json()["usage"]
    assert usage["input_tokens"] + usage["cache_read_input_tokens"] \
        == len(ids)
    assert m.json()["content"][0]["text"] == want
    del body["max_tokens"], body["temperature"]
    n = requests.post(server.url + "/v1/messages/count_tokens", timeout=60,
                      json=body)
    assert n.status_code == 200, n.text
    assert n.json()["input_tokens"] == len(ids)
    part = {"type": "input_image", "image_url": url}
    r = requests.post(server.url + "/v1/responses", timeout=120, json={
        "model": "m", "max_output_tokens": N, "temperature": 0,
        "input": [{"role": "user", "content": [
            part, part, {"type": "input_text", "text": QUESTION}]}]})
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["input_tokens"] == len(ids)
    assert r.json()["output"][-1]["content"][0]["text"] == want


def test_prefix_cache_keys_on_the_image(server, pngs):
    first = chat(server, [user_turn(pngs["wide"])])
    answer = first["choices"][0]["message"]["content"]
    n_first = first["usage"]["prompt_tokens"]
    # the next turn about the same image: its blocks are reused
    second = chat(server, [user_turn(pngs["wide"]),
                           {"role": "assistant", "content": answer},
                           {"role": "user", "content": "And its colours?"}])
    cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert cached >= n_first // 2 and cached > 16, (cached, n_first)
    # another image, the same text: nothing past the image's start is
    # shared (the few tokens before it fill no block)
    other = chat(server, [user_turn(pngs["tall"])])
    assert other["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert other["choices"][0]["message"]["content"] != answer


def chat_cli(lines, *extra):
    p = subprocess.run(
        [NUCLEUS_BIN, "chat", "-m", str(LM), "-n", str(N), "--temp", "0",
         "--flash-attn", "off", *extra], input="\n".join(lines) + "\n",
        capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout, p.stderr


def test_chat_image_command(pngs, tmp_path):
    """nucleus chat --mmproj: /image PATH attaches to the next message (the
    run --image answer); the next turn carries another image; refusals."""
    out, err = chat_cli([f"/image {pngs['wide']}", QUESTION,
                         f"/image {pngs['tall']}", QUESTION],
                        "--mmproj", str(MMPROJ))
    assert "(image 80x60 attached: it goes with your next message)" in err
    assert out.startswith(cli_answer(pngs["wide"]) + "\n"), out
    assert len(out.strip().split("\n")) == 2, out
    bad = tmp_path / "bad.png"
    bad.write_bytes(pngs["wide"].read_bytes()[:40])
    out, err = chat_cli([f"/image {bad}", "/image", "/image /nope.png",
                         f"/image {pngs['wide']}", "a <__media__> b"],
                        "--mmproj", str(MMPROJ))
    assert f"error: /image {bad}: a corrupt PNG image" in err, err
    assert "error: /image PATH: the image file to attach" in err
    assert "error: /image: cannot read /nope.png" in err
    assert "the message holds <__media__>, the images' marker" in err
    out, err = chat_cli([f"/image {pngs['wide']}"])
    assert "error: /image needs a vision projector: start nucleus chat " \
        "with --mmproj FILE" in err
