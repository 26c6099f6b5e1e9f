#!/usr/bin/env python3
"""Checks the layering of docs/ARCHITECTURE.md, in the sources and in the
objects: every src/ module includes and calls only modules of its own layer
or below, and tools/ and bench/ use only the public header.

- Includes: each `#include "..."` of a src/ file names a module of its own
  layer or below; a tools/ or bench/ file includes nucleus.h and its own
  directory's headers only (bench's module micro-benchmarks, below, may
  include src/ headers, as unit tests may).
- Calls: from the symbol tables of the built objects (`nm` on BUILD/src and
  BUILD/tools, BUILD = build/release unless given): every symbol that a src/
  object uses and another src/ object defines is defined in the same layer
  or below; a tools/ object uses only the functions include/nucleus.h declares.

Usage: scripts/check_layers.py [BUILD]   (after `make`). Exits 1 and names
each violation."""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Module name prefix -> layer. The longest matching prefix wins.
LAYERS = {
    "status": 0, "mapped_file": 0, "threadpool": 0, "unicode": 0, "rng": 0,
    "gguf": 1, "quant": 1,
    "kernels/": 2,
    # The model, its forward graph and what the graph reads and writes (the
    # flat batch, the paged KV cache); the token table and what builds it.
    "model": 3, "arch": 3, "forward": 3, "batch": 3, "kv_cache": 3, "kv_prefix": 3,
    "vocab": 3, "tokenizer_internal": 3, "tokenizer_strtab": 3,
    "tokenizer_special": 3,
    "sampler": 4, "beam": 4, "tokenizer": 4, "detokenizer": 4,
    "stop_matcher": 4, "jinja": 4, "chat_template": 4, "tool_call": 4,
    "grammar": 4, "json_schema": 4,
    "context": 5, "scheduler": 5,
    "engine": 6, "request": 6,
    "api_": 7, "nucleus.h": 7,
}

# Micro-benchmarks that time one internal module against llama.cpp's (make
# bench-*): like unit tests, they link src/ objects and include src/ headers.
MODULE_BENCHES = {"bench/kernels.c", "bench/sampler.c", "bench/tokenizer.c"}


def layer_of(name):
    best = None
    for prefix, layer in LAYERS.items():
        if name.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, layer)
    return None if best is None else best[1]


def includes(path):
    for line in path.read_text(errors="replace").splitlines():
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if m:
            yield m.group(1)


def check_src_includes(bad):
    for path in sorted((ROOT / "src").rglob("*.[ch]")):
        rel = path.relative_to(ROOT / "src").as_posix()
        mine = layer_of(rel)
        if mine is None:
            bad.append(f"src/{rel}: no layer assigned (add it to {__file__})")
            continue
        for inc in includes(path):
            target = (path.parent / inc).resolve()
            if not target.exists():  # found through -Isrc
                target = (ROOT / "src" / inc).resolve()
            try:
                tname = target.relative_to(ROOT / "src").as_posix()
            except ValueError:
                tname = pathlib.Path(inc).name
            theirs = layer_of(tname)
            if theirs is not None and theirs > mine and tname != "nucleus.h":
                bad.append(f"src/{rel} (layer {mine}) includes {tname} "
                           f"(layer {theirs})")


def check_client_includes(bad):
    for top in ("tools", "bench"):
        for path in sorted((ROOT / top).rglob("*.[ch]")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in MODULE_BENCHES:
                continue
            for inc in includes(path):
                if inc == "nucleus.h" or (path.parent / inc).is_file():
                    continue
                bad.append(f"{rel} includes {inc}: clients use the public "
                           "header (nucleus.h) and their own headers only")


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
        mine = layer_of(rel)
        if mine is None:
            bad.append(f"src/{rel}: no layer assigned (add it to {__file__})")
            continue
        for s in sorted(undefined):
            if s not in definer:
                continue
            theirs = layer_of(definer[s])
            if theirs is not None and theirs > mine:
                bad.append(f"src/{rel} (layer {mine}) calls {s} of "
                           f"src/{definer[s]} (layer {theirs})")
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
    build = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else \
        ROOT / "build/release"
    if not build.is_absolute():
        build = pathlib.Path.cwd() / build
    bad = []
    check_src_includes(bad)
    check_client_includes(bad)
    check_calls(build, bad)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
