#!/usr/bin/env bash
# Builds the peer, llama.cpp, from the source carried by the PyPI sdist of
# llama-cpp-python, natively and at its best on this machine: clang with the
# AMX feature macros that clang 14 spells differently from what ggml tests
# (gcc 12's build dies with SIGILL in the AMX path; plain clang 14 leaves AMX
# out). Produces llama-bench, llama-batched-bench, llama-server,
# llama-perplexity, llama-quantize, the speculative decoding tools
# llama-speculative and llama-lookup, and the multimodal CLI llama-mtmd-cli
# (bench/vision.py, scripts/gen_vision_goldens.py) under $PEER_DIR/build/bin
# and prints that directory as its last line of stdout (everything else goes
# to stderr).
#
# Idempotent: when the tools are there (and, on a CPU with AMX, were built
# with the AMX path) it only prints the directory.
#
# usage: bench/build_peer.sh [PEER_DIR]   (default: /opt/peer/llama.cpp)
#   PEER_JOBS=N   parallel build jobs (default: all cores)
set -euo pipefail
PEER_DIR="${1:-/opt/peer/llama.cpp}"
VERSION="0.3.36"
BIN="$PEER_DIR/build/bin"
TOOLS="llama-bench llama-batched-bench llama-server llama-perplexity llama-quantize
  llama-speculative llama-lookup llama-mtmd-cli"

die() { echo "build_peer.sh: error: $*" >&2; exit 1; }

want_amx=0
if grep -qw amx_int8 /proc/cpuinfo; then want_amx=1; fi

# On an AMX CPU the build must contain ggml's AMX backend; a build without it
# is not llama.cpp at its best here.
check_amx() {
  [ "$want_amx" = 1 ] || return 0
  command -v nm >/dev/null || die "nm (binutils) is needed to check the build"
  # (no grep -q: with pipefail, nm's SIGPIPE would fail the check)
  nm "$BIN/llama-bench" | grep ggml_backend_amx_buffer_type >/dev/null
}

have_all=1
for t in $TOOLS; do [ -x "$BIN/$t" ] || have_all=0; done
if [ "$have_all" = 1 ]; then
  check_amx || die "$BIN/llama-bench was built without the AMX path" \
    "although this CPU has AMX; remove $PEER_DIR/build and run again"
  echo "$BIN"
  exit 0
fi

# Prerequisites (not installed by scripts/setup.sh): cmake and clang.
command -v cmake >/dev/null ||
  die "cmake is not installed (Debian: apt-get install cmake)"
CC_PEER="$(command -v clang || command -v clang-14 || true)"
CXX_PEER="$(command -v clang++ || command -v clang++-14 || true)"
[ -n "$CC_PEER" ] && [ -n "$CXX_PEER" ] ||
  die "clang/clang++ not found (Debian: apt-get install clang-14)"

mkdir -p "$PEER_DIR"
if [ ! -f "$PEER_DIR/CMakeLists.txt" ]; then
  SDIST_DIR="$(mktemp -d)"
  trap 'rm -rf "$SDIST_DIR"' EXIT
  echo "build_peer.sh: fetching the llama-cpp-python $VERSION sdist" >&2
  python3 -m pip download --quiet --no-deps --no-binary :all: \
    "llama-cpp-python==$VERSION" -d "$SDIST_DIR" >&2 ||
    die "pip download of the llama-cpp-python $VERSION sdist failed"
  tar -xzf "$SDIST_DIR/llama_cpp_python-$VERSION.tar.gz" -C "$SDIST_DIR"
  SRC="$SDIST_DIR/llama_cpp_python-$VERSION/vendor/llama.cpp"
  [ -f "$SRC/CMakeLists.txt" ] || die "the sdist carries no vendor/llama.cpp"
  cp -r "$SRC/." "$PEER_DIR/"
fi

AMX=""
if [ "$want_amx" = 1 ]; then AMX="-D__AMX_INT8__=1 -D__AMX_TILE__=1"; fi
echo "build_peer.sh: building llama.cpp in $PEER_DIR/build ($CC_PEER, native${AMX:+, AMX})" >&2
cmake -S "$PEER_DIR" -B "$PEER_DIR/build" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=ON -DCMAKE_C_COMPILER="$CC_PEER" \
  -DCMAKE_CXX_COMPILER="$CXX_PEER" \
  -DCMAKE_C_FLAGS="$AMX" -DCMAKE_CXX_FLAGS="$AMX" \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=OFF >&2
cmake --build "$PEER_DIR/build" -j"${PEER_JOBS:-$(nproc)}" --target $TOOLS >&2
for t in $TOOLS; do [ -x "$BIN/$t" ] || die "the build made no $BIN/$t"; done
check_amx || die "the build has no AMX path although this CPU has AMX"
echo "$BIN"
