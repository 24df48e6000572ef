#!/usr/bin/env bash
# Coffer's search benchmark (not a test); scripts/bench.sh (`just bench`) runs it after the SCIM
# benchmark, and it runs alone too:
#
#   scripts/bench-search.sh
#
# A fresh data directory is seeded by the release binary tests/src/bin/search-bench.rs, through
# the store (an HTTP upload per file would measure uploads, not search): BENCH_SEARCH_FILES
# files (100,000: names and 40 words of text from a generated word list, every hundredth a PDF
# or a DOCX, the rest plain text, each blob in the local blob store) and BENCH_SEARCH_EMAILS
# emails (10,000) across 50 users with 10 folders each, each user's first folder shared with
# four others as Viewer and the second with a fifth as Uploader. The release cofferd then serves
# it on 127.0.0.1, as its own process:
#   (n) indexing: from cofferd's start, its job worker extracts every file's text into the
#       index; `cofferd search status` is polled every second until none is pending. Files/s.
#   (o) GET /rest/query?includeContent=true&searchType=f&limit=25&query=WORD, a random word of the list
#       per request, by one of 8 users (round robin): `wrk -t 8 -c 8` (BENCH_SEARCH_CLIENTS)
#       after a warm-up. Target: p99 < 50 ms.
#   (p) GET /rest/search?content:startswith=PREFIX&searchType=f,d&limit=25, the first four letters of a
#       random word, the same way. Target: p99 < 20 ms.
#   (q) the index's size (`cofferd search status`: the FTS5 index's blocks) against the text it
#       holds; cofferd's peak RSS (VmHWM) over (n)-(p). Target: < 200 MB.
# Writes the "Search" section of docs/benchmarks.md (the rest of the page is kept).
#
# Environment (all optional; the same names as scripts/bench.sh):
#   BENCH_SECONDS=10  BENCH_WARMUP=2  BENCH_COFFERD_ENV=""
#   BENCH_SKIP_BUILD=1      use the existing release binaries;  COFFERD_BIN=path  use that cofferd
#   SEARCH_BENCH_BIN=path   use that seeding binary (with COFFERD_BIN: no build at all)
#   CARGO_TARGET_DIR        default /var/tmp/coffer-target
#   BENCH_OUT=./bench-out   raw wrk output and logs (search-*)
#   BENCH_SEARCH_FILES=100000  BENCH_SEARCH_EMAILS=10000  BENCH_SEARCH_CLIENTS=8
#   BENCH_SEARCH_INDEX_TIMEOUT=3600  seconds (n) may take
#   BENCH_REPORT=docs/benchmarks.md
#   BENCH_SEARCH_MIN_REQUESTS=CLIENTS*BENCH_SECONDS  good answers a measured run needs
#   BENCH_STRICT=1          exit 1 when a target check fails (a latency check fails too when its
#                           run had an error or timeout, or fewer good answers than the minimum)
#   BENCH_KEEP=1            keep the temporary directory (data dir, seed output)
#   BENCH_SEARCH_CORPUS=dir keep the seeded and indexed corpus in dir and use it again on later
#                           runs of the same size: seeding and indexing 100,000 files take many
#                           minutes, a run on a kept corpus only the measurements. The report
#                           then gives the seeding and indexing figures of the run that built
#                           it. A corpus from an older build is migrated by cofferd on start;
#                           dir must be new or hold a corpus this script finished.
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
CLIENTS=${BENCH_SEARCH_CLIENTS:-8}
FILES=${BENCH_SEARCH_FILES:-100000}
EMAILS=${BENCH_SEARCH_EMAILS:-10000}
INDEX_TIMEOUT=${BENCH_SEARCH_INDEX_TIMEOUT:-3600}
COFFERD_EXTRA_ENV=${BENCH_COFFERD_ENV-}
OUT=${BENCH_OUT:-$ROOT/bench-out}
REPORT=${BENCH_REPORT:-$ROOT/docs/benchmarks.md}
BIN=${COFFERD_BIN:-$CARGO_TARGET_DIR/release/cofferd}
SEED_BIN=${SEARCH_BENCH_BIN:-$CARGO_TARGET_DIR/release/search-bench}
RSS_LIMIT_MB=200

