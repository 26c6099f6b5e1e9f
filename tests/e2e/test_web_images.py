"""The web page's images (issue 46), in headless Chromium. On a server
with a vision projector (the random gemma3 pair, --mmproj) the attach
button's file input and a paste into the message box each add a
thumbnail to the composer (removable); a sent message shows them in the
history, keeps them in the stored chat and sends them as image_url parts
with data: URIs before the text, and the streamed reply is the API's
greedy answer to the body the page sent. On a server without one
(/props modalities.vision false) the button is hidden and a pasted image
is not taken."""

import base64
import json
import pathlib

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from test_server_guard import browser
from test_web_page import send, set_field, stored_chat, wait_done

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEEDS = ROOT / "fuzz/corpus/image"
LM = ROOT / "build/arch/gemma3.gguf"
MMPROJ = ROOT / "build/arch/gemma3-mmproj.gguf"


@pytest.fixture(scope="module")
def vision(start_server):
    for f in (LM, MMPROJ):
        assert f.is_file(), f"{f} is missing: `make arch-models`"
    return start_server("--mmproj", str(MMPROJ), "-c", "1024", "-t", "1",
                        model=str(LM))


@pytest.fixture(scope="module")
def plain(start_server):
    return start_server("-c", "256", "-t", "1")


@pytest.fixture(scope="module")
def driver():
    d = browser()
    d.set_window_size(1100, 760)
    yield d
    d.quit()


def open_page(d, server):
    d.get(server.url + "/")
    WebDriverWait(d, 20).until(
        lambda d: d.find_elements(By.ID, "set-temperature"))
    d.execute_script("localStorage.clear();")
    d.get(server.url + "/")
    WebDriverWait(d, 20).until(
        lambda d: d.find_elements(By.ID, "set-temperature"))
    # record the bodies the page sends
    d.execute_script(
        "window.__bodies = []; const f = window.fetch;"
        "window.fetch = (u, o) => { if (o && o.body) __bodies.push(o.body);"
        " return f(u, o); };")


def thumbs(d, css):
    return [i.get_attribute("src")
            for i in d.find_elements(By.CSS_SELECTOR, css + " img")]


def paste_png(d, data):
    d.execute_script(
        "const bytes = Uint8Array.from(atob(arguments[0]), c => c.charCodeAt(0));"
        "const dt = new DataTransfer();"
        "dt.items.add(new File([bytes], 'p.png', {type: 'image/png'}));"
        "document.getElementById('input').dispatchEvent(new ClipboardEvent("
        "'paste', {clipboardData: dt, bubbles: true, cancelable: true}));",
        base64.b64encode(data).decode())


def test_attach_paste_send(driver, vision):
    d = driver
    open_page(d, vision)
    assert d.find_element(By.ID, "attach").is_displayed()
    set_field(d, "set-temperature", 0)
    set_field(d, "set-max_tokens", 8)
    png = (SEEDS / "ok_rgb.png").read_bytes()
    jpg = (SEEDS / "ok_rgb.jpg").read_bytes()
    d.find_element(By.ID, "image-file").send_keys(str(SEEDS / "ok_rgb.jpg"))
    WebDriverWait(d, 10).until(lambda d: len(thumbs(d, "#attachments")) == 1)
    d.find_element(By.ID, "image-file").send_keys(
        str(SEEDS / "ok_lossless.webp"))
    WebDriverWait(d, 10).until(lambda d: len(thumbs(d, "#attachments")) == 2)
    # the second one removed again
    d.find_elements(By.CSS_SELECTOR, "#attachments button")[1].click()
    assert len(thumbs(d, "#attachments")) == 1
    paste_png(d, png)
    WebDriverWait(d, 10).until(lambda d: len(thumbs(d, "#attachments")) == 2)
    attached = thumbs(d, "#attachments")
    assert attached == [
        "data:image/jpeg;base64," + base64.b64encode(jpg).decode(),
        "data:image/png;base64," + base64.b64encode(png).decode()]

    send(d, "What is in these?")
    wait_done(d)
    assert thumbs(d, "#attachments") == []  # the composer is empty again
    assert thumbs(d, ".msg.user") == attached  # the history shows them
    chat = stored_chat(d)
    user, reply = chat["messages"]
    assert user["images"] == attached and user["content"] == \
        "What is in these?"
    body = json.loads(d.execute_script("return __bodies[__bodies.length-1]"))
    assert body["messages"][-1] == {"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": attached[0]}},
        {"type": "image_url", "image_url": {"url": attached[1]}},
        {"type": "text", "text": "What is in these?"}]}
    # the same body through the API: the same greedy reply
    body["stream"] = False
    api = requests.post(vision.url + "/v1/chat/completions", json=body,
                        timeout=120).json()
    assert reply["content"] and \
        api["choices"][0]["message"]["content"] == reply["content"]

    # Edit puts the text and the images back in the composer.
    d.find_element(By.CSS_SELECTOR, ".msg.user .edit").click()
    assert thumbs(d, "#attachments") == attached
    assert d.find_element(By.ID, "input").get_attribute("value") == \
        "What is in these?"


def test_no_attach_without_a_projector(driver, plain):
    d = driver
    open_page(d, plain)
    assert not d.find_element(By.ID, "attach").is_displayed()
    paste_png(d, (SEEDS / "ok_rgb.png").read_bytes())
    assert thumbs(d, "#attachments") == []
    props = requests.get(plain.url + "/props", timeout=10).json()
    assert props["modalities"] == {"vision": False}
