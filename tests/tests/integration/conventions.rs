//! The conventions every endpoint shares, over real HTTP: API versions, removed endpoints, the
//! error envelopes, body and filter errors, the firewall, security headers, and the OpenAPI
//! document.

use coffer_tests::{auth, Body, TestApp};
use serde_json::json;
use std::collections::HashSet;
use std::sync::{Mutex, Once};

#[test]
fn version_header_outcomes() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let a = auth(&t);

    let missing = app.send("GET", "/rest/users/me", &[("Authorization", &a)], None);
    assert_eq!(missing.status, 400);
    assert_eq!(missing.code(), "ERR_REQUEST_API_VERSION_MISSING");
    // The answer says what to send.
    assert_eq!(
        missing.json()["errors"][0]["message"],
        "The API version is missing: send the header X-Coffer-Version: 28 \
         (or the query parameter apiVersion=28)."
    );

    for v in ["5", "27", "29", "abc"] {
        let r = app.send(
            "GET",
            "/rest/users/me",
            &[("Authorization", &a), ("X-Coffer-Version", v)],
            None,
        );
        assert_eq!(r.status, 400, "version {v}");
        assert_eq!(r.code(), "ERR_REQUEST_VERSION_NOT_SUPPORTED", "version {v}");
        assert_eq!(
            r.json()["errors"][0]["message"],
            "The specified API version is not supported by server: it speaks version 28 \
             only; send the header X-Coffer-Version: 28."
        );
    }

    for v in ["1", "4"] {
        let r = app.send(
            "GET",
            "/rest/users/me",
            &[("Authorization", &a), ("X-Coffer-Version", v)],
            None,
        );
        assert_eq!(r.status, 400);
        assert_eq!(
            r.json(),
            json!({"message": "The specified API version is not supported by server."})
        );
    }

    let ok = app.send(
        "GET",
        "/rest/users/me",
        &[("Authorization", &a), ("X-Coffer-Version", "28")],
        None,
    );
    assert_eq!(ok.status, 200, "{}", ok.text);
    let by_query = app.send(
        "GET",
        "/rest/users/me?apiVersion=28",
        &[("Authorization", &a)],
        None,
    );
    assert_eq!(by_query.status, 200, "{}", by_query.text);
}

#[test]
fn version_errors_name_the_header_of_the_configured_brand() {
    // A server in the reference's place answers to its brand's header, and says so.
    let app = TestApp::builder()
        .config(|c| c.version_brand = "Acme".into())
        .spawn();
    let t = app.admin_token();
    let a = auth(&t);
    let missing = app.send("GET", "/rest/users/me", &[("Authorization", &a)], None);
    assert_eq!(missing.code(), "ERR_REQUEST_API_VERSION_MISSING");
    let text = missing.json()["errors"][0]["message"].to_string();
    assert!(text.contains("X-Acme-Version: 28"), "{text}");
    let wrong = app.send(
        "GET",
        "/rest/users/me",
        &[("Authorization", &a), ("X-Acme-Version", "27")],
        None,
    );
    assert_eq!(wrong.code(), "ERR_REQUEST_VERSION_NOT_SUPPORTED");
    let text = wrong.json()["errors"][0]["message"].to_string();
    assert!(text.contains("X-Acme-Version: 28"), "{text}");
    // The brand's header is the one that counts.
    let ok = app.send(
        "GET",
        "/rest/users/me",
        &[("Authorization", &a), ("X-Acme-Version", "28")],
        None,
    );
    assert_eq!(ok.status, 200, "{}", ok.text);
}
#[test]
fn removed_endpoints_name_their_replacement() {
    let app = TestApp::spawn();
    let cases = [
        ("GET", "/rest/folders/7/path", "GET /rest/folders/{id}"),
        (
            "GET",
            "/rest/admin/profiles/1/users/2",
            "GET /rest/admin/profiles/{id}/users",
        ),
        (
            "POST",
            "/rest/sources/3/actions/fileFromTemplate",
            "POST /rest/folders/{parent_id}/actions/fileFromTemplate",
        ),
        (
            "GET",
            "/rest/folders/members",
            "GET /rest/folders/{id}/members",
        ),
        (
            "POST",
            "/rest/sources/3/actions/lock",
            "PATCH /rest/sources/actions/lock",
        ),
        (
            "POST",
            "/rest/sources/3/actions/unlock",
            "PATCH /rest/sources/actions/unlock",
        ),
        (
            "DELETE",
            "/rest/mail/9/actions/read",
            "PATCH /rest/mail/actions/read",
        ),
        (
            "DELETE",
            "/rest/mail/9/actions/unread",
            "PATCH /rest/mail/actions/unread",
        ),
    ];
    for (method, path, replacement) in cases {
        // With and without the version header: a removed endpoint is gone in every version.
        for headers in [vec![], vec![("X-Coffer-Version", "28")]] {
            let r = app.send(method, path, &headers, None);
            assert_eq!(r.status, 404, "{method} {path}");
            assert_eq!(r.code(), "ERR_REQUEST_NOT_FOUND");
            let msg = r.json()["errors"][0]["message"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(msg.contains(replacement), "{method} {path}: {msg}");
        }
    }
}

#[test]
fn unknown_routes_and_methods_use_the_envelope() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let r = app.rest("GET", "/rest/nothing/here", &t, None);
    assert_eq!(r.status, 404);
    assert_eq!(r.code(), "ERR_REQUEST_NOT_FOUND");
    let r = app.send("GET", "/nowhere", &[], None);
    assert_eq!(r.status, 404);
    assert_eq!(r.code(), "ERR_REQUEST_NOT_FOUND");
    let r = app.rest("PATCH", "/rest/locations", &t, None);
    assert_eq!(r.status, 405);
    assert_eq!(r.code(), "ERR_REQUEST_METHOD_NOT_ALLOWED");
}

