#!/usr/bin/env bash
# A throwaway WebDAV server on Apache httpd (mod_dav, mod_dav_fs) for Coffer's source connectors
# and the sources benchmark, on 127.0.0.1 only: the same share and variables as
# scripts/webdav-test-server.sh (WsgiDAV), from a server fast enough that a benchmark of Coffer's
# listings measures Coffer rather than the WebDAV server.
#
#   scripts/apache-dav-test-server.sh run -- CMD [ARGS...]
#       starts the server, exports the variables below, runs CMD, then stops the server and
#       removes its temporary directory (also on failure or Ctrl-C); exits with CMD's status.
#       e.g. scripts/apache-dav-test-server.sh run -- cargo test -p coffer-tests --test integration sources::
#
#   COFFER_TEST_WEBDAV_URL         http://127.0.0.1:PORT/dav/, HTTP Basic authentication
#   COFFER_TEST_WEBDAV_DIGEST_URL  http://127.0.0.1:PORT/dav/, HTTP Digest authentication (MD5)
#   COFFER_TEST_WEBDAV_USER        the user both accept (`coffer`)
#   COFFER_TEST_WEBDAV_PASSWORD    its password (random for each run)
#   COFFER_TEST_WEBDAV_ROOT        the directory both serve as /dav/ (empty at the start)
#   COFFER_TEST_WEBDAV_SERVER      `apache` (the WsgiDAV script leaves it unset)
#
# Both ports offer locking (DAV class 2, mod_dav_fs's lock database). Everything is the script's
# own: a configuration, htpasswd and htdigest files, the lock database, logs and the PID file in
# a temporary directory; nothing of the system's Apache configuration is read and no system
# service is started. httpd runs in the foreground as this script's child and is stopped by its
# PID.
#
# Run as root, httpd's workers run as www-data (Apache refuses to serve as root): the share then
# carries a default ACL that gives www-data read and write on everything made in it, so files a
# test writes there as root are Apache's to replace and delete, as the WsgiDAV server's are.
# Run as another user, httpd runs as that user and needs no ACL.
#
# Needs: Debian's `apache2` (with apache2-utils) and `acl`, installed with apt-get when missing
# and run as root; while apache2 installs, a policy-rc.d refuses Debian's start of the system
# service (port 80 on every address), unless the machine has a policy-rc.d of its own.
#
# CI runs the sources suite against WsgiDAV (scripts/webdav-test-server.sh); this server is for
# scripts/bench-sources.sh and for running the same suite by hand against a second WebDAV
# implementation (installing Apache would add more than a minute to every CI run).
set -euo pipefail

SERVICE=apache-dav-test-server
# shellcheck source=scripts/lib/service.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/service.sh"

APACHE=/usr/sbin/apache2
MODULES=/usr/lib/apache2/modules
RUN_USER=www-data

DAV_DIR=""
DAV_PID=""

# stop_server: stops the httpd this script started (by its pid) and removes its directory.
# shellcheck disable=SC2317  # invoked by trap
stop_server() {
  stop_pid "$DAV_PID" "Apache httpd"
  if [[ -n $DAV_DIR ]]; then rm -rf -- "$DAV_DIR"; fi
}

