#!/usr/bin/env bash
# Coffer's SFTP benchmark (not a test); scripts/bench.sh (`just bench`) runs it after the search
# benchmarks, and it runs alone too:
#
#   scripts/bench-sftp.sh
#
# The same OpenSSH client (`sftp -b`, one session per run, the same cipher) against two servers
# on loopback:
#   - cofferd's own SFTP server (`COFFER_SFTP_LISTEN`), a fresh cofferd on SQLite in a temporary
#     directory, signed in with a key registered over REST;
#   - the peer: OpenSSH's own `sftp-server` behind a throwaway `sshd` (its own configuration,
#     host key and authorized key, a random port, writing into a temporary directory).
# Runs, each on both servers:
#   (s1) put of one BENCH_SFTP_MIB file           target: cofferd >= 60% of the peer's MiB/s
#   (s2) get of the same file                     target: cofferd >= 80% of the peer's MiB/s
#   (s3) BENCH_SFTP_FILES files of 4 KiB put in one session
#                                                 target: cofferd >= 50% of the peer's files/s
#   (s4) cofferd's peak RSS (VmHWM, reset before (s1), read after (s3))   target: < 150 MB
# Each transfer is checked: the file got back is the file put (cmp), and every small file
# arrived. It rewrites the SFTP section of docs/benchmarks.md (BENCH_REPORT), from its heading to
# the end marker it writes, and leaves the rest of the page as it is.
#
# Environment (all optional):
#   BENCH_SFTP_MIB=1024     size of the (s1)/(s2) file, MiB (TMPDIR needs 4x free)
#   BENCH_SFTP_FILES=1000   files of (s3)
#   BENCH_SFTP_REPS=1       runs of each scenario on each server; the best counts
#   BENCH_SFTP_CIPHER=aes256-gcm@openssh.com
#   BENCH_SKIP_BUILD=1      use the existing release binary;  COFFERD_BIN=path  use that binary
#   CARGO_TARGET_DIR        default /var/tmp/coffer-target (as .ci/run)
#   BENCH_OUT=./bench-out   logs and sftp.json;  BENCH_REPORT=docs/benchmarks.md
#   BENCH_STRICT=1          exit 1 when a target is missed
#   BENCH_KEEP=1            keep the temporary directory
#   TMPDIR                  the temporary directory's parent: the disk both servers write to
#
# Installs what it needs when missing (as root): openssh-client, openssh-server (for `sshd` and
# `sftp-server`; its service is not started), curl, python3.
# Everything it starts (cofferd, sshd) is stopped on exit, by the PIDs it recorded.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BENCH_NAME=bench-sftp
# shellcheck source=bench/lib.sh
source "$ROOT/scripts/bench/lib.sh"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/coffer-target}
MIB=${BENCH_SFTP_MIB:-1024}
FILES=${BENCH_SFTP_FILES:-1000}
REPS=${BENCH_SFTP_REPS:-1}
CIPHER=${BENCH_SFTP_CIPHER:-aes256-gcm@openssh.com}
OUT=${BENCH_OUT:-$ROOT/bench-out}
REPORT=${BENCH_REPORT:-$ROOT/docs/benchmarks.md}
BIN=${COFFERD_BIN:-$CARGO_TARGET_DIR/release/cofferd}
is_uint "$MIB" && ((MIB >= 1)) || die "BENCH_SFTP_MIB must be a number of MiB, at least 1"
is_uint "$FILES" && ((FILES >= 1)) || die "BENCH_SFTP_FILES must be at least 1"
is_uint "$REPS" && ((REPS >= 1 && REPS <= 10)) || die "BENCH_SFTP_REPS must be 1..10"
[[ $CIPHER =~ ^[A-Za-z0-9@.-]+$ ]] || die "BENCH_SFTP_CIPHER is not a cipher name"

BENCH_EMAIL=sftp-bench@example.com
BENCH_PASSWORD='Bench-Passw0rd!'