#[test]
fn malformed_bodies_get_catalogue_errors_and_store_nothing() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let a = auth(&t);
    let h = [("Authorization", a.as_str()), ("X-Coffer-Version", "28")];
    let before = app.count("1=1", "locations");

    for body in ["{", "not json", "{\"name\": }", "\u{0}"] {
        let r = app.send(
            "POST",
            "/rest/locations",
            &h,
            Some(Body::Raw("application/json", body.to_string())),
        );
        assert_eq!(r.status, 400, "{body:?}");
        assert_eq!(r.code(), "ERR_REQUEST_INVALID_JSON");
    }
    let r = app.send(
        "POST",
        "/rest/locations",
        &h,
        Some(Body::Json(json!([1, 2]))),
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.code(), "ERR_REQUEST_INVALID_JSON");

    let r = app.send(
        "POST",
        "/rest/locations",
        &h,
        Some(Body::Json(json!({"name": 5, "domain": "eu.example.com"}))),
    );
    assert_eq!(r.status, 422);
    assert_eq!(r.code(), "ERR_INPUT_NOT_STRING");
    assert_eq!(r.json()["errors"][0]["field"], "name");

    let r = app.send(
        "POST",
        "/rest/locations",
        &h,
        Some(Body::Json(json!({"domain": "eu.example.com"}))),
    );
    assert_eq!(r.status, 422);
    assert_eq!(r.code(), "ERR_INPUT_REQUIRED");
    assert_eq!(r.json()["errors"][0]["field"], "name");

    let huge = format!("{{\"name\": \"{}\"}}", "a".repeat(2 * 1024 * 1024));
    let r = app.send(
        "POST",
        "/rest/locations",
        &h,
        Some(Body::Raw("application/json", huge)),
    );
    assert_eq!(r.status, 413);
    assert_eq!(r.code(), "ERR_REQUEST_TOO_LARGE");

    let r = app.send(
        "POST",
        "/rest/locations",
        &h,
        Some(Body::Raw("text/plain", "{\"name\":\"x\"}".into())),
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.code(), "ERR_REQUEST_INVALID_JSON");

    // Malformed JSON says where reading stopped.
    let broken = "{\n  \"name\": \"eu\",\n  \"domain\": eu.example.com\n}";
    let r = app.send(
        "POST",
        "/rest/locations",
        &h,
        Some(Body::Raw("application/json", broken.into())),
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.code(), "ERR_REQUEST_INVALID_JSON");
    let e = serde_json::from_str::<serde_json::Value>(broken).unwrap_err();
    assert_eq!(e.line(), 3);
    let message = r.json()["errors"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        message,
        format!(
            "The request body is not valid JSON (line 3, column {}).",
            e.column()
        )
    );

    // A field the body does not declare is named, not dropped.
    let r = app.send(
        "POST",
        "/rest/locations",
        &h,
        Some(Body::Json(
            json!({"name": "eu", "domain": "eu.example.com", "dnsName": "x"}),
        )),
    );
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.code(), "ERR_INPUT_ATTRIBUTE_FORBIDDEN");
    assert_eq!(r.json()["errors"][0]["field"], "dnsName");
    let message = r.json()["errors"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("dnsName"), "{message}");

    assert_eq!(app.count("1=1", "locations"), before);
}

