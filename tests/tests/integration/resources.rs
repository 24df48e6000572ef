//! End-to-end tests of the resource endpoints over real HTTP: devices (with the wipe-flag
//! machine of spec §3 and session logout), the OAuth client registry, locations, settings and
//! `GET /rest/users/me`, plus the bad-input rules every one of them shares.
//!
//! Each test starts its own server with a fresh database ([`TestApp::spawn`]) and checks the
//! status, the envelope, the fields and the stored state afterwards (a refused call leaves the
//! tables as they were).

use coffer_domain::Role;
use coffer_tests::{
    assert_error, client_input, password_grant, Body, Resp, TestApp, ACCESS_TOKENS, REFRESH_TOKENS,
};
use serde_json::{json, Value};
use std::collections::BTreeSet;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

const DEVICE_FIELDS: &[&str] = &[
    "id",
    "client_id",
    "user_id",
    "install_tag_id",
    "install_name",
    "wipe_flag",
    "mobile_key_store",
];

/// The key names of a JSON object.
fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect()
}

fn set_of(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// Asserts a REST error that names the input field at fault.
fn assert_field_error(r: &Resp, status: u16, code: &str, field: &str) {
    assert_error(r, status, code);
    assert_eq!(r.json()["errors"][0]["field"], field, "{}", r.text);
}

/// Asserts the devices and clients list envelope `{data, total, page, pageSize}`.
fn assert_paged(r: &Resp) -> Value {
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert_eq!(
        keys(&body),
        set_of(&["data", "total", "page", "pageSize"]),
        "{body}"
    );
    assert!(body["data"].is_array(), "{body}");
    body
}

fn count_all(app: &TestApp, table: &str) -> i64 {
    app.count("1 = 1", table)
}

/// A request with the version header, a bearer token and a raw body.
fn raw(app: &TestApp, method: &str, path: &str, token: &str, ct: &'static str, body: &str) -> Resp {
    let auth = format!("Bearer {token}");
    app.send(
        method,
        path,
        &[("X-Coffer-Version", "28"), ("Authorization", &auth)],
        Some(Body::Raw(ct, body.to_string())),
    )
}

fn access(tokens: &Value) -> String {
    tokens["access_token"]
        .as_str()
        .expect("access_token")
        .to_string()
}

fn refresh(tokens: &Value) -> String {
    tokens["refresh_token"]
        .as_str()
        .expect("refresh_token")
        .to_string()
}

/// A password-grant token of the built-in client issued for a device (`install_tag_id`).
fn device_session(app: &TestApp, email: &str, password: &str, tag: &str, name: &str) -> Value {
    let r = app.form(
        "/oauth/token",
        &[
            ("grant_type", "password"),
            ("username", email),
            ("password", password),
            ("client_id", &app.admin.client_id),
            ("client_secret", &app.admin.client_secret),
            ("install_tag_id", tag),
            ("install_name", name),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()
}

/// A refresh-token grant through the built-in client.
pub(crate) fn refresh_grant(app: &TestApp, refresh_token: &str) -> Resp {
    app.form(
        "/oauth/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", &app.admin.client_id),
            ("client_secret", &app.admin.client_secret),
        ],
    )
}

/// Creates a device of the caller through the API; returns its record.
fn create_device(app: &TestApp, token: &str, body: Value) -> Value {
    let r = app.rest("POST", "/rest/devices", token, Some(body));
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()
}

fn device_id(d: &Value) -> i64 {
    d["id"].as_i64().expect("device id")
}

/// The stored wipe flag of a device.
fn stored_wipe_flag(app: &TestApp, id: i64) -> i64 {
    for flag in 0..=3 {
        if app.count(&format!("id = {id} AND wipe_flag = {flag}"), "devices") == 1 {
            return flag;
        }
    }
    panic!("device {id} has no valid wipe flag");
}

/// The values of one field over a list's `data`.
fn column(body: &Value, field: &str) -> Vec<Value> {
    body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|d| d[field].clone())
        .collect()
}

fn client_body(name: &str) -> Value {
    json!({
        "name": name,
        "description": format!("{name} description"),
        "redirectUri": "https://app.example.com/callback",
        "scope": "*",
    })
}

/// Creates a client through the API as the administrator; returns its record (with secret).
fn create_client(app: &TestApp, admin: &str, body: Value) -> Value {
    let r = app.rest("POST", "/rest/clients", admin, Some(body));
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()
}

fn create_location(app: &TestApp, admin: &str, name: &str, domain: &str) -> Value {
    let r = app.rest(
        "POST",
        "/rest/locations",
        admin,
        Some(json!({"name": name, "domain": domain})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()
}

// ---------------------------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------------------------

#[test]
fn device_list_has_paged_envelope_and_snake_case_records() {
    let app = TestApp::spawn();
    let (uid, token) = app.user_token("dana@example.com", Role::User);
    create_device(
        &app,
        &token,
        json!({"installTagId": "SN-1", "installName": "Laptop", "mobileKeyStore": "ks"}),
    );

    let body = assert_paged(&app.rest("GET", "/rest/devices", &token, None));
    assert_eq!(body["total"], 1);
    assert_eq!(body["page"], 1);
    assert_eq!(body["pageSize"], 100);
    let d = &body["data"][0];
    assert_eq!(keys(d), set_of(DEVICE_FIELDS), "{d}");
    assert!(d["id"].is_i64());
    assert_eq!(d["client_id"], app.admin.client_id.as_str());
    assert_eq!(d["user_id"], uid.as_str());
    assert_eq!(d["install_tag_id"], "SN-1");
    assert_eq!(d["install_name"], "Laptop");
    assert_eq!(d["wipe_flag"], 0);
    assert_eq!(d["mobile_key_store"], "ks");
}

#[test]
fn device_list_shows_a_user_only_their_own_devices_and_an_admin_all() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (a_id, a) = app.user_token("a@example.com", Role::User);
    let (b_id, b) = app.user_token("b@example.com", Role::User);
    create_device(&app, &a, json!({"installTagId": "A-1"}));
    create_device(&app, &a, json!({"installTagId": "A-2"}));
    create_device(&app, &b, json!({"installTagId": "B-1"}));
    create_device(&app, &admin, json!({"installTagId": "ADM-1"}));

    let mine = assert_paged(&app.rest("GET", "/rest/devices", &a, None));
    assert_eq!(mine["total"], 2);
    assert!(column(&mine, "user_id").iter().all(|u| u == a_id.as_str()));

    let theirs = assert_paged(&app.rest("GET", "/rest/devices", &b, None));
    assert_eq!(theirs["total"], 1);
    assert_eq!(theirs["data"][0]["user_id"], b_id.as_str());

    // A user's own filter cannot widen the view to someone else's devices.
    let sneaky = assert_paged(&app.rest("GET", &format!("/rest/devices?userId={b_id}"), &a, None));
    assert_eq!(sneaky["total"], 0);

    let all = assert_paged(&app.rest("GET", "/rest/devices", &admin, None));
    assert_eq!(all["total"], 4);
    assert_eq!(count_all(&app, "devices"), 4);
}

#[test]
fn device_list_filters_by_install_tag_user_and_client() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (a_id, a) = app.user_token("a@example.com", Role::User);
    let (b_id, b) = app.user_token("b@example.com", Role::User);
    let (c_id, _) = app.user("c@example.com", Role::User);
    let (mobile, _) = app.client(client_input("Mobile App", "https://m.example.com/cb", 16));
    create_device(&app, &a, json!({"installTagId": "phone-alpha"}));
    create_device(&app, &b, json!({"installTagId": "phone-beta"}));
    create_device(
        &app,
        &admin,
        json!({"installTagId": "tablet-gamma", "clientId": mobile, "userId": c_id}),
    );

    let get = |q: &str| assert_paged(&app.rest("GET", &format!("/rest/devices?{q}"), &admin, None));

    let r = get("installTagId=phone-beta");
    assert_eq!(r["total"], 1);
    assert_eq!(r["data"][0]["install_tag_id"], "phone-beta");

    let r = get("installTagId:contains=phone");
    assert_eq!(r["total"], 2);
    assert_eq!(
        column(&r, "install_tag_id"),
        vec![json!("phone-alpha"), json!("phone-beta")]
    );

    let r = get(&format!("userId={a_id}"));
    assert_eq!(r["total"], 1);
    assert_eq!(r["data"][0]["user_id"], a_id.as_str());

    let r = get(&format!("userId:in={a_id},{c_id}"));
    assert_eq!(r["total"], 2);
    let users: BTreeSet<String> = column(&r, "user_id")
        .iter()
        .map(|u| u.as_str().unwrap().to_string())
        .collect();
    assert_eq!(users, set_of(&[a_id.as_str(), c_id.as_str()]));
    assert!(!users.contains(&b_id));

    let r = get(&format!("clientId={mobile}"));
    assert_eq!(r["total"], 1);
    assert_eq!(r["data"][0]["install_tag_id"], "tablet-gamma");

    let fragment = &app.admin.client_id[2..10];
    let r = get(&format!("clientId:contains={fragment}"));
    assert_eq!(r["total"], 2);
    assert!(column(&r, "client_id")
        .iter()
        .all(|c| c == app.admin.client_id.as_str()));

    // `:contains` ignores case and takes `%` and `_` literally.
    let r = get("installTagId:contains=PHONE");
    assert_eq!(r["total"], 2);
    for wildcard in ["%25", "_", "phone_alpha"] {
        let r = get(&format!("installTagId:contains={wildcard}"));
        assert_eq!(r["total"], 0, "{wildcard}");
    }

    let r = get("installTagId=nothing-like-it");
    assert_eq!(r["total"], 0);
    assert_eq!(r["data"], json!([]));
}

