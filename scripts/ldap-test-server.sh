#!/usr/bin/env bash
# Starts a throwaway OpenLDAP directory (slapd, Debian's package, installed when missing) on a
# spare loopback port with a few entries, runs a command with COFFER_TEST_LDAP_* set, and stops
# the directory afterwards.
#
#   scripts/ldap-test-server.sh run -- cargo test -p coffer-tests --test integration ldap::
set -euo pipefail

SERVICE=ldap-test-server
# shellcheck source=scripts/lib/service.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/service.sh"

[[ ${1:-} == run ]] || usage 6
shift
[[ ${1:-} == -- ]] && shift
[[ $# -gt 0 ]] || usage 6

SLAPD=/usr/sbin/slapd
if [[ ! -x $SLAPD ]] || ! command -v slapadd >/dev/null; then apt_install slapd ldap-utils; fi

DIR=""
PID=""
# shellcheck disable=SC2317  # invoked by trap
stop_slapd() {
  stop_pid "$PID" slapd
  if [[ -n $DIR ]]; then rm -rf -- "$DIR"; fi
}
run_frame stop_slapd
DIR=$(mktemp -d "${TMPDIR:-/tmp}/coffer-ldap.XXXXXX")

PORT=$(spare_port)
mkdir -p "$DIR/db"
SCHEMA=/etc/ldap/schema
cat > "$DIR/slapd.conf" <<CONF
include $SCHEMA/core.schema
include $SCHEMA/cosine.schema
include $SCHEMA/inetorgperson.schema
pidfile $DIR/slapd.pid
modulepath /usr/lib/ldap
moduleload back_mdb
database mdb
maxsize 10485760
suffix "dc=coffer,dc=test"
rootdn "cn=admin,dc=coffer,dc=test"
rootpw coffer-ldap-secret
directory $DIR/db
CONF

cat > "$DIR/entries.ldif" <<'LDIF'
dn: dc=coffer,dc=test
objectClass: dcObject
objectClass: organization
o: Coffer Test
dc: coffer

dn: ou=people,dc=coffer,dc=test
objectClass: organizationalUnit
ou: people

dn: uid=ann,ou=people,dc=coffer,dc=test
objectClass: inetOrgPerson
uid: ann
cn: Ann Directory
sn: Directory
mail: ann.directory@example.org

dn: uid=anton,ou=people,dc=coffer,dc=test
objectClass: inetOrgPerson
uid: anton
cn: Anton Star (*)
sn: Star
mail: anton@example.org

dn: uid=bob,ou=people,dc=coffer,dc=test
objectClass: inetOrgPerson
uid: bob
cn: Bob Builder
sn: Builder
mail: bob.builder@example.org
LDIF

slapadd -q -f "$DIR/slapd.conf" -l "$DIR/entries.ldif"
"$SLAPD" -f "$DIR/slapd.conf" -h "ldap://127.0.0.1:$PORT/" -d 0 >"$DIR/slapd.log" 2>&1 </dev/null &
PID=$!
if ! wait_ready 100 "$PID" ldapsearch -x -H "ldap://127.0.0.1:$PORT/" -b "dc=coffer,dc=test" -s base; then
  cat "$DIR/slapd.log" >&2
  die "slapd did not answer"
fi
log "ready: ldap://127.0.0.1:$PORT/ (pid $PID)"

export COFFER_TEST_LDAP_URL="ldap://127.0.0.1:$PORT"
export COFFER_TEST_LDAP_BIND_DN="cn=admin,dc=coffer,dc=test"
export COFFER_TEST_LDAP_BIND_PASSWORD="coffer-ldap-secret"
export COFFER_TEST_LDAP_BASE_DN="ou=people,dc=coffer,dc=test"
run_command "$@"
