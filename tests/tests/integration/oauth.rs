//! The OAuth 2.0 authorization server end to end, over real HTTP: the authorization page
//! (sign-in, CSRF, consent), every grant of the token endpoint (authorization code with PKCE,
//! refresh rotation, JWT assertion, signature flow, password), device registration at token
//! time, bearer authentication of `/rest`, revocation, introspection, the RFC 8414 metadata
//! and the callback landing page; and that single-use secrets (codes, refresh tokens, consent
//! tickets) stay single use under concurrent requests. Each test checks what a client relies on
//! (status, headers, body) and the stored state afterwards.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use coffer_domain::client::{flag, flow};
use coffer_domain::Role;
use coffer_oauth::secrets::hash_token;
use coffer_tests::{
    client_input, password_grant, unix_now as now, Body, Resp, TestApp, ACCESS_TOKENS,
    REFRESH_TOKENS,
};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::OnceLock;

const APP_URI: &str = "https://app.example.com";
const APP_CALLBACK: &str = "https://app.example.com/cb";
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const SIGNATURE_KEY: &str = "signature-key-0123456789";
const JWT_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A form POST with extra headers (cookies, HTTP Basic).
fn post_form(app: &TestApp, path: &str, headers: &[(&str, &str)], pairs: &[(&str, &str)]) -> Resp {
    app.send("POST", path, headers, Some(Body::Form(owned(pairs))))
}

/// `Authorization: Basic` for client credentials (form-urlencoded first, RFC 6749 §2.3.1).
fn basic(id: &str, secret: &str) -> String {
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    format!(
        "Basic {}",
        STANDARD.encode(format!("{}:{}", enc(id), enc(secret)))
    )
}

/// The redirect target of a 302 without its query, and the query parameters.
fn redirected(r: &Resp) -> (String, HashMap<String, String>) {
    assert_eq!(r.status, 302, "expected a redirect: {}", r.text);
    let loc = r.header("location").expect("Location header");
    let (base, query) = loc.split_once('?').unwrap_or((loc, ""));
    let params = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    (base.to_string(), params)
}

/// The `error` of a token-endpoint failure, after checking the 400 and its headers.
fn oauth_error(r: &Resp) -> String {
    assert_eq!(r.status, 400, "expected an OAuth error: {}", r.text);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let body = r.json();
    assert!(body["error_description"].is_string(), "{}", r.text);
    body["error"].as_str().expect("error").to_string()
}

/// An HTML page, with no redirect.
fn assert_page(r: &Resp, status: u16) {
    assert_eq!(r.status, status, "{}", r.text);
    assert_eq!(r.header("location"), None, "a page must not redirect");
    let ct = r.header("content-type").unwrap_or_default();
    assert!(ct.starts_with("text/html"), "content type {ct}");
}

fn me(app: &TestApp, token: &str) -> Resp {
    app.rest("GET", "/rest/users/me", token, None)
}

fn assert_unauthorized(r: &Resp) {
    assert_eq!(r.status, 401, "{}", r.text);
    assert_eq!(r.code(), "ERR_AUTH_UNAUTHORIZED");
    let challenge = r.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer"),
        "WWW-Authenticate: {challenge}"
    );
}

fn str_field<'a>(v: &'a Value, name: &str) -> &'a str {
    v[name]
        .as_str()
        .unwrap_or_else(|| panic!("`{name}` in {v}"))
}

/// Decodes the HTML escapes of the pages (`pages::esc`).
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
}

/// The hidden inputs of a page's form, as a browser would submit them.
fn hidden_fields(html: &str) -> Vec<(String, String)> {
    const START: &str = "<input type=\"hidden\" name=\"";
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(START) {
        rest = &rest[i + START.len()..];
        let (name, after) = rest.split_once('"').expect("name");
        let after = after.strip_prefix(" value=\"").expect("value");
        let (value, after) = after.split_once('"').expect("value end");
        out.push((unescape(name), unescape(value)));
        rest = after;
    }
    out
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The value of the CSRF cookie a page set.
fn csrf_cookie(r: &Resp) -> String {
    r.cookies()
        .iter()
        .find_map(|c| c.strip_prefix("coffer_oauth_csrf="))
        .map(|c| c.split(';').next().unwrap_or_default().to_string())
        .unwrap_or_else(|| panic!("no CSRF cookie in {:?}", r.cookies()))
}

fn authorize_path(query: &[(&str, &str)]) -> String {
    format!(
        "/oauth/authorize?{}",
        serde_urlencoded::to_string(query).unwrap()
    )
}

/// The sign-in form a browser holds after `GET /oauth/authorize`.
struct SignInForm {
    fields: Vec<(String, String)>,
    cookie: String,
}

fn open_sign_in(app: &TestApp, query: &[(&str, &str)]) -> SignInForm {
    let page = app.send("GET", &authorize_path(query), &[], None);
    assert_page(&page, 200);
    SignInForm {
        fields: hidden_fields(&page.text),
        cookie: csrf_cookie(&page),
    }
}

fn submit_sign_in(app: &TestApp, form: &SignInForm, email: &str, password: &str) -> Resp {
    let mut pairs = form.fields.clone();
    pairs.push(("email".into(), email.into()));
    pairs.push(("password".into(), password.into()));
    let cookie = format!("coffer_oauth_csrf={}", form.cookie);
    app.send(
        "POST",
        "/oauth/authorize",
        &[("Cookie", &cookie)],
        Some(Body::Form(pairs)),
    )
}

fn sign_in(app: &TestApp, query: &[(&str, &str)], email: &str, password: &str) -> Resp {
    let form = open_sign_in(app, query);
    submit_sign_in(app, &form, email, password)
}

/// An authorization request of the built-in (no-consent) client.
fn admin_query<'a>(app: &'a TestApp, state: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("client_id", app.admin.client_id.as_str()),
        ("redirect_uri", app.admin.redirect_uri.as_str()),
        ("response_type", "code"),
        ("state", state),
    ]
}

fn admin_sign_in(app: &TestApp, query: &[(&str, &str)]) -> Resp {
    sign_in(
        app,
        query,
        &app.admin.admin_email,
        &app.admin.admin_password,
    )
}

/// The code of a successful authorization redirect.
fn code_of(r: &Resp) -> String {
    let (_, q) = redirected(r);
    q.get("code")
        .unwrap_or_else(|| panic!("no code in {:?}", r.header("location")))
        .clone()
}

/// A fresh authorization code of the administrator for the built-in client.
fn admin_code(app: &TestApp) -> String {
    code_of(&admin_sign_in(app, &admin_query(app, "s")))
}

fn exchange(
    app: &TestApp,
    (client_id, secret): (&str, &str),
    redirect_uri: &str,
    code: &str,
    extra: &[(&str, &str)],
) -> Resp {
    let mut pairs = vec![
        ("grant_type", "authorization_code"),
        ("client_id", client_id),
        ("client_secret", secret),
        ("redirect_uri", redirect_uri),
        ("code", code),
    ];
    pairs.extend_from_slice(extra);
    app.form("/oauth/token", &pairs)
}

fn admin_creds(app: &TestApp) -> (&str, &str) {
    (&app.admin.client_id, &app.admin.client_secret)
}

fn admin_exchange(app: &TestApp, code: &str, extra: &[(&str, &str)]) -> Resp {
    exchange(app, admin_creds(app), &app.admin.redirect_uri, code, extra)
}

fn refresh(app: &TestApp, (id, secret): (&str, &str), token: &str, extra: &[(&str, &str)]) -> Resp {
    let mut pairs = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", token),
        ("client_id", id),
        ("client_secret", secret),
    ];
    pairs.extend_from_slice(extra);
    app.form("/oauth/token", &pairs)
}

/// The administrator's token set by the password grant of the built-in client.
fn admin_tokens(app: &TestApp) -> Value {
    let (e, p) = (&app.admin.admin_email, &app.admin.admin_password);
    app.password_token(e, p)
}

/// Counts stored rows for the token's hash.
fn stored(app: &TestApp, table: &str, token: &str, cond: &str) -> i64 {
    app.count(
        &format!("token_hash = '{}' AND {cond}", hash_token(token)),
        table,
    )
}

/// A client registered with `APP_URI` that skips consent.
fn no_consent_client(app: &TestApp, name: &str, flows: i32) -> (String, String) {
    let mut input = client_input(name, APP_URI, flows);
    input.flag = Some(flag::NO_CONSENT);
    app.client(input)
}

// ---------------------------------------------------------------------------------------------
// JWT assertion helpers: one RSA key per test binary.
// ---------------------------------------------------------------------------------------------

struct TestKey {
    private_pem: String,
    public_pem: String,
}

fn new_test_key() -> TestKey {
    use rsa::pkcs1::EncodeRsaPrivateKey;
    use rsa::pkcs8::{EncodePublicKey, LineEnding};
    let private = rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).expect("RSA key");
    TestKey {
        private_pem: private.to_pkcs1_pem(LineEnding::LF).unwrap().to_string(),
        public_pem: private
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap(),
    }
}

fn rsa_key() -> &'static TestKey {
    static KEY: OnceLock<TestKey> = OnceLock::new();
    KEY.get_or_init(new_test_key)
}

fn sign_rs256(claims: &Value) -> String {
    let key = EncodingKey::from_rsa_pem(rsa_key().private_pem.as_bytes()).expect("private PEM");
    jsonwebtoken::encode(&Header::new(Algorithm::RS256), claims, &key).expect("sign")
}

/// A JWT-bearer client; it also has the refresh flow, to show the grant never issues one.
fn jwt_client(app: &TestApp) -> String {
    let mut input = client_input("jwt-app", APP_URI, flow::JWT_BEARER | flow::REFRESH_TOKEN);
    input.jwt_public_key = Some(rsa_key().public_pem.clone());
    app.client(input).0
}

/// Valid claims for `sub`, with a fresh `jti`.
fn claims(app: &TestApp, client_id: &str, sub: &str) -> Value {
    let t = now();
    json!({
        "iss": client_id,
        "sub": sub,
        "aud": format!("{}/oauth/token", app.base),
        "iat": t,
        "exp": t + 120,
        "jti": uuid::Uuid::new_v4().to_string(),
    })
}

fn jwt_grant(app: &TestApp, client_id: &str, assertion: &str) -> Resp {
    app.form(
        "/oauth/token",
        &[
            ("grant_type", JWT_GRANT),
            ("client_id", client_id),
            ("assertion", assertion),
        ],
    )
}

// ---------------------------------------------------------------------------------------------
// Signature flow helpers
// ---------------------------------------------------------------------------------------------

fn signature_client(app: &TestApp) -> (String, String) {
    let mut input = client_input("signature-app", APP_URI, flow::SIGNATURE);
    input.signature_key = Some(SIGNATURE_KEY.into());
    app.client(input)
}

fn signature_grant(app: &TestApp, (id, secret): (&str, &str), code: &str) -> Resp {
    app.form(
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("client_id", id),
            ("client_secret", secret),
            ("redirect_uri", APP_URI),
            ("code", code),
        ],
    )
}

// ---------------------------------------------------------------------------------------------
// 1. The authorization request
// ---------------------------------------------------------------------------------------------

#[test]
fn authorize_with_unknown_client_shows_error_page() {
    let app = TestApp::spawn();
    for query in [
        vec![
            ("client_id", "no-such-client"),
            ("redirect_uri", APP_CALLBACK),
            ("response_type", "code"),
            ("state", "s"),
        ],
        vec![("redirect_uri", APP_CALLBACK), ("response_type", "code")],
    ] {
        let r = app.send("GET", &authorize_path(&query), &[], None);
        assert_page(&r, 400);
        assert!(r.text.contains("The client is unknown."), "{}", r.text);
    }
}