#[test]
fn device_list_orders_and_pages() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("dana@example.com", Role::User);
    let mut ids = Vec::new();
    for tag in ["c-tag", "a-tag", "d-tag", "b-tag"] {
        ids.push(device_id(&create_device(
            &app,
            &token,
            json!({"installTagId": tag}),
        )));
    }
    let get = |q: &str| assert_paged(&app.rest("GET", &format!("/rest/devices?{q}"), &token, None));

    let r = get("orderBy=id:desc");
    let mut desc = ids.clone();
    desc.reverse();
    assert_eq!(
        column(&r, "id"),
        desc.iter().map(|i| json!(i)).collect::<Vec<_>>()
    );

    let r = get("orderBy=id:asc");
    assert_eq!(
        column(&r, "id"),
        ids.iter().map(|i| json!(i)).collect::<Vec<_>>()
    );

    let r = get("orderBy=installTagId:desc");
    assert_eq!(
        column(&r, "install_tag_id"),
        vec![
            json!("d-tag"),
            json!("c-tag"),
            json!("b-tag"),
            json!("a-tag")
        ]
    );

    let r = get("orderBy=installTagId");
    assert_eq!(r["data"][0]["install_tag_id"], "a-tag");

    let r = get("orderBy=installTagId:asc&offset=2&limit=2");
    assert_eq!(r["total"], 4, "total counts every match, not the page");
    assert_eq!(r["page"], 2);
    assert_eq!(r["pageSize"], 2);
    assert_eq!(
        column(&r, "install_tag_id"),
        vec![json!("c-tag"), json!("d-tag")]
    );

    let r = get("offset=10");
    assert_eq!(r["total"], 4);
    assert_eq!(r["data"], json!([]));
}

#[test]
fn device_list_refuses_unknown_or_malformed_filters() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("dana@example.com", Role::User);
    for q in [
        "colour=red",
        "installName=x",
        "installTagId:startswith=x",
        "userId:contains=x",
        "installTagId:bogus=x",
        "orderBy=wipe_flag",
        "orderBy=id:sideways",
    ] {
        let r = app.rest("GET", &format!("/rest/devices?{q}"), &token, None);
        assert_error(&r, 400, "ERR_REQUEST_INVALID_FILTER");
    }
    let long = "x".repeat(2000);
    let r = app.rest(
        "GET",
        &format!("/rest/devices?installTagId={long}"),
        &token,
        None,
    );
    assert_error(&r, 400, "ERR_REQUEST_INVALID_FILTER");
    for q in ["limit=0", "limit=10001", "limit=x", "offset=-1"] {
        let r = app.rest("GET", &format!("/rest/devices?{q}"), &token, None);
        assert_error(&r, 422, "ERR_INPUT_INVALID_FORMAT");
    }
}

#[test]
fn device_create_answers_the_record_with_a_location_header() {
    let app = TestApp::spawn();
    let (uid, token) = app.user_token("dana@example.com", Role::User);
    let r = app.rest(
        "POST",
        "/rest/devices",
        &token,
        Some(
            json!({"installTagId": "SN-42", "installName": "Work phone", "mobileKeyStore": "key"}),
        ),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let d = r.json();
    assert_eq!(
        keys(&d),
        set_of(DEVICE_FIELDS),
        "no links unless asked: {d}"
    );
    let id = device_id(&d);
    assert_eq!(
        r.header("Location"),
        Some(format!("{}/rest/devices/{id}", app.base).as_str())
    );
    assert_eq!(d["user_id"], uid.as_str());
    assert_eq!(d["client_id"], app.admin.client_id.as_str());
    assert_eq!(d["install_tag_id"], "SN-42");
    assert_eq!(d["install_name"], "Work phone");
    assert_eq!(d["wipe_flag"], 0);
    assert_eq!(d["mobile_key_store"], "key");
    assert_eq!(
        app.count(
            &format!(
                "id = {id} AND user_id = '{uid}' AND install_tag_id = 'SN-42' AND wipe_flag = 0"
            ),
            "devices"
        ),
        1
    );

    // The install name defaults to the tag; the key store to null.
    let d = create_device(&app, &token, json!({"installTagId": "SN-43"}));
    assert_eq!(d["install_name"], "SN-43");
    assert_eq!(d["mobile_key_store"], Value::Null);

    // The record reads back the same.
    let got = app.rest("GET", &format!("/rest/devices/{id}"), &token, None);
    assert_eq!(got.status, 200, "{}", got.text);
    assert_eq!(got.json()["install_name"], "Work phone");
}

#[test]
fn device_create_without_install_tag_is_422_and_stores_nothing() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("dana@example.com", Role::User);
    for body in [
        json!({}),
        json!({"installName": "Phone"}),
        json!({"installTagId": ""}),
        json!({"installTagId": "   "}),
        json!({"installTagId": null}),
    ] {
        let r = app.rest("POST", "/rest/devices", &token, Some(body));
        assert_field_error(&r, 422, "ERR_INPUT_REQUIRED", "installTagId");
    }
    assert_eq!(count_all(&app, "devices"), 0);
}

#[test]
fn device_create_duplicate_of_user_client_and_tag_is_409() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (a_id, a) = app.user_token("a@example.com", Role::User);
    let (_, b) = app.user_token("b@example.com", Role::User);
    let (mobile, _) = app.client(client_input("Mobile App", "https://m.example.com/cb", 16));
    create_device(&app, &a, json!({"installTagId": "SN-1"}));

    let r = app.rest(
        "POST",
        "/rest/devices",
        &a,
        Some(json!({"installTagId": "SN-1", "installName": "Again"})),
    );
    assert_error(&r, 409, "ERR_ENTITY_EXISTS");
    assert_eq!(app.count("install_tag_id = 'SN-1'", "devices"), 1);
    assert_eq!(app.count("install_name = 'Again'", "devices"), 0);

    // The same tag through another client, or for another user, is another device.
    create_device(
        &app,
        &admin,
        json!({"installTagId": "SN-1", "clientId": mobile, "userId": a_id}),
    );
    create_device(&app, &b, json!({"installTagId": "SN-1"}));
    assert_eq!(app.count("install_tag_id = 'SN-1'", "devices"), 3);
}

#[test]
fn device_create_for_another_user_needs_an_administrator() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (a_id, a) = app.user_token("a@example.com", Role::User);
    let (b_id, _) = app.user_token("b@example.com", Role::User);

    let r = app.rest(
        "POST",
        "/rest/devices",
        &a,
        Some(json!({"installTagId": "SN-1", "userId": b_id})),
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    assert_eq!(count_all(&app, "devices"), 0);

    // Naming oneself is fine.
    let d = create_device(&app, &a, json!({"installTagId": "SN-1", "userId": a_id}));
    assert_eq!(d["user_id"], a_id.as_str());

    let d = create_device(
        &app,
        &admin,
        json!({"installTagId": "SN-2", "userId": b_id}),
    );
    assert_eq!(d["user_id"], b_id.as_str());
    assert_eq!(
        app.count(
            &format!("user_id = '{b_id}' AND install_tag_id = 'SN-2'"),
            "devices"
        ),
        1
    );

    // An unknown user or client is refused without a row.
    let r = app.rest(
        "POST",
        "/rest/devices",
        &admin,
        Some(json!({"installTagId": "SN-3", "userId": "no-such-user"})),
    );
    assert_field_error(&r, 422, "ERR_INVALID_PARAMETER", "userId");
    let r = app.rest(
        "POST",
        "/rest/devices",
        &admin,
        Some(json!({"installTagId": "SN-3", "clientId": "no-such-client"})),
    );
    assert_field_error(&r, 422, "ERR_INVALID_PARAMETER", "clientId");
    // A user registers devices of the client they call through only: naming another client,
    // one that exists or one that does not, is refused alike, so nothing tells them apart.
    let (other, _) = app.client(client_input("Other App", "https://o.example.com/cb", 16));
    for client in [other.as_str(), "no-such-client"] {
        let r = app.rest(
            "POST",
            "/rest/devices",
            &a,
            Some(json!({"installTagId": "SN-3", "clientId": client})),
        );
        assert_error(&r, 403, "ERR_ACCESS_USER");
    }
    assert_eq!(count_all(&app, "devices"), 2);
}

