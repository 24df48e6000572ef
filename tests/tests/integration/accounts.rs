//! Account operations over HTTP: changing the current user's name and password (which ends the
//! user's other sessions), and deleting users (the delete options' rules, all-or-nothing versus
//! `partialSuccess`, and what deletion does to sign-in, tokens and devices).

use coffer_domain::Role;
use coffer_tests::{sign_in, TestApp};
use serde_json::json;

#[test]
fn the_current_user_changes_name() {
    let app = TestApp::spawn();
    let (id, t) = app.user_token("ann@example.com", Role::User);
    let r = app.rest(
        "PUT",
        "/rest/users/me",
        &t,
        Some(json!({"name": "Ann Smith"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["name"], "Ann Smith");
    assert_eq!(
        app.count(&format!("id = '{id}' AND name = 'Ann Smith'"), "users"),
        1
    );
    let r = app.rest("PUT", "/rest/users/me", &t, Some(json!({"name": "  "})));
    assert_eq!(r.code(), "ERR_INPUT_INVALID_FORMAT");
    let r = app.rest("PUT", "/rest/users/me", &t, Some(json!({})));
    assert_eq!(r.code(), "ERR_INPUT_REQUIRED");
}

#[test]
fn a_password_change_needs_the_previous_one_passes_the_policy_and_ends_other_sessions() {
    let app = TestApp::spawn();
    let (_, pw) = app.user("ann@example.com", Role::User);
    let this = sign_in(&app, "ann@example.com", &pw).json()["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let other = sign_in(&app, "ann@example.com", &pw).json();
    let other_access = other["access_token"].as_str().unwrap().to_string();

    let r = app.rest(
        "PUT",
        "/rest/users/me",
        &this,
        Some(json!({"password": "New-Passw0rd"})),
    );
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INPUT_REQUIRED".to_string())
    );
    assert_eq!(r.json()["errors"][0]["field"], "previousPassword");
    let r = app.rest(
        "PUT",
        "/rest/users/me",
        &this,
        Some(json!({"password": "New-Passw0rd", "previousPassword": "wrong"})),
    );
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INVALID_PARAMETER".to_string())
    );
    let r = app.rest(
        "PUT",
        "/rest/users/me",
        &this,
        Some(json!({"password": "weak", "previousPassword": pw})),
    );
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INPUT_PASSWORD_COMPLEXITY_ERROR".to_string())
    );
    // Nothing changed so far.
    assert_eq!(
        app.rest("GET", "/rest/users/me", &other_access, None)
            .status,
        200
    );

    let r = app.rest(
        "PUT",
        "/rest/users/me",
        &this,
        Some(json!({"password": "New-Passw0rd", "previousPassword": pw})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        app.rest("GET", "/rest/users/me", &this, None).status,
        200,
        "this session goes on"
    );
    assert_eq!(
        app.rest("GET", "/rest/users/me", &other_access, None)
            .status,
        401,
        "other sessions end"
    );
    let refresh = app.form(
        "/oauth/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", other["refresh_token"].as_str().unwrap()),
            ("client_id", &app.admin.client_id),
            ("client_secret", &app.admin.client_secret),
        ],
    );
    assert_eq!(refresh.json()["error"], "invalid_grant");
    assert_eq!(sign_in(&app, "ann@example.com", &pw).status, 400);
    assert_eq!(sign_in(&app, "ann@example.com", "New-Passw0rd").status, 200);
    assert_eq!(app.count("subject = 'user.password.change'", "events"), 1);
}

