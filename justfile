# Coffer's everyday commands: `just --list` shows each recipe with its description (the comment
# above it). `cargo install just` provides `just` (`pip install rust-just` is a quicker prebuilt
# alternative). Each recipe is a one-liner you can also run by hand.
#
# The end-to-end suite is one test binary (tests/tests/integration); its areas are modules, so a
# filter picks one: `just test --test integration oauth::`. The recipes for real services select
# with cargo-nextest filter expressions over the whole workspace, as CI does (`.ci/run`).

set shell := ["bash", "-euo", "pipefail", "-c"]
set positional-arguments

# list the recipes
default:
    @just --list

# start cofferd: cargo run --release (args go to cofferd, e.g. `just run --data-dir /tmp/c serve`)
run *ARGS:
    cargo run --release -- "$@"

# the whole suite on SQLite: cargo test --workspace (args go to cargo test)
test *ARGS:
    cargo test --workspace "$@"

# the end-to-end, CLI and blob-store tests on a throwaway PostgreSQL (scripts/pg-test-server.sh)
test-pg *ARGS:
    scripts/pg-test-server.sh run -- cargo nextest run --workspace -E 'package(coffer-tests) | package(cofferd) | package(coffer-storage)' "$@"

# the same on PostgreSQL with file content on a throwaway S3 API server (scripts/s3-test-server.sh)
test-s3 *ARGS:
    scripts/s3-test-server.sh run -- scripts/pg-test-server.sh run -- cargo nextest run --workspace -E 'package(coffer-tests) | package(cofferd) | package(coffer-storage)' "$@"

# the directory-lookup tests against a throwaway OpenLDAP (scripts/ldap-test-server.sh)
test-ldap:
    scripts/ldap-test-server.sh run -- cargo nextest run --workspace -E 'binary(integration) & test(/^ldap::/)'

# the virus-scanning tests against a throwaway clamd (scripts/clamd-test-server.sh)
test-clamd:
    scripts/clamd-test-server.sh run -- cargo nextest run --workspace -E '(package(coffer-scanner) & binary(clamd)) | (binary(integration) & test(/^scanning::/))'

# the outgoing-mail tests against a throwaway SMTP server (scripts/smtp-test-server.sh)
test-smtp:
    scripts/smtp-test-server.sh run -- cargo nextest run --workspace -E 'binary(integration) & test(/^(smtp|password_reset)::/)'

# the source connectors against a throwaway WebDAV server (scripts/webdav-test-server.sh)
test-webdav:
    scripts/webdav-test-server.sh run -- cargo nextest run --workspace -E 'package(coffer-sources)'

# sign-in and an outside recipient's visit in headless Chromium (scripts/browser-test.sh)
test-browser *ARGS:
    scripts/browser-test.sh "$@"

# every check of scim2-tester against a fresh server (scripts/scim-conformance.sh)
scim:
    scripts/scim-conformance.sh

# schemathesis with every check over every operation of /openapi.json, on a fresh server
fuzz:
    scripts/openapi-fuzz.sh

# cargo fmt --check, no import circles in the service, and clippy -D warnings
lint:
    cargo fmt --all -- --check
    python3 scripts/check-module-cycles.py
    cargo clippy --workspace --all-targets -- -D warnings

# format the code: cargo fmt --all
fmt:
    cargo fmt --all

# benchmark against the oidc-peer (BENCH_SECONDS=N sets the run length); writes docs/benchmarks.md
bench:
    scripts/bench.sh

# what CI runs: bash .ci/run
ci:
    bash .ci/run
