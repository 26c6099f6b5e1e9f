"""The web page nucleus serve embeds (GET /), driven in a real headless
Chromium (issue #21): a streamed chat reply, Stop frees the request's KV,
the inspector shows the numbers the API gives for that step, the
what-if panel re-runs the real sampler (POST /sample), and a thinking
model's reasoning streams into a collapsible block.

NUCLEUS_SCREENSHOTS=DIR also writes DIR/web-light.png and DIR/web-dark.png
(the ones in docs/)."""

import json
import math
import os
import pathlib
import re
import time

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from test_server_guard import browser, metric

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(start_server):
    # -c 4096: room for the stop test's long reply (below)
    return start_server("-c", "4096", "-t", "2")


@pytest.fixture(scope="module")
def page(server):
    d = browser()
    d.set_window_size(1100, 760)
    d.get(server.url + "/")
    WebDriverWait(d, 20).until(
        lambda d: d.find_elements(By.ID, "set-temperature"))
    tokens_view(d, True)  # the inspector's tests click token spans
    yield d
    d.quit()


def tokens_view(d, on):
    """Replies as token spans (on) or as Markdown (off, the default)."""
    b = d.find_element(By.ID, "view-tokens")
    if (b.get_attribute("aria-pressed") == "true") != on:
        b.click()
    assert b.get_attribute("aria-pressed") == ("true" if on else "false")


