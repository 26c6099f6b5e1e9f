#!/usr/bin/env bash
# Regenerates tests/data/logits/smollm2_q4_1_amx.txt, the logits of
# llama.cpp's AMX build (the order of nucleus's amx kernel table), on a CPU
# with AMX. llama-cpp-python's own wheel has no AMX path, so this builds the
# peer's llama.cpp source (bench/build_peer.sh fetches it) as shared
# libraries with the same flags as the peer's tools, and points
# llama-cpp-python at them (LLAMA_CPP_LIB_PATH).
#
# usage: scripts/gen_amx_golden.sh [PEER_DIR]   (default: /opt/peer/llama.cpp)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PEER_DIR="${1:-/opt/peer/llama.cpp}"
OUT_DIR="$PEER_DIR/build-shared"

grep -qw amx_int8 /proc/cpuinfo || {
  echo "gen_amx_golden.sh: this CPU has no AMX" >&2
  exit 1
}
"$ROOT/bench/build_peer.sh" "$PEER_DIR" >/dev/null
if [ ! -e "$OUT_DIR/bin/libllama.so" ]; then
  amx="-D__AMX_INT8__=1 -D__AMX_TILE__=1"
  cmake -S "$PEER_DIR" -B "$OUT_DIR" -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=ON \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ "-DCMAKE_C_FLAGS=$amx" \
    "-DCMAKE_CXX_FLAGS=$amx" -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF >&2
  cmake --build "$OUT_DIR" -j "$(nproc)" --target llama >&2
fi
LLAMA_CPP_LIB_PATH="$OUT_DIR/bin" python3 "$ROOT/scripts/gen_logits_golden.py" \
  --amx
