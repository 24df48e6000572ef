//! Password reset by mail, end to end over HTTP: `POST /rest/users/requestPasswordReset` mails
//! a single-use link, `POST /rest/users/resetPassword` (or the page the link opens) sets the new
//! password with it and ends every session and token of the user. The mail itself is read from
//! the real SMTP server of `scripts/smtp-test-server.sh` (`COFFER_TEST_SMTP_URL`; that test is
//! skipped with a note when it is unset); the other tests read the link from the mail outbox.
//! Runs on SQLite or PostgreSQL (`COFFER_TEST_POSTGRES_URL`).

use coffer_delivery::mail::{self, Config, Password, Relay};
use coffer_domain::Role;
use coffer_tests::{
    decoded_body, hidden_field, outbox, received, sign_in, smtp, wait_until, Body, Resp, Smtp,
    TestApp,
};
use serde_json::{json, Value};
use std::time::Duration;

const NEW_PASSWORD: &str = "Brand-New-Passw0rd";

fn request_reset(app: &TestApp, body: Value) -> Resp {
    app.send(
        "POST",
        "/rest/users/requestPasswordReset",
        &[("X-Coffer-Version", "28")],
        Some(Body::Json(body)),
    )
}

fn reset(app: &TestApp, link: &str, password: &str) -> Resp {
    app.send(
        "POST",
        "/rest/users/resetPassword",
        &[("X-Coffer-Version", "28")],
        Some(Body::Json(json!({"link": link, "password": password}))),
    )
}

/// The reset link in a mail body.
fn link_in(body: &str) -> Option<String> {
    body.split_whitespace()
        .find(|w| w.contains("/passwordReset?token="))
        .map(str::to_string)
}

/// The link of the live reset mail to `to`: of the messages in the outbox, the one whose token
/// is stored (rows written in the same second have no order between them).
fn outbox_link(app: &TestApp, to: &str) -> Option<String> {
    let mails = outbox(app, to);
    mails.iter().filter_map(|m| link_in(&m.body)).find(|link| {
        let token = link.split("token=").nth(1).unwrap_or_default();
        let hash = coffer_oauth::secrets::hash_token(token);
        app.count(&format!("token_hash = '{hash}'"), "password_resets") == 1
    })
}

fn outbox_count(app: &TestApp, to: &str) -> i64 {
    app.count(&format!("to_address = '{to}'"), "mail_outbox")
}

fn assert_refused(r: &Resp) {
    assert_eq!(
        (r.status, r.code()),
        (403, "ERR_ACCESS_USER".to_string()),
        "{}",
        r.text
    );
}

#[test]
fn requests_answer_alike_for_every_well_formed_address_and_422_otherwise() {
    let app = TestApp::spawn();
    app.user("ann@example.com", Role::User);
    let (bob, _) = app.user("bob@example.com", Role::User);
    app.execute(&format!(
        "UPDATE users SET active = false WHERE id = '{bob}'"
    ));

    for email in ["ann@example.com", "nobody@example.com", "bob@example.com"] {
        let r = request_reset(&app, json!({ "email": email }));
        assert_eq!(r.status, 204, "{email}: {}", r.text);
        assert!(r.text.is_empty());
    }
    // Only the usable account was written to; the others got nothing.
    assert_eq!(outbox_count(&app, "ann@example.com"), 1);
    assert_eq!(outbox_count(&app, "nobody@example.com"), 0);
    assert_eq!(outbox_count(&app, "bob@example.com"), 0);
    assert_eq!(app.count("1 = 1", "password_resets"), 1);
    // The token is stored only as its hash.
    let link = outbox_link(&app, "ann@example.com").unwrap();
    let token = link.split("token=").nth(1).unwrap();
    assert_eq!(
        app.count(&format!("token_hash = '{token}'"), "password_resets"),
        0
    );

    for (body, code) in [
        (json!({}), "ERR_INPUT_REQUIRED"),
        (json!({"email": ""}), "ERR_INPUT_REQUIRED"),
        (
            json!({"email": "not an address"}),
            "ERR_INPUT_INVALID_EMAIL",
        ),
        (json!({"email": "ann@"}), "ERR_INPUT_INVALID_EMAIL"),
    ] {
        let r = request_reset(&app, body.clone());
        assert_eq!((r.status, r.code()), (422, code.to_string()), "{body}");
    }
    for body in [json!({"password": NEW_PASSWORD}), json!({"link": link})] {
        let r = app.send(
            "POST",
            "/rest/users/resetPassword",
            &[("X-Coffer-Version", "28")],
            Some(Body::Json(body)),
        );
        assert_eq!(
            (r.status, r.code()),
            (422, "ERR_INPUT_REQUIRED".to_string())
        );
    }
}

