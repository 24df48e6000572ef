#!/usr/bin/env bash
# Coffer's external-sources benchmark (not a test); scripts/bench.sh (`just bench`) runs it after
# the SFTP benchmark, and it runs alone too:
#
#   scripts/bench-sources.sh
#
# A fresh cofferd on SQLite (COFFER_SOURCES_ALLOW_PRIVATE=true: the WebDAV server is on
# loopback) and a WebDAV server on loopback, HTTP Basic: by default Apache httpd with mod_dav_fs
# (scripts/apache-dav-test-server.sh), else WsgiDAV (scripts/webdav-test-server.sh) with
# BENCH_SOURCES_DAV=wsgidav. The script runs itself again inside that script's `run --`, which
# stops the server afterwards. A user adds the WebDAV server as a source over REST with its
# login. Apache is the default because (t2) measures the listing with the remote PROPFIND
# included, and WsgiDAV alone needs seconds (p99) for a PROPFIND of 1,000 entries at 8 clients:
# against it, (t2) measures Python rather than Coffer.
# Runs:
#   (t1) one BENCH_SOURCES_MIB file transferred from the WebDAV server into the user's My Folder
#        (`POST /rest/sources/{id}/actions/initiateDownload`, then `transferStatus` polled until
#        `status` 2; timed from the request to the completed status) against `curl -o /dev/null`
#        of the same file from the same server, BENCH_SOURCES_REPS times each, alternating; the
#        best of each counts. The stored file's size and SHA3-256 fingerprint are checked.
#        Target: cofferd >= 60% of curl's MiB/s. The transfer fingerprints every byte (SHA3-256
#        and MD5), so the same rounds also time `openssl dgst -sha3-256` of the file (from the
#        page cache): one SHA3-256 stream's rate on this host at this moment, the most any
#        transfer can reach, reported beside curl's.
#   (t2) `GET /rest/sources/{id}/children?limit=1000` of a source folder of 1,000 files,
#        `wrk -t 2 -c 8 --latency -d BENCH_SECONDS` after a warm-up. Nothing caches a remote
#        listing: every request is a PROPFIND (Depth: 1) on the WebDAV server.
#        Target: p99 < 100 ms. The same PROPFIND is also run straight against the WebDAV server
#        at the same load, to show the remote's own share.
#   (t3) cofferd's peak RSS (VmHWM, reset before (t1), read after it). Target: < 150 MB.
# It rewrites the "External sources" section of docs/benchmarks.md (BENCH_REPORT), from its
# heading to the end marker it writes, and leaves the rest of the page as it is.
#
# Environment (all optional):
#   BENCH_SOURCES_MIB=1024   size of the (t1) file, MiB (TMPDIR needs 2x free per run, + 1x)
#   BENCH_SOURCES_REPS=2     runs of (t1) on each side; the best counts
#   BENCH_SOURCES_ENTRIES=1000  files in the (t2) folder
#   BENCH_SOURCES_DAV=apache  the WebDAV server: `apache` (Apache httpd, mod_dav_fs) or `wsgidav`
#   BENCH_SECONDS=10 BENCH_WARMUP=2   (t2)'s measured run and warm-up
#   BENCH_SKIP_BUILD=1       use the existing release binary;  COFFERD_BIN=path  use that binary
#   CARGO_TARGET_DIR         default /var/tmp/coffer-target (as .ci/run; the WebDAV server's
#                            virtual environment is kept there too)
#   BENCH_OUT=./bench-out    logs and sources.json;  BENCH_REPORT=docs/benchmarks.md
#   BENCH_STRICT=1           exit 1 when a target is missed
#   BENCH_KEEP=1             keep the temporary directory
#   TMPDIR                   the temporary directories' parent: the disk both servers use
#
# Installs what it needs when missing (as root): curl, wrk, python3, openssl (and apache2 through
# scripts/apache-dav-test-server.sh, or python3-venv through
# scripts/webdav-test-server.sh). Everything it starts is stopped on exit, by the PIDs recorded.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BENCH_NAME=bench-sources
# shellcheck source=bench/lib.sh
source "$ROOT/scripts/bench/lib.sh"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/coffer-target}
MIB=${BENCH_SOURCES_MIB:-1024}
REPS=${BENCH_SOURCES_REPS:-2}
ENTRIES=${BENCH_SOURCES_ENTRIES:-1000}
SECS=${BENCH_SECONDS:-10}
WARMUP=${BENCH_WARMUP:-2}
OUT=${BENCH_OUT:-$ROOT/bench-out}
REPORT=${BENCH_REPORT:-$ROOT/docs/benchmarks.md}
BIN=${COFFERD_BIN:-$CARGO_TARGET_DIR/release/cofferd}
is_uint "$MIB" && ((MIB >= 1)) || die "BENCH_SOURCES_MIB must be a number of MiB, at least 1"
is_uint "$REPS" && ((REPS >= 1 && REPS <= 10)) || die "BENCH_SOURCES_REPS must be 1..10"
is_uint "$ENTRIES" && ((ENTRIES >= 1 && ENTRIES <= 10000)) ||
  die "BENCH_SOURCES_ENTRIES must be 1..10000"
