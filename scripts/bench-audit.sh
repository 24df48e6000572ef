#!/usr/bin/env bash
# Coffer's activity log benchmark (not a test); scripts/bench.sh (`just bench`) runs it after the
# SCIM listing, and it runs alone too:
#
#   scripts/bench-audit.sh
#
# The release binary tests/src/bin/audit-bench.rs (one node on SQLite in a temporary directory):
#   - the cost of recording: folder creates and 4 KiB one-shot uploads over HTTP (5,000 and 2,500
#     with the activity log on, as many with it off: a benchmark-only switch), the two sides
#     alternating every 20 calls so that drift falls on both alike, each side's calls over its time;
#     target: the log costs at most 10% of the throughput;
#   - BENCH_AUDIT_RECORDS (default 1,000,000) records appended through the server's own append,
#     then the walk of `cofferd audit verify` timed; target: >= 100,000 records/s;
#   - a DLI `activities` export of that user over a year (all those records) made by the job
#     worker in the same process, its peak RSS measured as VmHWM (reset through
#     /proc/self/clear_refs before the job, as scripts/bench-content.sh does for cofferd) and its
#     CSV's records counted; target: < 150 MB.
# It rewrites the activity-log section of docs/benchmarks.md (BENCH_REPORT), between the
# markers it writes, and leaves the rest of the page as it is.
#
# Environment (all optional):
#   BENCH_AUDIT_RECORDS=1000000
#   BENCH_SKIP_BUILD=1      use the existing release binary
#   CARGO_TARGET_DIR        default /var/tmp/coffer-target (as .ci/run)
#   BENCH_REPORT=docs/benchmarks.md
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/coffer-target}
if [[ ${BENCH_SKIP_BUILD:-} != 1 ]]; then
  cargo build --release -q -p coffer-tests --bin audit-bench
fi
"$CARGO_TARGET_DIR/release/audit-bench" "${BENCH_AUDIT_RECORDS:-1000000}" \
  "${BENCH_REPORT:-$ROOT/docs/benchmarks.md}"