#[test]
fn typed_bodies_answer_the_field_codes_and_accept_what_they_declare() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let check = |method: &str, path: &str, body: serde_json::Value, code: &str, field: &str| {
        let r = app.rest(method, path, &t, Some(body.clone()));
        assert_eq!(r.status, 422, "{method} {path} {body}: {}", r.text);
        assert_eq!(r.code(), code, "{method} {path} {body}");
        assert_eq!(
            r.json()["errors"][0]["field"],
            field,
            "{method} {path} {body}"
        );
    };
    let client = json!({"name": "c", "description": "d", "redirectUri": "https://app.example.com/cb", "scope": "*"});
    let with = |k: &str, v: serde_json::Value| {
        let mut b = client.clone();
        b[k] = v;
        b
    };
    check(
        "POST",
        "/rest/clients",
        with("accessTokenLifetime", json!(0)),
        "ERR_INPUT_MIN_VALUE",
        "accessTokenLifetime",
    );
    check(
        "POST",
        "/rest/clients",
        with("accessTokenLifetime", json!("1")),
        "ERR_INPUT_NOT_INTEGER",
        "accessTokenLifetime",
    );
    check(
        "POST",
        "/rest/clients",
        with("flow", json!(1u64 << 40)),
        "ERR_INPUT_INVALID_FORMAT",
        "flow",
    );
    check(
        "POST",
        "/rest/clients",
        with("addLinks", json!("yes")),
        "ERR_INPUT_NOT_BOOLEAN",
        "addLinks",
    );
    check(
        "POST",
        "/rest/clients",
        with("name", json!("  ")),
        "ERR_INPUT_REQUIRED",
        "name",
    );
    check(
        "POST",
        "/rest/clients",
        with("scope", json!(null)),
        "ERR_INPUT_REQUIRED",
        "scope",
    );
    check(
        "POST",
        "/rest/clients",
        with("secret", json!("s")),
        "ERR_INPUT_ATTRIBUTE_FORBIDDEN",
        "secret",
    );
    check(
        "PUT",
        "/rest/users/me",
        json!({"nmae": "Ann"}),
        "ERR_INPUT_ATTRIBUTE_FORBIDDEN",
        "nmae",
    );
    check(
        "POST",
        "/rest/devices",
        json!({"installTagId": ["t"]}),
        "ERR_INPUT_NOT_STRING",
        "installTagId",
    );

    // A description may span lines; `null` is the same as an absent field.
    let mut body = with("description", json!("two\nlines"));
    body["signatureKey"] = serde_json::Value::Null;
    let r = app.rest("POST", "/rest/clients", &t, Some(body));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["description"], "two\nlines");
}

