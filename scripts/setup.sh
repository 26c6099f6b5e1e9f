#!/usr/bin/env bash
# Installs what building and testing nucleus needs on Debian 12:
# compilers and libraries from Debian, test oracles/clients from PyPI,
# and the default model. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  build-essential cmake clang-14 libclang-rt-14-dev pkg-config curl \
  libjansson-dev libpcre2-dev libmicrohttpd-dev libcmocka-dev \
  libjpeg62-turbo-dev libpng-dev libwebp-dev libcurl4-openssl-dev \
  python3 python3-pip python3-venv chromium chromium-driver \
  libjs-marked node-dompurify libjs-highlight.js >/dev/null
# (the last three: the web page's Markdown, embedded by mk/web.mk)

# Python test oracles and clients. --break-system-packages lets this work
# with Debian's own python3 (PEP 668) as well as with a pyenv python.
PIP_FLAGS="--quiet --disable-pip-version-check"
if python3 -m pip install --help 2>/dev/null | grep -q -- --break-system-packages; then
  PIP_FLAGS="$PIP_FLAGS --break-system-packages"
fi
# llama-cpp-python builds llama.cpp here with -march=native, and GCC 12 then
# also tunes for this CPU: on an AMD EPYC (it takes Zen 5 for znver3) its
# avoid-FMA-chains tuning leaves a loop's sum += d * x as a multiply and an
# add where other tunings fuse them, so the oracle's floats (ggml's vec_dot
# tails, its quantizers) would differ in the last bit from one CPU to
# another. -mtune=generic gives every machine the same llama.cpp.
CMAKE_ARGS="${CMAKE_ARGS:-} -DCMAKE_C_FLAGS=-mtune=generic -DCMAKE_CXX_FLAGS=-mtune=generic" \
  python3 -m pip install $PIP_FLAGS -r requirements-test.txt
# instructor 1.17 caps jiter below 0.15 while the openai client of the
# same month needs 0.16+; it runs with both (tests/e2e/test_pydantic_clients.py),
# so it goes in without its pins rather than pulling openai back.
python3 -m pip install $PIP_FLAGS --no-deps instructor==1.17.0

scripts/fetch_model.sh
# Gemma 3 270M: its SentencePiece vocabulary is a tokenizer test oracle.
scripts/fetch_gemma.sh
# all-MiniLM-L6-v2: the real BERT embedder, converted by scripts/convert_hf.py.
scripts/fetch_minilm.sh