#[test]
fn deleting_users_needs_a_user_administrator_and_valid_options() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (bob, bob_token) = app.user_token("bob@example.com", Role::User);
    let (_, appadmin) = app.user_token("apps@example.com", Role::ApplicationAdmin);
    let path = format!("/rest/users?id:in={bob}");

    for t in [&bob_token, &appadmin] {
        let r = app.rest("DELETE", &path, t, None);
        assert_eq!((r.status, r.code()), (403, "ERR_ACCESS_USER".to_string()));
    }
    for (body, code, field) in [
        (
            json!({"remoteWipe": "yes"}),
            "ERR_INPUT_NOT_BOOLEAN",
            "remoteWipe",
        ),
        (
            json!({"retainData": true, "retainToUser": 5}),
            "ERR_INPUT_NOT_STRING",
            "retainToUser",
        ),
        (
            json!({"retainData": true, "deleteUnsharedData": true, "retainToUser": "x"}),
            "ERR_INPUT_ATTRIBUTE_FORBIDDEN",
            "deleteUnsharedData",
        ),
        (
            json!({"retainData": false, "deleteUnsharedData": false}),
            "ERR_INPUT_REQUIRED",
            "deleteUnsharedData",
        ),
        (
            json!({"retainData": true}),
            "ERR_INPUT_REQUIRED",
            "retainToUser",
        ),
    ] {
        let r = app.rest("DELETE", &path, &admin, Some(body.clone()));
        assert_eq!(
            (r.status, r.code()),
            (422, code.to_string()),
            "{body}: {}",
            r.text
        );
        assert_eq!(r.json()["errors"][0]["field"], field);
    }
    let r = app.rest("DELETE", "/rest/users", &admin, None);
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INPUT_REQUIRED".to_string())
    );
    assert_eq!(app.count("deleted = TRUE", "users"), 0);
}

#[test]
fn a_deleted_user_cannot_sign_in_and_their_tokens_and_devices_stop() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (bob, pw) = app.user("bob@example.com", Role::User);
    let tok = app
        .form(
            "/oauth/token",
            &[
                ("grant_type", "password"),
                ("username", "bob@example.com"),
                ("password", &pw),
                ("client_id", &app.admin.client_id),
                ("client_secret", &app.admin.client_secret),
                ("install_tag_id", "bob-phone"),
            ],
        )
        .json();
    let bob_token = tok["access_token"].as_str().unwrap();
    assert_eq!(
        app.rest("GET", "/rest/users/me", bob_token, None).status,
        200
    );

    let r = app.rest(
        "DELETE",
        &format!("/rest/users?id:in={bob}"),
        &admin,
        Some(json!({"remoteWipe": true})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["data"][0]["id"], bob.as_str());
    assert_eq!(r.json()["data"][0]["deleted"], true);
    assert_eq!(
        app.rest("GET", "/rest/users/me", bob_token, None).status,
        401
    );
    assert_eq!(
        sign_in(&app, "bob@example.com", &pw).json()["error"],
        "invalid_grant"
    );
    assert_eq!(
        app.count(&format!("user_id = '{bob}' AND wipe_flag = 1"), "devices"),
        1
    );
    assert_eq!(app.count("subject = 'user.user.delete'", "events"), 1);
}

#[test]
fn bulk_delete_is_all_or_nothing_unless_partial_success() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (a, _) = app.user("a@example.com", Role::User);
    let (b, _) = app.user("b@example.com", Role::User);
    let ghost = uuid::Uuid::new_v4().to_string();

    let r = app.rest(
        "DELETE",
        &format!("/rest/users?id:in={a},{ghost},{b}"),
        &admin,
        None,
    );
    assert_eq!(
        (r.status, r.code()),
        (404, "ERR_ENTITY_NOT_FOUND".to_string()),
        "{}",
        r.text
    );
    assert_eq!(r.json()["failedIds"], json!([ghost]));
    assert_eq!(app.count("deleted = TRUE", "users"), 0, "nothing deleted");

    let r = app.rest(
        "DELETE",
        &format!("/rest/users?id:in={a},{ghost},{b}&partialSuccess=true"),
        &admin,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["data"].as_array().unwrap().len(), 2);
    assert_eq!(r.json()["failedIds"], json!([ghost]));
    assert_eq!(app.count("deleted = TRUE", "users"), 2);
}