#[test]
fn a_link_resets_once_ends_every_session_and_a_weak_password_leaves_it_usable() {
    let app = TestApp::spawn();
    let (id, old) = app.user("ann@example.com", Role::User);
    let first = sign_in(&app, "ann@example.com", &old).json();
    let access = first["access_token"].as_str().unwrap().to_string();
    let refresh = first["refresh_token"].as_str().unwrap().to_string();
    let session = app.json_login("ann@example.com", &old, None);
    assert_eq!(session.status, 200, "{}", session.text);
    let cookie = format!(
        "{}={}",
        coffer_http::plumbing::extract::SESSION_COOKIE,
        session
            .cookie_value(coffer_http::plumbing::extract::SESSION_COOKIE)
            .unwrap()
    );
    let session_me = || {
        app.send(
            "GET",
            "/rest/users/me",
            &[("X-Coffer-Version", "28"), ("Cookie", &cookie)],
            None,
        )
    };
    assert_eq!(session_me().status, 200);

    assert_eq!(
        request_reset(&app, json!({"email": "Ann@Example.com"})).status,
        204
    );
    let link = outbox_link(&app, "ann@example.com").expect("the reset mail");
    assert!(
        link.starts_with(&format!("{}/passwordReset?token=", app.base)),
        "{link}"
    );

    let r = reset(&app, &link, "weak");
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INPUT_PASSWORD_COMPLEXITY_ERROR".to_string())
    );
    // Nothing changed: the old password and the sessions still work.
    assert_eq!(sign_in(&app, "ann@example.com", &old).status, 200);
    assert_eq!(app.rest("GET", "/rest/users/me", &access, None).status, 200);

    let r = reset(&app, &link, NEW_PASSWORD);
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(sign_in(&app, "ann@example.com", &old).status, 400);
    assert_eq!(sign_in(&app, "ann@example.com", NEW_PASSWORD).status, 200);
    assert_eq!(app.rest("GET", "/rest/users/me", &access, None).status, 401);
    let r = app.form(
        "/oauth/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &app.admin.client_id),
            ("client_secret", &app.admin.client_secret),
        ],
    );
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(session_me().status, 401);
    assert_eq!(
        app.count(
            &format!("subject = 'user.password.reset' AND actor_id = '{id}'"),
            "events"
        ),
        1
    );

    // Used up: the same link, or the bare token, is refused like a made-up one.
    assert_refused(&reset(&app, &link, "Another-Passw0rd"));
    let token = link.split("token=").nth(1).unwrap();
    assert_refused(&reset(&app, token, "Another-Passw0rd"));
    assert_refused(&reset(&app, "made-up-token", "Another-Passw0rd"));
    assert_refused(&reset(
        &app,
        &format!("{}/passwordReset?token=", app.base),
        "Another-Passw0rd",
    ));
    assert_eq!(sign_in(&app, "ann@example.com", NEW_PASSWORD).status, 200);
}

#[test]
fn an_expired_or_superseded_link_is_refused() {
    let app = TestApp::spawn();
    app.user("ann@example.com", Role::User);
    request_reset(&app, json!({"email": "ann@example.com"}));
    let first = outbox_link(&app, "ann@example.com").unwrap();
    request_reset(&app, json!({"email": "ann@example.com"}));
    let second = outbox_link(&app, "ann@example.com").unwrap();
    assert_ne!(first, second);
    assert_refused(&reset(&app, &first, NEW_PASSWORD));

    app.execute("UPDATE password_resets SET expires_at = 1000");
    assert_refused(&reset(&app, &second, NEW_PASSWORD));

    // A link whose account was deactivated meanwhile is refused too.
    let (bob, _) = app.user("bob@example.com", Role::User);
    request_reset(&app, json!({"email": "bob@example.com"}));
    let link = outbox_link(&app, "bob@example.com").unwrap();
    app.execute(&format!(
        "UPDATE users SET active = false WHERE id = '{bob}'"
    ));
    assert_refused(&reset(&app, &link, NEW_PASSWORD));
}

#[test]
fn two_concurrent_resets_with_one_link_do_not_both_succeed() {
    let app = TestApp::spawn();
    app.user("ann@example.com", Role::User);
    for round in 0..3 {
        request_reset(&app, json!({"email": "ann@example.com"}));
        let link = outbox_link(&app, "ann@example.com").unwrap();
        let statuses: Vec<u16> = std::thread::scope(|s| {
            let a = s.spawn(|| reset(&app, &link, "First-Passw0rd-1").status);
            let b = s.spawn(|| reset(&app, &link, "Second-Passw0rd-2").status);
            vec![a.join().unwrap(), b.join().unwrap()]
        });
        let mut sorted = statuses.clone();
        sorted.sort();
        assert_eq!(sorted, vec![204, 403], "round {round}: {statuses:?}");
    }
}

