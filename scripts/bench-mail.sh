#!/usr/bin/env bash
# Coffer's mail benchmarks (not a test), loopback only. scripts/bench.sh (`just bench`) runs it
# after the content benchmarks; it runs alone too (`BENCH_ONLY=mail scripts/bench.sh`, or this
# script), and rewrites only the "Mail" section of docs/benchmarks.md.
#
#   (k) internal sends: POST /rest/mail/actions/sendFile, one stored 1 MiB file attached by id,
#       to 10 accounts, `wrk -t 8 -c 8` (scripts/bench/sendmail.lua). Target >= 200 messages/s.
#   (l) outgoing SMTP: BENCH_SMTP_COUNT emails to outside addresses queued with no relay, then
#       cofferd restarted with the relay (the SMTP server of scripts/smtp-test-server.sh), timed
#       until none is queued (scripts/bench/mail.py drain). Target >= 500 messages/s per node.
#   (m) cofferd's peak RSS over (k) and (l). Target < 150 MB.
#
# Environment (optional): BENCH_SECONDS=10 BENCH_WARMUP=2 BENCH_SMTP_COUNT=5000
#   BENCH_SMTP_WORKERS=4 (COFFER_SMTP_WORKERS of (l), the server's default); BENCH_SKIP_BUILD=1 / COFFERD_BIN=path;
#   CARGO_TARGET_DIR (default /var/tmp/coffer-target); BENCH_OUT=./bench-out;
#   BENCH_REPORT=docs/benchmarks.md; BENCH_STRICT=1 (exit 1 when a target fails); BENCH_KEEP=1.
# Needs wrk, curl, python3 (installed with apt when missing, as root). Everything it starts
# listens on 127.0.0.1 and is stopped on exit by its recorded PID.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
HERE=$ROOT/scripts/bench
# The SMTP server: this script runs again under scripts/smtp-test-server.sh.
if [[ -z ${COFFER_TEST_SMTP_URL:-} ]]; then
  exec "$ROOT/scripts/smtp-test-server.sh" run -- "$0" "$@"
fi

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/coffer-target}
SECS=${BENCH_SECONDS:-10}
WARMUP=${BENCH_WARMUP:-2}
SMTP_COUNT=${BENCH_SMTP_COUNT:-5000}
SMTP_WORKERS=${BENCH_SMTP_WORKERS:-4}
CLIENTS=8
RECIPIENTS=10
ATTACHMENT_MIB=1
OUT=${BENCH_OUT:-$ROOT/bench-out}
REPORT=${BENCH_REPORT:-$ROOT/docs/benchmarks.md}
BIN=${COFFERD_BIN:-$CARGO_TARGET_DIR/release/cofferd}
VERSION_HEADER='X-Coffer-Version: 28'
PASSWORD='Bench-Passw0rd!'

BENCH_NAME=bench-mail
# shellcheck source=bench/lib.sh
source "$ROOT/scripts/bench/lib.sh"
if ! is_uint "$SECS" || ((SECS < 1 || SECS > 240)); then die "BENCH_SECONDS must be 1..240"; fi
if ! is_uint "$WARMUP" || ((WARMUP > 60)); then die "BENCH_WARMUP must be 0..60"; fi
if ! is_uint "$SMTP_COUNT" || ((SMTP_COUNT < 100 || SMTP_COUNT > 100000)); then die "BENCH_SMTP_COUNT must be 100..100000"; fi
if ! is_uint "$SMTP_WORKERS" || ((SMTP_WORKERS < 1 || SMTP_WORKERS > 64)); then die "BENCH_SMTP_WORKERS must be 1..64"; fi

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

