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

PG_OS_USER=${COFFER_PG_USER:-coffer-pg}
PG_DB_USER=coffer
LAST_FILE=${TMPDIR:-/tmp}/coffer-pg-test.last

log() { printf 'pg-test-server: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

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
  [[ $EUID -eq 0 ]] || die "PostgreSQL server binaries not found and not root: install the 'postgresql' package"
  log "PostgreSQL server not found; installing it with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    postgresql >&2
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

# --- ports ------------------------------------------------------------------------------------

port_is_free() {
  # Nothing answers on 127.0.0.1:$1 (the connect fails) -> treat as free.
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

spare_port() {
  local p
  if command -v python3 >/dev/null 2>&1; then
    p=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null || true)
    if [[ -n $p ]]; then printf '%s' "$p"; return; fi
  fi
  for ((p = 55432 + RANDOM % 1000; p < 60000; p++)); do
    if port_is_free "$p"; then printf '%s' "$p"; return; fi
  done
  die "no free port found"
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

  local ready i
  ready=$(pg_isready_bin)
  if [[ -n $ready ]]; then
    for ((i = 0; i < 120; i++)); do
      if "$ready" -q -h 127.0.0.1 -p "$port" -U "$PG_DB_USER" -d postgres; then break; fi
      sleep 0.5
    done
    "$ready" -q -h 127.0.0.1 -p "$port" -U "$PG_DB_USER" -d postgres ||
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
      # Fall back to the pid file, but only for a postgres process serving exactly this data dir.
      local pid i
      pid=$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)
      if [[ $pid =~ ^[0-9]+$ ]] && [[ -r /proc/$pid/cmdline ]] &&
        tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$data"; then
        log "pg_ctl stop failed; sending SIGQUIT to postmaster $pid"
        kill -QUIT "$pid" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
          kill -0 "$pid" 2>/dev/null || break
          sleep 0.2
        done
        if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
      fi
    fi
  fi
  rm -rf -- "$dir"
  if [[ -f $LAST_FILE && $(cat "$LAST_FILE" 2>/dev/null) == "$dir" ]]; then rm -f -- "$LAST_FILE"; fi
}

# EXIT trap of `run`: stop our server (if it got as far as starting) and keep the exit status.
# shellcheck disable=SC2317  # invoked by trap
cleanup_run() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n ${PG_DIR:-} ]]; then stop_server "$PG_DIR" || true; fi
  exit "$rc"
}

# --- commands ---------------------------------------------------------------------------------

cmd=${1:-}
[[ -n $cmd ]] || usage
shift

case $cmd in
  start)
    start_server
    printf 'export COFFER_TEST_POSTGRES_URL=%s\n' "$PG_URL"
    printf 'export COFFER_PG_TEST_DIR=%s\n' "$PG_DIR"
    ;;
  stop)
    dir=${1:-${COFFER_PG_TEST_DIR:-}}
    if [[ -z $dir && -f $LAST_FILE ]]; then dir=$(cat "$LAST_FILE"); fi
    [[ -n $dir ]] || die "which server? pass its directory or set COFFER_PG_TEST_DIR"
    stop_server "$dir"
    ;;
  run)
    [[ ${1:-} == -- ]] && shift
    [[ $# -gt 0 ]] || usage
    PG_DIR=""
    trap cleanup_run EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    start_server
    export COFFER_TEST_POSTGRES_URL=$PG_URL
    status=0
    "$@" || status=$?
    exit "$status"
    ;;
  -h | --help | help) usage ;;
  *) usage ;;
esac
