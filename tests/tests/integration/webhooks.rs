//! Webhook management (interface §4.17) over real HTTP: every status and message, the
//! subscription rules, optimistic concurrency with `If-Match`, ownership, hostile input, and the
//! stored state after each refusal.

use coffer_domain::Role;
use coffer_tests::{Body, Resp, TestApp};
use serde_json::{json, Value};

fn call(app: &TestApp, method: &str, path: &str, token: &str, body: Option<Value>) -> Resp {
    let auth = format!("Bearer {token}");
    app.send(
        method,
        path,
        &[("Authorization", &auth)],
        body.map(Body::Json),
    )
}

fn hook(url: &str, subs: &[&str]) -> Value {
    json!({"url": url, "secret": "whsec_c2VjcmV0", "subscriptions": subs})
}

/// Asserts the webhook envelope `{code, message: "[Status Text] detail"}`.
fn assert_error(r: &Resp, status: u16, detail: &str) {
    assert_eq!(r.status, status, "{}", r.text);
    let b = r.json();
    assert_eq!(b["code"], status, "{}", r.text);
    let msg = b["message"].as_str().unwrap();
    assert!(msg.starts_with('['), "{msg}");
    assert!(msg.contains(detail), "{msg} should contain {detail}");
}

#[test]
fn create_answers_201_with_the_record_location_and_etag() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let r = call(
        &app,
        "POST",
        "/webhooks",
        &t,
        Some(
            json!({"url": "https://hooks.example.com/in", "secret": "s3cret", "token": "tok", "subscriptions": ["device.>", "user.login"]}),
        ),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let v = r.json();
    let id = v["id"].as_str().unwrap();
    assert!(uuid::Uuid::parse_str(id).is_ok());
    assert_eq!(v["url"], "https://hooks.example.com/in");
    assert_eq!(v["enabled"], true);
    assert_eq!(v["subscriptions"], json!(["device.>", "user.login"]));
    assert_eq!(v["status"], "UNKNOWN");
    assert!(v["description"].is_string());
    assert!(v["createdAt"].as_str().unwrap().ends_with('Z'));
    assert!(
        v.get("secret").is_none() && v.get("token").is_none(),
        "credentials are write-only: {v}"
    );
    assert_eq!(v["hasToken"], true);
    assert_eq!(
        r.header("location").unwrap(),
        format!("{}/webhooks/{id}", app.base)
    );
    assert_eq!(r.header("etag"), Some("\"1\""));
    assert_eq!(
        app.count(&format!("id = '{id}' AND secret = 's3cret'"), "webhooks"),
        1
    );
    assert_eq!(app.count("subject = 'webhook.webhook.create'", "events"), 1);

    let off = call(
        &app,
        "POST",
        "/webhooks",
        &t,
        Some(
            json!({"url": "https://a.example/h", "secret": "s", "subscriptions": ["x"], "enabled": false}),
        ),
    );
    assert_eq!(off.json()["enabled"], false);
}