def test_assets_and_csp(server):
    for path, ctype in [("/", "text/html"), ("/app.js", "text/javascript"),
                        ("/app.css", "text/css"),
                        ("/lib/marked.js", "text/javascript"),
                        ("/lib/purify.js", "text/javascript"),
                        ("/lib/highlight.js", "text/javascript"),
                        ("/lib/highlight.css", "text/css")]:
        r = requests.get(server.url + path, timeout=10)
        assert r.status_code == 200, path
        assert r.headers["Content-Type"].startswith(ctype), path
        csp = r.headers["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "unsafe-inline" not in csp
        assert r.headers["X-Content-Type-Options"] == "nosniff"
    html = requests.get(server.url + "/", timeout=10).text
    assert not re.search(r"<script(?![^>]*\bsrc=)", html), "inline script"
    assert not re.search(r"<[^>]+\son[a-z]+\s*=", html), "inline handler"
    assert not re.search(r"\sstyle\s*=", html), "inline style"
    assert not re.search(r"https?://", html), "the page fetches nothing else"
    # "/" is exact: other one-segment paths stay 404.
    assert requests.get(server.url + "/nope", timeout=10).status_code == 404
    props = requests.get(server.url + "/props", timeout=10).json()
    temp = next(p for p in props["params"] if p["name"] == "temperature")
    assert temp["kind"] == "float" and temp["min"] == 0
    assert temp["default"] == props["default_generation_settings"][
        "temperature"]


def set_field(d, field_id, value):
    e = d.find_element(By.ID, field_id)
    if e.get_attribute("type") == "checkbox":
        if e.is_selected() != bool(value):
            e.send_keys(Keys.SPACE)
    else:
        e.clear()
        e.send_keys(str(value))
    e.send_keys(Keys.TAB)  # "change" fires on leaving the field


def send(d, text):
    box = d.find_element(By.ID, "input")
    box.send_keys(text)
    box.send_keys(Keys.ENTER)


def wait_done(d, timeout=60):
    WebDriverWait(d, timeout).until(
        lambda d: not d.find_element(By.ID, "send").get_attribute("disabled")
        and d.find_elements(By.CSS_SELECTOR, ".msg.assistant .meta"))


def stored_chat(d):
    return json.loads(d.execute_script(
        "return localStorage.getItem('nucleus.chat.v1')"))


def test_chat_streams_and_inspector_matches_api(page, server):
    d = page
    set_field(d, "set-seed", 7)
    set_field(d, "set-max_tokens", 12)
    send(d, "Name three colors.")
    # Streamed: tokens show up before the reply is finished.
    WebDriverWait(d, 30).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, ".msg.assistant .tok"))
    wait_done(d)
    meta = d.find_element(By.CSS_SELECTOR, ".msg.assistant .meta").text
    assert "tokens/s" in meta and "finish: length" in meta, meta
    chat = stored_chat(d)
    assert [m["role"] for m in chat["messages"]] == ["user", "assistant"]
    reply = chat["messages"][1]
    # The same request straight to the API: same text, same records.
    api = requests.post(server.url + "/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "Name three colors."}],
        "seed": 7, "max_tokens": 12, "inspect": {"top_n": 10},
        "logprobs": True, "top_logprobs": 3},
        timeout=60).json()
    assert api["choices"][0]["message"]["content"] == reply["content"]
    records = api["choices"][0]["inspect"]
    assert len(records) == len(reply["tokens"]) == 12
    step = 3
    d.find_elements(By.CSS_SELECTOR, ".msg.assistant .tok")[step].click()
    rows = d.find_elements(By.CSS_SELECTOR, "#insp-table tbody tr")
    assert rows, d.get_log("browser")
    want = records[step]["candidates"]
    assert len(rows) == len(want) >= 10
    for row, c in zip(rows, want):
        assert int(row.get_attribute("data-id")) == c["id"]
        assert float(row.get_attribute("data-raw")) == c["raw_prob"]
        assert float(row.get_attribute("data-final")) == c["final_prob"]
        assert row.get_attribute("data-removed") == (c["removed_by"] or "")
        cells = row.find_elements(By.TAG_NAME, "td")
        assert cells[1].text == "%.4f" % c["raw_prob"]
        assert cells[2].text == "%.4f" % c["final_prob"]
    # The shown raw probabilities are the step's logprobs.
    lp = api["choices"][0]["logprobs"]["content"][step]
    shown = {int(r.get_attribute("data-id")): float(r.get_attribute(
        "data-raw")) for r in rows}
    drawn = records[step]["draw"]["id"]
    assert math.log(shown[drawn]) == pytest.approx(lp["logprob"], abs=1e-4)
    by_text = {c["text"]: c["id"] for c in want}
    for top in lp["top_logprobs"]:
        assert math.log(shown[by_text[top["token"]]]) == pytest.approx(
            top["logprob"], abs=1e-4)
    draw = d.find_element(By.ID, "insp-draw")
    assert int(draw.get_attribute("data-id")) == records[step]["draw"]["id"]
    assert "seed 7" in draw.text and "step %d" % step in draw.text
    check_draw_shown(d, records[step])

    # What-if: temperature 0 keeps the argmax alone; 1.5 with no
    # truncation keeps every candidate.
    for k, v in [("top_k", 0), ("top_p", 1), ("min_p", 0)]:
        set_field(d, "wi-" + k, v)

    def kept_after(temp):
        set_field(d, "wi-temperature", temp)
        d.find_element(By.ID, "wi-run").click()
        WebDriverWait(d, 20).until(lambda d: "survive" in d.find_element(
            By.ID, "wi-status").text)
        return [r.get_attribute("data-id") for r in kept_rows(d)]

    def kept_rows(d):
        return d.find_elements(By.CSS_SELECTOR,
                               "#wi-table tbody tr[data-kept='1']")

    assert len(kept_after(0)) == 1
    assert len(kept_after(1.5)) == len(want)
    d.find_element(By.ID, "wi-hist").click()
    WebDriverWait(d, 20).until(
        lambda d: "200 draws" in d.find_element(By.ID, "wi-status").text)
    counts = [int(r.get_attribute("data-count")) for r in
              d.find_elements(By.CSS_SELECTOR, "#wi-table tbody tr")]
    assert sum(counts) == 200 and max(counts) < 200

    shots = os.environ.get("NUCLEUS_SCREENSHOTS")
    if shots:
        os.makedirs(shots, exist_ok=True)
        set_field(d, "wi-temperature", 0.8)
        set_field(d, "wi-top_k", 4)
        d.find_element(By.ID, "wi-hist").click()
        WebDriverWait(d, 20).until(lambda d: "4 of" in d.find_element(
            By.ID, "wi-status").text)
        d.set_window_size(1100, 1150)
        d.find_element(By.CSS_SELECTOR, "#settings-box summary").click()
        d.execute_script("window.scrollTo(0, 0)")
        d.save_screenshot(os.path.join(shots, "web-light.png"))
        d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [
            {"name": "prefers-color-scheme", "value": "dark"}]})
        d.save_screenshot(os.path.join(shots, "web-dark.png"))
        d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        d.find_element(By.CSS_SELECTOR, "#settings-box summary").click()
        d.set_window_size(1100, 760)