#[test]
fn admin_delete_of_one_user() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (bob, _) = app.user("bob@example.com", Role::User);
    let (_, helpdesk) = app.user_token("help@example.com", Role::HelpdeskAdmin);
    let (sys, _) = app.user("root2@example.com", Role::SystemAdmin);

    let r = app.rest(
        "DELETE",
        &format!("/rest/admin/users/{sys}"),
        &helpdesk,
        None,
    );
    assert_eq!(
        (r.status, r.code()),
        (403, "ERR_ACCESS_USER".to_string()),
        "a helpdesk administrator cannot delete a system administrator"
    );
    let r = app.rest(
        "DELETE",
        &format!("/rest/admin/users/{bob}"),
        &helpdesk,
        None,
    );
    // 204 as the reference declares (the interface fixes 200 only for DELETE /rest/users).
    assert_eq!(r.status, 204, "{}", r.text);
    assert!(r.text.is_empty(), "{}", r.text);
    assert_eq!(
        app.count(&format!("id = '{bob}' AND deleted = TRUE"), "users"),
        1
    );
    let r = app.rest("DELETE", &format!("/rest/admin/users/{bob}"), &admin, None);
    assert_eq!(
        (r.status, r.code()),
        (403, "ERR_ENTITY_DELETED".to_string())
    );
    let r = app.rest(
        "DELETE",
        &format!("/rest/admin/users/{}", uuid::Uuid::new_v4()),
        &admin,
        None,
    );
    assert_eq!(
        (r.status, r.code()),
        (404, "ERR_ENTITY_NOT_FOUND".to_string())
    );
    let me = app.rest("GET", "/rest/users/me", &admin, None).json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.rest("DELETE", &format!("/rest/admin/users/{me}"), &admin, None);
    assert_eq!(
        (r.status, r.code()),
        (403, "ERR_ACCESS_USER".to_string()),
        "no one deletes themself"
    );
}

#[test]
fn repeated_failed_sign_ins_are_refused_for_a_while() {
    let app = TestApp::builder()
        .config(|c| {
            c.throttle = coffer_service::platform::throttle::Limits {
                max_failures: 3,
                slow_after: 100,
                window_secs: 60,
                lock_secs: 120,
            };
        })
        .spawn();
    let (_, pw) = app.user("ann@example.com", Role::User);
    for _ in 0..3 {
        let r = sign_in(&app, "ann@example.com", "wrong");
        assert_eq!(
            (r.status, r.json()["error"].as_str().unwrap()),
            (400, "invalid_grant")
        );
    }
    // Locked: even the right password is refused, with the OAuth body and Retry-After.
    let r = sign_in(&app, "ann@example.com", &pw);
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(r.json()["error"], "temporarily_unavailable");
    let retry: i64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((100..=120).contains(&retry), "{retry}");
    assert_eq!(r.header("cache-control"), Some("no-store"));
    assert_eq!(
        app.count(
            "key = 'account:ann@example.com' AND locked_until IS NOT NULL",
            "auth_failures"
        ),
        1
    );

    // The sign-in page refuses the same way.
    let client = app.admin.client_id.clone();
    let (cookie, csrf) = app.authorize_page(&format!("client_id={client}&response_type=code"));
    let r = app.page_post(
        "/oauth/authorize",
        &cookie,
        &[
            ("client_id", &client),
            ("response_type", "code"),
            ("email", "ann@example.com"),
            ("password", &pw),
            ("csrf", &csrf),
        ],
    );
    assert_eq!(r.status, 429);
    assert!(r.text.contains("Too many failed sign-ins"));
    assert!(r.header("retry-after").is_some());
}

