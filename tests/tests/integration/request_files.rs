//! Request-file links (docs/request-files.md): asking for files into a folder or by mail, the
//! recipient's calls through the reference (one-shot and chunked uploads, what arrived, offered
//! files, comments, the reply), the link's states (active, exhausted, expired), `requireAuth`
//! with the code from the outbox, the limits (count, quota, excluded extensions), secure
//! folders, and the link mail through the real SMTP server. Runs on SQLite or PostgreSQL
//! (`COFFER_TEST_POSTGRES_URL`); the SMTP test is skipped with a note without
//! `scripts/smtp-test-server.sh`.

use coffer_delivery::mail::{self, Config, Password, Relay};
use coffer_domain::Role;
use coffer_tests::{
    assert_error, mkdir, multipart, my_folder, outbox, received, smtp, upload_ok, wait_until, Body,
    Resp, TestApp,
};
use serde_json::{json, Value};
use std::time::Duration;

const OUTSIDE: &str = "ext@partner.example";

/// A call under `/rest` with the version header and, when given, a bearer token and the code
/// session's cookie (with the session's CSRF token, as the recipient's page sends it).
fn call(
    app: &TestApp,
    method: &str,
    path: &str,
    token: Option<&str>,
    cookie: Option<&str>,
    body: Option<Body>,
) -> Resp {
    let csrf = cookie.map(coffer_service::request_files::access::csrf_token);
    session_call(app, method, path, token, cookie, csrf.as_deref(), body)
}

/// A call with the code session's cookie and whatever CSRF token is given (or none).
fn session_call(
    app: &TestApp,
    method: &str,
    path: &str,
    token: Option<&str>,
    cookie: Option<&str>,
    csrf: Option<&str>,
    body: Option<Body>,
) -> Resp {
    let auth = token.map(|t| format!("Bearer {t}"));
    let cookie = cookie.map(|c| format!("coffer_rf_session={c}"));
    let mut headers = vec![("X-Coffer-Version", "28")];
    if let Some(a) = &auth {
        headers.push(("Authorization", a));
    }
    if let Some(c) = &cookie {
        headers.push(("Cookie", c));
    }
    if let Some(t) = csrf {
        headers.push(("X-RF-CSRF-TOKEN", t));
    }
    app.send(method, path, &headers, body)
}

/// The code the outbox holds for `to` (the link's mail and the code's may share a second, so
/// it is looked for in every message to the address rather than in the last by time).
fn mailed_code(app: &TestApp, to: &str) -> String {
    outbox(app, to)
        .iter()
        .rev()
        .find_map(|m| {
            m.body.split_whitespace().find(|w| {
                w.trim_end_matches('.').len() == 6
                    && w.trim_end_matches('.').chars().all(|c| c.is_ascii_digit())
            })
        })
        .expect("a code in the outbox")
        .trim_end_matches('.')
        .to_string()
}

/// A call as someone holding only the reference.
fn anon(app: &TestApp, method: &str, path: &str, body: Option<Value>) -> Resp {
    call(app, method, path, None, None, body.map(Body::Json))
}

/// Asks for files into `folder`; answers the links.
fn ask(app: &TestApp, token: &str, folder: &str, body: Value) -> Vec<Value> {
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{folder}/actions/requestFile"),
        token,
        Some(body),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()["data"].as_array().unwrap().clone()
}

fn reference(link: &Value) -> String {
    link["ref"].as_str().expect("the link's ref").to_string()
}

/// A one-shot upload through a link, with the bearer token and cookie when given.
fn send_file(
    app: &TestApp,
    r: &str,
    name: &str,
    bytes: &[u8],
    token: Option<&str>,
    cookie: Option<&str>,
) -> Resp {
    let (ct, body) = multipart(&[("body", Some(name), bytes)]);
    call(
        app,
        "POST",
        &format!("/rest/requestFile/{r}/actions/file"),
        token,
        cookie,
        Some(Body::Bytes(ct, body)),
    )
}

