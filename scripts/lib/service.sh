# Shell helpers shared by the throwaway test servers (scripts/*-test-server.sh): logging, Debian
# packages, a Python virtual environment, a spare loopback port, a PID file, the wait until the
# service answers, the stop by PID, and the `run -- CMD…` frame. Sourced, not run; the caller
# sets SERVICE (its name in messages) first.
#
# Every server listens on 127.0.0.1 only and is stopped by the PID this script started (or the
# one its PID file records, after checking that the process is still that server): never by
# name.

log() { printf '%s: %s\n' "${SERVICE:-test-server}" "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

# usage LAST_LINE: prints the calling script's header comment (lines 2..LAST_LINE), exits 2.
usage() {
  sed -n "2,${1}p" "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

svc_apt_updated=""
# apt_install PACKAGE...: installs Debian packages (root only; apt-get update once per run).
apt_install() {
  [[ $EUID -eq 0 ]] || die "$* not installed and not root: install it (apt-get install $*)"
  log "installing $* (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  if [[ -z $svc_apt_updated ]]; then
    apt-get update -qq >&2
    svc_apt_updated=1
  fi
  apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@" >&2
}

# ensure_venv VENV REQUIREMENT [CHECK]: a virtual environment in VENV with the pip REQUIREMENT
# installed, made on first use and reused while its stamp names the same REQUIREMENT (and the
# executable CHECK, relative to VENV, exists; default bin/python). Parallel runs share it, so one
# installer at a time.
ensure_venv() {
  local venv=$1 requirement=$2 check=${3:-bin/python}
  local stamp=$venv/.coffer-requirement
  svc_venv_ready() { [[ -x $venv/$check && -f $stamp && $(cat "$stamp") == "$requirement" ]]; }
  svc_venv_ready && return 0
  command -v python3 >/dev/null 2>&1 || die "python3 not found"
  mkdir -p "$(dirname "$venv")"
  exec 9>"$venv.lock"
  if command -v flock >/dev/null 2>&1; then flock 9; fi
  if svc_venv_ready; then
    exec 9>&-
    return 0
  fi
  if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    apt_install python3-venv
  fi
  log "installing $requirement into $venv"
  rm -rf -- "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$requirement" >&2
  [[ -x $venv/$check ]] || die "$requirement installed but $venv/$check is missing"
  printf '%s\n' "$requirement" >"$stamp"
  exec 9>&-
}

# port_is_free PORT: nothing answers on 127.0.0.1:PORT.
port_is_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# answers PORT: something accepts connections on 127.0.0.1:PORT.
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# spare_port: prints a loopback port that was free a moment ago (the kernel's choice when
# python3 is there, else the first free one from a random start).
spare_port() {
  local p
  if command -v python3 >/dev/null 2>&1; then
    p=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null || true)
    if [[ -n $p ]]; then
      printf '%s' "$p"
      return
    fi
  fi
  for ((p = 55432 + RANDOM % 1000; p < 60000; p++)); do
    if port_is_free "$p"; then
      printf '%s' "$p"
      return
    fi
  done
  die "no free port found"
}

# wait_ready TENTHS PID CMD...: polls CMD every 0.1 s until it succeeds (0), PID exits or TENTHS
# polls have passed (1). PID may be empty (nothing to watch).
wait_ready() {
  local tenths=$1 pid=$2 i
  shift 2
  for ((i = 0; i < tenths; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then return 1; fi
    sleep 0.1
  done
  "$@" >/dev/null 2>&1
}

# stop_pid PID NAME [SIGNAL]: SIGNAL (default TERM), up to 10 s, then KILL; that one process
# only.
stop_pid() {
  local pid=$1 name=$2 signal=${3:-TERM} i
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill "-$signal" "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  wait "$pid" 2>/dev/null || true
  log "stopped $name (pid $pid)"
}

# is_process PID PATTERN: PID is a live process whose command line matches PATTERN (an extended
# regular expression), so that a PID from a file is acted on only while it is still our server.
is_process() {
  [[ $1 =~ ^[0-9]+$ && -r /proc/$1/cmdline ]] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -Eq -- "$2"
}

# write_pid_file FILE PID PORT: records a server that outlives this script (`start`).
write_pid_file() { printf '%s %s\n' "$2" "$3" >"$1"; }

# stop_pid_file FILE PATTERN NAME: stops the process FILE records while its command line still
# matches PATTERN (`{port}` in it stands for the recorded port).
stop_pid_file() {
  local file=$1 pattern=$2 name=$3 pid port
  [[ -f $file ]] || return 0
  read -r pid port <"$file" || true
  if is_process "$pid" "${pattern//\{port\}/$port}"; then stop_pid "$pid" "$name"; fi
}

# last_dir LAST_FILE VAR: the directory `stop` acts on: its argument, else $VAR, else what the
# last `start` recorded in LAST_FILE.
last_dir() {
  local file=$1 var=$2 dir
  dir=${3:-${!var:-}}
  if [[ -z $dir && -f $file ]]; then dir=$(cat "$file"); fi
  [[ -n $dir ]] || die "which server? pass its directory or set $var"
  printf '%s' "$dir"
}

# forget_last LAST_FILE DIR: drops the record of DIR as the last started server.
forget_last() {
  if [[ -f $1 && $(cat "$1" 2>/dev/null) == "$2" ]]; then rm -f -- "$1"; fi
}

# run_frame STOP_FN: the frame of `run -- CMD…`. STOP_FN runs when the script exits (after CMD,
# on failure or on Ctrl-C) and the exit status stays the script's. Call before starting.
run_frame() {
  svc_stop_fn=$1
  trap svc_cleanup_run EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# shellcheck disable=SC2317  # invoked by trap
svc_cleanup_run() {
  local rc=$?
  trap - EXIT INT TERM
  "$svc_stop_fn" || true
  exit "$rc"
}

# run_command CMD…: runs CMD with the exported variables and exits with its status.
run_command() {
  local status=0
  "$@" || status=$?
  exit "$status"
}
