#!/usr/bin/env python3
"""JSONSchemaBench (github.com/guidance-ai/jsonschemabench) through nucleus's
JSON Schema converter and llguidance (PyPI), in the same run:

- compile rate: schemas each compiles (nucleus: JSON Schema -> GBNF -> the
  grammar engine; llguidance: LLMatcher.validate_grammar of the schema);
- token mask time: random walks through each compiled grammar on the same
  vocabulary (the default model's), STEPS masks per schema, each mask's CPU
  time (nucleus: build/release/tests/json_schema_walk,
  CLOCK_THREAD_CPUTIME_ID around nc_grammar_matcher_mask; llguidance:
  time.thread_time_ns() around LLMatcher.compute_bitmask, so it includes a
  call from Python), mean and p99 over all masks;
- validity: every nucleus walk that finished is parsed and validated with
  the `jsonschema` package, format checker on (a walk draws tokens the
  mask allows, preferring end and closing tokens, so it is an adversarial
  sampler of the grammar, not a model).

  bench/jsonschema_bench.py [--data tests/data/jsonschemabench/sample.jsonl
                             | --data DIR_OF_JSON] [--model GGUF]
                            [--steps 300] [--seed 1] [--no-llguidance]
                            [--json OUT] [--failures]

DATA: a JSONL of {"dataset", "file", "schema"} (the committed stratified
sample: scripts/sample_jsonschemabench.py) or a directory of .json schemas
(the whole corpus: data/<dataset>/*.json of a checkout). Prints a markdown
table per dataset and the totals. Needs `make build/release/tests/json_schema_walk`.
CPU times are load-robust but not load-proof: say how busy the machine was."""
import argparse
import collections
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

import jsonschema

ROOT = pathlib.Path(__file__).resolve().parents[1]
WALK = ROOT / "build/release/tests/json_schema_walk"
DEFAULT_MODEL = ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"


def load(data):
    p = pathlib.Path(data)
    rows = []
    if p.is_dir():
        for f in sorted(p.rglob("*.json")):
            try:
                s = json.loads(f.read_text())
            except (ValueError, UnicodeDecodeError):
                continue
            rows.append({"dataset": f.parent.name, "file": str(f),
                         "schema": s})
    else:
        for line in p.read_text().splitlines():
            if line.strip():
                rows.append(json.loads(line))
    return rows


