"""End-to-end tests of `nucleus template`: the prompt the binary prints must
be byte-identical to Python jinja2 rendering the same template the way HF
transformers' apply_chat_template does (see scripts/gen_template_golden.py),
for the default model's own GGUF template and for --chat-template files."""

import functools
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import gen_template_golden as golden  # noqa: E402

NUCLEUS_BIN = os.environ.get("NUCLEUS_BIN", str(ROOT / "build/release/nucleus"))
DEFAULT_MODEL = os.environ.get(
    "NUCLEUS_MODEL", str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
TEMPLATES = ROOT / "tests/data/templates"

needs_model = pytest.mark.usefixtures("model_required")


@functools.lru_cache(maxsize=None)
def gguf_template_and_tokens(path):
    import gguf

    r = gguf.GGUFReader(path)

    def field_str(name):
        f = r.fields[name]
        return bytes(f.parts[f.data[0]]).decode("utf-8")

    def token(key):
        f = r.fields[key]
        idx = int(f.parts[f.data[0]][0])
        toks = r.fields["tokenizer.ggml.tokens"]
        return bytes(toks.parts[toks.data[idx]]).decode("utf-8")

    return (field_str("tokenizer.chat_template"),
            token("tokenizer.ggml.bos_token_id"),
            token("tokenizer.ggml.eos_token_id"))


def run_template(tmp_path, conversation, *args):
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps(conversation), encoding="utf-8")
    return subprocess.run([NUCLEUS_BIN, "template", "-m", DEFAULT_MODEL, *args,
                           str(conv)], capture_output=True, timeout=120)


def expected(source, bos, eos, messages, tools=None, agp=True):
    env = golden.make_env()
    return golden.render(env, source, bos, eos, messages, tools, agp, {})


CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "Be terse."},
     {"role": "user", "content": "Héllo 🦙 — 你好"},
     {"role": "assistant", "content": "  Hi!  "},
     {"role": "user", "content": "{{ not code }} <|im_end|>"}],
]


@needs_model
@pytest.mark.parametrize("agp", [True, False])
@pytest.mark.parametrize("idx", range(len(CONVERSATIONS)))
def test_model_template_matches_jinja2(tmp_path, idx, agp):
    source, bos, eos = gguf_template_and_tokens(DEFAULT_MODEL)
    messages = CONVERSATIONS[idx]
    r = run_template(tmp_path, {"messages": messages,
                                "add_generation_prompt": agp})
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode("utf-8") == expected(source, bos, eos, messages,
                                                agp=agp)


@needs_model
def test_bare_array_defaults_to_generation_prompt(tmp_path):
    r = run_template(tmp_path, [{"role": "user", "content": "x"}])
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.endswith(b"<|im_start|>assistant\n")  # nothing appended


@needs_model
@pytest.mark.parametrize("family", ["qwen3", "llama3.2", "gemma3",
                                    "mistral-nemo"])
def test_chat_template_file(tmp_path, family):
    """--chat-template FILE overrides the GGUF template; tools pass through.
    bos/eos come from the model's vocabulary (SmolLM2's here)."""
    _, bos, eos = gguf_template_and_tokens(DEFAULT_MODEL)
    source = (TEMPLATES / (family + ".jinja")).read_text(encoding="utf-8")
    messages = [{"role": "user", "content": "What's the weather in Paris?"}]
    tools = [golden.WEATHER_TOOL]
    # --now fixes strftime_now()'s clock (llama3.2 prints today's date) to
    # the golden renderer's (scripts/gen_template_golden.py NOW, in UTC).
    r = run_template(tmp_path, {"messages": messages, "tools": tools},
                     "--chat-template", str(TEMPLATES / (family + ".jinja")),
                     "--now", str(golden.NOW))
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode("utf-8")
    assert out == expected(source, bos, eos, messages, tools)
    if "strftime_now" in source:
        assert "26 Jul 2024" in out  # the date came from --now


@needs_model
def test_now_option(tmp_path):
    """Without --now strftime_now() shows the local date today; --now must
    be a positive number of seconds."""
    import datetime

    tmpl = tmp_path / "date.jinja"
    tmpl.write_text("{{ strftime_now('%Y-%m-%d') }}")
    conv = [{"role": "user", "content": "x"}]
    before = datetime.date.today().isoformat()
    r = run_template(tmp_path, conv, "--chat-template", str(tmpl))
    after = datetime.date.today().isoformat()
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode() in (before, after)
    r = run_template(tmp_path, conv, "--chat-template", str(tmpl), "--now",
                     "86400")
    assert r.stdout == b"1970-01-02"
    for bad in ("0", "-5", "x", "12y", ""):
        r = run_template(tmp_path, conv, "--chat-template", str(tmpl),
                         "--now", bad)
        assert r.returncode == 2 and b"--now needs seconds" in r.stderr


@needs_model
def test_chat_template_kwargs(tmp_path):
    messages = [{"role": "user", "content": "Quick: capital of France?"}]
    r = run_template(tmp_path, {"messages": messages,
                                "chat_template_kwargs": {"enable_thinking": False}},
                     "--chat-template", str(TEMPLATES / "qwen3.jinja"))
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.endswith(b"<|im_start|>assistant\n<think>\n\n</think>\n\n")


@needs_model
def test_template_errors_are_clear(tmp_path):
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% for m in messages %}\n{{ raise_exception('no') }}"
                   "{% endfor %}")
    r = run_template(tmp_path, [{"role": "user", "content": "x"}],
                     "--chat-template", str(bad))
    assert r.returncode == 1
    assert b"template line 2: no" in r.stderr
    assert r.stdout == b""
    hostile = tmp_path / "hostile.jinja"
    hostile.write_text("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}")
    r = run_template(tmp_path, [], "--chat-template", str(hostile))
    assert r.returncode == 1
    assert b"deeper than" in r.stderr
    r = run_template(tmp_path, {"messages": "not a list"})
    assert r.returncode == 1
    assert b"array of messages" in r.stderr
