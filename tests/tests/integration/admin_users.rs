//! Account administration (`/rest/admin/users*`) and a user's own settings
//! (`/rest/users/{id}/settings`) over HTTP: statuses, envelopes, the fields a client reads, the
//! stored state afterwards (refused calls store nothing and record no event), and who may do
//! what (system and helpdesk administrators; the helpdesk's rank limits). Runs on SQLite, and
//! on PostgreSQL when `COFFER_TEST_POSTGRES_URL` is set.

use coffer_domain::Role;
use coffer_tests::TestApp;
use serde_json::json;

fn emails(r: &coffer_tests::Resp) -> Vec<String> {
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data: {}", r.text))
        .iter()
        .map(|u| u["email"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_administrator_creates_an_account_with_its_folders_and_reads_it_back() {
    let app = TestApp::spawn();
    let admin = app.admin_token();

    let r = app.rest(
        "POST",
        "/rest/admin/users",
        &admin,
        Some(json!({"email": "Ann@Example.com", "name": " Ann Smith ", "password": "Correct-Horse-42", "verified": true})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let u = r.json();
    let id = u["id"].as_str().unwrap().to_string();
    assert_eq!(
        r.header("location").unwrap(),
        format!("{}/rest/admin/users/{id}", app.base)
    );
    assert_eq!(u["email"], "ann@example.com");
    assert_eq!(u["name"], "Ann Smith");
    assert_eq!(u["adminRoleId"], 0);
    assert_eq!(u["active"], true);
    assert_eq!(u["deactivated"], false);
    assert_eq!(u["suspended"], false);
    assert_eq!(u["deleted"], false);
    assert_eq!(u["verified"], true);
    assert_eq!(u["userTypeId"], 1);
    assert_eq!(u["created"].as_str().unwrap().len(), 10);
    assert!(u.get("links").is_none());
    // Its three system folders, made by the one insert function.
    assert_eq!(
        app.count(
            &format!("owner_id = '{id}' AND system IS NOT NULL"),
            "objects"
        ),
        3
    );
    for f in ["basedirId", "mydirId", "syncdirId"] {
        let folder = u[f].as_str().unwrap();
        assert_eq!(app.count(&format!("id = '{folder}'"), "objects"), 1, "{f}");
    }
    assert_eq!(
        app.count(
            &format!("subject = 'user.user.create' AND data LIKE '%{id}%'"),
            "events"
        ),
        1
    );
    // The new account signs in with its password.
    let t = app.password_token("ann@example.com", "Correct-Horse-42");
    assert!(t["access_token"].is_string(), "{t}");

    let r = app.rest(
        "GET",
        &format!("/rest/admin/users/{id}?mode=full_with_links"),
        &admin,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let g = r.json();
    assert_eq!(g["email"], "ann@example.com");
    assert_eq!(
        g["links"][0]["href"],
        format!("{}/rest/admin/users/{id}", app.base)
    );

    // Without a name: the email's local part; without a password: no password sign-in.
    let r = app.rest(
        "POST",
        "/rest/admin/users",
        &admin,
        Some(json!({"email": "bob@example.com", "sendNotification": true})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["name"], "bob");
    assert_eq!(
        app.count(
            "email = 'bob@example.com' AND password_hash IS NULL",
            "users"
        ),
        1
    );
    assert_eq!(app.count("subject = 'user.user.notify'", "events"), 1);

    let r = app.rest(
        "GET",
        &format!("/rest/admin/users/{}", uuid::Uuid::new_v4()),
        &admin,
        None,
    );
    assert_eq!((r.status, r.code().as_str()), (404, "ERR_ENTITY_NOT_FOUND"));
}

#[test]
fn bad_input_to_create_stores_nothing() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    app.user("taken@example.com", Role::User);
    let r = app.rest(
        "POST",
        "/rest/externalDL",
        &admin,
        Some(json!({"emails": ["all-staff@example.com"]})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let users_before = app.count("1 = 1", "users");
    let events_before = app.count("1 = 1", "events");

    let cases = [
        (json!({}), 422, "ERR_INPUT_REQUIRED"),
        (json!({"email": 5}), 422, "ERR_INPUT_NOT_STRING"),
        (
            json!({"email": "not-an-email"}),
            422,
            "ERR_INPUT_INVALID_FORMAT",
        ),
        (
            json!({"email": "c@example.com", "name": "   "}),
            422,
            "ERR_INPUT_REQUIRED",
        ),
        (
            json!({"email": "c@example.com", "name": "a\u{0}b"}),
            422,
            "ERR_INPUT_INVALID_FORMAT",
        ),
        (
            json!({"email": "c@example.com", "name": "x".repeat(256)}),
            422,
            "ERR_INPUT_INVALID_FORMAT",
        ),
        (
            json!({"email": "c@example.com", "password": "weak"}),
            422,
            "ERR_INPUT_PASSWORD_COMPLEXITY_ERROR",
        ),
        (
            json!({"email": "c@example.com", "adminRoleId": 9}),
            422,
            "ERR_INPUT_NOT_IN_LIST",
        ),
        (
            json!({"email": "c@example.com", "adminRoleId": "1"}),
            422,
            "ERR_INPUT_NOT_INTEGER",
        ),
        (
            json!({"email": "c@example.com", "userTypeId": 999}),
            422,
            "ERR_INVALID_PARAMETER",
        ),
        (
            json!({"email": "c@example.com", "verified": false}),
            422,
            "ERR_INPUT_ATTRIBUTE_FORBIDDEN",
        ),
        (
            json!({"email": "c@example.com", "sendNotification": "yes"}),
            422,
            "ERR_INPUT_NOT_BOOLEAN",
        ),
        (
            json!({"email": "TAKEN@example.com"}),
            409,
            "ERR_ENTITY_EXISTS",
        ),
        (
            json!({"email": "all-staff@example.com"}),
            403,
            "ERR_INPUT_EMAIL_IS_DISTRIBUTION_LIST",
        ),
        (json!([1, 2]), 400, "ERR_REQUEST_INVALID_JSON"),
    ];
    for (body, status, code) in cases {
        let r = app.rest("POST", "/rest/admin/users", &admin, Some(body.clone()));
        assert_eq!(
            (r.status, r.code().as_str()),
            (status, code),
            "{body}: {}",
            r.text
        );
        assert!(
            !r.text.contains("diesel") && !r.text.contains("panick"),
            "{}",
            r.text
        );
    }
    assert_eq!(app.count("1 = 1", "users"), users_before);
    assert_eq!(app.count("1 = 1", "events"), events_before);
}

#[test]
fn only_system_and_helpdesk_administrators_reach_the_admin_calls() {
    let app = TestApp::spawn();
    let (ann, user) = app.user_token("ann@example.com", Role::User);
    let (_, appadmin) = app.user_token("apps@example.com", Role::ApplicationAdmin);
    let (_, helpdesk) = app.user_token("help@example.com", Role::HelpdeskAdmin);
    let calls: Vec<(&str, String, Option<serde_json::Value>)> = vec![
        ("GET", "/rest/admin/users".into(), None),
        (
            "POST",
            "/rest/admin/users".into(),
            Some(json!({"email": "x@example.com"})),
        ),
        ("GET", format!("/rest/admin/users/{ann}"), None),
        (
            "PUT",
            format!("/rest/admin/users/{ann}"),
            Some(json!({"name": "X"})),
        ),
        ("GET", format!("/rest/admin/users/{ann}/devices"), None),
        ("GET", format!("/rest/admin/users/{ann}/adminRoles"), None),
        (
            "POST",
            "/rest/admin/users/actions/deleteTotpSecret".into(),
            Some(json!({"ids": [ann]})),
        ),
    ];
    for token in [&user, &appadmin] {
        for (m, p, b) in &calls {
            let r = app.rest(m, p, token, b.clone());
            assert_eq!(
                (r.status, r.code().as_str()),
                (403, "ERR_ACCESS_ADMIN"),
                "{m} {p}: {}",
                r.text
            );
        }
    }
    assert_eq!(app.count("email = 'x@example.com'", "users"), 0);
    assert_eq!(app.count("name = 'X'", "users"), 0);
    // Without a token at all: 401.
    let r = app.rest("GET", "/rest/admin/users", "nope", None);
    assert_eq!(r.status, 401, "{}", r.text);
    // The helpdesk administrator reaches every one of them for a plain user.
    for (m, p, b) in &calls {
        let r = app.rest(m, p, &helpdesk, b.clone());
        assert_eq!(r.status, 200, "{m} {p}: {}", r.text);
    }
}

#[test]
fn a_helpdesk_administrator_manages_plain_users_only() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (help_id, helpdesk) = app.user_token("help@example.com", Role::HelpdeskAdmin);
    let (sys, _) = app.user("sys@example.com", Role::SystemAdmin);
    let (ann, _) = app.user("ann@example.com", Role::User);
    let events_before = app.count("1 = 1", "events");

    let refused = [
        (
            "POST",
            "/rest/admin/users".to_string(),
            json!({"email": "new@example.com", "adminRoleId": 1}),
        ),
        (
            "POST",
            "/rest/admin/users".to_string(),
            json!({"email": "new@example.com", "adminRoleId": 3}),
        ),
        (
            "PUT",
            format!("/rest/admin/users/{sys}"),
            json!({"deactivated": true}),
        ),
        (
            "PUT",
            format!("/rest/admin/users/{sys}"),
            json!({"name": "Renamed"}),
        ),
        (
            "PUT",
            format!("/rest/admin/users/{ann}"),
            json!({"adminRoleId": 1}),
        ),
        (
            "PUT",
            format!("/rest/admin/users/{ann}"),
            json!({"adminRoleId": 3}),
        ),
        (
            "PUT",
            format!("/rest/admin/users/{help_id}"),
            json!({"name": "Self"}),
        ),
        (
            "POST",
            "/rest/admin/users/actions/deleteTotpSecret".to_string(),
            json!({"ids": [ann, sys]}),
        ),
    ];
    for (m, p, b) in &refused {
        let r = app.rest(m, p, &helpdesk, Some(b.clone()));
        assert_eq!(
            (r.status, r.code().as_str()),
            (403, "ERR_ADMIN_ROLE_RANK_RESTRICTED"),
            "{m} {p} {b}: {}",
            r.text
        );
    }
    assert_eq!(app.count("1 = 1", "events"), events_before);
    assert_eq!(app.count("email = 'new@example.com'", "users"), 0);
    assert_eq!(
        app.count(&format!("id = '{ann}' AND role = 'user'"), "users"),
        1
    );
    assert_eq!(
        app.count(&format!("id = '{sys}' AND active = TRUE"), "users"),
        1
    );

    // A plain user it may change; a system administrator may give a role.
    let r = app.rest(
        "PUT",
        &format!("/rest/admin/users/{ann}"),
        &helpdesk,
        Some(json!({"name": "Ann B"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["name"], "Ann B");
    let r = app.rest(
        "PUT",
        &format!("/rest/admin/users/{ann}"),
        &admin,
        Some(json!({"adminRoleId": 3})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["adminRoleId"], 3);
    let r = app.rest(
        "GET",
        &format!("/rest/admin/users/{ann}/adminRoles"),
        &admin,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json(),
        json!({"data": [{"id": 3, "name": "Helpdesk Admin"}]})
    );
    // Now an administrator: out of the helpdesk's reach.
    let r = app.rest(
        "PUT",
        &format!("/rest/admin/users/{ann}"),
        &helpdesk,
        Some(json!({"name": "Ann C"})),
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ADMIN_ROLE_RANK_RESTRICTED")
    );
}

#[test]
fn the_list_filters_orders_and_pages() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (carol, _) = app.user("carol@example.com", Role::User);
    app.user("bob@example.com", Role::User);
    app.user("dave@other.org", Role::HelpdeskAdmin);
    let (gone, _) = app.user("gone@example.com", Role::User);
    let r = app.rest("DELETE", &format!("/rest/admin/users/{gone}"), &admin, None);
    assert_eq!(r.status, 204, "{}", r.text);
    let r = app.rest(
        "PUT",
        &format!("/rest/admin/users/{carol}"),
        &admin,
        Some(json!({"deactivated": true})),
    );
    assert_eq!(r.status, 200, "{}", r.text);

    let r = app.rest("GET", "/rest/admin/users", &admin, None);
    assert_eq!(
        emails(&r),
        [
            "admin@coffer.local",
            "bob@example.com",
            "carol@example.com",
            "dave@other.org"
        ]
    );
    assert_eq!(
        r.json()["metadata"],
        json!({"total": 4, "limit": 100, "offset": 0})
    );
    let r = app.rest(
        "GET",
        "/rest/admin/users?email:contains=EXAMPLE.com&orderBy=email:desc",
        &admin,
        None,
    );
    assert_eq!(emails(&r), ["carol@example.com", "bob@example.com"]);
    let r = app.rest("GET", "/rest/admin/users?active=false", &admin, None);
    assert_eq!(emails(&r), ["carol@example.com"]);
    assert_eq!(r.json()["data"][0]["deactivated"], true);
    assert_eq!(r.json()["data"][0]["active"], false);
    let r = app.rest("GET", "/rest/admin/users?deleted=true", &admin, None);
    assert_eq!(r.json()["data"][0]["deleted"], true, "{}", r.text);
    let r = app.rest(
        "GET",
        "/rest/admin/users?email=bob@example.com",
        &admin,
        None,
    );
    assert_eq!(emails(&r), ["bob@example.com"]);
    let r = app.rest("GET", "/rest/admin/users?name:contains=dave", &admin, None);
    assert_eq!(emails(&r), ["dave@other.org"]);
    let r = app.rest(
        "GET",
        "/rest/admin/users?name=bob@example.com",
        &admin,
        None,
    );
    assert_eq!(emails(&r), ["bob@example.com"]);
    let r = app.rest("GET", "/rest/admin/users?limit=2&offset=1", &admin, None);
    assert_eq!(emails(&r), ["bob@example.com", "carol@example.com"]);
    assert_eq!(
        r.json()["metadata"],
        json!({"total": 4, "limit": 2, "offset": 1})
    );

    for q in ["bogus=1", "orderBy=password:asc", "active=maybe", "limit=0"] {
        let r = app.rest("GET", &format!("/rest/admin/users?{q}"), &admin, None);
        assert_eq!(r.status / 100, 4, "{q}: {}", r.text);
        assert!(r.code().starts_with("ERR_"), "{q}: {}", r.text);
    }
}

#[test]
fn the_list_takes_the_vendors_state_profile_and_date_filters() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (carol, _) = app.user("carol@example.com", Role::User);
    app.user("bob@example.com", Role::User);
    app.user("out@partner.example", Role::User);
    app.user("rita@example.com", Role::User);
    let r = app.rest(
        "PUT",
        &format!("/rest/admin/users/{carol}"),
        &admin,
        Some(json!({"deactivated": true})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    // State that HTTP does not set here: an outside account, a restricted profile (no
    // collaboration), creation days.
    app.execute("UPDATE users SET internal = FALSE WHERE email = 'out@partner.example'");
    app.execute("UPDATE users SET profile_id = 2 WHERE email = 'rita@example.com'");
    // 2026-01-10 00:00:00 UTC, 2026-01-11 12:00:00 UTC, 2026-01-12 23:59:59 UTC.
    app.execute("UPDATE users SET created_at = 1768003200 WHERE email = 'bob@example.com'");
    app.execute("UPDATE users SET created_at = 1768132800 WHERE email = 'carol@example.com'");
    app.execute("UPDATE users SET created_at = 1768262399 WHERE email = 'rita@example.com'");
    let list = |q: &str| emails(&app.rest("GET", &format!("/rest/admin/users?{q}"), &admin, None));

    assert_eq!(list("suspended=true"), ["carol@example.com"]);
    assert!(!list("suspended=false").contains(&"carol@example.com".to_string()));
    assert_eq!(list("suspended=false").len(), 4);
    assert!(list("suspended=true&deleted=true").is_empty());
    assert_eq!(list("verified=true").len(), 5);
    assert!(list("verified=false").is_empty());
    assert_eq!(list("isRecipient=true"), ["out@partner.example"]);
    assert_eq!(list("isRecipient=false").len(), 4);
    assert_eq!(list("allowsCollaboration=false"), ["rita@example.com"]);
    assert_eq!(list("allowsCollaboration=true").len(), 4);
    assert_eq!(list("active=true&allowsCollaboration=true").len(), 3);

    // `created`: a bare date is the whole day (UTC); ranges narrow each other.
    assert_eq!(list("created=2026-01-11"), ["carol@example.com"]);
    assert_eq!(
        list("created:gte=2026-01-10&created:lte=2026-01-11"),
        ["bob@example.com", "carol@example.com"]
    );
    assert_eq!(
        list("created:gt=2026-01-10&created:lt=2026-01-13"),
        ["carol@example.com", "rita@example.com"]
    );
    assert_eq!(
        list("created:lte=2026-01-12&created:gt=2026-01-11"),
        ["rita@example.com"]
    );
    assert_eq!(list("created:lt=2026-01-10"), Vec::<String>::new());
    assert_eq!(
        list("created:gte=2026-01-11T12:00:00Z&created:lt=2026-01-12"),
        ["carol@example.com"]
    );

    for (q, status, code) in [
        ("created=yesterday", 422, "ERR_INPUT_INVALID_DATE"),
        ("suspended=maybe", 400, "ERR_REQUEST_INVALID_FILTER"),
        ("isRecipient:contains=x", 400, "ERR_REQUEST_INVALID_FILTER"),
    ] {
        let r = app.rest("GET", &format!("/rest/admin/users?{q}"), &admin, None);
        assert_eq!(
            (r.status, r.code().as_str()),
            (status, code),
            "{q}: {}",
            r.text
        );
    }
}

#[test]
fn deactivating_and_setting_a_password_end_the_users_sessions() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let admin_id = app.count("1 = 1", "users"); // one account so far: the administrator
    assert_eq!(admin_id, 1);
    let (ann, t) = app.user_token("ann@example.com", Role::User);
    assert_eq!(app.rest("GET", "/rest/users/me", &t, None).status, 200);

    let r = app.rest(
        "PUT",
        &format!("/rest/admin/users/{ann}"),
        &admin,
        Some(json!({"suspended": true})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (r.json()["suspended"].clone(), r.json()["active"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(app.rest("GET", "/rest/users/me", &t, None).status, 401);
    assert_eq!(
        app.count(&format!("id = '{ann}' AND active = FALSE"), "users"),
        1
    );
    assert_eq!(
        app.count(
            &format!("subject = 'user.user.update' AND data LIKE '%{ann}%'"),
            "events"
        ),
        1
    );

    let r = app.rest(
        "PUT",
        &format!("/rest/admin/users/{ann}"),
        &admin,
        Some(json!({"deactivated": false, "password": "Brand-New-Pass-7", "userTypeId": 1})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["active"], true);
    let t2 = app.password_token("ann@example.com", "Brand-New-Pass-7");
    assert!(t2["access_token"].is_string(), "{t2}");
    assert_eq!(app.count("subject = 'user.password.change'", "events"), 1);

    // Bad input stores nothing.
    let version = app.count(&format!("id = '{ann}' AND version = 3"), "users");
    assert_eq!(version, 1);
    let cases = [
        (json!({"name": ""}), 422, "ERR_INPUT_REQUIRED"),
        (json!({"name": 7}), 422, "ERR_INPUT_NOT_STRING"),
        (
            json!({"password": "short"}),
            422,
            "ERR_INPUT_PASSWORD_COMPLEXITY_ERROR",
        ),
        (json!({"deactivated": "yes"}), 422, "ERR_INPUT_NOT_BOOLEAN"),
        (
            json!({"deactivated": true, "suspended": false}),
            422,
            "ERR_INVALID_PARAMETER",
        ),
        (json!({"adminRoleId": -1}), 422, "ERR_INPUT_NOT_IN_LIST"),
        (json!({"userTypeId": 4242}), 422, "ERR_INVALID_PARAMETER"),
        (
            json!({"verified": false}),
            422,
            "ERR_INPUT_ATTRIBUTE_FORBIDDEN",
        ),
    ];
    for (body, status, code) in cases {
        let r = app.rest(
            "PUT",
            &format!("/rest/admin/users/{ann}"),
            &admin,
            Some(body.clone()),
        );
        assert_eq!(
            (r.status, r.code().as_str()),
            (status, code),
            "{body}: {}",
            r.text
        );
    }
    assert_eq!(
        app.count(&format!("id = '{ann}' AND version = 3"), "users"),
        1
    );

    // An administrator neither deactivates nor demotes themself.
    let me = app.rest("GET", "/rest/users/me", &admin, None).json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    for body in [json!({"deactivated": true}), json!({"adminRoleId": 0})] {
        let r = app.rest(
            "PUT",
            &format!("/rest/admin/users/{me}"),
            &admin,
            Some(body.clone()),
        );
        assert_eq!(
            (r.status, r.code().as_str()),
            (403, "ERR_ACCESS_USER"),
            "{body}"
        );
    }
    // Their own password they may set here: the session making the call is kept.
    let r = app.rest(
        "PUT",
        &format!("/rest/admin/users/{me}"),
        &admin,
        Some(json!({"password": "Admin-Rotated-99"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(app.rest("GET", "/rest/users/me", &admin, None).status, 200);
    // A deleted account cannot be changed; an unknown one is not found.
    let r = app.rest("DELETE", &format!("/rest/admin/users/{ann}"), &admin, None);
    assert_eq!(r.status, 204);
    let r = app.rest(
        "PUT",
        &format!("/rest/admin/users/{ann}"),
        &admin,
        Some(json!({"name": "Z"})),
    );
    assert_eq!((r.status, r.code().as_str()), (403, "ERR_ENTITY_DELETED"));
    let r = app.rest(
        "PUT",
        "/rest/admin/users/nobody",
        &admin,
        Some(json!({"name": "Z"})),
    );
    assert_eq!((r.status, r.code().as_str()), (404, "ERR_ENTITY_NOT_FOUND"));
}

#[test]
fn deleting_a_totp_secret_makes_the_user_enrol_again() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (ann, t) = app.user_token("ann@example.com", Role::User);
    let (bob, _) = app.user("bob@example.com", Role::User);
    app.execute(&format!(
        "UPDATE users SET totp_secret = 'JBSWY3DPEHPK3PXP', totp_enabled = TRUE WHERE id = '{ann}'"
    ));

    // All or nothing: one unknown id changes nobody.
    let r = app.rest(
        "POST",
        "/rest/admin/users/actions/deleteTotpSecret",
        &admin,
        Some(json!({"ids": [ann, "no-such-user"]})),
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (404, "ERR_ENTITY_NOT_FOUND"),
        "{}",
        r.text
    );
    assert_eq!(app.count("totp_secret IS NOT NULL", "users"), 1);
    for (body, code) in [
        (json!({}), "ERR_INPUT_REQUIRED"),
        (json!({"ids": []}), "ERR_INPUT_REQUIRED"),
        (json!({"ids": "x"}), "ERR_INPUT_NOT_ARRAY"),
        (json!({"ids": [1]}), "ERR_INPUT_NOT_STRING"),
    ] {
        let r = app.rest(
            "POST",
            "/rest/admin/users/actions/deleteTotpSecret",
            &admin,
            Some(body.clone()),
        );
        assert_eq!(
            (r.status, r.code().as_str()),
            (422, code),
            "{body}: {}",
            r.text
        );
    }
    assert_eq!(app.count("subject = 'user.tfa.delete'", "events"), 0);

    let r = app.rest(
        "POST",
        "/rest/admin/users/actions/deleteTotpSecret",
        &admin,
        Some(json!({"ids": [ann, bob]})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.text, "");
    assert_eq!(
        app.count("totp_secret IS NOT NULL OR totp_enabled = TRUE", "users"),
        0
    );
    assert_eq!(app.count("subject = 'user.tfa.delete'", "events"), 2);
    // The user's sessions ended.
    assert_eq!(app.rest("GET", "/rest/users/me", &t, None).status, 401);
}

#[test]
fn devices_and_admin_roles_of_a_user() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (ann, t) = app.user_token("ann@example.com", Role::User);
    let r = app.rest(
        "POST",
        "/rest/devices",
        &t,
        Some(json!({"installTagId": "phone-1"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);

    let r = app.rest(
        "GET",
        &format!("/rest/admin/users/{ann}/devices"),
        &admin,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    // The admin lists' envelope: `{data, metadata}`, nothing of the paged one.
    assert_eq!(v["metadata"]["total"], 1);
    assert_eq!(v["metadata"]["offset"], 0);
    assert!(
        v["metadata"]["limit"].as_i64().is_some_and(|l| l > 0),
        "{v}"
    );
    assert!(v.get("total").is_none() && v.get("page").is_none(), "{v}");
    assert_eq!(v["data"][0]["install_tag_id"], "phone-1");
    assert_eq!(v["data"][0]["user_id"], ann.as_str());

    let r = app.rest(
        "GET",
        &format!("/rest/admin/users/{ann}/adminRoles"),
        &admin,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json(), json!({"data": []}));
    for p in ["devices", "adminRoles"] {
        let r = app.rest(
            "GET",
            &format!("/rest/admin/users/nobody/{p}"),
            &admin,
            None,
        );
        assert_eq!(
            (r.status, r.code().as_str()),
            (404, "ERR_ENTITY_NOT_FOUND"),
            "{p}"
        );
    }
}

#[test]
fn a_user_reads_and_changes_their_own_settings_only() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (ann, t) = app.user_token("ann@example.com", Role::User);
    let (bob, _) = app.user("bob@example.com", Role::User);
    let r = app.rest(
        "POST",
        "/rest/locations",
        &admin,
        Some(json!({"name": "Berlin", "domain": "berlin.example.com"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let loc = r.json()["id"].as_i64().unwrap();

    let r = app.rest("GET", &format!("/rest/users/{ann}/settings"), &t, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let s = r.json();
    assert_eq!(s["languageId"], 1);
    assert_eq!(s["signature"], "");
    assert_eq!(s["mobileKeyStore"], "");
    assert_eq!(s["mobileNumberVerified"], false);
    assert!(
        s["storageQuota"].is_i64() && s["storageUsed"].is_i64(),
        "{s}"
    );
    assert!(s.get("locationId").is_none());

    let r = app.rest(
        "PUT",
        &format!("/rest/users/{ann}/settings"),
        &t,
        Some(json!({"languageId": 2, "locationId": loc, "signature": "Ann\nCoffer team", "mobileKeyStore": "ks-1", "addLinks": true})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let s = r.json();
    assert_eq!(s["languageId"], 2);
    assert_eq!(s["locationId"], loc);
    assert_eq!(s["signature"], "Ann\nCoffer team");
    assert_eq!(s["mobileKeyStore"], "ks-1");
    assert_eq!(
        s["links"][0]["href"],
        format!("{}/rest/users/{ann}/settings", app.base)
    );
    assert_eq!(
        app.count(
            &format!("user_id = '{ann}' AND signature = 'Ann\nCoffer team'"),
            "user_settings"
        ),
        1
    );
    assert_eq!(app.count("subject = 'user.settings.update'", "events"), 1);
    let r = app.rest("GET", &format!("/rest/users/{ann}/settings"), &t, None);
    assert_eq!(r.json()["signature"], "Ann\nCoffer team");

    // Only one's own: another user's, even an administrator asking, or an unknown id: 403.
    for (who, token) in [(&bob, &t), (&ann, &admin)] {
        for m in ["GET", "PUT"] {
            let body = (m == "PUT").then(|| json!({"signature": "x"}));
            let r = app.rest(m, &format!("/rest/users/{who}/settings"), token, body);
            assert_eq!(
                (r.status, r.code().as_str()),
                (403, "ERR_ACCESS_USER"),
                "{m}"
            );
        }
    }
    // Bad input stores nothing.
    for (body, code) in [
        (json!({"languageId": 0}), "ERR_INPUT_MIN_VALUE"),
        (json!({"languageId": "en"}), "ERR_INPUT_NOT_INTEGER"),
        (json!({"locationId": 9999}), "ERR_INVALID_PARAMETER"),
        (json!({"signature": "a\u{0}b"}), "ERR_INPUT_INVALID_FORMAT"),
        (
            json!({"signature": "x".repeat(10_001)}),
            "ERR_INPUT_INVALID_FORMAT",
        ),
        (
            json!({"mobileKeyStore": "a\nb"}),
            "ERR_INPUT_INVALID_FORMAT",
        ),
        (json!({"mobileKeyStore": true}), "ERR_INPUT_NOT_STRING"),
    ] {
        let r = app.rest(
            "PUT",
            &format!("/rest/users/{ann}/settings"),
            &t,
            Some(body.clone()),
        );
        assert_eq!(
            (r.status, r.code().as_str()),
            (422, code),
            "{body}: {}",
            r.text
        );
    }
    assert_eq!(app.count("subject = 'user.settings.update'", "events"), 1);
    assert_eq!(
        app.count(&format!("id = '{ann}' AND language_id = 2"), "users"),
        1
    );
}
