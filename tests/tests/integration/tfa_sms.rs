//! Two-factor sign-in with SMS one-time codes over HTTP: enrolment (a code sent to the saved
//! number verifies it), the second step of the JSON sign-in (a challenge sends one code; right,
//! wrong, reused, expired and exhausted codes; the sending rate limit; the brute-force throttle),
//! remembering a browser for the configured time, and the authorization page's two-factor step.
//! Messages are read from the recording sender's table.

use coffer_domain::Role;
use coffer_tests::{hidden_field as hidden, unix_now as now, Body, Resp, TestApp};
use serde_json::{json, Value};

const NUMBER: &str = "+41791234567";

/// Every text message recorded for `NUMBER`.
fn messages(app: &TestApp) -> Vec<String> {
    #[derive(diesel::QueryableByName)]
    struct M {
        #[diesel(sql_type = diesel::sql_types::Text)]
        body: String,
    }
    let sql = format!("SELECT body FROM sms_messages WHERE to_number = '{NUMBER}'");
    app.ctx
        .with_conn(|c| {
            let q = diesel::sql_query(&sql);
            let v: Vec<M> = coffer_store::db_run!(c => diesel::RunQueryDsl::load(q, c))
                .map_err(coffer_service::Error::internal)?;
            Ok(v.into_iter().map(|m| m.body).collect())
        })
        .expect("messages")
}

/// The code of the one message sent since `before` was read.
fn new_code(app: &TestApp, before: &[String]) -> String {
    let fresh: Vec<String> = messages(app)
        .into_iter()
        .filter(|m| !before.contains(m))
        .collect();
    assert_eq!(fresh.len(), 1, "exactly one new message: {fresh:?}");
    let code: String = fresh[0]
        .split(|c: char| !c.is_ascii_digit())
        .find(|w| w.len() == 6)
        .unwrap_or_else(|| panic!("no code in {}", fresh[0]))
        .to_string();
    code
}

/// Lets the next code be sent at once (the sending rate limit is one per 30 seconds).
fn allow_resend(app: &TestApp) {
    app.execute("UPDATE sms_codes SET sent_at = sent_at - 60");
}

/// A code that is not `code`.
fn other_than(code: &str) -> &'static str {
    if code == "000000" {
        "111111"
    } else {
        "000000"
    }
}