/// Sends `head` (a request line and headers announcing a body) and then nothing, and reads the
/// answer: `(status, body, seconds waited, whether the server closed the connection after it)`.
fn stalled_body(app: &TestApp, head: &str) -> (u16, serde_json::Value, f64, bool) {
    use std::io::{Read, Write};
    let addr = app.base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(15)))
        .unwrap();
    let started = std::time::Instant::now();
    write!(s, "{head}Host: {addr}\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let (end, len) = loop {
        let n = s.read(&mut buf).expect("an answer before the read timeout");
        assert!(
            n > 0,
            "closed without an answer: {:?}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let len: usize = text[..end]
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .expect("a content length");
            if got.len() >= end + 4 + len {
                break (end, len);
            }
        }
    };
    let waited = started.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&got).to_string();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    let body = serde_json::from_str(&text[end + 4..end + 4 + len]).unwrap_or_default();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let closed = matches!(s.read(&mut buf), Ok(0));
    (status, body, waited, closed)
}

#[test]
fn request_bodies_have_a_time_limit() {
    let app = TestApp::builder()
        .http(|s| s.body_timeout = std::time::Duration::from_secs(1))
        .spawn();
    let t = app.admin_token();
    let scim = coffer_service::identity::scim_tokens::create(&app.ctx, "idp")
        .unwrap()
        .1;
    let json = "Content-Type: application/json\r\n";
    let form = "Content-Type: application/x-www-form-urlencoded\r\n";
    let huge = "Content-Length: 1000000000000\r\n";
    let rest = format!("Authorization: Bearer {t}\r\nX-Coffer-Version: 28\r\n");
    let cases = [
        // A JSON body (the REST envelope), announced huge or small, or chunked and never ended.
        format!("POST /rest/locations HTTP/1.1\r\n{rest}{json}{huge}"),
        format!("POST /rest/locations HTTP/1.1\r\n{rest}{json}Content-Length: 40\r\n"),
        format!("PUT /rest/users/me HTTP/1.1\r\n{rest}{json}Transfer-Encoding: chunked\r\n"),
        // The OAuth forms: the token endpoint and the sign-in page.
        format!("POST /oauth/token HTTP/1.1\r\n{form}{huge}"),
        format!("POST /oauth/authorize HTTP/1.1\r\n{form}{huge}"),
        // SCIM and the webhooks.
        format!(
            "POST /rest/scim/Users HTTP/1.1\r\nAuthorization: Bearer {scim}\r\nContent-Type: application/scim+json\r\n{huge}"
        ),
        format!("POST /webhooks HTTP/1.1\r\nAuthorization: Bearer {t}\r\n{json}{huge}"),
    ];
    for head in &cases {
        let (status, body, waited, closed) = stalled_body(&app, head);
        let line = head.lines().next().unwrap();
        assert_eq!(status, 408, "{line}: {body}");
        assert!(
            (0.9..10.0).contains(&waited),
            "{line}: answered after {waited}s"
        );
        assert!(closed, "{line}: the connection stays open");
        let text = body.to_string();
        if line.contains("/rest/scim") {
            assert_eq!(body["status"], "408", "{body}");
        } else if line.contains("/webhooks") {
            assert!(
                body["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("[Request Timeout]"),
                "{body}"
            );
        } else {
            assert_eq!(
                body["errors"][0]["code"], "ERR_REQUEST_TIMEOUT",
                "{line}: {text}"
            );
        }
    }
    // Nothing was stored by the stalled requests.
    assert_eq!(app.count("1=1", "locations"), 0);
    // A body sent in time is unaffected.
    let r = app.rest(
        "POST",
        "/rest/locations",
        &t,
        Some(json!({"name": "EU", "domain": "eu.example.com"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
}

#[test]
fn bad_list_parameters() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    for (path, code, status) in [
        ("/rest/devices?bogus=1", "ERR_REQUEST_INVALID_FILTER", 400),
        (
            "/rest/devices?installTagId:gt=1",
            "ERR_REQUEST_INVALID_FILTER",
            400,
        ),
        (
            "/rest/devices?orderBy=color:asc",
            "ERR_REQUEST_INVALID_FILTER",
            400,
        ),
        (
            "/rest/devices?orderBy=id:sideways",
            "ERR_REQUEST_INVALID_FILTER",
            400,
        ),
        ("/rest/locations?name=x", "ERR_REQUEST_INVALID_FILTER", 400),
        (
            "/rest/devices?mode=everything",
            "ERR_INPUT_NOT_IN_LIST",
            422,
        ),
        ("/rest/devices?with=secrets", "ERR_INPUT_NOT_IN_LIST", 422),
        ("/rest/devices?offset=-1", "ERR_INPUT_INVALID_FORMAT", 422),
        ("/rest/locations?limit=0", "ERR_INPUT_INVALID_FORMAT", 422),
        (
            "/rest/locations?limit=10001",
            "ERR_INPUT_INVALID_FORMAT",
            422,
        ),
        (
            "/rest/locations?returnEntity=maybe",
            "ERR_INPUT_NOT_BOOLEAN",
            422,
        ),
    ] {
        let r = app.rest("GET", path, &t, None);
        assert_eq!(r.status, status, "{path}: {}", r.text);
        assert_eq!(r.code(), code, "{path}");
    }
    for path in [
        "/rest/devices?mode=full_with_links",
        "/rest/devices?mode=compact",
        "/rest/locations?limit=10000",
    ] {
        assert_eq!(app.rest("GET", path, &t, None).status, 200, "{path}");
    }
}

#[test]
fn firewall_blocks_traversal_and_nul_but_not_legitimate_input() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    for path in [
        "/rest/..%2f..%2fetc/passwd",
        "/rest/devices/%252e%252e/etc",
        "/rest/devices?installTagId=..%2f..%2fsecret",
        "/rest/devices?installTagId=a%00b",
        "/oauth/authorize?client_id=%00",
    ] {
        let r = app.rest("GET", path, &t, None);
        assert_eq!(r.status, 490, "{path}");
        assert_eq!(r.code(), "ERR_REQUEST_BLOCKED_BY_WAF");
        assert_eq!(r.json()["errors"][0]["message"], "Request blocked by WAF");
    }
    for path in [
        "/rest/devices?installTagId:contains=v1.2.3",
        "/rest/devices?installTagId=%E2%9C%93",
        "/rest/locations?orderBy=name:desc",
        "/rest/devices/a.b..c/wipe",
    ] {
        let r = app.rest("GET", path, &t, None);
        assert_ne!(r.status, 490, "{path}");
    }
}

/// Sends exact request bytes (HTTP clients normalise `..` away) and returns the status.
fn raw_status(app: &TestApp, target: &str) -> u16 {
    use std::io::{Read, Write};
    let addr = app.base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET {target} HTTP/1.1\r\nHost: {addr}\r\nX-Coffer-Version: 28\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[test]
fn firewall_sees_the_raw_path() {
    let app = TestApp::spawn();
    for target in [
        "/rest/../etc/passwd",
        "/rest/devices/%2e%2e/%2e%2e/etc",
        "/rest/devices/..%5c..%5cwin",
        "/rest/devices/a%00",
    ] {
        assert_eq!(raw_status(&app, target), 490, "{target}");
    }
    assert_eq!(raw_status(&app, "/rest/devices/v1..2/wipe"), 401);
}

#[test]
fn firewall_rules_are_data() {
    let rules =
        r#"{"rules":[{"id":"no-locations","targets":["path"],"pattern":"^/rest/locations"}]}"#;
    let app = TestApp::builder()
        .waf(coffer_http::Waf::from_json(rules).unwrap())
        .spawn();
    let t = app.admin_token();
    assert_eq!(app.rest("GET", "/rest/locations", &t, None).status, 490);
    assert_eq!(app.rest("GET", "/rest/users/me", &t, None).status, 200);
}

#[test]
fn security_headers_on_every_response() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    for r in [
        app.rest("GET", "/rest/users/me", &t, None),
        app.send("GET", "/health", &[], None),
        app.send("GET", "/nowhere", &[], None),
    ] {
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(r.header("x-frame-options"), Some("DENY"));
        assert!(r.header("content-security-policy").is_some());
        assert_eq!(r.header("referrer-policy"), Some("no-referrer"));
    }
    assert_eq!(
        app.rest("GET", "/rest/users/me", &t, None)
            .header("cache-control"),
        Some("no-store")
    );
}

/// A request id as the server writes it: 16 lowercase hex digits.
fn request_id(what: &str, r: &coffer_tests::Resp) -> String {
    let id = r
        .header("x-request-id")
        .unwrap_or_else(|| panic!("{what}: no X-Request-Id ({})", r.status));
    assert!(
        id.len() == 16 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
        "{what}: {id}"
    );
    id.to_string()
}

#[test]
fn every_response_carries_its_own_request_id() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let v = [("X-Coffer-Version", "28")];
    let responses = [
        ("REST", app.rest("GET", "/rest/users/me", &t, None), 200),
        ("health", app.send("GET", "/health", &[], None), 200),
        ("home page", app.send("GET", "/", &[], None), 200),
        ("unknown path", app.send("GET", "/nowhere", &[], None), 404),
        (
            "unknown REST path",
            app.rest("GET", "/rest/nowhere", &t, None),
            404,
        ),
        ("no token", app.send("GET", "/rest/users/me", &v, None), 401),
        ("method", app.send("DELETE", "/health", &[], None), 405),
        (
            "firewall",
            app.rest("GET", "/rest/devices?installTagId=a%00b", &t, None),
            490,
        ),
        (
            "token endpoint",
            app.form("/oauth/token", &[("grant_type", "nope")]),
            400,
        ),
        (
            "authorization page",
            app.send("GET", "/oauth/authorize", &[], None),
            400,
        ),
    ];
    let mut seen = HashSet::new();
    for (what, r, status) in &responses {
        assert_eq!(r.status, *status, "{what}: {}", r.text);
        let id = request_id(what, r);
        assert!(seen.insert(id.clone()), "{what}: {id} was given before");
    }
    // The client cannot choose the id.
    let r = app.send(
        "GET",
        "/health",
        &[("X-Request-Id", "chosen-by-client")],
        None,
    );
    let id = request_id("client's id", &r);
    assert!(!seen.contains(&id));
}

/// The log lines of this process (target, then message), kept so that a test can find those of
/// its own requests by their id.
struct Captured(Mutex<Vec<String>>);

impl log::Log for Captured {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Info
    }
    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            let line = format!("{} {}", r.target(), r.args());
            self.0.lock().unwrap_or_else(|e| e.into_inner()).push(line);
        }
    }
    fn flush(&self) {}
}

