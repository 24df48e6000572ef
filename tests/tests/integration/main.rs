//! Coffer's end-to-end suite as one test binary: each module is an area's tests against the real
//! server on a real loopback port, each test with a fresh database (SQLite, or PostgreSQL when
//! `COFFER_TEST_POSTGRES_URL` is set). One binary links the server once instead of once per
//! area, which is most of what the suite used to cost on a small machine.
//!
//! A new area's tests go in a new module here, not in a new file beside this folder (that would
//! be a binary of its own). Select a suite by its module path, e.g.
//! `cargo test -p coffer-tests --test integration smtp::`, or with cargo-nextest
//! `cargo nextest run -p coffer-tests -E 'test(/^smtp::/)'`.

mod accounts;
mod admin_users;
mod audit;
mod browser;
mod contacts;
mod content;
mod conventions;
mod delivery;
mod dli;
mod favorites;
mod input;
mod ldap;
mod mail;
mod mail_outside;
mod notifications;
mod oauth;
mod openapi;
mod password_reset;
mod reference;
mod request_files;
mod resources;
mod scanning;
mod scim;
mod scim_store;
mod search;
mod sessions;
mod sftp;
mod shared_mailboxes;
mod smtp;
mod sources;
mod ssh_keys;
mod tfa;
mod tfa_sms;
mod upgrade;
mod web_forms;
mod webhooks;
