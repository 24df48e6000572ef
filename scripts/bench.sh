#!/usr/bin/env bash
# Coffer's benchmark (not a test): cofferd against node-oidc-provider on this machine, loopback
# only, one wrk per scenario, and docs/benchmarks.md written from the results.
#
#   scripts/bench.sh            (or `just bench`)
#
# Scenarios, each `wrk -t 32 -c 32 -d ${BENCH_SECONDS}s --latency`:
#   (a) GET /health                                   unauthenticated floor
#   (b) GET /rest/users/me                            Bearer token + X-Coffer-Version: 28
#   (c) POST /oauth/token  grant_type=refresh_token   one rotating token chain per connection
#   (d) POST /oauth/token  JWT bearer assertion       pre-generated single-use RS256 assertions
#   (e) oidc-peer POST /token client_credentials      scripts/bench/oidc-peer
# and cofferd's peak RSS (VmHWM) after (a)-(d) and the SQLite WAL's peak size during (c); (d)
# starts once cofferd is idle again after (c) (under 5% of a core over a second), so it does not
# share the cores with work (c) left behind. Then the
# content benchmarks, scripts/bench-content.sh (a fresh cofferd of their own; runs alone too),
# whose results go in the same page:
#   (f) a 1 GiB upload in 10 MiB chunks, sequential      >= 75% of the lower of dd
#                                                         conv=fdatasync and one sha3-256 stream
#   (g) 4 KiB one-shot uploads, 8 clients (wrk)           >= 200 files/s
#   (h) the 1 GiB download (curl, best of 3)              against nginx, sendfile on: >= 70%
#   (i) GET /rest/folders/{id}/children?limit=1000 of a folder of 1,000 files (wrk)  p99 < 20 ms
#   (j) cofferd's peak RSS (VmHWM) over (f)-(h)           < 150 MB
# Then two benchmarks with pages of their own:
#   webhook delivery   tests/src/bin/delivery-bench.rs       docs/benchmarks-webhooks.md
#   SCIM listing       scripts/bench-scim.sh                 docs/benchmarks-scim.md
#     100,000 seeded users; wrk on GET /rest/scim/Users with a selective and a broad filter
#     (requests/s, p50, p99, against GET /health), and the peak RSS of a count=1000000 listing
#     (VmHWM after clear_refs, above idle; target < 100 MiB and flat). Runs alone too.
#   SFTP               scripts/bench-sftp.sh                  a section of docs/benchmarks.md
#     cofferd's SFTP server against OpenSSH's sftp-server behind a throwaway sshd, the same
#     client and cipher: a 1 GiB put (>= 60%) and get (>= 80%) and 1,000 puts of 4 KiB in one
#     session (>= 50% of the peer's rate); cofferd's peak RSS < 150 MB. Runs alone too.
#   external sources   scripts/bench-sources.sh               a section of docs/benchmarks.md
#     a WebDAV server (WsgiDAV, scripts/webdav-test-server.sh) as a source: a 1 GiB transfer
#     into Coffer (>= 60% of curl's MiB/s from the same server), the listing of a source folder
#     of 1,000 files (wrk, p99 < 100 ms), cofferd's peak RSS < 150 MB. Runs alone too.
#   activity log       scripts/bench-audit.sh                 a section of docs/benchmarks.md
#     1,000,000 records: `cofferd audit verify`'s walk (>= 100,000 records/s), and the cost of
#     recording on folder creates and uploads (<= 10%). Runs alone too.
#
# Environment (all optional):
#   BENCH_SECONDS=10        length of each measured run (1..240: assertions live 290 s)
#   BENCH_WARMUP=2          warm-up seconds before (a), (b), (e); 0 for none
#   BENCH_CONNECTIONS=32    wrk connections = wrk threads, for every scenario
#   BENCH_JWT_RATE=30000    assertions generated per second of run (d) (capped by BENCH_JWT_MAX)
#   BENCH_JWT_MAX=400000
#   BENCH_COFFERD_ENV=""   extra VAR=VALUE words for cofferd's environment
#   BENCH_SKIP_BUILD=1      use the existing release binary;  COFFERD_BIN=path  use that binary
#   CARGO_TARGET_DIR        default /var/tmp/coffer-target (as .ci/run)
#   BENCH_OUT=./bench-out   raw wrk output and logs;  BENCH_REPORT=docs/benchmarks.md
#   BENCH_PEER_DIR          default scripts/bench/oidc-peer
#   BENCH_STRICT=1          exit 1 when a target check fails or a run had errors
#   BENCH_KEEP=1            keep the temporary directory (data dir, keys, tokens)
#   BENCH_DELIVERIES=20000  events for the webhook delivery throughput run
#   BENCH_SCIM_USERS=100000 users seeded for the SCIM listing (more: scripts/bench-scim.sh)
#   BENCH_EXTRA=0           skip the webhook and SCIM benchmarks (only (a)-(j) and their page)
#   BENCH_CONTENT=0         skip the content benchmarks (f)-(j); the page keeps its content section
#   BENCH_MAIL=0            skip the mail benchmarks (k)-(m) (scripts/bench-mail.sh); the page keeps
#                           its mail section
#   BENCH_ONLY=mail         only the mail benchmarks; rewrites only the page's mail section
#   BENCH_ONLY=search       only the search benchmarks (scripts/bench-search.sh, (n)-(q): 100,000
#                           files indexed and searched); rewrites only the page's search section
#   BENCH_ONLY=sftp         only the SFTP benchmark (scripts/bench-sftp.sh); rewrites only the
#                           page's SFTP section
#   BENCH_SFTP=0            skip the SFTP benchmark; the page keeps its SFTP section
#   BENCH_SFTP_MIB=1024     size of the SFTP put and get (more: scripts/bench-sftp.sh)
#   BENCH_ONLY=sources      only the external sources benchmark (scripts/bench-sources.sh);
#                           rewrites only the page's external sources section
#   BENCH_SOURCES=0         skip the external sources benchmark; the page keeps its section
#   BENCH_SOURCES_MIB=1024  size of the sources transfer (more: scripts/bench-sources.sh)
#   BENCH_ONLY=content      only the content benchmarks (scripts/bench-content.sh): no peer, no
#                           (a)-(e), no webhook or SCIM run; rewrites only the page's content section
#   BENCH_UPLOAD_MIB=1024   size of the (f) upload and the (h) download, MiB (TMPDIR needs
#                           3 + BENCH_UPLOAD_ROUNDS times that free)
#   BENCH_UPLOAD_ROUNDS=3   rounds of (f), each its two floors and an upload; the best of each
#   BENCH_CHUNK_MIB=10      chunk size of (f), MiB
#   BENCH_SMALL_CLIENTS=8   concurrent clients of (g)
#   BENCH_LIST_ENTRIES=1000 files in the folder listed by (i) (BENCH_CONNECTIONS connections)
#   BENCH_DOWNLOAD_REPS=3   downloads from each server in (h)
#   TMPDIR                  the temporary directory's parent: the disk (f) and (h) measure
#
# Installs what it needs when missing (as root): wrk, curl, openssl (apt), Node.js/npm (apt),
# nginx-light (apt, for (h); its service is not started), the PyPI package `cryptography` (into a
# venv in the temporary directory).
# Everything it starts (cofferd, the peer, nginx) is stopped on exit, by the PIDs it recorded.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
HERE=$ROOT/scripts/bench

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/coffer-target}
SECS=${BENCH_SECONDS:-10}
WARMUP=${BENCH_WARMUP:-2}
CONNS=${BENCH_CONNECTIONS:-32}
THREADS=$CONNS
TIMEOUT=10s
JWT_RATE=${BENCH_JWT_RATE:-30000}
JWT_MAX=${BENCH_JWT_MAX:-400000}
COFFERD_EXTRA_ENV=${BENCH_COFFERD_ENV-}
OUT=${BENCH_OUT:-$ROOT/bench-out}
REPORT=${BENCH_REPORT:-$ROOT/docs/benchmarks.md}
PEER_SRC=${BENCH_PEER_DIR:-$ROOT/scripts/bench/oidc-peer}
BIN=${COFFERD_BIN:-$CARGO_TARGET_DIR/release/cofferd}