is_uint "$SECS" && ((SECS >= 1)) || die "BENCH_SECONDS must be at least 1"
is_uint "$WARMUP" || die "BENCH_WARMUP must be a number of seconds"

# --- tools (before the WebDAV server, which needs python3) --------------------------------------
if [[ -z ${BENCH_SOURCES_INNER:-} ]]; then
  log "tools"
  need=()
  command -v curl >/dev/null 2>&1 || need+=(curl ca-certificates)
  command -v wrk >/dev/null 2>&1 || need+=(wrk)
  command -v python3 >/dev/null 2>&1 || need+=(python3)
  command -v openssl >/dev/null 2>&1 || need+=(openssl)
  if ((${#need[@]})); then
    info "installing with apt: ${need[*]}"
    apt_install "${need[@]}"
  fi
  if [[ -n ${COFFERD_BIN:-} || ${BENCH_SKIP_BUILD:-} == 1 ]]; then
    log "cofferd: using $BIN (no build)"
  else
    log "cofferd: cargo build --release -p cofferd (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
    cargo build --release -p cofferd
  fi
  [[ -x $BIN ]] || die "no cofferd binary at $BIN"
  case ${BENCH_SOURCES_DAV:-apache} in
    apache) dav_script=apache-dav-test-server.sh ;;
    wsgidav) dav_script=webdav-test-server.sh ;;
    *) die "BENCH_SOURCES_DAV must be apache or wsgidav" ;;
  esac
  log "WebDAV server: scripts/$dav_script"
  COFFERD_BIN=$BIN BENCH_SOURCES_INNER=1 exec "$ROOT/scripts/$dav_script" run -- \
    "$ROOT/scripts/bench-sources.sh"
fi
[[ -n ${COFFER_TEST_WEBDAV_URL:-} && -d ${COFFER_TEST_WEBDAV_ROOT:-} ]] ||
  die "no WebDAV server (run without BENCH_SOURCES_INNER)"
DAV_URL=$COFFER_TEST_WEBDAV_URL
DAV_ROOT=$COFFER_TEST_WEBDAV_ROOT
DAV_USER=$COFFER_TEST_WEBDAV_USER
DAV_PASSWORD=$COFFER_TEST_WEBDAV_PASSWORD
WRK_VERSION=$(wrk -v 2>&1 | head -n 1 | sed 's/ Copyright.*//' || true)
CURL_VERSION=$(curl --version | head -n 1 | cut -d' ' -f1-2)
if [[ ${COFFER_TEST_WEBDAV_SERVER:-} == apache ]]; then
  DAV_NAME="Apache httpd $(/usr/sbin/apache2 -v 2>/dev/null | sed -n 's|^Server version: Apache/\([^ ]*\).*|\1|p') with mod_dav_fs, of \`scripts/apache-dav-test-server.sh\`"
else
  DAV_NAME="$(grep -o 'wsgidav==[0-9.]*' "$ROOT/scripts/webdav-test-server.sh" | head -n 1) on cheroot, of \`scripts/webdav-test-server.sh\`"
fi

BENCH_EMAIL=sources-bench@example.com
BENCH_PASSWORD='Bench-Passw0rd!'
VERSION_HEADER='X-Coffer-Version: 28'

