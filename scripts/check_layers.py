#!/usr/bin/env python3
"""Checks the layering of docs/ARCHITECTURE.md, in the sources and in the
objects: src/ is one folder per subsystem, and the folders form a DAG
(DEPENDS below): a file may include and call files of its own folder and of
the folders its folder depends on, directly or through others, and nothing
else. tools/ and bench/ use only the public header.

- Includes: each `#include "..."` of a src/ file names a file of its own
  folder or of one below it; a tools/ or bench/ file includes nucleus.h and
  its own tool's headers only (bench's module micro-benchmarks, below, may
  include src/ headers, as unit tests may).
- Calls: from the symbol tables of the built objects (`nm` on BUILD/src and
  BUILD/tools, BUILD = build/release unless given): every symbol that a src/
  object uses and another src/ object defines is defined in its own folder or
  one below it; a tools/ object uses only the functions include/nucleus.h
  declares.
- Between folders, only a folder's face (FACES: the headers others may
  include) is included; its other headers are its own.
- Every src/ folder is in DEPENDS (a new folder says what it uses), and
  DEPENDS has no cycle.

Usage: scripts/check_layers.py [BUILD]   (after `make`). Exits 1 and names
each violation. scripts/check_layers.py --graph prints the folders in
layers, bottom first."""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Each src/ folder and the folders it uses directly (what those use, it may
# use too). Bottom to top, as docs/ARCHITECTURE.md draws them.
DEPENDS = {
    "base": [],                      # status, mapped file, threads, unicode
    "gguf": ["base"],                # the file format, tensor types
    "kernels": ["gguf"],             # CPU kernel tables
    "quantize": ["gguf"],            # writing quantized model files
    "kv": ["kernels"],               # the paged KV cache, prefix index
    "tokenizer": ["gguf"],           # vocab, BPE/SPM, detokenizer
    "jinja": ["base"],               # the sandboxed template interpreter
    "sampling": ["kernels"],         # sampler, its contract table, beam
    "chat": ["jinja", "tokenizer"],  # chat templates, tool-call formats
    "grammar": ["tokenizer"],        # GBNF, JSON Schema, the token mask
    "model": ["kv", "tokenizer"],    # weights, archs/, batch, forward
    "vision": ["model"],             # images (decoded RGB8), mmproj, encoders
    "engine": ["model", "sampling", "grammar", "vision"],  # requests, scheduling
    "api": ["engine", "chat", "quantize", "vision"],  # include/nucleus.h's implementation
}
PUBLIC = "nucleus.h"

# The headers of each folder that other folders may include: its face. The
# rest (*_internal.h, the parts' own headers) are the folder's business.
FACES = {
    "base": ["status.h", "mapped_file.h", "threadpool.h", "unicode.h",
             "option_table.h",
             "unicode_stream.h", "rng.h"],
    "gguf": ["gguf.h", "quant.h", "iq_grids.h"],
    "quantize": ["quantize.h", "imatrix_save.h"],
    "kernels": ["kernels.h", "ops.h", "attn_kernel.h", "attn_flash.h",
                "sampler_simd.h"],
    "kv": ["kv_cache.h"],
    "tokenizer": ["vocab.h", "detokenizer.h"],
    "jinja": ["jinja.h"],
    "sampling": ["sampler.h", "sampler_contract.h", "beam.h", "spec_verify.h",
                 "spec_ngram.h", "spec_policy.h"],
    "chat": ["chat_template.h", "chat_template_builtin.h", "tool_call.h",
             "reasoning.h"],
    "grammar": ["grammar.h", "json_schema.h"],
    "model": ["model.h", "model_options.h", "arch.h", "batch.h", "context.h",
              "embed.h", "pooling.h"],
    "vision": ["image.h", "image_decode.h", "mmproj.h"],
    "engine": ["engine.h", "engine_options.h", "request_checks.h",
               "stop_matcher.h"],
    "api": [],
}

# tools/server's folders and the sibling folders each may include (all may
# include the server's root files: routes.h, server.h, ...): HTTP knows no
# API's shapes, and each API sits on the one generation path (openai/'s
# job), never the other way round.
SERVER_DEPENDS = {
    "http": [],                       # HTTP, auth, error bodies, SSE
    "openai": ["http"],               # OpenAI's routes, the generation job
    "anthropic": ["http", "openai"],  # the Messages API over openai's job
}

# Micro-benchmarks that time one internal module (against llama.cpp's, or
# the forward by row count: bench/forward_rows.c) (make
# bench-*): like unit tests, they link src/ objects and include src/ headers.
MODULE_BENCHES = {"bench/kernels.c", "bench/sampler.c", "bench/tokenizer.c",
                  "bench/flash_split.c", "bench/forward_rows.c"}


def closure():
    """folder -> every folder below it; exits on a cycle."""
    below = {}

    def visit(f, path):
        if f in path:
            sys.exit("check_layers: DEPENDS has a cycle: " +
                     " -> ".join(path + [f]))
        if f not in below:
            acc = set()
            for d in DEPENDS.get(f, []):
                acc |= {d} | visit(d, path + [f])
            below[f] = acc
        return below[f]

    for f in DEPENDS:
        visit(f, [])
    return below


BELOW = closure()


def folder_of(rel):
    """The subsystem folder of a path relative to src/ (None: src/ itself)."""
    parts = rel.split("/")
    return parts[0] if len(parts) > 1 else None


def allowed(mine, theirs):
    return theirs is None or mine == theirs or theirs in BELOW.get(mine, ())


def layer_number(f, memo={}):
    if f not in memo:
        memo[f] = 1 + max((layer_number(d) for d in DEPENDS[f]), default=-1)
    return memo[f]


def includes(path):
    for line in path.read_text(errors="replace").splitlines():
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if m:
            yield m.group(1)


def check_src_includes(bad):
    for path in sorted((ROOT / "src").rglob("*.[ch]")):
        rel = path.relative_to(ROOT / "src").as_posix()
        mine = folder_of(rel)
        if mine is None:  # main() names it
            continue
        if mine not in DEPENDS:
            bad.append(f"src/{rel}: folder {mine!r} is not in DEPENDS "
                       f"(add it to {__file__})")
            continue
        for inc in includes(path):
            if inc == PUBLIC:
                continue
            target = (path.parent / inc).resolve()
            if not target.exists():  # found through -Isrc
                target = (ROOT / "src" / inc).resolve()
            try:
                tname = target.relative_to(ROOT / "src").as_posix()
            except ValueError:
                bad.append(f"src/{rel} includes {inc}, which is not in src/")
                continue
            theirs = folder_of(tname)
            if not allowed(mine, theirs):
                bad.append(f"src/{rel} ({mine}/) includes {tname}: {mine}/ "
                           f"does not depend on {theirs}/")
            elif theirs not in (None, mine) and \
                    tname.split("/", 1)[1] not in FACES.get(theirs, ()):
                bad.append(f"src/{rel} includes {tname}, which is internal "
                           f"to {theirs}/ (its face: "
                           f"{', '.join(FACES.get(theirs, ())) or 'none'})")


def check_client_includes(bad):
    for top in ("tools", "bench"):
        for path in sorted((ROOT / top).rglob("*.[ch]")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in MODULE_BENCHES:
                continue
            # a tool's files name each other from its root (tools/server/)
            tool_root = ROOT / "/".join(rel.split("/")[:2]) \
                if top == "tools" else path.parent
            for inc in includes(path):
                if inc == PUBLIC or (path.parent / inc).is_file() or \
                        (tool_root / inc).is_file():
                    continue
                bad.append(f"{rel} includes {inc}: clients use the public "
                           "header (nucleus.h) and their own headers only")


def check_server_folders(bad):
    server = ROOT / "tools/server"
    for d in sorted(p for p in server.iterdir() if p.is_dir()):
        if d.name not in SERVER_DEPENDS:
            bad.append(f"tools/server/{d.name}/: not in SERVER_DEPENDS (add "
                       f"it to {__file__})")
            continue
        for path in sorted(d.rglob("*.[ch]")):
            for inc in includes(path):
                target = path.parent / inc
                if not target.is_file():
                    target = server / inc
                try:
                    rel = target.resolve().relative_to(server)
                except ValueError:
                    continue  # the public header, another tool's
                theirs = rel.parts[0] if len(rel.parts) > 1 else None
                if theirs not in (None, d.name) and \
                        theirs not in SERVER_DEPENDS[d.name]:
                    bad.append(f"{path.relative_to(ROOT)} includes {inc}: "
                               f"tools/server/{d.name}/ does not use "
                               f"tools/server/{theirs}/")


def symbols(obj):
    """(defined, undefined) global symbols of one object file."""
    out = subprocess.run(["nm", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1].isupper() and parts[1] != "U":
            defined.add(parts[2])
    return defined, undefined


def check_calls(build, bad):
    # (objects left behind by a source that moved or went away are skipped)
    src_objs = sorted(o for o in (build / "src").rglob("*.o")
                      if (ROOT / o.relative_to(build)).with_suffix(".c")
                      .is_file())
    if not src_objs:
        print(f"check_layers: no objects under {build}/src: run make first",
              file=sys.stderr)
        sys.exit(2)
    definer, uses = {}, {}
    for obj in src_objs:
        rel = obj.relative_to(build / "src").with_suffix(".c").as_posix()
        defined, undefined = symbols(obj)
        for s in defined:
            definer[s] = rel
        uses[rel] = undefined
    for rel, undefined in sorted(uses.items()):
        mine = folder_of(rel)
        if mine not in DEPENDS:
            bad.append(f"src/{rel}: folder {mine!r} is not in DEPENDS "
                       f"(add it to {__file__})")
            continue
        for s in sorted(undefined):
            if s not in definer:
                continue
            theirs = folder_of(definer[s])
            if not allowed(mine, theirs):
                bad.append(f"src/{rel} ({mine}/) calls {s} of "
                           f"src/{definer[s]}: {mine}/ does not depend on "
                           f"{theirs}/")
    api = set(re.findall(r"\b(nucleus_\w+)\s*\(",
                         (ROOT / "include/nucleus.h").read_text()))
    for obj in sorted(o for o in (build / "tools").rglob("*.o")
                      if (ROOT / o.relative_to(build)).with_suffix(".c")
                      .is_file()):
        rel = obj.relative_to(build).with_suffix(".c").as_posix()
        for s in sorted(symbols(obj)[1]):
            if s in definer and s not in api:
                bad.append(f"{rel} calls {s} of src/{definer[s]}: clients "
                           "use the public API only")


def main():
    if sys.argv[1:] == ["--graph"]:
        by_layer = {}
        for f in DEPENDS:
            by_layer.setdefault(layer_number(f), []).append(f)
        for n in sorted(by_layer):
            print(f"{n}: " + ", ".join(
                f"{f} (uses {', '.join(DEPENDS[f]) or 'nothing'})"
                for f in sorted(by_layer[n])))
        return 0
    build = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else \
        ROOT / "build/release"
    if not build.is_absolute():
        build = pathlib.Path.cwd() / build
    bad = []
    for d in sorted(p.name for p in (ROOT / "src").iterdir() if p.is_dir()):
        for h in FACES.get(d, ()):
            if not (ROOT / "src" / d / h).is_file():
                bad.append(f"src/{d}/{h}: in FACES but not there")
        if d not in DEPENDS:
            bad.append(f"src/{d}/: not in DEPENDS (add it to {__file__})")
    for f in (ROOT / "src").glob("*.[ch]"):
        bad.append(f"src/{f.name}: every source lives in a subsystem folder")
    check_src_includes(bad)
    check_client_includes(bad)
    check_server_folders(bad)
    check_calls(build, bad)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
