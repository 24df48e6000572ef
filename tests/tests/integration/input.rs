//! One rule for the text of every endpoint (docs/security.md "Input"): a NUL or another control
//! character in a body field, a query value or a path answers the area's refusal naming the
//! field (REST 422 `ERR_INPUT_INVALID_FORMAT` with `field`, webhooks 400, SCIM 400
//! `invalidValue`, OAuth 400 `invalid_request`), and nothing is stored. Table-driven over the
//! endpoints that take text; run on SQLite and (in the PostgreSQL suite) PostgreSQL, where a NUL
//! used to reach the database and answer 500.

use coffer_domain::Role;
use coffer_tests::{client_input, Body, Resp, TestApp};
use serde_json::{json, Value};

/// Values no one-line field takes.
const BAD: &[(&str, &str)] = &[
    ("NUL", "a\u{0}b"),
    ("SOH", "a\u{1}b"),
    ("ESC", "a\u{1b}[31mb"),
    ("DEL", "a\u{7f}b"),
    ("C1", "a\u{85}b"),
    ("LF", "a\nb"),
];

/// Values no field takes, not even one documented as several lines.
const BAD_MULTILINE: &[(&str, &str)] =
    &[("NUL", "a\u{0}b"), ("SOH", "a\u{1}b"), ("DEL", "a\u{7f}b")];

/// What a refused call must leave as it was: the records clients read, the recorded events
/// (every write records one) and the browser sessions.
fn snapshot(app: &TestApp, admin: &str, scim: &str) -> Value {
    let get = |path: &str| {
        let r = app.rest("GET", path, admin, None);
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        r.json()
    };
    let hooks = app.send(
        "GET",
        "/webhooks",
        &[("Authorization", &format!("Bearer {admin}"))],
        None,
    );
    let scim_users = app.send(
        "GET",
        "/rest/scim/Users",
        &[("Authorization", &format!("Bearer {scim}"))],
        None,
    );
    json!({
        "clients": get("/rest/clients"),
        "devices": get("/rest/devices"),
        "locations": get("/rest/locations"),
        "me": get("/rest/users/me"),
        "settings": get("/rest/settings/system"),
        "webhooks": hooks.json(),
        "scim": scim_users.json(),
        "events": app.count("1 = 1", "events"),
        "sessions": app.count("1 = 1", "web_sessions"),
        "users": app.count("1 = 1", "users"),
    })
}

/// A body with one field replaced.
fn with(base: &Value, field: &str, value: &str) -> Value {
    let mut b = base.clone();
    b[field] = json!(value);
    b
}

#[derive(Clone, Copy)]
enum Area {
    Rest,
    Webhooks,
    Scim,
}

struct Case {
    method: &'static str,
    path: String,
    base: Value,
    fields: Vec<&'static str>,
    multiline: Vec<&'static str>,
    area: Area,
}

fn rest(method: &'static str, path: String, base: Value, fields: &[&'static str]) -> Case {
    Case {
        method,
        path,
        base,
        fields: fields.to_vec(),
        multiline: Vec::new(),
        area: Area::Rest,
    }
}

fn send(app: &TestApp, case: &Case, token: &str, scim: &str, body: Value) -> Resp {
    match case.area {
        Area::Rest => app.rest(case.method, &case.path, token, Some(body)),
        Area::Webhooks => app.send(
            case.method,
            &case.path,
            &[("Authorization", &format!("Bearer {token}"))],
            Some(Body::Json(body)),
        ),
        Area::Scim => app.send(
            case.method,
            &case.path,
            &[("Authorization", &format!("Bearer {scim}"))],
            Some(Body::Raw("application/scim+json", body.to_string())),
        ),
    }
}

