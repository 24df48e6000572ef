//! `cofferd mail outbox`, run as the real binary on a fresh database (SQLite, or PostgreSQL
//! when `COFFER_TEST_POSTGRES_URL` is set): what it lists by default and by state, as a table
//! and as JSON, and that no message body ever shows.

use coffer_store::mail::{self, Attempt, NewMessage};
use serde_json::Value;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_cofferd");

/// Runs `cofferd` on the database; returns (success, stdout, stderr).
fn run(dir: &std::path::Path, url: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .arg("--database-url")
        .arg(url)
        .args(args)
        .env_remove("COFFER_DATABASE_URL")
        .env("RUST_LOG", "warn")
        .output()
        .expect("run cofferd");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Writes a message `at` (Unix seconds) and, unless `outcome` is `queued`, finishes it so.
fn message(ctx: &coffer_service::Ctx, to: &str, at: i64, outcome: &'static str) -> String {
    ctx.write(|c| {
        let body = format!("Open https://coffer.test/mail/x?ref=SECRET-{to}");
        let id = mail::queue(
            c,
            &NewMessage {
                email_id: None,
                user_id: None,
                to,
                subject: &format!("Subject for {to}"),
                body: &body,
                expires_at: None,
            },
            "coffer.test",
            at,
        )?;
        if outcome != "queued" {
            let claimed = mail::claim(c, "node-t", at * 1000, 60_000, 1)?;
            assert_eq!(claimed.len(), 1);
            let done = mail::record(
                c,
                "node-t",
                &Attempt {
                    id: id.clone(),
                    attempt: 1,
                    state: outcome,
                    next_attempt_at: at * 1000,
                    error: (outcome == "error").then(|| "550 mailbox unknown; not retried".into()),
                    message_id: mail::message_id(&id, "coffer.test"),
                    now: at,
                },
            )?;
            assert!(done);
        }
        Ok(id)
    })
    .expect("a message")
}

#[test]
fn the_outbox_lists_queued_failed_and_recent_mail_without_bodies() {
    let dir = tempfile::tempdir().unwrap();
    let (database, _pg) = coffer_tests::fresh_database(dir.path());
    let url = database.expose().to_string();
    let ctx = coffer_service::open(
        &database,
        1,
        coffer_service::Config::new("http://127.0.0.1:8080", "Coffer"),
    )
    .expect("open the database");
    let now = coffer_service::now();
    let old = now - 3 * 86_400;
    message(&ctx, "queued@example.com", now, "queued");
    message(&ctx, "failed@example.com", old, "error");
    message(&ctx, "sent-recently@example.com", now - 60, "sent");
    message(&ctx, "sent-long-ago@example.com", old, "sent");

    // By default: what is still queued or failed, whatever its age, and the last day's mail.
    let (ok, out, err) = run(dir.path(), &url, &["mail", "outbox"]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    for h in ["CREATED", "STATE", "ATTEMPTS", "TO", "SUBJECT", "DETAIL"] {
        assert!(lines[0].contains(h), "{out}");
    }
    let line = |to: &str| lines.iter().find(|l| l.contains(to)).copied();
    let queued = line("queued@example.com").expect("the queued message");
    assert!(
        queued.contains("queued") && queued.contains("Subject for queued@"),
        "{out}"
    );
    assert!(queued.contains("next "), "{out}");
    let failed = line("failed@example.com").expect("the failed message");
    assert!(
        failed.contains("error") && failed.contains("550 mailbox unknown"),
        "{out}"
    );
    let sent = line("sent-recently@example.com").expect("the recent message");
    assert!(
        sent.contains("sent ") && sent.contains(&coffer_service::rfc3339(now - 60)),
        "{out}"
    );
    assert!(line("sent-long-ago@example.com").is_none(), "{out}");
    // Newest first.
    assert!(lines[1].contains("queued@example.com"), "{out}");
    assert!(!out.contains("SECRET"), "a body leaked: {out}");

    // One state, whatever its age; as JSON.
    let (ok, out, err) = run(
        dir.path(),
        &url,
        &["mail", "outbox", "--state", "sent", "--json"],
    );
    assert!(ok, "{err}");
    let listed: Value = serde_json::from_str(&out).expect("JSON");
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2, "{out}");
    assert_eq!(listed[0]["to"], "sent-recently@example.com");
    assert_eq!(listed[1]["to"], "sent-long-ago@example.com");
    assert_eq!(listed[1]["state"], "sent");
    assert_eq!(listed[1]["attempts"], 1);
    assert_eq!(
        listed[1]["created_at"],
        coffer_service::rfc3339(old).as_str()
    );
    assert_eq!(listed[1]["sent_at"], coffer_service::rfc3339(old).as_str());
    assert_eq!(listed[1]["next_attempt_at"], Value::Null);
    assert!(listed[1].get("body").is_none(), "{out}");
    assert!(!out.contains("SECRET"), "a body leaked: {out}");
    // Sent, the bodies are gone from the database too.
    let rows = ctx
        .with_conn(|c| Ok(mail::to_address(c, "sent-long-ago@example.com")?))
        .unwrap();
    assert_eq!(rows[0].body, "");

    let (ok, out, err) = run(dir.path(), &url, &["mail", "outbox", "--state", "expired"]);
    assert!(ok, "{err}");
    assert_eq!(out, "No messages.\n");

    let (ok, _, err) = run(dir.path(), &url, &["mail", "outbox", "--state", "lost"]);
    assert!(!ok);
    assert!(err.contains("queued, sent, error, expired"), "{err}");
}