need=()
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v curl >/dev/null 2>&1 || need+=(curl ca-certificates)
if ((${#need[@]})); then
  log "tools: apt-get install ${need[*]}"
  apt_install "${need[@]}"
fi

if [[ -n ${COFFERD_BIN:-} || ${BENCH_SKIP_BUILD:-} == 1 ]]; then
  log "cofferd: using $BIN (no build)"
else
  log "cofferd: cargo build --release -p cofferd (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
  cargo build --release -p cofferd
fi
[[ -x $BIN ]] || die "no cofferd binary at $BIN"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-bench-mail.XXXXXX")
DATA=$WORK/data
mkdir -p "$DATA" "$OUT"
rm -f "$OUT"/mail.json "$OUT"/mail-*
PORT=$(spare_port)
BASE=http://127.0.0.1:$PORT
COFFERD_ENV=(env -u COFFER_DATABASE_URL -u COFFER_STORAGE_URL -u COFFER_CLAMD -u COFFER_CONFIG
  -u COFFER_SMTP_URL RUST_LOG=warn COFFER_LISTEN="127.0.0.1:$PORT" COFFER_BASE_URL="$BASE")
NOTES=()
HWM_KB=0

# serve LOG [ENV...]: starts cofferd with ENV added; waits for it.
serve() {
  local logf=$1
  shift
  "${COFFERD_ENV[@]}" "$@" "$BIN" --data-dir "$DATA" serve >>"$OUT/$logf" 2>&1 &
  COFFERD_PID=$!
  if ! wait_http "$BASE/health" 60 "$COFFERD_PID"; then
    tail -n 30 "$OUT/$logf" >&2 || true
    die "cofferd did not answer on $BASE/health"
  fi
}
vm() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$COFFERD_PID/status" 2>/dev/null || true; }
# stop: records the peak RSS, then stops cofferd.
stop() {
  local h
  h=$(vm VmHWM)
  info "cofferd VmHWM ${h:-?} kB"
  if [[ -n $h ]] && ((h > HWM_KB)); then HWM_KB=$h; fi
  stop_pid "$COFFERD_PID" cofferd
  COFFERD_PID=""
}
cli() {
  "${COFFERD_ENV[@]}" "$BIN" --data-dir "$DATA" "$@" >"$WORK/cli.out" 2>>"$OUT/mail-cli.log" ||
    {
      cat "$OUT/mail-cli.log" "$WORK/cli.out" >&2
      die "cofferd $1 $2 failed"
    }
}

log "cofferd: serve on $BASE (no relay); users, client, token"
serve mail-cofferd.log
cli user create --email sender@example.com --name Sender --password "$PASSWORD"
TO=""
for ((i = 1; i <= RECIPIENTS; i++)); do
  cli user create --email "r$i@example.com" --name "Recipient $i" --password "$PASSWORD"
  TO+="${TO:+,}r$i@example.com"
done
cli client create --name bench-mail --redirect-uri http://127.0.0.1/cb --scope '*' \
  --flows password --access-token-lifetime 24
CLIENT_ID=$(json_get "$WORK/cli.out" client_id)
CLIENT_SECRET=$(json_get "$WORK/cli.out" client_secret)
code=$(curl -sS -o "$WORK/grant.json" -w '%{http_code}' --max-time 30 "$BASE/oauth/token" \
  --data-urlencode grant_type=password --data-urlencode username=sender@example.com \
  --data-urlencode "password=$PASSWORD" --data-urlencode "client_id=$CLIENT_ID" \
  --data-urlencode "client_secret=$CLIENT_SECRET")
[[ $code == 200 ]] || die "password grant answered HTTP $code: $(head -c 300 "$WORK/grant.json")"
TOKEN=$(json_get "$WORK/grant.json" access_token)
AUTH="Authorization: Bearer $TOKEN"
curl -sS -o "$WORK/me.json" -H "$AUTH" -H "$VERSION_HEADER" "$BASE/rest/users/me"
SYNC=$(json_get "$WORK/me.json" syncdirId)
head -c $((ATTACHMENT_MIB * 1048576)) /dev/urandom >"$WORK/attachment.bin"
code=$(curl -sS -o "$WORK/file.json" -w '%{http_code}' --max-time 60 -H "$AUTH" \
  -H "$VERSION_HEADER" -F "body=@$WORK/attachment.bin;filename=figures.bin" \
  "$BASE/rest/folders/$SYNC/actions/file")
[[ $code == 200 ]] || die "the attachment's upload answered HTTP $code"
FILE_ID=$(json_get "$WORK/file.json" id)
info "sender's file $FILE_ID ($ATTACHMENT_MIB MiB); recipients $TO"

# --- (k) -----------------------------------------------------------------------------------------
echo 5 2>/dev/null >"/proc/$COFFERD_PID/clear_refs" || NOTES+=("could not reset cofferd's VmHWM: (m) includes the set-up")
export BENCH_TOKEN=$TOKEN BENCH_FILE_ID=$FILE_ID BENCH_MAIL_RECIPIENTS=$TO
K_URL=$BASE/rest/mail/actions/sendFile
log "(k) internal sends: $CLIENTS clients, $RECIPIENTS recipients, ${SECS}s"
if ((WARMUP > 0)); then
  wrk -t "$CLIENTS" -c "$CLIENTS" -d "${WARMUP}s" --timeout 10s -s "$HERE/sendmail.lua" "$K_URL" \
    >"$OUT/mail-k.warmup.log" 2>&1 || true
fi
wrk -t "$CLIENTS" -c "$CLIENTS" -d "${SECS}s" --timeout 10s --latency -s "$HERE/sendmail.lua" \
  "$K_URL" >"$OUT/mail-k.txt" 2>&1 || info "wrk exited with $? for (k)"
grep -E 'Requests/sec|Non-2xx|Socket errors|^ +(50|99)%|BENCH_' "$OUT/mail-k.txt" | sed 's/^ */    | /' || true
stop

# --- (l) -----------------------------------------------------------------------------------------
log "(l) queue $SMTP_COUNT emails to outside addresses (no relay yet)"
serve mail-cofferd.log
python3 "$HERE/mail.py" queue --base "$BASE" --token "$TOKEN" --count "$SMTP_COUNT" \
  --threads 4 --domain partner.example --out "$OUT/mail-queue.json"
stop
log "(l) cofferd with the relay ($COFFER_TEST_SMTP_URL, $SMTP_WORKERS workers): drain"
serve mail-cofferd.log COFFER_SMTP_URL="$COFFER_TEST_SMTP_URL" COFFER_SMTP_STARTTLS=never \
  COFFER_SMTP_USER="$COFFER_TEST_SMTP_USER" COFFER_SMTP_PASSWORD="$COFFER_TEST_SMTP_PASSWORD" \
  COFFER_SMTP_FROM='Coffer <no-reply@coffer.bench>' COFFER_SMTP_WORKERS="$SMTP_WORKERS"
python3 "$HERE/mail.py" drain --base "$BASE" --token "$TOKEN" --count "$SMTP_COUNT" \
  --timeout 600 --out "$OUT/mail-l.json"
stop
received=$(find "$COFFER_TEST_SMTP_DIR" -name '*.json' | wc -l)
info "the SMTP server holds $received messages"
((received >= SMTP_COUNT)) || NOTES+=("the SMTP server received $received of $SMTP_COUNT messages")

# --- the page ------------------------------------------------------------------------------------
B_NOTES=$(printf '%s\n' "${NOTES[@]+"${NOTES[@]}"}") B_HWM=$HWM_KB B_SECS=$SECS B_WARMUP=$WARMUP \
  B_SMTP_COUNT=$SMTP_COUNT B_SMTP_WORKERS=$SMTP_WORKERS B_CLIENTS=$CLIENTS B_RECIPIENTS=$RECIPIENTS \
  B_MIB=$ATTACHMENT_MIB B_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown) \
  B_MACHINE="$(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)" \
  python3 - "$OUT" <<'PY'
import json, os, sys, time
e = os.environ
out = sys.argv[1]
m = {
    "date": time.strftime("%Y-%m-%d"), "commit": e["B_COMMIT"], "machine": e["B_MACHINE"],
    "hwm_kb": int(e["B_HWM"] or 0),
    "settings": {"seconds": int(e["B_SECS"]), "warmup": int(e["B_WARMUP"]),
                 "smtp_count": int(e["B_SMTP_COUNT"]), "smtp_workers": int(e["B_SMTP_WORKERS"]),
                 "clients": int(e["B_CLIENTS"]), "recipients": int(e["B_RECIPIENTS"]),
                 "attachment_mib": int(e["B_MIB"])},
    "queue": json.load(open(os.path.join(out, "mail-queue.json"))),
    "smtp": json.load(open(os.path.join(out, "mail-l.json"))),
    "notes": [n for n in e["B_NOTES"].splitlines() if n.strip()],
}
json.dump(m, open(os.path.join(out, "mail.json"), "w"), indent=1)
PY
strict=()
if [[ ${BENCH_STRICT:-} == 1 ]]; then strict=(--strict); fi
python3 "$HERE/mail.py" report --runs "$OUT" --out "$REPORT" "${strict[@]+"${strict[@]}"}"
