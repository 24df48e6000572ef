#!/usr/bin/env bash
# A throwaway WebDAV server (WsgiDAV on cheroot, from PyPI) for Coffer's source connectors, on
# 127.0.0.1 only.
#
#   scripts/webdav-test-server.sh run -- CMD [ARGS...]
#       starts the server, exports the variables below, runs CMD, then stops the server and
#       removes its temporary directory (also on failure or Ctrl-C); exits with CMD's status.
#       e.g. scripts/webdav-test-server.sh run -- cargo test -p coffer-sources
#
#   COFFER_TEST_WEBDAV_URL         http://127.0.0.1:PORT/dav/, HTTP Basic authentication
#   COFFER_TEST_WEBDAV_DIGEST_URL  http://127.0.0.1:PORT/dav/, HTTP Digest authentication (MD5)
#   COFFER_TEST_WEBDAV_USER        the user both accept (`coffer`)
#   COFFER_TEST_WEBDAV_PASSWORD    its password (random for each run)
#   COFFER_TEST_WEBDAV_ROOT        the directory both serve as /dav/ (empty at the start)
#
# Both servers offer locking (DAV class 2). The server is scripts/webdav_test_server.py.
#
# Needs: python3 with the venv module (Debian's python3-venv is installed with apt-get when
# missing and run as root). WsgiDAV and cheroot (pinned below) are installed into a virtual
# environment under the cargo target directory (COFFER_WEBDAV_VENV overrides it) on first use
# and reused afterwards.
set -euo pipefail

SERVICE=webdav-test-server
# shellcheck source=scripts/lib/service.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/service.sh"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REQUIREMENT="wsgidav==4.4.0 cheroot==11.1.2"
TARGET=${CARGO_TARGET_DIR:-$HERE/../target}
VENV=${COFFER_WEBDAV_VENV:-$TARGET/webdav-test-venv}

WEBDAV_DIR=""
WEBDAV_PID=""

# stop_server: stops the server this script started (by its pid) and removes its directory.
# shellcheck disable=SC2317  # invoked by trap
stop_server() {
  stop_pid "$WEBDAV_PID" "the WebDAV server"
  if [[ -n $WEBDAV_DIR ]]; then rm -rf -- "$WEBDAV_DIR"; fi
}

start_server() {
  ensure_webdav_venv
  WEBDAV_DIR=$(mktemp -d "${TMPDIR:-/tmp}/coffer-webdav.XXXXXX")
  WEBDAV_PASSWORD=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
  "$VENV/bin/python" "$HERE/webdav_test_server.py" "$WEBDAV_DIR" coffer "$WEBDAV_PASSWORD" \
    >"$WEBDAV_DIR/server.log" 2>&1 </dev/null &
  WEBDAV_PID=$!
  if ! wait_ready 300 "$WEBDAV_PID" test -f "$WEBDAV_DIR/ports"; then
    tail -n 20 "$WEBDAV_DIR/server.log" >&2 || true
    die "the WebDAV server did not start"
  fi
  read -r BASIC_PORT DIGEST_PORT <"$WEBDAV_DIR/ports"
  log "ready: http://127.0.0.1:$BASIC_PORT/dav/ (Basic), http://127.0.0.1:$DIGEST_PORT/dav/ (Digest) (pid $WEBDAV_PID)"
}

# ensure_webdav_venv: the virtual environment with both pinned packages, made on first use and
# reused while its stamp names the same pins (as the shared ensure_venv, which installs a single
# requirement); one installer at a time.
ensure_webdav_venv() {
  local stamp=$VENV/.coffer-requirement
  if [[ -x $VENV/bin/python && -f $stamp && $(cat "$stamp") == "$REQUIREMENT" ]]; then return 0; fi
  command -v python3 >/dev/null 2>&1 || die "python3 not found"
  mkdir -p "$(dirname "$VENV")"
  exec 9>"$VENV.lock"
  if command -v flock >/dev/null 2>&1; then flock 9; fi
  if [[ -x $VENV/bin/python && -f $stamp && $(cat "$stamp") == "$REQUIREMENT" ]]; then
    exec 9>&-
    return 0
  fi
  if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    apt_install python3-venv
  fi
  log "installing $REQUIREMENT into $VENV"
  rm -rf -- "$VENV"
  python3 -m venv "$VENV" >&2
  # shellcheck disable=SC2086  # two pinned requirements, split on purpose
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $REQUIREMENT >&2
  printf '%s\n' "$REQUIREMENT" >"$stamp"
  exec 9>&-
}

cmd=${1:-}
[[ $cmd == run ]] || usage 21
shift
[[ ${1:-} == -- ]] && shift
[[ $# -gt 0 ]] || usage 21
run_frame stop_server
start_server
export COFFER_TEST_WEBDAV_URL=http://127.0.0.1:$BASIC_PORT/dav/
export COFFER_TEST_WEBDAV_DIGEST_URL=http://127.0.0.1:$DIGEST_PORT/dav/
export COFFER_TEST_WEBDAV_USER=coffer
export COFFER_TEST_WEBDAV_PASSWORD=$WEBDAV_PASSWORD
export COFFER_TEST_WEBDAV_ROOT=$WEBDAV_DIR/root
run_command "$@"
