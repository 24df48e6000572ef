#!/usr/bin/env bash
# Coffer's content benchmarks (not a test): uploads, downloads and a listing against the disk and
# nginx on this machine, loopback only. scripts/bench.sh (`just bench`) runs it after (a)-(e) and
# puts its results in docs/benchmarks.md; it runs alone too, and then rewrites only the content
# section of that page:
#
#   scripts/bench-content.sh            (or BENCH_ONLY=content scripts/bench.sh)
#
# A fresh cofferd (its own process, SQLite and the local blob store under the data directory in
# the temporary directory, so on that directory's disk) with `storageQuota` and `maxUploadSize`
# raised, one user and a password-grant token. Every /rest call carries the token and
# `X-Coffer-Version: 28`. Scenarios, one after another:
#   (f) upload of a BENCH_UPLOAD_MIB file of random bytes in BENCH_CHUNK_MIB chunks, sequential
#       (scripts/bench/content.py: initiateUpload, then each chunk from the file with sendfile(2)
#       on one keep-alive connection; the clock runs from the initiate request to the 201),
#       against two floors measured in the same run: the disk (`dd if=/dev/zero of=<temp dir>
#       bs=1M count=N conv=fdatasync`, timed) and the fingerprint (one `openssl dgst -sha3-256`
#       stream over the same bytes, timed). BENCH_UPLOAD_ROUNDS rounds, each the two floors
#       and one upload of its own bytes; the best of each is compared. The file's size and
#       SHA3-256 fingerprint are checked, then one streamed download of the best round's file.
#       Target: Coffer's MiB/s >= 75% of the lower floor's.
#   (g) 4 KiB one-shot uploads (POST /rest/folders/{id}/actions/file), each a new name and
#       content, `wrk -t 8 -c 8` (BENCH_SMALL_CLIENTS) with scripts/bench/upload.lua after a
#       warm-up. Target: >= 200 files/s.
#   (h) download of the file of (f) (GET /rest/files/{id}/content) against nginx serving the
#       same source file from the same disk (`sendfile on`, single process, a spare loopback
#       port, config in the temp dir): `curl -o /dev/null`, BENCH_DOWNLOAD_REPS times each,
#       alternating; the best of each is compared. Target: Coffer >= 70% of nginx.
#   (j) cofferd's peak RSS: VmHWM reset (`echo 5 > /proc/PID/clear_refs`) before (f), read after
#       (h). Target: < 150 MB.
#   (i) listing of a folder of BENCH_LIST_ENTRIES 4 KiB files (seeded by content.py),
#       GET /rest/folders/{id}/children?limit=N, `wrk -t 2 -c C` after a warm-up, once the
#       seeded files' background jobs are done (cofferd idle).
#       Target: p99 < 20 ms.
# Results: bench-out/content.json (and content-*.txt), then docs/benchmarks.md through
# scripts/bench/report.py.
#
# Environment (all optional; the shared names as scripts/bench.sh):
#   BENCH_SECONDS=10  BENCH_WARMUP=2  BENCH_CONNECTIONS=32 (for (i))  BENCH_COFFERD_ENV=""
#   BENCH_SKIP_BUILD=1      use the existing release binary;  COFFERD_BIN=path  use that binary
#   CARGO_TARGET_DIR        default /var/tmp/coffer-target
#   BENCH_OUT=./bench-out   raw output and logs (content*);  BENCH_REPORT=docs/benchmarks.md
#   BENCH_UPLOAD_MIB=1024   size of the (f) upload and the (h) download, MiB
#   BENCH_CHUNK_MIB=10      chunk size of (f), MiB (1..64)
#   BENCH_SMALL_CLIENTS=8   wrk connections (= threads) of (g)
#   BENCH_LIST_THREADS=2    wrk threads of (i) (its connections: BENCH_CONNECTIONS)
#   BENCH_LIST_ENTRIES=1000 files in the folder listed by (i) (10..10000)
#   BENCH_DOWNLOAD_REPS=3   downloads of each server in (h)
#   BENCH_UPLOAD_ROUNDS=3   rounds of (f), each its two floors and one upload; the best of each
#   BENCH_CONTENT_REPORT=0  write only bench-out/content.json, not the page (scripts/bench.sh
#                           sets it: it writes the whole page itself)
#   BENCH_CONTENT_ONLY=f    run (f) alone (with its floors, the download check and (j) over it),
#                           print its ratio and stop: no (g)-(i), no content.json, no page (for
#                           measuring a change to the upload path)
#   BENCH_STRICT=1          exit 1 when a target check fails or a run had errors
#   BENCH_KEEP=1            keep the temporary directory
#   TMPDIR                  where the temporary directory goes: the disk that is measured
#
# Needs wrk, curl, python3 and nginx (Debian `nginx-light`, else `nginx`; installed with apt
# when missing, as root, with service starts refused while it installs). Disk: about
# (3 + BENCH_UPLOAD_ROUNDS) x BENCH_UPLOAD_MIB free under TMPDIR. Everything it starts (cofferd,
# nginx) listens on 127.0.0.1 only and is stopped on exit by its recorded PID.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
HERE=$ROOT/scripts/bench

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/coffer-target}
SECS=${BENCH_SECONDS:-10}
WARMUP=${BENCH_WARMUP:-2}
CONNS=${BENCH_CONNECTIONS:-32}
# wrk's own threads for (i): two, as many as the cores of the machine the target was set on, so
# the load generator does not take the server's CPU with 32 busy threads of its own.
LIST_THREADS=${BENCH_LIST_THREADS:-2}
TIMEOUT=10s
UPLOAD_MIB=${BENCH_UPLOAD_MIB:-1024}
CHUNK_MIB=${BENCH_CHUNK_MIB:-10}
SMALL=${BENCH_SMALL_CLIENTS:-8}
SMALL_BYTES=4096
ENTRIES=${BENCH_LIST_ENTRIES:-1000}
REPS=${BENCH_DOWNLOAD_REPS:-3}
UPLOAD_ROUNDS=${BENCH_UPLOAD_ROUNDS:-3}
COFFERD_EXTRA_ENV=${BENCH_COFFERD_ENV-}
OUT=${BENCH_OUT:-$ROOT/bench-out}
REPORT=${BENCH_REPORT:-$ROOT/docs/benchmarks.md}
BIN=${COFFERD_BIN:-$CARGO_TARGET_DIR/release/cofferd}
VERSION_HEADER='X-Coffer-Version: 28'

