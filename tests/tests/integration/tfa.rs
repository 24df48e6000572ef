//! Two-factor sign-in with TOTP over HTTP: enrolment (a secret with the QR code of its otpauth
//! URI, confirmed by a code), the second step of the JSON sign-in (challenge, wrong and right
//! codes, no replay), remembering a browser, and reset (which needs the current password).

use base64::Engine;
use coffer_domain::Role;
use coffer_oauth::totp::{code_at, TotpSecret};
use coffer_tests::{hidden_field as hidden, unix_now as now, Body, TestApp};
use serde_json::json;

/// Checks the reference's `TotpSetupResponse` for `email`: exactly `{username, issuer, secret,
/// image}`, the image a PNG data URI. Returns the secret.
fn setup_shape(v: &serde_json::Value, email: &str) -> TotpSecret {
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["image", "issuer", "secret", "username"], "{v}");
    assert_eq!(v["username"], email);
    assert_eq!(v["issuer"], "Coffer");
    let image = v["image"].as_str().unwrap();
    let png = base64::engine::general_purpose::STANDARD
        .decode(image.strip_prefix("data:image/png;base64,").expect(image))
        .unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 200);
    TotpSecret::from_base32(v["secret"].as_str().unwrap()).unwrap()
}

/// Enrols the user behind `token`; returns the secret and the time whose code confirmed it.
fn enrol(app: &TestApp, token: &str) -> (TotpSecret, i64) {
    let cfg = app
        .rest("GET", "/rest/users/me/tfa/config", token, None)
        .json();
    assert_eq!(cfg["enabled"], false);
    let me = app.rest("GET", "/rest/users/me", token, None).json();
    let setup = app.rest("GET", "/rest/users/me/tfa/setupTotpSecret", token, None);
    assert_eq!(setup.status, 200, "{}", setup.text);
    let secret = setup_shape(&setup.json(), me["email"].as_str().unwrap());
    let wrong = app.rest(
        "POST",
        "/rest/users/me/tfa/verifyTotpSecret",
        token,
        Some(json!({"otp": "000000"})),
    );
    let t0 = now();
    let right_now = code_at(&secret, t0);
    if right_now != "000000" {
        assert_eq!(
            (wrong.status, wrong.code()),
            (422, "ERR_INVALID_PARAMETER".to_string())
        );
    }
    let r = app.rest(
        "POST",
        "/rest/users/me/tfa/verifyTotpSecret",
        token,
        Some(json!({"otp": right_now, "referral": "/#/settings"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json(),
        json!({"redirectUrl": format!("{}/#/settings", app.base)}),
        "the reference's AuthRedirectResponse"
    );
    assert_eq!(
        app.rest("GET", "/rest/users/me/tfa/config", token, None)
            .json()["enabled"],
        true
    );
    (secret, t0)
}

#[test]
fn two_factor_sign_in_with_totp() {
    let app = TestApp::spawn();
    let (id, pw) = app.user("ann@example.com", Role::User);
    let (_, token) = {
        let t = app.form(
            "/oauth/token",
            &[
                ("grant_type", "password"),
                ("username", "ann@example.com"),
                ("password", &pw),
                ("client_id", &app.admin.client_id),
                ("client_secret", &app.admin.client_secret),
            ],
        );
        (
            id.clone(),
            t.json()["access_token"].as_str().unwrap().to_string(),
        )
    };
    let (secret, t0) = enrol(&app, &token);
    assert_eq!(
        app.count(
            &format!("id = '{id}' AND totp_enabled = TRUE AND totp_secret IS NOT NULL"),
            "users"
        ),
        1
    );

    // The JSON sign-in now stops at the second step.
    let r = app.json_login("ann@example.com", &pw, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.json()["redirectUrl"]
            .as_str()
            .unwrap()
            .contains("/#/tfa?referral="),
        "{}",
        r.text
    );
    let session = r.cookie_value("coffer_session").unwrap();
    let csrf = r.cookie_value("XSRF-TOKEN").unwrap();
    let cookie = format!("coffer_session={session}; XSRF-TOKEN={csrf}");
    let call = |method: &str, path: &str, body: Option<serde_json::Value>| {
        app.send(
            method,
            path,
            &[
                ("X-Coffer-Version", "28"),
                ("Cookie", &cookie),
                ("X-XSRF-TOKEN", &csrf),
            ],
            body.map(Body::Json),
        )
    };
    let r = call("GET", "/rest/users/me", None);
    assert_eq!((r.status, r.code()), (403, "ERR_ACCESS_DENIED".to_string()));
    assert!(r.json()["errors"][0]["redirectUrl"]
        .as_str()
        .unwrap()
        .ends_with("/#/tfa"));

    let r = call(
        "POST",
        "/rest/users/me/tfa/challenge",
        Some(json!({"referral": "/#/home"})),
    );
    assert!(r.json()["challengeMsg"].is_string(), "{}", r.text);
    assert!(r.json().get("redirectUrl").is_none());
    let r = call(
        "POST",
        "/rest/users/me/tfa/auth",
        Some(json!({"otp": "12345"})),
    );
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INPUT_INVALID_FORMAT".to_string())
    );

    // The enrolment used the current step: a code is accepted once, so use the next step's.
    let used = code_at(&secret, t0);
    let r = call(
        "POST",
        "/rest/users/me/tfa/auth",
        Some(json!({"otp": used})),
    );
    let v = r.json();
    assert!(
        v.get("challengeMsg").is_some() && v.get("redirectUrl").is_none(),
        "a used code asks again: {v}"
    );
    let next = code_at(&secret, t0 + 30);
    let r = call(
        "POST",
        "/rest/users/me/tfa/auth",
        Some(json!({"otp": next, "referral": "/#/home", "rememberDevice": true})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["redirectUrl"], format!("{}/#/home", app.base));
    assert!(r.json().get("challengeMsg").is_none());
    let remember = r
        .cookie_value("coffer_tfa_remember")
        .expect("remember cookie");
    assert_eq!(
        call("GET", "/rest/users/me", None).status,
        200,
        "the session is signed in"
    );

    // A remembered browser skips the second step.
    let r = app.json_login(
        "ann@example.com",
        &pw,
        Some(&format!("coffer_tfa_remember={remember}")),
    );
    assert_eq!(r.json()["redirectUrl"], format!("{}/#/home", app.base));
    // Another browser does not.
    let r = app.json_login("ann@example.com", &pw, Some("coffer_tfa_remember=forged"));
    assert!(r.json()["redirectUrl"].as_str().unwrap().contains("/#/tfa"));

    // Reset (with the current password) turns it off.
    assert_eq!(
        app.rest(
            "POST",
            "/rest/users/me/tfa/resetTotpSecret",
            &token,
            Some(json!({"password": pw}))
        )
        .status,
        200
    );
    let r = app.json_login("ann@example.com", &pw, None);
    assert_eq!(r.json()["redirectUrl"], format!("{}/#/home", app.base));
    assert_eq!(app.count("subject = 'user.tfa.enable'", "events"), 1);
}

/// The value of a hidden input in a page.
#[test]
fn the_authorization_page_takes_the_same_second_step() {
    let app = TestApp::spawn();
    let (_, pw) = app.user("ann@example.com", Role::User);
    let token = app.password_token("ann@example.com", &pw)["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let (secret, t0) = enrol(&app, &token);

    let client = app.admin.client_id.clone();
    let redirect = app.admin.redirect_uri.clone();
    let (cookie, csrf) =
        app.authorize_page(&format!("client_id={client}&response_type=code&state=s1"));

    let r = app.page_post(
        "/oauth/authorize",
        &cookie,
        &[
            ("client_id", &client),
            ("response_type", "code"),
            ("state", "s1"),
            ("email", "ann@example.com"),
            ("password", &pw),
            ("csrf", &csrf),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.text.contains("Two-step verification")
            && r.text.contains("<label for=\"code\">Code</label>")
            && r.text.contains(">Verify</button>")
    );
    assert!(
        r.header("location").is_none(),
        "no code before the second step"
    );
    let ticket = hidden(&r.text, "ticket");

    // The two-factor ticket does not pass for consent.
    let r2 = app.page_post(
        "/oauth/consent",
        &cookie,
        &[("ticket", &ticket), ("csrf", &csrf), ("decision", "allow")],
    );
    assert_eq!(r2.status, 400);
    assert!(r2.header("location").is_none());

    // The ticket was used up by that attempt; sign in again for a fresh one.
    let r = app.page_post(
        "/oauth/authorize",
        &cookie,
        &[
            ("client_id", &client),
            ("response_type", "code"),
            ("state", "s1"),
            ("email", "ann@example.com"),
            ("password", &pw),
            ("csrf", &csrf),
        ],
    );
    let ticket = hidden(&r.text, "ticket");
    let wrong = if code_at(&secret, t0 + 30) == "000000" {
        "111111"
    } else {
        "000000"
    };
    let r = app.page_post(
        "/oauth/tfa",
        &cookie,
        &[("ticket", &ticket), ("csrf", &csrf), ("code", wrong)],
    );
    assert_eq!(r.status, 401);
    assert!(r.text.contains("The code is not valid"));
    let ticket = hidden(&r.text, "ticket");
    let code = code_at(&secret, t0 + 30);
    let r = app.page_post(
        "/oauth/tfa",
        &cookie,
        &[("ticket", &ticket), ("csrf", &csrf), ("code", &code)],
    );
    assert_eq!(r.status, 302, "{}", r.text);
    let location = r.header("location").unwrap();
    assert!(
        location.starts_with(&redirect)
            && location.contains("code=")
            && location.contains("state=s1"),
        "{location}"
    );
}

#[test]
fn the_authorization_page_takes_a_due_password_change() {
    let app = TestApp::spawn();
    let (id, pw) = app.user("ann@example.com", Role::User);
    app.execute(&format!(
        "UPDATE users SET force_password_change = TRUE WHERE id = '{id}'"
    ));
    let client = app.admin.client_id.clone();
    let (cookie, csrf) =
        app.authorize_page(&format!("client_id={client}&response_type=code&state=s2"));

    let r = app.page_post(
        "/oauth/authorize",
        &cookie,
        &[
            ("client_id", &client),
            ("response_type", "code"),
            ("state", "s2"),
            ("email", "ann@example.com"),
            ("password", &pw),
            ("csrf", &csrf),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.text.contains("Change your password")
            && r.text
                .contains("<label for=\"password\">New password</label>")
    );
    assert!(r.header("location").is_none());
    let ticket = hidden(&r.text, "ticket");

    let r = app.page_post(
        "/oauth/password",
        &cookie,
        &[
            ("ticket", &ticket),
            ("csrf", &csrf),
            ("previousPassword", &pw),
            ("password", "weak"),
        ],
    );
    assert_eq!(r.status, 422);
    assert!(r.text.contains("password policy"), "{}", r.text);
    let ticket = hidden(&r.text, "ticket");
    let r = app.page_post(
        "/oauth/password",
        &cookie,
        &[
            ("ticket", &ticket),
            ("csrf", &csrf),
            ("previousPassword", &pw),
            ("password", "New-Passw0rd"),
        ],
    );
    assert_eq!(r.status, 302, "{}", r.text);
    assert!(r.header("location").unwrap().contains("code="));
    assert_eq!(
        app.count(
            &format!("id = '{id}' AND force_password_change = FALSE"),
            "users"
        ),
        1
    );
    assert_eq!(
        app.password_token("ann@example.com", "New-Passw0rd")["token_type"],
        "bearer"
    );
}

/// Signing in again with the right password does not reset the count of wrong codes: after
/// enough of them, the second step is refused with 429 however often the password is entered.
#[test]
fn wrong_codes_stay_counted_across_password_sign_ins() {
    let app = TestApp::builder()
        .config(|c| {
            c.throttle = coffer_service::platform::throttle::Limits {
                max_failures: 3,
                slow_after: 3,
                window_secs: 600,
                lock_secs: 600,
            };
            // Each attempt comes from another address (through a trusted proxy), as an attacker
            // spreading guesses would, so only the account's counters can stop them.
            c.trusted_proxies =
                coffer_domain::net::TrustedProxies::parse("127.0.0.0/8, ::1").unwrap();
        })
        .spawn();
    let (_, pw) = app.user("ann@example.com", Role::User);
    let token = app.password_token("ann@example.com", &pw)["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let (secret, _) = enrol(&app, &token);
    let wrong = if code_at(&secret, now()) == "000000" {
        "111111"
    } else {
        "000000"
    };
    let mut statuses = Vec::new();
    for i in 0..4 {
        let from = format!("10.0.0.{i}");
        // A fresh password sign-in each time, then one wrong code.
        let r = app.send(
            "POST",
            "/rest/users/actions/login",
            &[("X-Coffer-Version", "28"), ("X-Forwarded-For", &from)],
            Some(Body::Json(
                json!({"username": "ann@example.com", "password": pw, "referral": "/#/home"}),
            )),
        );
        assert_eq!(r.status, 200, "{}", r.text);
        let session = r.cookie_value("coffer_session").unwrap();
        let csrf = r.cookie_value("XSRF-TOKEN").unwrap();
        let cookie = format!("coffer_session={session}; XSRF-TOKEN={csrf}");
        let r = app.send(
            "POST",
            "/rest/users/me/tfa/auth",
            &[
                ("X-Coffer-Version", "28"),
                ("X-Forwarded-For", &from),
                ("Cookie", &cookie),
                ("X-XSRF-TOKEN", &csrf),
            ],
            Some(Body::Json(json!({"otp": wrong, "referral": "/#/home"}))),
        );
        statuses.push(r.status);
    }
    assert_eq!(
        statuses,
        [200, 200, 200, 429],
        "wrong codes answer a challenge, then 429"
    );
    assert_eq!(
        app.count(
            "key LIKE 'second-factor:%' AND locked_until IS NOT NULL",
            "auth_failures"
        ),
        1
    );
}

/// A token alone cannot switch the second factor off: a reset needs the current password, and
/// a wrong one changes nothing. The reset answers the setup of a new secret, whose first code
/// (with the password again) turns TOTP sign-in back on.
#[test]
fn resetting_totp_needs_the_current_password() {
    let app = TestApp::spawn();
    let (id, pw) = app.user("ann@example.com", Role::User);
    let token = app.password_token("ann@example.com", &pw)["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let (old, _) = enrol(&app, &token);
    let reset = |body: Option<serde_json::Value>| {
        app.rest("POST", "/rest/users/me/tfa/resetTotpSecret", &token, body)
    };
    let still_on = format!(
        "id = '{id}' AND totp_enabled = TRUE AND totp_secret = '{}'",
        old.to_base32()
    );

    let r = reset(None);
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INPUT_REQUIRED".to_string())
    );
    assert_eq!(r.json()["errors"][0]["field"], "password");
    let r = reset(Some(json!({"password": "Wrong-Passw0rd"})));
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INVALID_PARAMETER".to_string())
    );
    assert_eq!(r.json()["errors"][0]["field"], "password");
    let r = reset(Some(json!({"password": 42})));
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(app.count(&still_on, "users"), 1, "nothing changed");
    assert_eq!(app.count("subject = 'user.tfa.reset'", "events"), 0);
    assert_eq!(
        app.count("key = 'account:ann@example.com'", "auth_failures"),
        1,
        "the wrong password counted as a failed sign-in"
    );

    let r = reset(Some(json!({"password": pw})));
    assert_eq!(r.status, 200, "{}", r.text);
    let new = setup_shape(&r.json(), "ann@example.com");
    assert_ne!(new.to_base32(), old.to_base32());
    assert_eq!(
        app.count(
            &format!(
                "id = '{id}' AND totp_enabled = FALSE AND totp_secret = '{}'",
                new.to_base32()
            ),
            "users"
        ),
        1,
        "off, with the new secret pending"
    );
    assert_eq!(app.count("subject = 'user.tfa.reset'", "events"), 1);

    // A code of the old secret does not confirm the new one; a code of the new one does.
    let wrong = code_at(&old, now());
    let right = code_at(&new, now());
    if wrong != right {
        let r = reset(Some(json!({"password": pw, "otp": wrong})));
        assert_eq!(
            (r.status, r.code()),
            (422, "ERR_INVALID_PARAMETER".to_string())
        );
    }
    let r = reset(Some(json!({"password": pw, "otp": right})));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json(), json!({"code": 1}));
    assert_eq!(
        app.count(&format!("id = '{id}' AND totp_enabled = TRUE"), "users"),
        1
    );
}