def check_draw_shown(d, rec):
    """The inspector's draw on the cumulative distribution is the API's
    record of that step: u, the drawn token's interval and its text, the
    walk's segments in order, and the marker at u inside the drawn one."""
    api = rec["draw"]
    draw = d.find_element(By.ID, "insp-draw")
    assert draw.get_attribute("data-method") == api["method"] == "inverse_cdf"
    assert float(draw.get_attribute("data-u")) == api["uniform"]
    assert float(draw.get_attribute("data-lo")) == api["cdf_lo"]
    assert float(draw.get_attribute("data-hi")) == api["cdf_hi"]
    assert api["cdf_lo"] <= api["uniform"] < api["cdf_hi"]
    m = re.match(r"u = ([0-9.]+) fell in \[([0-9.]+), ([0-9.]+)\) → “(.*)”",
                 draw.text, re.S)
    assert m, draw.text
    for shown, want in zip(m.groups()[:3],
                           (api["uniform"], api["cdf_lo"], api["cdf_hi"])):
        places = len(shown.split(".")[1])
        assert places >= 4 and abs(float(shown) - want) <= 0.5 * 10 ** -places
    drawn = next(c for c in rec["candidates"] if c["id"] == api["id"])
    shown_text = m.group(4).replace("\u00a0", " ").replace("⏎\n", "\n")
    assert shown_text == drawn["text"]
    segs = d.find_elements(By.CSS_SELECTOR, "#insp-cdf .seg")
    assert [int(x.get_attribute("data-id")) for x in segs] == [
        w["id"] for w in api["walk"]]
    for x, w in zip(segs, api["walk"]):
        assert float(x.get_attribute("data-lo")) == w["lo"]
        assert float(x.get_attribute("data-hi")) == w["hi"]
        assert ("drawn" in x.get_attribute("class").split()) == (
            w["id"] == api["id"])
    seg = next(x for x in segs if "drawn" in x.get_attribute("class"))
    mark = d.find_element(By.CSS_SELECTOR, "#insp-cdf .mark")
    box = d.execute_script(
        "const r = (e) => e.getBoundingClientRect();"
        "const s = r(arguments[0]), k = r(arguments[1]), b = r(arguments[2]);"
        "return [s.left, s.right, (k.left + k.right) / 2, b.left, b.width];",
        seg, mark, d.find_element(By.ID, "insp-cdf"))
    left, right, at, bar_left, bar_width = box
    assert left - 1.5 <= at <= right + 1.5, box
    assert at == pytest.approx(bar_left + 1 + api["uniform"] * (bar_width - 2),
                               abs=1.5)


