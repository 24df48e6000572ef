//! SCIM 2.0 provisioning over HTTP (spec §4.11, RFC 7644): authentication by SCIM token,
//! create/get/replace/patch/delete with ETags, listings with filters, and discovery. Each test
//! checks the stored state after the call, on SQLite and (in the PostgreSQL suite) PostgreSQL.

use coffer_domain::Role;
use coffer_tests::{Body, Resp, TestApp};
use serde_json::{json, Value};

const USER: &str = "urn:ietf:params:scim:schemas:core:2.0:User";

fn token(app: &TestApp) -> String {
    coffer_service::identity::scim_tokens::create(&app.ctx, "idp")
        .expect("scim token")
        .1
}

fn scim(app: &TestApp, method: &str, path: &str, token: &str, body: Option<Value>) -> Resp {
    scim_with(app, method, path, token, &[], body)
}

fn scim_with(
    app: &TestApp,
    method: &str,
    path: &str,
    token: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Resp {
    let auth = format!("Bearer {token}");
    let mut all = vec![("Authorization", auth.as_str())];
    all.extend_from_slice(headers);
    app.send(
        method,
        path,
        &all,
        body.map(|b| Body::Raw("application/scim+json", b.to_string())),
    )
}

/// The userNames of a listing, in order.
fn user_names(r: &Resp) -> Vec<String> {
    r.json()["Resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["userName"].as_str().unwrap().to_string())
        .collect()
}

/// A listing filtered by `filter` (URL-encoded here), sorted by userName.
fn filtered(app: &TestApp, token: &str, filter: &str) -> Resp {
    let enc: String = url::form_urlencoded::byte_serialize(filter.as_bytes()).collect();
    scim(
        app,
        "GET",
        &format!("/rest/scim/Users?filter={enc}&sortBy=userName"),
        token,
        None,
    )
}

/// Asserts a SCIM error body: status as a string, and the scimType when given.
fn assert_scim_error(r: &Resp, status: u16, scim_type: Option<&str>) {
    assert_eq!(r.status, status, "{}", r.text);
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("application/scim+json")),
        "{:?}",
        r.header("content-type")
    );
    let v = r.json();
    assert_eq!(
        v["schemas"][0], "urn:ietf:params:scim:api:messages:2.0:Error",
        "{v}"
    );
    assert_eq!(v["status"], status.to_string(), "{v}");
    if let Some(t) = scim_type {
        assert_eq!(v["scimType"], t, "{v}");
    }
    assert!(v["detail"].as_str().is_some_and(|d| !d.is_empty()), "{v}");
}

fn new_user(email: &str) -> Value {
    json!({
        "schemas": [USER],
        "userName": email,
        "displayName": "Ada Lovelace",
        "emails": [{"value": email, "type": "work", "primary": true}],
        "password": "Analytical1Engine",
    })
}

fn create(app: &TestApp, t: &str, body: Value) -> Value {
    let r = scim(app, "POST", "/rest/scim/Users", t, Some(body));
    assert_eq!(r.status, 201, "{}", r.text);
    r.json()
}

#[test]
fn scim_calls_need_a_scim_token_and_oauth_tokens_are_refused() {
    let app = TestApp::spawn();
    let t = token(&app);
    let admin = app.admin_token();

    assert_scim_error(&scim(&app, "GET", "/rest/scim/Users", "", None), 401, None);
    assert_scim_error(
        &scim(&app, "GET", "/rest/scim/Users", "not-a-token", None),
        401,
        None,
    );
    // An OAuth access token, even a system administrator's, is not a SCIM token.
    assert_scim_error(
        &scim(&app, "GET", "/rest/scim/Users", &admin, None),
        401,
        None,
    );
    // And a SCIM token is not an OAuth token.
    let r = app.rest("GET", "/rest/users/me", &t, None);
    assert_eq!(r.status, 401, "{}", r.text);
    assert_eq!(r.code(), "ERR_AUTH_UNAUTHORIZED");

    // SCIM needs no version header; the token works on both spellings.
    for path in ["/rest/scim/Users", "/rest/scim/users"] {
        let r = scim(&app, "GET", path, &t, None);
        assert_eq!(r.status, 200, "{path}: {}", r.text);
    }

    // A revoked token stops at once.
    let (id, revoked) = coffer_service::identity::scim_tokens::create(&app.ctx, "old").unwrap();
    assert_eq!(
        scim(&app, "GET", "/rest/scim/Users", &revoked, None).status,
        200
    );
    coffer_service::identity::scim_tokens::revoke(&app.ctx, &id).unwrap();
    assert_scim_error(
        &scim(&app, "GET", "/rest/scim/Users", &revoked, None),
        401,
        None,
    );
    // Tokens are stored hashed.
    assert_eq!(
        app.count(&format!("token_hash = '{revoked}'"), "scim_tokens"),
        0
    );
}

