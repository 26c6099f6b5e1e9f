#!/usr/bin/env python3
"""Speculative decoding's speed and acceptance against temperature.

For each setup, task and temperature, `nucleus run` generates without
drafts (--spec off) and with each drafter; the runs are interleaved (off,
ngram, prediction, off, ...) so that load changes on a shared machine hit
them alike, and the median generation tok/s of each is printed with its
ratio to --spec off and the share of drafted tokens kept. Every run whose
drafts keep the plain draw (n-gram and prediction drafts, a draft model
verified strictly, any drafter at T = 0) must print the text of the run
without drafts (same seed): the script checks it. Tasks:

  quote  a passage, then "Quote its first two sentences exactly."
  code   a Python function, then "Rewrite it with total renamed to acc."
  file   a coding assistant's system turn, a Python module (the function
         of code, imports, a loader and main), the same ask: a code edit as
         coding tools send it, the reply the whole file (prediction: the
         module renamed)

Setups (rows of the table):
  default  the default model (or --model): off, ngram, prediction (code, file)
  gemma    --gemma FILE (Gemma 3 270M): off, ngram, prediction (code, file)
  pair     --draft-pair TARGET,DRAFT (scripts/make_spec_pair.sh: the
           default model at F16 and its Q4_0): the target off, and with the
           draft model verified by rejection sampling (draft) and strictly
           as llama.cpp's server does (draft-strict, --draft-strict)

N-gram and prediction drafts are point masses, so strict verification and
exact rejection sampling accept the same tokens: one row covers both.

Round r runs seed --seed + r (default 7) in every mode and in llama.cpp:
at T > 0 each round samples another text, so the medians and the kept
shares are over several texts, not one draw's luck (a single draw of
Gemma 3 270M at T = 1 kept from 42% to 80% of its drafts by seed).

--peer DIR adds llama.cpp on the same files, prompts, temperatures, draft
length and seeds: llama-lookup (prompt lookup: n-gram) for the default and
gemma setups, llama-speculative (-md DRAFT) for the pair; its "decoded ...
t/s" against nucleus's --spec off. With it, llama-server from DIR runs
each setup's server-side speculation too, one server a configuration
(--peer-server, default on with --peer): `--spec-type ngram-simple` and
`ngram-map-k` with 3-token lookups and the draft length, `ngram-simple`
and `ngram-mod` at their defaults (12- and 24-token lookups), and
`--model-draft DRAFT` for the pair; a /completion request a round (the
same prompt, temperature, seed and token count, ignore_eos, no prompt
cache), its `timings.predicted_per_second` and draft counts. The table's
llama.cpp rows are each tool's median; "best llama.cpp" is the fastest.

--row-orders reuse|llama: the float orders of every nucleus run (default
reuse, the server's: `nucleus serve` computes every request in them;
`nucleus run` alone defaults to llama, llama.cpp's logits bit for bit,
whose products of 2 to 8 rows go row by row as llama.cpp's do, so a draft
row costs about half again as much there).

--before BIN runs every nucleus mode with BIN too (an older build), each
round's runs of both builds interleaved: rows MODE@before, their ratio to
BIN's --spec off, so that a change is compared on the same load.

--out FILE.md writes the table and the plot of the ratio to --spec off
against temperature: FILE.png with matplotlib, else a text plot in
FILE.md.

usage: bench/speculative.py [--rounds 3] [--temps 0,0.3,0.7,1.0,1.5]
                            [--tokens 128] [--model FILE] [--threads 2]
                            [--draft-max 16] [--seed 7] [--tasks quote,code,file]
                            [--gemma FILE] [--draft-pair TARGET,DRAFT]
                            [--no-default] [--peer DIR] [--before BIN]
                            [--row-orders reuse|llama]
                            [--out FILE.md]
                            [--markdown]
"""
import argparse
import datetime
import os
import pathlib
import platform
import re
import statistics
import socket
import subprocess
import sys
import time

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
NUCLEUS = os.environ.get("NUCLEUS_BIN", str(ROOT / "build/release/nucleus"))

PASSAGE = (
    "The lighthouse at Point Arden was built in 1871 from granite quarried "
    "on the island itself. Its lamp burned whale oil until 1902, when a "
    "kerosene burner replaced it, and electricity arrived only in 1954. The "
    "last keeper, Margaret Hale, left in 1987, and the light has run "
    "automatically ever since. Visitors can climb its 114 steps on summer "
    "weekends.")
