//! The records Coffer answers against the reference description's schemas
//! (`tests/reference/records.json`: the property names and types of the reference's records,
//! nothing else), so that the reference's clients work unchanged. Every declared property Coffer
//! can fill is present with its declared type and never `null`; the ones it cannot fill are
//! listed here with the reason (and in docs/api.md). Where the interface speaks it wins: client
//! and device records are snake_case, a device's `wipe_flag` is an integer and its
//! `mobile_key_store` may be `null`.

use coffer_domain::Role;
use coffer_tests::{Body, TestApp};
use serde_json::{json, Value};

const RECORDS: &str = include_str!("../../reference/records.json");

/// Declared properties Coffer cannot fill, per record, with the reason.
const UNFILLABLE: &[(&str, &str, &str)] = &[
    (
        "Client",
        "installer",
        "Coffer distributes no client installers",
    ),
    (
        "Client",
        "emailMatch",
        "no external mail directory to match against",
    ),
    (
        "ClientNew",
        "installer",
        "Coffer distributes no client installers",
    ),
    (
        "ClientNew",
        "emailMatch",
        "no external mail directory to match against",
    ),
    (
        "Settings",
        "signature",
        "Coffer sends no mail, so keeps no mail signature",
    ),
    (
        "Settings",
        "mobileKeyStore",
        "Coffer keeps key stores per device (the device record)",
    ),
    ("ScimUser", "photos", "Coffer keeps no user photos"),
];

/// Declared properties present only when they have a value or were asked for.
const CONDITIONAL: &[(&str, &str, &str)] = &[
    (
        "ScimUser",
        "roles",
        "an ordinary user has no administrator role",
    ),
    (
        "Client",
        "signatureKey",
        "only for a client with a registered signature key (masked)",
    ),
    (
        "ClientNew",
        "signatureKey",
        "only for a client with a registered signature key (masked)",
    ),
    ("Client", "links", "with addLinks or mode=full_with_links"),
    (
        "ClientNew",
        "links",
        "with addLinks or mode=full_with_links",
    ),
    ("Device", "links", "with addLinks or mode=full_with_links"),
    ("Settings", "links", "with addLinks or mode=full_with_links"),
    ("UserMe", "links", "with addLinks or mode=full_with_links"),
    (
        "Settings",
        "locationId",
        "only when a default location is set",
    ),
    (
        "Settings",
        "mobileNumber",
        "only when the user has a mobile number",
    ),
    (
        "ScimUser",
        "phoneNumbers",
        "only when the user has a mobile number",
    ),
    (
        "ScimUser",
        "preferredLanguage",
        "only when one was provisioned",
    ),
    ("ScimUser", "displayName", "only when the user has a name"),
];

/// Where the interface overrides the reference's declared type.
const TYPE_OVERRIDES: &[(&str, &str, &str)] = &[
    // Interface §2: `wipe_flag` integer 0–3 (the reference declares a string).
    ("Device", "wipeFlag", "integer"),
    // Interface §2: `mobile_key_store` string or null.
    ("Device", "mobileKeyStore", "string-or-null"),
    // Interface §2: `user_id` integer or string (Coffer's user ids are UUID strings).
    ("Device", "userId", "string"),
];