#[test]
fn create_answers_201_with_the_user_and_the_user_signs_in_through_oauth() {
    let app = TestApp::spawn();
    let t = token(&app);
    let r = scim(
        &app,
        "POST",
        "/rest/scim/Users",
        &t,
        Some(json!({
            "schemas": [USER],
            "userName": "Ada@Example.com",
            "externalId": "idp-1",
            "displayName": "Ada Lovelace",
            "userType": "Restricted",
            "preferredLanguage": "en-GB",
            "phoneNumbers": [{"value": "+41 79 123 45 67", "type": "mobile", "primary": true}],
            "roles": [{"value": "helpdesk-admin"}],
            "password": "Analytical1Engine",
            "userMustChange": false,
            "notify": true,
        })),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("application/scim+json"));
    let u = r.json();
    let id = u["id"].as_str().unwrap().to_string();
    assert_eq!(
        r.header("location").unwrap(),
        format!("{}/rest/scim/Users/{id}", app.base)
    );
    assert_eq!(r.header("etag").unwrap(), "W/\"1\"");
    assert_eq!(u["schemas"], json!([USER]));
    assert_eq!(u["userName"], "Ada@Example.com");
    assert_eq!(u["externalId"], "idp-1");
    assert_eq!(u["displayName"], "Ada Lovelace");
    assert_eq!(u["userType"], "Restricted");
    assert_eq!(u["preferredLanguage"], "en-GB");
    assert_eq!(u["active"], true);
    assert_eq!(
        u["emails"],
        json!([{"value": "ada@example.com", "type": "work", "primary": true}])
    );
    assert_eq!(
        u["phoneNumbers"],
        json!([{"value": "+41791234567", "type": "mobile", "primary": true}])
    );
    assert_eq!(u["roles"], json!([{"value": "helpdesk-admin"}]));
    assert!(u.get("password").is_none());
    assert_eq!(u["meta"]["resourceType"], "User");
    assert_eq!(u["meta"]["version"], "W/\"1\"");
    assert!(u["meta"]["created"].as_str().unwrap().ends_with('Z'));

    // Stored: the same account as everywhere else, with its password hashed.
    assert_eq!(
        app.count(
            &format!("id = '{id}' AND email = 'ada@example.com' AND role = 'helpdesk-admin' AND profile_id = 2 AND mobile_number = '+41791234567' AND password_hash <> 'Analytical1Engine'"),
            "users"
        ),
        1
    );
    assert_eq!(
        app.count(
            "subject = 'user.user.create' AND data LIKE '%scim%'",
            "events"
        ),
        1
    );
    // `notify` put a welcome message in the mail outbox, without the password.
    assert_eq!(
        app.count(
            &format!("user_id = '{id}' AND to_address = 'ada@example.com' AND body NOT LIKE '%Analytical1Engine%'"),
            "mail_outbox"
        ),
        1
    );
    // The provisioned user signs in through OAuth.
    let tok = app.password_token("ada@example.com", "Analytical1Engine");
    let me = app.rest(
        "GET",
        "/rest/users/me",
        tok["access_token"].as_str().unwrap(),
        None,
    );
    assert_eq!(me.status, 200, "{}", me.text);
    assert_eq!(me.json()["id"], id);

    // `userMustChange` sends the next sign-in through the password change.
    let forced = create(
        &app,
        &t,
        json!({"schemas": [USER], "userName": "grace@example.com", "password": "Compiler1Grace", "userMustChange": true}),
    );
    assert_eq!(forced["emails"][0]["value"], "grace@example.com");
    // Without `notify`, no message.
    assert_eq!(
        app.count("to_address = 'grace@example.com'", "mail_outbox"),
        0
    );
    assert_eq!(
        app.count(
            "email = 'grace@example.com' AND force_password_change = TRUE",
            "users"
        ),
        1
    );
}

