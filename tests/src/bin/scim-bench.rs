//! Seeds a cofferd data directory for the SCIM listing benchmark (not a test):
//! `scripts/bench-scim.sh` runs it, then starts the release `cofferd serve` on the directory and
//! measures `GET /rest/scim/Users` over HTTP (wrk for filtered pages, curl and `/proc` for the
//! memory of a `count=1000000` listing).
//!
//! `cargo run --release -p coffer-tests --bin scim-bench DATA_DIR [N]` opens (creating and
//! migrating) `sqlite://DATA_DIR/coffer.db`, which must hold no users yet, inserts N users
//! (default 100,000) 10,000 per transaction, creates a SCIM token, and prints the token as the
//! only line of stdout; progress goes to stderr.
//!
//! The users (i = 0..N), with no password (no hashing) and no events:
//! - email `user{i}@{domain}`, the domain cycling through example.org, example.com,
//!   example.net and corp.example.test; `userName` is the email, `displayName` `User {i}`;
//! - every third one a mobile number; every tenth inactive (i ≡ 8 mod 10); every fourth profile 2
//!   (`Restricted`), else 1 (`Standard`); every fiftieth a helpdesk administrator, else a user;
//! - every fifth an `externalId`, every other one a `preferredLanguage`;
//! - created one second apart, in the order of i.

use coffer_domain::Role;
use coffer_service::{Config, DatabaseUrl};
use coffer_store::models::User;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

const DOMAINS: [&str; 4] = [
    "example.org",
    "example.com",
    "example.net",
    "corp.example.test",
];
const BATCH: usize = 10_000;

fn user(i: usize, t0: i64) -> User {
    let email = format!("user{i}@{}", DOMAINS[i % DOMAINS.len()]);
    let role = if i % 50 == 49 {
        Role::HelpdeskAdmin
    } else {
        Role::User
    };
    let profile_id = if i % 4 == 3 { 2 } else { 1 };
    User {
        active: i % 10 != 8,
        mobile_number: i
            .is_multiple_of(3)
            .then(|| format!("+4179{:07}", i % 10_000_000)),
        mobile_verified: i.is_multiple_of(3),
        external_id: i.is_multiple_of(5).then(|| format!("ext-{i:08}")),
        preferred_language: i
            .is_multiple_of(2)
            .then(|| if i.is_multiple_of(4) { "en" } else { "de-CH" }.into()),
        ..coffer_service::identity::accounts::new_user_row(
            &email,
            &format!("User {i}"),
            None,
            role,
            profile_id,
            t0 + i as i64,
        )
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1) else {
        eprintln!("usage: scim-bench DATA_DIR [N]");
        std::process::exit(2);
    };
    let n: usize = match args.get(2) {
        None => 100_000,
        Some(a) => a.parse().unwrap_or_else(|_| {
            eprintln!("scim-bench: N must be a number, not {a:?}");
            std::process::exit(2)
        }),
    };
    std::fs::create_dir_all(dir).expect("create the data directory");
    let url = DatabaseUrl::new(format!("sqlite://{dir}/coffer.db"));
    let ctx = coffer_service::open(&url, 2, Config::new("http://127.0.0.1", "Coffer"))
        .expect("open the database");
    let existing = ctx
        .with_conn(|c| Ok(coffer_store::users::count(c)?))
        .expect("count users");
    if existing > 0 {
        eprintln!(
            "scim-bench: {dir}/coffer.db already holds {existing} users; give a fresh directory"
        );
        std::process::exit(1);
    }

    // Creation times end a day ago, so that every user predates anything the server writes.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    let t0 = now - 86_400 - n as i64;
    let started = Instant::now();
    let mut i = 0;
    while i < n {
        let end = (i + BATCH).min(n);
        let rows: Vec<User> = (i..end).map(|k| user(k, t0)).collect();
        ctx.write(|c| {
            for row in &rows {
                coffer_store::users::insert(c, row)?;
            }
            Ok(())
        })
        .expect("insert users");
        i = end;
        eprintln!("scim-bench: {i} users");
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "scim-bench: seeded {n} users in {secs:.1} s ({:.0}/s)",
        n as f64 / secs.max(1e-9)
    );

    let (id, token) =
        coffer_service::identity::scim_tokens::create(&ctx, "scim-bench").expect("SCIM token");
    eprintln!("scim-bench: SCIM token {id}");
    // Closing the pool checkpoints the write-ahead log, so the server starts on a compact file.
    drop(ctx);
    println!("{token}");
}
