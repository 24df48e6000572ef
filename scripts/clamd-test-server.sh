#!/usr/bin/env bash
# Starts a throwaway ClamAV daemon (clamd, Debian's clamav-daemon, installed when missing) on a
# spare loopback port and a Unix socket in a temporary directory, with a database that knows only
# the EICAR test file, runs a command with COFFER_TEST_CLAMD* set, and stops clamd afterwards.
# Nothing is downloaded: freshclam is never run and the system's clamd, if any, is not touched.
#
#   scripts/clamd-test-server.sh run -- cargo test -p coffer-scanner
set -euo pipefail

SERVICE=clamd-test-server
# shellcheck source=scripts/lib/service.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/service.sh"

[[ ${1:-} == run ]] || usage 7
shift
[[ ${1:-} == -- ]] && shift
[[ $# -gt 0 ]] || usage 7

CLAMD=/usr/sbin/clamd
if [[ ! -x $CLAMD ]]; then apt_install clamav-daemon; fi

DIR=""
PID=""
# shellcheck disable=SC2317  # invoked by trap
stop_clamd() {
  stop_pid "$PID" clamd
  if [[ -n $DIR ]]; then rm -rf -- "$DIR"; fi
}
run_frame stop_clamd
DIR=$(mktemp -d "${TMPDIR:-/tmp}/coffer-clamd.XXXXXX")

PORT=$(spare_port)
SOCKET=$DIR/clamd.sock
# Small enough that a test can exceed it quickly; clamd's M is MiB.
STREAM_MAX_MIB=16
mkdir -p "$DIR/db" "$DIR/tmp"

# The database: the 68-byte EICAR test file, as a whole-file MD5 (.hdb, `md5:size:name`), and as a
# body signature (.ndb, `name:target:offset:hex`) because a hash only matches content that is
# exactly the file, never EICAR inside larger content. Both have one name, so the verdict names it
# whichever matches; clamd appends `.UNOFFICIAL` (they are not from a signed database):
# `Coffer.Test.EICAR.UNOFFICIAL`. clamd refuses to start with no signature at all.
EICAR='X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*'
size=$(printf '%s' "$EICAR" | wc -c)
[[ $size -eq 68 ]] || die "the EICAR string is $size bytes, not 68"
md5=$(printf '%s' "$EICAR" | md5sum | cut -d' ' -f1)
hex=$(printf '%s' "$EICAR" | od -An -v -tx1 | tr -d ' \n')
echo "$md5:$size:Coffer.Test.EICAR" >"$DIR/db/coffer.hdb"
echo "Coffer.Test.EICAR:0:*:$hex" >"$DIR/db/coffer.ndb"

# No `User`: clamd runs as whoever runs this script (it needs no clamav account or group).
cat >"$DIR/clamd.conf" <<CONF
Foreground yes
LocalSocket $SOCKET
TCPSocket $PORT
TCPAddr 127.0.0.1
DatabaseDirectory $DIR/db
TemporaryDirectory $DIR/tmp
LogFile $DIR/clamd.log
LogTime yes
StreamMaxLength ${STREAM_MAX_MIB}M
MaxThreads 4
SelfCheck 3600
CONF

# zPING → PONG, over TCP or the Unix socket.
clamd_ping() {
  python3 - "$1" <<'PY'
import socket, sys
addr = sys.argv[1]
if addr.startswith("/"):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect(addr)
else:
    s = socket.create_connection(("127.0.0.1", int(addr)), timeout=2)
s.sendall(b"zPING\0")
reply = b""
while not reply.endswith(b"\0"):
    chunk = s.recv(64)
    if not chunk:
        break
    reply += chunk
sys.exit(0 if reply.rstrip(b"\0") == b"PONG" else 1)
PY
}

"$CLAMD" --config-file="$DIR/clamd.conf" >"$DIR/clamd.out" 2>&1 </dev/null &
PID=$!
if ! wait_ready 300 "$PID" clamd_ping "$PORT" || ! clamd_ping "$SOCKET" 2>/dev/null; then
  cat "$DIR/clamd.out" "$DIR/clamd.log" >&2 2>/dev/null || true
  die "clamd did not answer PING"
fi
log "ready: tcp://127.0.0.1:$PORT and unix://$SOCKET (pid $PID, $("$CLAMD" --version))"

export COFFER_TEST_CLAMD="tcp://127.0.0.1:$PORT"
export COFFER_TEST_CLAMD_SOCKET="unix://$SOCKET"
export COFFER_TEST_CLAMD_STREAM_MAX=$((STREAM_MAX_MIB * 1024 * 1024))
run_command "$@"
