#!/usr/bin/env bash
# Builds the peer, llama.cpp, from the source carried by the PyPI sdist of
# llama-cpp-python, natively and at its best on this machine: clang with the
# AMX feature macros that clang 14 spells differently from what ggml tests
# (gcc 12's build dies with SIGILL in the AMX path; plain clang 14 leaves AMX
# out). Produces llama-bench, llama-batched-bench, llama-server,
# llama-perplexity and llama-quantize under $PEER_DIR/build/bin.
#
# usage: bench/build_peer.sh [PEER_DIR]   (default: /opt/peer/llama.cpp)
set -euo pipefail
PEER_DIR="${1:-/opt/peer/llama.cpp}"
VERSION="0.3.36"
BIN="$PEER_DIR/build/bin"
TOOLS="llama-bench llama-batched-bench llama-server llama-perplexity llama-quantize"

have_all=1
for t in $TOOLS; do [ -x "$BIN/$t" ] || have_all=0; done
if [ "$have_all" = 1 ]; then echo "$BIN"; exit 0; fi

mkdir -p "$PEER_DIR"
SDIST_DIR="$(mktemp -d)"
trap 'rm -rf "$SDIST_DIR"' EXIT
if [ ! -f "$PEER_DIR/CMakeLists.txt" ]; then
  python3 -m pip download --quiet --no-deps --no-binary :all: \
    "llama-cpp-python==$VERSION" -d "$SDIST_DIR" >&2
  tar -xzf "$SDIST_DIR"/llama_cpp_python-$VERSION.tar.gz -C "$SDIST_DIR"
  cp -r "$SDIST_DIR/llama_cpp_python-$VERSION/vendor/llama.cpp/." "$PEER_DIR/"
fi

AMX="-D__AMX_INT8__=1 -D__AMX_TILE__=1"
if ! grep -q amx_int8 /proc/cpuinfo; then AMX=""; fi
cmake -S "$PEER_DIR" -B "$PEER_DIR/build" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_FLAGS="$AMX" -DCMAKE_CXX_FLAGS="$AMX" \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=OFF >&2
cmake --build "$PEER_DIR/build" -j"$(nproc)" --target $TOOLS >&2
echo "$BIN"
