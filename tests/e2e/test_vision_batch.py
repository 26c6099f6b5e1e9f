"""Two requests' images encoded as one batch through the server (issue 46,
docs/VISION.md "Encoding in the steps") on the random gemma3 pair of `make
arch-models`: two concurrent chat requests with different images give the
text and logprobs each gives alone, and /metrics'
nucleus_image_rows_batched_total counts every vision layer of both images
as shared (2 layers x 64 patches x 2 images).

No timing is assumed: a blocker (one streaming request of two completions,
--parallel 2) holds every running slot while both image requests arrive;
once /metrics shows both waiting, the blocker's client leaves, its two
sequences end in one step, and the next step admits both requests
together: their encodes start in the same step, and --image-step-tokens
gives that step room for all of both encodes, so every layer runs as one
product over both images (--no-prefix-cache: each request encodes its
image again). (Should the blocker end before both requests
were seen waiting, they were not forced together: the round is run
again.)"""

import base64
import pathlib
import re
import sys
import threading
import time

import pytest
import requests
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from gen_vision_goldens import IMAGES, pixels  # noqa: E402

LM = ROOT / "build/arch/gemma3.gguf"
MMPROJ = ROOT / "build/arch/gemma3-mmproj.gguf"
N = 8
LAYERS, PATCHES = 2, 64  # the random gemma3 projector's (8 x 8 patches)


@pytest.fixture(scope="module")
def pngs(tmp_path_factory):
    d = tmp_path_factory.mktemp("images")
    out = {}
    for name in ("wide", "tall"):
        out[name] = d / f"{name}.png"
        Image.fromarray(pixels(*IMAGES[name])).save(out[name])
    return out


@pytest.fixture(scope="module")
def server(start_server):
    for f in (LM, MMPROJ):
        assert f.is_file(), f"{f} is missing: `make arch-models`"
    return start_server("--mmproj", str(MMPROJ), "-c", "2048", "-t", "1",
                        "--parallel", "2", "--image-step-tokens", "65536",
                        "--no-prefix-cache", model=str(LM))


def metric(server, name):
    text = requests.get(server.url + "/metrics", timeout=30).text
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    assert m, f"{name} missing from /metrics"
    return float(m.group(1))


def ask(server, png):
    """The greedy answer about png and its tokens' logprobs."""
    data = base64.b64encode(png.read_bytes()).decode()
    url = "data:image/png;base64," + data
    r = requests.post(server.url + "/v1/chat/completions", timeout=300, json={
        "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}},
            {"type": "text", "text": "Describe the image."}]}],
        "max_tokens": N, "temperature": 0, "logprobs": True})
    assert r.status_code == 200, r.text
    c = r.json()["choices"][0]
    return c["message"]["content"], [(t["token"], t["logprob"])
                                     for t in c["logprobs"]["content"]]


def together(server, pngs):
    """Both image requests admitted in one step behind a blocker; their
    answers, and whether both were seen waiting (forced together)."""
    first, leave = threading.Event(), threading.Event()
    ended = threading.Event()

    def blocker():
        body = {"prompt": "Count to ten thousand.", "max_tokens": 1900,
                "n": 2, "stream": True, "ignore_eos": True,
                "temperature": 0}
        with requests.post(server.url + "/v1/completions", json=body,
                           stream=True, timeout=300) as r:
            assert r.status_code == 200, r.text
            for line in r.iter_lines():
                if line.startswith(b"data: {"):
                    first.set()
                if line == b"data: [DONE]":
                    ended.set()
                    return
                if leave.is_set():
                    return  # closes the connection: the engine cancels it

    b = threading.Thread(target=blocker)
    b.start()
    assert first.wait(120), "the blocker never streamed"
    answers = {}

    def one(name):
        answers[name] = ask(server, pngs[name])

    threads = [threading.Thread(target=one, args=(k,)) for k in pngs]
    for t in threads:
        t.start()
    forced = False
    deadline = time.monotonic() + 120
    while not ended.is_set() and time.monotonic() < deadline:
        if metric(server, "nucleus_queue_length") == 2:
            forced = True
            break
        time.sleep(0.01)
    leave.set()
    for t in threads + [b]:
        t.join(timeout=300)
    return answers, forced


def test_two_requests_share_the_vision_layers(server, pngs):
    alone = {k: ask(server, pngs[k]) for k in pngs}
    assert alone["wide"] != alone["tall"]
    # one request at a time: nothing shared
    assert metric(server, "nucleus_image_rows_batched_total") == 0
    for _ in range(3):
        before = metric(server, "nucleus_image_rows_batched_total")
        answers, forced = together(server, pngs)
        assert answers == alone
        if forced:
            got = metric(server, "nucleus_image_rows_batched_total") - before
            assert got == LAYERS * PATCHES * 2
            return
    pytest.fail("the blocker ended three times before both image requests "
                "waited behind it")
