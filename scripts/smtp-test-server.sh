#!/usr/bin/env bash
# A throwaway SMTP server (aiosmtpd, from PyPI) for Coffer's mail tests, on 127.0.0.1 only.
#
#   scripts/smtp-test-server.sh run -- CMD [ARGS...]
#       starts the server, exports the variables below, runs CMD, then stops the server and
#       removes its temporary directory (also on failure or Ctrl-C); exits with CMD's status.
#       e.g. scripts/smtp-test-server.sh run -- cargo test -p coffer-tests --test integration smtp::
#
#   COFFER_TEST_SMTP_URL       smtp://127.0.0.1:PORT, plain text, AUTH required
#   COFFER_TEST_SMTP_USER      the user it accepts (`coffer`)
#   COFFER_TEST_SMTP_PASSWORD  its password (random for each run)
#   COFFER_TEST_SMTP_DIR       where every accepted message is written, one JSON file each:
#                              {mailFrom, rcptTos, login, tls, data}
#   COFFER_TEST_SMTP_STARTTLS_URL  smtp://127.0.0.1:PORT, STARTTLS required before AUTH, with a
#                              certificate for 127.0.0.1 from a CA made for the run (only when
#                              openssl is installed)
#   COFFER_TEST_SMTP_CA        that CA's certificate (PEM)
#
# Recipients whose local part starts with `tempfail` are refused with 451, `reject…` with 550.
# The handler is scripts/smtp_test_server.py.
#
# Needs: python3 with the venv module (Debian's python3-venv is installed with apt-get when
# missing and run as root). aiosmtpd (pinned below) is installed into a virtual environment
# under ${XDG_CACHE_HOME:-$HOME/.cache}/coffer/aiosmtpd-venv on first use and reused afterwards.
set -euo pipefail

SERVICE=smtp-test-server
# shellcheck source=scripts/lib/service.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/service.sh"

REQUIREMENT="aiosmtpd==1.4.6"
VENV=${COFFER_AIOSMTPD_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/coffer/aiosmtpd-venv}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

SMTP_DIR=""
SMTP_PID=""

# stop_server: stops the server this script started (by its pid) and removes its directory.
# shellcheck disable=SC2317  # invoked by trap
stop_server() {
  stop_pid "$SMTP_PID" "the SMTP server"
  if [[ -n $SMTP_DIR ]]; then rm -rf -- "$SMTP_DIR"; fi
}

start_server() {
  ensure_venv "$VENV" "$REQUIREMENT"
  SMTP_DIR=$(mktemp -d "${TMPDIR:-/tmp}/coffer-smtp.XXXXXX")
  SMTP_PASSWORD=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
  local tls_args=()
  if command -v openssl >/dev/null 2>&1; then
    # A CA of its own and a server certificate for 127.0.0.1 signed by it (a self-signed
    # certificate that is its own CA is refused as a server certificate by rustls).
    (
      cd "$SMTP_DIR"
      openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=coffer-test-ca \
        -keyout ca.key -out ca.pem
      openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout key.pem -out server.csr
      printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost' 'basicConstraints=CA:FALSE' \
        'keyUsage=digitalSignature,keyEncipherment' 'extendedKeyUsage=serverAuth' >server.ext
      openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
        -extfile server.ext -out cert.pem
    ) >/dev/null 2>&1 || die "openssl could not make the test certificates"
    tls_args=("$SMTP_DIR/cert.pem" "$SMTP_DIR/key.pem")
  else
    log "openssl not found: no STARTTLS server (its test is skipped)"
  fi
  "$VENV/bin/python" "$HERE/smtp_test_server.py" "$SMTP_DIR" coffer "$SMTP_PASSWORD" \
    "${tls_args[@]}" >"$SMTP_DIR/server.log" 2>&1 </dev/null &
  SMTP_PID=$!
  if ! wait_ready 100 "$SMTP_PID" test -f "$SMTP_DIR/ports"; then
    tail -n 20 "$SMTP_DIR/server.log" >&2 || true
    die "the SMTP server did not start"
  fi
  read -r PLAIN_PORT STARTTLS_PORT <"$SMTP_DIR/ports"
  log "ready: smtp://127.0.0.1:$PLAIN_PORT (AUTH), STARTTLS port $STARTTLS_PORT (pid $SMTP_PID)"
}

cmd=${1:-}
[[ $cmd == run ]] || usage 24
shift
[[ ${1:-} == -- ]] && shift
[[ $# -gt 0 ]] || usage 24
run_frame stop_server
start_server
export COFFER_TEST_SMTP_URL=smtp://127.0.0.1:$PLAIN_PORT
export COFFER_TEST_SMTP_USER=coffer
export COFFER_TEST_SMTP_PASSWORD=$SMTP_PASSWORD
export COFFER_TEST_SMTP_DIR=$SMTP_DIR/messages
if [[ $STARTTLS_PORT != 0 ]]; then
  export COFFER_TEST_SMTP_STARTTLS_URL=smtp://127.0.0.1:$STARTTLS_PORT
  export COFFER_TEST_SMTP_CA=$SMTP_DIR/ca.pem
fi
run_command "$@"
