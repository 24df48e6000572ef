# Shell helpers shared by scripts/bench.sh, scripts/bench-scim.sh and scripts/bench-content.sh
# (sourced; BENCH_NAME names the script in error messages).

log() { printf '\n==> %s\n' "$*"; }
info() { printf '    %s\n' "$*"; }
die() {
  printf '%s: error: %s\n' "${BENCH_NAME:-bench}" "$*" >&2
  exit 1
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# stop_pid PID NAME: TERM, wait up to 10 s, then KILL; only that one process.
stop_pid() {
  local pid=$1 name=$2 i
  [[ -n $pid ]] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    info "$name ($pid) did not stop on TERM; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

apt_updated=""
# apt_install PACKAGE...: installs Debian packages (as root only).
apt_install() {
  [[ $EUID -eq 0 ]] || die "missing $*; install it (apt-get install $*) or run as root"
  export DEBIAN_FRONTEND=noninteractive
  if [[ -z $apt_updated ]]; then
    apt-get update -qq
    apt_updated=1
  fi
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

spare_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# wait_http URL SECONDS PID: until URL answers at all (any HTTP status); fails when PID dies.
wait_http() {
  local url=$1 secs=$2 pid=$3 i
  for ((i = 0; i < secs * 5; i++)); do
    if curl -s -o /dev/null --max-time 2 "$url"; then return 0; fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}

# json_get FILE KEY: the top-level string/number KEY of the JSON in FILE ("" when absent).
json_get() {
  python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
v = d.get(sys.argv[2], "") if isinstance(d, dict) else ""
print(v if v is not None else "")' "$1" "$2"
}

# proc_status PID KEY: a field of /proc/PID/status in kB (VmRSS, VmHWM), empty when gone.
proc_status() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null || true; }

# best OLD NEW: the smaller of two times in seconds (OLD empty: NEW).
best() { python3 -c 'import sys; a, b = sys.argv[1], float(sys.argv[2]); print(b if a == "" or b < float(a) else a)' "$1" "$2"; }

# wait_idle PID MAX: waits until PID used under 5% of a core over a second (at most MAX
# seconds), so a measurement starts once the work an earlier one left behind is done; prints the
# seconds waited.
wait_idle() {
  local pid=$1 max=$2 hz t0 t1 w
  hz=$(getconf CLK_TCK)
  for ((w = 0; w < max; w++)); do
    t0=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
    sleep 1
    t1=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
    if (((t1 - t0) * 100 < 5 * hz)); then break; fi
  done
  printf '%s\n' "$w"
}

# The release profile overrides a benchmark build may be made with (slower than the shipped
# profile), as the report's words: "" or " without LTO", " with N codegen units", or both.
profile_overrides() {
  local s=""
  if [[ ${CARGO_PROFILE_RELEASE_LTO:-} == false ]]; then s+=" without LTO"; fi
  if [[ -n ${CARGO_PROFILE_RELEASE_CODEGEN_UNITS:-} ]]; then
    s+=" with ${CARGO_PROFILE_RELEASE_CODEGEN_UNITS} codegen units"
  fi
  printf '%s' "$s"
}