BENCH_EMAIL=bench@example.com
BENCH_PASSWORD='Bench-Passw0rd!'

BENCH_NAME=bench
# shellcheck source=bench/lib.sh
source "$ROOT/scripts/bench/lib.sh"
if ! is_uint "$SECS" || ((SECS < 1 || SECS > 240)); then die "BENCH_SECONDS must be 1..240"; fi
if ! is_uint "$WARMUP" || ((WARMUP > 60)); then die "BENCH_WARMUP must be 0..60"; fi
if ! is_uint "$CONNS" || ((CONNS < 1 || CONNS > 256)); then die "BENCH_CONNECTIONS must be 1..256"; fi
if ! is_uint "$JWT_RATE" || ! is_uint "$JWT_MAX"; then die "BENCH_JWT_RATE and BENCH_JWT_MAX must be numbers"; fi
case ${BENCH_ONLY:-} in
  "") ;;
  content) exec "$ROOT/scripts/bench-content.sh" ;;
  mail) exec "$ROOT/scripts/bench-mail.sh" ;;
  search) exec "$ROOT/scripts/bench-search.sh" ;;
  sftp) exec "$ROOT/scripts/bench-sftp.sh" ;;
  sources) exec "$ROOT/scripts/bench-sources.sh" ;;
  *) die "BENCH_ONLY must be empty, content, mail, search, sftp or sources" ;;