static LOGS: Captured = Captured(Mutex::new(Vec::new()));

/// The lines logged so far that contain `needle`; logs are captured from the first call on.
fn logged_with(needle: &str) -> Vec<String> {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        if log::set_logger(&LOGS).is_ok() {
            log::set_max_level(log::LevelFilter::Info);
        }
    });
    let lines = LOGS.0.lock().unwrap_or_else(|e| e.into_inner());
    lines
        .iter()
        .filter(|l| l.contains(needle))
        .cloned()
        .collect()
}

#[test]
fn an_internal_error_is_a_bare_500_whose_request_id_finds_its_cause_in_the_log() {
    logged_with("");
    let app = TestApp::spawn();
    let t = app.admin_token();
    // The database no longer has the table the listing reads: a failure of the server's own.
    app.execute("ALTER TABLE locations RENAME TO locations_gone");
    let r = app.rest("GET", "/rest/locations", &t, None);
    assert_eq!(r.status, 500, "{}", r.text);
    assert_eq!(
        r.json(),
        json!({"errors": [{"code": "ERR_INTERNAL_SERVER_ERROR", "message": "Internal server error."}]})
    );
    let id = request_id("500", &r);
    let lines = logged_with(&id);
    // The error line names the request and carries the cause down to the database's own text
    // (`no such table: locations`, `relation "locations" does not exist`).
    let error = lines
        .iter()
        .find(|l| l.contains("internal error"))
        .unwrap_or_else(|| panic!("no error line for {id}: {lines:?}"));
    assert!(
        error.contains(&format!("{id} internal error: database: ")),
        "{error}"
    );
    assert!(error.contains("locations"), "{error}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("coffer::access {id} GET /rest/locations 500 "))),
        "{lines:?}"
    );
    // Another request has its own id, and no error line.
    let ok = app.rest("GET", "/rest/users/me", &t, None);
    let other = request_id("200", &ok);
    assert_ne!(other, id);
    assert!(logged_with(&other)
        .iter()
        .all(|l| !l.contains("internal error")));
}