#[test]
fn create_refuses_bad_input_and_duplicates_and_stores_nothing() {
    let app = TestApp::spawn();
    let t = token(&app);
    create(&app, &t, new_user("taken@example.com"));
    let before = app.count("1 = 1", "users");

    let cases: Vec<(Value, u16, &str)> = vec![
        (json!({"userName": "a@example.com"}), 400, "invalidSyntax"),
        (
            json!({"schemas": ["urn:other"], "userName": "a@example.com"}),
            400,
            "invalidSyntax",
        ),
        (
            json!({"schemas": [USER], "userName": "a@example.com", "displayName": "<script>"}),
            400,
            "invalidValue",
        ),
        (
            json!({"schemas": [USER], "userName": "a@example.com", "userType": "Standard user"}),
            400,
            "invalidValue",
        ),
        (
            json!({"schemas": [USER], "userName": "a@example.com", "userType": "NoSuchProfile"}),
            400,
            "invalidValue",
        ),
        (
            json!({"schemas": [USER], "userName": "a@example.com", "roles": [{"value": "system-admin"}, {"value": "helpdesk-admin"}]}),
            400,
            "invalidValue",
        ),
        (
            json!({"schemas": [USER], "userName": "a@example.com", "roles": [{"value": "emperor"}]}),
            400,
            "invalidValue",
        ),
        (
            json!({"schemas": [USER], "userName": "a@example.com", "nickName": "ada"}),
            400,
            "invalidSyntax",
        ),
        (
            json!({"schemas": [USER], "userName": "not-an-email"}),
            400,
            "invalidValue",
        ),
        (
            json!({"schemas": [USER], "userName": "a@example.com", "emails": [{"value": "nope"}]}),
            400,
            "invalidValue",
        ),
        (
            json!({"schemas": [USER], "userName": "a@example.com", "password": "short"}),
            400,
            "invalidValue",
        ),
        (
            json!({"schemas": [USER], "userName": "a@example.com", "phoneNumbers": [{"value": "call me", "type": "mobile"}]}),
            400,
            "invalidValue",
        ),
        (
            json!({"schemas": [USER], "userName": "a@example.com", "active": "maybe"}),
            400,
            "invalidValue",
        ),
        (
            json!({"schemas": [USER], "userName": "a@example.com", "preferredLanguage": "not a tag"}),
            400,
            "invalidValue",
        ),
        (json!([1, 2]), 400, "invalidSyntax"),
        // Unique: the userName without regard to case, and the email.
        (
            json!({"schemas": [USER], "userName": "TAKEN@example.com"}),
            409,
            "uniqueness",
        ),
        (
            json!({"schemas": [USER], "userName": "other", "emails": [{"value": "taken@example.com"}]}),
            409,
            "uniqueness",
        ),
    ];
    for (body, status, scim_type) in cases {
        let r = scim(&app, "POST", "/rest/scim/Users", &t, Some(body.clone()));
        assert_scim_error(&r, status, Some(scim_type));
        assert_eq!(app.count("1 = 1", "users"), before, "{body}");
    }
    // Not JSON at all, and an oversized body.
    let auth = format!("Bearer {t}");
    let r = app.send(
        "POST",
        "/rest/scim/Users",
        &[("Authorization", &auth)],
        Some(Body::Raw("application/scim+json", "{nope".into())),
    );
    assert_scim_error(&r, 400, Some("invalidSyntax"));
    let big = json!({"schemas": [USER], "userName": "big@example.com", "displayName": "x".repeat(2 * 1024 * 1024)});
    let r = scim(&app, "POST", "/rest/scim/Users", &t, Some(big));
    assert_scim_error(&r, 413, None);
    assert_eq!(app.count("1 = 1", "users"), before);
}

#[test]
fn get_projects_attributes_and_unknown_ids_are_404() {
    let app = TestApp::spawn();
    let t = token(&app);
    let u = create(&app, &t, new_user("ada@example.com"));
    let id = u["id"].as_str().unwrap();

    let r = scim(&app, "GET", &format!("/rest/scim/Users/{id}"), &t, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json(), u);
    assert_eq!(r.header("etag").unwrap(), "W/\"1\"");

    let r = scim(
        &app,
        "GET",
        &format!("/rest/scim/users/{id}?attributes=userName,emails.value"),
        &t,
        None,
    );
    let v = r.json();
    assert_eq!(v["id"], id);
    assert_eq!(v["userName"], "ada@example.com");
    assert_eq!(v["emails"], json!([{"value": "ada@example.com"}]));
    assert!(
        v.get("displayName").is_none() && v.get("meta").is_none(),
        "{v}"
    );

    let r = scim(
        &app,
        "GET",
        &format!("/rest/scim/Users/{id}?excludedAttributes=displayName,meta"),
        &t,
        None,
    );
    let v = r.json();
    assert!(
        v.get("displayName").is_none() && v.get("meta").is_none(),
        "{v}"
    );
    assert_eq!(v["userName"], "ada@example.com");

    let r = scim(
        &app,
        "GET",
        &format!("/rest/scim/Users/{id}?attributes=shoeSize"),
        &t,
        None,
    );
    assert_scim_error(&r, 400, Some("invalidValue"));

    // Multi-byte characters (one across the byte length of the User schema URN) are an unknown
    // attribute, on a resource and on the list, never a worker's panic.
    let across = "urn:ietf:params:scim:schemas:core:2.0:Use%C3%A9:userName";
    for q in [
        format!("attributes={across}"),
        format!("excludedAttributes={across}"),
        "attributes=%C3%BC".to_string(),
        "excludedAttributes=emails.v%C3%A4lue".to_string(),
    ] {
        for path in [
            format!("/rest/scim/Users/{id}?{q}"),
            format!("/rest/scim/Users?{q}"),
        ] {
            assert_scim_error(
                &scim(&app, "GET", &path, &t, None),
                400,
                Some("invalidValue"),
            );
        }
    }

    for missing in [
        "00000000-0000-4000-8000-000000000000".to_string(),
        "not-a-uuid".to_string(),
    ] {
        assert_scim_error(
            &scim(
                &app,
                "GET",
                &format!("/rest/scim/Users/{missing}"),
                &t,
                None,
            ),
            404,
            None,
        );
    }
}