#[test]
fn device_links_come_with_full_with_links_or_add_links() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("dana@example.com", Role::User);
    let expect = |d: &Value| {
        let id = device_id(d);
        assert_eq!(
            d["links"],
            json!([
                {"rel": "self", "href": format!("{}/rest/devices/{id}", app.base)},
                {"rel": "collection", "href": format!("{}/rest/devices", app.base)},
            ]),
            "{d}"
        );
    };

    let r = app.rest(
        "POST",
        "/rest/devices?mode=full_with_links",
        &token,
        Some(json!({"installTagId": "SN-1"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    expect(&r.json());

    let d = create_device(
        &app,
        &token,
        json!({"installTagId": "SN-2", "addLinks": true}),
    );
    expect(&d);

    let d = create_device(
        &app,
        &token,
        json!({"installTagId": "SN-3", "addLinks": false}),
    );
    assert!(d.get("links").is_none(), "{d}");

    let r = app.rest(
        "GET",
        &format!("/rest/devices/{}?mode=full_with_links", device_id(&d)),
        &token,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    expect(&r.json());

    let list = assert_paged(&app.rest("GET", "/rest/devices?mode=full_with_links", &token, None));
    for d in list["data"].as_array().unwrap() {
        expect(d);
    }
    let list = assert_paged(&app.rest("GET", "/rest/devices", &token, None));
    assert!(list["data"][0].get("links").is_none());

    let r = app.rest("GET", "/rest/devices?mode=everything", &token, None);
    assert_field_error(&r, 422, "ERR_INPUT_NOT_IN_LIST", "mode");
}

#[test]
fn device_get_answers_own_refuses_others_and_404s_unknown() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (a_id, a) = app.user_token("a@example.com", Role::User);
    let (_, b) = app.user_token("b@example.com", Role::User);
    let id = device_id(&create_device(&app, &a, json!({"installTagId": "SN-1"})));

    let r = app.rest("GET", &format!("/rest/devices/{id}"), &a, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let d = r.json();
    assert_eq!(keys(&d), set_of(DEVICE_FIELDS));
    assert_eq!(d["id"], id);
    assert_eq!(d["user_id"], a_id.as_str());

    assert_error(
        &app.rest("GET", &format!("/rest/devices/{id}"), &b, None),
        403,
        "ERR_ACCESS_USER",
    );
    let r = app.rest("GET", &format!("/rest/devices/{id}"), &admin, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["id"], id);

    for path in [
        format!("/rest/devices/{}", id + 1000),
        "/rest/devices/abc".to_string(),
        "/rest/devices/0".to_string(),
        "/rest/devices/-1".to_string(),
    ] {
        assert_error(
            &app.rest("GET", &path, &a, None),
            404,
            "ERR_ENTITY_NOT_FOUND",
        );
    }
}

#[test]
fn device_update_changes_the_key_store_of_the_owners_device_only() {
    let app = TestApp::spawn();
    let (_, a) = app.user_token("a@example.com", Role::User);
    let (_, b) = app.user_token("b@example.com", Role::User);
    let id = device_id(&create_device(
        &app,
        &a,
        json!({"installTagId": "SN-1", "mobileKeyStore": "old"}),
    ));
    let path = format!("/rest/devices/{id}");

    let r = app.rest("PUT", &path, &a, Some(json!({"mobileKeyStore": "new-key"})));
    assert_eq!(r.status, 200, "{}", r.text);
    let d = r.json();
    assert_eq!(keys(&d), set_of(DEVICE_FIELDS));
    assert_eq!(d["id"], id);
    assert_eq!(d["mobile_key_store"], "new-key");
    assert_eq!(d["install_tag_id"], "SN-1");
    assert_eq!(
        app.count(
            &format!("id = {id} AND mobile_key_store = 'new-key'"),
            "devices"
        ),
        1
    );

    // A registration token alone is an update too; the key store stays.
    let r = app.rest(
        "PUT",
        &path,
        &a,
        Some(json!({"registrationToken": "fcm-1", "addLinks": true})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["mobile_key_store"], "new-key");
    assert!(r.json()["links"].is_array());
    assert_eq!(
        app.count(
            &format!("id = {id} AND registration_token = 'fcm-1'"),
            "devices"
        ),
        1
    );

    for body in [None, Some(json!({})), Some(json!({"addLinks": true}))] {
        let r = app.rest("PUT", &path, &a, body);
        assert_field_error(&r, 422, "ERR_INPUT_REQUIRED", "mobileKeyStore");
    }

    // Neither another user nor an administrator sets a device's own keys.
    let admin = app.admin_token();
    for other in [&b, &admin] {
        let r = app.rest(
            "PUT",
            &path,
            other,
            Some(json!({"mobileKeyStore": "stolen"})),
        );
        assert_error(&r, 403, "ERR_ACCESS_USER");
    }
    assert_eq!(
        app.count(
            &format!("id = {id} AND mobile_key_store = 'new-key'"),
            "devices"
        ),
        1
    );

    let r = app.rest(
        "PUT",
        &format!("/rest/devices/{}", id + 1000),
        &a,
        Some(json!({"mobileKeyStore": "x"})),
    );
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
}

#[test]
fn device_delete_answers_204_then_404_and_its_tokens_stop_working() {
    let app = TestApp::spawn();
    let (uid, pw) = app.user("dana@example.com", Role::User);
    let on_device = device_session(&app, "dana@example.com", &pw, "tag-del", "Phone");
    let elsewhere = app.password_token("dana@example.com", &pw);
    let list = assert_paged(&app.rest(
        "GET",
        "/rest/devices?installTagId=tag-del",
        &access(&elsewhere),
        None,
    ));
    assert_eq!(list["total"], 1);
    let id = device_id(&list["data"][0]);
    assert_eq!(list["data"][0]["install_name"], "Phone");
    assert_eq!(list["data"][0]["user_id"], uid.as_str());
    assert_eq!(
        app.rest("GET", "/rest/users/me", &access(&on_device), None)
            .status,
        200
    );

    let r = app.rest(
        "DELETE",
        &format!("/rest/devices/{id}"),
        &access(&elsewhere),
        None,
    );
    assert_eq!(r.status, 204, "{}", r.text);
    assert!(r.text.is_empty());
    assert_eq!(app.count(&format!("id = {id}"), "devices"), 0);

    assert_error(
        &app.rest(
            "GET",
            &format!("/rest/devices/{id}"),
            &access(&elsewhere),
            None,
        ),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    assert_error(
        &app.rest(
            "DELETE",
            &format!("/rest/devices/{id}"),
            &access(&elsewhere),
            None,
        ),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );

    // The device's tokens are gone; the other session is not.
    assert_error(
        &app.rest("GET", "/rest/users/me", &access(&on_device), None),
        401,
        "ERR_AUTH_UNAUTHORIZED",
    );
    let r = refresh_grant(&app, &refresh(&on_device));
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.json()["error"], "invalid_grant");
    assert_eq!(
        app.rest("GET", "/rest/users/me", &access(&elsewhere), None)
            .status,
        200
    );
}

#[test]
fn device_delete_of_another_users_device_needs_an_administrator() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (_, a) = app.user_token("a@example.com", Role::User);
    let (_, b) = app.user_token("b@example.com", Role::User);
    let id = device_id(&create_device(&app, &a, json!({"installTagId": "SN-1"})));

    let r = app.rest("DELETE", &format!("/rest/devices/{id}"), &b, None);
    assert_error(&r, 403, "ERR_ACCESS_USER");
    assert_eq!(app.count(&format!("id = {id}"), "devices"), 1);

    let r = app.rest("DELETE", &format!("/rest/devices/{id}"), &admin, None);
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(count_all(&app, "devices"), 0);
}

#[test]
fn wipe_flag_moves_from_request_to_notified_to_completed() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (_, pw) = app.user("dana@example.com", Role::User);
    let session = device_session(&app, "dana@example.com", &pw, "tag-1", "Phone");
    let dev = access(&session);
    let list = assert_paged(&app.rest("GET", "/rest/devices", &dev, None));
    assert_eq!(list["total"], 1);
    let id = device_id(&list["data"][0]);
    assert_eq!(list["data"][0]["install_tag_id"], "tag-1");
    assert_eq!(list["data"][0]["wipe_flag"], 0);

    // Reading a flag that is not set leaves it alone.
    let r = app.rest("GET", "/rest/devices/tag-1/wipe", &dev, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json(), json!({"status": 0}));
    assert_eq!(stored_wipe_flag(&app, id), 0);

    // Only an administrator requests a wipe.
    let r = app.rest(
        "POST",
        &format!("/rest/devices/{id}/actions/wipe"),
        &dev,
        None,
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    assert_eq!(stored_wipe_flag(&app, id), 0);

    let r = app.rest(
        "POST",
        &format!("/rest/devices/{id}/actions/wipe"),
        &admin,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["wipe_flag"], 1);
    assert_eq!(r.json()["id"], id);
    assert_eq!(stored_wipe_flag(&app, id), 1);

    // The device reads the request (1), which marks it notified (2).
    let r = app.rest("GET", "/rest/devices/tag-1/wipe", &dev, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json(), json!({"status": 1}));
    assert_eq!(stored_wipe_flag(&app, id), 2);
    let r = app.rest("GET", "/rest/devices/tag-1/wipe", &dev, None);
    assert_eq!(r.json(), json!({"status": 2}));
    assert_eq!(stored_wipe_flag(&app, id), 2);

    // A second request does not move a notified flag back.
    let r = app.rest(
        "POST",
        &format!("/rest/devices/{id}/actions/wipe"),
        &admin,
        None,
    );
    assert_eq!(r.json()["wipe_flag"], 2);

    // The device reports the wipe done.
    let r = app.rest("PATCH", "/rest/devices/me/actions/wipe", &dev, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.is_empty(), "no content: {}", r.text);
    assert_eq!(stored_wipe_flag(&app, id), 3);
    let r = app.rest("GET", "/rest/devices/tag-1/wipe", &dev, None);
    assert_eq!(r.json(), json!({"status": 3}));
    let r = app.rest("GET", &format!("/rest/devices/{id}"), &admin, None);
    assert_eq!(r.json()["wipe_flag"], 3);

    // A completed wipe is not requested again.
    let r = app.rest(
        "POST",
        &format!("/rest/devices/{id}/actions/wipe"),
        &admin,
        None,
    );
    assert_eq!(r.json()["wipe_flag"], 3);
    assert_eq!(stored_wipe_flag(&app, id), 3);
}

#[test]
fn wipe_completion_is_allowed_from_not_set() {
    let app = TestApp::spawn();
    let (_, pw) = app.user("dana@example.com", Role::User);
    let dev = access(&device_session(
        &app,
        "dana@example.com",
        &pw,
        "tag-1",
        "Phone",
    ));
    assert_eq!(
        app.count("install_tag_id = 'tag-1' AND wipe_flag = 0", "devices"),
        1
    );

    let r = app.rest("PATCH", "/rest/devices/me/actions/wipe", &dev, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.is_empty());
    assert_eq!(
        app.count("install_tag_id = 'tag-1' AND wipe_flag = 3", "devices"),
        1
    );

    // Reporting again keeps it completed.
    let r = app.rest("PATCH", "/rest/devices/me/actions/wipe", &dev, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        app.count("install_tag_id = 'tag-1' AND wipe_flag = 3", "devices"),
        1
    );
}

#[test]
fn wipe_completion_needs_a_token_issued_for_a_device() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("dana@example.com", Role::User);
    create_device(&app, &token, json!({"installTagId": "tag-1"}));

    let r = app.rest("PATCH", "/rest/devices/me/actions/wipe", &token, None);
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    assert_eq!(app.count("wipe_flag = 0", "devices"), 1);
}

#[test]
fn wipe_status_is_read_only_for_the_owners_own_tags() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (_, a) = app.user_token("a@example.com", Role::User);
    let (_, b) = app.user_token("b@example.com", Role::User);
    let id = device_id(&create_device(&app, &a, json!({"installTagId": "tag-a"})));
    app.rest(
        "POST",
        &format!("/rest/devices/{id}/actions/wipe"),
        &admin,
        None,
    );
    assert_eq!(stored_wipe_flag(&app, id), 1);

    // Someone else's tag, or an unknown one, is not found, and the flag does not move.
    for (token, tag) in [(&b, "tag-a"), (&a, "no-such-tag"), (&admin, "tag-a")] {
        let r = app.rest("GET", &format!("/rest/devices/{tag}/wipe"), token, None);
        assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    }
    assert_eq!(stored_wipe_flag(&app, id), 1);

    let r = app.rest("GET", "/rest/devices/tag-a/wipe", &a, None);
    assert_eq!(r.json(), json!({"status": 1}));
    assert_eq!(stored_wipe_flag(&app, id), 2);
}

#[test]
fn wipe_status_reads_the_device_of_the_callers_client() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (_, pw) = app.user("dana@example.com", Role::User);
    let (mobile, mobile_secret) =
        app.client(client_input("Mobile App", "https://m.example.com/cb", 16));
    let web = access(&device_session(
        &app,
        "dana@example.com",
        &pw,
        "tag-1",
        "Browser",
    ));
    let r = password_grant(&app, (&mobile, &mobile_secret), "dana@example.com", &pw);
    assert_eq!(r.status, 200, "{}", r.text);
    let phone = access(&r.json());
    let on_mobile = device_id(&create_device(
        &app,
        &phone,
        json!({"installTagId": "tag-1"}),
    ));
    let r = app.rest(
        "POST",
        &format!("/rest/devices/{on_mobile}/actions/wipe"),
        &admin,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);

    // The built-in client's device with the same tag is not the one to wipe.
    let r = app.rest("GET", "/rest/devices/tag-1/wipe", &web, None);
    assert_eq!(r.json(), json!({"status": 0}));
    assert_eq!(stored_wipe_flag(&app, on_mobile), 1);

    let r = app.rest("GET", "/rest/devices/tag-1/wipe", &phone, None);
    assert_eq!(r.json(), json!({"status": 1}));
    assert_eq!(stored_wipe_flag(&app, on_mobile), 2);
    assert_eq!(
        app.count("install_tag_id = 'tag-1' AND wipe_flag = 0", "devices"),
        1
    );
}

#[test]
fn wipe_request_of_an_unknown_device_is_404() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    for path in [
        "/rest/devices/999999/actions/wipe",
        "/rest/devices/abc/actions/wipe",
    ] {
        assert_error(
            &app.rest("POST", path, &admin, None),
            404,
            "ERR_ENTITY_NOT_FOUND",
        );
    }
}