#[test]
fn missing_fields_and_bad_json_are_400_and_store_nothing() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    for (body, detail) in [
        (
            json!({"secret": "s", "subscriptions": ["a"]}),
            "webhook.url must be provided",
        ),
        (
            json!({"url": "https://x.example/h", "subscriptions": ["a"]}),
            "webhook.secret must be provided",
        ),
        (
            json!({"url": "https://x.example/h", "secret": "s"}),
            "webhook.subscriptions must be provided",
        ),
        (
            json!({"url": "https://x.example/h", "secret": "s", "subscriptions": ["a"], "token": ""}),
            "webhook.token must not be empty or whitespace-only",
        ),
        (
            json!({"url": "https://x.example/h", "secret": "s", "subscriptions": ["a"], "token": "   "}),
            "whitespace-only",
        ),
        (
            json!({"url": 5, "secret": "s", "subscriptions": ["a"]}),
            "webhook.url must be a string",
        ),
        (
            json!({"url": "https://x.example/h", "secret": "s", "subscriptions": "a"}),
            "array of strings",
        ),
        (
            json!({"url": "https://x.example/h", "secret": "s", "subscriptions": [1]}),
            "array of strings",
        ),
        (
            json!({"url": "https://x.example/h", "secret": "s", "subscriptions": ["a"], "enabled": "yes"}),
            "boolean",
        ),
        (json!([1]), "JSON object"),
        // A misspelled field is named, not dropped.
        (
            json!({"url": "https://x.example/h", "secret": "s", "subscription": ["a"]}),
            "webhook.subscription is not a field of a webhook",
        ),
        (
            json!({"url": "https://x.example/h", "secret": "s", "subscriptions": ["a"], "events": ["b"]}),
            "webhook.events is not a field of a webhook",
        ),
    ] {
        let r = call(&app, "POST", "/webhooks", &t, Some(body.clone()));
        assert_error(&r, 400, detail);
    }
    let auth = format!("Bearer {t}");
    let r = app.send(
        "POST",
        "/webhooks",
        &[("Authorization", &auth)],
        Some(Body::Raw("application/json", "{\"url\": ".into())),
    );
    assert_error(&r, 400, "unparsable JSON");
    assert_eq!(r.json()["message"], "[Bad Request] unparsable JSON");
    assert_eq!(app.count("1=1", "webhooks"), 0);
}

#[test]
fn hostile_urls_are_refused_naming_the_problem() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    for (url, detail) in [
        ("ftp://files.example.com/h", "http or https"),
        ("file:///etc/passwd", "http or https"),
        ("javascript:alert(1)", "http or https"),
        ("https://admin:pw@hooks.example.com/h", "credentials"),
        ("https://hooks.example.com/a b", "spaces"),
        ("hooks.example.com/h", "not a valid URL"),
    ] {
        let r = call(&app, "POST", "/webhooks", &t, Some(hook(url, &["a"])));
        assert_error(&r, 400, detail);
    }
    let long = format!("https://hooks.example.com/{}", "a".repeat(3000));
    assert_error(
        &call(&app, "POST", "/webhooks", &t, Some(hook(&long, &["a"]))),
        400,
        "at most 2048",
    );
    assert_eq!(app.count("1=1", "webhooks"), 0);
}

#[test]
fn subscription_rules() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let bad = [
        (vec![""], "invalid subscription"),
        (vec!["a..b"], "invalid subscription"),
        (vec!["a.b*"], "invalid subscription"),
        (vec!["a>"], "invalid subscription"),
        (vec!["a.>.b"], "invalid subscription"),
        (vec!["a b"], "invalid subscription"),
        (vec!["a/b"], "invalid subscription"),
        (
            vec!["a.*.c", "a.b.*"],
            "subscriptions \"a.*.c\" and \"a.b.*\" overlap",
        ),
        (vec!["device.>", "device.wipe.complete"], "overlap"),
        (vec![">", "x"], "overlap"),
        (vec!["user.login", "user.login"], "overlap"),
    ];
    for (subs, detail) in bad {
        let r = call(
            &app,
            "POST",
            "/webhooks",
            &t,
            Some(hook("https://h.example/in", &subs)),
        );
        assert_error(&r, 400, detail);
    }
    let empty: Vec<&str> = vec![];
    assert_error(
        &call(
            &app,
            "POST",
            "/webhooks",
            &t,
            Some(hook("https://h.example/in", &empty)),
        ),
        400,
        "must not be empty",
    );
    let huge: Vec<String> = (0..5000).map(|i| format!("area.s{i}")).collect();
    let r = call(
        &app,
        "POST",
        "/webhooks",
        &t,
        Some(json!({"url": "https://h.example/in", "secret": "s", "subscriptions": huge})),
    );
    assert_error(&r, 400, "at most 100");
    assert_eq!(app.count("1=1", "webhooks"), 0);

    for subs in [
        vec!["a.>", "a"],
        vec!["a.b.c", "a.b.d"],
        vec!["a.*", "b.*"],
        vec!["filesystem.file.create"],
        vec!["x-y_z.*.end"],
    ] {
        let r = call(
            &app,
            "POST",
            "/webhooks",
            &t,
            Some(hook("https://h.example/in", &subs)),
        );
        assert_eq!(r.status, 201, "{subs:?}: {}", r.text);
    }
}