BENCH_NAME=bench-search
# shellcheck source=bench/lib.sh
source "$ROOT/scripts/bench/lib.sh"
if ! is_uint "$SECS" || ((SECS < 1 || SECS > 240)); then die "BENCH_SECONDS must be 1..240"; fi
if ! is_uint "$WARMUP" || ((WARMUP > 60)); then die "BENCH_WARMUP must be 0..60"; fi
if ! is_uint "$CLIENTS" || ((CLIENTS < 1 || CLIENTS > 64)); then die "BENCH_SEARCH_CLIENTS must be 1..64"; fi
if ! is_uint "$FILES" || ((FILES < 1000 || FILES > 1000000)); then die "BENCH_SEARCH_FILES must be 1000..1000000"; fi
if ! is_uint "$EMAILS" || ((EMAILS > 1000000)); then die "BENCH_SEARCH_EMAILS must be 0..1000000"; fi
if ! is_uint "$INDEX_TIMEOUT"; then die "BENCH_SEARCH_INDEX_TIMEOUT must be a number"; fi
# Fewer good answers than this in a measured run fail its check (one per client and second).
MIN_REQUESTS=${BENCH_SEARCH_MIN_REQUESTS:-$((CLIENTS * SECS))}
if ! is_uint "$MIN_REQUESTS" || ((MIN_REQUESTS < 1)); then die "BENCH_SEARCH_MIN_REQUESTS must be 1 or more"; fi

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

# --- binaries -----------------------------------------------------------------------------------
if [[ -n ${COFFERD_BIN:-} || ${BENCH_SKIP_BUILD:-} == 1 ]]; then
  log "cofferd: using $BIN (no build)"
else
  log "cofferd: cargo build --release -p cofferd (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
  cargo build --release -p cofferd
fi
[[ -x $BIN ]] || die "no cofferd binary at $BIN"
if [[ ${BENCH_SKIP_BUILD:-} != 1 && -z ${SEARCH_BENCH_BIN:-} ]]; then
  log "search-bench: cargo build --release -p coffer-tests --bin search-bench"
  cargo build --release -q -p coffer-tests --bin search-bench
fi
[[ -x $SEED_BIN ]] || die "no search-bench binary at $SEED_BIN"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-bench-search.XXXXXX")
DATA=$WORK/data
SEED_JSON=$WORK/seed.json
mkdir -p "$OUT"
rm -f "$OUT"/search-*

# --- a kept corpus ----------------------------------------------------------------------------
# $CORPUS/done records the size and the seeding and indexing figures of the run that built it,
# written only once its indexing finished, so a corpus cut short is never taken for a whole one.
CORPUS=${BENCH_SEARCH_CORPUS:-}
REUSED=0
if [[ -n $CORPUS ]]; then
  DATA=$CORPUS/data
  SEED_JSON=$CORPUS/seed.json
  if [[ -f $CORPUS/done ]]; then
    read -r c_files c_emails SEED_SECS c_index_secs <"$CORPUS/done"
    [[ $c_files == "$FILES" && $c_emails == "$EMAILS" ]] ||
      die "$CORPUS holds $c_files files and $c_emails emails, not $FILES and $EMAILS"
    REUSED=1
  elif [[ -e $CORPUS ]] && [[ -n $(ls -A "$CORPUS") ]]; then
    die "$CORPUS is neither empty nor a finished corpus; remove it"
  fi
  mkdir -p "$CORPUS"
fi

# --- seed -------------------------------------------------------------------------------------
if ((REUSED)); then
  log "seed: the kept corpus in $CORPUS ($FILES files and $EMAILS emails, seeded in $SEED_SECS s)"
