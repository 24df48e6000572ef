#!/usr/bin/env bash
# Coffer's SCIM listing benchmark (not a test); scripts/bench.sh (`just bench`) runs it last, and
# it runs alone too:
#
#   scripts/bench-scim.sh
#
# A fresh data directory is seeded with BENCH_SCIM_USERS users by the release binary
# tests/src/bin/scim-bench.rs (no passwords; emails over four domains, some mobile numbers,
# some inactive users, profiles Standard/Restricted, users and helpdesk administrators), which
# also makes the SCIM token. The release cofferd then serves it on 127.0.0.1, as its own process:
#   (h) GET /health                                                     unauthenticated floor
#   (e) GET /rest/scim/Users?filter=userName eq "user4242@example.net"  an identity provider's lookup
#   (s) GET /rest/scim/Users?filter=userName sw "user4242"&count=100    selective filter (11 users)
#   (f) GET /rest/scim/Users?filter=emails[value ew "@example.org"] and active eq true&count=100
#                                                                       broad filter, a full page
# each `wrk -t C -c C -d ${BENCH_SECONDS}s --latency` after a warm-up, and then the memory of a
# listing: cofferd's VmRSS once idle, its VmHWM reset (`echo 5 > /proc/PID/clear_refs`), one
# `GET /rest/scim/Users?count=N` streamed by curl into a JSON check, and VmHWM read again; for
# count=10000 and count=1000000 (every user), on the process of the wrk runs and then each on a
# freshly started cofferd. Target: the peak of the count=1000000 listing less than 100 MiB above
# idle, and flat (not growing with the size of the response).
# Writes docs/benchmarks-scim.md.
#
# Environment (all optional; the same names as scripts/bench.sh):
#   BENCH_SECONDS=10  BENCH_WARMUP=2  BENCH_CONNECTIONS=32  BENCH_COFFERD_ENV=""
#   BENCH_SKIP_BUILD=1      use the existing release binaries;  COFFERD_BIN=path  use that cofferd
#   CARGO_TARGET_DIR        default /var/tmp/coffer-target
#   BENCH_OUT=./bench-out   raw wrk output and logs (scim-*)
#   BENCH_SCIM_USERS=100000 users seeded
#   BENCH_SCIM_SETTLE=3     seconds of quiet before each idle RSS reading
#   BENCH_SCIM_REPORT=docs/benchmarks-scim.md
#   BENCH_STRICT=1          exit 1 when a target check fails or a run had errors
#   BENCH_KEEP=1            keep the temporary directory (data dir, token)
#
# Needs wrk, curl and python3 (installed with apt when missing, as root). Everything it starts
# (cofferd, wrk, curl) talks to 127.0.0.1 only; cofferd is stopped on exit by its recorded PID.
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
USERS=${BENCH_SCIM_USERS:-100000}
SETTLE=${BENCH_SCIM_SETTLE:-3}
COFFERD_EXTRA_ENV=${BENCH_COFFERD_ENV-}
OUT=${BENCH_OUT:-$ROOT/bench-out}
REPORT=${BENCH_SCIM_REPORT:-$ROOT/docs/benchmarks-scim.md}
BIN=${COFFERD_BIN:-$CARGO_TARGET_DIR/release/cofferd}
SEED_BIN=$CARGO_TARGET_DIR/release/scim-bench
LIMIT_MIB=100

BENCH_NAME=bench-scim
# shellcheck source=bench/lib.sh
source "$ROOT/scripts/bench/lib.sh"
if ! is_uint "$SECS" || ((SECS < 1 || SECS > 240)); then die "BENCH_SECONDS must be 1..240"; fi
if ! is_uint "$WARMUP" || ((WARMUP > 60)); then die "BENCH_WARMUP must be 0..60"; fi
if ! is_uint "$CONNS" || ((CONNS < 1 || CONNS > 256)); then die "BENCH_CONNECTIONS must be 1..256"; fi
if ! is_uint "$USERS" || ((USERS < 10000 || USERS > 1000000)); then die "BENCH_SCIM_USERS must be 10000..1000000"; fi
if ! is_uint "$SETTLE" || ((SETTLE > 60)); then die "BENCH_SCIM_SETTLE must be 0..60"; fi

