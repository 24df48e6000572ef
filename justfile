# Coffer's everyday commands. `cargo install just` provides `just` (`pip install rust-just` is a
# quicker prebuilt alternative). Each recipe is a one-liner you can also run by hand:
#
#   just run       cargo run --release                 (start the server; extra args go to cofferd)
#   just test      cargo test --workspace              (the whole suite, SQLite)
#   just test-pg   scripts/pg-test-server.sh run -- cargo test -p coffer-tests -p cofferd
#                                                      (the end-to-end suite on a throwaway PostgreSQL)
#   just test-ldap scripts/ldap-test-server.sh run -- cargo test -p coffer-tests --test ldap
#   just test-smtp scripts/smtp-test-server.sh run -- cargo test -p coffer-tests --test smtp
#   just scim      scripts/scim-conformance.sh         (every check of scim2-tester, on a fresh server)
#   just fuzz      scripts/openapi-fuzz.sh             (schemathesis, every check, over /openapi.json)
#   just lint      cargo fmt --all -- --check, the module-circle check, cargo clippy … -D warnings
#   just bench     scripts/bench.sh                    (writes docs/benchmarks.md)
#   just ci        bash .ci/run                        (what CI runs)

set shell := ["bash", "-euo", "pipefail", "-c"]
set positional-arguments

# list the recipes
default:
    @just --list

# start cofferd (args go to cofferd, e.g. `just run --data-dir /tmp/c serve`)
run *ARGS:
    cargo run --release -- "$@"

# cargo test --workspace (args go to cargo test)
test *ARGS:
    cargo test --workspace "$@"

# end-to-end tests against a throwaway PostgreSQL (scripts/pg-test-server.sh)
test-pg *ARGS:
    scripts/pg-test-server.sh run -- cargo test -p coffer-tests -p cofferd "$@"

# the directory-lookup test against a throwaway OpenLDAP (slapd)
test-ldap:
    scripts/ldap-test-server.sh run -- cargo test -p coffer-tests --test ldap

# the outgoing-mail tests against a throwaway SMTP server (aiosmtpd)
test-smtp:
    scripts/smtp-test-server.sh run -- cargo test -p coffer-tests --test smtp

# the SCIM compliance checker scim2-tester against a fresh server
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

# format the code
fmt:
    cargo fmt --all

# benchmark against the oidc-peer (BENCH_SECONDS=N sets the run length); writes docs/benchmarks.md
bench:
    scripts/bench.sh

# what CI runs
ci:
    bash .ci/run