else
  log "seed: $FILES files and $EMAILS emails into $DATA (search-bench)"
  seed_start=$(date +%s.%N)
  "$SEED_BIN" "$DATA" "$FILES" "$EMAILS" >"$SEED_JSON" 2>"$OUT/search-seed.log" ||
    {
      tail -n 20 "$OUT/search-seed.log" >&2
      die "search-bench failed"
    }
  seed_end=$(date +%s.%N)
  SEED_SECS=$(python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.1f}")' "$seed_start" "$seed_end")
  info "$(tail -n 1 "$OUT/search-seed.log")"
fi

# --- cofferd: (n) indexing --------------------------------------------------------------------
read -r -a EXTRA_ENV <<<"$COFFERD_EXTRA_ENV"
PORT=$(spare_port)
BASE=http://127.0.0.1:$PORT
log "cofferd: serve on $BASE (data dir $DATA); (n) its job worker indexes every file"
index_start=$(date +%s.%N)
env -u COFFER_DATABASE_URL RUST_LOG=warn COFFER_LISTEN="127.0.0.1:$PORT" COFFER_BASE_URL="$BASE" \
  "${EXTRA_ENV[@]}" "$BIN" --data-dir "$DATA" serve >"$OUT/search-cofferd.log" 2>&1 &
COFFERD_PID=$!
if ! wait_http "$BASE/health" 60 "$COFFERD_PID"; then
  tail -n 30 "$OUT/search-cofferd.log" >&2 || true
  die "cofferd did not answer on $BASE/health"
fi
info "cofferd pid $COFFERD_PID"

status() { "$BIN" --data-dir "$DATA" search status 2>>"$OUT/search-status.log"; }
field() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
while :; do
  kill -0 "$COFFERD_PID" 2>/dev/null || die "cofferd stopped while indexing"
  S=$(status) || S=""
  pending=$(echo "$S" | field pending 2>/dev/null || echo "?")
  if [[ $pending == 0 ]]; then break; fi
  now=$(date +%s.%N)
  if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) - float(sys.argv[2]) > float(sys.argv[3]) else 1)' \
    "$now" "$index_start" "$INDEX_TIMEOUT"; then
    die "indexing did not finish within $INDEX_TIMEOUT s ($pending pending)"
  fi
  sleep 1
done
index_end=$(date +%s.%N)
echo "$S" >"$OUT/search-status.json"
INDEX_SECS=$(python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.1f}")' "$index_start" "$index_end")
if ((REUSED)); then
  INDEX_SECS=$c_index_secs
elif [[ -n $CORPUS ]]; then
  echo "$FILES $EMAILS $SEED_SECS $INDEX_SECS" >"$CORPUS/done"
fi
info "indexed in $INDEX_SECS s: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print({k: d[k] for k in ("indexed","failed","skipped","textBytes","indexBytes")})' "$OUT/search-status.json")"

# --- tokens and requests ------------------------------------------------------------------------
log "tokens: password grant for $CLIENTS users"
python3 - "$SEED_JSON" "$BASE" "$CLIENTS" "$WORK" <<'PY'
import json, sys, urllib.parse, urllib.request, random
seed, base, n, work = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3]), sys.argv[4]
tokens = []
for u in seed["users"][:n]:
    body = urllib.parse.urlencode({"grant_type": "password", "username": u["email"],
        "password": u["password"], "client_id": seed["clientId"],
        "client_secret": seed["clientSecret"]}).encode()
    with urllib.request.urlopen(base + "/oauth/token", body, timeout=60) as r:
        tokens.append(json.load(r)["access_token"])
open(work + "/tokens", "w").write("\n".join(tokens) + "\n")
rng = random.Random(42)
words = seed["words"]
with open(work + "/content.paths", "w") as f:
    for _ in range(5000):
        f.write("/rest/query?includeContent=true&searchType=f&limit=25&query=%s\n" % rng.choice(words))
