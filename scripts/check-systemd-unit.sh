#!/usr/bin/env bash
# Checks dist/systemd/cofferd.service with systemd's own tools: `systemd-analyze verify` (syntax,
# directives, the binary it starts) and `systemd-analyze security` (the sandboxing keeps the
# exposure score at or below 2.0 of 10). Installs systemd's tools when missing (Debian).
#
#   scripts/check-systemd-unit.sh [PATH-TO-COFFERD]   (default: $CARGO_TARGET_DIR/debug/cofferd)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
UNIT=$ROOT/dist/systemd/cofferd.service
BIN=${1:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/cofferd}

if ! command -v systemd-analyze >/dev/null; then
  echo "installing systemd's tools (systemd-analyze)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null
fi
[[ -x $BIN ]] || { echo "no cofferd binary at $BIN (build it first)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The unit names the installed path; check it against the binary just built.
sed "s#^ExecStart=/usr/local/bin/cofferd#ExecStart=$BIN#" "$UNIT" >"$work/cofferd.service"

out=$(systemd-analyze verify "$work/cofferd.service" 2>&1) || { echo "$out" >&2; exit 1; }
if [[ -n $out ]]; then
  echo "systemd-analyze verify warned:" >&2
  echo "$out" >&2
  exit 1
fi
echo "systemd-analyze verify: clean"
systemd-analyze security --offline=yes --threshold=20 "$work/cofferd.service" | tail -1