esac
CONTENT=${BENCH_CONTENT:-1}
[[ $CONTENT == 0 || $CONTENT == 1 ]] || die "BENCH_CONTENT must be 0 or 1"
[[ -d $PEER_SRC ]] || die "peer not found at $PEER_SRC (set BENCH_PEER_DIR)"

# --- cleanup: only what this script started -------------------------------------------------
WORK=""
COFFERD_PID=""
PEER_PID=""


# shellcheck disable=SC2317  # invoked by trap
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pid "$COFFERD_PID" cofferd
  stop_pid "$PEER_PID" oidc-peer
  if [[ -n $WORK && -d $WORK ]]; then
    if [[ ${BENCH_KEEP:-} == 1 ]]; then info "kept $WORK"; else rm -rf -- "$WORK"; fi
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- tools ------------------------------------------------------------------------------------

log "tools"
need=()
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v curl >/dev/null 2>&1 || need+=(curl ca-certificates)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v python3 >/dev/null 2>&1 || need+=(python3 python3-venv)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
if ((${#need[@]})); then
  info "installing with apt: ${need[*]}"
  apt_install "${need[@]}"
fi
WRK_VERSION=$(wrk -v 2>&1 | head -n 1 | sed 's/ Copyright.*//' || true)
info "$WRK_VERSION; node $(node --version); npm $(npm --version); $(python3 --version)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-bench.XXXXXX")
mkdir -p "$OUT"
rm -f "$OUT"/[a-e].txt "$OUT"/*.log
if [[ $CONTENT == 1 ]]; then rm -f "$OUT"/content.json "$OUT"/content-*; fi

PY=python3
if ! python3 -c 'import cryptography' 2>/dev/null; then
  info "installing the PyPI package cryptography into $WORK/venv"
  if python3 -m venv "$WORK/venv" 2>/dev/null; then
    "$WORK/venv/bin/pip" install -q --disable-pip-version-check cryptography
    PY=$WORK/venv/bin/python
  else
    python3 -m pip install -q --disable-pip-version-check --target "$WORK/pylib" cryptography
    export PYTHONPATH=$WORK/pylib${PYTHONPATH:+:$PYTHONPATH}
  fi
  "$PY" -c 'import cryptography' || die "could not install cryptography"
fi

# --- the peer: install now, so a registry problem shows before the long part -----------------
log "oidc-peer: npm install"
PEER=$WORK/peer
mkdir -p "$PEER"
cp -r "$PEER_SRC"/. "$PEER"/
rm -rf "$PEER/node_modules"
(cd "$PEER" && npm install --no-audit --no-fund --loglevel=error >"$OUT/peer-npm.log" 2>&1) ||
  {
    cat "$OUT/peer-npm.log" >&2
    die "npm install of the peer failed"
  }
PEER_VERSION=$(node -p 'require(process.argv[1]).version' "$PEER/node_modules/oidc-provider/package.json" 2>/dev/null || echo unknown)
info "oidc-provider $PEER_VERSION"

# --- cofferd ----------------------------------------------------------------------------------
if [[ -n ${COFFERD_BIN:-} || ${BENCH_SKIP_BUILD:-} == 1 ]]; then
  log "cofferd: using $BIN (no build)"
else
  log "cofferd: cargo build --release -p cofferd (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
  cargo build --release -p cofferd
fi
[[ -x $BIN ]] || die "no cofferd binary at $BIN"

KEYS=$WORK/keys
DATA=$WORK/data
mkdir -p "$KEYS" "$DATA"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$KEYS/jwt-private.pem" 2>/dev/null
openssl pkey -in "$KEYS/jwt-private.pem" -pubout -out "$KEYS/jwt-public.pem"

PORT=$(spare_port)
BASE=http://127.0.0.1:$PORT
read -r -a EXTRA_ENV <<<"$COFFERD_EXTRA_ENV"
COFFERD_ENV=(env -u COFFER_DATABASE_URL RUST_LOG=warn COFFER_LISTEN="127.0.0.1:$PORT" COFFER_BASE_URL="$BASE" "${EXTRA_ENV[@]}")

log "cofferd: serve on $BASE (data dir $DATA)"
"${COFFERD_ENV[@]}" "$BIN" --data-dir "$DATA" serve >"$OUT/cofferd.log" 2>&1 &
COFFERD_PID=$!
if ! wait_http "$BASE/health" 60 "$COFFERD_PID"; then
  tail -n 30 "$OUT/cofferd.log" >&2 || true
  die "cofferd did not answer on $BASE/health"
fi
info "cofferd pid $COFFERD_PID"

log "cofferd: operator CLI set-up (user, client)"
"${COFFERD_ENV[@]}" "$BIN" --data-dir "$DATA" user create --email "$BENCH_EMAIL" --name Bench \
  --password "$BENCH_PASSWORD" >"$WORK/user.json" 2>"$OUT/cli.log" ||
  {
    cat "$OUT/cli.log" "$WORK/user.json" >&2
    die "cofferd user create failed"
  }
"${COFFERD_ENV[@]}" "$BIN" --data-dir "$DATA" client create --name bench \
  --redirect-uri http://127.0.0.1/cb --scope '*' --flows password,refresh_token,jwt_bearer \
  --jwt-public-key "$KEYS/jwt-public.pem" --access-token-lifetime 24 --refresh-token-lifetime 24 \
  >"$WORK/client.json" 2>>"$OUT/cli.log" ||
  {
    cat "$OUT/cli.log" "$WORK/client.json" >&2
    die "cofferd client create failed"
  }
CLIENT_ID=$(json_get "$WORK/client.json" client_id)
CLIENT_SECRET=$(json_get "$WORK/client.json" client_secret)
[[ -n $CLIENT_ID && -n $CLIENT_SECRET ]] || die "client create printed no client_id/client_secret: $(cat "$WORK/client.json")"
info "user $(json_get "$WORK/user.json" id), client $CLIENT_ID"

# password_grant N: POST /oauth/token grant_type=password into $WORK/grant.N.json.
password_grant() {
  local n=$1 code
  code=$(curl -sS -o "$WORK/grant.$n.json" -w '%{http_code}' --max-time 30 "$BASE/oauth/token" \
    --data-urlencode grant_type=password --data-urlencode "username=$BENCH_EMAIL" \
    --data-urlencode "password=$BENCH_PASSWORD" --data-urlencode "client_id=$CLIENT_ID" \
    --data-urlencode "client_secret=$CLIENT_SECRET")
  if [[ $code != 200 ]]; then
    printf 'HTTP %s: %s\n' "$code" "$(head -c 500 "$WORK/grant.$n.json")" >&2
    die "password grant failed"
  fi
}

log "tokens: $((CONNS + 2)) password grants (one access token for (b), one refresh chain per connection for (c), one for its preflight)"
password_grant access
ACCESS_TOKEN=$(json_get "$WORK/grant.access.json" access_token)
[[ -n $ACCESS_TOKEN ]] || die "password grant returned no access_token: $(cat "$WORK/grant.access.json")"
password_grant preflight
: >"$WORK/refresh-tokens.txt"
for ((i = 1; i <= CONNS; i++)); do
  password_grant "$i"
  t=$(json_get "$WORK/grant.$i.json" refresh_token)
  [[ -n $t ]] || die "password grant returned no refresh_token: $(cat "$WORK/grant.$i.json")"
  printf '%s\n' "$t" >>"$WORK/refresh-tokens.txt"
done
info "$(wc -l <"$WORK/refresh-tokens.txt") refresh tokens"

export BENCH_CLIENT_ID=$CLIENT_ID BENCH_CLIENT_SECRET=$CLIENT_SECRET
export BENCH_TOKENS_FILE=$WORK/refresh-tokens.txt BENCH_JWT_DIR=$WORK/jwt

NOTES=()
# preflight NAME EXPECTED CURL_ARGS...: one request with curl before the load, logged.
preflight() {
  local name=$1 want=$2 code
  shift 2
  code=$(curl -sS -o "$WORK/preflight.$name" -w '%{http_code}' --max-time 30 "$@" || true)
  code=${code:-000}
  if [[ $code == "$want" ]]; then
    info "preflight ($name): HTTP $code"
  else
    info "preflight ($name): HTTP $code, expected $want: $(head -c 300 "$WORK/preflight.$name" 2>/dev/null)"
    NOTES+=("preflight ($name) answered HTTP $code instead of $want: $(head -c 200 "$WORK/preflight.$name" 2>/dev/null | tr -d '\n|`')")
  fi
}

# run_wrk KEY URL ARGS...: the measured run into $OUT/KEY.txt.
run_wrk() {
  local key=$1 url=$2
  shift 2
  info "wrk -t $THREADS -c $CONNS -d ${SECS}s --timeout $TIMEOUT --latency $* $url"
  wrk -t "$THREADS" -c "$CONNS" -d "${SECS}s" --timeout "$TIMEOUT" --latency "$@" "$url" \
    >"$OUT/$key.txt" 2>&1 || info "wrk exited with $? for ($key)"
  grep -E 'Requests/sec|Non-2xx|Socket errors|^ +(50|99)%|BENCH_' "$OUT/$key.txt" | sed 's/^ */    | /' || true
}

# warm KEY URL ARGS...: a short unmeasured run.
warm() {
  local key=$1 url=$2
  shift 2
  ((WARMUP > 0)) || return 0
  wrk -t "$THREADS" -c "$CONNS" -d "${WARMUP}s" --timeout "$TIMEOUT" "$@" "$url" >"$OUT/$key.warmup.log" 2>&1 || true
}

# --- (a) health --------------------------------------------------------------------------------
log "(a) GET /health"
preflight a 200 "$BASE/health"
warm a "$BASE/health"
run_wrk a "$BASE/health"

# --- (b) users/me ------------------------------------------------------------------------------
log "(b) GET /rest/users/me"
preflight b 200 -H "Authorization: Bearer $ACCESS_TOKEN" -H 'X-Coffer-Version: 28' "$BASE/rest/users/me"
warm b "$BASE/rest/users/me" -H "Authorization: Bearer $ACCESS_TOKEN" -H 'X-Coffer-Version: 28'
run_wrk b "$BASE/rest/users/me" -H "Authorization: Bearer $ACCESS_TOKEN" -H 'X-Coffer-Version: 28'

# --- (c) refresh_token -------------------------------------------------------------------------
log "(c) POST /oauth/token grant_type=refresh_token"
preflight c 200 "$BASE/oauth/token" --data-urlencode grant_type=refresh_token \
  --data-urlencode "refresh_token=$(json_get "$WORK/grant.preflight.json" refresh_token)" \
  --data-urlencode "client_id=$CLIENT_ID" --data-urlencode "client_secret=$CLIENT_SECRET"
# The SQLite WAL's largest size while (c) writes without pause (the writer bounds it).
WAL_FILE=$DATA/coffer.db-wal
(
  peak=0
  while kill -0 "$COFFERD_PID" 2>/dev/null && [[ ! -e $WORK/c.done ]]; do
    size=$(stat -c %s "$WAL_FILE" 2>/dev/null || echo 0)
    ((size > peak)) && peak=$size
    printf '%s\n' "$peak" >"$WORK/wal-peak"
    sleep 0.2
  done
) &
WAL_WATCH_PID=$!
run_wrk c "$BASE/oauth/token" -s "$HERE/refresh.lua"
touch "$WORK/c.done"
wait "$WAL_WATCH_PID" 2>/dev/null || true
WAL_PEAK=$(cat "$WORK/wal-peak" 2>/dev/null || echo 0)
info "SQLite WAL peak during (c): $WAL_PEAK bytes"

# --- (d) jwt-bearer ----------------------------------------------------------------------------
JWT_COUNT=$((JWT_RATE * SECS))
((JWT_COUNT <= JWT_MAX)) || JWT_COUNT=$JWT_MAX
((JWT_COUNT >= CONNS)) || JWT_COUNT=$CONNS
log "(d) POST /oauth/token JWT bearer: generating $JWT_COUNT assertions (+1 for the preflight)"
"$PY" "$HERE/assertions.py" generate --key "$KEYS/jwt-private.pem" --iss "$CLIENT_ID" \
  --sub "$BENCH_EMAIL" --aud "$BASE/oauth/token" --count 1 --files 1 --out "$WORK/jwt-preflight"
"$PY" "$HERE/assertions.py" generate --key "$KEYS/jwt-private.pem" --iss "$CLIENT_ID" \
  --sub "$BENCH_EMAIL" --aud "$BASE/oauth/token" --count "$JWT_COUNT" --files "$CONNS" \
  --out "$BENCH_JWT_DIR"
"$PY" "$HERE/assertions.py" verify --pub "$KEYS/jwt-public.pem" --aud "$BASE/oauth/token" \
  --limit 1 "$BENCH_JWT_DIR/assert.1" >/dev/null
preflight d 200 "$BASE/oauth/token" \
  --data-urlencode grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer \
  --data-urlencode "client_id=$CLIENT_ID" \
  --data-urlencode "assertion=$(head -n 1 "$WORK/jwt-preflight/assert.1")"
# (d) starts once cofferd is idle again, so it measures the grant, not any background work (c)
# started (none was seen in the runs of 2026-11-28: idle at once).
info "(d) cofferd idle after $(wait_idle "$COFFERD_PID" 120) s of work left by (c)"
run_wrk d "$BASE/oauth/token" -s "$HERE/jwt.lua"

# --- peak RSS, then stop cofferd ---------------------------------------------------------------
VMHWM_KB=$(awk '/^VmHWM:/ {print $2}' "/proc/$COFFERD_PID/status" 2>/dev/null || true)
VMRSS_KB=$(awk '/^VmRSS:/ {print $2}' "/proc/$COFFERD_PID/status" 2>/dev/null || true)
info "cofferd VmHWM ${VMHWM_KB:-?} kB, VmRSS ${VMRSS_KB:-?} kB"
if ! kill -0 "$COFFERD_PID" 2>/dev/null; then
  NOTES+=("cofferd was no longer running after the runs; see bench-out/cofferd.log")
fi
stop_pid "$COFFERD_PID" cofferd
COFFERD_PID=""

# --- (e) the peer ------------------------------------------------------------------------------
PEER_PORT=$(spare_port)
PEER_BASE=http://127.0.0.1:$PEER_PORT
log "(e) oidc-peer on $PEER_BASE"
(cd "$PEER" && PORT=$PEER_PORT exec node server.mjs) >"$OUT/peer.log" 2>&1 &
PEER_PID=$!
if ! wait_http "$PEER_BASE/.well-known/openid-configuration" 60 "$PEER_PID"; then
  tail -n 30 "$OUT/peer.log" >&2 || true
  die "the peer did not start"
fi
info "peer pid $PEER_PID"
BENCH_PEER_BASIC=$(printf '%s' 'peer:peer-secret' | base64 -w0)
export BENCH_PEER_BASIC
preflight e 200 -u peer:peer-secret -d grant_type=client_credentials "$PEER_BASE/token"
warm e "$PEER_BASE/token" -s "$HERE/peer.lua"
run_wrk e "$PEER_BASE/token" -s "$HERE/peer.lua"
stop_pid "$PEER_PID" oidc-peer
PEER_PID=""

# --- (f)-(j) content ---------------------------------------------------------------------------
content_flags=(--keep-content)
if [[ $CONTENT == 1 ]]; then
  log "(f)-(j) content: uploads, downloads, a listing (scripts/bench-content.sh)"
  content_flags=()
  if COFFERD_BIN=$BIN BENCH_SECONDS=$SECS BENCH_WARMUP=$WARMUP BENCH_CONNECTIONS=$CONNS \
    BENCH_OUT=$OUT BENCH_COFFERD_ENV=$COFFERD_EXTRA_ENV BENCH_CONTENT_REPORT=0 \
    "$ROOT/scripts/bench-content.sh"; then
    :
  else
    rc=$?
    NOTES+=("the content benchmarks (scripts/bench-content.sh) failed with exit $rc; see their output")
    content_flags=(--content-failed)
  fi
else
  info "BENCH_CONTENT=0: content benchmarks skipped; the page keeps its content section"
fi

# --- report ------------------------------------------------------------------------------------
log "report"
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo "no commit")
DIRTY=0
if [[ -n $(git status --porcelain --untracked-files=no 2>/dev/null || true) ]]; then DIRTY=1; fi
export B_DATE B_NPROC B_CPU B_MEM B_KERNEL B_COMMIT B_DIRTY B_WRK B_NODE B_PEER B_ENV \
  B_HWM B_WAL B_SECS B_WARMUP B_CONNS B_THREADS B_TIMEOUT B_JWT B_NOTES