#[test]
fn authorize_never_redirects_outside_the_registered_uri() {
    let app = TestApp::spawn();
    let (id, _) = app.client(client_input("web-app", APP_URI, flow::AUTH_CODE));
    for bad in [
        "https://app.example.com.evil.net/",
        "https://app.example.com@evil.net/",
        "https://evil.net/cb",
        "http://app.example.com/cb",
    ] {
        let query = [
            ("client_id", id.as_str()),
            ("redirect_uri", bad),
            ("response_type", "code"),
            ("state", "s"),
        ];
        let r = app.send("GET", &authorize_path(&query), &[], None);
        assert_page(&r, 400);
        assert!(!r.text.contains("evil.net"), "{}", r.text);
    }
    let ok = app.send(
        "GET",
        &authorize_path(&[
            ("client_id", id.as_str()),
            ("redirect_uri", APP_CALLBACK),
            ("response_type", "code"),
        ]),
        &[],
        None,
    );
    assert_page(&ok, 200);
}

#[test]
fn authorize_errors_after_client_check_redirect_with_error_and_state() {
    struct Case<'a> {
        what: &'a str,
        client: &'a str,
        extra: Vec<(&'a str, &'a str)>,
        error: &'a str,
    }
    let app = TestApp::spawn();
    let mut input = client_input("limited-app", APP_URI, flow::AUTH_CODE);
    input.scope = "GET/users/*".into();
    let (limited, _) = app.client(input);
    let (no_code_flow, _) = app.client(client_input("password-app", APP_URI, flow::PASSWORD));
    let state = "st a+te/&=x";
    let challenge = coffer_oauth::pkce::challenge_s256(VERIFIER);
    let code = ("response_type", "code");
    let cases = [
        Case {
            what: "missing response_type",
            client: &limited,
            extra: vec![],
            error: "invalid_request",
        },
        Case {
            what: "implicit grant",
            client: &limited,
            extra: vec![("response_type", "token")],
            error: "unsupported_response_type",
        },
        Case {
            what: "scope beyond registration",
            client: &limited,
            extra: vec![code, ("scope", "folders/*")],
            error: "invalid_scope",
        },
        Case {
            what: "client without the authorization code flow",
            client: &no_code_flow,
            extra: vec![code],
            error: "unauthorized_client",
        },
        Case {
            what: "plain PKCE",
            client: &limited,
            extra: vec![
                code,
                ("code_challenge", &challenge),
                ("code_challenge_method", "plain"),
            ],
            error: "invalid_request",
        },
    ];
    for case in cases {
        let what = case.what;
        let mut query = vec![
            ("client_id", case.client),
            ("redirect_uri", APP_CALLBACK),
            ("state", state),
        ];
        query.extend(case.extra);
        let r = app.send("GET", &authorize_path(&query), &[], None);
        let (base, q) = redirected(&r);
        assert_eq!(base, APP_CALLBACK, "{what}");
        assert_eq!(
            q.get("error").map(String::as_str),
            Some(case.error),
            "{what}"
        );
        assert_eq!(q.get("state").map(String::as_str), Some(state), "{what}");
        assert!(q.contains_key("error_description"), "{what}");
        assert!(!q.contains_key("code"), "{what}");
    }
}

#[test]
fn authorize_shows_sign_in_form_bound_to_csrf_cookie() {
    let app = TestApp::spawn();
    let r = app.send("GET", &authorize_path(&admin_query(&app, "abc")), &[], None);
    assert_page(&r, 200);
    assert!(
        r.text.contains("<label for=\"email\">Email</label>"),
        "{}",
        r.text
    );
    assert!(r.text.contains("<label for=\"password\">Password</label>"));
    assert!(r.text.contains("<button type=\"submit\">Sign in</button>"));
    assert!(r
        .text
        .contains("<form method=\"post\" action=\"/oauth/authorize\">"));
    assert!(!r.text.contains("class=\"mobile\""));

    let cookie = r
        .cookies()
        .into_iter()
        .find(|c| c.starts_with("coffer_oauth_csrf="))
        .expect("CSRF cookie");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");

    let fields = hidden_fields(&r.text);
    assert_eq!(field(&fields, "csrf"), Some(csrf_cookie(&r).as_str()));
    assert_eq!(
        field(&fields, "client_id"),
        Some(app.admin.client_id.as_str())
    );
    assert_eq!(field(&fields, "state"), Some("abc"));
}

#[test]
fn authorize_with_m1_shows_mobile_page() {
    let app = TestApp::spawn();
    let mut query = admin_query(&app, "s");
    query.push(("m", "1"));
    let r = app.send("GET", &authorize_path(&query), &[], None);
    assert_page(&r, 200);
    assert!(r.text.contains("<body class=\"mobile\">"), "{}", r.text);
}

#[test]
fn authorize_with_a_repeated_parameter_shows_error_page() {
    let app = TestApp::spawn();
    let path = format!(
        "/oauth/authorize?client_id={}&response_type=code&redirect_uri={}&redirect_uri={}",
        app.admin.client_id,
        url::form_urlencoded::byte_serialize(app.admin.redirect_uri.as_bytes()).collect::<String>(),
        "https%3A%2F%2Fevil.net%2F"
    );
    let r = app.send("GET", &path, &[], None);
    assert_page(&r, 400);
    assert!(r.text.contains("more than once"), "{}", r.text);
}

#[test]
fn authorized_scope_carries_through_to_the_token() {
    let app = TestApp::spawn();
    let mut query = admin_query(&app, "s");
    query.push(("scope", "GET/users/*"));
    let code = code_of(&admin_sign_in(&app, &query));
    let r = admin_exchange(&app, &code, &[]);
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert_eq!(body["scope"], "GET/users/*");
    let token = str_field(&body, "access_token");
    assert_eq!(me(&app, token).status, 200);
    assert_eq!(app.rest("GET", "/rest/locations", token, None).status, 403);
}

// ---------------------------------------------------------------------------------------------
// 2. Sign-in and consent
// ---------------------------------------------------------------------------------------------

#[test]
fn sign_in_with_wrong_password_shows_the_form_again() {
    let app = TestApp::spawn();
    let r = sign_in(
        &app,
        &admin_query(&app, "s"),
        &app.admin.admin_email,
        "not-the-password",
    );
    assert_page(&r, 401);
    assert!(
        r.text.contains("The email or password is incorrect."),
        "{}",
        r.text
    );
    assert!(r.text.contains("<label for=\"email\">Email</label>"));
    assert_eq!(app.count("1 = 1", "authorization_codes"), 0);
}

#[test]
fn sign_in_without_matching_csrf_issues_no_code() {
    let app = TestApp::spawn();
    let form = open_sign_in(&app, &admin_query(&app, "s"));
    let (email, pw) = (&app.admin.admin_email, &app.admin.admin_password);

    let mut without_csrf = form.fields.clone();
    without_csrf.retain(|(k, _)| k != "csrf");
    let mismatched = SignInForm {
        fields: form.fields.clone(),
        cookie: "some-other-value".into(),
    };
    let attempts = [
        submit_sign_in(
            &app,
            &SignInForm {
                fields: without_csrf,
                cookie: form.cookie.clone(),
            },
            email,
            pw,
        ),
        submit_sign_in(&app, &mismatched, email, pw),
        // The form's token without the cookie it is bound to.
        {
            let mut pairs = form.fields.clone();
            pairs.push(("email".into(), email.clone()));
            pairs.push(("password".into(), pw.clone()));
            app.send("POST", "/oauth/authorize", &[], Some(Body::Form(pairs)))
        },
    ];
    for r in attempts {
        assert_page(&r, 401);
        assert!(r.text.contains("Your sign-in form expired."), "{}", r.text);
        // A fresh form to try again.
        assert!(r.text.contains("<label for=\"password\">Password</label>"));
    }
    assert_eq!(app.count("1 = 1", "authorization_codes"), 0);
}

#[test]
fn sign_in_to_no_consent_client_redirects_with_code_and_state() {
    let app = TestApp::spawn();
    let state = "opaque state/+=&";
    let r = admin_sign_in(&app, &admin_query(&app, state));
    let (base, q) = redirected(&r);
    assert_eq!(base, app.admin.redirect_uri);
    assert!(!q["code"].is_empty());
    assert_eq!(q["state"], state);
    assert_eq!(
        app.count(
            &format!(
                "code_hash = '{}' AND used_at IS NULL",
                hash_token(&q["code"])
            ),
            "authorization_codes"
        ),
        1
    );
}

#[test]
fn sign_in_post_checks_the_authorization_request_again() {
    let app = TestApp::spawn();
    let form = open_sign_in(&app, &admin_query(&app, "s"));
    let (email, pw) = (&app.admin.admin_email, &app.admin.admin_password);
    for (name, value) in [
        ("redirect_uri", "https://evil.net/cb"),
        ("client_id", "no-such-client"),
    ] {
        let mut tampered = form.fields.clone();
        for (k, v) in tampered.iter_mut() {
            if k == name {
                *v = value.into();
            }
        }
        let r = submit_sign_in(
            &app,
            &SignInForm {
                fields: tampered,
                cookie: form.cookie.clone(),
            },
            email,
            pw,
        );
        assert_page(&r, 400);
    }
    assert_eq!(app.count("1 = 1", "authorization_codes"), 0);
}

#[test]
fn sign_in_of_a_deactivated_user_is_refused() {
    let app = TestApp::spawn();
    let (_, pw) = app.user("henry@example.com", Role::User);
    app.execute("UPDATE users SET active = FALSE WHERE email = 'henry@example.com'");
    let r = sign_in(&app, &admin_query(&app, "s"), "henry@example.com", &pw);
    assert_page(&r, 401);
    assert!(
        r.text.contains("The email or password is incorrect."),
        "{}",
        r.text
    );
    assert_eq!(app.count("1 = 1", "authorization_codes"), 0);
}

/// A client that asks for consent, and the consent page its user reached after signing in.
struct Consent {
    client_id: String,
    secret: String,
    page: Resp,
    /// The CSRF cookie of the browser.
    cookie: String,
}

fn consent_page(app: &TestApp, state: &str) -> Consent {
    let (client_id, secret) = app.client(client_input("consent-app", APP_URI, flow::AUTH_CODE));
    let (_, pw) = app.user("carol@example.com", Role::User);
    let form = open_sign_in(
        app,
        &[
            ("client_id", client_id.as_str()),
            ("redirect_uri", APP_CALLBACK),
            ("response_type", "code"),
            ("state", state),
        ],
    );
    let page = submit_sign_in(app, &form, "carol@example.com", &pw);
    assert_page(&page, 200);
    Consent {
        client_id,
        secret,
        page,
        cookie: form.cookie,
    }
}

fn answer_consent(app: &TestApp, consent: &Consent, decision: &str) -> Resp {
    let mut pairs = hidden_fields(&consent.page.text);
    pairs.push(("decision".into(), decision.into()));
    let cookie = format!("coffer_oauth_csrf={}", consent.cookie);
    app.send(
        "POST",
        "/oauth/consent",
        &[("Cookie", &cookie)],
        Some(Body::Form(pairs)),
    )
}

#[test]
fn consent_keeps_the_pkce_challenge() {
    let app = TestApp::spawn();
    let (client_id, secret) = app.client(client_input("pkce-app", APP_URI, flow::AUTH_CODE));
    let (_, pw) = app.user("carol@example.com", Role::User);
    let challenge = coffer_oauth::pkce::challenge_s256(VERIFIER);
    let form = open_sign_in(
        &app,
        &[
            ("client_id", client_id.as_str()),
            ("redirect_uri", APP_URI),
            ("response_type", "code"),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
        ],
    );
    let page = submit_sign_in(&app, &form, "carol@example.com", &pw);
    assert_page(&page, 200);
    let consent = Consent {
        client_id,
        secret,
        page,
        cookie: form.cookie,
    };
    let code = code_of(&answer_consent(&app, &consent, "allow"));
    let creds = (consent.client_id.as_str(), consent.secret.as_str());
    let r = exchange(&app, creds, APP_URI, &code, &[]);
    assert_eq!(oauth_error(&r), "invalid_grant");
    let r = exchange(&app, creds, APP_URI, &code, &[("code_verifier", VERIFIER)]);
    assert_eq!(r.status, 200, "{}", r.text);
}