#[test]
fn requests_are_limited_per_address() {
    let app = TestApp::builder()
        .config(|c| c.reset_limits.per_address = 2)
        .spawn();
    for _ in 0..2 {
        assert_eq!(
            request_reset(&app, json!({"email": "nobody@example.com"})).status,
            204
        );
    }
    let wait = request_reset(&app, json!({"email": "NOBODY@example.com"})).rate_limited();
    assert!((1..=3600).contains(&wait), "{wait}");
    assert_eq!(
        request_reset(&app, json!({"email": "other@example.com"})).status,
        204
    );
}

#[test]
fn the_link_opens_a_page_that_resets_with_csrf_protection() {
    let app = TestApp::spawn();
    app.user("ann@example.com", Role::User);
    request_reset(&app, json!({"email": "ann@example.com"}));
    let link = outbox_link(&app, "ann@example.com").unwrap();
    let path = link.strip_prefix(&app.base).unwrap();

    let page = app.send("GET", path, &[], None);
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    assert_eq!(page.header("cache-control"), Some("no-store"));
    let token = hidden_field(&page.text, "token");
    assert_eq!(Some(token.as_str()), link.split("token=").nth(1));
    let csrf = hidden_field(&page.text, "csrf");
    let cookie = format!(
        "coffer_reset_csrf={}",
        page.cookie_value("coffer_reset_csrf").unwrap()
    );
    assert_eq!(cookie, format!("coffer_reset_csrf={csrf}"));

    // Without the cookie (a cross-site post), nothing happens.
    let r = app.form(
        "/passwordReset",
        &[
            ("token", &token),
            ("csrf", &csrf),
            ("password", NEW_PASSWORD),
        ],
    );
    assert_eq!(r.status, 400);
    let post = |password: &str| {
        app.page_post(
            "/passwordReset",
            &cookie,
            &[("token", &token), ("csrf", &csrf), ("password", password)],
        )
    };
    let r = post("weak");
    assert_eq!(r.status, 422);
    assert!(r.text.contains("password policy"), "{}", r.text);
    let r = post(NEW_PASSWORD);
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.contains("id=\"done\""));
    assert_eq!(sign_in(&app, "ann@example.com", NEW_PASSWORD).status, 200);
    assert_eq!(post("Another-Passw0rd").status, 403);
}

// ---- The mail as received by a real SMTP server ----

#[test]
fn the_reset_mail_arrives_over_smtp_and_its_link_resets_the_password() {
    let Some(Smtp {
        url,
        user,
        password,
        dir,
    }) = smtp()
    else {
        return;
    };
    let app = TestApp::spawn();
    let mut relay = Relay::parse(&url, Some("never")).expect("relay URL");
    relay.user = Some(user);
    relay.password = Some(Password(password));
    let mut c = Config::new(
        relay,
        mail::parse_from("Coffer <no-reply@coffer.test>").unwrap(),
        "node-a",
    );
    c.timeout = Duration::from_secs(5);
    c.poll = Duration::from_millis(20);
    let _sender = mail::spawn(app.ctx.db.clone(), c, "coffer.test").expect("mail sender");

    let to = format!("ann-{}@example.com", uuid::Uuid::new_v4().simple());
    let nobody = format!("nobody-{}@example.com", uuid::Uuid::new_v4().simple());
    let (_, old) = app.user(&to, Role::User);
    let access = sign_in(&app, &to, &old).json()["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    // An unknown address first, then the account's: when the second has arrived, the first
    // would have too.
    assert_eq!(request_reset(&app, json!({ "email": nobody })).status, 204);
    assert_eq!(request_reset(&app, json!({ "email": to })).status, 204);
    wait_until("the reset mail", 20, || received(&dir, &to).len() == 1);
    assert!(received(&dir, &nobody).is_empty());

    let data = received(&dir, &to)[0]["data"].as_str().unwrap().to_string();
    assert!(
        data.contains("Subject: Reset your Coffer password"),
        "{data}"
    );
    let body = decoded_body(&data);
    let link = link_in(&body).unwrap_or_else(|| panic!("no link in {body}"));
    assert!(
        link.starts_with(&format!("{}/passwordReset?token=", app.base)),
        "{link}"
    );
    assert!(body.contains("within 60 minutes"), "{body}");

    assert_eq!(reset(&app, &link, NEW_PASSWORD).status, 204);
    assert_eq!(sign_in(&app, &to, &old).status, 400);
    assert_eq!(sign_in(&app, &to, NEW_PASSWORD).status, 200);
    assert_eq!(app.rest("GET", "/rest/users/me", &access, None).status, 401);
    assert_refused(&reset(&app, &link, "Another-Passw0rd"));
}
