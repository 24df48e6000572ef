#!/usr/bin/env bash
# A throwaway S3 API server (moto, from PyPI) for Coffer's blob storage tests, on 127.0.0.1 only.
#
#   scripts/s3-test-server.sh run -- CMD [ARGS...]
#       starts a server with an empty bucket, exports COFFER_TEST_S3_URL,
#       AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, runs CMD, then stops the server and removes
#       its temporary directory (also on failure or Ctrl-C); exits with CMD's status.
#       e.g. scripts/s3-test-server.sh run -- cargo test -p coffer-storage
#
#   eval "$(scripts/s3-test-server.sh start)"
#       starts a server and prints `export ...` lines for the calling shell (the three above and
#       COFFER_S3_TEST_DIR).
#
#   scripts/s3-test-server.sh stop [DIR]
#       stops the server started in DIR (default: $COFFER_S3_TEST_DIR, else the last one that
#       `start` recorded) and removes DIR.
#
# The URL is s3://coffer-test/<random prefix>?endpoint=http://127.0.0.1:PORT&region=us-east-1
# &allow_http=true; the credentials are `test`/`test` (moto accepts any). moto keeps everything
# in memory: never point this at data you want to keep.
#
# Needs: python3 with the venv module (Debian's python3-venv is installed with apt-get when
# missing and run as root). moto[server] (pinned below) is installed into a virtual environment
# under ${XDG_CACHE_HOME:-$HOME/.cache}/coffer/moto-venv on first use and reused afterwards.
set -euo pipefail

MOTO_REQUIREMENT="moto[server]==5.2.5"
VENV=${COFFER_MOTO_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/coffer/moto-venv}
BUCKET=coffer-test
LAST_FILE=${TMPDIR:-/tmp}/coffer-s3-test.last