B_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
B_NPROC=$(nproc)
B_CPU=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
B_MEM=$(awk '/^MemTotal:/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
B_KERNEL=$(uname -r)
B_COMMIT=$COMMIT B_DIRTY=$DIRTY B_WRK=$WRK_VERSION B_NODE=$(node --version) B_PEER=$PEER_VERSION
B_ENV=$COFFERD_EXTRA_ENV B_HWM=${VMHWM_KB:-0} B_WAL=${WAL_PEAK:-0} B_SECS=$SECS B_WARMUP=$WARMUP B_CONNS=$CONNS
B_THREADS=$THREADS B_TIMEOUT=$TIMEOUT B_JWT=$JWT_COUNT
B_NOTES=$(printf '%s\n' "${NOTES[@]+"${NOTES[@]}"}")
python3 - "$WORK/meta.json" <<'EOF'
import json, os, sys
e = os.environ
meta = {
    "date": e["B_DATE"], "nproc": int(e["B_NPROC"]), "cpu_model": e["B_CPU"] or "unknown CPU",
    "mem_total": e["B_MEM"], "kernel": e["B_KERNEL"], "commit": e["B_COMMIT"],
    "dirty": e["B_DIRTY"] == "1", "wrk_version": e["B_WRK"], "node_version": e["B_NODE"],
    "peer_version": e["B_PEER"], "cofferd_env": e["B_ENV"],
    "cofferd_vmhwm_kb": int(e["B_HWM"] or 0), "wal_peak_bytes": int(e["B_WAL"] or 0),
    "seconds": int(e["B_SECS"]),
    "warmup": int(e["B_WARMUP"]), "connections": int(e["B_CONNS"]), "threads": int(e["B_THREADS"]),
    "timeout": e["B_TIMEOUT"], "jwt_count": int(e["B_JWT"]),
    "jwt_per_thread": -(-int(e["B_JWT"]) // int(e["B_THREADS"])),
    "notes": [n for n in e["B_NOTES"].splitlines() if n.strip()],
}
json.dump(meta, open(sys.argv[1], "w"), indent=1)
EOF
cp "$WORK/meta.json" "$OUT/meta.json"
strict=()
if [[ ${BENCH_STRICT:-} == 1 ]]; then strict=(--strict); fi
python3 "$HERE/report.py" --meta "$WORK/meta.json" --runs "$OUT" --out "$REPORT" \
  "${content_flags[@]+"${content_flags[@]}"}" "${strict[@]+"${strict[@]}"}"

# --- (k)-(m) mail --------------------------------------------------------------------------------
if [[ ${BENCH_MAIL:-1} == 1 ]]; then
  log "(k)-(m) mail: internal sends, outgoing SMTP (scripts/bench-mail.sh)"
  COFFERD_BIN=$BIN BENCH_SECONDS=$SECS BENCH_WARMUP=$WARMUP BENCH_OUT=$OUT BENCH_REPORT=$REPORT \
    "$ROOT/scripts/bench-mail.sh" || info "the mail benchmarks failed with exit $?; see their output"
else
  info "BENCH_MAIL=0: mail benchmarks skipped; the page keeps its mail section"
fi

if [[ ${BENCH_EXTRA:-1} == 0 ]]; then
  info "BENCH_EXTRA=0: webhook and SCIM benchmarks skipped"
  exit 0
fi

# --- webhook delivery -----------------------------------------------------------------------
log "webhook delivery: deliveries per second and API-call-to-delivery latency"
cargo build --release -q -p coffer-tests --bin delivery-bench
"$CARGO_TARGET_DIR/release/delivery-bench" "${BENCH_DELIVERIES:-20000}" "$ROOT/docs/benchmarks-webhooks.md"

# --- SCIM listing ---------------------------------------------------------------------------
log "SCIM listing: filtered pages over ${BENCH_SCIM_USERS:-100000} users and the memory of count=1000000 (scripts/bench-scim.sh)"
COFFERD_BIN=$BIN BENCH_SECONDS=$SECS BENCH_WARMUP=$WARMUP BENCH_CONNECTIONS=$CONNS BENCH_OUT=$OUT \
  BENCH_COFFERD_ENV=$COFFERD_EXTRA_ENV "$ROOT/scripts/bench-scim.sh"

# --- search ---------------------------------------------------------------------------------
log "search: indexing ${BENCH_SEARCH_FILES:-100000} files, queries by content word and name prefix (scripts/bench-search.sh)"
COFFERD_BIN=$BIN BENCH_SECONDS=$SECS BENCH_WARMUP=$WARMUP BENCH_OUT=$OUT BENCH_REPORT=$REPORT \
  BENCH_COFFERD_ENV=$COFFERD_EXTRA_ENV "$ROOT/scripts/bench-search.sh" ||
  info "the search benchmarks failed with exit $?; see their output"
# --- SFTP ------------------------------------------------------------------------------------
if [[ ${BENCH_SFTP:-1} == 1 ]]; then
  log "SFTP: cofferd against OpenSSH's sftp-server, ${BENCH_SFTP_MIB:-1024} MiB and ${BENCH_SFTP_FILES:-1000} small files (scripts/bench-sftp.sh)"
  COFFERD_BIN=$BIN BENCH_OUT=$OUT BENCH_REPORT=$REPORT "$ROOT/scripts/bench-sftp.sh" ||
    info "the SFTP benchmark failed with exit $?; see its output"
else
  info "BENCH_SFTP=0: the SFTP benchmark skipped; the page keeps its SFTP section"
fi
# --- external sources ------------------------------------------------------------------------
if [[ ${BENCH_SOURCES:-1} == 1 ]]; then
  log "external sources: a ${BENCH_SOURCES_MIB:-1024} MiB transfer from WebDAV against curl, a remote listing (scripts/bench-sources.sh)"
  COFFERD_BIN=$BIN BENCH_SECONDS=$SECS BENCH_WARMUP=$WARMUP BENCH_OUT=$OUT BENCH_REPORT=$REPORT \
    "$ROOT/scripts/bench-sources.sh" || info "the external sources benchmark failed with exit $?; see its output"
else
  info "BENCH_SOURCES=0: the external sources benchmark skipped; the page keeps its section"
fi
# --- the activity log ------------------------------------------------------------------------
log "activity log: verify over ${BENCH_AUDIT_RECORDS:-1000000} records, and the cost of recording"
BENCH_REPORT="$ROOT/docs/benchmarks.md" "$ROOT/scripts/bench-audit.sh"