WORK=""
COFFERD_PID=""
# shellcheck disable=SC2317  # invoked by trap
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pid "$COFFERD_PID" cofferd
  if [[ -n $WORK && -d $WORK ]]; then
    if [[ ${BENCH_KEEP:-} == 1 ]]; then info "kept $WORK"; else rm -rf -- "$WORK"; fi
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-bench-sources.XXXXXX")
chmod 700 "$WORK"
mkdir -p "$OUT"
rm -f "$OUT"/sources.json "$OUT"/sources-*.log "$OUT"/sources-*.txt

# --- the data, on the WebDAV server -------------------------------------------------------------
log "data: one file of $MIB MiB and a folder of $ENTRIES files on the WebDAV server"
mkdir -p "$DAV_ROOT/bench/list"
BIG=$DAV_ROOT/bench/big.bin
head -c "$((MIB * 1024 * 1024))" /dev/urandom >"$BIG"
BIG_SHA3=$(python3 -c 'import hashlib,sys
h = hashlib.sha3_256()
with open(sys.argv[1], "rb") as f:
    for b in iter(lambda: f.read(1 << 20), b""):
        h.update(b)
print(h.hexdigest())' "$BIG")
for ((i = 1; i <= ENTRIES; i++)); do printf 'entry %d\n' "$i" >"$DAV_ROOT/bench/list/f$i.txt"; done

# --- cofferd ------------------------------------------------------------------------------------
DATA=$WORK/data
mkdir -p "$DATA"
PORT=$(spare_port)
BASE=http://127.0.0.1:$PORT
COFFERD_ENV=(env -u COFFER_DATABASE_URL RUST_LOG=warn COFFER_LISTEN="127.0.0.1:$PORT"
  COFFER_BASE_URL="$BASE" COFFER_SOURCES_ALLOW_PRIVATE=true)
# cli ARGS...: one operator command on the data directory; its output in $WORK/cli.out.
cli() {
  "${COFFERD_ENV[@]}" "$BIN" --data-dir "$DATA" "$@" >"$WORK/cli.out" 2>>"$OUT/sources-cli.log" ||
    {
      cat "$OUT/sources-cli.log" "$WORK/cli.out" >&2
      die "cofferd $1 $2 failed"
    }
}
log "cofferd: settings, a user, a client"
cli settings set storageQuota "$((1024 * 1024 * 1048576))"
MAX_UPLOAD=$((MIB * 1048576 + 1073741824))
cli settings set maxUploadSize "$MAX_UPLOAD"
cli user create --email "$BENCH_EMAIL" --name Bench --password "$BENCH_PASSWORD"
cli client create --name sources-bench --redirect-uri http://127.0.0.1/cb --scope '*' \
  --flows password
cp "$WORK/cli.out" "$WORK/client.json"

log "cofferd: serve on $BASE (data dir $DATA)"
"${COFFERD_ENV[@]}" "$BIN" --data-dir "$DATA" serve >"$OUT/sources-cofferd.log" 2>&1 &
COFFERD_PID=$!
if ! wait_http "$BASE/health" 60 "$COFFERD_PID"; then
  tail -n 30 "$OUT/sources-cofferd.log" >&2 || true
  die "cofferd did not answer on $BASE/health"
fi
code=$(curl -sS -o "$WORK/grant.json" -w '%{http_code}' --max-time 30 "$BASE/oauth/token" \
  --data-urlencode grant_type=password --data-urlencode "username=$BENCH_EMAIL" \
  --data-urlencode "password=$BENCH_PASSWORD" \
  --data-urlencode "client_id=$(json_get "$WORK/client.json" client_id)" \
  --data-urlencode "client_secret=$(json_get "$WORK/client.json" client_secret)")
[[ $code == 200 ]] || die "password grant: HTTP $code $(head -c 300 "$WORK/grant.json")"
AUTH="Authorization: Bearer $(json_get "$WORK/grant.json" access_token)"

# rest METHOD PATH WANT [CURL ARGS...]: one REST call; its body in $WORK/answer.json.
rest() {
  local method=$1 path=$2 want=$3 code
  shift 3
  code=$(curl -sS -o "$WORK/answer.json" -w '%{http_code}' --max-time 60 -X "$method" \
    -H "$AUTH" -H "$VERSION_HEADER" "$@" "$BASE$path" || true)
  [[ $code == "$want" ]] || die "$method $path: HTTP $code, expected $want: $(head -c 300 "$WORK/answer.json")"
}
# id_of SOURCE PATH: a source entry's id, base64url(source ":" path) without padding.
id_of() {
  python3 -c 'import base64,sys; print(base64.urlsafe_b64encode(("%s:%s" % (sys.argv[1], sys.argv[2])).encode()).decode().rstrip("="))' "$1" "$2"
}

log "cofferd: the WebDAV server as a source"
python3 -c 'import json,sys; print(json.dumps({"name": "bench", "sourceUrl": sys.argv[1], "sourceTypeId": "1", "username": sys.argv[2], "password": sys.argv[3]}))' \
  "$DAV_URL" "$DAV_USER" "$DAV_PASSWORD" >"$WORK/source.json"
rest POST /rest/sources 201 -H 'Content-Type: application/json' --data-binary "@$WORK/source.json"
SOURCE=$(json_get "$WORK/answer.json" id)
BIG_ID=$(id_of "$SOURCE" bench/big.bin)
LIST_ID=$(id_of "$SOURCE" bench/list)
rest GET "/rest/sources/files/$BIG_ID" 200
info "source $SOURCE; the file's size as listed: $(json_get "$WORK/answer.json" size)"

vm() { proc_status "$COFFERD_PID" "$1"; }
NOTES=()
echo 5 2>/dev/null >"/proc/$COFFERD_PID/clear_refs" ||
  NOTES+=("could not reset cofferd's VmHWM (clear_refs): (t3) is the peak since its start")
info "cofferd VmRSS $(vm VmRSS) kB before (t1)"

now() { date +%s.%N; }
elapsed() { python3 -c 'import sys; print("%.3f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$1" "$2"; }

# transfer: the seconds from initiateDownload to `status` 2; the file's id in $WORK/handle.
transfer() {
  local start tx status answer i
  start=$(now)
  rest POST "/rest/sources/$BIG_ID/actions/initiateDownload" 200
  tx=$(json_get "$WORK/answer.json" transactionId)
  for ((i = 0; i < 120000; i++)); do
    rest GET "/rest/sources/files/actions/transferStatus?transactionId=$tx" 200
    answer=$(python3 -c 'import json,sys; t = json.load(open(sys.argv[1]))["data"][0]; print(t["status"], t["errCode"], t["fileHandle"])' "$WORK/answer.json")
    read -r status err handle <<<"$answer"
    if [[ $status == 2 ]]; then
      elapsed "$start" "$(now)"
      printf '%s\n' "$handle" >"$WORK/handle"
      return 0
    fi
    [[ $status == 99 ]] && die "the transfer failed with errCode $err"
    sleep 0.02
  done
  die "the transfer did not complete"
}
# floor: the seconds one SHA3-256 stream takes over the file (OpenSSL, as cofferd's).
floor() {
  local start
  start=$(now)
  openssl dgst -sha3-256 "$BIG" >/dev/null || die "openssl dgst -sha3-256 failed"
  elapsed "$start" "$(now)"
}
# fetch: the seconds curl takes to read the file from the WebDAV server.
fetch() {
  local start
  start=$(now)
  curl -sS -f -o /dev/null -u "$DAV_USER:$DAV_PASSWORD" "${DAV_URL}bench/big.bin" ||
    die "curl of the file from the WebDAV server failed"
  elapsed "$start" "$(now)"
}

T_COFFER="" T_CURL="" T_SHA3=""
for ((r = 1; r <= REPS; r++)); do
  log "(t1) run $r of $REPS"
  t=$(fetch)
  info "curl: ${t}s"
  T_CURL=$(best "$T_CURL" "$t")
  t=$(transfer)
  info "cofferd transfer: ${t}s"
  T_COFFER=$(best "$T_COFFER" "$t")
  t=$(floor)
  info "openssl dgst -sha3-256: ${t}s"
  T_SHA3=$(best "$T_SHA3" "$t")
done
HWM_KB=$(vm VmHWM)
info "(t3) cofferd VmHWM ${HWM_KB:-?} kB over (t1)"

# The stored file is the remote file: its size and its SHA3-256.
rest GET "/rest/files/$(cat "$WORK/handle")" 200
python3 - "$WORK/answer.json" "$((MIB * 1048576))" "$BIG_SHA3" <<'EOF' || die "the stored file is not the remote file"
import json, sys
f = json.load(open(sys.argv[1]))
sha3 = [p["hash"] for p in f.get("fingerprints", []) if p["algo"] == "sha3-256"]
if int(f["size"]) != int(sys.argv[2]) or sha3 != [sys.argv[3]]:
    print("size %s, sha3 %s; expected %s, %s" % (f["size"], sha3, sys.argv[2], sys.argv[3]), file=sys.stderr)
    sys.exit(1)
EOF
info "the stored file has the remote file's size and SHA3-256"

# --- (t2) the listing ---------------------------------------------------------------------------
log "(t2) GET /rest/sources/{id}/children of $ENTRIES files"
L_URL="$BASE/rest/sources/$LIST_ID/children?limit=$ENTRIES"
rest GET "/rest/sources/$LIST_ID/children?limit=$ENTRIES" 200
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["data"]))' "$WORK/answer.json")
((n == ENTRIES)) || die "the listing shows $n of the $ENTRIES files"
if ((WARMUP > 0)); then
  wrk -t 2 -c 8 -d "${WARMUP}s" --timeout 10s -H "$AUTH" -H "$VERSION_HEADER" "$L_URL" \
    >"$OUT/sources-t2.warmup.log" 2>&1 || true
