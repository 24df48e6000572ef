#!/usr/bin/env bash
# Runs the SCIM compliance checker scim2-tester (PyPI, pinned in scim-conformance/requirements.txt)
# with every check it has against a Coffer server. All checks must pass.
#
#   scripts/scim-conformance.sh                 builds cofferd, starts it on a fresh SQLite data
#                                                directory on a free loopback port, runs the
#                                                checker, and stops the server
#   scripts/scim-conformance.sh URL TOKEN       checks a running server (URL ends in /rest/scim)
#
# The checker fills passwords with random UUIDs, which have no capital letter; the script's own
# server gets a password policy they meet (8 characters, a digit and a lower-case letter), as an
# operator may set with `cofferd settings set passwordPolicy`.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="${COFFER_SCIM_VENV:-$TARGET/scim-conformance-venv}"

if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q --disable-pip-version-check -r "$ROOT/scripts/scim-conformance/requirements.txt"

if (($# == 2)); then
  exec "$VENV/bin/python" "$ROOT/scripts/scim-conformance/check.py" "$1" "$2"
fi

(cd "$ROOT" && cargo build -q -p cofferd)
COFFERD="$TARGET/debug/cofferd"
DATA="$(mktemp -d)"
PID=""
cleanup() {
  if [[ -n "$PID" ]]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$DATA"
}
trap cleanup EXIT

PORT="$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
BASE="http://127.0.0.1:$PORT"
export COFFER_DATA_DIR="$DATA"
"$COFFERD" migrate >/dev/null
"$COFFERD" settings set passwordPolicy \
  '{"enabled":true,"minLength":8,"minNumeric":1,"minLower":1,"minUpper":0,"minSpecial":0,"allowBrowserAutofill":true}' >/dev/null
TOKEN="$("$COFFERD" scim-token create --name scim-conformance | "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["token"])')"

COFFER_LISTEN="127.0.0.1:$PORT" COFFER_BASE_URL="$BASE" RUST_LOG=warn "$COFFERD" serve >"$DATA/server.log" 2>&1 &
PID=$!
for _ in $(seq 1 100); do
  if "$VENV/bin/python" -c "import urllib.request; urllib.request.urlopen('$BASE/health')" 2>/dev/null; then break; fi
  sleep 0.2
done

status=0
"$VENV/bin/python" "$ROOT/scripts/scim-conformance/check.py" "$BASE/rest/scim" "$TOKEN" || status=$?
if ((status != 0)); then
  echo "--- server log" >&2
  tail -50 "$DATA/server.log" >&2
fi
exit "$status"