#[test]
fn user_devices_are_listed_for_the_user_or_an_administrator() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (a_id, a) = app.user_token("a@example.com", Role::User);
    let (b_id, b) = app.user_token("b@example.com", Role::User);
    create_device(&app, &a, json!({"installTagId": "A-1"}));
    create_device(&app, &a, json!({"installTagId": "A-2"}));
    create_device(&app, &b, json!({"installTagId": "B-1"}));
    let path = format!("/rest/users/{a_id}/devices");

    for token in [&a, &admin] {
        let body = assert_paged(&app.rest("GET", &path, token, None));
        assert_eq!(body["total"], 2);
        assert!(column(&body, "user_id").iter().all(|u| u == a_id.as_str()));
        assert_eq!(keys(&body["data"][0]), set_of(DEVICE_FIELDS));
    }
    let body = assert_paged(&app.rest("GET", &format!("{path}?installTagId=A-2"), &a, None));
    assert_eq!(body["total"], 1);
    let body = assert_paged(&app.rest("GET", &format!("{path}?limit=1&offset=1"), &a, None));
    assert_eq!(body["total"], 2);
    assert_eq!(body["data"].as_array().unwrap().len(), 1);
    assert_eq!(body["page"], 2);

    assert_error(&app.rest("GET", &path, &b, None), 403, "ERR_ACCESS_USER");
    assert_error(
        &app.rest(
            "GET",
            &format!("/rest/users/{b_id}/devices?colour=red"),
            &b,
            None,
        ),
        400,
        "ERR_REQUEST_INVALID_FILTER",
    );
    assert_error(
        &app.rest("GET", "/rest/users/no-such-user/devices", &admin, None),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
}

#[test]
fn logout_ends_only_the_current_session() {
    let app = TestApp::spawn();
    let (_, pw) = app.user("dana@example.com", Role::User);
    let one = app.password_token("dana@example.com", &pw);
    let two = app.password_token("dana@example.com", &pw);

    let r = app.rest(
        "DELETE",
        "/rest/devices/me/actions/logout",
        &access(&one),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert_eq!(keys(&body), set_of(&["redirectUri"]));
    let uri = body["redirectUri"].as_str().unwrap();
    assert!(
        uri.starts_with(&format!("{}/oauth/authorize?", app.base)),
        "{uri}"
    );
    assert!(
        uri.contains(&format!("client_id={}", app.admin.client_id)),
        "{uri}"
    );

    // The session's access and refresh tokens are dead.
    assert_error(
        &app.rest("GET", "/rest/users/me", &access(&one), None),
        401,
        "ERR_AUTH_UNAUTHORIZED",
    );
    let r = refresh_grant(&app, &refresh(&one));
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.json()["error"], "invalid_grant");
    assert_error(
        &app.rest(
            "DELETE",
            "/rest/devices/me/actions/logout",
            &access(&one),
            None,
        ),
        401,
        "ERR_AUTH_UNAUTHORIZED",
    );

    // The other session of the same user still works, refresh included.
    assert_eq!(
        app.rest("GET", "/rest/users/me", &access(&two), None)
            .status,
        200
    );
    let r = refresh_grant(&app, &refresh(&two));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        app.rest("GET", "/rest/users/me", &access(&r.json()), None)
            .status,
        200
    );
}

// ---------------------------------------------------------------------------------------------
// OAuth clients
// ---------------------------------------------------------------------------------------------

#[test]
fn client_registry_needs_a_system_or_application_administrator() {
    let app = TestApp::spawn();
    let (_, user) = app.user_token("user@example.com", Role::User);
    let (_, helpdesk) = app.user_token("help@example.com", Role::HelpdeskAdmin);
    let (_, appadmin) = app.user_token("apps@example.com", Role::ApplicationAdmin);
    let builtin = app.admin.client_id.clone();
    let (custom, _) = app.client(client_input("Custom", "https://c.example.com/cb", 9));
    let clients_before = count_all(&app, "clients");

    for token in [&user, &helpdesk] {
        for (method, path, body) in [
            ("GET", "/rest/clients".to_string(), None),
            (
                "POST",
                "/rest/clients".to_string(),
                Some(client_body("Sneaky")),
            ),
            ("GET", format!("/rest/clients/{custom}"), None),
            (
                "PUT",
                format!("/rest/clients/{custom}"),
                Some(client_body("Renamed")),
            ),
            ("DELETE", format!("/rest/clients/{custom}"), None),
            ("GET", format!("/rest/clients/{custom}/scopes"), None),
        ] {
            let r = app.rest(method, &path, token, body);
            assert_error(&r, 403, "ERR_ACCESS_USER");
        }
        // Their own client's settings and scopes are theirs to read.
        let r = app.rest("GET", "/rest/clients/me", token, None);
        assert_eq!(r.status, 200, "{}", r.text);
        let r = app.rest(
            "GET",
            &format!("/rest/clients/{builtin}/scopes"),
            token,
            None,
        );
        assert_eq!(r.status, 200, "{}", r.text);
    }
    assert_eq!(count_all(&app, "clients"), clients_before);
    assert_eq!(app.count("name = 'Custom'", "clients"), 1);
    assert_eq!(app.count("name IN ('Sneaky', 'Renamed')", "clients"), 0);

    // An application administrator manages the registry.
    assert_paged(&app.rest("GET", "/rest/clients", &appadmin, None));
    let created = create_client(&app, &appadmin, client_body("By App Admin"));
    assert!(created["client_secret"].is_string());
    let r = app.rest(
        "DELETE",
        &format!("/rest/clients/{custom}"),
        &appadmin,
        None,
    );
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(app.count("name = 'Custom'", "clients"), 0);
}

#[test]
fn client_list_has_paged_envelope_and_leaves_out_hidden_clients() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (visible, _) = app.client(client_input("Visible", "https://v.example.com/cb", 9));
    let (hidden, _) = app.client(coffer_service::identity::clients::ClientInput {
        flag: Some(4),
        ..client_input("Hidden", "https://h.example.com/cb", 9)
    });
    assert_eq!(count_all(&app, "clients"), 3);

    let body = assert_paged(&app.rest("GET", "/rest/clients", &admin, None));
    assert_eq!(body["total"], 2, "the hidden client is not counted: {body}");
    assert_eq!(body["page"], 1);
    assert_eq!(body["pageSize"], 100);
    let names = column(&body, "name");
    assert_eq!(
        names,
        vec![json!("Coffer Web"), json!("Visible")],
        "ordered by name"
    );
    let ids = column(&body, "id");
    assert!(ids.contains(&json!(visible)));
    assert!(!ids.contains(&json!(hidden)));

    let c = &body["data"][1];
    for field in [
        "id",
        "name",
        "description",
        "redirect_uri",
        "scope",
        "flag",
        "flow",
        "type",
        "access_token_lifetime",
        "refresh_token_lifetime",
        "touch_id",
        "min_version",
        "ask_pin",
        "pin_timeout",
        "max_pin_attempts",
    ] {
        assert!(c.get(field).is_some(), "{field} missing: {c}");
    }
    assert!(c.get("client_secret").is_none(), "{c}");
    assert!(c.get("redirectUri").is_none(), "snake_case records: {c}");
    assert_eq!(c["redirect_uri"], "https://v.example.com/cb");
    assert_eq!(c["flow"], 9);
    assert_eq!(c["type"], 0);

    // The hidden client is still there by id.
    let r = app.rest("GET", &format!("/rest/clients/{hidden}"), &admin, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["name"], "Hidden");
    assert_eq!(r.json()["flag"], 4);

    let body = assert_paged(&app.rest(
        "GET",
        "/rest/clients?orderBy=name:desc&limit=1",
        &admin,
        None,
    ));
    assert_eq!(body["total"], 2);
    assert_eq!(body["pageSize"], 1);
    assert_eq!(column(&body, "name"), vec![json!("Visible")]);
}

#[test]
fn client_list_filters_by_name_and_description() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    for (name, description) in [
        ("Sync Desktop", "Desktop sync agent"),
        ("Sync Mobile", "Phone app"),
        ("Reports", "Nightly export job"),
    ] {
        create_client(
            &app,
            &admin,
            json!({
                "name": name,
                "description": description,
                "redirectUri": "https://app.example.com/cb",
                "scope": "*",
            }),
        );
    }
    let get = |q: &str| assert_paged(&app.rest("GET", &format!("/rest/clients?{q}"), &admin, None));

    let r = get("name=Reports");
    assert_eq!(r["total"], 1);
    assert_eq!(r["data"][0]["name"], "Reports");

    let r = get("name=Sync");
    assert_eq!(r["total"], 0, "a bare name is an exact match");

    let r = get("name:contains=Sync");
    assert_eq!(
        column(&r, "name"),
        vec![json!("Sync Desktop"), json!("Sync Mobile")]
    );

    let r = get("description:contains=sync agent");
    assert_eq!(column(&r, "name"), vec![json!("Sync Desktop")]);

    let r = get("description:contains=first-party");
    assert_eq!(column(&r, "name"), vec![json!("Coffer Web")]);

    for q in [
        "description=Phone app",
        "flow=9",
        "name:in=a,b",
        "orderBy=flow",
    ] {
        let r = app.rest("GET", &format!("/rest/clients?{q}"), &admin, None);
        assert_error(&r, 400, "ERR_REQUEST_INVALID_FILTER");
    }
}