# ensure_apache: httpd, its modules, htpasswd and setfacl; apache2 is installed without letting
# Debian start its system service.
ensure_apache() {
  local need=()
  [[ -x $APACHE && -f $MODULES/mod_dav_fs.so ]] || need+=(apache2)
  command -v htpasswd >/dev/null 2>&1 || need+=(apache2-utils)
  if [[ $EUID -eq 0 ]] && ! command -v setfacl >/dev/null 2>&1; then need+=(acl); fi
  ((${#need[@]})) || return 0
  local policy="" rc=0
  if [[ $EUID -eq 0 && ! -e /usr/sbin/policy-rc.d ]]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\n# scripts/apache-dav-test-server.sh: no service starts while it installs apache2\nexit 101\n' >"$policy"
    chmod 755 "$policy"
  fi
  apt_install "${need[@]}" || rc=$?
  [[ -z $policy ]] || rm -f -- "$policy"
  ((rc == 0)) || die "apt-get install ${need[*]} failed"
  [[ -x $APACHE && -f $MODULES/mod_dav_fs.so ]] || die "no $APACHE with mod_dav_fs after installing"
}

# write_config: httpd.conf with a Basic and a Digest virtual host over one share.
write_config() {
  local user_lines="" m
  if [[ $EUID -eq 0 ]]; then
    user_lines="User $RUN_USER
Group $RUN_USER"
  fi
  {
    for m in mpm_event authn_core authn_file authz_core authz_user auth_basic auth_digest \
      alias mime dav dav_fs; do
      printf 'LoadModule %s_module %s/mod_%s.so\n' "$m" "$MODULES" "$m"
    done
    cat <<EOF
ServerRoot "$DAV_DIR"
ServerName 127.0.0.1
Listen 127.0.0.1:$BASIC_PORT
Listen 127.0.0.1:$DIGEST_PORT
PidFile "$DAV_DIR/httpd.pid"
DefaultRuntimeDir "$DAV_DIR/run"
ErrorLog "$DAV_DIR/error.log"
LogLevel warn
$user_lines
TypesConfig /etc/mime.types
Timeout 60
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 30
StartServers 2
ThreadsPerChild 25
MaxRequestWorkers 100
DavLockDB "$DAV_DIR/lock/DavLock"
# A listing of a large folder is one request: no limit of mod_dav's own cuts it short.
LimitXMLRequestBody 0
<Directory />
  AllowOverride None
  Require all denied
</Directory>
<VirtualHost 127.0.0.1:$BASIC_PORT>
  Alias /dav "$DAV_ROOT"
  <Directory "$DAV_ROOT">
    Dav On
    Options None
    AuthType Basic
    AuthName "coffer"
    AuthBasicProvider file
    AuthUserFile "$DAV_DIR/htpasswd"
    Require valid-user
  </Directory>
</VirtualHost>
<VirtualHost 127.0.0.1:$DIGEST_PORT>
  Alias /dav "$DAV_ROOT"
  <Directory "$DAV_ROOT">
    Dav On
    Options None
    AuthType Digest
    AuthName "coffer"
    AuthDigestProvider file
    AuthDigestDomain /dav/
    AuthUserFile "$DAV_DIR/htdigest"
    Require valid-user
  </Directory>
</VirtualHost>
EOF
  } >"$DAV_DIR/httpd.conf"
}

start_server() {
  ensure_apache
  DAV_DIR=$(mktemp -d "${TMPDIR:-/tmp}/coffer-apache-dav.XXXXXX")
  DAV_ROOT=$DAV_DIR/root
  mkdir -p "$DAV_ROOT" "$DAV_DIR/lock" "$DAV_DIR/run"
  DAV_PASSWORD=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
  # MD5-crypt, not bcrypt: Basic authentication checks the password on every request, and
  # bcrypt's cost would show in the benchmark's remote share.
  htpasswd -bcm "$DAV_DIR/htpasswd" coffer "$DAV_PASSWORD" 2>/dev/null
  printf 'coffer:coffer:%s\n' \
    "$(printf '%s' "coffer:coffer:$DAV_PASSWORD" | md5sum | cut -d' ' -f1)" >"$DAV_DIR/htdigest"
  if [[ $EUID -eq 0 ]]; then
    # The workers (www-data) reach the share and the lock database and write what root makes
    # in the share (a default ACL is inherited, and the creator's umask does not narrow it).
    chmod 755 "$DAV_DIR"
    chmod 644 "$DAV_DIR/htpasswd" "$DAV_DIR/htdigest"
    chown "$RUN_USER:" "$DAV_ROOT" "$DAV_DIR/lock"
    setfacl -m "u:$RUN_USER:rwx" -d -m "u:$RUN_USER:rwx,u::rwx,g::rx,o::rx,m::rwx" "$DAV_ROOT"
  fi
  BASIC_PORT=$(spare_port)
  DIGEST_PORT=$(spare_port)
  while [[ $DIGEST_PORT == "$BASIC_PORT" ]]; do DIGEST_PORT=$(spare_port); done
  write_config
  "$APACHE" -d "$DAV_DIR" -f "$DAV_DIR/httpd.conf" -DFOREGROUND >"$DAV_DIR/server.log" 2>&1 </dev/null &
  DAV_PID=$!
  if ! wait_ready 300 "$DAV_PID" dav_answers; then
    tail -n 20 "$DAV_DIR/server.log" "$DAV_DIR/error.log" >&2 2>/dev/null || true
    die "Apache httpd did not start"
  fi
  log "ready: http://127.0.0.1:$BASIC_PORT/dav/ (Basic), http://127.0.0.1:$DIGEST_PORT/dav/ (Digest) (pid $DAV_PID)"
}

# dav_answers: both ports take connections.
dav_answers() { answers "$BASIC_PORT" && answers "$DIGEST_PORT"; }

cmd=${1:-}
[[ $cmd == run ]] || usage 36
shift
[[ ${1:-} == -- ]] && shift
[[ $# -gt 0 ]] || usage 36
run_frame stop_server
start_server
export COFFER_TEST_WEBDAV_URL=http://127.0.0.1:$BASIC_PORT/dav/
export COFFER_TEST_WEBDAV_DIGEST_URL=http://127.0.0.1:$DIGEST_PORT/dav/
export COFFER_TEST_WEBDAV_USER=coffer
export COFFER_TEST_WEBDAV_PASSWORD=$DAV_PASSWORD
export COFFER_TEST_WEBDAV_ROOT=$DAV_ROOT
export COFFER_TEST_WEBDAV_SERVER=apache
run_command "$@"