# --- cleanup: only what this script started -------------------------------------------------
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

# --- tools ------------------------------------------------------------------------------------
need=()
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v curl >/dev/null 2>&1 || need+=(curl ca-certificates)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if ((${#need[@]})); then
  log "tools: apt-get install ${need[*]}"
  apt_install "${need[@]}"
fi
WRK_VERSION=$(wrk -v 2>&1 | head -n 1 | sed 's/ Copyright.*//' || true)



# --- binaries -----------------------------------------------------------------------------------
if [[ -n ${COFFERD_BIN:-} || ${BENCH_SKIP_BUILD:-} == 1 ]]; then
  log "cofferd: using $BIN (no build)"
else
  log "cofferd: cargo build --release -p cofferd (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
  cargo build --release -p cofferd
fi
[[ -x $BIN ]] || die "no cofferd binary at $BIN"
if [[ ${BENCH_SKIP_BUILD:-} != 1 ]]; then
  log "scim-bench: cargo build --release -p coffer-tests --bin scim-bench"
  cargo build --release -q -p coffer-tests --bin scim-bench
fi
[[ -x $SEED_BIN ]] || die "no scim-bench binary at $SEED_BIN"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-bench-scim.XXXXXX")
DATA=$WORK/data
mkdir -p "$OUT"
rm -f "$OUT"/scim-*

# --- seed -------------------------------------------------------------------------------------
log "seed: $USERS users into $DATA (scim-bench)"
seed_start=$(date +%s.%N)
"$SEED_BIN" "$DATA" "$USERS" >"$WORK/token" 2>"$OUT/scim-seed.log" ||
  {
    cat "$OUT/scim-seed.log" >&2
    die "scim-bench failed"
  }
seed_end=$(date +%s.%N)
SEED_SECS=$(python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.1f}")' "$seed_start" "$seed_end")
TOKEN=$(tail -n 1 "$WORK/token")
[[ -n $TOKEN ]] || die "scim-bench printed no token"
DB_BYTES=$(stat -c %s "$DATA/coffer.db")
info "$(tail -n 2 "$OUT/scim-seed.log" | head -n 1); database $((DB_BYTES / 1048576)) MiB"

# The figures the checks expect, from the seeding rules of scim-bench.rs.
read -r S_TOTAL F_TOTAL < <(python3 -c 'import sys
n = int(sys.argv[1])
print(sum(1 for i in range(n) if str(i).startswith("4242")),
      sum(1 for i in range(n) if i % 4 == 0 and i % 10 != 8))' "$USERS")
S_ITEMS=$((S_TOTAL < 100 ? S_TOTAL : 100))
F_ITEMS=$((F_TOTAL < 100 ? F_TOTAL : 100))

# --- cofferd ----------------------------------------------------------------------------------
read -r -a EXTRA_ENV <<<"$COFFERD_EXTRA_ENV"
PORT=""
BASE=""
STARTS=0

# start_cofferd: `cofferd serve` on the data directory, on a spare loopback port; sets
# COFFERD_PID and BASE.
start_cofferd() {
  STARTS=$((STARTS + 1))
  PORT=$(spare_port)
  BASE=http://127.0.0.1:$PORT
  log "cofferd: serve on $BASE (data dir $DATA)"
  env -u COFFER_DATABASE_URL RUST_LOG=warn COFFER_LISTEN="127.0.0.1:$PORT" COFFER_BASE_URL="$BASE" \
    "${EXTRA_ENV[@]}" "$BIN" --data-dir "$DATA" serve >"$OUT/scim-cofferd.$STARTS.log" 2>&1 &
  COFFERD_PID=$!
  if ! wait_http "$BASE/health" 60 "$COFFERD_PID"; then
    tail -n 30 "$OUT/scim-cofferd.$STARTS.log" >&2 || true
    die "cofferd did not answer on $BASE/health"
  fi
  info "cofferd pid $COFFERD_PID"
}

start_cofferd

# vm FIELD: cofferd's /proc status field (VmRSS, VmHWM) in kB.
vm() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$COFFERD_PID/status"; }

AUTH="Authorization: Bearer $TOKEN"
E_PATH='/rest/scim/Users?filter=userName%20eq%20%22user4242%40example.net%22'
S_PATH='/rest/scim/Users?filter=userName%20sw%20%22user4242%22&count=100'
F_PATH='/rest/scim/Users?filter=emails%5Bvalue%20ew%20%22%40example.org%22%5D%20and%20active%20eq%20true&count=100'

NOTES=()
# preflight NAME PATH TOTAL ITEMS: one listing with curl, its totalResults and itemsPerPage checked.
preflight() {
  local name=$1 path=$2 total=$3 items=$4 code got
  code=$(curl -sS -o "$WORK/preflight.$name" -w '%{http_code}' --max-time 60 -H "$AUTH" "$BASE$path" || true)
  got=$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(d.get("totalResults"), d.get("itemsPerPage"), len(d.get("Resources", [])))' "$WORK/preflight.$name" 2>/dev/null || echo "not JSON")
  if [[ $code == 200 && $got == "$total $items $items" ]]; then
    info "preflight ($name): HTTP 200, totalResults $total, itemsPerPage $items"
  else
    info "preflight ($name): HTTP $code, got '$got', expected '$total $items $items': $(head -c 300 "$WORK/preflight.$name")"
    NOTES+=("preflight ($name) answered HTTP $code with totalResults/itemsPerPage/resources '$got' instead of '$total $items $items'")
  fi
}

# run_wrk KEY URL ARGS...: a warm-up, then the measured run into $OUT/scim-KEY.txt.
run_wrk() {
  local key=$1 url=$2
  shift 2
  if ((WARMUP > 0)); then
    wrk -t "$THREADS" -c "$CONNS" -d "${WARMUP}s" --timeout "$TIMEOUT" "$@" "$url" >"$OUT/scim-$key.warmup.log" 2>&1 || true
  fi
  info "wrk -t $THREADS -c $CONNS -d ${SECS}s --timeout $TIMEOUT --latency $* $url"
  wrk -t "$THREADS" -c "$CONNS" -d "${SECS}s" --timeout "$TIMEOUT" --latency "$@" "$url" \
    >"$OUT/scim-$key.txt" 2>&1 || info "wrk exited with $? for ($key)"
  grep -E 'Requests/sec|Non-2xx|Socket errors|^ +(50|99)%|BENCH_' "$OUT/scim-$key.txt" | sed 's/^ */    | /' || true
}

export BENCH_SCIM_TOKEN=$TOKEN

log "(h) GET /health"
run_wrk h "$BASE/health"

log "(e) GET /rest/scim/Users, an identity provider's lookup: userName eq \"user4242@example.net\""
preflight e "$E_PATH" 1 1
BENCH_SCIM_ITEMS=1 run_wrk e "$BASE$E_PATH" -s "$HERE/scim.lua"

log "(s) GET /rest/scim/Users, selective filter: userName sw \"user4242\", count=100"
preflight s "$S_PATH" "$S_TOTAL" "$S_ITEMS"
BENCH_SCIM_ITEMS=$S_ITEMS run_wrk s "$BASE$S_PATH" -s "$HERE/scim.lua"

log "(f) GET /rest/scim/Users, broad filter: emails[value ew \"@example.org\"] and active eq true, count=100"
preflight f "$F_PATH" "$F_TOTAL" "$F_ITEMS"
BENCH_SCIM_ITEMS=$F_ITEMS run_wrk f "$BASE$F_PATH" -s "$HERE/scim.lua"

# --- memory of a listing ------------------------------------------------------------------------
CHECK_PY=$(
  cat <<'EOF'
import json, sys
want_items, want_total = int(sys.argv[1]), int(sys.argv[2])
data = sys.stdin.buffer.read()
try:
    d = json.loads(data)
except ValueError as e:
    print(f"FAIL not JSON ({e}); {len(data)} bytes, ending {data[-80:]!r}")
    sys.exit(1)
res = d.get("Resources", [])
ids = {r.get("id") for r in res}
problems = []
if d.get("schemas") != ["urn:ietf:params:scim:api:messages:2.0:ListResponse"]:
    problems.append(f"schemas {d.get('schemas')}")
if d.get("itemsPerPage") != want_items:
    problems.append(f"itemsPerPage {d.get('itemsPerPage')} (want {want_items})")
if len(res) != want_items:
    problems.append(f"{len(res)} resources (want {want_items})")
if len(ids) != len(res):
    problems.append(f"{len(res) - len(ids)} repeated ids")
if d.get("totalResults") != want_total:
    problems.append(f"totalResults {d.get('totalResults')} (want {want_total})")
if problems:
    print("FAIL " + "; ".join(problems))
    sys.exit(1)
print(f"ok itemsPerPage={want_items} totalResults={want_total} bytes={len(data)}")
EOF
)

# listing KEY COUNT ITEMS: the memory of one GET /rest/scim/Users?count=COUNT, streamed by curl
# into the JSON check (which expects ITEMS resources of USERS). Appends a line to $WORK/mem.txt:
#   KEY COUNT IDLE_KB RESET_KB PEAK_KB AFTER_KB HTTP BYTES SECONDS CHECK...
listing() {
  local key=$1 count=$2 items=$3 idle reset peak after curl_line check
  sleep "$SETTLE"
  idle=$(vm VmRSS)
  echo 5 2>/dev/null >"/proc/$COFFERD_PID/clear_refs" || info "could not reset cofferd's VmHWM"
  reset=$(vm VmHWM)
  info "($key) GET /rest/scim/Users?count=$count: idle VmRSS $idle kB, VmHWM after reset $reset kB"
  curl -sS --max-time 900 -H "$AUTH" \
    -w '%{stderr}BENCH_CURL %{http_code} %{size_download} %{time_total}\n' \
    "$BASE/rest/scim/Users?count=$count" 2>"$OUT/scim-$key.curl" |
    python3 -c "$CHECK_PY" "$items" "$USERS" >"$OUT/scim-$key.check" 2>&1 || true
  peak=$(vm VmHWM)
  sleep "$SETTLE"
  after=$(vm VmRSS)
  curl_line=$(grep '^BENCH_CURL ' "$OUT/scim-$key.curl" | tail -n 1 | cut -d' ' -f2-)
  [[ -n $curl_line ]] || curl_line="000 0 0"
  check=$(tail -n 1 "$OUT/scim-$key.check")
  info "peak VmHWM $peak kB ($(((peak - idle) / 1024)) MiB above idle), VmRSS $after kB ${SETTLE}s later"
  info "curl: HTTP, bytes, seconds: $curl_line; check: $check"
  printf '%s %s %s %s %s %s %s %s\n' "$key" "$count" "$idle" "$reset" "$peak" "$after" "$curl_line" "$check" >>"$WORK/mem.txt"
}

: >"$WORK/mem.txt"
log "memory, on the loaded process: GET /rest/scim/Users?count=10000, then count=1000000 ($USERS users)"
listing load10k 10000 10000
listing loadall 1000000 "$USERS"
if ! kill -0 "$COFFERD_PID" 2>/dev/null; then
  NOTES+=("cofferd was no longer running after the runs; see bench-out/scim-cofferd.1.log")
fi
stop_pid "$COFFERD_PID" cofferd
COFFERD_PID=""

# fresh KEY COUNT ITEMS: the same on a freshly started cofferd, after one count=1 listing (so the
# token check, the database pool and the listing path have run once).
fresh() {
  start_cofferd
  curl -sS -o /dev/null --max-time 60 -H "$AUTH" "$BASE/rest/scim/Users?count=1" || true
  listing "$@"
  stop_pid "$COFFERD_PID" cofferd
  COFFERD_PID=""
}
log "memory, each on a fresh process: GET /rest/scim/Users?count=10000, then count=1000000"
fresh fresh10k 10000 10000
fresh freshall 1000000 "$USERS"
cp "$WORK/mem.txt" "$OUT/scim-memory.txt"

# --- report ------------------------------------------------------------------------------------
log "report"
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo "no commit")
DIRTY=0
if [[ -n $(git status --porcelain --untracked-files=no 2>/dev/null || true) ]]; then DIRTY=1; fi
export B_DATE B_NPROC B_CPU B_MEM B_KERNEL B_COMMIT B_DIRTY B_WRK B_ENV B_SECS B_WARMUP B_CONNS \
  B_TIMEOUT B_USERS B_SEED B_DB B_SETTLE B_LIMIT B_S_TOTAL B_F_TOTAL B_NOTES B_HERE
B_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
B_NPROC=$(nproc)
B_CPU=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
B_MEM=$(awk '/^MemTotal:/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
B_KERNEL=$(uname -r)
B_COMMIT=$COMMIT B_DIRTY=$DIRTY B_WRK=$WRK_VERSION B_ENV=$COFFERD_EXTRA_ENV B_SECS=$SECS
B_WARMUP=$WARMUP B_CONNS=$CONNS B_TIMEOUT=$TIMEOUT B_USERS=$USERS B_SEED=$SEED_SECS
B_DB=$DB_BYTES B_SETTLE=$SETTLE B_LIMIT=$LIMIT_MIB B_S_TOTAL=$S_TOTAL B_F_TOTAL=$F_TOTAL B_HERE=$HERE
B_NOTES=$(printf '%s\n' "${NOTES[@]+"${NOTES[@]}"}")
strict=0
if [[ ${BENCH_STRICT:-} == 1 ]]; then strict=1; fi
python3 - "$OUT" "$WORK/mem.txt" "$REPORT" "$strict" <<'EOF'
import os, sys
e = os.environ
sys.path.insert(0, e["B_HERE"])
from report import parse_wrk, errors_of, fmt_num, fmt_ms  # scripts/bench/report.py

out_dir, mem_path, report, strict = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
users = int(e["B_USERS"])
limit_mib = int(e["B_LIMIT"])
mib = lambda kb: kb / 1024

runs = {}
for key in "hesf":
    path = os.path.join(out_dir, f"scim-{key}.txt")
    runs[key] = parse_wrk(open(path).read()) if os.path.exists(path) else None

mem = {}
for line in open(mem_path):
    p = line.split(maxsplit=9)
    if len(p) < 10:
        continue
    mem[p[0]] = {"count": int(p[1]), "idle": int(p[2] or 0), "reset": int(p[3] or 0),
                 "peak": int(p[4] or 0), "after": int(p[5] or 0), "http": p[6],
                 "bytes": int(p[7]), "secs": float(p[8]), "check": p[9].strip()}

scen = [
    ("h", "`GET /health` (unauthenticated floor)", None),
    ("e", "SCIM `filter=userName eq \"user4242@example.net\"` (an identity provider's lookup, 1 match)", "h"),
    ("s", f"SCIM `filter=userName sw \"user4242\"&count=100` ({int(e['B_S_TOTAL']):,} matches)", "h"),
    ("f", f"SCIM `filter=emails[value ew \"@example.org\"] and active eq true&count=100` "
          f"({int(e['B_F_TOTAL']):,} matches, a full page of 100)", "h"),
]
flagged = []
lines = []
w = lines.append
w("# SCIM listing benchmark")
w("")
w("Written by `scripts/bench-scim.sh` (`scripts/bench.sh` and `just bench` run it last); rerun it to")
w("refresh this page. Raw output of the latest run is in `bench-out/scim-*` (not committed).")
w("")
w("## Run")
w("")
w(f"- Date: {e['B_DATE']}")
w(f"- Machine: {e['B_NPROC']} cores, {e['B_CPU'] or 'unknown CPU'}, {e['B_MEM']} memory, Linux {e['B_KERNEL']}")
w(f"- Commit: `{e['B_COMMIT']}`{' (with uncommitted changes)' if e['B_DIRTY'] == '1' else ''}")
w(f"- Data: {users:,} users seeded by `tests/src/bin/scim-bench.rs` in {e['B_SEED']} s into a fresh SQLite "
  f"data directory ({int(e['B_DB']) / 1048576:.0f} MiB): emails over four domains, a third with a mobile "
  f"number, a tenth inactive, a quarter `Restricted`, a fiftieth helpdesk administrators, no passwords.")
w(f"- cofferd: release build, `cofferd serve` as its own process on 127.0.0.1, `RUST_LOG=warn`; extra "
  f"environment: `{e['B_ENV'] or 'none'}`. Calls carry `Authorization: Bearer <SCIM token>`.")
w(f"- Load: {e['B_WRK']}, `wrk -t {e['B_CONNS']} -c {e['B_CONNS']} -d {e['B_SECS']}s --timeout {e['B_TIMEOUT']} "
  f"--latency` per scenario after a {e['B_WARMUP']}s warm-up, on the same {e['B_NPROC']} cores as the server. "
  f"The SCIM runs count a response as good only when it is 200 and the streamed `ListResponse` ends with "
  f"the expected `itemsPerPage` (`scripts/bench/scim.lua`); a preflight checks `totalResults` too.")
w(f"- Memory: after the wrk runs and {e['B_SETTLE']} s of quiet, cofferd's `VmRSS` (idle); `VmHWM` reset with "
  f"`echo 5 > /proc/PID/clear_refs`; one `GET /rest/scim/Users?count=N` streamed by curl into a Python check "
  f"(valid JSON, `itemsPerPage`, `totalResults`, distinct ids); `VmHWM` read again (peak). `count=10000` first, "
  f"then `count=1000000` (every user).")
w("")
w("## Filtered listings")
w("")
w("| scenario | requests/s | p50 ms | p99 ms | of `/health` | requests | non-2xx | socket errors | script-rejected |")
w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for key, title, base in scen:
    r = runs[key]
    if r is None or r["rps"] is None:
        w(f"| ({key}) {title} | no result | | | | | | | |")
        flagged.append(f"({key}) produced no result (see bench-out/scim-{key}.txt)")
        continue
    errs = errors_of(r)
    mark = " ⚠" if errs else ""
    ratio = "—"
    if base and runs[base] and runs[base]["rps"]:
        pct = 100 * r["rps"] / runs[base]["rps"]
        ratio = f"{pct:.1f}%" if pct >= 1 else f"{pct:.2f}%"
    se = "—" if r["script_errors"] is None else fmt_num(r["script_errors"])
    w(f"| ({key}) {title}{mark} | {fmt_num(r['rps'])} | {fmt_ms(r['p50'])} | {fmt_ms(r['p99'])} | {ratio} | "
      f"{fmt_num(r['requests'])} | {fmt_num(r['non2xx'])} | {fmt_num(r['socket_errors'])} | {se} |")
    if errs:
        note = f"({key}) had {errs} failed requests"
        if r["first_error"]:
            note += f"; first: `{r['first_error'][:200]}`"
        flagged.append(note)
w("")

w("## Memory of a listing")
w("")
w("| cofferd | listing | resources | response | time | idle RSS | peak RSS | peak − idle | RSS after | check |")
w("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
MEM_ROWS = [
    ("load10k", "after the load runs"), ("loadall", "after the load runs"),
    ("fresh10k", "fresh process"), ("freshall", "fresh process"),
]


def valid(m):
    return m is not None and m["http"] == "200" and m["check"].startswith("ok")


for key, where in MEM_ROWS:
    m = mem.get(key)
    if not m:
        w(f"| {where} | ({key}) no result | | | | | | | | |")
        flagged.append(f"the {key} listing produced no result")
        continue
    items = min(m["count"], users)
    w(f"| {where} | `count={m['count']}` | {items:,} | {m['bytes'] / 1e6:.1f} MB | {m['secs']:.2f} s | "
      f"{mib(m['idle']):.1f} MiB | {mib(m['peak']):.1f} MiB | **{mib(m['peak'] - m['idle']):.1f} MiB** | "
      f"{mib(m['after']):.1f} MiB | {'valid' if valid(m) else 'HTTP ' + m['http'] + ': ' + m['check'][:150]} |")
    if not valid(m):
        flagged.append(f"the {where} `count={m['count']}` listing failed its check (HTTP {m['http']}): {m['check'][:200]}")
    if m["reset"] > m["idle"] + 1024:
        flagged.append(f"the peak reset before the {where} `count={m['count']}` listing did not take (VmHWM "
                       f"{m['reset']} kB, VmRSS {m['idle']} kB): its peak is not that listing's")
w("")
w(f"`RSS after` is `VmRSS` {e['B_SETTLE']} s after the listing ended. *After the load runs*: the process of "
  f"the wrk runs above, `count=10000` and then `count=1000000`; its idle RSS holds what the concurrent "
  f"listings left behind (allocator heaps, database connections), which a later listing can reuse. *Fresh process*: "
  f"cofferd started anew on the same data for each listing, after one `count=1` listing, so each peak is that "
  f"listing's own.")
w("")
if flagged:
    w("**Flagged — these numbers are not valid measurements:**")
    w("")
    for f_ in flagged:
        w(f"- {f_}")
    w("")
for n in (e["B_NOTES"] or "").splitlines():
    if n.strip():
        w(f"- {n}")
        flagged.append(n)

checks = []
name = f"`count=1000000` ({users:,} users): peak − idle < {limit_mib} MiB"
for key, where in (("loadall", "after the load runs"), ("freshall", "fresh process")):
    m = mem.get(key)
    if valid(m):
        d = m["peak"] - m["idle"]
        checks.append((f"{name}, {where}", f"{mib(d):.1f} MiB", "PASS" if d < limit_mib * 1024 else "FAIL"))
    else:
        checks.append((f"{name}, {where}", "—", "FAIL (no result)"))
big, small = mem.get("freshall"), mem.get("fresh10k")
# The allocator's own growth varies by ±15 MiB from run to run, so the bar is half the extra
# response: a listing that held its response (or its rows) in memory would add at least all of it.
name = ("flat, fresh processes: the extra peak of `count=1000000` over `count=10000` < 50% of its extra "
        "response (a buffered response would be ≥ 100%)")
if valid(big) and valid(small):
    grow = (big["peak"] - big["idle"]) - (small["peak"] - small["idle"])
    more = big["bytes"] - small["bytes"]
    share = 1024 * grow / more if more > 0 else float("inf")
    checks.append((name, f"{mib(grow):+.1f} MiB for {more / 1e6:.1f} MB more response ({100 * share:.1f}%)",
                   "PASS" if share < 0.50 else "FAIL"))
else:
    checks.append((name, "—", "FAIL (no result)"))

w("## Targets")
w("")
w("| check | measured | result |")
w("|---|---|---|")
for name, value, verdict in checks:
    w(f"| {name} | {value} | **{verdict}** |")
w("")
w("The filtered listings have no target; their figures are recorded to compare runs. A filter is")
w("translated to SQL (`docs/scim.md`): `eq`, `sw` and ordering on `userName`, `emails` and `externalId`")
w("use indexes, while `co`, `ew` and other attributes scan the users, as (f) does to count its")
w("`totalResults`. A listing whose first chunk holds all its matches needs no count.")
w("")
os.makedirs(os.path.dirname(os.path.abspath(report)), exist_ok=True)
with open(report, "w") as f:
    f.write("\n".join(lines))

for key, title, _ in scen:
    r = runs[key]
    if r and r["rps"] is not None:
        print(f"({key}) {fmt_num(r['rps']):>10} req/s  p50 {fmt_ms(r['p50'])} ms  p99 {fmt_ms(r['p99'])} ms  "
              f"errors {errors_of(r)}")
for key, where in MEM_ROWS:
    m = mem.get(key)
    if m:
        print(f"{where}, count={m['count']}: idle {mib(m['idle']):.1f} MiB, peak {mib(m['peak']):.1f} MiB, "
              f"+{mib(m['peak'] - m['idle']):.1f} MiB, {m['bytes'] / 1e6:.1f} MB in {m['secs']:.2f} s, {m['check']}")
for name, value, verdict in checks:
    print(f"{verdict:<6} {name}: {value}")
for f_ in flagged:
    print("FLAGGED: " + f_)
print(f"wrote {report}")
if strict and (flagged or any(not v.startswith("PASS") for _, _, v in checks)):
    sys.exit(1)
EOF
