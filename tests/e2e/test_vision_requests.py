"""Images in request bodies, on a server without a vision projector (the
default model, no --mmproj): an OpenAI image_url part, an Anthropic image
block and a Responses input_image are each read, base64-decoded and
decoded (src/vision), so a bad one is a 400 naming its part (a truncated
PNG, a GIF, a header claiming 100000 pixels a side, bad base64, a remote
URL, a source type or detail that is not taken); a good one is a 400
saying the model takes no images. The official openai and anthropic
clients see those errors as their BadRequestError; the body-size limit
still applies to a large image. With --allow-image-urls, http URLs are
fetched from a local server (an image, a 404, a redirect to an image and
one to file://, a body over 16 MiB, an answer slower than 5 s)."""

import base64
import http.server
import pathlib
import threading
import time

import anthropic
import openai
import pytest
import requests

SEEDS = pathlib.Path(__file__).resolve().parents[2] / "fuzz/corpus/image"
NO_IMAGES = "this model does not take images"


def b64(name, cut=None):
    data = (SEEDS / name).read_bytes()
    return base64.b64encode(data[:cut] if cut else data).decode()


def data_uri(name, cut=None, media="image/png"):
    return f"data:{media};base64," + b64(name, cut)


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "512", "-t", "1", "--max-body-bytes", "200000")


def chat(server, parts):
    body = {"max_tokens": 1, "messages": [
        {"role": "system", "content": "Describe images."},
        {"role": "user", "content": parts}]}
    return requests.post(server.url + "/v1/chat/completions", json=body,
                         timeout=60)


def image_part(url, **extra):
    return {"type": "image_url", "image_url": {"url": url, **extra}}


def error(r):
    assert r.status_code == 400, r.text
    return r.json()["error"]["message"]


@pytest.mark.parametrize("name", ["ok_rgb.png", "ok_rgb.jpg",
                                  "ok_lossless.webp", "ok_palette.png"])
def test_a_good_image_is_decoded_then_refused(server, name):
    media = {"png": "image/png", "jpg": "image/jpeg", "webp": "image/webp"}
    uri = data_uri(name, media=media[name.rsplit(".", 1)[1]])
    msg = error(chat(server, [{"type": "text", "text": "What is it?"},
                              image_part(uri)]))
    assert msg.startswith(NO_IMAGES + " (1 in the messages"), msg


@pytest.mark.parametrize("url,words", [
    (data_uri("ok_rgb.png", cut=60), "a corrupt PNG image"),
    (data_uri("unsupported.gif", media="image/gif"),
     "a GIF image: the formats taken are PNG, JPEG and WebP"),
    (data_uri("unsupported_animated.png"), "an animated PNG"),
    (data_uri("limit_side.png"),
     "a PNG image of 100000x2 pixels: each side may be at most 8192"),
    (data_uri("limit_pixels.png"), "at most 32000000 are taken"),
    ("data:image/png;base64,iVBO*w0K", "not base64: character 4 of 8 is 0x2a"),
    ("data:image/png,iVBORw0K", "the data: URI must be base64"),
    ("data:text/plain;base64,aGk=", "a data: URI of an image is"),
    ("https://example.com/cat.png",
     "a remote image URL: this server fetches nothing a request names "
     "(--allow-image-urls)"),
    ("file:///etc/passwd", "the url must be a data: URI"),
])
def test_a_bad_image_names_its_part(server, url, words):
    msg = error(chat(server, [{"type": "text", "text": "What is it?"},
                              image_part(url)]))
    assert msg.startswith("messages[1].content[1].image_url: "), msg
    assert words in msg, msg


def test_detail_other_than_auto_is_refused(server):
    msg = error(chat(server, [image_part(data_uri("ok_rgb.png"),
                                         detail="high")]))
    assert msg.startswith("messages[1].content[0].image_url.detail: only "
                          "\"auto\""), msg
    msg = error(chat(server, [image_part(data_uri("ok_rgb.png"),
                                         detail="auto")]))
    assert msg.startswith(NO_IMAGES)


def test_openai_client_sees_the_refusal(server):
    client = openai.OpenAI(base_url=server.base_url, api_key="x",
                           max_retries=0)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model="m", max_tokens=1, messages=[{"role": "user", "content": [
                {"type": "text", "text": "What is it?"},
                {"type": "image_url",
                 "image_url": {"url": data_uri("ok_rgb.jpg",
                                               media="image/jpeg")}}]}])
    assert NO_IMAGES in str(e.value)


def anthropic_image(data, media="image/png", kind="base64"):
    src = {"type": kind, "media_type": media, "data": data}
    return {"type": "image", "source": src}


