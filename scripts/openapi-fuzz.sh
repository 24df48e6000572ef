#!/usr/bin/env bash
# Fuzzes Coffer through its own OpenAPI document with schemathesis (PyPI, pinned below) and every
# check it has (`--checks all`), over every operation: the run must end with no failure.
#
#   scripts/openapi-fuzz.sh        builds cofferd, starts it on a fresh SQLite data directory on a
#                                  free loopback port, provisions a system administrator, an OAuth
#                                  client and a SCIM token with `cofferd` commands, gets a bearer
#                                  token, runs schemathesis against /openapi.json, stops the server
#
# Environment:
#   COFFERD                        run this cofferd binary instead of building one
#   OPENAPI_FUZZ_MAX_EXAMPLES      test cases per operation and phase (default 50: the fuzzing takes
#                                  about 90 s on an idle 2-core machine, 2 to 3 minutes on a busy
#                                  one; the seed is fixed, OPENAPI_FUZZ_SEED changes it)
#   COFFER_FUZZ_VENV               the virtual environment (default: under the cargo target dir)
#   OPENAPI_FUZZ_ARGS              more schemathesis options (e.g. `--include-path-regex ^/webhooks`)
#   OPENAPI_FUZZ_LOG, OPENAPI_FUZZ_KEEP_LOG   the server's RUST_LOG, and a file to keep its log in
#
# Authentication follows the document's security schemes (scripts/openapi-fuzz/schemathesis.toml):
# `bearer` gets the system administrator's access token, `scim` the SCIM token. The version header
# is an ordinary declared parameter of every /rest operation, so the fuzzer sends it (and leaves it
# out or spoils it in negative cases, which the document answers with 400).
# Narrow exclusions, each with its reason, are in scripts/openapi-fuzz/schemathesis.toml and
# docs/api.md.
set -euo pipefail

SCHEMATHESIS_VERSION=4.32.5
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="${COFFER_FUZZ_VENV:-$TARGET/openapi-fuzz-venv}"
MAX_EXAMPLES="${OPENAPI_FUZZ_MAX_EXAMPLES:-50}"

if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV"
fi
if [[ "$("$VENV/bin/schemathesis" --version 2>/dev/null || true)" != *"$SCHEMATHESIS_VERSION"* ]]; then
  "$VENV/bin/pip" install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
PY="$VENV/bin/python"

if [[ -z "${COFFERD:-}" ]]; then
  (cd "$ROOT" && cargo build -q -p cofferd)
  COFFERD="$TARGET/debug/cofferd"
fi

# The server and the fuzzer run in a network namespace of their own with nothing but loopback:
# the fuzzer registers webhooks to URLs of its choosing, and the server's deliveries to them
# must not leave the machine.
if [[ -z "${COFFER_FUZZ_NETNS:-}" ]]; then
  if ! unshare --net true 2>/dev/null; then
    echo "openapi-fuzz: needs a network namespace (run as root, or with unshare rights)" >&2
    exit 1
  fi
  exec unshare --net -- env COFFER_FUZZ_NETNS=1 COFFERD="$COFFERD" COFFER_FUZZ_VENV="$VENV" \
    bash "$0" "$@"
fi
ip link set lo up
DATA="$(mktemp -d)"
PID=""
cleanup() {
  if [[ -n "$PID" ]]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  if [[ -n "${OPENAPI_FUZZ_KEEP_LOG:-}" && -f "$DATA/server.log" ]]; then cp "$DATA/server.log" "$OPENAPI_FUZZ_KEEP_LOG"; fi
  rm -rf "$DATA"
}
trap cleanup EXIT

json_field() { "$PY" -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }

PORT="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
BASE="http://127.0.0.1:$PORT"
export COFFER_DATA_DIR="$DATA"
ADMIN_EMAIL=fuzz-admin@example.com
ADMIN_PASSWORD="Fuzz-Admin-$(date +%s)-Pw1!"
"$COFFERD" migrate >/dev/null
"$COFFERD" user create --email "$ADMIN_EMAIL" --name "Fuzz Admin" --password "$ADMIN_PASSWORD" \
  --role system-admin >/dev/null