#[test]
fn consent_client_shows_allow_and_deny() {
    let app = TestApp::spawn();
    let Consent { page, .. } = consent_page(&app, "s");
    assert!(page
        .text
        .contains("<form method=\"post\" action=\"/oauth/consent\">"));
    assert!(
        page.text.contains("value=\"allow\">Allow</button>"),
        "{}",
        page.text
    );
    assert!(page
        .text
        .contains("value=\"deny\" class=\"secondary\">Deny</button>"));
    let fields = hidden_fields(&page.text);
    assert!(field(&fields, "ticket").is_some_and(|t| !t.is_empty()));
    assert_eq!(app.count("1 = 1", "authorization_codes"), 0);
    assert_eq!(app.count("1 = 1", "authorize_requests"), 1);
}

#[test]
fn consent_deny_redirects_with_access_denied() {
    let app = TestApp::spawn();
    let consent = consent_page(&app, "deny-state");
    let r = answer_consent(&app, &consent, "deny");
    let (base, q) = redirected(&r);
    assert_eq!(base, APP_CALLBACK);
    assert_eq!(q["error"], "access_denied");
    assert_eq!(q["state"], "deny-state");
    assert!(!q.contains_key("code"));
    assert_eq!(app.count("1 = 1", "authorization_codes"), 0);
}

#[test]
fn consent_allow_redirects_with_code_once() {
    let app = TestApp::spawn();
    let consent = consent_page(&app, "allow-state");

    // A consent post without the CSRF cookie is refused and does not use up the ticket.
    let mut forged = hidden_fields(&consent.page.text);
    forged.push(("decision".into(), "allow".into()));
    let r = app.send("POST", "/oauth/consent", &[], Some(Body::Form(forged)));
    assert_page(&r, 400);

    let r = answer_consent(&app, &consent, "allow");
    let (base, q) = redirected(&r);
    assert_eq!(base, APP_CALLBACK);
    assert!(!q["code"].is_empty());
    assert_eq!(q["state"], "allow-state");
    assert_eq!(app.count("1 = 1", "authorization_codes"), 1);

    let again = answer_consent(&app, &consent, "allow");
    assert_page(&again, 400);
    assert_eq!(app.count("1 = 1", "authorization_codes"), 1);

    let code = &q["code"];
    let r = exchange(
        &app,
        (&consent.client_id, &consent.secret),
        APP_CALLBACK,
        code,
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let token = str_field(&r.json(), "access_token").to_string();
    assert_eq!(me(&app, &token).json()["email"], "carol@example.com");
}

// ---------------------------------------------------------------------------------------------
// 3. Code exchange
// ---------------------------------------------------------------------------------------------

#[test]
fn code_exchange_with_form_secret_issues_tokens() {
    let app = TestApp::spawn();
    let code = admin_code(&app);
    let r = admin_exchange(&app, &code, &[]);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let body = r.json();
    let access = str_field(&body, "access_token");
    let refresh_token = str_field(&body, "refresh_token");
    assert_eq!(body["token_type"], "bearer");
    assert_eq!(body["scope"], "*");
    assert_eq!(body["expires_in"], 3600);

    let who = me(&app, access);
    assert_eq!(who.status, 200, "{}", who.text);
    assert_eq!(who.json()["email"], app.admin.admin_email.as_str());

    assert_eq!(stored(&app, ACCESS_TOKENS, access, "revoked = FALSE"), 1);
    assert_eq!(
        stored(&app, REFRESH_TOKENS, refresh_token, "used_at IS NULL"),
        1
    );
    assert_eq!(app.count("used_at IS NOT NULL", "authorization_codes"), 1);
}

#[test]
fn code_exchange_with_http_basic_issues_tokens() {
    let app = TestApp::spawn();
    let code = admin_code(&app);
    let auth = basic(&app.admin.client_id, &app.admin.client_secret);
    let r = post_form(
        &app,
        "/oauth/token",
        &[("Authorization", &auth)],
        &[
            ("grant_type", "authorization_code"),
            ("redirect_uri", &app.admin.redirect_uri),
            ("code", &code),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let body = r.json();
    assert!(body["refresh_token"].is_string());
    assert_eq!(me(&app, str_field(&body, "access_token")).status, 200);
}

#[test]
fn replayed_code_is_refused_and_revokes_what_it_issued() {
    let app = TestApp::spawn();
    let code = admin_code(&app);
    let first = admin_exchange(&app, &code, &[]).json();
    let access = str_field(&first, "access_token");
    let refresh_token = str_field(&first, "refresh_token");
    assert_eq!(me(&app, access).status, 200);

    let replay = admin_exchange(&app, &code, &[]);
    assert_eq!(oauth_error(&replay), "invalid_grant");

    assert_unauthorized(&me(&app, access));
    assert_eq!(stored(&app, ACCESS_TOKENS, access, "revoked = TRUE"), 1);
    assert_eq!(
        stored(&app, REFRESH_TOKENS, refresh_token, "revoked = TRUE"),
        1
    );
    let r = refresh(&app, admin_creds(&app), refresh_token, &[]);
    assert_eq!(oauth_error(&r), "invalid_grant");
}

#[test]
fn code_exchange_needs_the_authorization_redirect_uri() {
    let app = TestApp::spawn();
    let code = admin_code(&app);
    let other = format!("{}/elsewhere", app.base);
    let r = exchange(&app, admin_creds(&app), &other, &code, &[]);
    assert_eq!(oauth_error(&r), "invalid_grant");
    let r = app.form(
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("client_id", &app.admin.client_id),
            ("client_secret", &app.admin.client_secret),
            ("code", &code),
        ],
    );
    assert_eq!(oauth_error(&r), "invalid_request");
    // Refusals do not use the code up.
    assert_eq!(admin_exchange(&app, &code, &[]).status, 200);
}

#[test]
fn expired_code_is_invalid_grant() {
    let app = TestApp::spawn();
    let code = admin_code(&app);
    let hash = hash_token(&code);
    let ten_minutes = format!("code_hash = '{hash}' AND expires_at - created_at = 600");
    assert_eq!(app.count(&ten_minutes, "authorization_codes"), 1);
    app.execute(&format!(
        "UPDATE authorization_codes SET expires_at = {} WHERE code_hash = '{hash}'",
        now()
    ));
    let r = admin_exchange(&app, &code, &[]);
    assert_eq!(oauth_error(&r), "invalid_grant");
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 0);
}

#[test]
fn code_of_another_client_is_invalid_grant() {
    let app = TestApp::spawn();
    let code = admin_code(&app);
    let mut input = client_input("thief", &app.admin.redirect_uri, flow::AUTH_CODE);
    input.flag = Some(flag::NO_CONSENT);
    let (id, secret) = app.client(input);
    let r = exchange(&app, (&id, &secret), &app.admin.redirect_uri, &code, &[]);
    assert_eq!(oauth_error(&r), "invalid_grant");
    // The rightful client can still use it.
    assert_eq!(admin_exchange(&app, &code, &[]).status, 200);
}

#[test]
fn code_exchange_with_wrong_secret_is_invalid_client() {
    let app = TestApp::spawn();
    let code = admin_code(&app);
    let r = exchange(
        &app,
        (&app.admin.client_id, "wrong-secret"),
        &app.admin.redirect_uri,
        &code,
        &[],
    );
    assert_eq!(oauth_error(&r), "invalid_client");
    let r = exchange(
        &app,
        ("no-such-client", &app.admin.client_secret),
        &app.admin.redirect_uri,
        &code,
        &[],
    );
    assert_eq!(oauth_error(&r), "invalid_client");
    let auth = basic(&app.admin.client_id, "wrong-secret");
    let r = post_form(
        &app,
        "/oauth/token",
        &[("Authorization", &auth)],
        &[
            ("grant_type", "authorization_code"),
            ("redirect_uri", &app.admin.redirect_uri),
            ("code", &code),
        ],
    );
    assert_eq!(oauth_error(&r), "invalid_client");
    assert_eq!(app.count("used_at IS NULL", "authorization_codes"), 1);
}

#[test]
fn basic_auth_with_form_secret_is_invalid_request() {
    let app = TestApp::spawn();
    let code = admin_code(&app);
    let auth = basic(&app.admin.client_id, &app.admin.client_secret);
    let r = post_form(
        &app,
        "/oauth/token",
        &[("Authorization", &auth)],
        &[
            ("grant_type", "authorization_code"),
            ("client_secret", &app.admin.client_secret),
            ("redirect_uri", &app.admin.redirect_uri),
            ("code", &code),
        ],
    );
    assert_eq!(oauth_error(&r), "invalid_request");
}

#[test]
fn malformed_token_requests_are_invalid_request() {
    let app = TestApp::spawn();
    let (id, secret) = admin_creds(&app);

    let missing_code = app.form(
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("client_id", id),
            ("client_secret", secret),
            ("redirect_uri", &app.admin.redirect_uri),
        ],
    );
    assert_eq!(oauth_error(&missing_code), "invalid_request");

    let missing_grant = app.form(
        "/oauth/token",
        &[("client_id", id), ("client_secret", secret)],
    );
    assert_eq!(oauth_error(&missing_grant), "invalid_request");

    let body = format!(
        "grant_type=authorization_code&code=a&code=b&client_id={id}&client_secret={secret}"
    );
    let duplicated = app.send(
        "POST",
        "/oauth/token",
        &[],
        Some(Body::Raw("application/x-www-form-urlencoded", body)),
    );
    assert_eq!(oauth_error(&duplicated), "invalid_request");

    let json_body = app.send(
        "POST",
        "/oauth/token",
        &[],
        Some(Body::Json(json!({
            "grant_type": "password",
            "client_id": id,
            "client_secret": secret,
            "username": app.admin.admin_email,
            "password": app.admin.admin_password,
        }))),
    );
    assert_eq!(oauth_error(&json_body), "invalid_request");
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 0);
}

#[test]
fn unknown_grant_type_is_unsupported() {
    let app = TestApp::spawn();
    let (id, secret) = admin_creds(&app);
    for grant in ["client_credentials", "implicit", "urn:example:other"] {
        let r = app.form(
            "/oauth/token",
            &[
                ("grant_type", grant),
                ("client_id", id),
                ("client_secret", secret),
            ],
        );
        assert_eq!(oauth_error(&r), "unsupported_grant_type", "{grant}");
    }
}

#[test]
fn pkce_verifier_is_checked_at_exchange() {
    let app = TestApp::spawn();
    let challenge = coffer_oauth::pkce::challenge_s256(VERIFIER);
    let mut query = admin_query(&app, "s");
    query.push(("code_challenge", &challenge));
    query.push(("code_challenge_method", "S256"));
    let code = code_of(&admin_sign_in(&app, &query));
    assert_eq!(
        app.count(
            &format!("code_challenge = '{challenge}'"),
            "authorization_codes"
        ),
        1
    );

    let r = admin_exchange(&app, &code, &[]);
    assert_eq!(oauth_error(&r), "invalid_grant");
    let wrong = "x".repeat(43);
    let r = admin_exchange(&app, &code, &[("code_verifier", &wrong)]);
    assert_eq!(oauth_error(&r), "invalid_grant");
    let r = admin_exchange(&app, &code, &[("code_verifier", VERIFIER)]);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(me(&app, str_field(&r.json(), "access_token")).status, 200);
}

#[test]
fn verifier_for_code_without_challenge_is_invalid_grant() {
    let app = TestApp::spawn();
    let code = admin_code(&app);
    let r = admin_exchange(&app, &code, &[("code_verifier", VERIFIER)]);
    assert_eq!(oauth_error(&r), "invalid_grant");
}

#[test]
fn expires_in_follows_client_access_token_lifetime() {
    let app = TestApp::spawn();
    let mut input = client_input("five-hours", APP_URI, flow::AUTH_CODE | flow::REFRESH_TOKEN);
    input.flag = Some(flag::NO_CONSENT);
    input.access_token_lifetime = Some(5);
    let (id, secret) = app.client(input);
    let (_, pw) = app.user("dave@example.com", Role::User);
    let query = [
        ("client_id", id.as_str()),
        ("redirect_uri", APP_CALLBACK),
        ("response_type", "code"),
    ];
    let code = code_of(&sign_in(&app, &query, "dave@example.com", &pw));
    let r = exchange(&app, (&id, &secret), APP_CALLBACK, &code, &[]);
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert_eq!(body["expires_in"], 5 * 3600);
    assert_eq!(
        stored(
            &app,
            ACCESS_TOKENS,
            str_field(&body, "access_token"),
            "access_tokens.expires_at - access_tokens.created_at = 18000"
        ),
        1
    );
}

