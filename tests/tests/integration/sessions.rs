//! Interactive sign-in with `POST /rest/users/actions/login` and the browser session it makes:
//! the cookies, CSRF on every state-changing call, the referral, keep-alive, logout, and what
//! password changes and deletions do to sessions.

use coffer_domain::Role;
use coffer_tests::{Body, Resp, TestApp};
use serde_json::json;

/// A signed-in browser: its cookie header and CSRF token.
struct Browser {
    cookie: String,
    csrf: String,
}

fn login(app: &TestApp, email: &str, password: &str, referral: Option<&str>) -> Resp {
    let mut body = json!({"username": email, "password": password});
    if let Some(r) = referral {
        body["referral"] = json!(r);
    }
    app.send(
        "POST",
        "/rest/users/actions/login",
        &[("X-Coffer-Version", "28")],
        Some(Body::Json(body)),
    )
}

fn browser(app: &TestApp, email: &str, password: &str) -> Browser {
    let r = login(app, email, password, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let session = r.cookie_value("coffer_session").unwrap();
    let csrf = r.cookie_value("XSRF-TOKEN").unwrap();
    Browser {
        cookie: format!("coffer_session={session}; XSRF-TOKEN={csrf}"),
        csrf,
    }
}

impl Browser {
    fn call(
        &self,
        app: &TestApp,
        method: &str,
        path: &str,
        csrf: Option<&str>,
        body: Option<serde_json::Value>,
    ) -> Resp {
        let mut h = vec![("X-Coffer-Version", "28"), ("Cookie", self.cookie.as_str())];
        if let Some(c) = csrf {
            h.push(("X-XSRF-TOKEN", c));
        }
        app.send(method, path, &h, body.map(Body::Json))
    }
}

#[test]
fn login_sets_the_session_and_csrf_cookies() {
    let app = TestApp::spawn();
    let (_, pw) = app.user("ann@example.com", Role::User);
    let r = login(&app, "ann@example.com", &pw, Some("/#/folders"));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["success"], true);
    assert_eq!(r.json()["redirectUrl"], format!("{}/#/folders", app.base));
    let cookies = r.cookies();
    let session = cookies
        .iter()
        .find(|c| c.starts_with("coffer_session="))
        .unwrap();
    assert!(
        session.contains("HttpOnly")
            && session.contains("SameSite=Lax")
            && session.contains("Path=/"),
        "{session}"
    );
    let csrf = cookies
        .iter()
        .find(|c| c.starts_with("XSRF-TOKEN="))
        .unwrap();
    assert!(
        !csrf.contains("HttpOnly"),
        "the page must be able to read it: {csrf}"
    );
    assert_eq!(app.count("1=1", "web_sessions"), 1);
    assert_eq!(app.count("subject = 'user.login'", "events"), 1);

    // A referral elsewhere is not followed.
    let r = login(
        &app,
        "ann@example.com",
        &pw,
        Some("https://evil.example/steal"),
    );
    assert_eq!(r.json()["redirectUrl"], format!("{}/", app.base));
}

#[test]
fn login_errors() {
    let app = TestApp::spawn();
    let (_, pw) = app.user("ann@example.com", Role::User);
    let r = app.send(
        "POST",
        "/rest/users/actions/login",
        &[("X-Coffer-Version", "28")],
        Some(Body::Json(json!({"password": pw}))),
    );
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INPUT_REQUIRED".to_string())
    );
    assert_eq!(r.json()["errors"][0]["field"], "username");
    let r = login(&app, "ann@example.com", "wrong", None);
    assert_eq!(
        (r.status, r.code()),
        (401, "ERR_AUTH_UNAUTHORIZED".to_string())
    );
    assert!(r.cookie_value("coffer_session").is_none());
    assert_eq!(app.count("1=1", "web_sessions"), 0);
}