#[test]
fn client_create_answers_the_secret_once_and_the_secret_works() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (_, pw) = app.user("dana@example.com", Role::User);
    let r = app.rest(
        "POST",
        "/rest/clients",
        &admin,
        Some(json!({
            "name": "Partner App",
            "description": "A partner integration",
            "redirectUri": "https://partner.example.com/cb",
            "scope": "folders/* GET/users/*",
            "accessTokenLifetime": 2,
            "refreshTokenLifetime": 48,
            "flow": 24,
        })),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let c = r.json();
    let id = c["id"].as_str().expect("id").to_string();
    let secret = c["client_secret"]
        .as_str()
        .expect("client_secret")
        .to_string();
    assert!(!secret.is_empty());
    assert_eq!(
        r.header("Location"),
        Some(format!("{}/rest/clients/{id}", app.base).as_str())
    );
    assert_eq!(c["name"], "Partner App");
    assert_eq!(c["description"], "A partner integration");
    assert_eq!(c["redirect_uri"], "https://partner.example.com/cb");
    assert_eq!(c["scope"], "folders/* GET/users/*");
    assert_eq!(c["access_token_lifetime"], 2);
    assert_eq!(c["refresh_token_lifetime"], 48);
    assert_eq!(c["flow"], 24);
    assert_eq!(c["type"], 0);
    assert_eq!(c["flag"], 0);
    assert_eq!(
        app.count(&format!("id = '{id}' AND name = 'Partner App'"), "clients"),
        1
    );
    assert_eq!(
        app.count(&format!("secret_hash = '{secret}'"), "clients"),
        0,
        "the secret is stored only as a hash"
    );

    let got = app.rest("GET", &format!("/rest/clients/{id}"), &admin, None);
    assert_eq!(got.status, 200, "{}", got.text);
    assert!(got.json().get("client_secret").is_none(), "{}", got.text);
    assert_eq!(got.json()["name"], "Partner App");

    // The secret authenticates the client at the token endpoint; a wrong one does not.
    let r = password_grant(&app, (&id, &secret), "dana@example.com", &pw);
    assert_eq!(r.status, 200, "{}", r.text);
    let t = r.json();
    assert_eq!(t["scope"], "folders/* GET/users/*");
    assert_eq!(t["expires_in"], 2 * 3600);
    let r = app.rest("GET", "/rest/clients/me", &access(&t), None);
    assert_error(&r, 403, "ERR_ACCESS_USER");
    let r = app.rest("GET", "/rest/users/me", &access(&t), None);
    assert_eq!(r.status, 200, "the scope allows GET users/*: {}", r.text);

    let r = password_grant(&app, (&id, "wrong-secret"), "dana@example.com", &pw);
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.json()["error"], "invalid_client");
}

#[test]
fn client_create_defaults_to_the_code_and_refresh_flows() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let c = create_client(&app, &admin, client_body("Defaults"));
    assert_eq!(c["flow"], 9);
    assert_eq!(c["access_token_lifetime"], 1);
    assert_eq!(c["refresh_token_lifetime"], 336);
    assert_eq!(c["signature_key"], Value::Null);
    assert_eq!(c["touch_id"], false);

    let r = app.rest(
        "POST",
        "/rest/clients?mode=full_with_links",
        &admin,
        Some(client_body("Linked")),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.json()["id"].as_str().unwrap().to_string();
    assert_eq!(
        r.json()["links"][0],
        json!({"rel": "self", "href": format!("{}/rest/clients/{id}", app.base)})
    );
}

#[test]
fn client_create_without_a_required_field_is_422_and_stores_nothing() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let before = count_all(&app, "clients");
    for field in ["name", "description", "redirectUri", "scope"] {
        let mut body = client_body("Incomplete");
        body.as_object_mut().unwrap().remove(field);
        let r = app.rest("POST", "/rest/clients", &admin, Some(body));
        assert_field_error(&r, 422, "ERR_INPUT_REQUIRED", field);

        let mut body = client_body("Incomplete");
        body[field] = json!("  ");
        let r = app.rest("POST", "/rest/clients", &admin, Some(body));
        assert_field_error(&r, 422, "ERR_INPUT_REQUIRED", field);
    }
    assert_eq!(count_all(&app, "clients"), before);
    assert_eq!(app.count("name = 'Incomplete'", "clients"), 0);
}

#[test]
fn client_create_checks_the_token_lifetimes() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let before = count_all(&app, "clients");
    for (field, value, code) in [
        ("accessTokenLifetime", json!("x"), "ERR_INPUT_NOT_INTEGER"),
        ("accessTokenLifetime", json!(1.5), "ERR_INPUT_NOT_INTEGER"),
        ("accessTokenLifetime", json!(true), "ERR_INPUT_NOT_INTEGER"),
        ("accessTokenLifetime", json!(0), "ERR_INPUT_MIN_VALUE"),
        ("accessTokenLifetime", json!(-5), "ERR_INPUT_MIN_VALUE"),
        ("refreshTokenLifetime", json!("12"), "ERR_INPUT_NOT_INTEGER"),
        ("refreshTokenLifetime", json!(0), "ERR_INPUT_MIN_VALUE"),
        (
            "accessTokenLifetime",
            json!(1u64 << 40),
            "ERR_INPUT_INVALID_FORMAT",
        ),
    ] {
        let mut body = client_body("Lifetimes");
        body[field] = value;
        let r = app.rest("POST", "/rest/clients", &admin, Some(body));
        assert_field_error(&r, 422, code, field);
    }
    assert_eq!(count_all(&app, "clients"), before);
}

#[test]
fn client_create_with_a_taken_name_is_409() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    create_client(&app, &admin, client_body("Taken"));
    let before = count_all(&app, "clients");
    for name in ["Taken", " Taken ", "Coffer Web"] {
        let r = app.rest("POST", "/rest/clients", &admin, Some(client_body(name)));
        assert_error(&r, 409, "ERR_ENTITY_EXISTS");
    }
    assert_eq!(count_all(&app, "clients"), before);
    assert_eq!(app.count("name = 'Taken'", "clients"), 1);
}

#[test]
fn client_update_changes_a_custom_clients_fields() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let c = create_client(&app, &admin, client_body("Before"));
    create_client(&app, &admin, client_body("Other"));
    let id = c["id"].as_str().unwrap().to_string();
    let path = format!("/rest/clients/{id}");

    let r = app.rest(
        "PUT",
        &path,
        &admin,
        Some(json!({
            "name": "After",
            "description": "Changed purpose",
            "redirectUri": "https://new.example.com/cb",
            "scope": "folders/*",
            "accessTokenLifetime": 3,
            "refreshTokenLifetime": 24,
        })),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let u = r.json();
    assert_eq!(u["id"], id.as_str());
    assert!(u.get("client_secret").is_none(), "{u}");
    assert_eq!(u["name"], "After");
    assert_eq!(u["description"], "Changed purpose");
    assert_eq!(u["redirect_uri"], "https://new.example.com/cb");
    assert_eq!(u["scope"], "folders/*");
    assert_eq!(u["access_token_lifetime"], 3);
    assert_eq!(u["refresh_token_lifetime"], 24);
    assert_eq!(u["flow"], 9, "the flow stays when not given");

    let got = app.rest("GET", &path, &admin, None).json();
    assert_eq!(got["name"], "After");
    assert_eq!(got["scope"], "folders/*");
    assert_eq!(
        app.count(
            &format!("id = '{id}' AND name = 'After' AND access_token_lifetime = 3"),
            "clients"
        ),
        1
    );
    assert_eq!(app.count("name = 'Before'", "clients"), 0);

    // Taking another client's name is refused and changes nothing.
    let r = app.rest("PUT", &path, &admin, Some(client_body("Other")));
    assert_error(&r, 409, "ERR_ENTITY_EXISTS");
    assert_eq!(
        app.count(&format!("id = '{id}' AND name = 'After'"), "clients"),
        1
    );

    let r = app.rest("PUT", &path, &admin, Some(json!({"name": "Only a name"})));
    assert_field_error(&r, 422, "ERR_INPUT_REQUIRED", "description");
    assert_eq!(
        app.count(&format!("id = '{id}' AND name = 'After'"), "clients"),
        1
    );

    let r = app.rest(
        "PUT",
        "/rest/clients/no-such-client",
        &admin,
        Some(client_body("X")),
    );
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
}

#[test]
fn client_update_of_the_flow_keeps_id_and_secret() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (_, pw) = app.user("dana@example.com", Role::User);
    let c = create_client(&app, &admin, client_body("Evolving"));
    let id = c["id"].as_str().unwrap().to_string();
    let secret = c["client_secret"].as_str().unwrap().to_string();

    let r = password_grant(&app, (&id, &secret), "dana@example.com", &pw);
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.json()["error"], "unauthorized_client");

    let mut body = client_body("Evolving");
    body["flow"] = json!(1 | 8 | 16);
    let r = app.rest("PUT", &format!("/rest/clients/{id}"), &admin, Some(body));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["id"], id.as_str());
    assert_eq!(r.json()["flow"], 25);
    assert!(r.json().get("client_secret").is_none());
    assert_eq!(
        app.count(&format!("id = '{id}' AND flow = 25"), "clients"),
        1
    );

    let r = password_grant(&app, (&id, &secret), "dana@example.com", &pw);
    assert_eq!(
        r.status, 200,
        "the same secret still authenticates: {}",
        r.text
    );
    assert!(r.json()["refresh_token"].is_string());
}

#[test]
fn builtin_client_changes_only_its_lifetimes() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let id = app.admin.client_id.clone();
    let path = format!("/rest/clients/{id}");
    let before = app.rest("GET", &path, &admin, None).json();
    assert_eq!(before["name"], "Coffer Web");
    let same = json!({
        "name": before["name"],
        "description": before["description"],
        "redirectUri": before["redirect_uri"],
        "scope": before["scope"],
    });

    let mut body = same.clone();
    body["accessTokenLifetime"] = json!(5);
    body["refreshTokenLifetime"] = json!(100);
    let r = app.rest("PUT", &path, &admin, Some(body));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["access_token_lifetime"], 5);
    assert_eq!(r.json()["refresh_token_lifetime"], 100);
    assert_eq!(r.json()["name"], "Coffer Web");
    assert_eq!(
        app.count(
            &format!("id = '{id}' AND access_token_lifetime = 5 AND refresh_token_lifetime = 100"),
            "clients"
        ),
        1
    );
    // The new lifetime applies to new tokens.
    let t = app.password_token(&app.admin.admin_email, &app.admin.admin_password);
    assert_eq!(t["expires_in"], 5 * 3600);

    for (field, value) in [
        ("name", json!("Renamed Web")),
        ("description", json!("Another purpose")),
        ("redirectUri", json!("https://evil.example.com/cb")),
        ("scope", json!("folders/*")),
        ("flow", json!(1)),
    ] {
        let mut body = same.clone();
        body[field] = value;
        body["accessTokenLifetime"] = json!(7);
        let r = app.rest("PUT", &path, &admin, Some(body));
        assert_error(&r, 403, "ERR_ACCESS_USER");
    }
    let after = app.rest("GET", &path, &admin, None).json();
    assert_eq!(after["name"], "Coffer Web");
    assert_eq!(after["description"], before["description"]);
    assert_eq!(after["redirect_uri"], before["redirect_uri"]);
    assert_eq!(after["scope"], before["scope"]);
    assert_eq!(after["flow"], before["flow"]);
    assert_eq!(
        after["access_token_lifetime"], 5,
        "a refused update changes nothing"
    );
    assert_eq!(
        app.count(
            &format!("id = '{id}' AND name = 'Coffer Web' AND access_token_lifetime = 5"),
            "clients"
        ),
        1
    );
}