#[test]
fn quota_follows_the_profile() {
    let app = TestApp::spawn();
    let (_, t) = app.user_token("ann@example.com", Role::User);
    let q = app.rest("GET", "/rest/users/me/quota", &t, None);
    assert_eq!(q.status, 200, "{}", q.text);
    let v = q.json();
    for f in [
        "send_quota_allowed",
        "send_quota_used",
        "folder_quota_allowed",
        "folder_quota_used",
        "sys_folders",
    ] {
        assert!(v.get(f).is_some(), "{f}: {v}");
    }
    let send = app
        .rest("GET", "/rest/users/me/quota?filter=send", &t, None)
        .json();
    assert!(send.get("folder_quota_allowed").is_none() && send.get("send_quota_allowed").is_some());
    let r = app.rest("GET", "/rest/users/me/quota?filter=disk", &t, None);
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INPUT_NOT_IN_LIST".to_string())
    );

    // The Restricted profile has mail but no collaboration: no folder quota.
    let (_, pw) = coffer_service::identity::accounts::create_user(
        &app.ctx,
        coffer_service::identity::accounts::NewUser {
            email: "mail@example.com".into(),
            name: "Mail Only".into(),
            password: None,
            role: Role::User,
            profile: Some("Restricted".into()),
        },
        None,
    )
    .unwrap();
    let mt = sign_in(&app, "mail@example.com", &pw).json()["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.rest("GET", "/rest/users/me/quota?filter=folder", &mt, None);
    assert_eq!(
        (r.status, r.code()),
        (404, "ERR_ENTITY_NOT_FOUND".to_string())
    );
    assert_eq!(
        app.rest("GET", "/rest/users/me/quota?filter=send", &mt, None)
            .status,
        200
    );
}

#[test]
fn mobile_number_needs_the_password_and_test_only_saves_nothing() {
    let app = TestApp::spawn();
    let (id, pw) = app.user("ann@example.com", Role::User);
    let t = sign_in(&app, "ann@example.com", &pw).json()["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let put =
        |body: serde_json::Value| app.rest("PUT", "/rest/users/me/mobileNumber", &t, Some(body));

    let r = put(json!({"mobileNumber": "+41 79 123 45 67"}));
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INPUT_REQUIRED".to_string())
    );
    let r = put(json!({"password": pw, "mobileNumber": "call me"}));
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INPUT_INVALID_FORMAT".to_string())
    );
    let r = put(json!({"password": "wrong", "mobileNumber": "+41791234567"}));
    assert_eq!(r.status, 422);

    let r = put(json!({"password": pw, "mobileNumber": "+41 79 123 45 67", "testOnly": true}));
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.is_empty());
    assert_eq!(
        app.count("to_number = '+41791234567'", "sms_messages"),
        1,
        "the test message was sent"
    );
    assert_eq!(
        app.count(&format!("id = '{id}' AND mobile_number IS NULL"), "users"),
        1,
        "nothing saved"
    );

    let r = put(json!({"password": pw, "mobileNumber": "+41 79 123 45 67"}));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["mobileNumber"], "+41791234567");
    assert_eq!(r.json()["mobileNumberVerified"], false);
    assert_eq!(
        app.count(
            &format!("id = '{id}' AND mobile_number = '+41791234567'"),
            "users"
        ),
        1
    );
}

#[test]
fn directory_search_finds_local_users_by_email_or_name() {
    let app = TestApp::spawn();
    let (_, t) = app.user_token("ann.smith@example.com", Role::User);
    app.user("bob@example.com", Role::User);
    let (gone, _) = app.user("annette@example.com", Role::User);
    let admin = app.admin_token();
    assert_eq!(
        app.rest("DELETE", &format!("/rest/admin/users/{gone}"), &admin, None)
            .status,
        204
    );

    let r = app.rest("GET", "/rest/users/ldapSearch?value=ANN", &t, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let matches = r.json()["matches"].as_array().unwrap().clone();
    assert_eq!(matches.len(), 1, "deleted users are not found: {matches:?}");
    assert_eq!(matches[0]["email"], "ann.smith@example.com");
    assert!(matches[0]["name"].is_string());
    // LIKE wildcards are matched literally.
    assert_eq!(
        app.rest("GET", "/rest/users/ldapSearch?value=%25", &t, None)
            .json()["matches"],
        json!([])
    );
    let r = app.rest("GET", "/rest/users/ldapSearch", &t, None);
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_INPUT_REQUIRED".to_string())
    );
}