/// The names of the files in a folder.
fn names_in(app: &TestApp, token: &str, folder: &str) -> Vec<String> {
    let r = app.rest("GET", &format!("/rest/folders/{folder}/files"), token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let mut names: Vec<String> = r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

fn set(app: &TestApp, key: &str, value: &str) {
    coffer_service::identity::settings::set(&app.ctx, key, value, None).unwrap();
}

#[test]
fn a_folder_request_gives_each_recipient_a_link_that_takes_files_until_its_count() {
    let app = TestApp::spawn();
    let (owner_id, owner) = app.user_token("owner@example.com", Role::User);
    let (_, colleague) = app.user_token("colleague@example.com", Role::User);
    let folder = mkdir(&app, &owner, &my_folder(&app, &owner), "Requests");
    let links = ask(
        &app,
        &owner,
        &folder,
        json!({"to": [OUTSIDE, "Colleague@Example.com"], "subject": "Q3 figures", "body": "Please send the <b>figures</b>.", "count": 2}),
    );
    assert_eq!(links.len(), 2);
    let link = &links[0];
    let r = reference(link);
    assert_eq!(r.len(), 43);
    assert_eq!(link["type"], "folder");
    assert_eq!(
        link["requestor"],
        json!({"id": owner_id, "email": "owner@example.com"})
    );
    assert_eq!(link["recipient"]["email"], OUTSIDE);
    assert!(link["recipient"].get("id").is_none(), "{link}");
    assert!(links[1]["recipient"]["id"].is_string(), "{}", links[1]);
    assert_eq!(links[1]["recipient"]["email"], "colleague@example.com");
    assert_eq!(
        (link["remaining"].as_i64(), link["fileLimit"].as_i64()),
        (Some(2), Some(2))
    );
    assert_eq!(link["email"]["subject"], "Q3 figures");
    assert_eq!(link["message"], "Please send the <b>figures</b>.");
    assert_eq!(link["requireAuth"], false);
    assert_eq!(link["excludedFileExtensions"], json!([]));
    assert_eq!(link["config"]["excludedFileExtensions"], json!([]));
    assert_eq!(link["expire"].as_str().unwrap().len(), 10);
    assert_eq!(
        link["uploadLink"].as_str().unwrap(),
        format!("{}/requestFile/{r}", app.base)
    );
    // Stored hashed only; the link travels by mail.
    assert_eq!(app.count("1 = 1", "request_files"), 2);
    assert_eq!(app.count(&format!("ref_hash = '{r}'"), "request_files"), 0);
    let mail = outbox(&app, OUTSIDE);
    assert_eq!(mail.len(), 1);
    assert_eq!(mail[0].subject, "Q3 figures");
    assert!(
        mail[0].body.contains(&format!("/requestFile/{r}")),
        "{}",
        mail[0].body
    );
    assert!(
        mail[0].body.contains("Please send the figures."),
        "{}",
        mail[0].body
    );
    assert_eq!(outbox(&app, "colleague@example.com").len(), 1);

    // The reference alone opens a link without requireAuth.
    let got = anon(&app, "GET", &format!("/rest/requestFile/{r}"), None);
    assert_eq!(got.status, 200, "{}", got.text);
    assert_eq!(got.json()["id"], link["id"]);
    assert_eq!(got.json()["ref"], r.as_str());
    assert_eq!(app.count("subject = 'requestfile.link.view'", "events"), 1);
    let quiet = anon(
        &app,
        "GET",
        &format!("/rest/requestFile/{r}?read=false"),
        None,
    );
    assert_eq!(quiet.status, 200);
    assert_eq!(app.count("subject = 'requestfile.link.view'", "events"), 1);

    // Files arrive in the folder with the sender's address; the same name is a new version.
    let first = send_file(&app, &r, "report.pdf", b"v1", None, None);
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.json()["name"], "report.pdf");
    assert_eq!(first.json()["path"], "");
    assert_eq!(
        names_in(&app, &owner, &folder),
        [format!("report ({OUTSIDE}).pdf")]
    );
    let again = send_file(&app, &r, "report.pdf", b"v2", None, None);
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.json()["id"], first.json()["id"]);
    assert_eq!(again.json()["versionsCount"], 2);
    // Exhausted: still read, takes nothing more, stores nothing.
    let got = anon(&app, "GET", &format!("/rest/requestFile/{r}"), None);
    assert_eq!(got.json()["remaining"], 0);
    let blobs = app.count("1 = 1", "file_versions");
    let third = send_file(&app, &r, "more.pdf", b"v3", None, None);
    assert_error(&third, 403, "ERR_ENTITY_REQUEST_FILE_UPLOAD_LIMIT_REACHED");
    let third = anon(
        &app,
        "POST",
        &format!("/rest/requestFile/{r}/actions/initiateUpload"),
        Some(json!({"filename": "more.pdf"})),
    );
    assert_error(&third, 403, "ERR_ENTITY_REQUEST_FILE_UPLOAD_LIMIT_REACHED");
    assert_eq!(app.count("1 = 1", "file_versions"), blobs);
    assert_eq!(app.count("1 = 1", "request_file_uploads"), 2);
    assert_eq!(
        app.count("subject = 'requestfile.file.upload'", "events"),
        2
    );
    // An outside sender has no account: the file's events name nobody.
    assert_eq!(
        app.count(
            "subject = 'filesystem.file.create' AND actor_id IS NULL",
            "events"
        ),
        1
    );
    // The other recipient's link is their own, with its own count.
    let r2 = reference(&links[1]);
    let theirs = send_file(&app, &r2, "report.pdf", b"c1", Some(&colleague), None);
    assert_eq!(theirs.status, 200, "{}", theirs.text);
    assert_eq!(
        names_in(&app, &owner, &folder),
        [
            "report (colleague@example.com).pdf".to_string(),
            format!("report ({OUTSIDE}).pdf")
        ]
    );

    // Only the one who asked withdraws; then the link is expired for everyone.
    let r_colleague = call(
        &app,
        "DELETE",
        &format!("/rest/requestFile/{r}"),
        Some(&colleague),
        None,
        None,
    );
    assert_error(&r_colleague, 403, "ERR_ACCESS_USER");
    let gone = app.rest("DELETE", &format!("/rest/requestFile/{r2}"), &owner, None);
    assert_eq!(gone.status, 200, "{}", gone.text);
    assert_eq!(app.count("withdrawn_at IS NOT NULL", "request_files"), 1);
    let read = anon(&app, "GET", &format!("/rest/requestFile/{r2}"), None);
    assert_error(&read, 403, "ERR_ENTITY_REQUEST_FILE_EXPIRED");
    // `field` tells a withdrawn link from one past its last day, for programs and the page.
    assert_eq!(read.json()["errors"][0]["field"], "withdrawn");
    let late = send_file(&app, &r2, "late.pdf", b"x", None, None);
    assert_error(&late, 403, "ERR_ENTITY_REQUEST_FILE_EXPIRED");
    assert_eq!(late.json()["errors"][0]["field"], "withdrawn");
    // Past its last day likewise.
    app.execute(&format!(
        "UPDATE request_files SET expire_at = {} WHERE id = {}",
        coffer_tests::unix_now() - 1,
        link["id"]
    ));
    let read = anon(&app, "GET", &format!("/rest/requestFile/{r}"), None);
    assert_error(&read, 403, "ERR_ENTITY_REQUEST_FILE_EXPIRED");
    assert_eq!(read.json()["errors"][0]["field"], "expire");
    // A reference that is wrong, or not even shaped like one, is one answer.
    for bad in ["A".repeat(43), "nope".to_string()] {
        let read = anon(&app, "GET", &format!("/rest/requestFile/{bad}"), None);
        assert_error(&read, 403, "ERR_ACCESS_USER");
    }
    // The folder in the trash: the link says so.
    let links = ask(
        &app,
        &owner,
        &folder,
        json!({"to": [OUTSIDE], "subject": "again"}),
    );
    assert_eq!(links[0]["fileLimit"], 10, "the default count");
    let del = app.rest("DELETE", &format!("/rest/folders/{folder}"), &owner, None);
    assert!(del.status < 300, "{}", del.text);
    let read = anon(
        &app,
        "GET",
        &format!("/rest/requestFile/{}", reference(&links[0])),
        None,
    );
    assert_error(&read, 403, "ERR_ENTITY_DELETED");
}