with open(work + "/prefix.paths", "w") as f:
    for _ in range(5000):
        f.write("/rest/search?content:startswith=%s&searchType=f,d&limit=25\n" % rng.choice(words)[:4])
PY

# run_wrk KEY PATHS: a warm-up, then the measured run into $OUT/search-KEY.txt.
run_wrk() {
  local key=$1 paths=$2
  export BENCH_SEARCH_TOKENS=$WORK/tokens BENCH_SEARCH_PATHS=$paths
  if ((WARMUP > 0)); then
    wrk -t "$CLIENTS" -c "$CLIENTS" -d "${WARMUP}s" --timeout 10s -s "$HERE/search.lua" "$BASE" \
      >"$OUT/search-$key.warmup.log" 2>&1 || true
  fi
  info "wrk -t $CLIENTS -c $CLIENTS -d ${SECS}s --latency -s scripts/bench/search.lua ($key)"
  wrk -t "$CLIENTS" -c "$CLIENTS" -d "${SECS}s" --timeout 10s --latency -s "$HERE/search.lua" "$BASE" \
    >"$OUT/search-$key.txt" 2>&1 || info "wrk exited with $? for ($key)"
  grep -E 'Requests/sec|Non-2xx|Socket errors|^ +(50|99)%|BENCH_' "$OUT/search-$key.txt" | sed 's/^ */    | /' || true
}

log "(o) by a word of the content"
run_wrk content "$WORK/content.paths"
log "(p) by the start of a name"
run_wrk prefix "$WORK/prefix.paths"
HWM_KB=$(awk '$1 == "VmHWM:" {print $2}' "/proc/$COFFERD_PID/status")

# --- report -------------------------------------------------------------------------------------
log "report: the Search section of $REPORT"
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
CPUS=$(nproc)
python3 - "$OUT" "$REPORT" "$COMMIT" "$CPUS" "$FILES" "$EMAILS" "$CLIENTS" "$SECS" "$WARMUP" \
  "$SEED_SECS" "$INDEX_SECS" "$HWM_KB" "$RSS_LIMIT_MB" "${BENCH_STRICT:-0}" "$BIN" "$MIN_REQUESTS" "$REUSED" \
  "$(profile_overrides)" <<'PY'
import datetime, json, re, sys
(out, report, commit, cpus, files, emails, clients, secs, warmup, seed_secs, index_secs,
 hwm_kb, rss_limit, strict, binary, min_requests, reused, overrides) = sys.argv[1:]
build = ("debug build: not comparable with the targets" if "/debug/" in binary
         else "release build" + overrides)
status = json.load(open(out + "/search-status.json"))

def wrk(key):
    text = open(f"{out}/search-{key}.txt").read()
    def ms(v, unit):
        return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    p = {}
    for pct in ("50", "99"):
        m = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
        p[pct] = ms(*m.groups()) if m else None
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    ok = re.search(r"BENCH_SCRIPT ok=(\d+) errors=(\d+)", text)
    # Timeouts and broken connections are errors too: wrk counts them apart from responses.
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    errors = int(ok.group(2)) if ok else -1
    if sock and errors >= 0:
        errors += sum(int(x) for x in sock.groups())
    return {"p50": p["50"], "p99": p["99"], "rps": float(rps.group(1)) if rps else None,
            "ok": int(ok.group(1)) if ok else 0, "errors": errors}

content, prefix = wrk("content"), wrk("prefix")
done = status["indexed"] + status["failed"] + status["skipped"]
rate = done / max(float(index_secs), 0.001)
rss_mb = int(hwm_kb) / 1024
checks = []
def check(name, measured, target, passed):
    checks.append((name, measured, target, "PASS" if passed else "FAIL"))
fmt = lambda v: "n/a" if v is None else f"{v:.1f} ms"
def latency(name, run, limit):
    # A latency is only measured by enough good answers and none bad: a run whose requests all
    # took longer than wrk waits records none, and wrk then prints a p99 of 0.
    sound = run["errors"] == 0 and run["ok"] >= int(min_requests) and run["p99"] is not None
    measured = f"{fmt(run['p99'])} ({run['ok']} good, {run['errors']} errors)"
    check(name, measured, f"< {limit} ms, >= {min_requests} good, no errors",
          sound and run["p99"] < limit)