def test_anthropic_image_blocks(server):
    client = anthropic.Anthropic(base_url=server.url, api_key="x",
                                 max_retries=0)

    def send(block):
        with pytest.raises(anthropic.BadRequestError) as e:
            client.messages.create(
                model="m", max_tokens=1, system="Describe images.",
                messages=[{"role": "user", "content": "Hello."},
                          {"role": "assistant", "content": "Hi."},
                          {"role": "user", "content": [
                              {"type": "text", "text": "What is it?"},
                              block]}])
        assert e.value.body["type"] == "error"
        return e.value.body["error"]["message"]

    assert send(anthropic_image(b64("ok_rgb.png"))).startswith(NO_IMAGES)
    path = "messages[2].content[1].source"
    assert send(anthropic_image(b64("ok_rgb.png", cut=60))) == \
        path + ": a corrupt PNG image: the data ends early"
    assert send(anthropic_image(b64("ok_rgb.png"), media="image/bmp")) == \
        path + ".media_type must be image/jpeg, image/png, image/gif or " \
        "image/webp"
    msg = send({"type": "image",
                "source": {"type": "url", "url": "https://example.com/a.png"}})
    assert msg.startswith(path + ": a remote image URL"), msg


def test_responses_input_image(server):
    def send(parts):
        r = requests.post(server.url + "/v1/responses", timeout=60, json={
            "model": "m", "max_output_tokens": 16,
            "input": [{"role": "user", "content": parts}]})
        return error(r)

    text = {"type": "input_text", "text": "What is it?"}
    good = {"type": "input_image", "image_url": data_uri("ok_rgb.png")}
    assert send([text, good]).startswith(NO_IMAGES)
    cut = {"type": "input_image", "image_url": data_uri("ok_rgb.png", cut=60)}
    assert send([text, cut]) == \
        "input[0].content[1]: a corrupt PNG image: the data ends early"
    assert "file_id: nucleus keeps no files" in send(
        [text, {"type": "input_image", "file_id": "file-1"}])


def test_the_body_limit_holds_for_images(server):
    big = base64.b64encode(bytes(150000)).decode()
    r = chat(server, [image_part("data:image/png;base64," + big)])
    assert r.status_code == 413, r.text


def test_text_only_requests_are_unchanged(server):
    r = chat(server, [{"type": "text", "text": "Hi"},
                      {"type": "text", "text": "there"}])
    assert r.status_code == 200, r.text


class ImageHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        png = (SEEDS / "ok_rgb.png").read_bytes()
        routes = {
            "/ok.png": (200, {}, png),
            "/cut.png": (200, {}, png[:60]),
            "/missing.png": (404, {}, b"no"),
            "/moved.png": (302, {"Location": "/ok.png"}, b""),
            "/to-file": (302, {"Location": "file:///etc/passwd"}, b""),
        }
        if self.path == "/slow.png":
            time.sleep(6)
        if self.path == "/big.png":
            self.send_response(200)
            self.send_header("Content-Length", str(17 << 20))
            self.end_headers()
            return
        status, headers, body = routes.get(self.path, (200, {}, png))
        self.send_response(status)
        for k, v in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def image_host():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ImageHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


@pytest.fixture(scope="module")
def fetching(start_server):
    return start_server("-c", "512", "-t", "1", "--allow-image-urls")


@pytest.mark.parametrize("path,words", [
    ("/ok.png", None),
    ("/moved.png", None),
    ("/cut.png", "a corrupt PNG image"),
    ("/missing.png", "fetching it answered HTTP 404, not 200"),
    ("/to-file", "fetching it failed: "),
    ("/big.png", "the image is larger than 16777216 bytes"),
    ("/slow.png", "fetching it took longer than 5000 ms"),
])
def test_allow_image_urls_fetches_bounded(fetching, image_host, path, words):
    url = image_host + path
    r = chat(fetching, [{"type": "text", "text": "What is it?"},
                        image_part(url)])
    msg = error(r)
    if words is None:
        assert msg.startswith(NO_IMAGES + " (1 in the messages"), msg
    else:
        assert msg.startswith("messages[1].content[1].image_url: "), msg
        assert words in msg, msg


def test_allow_image_urls_in_messages_and_responses(fetching, image_host):
    url = image_host + "/ok.png"
    r = requests.post(fetching.url + "/v1/messages", timeout=60, json={
        "model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": url}},
            {"type": "text", "text": "What is it?"}]}]})
    assert r.status_code == 400 and \
        r.json()["error"]["message"].startswith(NO_IMAGES), r.text
    cut = image_host + "/cut.png"
    r = requests.post(fetching.url + "/v1/responses", timeout=60, json={
        "model": "m", "max_output_tokens": 16, "input": [
            {"role": "user", "content": [
                {"type": "input_image", "image_url": cut}]}]})
    assert error(r).startswith("input[0].content[0]: a corrupt PNG image"), \
        r.text