#[test]
fn the_home_page_says_what_the_server_is() {
    let app = TestApp::spawn();
    let r = app.send("GET", "/", &[], None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(r.text.contains("<h1>Coffer</h1>"), "{}", r.text);
    assert!(
        r.text.contains(&format!(
            "<span id=\"version\">{}</span>",
            env!("CARGO_PKG_VERSION")
        )),
        "{}",
        r.text
    );
    assert!(r.text.contains("href=\"/openapi.json\""), "{}", r.text);
    assert!(
        r.text
            .contains("href=\"/.well-known/oauth-authorization-server\""),
        "{}",
        r.text
    );
    assert!(r.text.contains("/oauth/authorize"), "{}", r.text);
    assert!(
        !r.text.to_ascii_lowercase().contains("<script"),
        "{}",
        r.text
    );
    // The same security headers as the sign-in page.
    let query = serde_urlencoded::to_string([
        ("client_id", app.admin.client_id.as_str()),
        ("response_type", "code"),
        ("redirect_uri", app.admin.redirect_uri.as_str()),
    ])
    .unwrap();
    let sign_in = app.send("GET", &format!("/oauth/authorize?{query}"), &[], None);
    assert_eq!(sign_in.status, 200, "{}", sign_in.text);
    for h in [
        "content-security-policy",
        "x-content-type-options",
        "x-frame-options",
        "referrer-policy",
        "cross-origin-opener-policy",
        "cache-control",
    ] {
        assert!(r.header(h).is_some(), "{h}");
        assert_eq!(r.header(h), sign_in.header(h), "{h}");
    }
    assert!(r
        .header("content-security-policy")
        .unwrap()
        .contains("default-src 'none'"));
    // Only GET: anything else is not a page.
    assert_eq!(app.send("POST", "/", &[], None).status, 405);
}

#[test]
fn openapi_describes_the_implemented_endpoints() {
    let app = TestApp::spawn();
    let r = app.send("GET", "/openapi.json", &[], None);
    assert_eq!(r.status, 200);
    let doc = r.json();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 25, "{}", paths.len());
    let t = app.admin_token();
    // Every documented path is routed: none answers "no such endpoint".
    for (path, ops) in paths {
        for method in ops.as_object().unwrap().keys() {
            if path == "/rest/devices/me/actions/logout" {
                continue; // it ends the session the loop uses; covered in the device tests
            }
            let concrete = path.replace("{id}", "1").replace("{install_tag_id}", "tag");
            let r = app.rest(&method.to_uppercase(), &concrete, &t, None);
            let unrouted = r.status == 404 && r.text.contains("ERR_REQUEST_NOT_FOUND");
            assert!(
                !unrouted && r.status != 405,
                "{method} {path} → {} {}",
                r.status,
                r.text
            );
            assert_ne!(r.status, 500, "{method} {path}: {}", r.text);
        }
    }
}

#[test]
fn health_and_readiness() {
    let app = TestApp::spawn();
    assert_eq!(
        app.send("GET", "/health", &[], None).json(),
        json!({"status": "ok"})
    );
    assert_eq!(app.send("GET", "/ready", &[], None).status, 200);
}

#[test]
fn every_mutation_records_its_event_in_the_outbox() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let r = app.rest(
        "POST",
        "/rest/locations",
        &t,
        Some(json!({"name": "EU", "domain": "eu.example.com"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        app.count("subject = 'location.location.create'", "events"),
        1
    );
    // A refused change records nothing.
    let r = app.rest(
        "POST",
        "/rest/locations",
        &t,
        Some(json!({"name": "EU", "domain": "eu.example.com"})),
    );
    assert_eq!(r.status, 409);
    assert_eq!(
        app.count("subject = 'location.location.create'", "events"),
        1
    );
}
