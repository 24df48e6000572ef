#!/usr/bin/env bash
# How busy an idle node keeps its database: runs the end-to-end test
# `an_idle_node_keeps_its_database_quiet` (tests/tests/delivery.rs) with the webhook pump, the
# mail pump and the job worker on their defaults and nothing to do, watching for a minute, on
# SQLite and, with --postgres, on a throwaway PostgreSQL (scripts/pg-test-server.sh). The test
# prints the statements the node ran (a counter on every connection of its database, see
# `Db::statements`) and, on PostgreSQL, the transactions `pg_stat_database` saw committed.
#
# Usage: scripts/bench/idle-node.sh [--postgres] [--seconds N]
set -euo pipefail
BENCH_NAME=idle-node
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."

seconds=60
postgres=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --postgres) postgres=1 ;;
    --seconds)
      shift
      is_uint "${1:-}" || die "--seconds needs a number"
      seconds=$1
      ;;
    -h | --help)
      sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) die "unknown argument: $1" ;;
  esac
  shift
done

# run [PREFIX...]: the test, under PREFIX (e.g. the PostgreSQL test server's `run --`).
run() {
  COFFER_IDLE_SECONDS=$seconds "$@" cargo test -q -p coffer-tests --test delivery \
    an_idle_node_keeps_its_database_quiet -- --exact --nocapture 2>&1 |
    grep -E '^idle node on|test result|panicked' || true
}

log "SQLite, $seconds s idle"
run
if [[ -n $postgres ]]; then
  log "PostgreSQL, $seconds s idle"
  run scripts/pg-test-server.sh run --
fi