#[test]
fn builtin_client_cannot_be_deleted() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let id = app.admin.client_id.clone();
    let r = app.rest("DELETE", &format!("/rest/clients/{id}"), &admin, None);
    assert_error(&r, 403, "ERR_ACCESS_USER");
    assert_eq!(app.count(&format!("id = '{id}'"), "clients"), 1);
    // Nothing it issued was touched: the caller's token still works.
    assert_eq!(app.rest("GET", "/rest/users/me", &admin, None).status, 200);
}

#[test]
fn client_delete_answers_204_then_404_and_ends_its_tokens() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (_, pw) = app.user("dana@example.com", Role::User);
    let (id, secret) = app.client(client_input("Doomed", "https://d.example.com/cb", 16 | 8));
    let r = password_grant(&app, (&id, &secret), "dana@example.com", &pw);
    assert_eq!(r.status, 200, "{}", r.text);
    let token = access(&r.json());
    create_device(&app, &token, json!({"installTagId": "via-doomed"}));
    assert_eq!(app.count(&format!("client_id = '{id}'"), "devices"), 1);

    let r = app.rest("DELETE", &format!("/rest/clients/{id}"), &admin, None);
    assert_eq!(r.status, 204, "{}", r.text);
    assert!(r.text.is_empty());
    assert_eq!(app.count(&format!("id = '{id}'"), "clients"), 0);
    assert_eq!(app.count(&format!("client_id = '{id}'"), "devices"), 0);
    assert_eq!(app.count(&format!("client_id = '{id}'"), ACCESS_TOKENS), 0);

    assert_error(
        &app.rest("GET", &format!("/rest/clients/{id}"), &admin, None),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    assert_error(
        &app.rest("DELETE", &format!("/rest/clients/{id}"), &admin, None),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    assert_error(
        &app.rest("GET", "/rest/users/me", &token, None),
        401,
        "ERR_AUTH_UNAUTHORIZED",
    );
    let r = password_grant(&app, (&id, &secret), "dana@example.com", &pw);
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.json()["error"], "invalid_client");
}

#[test]
fn clients_me_is_the_client_of_the_token() {
    let app = TestApp::spawn();
    let (_, pw) = app.user("dana@example.com", Role::User);
    let builtin_token = app.password_token("dana@example.com", &pw);
    let r = app.rest("GET", "/rest/clients/me", &access(&builtin_token), None);
    assert_eq!(r.status, 200, "{}", r.text);
    let me = r.json();
    assert_eq!(me["id"], app.admin.client_id.as_str());
    assert_eq!(me["name"], "Coffer Web");
    assert_eq!(me["builtin"], true);
    assert!(me.get("client_secret").is_none());
    for field in ["ask_pin", "pin_timeout", "max_pin_attempts"] {
        assert!(me[field].is_i64(), "{field}: {me}");
    }

    let (id, secret) = app.client(client_input("Mobile", "https://m.example.com/cb", 16));
    let r = password_grant(&app, (&id, &secret), "dana@example.com", &pw);
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.rest("GET", "/rest/clients/me", &access(&r.json()), None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["id"], id.as_str());
    assert_eq!(r.json()["name"], "Mobile");
    assert_eq!(r.json()["type"], 0);
}

#[test]
fn client_scopes_lists_the_scope_items() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (_, user) = app.user_token("dana@example.com", Role::User);
    let c = create_client(
        &app,
        &admin,
        json!({
            "name": "Scoped",
            "description": "Scoped client",
            "redirectUri": "https://s.example.com/cb",
            "scope": "folders/*  GET/users/* files/* folders/*",
        }),
    );
    let id = c["id"].as_str().unwrap();
    assert_eq!(
        c["scope"], "folders/* GET/users/* files/*",
        "canonical, without repeats"
    );

    let r = app.rest("GET", &format!("/rest/clients/{id}/scopes"), &admin, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json(),
        json!({"data": ["folders/*", "GET/users/*", "files/*"]})
    );

    let r = app.rest(
        "GET",
        &format!("/rest/clients/{}/scopes", app.admin.client_id),
        &user,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json(), json!({"data": ["*"]}));

    assert_error(
        &app.rest("GET", &format!("/rest/clients/{id}/scopes"), &user, None),
        403,
        "ERR_ACCESS_USER",
    );
    assert_error(
        &app.rest("GET", "/rest/clients/no-such-client/scopes", &admin, None),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
}

#[test]
fn refresh_tokens_are_issued_only_to_clients_with_the_refresh_flow() {
    let app = TestApp::spawn();
    let (_, pw) = app.user("dana@example.com", Role::User);
    let (plain, plain_secret) =
        app.client(client_input("No Refresh", "https://a.example.com/cb", 16));
    let (refreshing, refreshing_secret) = app.client(client_input(
        "With Refresh",
        "https://b.example.com/cb",
        16 | 8,
    ));

    let r = password_grant(&app, (&plain, &plain_secret), "dana@example.com", &pw);
    assert_eq!(r.status, 200, "{}", r.text);
    let t = r.json();
    assert!(t["access_token"].is_string());
    assert!(
        t.get("refresh_token").is_none_or(Value::is_null),
        "no refresh token without flow 8: {t}"
    );
    assert_eq!(
        app.count(&format!("client_id = '{plain}'"), REFRESH_TOKENS),
        0
    );

    let r = password_grant(
        &app,
        (&refreshing, &refreshing_secret),
        "dana@example.com",
        &pw,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.json()["refresh_token"].is_string(), "{}", r.text);
    assert_eq!(
        app.count(&format!("client_id = '{refreshing}'"), REFRESH_TOKENS),
        1
    );
}

// ---------------------------------------------------------------------------------------------
// Locations
// ---------------------------------------------------------------------------------------------

#[test]
fn location_list_has_metadata_envelope_and_orders_by_name() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (_, user) = app.user_token("dana@example.com", Role::User);
    for (name, domain) in [
        ("Frankfurt", "fra.example.com"),
        ("Amsterdam", "ams.example.com"),
        ("London", "lon.example.com"),
    ] {
        create_location(&app, &admin, name, domain);
    }

    let r = app.rest("GET", "/rest/locations", &user, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert_eq!(keys(&body), set_of(&["data", "metadata"]));
    assert_eq!(
        body["metadata"],
        json!({"total": 3, "limit": 100, "offset": 0})
    );
    assert_eq!(
        column(&body, "name"),
        vec![json!("Amsterdam"), json!("Frankfurt"), json!("London")]
    );
    let first = &body["data"][0];
    assert_eq!(keys(first), set_of(&["id", "name", "dns", "tenantId"]));
    assert_eq!(first["dns"], "ams.example.com");
    assert_eq!(first["tenantId"], 1);

    let r = app.rest("GET", "/rest/locations?orderBy=name:desc", &user, None);
    assert_eq!(
        column(&r.json(), "name"),
        vec![json!("London"), json!("Frankfurt"), json!("Amsterdam")]
    );
    let r = app.rest("GET", "/rest/locations?orderBy=name", &user, None);
    assert_eq!(r.json()["data"][0]["name"], "Amsterdam");

    let r = app.rest("GET", "/rest/locations?offset=1&limit=1", &user, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json()["metadata"],
        json!({"total": 3, "limit": 1, "offset": 1})
    );
    assert_eq!(column(&r.json(), "name"), vec![json!("Frankfurt")]);

    for q in ["orderBy=dns", "name=London", "orderBy=name:up"] {
        let r = app.rest("GET", &format!("/rest/locations?{q}"), &user, None);
        assert_error(&r, 400, "ERR_REQUEST_INVALID_FILTER");
    }
}

#[test]
fn location_list_limit_is_between_1_and_10000() {
    let app = TestApp::spawn();
    let (_, user) = app.user_token("dana@example.com", Role::User);
    for limit in ["0", "10001", "-1", "many"] {
        let r = app.rest(
            "GET",
            &format!("/rest/locations?limit={limit}"),
            &user,
            None,
        );
        assert_field_error(&r, 422, "ERR_INPUT_INVALID_FORMAT", "limit");
    }
    for limit in [1, 10_000] {
        let r = app.rest(
            "GET",
            &format!("/rest/locations?limit={limit}"),
            &user,
            None,
        );
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.json()["metadata"]["limit"], limit);
    }
}