#[test]
fn get_by_id_validates_the_uuid_and_hides_other_users_webhooks() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let (_, other) = app.user_token("bob@example.com", Role::User);
    let id = call(
        &app,
        "POST",
        "/webhooks",
        &t,
        Some(hook("https://h.example/in", &["a"])),
    )
    .json()["id"]
        .as_str()
        .unwrap()
        .to_string();

    let r = call(&app, "GET", &format!("/webhooks/{id}"), &t, None);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["id"], id.as_str());
    assert_eq!(r.header("etag"), Some("\"1\""));

    assert_error(
        &call(&app, "GET", "/webhooks/not-a-uuid", &t, None),
        400,
        "invalid UUID format",
    );
    assert_error(
        &call(&app, "GET", "/webhooks/", &t, None),
        400,
        "id must be provided",
    );
    assert_error(
        &call(
            &app,
            "GET",
            &format!("/webhooks/{}", uuid::Uuid::new_v4()),
            &t,
            None,
        ),
        404,
        "webhook not found",
    );
    // Another user's webhook does not exist for them.
    assert_error(
        &call(&app, "GET", &format!("/webhooks/{id}"), &other, None),
        404,
        "webhook not found",
    );
    assert_error(
        &call(&app, "DELETE", &format!("/webhooks/{id}"), &other, None),
        404,
        "webhook not found",
    );
    assert_error(
        &call(
            &app,
            "PATCH",
            &format!("/webhooks/{id}"),
            &other,
            Some(json!({"enabled": false})),
        ),
        404,
        "not found",
    );
    assert_eq!(app.count("enabled = TRUE", "webhooks"), 1);
}