WORK=""
COFFERD_PID=""
SSHD_PID=""
# shellcheck disable=SC2317  # invoked by trap
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pid "$COFFERD_PID" cofferd
  stop_pid "$SSHD_PID" sshd
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
# sftp-server's place differs between distributions.
find_sftp_server() {
  local p
  for p in /usr/lib/openssh/sftp-server /usr/libexec/openssh/sftp-server /usr/libexec/sftp-server \
    /usr/lib/ssh/sftp-server; do
    [[ -x $p ]] && {
      printf '%s\n' "$p"
      return 0
    }
  done
  return 1
}
find_sshd() {
  local p
  p=$(command -v sshd 2>/dev/null || true)
  [[ -z $p && -x /usr/sbin/sshd ]] && p=/usr/sbin/sshd
  [[ -n $p ]] && printf '%s\n' "$p"
}
need=()
command -v sftp >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1 || need+=(openssh-client)
[[ -n $(find_sshd) ]] && find_sftp_server >/dev/null || need+=(openssh-server)
command -v curl >/dev/null 2>&1 || need+=(curl ca-certificates)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if ((${#need[@]})); then
  info "installing with apt: ${need[*]}"
  apt_install "${need[@]}"
fi
SSHD=$(find_sshd) || die "no sshd after installing openssh-server"
SFTP_SERVER=$(find_sftp_server) || die "no sftp-server after installing openssh-server"
OPENSSH_VERSION=$(ssh -V 2>&1 | head -n 1)
info "$OPENSSH_VERSION; peer: $SSHD with $SFTP_SERVER; cipher $CIPHER"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/coffer-bench-sftp.XXXXXX")
chmod 700 "$WORK"
mkdir -p "$OUT"
rm -f "$OUT"/sftp.json "$OUT"/sftp-*.log

# --- cofferd ----------------------------------------------------------------------------------
if [[ -n ${COFFERD_BIN:-} || ${BENCH_SKIP_BUILD:-} == 1 ]]; then
  log "cofferd: using $BIN (no build)"
else
  log "cofferd: cargo build --release -p cofferd (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
  cargo build --release -p cofferd
fi
[[ -x $BIN ]] || die "no cofferd binary at $BIN"

DATA=$WORK/data
mkdir -p "$DATA"
PORT=$(spare_port)
SFTP_PORT=$(spare_port)
BASE=http://127.0.0.1:$PORT
COFFERD_ENV=(env -u COFFER_DATABASE_URL RUST_LOG=warn COFFER_LISTEN="127.0.0.1:$PORT"
  COFFER_BASE_URL="$BASE" COFFER_SFTP_LISTEN="127.0.0.1:$SFTP_PORT")
log "cofferd: serve on $BASE, SFTP on 127.0.0.1:$SFTP_PORT (data dir $DATA)"
"${COFFERD_ENV[@]}" "$BIN" --data-dir "$DATA" serve >"$OUT/sftp-cofferd.log" 2>&1 &
COFFERD_PID=$!
if ! wait_http "$BASE/health" 60 "$COFFERD_PID"; then
  tail -n 30 "$OUT/sftp-cofferd.log" >&2 || true
  die "cofferd did not answer on $BASE/health"
fi

log "cofferd: a user, a client, and the user's SSH key"
"${COFFERD_ENV[@]}" "$BIN" --data-dir "$DATA" user create --email "$BENCH_EMAIL" --name Bench \
  --password "$BENCH_PASSWORD" >"$WORK/user.json" 2>"$OUT/sftp-cli.log" ||
  {
    cat "$OUT/sftp-cli.log" "$WORK/user.json" >&2
    die "cofferd user create failed"
  }
"${COFFERD_ENV[@]}" "$BIN" --data-dir "$DATA" client create --name sftp-bench \
  --redirect-uri http://127.0.0.1/cb --scope '*' --flows password \
  >"$WORK/client.json" 2>>"$OUT/sftp-cli.log" ||
  {
    cat "$OUT/sftp-cli.log" "$WORK/client.json" >&2
    die "cofferd client create failed"
  }
code=$(curl -sS -o "$WORK/grant.json" -w '%{http_code}' --max-time 30 "$BASE/oauth/token" \
  --data-urlencode grant_type=password --data-urlencode "username=$BENCH_EMAIL" \
  --data-urlencode "password=$BENCH_PASSWORD" \
  --data-urlencode "client_id=$(json_get "$WORK/client.json" client_id)" \
  --data-urlencode "client_secret=$(json_get "$WORK/client.json" client_secret)")
[[ $code == 200 ]] || die "password grant: HTTP $code $(head -c 300 "$WORK/grant.json")"
TOKEN=$(json_get "$WORK/grant.json" access_token)

# One client key for both servers.
KEY=$WORK/client_ed25519
ssh-keygen -q -t ed25519 -N '' -C sftp-bench -f "$KEY"
python3 -c 'import json,sys; print(json.dumps({"name": "bench", "publicKey": open(sys.argv[1]).read().strip()}))' \
  "$KEY.pub" >"$WORK/key.json"
code=$(curl -sS -o "$WORK/key-answer.json" -w '%{http_code}' --max-time 30 \
  -H "Authorization: Bearer $TOKEN" -H 'X-Coffer-Version: 28' -H 'Content-Type: application/json' \
  --data-binary "@$WORK/key.json" "$BASE/rest/userSshPublicKeys/create")
[[ $code == 201 ]] || die "registering the SSH key: HTTP $code $(head -c 300 "$WORK/key-answer.json")"

# --- the peer: sshd with OpenSSH's sftp-server -----------------------------------------------
log "peer: sshd on loopback"
PEER_PORT=$(spare_port)
PEER=$WORK/sshd
PEER_ROOT=$WORK/peer-files
mkdir -p "$PEER" "$PEER_ROOT"
ssh-keygen -q -t ed25519 -N '' -f "$PEER/host_ed25519"
cp "$KEY.pub" "$PEER/authorized_keys"
chmod 600 "$PEER/authorized_keys"
cat >"$PEER/sshd_config" <<EOF
Port $PEER_PORT
ListenAddress 127.0.0.1
HostKey $PEER/host_ed25519
PidFile $PEER/sshd.pid
AuthorizedKeysFile $PEER/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
UseDNS no
StrictModes no
AllowTcpForwarding no
X11Forwarding no
Subsystem sftp $SFTP_SERVER
EOF
# sshd started by root wants its privilege-separation directory.
if [[ $EUID -eq 0 && ! -d /run/sshd ]]; then mkdir -p /run/sshd && chmod 755 /run/sshd; fi
"$SSHD" -D -e -f "$PEER/sshd_config" >"$OUT/sftp-sshd.log" 2>&1 &
SSHD_PID=$!

ME=$(id -un)
# ssh_opts PORT USER: the client's options, the same for both servers but the port and user.
ssh_opts() {
  printf '%s\n' -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes \
    -o IdentitiesOnly=yes -o LogLevel=ERROR -o ConnectTimeout=20 -o "Ciphers=$CIPHER" \
    -o "User=$2" -i "$KEY" -P "$1"
}
# batch NAME PORT USER FILE: runs `sftp -b FILE` against 127.0.0.1:PORT as USER; fails loudly.
batch() {
  local name=$1 port=$2 user=$3 file=$4 opts
  mapfile -t opts < <(ssh_opts "$port" "$user")
  if ! sftp "${opts[@]}" -b "$file" 127.0.0.1 >"$OUT/sftp-$name.log" 2>&1; then
    tail -n 20 "$OUT/sftp-$name.log" >&2 || true
    die "sftp ($name) failed"
  fi
}
# Until the peer takes a session (sshd may take a moment to listen).
printf 'pwd\n' >"$WORK/pwd.batch"
for ((i = 0; i < 50; i++)); do
  mapfile -t opts < <(ssh_opts "$PEER_PORT" "$ME")
  if sftp "${opts[@]}" -b "$WORK/pwd.batch" 127.0.0.1 >/dev/null 2>&1; then break; fi
  kill -0 "$SSHD_PID" 2>/dev/null || {
    cat "$OUT/sftp-sshd.log" >&2
    die "sshd did not start"
  }
  sleep 0.2
done
batch peer-check "$PEER_PORT" "$ME" "$WORK/pwd.batch"
batch coffer-check "$SFTP_PORT" "$BENCH_EMAIL" "$WORK/pwd.batch"
info "both servers take a session with the same key and cipher"

# --- the data ---------------------------------------------------------------------------------
log "data: one file of $MIB MiB, $FILES files of 4 KiB"
BIG=$WORK/big.bin
head -c "$((MIB * 1024 * 1024))" /dev/urandom >"$BIG"
SMALL=$WORK/small
mkdir -p "$SMALL"
for ((i = 1; i <= FILES; i++)); do head -c 4096 /dev/urandom >"$SMALL/f$i.bin"; done

# Remote places: cofferd's My Folder, and a directory of the peer's.
COFFER_DIR="/My Folder"
printf 'mkdir "%s/small"\n' "$COFFER_DIR" >"$WORK/mkdir-coffer.batch"
batch coffer-mkdir "$SFTP_PORT" "$BENCH_EMAIL" "$WORK/mkdir-coffer.batch"
mkdir -p "$PEER_ROOT/small"

vm() { proc_status "$COFFERD_PID" "$1"; }
NOTES=()
echo 5 2>/dev/null >"/proc/$COFFERD_PID/clear_refs" ||
  NOTES+=("could not reset cofferd's VmHWM (clear_refs): (s4) is the peak since its start")
info "cofferd VmRSS $(vm VmRSS) kB before the runs"

# timed NAME PORT USER FILE: seconds one batch took.
timed() {
  local start end
  start=$(date +%s.%N)
  batch "$@"
  end=$(date +%s.%N)
  python3 -c 'import sys; print("%.3f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$start" "$end"
}

declare -A T
for side in coffer peer; do
  if [[ $side == coffer ]]; then
    port=$SFTP_PORT user=$BENCH_EMAIL dir=$COFFER_DIR
  else
    port=$PEER_PORT user=$ME dir=$PEER_ROOT
  fi
  printf 'put "%s" "%s/big.bin"\n' "$BIG" "$dir" >"$WORK/put.batch"
  printf 'get "%s/big.bin" "%s"\n' "$dir" "$WORK/got.bin" >"$WORK/get.batch"
  : >"$WORK/small.batch"
  for ((i = 1; i <= FILES; i++)); do
    printf 'put "%s/f%d.bin" "%s/small/f%d.bin"\n' "$SMALL" "$i" "$dir" "$i" >>"$WORK/small.batch"
  done
  for ((r = 1; r <= REPS; r++)); do
    log "$side, run $r of $REPS"
    t=$(timed "$side-put" "$port" "$user" "$WORK/put.batch")
    info "(s1) put $MIB MiB: ${t}s"
    T[$side.put]=$(best "${T[$side.put]:-}" "$t")
    t=$(timed "$side-get" "$port" "$user" "$WORK/get.batch")
    info "(s2) get $MIB MiB: ${t}s"
    cmp -s "$BIG" "$WORK/got.bin" || die "($side) the file got back is not the file put"
    rm -f "$WORK/got.bin"
    T[$side.get]=$(best "${T[$side.get]:-}" "$t")
    t=$(timed "$side-small" "$port" "$user" "$WORK/small.batch")
    info "(s3) $FILES puts of 4 KiB: ${t}s"
    T[$side.small]=$(best "${T[$side.small]:-}" "$t")
  done
done
HWM_KB=$(vm VmHWM)
info "(s4) cofferd VmHWM ${HWM_KB:-?} kB over the runs"
# Every small file arrived at both servers.
n=$(find "$PEER_ROOT/small" -type f | wc -l)
((n == FILES)) || die "the peer holds $n of the $FILES small files"
printf 'ls -1 "%s/small"\n' "$COFFER_DIR" >"$WORK/ls.batch"
batch coffer-ls "$SFTP_PORT" "$BENCH_EMAIL" "$WORK/ls.batch"
n=$(grep -c '^[^s].*f[0-9]*\.bin$' "$OUT/sftp-coffer-ls.log" || true)
((n == FILES)) || die "cofferd lists $n of the $FILES small files"
stop_pid "$COFFERD_PID" cofferd
COFFERD_PID=""
stop_pid "$SSHD_PID" sshd
SSHD_PID=""

# --- report -----------------------------------------------------------------------------------
log "report"
export S_DATE S_NPROC S_CPU S_MEM S_KERNEL S_COMMIT S_OPENSSH S_CIPHER S_MIB S_FILES S_REPS \
  S_HWM S_NOTES S_CP S_CG S_CS S_PP S_PG S_PS
S_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
S_NPROC=$(nproc)
S_CPU=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
S_MEM=$(awk '/^MemTotal:/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
S_KERNEL=$(uname -r)
S_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo "no commit")
S_OPENSSH=$OPENSSH_VERSION S_CIPHER=$CIPHER S_MIB=$MIB S_FILES=$FILES S_REPS=$REPS
S_HWM=${HWM_KB:-0}
S_NOTES=$(printf '%s\n' "${NOTES[@]+"${NOTES[@]}"}")
S_CP=${T[coffer.put]} S_CG=${T[coffer.get]} S_CS=${T[coffer.small]}
S_PP=${T[peer.put]} S_PG=${T[peer.get]} S_PS=${T[peer.small]}
strict=0
if [[ ${BENCH_STRICT:-} == 1 ]]; then strict=1; fi
PYTHONPATH="$ROOT/scripts/bench" python3 - "$OUT/sftp.json" "$REPORT" "$strict" <<'EOF'
import json, os, sys
from section import write_section

e = os.environ
out, report, strict = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
mib, files = int(e["S_MIB"]), int(e["S_FILES"])
secs = {k: float(e[v]) for k, v in [("coffer_put", "S_CP"), ("coffer_get", "S_CG"),
        ("coffer_small", "S_CS"), ("peer_put", "S_PP"), ("peer_get", "S_PG"), ("peer_small", "S_PS")]}
rate = lambda amount, s: amount / s if s > 0 else 0.0
put = (rate(mib, secs["coffer_put"]), rate(mib, secs["peer_put"]))
get = (rate(mib, secs["coffer_get"]), rate(mib, secs["peer_get"]))
small = (rate(files, secs["coffer_small"]), rate(files, secs["peer_small"]))
hwm_mb = int(e["S_HWM"] or 0) * 1024 / 1e6
ratio = lambda p: p[0] / p[1] if p[1] > 0 else 0.0
checks = [
    ("(s1) put", ratio(put), 0.60, "%.0f%% of the peer" % (100 * ratio(put)), ">= 60%"),
    ("(s2) get", ratio(get), 0.80, "%.0f%% of the peer" % (100 * ratio(get)), ">= 80%"),
    ("(s3) small puts", ratio(small), 0.50, "%.0f%% of the peer" % (100 * ratio(small)), ">= 50%"),
]
met = [(n, v >= t, shown, want) for n, v, t, shown, want in checks]
met.append(("(s4) peak RSS", 0 < hwm_mb < 150, "%.0f MB" % hwm_mb, "< 150 MB"))
json.dump({"seconds": secs, "mib": mib, "files": files, "put_mib_s": put, "get_mib_s": get,
           "small_files_s": small, "vmhwm_mb": hwm_mb,
           "targets": {n: ok for n, ok, _, _ in met}}, open(out, "w"), indent=1)

# The section runs from its heading to its end marker: the other scripts that rewrite a section
# of the page stop at the next heading, so this one's stays whole.
BEGIN, END = "## SFTP: cofferd against OpenSSH's sftp-server", "<!-- end of the SFTP section -->"
lines = [
    BEGIN,
    "",
    "Written by `scripts/bench-sftp.sh` (run by `just bench`); the rest of this page is not.",
    "",
    "### SFTP run",
    "",
    "- %s, commit %s; %s × %s, %s, Linux %s." % (e["S_DATE"], e["S_COMMIT"], e["S_NPROC"],
        e["S_CPU"] or "unknown CPU", e["S_MEM"], e["S_KERNEL"]),
    "- Client: %s, `sftp -b`, one session per run, cipher `%s`, both servers on loopback with "
    "the same key. The peer: OpenSSH's `sftp-server` behind an `sshd` of the benchmark's own. "
    "cofferd: a fresh node on SQLite, the file in the user's My Folder. Best of %s run(s)."
    % (e["S_OPENSSH"], e["S_CIPHER"], e["S_REPS"]),
    "- (s1) put and (s2) get of one file of %d MiB (compared byte for byte after the get); "
    "(s3) %d files of 4 KiB put in one session; each time is the whole `sftp -b` run, the "
    "session's set-up (connection, key exchange, sign-in) included; (s4) cofferd's peak RSS "
    "(VmHWM, reset before (s1)) over its runs." % (mib, files),
    "",
    "### SFTP results",
    "",
    "| run | cofferd | OpenSSH sftp-server | cofferd / OpenSSH |",
    "|---|---|---|---|",
    "| (s1) put, MiB/s | %.1f | %.1f | %.0f%% |" % (put[0], put[1], 100 * ratio(put)),
    "| (s2) get, MiB/s | %.1f | %.1f | %.0f%% |" % (get[0], get[1], 100 * ratio(get)),
    "| (s3) small puts, files/s | %.0f | %.0f | %.0f%% |" % (small[0], small[1], 100 * ratio(small)),
    "| (s4) peak RSS | %.0f MB | | |" % hwm_mb,
    "",
    "### SFTP targets",
    "",
    "| target | result | met |",
    "|---|---|---|",
]
lines += ["| %s %s | %s | %s |" % (n, want, shown, "yes" if ok else "**no**") for n, ok, shown, want in met]
notes = [n for n in e["S_NOTES"].splitlines() if n.strip()]
if mib < 1024 or files < 1000:
    notes.append("A smaller run than the targets are set for (%d MiB, %d files): the numbers "
                 "show the benchmark works, not what the server does." % (mib, files))
if notes:
    lines += ["", "Notes:", ""] + ["- " + n for n in notes]
lines.append(END)
section = "\n".join(lines) + "\n"
write_section(report, BEGIN, END, section)
for n, ok, shown, want in met:
    print("    %-18s %-22s %s %s" % (n, shown, want, "ok" if ok else "MISSED"))
if strict and not all(ok for _, ok, _, _ in met):
    sys.exit(1)
EOF
info "wrote $REPORT (SFTP section) and $OUT/sftp.json"