#[test]
fn state_changing_session_calls_need_the_csrf_token() {
    let app = TestApp::spawn();
    let (_, pw) = app.user("ann@example.com", Role::User);
    let b = browser(&app, "ann@example.com", &pw);

    // Reading needs no CSRF token.
    let r = b.call(&app, "GET", "/rest/users/me", None, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["email"], "ann@example.com");

    for csrf in [None, Some("forged-token")] {
        let r = b.call(
            &app,
            "PUT",
            "/rest/users/me",
            csrf,
            Some(json!({"name": "Mallory"})),
        );
        assert_eq!(
            (r.status, r.code()),
            (401, "ERR_AUTH_INVALID_CSRF".to_string()),
            "{csrf:?}"
        );
    }
    assert_eq!(app.count("name = 'Mallory'", "users"), 0);
    let r = b.call(
        &app,
        "PUT",
        "/rest/users/me",
        Some(&b.csrf),
        Some(json!({"name": "Ann"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["name"], "Ann");

    let r = b.call(&app, "PUT", "/rest/users/aliveToken", Some(&b.csrf), None);
    assert_eq!(r.status, 200, "{}", r.text);

    // Another session's token does not pass for this one.
    let other = browser(&app, "ann@example.com", &pw);
    let r = b.call(
        &app,
        "PUT",
        "/rest/users/me",
        Some(&other.csrf),
        Some(json!({"name": "X"})),
    );
    assert_eq!(r.code(), "ERR_AUTH_INVALID_CSRF");
}

#[test]
fn logout_ends_the_session() {
    let app = TestApp::spawn();
    let (_, pw) = app.user("ann@example.com", Role::User);
    let b = browser(&app, "ann@example.com", &pw);
    let r = b.call(
        &app,
        "DELETE",
        "/rest/devices/me/actions/logout",
        Some(&b.csrf),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        b.call(&app, "GET", "/rest/users/me", None, None).status,
        401
    );
    assert_eq!(app.count("1=1", "web_sessions"), 0);
}

#[test]
fn a_password_change_or_a_deletion_ends_sessions() {
    let app = TestApp::spawn();
    let (id, pw) = app.user("ann@example.com", Role::User);
    let a = browser(&app, "ann@example.com", &pw);
    let b = browser(&app, "ann@example.com", &pw);
    let r = a.call(
        &app,
        "PUT",
        "/rest/users/me",
        Some(&a.csrf),
        Some(json!({"password": "New-Passw0rd", "previousPassword": pw})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        a.call(&app, "GET", "/rest/users/me", None, None).status,
        200,
        "the changing session goes on"
    );
    assert_eq!(
        b.call(&app, "GET", "/rest/users/me", None, None).status,
        401,
        "the other session ends"
    );

    let admin = app.admin_token();
    assert_eq!(
        app.rest("DELETE", &format!("/rest/admin/users/{id}"), &admin, None)
            .status,
        204
    );
    assert_eq!(
        a.call(&app, "GET", "/rest/users/me", None, None).status,
        401
    );
    assert_eq!(app.count(&format!("user_id = '{id}'"), "web_sessions"), 0);
}

#[test]
fn a_forced_password_change_redirects_and_holds_the_session() {
    let app = TestApp::spawn();
    let (id, pw) = app.user("ann@example.com", Role::User);
    app.ctx
        .with_conn(|c| {
            Ok(coffer_store::batch_execute(
                c,
                &format!("UPDATE users SET force_password_change = TRUE WHERE id = '{id}'"),
            )?)
        })
        .unwrap();
    let r = login(&app, "ann@example.com", &pw, Some("/#/home"));
    assert_eq!(r.status, 200);
    let next = r.json()["redirectUrl"].as_str().unwrap().to_string();
    assert!(
        next.starts_with(&format!("{}/#/forcedPasswordChange?referral=", app.base)),
        "{next}"
    );
    let session = r.cookie_value("coffer_session").unwrap();
    let r = app.send(
        "GET",
        "/rest/users/me",
        &[
            ("X-Coffer-Version", "28"),
            ("Cookie", &format!("coffer_session={session}")),
        ],
        None,
    );
    assert_eq!((r.status, r.code()), (403, "ERR_ACCESS_DENIED".to_string()));
    assert!(r.json()["errors"][0]["redirectUrl"]
        .as_str()
        .unwrap()
        .contains("forcedPasswordChange"));
}