/// A new account enrolled in SMS two-factor sign-in: its password and an access token.
fn enrolled(app: &TestApp, email: &str) -> (String, String) {
    let (_, pw) = app.user(email, Role::User);
    let token = app.password_token(email, &pw)["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    enrol(app, &token, &pw);
    (pw, token)
}

/// Saves the number and enrols the user behind `token` in SMS two-factor sign-in.
fn enrol(app: &TestApp, token: &str, pw: &str) {
    let r = app.rest(
        "PUT",
        "/rest/users/me/mobileNumber",
        token,
        Some(json!({"password": pw, "mobileNumber": "+41 79 123 45 67"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let before = messages(app);
    let r = app.rest("POST", "/rest/users/me/tfa/setupSms", token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let code = new_code(app, &before);
    let r = app.rest(
        "POST",
        "/rest/users/me/tfa/verifySms",
        token,
        Some(json!({"otp": code})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
}

/// A browser session after the password step.
struct Session<'a> {
    app: &'a TestApp,
    cookie: String,
    csrf: String,
}

impl Session<'_> {
    fn start<'a>(app: &'a TestApp, email: &str, pw: &str) -> Session<'a> {
        let r = app.json_login(email, pw, None);
        assert_eq!(r.status, 200, "{}", r.text);
        assert!(
            r.json()["redirectUrl"]
                .as_str()
                .unwrap()
                .contains("/#/tfa?referral="),
            "the sign-in stops at the second step: {}",
            r.text
        );
        let session = r.cookie_value("coffer_session").unwrap();
        let csrf = r.cookie_value("XSRF-TOKEN").unwrap();
        Session {
            app,
            cookie: format!("coffer_session={session}; XSRF-TOKEN={csrf}"),
            csrf,
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Resp {
        self.app.send(
            method,
            path,
            &[
                ("X-Coffer-Version", "28"),
                ("Cookie", &self.cookie),
                ("X-XSRF-TOKEN", &self.csrf),
            ],
            body.map(Body::Json),
        )
    }

    fn challenge(&self) -> Resp {
        self.call(
            "POST",
            "/rest/users/me/tfa/challenge",
            Some(json!({"referral": "/#/home"})),
        )
    }

    fn auth(&self, otp: &str) -> Resp {
        self.call(
            "POST",
            "/rest/users/me/tfa/auth",
            Some(json!({"otp": otp, "referral": "/#/home"})),
        )
    }
}

/// Asks again: a `challengeMsg` and no `redirectUrl`.
fn asks_again(r: &Resp) -> String {
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    assert!(v.get("redirectUrl").is_none(), "{v}");
    v["challengeMsg"]
        .as_str()
        .unwrap_or_else(|| panic!("no challengeMsg: {v}"))
        .to_string()
}

/// Accepted: a `redirectUrl` and no `challengeMsg`.
fn accepted(app: &TestApp, r: &Resp) {
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    assert!(v.get("challengeMsg").is_none(), "{v}");
    assert_eq!(v["redirectUrl"], format!("{}/#/home", app.base));
}

/// A server whose throttle neither slows nor locks within a test's few failures.
fn lenient() -> TestApp {
    TestApp::builder()
        .config(|c| {
            c.throttle.max_failures = 100;
            c.throttle.slow_after = 100;
        })
        .spawn()
}

#[test]
fn sms_enrolment_verifies_the_number_and_turns_two_factor_on() {
    let app = lenient();
    let (id, pw) = app.user("ann@example.com", Role::User);
    let token = app.password_token("ann@example.com", &pw)["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.rest("POST", "/rest/users/me/tfa/setupSms", &token, None);
    assert_eq!(
        (r.status, r.code()),
        (404, "ERR_ENTITY_NOT_FOUND".to_string()),
        "no number yet"
    );
    let r = app.rest(
        "PUT",
        "/rest/users/me/mobileNumber",
        &token,
        Some(json!({"password": pw, "mobileNumber": "+41 79 123 45 67"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);

    let before = messages(&app);
    let r = app.rest("POST", "/rest/users/me/tfa/setupSms", &token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    assert_eq!(v["mobileNumber"], "*********67");
    let msg = v["challengeMsg"].as_str().unwrap();
    assert!(
        msg.contains("ending in 67") && !msg.contains("4567"),
        "{msg}"
    );
    let code = new_code(&app, &before);
    assert!(
        !r.text.contains(&code),
        "the code never appears in a response"
    );
    let cfg = app
        .rest("GET", "/rest/users/me/tfa/config", &token, None)
        .json();
    assert_eq!(
        (&cfg["enabled"], &cfg["pendingSetup"]),
        (&json!(false), &json!(true)),
        "{cfg}"
    );
    // Another code within 30 seconds is refused.
    let r = app.rest("POST", "/rest/users/me/tfa/setupSms", &token, None);
    assert_eq!(
        (r.status, r.code()),
        (429, "ERR_REQUEST_RATE_LIMITED".to_string())
    );
    assert!(r.header("retry-after").is_some());

    let r = app.rest(
        "POST",
        "/rest/users/me/tfa/verifySms",
        &token,
        Some(json!({"otp": other_than(&code)})),
    );
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INVALID_PARAMETER".to_string())
    );
    let r = app.rest(
        "POST",
        "/rest/users/me/tfa/verifySms",
        &token,
        Some(json!({"otp": code})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json(), json!({"enabled": true, "type": "sms"}));
    assert_eq!(
        app.count(&format!("id = '{id}' AND mobile_verified = TRUE"), "users"),
        1
    );
    let cfg = app
        .rest("GET", "/rest/users/me/tfa/config", &token, None)
        .json();
    assert_eq!(cfg["enabled"], true, "{cfg}");
    assert_eq!(cfg["type"], "sms");
    assert_eq!(cfg["module"], "SMSOTP");
    assert_eq!(cfg["mobileNumber"], "*********67");
    assert_eq!(cfg["allowNumberChange"], false);
    assert_eq!(cfg["rememberDeviceEnabled"], true);
    assert!(!cfg.to_string().contains("4567"));

    // One method at a time, and the number stays while it receives codes.
    assert_eq!(
        app.rest("GET", "/rest/users/me/tfa/setupTotpSecret", &token, None)
            .status,
        409
    );
    assert_eq!(
        app.rest("POST", "/rest/users/me/tfa/setupSms", &token, None)
            .status,
        409
    );
    let r = app.rest(
        "PUT",
        "/rest/users/me/mobileNumber",
        &token,
        Some(json!({"password": pw, "mobileNumber": "+41 79 000 00 00"})),
    );
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INPUT_ATTRIBUTE_FORBIDDEN".to_string())
    );
    assert_eq!(app.count("subject = 'user.tfa.enable'", "events"), 1);

    // Reset needs the current password: a token alone cannot switch the second factor off.
    let r = app.rest("POST", "/rest/users/me/tfa/resetSms", &token, None);
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INPUT_REQUIRED".to_string())
    );
    let r = app.rest(
        "POST",
        "/rest/users/me/tfa/resetSms",
        &token,
        Some(json!({"password": "Wrong-Passw0rd"})),
    );
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INVALID_PARAMETER".to_string())
    );
    assert_eq!(r.json()["errors"][0]["field"], "password");
    assert_eq!(
        app.count(&format!("user_id = '{id}'"), "sms_two_factor"),
        1,
        "still on"
    );
    // With it, reset turns it off; the verified number stays.
    let r = app.rest(
        "POST",
        "/rest/users/me/tfa/resetSms",
        &token,
        Some(json!({"password": pw})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(app.count(&format!("user_id = '{id}'"), "sms_two_factor"), 0);
    let r = app.json_login("ann@example.com", &pw, None);
    assert_eq!(r.json()["redirectUrl"], format!("{}/#/home", app.base));
    assert_eq!(
        app.rest("GET", "/rest/users/me/tfa/config", &token, None)
            .json()["enabled"],
        false
    );
}

#[test]
fn sms_codes_complete_the_json_sign_in_once_and_in_time() {
    let app = lenient();
    let (pw, token) = enrolled(&app, "ann@example.com");
    let tfa_config = app
        .rest("GET", "/rest/users/me/tfa/config", &token, None)
        .json();
    assert_eq!(tfa_config["module"], "SMSOTP");
    allow_resend(&app);

    let s = Session::start(&app, "ann@example.com", &pw);
    let r = s.call("GET", "/rest/users/me", None);
    assert_eq!((r.status, r.code()), (403, "ERR_ACCESS_DENIED".to_string()));

    // The challenge sends exactly one code to the number, and tells so without the number.
    let before = messages(&app);
    let r = s.challenge();
    let msg = asks_again(&r);
    assert!(
        msg.contains("ending in 67") && !msg.contains("4567"),
        "{msg}"
    );
    let code = new_code(&app, &before);
    assert!(!r.text.contains(&code));
    assert_eq!(
        app.count(
            &format!("code_hash IS NOT NULL AND code_hash <> '{code}'"),
            "sms_codes"
        ),
        1,
        "only a hash is stored"
    );

    // Another challenge within 30 seconds: 429, and nothing is sent.
    let before = messages(&app);
    let r = s.challenge();
    assert_eq!(
        (r.status, r.code()),
        (429, "ERR_REQUEST_RATE_LIMITED".to_string())
    );
    let wait: i64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=30).contains(&wait), "{wait}");
    assert_eq!(messages(&app).len(), before.len());

    // Malformed, wrong, then right.
    let r = s.auth("12345");
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INPUT_INVALID_FORMAT".to_string())
    );
    asks_again(&s.auth(other_than(&code)));
    accepted(&app, &s.auth(&code));
    assert_eq!(s.call("GET", "/rest/users/me", None).status, 200);

    // A used code does not pass again.
    let s = Session::start(&app, "ann@example.com", &pw);
    let msg = asks_again(&s.auth(&code));
    assert!(msg.contains("new code"), "{msg}");

    // A new challenge replaces the previous code.
    allow_resend(&app);
    let before = messages(&app);
    asks_again(&s.challenge());
    let first = new_code(&app, &before);
    allow_resend(&app);
    let before = messages(&app);
    asks_again(&s.challenge());
    let second = new_code(&app, &before);
    if first != second {
        asks_again(&s.auth(&first));
    }

    // An expired code does not pass.
    app.execute(&format!("UPDATE sms_codes SET expires_at = {}", now() - 1));
    asks_again(&s.auth(&second));

    // Five wrong tries void the code: then even the right one is refused.
    allow_resend(&app);
    let before = messages(&app);
    asks_again(&s.challenge());
    let code = new_code(&app, &before);
    for _ in 0..5 {
        asks_again(&s.auth(other_than(&code)));
    }
    asks_again(&s.auth(&code));
    assert_eq!(s.call("GET", "/rest/users/me", None).status, 403);

    // A fresh code after that passes.
    allow_resend(&app);
    let before = messages(&app);
    asks_again(&s.challenge());
    let code = new_code(&app, &before);
    accepted(&app, &s.auth(&code));
    assert_eq!(s.call("GET", "/rest/users/me", None).status, 200);
}

#[test]
fn wrong_sms_codes_feed_the_brute_force_throttle() {
    let app = TestApp::builder()
        .config(|c| {
            c.throttle.max_failures = 3;
            c.throttle.slow_after = 10;
        })
        .spawn();
    let (pw, _) = enrolled(&app, "ann@example.com");
    allow_resend(&app);
    let s = Session::start(&app, "ann@example.com", &pw);
    let before = messages(&app);
    asks_again(&s.challenge());
    let code = new_code(&app, &before);
    for _ in 0..3 {
        asks_again(&s.auth(other_than(&code)));
    }
    let r = s.auth(&code);
    assert_eq!(
        (r.status, r.code()),
        (429, "ERR_REQUEST_RATE_LIMITED".to_string()),
        "the account is locked, even for the right code"
    );
    assert!(r.header("retry-after").is_some());
    assert_eq!(app.json_login("ann@example.com", &pw, None).status, 429);
}

#[test]
fn remember_device_skips_the_sms_step_for_the_configured_time() {
    let app = TestApp::builder()
        .config(|c| c.tfa_remember_secs = 120)
        .spawn();
    let (pw, _) = enrolled(&app, "ann@example.com");
    allow_resend(&app);
    let s = Session::start(&app, "ann@example.com", &pw);
    let before = messages(&app);
    asks_again(&s.challenge());
    let code = new_code(&app, &before);
    let r = s.call(
        "POST",
        "/rest/users/me/tfa/auth",
        Some(json!({"otp": code, "referral": "/#/home", "rememberDevice": true})),
    );
    accepted(&app, &r);
    let set = r
        .cookies()
        .into_iter()
        .find(|c| c.starts_with("coffer_tfa_remember="))
        .expect("remember cookie");
    assert!(set.contains("Max-Age=120"), "{set}");
    assert!(set.contains("HttpOnly"), "{set}");
    let remember = r.cookie_value("coffer_tfa_remember").unwrap();
    let remembered = format!("coffer_tfa_remember={remember}");

    // That browser skips the step, and no message is sent.
    let before = messages(&app);
    let r = app.json_login("ann@example.com", &pw, Some(&remembered));
    assert_eq!(r.json()["redirectUrl"], format!("{}/#/home", app.base));
    assert_eq!(messages(&app).len(), before.len());
    // Another browser does not.
    let r = app.json_login("ann@example.com", &pw, Some("coffer_tfa_remember=forged"));
    assert!(r.json()["redirectUrl"].as_str().unwrap().contains("/#/tfa"));
    // Nor does this one once the configured time is over.
    app.execute(&format!(
        "UPDATE remembered_devices SET expires_at = {}",
        now() - 1
    ));
    let r = app.json_login("ann@example.com", &pw, Some(&remembered));
    assert!(r.json()["redirectUrl"].as_str().unwrap().contains("/#/tfa"));
}

/// The value of a hidden input in a page.
#[test]
fn the_authorization_page_sends_and_takes_an_sms_code() {
    let app = lenient();
    let (pw, _) = enrolled(&app, "ann@example.com");
    allow_resend(&app);

    let client = app.admin.client_id.clone();
    let redirect = app.admin.redirect_uri.clone();
    let (cookie, csrf) =
        app.authorize_page(&format!("client_id={client}&response_type=code&state=s1"));
    let before = messages(&app);
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
            && r.text.contains("ending in 67")
            && r.text.contains("Send a new code")
            && !r.text.contains("4567")
    );
    assert!(r.header("location").is_none());
    let code = new_code(&app, &before);
    assert!(!r.text.contains(&code));
    let ticket = hidden(&r.text, "ticket");

    // A wrong code: the page again, with a new ticket.
    let r = app.page_post(
        "/oauth/tfa",
        &cookie,
        &[
            ("ticket", &ticket),
            ("csrf", &csrf),
            ("code", other_than(&code)),
        ],
    );
    assert_eq!(r.status, 401, "{}", r.text);
    assert!(r.text.contains("The code is not valid"));
    let ticket = hidden(&r.text, "ticket");

    // A new code within 30 seconds is not sent; the page says so.
    let before = messages(&app);
    let r = app.page_post(
        "/oauth/tfa",
        &cookie,
        &[("ticket", &ticket), ("csrf", &csrf), ("resend", "1")],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.text.contains("A code was requested a moment ago"),
        "{}",
        r.text
    );
    assert_eq!(messages(&app).len(), before.len());
    let ticket = hidden(&r.text, "ticket");

    // Later it is, and it replaces the first code.
    allow_resend(&app);
    let r = app.page_post(
        "/oauth/tfa",
        &cookie,
        &[("ticket", &ticket), ("csrf", &csrf), ("resend", "1")],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let fresh = new_code(&app, &before);
    let ticket = hidden(&r.text, "ticket");
    if fresh != code {
        let r = app.page_post(
            "/oauth/tfa",
            &cookie,
            &[("ticket", &ticket), ("csrf", &csrf), ("code", &code)],
        );
        assert_eq!(r.status, 401, "the replaced code does not pass");
        let ticket2 = hidden(&r.text, "ticket");
        let r = app.page_post(
            "/oauth/tfa",
            &cookie,
            &[("ticket", &ticket2), ("csrf", &csrf), ("code", &fresh)],
        );
        assert_redirect_with_code(&r, &redirect);
    } else {
        let r = app.page_post(
            "/oauth/tfa",
            &cookie,
            &[("ticket", &ticket), ("csrf", &csrf), ("code", &fresh)],
        );
        assert_redirect_with_code(&r, &redirect);
    }
}

fn assert_redirect_with_code(r: &Resp, redirect: &str) {
    assert_eq!(r.status, 302, "{}", r.text);
    let location = r.header("location").unwrap();
    assert!(
        location.starts_with(redirect)
            && location.contains("code=")
            && location.contains("state=s1"),
        "{location}"
    );
}

/// Codes cost money and can flood a phone: beyond the 30-second spacing, each user and each
/// number gets at most so many codes in a longer window (here 2 an hour), whoever asks and for
/// whatever purpose; over the limit 429 with `Retry-After`, nothing sent or stored.
#[test]
fn sms_codes_are_limited_per_user_and_per_number_over_a_window() {
    let app = TestApp::builder()
        .config(|c| {
            c.sms_limits = coffer_service::platform::throttle::SmsLimits {
                window_secs: 3600,
                codes: 2,
                tests: 3,
            };
        })
        .spawn();
    let number_saved = |email: &str, number: &str| {
        let (_, pw) = app.user(email, Role::User);
        let token = app.password_token(email, &pw)["access_token"]
            .as_str()
            .unwrap()
            .to_string();
        let r = app.rest(
            "PUT",
            "/rest/users/me/mobileNumber",
            &token,
            Some(json!({"password": pw, "mobileNumber": number})),
        );
        assert_eq!(r.status, 200, "{}", r.text);
        (pw, token)
    };
    let refused = |r: &Resp, over: i64| {
        let wait = r.rate_limited();
        assert!(wait > over && wait <= 3600, "{wait}");
    };

    // Ann: two codes (apart by more than 30 s), then the hour's limit for her.
    let (_, ann) = number_saved("ann@example.com", NUMBER);
    for _ in 0..2 {
        allow_resend(&app);
        let r = app.rest("POST", "/rest/users/me/tfa/setupSms", &ann, None);
        assert_eq!(r.status, 200, "{}", r.text);
    }
    allow_resend(&app);
    let stored = app.count("1 = 1", "sms_codes");
    let sent = messages(&app).len();
    let r = app.rest("POST", "/rest/users/me/tfa/setupSms", &ann, None);
    refused(&r, 30);
    assert_eq!(messages(&app).len(), sent, "nothing sent");
    let earlier = format!(
        "user_id = (SELECT id FROM users WHERE email = 'ann@example.com') AND sent_at < {}",
        now() - 30
    );
    assert_eq!(
        app.count(&earlier, "sms_codes"),
        1,
        "the previous code stays as it was"
    );
    assert_eq!(app.count("1 = 1", "sms_codes"), stored);

    // Bob saved the same number: it had its two codes this hour, so none for him either.
    let (_, bob) = number_saved("bob@example.com", "+41 79 123 45 67");
    let r = app.rest("POST", "/rest/users/me/tfa/setupSms", &bob, None);
    refused(&r, 30);
    assert_eq!(messages(&app).len(), sent);

    // Another number is not held back by Ann's.
    let (_, carol) = number_saved("carol@example.com", "+41 79 000 00 01");
    let r = app.rest("POST", "/rest/users/me/tfa/setupSms", &carol, None);
    assert_eq!(r.status, 200, "{}", r.text);

    // The sign-in challenge counts the same: Dave's second code passes, his third does not.
    let (pw, dave) = number_saved("dave@example.com", "+41 79 000 00 02");
    let r = app.rest("POST", "/rest/users/me/tfa/setupSms", &dave, None);
    assert_eq!(r.status, 200, "{}", r.text);
    // Enrolled as if that code had been entered (it was sent to another number than `messages`
    // reads).
    app.execute(
        "UPDATE users SET mobile_verified = TRUE WHERE email = 'dave@example.com';
         INSERT INTO sms_two_factor (user_id, enabled_at)
           SELECT id, 1 FROM users WHERE email = 'dave@example.com'",
    );
    allow_resend(&app);
    let s = Session::start(&app, "dave@example.com", &pw);
    asks_again(&s.challenge());
    allow_resend(&app);
    let r = s.challenge();
    refused(&r, 30);
}