BENCH_EMAIL=bench@example.com
BENCH_PASSWORD='Bench-Passw0rd!'

BENCH_NAME=bench-content
# shellcheck source=bench/lib.sh
source "$ROOT/scripts/bench/lib.sh"
if ! is_uint "$SECS" || ((SECS < 1 || SECS > 240)); then die "BENCH_SECONDS must be 1..240"; fi
if ! is_uint "$WARMUP" || ((WARMUP > 60)); then die "BENCH_WARMUP must be 0..60"; fi
if ! is_uint "$CONNS" || ((CONNS < 1 || CONNS > 256)); then die "BENCH_CONNECTIONS must be 1..256"; fi
if ! is_uint "$UPLOAD_MIB" || ((UPLOAD_MIB < 1 || UPLOAD_MIB > 65536)); then die "BENCH_UPLOAD_MIB must be 1..65536"; fi
if ! is_uint "$CHUNK_MIB" || ((CHUNK_MIB < 1 || CHUNK_MIB > 64)); then die "BENCH_CHUNK_MIB must be 1..64"; fi
if ! is_uint "$SMALL" || ((SMALL < 1 || SMALL > 256)); then die "BENCH_SMALL_CLIENTS must be 1..256"; fi
if ! is_uint "$ENTRIES" || ((ENTRIES < 10 || ENTRIES > 10000)); then die "BENCH_LIST_ENTRIES must be 10..10000"; fi
if ! is_uint "$REPS" || ((REPS < 1 || REPS > 20)); then die "BENCH_DOWNLOAD_REPS must be 1..20"; fi
if ! is_uint "$UPLOAD_ROUNDS" || ((UPLOAD_ROUNDS < 1 || UPLOAD_ROUNDS > 10)); then die "BENCH_UPLOAD_ROUNDS must be 1..10"; fi
UPLOAD_BYTES=$((UPLOAD_MIB * 1048576))
CHUNK_BYTES=$((CHUNK_MIB * 1048576))

# --- cleanup: only what this script started -------------------------------------------------
WORK=""
COFFERD_PID=""
NGINX_PID=""