fi
info "wrk -t 2 -c 8 -d ${SECS}s --timeout 10s --latency $L_URL"
wrk -t 2 -c 8 -d "${SECS}s" --timeout 10s --latency -H "$AUTH" -H "$VERSION_HEADER" "$L_URL" \
  >"$OUT/sources-t2.txt" 2>&1 || info "wrk exited with $? for (t2)"
grep -E 'Requests/sec|Non-2xx|Socket errors|^ +(50|99)%' "$OUT/sources-t2.txt" | sed 's/^ */    | /' || true
kill -0 "$COFFERD_PID" 2>/dev/null || NOTES+=("cofferd was no longer running after (t2)")
# The floor: the same PROPFIND (the properties Coffer asks for) straight to the WebDAV server.
DAV_BASIC=$(printf '%s:%s' "$DAV_USER" "$DAV_PASSWORD" | base64 -w0)
cat >"$WORK/propfind.lua" <<LUA
wrk.method = "PROPFIND"
wrk.headers["Depth"] = "1"
wrk.headers["Content-Type"] = "application/xml; charset=utf-8"
wrk.headers["Authorization"] = "Basic $DAV_BASIC"
wrk.body = '<?xml version="1.0" encoding="utf-8"?><D:propfind xmlns:D="DAV:"><D:prop><D:resourcetype/><D:getcontentlength/><D:getlastmodified/><D:creationdate/><D:getetag/></D:prop></D:propfind>'
LUA
info "wrk -t 2 -c 8 -d ${SECS}s --timeout 10s --latency -s propfind.lua ${DAV_URL}bench/list/"
wrk -t 2 -c 8 -d "${SECS}s" --timeout 10s --latency -s "$WORK/propfind.lua" "${DAV_URL}bench/list/" \
  >"$OUT/sources-t2-webdav.txt" 2>&1 || info "wrk exited with $? for the WebDAV server's own listing"