log() { printf 's3-test-server: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
  sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# --- installing moto --------------------------------------------------------------------------

ensure_venv_module() {
  if python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then return; fi
  [[ $EUID -eq 0 ]] || die "python3 lacks the venv module and not root: install python3-venv"
  log "python3 lacks the venv module; installing python3-venv with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends python3-venv >&2
}

install_moto() {
  local stamp=$VENV/.coffer-requirement
  if [[ -x $VENV/bin/moto_server && -f $stamp && $(cat "$stamp") == "$MOTO_REQUIREMENT" ]]; then
    return
  fi
  command -v python3 >/dev/null 2>&1 || die "python3 not found"
  mkdir -p "$(dirname "$VENV")"
  # One installer at a time (parallel runs share the environment).
  exec 9>"$VENV.lock"
  if command -v flock >/dev/null 2>&1; then flock 9; fi
  if [[ -x $VENV/bin/moto_server && -f $stamp && $(cat "$stamp") == "$MOTO_REQUIREMENT" ]]; then
    exec 9>&-
    return
  fi
  ensure_venv_module
  log "installing $MOTO_REQUIREMENT into $VENV"
  rm -rf -- "$VENV"
  python3 -m venv "$VENV" >&2
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$MOTO_REQUIREMENT" >&2
  [[ -x $VENV/bin/moto_server ]] || die "moto installed but $VENV/bin/moto_server is missing"
  printf '%s\n' "$MOTO_REQUIREMENT" >"$stamp"
  exec 9>&-
}

# --- ports ------------------------------------------------------------------------------------

spare_port() {
  "$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# --- start / stop -----------------------------------------------------------------------------

# start_server: sets S3_DIR, S3_PORT and S3_URL. The server runs in its own session so that
# `start` can return while it keeps running; its pid is in $S3_DIR/moto.pid.
start_server() {
  install_moto
  S3_DIR=$(mktemp -d "${TMPDIR:-/tmp}/coffer-s3.XXXXXX")
  local attempt pid i
  S3_PORT=""
  for attempt in 1 2 3 4 5; do
    local port
    port=$(spare_port)
    log "starting moto_server on 127.0.0.1:$port (attempt $attempt)"
    setsid "$VENV/bin/moto_server" -H 127.0.0.1 -p "$port" >"$S3_DIR/moto.log" 2>&1 </dev/null &
    pid=$!
    printf '%s %s\n' "$pid" "$port" >"$S3_DIR/moto.pid"
    for ((i = 0; i < 150; i++)); do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then S3_PORT=$port; break 2; fi
      sleep 0.1
    done
    tail -n 20 "$S3_DIR/moto.log" >&2 || true
    kill "$pid" 2>/dev/null || true
  done
  [[ -n $S3_PORT ]] || die "moto_server did not start"

  local endpoint=http://127.0.0.1:$S3_PORT
  AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test "$VENV/bin/python" - "$endpoint" "$BUCKET" <<'PY' >&2 ||
import sys
import boto3
endpoint, bucket = sys.argv[1], sys.argv[2]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
s3.create_bucket(Bucket=bucket)
PY
    die "could not create bucket $BUCKET on $endpoint"

  local prefix
  prefix="run-$(date +%s)-$RANDOM$RANDOM"
  S3_URL="s3://$BUCKET/$prefix?endpoint=$endpoint&region=us-east-1&allow_http=true"
  printf '%s\n' "$S3_DIR" >"$LAST_FILE"
  log "ready: $S3_URL (pid $pid)"
}

# stop_server DIR: stops the moto_server recorded in DIR/moto.pid, then removes DIR.
stop_server() {
  local dir=$1 pid port i
  [[ -n $dir && -d $dir ]] || { log "nothing to stop (no directory '$dir')"; return 0; }
  [[ -f $dir/moto.pid ]] || die "$dir does not look like an s3-test-server directory; not touching it"
  read -r pid port <"$dir/moto.pid" || true
  # Only a moto_server process listening on the recorded port.
  if [[ $pid =~ ^[0-9]+$ ]] && [[ -r /proc/$pid/cmdline ]] &&
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "moto_server.* -p $port"; then
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    log "stopped moto_server (pid $pid)"
  fi
  rm -rf -- "$dir"
  if [[ -f $LAST_FILE && $(cat "$LAST_FILE" 2>/dev/null) == "$dir" ]]; then rm -f -- "$LAST_FILE"; fi
}

# EXIT trap of `run`: stop our server (if it got as far as starting) and keep the exit status.
# shellcheck disable=SC2317  # invoked by trap
cleanup_run() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n ${S3_DIR:-} ]]; then stop_server "$S3_DIR" || true; fi
  exit "$rc"
}

# --- commands ---------------------------------------------------------------------------------

cmd=${1:-}
[[ -n $cmd ]] || usage
shift

case $cmd in
  start)
    start_server
    printf 'export COFFER_TEST_S3_URL=%q\n' "$S3_URL"
    printf 'export AWS_ACCESS_KEY_ID=test\n'
    printf 'export AWS_SECRET_ACCESS_KEY=test\n'
    printf 'export COFFER_S3_TEST_DIR=%q\n' "$S3_DIR"
    ;;
  stop)
    dir=${1:-${COFFER_S3_TEST_DIR:-}}
    if [[ -z $dir && -f $LAST_FILE ]]; then dir=$(cat "$LAST_FILE"); fi
    [[ -n $dir ]] || die "which server? pass its directory or set COFFER_S3_TEST_DIR"
    stop_server "$dir"
    ;;
  run)
    [[ ${1:-} == -- ]] && shift
    [[ $# -gt 0 ]] || usage
    S3_DIR=""
    trap cleanup_run EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    start_server
    export COFFER_TEST_S3_URL=$S3_URL
    export AWS_ACCESS_KEY_ID=test
    export AWS_SECRET_ACCESS_KEY=test
    status=0
    "$@" || status=$?
    exit "$status"
    ;;
  -h | --help | help) usage ;;
  *) usage ;;
esac
