#!/usr/bin/env bash
# Installs the OpenSSH clients the SFTP tests drive (`sftp`, `ssh-keygen`; `scp` beside them: Debian's
# openssh-client) when any is missing; nothing else. The tests start Coffer's own SFTP server on
# a loopback port, so no SSH server is needed.
#
#   scripts/sftp-test-clients.sh
set -euo pipefail

SERVICE=sftp-test-clients
# shellcheck source=scripts/lib/service.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/service.sh"

if command -v sftp >/dev/null && command -v scp >/dev/null && command -v ssh-keygen >/dev/null; then
  log "OpenSSH clients present: $(ssh -V 2>&1)"
  exit 0
fi
apt_install openssh-client
log "installed: $(ssh -V 2>&1)"