#[test]
fn test_messages_go_through_the_configured_sms_gateway() {
    let gateway = coffer_tests::receiver::Receiver::start(&[202]);
    let url = gateway.url.clone();
    let app = TestApp::builder()
        .config(|c| c.sms_gateway = Some(url))
        .spawn();
    let (_, pw) = app.user("ann@example.com", Role::User);
    let t = sign_in(&app, "ann@example.com", &pw).json()["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.rest(
        "PUT",
        "/rest/users/me/mobileNumber",
        &t,
        Some(json!({"password": pw, "mobileNumber": "+41 79 123 45 67", "testOnly": true})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let got = gateway.wait_for(1, 5);
    assert_eq!(got.len(), 1);
    let sent: serde_json::Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(sent["to"], "+41791234567");
    assert!(sent["body"].as_str().unwrap().contains("test message"));
    assert_eq!(
        app.count("1=1", "sms_messages"),
        0,
        "the gateway sent it; nothing recorded"
    );

    // A gateway that refuses: a clear 503, nothing saved.
    let down = coffer_tests::receiver::Receiver::start(&[500]);
    let url = down.url.clone();
    let app2 = TestApp::builder()
        .config(|c| c.sms_gateway = Some(url))
        .spawn();
    let (_, pw2) = app2.user("bob@example.com", Role::User);
    let t2 = sign_in(&app2, "bob@example.com", &pw2).json()["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app2.rest(
        "PUT",
        "/rest/users/me/mobileNumber",
        &t2,
        Some(json!({"password": pw2, "mobileNumber": "+41791234567", "testOnly": true})),
    );
    assert_eq!(
        (r.status, r.code()),
        (503, "ERR_SERVICE_UNAVAILABLE".to_string())
    );
}

#[test]
fn throttling_reads_the_client_behind_a_trusted_proxy() {
    let sign_in_from = |app: &TestApp, forwarded: &str| {
        let pairs = [
            ("grant_type", "password"),
            ("username", "nobody@example.com"),
            ("password", "wrong"),
            ("client_id", app.admin.client_id.as_str()),
            ("client_secret", app.admin.client_secret.as_str()),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        app.send(
            "POST",
            "/oauth/token",
            &[("X-Forwarded-For", forwarded)],
            Some(coffer_tests::Body::Form(pairs)),
        )
    };

    // The test client connects over loopback: trusted, so the header names the client.
    let app = TestApp::builder()
        .config(|c| {
            c.trusted_proxies =
                coffer_domain::net::TrustedProxies::parse("127.0.0.0/8, ::1").unwrap();
        })
        .spawn();
    let r = sign_in_from(&app, "1.1.1.1, 203.0.113.7");
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(app.count("key = 'ip:203.0.113.7'", "auth_failures"), 1);
    assert_eq!(
        app.count("key LIKE 'ip:%'", "auth_failures"),
        1,
        "nothing else"
    );

    // Without trusted proxies the header is ignored: the peer is the client.
    let plain = TestApp::spawn();
    let r = sign_in_from(&plain, "203.0.113.7");
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(plain.count("key LIKE 'ip:203.%'", "auth_failures"), 0);
    assert_eq!(plain.count("key = 'ip:127.0.0.1'", "auth_failures"), 1);
}

/// A stolen token is no password oracle: a wrong current password on a password change, a
/// mobile-number change or a two-factor reset counts as a failed sign-in of the account (and
/// the address), and once the account is locked even the right password is refused with 429
/// and `Retry-After`, with nothing changed.
#[test]
fn wrong_current_passwords_count_like_failed_sign_ins() {
    let app = TestApp::builder()
        .config(|c| {
            c.throttle.max_failures = 3;
            c.throttle.slow_after = 10;
        })
        .spawn();
    let (id, pw) = app.user("ann@example.com", Role::User);
    let t = sign_in(&app, "ann@example.com", &pw).json()["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    // Each call, and the body that carries the current password in its field.
    let calls = [
        ("PUT", "/rest/users/me", "previousPassword"),
        ("PUT", "/rest/users/me/mobileNumber", "password"),
        ("POST", "/rest/users/me/tfa/resetTotpSecret", "password"),
    ];
    let body = |path: &str, password: &str| match path {
        "/rest/users/me" => json!({"password": "New-Passw0rd", "previousPassword": password}),
        "/rest/users/me/mobileNumber" => {
            json!({"password": password, "mobileNumber": "+41791234567"})
        }
        _ => json!({"password": password}),
    };
    for (method, path, field) in calls {
        let r = app.rest(method, path, &t, Some(body(path, "Wrong-Passw0rd")));
        assert_eq!(
            (r.status, r.code()),
            (422, "ERR_INVALID_PARAMETER".to_string()),
            "{path}: {}",
            r.text
        );
        assert_eq!(r.json()["errors"][0]["field"], field, "{path}");
    }
    assert_eq!(
        app.count(
            "key IN ('account:ann@example.com', 'ip:127.0.0.1') AND failures = 3 \
             AND locked_until IS NOT NULL",
            "auth_failures"
        ),
        2,
        "three failures locked the account and the address"
    );

    for (method, path, _) in calls {
        let r = app.rest(method, path, &t, Some(body(path, &pw)));
        let wait = r.rate_limited();
        assert!((1..=900).contains(&wait), "{path}: {wait}");
    }
    assert_eq!(
        app.count(
            &format!("id = '{id}' AND mobile_number IS NULL AND totp_secret IS NULL"),
            "users"
        ),
        1,
        "nothing changed"
    );
    assert_eq!(app.count("subject = 'user.password.change'", "events"), 0);
    assert_eq!(app.count("subject = 'user.tfa.reset'", "events"), 0);
    // The token still works for everything else, and the sign-in is locked as well.
    assert_eq!(app.rest("GET", "/rest/users/me", &t, None).status, 200);
    assert_eq!(app.json_login("ann@example.com", &pw, None).status, 429);
}

/// Test messages cost money and can flood a phone: at most so many per user and per number in
/// the window (here 2 an hour); over it 429 with `Retry-After`, and nothing is sent.
#[test]
fn test_messages_are_limited_per_user_and_per_number() {
    let app = TestApp::builder()
        .config(|c| {
            c.sms_limits = coffer_service::platform::throttle::SmsLimits {
                window_secs: 3600,
                codes: 10,
                tests: 2,
            };
        })
        .spawn();
    let token = |email: &str| {
        let (_, pw) = app.user(email, Role::User);
        let t = sign_in(&app, email, &pw).json()["access_token"]
            .as_str()
            .unwrap()
            .to_string();
        (pw, t)
    };
    let test_message = |(pw, t): &(String, String), number: &str| {
        app.rest(
            "PUT",
            "/rest/users/me/mobileNumber",
            t,
            Some(json!({"password": pw, "mobileNumber": number, "testOnly": true})),
        )
    };
    let refused = |r: &coffer_tests::Resp| {
        let wait = r.rate_limited();
        assert!((3500..=3600).contains(&wait), "{wait}");
    };
    let ann = token("ann@example.com");
    for n in ["+41790000001", "+41790000002"] {
        assert_eq!(test_message(&ann, n).status, 200);
    }
    // Ann had her two.
    refused(&test_message(&ann, "+41790000003"));
    assert_eq!(app.count("to_number = '+41790000003'", "sms_messages"), 0);

    // Bob may test numbers, but not one that had its two already.
    let bob = token("bob@example.com");
    assert_eq!(test_message(&bob, "+41790000001").status, 200);
    refused(&test_message(&bob, "+41790000001"));
    assert_eq!(app.count("to_number = '+41790000001'", "sms_messages"), 2);
    assert_eq!(app.count("1 = 1", "sms_messages"), 3);
    assert_eq!(
        app.count("mobile_number IS NOT NULL", "users"),
        0,
        "a test saves no number"
    );
}