#[test]
fn client_without_refresh_flow_gets_no_refresh_token() {
    let app = TestApp::spawn();
    let (id, secret) = no_consent_client(&app, "no-refresh", flow::AUTH_CODE);
    let (_, pw) = app.user("erin@example.com", Role::User);
    let query = [
        ("client_id", id.as_str()),
        ("redirect_uri", APP_URI),
        ("response_type", "code"),
    ];
    let code = code_of(&sign_in(&app, &query, "erin@example.com", &pw));
    let r = exchange(&app, (&id, &secret), APP_URI, &code, &[]);
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert!(body.get("refresh_token").is_none(), "{body}");
    assert!(body["access_token"].is_string());
    assert_eq!(app.count("1 = 1", REFRESH_TOKENS), 0);
}

// ---------------------------------------------------------------------------------------------
// 4. Refresh
// ---------------------------------------------------------------------------------------------

#[test]
fn refresh_rotates_both_tokens() {
    let app = TestApp::spawn();
    let first = admin_tokens(&app);
    let old_refresh = str_field(&first, "refresh_token");
    let r = refresh(&app, admin_creds(&app), old_refresh, &[]);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let next = r.json();
    let (access, new_refresh) = (
        str_field(&next, "access_token"),
        str_field(&next, "refresh_token"),
    );
    assert_ne!(access, str_field(&first, "access_token"));
    assert_ne!(new_refresh, old_refresh);
    assert_eq!(next["token_type"], "bearer");
    assert_eq!(next["scope"], "*");
    assert_eq!(me(&app, access).status, 200);
    assert_eq!(
        stored(&app, REFRESH_TOKENS, old_refresh, "used_at IS NOT NULL"),
        1
    );
    assert_eq!(
        stored(&app, REFRESH_TOKENS, new_refresh, "used_at IS NULL"),
        1
    );
}

#[test]
fn reused_refresh_token_revokes_the_whole_family() {
    let app = TestApp::spawn();
    let first = admin_tokens(&app);
    let old_refresh = str_field(&first, "refresh_token");
    let next = refresh(&app, admin_creds(&app), old_refresh, &[]).json();
    let (access, new_refresh) = (
        str_field(&next, "access_token"),
        str_field(&next, "refresh_token"),
    );

    let reuse = refresh(&app, admin_creds(&app), old_refresh, &[]);
    assert_eq!(oauth_error(&reuse), "invalid_grant");

    assert_unauthorized(&me(&app, access));
    assert_unauthorized(&me(&app, str_field(&first, "access_token")));
    let r = refresh(&app, admin_creds(&app), new_refresh, &[]);
    assert_eq!(oauth_error(&r), "invalid_grant");
    assert_eq!(app.count("revoked = FALSE", ACCESS_TOKENS), 0);
    assert_eq!(app.count("revoked = FALSE", REFRESH_TOKENS), 0);
    assert_eq!(app.count("revoked = TRUE", ACCESS_TOKENS), 2);
}

#[test]
fn refresh_may_narrow_the_scope_but_not_widen_it() {
    let app = TestApp::spawn();
    let first = admin_tokens(&app);
    let r = refresh(
        &app,
        admin_creds(&app),
        str_field(&first, "refresh_token"),
        &[("scope", "GET/users/*")],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let narrow = r.json();
    assert_eq!(narrow["scope"], "GET/users/*");
    let access = str_field(&narrow, "access_token");
    assert_eq!(me(&app, access).status, 200);
    assert_eq!(app.rest("GET", "/rest/locations", access, None).status, 403);

    let narrow_refresh = str_field(&narrow, "refresh_token");
    for wider in ["*", "GET/users/* folders/*", "users/*"] {
        let r = refresh(&app, admin_creds(&app), narrow_refresh, &[("scope", wider)]);
        assert_eq!(oauth_error(&r), "invalid_scope", "{wider}");
    }
    // A refused widening leaves the token usable.
    let r = refresh(&app, admin_creds(&app), narrow_refresh, &[]);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["scope"], "GET/users/*");
}

#[test]
fn refresh_token_of_another_client_is_invalid_grant() {
    let app = TestApp::spawn();
    let tokens = admin_tokens(&app);
    let (id, secret) = no_consent_client(&app, "other", flow::PASSWORD | flow::REFRESH_TOKEN);
    let r = refresh(
        &app,
        (&id, &secret),
        str_field(&tokens, "refresh_token"),
        &[],
    );
    assert_eq!(oauth_error(&r), "invalid_grant");
    // Another client cannot prove the token leaked: the family lives on.
    assert_eq!(me(&app, str_field(&tokens, "access_token")).status, 200);
    let r = refresh(
        &app,
        admin_creds(&app),
        str_field(&tokens, "refresh_token"),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.text);
}

#[test]
fn refresh_needs_the_refresh_flow() {
    let app = TestApp::spawn();
    let tokens = admin_tokens(&app);
    let (id, secret) = no_consent_client(&app, "password-only", flow::PASSWORD);
    let r = refresh(
        &app,
        (&id, &secret),
        str_field(&tokens, "refresh_token"),
        &[],
    );
    assert_eq!(oauth_error(&r), "unauthorized_client");
    // Nothing was rotated.
    assert_eq!(app.count("used_at IS NOT NULL", REFRESH_TOKENS), 0);
}

// ---------------------------------------------------------------------------------------------
// 5. JWT assertion grant
// ---------------------------------------------------------------------------------------------

#[test]
fn jwt_assertion_issues_access_token_without_refresh_token() {
    let app = TestApp::spawn();
    let client_id = jwt_client(&app);
    app.user("frank@example.com", Role::User);
    let r = jwt_grant(
        &app,
        &client_id,
        &sign_rs256(&claims(&app, &client_id, "frank@example.com")),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let body = r.json();
    assert!(body.get("refresh_token").is_none(), "{body}");
    assert_eq!(body["token_type"], "bearer");
    assert_eq!(body["scope"], "*");
    assert_eq!(
        me(&app, str_field(&body, "access_token")).json()["email"],
        "frank@example.com"
    );
    assert_eq!(app.count("1 = 1", "used_assertions"), 1);
    assert_eq!(app.count("1 = 1", REFRESH_TOKENS), 0);
}

#[test]
fn jwt_replayed_jti_is_invalid_grant() {
    let app = TestApp::spawn();
    let client_id = jwt_client(&app);
    app.user("frank@example.com", Role::User);
    let assertion = sign_rs256(&claims(&app, &client_id, "frank@example.com"));
    assert_eq!(jwt_grant(&app, &client_id, &assertion).status, 200);
    assert_eq!(
        oauth_error(&jwt_grant(&app, &client_id, &assertion)),
        "invalid_grant"
    );
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 1);
}

#[test]
fn jwt_reused_jti_with_another_exp_is_refused_like_a_replay() {
    let app = TestApp::spawn();
    let client_id = jwt_client(&app);
    app.user("frank@example.com", Role::User);
    let first = claims(&app, &client_id, "frank@example.com");
    assert_eq!(jwt_grant(&app, &client_id, &sign_rs256(&first)).status, 200);
    let replay = jwt_grant(&app, &client_id, &sign_rs256(&first));
    assert_eq!(oauth_error(&replay), "invalid_grant");
    // New assertions carrying the same jti, each a valid assertion on its own: a later and an
    // earlier exp, and a later iat with it.
    let exp = first["exp"].as_i64().unwrap();
    let iat = first["iat"].as_i64().unwrap();
    for (iat, exp) in [(iat, exp + 60), (iat, exp - 60), (iat + 1, exp + 1)] {
        let mut reused = first.clone();
        reused["iat"] = json!(iat);
        reused["exp"] = json!(exp);
        let r = jwt_grant(&app, &client_id, &sign_rs256(&reused));
        assert_eq!(oauth_error(&r), "invalid_grant", "exp {exp}");
        assert_eq!(r.json(), replay.json(), "the same answer as a plain replay");
    }
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 1);
    assert_eq!(app.count("1 = 1", "used_assertions"), 1);
}

#[test]
fn jwt_hs256_signed_with_the_public_key_is_refused() {
    let app = TestApp::spawn();
    let client_id = jwt_client(&app);
    app.user("frank@example.com", Role::User);
    let forged = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims(&app, &client_id, "frank@example.com"),
        &EncodingKey::from_secret(rsa_key().public_pem.as_bytes()),
    )
    .unwrap();
    assert_eq!(
        oauth_error(&jwt_grant(&app, &client_id, &forged)),
        "invalid_grant"
    );
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 0);
}

#[test]
fn jwt_assertion_with_bad_claims_is_invalid_grant() {
    let app = TestApp::spawn();
    let client_id = jwt_client(&app);
    app.user("frank@example.com", Role::User);
    app.user("inactive@example.com", Role::User);
    app.execute("UPDATE users SET active = FALSE WHERE email = 'inactive@example.com'");
    // A shared mailbox never signs in, whatever its `active` flag.
    let (mailbox, _) = app.user("team@example.com", Role::User);
    app.execute(&format!(
        "INSERT INTO shared_mailboxes (user_id, created_at, modified_at) VALUES ('{mailbox}', 1, 1)"
    ));
    let t = now();
    let good = || claims(&app, &client_id, "frank@example.com");
    let with = |name: &str, v: Value| {
        let mut c = good();
        c[name] = v;
        c
    };
    let cases = [
        (
            "wrong aud",
            with("aud", json!(format!("{}/oauth/authorize", app.base))),
        ),
        ("wrong iss", with("iss", json!("another-client"))),
        ("lives over 300 s", {
            let mut c = with("iat", json!(t));
            c["exp"] = json!(t + 301);
            c
        }),
        ("expired", {
            let mut c = with("iat", json!(t - 200));
            c["exp"] = json!(t - 10);
            c
        }),
        ("unknown sub", with("sub", json!("nobody@example.com"))),
        ("inactive sub", with("sub", json!("inactive@example.com"))),
        ("shared mailbox sub", with("sub", json!("team@example.com"))),
    ];
    for (what, c) in cases {
        let r = jwt_grant(&app, &client_id, &sign_rs256(&c));
        assert_eq!(oauth_error(&r), "invalid_grant", "{what}");
    }
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 0);
    // The audience is the token endpoint under the configured base URL.
    assert_eq!(
        jwt_grant(&app, &client_id, &sign_rs256(&good())).status,
        200
    );
}

#[test]
fn jwt_grant_with_a_wrong_posted_secret_is_invalid_client() {
    let app = TestApp::spawn();
    let client_id = jwt_client(&app);
    app.user("frank@example.com", Role::User);
    let assertion = sign_rs256(&claims(&app, &client_id, "frank@example.com"));
    let r = app.form(
        "/oauth/token",
        &[
            ("grant_type", JWT_GRANT),
            ("client_id", &client_id),
            ("client_secret", "wrong"),
            ("assertion", &assertion),
        ],
    );
    assert_eq!(oauth_error(&r), "invalid_client");
    assert_eq!(app.count("1 = 1", "used_assertions"), 0);
}

#[test]
fn jwt_grant_needs_the_jwt_flow() {
    let app = TestApp::spawn();
    let mut input = client_input("no-jwt", APP_URI, flow::AUTH_CODE);
    input.jwt_public_key = Some(rsa_key().public_pem.clone());
    let (id, _) = app.client(input);
    app.user("frank@example.com", Role::User);
    let r = jwt_grant(
        &app,
        &id,
        &sign_rs256(&claims(&app, &id, "frank@example.com")),
    );
    assert_eq!(oauth_error(&r), "unauthorized_client");
}