def test_stop_frees_kv_and_regenerate(page, server):
    d = page
    # a reply far longer than the stop takes to land, on any machine: 900
    # tokens ran out first on an AMD EPYC at ~170 tok/s while headless
    # Chromium, sharing 2 cores with the server, was slow to click
    set_field(d, "set-max_tokens", 3500)
    set_field(d, "set-ignore_eos", True)
    generated = metric(server, "nucleus_generation_tokens_total")
    send(d, "Tell me a very long story.")
    WebDriverWait(d, 30).until(lambda d: len(d.find_elements(
        By.CSS_SELECTOR, ".msg.assistant:last-child .tok")) >= 5)
    d.find_element(By.ID, "stop").click()
    wait_done(d)
    meta = d.find_elements(By.CSS_SELECTOR, ".msg.assistant .meta")[-1].text
    assert "finish: stopped" in meta, meta
    n_tokens = int(meta.split()[0])
    assert 5 <= n_tokens < 3500
    # The server cancelled it (3500 tokens take far longer than this) and
    # freed its KV.
    deadline = time.time() + 5
    while metric(server, "nucleus_kv_blocks_used") != 0:
        assert time.time() < deadline, requests.get(
            server.url + "/metrics", timeout=10).text
        time.sleep(0.1)
    assert metric(server, "nucleus_requests_running") == 0
    time.sleep(0.5)
    n_generated = metric(server, "nucleus_generation_tokens_total") - generated
    assert n_generated < 3500, (n_generated, meta)
    # Regenerate replaces the last reply; Edit puts the message back.
    set_field(d, "set-max_tokens", 4)
    set_field(d, "set-ignore_eos", False)
    set_field(d, "set-temperature", 0)
    d.find_element(By.ID, "regen").click()
    time.sleep(0.3)
    wait_done(d)
    # Greedy says so: the argmax, no u and no cumulative bar.
    d.find_elements(By.CSS_SELECTOR, ".msg.assistant:last-child .tok")[0].click()
    draw = d.find_element(By.ID, "insp-draw")
    assert draw.get_attribute("data-method") == "greedy"
    assert draw.text.startswith("Greedy (temperature 0)"), draw.text
    assert not d.find_element(By.ID, "insp-cdf").is_displayed()
    set_field(d, "set-temperature", 1)
    chat = stored_chat(d)
    assert chat["messages"][-1]["role"] == "assistant"
    assert len(chat["messages"][-1]["tokens"]) <= 4
    assert len(chat["messages"]) == 4
    d.find_elements(By.CSS_SELECTOR, ".msg.user .edit")[-1].click()
    assert d.find_element(By.ID, "input").get_attribute("value") == \
        "Tell me a very long story."
    assert len(stored_chat(d)["messages"]) == 2


def test_api_key_and_keyboard(page, start_server):
    keyed = start_server("-c", "256", "--api-key", "sekret-key")
    assert requests.get(keyed.url + "/", timeout=10).status_code == 200
    assert requests.get(keyed.url + "/props", timeout=10).status_code == 401
    d = page
    d.get(keyed.url + "/")  # another origin: its own empty localStorage
    tokens_view(d, True)
    set_field(d, "apikey", "sekret-key")
    WebDriverWait(d, 20).until(
        lambda d: d.find_element(By.ID, "model").text
        and d.find_elements(By.ID, "set-max_tokens"))
    set_field(d, "set-max_tokens", 3)
    send(d, "Hi")
    wait_done(d)
    meta = d.find_element(By.CSS_SELECTOR, ".msg.assistant .meta").text
    assert "finish: length" in meta and "error" not in meta, meta
    # A token opens the inspector from the keyboard too.
    tok = d.find_elements(By.CSS_SELECTOR, ".msg.assistant .tok")[0]
    tok.send_keys(Keys.ENTER)
    WebDriverWait(d, 10).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#insp-table tbody tr"))
    assert d.find_element(By.ID, "insp-body").is_displayed()


def test_code_blocks_and_stored_chat(page, server):
    d = page
    d.get(server.url + "/")
    toks = ["Run", ":\n", "``", "`sh\n", "ls", " -l\n", "```", "\nDone"]
    chat = {"system": "Be brief.", "messages": [
        {"role": "user", "content": "How?"},
        {"role": "assistant", "content": "".join(toks), "meta": "m",
         "tokens": [{"text": t, "inspect": None} for t in toks]},
        {"role": "user", "content": "x ```py\nprint(1)\n``` y"}]}
    d.execute_script("localStorage.setItem('nucleus.chat.v1', arguments[0])",
                     json.dumps(chat))
    d.refresh()
    WebDriverWait(d, 10).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, ".msg.assistant pre code"))
    code = d.find_element(By.CSS_SELECTOR, ".msg.assistant pre code").text
    assert "ls -l" in code and "Done" not in code and "Run" not in code
    assert d.find_element(By.CSS_SELECTOR,
                          ".msg.user:last-child pre code").text == "print(1)"
    assert d.find_element(By.ID, "system").get_attribute("value") == \
        "Be brief."
    d.find_element(By.ID, "newchat").click()
    assert json.loads(d.execute_script(
        "return localStorage.getItem('nucleus.chat.v1')"))["messages"] == []


