#!/usr/bin/env bash
# A throwaway PostgreSQL server for Coffer's tests, on 127.0.0.1 only.
#
#   scripts/pg-test-server.sh run -- CMD [ARGS...]
#       starts a server, exports COFFER_TEST_POSTGRES_URL, runs CMD, then stops the server and
#       removes its temporary directory (also on failure or Ctrl-C); exits with CMD's status.
#       e.g. scripts/pg-test-server.sh run -- cargo test -p coffer-tests
#
#   eval "$(scripts/pg-test-server.sh start)"
#       starts a server and prints `export COFFER_TEST_POSTGRES_URL=...` and
#       `export COFFER_PG_TEST_DIR=...` lines for the calling shell.
#
#   scripts/pg-test-server.sh stop [DIR]
#       stops the server started in DIR (default: $COFFER_PG_TEST_DIR, else the last one that
#       `start` recorded) and removes DIR.
#
# The URL is postgres://coffer@127.0.0.1:PORT/postgres; `coffer` is a superuser (trust auth), so
# tests can create a database each. Durability is switched off for speed (fsync, full-page
# writes, synchronous commit): never point this at data you want to keep.
#
# Needs: PostgreSQL server binaries (installed with apt-get when missing and run as root).
# PostgreSQL refuses to run as root, so as root the server runs as the system user `coffer-pg`
# (created when missing; override with COFFER_PG_USER).
set -euo pipefail

SERVICE=pg-test-server
# shellcheck source=scripts/lib/service.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/service.sh"

PG_OS_USER=${COFFER_PG_USER:-coffer-pg}
PG_DB_USER=coffer
LAST_FILE=${TMPDIR:-/tmp}/coffer-pg-test.last

# --- locating / installing PostgreSQL ---------------------------------------------------------