CODE = '''def summarize(values):
    total = 0
    count = 0
    for v in values:
        if v is None:
            continue
        total += v
        count += 1
    if count == 0:
        return 0.0
    mean = total / count
    print("total:", total, "count:", count, "mean:", mean)
    return mean
'''
MODULE = ('''import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


''' + CODE + '''

def main():
    data = load(sys.argv[1])
    summarize(data["values"])


if __name__ == "__main__":
    main()
''')
# what coding tools send before a code edit (a system turn of their own)
CODER = ("You are a coding assistant. When asked to change code, reply with "
         "the complete updated code in one code block, changing only what "
         "was asked.")
# task: (the user's ask, the start of the reply, the prediction (Predicted
# Outputs: the expected reply), the system turn or None)
ASKS = {
    "quote": (PASSAGE + "\n\nQuote its first two sentences exactly.", "",
              None, None),
    "code": ("```python\n" + CODE + "```\n\nRewrite it with total renamed "
             "to acc.", "```python\n", CODE.replace("total", "acc"), None),
    "file": ("```python\n" + MODULE + "```\n\nRewrite it with total "
             "renamed to acc.", "```python\n", MODULE.replace("total", "acc"),
             CODER),
}
TEMPLATES = {  # the user turn, then the start of the reply
    "chatml": ("<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n"),
    "gemma": ("<start_of_turn>user\n{}<end_of_turn>\n<start_of_turn>model\n"),
}
# a system turn, as the models' own templates write it: its own ChatML
# turn; Gemma's has none and puts it before the first user turn's text
SYSTEMS = {
    "chatml": ("<|im_start|>system\n{}<|im_end|>\n", "{}"),
    "gemma": ("", "{}\n\n{}"),
}


def prompt_of(task, template):
    ask, reply_start, _, system = ASKS[task]
    if system is None:
        return TEMPLATES[template].format(ask) + reply_start
    turn, user = SYSTEMS[template]
    text = user.format(system, ask) if template == "gemma" else ask
    return (turn.format(system) + TEMPLATES[template].format(text) +
            reply_start)


GEN = re.compile(r"generation: (\d+) tokens, ([\d.]+) tok/s")
DRAFTS = re.compile(r"drafts: (\d+) of (\d+) accepted")
PEER_SPEED = re.compile(r"decoded +(\d+) tokens in +[\d.]+ seconds, speed: +"
                        r"([\d.]+) t/s")
PEER_DRAFTED = re.compile(r"n_drafted += (\d+)")
PEER_ACCEPT = re.compile(r"n_accept += (\d+)")


class Setup:
    def __init__(self, name, model, template, draft=None):
        self.name, self.model, self.template, self.draft = (name, model,
                                                            template, draft)

    def modes(self, task):
        if self.draft:
            return ["off", "draft", "draft-strict"]
        return ["off", "ngram"] + (["prediction"] if ASKS[task][2] else [])


BEFORE = "@before"


def run(args, setup, prompt, temp, mode, prediction, seed):
    """One nucleus run: (text, tok/s, (kept, drafted)); a mode ending in
    @before runs --before's binary."""
    binary = NUCLEUS
    if mode.endswith(BEFORE):
        binary, mode = args.before, mode[:-len(BEFORE)]
    cmd = [binary, "run", "-p", prompt, "-n", str(args.tokens),
           "--ignore-eos", "-t", str(args.threads), "--seed", str(seed),
           "--draft-max", str(args.draft_max), "--row-orders",
           args.row_orders]
    if setup.model:
        cmd += ["-m", setup.model]
    if temp > 0:
        cmd += ["--temp", str(temp)]
    if mode == "prediction":
        cmd += ["--prediction", prediction]
    elif mode.startswith("draft"):
        cmd += ["--model-draft", setup.draft]
        if mode == "draft-strict":
            cmd += ["--draft-strict"]
    else:
        cmd += ["--spec", mode]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} ...: {p.stderr[-2000:]}")
    g = GEN.search(p.stderr)
    d = DRAFTS.search(p.stderr)
    return (p.stdout, float(g.group(2)),
            (int(d.group(1)), int(d.group(2))) if d else (0, 0))