MARKDOWN = """## Colors

Some *emphasis* and **bold**.

- red
- green

| name | hex |
|---|---|
| red | #f00 |

```python
def f(x):
    return x + 1
```

<script>window.__pwned = 1</script>
<img src="nope.png" onerror="window.__pwned = 2">
[click](javascript:window.__pwned=3)
"""


def test_markdown_rendered_sanitized_and_tokens_one_click_away(page, server):
    d = page
    d.get(server.url + "/")
    toks = [MARKDOWN[i:i + 7] for i in range(0, len(MARKDOWN), 7)]
    chat = {"system": "", "messages": [
        {"role": "user", "content": "Colors?"},
        {"role": "assistant", "content": MARKDOWN, "meta": "m",
         "tokens": [{"text": t, "inspect": None} for t in toks]}]}
    d.execute_script("localStorage.setItem('nucleus.chat.v1', arguments[0])",
                     json.dumps(chat))
    d.refresh()
    tokens_view(d, False)
    WebDriverWait(d, 10).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, ".msg.assistant .md"))
    md = d.find_element(By.CSS_SELECTOR, ".msg.assistant .body.md")
    assert md.find_element(By.TAG_NAME, "h2").text == "Colors"
    assert md.find_element(By.TAG_NAME, "em").text == "emphasis"
    assert md.find_element(By.TAG_NAME, "strong").text == "bold"
    assert [li.text for li in md.find_elements(By.CSS_SELECTOR, "ul li")] == [
        "red", "green"]
    cells = [td.text for td in md.find_elements(By.CSS_SELECTOR, "table td")]
    assert cells == ["red", "#f00"]
    code = md.find_element(By.CSS_SELECTOR, "pre code")
    assert "return x + 1" in code.text
    assert "hljs" in code.get_attribute("class")  # highlighted
    assert md.find_elements(By.CSS_SELECTOR, "pre code span")  # coloured
    # Model output is untrusted: nothing in it runs.
    assert not md.find_elements(By.TAG_NAME, "script")
    for img in md.find_elements(By.TAG_NAME, "img"):
        assert img.get_attribute("onerror") is None
    for a in md.find_elements(By.TAG_NAME, "a"):
        assert not (a.get_attribute("href") or "").startswith("javascript:")
        a.click()
    time.sleep(0.3)
    assert d.execute_script("return window.__pwned === undefined")
    assert "<script>" not in md.text and "##" not in md.text
    # The token spans are one click away, and back.
    assert not d.find_elements(By.CSS_SELECTOR, ".msg.assistant .tok")
    tokens_view(d, True)
    spans = d.find_elements(By.CSS_SELECTOR, ".msg.assistant .tok")
    assert "".join(t.get_attribute("textContent") for t in spans) == MARKDOWN
    tokens_view(d, False)
    assert d.find_elements(By.CSS_SELECTOR, ".msg.assistant .body.md")
    tokens_view(d, True)


def test_sampler_range_labels(page, server):
    d = page
    d.get(server.url + "/")
    WebDriverWait(d, 20).until(
        lambda d: d.find_elements(By.ID, "set-top_p"))

    def label(name):
        return d.find_element(By.CSS_SELECTOR,
                              f"label[for='set-{name}']").text

    assert label("top_p") == "top_p (0, 1]"
    assert label("temperature") == "temperature [0, 100]"
    assert "[(" not in d.find_element(By.ID, "settings").text