/// A signature is checked with a key kept from earlier grants only while that key is still
/// the client's registered one: a changed key or a withdrawn flow counts from the next request.
#[test]
fn jwt_key_and_flow_changes_count_at_once() {
    use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
    let app = TestApp::spawn();
    let client_id = jwt_client(&app);
    app.user("frank@example.com", Role::User);
    let old_key = || sign_rs256(&claims(&app, &client_id, "frank@example.com"));
    for _ in 0..2 {
        assert_eq!(jwt_grant(&app, &client_id, &old_key()).status, 200);
    }

    let other = rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).expect("RSA key");
    let other_public = other
        .to_public_key()
        .to_public_key_pem(LineEnding::LF)
        .unwrap();
    app.execute(&format!(
        "UPDATE clients SET jwt_public_key = '{other_public}' WHERE id = '{client_id}'"
    ));
    let r = jwt_grant(&app, &client_id, &old_key());
    assert_eq!(oauth_error(&r), "invalid_grant", "{}", r.text);
    assert!(r.text.contains("signature"), "{}", r.text);
    let other_private = other.to_pkcs8_pem(LineEnding::LF).unwrap();
    let new_key = || {
        let key = EncodingKey::from_rsa_pem(other_private.as_bytes()).unwrap();
        let claims = claims(&app, &client_id, "frank@example.com");
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &key).unwrap()
    };
    assert_eq!(jwt_grant(&app, &client_id, &new_key()).status, 200);

    app.execute(&format!(
        "UPDATE clients SET flow = {} WHERE id = '{client_id}'",
        flow::AUTH_CODE
    ));
    assert_eq!(
        oauth_error(&jwt_grant(&app, &client_id, &new_key())),
        "unauthorized_client"
    );
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 3);
}

// ---------------------------------------------------------------------------------------------
// 6. Signature flow
// ---------------------------------------------------------------------------------------------

#[test]
fn signature_code_issues_tokens_once() {
    let app = TestApp::spawn();
    let (id, secret) = signature_client(&app);
    app.user("gina@example.com", Role::User);
    let code =
        coffer_oauth::signature::make_code(&id, "gina@example.com", SIGNATURE_KEY, now(), 4242);
    let r = signature_grant(&app, (&id, &secret), &code);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let body = r.json();
    assert_eq!(body["token_type"], "bearer");
    assert_eq!(
        me(&app, str_field(&body, "access_token")).json()["email"],
        "gina@example.com"
    );
    assert_eq!(app.count("1 = 1", "used_signature_codes"), 1);

    let again = signature_grant(&app, (&id, &secret), &code);
    assert_eq!(oauth_error(&again), "invalid_grant");
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 1);
}

#[test]
fn signature_code_is_used_once_whatever_its_base64_spelling() {
    let app = TestApp::spawn();
    let (id, secret) = signature_client(&app);
    // An address whose standard base64 has `+`, `/` and `==` padding.
    let email = "ab~cd?e@example.com";
    app.user(email, Role::User);
    let code = coffer_oauth::signature::make_code(&id, email, SIGNATURE_KEY, now(), 4242);
    let parts: Vec<&str> = code.split("|@@|").collect();
    assert_eq!(parts[1], "YWJ+Y2Q/ZUBleGFtcGxlLmNvbQ==");
    let with_user = |user_b64: &str| {
        let mut p = parts.clone();
        p[1] = user_b64;
        p.join("|@@|")
    };
    let url_safe = parts[1].replace('+', "-").replace('/', "_");
    let spellings = [
        (
            "padding stripped",
            parts[1].trim_end_matches('=').to_string(),
        ),
        ("URL-safe alphabet", url_safe.clone()),
        (
            "URL-safe without padding",
            url_safe.trim_end_matches('=').to_string(),
        ),
        ("`+` sent as a space", parts[1].replace('+', " ")),
    ];
    let first = signature_grant(&app, (&id, &secret), &code);
    assert_eq!(first.status, 200, "{}", first.text);
    for (what, user_b64) in &spellings {
        let again = signature_grant(&app, (&id, &secret), &with_user(user_b64));
        assert_eq!(oauth_error(&again), "invalid_grant", "{what}");
        assert!(
            again.json()["error_description"]
                .as_str()
                .unwrap()
                .contains("used before"),
            "{what}: {}",
            again.text
        );
    }
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 1);
    assert_eq!(app.count("1 = 1", "used_signature_codes"), 1);
    assert_eq!(
        app.count("subject = 'user.login'", "events"),
        1,
        "one sign-in only"
    );

    // The other way round: a code first used in the URL-safe spelling without padding is
    // refused in the standard padded one.
    let code = coffer_oauth::signature::make_code(&id, email, SIGNATURE_KEY, now(), 4243);
    let mut p: Vec<&str> = code.split("|@@|").collect();
    let short = p[1].replace('+', "-").replace('/', "_");
    let short = short.trim_end_matches('=');
    p[1] = short;
    let r = signature_grant(&app, (&id, &secret), &p.join("|@@|"));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        oauth_error(&signature_grant(&app, (&id, &secret), &code)),
        "invalid_grant"
    );
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 2);
    assert_eq!(app.count("1 = 1", "used_signature_codes"), 2);
}

#[test]
fn signature_code_with_millisecond_timestamp_is_accepted() {
    let app = TestApp::spawn();
    let (id, secret) = signature_client(&app);
    app.user("gina@example.com", Role::User);
    let code = coffer_oauth::signature::make_code(
        &id,
        "gina@example.com",
        SIGNATURE_KEY,
        now() * 1000 + 123,
        17,
    );
    let r = signature_grant(&app, (&id, &secret), &code);
    assert_eq!(r.status, 200, "{}", r.text);
}

#[test]
fn signature_code_older_than_an_hour_is_invalid_grant() {
    let app = TestApp::spawn();
    let (id, secret) = signature_client(&app);
    app.user("gina@example.com", Role::User);
    let code = coffer_oauth::signature::make_code(
        &id,
        "gina@example.com",
        SIGNATURE_KEY,
        now() - 3600 - 60,
        17,
    );
    assert_eq!(
        oauth_error(&signature_grant(&app, (&id, &secret), &code)),
        "invalid_grant"
    );
}

#[test]
fn signature_code_nonce_out_of_range_is_invalid_request() {
    let app = TestApp::spawn();
    let (id, secret) = signature_client(&app);
    app.user("gina@example.com", Role::User);
    for nonce in [0, 1_000_000] {
        let code = coffer_oauth::signature::make_code(
            &id,
            "gina@example.com",
            SIGNATURE_KEY,
            now(),
            nonce,
        );
        let r = signature_grant(&app, (&id, &secret), &code);
        assert_eq!(oauth_error(&r), "invalid_request", "nonce {nonce}");
    }
}

#[test]
fn signature_code_with_uppercase_signature_is_refused() {
    let app = TestApp::spawn();
    let (id, secret) = signature_client(&app);
    app.user("gina@example.com", Role::User);
    let code = coffer_oauth::signature::make_code(&id, "gina@example.com", SIGNATURE_KEY, now(), 5);
    let (head, signature) = code.rsplit_once("|@@|").unwrap();
    let upper = format!("{head}|@@|{}", signature.to_uppercase());
    let r = signature_grant(&app, (&id, &secret), &upper);
    // Spec §5.4 defines the signature as lowercase hex: another spelling is malformed.
    assert_eq!(oauth_error(&r), "invalid_request");
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 0);
}

#[test]
fn signature_code_for_unknown_user_or_wrong_key_is_invalid_grant() {
    let app = TestApp::spawn();
    let (id, secret) = signature_client(&app);
    app.user("gina@example.com", Role::User);
    let unknown =
        coffer_oauth::signature::make_code(&id, "nobody@example.com", SIGNATURE_KEY, now(), 5);
    assert_eq!(
        oauth_error(&signature_grant(&app, (&id, &secret), &unknown)),
        "invalid_grant"
    );
    let wrong_key =
        coffer_oauth::signature::make_code(&id, "gina@example.com", "another-key-123", now(), 6);
    assert_eq!(
        oauth_error(&signature_grant(&app, (&id, &secret), &wrong_key)),
        "invalid_grant"
    );
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 0);
}

#[test]
fn signature_grant_checks_client_redirect_uri_and_scope() {
    let app = TestApp::spawn();
    let mut input = client_input("signature-limited", APP_URI, flow::SIGNATURE);
    input.signature_key = Some(SIGNATURE_KEY.into());
    input.scope = "GET/users/*".into();
    let (id, secret) = app.client(input);
    app.user("gina@example.com", Role::User);
    let code = |nonce| {
        coffer_oauth::signature::make_code(&id, "gina@example.com", SIGNATURE_KEY, now(), nonce)
    };
    let post = |pairs: &[(&str, &str)]| {
        let mut all = vec![("grant_type", "authorization_code")];
        all.extend_from_slice(pairs);
        app.form("/oauth/token", &all)
    };

    let c = code(1);
    let no_secret = post(&[("client_id", &id), ("redirect_uri", APP_URI), ("code", &c)]);
    assert_eq!(oauth_error(&no_secret), "invalid_client");
    let other_uri = post(&[
        ("client_id", &id),
        ("client_secret", &secret),
        ("redirect_uri", "https://evil.net/"),
        ("code", &c),
    ]);
    assert_eq!(oauth_error(&other_uri), "invalid_grant");
    let wide = post(&[
        ("client_id", &id),
        ("client_secret", &secret),
        ("redirect_uri", APP_URI),
        ("scope", "folders/*"),
        ("code", &c),
    ]);
    assert_eq!(oauth_error(&wide), "invalid_scope");
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 0);

    let ok = post(&[
        ("client_id", &id),
        ("client_secret", &secret),
        ("redirect_uri", APP_URI),
        ("scope", "GET/users/*"),
        ("code", &c),
    ]);
    assert_eq!(ok.status, 200, "{}", ok.text);
    assert_eq!(ok.json()["scope"], "GET/users/*");
}

// ---------------------------------------------------------------------------------------------
// 6b. Impersonation flows: who sets them up, who they act for
// ---------------------------------------------------------------------------------------------

/// A second RSA key: the one an application administrator would register for themself.
fn other_rsa_key() -> &'static TestKey {
    static KEY: OnceLock<TestKey> = OnceLock::new();
    KEY.get_or_init(new_test_key)
}

fn sign_rs256_with(key: &TestKey, claims: &Value) -> String {
    let key = EncodingKey::from_rsa_pem(key.private_pem.as_bytes()).expect("private PEM");
    jsonwebtoken::encode(&Header::new(Algorithm::RS256), claims, &key).expect("sign")
}

