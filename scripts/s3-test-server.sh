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

SERVICE=s3-test-server
# shellcheck source=scripts/lib/service.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/service.sh"

MOTO_REQUIREMENT="moto[server]==5.2.5"
VENV=${COFFER_MOTO_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/coffer/moto-venv}
BUCKET=coffer-test
LAST_FILE=${TMPDIR:-/tmp}/coffer-s3-test.last

# --- start / stop -----------------------------------------------------------------------------

# start_server: sets S3_DIR, S3_PORT and S3_URL. The server runs in its own session so that
# `start` can return while it keeps running; its pid is in $S3_DIR/moto.pid.
start_server() {
  ensure_venv "$VENV" "$MOTO_REQUIREMENT" bin/moto_server
  S3_DIR=$(mktemp -d "${TMPDIR:-/tmp}/coffer-s3.XXXXXX")
  local attempt pid
  S3_PORT=""
  for attempt in 1 2 3 4 5; do
    local port
    port=$(spare_port)
    log "starting moto_server on 127.0.0.1:$port (attempt $attempt)"
    setsid "$VENV/bin/moto_server" -H 127.0.0.1 -p "$port" >"$S3_DIR/moto.log" 2>&1 </dev/null &
    pid=$!
    write_pid_file "$S3_DIR/moto.pid" "$pid" "$port"
    if wait_ready 150 "$pid" answers "$port"; then
      S3_PORT=$port
      break
    fi
    tail -n 20 "$S3_DIR/moto.log" >&2 || true
    stop_pid "$pid" moto_server
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
  local dir=$1
  [[ -n $dir && -d $dir ]] || { log "nothing to stop (no directory '$dir')"; return 0; }
  [[ -f $dir/moto.pid ]] || die "$dir does not look like an s3-test-server directory; not touching it"
  # Only a moto_server process listening on the recorded port.
  stop_pid_file "$dir/moto.pid" "moto_server.* -p {port}" moto_server
  rm -rf -- "$dir"
  forget_last "$LAST_FILE" "$dir"
}

# The stop of `run`: our server, if it got as far as starting.
# shellcheck disable=SC2317  # invoked by trap
stop_run() {
  if [[ -n ${S3_DIR:-} ]]; then stop_server "$S3_DIR"; fi
}

# --- commands ---------------------------------------------------------------------------------

cmd=${1:-}
[[ -n $cmd ]] || usage 25
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
    stop_server "$(last_dir "$LAST_FILE" COFFER_S3_TEST_DIR "${1:-}")"
    ;;
  run)
    [[ ${1:-} == -- ]] && shift
    [[ $# -gt 0 ]] || usage 25
    S3_DIR=""
    run_frame stop_run
    start_server
    export COFFER_TEST_S3_URL=$S3_URL
    export AWS_ACCESS_KEY_ID=test
    export AWS_SECRET_ACCESS_KEY=test
    run_command "$@"
    ;;
  *) usage 25 ;;
esac