grep -E 'Requests/sec|Non-2xx|Socket errors|^ +(50|99)%' "$OUT/sources-t2-webdav.txt" | sed 's/^ */    | /' || true
stop_pid "$COFFERD_PID" cofferd
COFFERD_PID=""

# --- report -------------------------------------------------------------------------------------
log "report"
export S_DATE S_NPROC S_CPU S_MEM S_KERNEL S_COMMIT S_MIB S_REPS S_ENTRIES S_SECS S_WARMUP \
  S_HWM S_NOTES S_TC S_TU S_TS S_OPENSSL S_WRK S_CURL S_DAV S_T2 S_T2DAV S_BUILD
S_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
S_NPROC=$(nproc)
S_CPU=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
S_MEM=$(awk '/^MemTotal:/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
S_KERNEL=$(uname -r)
S_OPENSSL=$(openssl version | cut -d' ' -f1-2)
S_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo "no commit")
S_MIB=$MIB S_REPS=$REPS S_ENTRIES=$ENTRIES S_SECS=$SECS S_WARMUP=$WARMUP
S_HWM=${HWM_KB:-0}
S_NOTES=$(printf '%s\n' "${NOTES[@]+"${NOTES[@]}"}")
S_TC=$T_COFFER S_TU=$T_CURL S_TS=$T_SHA3 S_WRK=$WRK_VERSION S_CURL=$CURL_VERSION S_DAV=$DAV_NAME
S_T2=$OUT/sources-t2.txt S_T2DAV=$OUT/sources-t2-webdav.txt
if [[ $BIN == "$CARGO_TARGET_DIR/release/cofferd" ]]; then
  S_BUILD="release build$(profile_overrides)"