/// A `POST /rest/clients` body; `extra` adds or overrides fields.
fn rest_client_body(name: &str, extra: Value) -> Value {
    let mut body = json!({
        "name": name,
        "description": format!("{name} description"),
        "redirectUri": APP_URI,
        "scope": "*",
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

fn assert_not_system_admin(r: &Resp) {
    assert_eq!(r.status, 403, "{}", r.text);
    let body = r.json();
    assert_eq!(
        body["errors"][0]["code"], "ERR_ACCESS_SYSTEM_ADMIN",
        "{}",
        r.text
    );
}

/// One stored client column, as text (`-` for NULL).
fn client_column(app: &TestApp, id: &str, column: &str) -> String {
    #[derive(diesel::QueryableByName)]
    struct V {
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
        v: Option<String>,
    }
    let sql = format!("SELECT CAST({column} AS TEXT) AS v FROM clients WHERE id = '{id}'");
    app.ctx
        .with_conn(|c| {
            let q = diesel::sql_query(&sql);
            let v: V = coffer_store::db_run!(c => diesel::RunQueryDsl::get_result(q, c))
                .map_err(coffer_service::Error::internal)?;
            Ok(v.v.unwrap_or_else(|| "-".into()))
        })
        .expect("client column")
}

#[test]
fn application_admin_cannot_register_or_give_impersonation_flows() {
    let app = TestApp::spawn();
    let (_, appadmin) = app.user_token("apps@example.com", Role::ApplicationAdmin);
    app.user("gina@example.com", Role::User);
    let admin_email = app.admin.admin_email.clone();
    let attacker_pem = other_rsa_key().public_pem.clone();
    let attacker_key = "attacker-key-0123456789";
    let clients_before = app.count("1 = 1", "clients");
    let creates_before = app.count("subject = 'oauth.client.create'", "events");

    // POST /rest/clients: a key or an impersonation flow, alone or together.
    let sig = flow::SIGNATURE;
    let jwt = flow::JWT_BEARER;
    for extra in [
        json!({"signatureKey": attacker_key}),
        json!({"jwtPublicKey": attacker_pem}),
        json!({"flow": flow::AUTH_CODE | sig}),
        json!({"flow": flow::AUTH_CODE | jwt}),
        json!({"signatureKey": attacker_key, "flow": flow::AUTH_CODE}),
        json!({"jwtPublicKey": attacker_pem, "flow": flow::AUTH_CODE}),
    ] {
        let body = rest_client_body("Impersonator", extra.clone());
        let r = app.rest("POST", "/rest/clients", &appadmin, Some(body));
        assert_not_system_admin(&r);
        assert!(!r.text.contains(attacker_key), "{}", r.text);
    }
    assert_eq!(app.count("1 = 1", "clients"), clients_before);
    assert_eq!(app.count("name = 'Impersonator'", "clients"), 0);
    assert_eq!(
        app.count("subject = 'oauth.client.create'", "events"),
        creates_before
    );

    // PUT /rest/clients/{id} on clients a system administrator set up: a plain one, a
    // signature one and a JWT one. Nothing changes.
    let (plain, _) = app.client(client_input("plain", APP_URI, flow::AUTH_CODE));
    let (sig_id, sig_secret) = signature_client(&app);
    let jwt_id = jwt_client(&app);
    let updates_before = app.count("subject = 'oauth.client.update'", "events");
    for (id, extra) in [
        (&plain, json!({"signatureKey": attacker_key})),
        (&plain, json!({"jwtPublicKey": attacker_pem})),
        (&plain, json!({"flow": flow::AUTH_CODE | sig})),
        (&plain, json!({"flow": flow::AUTH_CODE | jwt})),
        (&sig_id, json!({"signatureKey": attacker_key})),
        (&sig_id, json!({"signatureKey": attacker_key, "flow": sig})),
        (&jwt_id, json!({"jwtPublicKey": attacker_pem})),
        // A JWT client given the signature flow as well.
        (&jwt_id, json!({"flow": jwt | flow::REFRESH_TOKEN | sig})),
    ] {
        let body = rest_client_body("renamed", extra.clone());
        let r = app.rest("PUT", &format!("/rest/clients/{id}"), &appadmin, Some(body));
        assert_not_system_admin(&r);
    }
    assert_eq!(
        app.count("subject = 'oauth.client.update'", "events"),
        updates_before
    );
    assert_eq!(app.count("name = 'renamed'", "clients"), 0);
    assert_eq!(client_column(&app, &plain, "signature_key"), "-");
    assert_eq!(client_column(&app, &plain, "jwt_public_key"), "-");
    assert_eq!(
        client_column(&app, &plain, "flow"),
        flow::AUTH_CODE.to_string()
    );
    assert_eq!(client_column(&app, &sig_id, "signature_key"), SIGNATURE_KEY);
    assert_eq!(
        client_column(&app, &jwt_id, "jwt_public_key"),
        rsa_key().public_pem
    );

    // The escalation path: codes and assertions signed with the keys the application
    // administrator tried to register act for nobody.
    let t = now();
    for (who, nonce) in [(admin_email.as_str(), 1), ("gina@example.com", 2)] {
        let forged = coffer_oauth::signature::make_code(&sig_id, who, attacker_key, t, nonce);
        let r = signature_grant(&app, (&sig_id, &sig_secret), &forged);
        assert_eq!(oauth_error(&r), "invalid_grant", "{who}");
        let forged = sign_rs256_with(other_rsa_key(), &claims(&app, &jwt_id, who));
        assert_eq!(
            oauth_error(&jwt_grant(&app, &jwt_id, &forged)),
            "invalid_grant"
        );
        let forged = sign_rs256_with(other_rsa_key(), &claims(&app, &plain, who));
        assert_eq!(
            oauth_error(&jwt_grant(&app, &plain, &forged)),
            "unauthorized_client"
        );
    }
    assert_eq!(app.count("1 = 1", "used_signature_codes"), 0);
    assert_eq!(app.count("1 = 1", "used_assertions"), 0);
    let impersonated = format!("token_families.client_id IN ('{plain}', '{sig_id}', '{jwt_id}')");
    assert_eq!(app.count(&impersonated, ACCESS_TOKENS), 0);

    // What an application administrator may still do with such a client: change its other
    // fields (sending the JWT key back unchanged), or take the impersonation flows away.
    let r = app.rest(
        "PUT",
        &format!("/rest/clients/{jwt_id}"),
        &appadmin,
        Some(rest_client_body(
            "jwt-app renamed",
            json!({"jwtPublicKey": rsa_key().public_pem}),
        )),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["flow"], flow::JWT_BEARER | flow::REFRESH_TOKEN);
    let r = app.rest(
        "PUT",
        &format!("/rest/clients/{sig_id}"),
        &appadmin,
        Some(rest_client_body(
            "signature-app renamed",
            json!({"flow": flow::AUTH_CODE}),
        )),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["flow"], flow::AUTH_CODE);
    let code = coffer_oauth::signature::make_code(&sig_id, "gina@example.com", SIGNATURE_KEY, t, 3);
    assert_eq!(
        oauth_error(&signature_grant(&app, (&sig_id, &sig_secret), &code)),
        "unauthorized_client"
    );
    // The renamed JWT client still works for a plain user, with the key it had.
    let ok = jwt_grant(
        &app,
        &jwt_id,
        &sign_rs256(&claims(&app, &jwt_id, "gina@example.com")),
    );
    assert_eq!(ok.status, 200, "{}", ok.text);
}

#[test]
fn system_admin_sets_up_impersonation_clients_over_rest() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    app.user("gina@example.com", Role::User);
    app.user("apps@example.com", Role::ApplicationAdmin);

    // The signature flow, registered with a key.
    let r = app.rest(
        "POST",
        "/rest/clients",
        &admin,
        Some(rest_client_body(
            "signed",
            json!({"signatureKey": SIGNATURE_KEY}),
        )),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    let sig_id = str_field(&body, "id").to_string();
    let sig_secret = str_field(&body, "client_secret").to_string();
    assert_eq!(
        body["flow"],
        flow::AUTH_CODE | flow::REFRESH_TOKEN | flow::SIGNATURE
    );
    // The record read back shows the key masked; sending it back unchanged keeps the key.
    let record = app.rest("GET", &format!("/rest/clients/{sig_id}"), &admin, None);
    assert_eq!(record.json()["signature_key"], "********");
    let r = app.rest(
        "PUT",
        &format!("/rest/clients/{sig_id}"),
        &admin,
        Some(rest_client_body(
            "signed",
            json!({"signatureKey": "********"}),
        )),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    // It acts for users, application administrators among them.
    for (who, nonce) in [("gina@example.com", 1), ("apps@example.com", 2)] {
        let code = coffer_oauth::signature::make_code(&sig_id, who, SIGNATURE_KEY, now(), nonce);
        let r = signature_grant(&app, (&sig_id, &sig_secret), &code);
        assert_eq!(r.status, 200, "{who}: {}", r.text);
        assert_eq!(
            me(&app, str_field(&r.json(), "access_token")).json()["email"],
            who
        );
    }

    // The JWT flow, registered on a plain client by a later update.
    let r = app.rest(
        "POST",
        "/rest/clients",
        &admin,
        Some(rest_client_body("asserted", json!({}))),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let jwt_id = str_field(&r.json(), "id").to_string();
    let r = app.rest(
        "PUT",
        &format!("/rest/clients/{jwt_id}"),
        &admin,
        Some(rest_client_body(
            "asserted",
            json!({"jwtPublicKey": rsa_key().public_pem}),
        )),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json()["flow"],
        flow::AUTH_CODE | flow::REFRESH_TOKEN | flow::JWT_BEARER
    );
    let ok = jwt_grant(
        &app,
        &jwt_id,
        &sign_rs256(&claims(&app, &jwt_id, "gina@example.com")),
    );
    assert_eq!(ok.status, 200, "{}", ok.text);

    // A new signature key replaces the old one.
    let r = app.rest(
        "PUT",
        &format!("/rest/clients/{sig_id}"),
        &admin,
        Some(rest_client_body(
            "signed",
            json!({"signatureKey": "rotated-key-0123456789"}),
        )),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let old =
        coffer_oauth::signature::make_code(&sig_id, "gina@example.com", SIGNATURE_KEY, now(), 3);
    assert_eq!(
        oauth_error(&signature_grant(&app, (&sig_id, &sig_secret), &old)),
        "invalid_grant"
    );
    let new = coffer_oauth::signature::make_code(
        &sig_id,
        "gina@example.com",
        "rotated-key-0123456789",
        now(),
        4,
    );
    let r = signature_grant(&app, (&sig_id, &sig_secret), &new);
    assert_eq!(r.status, 200, "{}", r.text);
}

#[test]
fn impersonation_flows_never_act_for_a_system_administrator() {
    let app = TestApp::spawn();
    // Clients a system administrator (here the operator) set up.
    let (sig_id, sig_secret) = signature_client(&app);
    let jwt_id = jwt_client(&app);
    let admin_email = app.admin.admin_email.clone();
    let (second_admin, _) = app.user("root2@example.com", Role::SystemAdmin);
    app.user("apps@example.com", Role::ApplicationAdmin);
    app.user("help@example.com", Role::HelpdeskAdmin);
    app.user("gina@example.com", Role::User);
    let logins_before = app.count("subject = 'user.login'", "events");

    for (i, who) in [
        admin_email.as_str(),
        "root2@example.com",
        "ROOT2@example.com",
    ]
    .into_iter()
    .enumerate()
    {
        let code =
            coffer_oauth::signature::make_code(&sig_id, who, SIGNATURE_KEY, now(), 10 + i as u32);
        let r = signature_grant(&app, (&sig_id, &sig_secret), &code);
        assert_eq!(oauth_error(&r), "invalid_grant", "{who}");
        assert!(
            r.json()["error_description"]
                .as_str()
                .unwrap()
                .contains("system administrator"),
            "{}",
            r.text
        );
        let r = jwt_grant(&app, &jwt_id, &sign_rs256(&claims(&app, &jwt_id, who)));
        assert_eq!(oauth_error(&r), "invalid_grant", "{who}");
    }
    // Nothing is stored: no token, no sign-in, no used code or assertion.
    let impersonated = format!("token_families.client_id IN ('{sig_id}', '{jwt_id}')");
    assert_eq!(app.count(&impersonated, ACCESS_TOKENS), 0);
    assert_eq!(app.count("subject = 'user.login'", "events"), logins_before);
    assert_eq!(app.count("1 = 1", "used_signature_codes"), 0);
    assert_eq!(app.count("1 = 1", "used_assertions"), 0);
    assert_eq!(
        app.count(
            &format!("token_families.user_id = '{second_admin}'"),
            ACCESS_TOKENS
        ),
        0
    );

    // Other users, administrators of other kinds included, are still served.
    for (i, who) in ["apps@example.com", "help@example.com", "gina@example.com"]
        .into_iter()
        .enumerate()
    {
        let code =
            coffer_oauth::signature::make_code(&sig_id, who, SIGNATURE_KEY, now(), 20 + i as u32);
        let r = signature_grant(&app, (&sig_id, &sig_secret), &code);
        assert_eq!(r.status, 200, "{who}: {}", r.text);
        let r = jwt_grant(&app, &jwt_id, &sign_rs256(&claims(&app, &jwt_id, who)));
        assert_eq!(r.status, 200, "{who}: {}", r.text);
    }
    assert_eq!(app.count(&impersonated, ACCESS_TOKENS), 6);
}

// ---------------------------------------------------------------------------------------------
// 7. Password grant
// ---------------------------------------------------------------------------------------------

#[test]
fn password_grant_needs_the_password_flow() {
    let app = TestApp::spawn();
    let (id, secret) = no_consent_client(&app, "code-only", flow::AUTH_CODE | flow::REFRESH_TOKEN);
    let r = password_grant(
        &app,
        (&id, &secret),
        &app.admin.admin_email,
        &app.admin.admin_password,
    );
    assert_eq!(oauth_error(&r), "unauthorized_client");
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 0);
}

#[test]
fn password_grant_with_wrong_password_is_invalid_grant() {
    let app = TestApp::spawn();
    let r = password_grant(
        &app,
        admin_creds(&app),
        &app.admin.admin_email,
        "wrong-password",
    );
    assert_eq!(oauth_error(&r), "invalid_grant");
    let r = password_grant(
        &app,
        admin_creds(&app),
        "nobody@example.com",
        "wrong-password",
    );
    assert_eq!(oauth_error(&r), "invalid_grant");
    assert_eq!(app.count("1 = 1", ACCESS_TOKENS), 0);
}

/// The password grant cannot take a second step or a password change, so it must not stand in
/// for the sign-in page that does: a user with TOTP or SMS two-factor sign-in on, or whose
/// password change is due, gets `invalid_grant` saying why, and nothing is issued or stored.
#[test]
fn password_grant_refuses_users_who_owe_a_sign_in_step() {
    let app = TestApp::spawn();
    let (totp, totp_pw) = app.user("totp@example.com", Role::User);
    app.execute(&format!(
        "UPDATE users SET totp_secret = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP', totp_enabled = TRUE \
         WHERE id = '{totp}'"
    ));
    let (sms, sms_pw) = app.user("sms@example.com", Role::User);
    app.execute(&format!(
        "UPDATE users SET mobile_number = '+41791234567', mobile_verified = TRUE WHERE id = '{sms}';
         INSERT INTO sms_two_factor (user_id, enabled_at) VALUES ('{sms}', 1)"
    ));
    let (due, due_pw) = app.user("due@example.com", Role::User);
    app.execute(&format!(
        "UPDATE users SET force_password_change = TRUE WHERE id = '{due}'"
    ));
    let events_before = app.count("1 = 1", "events");
    for (id, email, pw, says) in [
        (
            &totp,
            "totp@example.com",
            &totp_pw,
            "Two-factor sign-in is on",
        ),
        (&sms, "sms@example.com", &sms_pw, "Two-factor sign-in is on"),
        (&due, "due@example.com", &due_pw, "must change the password"),
    ] {
        let r = app.form(
            "/oauth/token",
            &[
                ("grant_type", "password"),
                ("username", email),
                ("password", pw),
                ("client_id", &app.admin.client_id),
                ("client_secret", &app.admin.client_secret),
                ("install_tag_id", "tag-1"),
            ],
        );
        assert_eq!(oauth_error(&r), "invalid_grant", "{email}");
        let description = r.json()["error_description"].as_str().unwrap().to_string();
        assert!(
            description.contains(says) && description.contains("authorization page"),
            "{email}: {description}"
        );
        assert!(r.json().get("access_token").is_none());
        let mine = format!("user_id = '{id}'");
        assert_eq!(app.count(&mine, "token_families"), 0, "{email}");
        assert_eq!(app.count(&mine, ACCESS_TOKENS), 0, "{email}");
        assert_eq!(app.count(&mine, REFRESH_TOKENS), 0, "{email}");
        assert_eq!(app.count(&mine, "devices"), 0, "{email}");

        // A wrong password is refused as for anyone: the reason is given only to the owner.
        let r = password_grant(&app, admin_creds(&app), email, "Wrong-Passw0rd");
        assert_eq!(oauth_error(&r), "invalid_grant");
        assert_eq!(
            r.json()["error_description"],
            "The user credentials are not valid."
        );
    }
    assert_eq!(
        app.count("1 = 1", "events"),
        events_before,
        "no sign-in was recorded"
    );

    // With the step no longer owed, the same grant issues tokens.
    app.execute(&format!(
        "UPDATE users SET force_password_change = FALSE WHERE id = '{due}'"
    ));
    assert_eq!(
        app.password_token("due@example.com", &due_pw)["token_type"],
        "bearer"
    );
}

// ---------------------------------------------------------------------------------------------
// 8. Devices registered at token time
// ---------------------------------------------------------------------------------------------

#[test]
fn install_tag_registers_one_device_per_user_and_client() {
    let app = TestApp::spawn();
    let code = admin_code(&app);
    let device = [("install_tag_id", "tag-1"), ("install_name", "Work phone")];
    let r = admin_exchange(&app, &code, &device);
    assert_eq!(r.status, 200, "{}", r.text);
    let access = r.json()["access_token"].as_str().unwrap().to_string();
    let owner = format!(
        "install_tag_id = 'tag-1' AND install_name = 'Work phone' AND client_id = '{}' \
         AND user_id = (SELECT id FROM users WHERE email = '{}')",
        app.admin.client_id, app.admin.admin_email
    );
    assert_eq!(app.count(&owner, "devices"), 1);
    assert_eq!(
        stored(&app, ACCESS_TOKENS, &access, "device_id IS NOT NULL"),
        1
    );

    // Signing in again from the same installation reuses the device.
    let mut pairs = vec![
        ("grant_type", "password"),
        ("username", app.admin.admin_email.as_str()),
        ("password", app.admin.admin_password.as_str()),
        ("client_id", app.admin.client_id.as_str()),
        ("client_secret", app.admin.client_secret.as_str()),
    ];
    pairs.extend_from_slice(&device);
    let again = app.form("/oauth/token", &pairs);
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(app.count("1 = 1", "devices"), 1);
    assert_eq!(app.count("device_id IS NOT NULL", ACCESS_TOKENS), 2);

    let wipe = app.rest("PATCH", "/rest/devices/me/actions/wipe", &access, None);
    assert_eq!(wipe.status, 200, "{}", wipe.text);
}

#[test]
fn wipe_complete_without_a_device_is_not_found() {
    let app = TestApp::spawn();
    let token = app.admin_token();
    let r = app.rest("PATCH", "/rest/devices/me/actions/wipe", &token, None);
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(r.code(), "ERR_ENTITY_NOT_FOUND");
    assert_eq!(app.count("1 = 1", "devices"), 0);
}

// ---------------------------------------------------------------------------------------------
// 9. Bearer authentication of /rest
// ---------------------------------------------------------------------------------------------

#[test]
fn rest_without_a_known_bearer_token_is_unauthorized() {
    let app = TestApp::spawn();
    let missing = app.send("GET", "/rest/users/me", &[("X-Coffer-Version", "28")], None);
    assert_unauthorized(&missing);
    assert_unauthorized(&me(&app, "not-a-token"));
    let code = admin_code(&app);
    // An authorization code is not an access token.
    assert_unauthorized(&me(&app, &code));
}

#[test]
fn revoked_access_token_is_unauthorized() {
    let app = TestApp::spawn();
    let token = app.admin_token();
    assert_eq!(me(&app, &token).status, 200);
    let (id, secret) = admin_creds(&app);
    let r = app.form(
        "/oauth/revoke",
        &[
            ("token", &token),
            ("client_id", id),
            ("client_secret", secret),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_unauthorized(&me(&app, &token));
    assert_eq!(stored(&app, ACCESS_TOKENS, &token, "revoked = TRUE"), 1);
}

#[test]
fn expired_access_token_is_unauthorized() {
    let app = TestApp::spawn();
    let token = app.admin_token();
    assert_eq!(me(&app, &token).status, 200);
    app.execute(&format!(
        "UPDATE access_tokens SET expires_at = {} WHERE token_hash = '{}'",
        now() - 1,
        hash_token(&token)
    ));
    assert_unauthorized(&me(&app, &token));
}

#[test]
fn housekeeping_purges_expired_and_orphaned_tokens_and_empty_families() {
    let app = TestApp::spawn();
    let kept = app.admin_token();
    let expired = app.admin_token();
    // A client whose deletion takes its families with it; its tokens are left orphaned.
    let (id, secret) = no_consent_client(&app, "short-lived", flow::PASSWORD);
    let (_, pw) = app.user("gone@example.com", Role::User);
    let r = app.form(
        "/oauth/token",
        &[
            ("grant_type", "password"),
            ("username", "gone@example.com"),
            ("password", &pw),
            ("client_id", &id),
            ("client_secret", &secret),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let orphan = str_field(&r.json(), "access_token").to_string();
    app.execute(&format!("DELETE FROM clients WHERE id = '{id}'"));
    // Everything of one family expires.
    let family_id = app
        .ctx
        .with_conn(|c| {
            Ok(coffer_store::tokens::access_by_hash(
                c,
                &hash_token(&expired),
            )?)
        })
        .unwrap()
        .unwrap()
        .family_id;
    let family = format!("family_id = '{family_id}'");
    for table in ["access_tokens", "refresh_tokens"] {
        app.execute(&format!(
            "UPDATE {table} SET expires_at = {} WHERE {family}",
            now() - 10
        ));
    }
    let expired_refresh = app.count(&family, "refresh_tokens");
    let families = app.count("1 = 1", "token_families");
    let tokens = app.count("1 = 1", "access_tokens");

    let purged = app
        .ctx
        .write(|c| Ok(coffer_store::tokens::purge_expired(c, now())?))
        .unwrap();

    assert_eq!(
        purged as i64,
        2 + expired_refresh,
        "the expired family and the orphan"
    );
    assert_eq!(app.count(&family, "refresh_tokens"), 0);
    assert_eq!(app.count("1 = 1", "access_tokens"), tokens - 2);
    assert_eq!(stored(&app, "access_tokens", &expired, "1 = 1"), 0);
    assert_eq!(stored(&app, "access_tokens", &orphan, "1 = 1"), 0);
    // The expired token's family had nothing else left; the deleted client's went with it.
    assert_eq!(app.count("1 = 1", "token_families"), families - 1);
    assert_eq!(me(&app, &kept).status, 200);
}

#[test]
fn token_scope_limits_rest_calls() {
    let app = TestApp::spawn();
    let mut input = client_input("users-reader", APP_URI, flow::PASSWORD);
    input.scope = "GET/users/*".into();
    let (id, secret) = app.client(input);
    let r = password_grant(
        &app,
        (&id, &secret),
        &app.admin.admin_email,
        &app.admin.admin_password,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert_eq!(body["scope"], "GET/users/*");
    let token = str_field(&body, "access_token");

    assert_eq!(me(&app, token).status, 200);
    let outside = app.rest("GET", "/rest/locations", token, None);
    assert_eq!(outside.status, 403, "{}", outside.text);
    assert_eq!(outside.code(), "ERR_ACCESS_USER");
    // RFC 6750 §3.1: the challenge says the scope is short, not that the token is bad.
    let challenge = outside.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer ") && challenge.contains("error=\"insufficient_scope\""),
        "WWW-Authenticate: {challenge}"
    );
}

#[test]
fn a_refused_bearer_token_is_answered_with_invalid_token() {
    let app = TestApp::spawn();
    let challenge = |r: &Resp| r.header("www-authenticate").unwrap_or_default().to_string();
    let invalid = |r: &Resp, what: &str| {
        assert_unauthorized(r);
        let c = challenge(r);
        assert!(
            c.contains("error=\"invalid_token\"") && c.contains("error_description=\""),
            "{what}: WWW-Authenticate: {c}"
        );
    };

    // No token at all: the bare challenge, without an error code.
    let r = app.send("GET", "/rest/users/me", &[("X-Coffer-Version", "28")], None);
    assert_unauthorized(&r);
    assert_eq!(challenge(&r), "Bearer realm=\"coffer\"");

    invalid(&me(&app, "not-a-token"), "malformed");
    // The token is answered before the body: no 422 to a caller with no right to send one.
    let r = app.rest(
        "POST",
        "/rest/locations",
        "not-a-token",
        Some(json!({"unknownField": 1})),
    );
    invalid(&r, "with a bad body");

    let revoked = app.admin_token();
    assert_eq!(me(&app, &revoked).status, 200);
    app.execute("UPDATE token_families SET revoked = TRUE");
    invalid(&me(&app, &revoked), "revoked");

    let expired = app.admin_token();
    assert_eq!(me(&app, &expired).status, 200);
    app.execute("UPDATE access_tokens SET expires_at = 1");
    invalid(&me(&app, &expired), "expired");

    // The webhook area says the same in its own envelope.
    let r = app.send(
        "GET",
        "/webhooks",
        &[("Authorization", "Bearer not-a-token")],
        None,
    );
    assert_eq!(r.status, 401, "{}", r.text);
    assert!(
        challenge(&r).contains("error=\"invalid_token\""),
        "{}",
        challenge(&r)
    );
}

#[test]
fn disabled_client_loses_access() {
    let app = TestApp::spawn();
    let flows = flow::AUTH_CODE | flow::PASSWORD | flow::REFRESH_TOKEN;
    let (id, secret) = no_consent_client(&app, "soon-disabled", flows);
    let (e, p) = (&app.admin.admin_email, &app.admin.admin_password);
    let tokens = password_grant(&app, (&id, &secret), e, p).json();
    let access = str_field(&tokens, "access_token");
    assert_eq!(me(&app, access).status, 200);

    app.execute(&format!("UPDATE clients SET flag = 2 WHERE id = '{id}'"));
    assert_unauthorized(&me(&app, access));
    let r = refresh(
        &app,
        (&id, &secret),
        str_field(&tokens, "refresh_token"),
        &[],
    );
    assert_eq!(oauth_error(&r), "invalid_client");
    assert_eq!(
        oauth_error(&password_grant(&app, (&id, &secret), e, p)),
        "invalid_client"
    );
    let r = app.send(
        "GET",
        &authorize_path(&[
            ("client_id", id.as_str()),
            ("redirect_uri", APP_URI),
            ("response_type", "code"),
            ("state", "s"),
        ]),
        &[],
        None,
    );
    let (_, q) = redirected(&r);
    assert_eq!(q["error"], "unauthorized_client");
    assert_eq!(q["state"], "s");
}

#[test]
fn deactivated_user_loses_access() {
    let app = TestApp::spawn();
    let (_, pw) = app.user("ivy@example.com", Role::User);
    let tokens = password_grant(&app, admin_creds(&app), "ivy@example.com", &pw).json();
    let access = str_field(&tokens, "access_token");
    assert_eq!(me(&app, access).status, 200);

    app.execute("UPDATE users SET active = FALSE WHERE email = 'ivy@example.com'");
    assert_unauthorized(&me(&app, access));
    let r = refresh(
        &app,
        admin_creds(&app),
        str_field(&tokens, "refresh_token"),
        &[],
    );
    assert_eq!(oauth_error(&r), "invalid_grant");
    let (id, secret) = admin_creds(&app);
    let r = app.form(
        "/oauth/introspect",
        &[
            ("token", access),
            ("client_id", id),
            ("client_secret", secret),
        ],
    );
    assert_eq!(r.json(), json!({"active": false}));
}

// ---------------------------------------------------------------------------------------------
// 10. Metadata, revocation, introspection
// ---------------------------------------------------------------------------------------------

#[test]
fn authorization_server_metadata() {
    let app = TestApp::spawn();
    let r = app.send("GET", "/.well-known/oauth-authorization-server", &[], None);
    assert_eq!(r.status, 200, "{}", r.text);
    let m = r.json();
    assert_eq!(m["issuer"], app.base.as_str());
    assert_eq!(
        m["authorization_endpoint"],
        format!("{}/oauth/authorize", app.base)
    );
    assert_eq!(m["token_endpoint"], format!("{}/oauth/token", app.base));
    assert_eq!(
        m["revocation_endpoint"],
        format!("{}/oauth/revoke", app.base)
    );
    assert_eq!(
        m["introspection_endpoint"],
        format!("{}/oauth/introspect", app.base)
    );
    assert_eq!(m["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(m["response_types_supported"], json!(["code"]));
    let grants = m["grant_types_supported"].as_array().unwrap();
    assert!(grants.contains(&json!("authorization_code")));
    assert!(grants.contains(&json!(JWT_GRANT)));
}

#[test]
fn revoke_needs_client_authentication_and_accepts_unknown_tokens() {
    let app = TestApp::spawn();
    let token = app.admin_token();
    let (id, secret) = admin_creds(&app);

    let anonymous = app.form("/oauth/revoke", &[("token", &token)]);
    assert_eq!(oauth_error(&anonymous), "invalid_client");
    let wrong = app.form(
        "/oauth/revoke",
        &[
            ("token", &token),
            ("client_id", id),
            ("client_secret", "nope"),
        ],
    );
    assert_eq!(oauth_error(&wrong), "invalid_client");
    assert_eq!(me(&app, &token).status, 200);

    let unknown = app.form(
        "/oauth/revoke",
        &[
            ("token", "never-issued"),
            ("client_id", id),
            ("client_secret", secret),
        ],
    );
    assert_eq!(unknown.status, 200, "{}", unknown.text);

    // Another client cannot revoke the built-in client's token.
    let (other, other_secret) = no_consent_client(&app, "other", flow::PASSWORD);
    let foreign = app.form(
        "/oauth/revoke",
        &[
            ("token", &token),
            ("client_id", &other),
            ("client_secret", &other_secret),
        ],
    );
    assert_eq!(foreign.status, 200, "{}", foreign.text);
    assert_eq!(me(&app, &token).status, 200);
}

#[test]
fn revoking_a_refresh_token_revokes_its_family() {
    let app = TestApp::spawn();
    let first = admin_tokens(&app);
    let next = refresh(
        &app,
        admin_creds(&app),
        str_field(&first, "refresh_token"),
        &[],
    )
    .json();
    let other = admin_tokens(&app);
    let (id, secret) = admin_creds(&app);

    let r = post_form(
        &app,
        "/oauth/revoke",
        &[("Authorization", &basic(id, secret))],
        &[
            ("token", str_field(&next, "refresh_token")),
            ("token_type_hint", "refresh_token"),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text);

    assert_unauthorized(&me(&app, str_field(&first, "access_token")));
    assert_unauthorized(&me(&app, str_field(&next, "access_token")));
    let r = refresh(
        &app,
        admin_creds(&app),
        str_field(&next, "refresh_token"),
        &[],
    );
    assert_eq!(oauth_error(&r), "invalid_grant");
    // Another sign-in of the same user is another family, untouched.
    assert_eq!(me(&app, str_field(&other, "access_token")).status, 200);
    assert_eq!(app.count("revoked = FALSE", ACCESS_TOKENS), 1);
}

#[test]
fn introspection_describes_live_tokens_of_the_calling_client_only() {
    let app = TestApp::spawn();
    let (id, secret) = admin_creds(&app);
    let introspect = |client: (&str, &str), token: &str| {
        let r = app.form(
            "/oauth/introspect",
            &[
                ("token", token),
                ("client_id", client.0),
                ("client_secret", client.1),
            ],
        );
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.header("cache-control"), Some("no-store"));
        r.json()
    };

    let tokens = admin_tokens(&app);
    let access = str_field(&tokens, "access_token");
    let live = introspect((id, secret), access);
    assert_eq!(live["active"], true);
    assert_eq!(live["scope"], "*");
    assert_eq!(live["client_id"], id);
    assert_eq!(live["username"], app.admin.admin_email.as_str());
    assert_eq!(live["token_type"], "access_token");
    let refresh_info = introspect((id, secret), str_field(&tokens, "refresh_token"));
    assert_eq!(refresh_info["active"], true);
    assert_eq!(refresh_info["token_type"], "refresh_token");

    let (other, other_secret) = no_consent_client(&app, "other", flow::PASSWORD);
    assert_eq!(
        introspect((&other, &other_secret), access),
        json!({"active": false})
    );
    assert_eq!(
        introspect((id, secret), "never-issued"),
        json!({"active": false})
    );

    let r = app.form(
        "/oauth/revoke",
        &[
            ("token", access),
            ("client_id", id),
            ("client_secret", secret),
        ],
    );
    assert_eq!(r.status, 200);
    assert_eq!(introspect((id, secret), access), json!({"active": false}));

    let anonymous = app.form("/oauth/introspect", &[("token", access)]);
    assert_eq!(oauth_error(&anonymous), "invalid_client");
}

// ---------------------------------------------------------------------------------------------
// 11. Callback landing page, 12. events
// ---------------------------------------------------------------------------------------------

#[test]
fn callback_page_shows_code_and_state_escaped() {
    let app = TestApp::spawn();
    let r = app.send(
        "GET",
        "/oauth_callback.php?code=abc%3Cb%3E&state=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
        &[],
        None,
    );
    assert_page(&r, 200);
    assert!(
        r.text.contains("<code id=\"code\">abc&lt;b&gt;</code>"),
        "{}",
        r.text
    );
    assert!(
        r.text
            .contains("<code id=\"state\">&lt;script&gt;alert(1)&lt;/script&gt;</code>"),
        "{}",
        r.text
    );
    assert!(!r.text.contains("<script>"));
}

#[test]
fn sign_ins_record_user_login_events() {
    let app = TestApp::spawn();
    assert_eq!(app.count("subject = 'user.login'", "events"), 0);
    app.admin_token();
    assert!(app.count("subject = 'user.login'", "events") >= 1);
    let before = app.count("subject = 'user.login'", "events");
    admin_code(&app);
    assert_eq!(app.count("subject = 'user.login'", "events"), before + 1);
}

// ---------------------------------------------------------------------------------------------
// 13. Single use under concurrency: parallel requests with one secret succeed at most once.
// ---------------------------------------------------------------------------------------------

/// Runs `f` on `n` threads at once and returns the statuses.
fn concurrently(n: usize, f: impl Fn() -> Resp + Sync) -> Vec<u16> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n).map(|_| s.spawn(|| f().status)).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn concurrent_code_exchanges_succeed_once() {
    let app = TestApp::spawn();
    for _ in 0..3 {
        let code = admin_code(&app);
        let statuses = concurrently(6, || admin_exchange(&app, &code, &[]));
        assert_eq!(
            statuses.iter().filter(|s| **s == 200).count(),
            1,
            "{statuses:?}"
        );
        assert!(
            statuses.iter().all(|s| [200, 400].contains(s)),
            "{statuses:?}"
        );
    }
}

#[test]
fn concurrent_refreshes_rotate_once() {
    let app = TestApp::spawn();
    for _ in 0..3 {
        let tokens = admin_tokens(&app);
        let token = str_field(&tokens, "refresh_token");
        let statuses = concurrently(6, || refresh(&app, admin_creds(&app), token, &[]));
        assert_eq!(
            statuses.iter().filter(|s| **s == 200).count(),
            1,
            "{statuses:?}"
        );
        assert!(
            statuses.iter().all(|s| [200, 400].contains(s)),
            "{statuses:?}"
        );
    }
}

#[test]
fn concurrent_consent_answers_issue_one_code() {
    let app = TestApp::spawn();
    for round in 0..5 {
        let (client_id, secret) = app.client(client_input(
            &format!("consent-{round}"),
            APP_URI,
            flow::AUTH_CODE,
        ));
        let email = format!("user{round}@example.com");
        let (_, pw) = app.user(&email, Role::User);
        let form = open_sign_in(
            &app,
            &[
                ("client_id", client_id.as_str()),
                ("redirect_uri", APP_URI),
                ("response_type", "code"),
            ],
        );
        let page = submit_sign_in(&app, &form, &email, &pw);
        assert_page(&page, 200);
        let consent = Consent {
            client_id,
            secret,
            page,
            cookie: form.cookie,
        };
        let before = app.count("1 = 1", "authorization_codes");
        let statuses = concurrently(6, || answer_consent(&app, &consent, "allow"));
        assert_eq!(
            statuses.iter().filter(|s| **s == 302).count(),
            1,
            "{statuses:?}"
        );
        assert_eq!(app.count("1 = 1", "authorization_codes") - before, 1);
    }
}
