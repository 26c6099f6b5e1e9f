#!/usr/bin/env bash
# Makes the draft-model pair of bench/speculative.py (issue 39): the default
# model at F16 as the target and its Q4_0 as the draft, with the peer's
# llama-quantize (bench/build_peer.sh builds it when missing).
#
# Source: an F16 (or BF16) GGUF of SmolLM2-135M-Instruct when one sits in
# models/ (SmolLM2-135M-Instruct.F16.gguf / .BF16.gguf; PyPI carries none,
# see scripts/make_bench_models.sh); otherwise the Q4_1 default model is
# requantized (--allow-requantize: its dequantized weights, so the "F16"
# target holds the Q4_1 file's values at F16 and costs F16's bandwidth). The
# output names say which:
#   DIR/SmolLM2-135M-Instruct.F16.gguf            the source itself (F16)
#   DIR/SmolLM2-135M-Instruct.Q4_0.gguf           from F16/BF16
#   DIR/SmolLM2-135M-Instruct.{F16,Q4_0}.from-Q4_1.gguf  from Q4_1
# Existing outputs are kept. Prints the target's path, then the draft's, one
# per line, on stdout.
#
# usage: scripts/make_spec_pair.sh [MODELS_DIR]   (default: models/)
#   PEER_DIR=DIR   where the peer is built (bench/build_peer.sh's default)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${1:-$ROOT/models}"
BASE="SmolLM2-135M-Instruct"
SRC_DIR="$ROOT/models"

die() { echo "make_spec_pair.sh: error: $*" >&2; exit 1; }

mkdir -p "$DIR"
BIN="$("$ROOT/bench/build_peer.sh" ${PEER_DIR:+"$PEER_DIR"} | tail -n 1)" ||
  die "bench/build_peer.sh failed"
QUANT="$BIN/llama-quantize"
[ -x "$QUANT" ] || die "no llama-quantize in $BIN"

quantize() { # SRC OUT TYPE [--allow-requantize]
  [ -f "$2" ] && return 0
  echo "make_spec_pair.sh: $(basename "$2") from $(basename "$1")" >&2
  "$QUANT" ${4:-} "$1" "$2.tmp" "$3" >/dev/null 2>"$2.log" ||
    die "llama-quantize $3 failed (see $2.log)"
  mv "$2.tmp" "$2" && rm -f "$2.log"
}

SRC=""
for t in F16 BF16; do
  [ -f "$SRC_DIR/$BASE.$t.gguf" ] && { SRC="$SRC_DIR/$BASE.$t.gguf"; break; }
done
if [ -n "$SRC" ]; then
  TARGET="$DIR/$BASE.F16.gguf"
  DRAFT="$DIR/$BASE.Q4_0.gguf"
  if [ "$SRC" = "$SRC_DIR/$BASE.F16.gguf" ]; then
    [ "$TARGET" -ef "$SRC" ] || cp -n "$SRC" "$TARGET"
  else
    quantize "$SRC" "$TARGET" F16
  fi
  quantize "$SRC" "$DRAFT" Q4_0
else
  SRC="$SRC_DIR/$BASE.Q4_1.gguf"
  [ -f "$SRC" ] || die "$SRC is missing (make model)"
  TARGET="$DIR/$BASE.F16.from-Q4_1.gguf"
  DRAFT="$DIR/$BASE.Q4_0.from-Q4_1.gguf"
  quantize "$SRC" "$TARGET" F16 --allow-requantize
  quantize "$SRC" "$DRAFT" Q4_0 --allow-requantize
fi
echo "$TARGET"
echo "$DRAFT"