else
  S_BUILD="the binary \`$BIN\`"
  NOTES+=("cofferd was not the release build of this checkout: $BIN")
  S_NOTES=$(printf '%s\n' "${NOTES[@]}")
fi
strict=0
if [[ ${BENCH_STRICT:-} == 1 ]]; then strict=1; fi
PYTHONPATH="$ROOT/scripts/bench" python3 - "$OUT/sources.json" "$REPORT" "$strict" <<'EOF'
import json, os, re, sys
from section import write_section

e = os.environ
out, report, strict = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
mib, entries = int(e["S_MIB"]), int(e["S_ENTRIES"])
t_coffer, t_curl, t_sha3 = float(e["S_TC"]), float(e["S_TU"]), float(e["S_TS"])
rate = lambda s: mib / s if s > 0 else 0.0
coffer, curl, sha3 = rate(t_coffer), rate(t_curl), rate(t_sha3)
ratio = coffer / curl if curl > 0 else 0.0
of_floor = coffer / sha3 if sha3 > 0 else 0.0
hwm_mb = int(e["S_HWM"] or 0) * 1024 / 1e6


def ms(v, unit):
    return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def wrk_run(path):
    text = open(path).read() if os.path.exists(path) else ""
    lat = dict((p, ms(v, u)) for p, v, u in re.findall(r"^\s+(50|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s|m)\s*$", text, re.M))
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    return lat, float(rps.group(1)) if rps else 0.0, int(bad.group(1)) if bad else 0, re.search(r"Socket errors:.*", text)


lat, rps, bad, sock = wrk_run(e["S_T2"])
dav_lat, dav_rps, dav_bad, _ = wrk_run(e["S_T2DAV"])
p99 = lat.get("99")
fmt = lambda v: "%.2f" % v if v is not None else "?"
met = [
    ("(t1) transfer into Coffer", ratio >= 0.60, "%.0f%% of curl" % (100 * ratio), ">= 60% of curl"),
    ("(t2) listing p99", p99 is not None and p99 < 100 and bad == 0 and not sock,
     ("%.2f ms" % p99 if p99 is not None else "no result") + ("" if bad == 0 else ", %d bad answers" % bad)
     + ("" if not sock else ", socket errors"), "< 100 ms"),
    ("(t3) peak RSS", 0 < hwm_mb < 150, "%.0f MB" % hwm_mb, "< 150 MB"),
]
json.dump({"seconds": {"coffer": t_coffer, "curl": t_curl, "sha3_256": t_sha3}, "mib": mib,
           "mib_s": {"coffer": coffer, "curl": curl, "sha3_256": sha3}, "listing": {"entries": entries,
           "requests_s": rps, "p50_ms": lat.get("50"), "p99_ms": p99, "non_2xx": bad,
           "webdav_requests_s": dav_rps, "webdav_p50_ms": dav_lat.get("50"),
           "webdav_p99_ms": dav_lat.get("99")},
           "vmhwm_mb": hwm_mb, "targets": {n: ok for n, ok, _, _ in met}}, open(out, "w"), indent=1)