latency("(o) by content word, p99", content, 50)
latency("(p) by name prefix, p99", prefix, 20)
check("(q) cofferd peak RSS", f"{rss_mb:.0f} MB", f"< {rss_limit} MB", rss_mb < float(rss_limit))
today = datetime.date.today().isoformat()
lines = [
    f"## Search: full text over {int(files):,} files",
    "",
    f"Written by `scripts/bench-search.sh` (which `scripts/bench.sh` runs after the SCIM benchmark) on {today}, "
    f"commit `{commit}`, {cpus} cores. Raw output: `bench-out/search-*`. A fresh cofferd ({build}, SQLite, "
    f"local blob store) on a data directory seeded by `tests/src/bin/search-bench.rs` through the store "
    f"in {seed_secs} s: {int(files):,} files (names and 40 words of text from a generated list of 5,000 words; "
    f"every hundredth a PDF or a DOCX, the rest plain text) and {int(emails):,} emails across 50 users with "
    f"10 folders each, each user's first folder shared with four others as Viewer and the second with a fifth "
    f"as Uploader." + ("" if int(files) >= 100000 else
    f" **A reduced corpus** (`BENCH_SEARCH_FILES={files}`): the targets are set for 100,000 files.")
    + ("" if reused != "1" else " A kept corpus (`BENCH_SEARCH_CORPUS`): the seeding and indexing figures are "
    "those of the run that built it, and the peak RSS covers only this run's measurements."),
    "",
    f"- (n) indexing: from cofferd's start until `cofferd search status` reports none pending: {done:,} files "
    f"in {index_secs} s, **{rate:.0f} files/s** ({status['indexed']:,} indexed, {status['failed']:,} failed, "
    f"{status['skipped']:,} skipped).",
    f"- (o) `GET /rest/query?includeContent=true&searchType=f&limit=25&query=WORD`, a random word of the list per request, "
    f"{clients} users round robin, `wrk -t {clients} -c {clients} -d {secs}s` after a {warmup} s warm-up: "
    f"p50 {fmt(content['p50'])}, p99 {fmt(content['p99'])}, {content['rps'] or 0:.0f} requests/s, "
    f"{content['errors']} errors.",
    f"- (p) `GET /rest/search?content:startswith=PREFIX&searchType=f,d&limit=25`, the first four letters of a random word, "
    f"the same way: p50 {fmt(prefix['p50'])}, p99 {fmt(prefix['p99'])}, {prefix['rps'] or 0:.0f} requests/s, "
    f"{prefix['errors']} errors.",
    f"- (q) the index: {status['indexBytes'] / 1048576:.1f} MiB of FTS5 index for {status['textBytes'] / 1048576:.1f} MiB "
    f"of file text ({status['indexBytes'] / max(status['textBytes'], 1):.2f} bytes of index per byte of text); "
    f"cofferd's peak RSS (VmHWM) over (n)-(p): {rss_mb:.0f} MB.",
    "",
    "| check | measured | target | result |",
    "|---|---|---|---|",
] + [f"| {n} | {m} | {t} | {r} |" for n, m, t, r in checks] + [""]
for n, m, t, r in checks:
    print(f"    {r}: {n}: {m} (target {t})")
section = "\n".join(lines) + "\n"
try:
    page = open(report).read()
except FileNotFoundError:
    page = "# Benchmarks\n\n"
pat = re.compile(r"^## Search: .*?(?=^## |\Z)", re.M | re.S)
page = pat.sub(section, page) if pat.search(page) else page.rstrip("\n") + "\n\n" + section
open(report, "w").write(page)
if strict == "1" and any(r == "FAIL" for *_, r in checks):
    sys.exit(1)
PY