#[test]
fn bad_requests_get_the_catalogue_error_and_store_nothing() {
    let app = TestApp::spawn();
    let (_, owner) = app.user_token("owner@example.com", Role::User);
    let (_, other) = app.user_token("other@example.com", Role::User);
    let folder = mkdir(&app, &owner, &my_folder(&app, &owner), "Requests");
    app.ctx
        .write(|c| {
            coffer_store::external_dls::add(c, &["team@partner.example".into()], None, 0)
                .map_err(Into::into)
        })
        .unwrap();
    let path = format!("/rest/folders/{folder}/actions/requestFile");
    let cases: Vec<(Value, u16, &str)> = vec![
        (json!({"subject": "s"}), 422, "ERR_INPUT_REQUIRED"),
        (json!({"to": [], "subject": "s"}), 422, "ERR_INPUT_REQUIRED"),
        (
            json!({"to": ["not an address"], "subject": "s"}),
            422,
            "ERR_INVALID_PARAMETER",
        ),
        (json!({"to": [OUTSIDE]}), 422, "ERR_INPUT_REQUIRED"),
        (
            json!({"to": [OUTSIDE], "subject": "x".repeat(999)}),
            422,
            "ERR_INVALID_PARAMETER",
        ),
        (
            json!({"to": [OUTSIDE], "subject": "s", "count": 0}),
            422,
            "ERR_INVALID_PARAMETER",
        ),
        (
            json!({"to": [OUTSIDE], "subject": "s", "count": 101}),
            422,
            "ERR_INVALID_PARAMETER",
        ),
        (
            json!({"to": [OUTSIDE], "subject": "s", "expire": "2001-01-01"}),
            422,
            "ERR_INPUT_INVALID_DATE",
        ),
        (
            json!({"to": [OUTSIDE], "subject": "s", "expire": "soon"}),
            422,
            "ERR_INPUT_INVALID_DATE",
        ),
        (
            json!({"to": [OUTSIDE], "subject": "s", "body": "<a href=\"https://evil.example\">bank.example.com</a>"}),
            422,
            "ERR_INPUT_HYPERLINK",
        ),
        (
            json!({"to": [OUTSIDE], "subject": "s", "body": "<script>x</script>"}),
            422,
            "ERR_INPUT_HTML_TAGS_INVALID",
        ),
        (
            json!({"to": [OUTSIDE], "subject": "s", "actionId": 3}),
            422,
            "ERR_INVALID_PARAMETER",
        ),
        (
            json!({"to": [OUTSIDE], "subject": "s", "showToken": 2}),
            422,
            "ERR_INVALID_PARAMETER",
        ),
        (
            json!({"to": [OUTSIDE], "subject": "s", "colour": "red"}),
            422,
            "ERR_INPUT_ATTRIBUTE_FORBIDDEN",
        ),
        (
            json!({"to": [OUTSIDE, "Team@Partner.example"], "subject": "s"}),
            403,
            "ERR_INPUT_EMAIL_IS_DISTRIBUTION_LIST",
        ),
        (
            json!({"to": [OUTSIDE], "subject": "s", "files": ["00000000-0000-0000-0000-000000000000"]}),
            404,
            "ERR_ENTITY_NOT_FOUND",
        ),
    ];
    for (body, status, code) in cases {
        let r = app.rest("POST", &path, &owner, Some(body.clone()));
        assert_error(&r, status, code);
        assert!(!r.text.contains("panicked"), "{body}");
    }
    // Someone who may not add files to the folder sees no folder at all.
    let r = app.rest(
        "POST",
        &path,
        &other,
        Some(json!({"to": [OUTSIDE], "subject": "s"})),
    );
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    // Turned off: the mail variant and the folder variant alike.
    set(&app, "requestFileEnabled", "false");
    let r = app.rest(
        "POST",
        &path,
        &owner,
        Some(json!({"to": [OUTSIDE], "subject": "s"})),
    );
    assert_error(&r, 403, "ERR_SYSTEM_REQUEST_FILE_DISABLED");
    let r = app.rest(
        "POST",
        "/rest/mail/actions/requestFile",
        &owner,
        Some(json!({"to": [OUTSIDE], "subject": "s"})),
    );
    assert_error(&r, 403, "ERR_SYSTEM_REQUEST_FILE_DISABLED");
    assert_eq!(app.count("1 = 1", "request_files"), 0);
    assert_eq!(app.count("kind = 'requestFile'", "emails"), 0);
    assert!(outbox(&app, OUTSIDE).is_empty());
    // showToken 0: the reference travels only by mail.
    set(&app, "requestFileEnabled", "true");
    let links = ask(
        &app,
        &owner,
        &folder,
        json!({"to": [OUTSIDE], "subject": "s", "showToken": 0, "count": 100}),
    );
    assert!(
        links[0].get("ref").is_none() && links[0].get("uploadLink").is_none(),
        "{}",
        links[0]
    );
    assert_eq!(links[0]["fileLimit"], 100);
}

/// One chunk through a link: multipart, with the reference instead of a bearer token.
fn chunk(app: &TestApp, url: &str, index: u32, data: &[u8], last: bool) -> Resp {
    let (ct, body) = multipart(&[
        ("compressionMode", None, b"NORMAL"),
        ("compressionSize", None, data.len().to_string().as_bytes()),
        ("originalSize", None, data.len().to_string().as_bytes()),
        ("index", None, index.to_string().as_bytes()),
        ("lastChunk", None, if last { b"1" } else { b"0" }),
        ("content", Some("blob"), data),
    ]);
    let path = url
        .split_once("/rest/")
        .map(|(_, p)| format!("/rest/{p}"))
        .unwrap();
    call(app, "POST", &path, None, None, Some(Body::Bytes(ct, body)))
}

#[test]
fn a_chunked_upload_through_a_link_lands_as_one_file_within_the_quota_and_extensions() {
    let app = TestApp::spawn();
    let (owner_id, owner) = app.user_token("owner@example.com", Role::User);
    let folder = mkdir(&app, &owner, &my_folder(&app, &owner), "Requests");
    set(&app, "requestFileExcludedExtensions", ".EXE, bat");
    let links = ask(
        &app,
        &owner,
        &folder,
        json!({"to": [OUTSIDE], "subject": "data", "count": 3}),
    );
    let r = reference(&links[0]);
    assert_eq!(links[0]["excludedFileExtensions"], json!(["exe", "bat"]));
    let refused = anon(
        &app,
        "POST",
        &format!("/rest/requestFile/{r}/actions/initiateUpload"),
        Some(json!({"filename": "setup.Exe"})),
    );
    assert_error(&refused, 403, "ERR_ENTITY_RESTRICTED_EXTENSION");
    let refused = send_file(&app, &r, "run.bat", b"x", None, None);
    assert_error(&refused, 403, "ERR_ENTITY_RESTRICTED_EXTENSION");
    let nameless = anon(
        &app,
        "POST",
        &format!("/rest/requestFile/{r}/actions/initiateUpload"),
        Some(json!({})),
    );
    assert_error(&nameless, 422, "ERR_INPUT_REQUIRED");

    let parts: [&[u8]; 3] = [&[1u8; 1000], &[2u8; 1000], b"end"];
    let s = anon(
        &app,
        "POST",
        &format!("/rest/requestFile/{r}/actions/initiateUpload"),
        Some(json!({"filename": "data.bin", "totalSize": 2003, "totalChunks": 3})),
    );
    assert_eq!(s.status, 201, "{}", s.text);
    let url = s.json()["uploadUrl"].as_str().unwrap().to_string();
    assert!(url.ends_with(&format!("?ref={r}")), "{url}");
    // Without the reference (or with another) the chunk is refused.
    let bare = url.split('?').next().unwrap().to_string();
    let no_ref = chunk(&app, &bare, 1, parts[0], false);
    assert!(
        no_ref.status == 401 || no_ref.status == 403,
        "{}",
        no_ref.text
    );
    for (i, p) in parts.iter().enumerate() {
        let c = chunk(&app, &url, i as u32 + 1, p, i == 2);
        assert_eq!(c.status, 200, "chunk {}: {}", i + 1, c.text);
    }
    assert_eq!(
        names_in(&app, &owner, &folder),
        [format!("data ({OUTSIDE}).bin")]
    );
    let size: i64 = app.count("size = 2003", "file_versions");
    assert_eq!(size, 1);
    assert_eq!(app.count("1 = 1", "request_file_uploads"), 1);
    let got = anon(&app, "GET", &format!("/rest/requestFile/{r}"), None);
    assert_eq!(got.json()["remaining"], 2);

    // Past the requestor's quota: refused, nothing kept.
    let used = app
        .ctx
        .with_conn(|c| coffer_store::content::usage(c, &owner_id).map_err(Into::into))
        .unwrap();
    set(&app, "storageQuota", &(used + 10).to_string());
    let big = send_file(&app, &r, "big.bin", &[7u8; 100], None, None);
    assert_error(&big, 413, "ERR_SYSTEM_NO_STORAGE_AVAILABLE");
    let big = anon(
        &app,
        "POST",
        &format!("/rest/requestFile/{r}/actions/initiateUpload"),
        Some(json!({"filename": "big.bin", "totalSize": 100})),
    );
    assert_error(&big, 413, "ERR_SYSTEM_NO_STORAGE_AVAILABLE");
    assert_eq!(app.count("1 = 1", "request_file_uploads"), 1);
    assert_eq!(names_in(&app, &owner, &folder).len(), 1);
}