#[test]
fn list_filters_sorts_and_pages() {
    let app = TestApp::spawn();
    let t = token(&app);
    for (i, name) in ["carol", "alice", "bob", "dave", "erin"].iter().enumerate() {
        let mut body = new_user(&format!("{name}@example.com"));
        body["displayName"] = json!(name.to_uppercase());
        if i % 2 == 0 {
            body["roles"] = json!([{"value": "helpdesk-admin"}]);
        }
        create(&app, &t, body);
    }

    // Everyone SCIM manages: the five (the system administrator made at first start is not
    // SCIM's).
    let r = scim(&app, "GET", "/rest/scim/Users", &t, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("application/scim+json"));
    let v = r.json();
    assert_eq!(
        v["schemas"],
        json!(["urn:ietf:params:scim:api:messages:2.0:ListResponse"])
    );
    assert_eq!(v["totalResults"], 5);
    assert_eq!(v["itemsPerPage"], 5);
    assert_eq!(v["startIndex"], 1);

    let q = |f: &str| filtered(&app, &t, f);
    let r = q(r#"userName eq "BOB@example.com""#);
    assert_eq!(user_names(&r), ["bob@example.com"]);
    assert_eq!(r.json()["totalResults"], 1);
    let r = q(r#"userName sw "al" or userName sw "b" and displayName ew "OB""#);
    assert_eq!(user_names(&r), ["alice@example.com", "bob@example.com"]);
    let r = q(r#"(userName sw "al" or userName sw "b") and displayName ew "OB""#);
    assert_eq!(user_names(&r), ["bob@example.com"]);
    let r = q(r#"roles[value eq "helpdesk-admin"] and not (userName co "erin")"#);
    assert_eq!(user_names(&r), ["bob@example.com", "carol@example.com"]);
    let r = q(r#"emails[type eq "work" and value ew "@example.com"] and userName lt "c""#);
    assert_eq!(user_names(&r), ["alice@example.com", "bob@example.com"]);

    // Sorting, paging: startIndex is 1-based; itemsPerPage is what was sent.
    let r = scim(
        &app,
        "GET",
        "/rest/scim/Users?filter=userName%20ew%20%22example.com%22&sortBy=displayName&sortOrder=descending&startIndex=2&count=2",
        &t,
        None,
    );
    let v = r.json();
    assert_eq!(user_names(&r), ["dave@example.com", "carol@example.com"]);
    assert_eq!(v["totalResults"], 5);
    assert_eq!(v["itemsPerPage"], 2);
    assert_eq!(v["startIndex"], 2);
    // The last page, and a start past the end: totalResults stays right either way.
    for (query, total, items) in [("startIndex=4&count=10", 5, 2), ("startIndex=10", 5, 0)] {
        let v = scim(&app, "GET", &format!("/rest/scim/Users?{query}"), &t, None).json();
        assert_eq!(v["totalResults"], total, "{query}: {v}");
        assert_eq!(v["itemsPerPage"], items, "{query}: {v}");
        assert_eq!(v["Resources"].as_array().unwrap().len(), items);
    }
    let r = scim(&app, "GET", "/rest/scim/Users?count=0", &t, None);
    assert_eq!(r.json()["itemsPerPage"], 0);
    assert_eq!(r.json()["totalResults"], 5);

    // attributes apply to each resource.
    let r = scim(
        &app,
        "GET",
        "/rest/scim/Users?attributes=userName&count=1",
        &t,
        None,
    );
    let first = &r.json()["Resources"][0];
    assert!(
        first.get("emails").is_none() && first.get("id").is_some(),
        "{first}"
    );

    // POST /.search says the same.
    let r = scim(
        &app,
        "POST",
        "/rest/scim/Users/.search",
        &t,
        Some(json!({
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],
            "filter": "userName sw \"d\"",
            "attributes": ["userName"],
            "count": 10,
        })),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(user_names(&r), ["dave@example.com"]);
    let r = scim(
        &app,
        "POST",
        "/rest/scim/.search",
        &t,
        Some(json!({"filter": "userName sw \"e\""})),
    );
    assert_eq!(user_names(&r), ["erin@example.com"]);

    // Limits and bad parameters.
    assert_scim_error(
        &scim(&app, "GET", "/rest/scim/Users?count=1000001", &t, None),
        400,
        Some("invalidValue"),
    );
    assert_eq!(
        scim(&app, "GET", "/rest/scim/Users?count=1000000", &t, None).status,
        200
    );
    assert_scim_error(
        &scim(&app, "GET", "/rest/scim/Users?sortBy=shoeSize", &t, None),
        400,
        Some("invalidValue"),
    );
    assert_scim_error(
        &scim(&app, "GET", "/rest/scim/Users?sortOrder=sideways", &t, None),
        400,
        Some("invalidValue"),
    );
}

#[test]
fn bad_filters_answer_invalid_filter() {
    let app = TestApp::spawn();
    let t = token(&app);
    let deep = format!("{}userName pr{}", "(".repeat(5000), ")".repeat(5000));
    let not_deep = format!("{}userName pr{}", "not (".repeat(3000), ")".repeat(3000));
    let cases = [
        "userName",
        "userName eq",
        "userName xx \"a\"",
        "userName eq \"a\" and",
        "(userName eq \"a\"",
        "userName eq 'a'",
        "shoeSize eq 42",
        "emails[type eq \"work\"",
        "active gt true",
        "emails.primary co \"x\"",
        "meta.created gt \"yesterday\"",
        "urn:other:schema:userName eq \"a\"",
        deep.as_str(),
        not_deep.as_str(),
    ];
    for f in cases {
        let enc: String = url::form_urlencoded::byte_serialize(f.as_bytes()).collect();
        let r = scim(
            &app,
            "GET",
            &format!("/rest/scim/Users?filter={enc}"),
            &t,
            None,
        );
        assert_scim_error(&r, 400, Some("invalidFilter"));
    }
}

#[test]
fn put_replaces_with_etags() {
    let app = TestApp::spawn();
    let t = token(&app);
    let u = create(&app, &t, new_user("ada@example.com"));
    let id = u["id"].as_str().unwrap();
    let path = format!("/rest/scim/Users/{id}");

    let body = json!({
        "schemas": [USER],
        "userName": "ada.king@example.com",
        "emails": [{"value": "ada.king@example.com", "primary": true}],
        "preferredLanguage": "fr",
        "active": true,
    });
    // A stale If-Match changes nothing.
    let r = scim_with(
        &app,
        "PUT",
        &path,
        &t,
        &[("If-Match", "W/\"7\"")],
        Some(body.clone()),
    );
    assert_scim_error(&r, 412, None);
    assert_eq!(
        app.count("email = 'ada@example.com' AND version = 1", "users"),
        1
    );

    let r = scim_with(
        &app,
        "PUT",
        &path,
        &t,
        &[("If-Match", "W/\"1\"")],
        Some(body),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("etag").unwrap(), "W/\"2\"");
    let v = r.json();
    assert_eq!(v["userName"], "ada.king@example.com");
    assert_eq!(v["preferredLanguage"], "fr");
    // A replacement clears what it leaves out.
    assert!(v.get("displayName").is_none(), "{v}");
    assert_eq!(
        app.count(
            &format!(
                "id = '{id}' AND email = 'ada.king@example.com' AND name = '' AND version = 2"
            ),
            "users"
        ),
        1
    );
    // The password was left out: it still works.
    app.password_token("ada.king@example.com", "Analytical1Engine");

    let other = create(&app, &t, new_user("grace@example.com"));
    let r = scim(
        &app,
        "PUT",
        &format!("/rest/scim/Users/{}", other["id"].as_str().unwrap()),
        &t,
        Some(json!({"schemas": [USER], "userName": "Ada.King@example.com"})),
    );
    assert_scim_error(&r, 409, Some("uniqueness"));
    assert_scim_error(
        &scim(
            &app,
            "PUT",
            "/rest/scim/Users/00000000-0000-4000-8000-000000000000",
            &t,
            Some(json!({"schemas": [USER], "userName": "x@example.com"})),
        ),
        404,
        None,
    );
}

#[test]
fn patch_deactivates_and_the_user_stops_at_once() {
    let app = TestApp::spawn();
    let t = token(&app);
    let u = create(&app, &t, new_user("ada@example.com"));
    let id = u["id"].as_str().unwrap();
    let path = format!("/rest/scim/Users/{id}");
    let access = app.password_token("ada@example.com", "Analytical1Engine")["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(app.rest("GET", "/rest/users/me", &access, None).status, 200);

    let op = |ops: Value| json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": ops});
    // Azure AD's spelling: capitalised op, boolean as a string.
    let r = scim(
        &app,
        "PATCH",
        &path,
        &t,
        Some(op(
            json!([{"op": "Replace", "path": "active", "value": "False"}]),
        )),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["active"], false);
    assert_eq!(
        app.count(&format!("id = '{id}' AND active = FALSE"), "users"),
        1
    );
    // Tokens stop, and sign-in is refused.
    assert_eq!(app.rest("GET", "/rest/users/me", &access, None).status, 401);
    let r = app.form(
        "/oauth/token",
        &[
            ("grant_type", "password"),
            ("username", "ada@example.com"),
            ("password", "Analytical1Engine"),
            ("client_id", &app.admin.client_id),
            ("client_secret", &app.admin.client_secret),
        ],
    );
    assert_eq!(r.status, 400, "{}", r.text);

    // add, replace through a value path, remove.
    let r = scim(
        &app,
        "PATCH",
        &path,
        &t,
        Some(op(json!([
            {"op": "add", "path": "phoneNumbers", "value": [{"value": "+15550100", "type": "mobile"}]},
            {"op": "replace", "path": "emails[type eq \"work\"].value", "value": "ada.b@example.com"},
            {"op": "remove", "path": "displayName"},
            {"op": "replace", "value": {"active": true, "externalId": "x-1"}},
        ]))),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    assert_eq!(v["phoneNumbers"][0]["value"], "+15550100");
    assert_eq!(v["emails"][0]["value"], "ada.b@example.com");
    assert!(v.get("displayName").is_none(), "{v}");
    assert_eq!(v["active"], true);
    assert_eq!(v["externalId"], "x-1");
    assert_eq!(
        app.count(
            &format!("id = '{id}' AND email = 'ada.b@example.com' AND mobile_number = '+15550100' AND external_id = 'x-1' AND name = ''"),
            "users"
        ),
        1
    );

    // Refusals change nothing.
    let version = v["meta"]["version"].as_str().unwrap().to_string();
    for (body, scim_type) in [
        (
            op(json!([{"op": "replace", "path": "id", "value": "x"}])),
            "mutability",
        ),
        (
            op(json!([{"op": "replace", "path": "shoeSize", "value": 42}])),
            "invalidPath",
        ),
        (op(json!([{"op": "remove"}])), "noTarget"),
        (
            op(json!([{"op": "move", "path": "active"}])),
            "invalidSyntax",
        ),
        (json!({"Operations": []}), "invalidSyntax"),
        (
            op(json!([{"op": "replace", "path": "displayName", "value": "<b>"}])),
            "invalidValue",
        ),
        (
            op(
                json!([{"op": "add", "path": "roles", "value": [{"value": "system-admin"}, {"value": "helpdesk-admin"}]}]),
            ),
            "invalidValue",
        ),
    ] {
        let r = scim(&app, "PATCH", &path, &t, Some(body.clone()));
        assert_scim_error(&r, 400, Some(scim_type));
        let now = scim(&app, "GET", &path, &t, None).json();
        assert_eq!(now["meta"]["version"], version, "{body}");
    }
    let r = scim_with(
        &app,
        "PATCH",
        &path,
        &t,
        &[("If-Match", "W/\"1\"")],
        Some(op(
            json!([{"op": "replace", "path": "active", "value": false}]),
        )),
    );
    assert_scim_error(&r, 412, None);
}

#[test]
fn delete_removes_the_user_for_good() {
    let app = TestApp::spawn();
    let t = token(&app);
    let u = create(&app, &t, new_user("ada@example.com"));
    let id = u["id"].as_str().unwrap();
    let access = app.password_token("ada@example.com", "Analytical1Engine")["access_token"]
        .as_str()
        .unwrap()
        .to_string();

    assert_scim_error(
        &scim(
            &app,
            "DELETE",
            &format!("/rest/scim/Users/{id}?deleteUnsharedData=true&retainData=true"),
            &t,
            None,
        ),
        400,
        Some("invalidValue"),
    );
    assert_eq!(
        app.count(&format!("id = '{id}' AND deleted = FALSE"), "users"),
        1
    );

    let r = scim(
        &app,
        "DELETE",
        &format!("/rest/scim/Users/{id}?remoteWipe=true"),
        &t,
        None,
    );
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(
        app.count(&format!("id = '{id}' AND deleted = TRUE"), "users"),
        1
    );
    assert_scim_error(
        &scim(&app, "GET", &format!("/rest/scim/Users/{id}"), &t, None),
        404,
        None,
    );
    assert_scim_error(
        &scim(&app, "DELETE", &format!("/rest/scim/Users/{id}"), &t, None),
        404,
        None,
    );
    assert_eq!(app.rest("GET", "/rest/users/me", &access, None).status, 401);
    let listed = scim(
        &app,
        "GET",
        "/rest/scim/Users?filter=userName%20eq%20%22ada@example.com%22",
        &t,
        None,
    );
    assert_eq!(listed.json()["totalResults"], 0);
    // The deleted account gave up its email and userName: the identity provider may add the
    // address again, as a new user.
    assert_eq!(
        app.count(
            &format!("id = '{id}' AND former_email = 'ada@example.com' AND user_name IS NULL"),
            "users"
        ),
        1
    );
    let again = create(&app, &t, new_user("ada@example.com"));
    assert_ne!(again["id"], id);
    assert_eq!(again["userName"], "ada@example.com");
}

#[test]
fn discovery_documents_and_scim_errors_for_unknown_paths() {
    let app = TestApp::spawn();
    let t = token(&app);
    let spc = scim(&app, "GET", "/rest/scim/ServiceProviderConfig", &t, None);
    assert_eq!(spc.status, 200, "{}", spc.text);
    let v = spc.json();
    assert_eq!(v["patch"]["supported"], true);
    assert_eq!(v["filter"]["supported"], true);
    assert_eq!(v["filter"]["maxResults"], 1_000_000);
    assert_eq!(v["etag"]["supported"], true);
    assert_eq!(v["bulk"]["supported"], false);

    let s = scim(&app, "GET", "/rest/scim/Schemas", &t, None).json();
    let names: Vec<&str> = s["Resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    for n in ["User", "Schema", "ResourceType", "ServiceProviderConfig"] {
        assert!(names.contains(&n), "{names:?}");
    }
    let user = scim(&app, "GET", &format!("/rest/scim/Schemas/{USER}"), &t, None).json();
    let attrs: Vec<&str> = user["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    for a in [
        "userName",
        "displayName",
        "userType",
        "emails",
        "phoneNumbers",
        "roles",
        "active",
    ] {
        assert!(attrs.contains(&a), "{attrs:?}");
    }
    assert_scim_error(
        &scim(&app, "GET", "/rest/scim/Schemas/urn:nope", &t, None),
        404,
        None,
    );

    let rt = scim(&app, "GET", "/rest/scim/ResourceTypes", &t, None).json();
    assert_eq!(rt["Resources"][0]["endpoint"], "/Users");
    assert_eq!(rt["Resources"][0]["schema"], USER);
    assert_eq!(
        scim(&app, "GET", "/rest/scim/ResourceTypes/User", &t, None).status,
        200
    );
    assert_scim_error(
        &scim(&app, "GET", "/rest/scim/ResourceTypes/Group", &t, None),
        404,
        None,
    );

    for m in ["POST", "PUT", "PATCH", "DELETE"] {
        assert_scim_error(
            &scim(&app, m, "/rest/scim/ServiceProviderConfig", &t, None),
            405,
            None,
        );
        assert_scim_error(&scim(&app, m, "/rest/scim/Schemas", &t, None), 405, None);
    }
    assert_scim_error(&scim(&app, "GET", "/rest/scim/Groups", &t, None), 404, None);
    // The firewall still stands in front.
    let r = scim(&app, "GET", "/rest/scim/Users/..%2f..%2fetc", &t, None);
    assert_eq!(r.status, 490, "{}", r.text);
}

#[test]
fn a_scim_user_and_a_cli_user_are_one_population() {
    let app = TestApp::spawn();
    let t = token(&app);
    app.user("local@example.com", Role::User);
    // The account made outside SCIM is listed, with its email as userName, and taken.
    let r = scim(
        &app,
        "GET",
        "/rest/scim/Users?filter=userName%20eq%20%22local@example.com%22",
        &t,
        None,
    );
    assert_eq!(r.json()["totalResults"], 1, "{}", r.text);
    let r = scim(
        &app,
        "POST",
        "/rest/scim/Users",
        &t,
        Some(new_user("LOCAL@example.com")),
    );
    assert_scim_error(&r, 409, Some("uniqueness"));
}

#[test]
fn primary_flags_are_kept_and_filtered_on() {
    let app = TestApp::spawn();
    let t = token(&app);
    let mut body = new_user("ada@example.com");
    body["emails"][0]["primary"] = json!(false);
    body["phoneNumbers"] = json!([{"value": "+15550101", "type": "mobile", "primary": false}]);
    let u = create(&app, &t, body);
    assert_eq!(u["emails"][0]["primary"], false);
    assert_eq!(u["phoneNumbers"][0]["primary"], false);
    create(&app, &t, new_user("grace@example.com"));

    let names = |f: &str| -> Vec<String> {
        let r = filtered(&app, &t, f);
        assert_eq!(r.status, 200, "{f}: {}", r.text);
        user_names(&r)
    };
    assert_eq!(names("emails.primary eq false"), ["ada@example.com"]);
    assert_eq!(
        names("emails[primary eq true] and userName ew \"example.com\""),
        ["grace@example.com"]
    );
    assert_eq!(names("phoneNumbers[primary eq true]"), Vec::<String>::new());
    assert_eq!(names("phoneNumbers.primary ne true"), {
        // `ne` also holds where there is no number at all (RFC 7643 §2.5).
        vec!["ada@example.com", "grace@example.com"]
    });
}

#[test]
fn system_administrators_are_out_of_scims_reach() {
    let app = TestApp::spawn();
    let t = token(&app);
    let (admin_id, _) = app.user("root@example.com", Role::SystemAdmin);
    let path = format!("/rest/scim/Users/{admin_id}");

    assert_scim_error(&scim(&app, "GET", &path, &t, None), 403, None);
    let patch = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                       "Operations": [{"op": "replace", "path": "active", "value": false}]});
    assert_scim_error(&scim(&app, "PATCH", &path, &t, Some(patch)), 403, None);
    let put = json!({"schemas": [USER], "userName": "root@example.com", "active": false});
    assert_scim_error(&scim(&app, "PUT", &path, &t, Some(put)), 403, None);
    assert_scim_error(&scim(&app, "DELETE", &path, &t, None), 403, None);
    assert_eq!(
        app.count(
            &format!("id = '{admin_id}' AND active = TRUE AND deleted = FALSE AND version = 1"),
            "users"
        ),
        1
    );
    // Nor can SCIM make one.
    let before = app.count("1 = 1", "users");
    let mut body = new_user("ada@example.com");
    body["roles"] = json!([{"value": "system-admin"}]);
    assert_scim_error(
        &scim(&app, "POST", "/rest/scim/Users", &t, Some(body)),
        403,
        None,
    );
    assert_eq!(app.count("1 = 1", "users"), before);
    let ada = create(&app, &t, new_user("ada@example.com"));
    let r = scim(
        &app,
        "PATCH",
        &format!("/rest/scim/Users/{}", ada["id"].as_str().unwrap()),
        &t,
        Some(
            json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                    "Operations": [{"op": "add", "path": "roles", "value": [{"value": "system-admin"}]}]}),
        ),
    );
    assert_scim_error(&r, 403, None);
    assert_eq!(
        app.count("email = 'ada@example.com' AND role = 'user'", "users"),
        1
    );
    // And listings leave system administrators out (ada, an ordinary user, has no `roles`).
    let r = scim(&app, "GET", "/rest/scim/Users?filter=roles%20pr", &t, None);
    assert_eq!(r.json()["totalResults"], 0, "{}", r.text);
    let r = scim(
        &app,
        "GET",
        "/rest/scim/Users?filter=roles.value%20eq%20%22system-admin%22",
        &t,
        None,
    );
    assert_eq!(r.json()["totalResults"], 0, "{}", r.text);
    let r = scim(&app, "GET", "/rest/scim/Users", &t, None);
    assert_eq!(r.json()["totalResults"], 1, "{}", r.text);
}

#[test]
fn an_operator_pauses_provisioning() {
    let app = TestApp::spawn();
    let t = token(&app);
    let u = create(&app, &t, new_user("ada@example.com"));
    let id = u["id"].as_str().unwrap();
    coffer_service::identity::settings::set(&app.ctx, "scimProvisioning", "false", None).unwrap();
    let before = app.count("1 = 1", "users");
    assert_scim_error(&scim(&app, "GET", "/rest/scim/Users", &t, None), 403, None);
    assert_scim_error(
        &scim(&app, "GET", &format!("/rest/scim/Users/{id}"), &t, None),
        403,
        None,
    );
    let r = scim(
        &app,
        "POST",
        "/rest/scim/Users",
        &t,
        Some(new_user("grace@example.com")),
    );
    assert_scim_error(&r, 403, None);
    assert_eq!(app.count("1 = 1", "users"), before);
    // A token that is not valid is still 401, not 403.
    assert_scim_error(
        &scim(&app, "GET", "/rest/scim/Users", "nope", None),
        401,
        None,
    );

    coffer_service::identity::settings::set(&app.ctx, "scimProvisioning", "true", None).unwrap();
    assert_eq!(scim(&app, "GET", "/rest/scim/Users", &t, None).status, 200);
    assert_scim_error(
        &scim(
            &app,
            "POST",
            "/rest/scim/Users",
            &t,
            Some(json!({"schemas": [USER], "userName": "x@example.com", "settings": 1})),
        ),
        400,
        Some("invalidSyntax"),
    );
}