def run_peer(args, setup, prompt, temp, seed):
    """llama.cpp's tool for the setup: (tok/s, (kept, drafted))."""
    tool = "llama-speculative" if setup.draft else "llama-lookup"
    model = setup.model or str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf")
    cmd = [str(pathlib.Path(args.peer) / tool), "-m", model, "-p", prompt,
           "-n", str(args.tokens), "--ignore-eos", "-t", str(args.threads),
           "--seed", str(seed), "--temp", str(temp), "-c", "2048",
           "--spec-draft-n-max", str(args.draft_max)]
    if setup.draft:
        cmd += ["-md", setup.draft]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    out = p.stdout + p.stderr
    g = PEER_SPEED.search(out)
    if p.returncode != 0 or not g:
        sys.exit(f"{' '.join(cmd[:3])} ...: {out[-2000:]}")
    d, a = PEER_DRAFTED.search(out), PEER_ACCEPT.search(out)
    return float(g.group(2)), (int(a.group(1)) if a else 0,
                               int(d.group(1)) if d else 0)


def free_port():
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


def server_configs(setup, draft_max):
    """(label, extra llama-server arguments) of a setup's configurations."""
    n = str(draft_max)
    if setup.draft:
        return [("server draft", ["--model-draft", setup.draft,
                                  "--spec-draft-n-max", n])]
    return [
        ("server ngram-simple n3",
         ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "3",
          "--spec-ngram-simple-size-m", n, "--spec-draft-n-max", n]),
        ("server ngram-map-k n3",
         ["--spec-type", "ngram-map-k", "--spec-ngram-map-k-size-n", "3",
          "--spec-ngram-map-k-size-m", n, "--spec-draft-n-max", n]),
        ("server ngram-simple", ["--spec-type", "ngram-simple"]),
        ("server ngram-mod", ["--spec-type", "ngram-mod"]),
    ]