fn assert_refused(case: &Case, field: &str, what: &str, r: &Resp) {
    let at = format!("{} {} {field} with {what}", case.method, case.path);
    match case.area {
        Area::Rest => {
            assert_eq!(r.status, 422, "{at}: {}", r.text);
            let e = &r.json()["errors"][0];
            assert_eq!(e["code"], "ERR_INPUT_INVALID_FORMAT", "{at}: {}", r.text);
            assert_eq!(e["field"], field, "{at}: {}", r.text);
        }
        Area::Webhooks => {
            assert_eq!(r.status, 400, "{at}: {}", r.text);
            let b = r.json();
            assert_eq!(b["code"], 400, "{at}");
            let msg = b["message"].as_str().unwrap();
            assert!(
                msg.contains(&format!(
                    "webhook.{field} must not contain control characters"
                )),
                "{at}: {msg}"
            );
        }
        Area::Scim => {
            assert_eq!(r.status, 400, "{at}: {}", r.text);
            let b = r.json();
            assert_eq!(b["scimType"], "invalidValue", "{at}: {}", r.text);
            assert!(
                b["detail"].as_str().unwrap().starts_with(field),
                "{at}: {}",
                r.text
            );
        }
    }
}

#[test]
fn control_characters_in_any_text_field_are_refused_and_nothing_is_stored() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let scim = coffer_service::identity::scim_tokens::create(&app.ctx, "idp")
        .expect("scim token")
        .1;
    let (client_id, _) = app.client(client_input("Existing", "https://app.example/cb", 9));
    let device = app.rest(
        "POST",
        "/rest/devices",
        &admin,
        Some(json!({"installTagId": "SN-1", "installName": "Phone"})),
    );
    assert_eq!(device.status, 200, "{}", device.text);
    let device_id = device.json()["id"].as_i64().unwrap();
    let hook = app.send(
        "POST",
        "/webhooks",
        &[("Authorization", &format!("Bearer {admin}"))],
        Some(Body::Json(json!({
            "url": "https://hooks.example/in", "secret": "whsec_c2VjcmV0",
            "subscriptions": ["user.>"]
        }))),
    );
    assert_eq!(hook.status, 201, "{}", hook.text);
    let hook_id = hook.json()["id"].as_str().unwrap().to_string();
    let scim_user = app.send(
        "POST",
        "/rest/scim/Users",
        &[("Authorization", &format!("Bearer {scim}"))],
        Some(Body::Raw(
            "application/scim+json",
            json!({
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                "userName": "sam@example.com", "displayName": "Sam"
            })
            .to_string(),
        )),
    );
    assert_eq!(scim_user.status, 201, "{}", scim_user.text);
    let scim_id = scim_user.json()["id"].as_str().unwrap().to_string();
    let (_, bob_password) = app.user("bob@example.com", Role::User);

    let client = json!({
        "name": "New app", "description": "What it does",
        "redirectUri": "https://new.example/cb", "scope": "GET/users/*",
        "signatureKey": "a-signature-key",
    });
    let cases = vec![
        Case {
            multiline: vec!["description"],
            ..rest(
                "POST",
                "/rest/clients".into(),
                client.clone(),
                &[
                    "name",
                    "description",
                    "redirectUri",
                    "scope",
                    "signatureKey",
                ],
            )
        },
        Case {
            multiline: vec!["description"],
            ..rest(
                "PUT",
                format!("/rest/clients/{client_id}"),
                client.clone(),
                &["name", "description", "redirectUri", "scope"],
            )
        },
        rest(
            "POST",
            "/rest/devices".into(),
            json!({"installTagId": "SN-2", "installName": "Tablet", "mobileKeyStore": "k"}),
            &[
                "installTagId",
                "installName",
                "mobileKeyStore",
                "clientId",
                "userId",
            ],
        ),
        rest(
            "PUT",
            format!("/rest/devices/{device_id}"),
            json!({"mobileKeyStore": "k2", "registrationToken": "r"}),
            &["mobileKeyStore", "registrationToken"],
        ),
        rest(
            "POST",
            "/rest/locations".into(),
            json!({"name": "Berlin", "domain": "berlin.example.com"}),
            &["name", "domain"],
        ),
        rest(
            "PUT",
            "/rest/users/me".into(),
            json!({"name": "New Name"}),
            &["name"],
        ),
        rest(
            "PUT",
            "/rest/users/me".into(),
            json!({"password": "Another-Passw0rd", "previousPassword": "x"}),
            &["password", "previousPassword"],
        ),
        rest(
            "PUT",
            "/rest/users/me/mobileNumber".into(),
            json!({"password": "x", "mobileNumber": "+41790000000"}),
            &["password", "mobileNumber"],
        ),
        rest(
            "POST",
            "/rest/users/actions/login".into(),
            json!({"username": "bob@example.com", "password": bob_password, "referral": "/#/home"}),
            &["username", "password", "referral"],
        ),
        rest(
            "DELETE",
            "/rest/users?id:in=00000000-0000-0000-0000-000000000000".into(),
            json!({"retainData": true, "retainToUser": "u"}),
            &["retainToUser", "retainToAdvancedFormUser"],
        ),
        Case {
            area: Area::Webhooks,
            ..rest(
                "POST",
                "/webhooks".into(),
                json!({"url": "https://hooks.example/two", "secret": "whsec_c2VjcmV0",
                       "token": "tok", "subscriptions": ["device.>"]}),
                &["url", "secret", "token"],
            )
        },
        Case {
            area: Area::Webhooks,
            ..rest(
                "PUT",
                format!("/webhooks/{hook_id}"),
                json!({"url": "https://hooks.example/in", "secret": "whsec_c2VjcmV0",
                       "subscriptions": ["user.>"]}),
                &["url", "secret", "token"],
            )
        },
        Case {
            area: Area::Webhooks,
            ..rest(
                "PATCH",
                format!("/webhooks/{hook_id}"),
                json!({}),
                &["url", "secret", "token"],
            )
        },
        Case {
            area: Area::Scim,
            ..rest(
                "POST",
                "/rest/scim/Users".into(),
                json!({
                    "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                    "userName": "tim@example.com", "displayName": "Tim",
                    "externalId": "x-1", "password": "Some-Passw0rd!"
                }),
                &["userName", "displayName", "externalId", "password"],
            )
        },
        Case {
            area: Area::Scim,
            ..rest(
                "PUT",
                format!("/rest/scim/Users/{scim_id}"),
                json!({
                    "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                    "userName": "sam@example.com", "displayName": "Samuel"
                }),
                &["userName", "displayName"],
            )
        },
    ];

    let before = snapshot(&app, &admin, &scim);
    let mut checked = 0;
    for case in &cases {
        for field in &case.fields {
            let bad = if case.multiline.contains(field) {
                BAD_MULTILINE
            } else {
                BAD
            };
            for (what, value) in bad {
                let r = send(&app, case, &admin, &scim, with(&case.base, field, value));
                assert_refused(case, field, what, &r);
                checked += 1;
            }
        }
    }
    // A SCIM PATCH operation's value, wherever it sits in the body.
    let r = app.send(
        "PATCH",
        &format!("/rest/scim/Users/{scim_id}"),
        &[("Authorization", &format!("Bearer {scim}"))],
        Some(Body::Raw(
            "application/scim+json",
            json!({
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [{"op": "replace", "path": "displayName", "value": "S\u{0}m"}]
            })
            .to_string(),
        )),
    );
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.json()["scimType"], "invalidValue");
    assert!(
        r.json()["detail"]
            .as_str()
            .unwrap()
            .starts_with("Operations[0].value"),
        "{}",
        r.text
    );
    assert_eq!(
        snapshot(&app, &admin, &scim),
        before,
        "a refused call stored something"
    );
    assert!(checked > 150, "{checked}");
}