# shellcheck disable=SC2317  # invoked by trap
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pid "$NGINX_PID" nginx
  stop_pid "$COFFERD_PID" cofferd
  if [[ -n $WORK && -d $WORK ]]; then
    if [[ ${BENCH_KEEP:-} == 1 ]]; then info "kept $WORK"; else rm -rf -- "$WORK"; fi
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- tools ------------------------------------------------------------------------------------
NGINX=$(command -v nginx 2>/dev/null || true)
[[ -n $NGINX || ! -x /usr/sbin/nginx ]] || NGINX=/usr/sbin/nginx
need=()
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v curl >/dev/null 2>&1 || need+=(curl ca-certificates)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if ((${#need[@]})); then
  log "tools: apt-get install ${need[*]}"
  apt_install "${need[@]}"
fi
if [[ -z $NGINX ]]; then
  # Debian starts a service it installs (nginx on port 80 of every address): a policy-rc.d
  # refuses that while the package installs, unless the machine has one of its own.
  pkg=nginx-light
  if ! apt-cache show nginx-light >/dev/null 2>&1; then pkg=nginx; fi
  log "tools: apt-get install $pkg (no service start)"
  policy=""
  if [[ $EUID -eq 0 && ! -e /usr/sbin/policy-rc.d ]]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\n# scripts/bench-content.sh: no service starts while it installs nginx\nexit 101\n' >"$policy"
    chmod 755 "$policy"
  fi
  install_rc=0
  apt_install "$pkg" || install_rc=$?
  [[ -z $policy ]] || rm -f -- "$policy"
  ((install_rc == 0)) || die "apt-get install $pkg failed"
  NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
  [[ -x $NGINX ]] || die "no nginx binary after installing $pkg"
fi
WRK_VERSION=$(wrk -v 2>&1 | head -n 1 | sed 's/ Copyright.*//' || true)
NGINX_VERSION=$("$NGINX" -v 2>&1 | sed 's/^nginx version: //' || true)
CURL_VERSION=$(curl --version | head -n 1 | cut -d' ' -f1-2)
info "$WRK_VERSION; $NGINX_VERSION; $CURL_VERSION; $(python3 --version)"

# --- cofferd ----------------------------------------------------------------------------------
if [[ -n ${COFFERD_BIN:-} || ${BENCH_SKIP_BUILD:-} == 1 ]]; then
  log "cofferd: using $BIN (no build)"
else
  log "cofferd: cargo build --release -p cofferd (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
  cargo build --release -p cofferd
fi
[[ -x $BIN ]] || die "no cofferd binary at $BIN"
case $BIN in
  */release/*) BUILD=release ;;
  */debug/*) BUILD=debug ;;
  *) BUILD=unknown ;;
esac
[[ $BUILD != debug ]] || info "a debug build: its figures are not measurements of Coffer"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-bench-content.XXXXXX")
DATA=$WORK/data
mkdir -p "$DATA" "$OUT"
rm -f "$OUT"/content.json "$OUT"/content-*
FS_TYPE=$(df --output=fstype "$WORK" | tail -n 1 | tr -d ' ')
FS_SOURCE=$(df --output=source "$WORK" | tail -n 1 | tr -d ' ')
AVAIL_MIB=$(($(df --output=avail -k "$WORK" | tail -n 1 | tr -d ' ') / 1024))
NEED_MIB=$((UPLOAD_MIB * 3 + 512))
info "temporary directory $WORK: $FS_TYPE on $FS_SOURCE, $AVAIL_MIB MiB free"
((AVAIL_MIB >= NEED_MIB)) || die "$NEED_MIB MiB free needed under $WORK (set TMPDIR, or a smaller BENCH_UPLOAD_MIB)"

PORT=$(spare_port)
BASE=http://127.0.0.1:$PORT
read -r -a EXTRA_ENV <<<"$COFFERD_EXTRA_ENV"
COFFERD_ENV=(env -u COFFER_DATABASE_URL -u COFFER_STORAGE_URL -u COFFER_CLAMD -u COFFER_CONFIG
  RUST_LOG=warn COFFER_LISTEN="127.0.0.1:$PORT" COFFER_BASE_URL="$BASE" "${EXTRA_ENV[@]}")

log "cofferd: serve on $BASE (data dir $DATA, blobs in $DATA/storage)"
"${COFFERD_ENV[@]}" "$BIN" --data-dir "$DATA" serve >"$OUT/content-cofferd.log" 2>&1 &
COFFERD_PID=$!
if ! wait_http "$BASE/health" 60 "$COFFERD_PID"; then
  tail -n 30 "$OUT/content-cofferd.log" >&2 || true
  die "cofferd did not answer on $BASE/health"
fi
info "cofferd pid $COFFERD_PID"

# cli ARGS...: one operator command on the data directory; its output in $WORK/cli.out.
cli() {
  "${COFFERD_ENV[@]}" "$BIN" --data-dir "$DATA" "$@" >"$WORK/cli.out" 2>>"$OUT/content-cli.log" ||
    {
      cat "$OUT/content-cli.log" "$WORK/cli.out" >&2
      die "cofferd $1 $2 failed"
    }
}

log "cofferd: settings, user, client, token"
QUOTA=$((1024 * 1024 * 1048576))        # 1 TiB
MAX_UPLOAD=$((UPLOAD_BYTES + 1073741824)) # the upload and 1 GiB to spare
((MAX_UPLOAD >= 2147483648)) || MAX_UPLOAD=2147483648
cli settings set storageQuota "$QUOTA"
cli settings set maxUploadSize "$MAX_UPLOAD"
info "storageQuota $QUOTA, maxUploadSize $MAX_UPLOAD"
cli user create --email "$BENCH_EMAIL" --name Bench --password "$BENCH_PASSWORD"
cli client create --name bench-content --redirect-uri http://127.0.0.1/cb --scope '*' \
  --flows password,refresh_token --access-token-lifetime 24 --refresh-token-lifetime 24
cp "$WORK/cli.out" "$WORK/client.json"
CLIENT_ID=$(json_get "$WORK/client.json" client_id)
CLIENT_SECRET=$(json_get "$WORK/client.json" client_secret)
[[ -n $CLIENT_ID && -n $CLIENT_SECRET ]] || die "client create printed no client_id/client_secret"
code=$(curl -sS -o "$WORK/grant.json" -w '%{http_code}' --max-time 30 "$BASE/oauth/token" \
  --data-urlencode grant_type=password --data-urlencode "username=$BENCH_EMAIL" \
  --data-urlencode "password=$BENCH_PASSWORD" --data-urlencode "client_id=$CLIENT_ID" \
  --data-urlencode "client_secret=$CLIENT_SECRET")
[[ $code == 200 ]] || die "password grant answered HTTP $code: $(head -c 300 "$WORK/grant.json")"
TOKEN=$(json_get "$WORK/grant.json" access_token)
[[ -n $TOKEN ]] || die "password grant returned no access_token"
AUTH="Authorization: Bearer $TOKEN"

# rest NAME EXPECTED CURL_ARGS...: one /rest call into $WORK/NAME.json; dies unless EXPECTED.
rest() {
  local name=$1 want=$2 code
  shift 2
  code=$(curl -sS -o "$WORK/$name.json" -w '%{http_code}' --max-time 60 -H "$AUTH" \
    -H "$VERSION_HEADER" "$@" || true)
  [[ $code == "$want" ]] || die "$name: HTTP ${code:-000}, expected $want: $(head -c 300 "$WORK/$name.json" 2>/dev/null)"
}

rest me 200 "$BASE/rest/users/me"
SYNC=$(json_get "$WORK/me.json" syncdirId)
[[ -n $SYNC ]] || die "GET /rest/users/me has no syncdirId"
# folder NAME: a new folder in My Folder; prints its id.
folder() {
  rest "folder-$1" 201 -H 'Content-Type: application/json' -d "{\"name\":\"$1\"}" \
    "$BASE/rest/folders/$SYNC/folders"
  json_get "$WORK/folder-$1.json" id
}
LARGE_FOLDER=$(folder bench-large)
SMALL_FOLDER=$(folder bench-small)
LIST_FOLDER=$(folder bench-list)
info "My Folder $SYNC; folders: large $LARGE_FOLDER, small $SMALL_FOLDER, list $LIST_FOLDER"

NOTES=()

# --- the source file and the disk's floor ------------------------------------------------------
SRC=$WORK/upload.bin
log "source: $UPLOAD_MIB MiB of random bytes in $SRC"
head -c "$UPLOAD_BYTES" /dev/urandom >"$SRC"
sync "$SRC"

# now: seconds since the epoch, with nanoseconds.
now() { date +%s.%N; }
# elapsed START END: END - START in seconds.
elapsed() { python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.6f}")' "$1" "$2"; }

# The fingerprint's floor: Coffer names content by the sha3-256 of every byte, computed as the
# bytes arrive, and one sha3-256 stream cannot be split across cores, so an upload cannot go
# faster than one stream over the same bytes. Measured with OpenSSL's command (the library
# Coffer's digests come from) over the round's source file, which the page cache holds. (md5,
# the other fingerprint, runs beside it on another thread.)
HAVE_OPENSSL=0
if command -v openssl >/dev/null; then
  HAVE_OPENSSL=1
else
  NOTES+=("no openssl command: the sha3-256 floor of (f) was not measured, so (f) has no result")
fi

# --- (j) reset, (f) upload ---------------------------------------------------------------------
vm() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$COFFERD_PID/status" 2>/dev/null || true; }
HWM_RESET=1
echo 5 2>/dev/null >"/proc/$COFFERD_PID/clear_refs" || {
  HWM_RESET=0
  NOTES+=("could not reset cofferd's VmHWM (clear_refs): (j) is the peak since its start")
}
RSS_BEFORE_KB=$(vm VmRSS)
info "(j) cofferd VmRSS $RSS_BEFORE_KB kB, VmHWM reset to $(vm VmHWM) kB"

# Rounds of (f), each: the disk's floor, the digest's floor, then the upload of a source of the
# round's own (the first file with its first bytes changed, so that no round's content is already
# stored). The best of each is compared, as for (h): one round on a shared machine says as much
# about its neighbours as about the upload.
# faster A B: whether A seconds is less than B (B empty or 0: no time yet).
faster() { python3 -c 'import sys; b = float(sys.argv[2] or 0); print(int(b <= 0 or float(sys.argv[1]) < b))' "$1" "$2"; }
DD_SECS=0
DIGEST_SECS=0
BEST_F=""
: >"$OUT/content-f-rounds.txt"
for ((r = 1; r <= UPLOAD_ROUNDS; r++)); do
  src=$SRC
  if ((r > 1)); then
    src=$WORK/upload-$r.bin
    cp -- "$SRC" "$src"
    printf 'round %08d' "$r" | dd of="$src" conv=notrunc status=none
  fi
  log "(f) round $r/$UPLOAD_ROUNDS floor: dd if=/dev/zero of=$WORK/dd.bin bs=1M count=$UPLOAD_MIB conv=fdatasync"
  t0=$(now)
  LC_ALL=C dd if=/dev/zero of="$WORK/dd.bin" bs=1M count="$UPLOAD_MIB" conv=fdatasync 2>"$OUT/content-dd.txt"
  t1=$(now)
  dd_secs=$(elapsed "$t0" "$t1")
  rm -f -- "$WORK/dd.bin"
  info "$(tail -n 1 "$OUT/content-dd.txt"); timed: $dd_secs s"
  [[ $(faster "$dd_secs" "$DD_SECS") == 1 ]] && DD_SECS=$dd_secs
  digest_secs=0
  if ((HAVE_OPENSSL)); then
    t0=$(now)
    openssl dgst -sha3-256 "$src" >/dev/null
    t1=$(now)
    digest_secs=$(elapsed "$t0" "$t1")
    info "(f) digest floor: openssl dgst -sha3-256 over $UPLOAD_MIB MiB: $digest_secs s"
    [[ $(faster "$digest_secs" "$DIGEST_SECS") == 1 ]] && DIGEST_SECS=$digest_secs
  fi
  log "(f) round $r/$UPLOAD_ROUNDS chunked upload: $UPLOAD_MIB MiB in $CHUNK_MIB MiB chunks"
  if python3 "$HERE/content.py" upload --base "$BASE" --token "$TOKEN" --folder "$LARGE_FOLDER" \
    --file "$src" --chunk "$CHUNK_BYTES" --name "large-$r.bin" --out "$OUT/content-f-$r.json"; then
    up_secs=$(json_get "$OUT/content-f-$r.json" seconds)
    printf '%s %s %s %s\n' "$r" "$dd_secs" "$digest_secs" "$up_secs" >>"$OUT/content-f-rounds.txt"
    if [[ -z $BEST_F || $(faster "$up_secs" "$(json_get "$BEST_F" seconds)") == 1 ]]; then
      BEST_F=$OUT/content-f-$r.json
    fi
  else
    printf '%s %s %s failed\n' "$r" "$dd_secs" "$digest_secs" >>"$OUT/content-f-rounds.txt"
    why=$(json_get "$OUT/content-f-$r.json" error 2>/dev/null || true)
    NOTES+=("(f) the upload of round $r failed: $(printf '%s' "${why:-see the output above}" | tr -d '\n|`' | head -c 300)")
  fi
  [[ $src == "$SRC" ]] || rm -f -- "$src"
done

FILE_ID=""
if [[ -n $BEST_F ]]; then
  cp -- "$BEST_F" "$OUT/content-f.json"
  FILE_ID=$(json_get "$OUT/content-f.json" file_id)
  SRC_SHA3=$(json_get "$OUT/content-f.json" sha3)
  check=$(python3 "$HERE/content.py" fetch --url "$BASE/rest/files/$FILE_ID/content" --token "$TOKEN" \
    --bytes "$UPLOAD_BYTES" --sha3 "$SRC_SHA3" || true)
  info "download check (streamed, SHA3-256 against the source): $check"
  if [[ $check != ok* ]]; then
    NOTES+=("(f) the downloaded file differs from its source: ${check:-no answer}")
    FILE_ID=""
  fi
else
  printf '{"error": "no round of the upload succeeded"}\n' >"$OUT/content-f.json"
fi

if [[ ${BENCH_CONTENT_ONLY:-} == f ]]; then
  info "(j) cofferd VmHWM $(vm VmHWM) kB over (f)"
  python3 - "$OUT/content-f.json" "$DD_SECS" "$DIGEST_SECS" "$UPLOAD_MIB" <<'EOF'
import json, sys
f = json.load(open(sys.argv[1]))
mib = float(sys.argv[4])
floors = {"dd": float(sys.argv[2]), "sha3-256": float(sys.argv[3])}
rates = {k: mib / v for k, v in floors.items() if v > 0}
low = min(rates, key=rates.get)
print(f"(f) {f.get('mib_s', 0):.1f} MiB/s; dd {rates.get('dd', 0):.1f}, sha3-256 "
      f"{rates.get('sha3-256', 0):.1f} MiB/s; {100 * f.get('mib_s', 0) / rates[low]:.1f}% of {low}")
EOF
  exit 0
fi

# --- (g) small one-shot uploads ----------------------------------------------------------------
log "(g) one-shot uploads of $SMALL_BYTES-byte files, $SMALL clients"
export BENCH_TOKEN=$TOKEN BENCH_FOLDER_ID=$SMALL_FOLDER BENCH_SMALL_BYTES=$SMALL_BYTES
head -c "$SMALL_BYTES" /dev/urandom >"$WORK/preflight.bin"
code=$(curl -sS -o "$WORK/preflight-g.json" -w '%{http_code}' --max-time 60 -H "$AUTH" \
  -H "$VERSION_HEADER" -F "body=@$WORK/preflight.bin" "$BASE/rest/folders/$SMALL_FOLDER/actions/file" || true)
info "preflight (g): HTTP $code"
[[ $code == 200 ]] || NOTES+=("preflight (g) answered HTTP $code instead of 200: $(head -c 200 "$WORK/preflight-g.json" | tr -d '\n|`')")
G_URL=$BASE/rest/folders/$SMALL_FOLDER/actions/file
if ((WARMUP > 0)); then
  BENCH_SMALL_PREFIX=w wrk -t "$SMALL" -c "$SMALL" -d "${WARMUP}s" --timeout "$TIMEOUT" \
    -s "$HERE/upload.lua" "$G_URL" >"$OUT/content-g.warmup.log" 2>&1 || true
fi
info "wrk -t $SMALL -c $SMALL -d ${SECS}s --timeout $TIMEOUT --latency -s upload.lua $G_URL"
BENCH_SMALL_PREFIX=s wrk -t "$SMALL" -c "$SMALL" -d "${SECS}s" --timeout "$TIMEOUT" --latency \
  -s "$HERE/upload.lua" "$G_URL" >"$OUT/content-g.txt" 2>&1 || info "wrk exited with $? for (g)"
grep -E 'Requests/sec|Non-2xx|Socket errors|^ +(50|99)%|BENCH_' "$OUT/content-g.txt" | sed 's/^ */    | /' || true

# --- (h) download against nginx ----------------------------------------------------------------
log "(h) downloads of $UPLOAD_MIB MiB: nginx and cofferd, $REPS each, alternating"
NGX=$WORK/nginx
mkdir -p "$NGX/tmp"
NGINX_PORT=$(spare_port)
cat >"$NGX/nginx.conf" <<EOF
# scripts/bench-content.sh: one process, one file, loopback only.
daemon off;
master_process off;
worker_processes 1;
pid $NGX/nginx.pid;
error_log $NGX/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  client_body_temp_path $NGX/tmp;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location = /large.bin { alias $SRC; }
    location / { return 404; }
  }
}
EOF
"$NGINX" -e "$NGX/error.log" -p "$NGX/" -c "$NGX/nginx.conf" >"$OUT/content-nginx.log" 2>&1 &
NGINX_PID=$!
NGINX_URL=http://127.0.0.1:$NGINX_PORT/large.bin
if ! wait_http "http://127.0.0.1:$NGINX_PORT/" 30 "$NGINX_PID"; then
  cat "$OUT/content-nginx.log" "$NGX/error.log" >&2 2>/dev/null || true
  die "nginx did not answer on $NGINX_URL"
fi
info "nginx pid $NGINX_PID on 127.0.0.1:$NGINX_PORT"

# download SERVER REP URL CURL_ARGS...: one `curl -o /dev/null`; appends
# "SERVER REP HTTP BYTES SECONDS" to $OUT/content-h.txt.
download() {
  local server=$1 rep=$2 url=$3 line
  shift 3
  line=$(curl -sS -o /dev/null --max-time 900 -w '%{http_code} %{size_download} %{time_total}' "$@" "$url" || true)
  [[ -n $line ]] || line="000 0 0"
  printf '%s %s %s\n' "$server" "$rep" "$line" >>"$OUT/content-h.txt"
  info "$server #$rep: HTTP, bytes, seconds: $line"
}
: >"$OUT/content-h.txt"
for ((r = 1; r <= REPS; r++)); do
  download nginx "$r" "$NGINX_URL"
  if [[ -n $FILE_ID ]]; then
    download cofferd "$r" "$BASE/rest/files/$FILE_ID/content" -H "$AUTH" -H "$VERSION_HEADER"
  fi
done
stop_pid "$NGINX_PID" nginx
NGINX_PID=""

# --- (j) read ----------------------------------------------------------------------------------
HWM_KB=$(vm VmHWM)
RSS_AFTER_KB=$(vm VmRSS)
info "(j) cofferd VmHWM $HWM_KB kB over (f)-(h); VmRSS now $RSS_AFTER_KB kB (anonymous $(vm RssAnon) kB, files $(vm RssFile) kB); $(ls /proc/$COFFERD_PID/task | wc -l) threads"

# --- (i) listing -------------------------------------------------------------------------------
log "(i) listing: seed $ENTRIES files of $SMALL_BYTES bytes, then GET children?limit=$ENTRIES"
if ! python3 "$HERE/content.py" seed --base "$BASE" --token "$TOKEN" --folder "$LIST_FOLDER" \
  --count "$ENTRIES" --size "$SMALL_BYTES" --threads 4 --out "$OUT/content-seed.json"; then
  NOTES+=("(i) seeding the folder failed; see bench-out/content-seed.json")
fi
# The seeded files start background work of their own (text extraction for search, the activity
# log's upkeep); the listing is measured once cofferd is idle again (under 5% of a core over a
# second, for at most 180 s), so (i) is the listing's latency, not that of a busy indexer.
w=$(wait_idle "$COFFERD_PID" 180)
info "(i) cofferd idle after ${w} s of background work from the seeding"
I_URL="$BASE/rest/folders/$LIST_FOLDER/children?limit=$ENTRIES"
code=$(curl -sS -o "$WORK/preflight-i.json" -w '%{http_code}' --max-time 60 -H "$AUTH" \
  -H "$VERSION_HEADER" "$I_URL" || true)
got=$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(len(d.get("data", [])), d.get("metadata", {}).get("total"))' "$WORK/preflight-i.json" 2>/dev/null || echo "not JSON")
I_BYTES=$(stat -c %s "$WORK/preflight-i.json" 2>/dev/null || echo 0)
if [[ $code == 200 && $got == "$ENTRIES $ENTRIES" ]]; then
  info "preflight (i): HTTP 200, $ENTRIES entries, $I_BYTES bytes"
else
  info "preflight (i): HTTP $code, entries/total '$got', expected '$ENTRIES $ENTRIES'"
  NOTES+=("preflight (i) answered HTTP $code with entries/total '$got' instead of '$ENTRIES $ENTRIES'")
fi
if ((WARMUP > 0)); then
  wrk -t "$LIST_THREADS" -c "$CONNS" -d "${WARMUP}s" --timeout "$TIMEOUT" -H "$AUTH" -H "$VERSION_HEADER" \
    "$I_URL" >"$OUT/content-i.warmup.log" 2>&1 || true
fi
info "wrk -t $LIST_THREADS -c $CONNS -d ${SECS}s --timeout $TIMEOUT --latency $I_URL"
wrk -t "$LIST_THREADS" -c "$CONNS" -d "${SECS}s" --timeout "$TIMEOUT" --latency -H "$AUTH" \
  -H "$VERSION_HEADER" "$I_URL" >"$OUT/content-i.txt" 2>&1 || info "wrk exited with $? for (i)"
grep -E 'Requests/sec|Non-2xx|Socket errors|^ +(50|99)%' "$OUT/content-i.txt" | sed 's/^ */    | /' || true

if ! kill -0 "$COFFERD_PID" 2>/dev/null; then
  NOTES+=("cofferd was no longer running after the runs; see bench-out/content-cofferd.log")
fi
stop_pid "$COFFERD_PID" cofferd
COFFERD_PID=""

# --- results -----------------------------------------------------------------------------------
log "results: $OUT/content.json"
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo "no commit")
DIRTY=0
if [[ -n $(git status --porcelain --untracked-files=no 2>/dev/null || true) ]]; then DIRTY=1; fi
export C_DATE C_NPROC C_CPU C_MEM C_KERNEL C_COMMIT C_DIRTY C_BIN C_BUILD C_ENV C_WRK C_NGINX \
  C_CURL C_FS C_FS_SOURCE C_SECS C_WARMUP C_CONNS C_LIST_THREADS C_TIMEOUT C_UPLOAD C_CHUNK C_SMALL \
  C_SMALL_BYTES C_ENTRIES C_LIST_BYTES C_REPS C_UPLOAD_ROUNDS C_DD_SECS C_DIGEST_SECS C_HWM C_HWM_RESET C_RSS_BEFORE \
  C_RSS_AFTER C_QUOTA C_MAX_UPLOAD C_NOTES