class PeerServer:
    """One llama-server with one speculative configuration."""

    def __init__(self, args, setup, label, extra):
        self.label = label
        self.port = free_port()
        model = setup.model or str(
            ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf")
        cmd = [str(pathlib.Path(args.peer) / "llama-server"), "-m", model,
               "-t", str(args.threads), "-tb", str(args.threads), "-c",
               "2048", "-np", "1", "--port", str(self.port)] + extra
        self.log = open(os.devnull, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{self.port}/health"
        for _ in range(1200):
            if self.proc.poll() is not None:
                sys.exit(f"llama-server {label}: exited ({' '.join(cmd)})")
            try:
                if requests.get(url, timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        self.stop()
        sys.exit(f"llama-server {label}: not ready in 120 s")

    def generate(self, args, prompt, temp, seed):
        """(tok/s, (kept, drafted)) of one /completion."""
        body = {"prompt": prompt, "n_predict": args.tokens,
                "ignore_eos": True, "temperature": temp, "seed": seed,
                "cache_prompt": False, "stream": False}
        r = requests.post(f"http://127.0.0.1:{self.port}/completion",
                          json=body, timeout=900)
        if r.status_code != 200:
            sys.exit(f"llama-server {self.label}: {r.status_code} "
                     f"{r.text[:500]}")
        t = r.json().get("timings", {})
        return (float(t["predicted_per_second"]),
                (int(t.get("draft_n_accepted", 0)), int(t.get("draft_n", 0))))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def keeps_plain_draw(mode, temp):
    """The run's text must equal --spec off's (same seed)."""
    return temp == 0 or mode in ("ngram", "prediction", "draft-strict")


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def measure(args, setup, task, temp, rows, servers=()):
    prompt = prompt_of(task, setup.template)
    prediction = ASKS[task][2]
    modes = setup.modes(task)
    if args.before:
        modes += [m + BEFORE for m in modes]
    peer = bool(args.peer)
    speed = {m: [] for m in modes + (["llama.cpp"] if peer else []) +
             [sv.label for sv in servers]}
    kept = {m: [0, 0] for m in speed}
    text = None
    for r in range(args.rounds):
        # a seed per round: at T > 0 each round samples another text (the
        # same for every mode of the round), so that the medians and kept
        # shares are over texts, not one draw's luck
        seed = args.seed + r
        for m in modes:
            out, tps, (acc, drafted) = run(args, setup, prompt, temp, m,
                                           prediction, seed)
            if m == "off":
                text = out
            elif keeps_plain_draw(m.removesuffix(BEFORE), temp) and \
                    out != text:
                sys.exit(f"{setup.name} {task} T={temp} {m}: the text "
                         "differs from --spec off's")
            speed[m].append(tps)
            kept[m][0] += acc
            kept[m][1] += drafted
        if peer:
            tps, (acc, drafted) = run_peer(args, setup, prompt, temp, seed)
            speed["llama.cpp"].append(tps)
            kept["llama.cpp"][0] += acc
            kept["llama.cpp"][1] += drafted
        for sv in servers:
            tps, (acc, drafted) = sv.generate(args, prompt, temp, seed)
            speed[sv.label].append(tps)
            kept[sv.label][0] += acc
            kept[sv.label][1] += drafted
    for m in speed:
        # a --before mode against the before binary's --spec off
        base = statistics.median(
            speed["off" + BEFORE if m.endswith(BEFORE) else "off"])
        med = statistics.median(speed[m])
        acc, drafted = kept[m]
        label = m
        if m == "llama.cpp":
            label = "llama-speculative" if setup.draft else "llama-lookup"
        rows.append((setup.name, task, label, temp, med, med / base,
                     acc / drafted if drafted else None))
        if not args.markdown:
            print(f"{setup.name:8} {task:6} {label:18} T={temp:<4} "
                  f"{med:8.1f} tok/s x{med / base:.2f}", flush=True)


def table(rows):
    out = ["| setup | task | drafter | T | tok/s | vs off | drafts kept |",
           "|---|---|---|---:|---:|---:|---:|"]
    for setup, task, m, temp, med, ratio, acc in rows:
        a = "" if acc is None else f"{100 * acc:.0f}%"
        out.append(f"| {setup} | {task} | {m} | {temp:g} | {med:.1f} | "
                   f"{ratio:.2f}x | {a} |")
    return "\n".join(out)


def is_peer(drafter):
    return drafter.startswith("llama-") or drafter.startswith("server ")


def best_table(rows):
    """Per setup, task and T: nucleus's fastest drafter against llama.cpp's
    fastest configuration (the issue's goal: >= 1.25x)."""
    best = {}
    for setup, task, m, temp, med, _, acc in rows:
        if m == "off" or m.endswith(BEFORE):  # this build against llama.cpp
            continue
        key = (setup, task, temp)
        side = 1 if is_peer(m) else 0
        b = best.setdefault(key, [None, None])
        if b[side] is None or med > b[side][1]:
            b[side] = (m, med, acc)
    out = ["| setup | task | T | nucleus best (drafter, kept) | "
           "llama.cpp best (tool, kept) | nucleus / llama.cpp |",
           "|---|---|---:|---|---|---:|"]
    for (setup, task, temp), (n, l) in best.items():
        if n is None or l is None:
            continue
        def cell(x):
            a = "" if x[2] is None else f", {100 * x[2]:.0f}%"
            return f"{x[1]:.1f} ({x[0]}{a})"
        out.append(f"| {setup} | {task} | {temp:g} | {cell(n)} | {cell(l)} "
                   f"| {n[1] / l[1]:.2f} |")
    return "\n".join(out) if len(out) > 2 else ""


def series(rows):
    """(setup, task, drafter) -> [(T, ratio)], --spec off left out."""
    s = {}
    for setup, task, m, temp, _, ratio, _ in rows:
        if m != "off":
            s.setdefault((setup, task, m), []).append((temp, ratio))
    return s


def text_plot(rows, width=40):
    """The ratio to --spec off against temperature, as bars (| marks 1x)."""
    s = series(rows)
    top = max([r for pts in s.values() for _, r in pts] + [2.0])
    one = round(width / top)
    lines = [f"ratio to --spec off by temperature (each # = {top / width:.2f}"
             "x, | = 1x)"]
    for (setup, task, m), pts in s.items():
        lines.append(f"{setup}/{task}/{m}")
        for temp, ratio in pts:
            n = round(ratio * width / top)
            bar = "".join("|" if i == one - 1 and n <= i else
                          ("#" if i < n else " ") for i in range(max(n, one)))
            lines.append(f"  T={temp:<4g} {bar} {ratio:.2f}x")
    return "\n".join(lines)


def plot_png(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(8, 5))
    for (setup, task, m), pts in series(rows).items():
        ax.plot([t for t, _ in pts], [r for _, r in pts], marker="o",
                label=f"{setup}/{task}/{m}")
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xlabel("temperature")
    ax.set_ylabel("generation tok/s / --spec off")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--temps", default="0,0.3,0.7,1.0,1.5")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--model", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--draft-max", type=int, default=16)
    ap.add_argument("--seed", type=int, default=7,
                    help="round r runs seed + r (both engines)")
    ap.add_argument("--tasks", default="quote,code")
    ap.add_argument("--row-orders", default="reuse",
                    choices=["reuse", "llama"],
                    help="nucleus's float orders in every mode: reuse (the "
                    "server's default) or llama (`nucleus run`'s own "
                    "default: llama.cpp's logits bit for bit, its few-row "
                    "products row by row, so drafts' rows cost more)")
    ap.add_argument("--gemma", default=None, metavar="FILE")
    ap.add_argument("--draft-pair", default=None, metavar="TARGET,DRAFT")
    ap.add_argument("--no-default", action="store_true",
                    help="leave the default model's rows out")
    ap.add_argument("--peer", default=None, metavar="DIR",
                    help="llama.cpp's build/bin (bench/build_peer.sh)")
    ap.add_argument("--no-peer-server", action="store_true",
                    help="with --peer, leave llama-server's rows out")
    ap.add_argument("--before", default=None, metavar="BIN",
                    help="also every nucleus mode with BIN (another build),"
                         " interleaved with this build's: rows MODE@before")
    ap.add_argument("--out", default=None, metavar="FILE.md")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    temps = [float(t) for t in args.temps.split(",")]
    tasks = args.tasks.split(",")
    for t in tasks:
        if t not in ASKS:
            sys.exit(f"--tasks: '{t}' is not a task: {', '.join(ASKS)}")
    setups = [] if args.no_default else [Setup("default", args.model,
                                               "chatml")]
    if args.gemma:
        setups.append(Setup("gemma", args.gemma, "gemma"))
    if args.draft_pair:
        target, _, draft = args.draft_pair.partition(",")
        if not target or not draft:
            sys.exit("--draft-pair: TARGET,DRAFT (scripts/make_spec_pair.sh)")
        setups.append(Setup("pair", target, "chatml", draft))
    if args.peer:
        for setup in setups:
            tool = "llama-speculative" if setup.draft else "llama-lookup"
            for t in [tool] + ([] if args.no_peer_server else
                               ["llama-server"]):
                if not (pathlib.Path(args.peer) / t).is_file():
                    sys.exit(f"--peer: no {t} in {args.peer} "
                             "(bench/build_peer.sh builds it)")
    rows = []
    for setup in setups:
        servers = []
        try:
            if args.peer and not args.no_peer_server:
                for label, extra in server_configs(setup, args.draft_max):
                    servers.append(PeerServer(args, setup, label, extra))
            for task in tasks:
                for temp in temps:
                    measure(args, setup, task, temp, rows, servers)
        finally:
            for sv in servers:
                sv.stop()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short",
                             "HEAD"], capture_output=True, text=True).stdout
    head = (f"`bench/speculative.py {' '.join(sys.argv[1:])}` on {cpu_name()}"
            f" ({os.cpu_count()} CPUs), commit {commit.strip()}, "
            f"{datetime.date.today()}: median generation tok/s of "
            f"{args.rounds} interleaved runs of {args.tokens} tokens")
    summary = best_table(rows)
    if summary:
        summary = f"\n\n{summary}"
    print(f"\n{head}\n\n{table(rows)}{summary}\n\n{text_plot(rows)}")
    if args.out:
        out = pathlib.Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        png = out.with_suffix(".png")
        body = f"{head}\n\n{table(rows)}{summary}\n\n"
        if plot_png(rows, png):
            body += f"![ratio to --spec off by temperature]({png.name})\n"
        else:
            body += f"```\n{text_plot(rows)}\n```\n"
        out.write_text(body)
        print(f"\nwrote {out}" + (f" and {png}" if png.exists() else ""))


if __name__ == "__main__":
    main()