#[test]
fn documented_multiline_fields_take_line_breaks() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let r = app.rest(
        "POST",
        "/rest/clients",
        &admin,
        Some(json!({
            "name": "Lines", "description": "First line\nsecond line\r\n\tindented",
            "redirectUri": "https://lines.example/cb", "scope": "*"
        })),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json()["description"],
        "First line\nsecond line\r\n\tindented"
    );
}

#[test]
fn query_values_and_paths_with_control_characters_are_refused() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    for (path, field) in [
        ("/rest/clients?name=a%01b", "name"),
        ("/rest/clients?name:contains=%1B%5B31m", "name:contains"),
        ("/rest/devices?installTagId=a%7Fb", "installTagId"),
        ("/rest/devices?userId:in=a%C2%85b", "userId:in"),
        ("/rest/users/ldapSearch?value=a%0Ab", "value"),
        ("/rest/locations?orderBy=name%01", "orderBy"),
    ] {
        let r = app.rest("GET", path, &admin, None);
        assert_eq!(r.status, 422, "{path}: {}", r.text);
        let e = &r.json()["errors"][0];
        assert_eq!(e["code"], "ERR_INPUT_INVALID_FORMAT", "{path}");
        assert_eq!(e["field"], field, "{path}");
    }
    // A path with a control character names no entity.
    for path in ["/rest/clients/a%01b", "/rest/users/a%1Fb/devices"] {
        let r = app.rest("GET", path, &admin, None);
        assert_eq!(
            (r.status, r.code()),
            (404, "ERR_ENTITY_NOT_FOUND".to_string()),
            "{path}: {}",
            r.text
        );
    }
    // A NUL never gets past the firewall's shipped rules.
    let r = app.rest("GET", "/rest/clients?name=a%00b", &admin, None);
    assert_eq!(r.status, 490, "{}", r.text);

    let scim = coffer_service::identity::scim_tokens::create(&app.ctx, "idp")
        .expect("scim token")
        .1;
    let r = app.send(
        "GET",
        "/rest/scim/Users?filter=userName%20eq%20%22a%01b%22",
        &[("Authorization", &format!("Bearer {scim}"))],
        None,
    );
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.json()["scimType"], "invalidValue", "{}", r.text);
}