fn snake(name: &str) -> String {
    let mut out = String::new();
    for ch in name.chars() {
        if ch.is_ascii_uppercase() {
            out.push('_');
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

fn listed(table: &[(&str, &str, &str)], record: &str, prop: &str) -> bool {
    table.iter().any(|(r, p, _)| *r == record && *p == prop)
}

/// Checks `value` against the reference's record `record`; `snake_case` for the records the
/// interface gives in snake_case. `expect_conditional` names conditional properties that must
/// be present in this value.
fn check(record: &str, value: &Value, snake_case: bool, expect_conditional: &[&str]) {
    let all: Value = serde_json::from_str(RECORDS).unwrap();
    let schema = &all[record];
    let props = schema["properties"].as_object().unwrap();
    let obj = value
        .as_object()
        .unwrap_or_else(|| panic!("{record}: not an object: {value}"));
    for (prop, ty) in props {
        let key = if snake_case {
            snake(prop)
        } else {
            prop.clone()
        };
        let got = obj.get(&key);
        if listed(UNFILLABLE, record, prop) {
            assert!(
                got.is_none_or(|v| !v.is_null()),
                "{record}.{key} is null: {value}"
            );
            continue;
        }
        let conditional = listed(CONDITIONAL, record, prop);
        let got = match got {
            Some(v) => v,
            None if conditional && !expect_conditional.contains(&prop.as_str()) => continue,
            None => panic!("{record}.{key} is missing: {value}"),
        };
        let ty = TYPE_OVERRIDES
            .iter()
            .find(|(r, p, _)| *r == record && *p == prop)
            .map(|(_, _, t)| *t)
            .unwrap_or(ty.as_str().unwrap());
        let ok = match ty {
            "string" => got.is_string(),
            "integer" => got.is_i64(),
            "boolean" => got.is_boolean(),
            "array" => got.is_array(),
            "object" => got.is_object(),
            "string-or-null" => got.is_string() || got.is_null(),
            other => panic!("{record}.{prop}: unknown type {other}"),
        };
        assert!(ok, "{record}.{key} should be {ty}: {got} in {value}");
    }
    for required in schema["required"].as_array().unwrap() {
        let prop = required.as_str().unwrap();
        let key = if snake_case {
            snake(prop)
        } else {
            prop.to_string()
        };
        assert!(
            obj.contains_key(&key),
            "{record}.{key} is required: {value}"
        );
    }
}

/// No `null` anywhere in a record, except where the interface allows it.
fn assert_no_nulls(what: &str, v: &Value, allowed: &[&str]) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if x.is_null() {
                    assert!(allowed.contains(&k.as_str()), "{what}: {k} is null in {v}");
                }
                assert_no_nulls(what, x, allowed);
            }
        }
        Value::Array(items) => items.iter().for_each(|x| assert_no_nulls(what, x, allowed)),
        _ => {}
    }
}

#[test]
fn every_unfillable_or_conditional_property_is_declared_by_the_reference() {
    let all: Value = serde_json::from_str(RECORDS).unwrap();
    for (record, prop, why) in UNFILLABLE.iter().chain(CONDITIONAL).chain(TYPE_OVERRIDES) {
        assert!(
            all[record]["properties"].get(*prop).is_some(),
            "{record}.{prop} ({why}) is not in the reference"
        );
    }
}

#[test]
fn client_records_carry_every_field_coffer_can_fill() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let plain = json!({"name": "Plain", "description": "No signature key",
                       "redirectUri": "https://plain.example/cb", "scope": "*"});
    let created = app.rest("POST", "/rest/clients", &admin, Some(plain));
    assert_eq!(created.status, 200, "{}", created.text);
    let created = created.json();
    check("ClientNew", &created, true, &[]);
    assert!(created["client_secret"].is_string());
    assert!(created.get("signature_key").is_none(), "{created}");
    assert_no_nulls("client", &created, &[]);
    let id = created["id"].as_str().unwrap();

    let got = app
        .rest("GET", &format!("/rest/clients/{id}"), &admin, None)
        .json();
    check("Client", &got, true, &[]);
    assert!(got.get("client_secret").is_none());
    assert_no_nulls("client", &got, &[]);

    let keyed = app.rest(
        "POST",
        "/rest/clients",
        &admin,
        Some(json!({"name": "Keyed", "description": "Signature flow",
                    "redirectUri": "https://keyed.example/cb", "scope": "*",
                    "signatureKey": "a-long-signature-key", "addLinks": true})),
    );
    assert_eq!(keyed.status, 200, "{}", keyed.text);
    check("ClientNew", &keyed.json(), true, &["signatureKey", "links"]);
    assert_no_nulls("client", &keyed.json(), &[]);

    let me = app.rest("GET", "/rest/clients/me", &admin, None).json();
    check("Client", &me, true, &[]);
    assert_no_nulls("client", &me, &[]);
    let list = app
        .rest("GET", "/rest/clients?mode=full_with_links", &admin, None)
        .json();
    for item in list["data"].as_array().unwrap() {
        check("Client", item, true, &["links"]);
        assert_no_nulls("client", item, &[]);
    }
}