# The section runs from its heading to its end marker, as the SFTP one does.
BEGIN, END = "## External sources: transfers from WebDAV and remote listings", "<!-- end of the external sources section -->"
lines = [
    BEGIN,
    "",
    "Written by `scripts/bench-sources.sh` (run by `just bench`, or alone with `BENCH_ONLY=sources`); "
    "the rest of this page is not.",
    "",
    "### External sources run",
    "",
    "- %s, commit %s; %s × %s, %s, Linux %s." % (e["S_DATE"], e["S_COMMIT"], e["S_NPROC"],
        e["S_CPU"] or "unknown CPU", e["S_MEM"], e["S_KERNEL"]),
    "- A WebDAV server (%s, HTTP Basic) and a "
    "fresh cofferd (%s, SQLite, local blob store, `COFFER_SOURCES_ALLOW_PRIVATE=true`), "
    "both on loopback; the server added as a source over REST with its login." % (e["S_DAV"], e["S_BUILD"]),
    "- (t1) one file of %d MiB transferred into the user's My Folder (`initiateDownload`, then "
    "`transferStatus` every 20 ms until `status` 2; from the request to the completed status) "
    "against `%s -o /dev/null` of the same file from the same server; best of %s run(s) each, "
    "alternating. The stored file's size and SHA3-256 are checked against the remote file. "
    "The SHA3-256 floor: `%s dgst -sha3-256` of the same file from the page cache in the same "
    "rounds (best of them), one stream's rate, the most a transfer that fingerprints every byte "
    "can reach." % (mib, e["S_CURL"], e["S_REPS"], e["S_OPENSSL"]),
    "- (t2) `GET /rest/sources/{id}/children?limit=%d` of a folder of %d files, `%s`, "
    "`-t 2 -c 8 -d %ss --latency` after a %ss warm-up. Nothing caches a remote listing: each "
    "request makes one `PROPFIND` on the WebDAV server, whose time is included."
    % (entries, entries, e["S_WRK"], e["S_SECS"], e["S_WARMUP"]),
    "- (t3) cofferd's peak RSS (VmHWM, reset before (t1)) over (t1).",
    "",
    "### External sources results",
    "",
    "| run | cofferd | curl | cofferd / curl |",
    "|---|---|---|---|",
    "| (t1) transfer, MiB/s | %.1f (%.2f s) | %.1f (%.2f s) | %.0f%% |" % (coffer, t_coffer, curl, t_curl, 100 * ratio),
    "| (t1) the SHA3-256 floor, MiB/s | %.1f (%.2f s): the transfer is at %.0f%% of it | | %.0f%% |"
    % (sha3, t_sha3, 100 * of_floor, 100 * sha3 / curl if curl > 0 else 0.0),
    "| (t2) listing of %d entries | %.0f requests/s, p50 %s ms, p99 %s ms | | |"
    % (entries, rps, fmt(lat.get("50")), fmt(p99)),
    "| (t2) the same `PROPFIND` straight to the WebDAV server (wrk, same load) | %.0f requests/s, p50 %s ms, p99 %s ms | | |"
    % (dav_rps, fmt(dav_lat.get("50")), fmt(dav_lat.get("99"))),
    "| (t3) peak RSS | %.0f MB | | |" % hwm_mb,
    "",
    "### External sources targets",
    "",
    "| target | result | met |",
    "|---|---|---|",
]
lines += ["| %s %s | %s | %s |" % (n, want, shown, "yes" if ok else "**no**") for n, ok, shown, want in met]
notes = [n for n in e["S_NOTES"].splitlines() if n.strip()]
if dav_bad:
    notes.append("The WebDAV server's own listing run had %d answers other than 207." % dav_bad)
if curl > 0 and sha3 < 0.60 * curl:
    notes.append("One SHA3-256 stream runs at %.0f%% of curl's rate here: (t1)'s target cannot be "
                 "met on this host while a transfer fingerprints every byte." % (100 * sha3 / curl))
if dav_lat.get("99") is not None and dav_lat["99"] >= 100:
    notes.append("The WebDAV server alone answers the listing in p99 %.0f ms at this load: (t2)'s "
                 "target cannot be met against it, whatever cofferd adds." % dav_lat["99"])
if mib < 1024 or entries < 1000:
    notes.append("A smaller run than the targets are set for (%d MiB, %d entries): the numbers "
                 "show the benchmark works, not what the server does." % (mib, entries))
if notes:
    lines += ["", "Notes:", ""] + ["- " + n for n in notes]
lines.append(END)
section = "\n".join(lines) + "\n"
write_section(report, BEGIN, END, section)
for n, ok, shown, want in met:
    print("    %-26s %-26s %s %s" % (n, shown, want, "ok" if ok else "MISSED"))
if strict and not all(ok for _, ok, _, _ in met):
    sys.exit(1)
EOF
info "wrote $REPORT (external sources section) and $OUT/sources.json"
