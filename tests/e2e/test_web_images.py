"""The web page's images (issue 46), in headless Chromium: the attach
button's file input and a paste into the message box each add a
thumbnail to the composer (removable), a sent message shows them in the
history, keeps them in the stored chat and sends them as image_url parts
with data: URIs before the text; on a server without a vision projector
the answer is the server's 400, shown with a Retry."""

import base64
import json
import pathlib

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from test_server_guard import browser
from test_web_page import send, stored_chat

SEEDS = pathlib.Path(__file__).resolve().parents[2] / "fuzz/corpus/image"


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "256", "-t", "1")


@pytest.fixture(scope="module")
def page(server):
    d = browser()
    d.set_window_size(1100, 760)
    d.get(server.url + "/")
    WebDriverWait(d, 20).until(
        lambda d: d.find_elements(By.ID, "set-temperature"))
    # record the bodies the page sends
    d.execute_script(
        "window.__bodies = []; const f = window.fetch;"
        "window.fetch = (u, o) => { if (o && o.body) __bodies.push(o.body);"
        " return f(u, o); };")
    yield d
    d.quit()


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


def test_attach_paste_send(page):
    d = page
    png = (SEEDS / "ok_rgb.png").read_bytes()
    jpg = (SEEDS / "ok_rgb.jpg").read_bytes()
    webp = (SEEDS / "ok_lossless.webp").read_bytes()
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
    assert webp  # (removed: never sent)

    send(d, "What is in these?")
    # the server has no --mmproj: its 400, with a Retry
    err = WebDriverWait(d, 30).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, ".msg.error"))[0].text
    assert "this model does not take images (2 in the messages" in err, err
    assert thumbs(d, "#attachments") == []  # the composer is empty again
    assert thumbs(d, ".msg.user") == attached  # the history shows them
    user = stored_chat(d)["messages"][0]
    assert user["images"] == attached and user["content"] == \
        "What is in these?"
    body = json.loads(d.execute_script("return __bodies[__bodies.length-1]"))
    assert body["messages"][-1] == {"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": attached[0]}},
        {"type": "image_url", "image_url": {"url": attached[1]}},
        {"type": "text", "text": "What is in these?"}]}

    # Edit puts the text and the images back in the composer.
    d.find_element(By.CSS_SELECTOR, ".msg.user .edit").click()
    assert thumbs(d, "#attachments") == attached
    assert d.find_element(By.ID, "input").get_attribute("value") == \
        "What is in these?"