def test_inspector_stays_in_a_narrow_window(page, server):
    d = page
    d.get(server.url + "/")
    WebDriverWait(d, 20).until(
        lambda d: d.find_elements(By.ID, "set-max_tokens"))
    tokens_view(d, True)
    d.find_element(By.ID, "newchat").click()
    set_field(d, "set-max_tokens", 3)
    d.set_window_size(480, 760)
    try:
        send(d, "Hi")
        wait_done(d)
        # the last token that has a box to click (a token that renders
        # with no width cannot be clicked: on an AMX machine's matmul order
        # the reply's last token was one, "element not interactable")
        toks = [t for t in d.find_elements(By.CSS_SELECTOR,
                                           ".msg.assistant .tok")
                if t.is_displayed() and t.size["width"] > 0]
        toks[-1].click()
        WebDriverWait(d, 10).until(
            lambda d: d.find_element(By.ID, "insp-body").is_displayed())
        box = d.execute_script(
            "const r = document.getElementById('inspector')"
            ".getBoundingClientRect(); return [r.left, r.top, r.right,"
            " r.bottom, window.innerWidth, window.innerHeight];")
        left, top, right, bottom, width, height = box
        assert 0 <= left < right <= width and 0 <= top < bottom <= height, box
        d.find_element(By.ID, "insp-close").click()
        assert not d.find_element(By.ID, "insp-body").is_displayed()
    finally:
        d.set_window_size(1100, 760)


def test_failed_send_shows_the_error_and_retries(page, start_server):
    keyed = start_server("-c", "256", "--api-key", "retry-key")
    d = page
    d.get(keyed.url + "/")
    WebDriverWait(d, 20).until(lambda d: d.find_element(By.ID, "status").text)
    send(d, "Hi")  # no key yet: 401
    retry = WebDriverWait(d, 20).until(
        lambda d: d.find_elements(By.ID, "retry"))[0]
    err = d.find_element(By.CSS_SELECTOR, ".msg.error").text
    assert "API key" in err, err
    assert [m["role"] for m in stored_chat(d)["messages"]] == ["user"]
    set_field(d, "apikey", "retry-key")
    WebDriverWait(d, 20).until(
        lambda d: d.find_elements(By.ID, "set-max_tokens"))
    set_field(d, "set-max_tokens", 3)
    d.find_element(By.ID, "retry").click()
    wait_done(d)
    assert not d.find_elements(By.ID, "retry")
    assert [m["role"] for m in stored_chat(d)["messages"]] == [
        "user", "assistant"]


def test_inspector_marks_drafts(page, start_server):
    """A server that drafts by n-gram: the reply's tokens mark kept drafts
    (and rejected ones), and the inspector says what was drafted there."""
    spec = start_server("-c", "1024", "-t", "2", "--spec", "ngram",
                        "--spec-row-cost", "0.01")
    d = page
    d.get(spec.url + "/")  # another origin: its own empty localStorage
    WebDriverWait(d, 20).until(
        lambda d: d.find_elements(By.ID, "set-temperature"))
    tokens_view(d, True)
    set_field(d, "set-temperature", 0)
    set_field(d, "set-max_tokens", 40)
    send(d, "Repeat exactly, five times: red, green, blue, red, green, "
            "blue, red, green, blue.")
    wait_done(d)
    chat = stored_chat(d)
    recs = [t["inspect"] for t in chat["messages"][1]["tokens"]]
    drafts = [r["draft"] for r in recs if r and "draft" in r]
    assert any(x["accepted"] for x in drafts), recs
    spans = d.find_elements(By.CSS_SELECTOR, ".msg.assistant .tok")
    kept = [i for i, r in enumerate(recs)
            if r and "draft" in r and r["draft"]["accepted"]]
    marked = d.find_elements(By.CSS_SELECTOR, ".msg.assistant .tok.draft-kept")
    assert len(marked) == len(kept)
    rejected = d.find_elements(By.CSS_SELECTOR,
                               ".msg.assistant .tok.draft-rejected")
    assert len(rejected) == len(drafts) - len(kept)
    spans[kept[0]].click()
    p = d.find_element(By.ID, "insp-spec")
    assert p.is_displayed() and p.get_attribute("data-draft") == "kept"
    assert "kept" in p.text
    plain = [i for i, r in enumerate(recs) if r and "draft" not in r]
    spans[plain[0]].click()
    assert not d.find_element(By.ID, "insp-spec").is_displayed()