#[test]
fn list_pages_the_callers_webhooks() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let (_, other) = app.user_token("bob@example.com", Role::User);
    for i in 0..5 {
        let r = call(
            &app,
            "POST",
            "/webhooks",
            &t,
            Some(hook(&format!("https://h.example/{i}"), &["a"])),
        );
        assert_eq!(r.status, 201);
    }
    call(
        &app,
        "POST",
        "/webhooks",
        &other,
        Some(hook("https://h.example/bob", &["a"])),
    );

    let all = call(&app, "GET", "/webhooks", &t, None).json();
    assert_eq!(all["totalItems"], 5);
    assert_eq!(all["items"].as_array().unwrap().len(), 5);
    assert_eq!(all["items"][0]["url"], "https://h.example/0");
    let page = call(&app, "GET", "/webhooks?offset=2&limit=2", &t, None).json();
    assert_eq!(page["totalItems"], 5);
    let urls: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["url"].as_str().unwrap())
        .collect();
    assert_eq!(urls, vec!["https://h.example/2", "https://h.example/3"]);
    assert_eq!(
        call(&app, "GET", "/webhooks?limit=0", &t, None).json()["items"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    assert_eq!(
        call(&app, "GET", "/webhooks", &other, None).json()["totalItems"],
        1
    );

    for q in ["limit=-1", "limit=x", "offset=-3", "offset=1.5"] {
        let r = call(&app, "GET", &format!("/webhooks?{q}"), &t, None);
        assert_error(&r, 400, "invalid parameter");
    }
    let r = call(&app, "GET", "/webhooks?limit=abc", &t, None);
    assert_eq!(
        r.json()["message"],
        "[Bad Request] invalid parameter, details:[0-limit must be integer]"
    );
}

#[test]
fn put_replaces_and_patch_changes_only_what_is_given() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let created = call(&app, "POST", "/webhooks", &t, Some(json!({"url": "https://h.example/in", "secret": "s", "token": "tok", "subscriptions": ["a.b"]}))).json();
    let id = created["id"].as_str().unwrap();
    let path = format!("/webhooks/{id}");

    let p = call(&app, "PATCH", &path, &t, Some(json!({"enabled": false})));
    assert_eq!(p.status, 200, "{}", p.text);
    let pv = p.json();
    assert_eq!(pv["enabled"], false);
    assert_eq!(pv["url"], "https://h.example/in");
    assert_eq!(pv["hasToken"], true);
    assert_eq!(p.header("etag"), Some("\"2\""));

    // PUT replaces: fields left out take their defaults (token removed, enabled true).
    let r = call(
        &app,
        "PUT",
        &path,
        &t,
        Some(json!({"url": "https://h.example/new", "secret": "s2", "subscriptions": ["c.*"]})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let rv = r.json();
    assert_eq!(rv["url"], "https://h.example/new");
    assert_eq!(rv["subscriptions"], json!(["c.*"]));
    assert_eq!(rv["enabled"], true);
    assert_eq!(rv["hasToken"], false);
    assert_eq!(
        app.count(
            &format!("id = '{id}' AND secret = 's2' AND token IS NULL AND version = 3"),
            "webhooks"
        ),
        1
    );

    assert_error(
        &call(
            &app,
            "PUT",
            &path,
            &t,
            Some(json!({"secret": "s", "subscriptions": ["a"]})),
        ),
        400,
        "webhook.url must be provided",
    );
    assert_error(
        &call(
            &app,
            "PATCH",
            &path,
            &t,
            Some(json!({"subscriptions": ["a.*.c", "a.b.*"]})),
        ),
        400,
        "overlap",
    );
    assert_error(
        &call(&app, "PATCH", &path, &t, Some(json!({"token": " "}))),
        400,
        "whitespace-only",
    );
    assert_error(
        &call(
            &app,
            "PUT",
            &format!("/webhooks/{}", uuid::Uuid::new_v4()),
            &t,
            Some(hook("https://h.example/x", &["a"])),
        ),
        404,
        "not found",
    );
    assert_eq!(
        app.count(&format!("id = '{id}' AND version = 3"), "webhooks"),
        1
    );
}

#[test]
fn if_match_with_a_stale_etag_is_409_and_changes_nothing() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let r = call(
        &app,
        "POST",
        "/webhooks",
        &t,
        Some(hook("https://h.example/in", &["a"])),
    );
    let id = r.json()["id"].as_str().unwrap().to_string();
    let path = format!("/webhooks/{id}");
    let etag = r.header("etag").unwrap().to_string();
    let auth = format!("Bearer {t}");

    // Someone else changes it first.
    assert_eq!(
        call(
            &app,
            "PATCH",
            &path,
            &t,
            Some(json!({"url": "https://h.example/first"}))
        )
        .status,
        200
    );

    for method in ["PUT", "PATCH"] {
        let r = app.send(
            method,
            &path,
            &[("Authorization", &auth), ("If-Match", &etag)],
            Some(Body::Json(hook("https://h.example/second", &["b"]))),
        );
        assert_error(&r, 409, "changed since update");
        assert_eq!(
            r.json()["message"],
            "[Conflict] webhook instance has been changed since update"
        );
    }
    let now = call(&app, "GET", &path, &t, None);
    assert_eq!(now.json()["url"], "https://h.example/first");
    let current = now.header("etag").unwrap().to_string();
    let ok = app.send(
        "PATCH",
        &path,
        &[("Authorization", &auth), ("If-Match", &current)],
        Some(Body::Json(json!({"url": "https://h.example/second"}))),
    );
    assert_eq!(ok.status, 200, "{}", ok.text);
    let weak = app.send(
        "PATCH",
        &path,
        &[
            ("Authorization", &auth),
            ("If-Match", &format!("W/{}", ok.header("etag").unwrap())),
        ],
        Some(Body::Json(json!({"enabled": false}))),
    );
    assert_eq!(weak.status, 200);
    let bad = app.send(
        "PATCH",
        &path,
        &[("Authorization", &auth), ("If-Match", "garbage")],
        Some(Body::Json(json!({"enabled": true}))),
    );
    assert_error(&bad, 400, "If-Match");
}

#[test]
fn concurrent_updates_with_the_same_etag_let_one_win() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let r = call(
        &app,
        "POST",
        "/webhooks",
        &t,
        Some(hook("https://h.example/in", &["a"])),
    );
    let id = r.json()["id"].as_str().unwrap().to_string();
    let etag = r.header("etag").unwrap().to_string();
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|i| {
                let (app, t, id, etag) = (&app, &t, &id, &etag);
                s.spawn(move || {
                    let auth = format!("Bearer {t}");
                    app.send(
                        "PATCH",
                        &format!("/webhooks/{id}"),
                        &[("Authorization", &auth), ("If-Match", etag)],
                        Some(Body::Json(json!({"url": format!("https://h.example/{i}")}))),
                    )
                    .status
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        5,
        "{statuses:?}"
    );
    assert_eq!(
        app.count(&format!("id = '{id}' AND version = 2"), "webhooks"),
        1
    );
}

#[test]
fn delete_answers_204_then_404() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let id = call(
        &app,
        "POST",
        "/webhooks",
        &t,
        Some(hook("https://h.example/in", &["a"])),
    )
    .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = call(&app, "DELETE", &format!("/webhooks/{id}"), &t, None);
    assert_eq!(r.status, 204);
    assert_eq!(app.count("1=1", "webhooks"), 0);
    assert_error(
        &call(&app, "DELETE", &format!("/webhooks/{id}"), &t, None),
        404,
        "webhook not found",
    );
    assert_error(
        &call(&app, "DELETE", "/webhooks/123", &t, None),
        400,
        "invalid UUID format",
    );
    assert_eq!(app.count("subject = 'webhook.webhook.delete'", "events"), 1);
}

#[test]
fn authentication_and_scope_use_the_webhook_envelope() {
    let app = TestApp::spawn();
    let r = app.send("GET", "/webhooks", &[], None);
    assert_error(&r, 401, "bearer token");
    assert!(r.header("www-authenticate").is_some());
    assert_error(
        &call(&app, "GET", "/webhooks", "not-a-token", None),
        401,
        "Unauthorized",
    );
    // A token whose scope does not cover `webhooks`.
    let (cid, secret) = app.client(coffer_service::identity::clients::ClientInput {
        scope: "GET/users/*".into(),
        ..coffer_tests::client_input(
            "narrow",
            "https://n.example/cb",
            coffer_domain::client::flow::PASSWORD,
        )
    });
    let (_, pw) = app.user("carl@example.com", Role::User);
    let tok = app
        .form(
            "/oauth/token",
            &[
                ("grant_type", "password"),
                ("username", "carl@example.com"),
                ("password", &pw),
                ("client_id", &cid),
                ("client_secret", &secret),
            ],
        )
        .json();
    let r = call(
        &app,
        "GET",
        "/webhooks",
        tok["access_token"].as_str().unwrap(),
        None,
    );
    assert_error(&r, 403, "Insufficient access");
    // No version header is needed, and a wrong method keeps the envelope.
    let t = app.admin_token();
    assert_eq!(call(&app, "GET", "/webhooks", &t, None).status, 200);
    assert_error(
        &call(
            &app,
            "POST",
            &format!("/webhooks/{}", uuid::Uuid::new_v4()),
            &t,
            None,
        ),
        405,
        "method not allowed",
    );
}