#[test]
fn location_create_by_a_system_administrator_answers_id_name_dns() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let r = app.rest(
        "POST",
        "/rest/locations",
        &admin,
        Some(json!({"name": "Zurich", "domain": "ZRH.Example.com"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert_eq!(keys(&body), set_of(&["id", "name", "dns"]));
    let id = body["id"].as_i64().expect("id");
    assert_eq!(body["name"], "Zurich");
    assert_eq!(body["dns"], "zrh.example.com");
    assert_eq!(
        r.header("Location"),
        Some(format!("{}/rest/locations/{id}", app.base).as_str())
    );
    assert_eq!(
        app.count(
            &format!("id = {id} AND name = 'Zurich' AND dns = 'zrh.example.com'"),
            "locations"
        ),
        1
    );
}

#[test]
fn location_create_with_return_entity_answers_the_full_entity() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let r = app.rest(
        "POST",
        "/rest/locations?returnEntity=true",
        &admin,
        Some(json!({"name": "Oslo", "domain": "osl.example.com"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert_eq!(keys(&body), set_of(&["id", "name", "dns", "tenantId"]));
    assert_eq!(body["tenantId"], 1);
    assert!(r.header("Location").is_some());

    let r = app.rest(
        "POST",
        "/rest/locations",
        &admin,
        Some(json!({"name": "Bergen", "domain": "bgo.example.com", "addLinks": true})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.json()["id"].as_i64().unwrap();
    assert_eq!(
        r.json()["links"][0],
        json!({"rel": "self", "href": format!("{}/rest/locations/{id}", app.base)})
    );

    let r = app.rest(
        "POST",
        "/rest/locations?returnEntity=maybe",
        &admin,
        Some(json!({"name": "Tromso", "domain": "tos.example.com"})),
    );
    assert_field_error(&r, 422, "ERR_INPUT_NOT_BOOLEAN", "returnEntity");
    assert_eq!(count_all(&app, "locations"), 2);
}

#[test]
fn location_writes_need_a_system_administrator() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (_, user) = app.user_token("dana@example.com", Role::User);
    let (_, appadmin) = app.user_token("apps@example.com", Role::ApplicationAdmin);
    let id = create_location(&app, &admin, "Paris", "par.example.com")["id"]
        .as_i64()
        .unwrap();

    for token in [&user, &appadmin] {
        let r = app.rest(
            "POST",
            "/rest/locations",
            token,
            Some(json!({"name": "Rogue", "domain": "rogue.example.com"})),
        );
        assert_error(&r, 403, "ERR_ACCESS_SYSTEM_ADMIN");
        let r = app.rest("DELETE", &format!("/rest/locations/{id}"), token, None);
        assert_error(&r, 403, "ERR_ACCESS_SYSTEM_ADMIN");
        // Reading is for everyone.
        let r = app.rest("GET", &format!("/rest/locations/{id}"), token, None);
        assert_eq!(r.status, 200, "{}", r.text);
    }
    assert_eq!(count_all(&app, "locations"), 1);
    assert_eq!(app.count("name = 'Rogue'", "locations"), 0);
    assert_eq!(app.count(&format!("id = {id}"), "locations"), 1);
}

#[test]
fn location_create_without_name_or_domain_is_422() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    for (body, field) in [
        (json!({"domain": "x.example.com"}), "name"),
        (json!({"name": "  ", "domain": "x.example.com"}), "name"),
        (json!({"name": "X"}), "domain"),
        (json!({"name": "X", "domain": ""}), "domain"),
        (json!({}), "name"),
    ] {
        let r = app.rest("POST", "/rest/locations", &admin, Some(body));
        assert_field_error(&r, 422, "ERR_INPUT_REQUIRED", field);
    }
    assert_eq!(count_all(&app, "locations"), 0);
}

#[test]
fn location_create_with_a_bad_domain_is_422() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let long_label = format!("{}.example.com", "a".repeat(64));
    let too_long = ["abc"; 80].join(".");
    for domain in [
        "ex_ample.com",
        "-bad.example.com",
        "bad-.example.com",
        "a..example.com",
        "has space.example.com",
        "https://x.example.com",
        long_label.as_str(),
        too_long.as_str(),
    ] {
        let r = app.rest(
            "POST",
            "/rest/locations",
            &admin,
            Some(json!({"name": "Bad", "domain": domain})),
        );
        assert_field_error(&r, 422, "ERR_INPUT_INVALID_FORMAT", "domain");
    }
    assert_eq!(count_all(&app, "locations"), 0);
}

#[test]
fn location_create_with_a_taken_name_is_409() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    create_location(&app, &admin, "Madrid", "mad.example.com");
    for name in ["Madrid", "  Madrid "] {
        let r = app.rest(
            "POST",
            "/rest/locations",
            &admin,
            Some(json!({"name": name, "domain": "mad2.example.com"})),
        );
        assert_error(&r, 409, "ERR_ENTITY_EXISTS");
    }
    assert_eq!(count_all(&app, "locations"), 1);
    assert_eq!(app.count("dns = 'mad2.example.com'", "locations"), 0);
}

#[test]
fn location_get_answers_the_entity_or_404() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (_, user) = app.user_token("dana@example.com", Role::User);
    let id = create_location(&app, &admin, "Vienna", "vie.example.com")["id"]
        .as_i64()
        .unwrap();

    let r = app.rest("GET", &format!("/rest/locations/{id}"), &user, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json(),
        json!({"id": id, "name": "Vienna", "dns": "vie.example.com", "tenantId": 1})
    );
    let r = app.rest(
        "GET",
        &format!("/rest/locations/{id}?mode=full_with_links"),
        &user,
        None,
    );
    assert!(r.json()["links"].is_array(), "{}", r.text);

    for path in [
        format!("/rest/locations/{}", id + 1000),
        "/rest/locations/vienna".to_string(),
        "/rest/locations/0".to_string(),
    ] {
        assert_error(
            &app.rest("GET", &path, &user, None),
            404,
            "ERR_ENTITY_NOT_FOUND",
        );
    }
}

#[test]
fn location_delete_answers_204_then_404() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let id = create_location(&app, &admin, "Prague", "prg.example.com")["id"]
        .as_i64()
        .unwrap();
    create_location(&app, &admin, "Brno", "brq.example.com");

    let r = app.rest("DELETE", &format!("/rest/locations/{id}"), &admin, None);
    assert_eq!(r.status, 204, "{}", r.text);
    assert!(r.text.is_empty());
    assert_eq!(app.count(&format!("id = {id}"), "locations"), 0);
    assert_eq!(count_all(&app, "locations"), 1);

    assert_error(
        &app.rest("GET", &format!("/rest/locations/{id}"), &admin, None),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    assert_error(
        &app.rest("DELETE", &format!("/rest/locations/{id}"), &admin, None),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
}

#[test]
fn default_location_cannot_be_deleted() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let id = create_location(&app, &admin, "Home", "home.example.com")["id"]
        .as_i64()
        .unwrap();
    coffer_service::identity::settings::set(&app.ctx, "locationId", &id.to_string(), None)
        .expect("set default location");

    let r = app.rest("DELETE", &format!("/rest/locations/{id}"), &admin, None);
    assert_error(&r, 403, "ERR_ACCESS_USER");
    assert_eq!(app.count(&format!("id = {id}"), "locations"), 1);

    // Once another location is the default, it can go.
    coffer_service::identity::settings::set(&app.ctx, "locationId", "null", None).unwrap();
    let r = app.rest("DELETE", &format!("/rest/locations/{id}"), &admin, None);
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(count_all(&app, "locations"), 0);
}

// ---------------------------------------------------------------------------------------------
// Settings and the current user
// ---------------------------------------------------------------------------------------------

#[test]
fn password_policy_reflects_the_stored_setting() {
    let app = TestApp::spawn();
    let (_, user) = app.user_token("dana@example.com", Role::User);
    let r = app.rest("GET", "/rest/settings/passwordPolicy", &user, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json(),
        json!({
            "enabled": true,
            "minLength": 8,
            "minNumeric": 1,
            "minLower": 1,
            "minUpper": 1,
            "minSpecial": 0,
            "allowBrowserAutofill": true,
        })
    );

    let policy = json!({
        "enabled": true,
        "minLength": 14,
        "minNumeric": 2,
        "minLower": 3,
        "minUpper": 1,
        "minSpecial": 1,
        "allowBrowserAutofill": false,
    });
    coffer_service::identity::settings::set(&app.ctx, "passwordPolicy", &policy.to_string(), None)
        .expect("set policy");
    let r = app.rest("GET", "/rest/settings/passwordPolicy", &user, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json(), policy);
}

#[test]
fn system_settings_have_the_interface_fields() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (_, user) = app.user_token("dana@example.com", Role::User);
    let r = app.rest("GET", "/rest/settings/system", &user, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json(),
        // No default location and no mobile number: left out, never null.
        json!({
            "languageId": 1,
            "storageUsed": 0,
            "storageQuota": 10i64 * 1024 * 1024 * 1024,
            "mobileNumberVerified": false,
        })
    );

    let id = create_location(&app, &admin, "Home", "home.example.com")["id"]
        .as_i64()
        .unwrap();
    coffer_service::identity::settings::set(&app.ctx, "locationId", &id.to_string(), None).unwrap();
    coffer_service::identity::settings::set(&app.ctx, "storageQuota", "42", None).unwrap();
    coffer_service::identity::settings::set(&app.ctx, "languageId", "3", None).unwrap();
    let r = app.rest("GET", "/rest/settings/system", &user, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let s = r.json();
    assert_eq!(s["locationId"], id);
    assert_eq!(s["storageQuota"], 42);
    assert_eq!(s["languageId"], 3);
}

#[test]
fn users_me_has_the_current_user_fields() {
    let app = TestApp::spawn();
    let (uid, user) = app.user_token("dana@example.com", Role::User);
    let r = app.rest("GET", "/rest/users/me", &user, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let me = r.json();
    for field in [
        "id",
        "email",
        "name",
        "basedirId",
        "mydirId",
        "syncdirId",
        "userTypeId",
        "adminRoleId",
        "created",
        "internal",
        "serviceName",
    ] {
        assert!(me.get(field).is_some(), "{field} missing: {me}");
    }
    assert_eq!(me["id"], uid.as_str());
    assert_eq!(me["email"], "dana@example.com");
    assert_eq!(me["name"], "dana@example.com");
    assert_eq!(me["adminRoleId"], 0);
    assert_eq!(me["internal"], true);
    assert_eq!(me["serviceName"], "Coffer");
    assert!(me["userTypeId"].is_i64());
    for dir in ["basedirId", "mydirId", "syncdirId"] {
        assert!(
            me[dir].as_str().is_some_and(|s| !s.is_empty()),
            "{dir}: {me}"
        );
    }
    let created = me["created"].as_str().unwrap();
    assert_eq!(created.len(), 10, "a date: {created}");
    assert_eq!(&created[4..5], "-");
    assert!(me.get("links").is_none());

    let admin = app.admin_token();
    let me = app
        .rest("GET", "/rest/users/me?mode=full_with_links", &admin, None)
        .json();
    assert_eq!(me["email"], app.admin.admin_email.as_str());
    assert_eq!(me["adminRoleId"], 1);
    assert_eq!(
        me["links"],
        json!([{"rel": "self", "href": format!("{}/rest/users/me", app.base)}])
    );
}

// ---------------------------------------------------------------------------------------------
// Authentication and bad input shared by these endpoints
// ---------------------------------------------------------------------------------------------

#[test]
fn resource_calls_without_a_valid_token_are_401() {
    let app = TestApp::spawn();
    for (method, path) in [
        ("GET", "/rest/devices"),
        ("POST", "/rest/devices"),
        ("GET", "/rest/devices/1"),
        ("PATCH", "/rest/devices/me/actions/wipe"),
        ("DELETE", "/rest/devices/me/actions/logout"),
        ("GET", "/rest/clients"),
        ("GET", "/rest/clients/me"),
        ("GET", "/rest/locations"),
        ("POST", "/rest/locations"),
        ("GET", "/rest/settings/system"),
        ("GET", "/rest/settings/passwordPolicy"),
        ("GET", "/rest/users/me"),
    ] {
        let r = app.rest(method, path, "not-a-token", None);
        assert_error(&r, 401, "ERR_AUTH_UNAUTHORIZED");
        let r = app.send(method, path, &[("X-Coffer-Version", "28")], None);
        assert_error(&r, 401, "ERR_AUTH_UNAUTHORIZED");
    }
    assert_eq!(count_all(&app, "devices"), 0);
    assert_eq!(count_all(&app, "locations"), 0);
}

/// What the bad-input tests write to: the administrator's token, a device and a custom client.
struct BadInputFixture {
    admin: String,
    device: i64,
    client: String,
}

impl BadInputFixture {
    fn new(app: &TestApp) -> BadInputFixture {
        let admin = app.admin_token();
        let device = device_id(&create_device(app, &admin, json!({"installTagId": "SN-1"})));
        let (client, _) = app.client(client_input("Custom", "https://c.example.com/cb", 9));
        BadInputFixture {
            admin,
            device,
            client,
        }
    }
}

/// The row counts of the tables these endpoints write.
fn stored_counts(app: &TestApp) -> [i64; 3] {
    ["devices", "clients", "locations"].map(|t| count_all(app, t))
}

#[test]
fn bodies_that_are_not_json_are_400() {
    let app = TestApp::spawn();
    let BadInputFixture {
        admin,
        device,
        client,
    } = BadInputFixture::new(&app);
    let before = stored_counts(&app);
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let too_big = format!("{{\"installTagId\": \"{}\"}}", "x".repeat(1024 * 1024));
    for (method, path) in [
        ("POST", "/rest/devices".to_string()),
        ("PUT", format!("/rest/devices/{device}")),
        ("POST", "/rest/clients".to_string()),
        ("PUT", format!("/rest/clients/{client}")),
        ("POST", "/rest/locations".to_string()),
    ] {
        for body in [
            "{not json",
            "installTagId=x",
            "{\"installTagId\": \"x\",}",
            "\u{1}",
            "{\"installTagId\": 1e999}",
            deep.as_str(),
        ] {
            let r = raw(&app, method, &path, &admin, "application/json", body);
            assert_error(&r, 400, "ERR_REQUEST_INVALID_JSON");
        }
        // A body over the limit is refused before it is parsed.
        let r = raw(&app, method, &path, &admin, "application/json", &too_big);
        assert_error(&r, 413, "ERR_REQUEST_TOO_LARGE");
    }
    assert_eq!(stored_counts(&app), before);
    assert_eq!(app.count("name = 'Custom' AND flow = 9", "clients"), 1);
}

#[test]
fn bodies_that_are_not_json_objects_are_400() {
    let app = TestApp::spawn();
    let BadInputFixture {
        admin,
        device,
        client,
    } = BadInputFixture::new(&app);
    let before = stored_counts(&app);
    for (method, path) in [
        ("POST", "/rest/devices".to_string()),
        ("PUT", format!("/rest/devices/{device}")),
        ("POST", "/rest/clients".to_string()),
        ("PUT", format!("/rest/clients/{client}")),
        ("POST", "/rest/locations".to_string()),
    ] {
        for body in [
            json!([{"installTagId": "x"}]),
            json!([]),
            json!("installTagId"),
            json!(42),
            json!(true),
        ] {
            let r = app.rest(method, &path, &admin, Some(body));
            assert_error(&r, 400, "ERR_REQUEST_INVALID_JSON");
        }
    }
    assert_eq!(stored_counts(&app), before);
}

#[test]
fn fields_of_the_wrong_type_are_422_with_the_fields_code() {
    let app = TestApp::spawn();
    let BadInputFixture {
        admin,
        device,
        client,
    } = BadInputFixture::new(&app);
    let before = stored_counts(&app);
    let mut client_name = client_body("Typed");
    client_name["name"] = json!(7);
    let mut client_flow = client_body("Typed");
    client_flow["flow"] = json!("all");
    let mut client_links = client_body("Typed");
    client_links["addLinks"] = json!("yes");
    let mut client_scope = client_body("Typed");
    client_scope["scope"] = json!(["folders/*"]);
    let cases: Vec<(&str, String, Value, &str, &str)> = vec![
        (
            "POST",
            "/rest/devices".into(),
            json!({"installTagId": 5}),
            "ERR_INPUT_NOT_STRING",
            "installTagId",
        ),
        (
            "POST",
            "/rest/devices".into(),
            json!({"installTagId": "x", "installName": ["a"]}),
            "ERR_INPUT_NOT_STRING",
            "installName",
        ),
        (
            "POST",
            "/rest/devices".into(),
            json!({"installTagId": "x", "userId": 12}),
            "ERR_INPUT_NOT_STRING",
            "userId",
        ),
        (
            "POST",
            "/rest/devices".into(),
            json!({"installTagId": "x", "addLinks": "yes"}),
            "ERR_INPUT_NOT_BOOLEAN",
            "addLinks",
        ),
        (
            "PUT",
            format!("/rest/devices/{device}"),
            json!({"mobileKeyStore": {}}),
            "ERR_INPUT_NOT_STRING",
            "mobileKeyStore",
        ),
        (
            "PUT",
            format!("/rest/devices/{device}"),
            json!({"registrationToken": 1}),
            "ERR_INPUT_NOT_STRING",
            "registrationToken",
        ),
        (
            "POST",
            "/rest/clients".into(),
            client_name.clone(),
            "ERR_INPUT_NOT_STRING",
            "name",
        ),
        (
            "POST",
            "/rest/clients".into(),
            client_flow.clone(),
            "ERR_INPUT_NOT_INTEGER",
            "flow",
        ),
        (
            "POST",
            "/rest/clients".into(),
            client_links,
            "ERR_INPUT_NOT_BOOLEAN",
            "addLinks",
        ),
        (
            "POST",
            "/rest/clients".into(),
            client_scope,
            "ERR_INPUT_NOT_STRING",
            "scope",
        ),
        (
            "PUT",
            format!("/rest/clients/{client}"),
            client_name,
            "ERR_INPUT_NOT_STRING",
            "name",
        ),
        (
            "PUT",
            format!("/rest/clients/{client}"),
            client_flow,
            "ERR_INPUT_NOT_INTEGER",
            "flow",
        ),
        (
            "POST",
            "/rest/locations".into(),
            json!({"name": 1, "domain": "x.example.com"}),
            "ERR_INPUT_NOT_STRING",
            "name",
        ),
        (
            "POST",
            "/rest/locations".into(),
            json!({"name": "X", "domain": ["x.example.com"]}),
            "ERR_INPUT_NOT_STRING",
            "domain",
        ),
    ];
    for (method, path, body, code, field) in cases {
        let r = app.rest(method, &path, &admin, Some(body));
        assert_field_error(&r, 422, code, field);
    }
    assert_eq!(stored_counts(&app), before);
    assert_eq!(app.count("name = 'Custom' AND flow = 9", "clients"), 1);
    assert_eq!(
        app.count(
            &format!("id = {device} AND mobile_key_store IS NULL"),
            "devices"
        ),
        1
    );
}

#[test]
fn oversized_values_are_422_invalid_format() {
    let app = TestApp::spawn();
    let BadInputFixture {
        admin,
        device,
        client,
    } = BadInputFixture::new(&app);
    let before = stored_counts(&app);
    let huge = "x".repeat(10_000);
    let mut long_name = client_body("ignored");
    long_name["name"] = json!("n".repeat(300));
    let mut long_description = client_body("Long description");
    long_description["description"] = json!("d".repeat(2001));
    let mut long_uri = client_body("Long uri");
    long_uri["redirectUri"] = json!(format!("https://x.example.com/{huge}"));
    let mut bad_uri = client_body("Bad uri");
    bad_uri["redirectUri"] = json!("not a uri");
    let mut bad_scope = client_body("Bad scope");
    bad_scope["scope"] = json!("GET");
    let cases: Vec<(&str, String, Value, &str)> = vec![
        (
            "POST",
            "/rest/devices".into(),
            json!({"installTagId": huge}),
            "installTagId",
        ),
        (
            "POST",
            "/rest/devices".into(),
            json!({"installTagId": "tag\u{7}bell"}),
            "installTagId",
        ),
        (
            "POST",
            "/rest/devices".into(),
            json!({"installTagId": "x", "installName": huge}),
            "installName",
        ),
        (
            "POST",
            "/rest/devices".into(),
            json!({"installTagId": "x", "mobileKeyStore": "k".repeat(9000)}),
            "mobileKeyStore",
        ),
        (
            "PUT",
            format!("/rest/devices/{device}"),
            json!({"mobileKeyStore": "k".repeat(9000)}),
            "mobileKeyStore",
        ),
        (
            "PUT",
            format!("/rest/devices/{device}"),
            json!({"registrationToken": huge}),
            "registrationToken",
        ),
        ("POST", "/rest/clients".into(), long_name.clone(), "name"),
        (
            "POST",
            "/rest/clients".into(),
            long_description,
            "description",
        ),
        ("POST", "/rest/clients".into(), long_uri, "redirectUri"),
        ("POST", "/rest/clients".into(), bad_uri, "redirectUri"),
        ("POST", "/rest/clients".into(), bad_scope, "scope"),
        ("PUT", format!("/rest/clients/{client}"), long_name, "name"),
        (
            "POST",
            "/rest/locations".into(),
            json!({"name": huge, "domain": "x.example.com"}),
            "name",
        ),
        (
            "POST",
            "/rest/locations".into(),
            json!({"name": "X", "domain": huge}),
            "domain",
        ),
    ];
    for (method, path, body, field) in cases {
        let r = app.rest(method, &path, &admin, Some(body));
        assert_field_error(&r, 422, "ERR_INPUT_INVALID_FORMAT", field);
    }
    assert_eq!(stored_counts(&app), before);
    assert_eq!(app.count("name = 'Custom'", "clients"), 1);
    assert_eq!(
        app.count(
            &format!("id = {device} AND mobile_key_store IS NULL AND registration_token IS NULL"),
            "devices"
        ),
        1
    );
}