#[test]
fn device_location_user_and_settings_records_match_the_reference() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let d = app.rest(
        "POST",
        "/rest/devices",
        &admin,
        Some(json!({"installTagId": "SN-1", "installName": "Phone", "addLinks": true})),
    );
    assert_eq!(d.status, 200, "{}", d.text);
    check("Device", &d.json(), true, &["links"]);
    assert_no_nulls("device", &d.json(), &["mobile_key_store"]);

    let l = app.rest(
        "POST",
        "/rest/locations?returnEntity=true",
        &admin,
        Some(json!({"name": "Zurich", "domain": "zh.example.com"})),
    );
    assert_eq!(l.status, 200, "{}", l.text);
    check("Location", &l.json(), false, &[]);
    let location_id = l.json()["id"].as_i64().unwrap();

    let me = app.rest("GET", "/rest/users/me", &admin, None).json();
    check("UserMe", &me, false, &[]);
    assert_no_nulls("user", &me, &[]);

    // No default location and no mobile number: the fields are left out, never null.
    let s = app
        .rest("GET", "/rest/settings/system", &admin, None)
        .json();
    check("Settings", &s, false, &[]);
    assert_no_nulls("settings", &s, &[]);
    assert!(
        s.get("locationId").is_none() && s.get("mobileNumber").is_none(),
        "{s}"
    );

    coffer_service::identity::settings::set(&app.ctx, "locationId", &location_id.to_string(), None)
        .unwrap();
    let (_, bob) = app.user("bob@example.com", Role::User);
    let bob_token = app.password_token("bob@example.com", &bob)["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.rest(
        "PUT",
        "/rest/users/me/mobileNumber",
        &bob_token,
        Some(json!({"password": bob, "mobileNumber": "+41790000001"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    check(
        "Settings",
        &r.json(),
        false,
        &["locationId", "mobileNumber"],
    );
    assert_no_nulls("settings", &r.json(), &[]);
    let s = app
        .rest("GET", "/rest/settings/system", &bob_token, None)
        .json();
    check("Settings", &s, false, &["locationId", "mobileNumber"]);
    assert_eq!(s["locationId"], location_id);
}

#[test]
fn login_and_scim_records_match_the_reference() {
    let app = TestApp::spawn();
    let (_, pw) = app.user("ann@example.com", Role::User);
    let r = app.json_login("ann@example.com", &pw, None);
    assert_eq!(r.status, 200, "{}", r.text);
    check("LoginResponse", &r.json(), false, &[]);

    let scim = coffer_service::identity::scim_tokens::create(&app.ctx, "idp")
        .expect("scim token")
        .1;
    let call = |method: &str, path: &str, body: Option<Value>| {
        app.send(
            method,
            path,
            &[("Authorization", &format!("Bearer {scim}"))],
            body.map(|b| Body::Raw("application/scim+json", b.to_string())),
        )
    };
    for role in ["user", "helpdesk-admin"] {
        let email = format!("{role}@example.com");
        let r = call(
            "POST",
            "/rest/scim/Users",
            Some(json!({
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                "userName": email, "displayName": "Provisioned",
                "preferredLanguage": "de-CH",
                "phoneNumbers": [{"value": "+41790000002", "type": "mobile", "primary": true}],
                "roles": [{"value": role}]
            })),
        );
        assert_eq!(r.status, 201, "{}", r.text);
        let u = r.json();
        check(
            "ScimUser",
            &u,
            false,
            if role == "user" {
                &["phoneNumbers", "preferredLanguage", "displayName"]
            } else {
                &["phoneNumbers", "preferredLanguage", "displayName", "roles"]
            },
        );
        check("ScimMeta", &u["meta"], false, &[]);
        for e in u["emails"].as_array().unwrap() {
            check("ScimMultiValue1", e, false, &[]);
        }
        // An administrator role is echoed back; an ordinary user has none (`user` is its absence).
        let echoed = if role == "user" {
            Value::Null
        } else {
            json!([{"value": role}])
        };
        assert_eq!(u["roles"], echoed, "{u}");
        assert_eq!(u["preferredLanguage"], "de-CH");
        assert_no_nulls("scim user", &u, &[]);
        let id = u["id"].as_str().unwrap();
        let again = call("GET", &format!("/rest/scim/Users/{id}"), None).json();
        assert_eq!(again["roles"], echoed, "{again}");
    }
    // An empty `roles` is an ordinary user (it used to fail the call).
    let r = call(
        "POST",
        "/rest/scim/Users",
        Some(json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
            "userName": "none@example.com", "roles": []
        })),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(r.json().get("roles").is_none(), "{}", r.text);
    // Adding a role to an ordinary user gives that role, not a second one.
    let id = r.json()["id"].as_str().unwrap().to_string();
    let r = call(
        "PATCH",
        &format!("/rest/scim/Users/{id}"),
        Some(json!({
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "add", "path": "roles", "value": [{"value": "helpdesk-admin"}]}]
        })),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["roles"], json!([{"value": "helpdesk-admin"}]));
    assert_eq!(
        app.count(&format!("id = '{id}' AND role = 'helpdesk-admin'"), "users"),
        1
    );
    // Removing the attribute removes it: an ordinary user again.
    let r = call(
        "PATCH",
        &format!("/rest/scim/Users/{id}"),
        Some(json!({
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "remove", "path": "roles"}]
        })),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.json().get("roles").is_none(), "{}", r.text);
    assert_eq!(
        app.count(&format!("id = '{id}' AND role = 'user'"), "users"),
        1
    );
}
