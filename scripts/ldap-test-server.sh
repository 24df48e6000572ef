#!/usr/bin/env bash
# Starts a throwaway OpenLDAP directory (slapd, Debian's package, installed when missing) on a
# spare loopback port with a few entries, runs a command with COFFER_TEST_LDAP_* set, and stops
# the directory afterwards.
#
#   scripts/ldap-test-server.sh run -- cargo test -p coffer-tests --test ldap
set -euo pipefail

if [ "${1:-}" != run ] || [ "${2:-}" != -- ]; then
  echo "usage: $0 run -- COMMAND..." >&2
  exit 2
fi
shift 2

SLAPD=/usr/sbin/slapd
if [ ! -x "$SLAPD" ] || ! command -v slapadd >/dev/null; then
  echo "ldap-test-server: installing slapd and ldap-utils (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq slapd ldap-utils >/dev/null
fi

DIR=$(mktemp -d /tmp/coffer-ldap.XXXXXX)
PID=""
cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill "$PID"; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$DIR"
}
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
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
"$SLAPD" -f "$DIR/slapd.conf" -h "ldap://127.0.0.1:$PORT/" -d 0 >"$DIR/slapd.log" 2>&1 &
PID=$!
for _ in $(seq 1 100); do
  if ldapsearch -x -H "ldap://127.0.0.1:$PORT/" -b "dc=coffer,dc=test" -s base >/dev/null 2>&1; then break; fi
  sleep 0.1
done
ldapsearch -x -H "ldap://127.0.0.1:$PORT/" -b "dc=coffer,dc=test" -s base >/dev/null || { cat "$DIR/slapd.log" >&2; exit 1; }
echo "ldap-test-server: ready: ldap://127.0.0.1:$PORT/ (pid $PID)"

export COFFER_TEST_LDAP_URL="ldap://127.0.0.1:$PORT"
export COFFER_TEST_LDAP_BIND_DN="cn=admin,dc=coffer,dc=test"
export COFFER_TEST_LDAP_BIND_PASSWORD="coffer-ldap-secret"
export COFFER_TEST_LDAP_BASE_DN="ou=people,dc=coffer,dc=test"
status=0
"$@" || status=$?
echo "ldap-test-server: stopping slapd (pid $PID)"
exit $status
