"""Speculative decoding with the model's MTP head (--spec mtp) through the
real binary, on the random qwen35mtp file of scripts/make_arch_gguf.py
(`make arch-models`: qwen35 with one MTP layer). Random weights: the head's
drafts are almost never kept; what is checked is that the text is the
plain run's, that drafts are made and counted, and the refusals."""

import pathlib
import re
import subprocess

import requests
from conftest import NUCLEUS_BIN, require_binary_and_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
MTP = ROOT / "build/arch/qwen35mtp.gguf"
QWEN35 = ROOT / "build/arch/qwen35.gguf"
ROW_COST = ("--spec-row-cost", "0.01")  # every step drafts
PROMPT = "The river stone bread window garden copper lantern"


def run_cli(model, *args):
    require_binary_and_model(str(model))
    return subprocess.run([NUCLEUS_BIN, "run", "-m", str(model), "-t", "2",
                           "--temp", "0", *args, *ROW_COST],
                          capture_output=True, text=True, timeout=300)


def test_cli_mtp_same_text():
    plain = run_cli(MTP, "-p", PROMPT, "-n", "32")
    spec = run_cli(MTP, "-p", PROMPT, "-n", "32", "--spec", "mtp",
                   "--draft-max", "3")
    assert plain.returncode == 0 and spec.returncode == 0, spec.stderr
    assert spec.stdout == plain.stdout
    m = re.search(r"drafts: (\d+) of (\d+) accepted", spec.stderr)
    assert m and int(m.group(2)) > 0, spec.stderr
    bad = run_cli(QWEN35, "-p", "hi", "-n", "2", "--spec", "mtp")
    assert bad.returncode != 0
    assert "the file carries no MTP layers" in bad.stderr, bad.stderr


def completion(url, **extra):
    r = requests.post(url + "/v1/completions", json={
        "prompt": PROMPT, "max_tokens": 24, "temperature": 0,
        "ignore_eos": True, **extra}, timeout=120)
    return r


def test_server_mtp(start_server):
    srv = start_server("-c", "512", "-t", "2", "--spec", "mtp", *ROW_COST,
                       model=str(MTP))
    spec = completion(srv.url)
    plain = completion(srv.url, speculative=False)
    again = completion(srv.url, speculative={"type": "mtp", "n_max": 2})
    for r in (spec, plain, again):
        assert r.status_code == 200, r.text
    text = plain.json()["choices"][0]["text"]
    assert spec.json()["choices"][0]["text"] == text
    assert again.json()["choices"][0]["text"] == text
    details = spec.json()["usage"]["completion_tokens_details"]
    assert details["rejected_prediction_tokens"] + \
        details["accepted_prediction_tokens"] > 0
    metrics = requests.get(srv.url + "/metrics", timeout=10).text
    m = re.search(r'^nucleus_spec_drafted_tokens_total\{drafter="mtp"\} '
                  r'(\d+)$', metrics, re.M)
    assert m and int(m.group(1)) > 0


def test_server_without_head_refuses(start_server):
    srv = start_server("-c", "512", "-t", "2", model=str(MTP))
    r = completion(srv.url, speculative={"type": "mtp"})
    assert r.status_code == 400, r.text
    assert "MTP head" in r.text
