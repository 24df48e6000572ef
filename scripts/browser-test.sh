#!/usr/bin/env bash
# Runs the real-browser tests (tests/tests/integration/browser.rs): installs Debian's Chromium and
# ChromeDriver when they are missing, then runs the test with COFFER_TEST_CHROMEDRIVER set, so
# that a browser that cannot start fails the test instead of skipping it.
#
#   scripts/browser-test.sh [extra cargo nextest run args]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  echo "browser-test: installing chromium and chromium-driver (Debian packages)"
  if [ "$(id -u)" -ne 0 ]; then
    echo "browser-test: root is needed to install chromium; install chromium and chromium-driver" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium chromium-driver >/dev/null
fi

export COFFER_TEST_CHROMEDRIVER=/usr/bin/chromedriver
export COFFER_TEST_CHROMIUM=/usr/bin/chromium
# The whole workspace, narrowed by a filter expression: after `cargo test --workspace` (CI's step
# 3) nothing is rebuilt, where `-p` or `--test` would resolve other features and build again.
exec cargo nextest run --workspace -E 'binary(integration) & test(/^browser::/)' "$@"