C_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
C_NPROC=$(nproc)
C_CPU=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
C_MEM=$(awk '/^MemTotal:/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
C_KERNEL=$(uname -r)
C_COMMIT=$COMMIT C_DIRTY=$DIRTY C_BIN=$BIN C_BUILD=$BUILD C_ENV=$COFFERD_EXTRA_ENV C_WRK=$WRK_VERSION
C_NGINX=$NGINX_VERSION C_CURL=$CURL_VERSION C_FS=$FS_TYPE C_FS_SOURCE=$FS_SOURCE C_SECS=$SECS
C_WARMUP=$WARMUP C_CONNS=$CONNS C_LIST_THREADS=$LIST_THREADS C_TIMEOUT=$TIMEOUT C_UPLOAD=$UPLOAD_MIB C_CHUNK=$CHUNK_MIB
C_SMALL=$SMALL C_SMALL_BYTES=$SMALL_BYTES C_ENTRIES=$ENTRIES C_LIST_BYTES=$I_BYTES C_REPS=$REPS
C_UPLOAD_ROUNDS=$UPLOAD_ROUNDS
C_DD_SECS=$DD_SECS C_DIGEST_SECS=$DIGEST_SECS C_HWM=${HWM_KB:-0} C_HWM_RESET=$HWM_RESET C_RSS_BEFORE=${RSS_BEFORE_KB:-0}
C_RSS_AFTER=${RSS_AFTER_KB:-0} C_QUOTA=$QUOTA C_MAX_UPLOAD=$MAX_UPLOAD
C_NOTES=$(printf '%s\n' "${NOTES[@]+"${NOTES[@]}"}")
python3 - "$OUT" <<'EOF'
import json, os, sys
e = os.environ
out = sys.argv[1]


def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


rounds = []
with open(os.path.join(out, "content-f-rounds.txt")) as f:
    for line in f:
        p = line.split()
        if len(p) == 4:
            rounds.append({"round": int(p[0]), "dd_seconds": float(p[1]),
                           "digest_seconds": float(p[2]),
                           "upload_seconds": None if p[3] == "failed" else float(p[3])})
downloads = []
with open(os.path.join(out, "content-h.txt")) as f:
    for line in f:
        p = line.split()
        if len(p) == 5:
            downloads.append({"server": p[0], "rep": int(p[1]), "http": p[2], "bytes": int(p[3]),
                              "seconds": float(p[4])})
result = {
    "date": e["C_DATE"], "nproc": int(e["C_NPROC"]), "cpu_model": e["C_CPU"] or "unknown CPU",
    "mem_total": e["C_MEM"], "kernel": e["C_KERNEL"], "commit": e["C_COMMIT"],
    "dirty": e["C_DIRTY"] == "1", "cofferd_bin": e["C_BIN"], "build": e["C_BUILD"],
    "cofferd_env": e["C_ENV"], "wrk_version": e["C_WRK"], "nginx_version": e["C_NGINX"],
    "curl_version": e["C_CURL"], "fs_type": e["C_FS"], "fs_source": e["C_FS_SOURCE"],
    "seconds": int(e["C_SECS"]), "warmup": int(e["C_WARMUP"]), "connections": int(e["C_CONNS"]), "list_threads": int(e["C_LIST_THREADS"]),
    "timeout": e["C_TIMEOUT"], "upload_mib": int(e["C_UPLOAD"]), "chunk_mib": int(e["C_CHUNK"]),
    "small_clients": int(e["C_SMALL"]), "small_bytes": int(e["C_SMALL_BYTES"]),
    "list_entries": int(e["C_ENTRIES"]), "list_bytes": int(e["C_LIST_BYTES"]),
    "download_reps": int(e["C_REPS"]), "upload_round_count": int(e["C_UPLOAD_ROUNDS"]),
    "storage_quota": int(e["C_QUOTA"]),
    "max_upload_size": int(e["C_MAX_UPLOAD"]),
    "dd": {"bytes": int(e["C_UPLOAD"]) * 1048576, "seconds": float(e["C_DD_SECS"])},
    "digests": {"bytes": int(e["C_UPLOAD"]) * 1048576, "seconds": float(e["C_DIGEST_SECS"])},
    "upload": load("content-f.json"),
    "upload_rounds": rounds,
    "downloads": downloads,
    "seed": load("content-seed.json"),
    "vmhwm_kb": int(e["C_HWM"] or 0), "vmhwm_reset": e["C_HWM_RESET"] == "1",
    "vmrss_before_kb": int(e["C_RSS_BEFORE"] or 0), "vmrss_after_kb": int(e["C_RSS_AFTER"] or 0),
    "notes": [n for n in e["C_NOTES"].splitlines() if n.strip()],
}
with open(os.path.join(out, "content.json"), "w") as f:
    json.dump(result, f, indent=1)
EOF

if [[ ${BENCH_CONTENT_REPORT:-1} == 0 ]]; then
  info "BENCH_CONTENT_REPORT=0: $REPORT left to scripts/bench.sh"
  exit 0
fi
log "report: the content section of $REPORT"
strict=()
if [[ ${BENCH_STRICT:-} == 1 ]]; then strict=(--strict); fi
python3 "$HERE/report.py" --content-only --runs "$OUT" --out "$REPORT" "${strict[@]+"${strict[@]}"}"