def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run_nucleus(rows, model, steps, seed):
    proc = subprocess.Popen([str(WALK), str(model), str(steps), str(seed)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    res = []
    for r in rows:
        proc.stdin.write(json.dumps(r["schema"]) + "\n")
        proc.stdin.flush()
        res.append(json.loads(proc.stdout.readline()))
    proc.stdin.close()
    proc.wait()
    return res


def validate(schema, text):
    """'valid', 'invalid: why', or 'unchecked: why' (the validator itself
    cannot evaluate the schema, e.g. a remote $ref)."""
    try:
        inst = json.loads(text)
    except ValueError as e:
        return f"invalid: not JSON ({e})"
    try:
        cls = jsonschema.validators.validator_for(schema)
        v = cls(schema, format_checker=cls.FORMAT_CHECKER)
        err = next(iter(v.iter_errors(inst)), None)
    except Exception as e:  # noqa: BLE001 (the validator's own failure)
        return f"unchecked: {type(e).__name__}"
    return "valid" if err is None else f"invalid: {err.message[:200]}"


def llg_tokenizer(model):
    import llama_cpp
    from llguidance.llamacpp import lltokenizer_from_vocab
    llama_cpp.llama_backend_init()
    mp = llama_cpp.llama_model_default_params()
    mp.vocab_only = True
    m = llama_cpp.llama_model_load_from_file(str(model).encode(), mp)
    vocab = llama_cpp.llama_model_get_vocab(m)
    tok = lltokenizer_from_vocab(vocab)
    closes = [i for i in range(tok.vocab_size)
              if any(ch in tok.decode_bytes([i]) for ch in b'"}],:')]
    return tok, closes


def run_llguidance(rows, tok, closes, steps, seed):
    import random
    import llguidance
    import numpy as np
    rng = random.Random(seed)
    closing = np.zeros(tok.vocab_size, dtype=bool)
    closing[closes] = True
    res = []
    for r in rows:
        g = llguidance.grammar_from("json_schema", json.dumps(r["schema"]))
        err = llguidance.LLMatcher.validate_grammar(g)
        if err:
            res.append({"ok": False})
            continue
        times = []
        while len(times) < steps:
            m = llguidance.LLMatcher(tok, g)
            if m.is_error():
                break
            for _ in range(400):
                if len(times) >= steps:
                    break
                t0 = time.thread_time_ns()
                bits = m.compute_bitmask()
                times.append((time.thread_time_ns() - t0) / 1e3)
                on = np.unpackbits(np.frombuffer(bits, dtype=np.uint8),
                                   bitorder="little")[:tok.vocab_size]
                allowed = np.flatnonzero(on)
                if not len(allowed):
                    break
                if on[tok.eos_token] and rng.random() < 0.5:
                    break
                cl = np.flatnonzero(on & closing)
                pool = cl if len(cl) and rng.random() < 1 / 3 else allowed
                t = int(pool[rng.randrange(len(pool))])
                if not m.consume_token(t) or m.is_stopped():
                    break
        res.append({"ok": True, "mask_us": times})
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(
        ROOT / "tests/data/jsonschemabench/sample.jsonl"))
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-llguidance", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--failures", action="store_true",
                    help="print each schema nucleus refuses, and why")
    a = ap.parse_args()
    if not WALK.exists():
        sys.exit(f"{WALK} is not built: make {WALK.relative_to(ROOT)}")
    rows = load(a.data)
    ours = run_nucleus(rows, a.model, a.steps, a.seed)
    theirs = None
    if not a.no_llguidance:
        tok, closes = llg_tokenizer(a.model)
        theirs = run_llguidance(rows, tok, closes, a.steps, a.seed)
    per = collections.OrderedDict()
    tot = collections.Counter()
    our_us, their_us = [], []
    bad = []
    for i, r in enumerate(rows):
        d = per.setdefault(r["dataset"], collections.Counter())
        for c in (d, tot):
            c["schemas"] += 1
        o = ours[i]
        if o["ok"]:
            for c in (d, tot):
                c["nucleus"] += 1
            our_us += o["mask_us"]
            for text in o["outputs"]:
                verdict = validate(r["schema"], text)
                key = verdict.split(":")[0]
                for c in (d, tot):
                    c["finished"] += 1
                    c[key] += 1
                if key == "invalid":
                    bad.append((r["file"], text[:200], verdict))
        elif a.failures:
            print(f"refused {r['file']}: {o['error']}", file=sys.stderr)
        if theirs and theirs[i]["ok"]:
            for c in (d, tot):
                c["llguidance"] += 1
            their_us += theirs[i]["mask_us"]
    print(f"JSONSchemaBench: {len(rows)} schemas from {a.data}; "
          f"{a.steps} masks per schema; model {pathlib.Path(a.model).name}; "
          f"CPU {platform.processor() or platform.machine()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print()
    print("| dataset | schemas | nucleus compiles | llguidance compiles | "
          "finished outputs | valid | invalid | unchecked |")
    print("|---|---|---|---|---|---|---|---|")
    for name, c in list(per.items()) + [("**all**", tot)]:
        print(f"| {name} | {c['schemas']} | {c['nucleus']} | "
              f"{c['llguidance'] if theirs else '-'} | {c['finished']} | "
              f"{c['valid']} | {c['invalid']} | {c['unchecked']} |")
    print()
    print("| mask CPU time per token | mean µs | p50 µs | p99 µs | masks |")
    print("|---|---|---|---|---|")
    for name, xs in (("nucleus", our_us), ("llguidance", their_us)):
        if xs:
            print(f"| {name} | {sum(xs) / len(xs):.1f} | {pct(xs, 0.5):.1f} "
                  f"| {pct(xs, 0.99):.1f} | {len(xs)} |")
    for f, text, why in bad:
        print(f"INVALID {f}: {text!r}: {why}", file=sys.stderr)
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({
            "per_dataset": per, "total": tot,
            "nucleus_mask_us": {"mean": sum(our_us) / max(1, len(our_us)),
                                "p99": pct(our_us, 0.99)},
            "llguidance_mask_us": {
                "mean": sum(their_us) / max(1, len(their_us)),
                "p99": pct(their_us, 0.99)} if their_us else None}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