#[test]
fn require_auth_takes_the_recipient_signed_in_or_the_code_from_the_outbox() {
    let app = TestApp::spawn();
    let (_, owner) = app.user_token("owner@example.com", Role::User);
    let (_, inside) = app.user_token("inside@example.com", Role::User);
    let (_, stranger) = app.user_token("stranger@example.com", Role::User);
    let folder = mkdir(&app, &owner, &my_folder(&app, &owner), "Requests");
    let links = ask(
        &app,
        &owner,
        &folder,
        json!({"to": [OUTSIDE, "inside@example.com"], "subject": "signed", "requireAuth": true, "count": 1}),
    );
    let r = reference(&links[0]);
    let path = format!("/rest/requestFile/{r}");
    assert_error(
        &anon(&app, "GET", &path, None),
        401,
        "ERR_AUTH_REQUEST_FILE",
    );
    let theirs = call(&app, "GET", &path, Some(&stranger), None, None);
    assert_error(&theirs, 403, "ERR_ACCESS_USER");
    // `field` tells the recipient's page this from an unknown reference.
    assert_eq!(theirs.json()["errors"][0]["field"], "recipient");
    assert_error(
        &send_file(&app, &r, "a.txt", b"a", None, None),
        401,
        "ERR_AUTH_REQUEST_FILE",
    );
    assert_error(
        &call(&app, "GET", &path, None, Some("forged"), None),
        401,
        "ERR_AUTH_REQUEST_FILE",
    );
    // The one who asked reads it.
    assert_eq!(app.rest("GET", &path, &owner, None).status, 200);

    // The recipient without an account proves the address with the mailed code.
    let sent = anon(&app, "POST", &format!("{path}/actions/sendCode"), None);
    assert_eq!(sent.status, 200, "{}", sent.text);
    assert_eq!(sent.json()["sentTo"], "e***@partner.example");
    // The link's mail and the code's may share a second, so the code is looked for in every
    // message to the address rather than in the last by time.
    let code: String = outbox(&app, OUTSIDE)
        .iter()
        .find_map(|m| {
            m.body.split_whitespace().find(|w| {
                w.trim_end_matches('.').len() == 6
                    && w.trim_end_matches('.').chars().all(|c| c.is_ascii_digit())
            })
        })
        .unwrap()
        .trim_end_matches('.')
        .to_string();
    let wrong = if code == "000000" { "000001" } else { "000000" };
    let no = anon(
        &app,
        "POST",
        &format!("{path}/actions/verifyCode"),
        Some(json!({"code": wrong})),
    );
    assert_error(&no, 422, "ERR_INVALID_PARAMETER");
    assert_eq!(app.count("1 = 1", "mail_access_sessions"), 0);
    let yes = anon(
        &app,
        "POST",
        &format!("{path}/actions/verifyCode"),
        Some(json!({"code": code})),
    );
    assert_eq!(yes.status, 200, "{}", yes.text);
    let session = yes.json()["sessionToken"].as_str().unwrap().to_string();
    assert_eq!(
        yes.cookie_value("coffer_rf_session").as_deref(),
        Some(session.as_str())
    );
    // The code works once.
    let again = anon(
        &app,
        "POST",
        &format!("{path}/actions/verifyCode"),
        Some(json!({"code": code})),
    );
    assert_error(&again, 422, "ERR_INVALID_PARAMETER");
    let got = call(&app, "GET", &path, None, Some(&session), None);
    assert_eq!(got.status, 200, "{}", got.text);
    assert_eq!(got.json()["requireAuth"], true);
    // The session is this recipient's only.
    let r_inside = reference(&links[1]);
    let theirs = call(
        &app,
        "GET",
        &format!("/rest/requestFile/{r_inside}"),
        None,
        Some(&session),
        None,
    );
    assert_error(&theirs, 401, "ERR_AUTH_REQUEST_FILE");

    // What arrived is listed, read, downloaded and taken back on such a link.
    let up = send_file(&app, &r, "notes.txt", b"hello", None, Some(&session));
    assert_eq!(up.status, 200, "{}", up.text);
    let file_id = up.json()["id"].as_str().unwrap().to_string();
    let list = call(
        &app,
        "GET",
        &format!("{path}/uploads"),
        None,
        Some(&session),
        None,
    );
    assert_eq!(list.status, 200, "{}", list.text);
    assert_eq!(list.json()["data"][0]["fileId"], file_id.as_str());
    assert_eq!(list.json()["data"][0]["name"], "notes.txt");
    assert_eq!(list.json()["metadata"]["total"], 1);
    let one = call(
        &app,
        "GET",
        &format!("{path}/uploads/{file_id}"),
        None,
        Some(&session),
        None,
    );
    assert_eq!(one.json()["name"], "notes.txt");
    let bytes = call(
        &app,
        "GET",
        &format!("{path}/uploads/{file_id}/content"),
        None,
        Some(&session),
        None,
    );
    assert_eq!(
        (bytes.status, bytes.bytes.as_slice()),
        (200, b"hello".as_slice())
    );
    assert_eq!(
        app.count("subject = 'requestfile.file.download'", "events"),
        1
    );
    let full = call(&app, "GET", &path, None, Some(&session), None);
    assert_eq!(full.json()["remaining"], 0);
    let del = call(
        &app,
        "DELETE",
        &format!("{path}/uploads/{file_id}"),
        None,
        Some(&session),
        None,
    );
    assert_eq!(del.status, 204, "{}", del.text);
    let back = call(&app, "GET", &path, None, Some(&session), None);
    assert_eq!(
        back.json()["remaining"],
        1,
        "an exhausted link is active again"
    );
    assert_eq!(app.count("deleted_at IS NOT NULL", "objects"), 1);

    // The recipient with an account signs in instead.
    let mine = call(
        &app,
        "GET",
        &format!("/rest/requestFile/{r_inside}"),
        Some(&inside),
        None,
        None,
    );
    assert_eq!(mine.status, 200, "{}", mine.text);
    let up = send_file(&app, &r_inside, "mine.txt", b"m", Some(&inside), None);
    assert_eq!(up.status, 200, "{}", up.text);
    // Without requireAuth, what arrived is not listed.
    let open = ask(
        &app,
        &owner,
        &folder,
        json!({"to": [OUTSIDE], "subject": "open"}),
    );
    let ro = reference(&open[0]);
    assert_error(
        &anon(
            &app,
            "GET",
            &format!("/rest/requestFile/{ro}/uploads"),
            None,
        ),
        403,
        "ERR_ACCESS_USER",
    );
    assert_error(
        &anon(
            &app,
            "POST",
            &format!("/rest/requestFile/{ro}/actions/sendCode"),
            None,
        ),
        422,
        "ERR_INVALID_PARAMETER",
    );
}