CLIENT="$("$COFFERD" client create --name openapi-fuzz --redirect-uri "$BASE/oauth_callback.php" \
  --flows password,refresh_token --no-consent)"
CLIENT_ID="$(json_field id <<<"$CLIENT")"
CLIENT_SECRET="$(json_field client_secret <<<"$CLIENT")"
SCIM_TOKEN="$("$COFFERD" scim-token create --name openapi-fuzz | json_field token)"
# The DLI reads answer only while their licence stand-in is on.
"$COFFERD" settings set dliEnabled true >/dev/null

# The fuzzer sends wrong current passwords by the thousand, which count like failed sign-ins;
# with the usual limits the administrator's account and the loopback address would be locked
# and the logout hook could not get its fresh token, and each wrong password (or unknown form or
# message link) would be answered up to 2 s late. The limits themselves are tested end to end.
COFFER_AUTH_MAX_FAILURES=1000000000 COFFER_AUTH_SLOW_AFTER=1000000000 \
COFFER_LISTEN="127.0.0.1:$PORT" COFFER_BASE_URL="$BASE" RUST_LOG="${OPENAPI_FUZZ_LOG:-warn}" "$COFFERD" serve >"$DATA/server.log" 2>&1 &
PID=$!
for _ in $(seq 1 100); do
  if "$PY" -c "import urllib.request; urllib.request.urlopen('$BASE/health')" 2>/dev/null; then break; fi
  sleep 0.2
done

# The system administrator's access token, by the password grant of the client made above.
token() {
  "$PY" - "$BASE" "$CLIENT_ID" "$CLIENT_SECRET" "$ADMIN_EMAIL" "$ADMIN_PASSWORD" <<'PYEOF'
import json, sys, urllib.parse, urllib.request
base, cid, secret, user, password = sys.argv[1:]
form = urllib.parse.urlencode({"grant_type": "password", "client_id": cid, "client_secret": secret,
                               "username": user, "password": password}).encode()
req = urllib.request.Request(base + "/oauth/token", data=form,
                             headers={"Content-Type": "application/x-www-form-urlencoded"})
print(json.load(urllib.request.urlopen(req))["access_token"])
PYEOF
}
export COFFER_FUZZ_TOKEN COFFER_FUZZ_SCIM_TOKEN="$SCIM_TOKEN"
COFFER_FUZZ_TOKEN="$(token)"
# The hooks get fresh tokens for the operations that end the caller's session.
export COFFER_FUZZ_BASE="$BASE" COFFER_FUZZ_CLIENT_ID="$CLIENT_ID" COFFER_FUZZ_CLIENT_SECRET="$CLIENT_SECRET"
export COFFER_FUZZ_USERNAME="$ADMIN_EMAIL" COFFER_FUZZ_PASSWORD="$ADMIN_PASSWORD"

status=0
started=$(date +%s)
(cd "$DATA" && SCHEMATHESIS_HOOKS=hooks PYTHONPATH="$ROOT/scripts/openapi-fuzz" \
  "$VENV/bin/schemathesis" --config-file "$ROOT/scripts/openapi-fuzz/schemathesis.toml" run \
  "$BASE/openapi.json" --url "$BASE" --checks all --max-examples "$MAX_EXAMPLES" --workers 1 \
  --seed "${OPENAPI_FUZZ_SEED:-20261124}" --generation-codec ascii --no-color \
  ${OPENAPI_FUZZ_ARGS:-}) || status=$?
echo "openapi-fuzz: schemathesis ran $(( $(date +%s) - started ))s, exit $status"
if ((status != 0)); then
  echo "--- server log" >&2
  grep -v "coffer::waf" "$DATA/server.log" | grep -B2 -A12 "panicked" | head -60 >&2 || true
  grep -v "coffer::waf" "$DATA/server.log" | grep -v "^ \+\(at \|[0-9]\+:\)" | tail -30 >&2
fi
exit "$status"