find_pg_bin() {
  local d best="" dirs=()
  # The highest installed major version under /usr/lib/postgresql wins.
  shopt -s nullglob
  dirs=(/usr/lib/postgresql/*/bin)
  shopt -u nullglob
  if ((${#dirs[@]})); then
    while IFS= read -r d; do
      if [[ -x $d/initdb && -x $d/pg_ctl && -x $d/postgres ]]; then best=$d; fi
    done < <(printf '%s\n' "${dirs[@]}" | sort -V)
  fi
  if [[ -z $best ]] && command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    best=$(dirname "$(command -v pg_ctl)")
  fi
  printf '%s' "$best"
}

ensure_pg_installed() {
  PG_BIN=$(find_pg_bin)
  if [[ -n $PG_BIN ]]; then return; fi
  log "PostgreSQL server not found"
  apt_install postgresql
  PG_BIN=$(find_pg_bin)
  [[ -n $PG_BIN ]] || die "PostgreSQL installed but initdb/pg_ctl still not found"
}

pg_isready_bin() {
  if [[ -x $PG_BIN/pg_isready ]]; then printf '%s' "$PG_BIN/pg_isready"
  elif command -v pg_isready >/dev/null 2>&1; then command -v pg_isready
  fi
}

# --- running as the unprivileged user ---------------------------------------------------------

ensure_os_user() {
  [[ $EUID -eq 0 ]] || return 0
  if ! id -u "$PG_OS_USER" >/dev/null 2>&1; then
    log "creating system user $PG_OS_USER"
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin "$PG_OS_USER"
  fi
}

# as_pg CMD...: run CMD as the server's OS user (root) or as ourselves (anyone else), from a
# directory that user can read.
as_pg() {
  if [[ $EUID -eq 0 ]]; then
    (cd / && runuser -u "$PG_OS_USER" -- "$@")
  else
    (cd / && "$@")
  fi
}

# --- start / stop -----------------------------------------------------------------------------

# start_server: sets PG_DIR and PG_URL.
start_server() {
  ensure_pg_installed
  ensure_os_user
  PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/coffer-pg.XXXXXX")
  chmod 0755 "$PG_DIR"
  if [[ $EUID -eq 0 ]]; then chown "$PG_OS_USER:" "$PG_DIR"; fi
  local data=$PG_DIR/data

  log "initdb ($PG_BIN) in $data"
  if ! as_pg "$PG_BIN/initdb" -D "$data" -A trust -U "$PG_DB_USER" --no-sync \
    --encoding=UTF8 --locale=C >"$PG_DIR/initdb.log" 2>&1; then
    cat "$PG_DIR/initdb.log" >&2
    die "initdb failed"
  fi

  local port attempt
  for attempt in 1 2 3 4 5; do
    port=$(spare_port)
    log "starting postgres on 127.0.0.1:$port (attempt $attempt)"
    if as_pg "$PG_BIN/pg_ctl" start -D "$data" -l "$PG_DIR/postgres.log" -w -t 60 -s \
      -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$PG_DIR -c fsync=off -c full_page_writes=off -c synchronous_commit=off -c max_connections=300" >&2; then
      break
    fi
    port=""
    tail -n 20 "$PG_DIR/postgres.log" >&2 || true
  done
  [[ -n $port ]] || die "postgres did not start"

  local ready
  ready=$(pg_isready_bin)
  if [[ -n $ready ]]; then
    wait_ready 600 "" "$ready" -q -h 127.0.0.1 -p "$port" -U "$PG_DB_USER" -d postgres ||
      die "postgres started but does not answer on 127.0.0.1:$port"
  fi
  PG_URL="postgres://$PG_DB_USER@127.0.0.1:$port/postgres"
  printf '%s\n' "$PG_DIR" >"$LAST_FILE"
  log "ready: $PG_URL"
}

# stop_server DIR: stops the postmaster whose data directory is DIR/data, then removes DIR.
stop_server() {
  local dir=$1 data=$1/data
  [[ -n $dir && -d $dir ]] || { log "nothing to stop (no directory '$dir')"; return 0; }
  [[ -f $dir/initdb.log ]] || die "$dir does not look like a pg-test-server directory; not touching it"
  if [[ -f $data/postmaster.pid ]]; then
    PG_BIN=${PG_BIN:-$(find_pg_bin)}
    if [[ -n $PG_BIN ]] && as_pg "$PG_BIN/pg_ctl" stop -D "$data" -m fast -w -t 30 -s >&2; then
      log "stopped postgres in $data"
    else
      # Fall back to the PID file, but only for a postgres process serving exactly this data
      # directory.
      log "pg_ctl stop failed; stopping the postmaster by its PID"
      local pid
      pid=$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)
      if is_process "$pid" "$data"; then stop_pid "$pid" postmaster QUIT; fi
    fi
  fi
  rm -rf -- "$dir"
  forget_last "$LAST_FILE" "$dir"
}

# The stop of `run`: our server, if it got as far as starting.
# shellcheck disable=SC2317  # invoked by trap
stop_run() {
  if [[ -n ${PG_DIR:-} ]]; then stop_server "$PG_DIR"; fi
}

# --- commands ---------------------------------------------------------------------------------

cmd=${1:-}
[[ -n $cmd ]] || usage 20
shift

case $cmd in
  start)
    start_server
    printf 'export COFFER_TEST_POSTGRES_URL=%s\n' "$PG_URL"
    printf 'export COFFER_PG_TEST_DIR=%s\n' "$PG_DIR"
    ;;
  stop)
    stop_server "$(last_dir "$LAST_FILE" COFFER_PG_TEST_DIR "${1:-}")"
    ;;
  run)
    [[ ${1:-} == -- ]] && shift
    [[ $# -gt 0 ]] || usage 20
    PG_DIR=""
    run_frame stop_run
    start_server
    export COFFER_TEST_POSTGRES_URL=$PG_URL
    run_command "$@"
    ;;
  *) usage 20 ;;
esac