#[test]
fn a_code_sessions_calls_that_change_something_need_its_csrf_token() {
    let app = TestApp::spawn();
    let (_, owner) = app.user_token("owner@example.com", Role::User);
    let folder = mkdir(&app, &owner, &my_folder(&app, &owner), "Requests");
    let offered = upload_ok(&app, &owner, &folder, "terms.txt", b"the terms");
    let offered = offered["id"].as_str().unwrap().to_string();
    app.run_jobs();
    let links = ask(
        &app,
        &owner,
        &folder,
        json!({"to": [OUTSIDE], "subject": "signed", "requireAuth": true, "count": 2, "files": [offered]}),
    );
    let r = reference(&links[0]);
    let path = format!("/rest/requestFile/{r}");
    assert_eq!(
        anon(&app, "POST", &format!("{path}/actions/sendCode"), None).status,
        200
    );
    let code = mailed_code(&app, OUTSIDE);
    let yes = anon(
        &app,
        "POST",
        &format!("{path}/actions/verifyCode"),
        Some(json!({"code": code})),
    );
    assert_eq!(yes.status, 200, "{}", yes.text);
    let session = yes.json()["sessionToken"].as_str().unwrap().to_string();
    let csrf = yes.json()["csrfToken"].as_str().unwrap().to_string();
    // The page reads the token from its cookie: this origin's only, not HTTP-only.
    assert_eq!(
        yes.cookie_value("coffer_rf_csrf").as_deref(),
        Some(csrf.as_str())
    );
    let set = yes
        .cookies()
        .into_iter()
        .find(|c| c.starts_with("coffer_rf_csrf="))
        .unwrap();
    assert!(set.contains("SameSite=Strict"), "{set}");
    assert!(!set.contains("HttpOnly"), "{set}");
    assert_ne!(csrf, session);

    // Reads need no token.
    let got = session_call(&app, "GET", &path, None, Some(&session), None, None);
    assert_eq!(got.status, 200, "{}", got.text);
    // Every call that changes something: without the token, and with a wrong one, refused.
    let file = |name: &str| {
        let (ct, body) = multipart(&[("body", Some(name), b"bytes".as_slice())]);
        Some(Body::Bytes(ct, body))
    };
    let wrong = coffer_service::request_files::access::csrf_token("another session");
    for token in [None, Some(""), Some(wrong.as_str()), Some(session.as_str())] {
        let refused = [
            session_call(
                &app,
                "POST",
                &format!("{path}/actions/file"),
                None,
                Some(&session),
                token,
                file("a.txt"),
            ),
            session_call(
                &app,
                "POST",
                &format!("{path}/actions/initiateUpload"),
                None,
                Some(&session),
                token,
                Some(Body::Json(
                    json!({"filename": "b.txt", "totalSize": 1, "totalChunks": 1}),
                )),
            ),
            session_call(
                &app,
                "POST",
                &format!("{path}/reply"),
                None,
                Some(&session),
                token,
                Some(Body::Json(json!({"body": "done"}))),
            ),
            session_call(
                &app,
                "POST",
                &format!("{path}/comment/{offered}"),
                None,
                Some(&session),
                token,
                Some(Body::Json(json!({"contents": "nice"}))),
            ),
        ];
        for resp in &refused {
            assert_error(resp, 401, "ERR_AUTH_INVALID_CSRF");
        }
    }
    // Nothing was kept: no file, no upload session, no comment, no reply.
    assert_eq!(
        names_in(&app, &owner, &folder),
        vec!["terms.txt".to_string()]
    );
    assert_eq!(app.count("1 = 1", "uploads"), 0);
    assert_eq!(app.count("1 = 1", "comments"), 0);
    assert_eq!(app.count("subject = 'Re: signed'", "emails"), 0);
    let left = session_call(&app, "GET", &path, None, Some(&session), None, None);
    assert_eq!(left.json()["remaining"], 2);

    // With the token they go through.
    let up = session_call(
        &app,
        "POST",
        &format!("{path}/actions/file"),
        None,
        Some(&session),
        Some(&csrf),
        file("a.txt"),
    );
    assert_eq!(up.status, 200, "{}", up.text);
    let file_id = up.json()["id"].as_str().unwrap().to_string();
    let upload = format!("{path}/uploads/{file_id}");
    for token in [None, Some(wrong.as_str())] {
        let del = session_call(&app, "DELETE", &upload, None, Some(&session), token, None);
        assert_error(&del, 401, "ERR_AUTH_INVALID_CSRF");
    }
    assert_eq!(app.count("deleted_at IS NOT NULL", "objects"), 0);
    let del = session_call(
        &app,
        "DELETE",
        &upload,
        None,
        Some(&session),
        Some(&csrf),
        None,
    );
    assert_eq!(del.status, 204, "{}", del.text);
    assert_eq!(app.count("deleted_at IS NOT NULL", "objects"), 1);
    // A caller holding only the reference of a link without proof carries no session and so
    // needs no token; a signed-in caller is held to its own rule, not this one.
    let open = ask(
        &app,
        &owner,
        &folder,
        json!({"to": [OUTSIDE], "subject": "open"}),
    );
    let sent = send_file(&app, &reference(&open[0]), "b.txt", b"b", None, None);
    assert_eq!(sent.status, 200, "{}", sent.text);
}