#[test]
fn oauth_parameters_with_control_characters_are_invalid_requests() {
    let app = TestApp::spawn();
    let before = app.count("1 = 1", "token_families");
    for (name, value) in [
        ("client_id", "a\u{0}b"),
        ("username", "admin@coffer.local\u{0}"),
        ("password", "x\u{1}"),
    ] {
        let mut form = [
            ("grant_type", "password".to_string()),
            ("username", app.admin.admin_email.clone()),
            ("password", app.admin.admin_password.clone()),
            ("client_id", app.admin.client_id.clone()),
            ("client_secret", app.admin.client_secret.clone()),
        ];
        for p in form.iter_mut() {
            if p.0 == name {
                p.1 = value.to_string();
            }
        }
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = app.form("/oauth/token", &pairs);
        assert_eq!(r.status, 400, "{name}: {}", r.text);
        assert_eq!(r.json()["error"], "invalid_request", "{name}: {}", r.text);
        assert!(
            r.json()["error_description"]
                .as_str()
                .unwrap()
                .contains(&format!("`{name}` must not contain control characters")),
            "{}",
            r.text
        );
    }
    assert_eq!(app.count("1 = 1", "token_families"), before);
}

#[test]
fn a_client_scope_is_bounded() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let body = |scope: String| {
        json!({"name": "Scoped", "description": "d", "redirectUri": "https://s.example/cb",
               "scope": scope})
    };
    let items = |n: usize| {
        (0..n)
            .map(|i| format!("GET/users/a{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    // 101 items, and 100 KB in few items: refused, nothing stored.
    for scope in [items(101), format!("users/{}", "a".repeat(100 * 1024))] {
        let r = app.rest("POST", "/rest/clients", &admin, Some(body(scope)));
        assert_eq!(r.status, 422, "{}", r.text);
        let e = &r.json()["errors"][0];
        assert_eq!(e["code"], "ERR_INPUT_INVALID_FORMAT");
        assert_eq!(e["field"], "scope");
        assert_eq!(app.count("name = 'Scoped'", "clients"), 0);
    }
    // 100 items within 4 KiB: accepted.
    let ok = items(100);
    assert!(ok.len() <= 4096);
    let r = app.rest("POST", "/rest/clients", &admin, Some(body(ok)));
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.json()["id"].as_str().unwrap().to_string();
    // An update past the bound is refused too.
    let r = app.rest(
        "PUT",
        &format!("/rest/clients/{id}"),
        &admin,
        Some(body(items(101))),
    );
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.json()["errors"][0]["field"], "scope");
}
