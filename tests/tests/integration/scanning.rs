//! Virus scanning against a real clamd (`scripts/clamd-test-server.sh run -- cargo test -p
//! coffer-tests --test scanning`, which sets `COFFER_TEST_CLAMD`; without it these tests say so
//! and pass). Uploads are `scanning` until the scan job ran: downloads answer 403
//! `ERR_ENTITY_NOT_SCANNED`; then clean content is served and the EICAR test file answers 403
//! `ERR_ENTITY_VIRUS_FOUND` for good.

use coffer_domain::Role;
use coffer_tests::TestApp;

/// The EICAR anti-virus test file: harmless, detected by every scanner.
const EICAR: &[u8] = b"X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*";

fn clamd() -> Option<String> {
    match std::env::var("COFFER_TEST_CLAMD") {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            eprintln!("COFFER_TEST_CLAMD is not set: scanning tests skipped (scripts/clamd-test-server.sh runs them)");
            None
        }
    }
}

#[test]
fn uploads_are_scanned_before_they_are_served() {
    let Some(spec) = clamd() else { return };
    let app = TestApp::builder()
        .config(|c| c.scanner = Some(spec))
        .spawn();
    let (_, token) = app.user_token("scan@example.com", Role::User);
    let me = app.rest("GET", "/rest/users/me", &token, None).json();
    let root = me["syncdirId"].as_str().unwrap();

    let clean = app.upload(&token, root, "clean.txt", b"nothing to see here");
    assert_eq!(clean.status, 200, "{}", clean.text);
    assert_eq!(clean.json()["avStatus"], "scanning");
    let clean_id = clean.json()["id"].as_str().unwrap().to_string();
    let r = app.rest(
        "GET",
        &format!("/rest/files/{clean_id}/content"),
        &token,
        None,
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ENTITY_NOT_SCANNED")
    );

    let bad = app.upload(&token, root, "eicar.com", EICAR);
    assert_eq!(bad.status, 200, "{}", bad.text);
    let bad_id = bad.json()["id"].as_str().unwrap().to_string();

    app.run_jobs();

    let r = app.rest(
        "GET",
        &format!("/rest/files/{clean_id}/content"),
        &token,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.bytes, b"nothing to see here");
    let r = app.rest("GET", &format!("/rest/files/{bad_id}"), &token, None);
    assert_eq!(r.json()["avStatus"], "disallowed");
    let r = app.rest(
        "GET",
        &format!("/rest/files/{bad_id}/content"),
        &token,
        None,
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ENTITY_VIRUS_FOUND")
    );
    assert_eq!(
        app.count(
            "av_status = 'disallowed' AND av_signature LIKE '%EICAR%'",
            "file_versions"
        ),
        1
    );
    assert_eq!(
        app.count("subject = 'filesystem.version.quarantine'", "events"),
        1
    );
    assert_eq!(app.count("state = 'failed'", "jobs"), 0);
}

#[test]
fn an_unreachable_scanner_keeps_content_unserved_and_retries() {
    if clamd().is_none() {
        return;
    }
    // A port nothing listens on: the scan fails and is retried later; the file stays unserved.
    let app = TestApp::builder()
        .config(|c| c.scanner = Some("tcp://127.0.0.1:9".into()))
        .spawn();
    let (_, token) = app.user_token("noscan@example.com", Role::User);
    let me = app.rest("GET", "/rest/users/me", &token, None).json();
    let root = me["syncdirId"].as_str().unwrap();
    let f = app.upload(&token, root, "wait.txt", b"wait");
    let id = f.json()["id"].as_str().unwrap().to_string();
    app.run_jobs();
    let r = app.rest("GET", &format!("/rest/files/{id}/content"), &token, None);
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ENTITY_NOT_SCANNED")
    );
    assert_eq!(
        app.count(
            "kind = 'scan' AND state = 'queued' AND attempts = 1 AND last_error IS NOT NULL",
            "jobs"
        ),
        1
    );
}