#[test]
fn deleting_a_user_ends_their_links_only_when_the_options_say_so() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (ann_id, ann) = app.user_token("ann@example.com", Role::User);
    let (bob_id, bob) = app.user_token("bob@example.com", Role::User);
    let link_of = |token: &str, to: &str| {
        let folder = mkdir(&app, token, &my_folder(&app, token), "Incoming");
        let links = ask(
            &app,
            token,
            &folder,
            json!({"to": [to], "subject": "Papers"}),
        );
        reference(&links[0])
    };
    let anns = link_of(&ann, "first@partner.example");
    let bobs = link_of(&bob, "second@partner.example");
    // The delivery pump is not running: both link mails wait in the outbox.
    assert_eq!(outbox(&app, "first@partner.example")[0].state, "queued");

    // Withdrawn with the account: the link answers as withdrawn and its mail never goes.
    let r = app.rest(
        "DELETE",
        &format!("/rest/admin/users/{ann_id}"),
        &admin,
        Some(json!({"withdrawRequestFiles": true})),
    );
    assert_eq!(r.status, 204, "{}", r.text);
    let gone = anon(&app, "GET", &format!("/rest/requestFile/{anns}"), None);
    assert_error(&gone, 403, "ERR_ENTITY_REQUEST_FILE_EXPIRED");
    assert_eq!(gone.json()["errors"][0]["field"], "withdrawn");
    assert_error(
        &send_file(&app, &anns, "late.txt", b"late", None, None),
        403,
        "ERR_ENTITY_REQUEST_FILE_EXPIRED",
    );
    let mail = &outbox(&app, "first@partner.example")[0];
    assert_eq!(mail.state, "expired");
    assert_eq!(mail.body, "", "the unsent link is erased");
    assert_eq!(
        mail.last_error.as_deref(),
        Some(coffer_store::request_files::WITHDRAWN)
    );
    assert_eq!(
        app.count(
            &format!("subject = 'requestfile.link.delete' AND data LIKE '%{ann_id}%'"),
            "events"
        ),
        1
    );

    // Without the option the link works until its own end, and its mail still goes.
    let r = app.rest(
        "DELETE",
        &format!("/rest/users?id:in={bob_id}"),
        &admin,
        Some(json!({"withdrawRequestFiles": false})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let open = anon(&app, "GET", &format!("/rest/requestFile/{bobs}"), None);
    assert_eq!(open.status, 200, "{}", open.text);
    let sent = send_file(&app, &bobs, "report.txt", b"report", None, None);
    assert_eq!(sent.status, 200, "{}", sent.text);
    assert_eq!(outbox(&app, "second@partner.example")[0].state, "queued");
    assert_eq!(
        app.count("subject = 'requestfile.link.delete'", "events"),
        1
    );
}

/// A 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

#[test]
fn a_view_only_file_is_viewed_in_place_and_never_served_to_be_saved() {
    let app = TestApp::spawn();
    let (_, owner) = app.user_token("owner@example.com", Role::User);
    let top = my_folder(&app, &owner);
    let folder = mkdir(&app, &owner, &top, "Requests");
    let html = b"<h1>Terms</h1><script>alert(1)</script>".as_slice();
    let pdf = b"%PDF-1.4\n%%EOF\n".as_slice();
    let files: Vec<(String, &[u8])> = [
        ("terms.txt", b"the terms\n".as_slice()),
        ("page.html", html),
        ("plan.png", PNG),
        ("scan.pdf", pdf),
        ("bundle.bin", b"\x00\x01 raw".as_slice()),
    ]
    .into_iter()
    .map(|(name, bytes)| {
        let f = upload_ok(&app, &owner, &top, name, bytes);
        (f["id"].as_str().unwrap().to_string(), bytes)
    })
    .collect();
    // The previews settle (the raw file gets none).
    app.run_jobs();
    let ids: Vec<&str> = files.iter().map(|(id, _)| id.as_str()).collect();
    let links = ask(
        &app,
        &owner,
        &folder,
        json!({"to": [OUTSIDE], "subject": "view", "files": ids, "actionId": 1}),
    );
    let r = reference(&links[0]);
    let view = |id: &str| {
        anon(
            &app,
            "GET",
            &format!("/rest/requestFile/{r}/sources/{id}/view"),
            None,
        )
    };
    for ((id, bytes), mime) in files.iter().zip([
        "text/plain; charset=utf-8",
        "text/plain; charset=utf-8",
        "image/png",
        "application/pdf",
    ]) {
        let v = view(id);
        assert_eq!(v.status, 200, "{}", v.text);
        assert_eq!(v.header("content-type"), Some(mime));
        assert_eq!(v.bytes.as_slice(), *bytes, "{mime}");
        assert!(
            v.header("content-disposition")
                .unwrap()
                .starts_with("inline"),
            "{:?}",
            v.header("content-disposition")
        );
        assert_eq!(v.header("x-content-type-options"), Some("nosniff"));
        assert!(v
            .header("content-security-policy")
            .unwrap()
            .contains("sandbox"));
        // The preview names the view, so the page shows it.
        let p = anon(
            &app,
            "GET",
            &format!("/rest/requestFile/{r}/preview/{id}"),
            None,
        );
        assert_eq!(p.status, 200, "{}", p.text);
        assert_eq!(p.json()["status"], "preview", "{}", p.text);
        assert!(p.json()["link"].as_str().is_some(), "{}", p.text);
        // And the file is never served to be saved.
        assert_error(
            &anon(
                &app,
                "GET",
                &format!("/rest/requestFile/{r}/sources/{id}/content"),
                None,
            ),
            403,
            "ERR_ACCESS_USER",
        );
    }
    // Text is shown as text whatever it was stored as: the markup is only its source.
    let (text_id, html_id) = (&files[0].0, &files[1].0);
    for id in [text_id, html_id] {
        let p = anon(
            &app,
            "GET",
            &format!("/rest/requestFile/{r}/preview/{id}"),
            None,
        )
        .json();
        assert_eq!(p["type"], "text");
        assert_eq!(p["mime"], "text/plain; charset=utf-8");
        assert!(p["link"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/sources/{id}/view")));
    }
    assert_error(
        &anon(
            &app,
            "GET",
            &format!("/rest/requestFile/{r}/sources/{html_id}/content?inline=true"),
            None,
        ),
        403,
        "ERR_ACCESS_USER",
    );
    // A type with no view: none, and the preview says so.
    let raw = &files[4].0;
    assert_error(&view(raw), 404, "ERR_ENTITY_NOT_FOUND");
    let p = anon(
        &app,
        "GET",
        &format!("/rest/requestFile/{r}/preview/{raw}"),
        None,
    )
    .json();
    assert_eq!(p["status"], "failed", "{p}");
    assert!(p.get("link").is_none(), "{p}");
    // Only the files of the link, and only while it is open.
    let other = upload_ok(&app, &owner, &top, "private.txt", b"no");
    assert_error(
        &view(other["id"].as_str().unwrap()),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    assert_eq!(
        app.rest("DELETE", &format!("/rest/requestFile/{r}"), &owner, None)
            .status,
        200
    );
    assert_error(&view(text_id), 403, "ERR_ENTITY_REQUEST_FILE_EXPIRED");
}

#[test]
fn offered_files_are_viewed_or_downloaded_as_the_request_says_and_take_comments() {
    let app = TestApp::spawn();
    let (_, owner) = app.user_token("owner@example.com", Role::User);
    let top = my_folder(&app, &owner);
    let folder = mkdir(&app, &owner, &top, "Requests");
    let png = upload_ok(&app, &owner, &top, "form.png", b"\x89PNG fake");
    let doc = upload_ok(&app, &owner, &top, "terms.txt", b"the terms");
    let png_id = png["id"].as_str().unwrap();
    let doc_id = doc["id"].as_str().unwrap();
    let view_only = ask(
        &app,
        &owner,
        &folder,
        json!({"to": [OUTSIDE], "subject": "s", "files": [png_id, doc_id], "actionId": 1}),
    );
    let r = reference(&view_only[0]);
    let l = anon(&app, "GET", &format!("/rest/requestFile/{r}/sources"), None);
    assert_eq!(l.status, 200, "{}", l.text);
    assert_eq!(l.json()["metadata"]["total"], 2);
    let entry = &l.json()["data"][0];
    assert_eq!(entry["actionId"], 1);
    assert_eq!(entry["requestFileId"], view_only[0]["id"]);
    assert_eq!(
        entry["permissions"],
        json!([{"name": "view", "enabled": true}, {"name": "download", "enabled": false}])
    );
    let f = anon(
        &app,
        "GET",
        &format!("/rest/requestFile/{r}/sources/{doc_id}"),
        None,
    );
    assert_eq!(
        (f.status, f.json()["name"].as_str()),
        (200, Some("terms.txt"))
    );
    assert_error(
        &anon(
            &app,
            "GET",
            &format!("/rest/requestFile/{r}/sources/{doc_id}/content"),
            None,
        ),
        403,
        "ERR_ACCESS_USER",
    );
    // A view-only link shows what is shown in place, and only so.
    let shown = anon(
        &app,
        "GET",
        &format!("/rest/requestFile/{r}/sources/{png_id}/content?inline=true"),
        None,
    );
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert_error(
        &anon(
            &app,
            "GET",
            &format!("/rest/requestFile/{r}/sources/{doc_id}/content?inline=true"),
            None,
        ),
        403,
        "ERR_ACCESS_USER",
    );
    let p = anon(
        &app,
        "GET",
        &format!("/rest/requestFile/{r}/preview/{png_id}"),
        None,
    );
    assert_eq!(p.status, 200, "{}", p.text);
    assert!(["processing", "preview", "failed"].contains(&p.json()["status"].as_str().unwrap()));
    // Only the files of the link.
    let other = upload_ok(&app, &owner, &top, "private.txt", b"no");
    let other_id = other["id"].as_str().unwrap();
    assert_error(
        &anon(
            &app,
            "GET",
            &format!("/rest/requestFile/{r}/sources/{other_id}/content"),
            None,
        ),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    assert_error(
        &anon(
            &app,
            "GET",
            &format!("/rest/requestFile/{r}/preview/{other_id}"),
            None,
        ),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );

    let download = ask(
        &app,
        &owner,
        &folder,
        json!({"to": [OUTSIDE], "subject": "s", "files": [doc_id], "actionId": 2}),
    );
    let r2 = reference(&download[0]);
    let got = anon(
        &app,
        "GET",
        &format!("/rest/requestFile/{r2}/sources/{doc_id}/content"),
        None,
    );
    assert_eq!(
        (got.status, got.bytes.as_slice()),
        (200, b"the terms".as_slice())
    );
    let l = anon(
        &app,
        "GET",
        &format!("/rest/requestFile/{r2}/sources"),
        None,
    );
    assert_eq!(
        l.json()["data"][0]["permissions"][1],
        json!({"name": "download", "enabled": true})
    );

    // A comment by an outside recipient names them.
    let c = anon(
        &app,
        "POST",
        &format!("/rest/requestFile/{r2}/comment/{doc_id}"),
        Some(json!({"contents": "Signed, see attached."})),
    );
    assert_eq!(c.status, 200, "{}", c.text);
    assert_eq!(
        c.json()["contents"],
        format!("{OUTSIDE}: Signed, see attached.")
    );
    assert_eq!(c.json()["objectId"], doc_id);
    let blank = anon(
        &app,
        "POST",
        &format!("/rest/requestFile/{r2}/comment/{doc_id}"),
        Some(json!({"contents": "  "})),
    );
    assert_error(&blank, 422, "ERR_INPUT_REQUIRED");
    let elsewhere = anon(
        &app,
        "POST",
        &format!("/rest/requestFile/{r2}/comment/{other_id}"),
        Some(json!({"contents": "x"})),
    );
    assert_error(&elsewhere, 404, "ERR_ENTITY_NOT_FOUND");
    let comments = app.rest(
        "GET",
        &format!("/rest/files/{doc_id}/comments"),
        &owner,
        None,
    );
    assert_eq!(comments.json()["metadata"]["total"], 1);
}

#[test]
fn uploads_through_a_link_reach_the_requestors_folder_notifications() {
    let app = TestApp::spawn();
    let (owner_id, owner) = app.user_token("owner@example.com", Role::User);
    let folder = mkdir(&app, &owner, &my_folder(&app, &owner), "Requests");
    let r = app.rest(
        "PUT",
        &format!("/rest/folders/{folder}/actions/setNotifications"),
        &owner,
        Some(json!({"fileAdded": 1})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let links = ask(
        &app,
        &owner,
        &folder,
        json!({"to": [OUTSIDE], "subject": "s"}),
    );
    let up = send_file(&app, &reference(&links[0]), "scan.pdf", b"pdf", None, None);
    assert_eq!(up.status, 200, "{}", up.text);
    coffer_service::notifications::deliver::scan(&app.ctx).unwrap();
    assert_eq!(
        app.count(
            &format!("user_id = '{owner_id}' AND kind = 'file'"),
            "notification_items"
        ),
        1
    );
}

#[test]
fn a_mail_request_brings_the_files_as_one_email_on_reply_or_after_the_last_one() {
    let app = TestApp::spawn();
    let (owner_id, owner) = app.user_token("owner@example.com", Role::User);
    let r = app.rest(
        "POST",
        "/rest/mail/actions/requestFile",
        &owner,
        Some(json!({"to": [OUTSIDE], "subject": "Your documents", "fileLimit": 2})),
    );
    assert_eq!((r.status, r.text.as_str()), (201, ""));
    let r = app.rest(
        "POST",
        "/rest/mail/actions/requestFile?returnEntity=true",
        &owner,
        Some(json!({"to": [OUTSIDE, "second@partner.example"], "subject": "Your documents", "fileLimit": 2, "returnReceipts": ["owner@example.com"]})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let links = r.json()["data"].as_array().unwrap().clone();
    assert_eq!(links[0]["type"], "inbox");
    assert_eq!(links[0]["fileLimit"], 2);
    let bad = app.rest(
        "POST",
        "/rest/mail/actions/requestFile",
        &owner,
        Some(json!({"to": [OUTSIDE], "subject": "s", "fileLimit": 0})),
    );
    assert_error(&bad, 422, "ERR_INVALID_PARAMETER");
    let r1 = reference(&links[0]);
    // A reply before any file is refused.
    let early = anon(
        &app,
        "POST",
        &format!("/rest/requestFile/{r1}/reply"),
        Some(json!({"body": "done"})),
    );
    assert_error(&early, 403, "ERR_ENTITY_REQUEST_FILE_NO_FILE_UPLOADED");
    let up = send_file(&app, &r1, "passport.pdf", b"id", None, None);
    assert_eq!(up.status, 200, "{}", up.text);
    let hyper = anon(
        &app,
        "POST",
        &format!("/rest/requestFile/{r1}/reply"),
        Some(json!({"body": "<a href=\"https://evil.example\">owner.example.com</a>"})),
    );
    assert_error(&hyper, 422, "ERR_INPUT_HYPERLINK");
    let inbox = |app: &TestApp| -> Vec<Value> {
        let r = app.rest("GET", "/rest/mail?bucket=inbox", &owner, None);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["data"].as_array().unwrap().clone()
    };
    assert!(inbox(&app).is_empty(), "nothing before the reply");
    let done = anon(
        &app,
        "POST",
        &format!("/rest/requestFile/{r1}/reply"),
        Some(json!({"body": "Here they are."})),
    );
    assert_eq!(done.status, 201, "{}", done.text);
    let mails = inbox(&app);
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0]["subject"], "Re: Your documents");
    let id = mails[0]["id"].as_str().unwrap();
    let att = app.rest("GET", &format!("/rest/mail/{id}/attachments"), &owner, None);
    assert_eq!(att.json()["metadata"]["total"], 1);
    assert_eq!(
        att.json()["data"][0]["name"],
        format!("passport ({OUTSIDE}).pdf")
    );
    // The files went out: the link takes no more, and no second email comes.
    assert_error(
        &send_file(&app, &r1, "more.pdf", b"x", None, None),
        403,
        "ERR_ENTITY_REQUEST_FILE_UPLOAD_LIMIT_REACHED",
    );
    let twice = anon(&app, "POST", &format!("/rest/requestFile/{r1}/reply"), None);
    assert_error(&twice, 403, "ERR_ENTITY_REQUEST_FILE_UPLOAD_LIMIT_REACHED");
    // The second recipient sends as many as allowed: the email comes by itself.
    let r2 = reference(&links[1]);
    assert_eq!(send_file(&app, &r2, "a.pdf", b"a", None, None).status, 200);
    assert_eq!(inbox(&app).len(), 1);
    assert_eq!(send_file(&app, &r2, "b.pdf", b"b", None, None).status, 200);
    assert_eq!(inbox(&app).len(), 2);
    // The files waited in the requestor's system folder, counted against their quota.
    let me = app.rest("GET", "/rest/users/me", &owner, None).json();
    let mydir = me["mydirId"].as_str().unwrap();
    assert_eq!(
        app.count(
            &format!("parent_id = '{mydir}' AND owner_id = '{owner_id}'"),
            "objects"
        ),
        3
    );
}

#[test]
fn secure_folders_keep_their_files_from_requests_and_mail() {
    let app = TestApp::spawn();
    let (_, owner) = app.user_token("owner@example.com", Role::User);
    let me = app.rest("GET", "/rest/users/me", &owner, None).json();
    let root = me["basedirId"].as_str().unwrap().to_string();
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{root}/folders"),
        &owner,
        Some(json!({"name": "Vault", "secure": true})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let vault = r.json()["id"].as_str().unwrap().to_string();
    let inner = mkdir(&app, &owner, &vault, "Inner");
    let secret = upload_ok(&app, &owner, &inner, "secret.txt", b"s");
    let secret_id = secret["id"].as_str().unwrap();
    for f in [&vault, &inner] {
        let r = app.rest(
            "POST",
            &format!("/rest/folders/{f}/actions/requestFile"),
            &owner,
            Some(json!({"to": [OUTSIDE], "subject": "s"})),
        );
        assert_error(&r, 403, "ERR_ENTITY_IS_SECURE_FOLDER");
    }
    let plain = mkdir(&app, &owner, &my_folder(&app, &owner), "Plain");
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{plain}/actions/requestFile"),
        &owner,
        Some(json!({"to": [OUTSIDE], "subject": "s", "files": [secret_id]})),
    );
    assert_error(&r, 403, "ERR_ENTITY_IS_SECURE_FOLDER");
    let r = app.rest(
        "POST",
        "/rest/mail/actions/sendFile",
        &owner,
        Some(json!({"to": [OUTSIDE], "subject": "s", "files": [secret_id]})),
    );
    assert_error(&r, 403, "ERR_ENTITY_IS_SECURE_FOLDER");
    assert_eq!(app.count("1 = 1", "request_files"), 0);
    assert_eq!(app.count("1 = 1", "email_attachments"), 0);
    assert!(outbox(&app, OUTSIDE).is_empty());
}

#[test]
fn the_link_mail_arrives_through_the_smtp_server() {
    let Some(s) = smtp() else { return };
    let app = TestApp::spawn();
    let to = format!("rf-{}@example.com", uuid::Uuid::new_v4().simple());
    let (_, owner) = app.user_token("owner@example.com", Role::User);
    let folder = mkdir(&app, &owner, &my_folder(&app, &owner), "Requests");
    let mut relay = Relay::parse(&s.url, Some("never")).expect("relay URL");
    relay.user = Some(s.user.clone());
    relay.password = Some(Password(s.password.clone()));
    let mut c = Config::new(
        relay,
        mail::parse_from("Coffer <no-reply@coffer.test>").unwrap(),
        "rf1",
    );
    c.timeout = Duration::from_secs(5);
    c.poll = Duration::from_millis(20);
    let _workers = mail::spawn(app.ctx.db.clone(), c, "coffer.test").expect("mail sender");
    let links = ask(
        &app,
        &owner,
        &folder,
        json!({"to": [to], "subject": "Contract", "count": 1}),
    );
    let r = reference(&links[0]);
    wait_until("the link mail arrives", 30, || {
        !received(&s.dir, &to).is_empty()
    });
    let got = received(&s.dir, &to);
    assert_eq!(got.len(), 1);
    let data = coffer_tests::decoded_body(got[0]["data"].as_str().unwrap());
    assert!(data.contains(&format!("/requestFile/{r}")), "{data}");
    assert!(data.contains("up to 1 file"), "{data}");
}