def test_thinking_streams_in_a_collapsible_block(page, start_server):
    """A thinking template (Qwen3.5's opens the block in the prompt; the
    server's budget closes it after 6 tokens): the reasoning streams into
    a Thinking block, open while it streams, closed once the answer comes,
    opened by a click; the next turn sends it back as reasoning_content."""
    d = page
    thinker = start_server(
        "-c", "1024", "-t", "2", "--reasoning-budget", "6",
        "--chat-template", str(ROOT / "tests/data/templates/qwen3.5.jinja"))
    d.get(thinker.url + "/")
    WebDriverWait(d, 20).until(
        lambda d: d.find_elements(By.ID, "set-temperature"))
    d.execute_script("localStorage.removeItem('nucleus.chat.v1')")
    d.refresh()
    WebDriverWait(d, 20).until(
        lambda d: d.find_elements(By.ID, "set-temperature"))
    tokens_view(d, False)
    set_field(d, "set-max_tokens", 24)
    set_field(d, "set-temperature", 0)
    set_field(d, "set-min_tokens", 14)  # an answer after the thinking
    # The page redraws at most once per 40 ms, so a fast server's six
    # thinking tokens and the answer can land in one redraw: deliver the
    # stream one SSE event per 150 ms, as a slow model would, so the block
    # is drawn while only the reasoning has come.
    d.execute_script("""
      const realFetch = window.fetch;
      window.fetch = async (url, opts) => {
        const r = await realFetch(url, opts);
        if (!String(url).includes('/chat/completions')) return r;
        const reader = r.body.getReader();
        const dec = new TextDecoder(), enc = new TextEncoder();
        let buf = '';
        const body = new ReadableStream({
          async pull(ctl) {
            for (;;) {
              const cut = buf.indexOf('\\n\\n');
              if (cut >= 0) {
                await new Promise((ok) => setTimeout(ok, 150));
                ctl.enqueue(enc.encode(buf.slice(0, cut + 2)));
                buf = buf.slice(cut + 2);
                return;
              }
              const { value, done } = await reader.read();
              if (done) {
                if (buf) ctl.enqueue(enc.encode(buf));
                ctl.close();
                return;
              }
              buf += dec.decode(value, { stream: true });
            }
          }});
        return new Response(body, { status: r.status, headers: r.headers });
      };""")
    # note every state the block goes through while the reply streams
    d.execute_script("""
      window.__thinking = [];
      new MutationObserver(() => {
        const b = document.querySelector('.msg.assistant details.thinking');
        if (b) window.__thinking.push(b.open);
      }).observe(document.getElementById('messages'),
                 {childList: true, subtree: true});""")
    send(d, "What is the capital of France?")
    wait_done(d)
    states = d.execute_script("return window.__thinking")
    assert True in states, states  # open while it streamed
    block = d.find_element(By.CSS_SELECTOR, ".msg.assistant details.thinking")
    thought = block.find_element(By.CSS_SELECTOR, ".thought")
    assert block.get_attribute("open") is None  # closed: the answer came
    block.find_element(By.TAG_NAME, "summary").click()
    assert block.get_attribute("open") is not None
    text = thought.get_attribute("textContent")
    assert text and "</think>" not in text
    answer = d.find_element(By.CSS_SELECTOR, ".msg.assistant .body")
    assert "</think>" not in answer.text
    msg = stored_chat(d)["messages"][1]
    assert msg["reasoning"] == text and text not in msg["content"]
    tokens_view(d, True)
