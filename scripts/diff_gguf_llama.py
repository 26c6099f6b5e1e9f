#!/usr/bin/env python3
"""Differential check of our GGUF reader against llama.cpp's (ggml's
gguf_init_from_file, from the llama-cpp-python peer): which files each one
accepts. Not a CI test (needs the peer); a development tool.

    python3 scripts/diff_gguf_llama.py [FILES or DIRS...]   (default: the
    fuzz corpora fuzz/corpus/gguf and fuzz/corpus-run/gguf)

Prints every file where the two disagree, with our message, and a summary.
"""
import ctypes
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRCS = ["status", "mapped_file", "gguf_index", "gguf", "gguf_get", "quant"]


class NcError(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * 512)]


class GgufInitParams(ctypes.Structure):
    _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.c_void_p)]


def build_ours(tmp):
    so = os.path.join(tmp, "libncgguf.so")
    cmd = ["cc", "-std=c17", "-D_GNU_SOURCE", "-O1", "-shared", "-fPIC",
           "-I" + os.path.join(ROOT, "include"), "-I" + os.path.join(ROOT, "src"),
           *[os.path.join(ROOT, "src", s + ".c") for s in SRCS], "-lm", "-o", so]
    subprocess.run(cmd, check=True)
    lib = ctypes.CDLL(so)
    lib.gguf_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                              ctypes.POINTER(NcError)]
    lib.gguf_close.argtypes = [ctypes.c_void_p]
    return lib


def load_peer():
    import llama_cpp  # noqa: F401  (locates the shared libraries)
    d = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
    lib = ctypes.CDLL(os.path.join(d, "libggml-base.so"))
    lib.gguf_init_from_file.argtypes = [ctypes.c_char_p, GgufInitParams]
    lib.gguf_init_from_file.restype = ctypes.c_void_p
    lib.gguf_free.argtypes = [ctypes.c_void_p]
    return lib


def files(args):
    paths = args or [os.path.join(ROOT, "fuzz", "corpus", "gguf"),
                     os.path.join(ROOT, "fuzz", "corpus-run", "gguf")]
    for p in paths:
        if os.path.isdir(p):
            for n in sorted(os.listdir(p)):
                yield os.path.join(p, n)
        elif os.path.exists(p):
            yield p


def main():
    with tempfile.TemporaryDirectory() as tmp:
        ours = build_ours(tmp)
        peer = load_peer()
        # silence ggml's log on stderr
        devnull = os.open(os.devnull, os.O_WRONLY)
        saved = os.dup(2)
        rows, n, agree = [], 0, 0
        for path in files(sys.argv[1:]):
            n += 1
            h, err = ctypes.c_void_p(), NcError()
            ok_ours = ours.gguf_open(path.encode(), ctypes.byref(h), ctypes.byref(err)) == 0
            if ok_ours:
                ours.gguf_close(h)
            os.dup2(devnull, 2)
            ctx = peer.gguf_init_from_file(path.encode(), GgufInitParams(True, None))
            os.dup2(saved, 2)
            ok_peer = bool(ctx)
            if ctx:
                peer.gguf_free(ctx)
            if ok_ours == ok_peer:
                agree += 1
            else:
                rows.append((os.path.relpath(path, ROOT), ok_ours, ok_peer,
                             err.message.decode(errors="replace")))
        for path, a, b, msg in rows:
            print(f"{path}: ours={'ok' if a else 'reject'} llama.cpp={'ok' if b else 'reject'}"
                  + (f"  ({msg})" if msg else ""))
        print(f"{n} files, {agree} agree, {len(rows)} differ")


if __name__ == "__main__":
    main()
