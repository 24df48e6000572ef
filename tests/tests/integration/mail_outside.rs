//! The pages an outside recipient of mail opens (`/mail/{id}?ref=…`), over real HTTP: the one
//! refusal for any bad reference, expired, withdrawn and `internal` mail, `no_auth` mail shown at
//! once with its files, the code step of `verify_recipient` mail (codes mailed, stored hashed,
//! attempts counted and used up), the session a right code opens and what it opens, the
//! capability reads of `/rest` by reference, and the stored state after each step
//! (docs/mail.md, "Outside recipients"). Runs on SQLite, and on PostgreSQL when
//! `COFFER_TEST_POSTGRES_URL` is set.

use coffer_domain::Role;
use coffer_tests::{hidden_field, outbox, Resp, TestApp};
use serde_json::{json, Value};

const OUT: &str = "out@partner.example";

/// Sends mail; its id.
fn send(app: &TestApp, token: &str, body: Value) -> String {
    app.send_mail(token, body)["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The reference of the link the outside recipient `to` received for `email_id`.
fn reference(app: &TestApp, email_id: &str, to: &str) -> String {
    let marker = format!("/mail/{email_id}?ref=");
    let body = outbox(app, to)
        .into_iter()
        .map(|m| m.body)
        .find(|b| b.contains(&marker))
        .expect("the message with the link");
    let start = body.find(&marker).unwrap() + marker.len();
    body[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect()
}

/// The code in the only code message to `to` (earlier ones are cleared by [`ask_code`]).
fn mailed_code(app: &TestApp, to: &str) -> String {
    let codes: Vec<String> = outbox(app, to)
        .into_iter()
        .filter(|m| m.subject == "Your code for a secure message")
        .map(|m| {
            let at = m.body.find(" is ").expect("a code") + 4;
            m.body[at..at + 6].to_string()
        })
        .collect();
    assert_eq!(codes.len(), 1, "{codes:?}");
    assert!(codes[0].chars().all(|c| c.is_ascii_digit()), "{codes:?}");
    codes[0].clone()
}

fn get(app: &TestApp, path: &str, cookie: Option<&str>) -> Resp {
    let h: Vec<(&str, &str)> = cookie.map(|c| vec![("Cookie", c)]).unwrap_or_default();
    app.send("GET", path, &h, None)
}

fn page(id: &str, r: &str) -> String {
    format!("/mail/{id}?ref={r}")
}

/// The security headers of the sign-in pages.
fn assert_page_headers(r: &Resp) {
    let csp = r.header("content-security-policy").unwrap_or_default();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(!csp.contains("script-src"), "{csp}");
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(r.header("x-frame-options"), Some("DENY"));
    assert_eq!(r.header("referrer-policy"), Some("no-referrer"));
    assert_eq!(r.header("cache-control"), Some("no-store"));
    assert!(r
        .header("content-type")
        .unwrap_or_default()
        .starts_with("text/html"));
    assert!(!r.text.contains("<script"), "{}", r.text);
}

/// The code step's CSRF cookie (as `name=value`) and value, from the page that asks for a code.
fn csrf_of(r: &Resp) -> (String, String) {
    let v = r.cookie_value("coffer_mail_csrf").expect("a CSRF cookie");
    assert_eq!(hidden_field(&r.text, "csrf"), v);
    (format!("coffer_mail_csrf={v}"), v)
}

/// Asks for a code from the page of `id` (clearing earlier code messages first); the code.
fn ask_code(app: &TestApp, id: &str, r: &str, cookie: &str, csrf: &str) -> String {
    app.execute("DELETE FROM mail_outbox WHERE subject = 'Your code for a secure message'");
    let resp = app.page_post(
        &format!("/mail/{id}/code"),
        cookie,
        &[("ref", r), ("csrf", csrf)],
    );
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert!(resp.text.contains("o***@partner.example"), "{}", resp.text);
    assert_page_headers(&resp);
    mailed_code(app, OUT)
}

fn enter_code(app: &TestApp, id: &str, r: &str, cookie: &str, csrf: &str, code: &str) -> Resp {
    app.page_post(
        &format!("/mail/{id}/verify"),
        cookie,
        &[("ref", r), ("csrf", csrf), ("code", code)],
    )
}

fn wrong(code: &str) -> String {
    let n: u32 = code.parse().unwrap();
    format!("{:06}", (n + 1) % 1_000_000)
}

#[test]
fn every_bad_reference_gets_the_same_refusal_and_guessing_locks_the_address() {
    let app = TestApp::builder()
        .config(|c| {
            c.throttle.max_failures = 6;
            c.throttle.slow_after = 100;
        })
        .spawn();
    let (_, ta) = app.user_token("ann@example.com", Role::User);
    let a = send(
        &app,
        &ta,
        json!({"to": [OUT], "subject": "A", "body": "alpha", "acl": "no_auth"}),
    );
    let b = send(
        &app,
        &ta,
        json!({"to": ["other@partner.example"], "subject": "B", "body": "beta", "acl": "no_auth"}),
    );
    let ra = reference(&app, &a, OUT);
    let rb = reference(&app, &b, "other@partner.example");

    let good = get(&app, &page(&a, &ra), None);
    assert_eq!(good.status, 200, "{}", good.text);
    assert!(good.text.contains("alpha"));
    assert_page_headers(&good);

    // Another email's reference, a made-up one, none, and an email that does not exist: the
    // same status and the same page.
    let refusals = [
        get(&app, &page(&a, &rb), None),
        get(&app, &page(&a, "not-a-reference"), None),
        get(&app, &format!("/mail/{a}"), None),
        get(
            &app,
            &page("6f1c1a6e-0000-4000-8000-000000000000", &ra),
            None,
        ),
    ];
    for r in &refusals {
        assert_eq!(r.status, 404, "{}", r.text);
        assert_eq!(r.text, refusals[0].text);
        assert_page_headers(r);
        assert!(!r.text.contains("alpha") && !r.text.contains("beta"));
    }
    assert!(refusals[0]
        .text
        .contains("This link does not open a message"));
    // A download through a bad reference is refused the same way.
    let r = get(
        &app,
        &format!("/mail/{a}/attachments/x/content?ref={rb}"),
        None,
    );
    assert_eq!((r.status, &r.text), (404, &refusals[0].text));

    // Guessing locks the client address (the sixth failure here): even a good reference
    // waits now.
    let r = get(&app, &page(&a, "guess"), None);
    assert_eq!((r.status, &r.text), (404, &refusals[0].text));
    let r = get(&app, &page(&a, &ra), None);
    assert_eq!(r.status, 429, "{}", r.text);
    assert!(r.header("retry-after").is_some());
    assert!(r.text.contains("Too many attempts"));
}

#[test]
fn no_auth_mail_shows_at_once_and_its_file_downloads() {
    let app = TestApp::spawn();
    let (_, ta) = app.user_token("ann@example.com", Role::User);
    let bytes = b"%PDF-1.4 the quarterly bytes".to_vec();
    let f = app.upload_to_my_folder(&ta, "q3 report.pdf", &bytes);
    let id = send(
        &app,
        &ta,
        json!({"to": [OUT], "subject": "Q3 <numbers>", "body": "See <b>attached</b>.\nThanks",
               "files": [f], "acl": "no_auth"}),
    );
    let r = reference(&app, &id, OUT);
    let p = get(&app, &page(&id, &r), None);
    assert_eq!(p.status, 200, "{}", p.text);
    assert_page_headers(&p);
    // Sender, subject (escaped), recipient, date, the body as its safe HTML, the file.
    assert!(p.text.contains("ann@example.com"), "{}", p.text);
    assert!(p.text.contains("Q3 &lt;numbers&gt;"), "{}", p.text);
    assert!(p.text.contains(OUT));
    assert!(
        p.text.contains("See <b>attached</b>.<br>Thanks"),
        "{}",
        p.text
    );
    assert!(p.text.contains("q3 report.pdf"));
    assert!(!p.text.contains("Send me a code"));
    let link_start = p.text.find("/mail/").unwrap();
    let href = format!("/mail/{id}/attachments/");
    let at = p.text[link_start..].find(&href).unwrap() + link_start;
    let link: String = p.text[at..].chars().take_while(|c| *c != '"').collect();
    assert!(link.ends_with(&format!("/content?ref={r}")), "{link}");

    let d = get(&app, &link, None);
    assert_eq!(d.status, 200, "{}", d.text);
    assert_eq!(d.bytes, bytes);
    assert!(d
        .header("content-disposition")
        .unwrap()
        .starts_with("attachment"));
    assert!(d
        .header("content-security-policy")
        .unwrap()
        .starts_with("sandbox"));
    assert_eq!(d.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(
        app.count(
            &format!("subject = 'mail.attachment.download' AND actor_id IS NULL AND data LIKE '%\"recipient\":\"{OUT}\"%' AND data LIKE '%{id}%'"),
            "events"
        ),
        1
    );
    // Another email's attachment id through this reference: not found.
    let other = get(
        &app,
        &format!("/mail/{id}/attachments/6f1c1a6e-0000-4000-8000-000000000000/content?ref={r}"),
        None,
    );
    assert_eq!(other.status, 404, "{}", other.text);

    // Expired: a page that says so (410), and the file no longer goes.
    app.execute(&format!(
        "UPDATE emails SET expire_at = 1 WHERE id = '{id}'"
    ));
    let p = get(&app, &page(&id, &r), None);
    assert_eq!(p.status, 410, "{}", p.text);
    assert!(p.text.contains("expired"), "{}", p.text);
    assert!(!p.text.contains("attached"));
    assert_eq!(get(&app, &link, None).status, 410);
    // Withdrawn: 410 as well, saying so.
    app.execute(&format!(
        "UPDATE emails SET expire_at = NULL, withdrawn_at = 5 WHERE id = '{id}'"
    ));
    let p = get(&app, &page(&id, &r), None);
    assert_eq!(p.status, 410, "{}", p.text);
    assert!(p.text.contains("withdrawn"), "{}", p.text);
    // `internal` mail shows nothing to a link: it is for signed-in users.
    app.execute(&format!(
        "UPDATE emails SET withdrawn_at = NULL, acl = 'internal' WHERE id = '{id}'"
    ));
    let p = get(&app, &page(&id, &r), None);
    assert_eq!(p.status, 403, "{}", p.text);
    assert!(p.text.contains("signed-in users"), "{}", p.text);
    assert!(!p.text.contains("attached"));
    assert_eq!(get(&app, &link, None).status, 403);
}

#[test]
fn verify_recipient_mail_opens_after_a_mailed_code() {
    let app = TestApp::builder()
        .config(|c| c.throttle.max_failures = 100)
        .spawn();
    let (_, ta) = app.user_token("ann@example.com", Role::User);
    let bytes = b"the secret bytes".to_vec();
    let f = app.upload_to_my_folder(&ta, "secret.txt", &bytes);
    let id = send(
        &app,
        &ta,
        json!({"to": [OUT], "subject": "Figures", "body": "the secret figures", "secureBody": true,
               "files": [f], "acl": "verify_recipient"}),
    );
    let r = reference(&app, &id, OUT);
    let aid: String = {
        let l = app.rest("GET", &format!("/rest/mail/{id}/attachments"), &ta, None);
        l.json()["data"][0]["attachmentId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let link = format!("/mail/{id}/attachments/{aid}/content?ref={r}");

    // First the page asks for a code; nothing of the content shows.
    let p = get(&app, &page(&id, &r), None);
    assert_eq!(p.status, 200, "{}", p.text);
    assert_page_headers(&p);
    assert!(p.text.contains("Send me a code"), "{}", p.text);
    assert!(p.text.contains("ann@example.com"));
    assert!(!p.text.contains("secret"), "{}", p.text);
    let set = p.cookies().join("\n");
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let (cookie, csrf) = csrf_of(&p);
    // The file waits for the code too: back to the page.
    let d = get(&app, &link, None);
    assert_eq!(d.status, 303, "{}", d.text);
    assert!(d.header("location").unwrap().ends_with(&page(&id, &r)));

    // A POST without its CSRF token (or with another) is refused, and sends nothing.
    let bad = app.page_post(
        &format!("/mail/{id}/code"),
        &cookie,
        &[("ref", &r), ("csrf", "forged")],
    );
    assert_eq!(bad.status, 400, "{}", bad.text);
    let bad = app.form(&format!("/mail/{id}/code"), &[("ref", &r), ("csrf", &csrf)]);
    assert_eq!(bad.status, 400, "{}", bad.text);
    assert_eq!(
        app.count("subject = 'Your code for a secure message'", "mail_outbox"),
        0
    );

    // The code is mailed, and stored only as a salted hash with an expiry.
    let code = ask_code(&app, &id, &r, &cookie, &csrf);
    assert_eq!(
        app.count(&format!("email_id = '{id}'"), "mail_access_codes"),
        1
    );
    assert_eq!(
        app.count(
            &format!("code_hash LIKE '%{code}%' OR code_salt LIKE '%{code}%'"),
            "mail_access_codes"
        ),
        0
    );
    let now = coffer_tests::unix_now();
    assert_eq!(
        app.count(
            &format!(
                "expire_at BETWEEN {} AND {} AND attempts = 0",
                now + 590,
                now + 610
            ),
            "mail_access_codes"
        ),
        1
    );
    assert_eq!(app.count("subject = 'mail.recipient.code'", "events"), 1);

    // A wrong code: the form again with an error, the attempt counted.
    let w = enter_code(&app, &id, &r, &cookie, &csrf, &wrong(&code));
    assert_eq!(w.status, 401, "{}", w.text);
    assert!(w.text.contains("4 attempt(s) left"), "{}", w.text);
    assert_page_headers(&w);
    assert_eq!(app.count("attempts = 1", "mail_access_codes"), 1);

    // The right code opens a session and goes back to the message.
    let ok = enter_code(&app, &id, &r, &cookie, &csrf, &code);
    assert_eq!(ok.status, 303, "{}", ok.text);
    assert!(ok.header("location").unwrap().ends_with(&page(&id, &r)));
    let set = ok.cookies().join("\n");
    assert!(set.contains("HttpOnly"), "{set}");
    assert!(set.contains("SameSite=Strict"), "{set}");
    assert!(set.contains(&format!("Path=/mail/{id}")), "{set}");
    assert!(!set.contains("Secure"), "plain http in tests: {set}");
    let token = ok.cookie_value("coffer_mail_session").unwrap();
    let session = format!("coffer_mail_session={token}");
    // Stored only hashed, bound to the recipient; the code is used up.
    assert_eq!(
        app.count(&format!("email_id = '{id}'"), "mail_access_sessions"),
        1
    );
    assert_eq!(
        app.count(&format!("token_hash = '{token}'"), "mail_access_sessions"),
        0
    );
    assert_eq!(app.count("1 = 1", "mail_access_codes"), 0);
    assert_eq!(app.count("subject = 'mail.recipient.verify'", "events"), 1);
    // No account was made for the recipient.
    assert_eq!(app.count(&format!("email = '{OUT}'"), "users"), 0);

    // With the session: the secure body and the file.
    let p = get(&app, &page(&id, &r), Some(&session));
    assert_eq!(p.status, 200, "{}", p.text);
    assert!(p.text.contains("the secret figures"), "{}", p.text);
    assert!(p.text.contains("secret.txt"));
    assert!(!p.text.contains("Send me a code"));
    let d = get(&app, &link, Some(&session));
    assert_eq!(d.status, 200, "{}", d.text);
    assert_eq!(d.bytes, bytes);
    // The code cannot be used again.
    let again = enter_code(&app, &id, &r, &cookie, &csrf, &code);
    assert_eq!(again.status, 401, "{}", again.text);
    assert!(again.text.contains("There is no code to check"));

    // The session opens only this recipient's email: another email to the same address asks
    // for its own code.
    let other = send(
        &app,
        &ta,
        json!({"to": [OUT], "subject": "Other", "body": "other secret", "secureBody": true,
               "acl": "anyone_auth"}),
    );
    let ro = reference(&app, &other, OUT);
    let p = get(&app, &page(&other, &ro), Some(&session));
    assert_eq!(p.status, 200, "{}", p.text);
    assert!(p.text.contains("Send me a code"), "{}", p.text);
    assert!(!p.text.contains("other secret"));

    // An ended session shows the code step again.
    app.execute("UPDATE mail_access_sessions SET expire_at = 1");
    let p = get(&app, &page(&id, &r), Some(&session));
    assert!(p.text.contains("Send me a code"), "{}", p.text);
    assert_eq!(get(&app, &link, Some(&session)).status, 303);
}

#[test]
fn a_code_is_void_after_five_wrong_attempts_or_once_expired() {
    let app = TestApp::builder()
        .config(|c| c.throttle.max_failures = 100)
        .spawn();
    let (_, ta) = app.user_token("ann@example.com", Role::User);
    let id = send(
        &app,
        &ta,
        json!({"to": [OUT], "subject": "S", "body": "hidden words", "acl": "verify_recipient"}),
    );
    let r = reference(&app, &id, OUT);
    let (cookie, csrf) = csrf_of(&get(&app, &page(&id, &r), None));

    let code = ask_code(&app, &id, &r, &cookie, &csrf);
    for left in (0..5).rev() {
        let w = enter_code(&app, &id, &r, &cookie, &csrf, &wrong(&code));
        assert_eq!(w.status, 401, "{}", w.text);
        if left > 0 {
            assert!(
                w.text.contains(&format!("{left} attempt(s) left")),
                "{}",
                w.text
            );
        } else {
            assert!(w.text.contains("no longer works"), "{}", w.text);
        }
    }
    assert_eq!(app.count("1 = 1", "mail_access_codes"), 0);
    // Now even the right code opens nothing.
    let w = enter_code(&app, &id, &r, &cookie, &csrf, &code);
    assert_eq!(w.status, 401, "{}", w.text);
    assert!(w.text.contains("There is no code to check"));
    assert!(w.cookie_value("coffer_mail_session").is_none());
    assert_eq!(app.count("1 = 1", "mail_access_sessions"), 0);
    assert_eq!(app.count("subject = 'mail.recipient.reject'", "events"), 5);

    // An expired code opens nothing either.
    let code = ask_code(&app, &id, &r, &cookie, &csrf);
    app.execute("UPDATE mail_access_codes SET expire_at = 1");
    let w = enter_code(&app, &id, &r, &cookie, &csrf, &code);
    assert_eq!(w.status, 401, "{}", w.text);
    assert!(w.text.contains("There is no code to check"));

    // A new code works.
    let code = ask_code(&app, &id, &r, &cookie, &csrf);
    let ok = enter_code(&app, &id, &r, &cookie, &csrf, &code);
    assert_eq!(ok.status, 303, "{}", ok.text);
    let session = format!(
        "coffer_mail_session={}",
        ok.cookie_value("coffer_mail_session").unwrap()
    );
    let p = get(&app, &page(&id, &r), Some(&session));
    assert!(p.text.contains("hidden words"), "{}", p.text);

    // Codes per recipient are limited: after five within the hour, a wait.
    for _ in 0..2 {
        ask_code(&app, &id, &r, &cookie, &csrf);
    }
    let r6 = app.page_post(
        &format!("/mail/{id}/code"),
        &cookie,
        &[("ref", &r), ("csrf", &csrf)],
    );
    assert_eq!(r6.status, 429, "{}", r6.text);
    assert!(r6.header("retry-after").is_some());
}

#[test]
fn no_auth_mail_reads_through_rest_by_reference_alone() {
    let app = TestApp::spawn();
    let (_, ta) = app.user_token("ann@example.com", Role::User);
    let bytes = b"open bytes".to_vec();
    let f = app.upload_to_my_folder(&ta, "open.txt", &bytes);
    let id = send(
        &app,
        &ta,
        json!({"to": [OUT, "second@partner.example"], "subject": "Open", "body": "plain <i>words</i>",
               "files": [f], "acl": "no_auth"}),
    );
    let r = reference(&app, &id, OUT);
    let v28 = [("X-Coffer-Version", "28")];

    let m = app.send("GET", &format!("/rest/mail/{id}?ref={r}"), &v28, None);
    assert_eq!(m.status, 200, "{}", m.text);
    let m = m.json();
    assert_eq!(m["id"], id.as_str());
    assert_eq!(m["subject"], "Open");
    assert_eq!(m["htmlBody"], "plain <i>words</i>");
    assert_eq!(m["acl"], "no_auth");
    assert!(m.get("recipients").is_none(), "{m}");
    // The version header is still needed.
    let r0 = app.send("GET", &format!("/rest/mail/{id}?ref={r}"), &[], None);
    assert_eq!(
        (r0.status, r0.code().as_str()),
        (400, "ERR_REQUEST_API_VERSION_MISSING")
    );
    // Its files, and their content.
    let l = app.send(
        "GET",
        &format!("/rest/mail/{id}/attachments?ref={r}"),
        &v28,
        None,
    );
    assert_eq!(l.status, 200, "{}", l.text);
    let l = l.json();
    assert_eq!(l["metadata"]["total"], 1);
    assert_eq!(l["data"][0]["name"], "open.txt");
    let aid = l["data"][0]["attachmentId"].as_str().unwrap().to_string();
    let d = app.send(
        "GET",
        &format!("/rest/mail/{id}/attachments/{aid}/content?ref={r}"),
        &v28,
        None,
    );
    assert_eq!(d.status, 200, "{}", d.text);
    assert_eq!(d.bytes, bytes);
    assert_eq!(
        app.count(
            &format!(
                "subject = 'mail.attachment.download' AND data LIKE '%\"recipient\":\"{OUT}\"%'"
            ),
            "events"
        ),
        1
    );

    // A bad reference, or no reference and no token.
    let bad = app.send("GET", &format!("/rest/mail/{id}?ref=nope"), &v28, None);
    assert_eq!(
        (bad.status, bad.code().as_str()),
        (404, "ERR_ENTITY_NOT_FOUND")
    );
    let none = app.send("GET", &format!("/rest/mail/{id}"), &v28, None);
    assert_eq!(none.status, 401, "{}", none.text);
    // Mail that asks for more than the link is not readable this way: as unknown.
    let v = send(
        &app,
        &ta,
        json!({"to": [OUT], "subject": "Guarded", "body": "guarded", "acl": "verify_recipient"}),
    );
    let rv = reference(&app, &v, OUT);
    let g = app.send("GET", &format!("/rest/mail/{v}?ref={rv}"), &v28, None);
    assert_eq!(
        (g.status, g.code().as_str(), &g.text),
        (404, "ERR_ENTITY_NOT_FOUND", &bad.text)
    );
    // Expired no_auth mail: refused as for a signed-in recipient.
    app.execute(&format!(
        "UPDATE emails SET expire_at = 1 WHERE id = '{id}'"
    ));
    let e = app.send(
        "GET",
        &format!("/rest/mail/{id}/attachments/{aid}/content?ref={r}"),
        &v28,
        None,
    );
    assert_eq!((e.status, e.code().as_str()), (403, "ERR_ACCESS_USER"));
    // The sender still reads it with a token as before.
    assert_eq!(
        app.rest("GET", &format!("/rest/mail/{id}"), &ta, None)
            .status,
        200
    );
}

#[test]
fn withdrawn_files_and_mail_are_shown_as_withdrawn_and_no_longer_download() {
    let app = TestApp::spawn();
    let (_, ta) = app.user_token("ann@example.com", Role::User);
    let f1 = app.upload_to_my_folder(&ta, "keep.txt", b"keep");
    let f2 = app.upload_to_my_folder(&ta, "taken back.txt", b"gone");
    let id = send(
        &app,
        &ta,
        json!({"to": [OUT], "subject": "two files", "files": [f1, f2], "acl": "no_auth"}),
    );
    let r = reference(&app, &id, OUT);
    let atts: Vec<String> = app
        .rest("GET", &format!("/rest/mail/{id}/attachments"), &ta, None)
        .json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["attachmentId"].as_str().unwrap().to_string())
        .collect();
    let link = |a: &str| format!("/mail/{id}/attachments/{a}/content?ref={r}");
    assert_eq!(get(&app, &link(&atts[1]), None).status, 200);

    // One file withdrawn: the page names it as withdrawn, without a link, and it no longer
    // downloads; the other still does.
    let w = app.rest(
        "POST",
        &format!("/rest/mail/{id}/actions/withdrawFiles?id:in={}", atts[1]),
        &ta,
        None,
    );
    assert_eq!(w.status, 204, "{}", w.text);
    let p = get(&app, &page(&id, &r), None);
    assert_eq!(p.status, 200, "{}", p.text);
    assert!(
        p.text
            .contains("taken back.txt <span class=\"meta\">(withdrawn by the sender)"),
        "{}",
        p.text
    );
    assert!(
        !p.text.contains(&format!("attachments/{}/", atts[1])),
        "{}",
        p.text
    );
    assert!(
        p.text.contains(&format!("attachments/{}/content", atts[0])),
        "{}",
        p.text
    );
    let d = get(&app, &link(&atts[1]), None);
    assert_eq!(d.status, 403, "{}", d.text);
    assert!(
        d.text.contains("The sender has withdrawn the file."),
        "{}",
        d.text
    );
    let d = get(&app, &link(&atts[0]), None);
    assert_eq!((d.status, d.bytes.as_slice()), (200, b"keep".as_slice()));

    // The whole message withdrawn: the page says so (410) and nothing downloads, not through
    // the page nor through `/rest` by reference.
    let w = app.rest(
        "POST",
        "/rest/mail/actions/withdraw",
        &ta,
        Some(json!({"ids": [id]})),
    );
    assert_eq!(w.status, 200, "{}", w.text);
    let p = get(&app, &page(&id, &r), None);
    assert_eq!(p.status, 410, "{}", p.text);
    assert!(
        p.text.contains("The sender has withdrawn this message."),
        "{}",
        p.text
    );
    assert!(!p.text.contains("keep.txt"), "{}", p.text);
    assert_eq!(get(&app, &link(&atts[0]), None).status, 410);
    let rest = app.send(
        "GET",
        &format!("/rest/mail/{id}/attachments/{}/content?ref={r}", atts[0]),
        &[("X-Coffer-Version", "28")],
        None,
    );
    assert_eq!(rest.status, 403, "{}", rest.text);
    assert_eq!(rest.code(), "ERR_ACCESS_USER");
}
