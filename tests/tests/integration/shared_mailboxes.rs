//! Shared mailboxes over HTTP (`/rest/sharedMailboxes*`, `/rest/admin/sharedMailboxes*`):
//! converting an account (it can no longer sign in), members turning mailboxes on and off
//! within `sharedMailboxMaxActive`, the mail policy, member replacement and dissolving, and what
//! is stored after every refusal (nothing changes). Runs on SQLite, and on PostgreSQL when
//! `COFFER_TEST_POSTGRES_URL` is set.

use coffer_domain::Role;
use coffer_tests::{sign_in, Resp, TestApp};
use serde_json::{json, Value};

const PATH: &str = "/rest/sharedMailboxes";
const ADMIN_PATH: &str = "/rest/admin/sharedMailboxes";

fn ids(r: &Resp) -> Vec<String> {
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data: {}", r.text))
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

fn member_ids(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v["members"]
        .as_array()
        .unwrap_or_else(|| panic!("no members: {v}"))
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

fn sorted(ids: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

/// Converts `user` into a mailbox with `members`; the record.
fn convert(app: &TestApp, admin: &str, user: &str, members: &[&str]) -> Value {
    let r = app.rest(
        "POST",
        ADMIN_PATH,
        admin,
        Some(json!({"userId": user, "memberIds": members})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    r.json()
}

fn set(app: &TestApp, token: &str, changes: Value) -> Resp {
    app.rest("PATCH", PATH, token, Some(json!({ "data": changes })))
}

fn active(app: &TestApp, mailbox: &str, member: &str) -> i64 {
    app.count(
        &format!("mailbox_id = '{mailbox}' AND member_id = '{member}' AND active = TRUE"),
        "shared_mailbox_members",
    )
}

#[test]
fn converting_an_account_makes_a_mailbox_that_can_no_longer_sign_in() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (boxid, box_pw) = app.user("team@example.com", Role::User);
    let box_token = app.password_token("team@example.com", &box_pw)["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let (ann, _) = app.user("ann@example.com", Role::User);
    let (bob, _) = app.user("bob@example.com", Role::User);

    let r = app.rest(
        "POST",
        ADMIN_PATH,
        &admin,
        Some(json!({"userId": boxid, "memberIds": [ann, bob, ann], "remoteWipe": true})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        r.header("location").unwrap(),
        format!("{}{ADMIN_PATH}/{boxid}", app.base)
    );
    let m = r.json();
    assert_eq!(m["id"], boxid.as_str());
    assert_eq!(m["active"], false);
    assert_eq!(
        m["user"],
        json!({"id": boxid, "email": "team@example.com", "name": "team@example.com", "profileIcon": ""})
    );
    assert_eq!(member_ids(&m), sorted(&[&ann, &bob]));
    let first = &m["members"][0];
    for f in ["id", "email", "name", "profileIcon"] {
        assert!(first.get(f).is_some(), "{f} in {first}");
    }

    // The account's token ended, and it can no longer sign in.
    assert_eq!(
        app.rest("GET", "/rest/users/me", &box_token, None).status,
        401
    );
    assert_eq!(sign_in(&app, "team@example.com", &box_pw).status, 400);
    // Stored: the password is gone, the members are inactive, the event is recorded.
    assert_eq!(
        app.count(
            &format!(
                "id = '{boxid}' AND password_hash IS NULL AND active = TRUE AND deleted = FALSE"
            ),
            "users"
        ),
        1
    );
    assert_eq!(app.count("1 = 1", "shared_mailboxes"), 1);
    assert_eq!(
        app.count(
            &format!("mailbox_id = '{boxid}' AND active = FALSE"),
            "shared_mailbox_members"
        ),
        2
    );
    assert_eq!(
        app.count("subject = 'sharedmailbox.mailbox.create'", "events"),
        1
    );

    // Once only.
    let r = app.rest(
        "POST",
        ADMIN_PATH,
        &admin,
        Some(json!({"userId": boxid, "memberIds": [ann]})),
    );
    assert_eq!((r.status, r.code()), (409, "ERR_ENTITY_EXISTS".into()));

    // The administrators' list.
    let r = app.rest("GET", ADMIN_PATH, &admin, None);
    assert_eq!(ids(&r), vec![boxid.clone()]);
    assert_eq!(
        r.json()["metadata"],
        json!({"total": 1, "limit": 100, "offset": 0})
    );
    assert_eq!(r.json()["data"][0]["active"], false);
}

#[test]
fn members_list_and_turn_mailboxes_on_within_the_limit_and_swap_in_one_call() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (m1, _) = app.user("one@example.com", Role::User);
    let (m2, _) = app.user("two@example.com", Role::User);
    let (m3, _) = app.user("three@example.com", Role::User);
    let (ann, t) = app.user_token("ann@example.com", Role::User);
    for m in [&m1, &m2, &m3] {
        convert(&app, &admin, m, &[&ann]);
    }
    coffer_service::identity::settings::set(&app.ctx, "sharedMailboxMaxActive", "1", None).unwrap();

    let r = app.rest("GET", PATH, &t, None);
    assert_eq!(ids(&r).len(), 3);
    assert_eq!(
        r.json()["metadata"],
        json!({"total": 3, "limit": 100, "offset": 0})
    );
    assert!(r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["active"] == false && member_ids(m) == vec![ann.clone()]));

    // On: the answer is the caller's list.
    let r = set(&app, &t, json!([{"id": m1, "active": true}]));
    assert_eq!(r.status, 200, "{}", r.text);
    let data = r.json()["data"].as_array().unwrap().clone();
    let on: Vec<&Value> = data.iter().filter(|m| m["active"] == true).collect();
    assert_eq!(on.len(), 1);
    assert_eq!(on[0]["id"], m1.as_str());
    assert_eq!(active(&app, &m1, &ann), 1);

    // A second one is over the limit: nothing changes.
    let r = set(&app, &t, json!([{"id": m2, "active": true}]));
    assert_eq!(
        (r.status, r.code()),
        (422, "ERR_MAX_ACTIVED_SHAREDMAILBOX".into()),
        "{}",
        r.text
    );
    assert_eq!((active(&app, &m1, &ann), active(&app, &m2, &ann)), (1, 0));

    // A swap in one call works: off before on.
    let r = set(
        &app,
        &t,
        json!([{"id": m2, "active": true}, {"id": m1, "active": false}]),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!((active(&app, &m1, &ann), active(&app, &m2, &ann)), (0, 1));
    assert_eq!(
        app.count("subject = 'sharedmailbox.member.update'", "events"),
        2
    );

    // Filters and orders.
    assert_eq!(
        ids(&app.rest("GET", &format!("{PATH}?active=true"), &t, None)),
        vec![m2.clone()]
    );
    assert_eq!(
        ids(&app.rest("GET", &format!("{PATH}?active=false"), &t, None)).len(),
        2
    );
    let mut got = ids(&app.rest("GET", &format!("{PATH}?id:in={m1},{m3}"), &t, None));
    got.sort();
    assert_eq!(got, sorted(&[&m1, &m3]));
    assert_eq!(
        ids(&app.rest("GET", &format!("{PATH}?id={m3}"), &t, None)),
        vec![m3.clone()]
    );
    assert_eq!(
        ids(&app.rest("GET", &format!("{PATH}?orderBy=active:desc"), &t, None))[0],
        m2
    );
    assert_eq!(
        ids(&app.rest("GET", &format!("{PATH}?orderBy=active:asc"), &t, None))[2],
        m2
    );
    // By when the membership last changed: m3 long ago.
    app.execute(&format!(
        "UPDATE shared_mailbox_members SET modified_at = 5 WHERE mailbox_id = '{m3}'"
    ));
    assert_eq!(ids(&app.rest("GET", PATH, &t, None))[0], m3);
    assert_eq!(
        ids(&app.rest("GET", &format!("{PATH}?orderBy=modified:desc"), &t, None))[2],
        m3
    );
    let r = app.rest("GET", &format!("{PATH}?limit=1&offset=1"), &t, None);
    assert_eq!(
        r.json()["metadata"],
        json!({"total": 3, "limit": 1, "offset": 1})
    );
    let r = app.rest("GET", &format!("{PATH}?orderBy=name:asc"), &t, None);
    assert_eq!(
        (r.status, r.code()),
        (400, "ERR_REQUEST_INVALID_FILTER".into())
    );

    // The administrators' list: active when any member has it active.
    let r = app.rest("GET", &format!("{ADMIN_PATH}?active=true"), &admin, None);
    assert_eq!(ids(&r), vec![m2.clone()]);
    let r = app.rest(
        "GET",
        &format!("{ADMIN_PATH}?orderBy=active:desc"),
        &admin,
        None,
    );
    assert_eq!(ids(&r)[0], m2);

    // Turning one off is always allowed, even when the limit was lowered below what is on.
    coffer_service::identity::settings::set(&app.ctx, "sharedMailboxMaxActive", "0", None).unwrap();
    let r = set(&app, &t, json!([{"id": m2, "active": false}]));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(active(&app, &m2, &ann), 0);
}

#[test]
fn only_internal_members_and_administrators_reach_what_is_theirs() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (m1, _) = app.user("one@example.com", Role::User);
    let (ann, ta) = app.user_token("ann@example.com", Role::User);
    let (_bob, tb) = app.user_token("bob@example.com", Role::User);
    let (_eve, te) = app.user_token("eve@example.com", Role::User);
    convert(&app, &admin, &m1, &[&ann]);

    // Bob is no member: refused, with the id named, and nothing changes.
    let r = set(&app, &tb, json!([{"id": m1, "active": true}]));
    assert_eq!(
        (r.status, r.code()),
        (403, "ERR_ACCESS_USER".into()),
        "{}",
        r.text
    );
    assert_eq!(r.json()["failedIds"], json!([m1]));
    let r = set(
        &app,
        &ta,
        json!([{"id": m1, "active": true}, {"id": "no-such-mailbox", "active": true}]),
    );
    assert_eq!((r.status, r.code()), (403, "ERR_ACCESS_USER".into()));
    assert_eq!(r.json()["failedIds"], json!(["no-such-mailbox"]));
    assert_eq!(app.count("active = TRUE", "shared_mailbox_members"), 0);
    assert!(ids(&app.rest("GET", PATH, &tb, None)).is_empty());

    // The mail policy: only while the mailbox is active for the caller.
    let settings = format!("{PATH}/{m1}/settings");
    let r = app.rest("GET", &settings, &ta, None);
    assert_eq!((r.status, r.code()), (403, "ERR_ACCESS_USER".into()));
    assert_eq!(
        set(&app, &ta, json!([{"id": m1, "active": true}])).status,
        200
    );
    let r = app.rest("GET", &settings, &ta, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let s = r.json();
    for f in [
        "fileFilterExclusionGroups",
        "sendOptionEnabled",
        "ACL",
        "maxLinkExpiration",
        "returnReceiptDefault",
        "zipLimit",
        "sendFileLimit",
        "selfCopy",
        "defaultLinkExpiry",
        "aclDefault",
        "fileFilterCustomFileTypes",
        "watermarkEnabled",
        "returnReceipt",
        "mailExpirationNotification",
        "includeFingerprintDefault",
        "includeFingerprint",
        "secureMessageBody",
        "selfCopyDefault",
        "allowedFileExtensions",
        "excludedFileExtensions",
        "secureMessageBodyDefault",
        "watermarkPreview",
        "sendExternal",
    ] {
        assert!(s.get(f).is_some_and(|v| !v.is_null()), "{f} in {s}");
    }
    assert_eq!(s["sendOptionEnabled"]["linkExpiry"], true);
    assert!(s["ACL"].as_array().unwrap().contains(&s["aclDefault"]));
    assert!(s.get("defaultForm").is_none(), "{s}");
    let r = app.rest("GET", &settings, &tb, None);
    assert_eq!((r.status, r.code()), (403, "ERR_ACCESS_USER".into()));

    // An account that is not internal reaches none of the member calls.
    app.execute("UPDATE users SET internal = FALSE WHERE email = 'eve@example.com'");
    for r in [
        app.rest("GET", PATH, &te, None),
        set(&app, &te, json!([{"id": m1, "active": true}])),
        app.rest("GET", &settings, &te, None),
    ] {
        assert_eq!(
            (r.status, r.code()),
            (403, "ERR_NOT_INTERNAL_DOMAIN".into()),
            "{}",
            r.text
        );
    }

    // A plain user reaches none of the administrators' calls.
    for (method, path, body) in [
        ("GET", ADMIN_PATH.to_string(), None),
        (
            "POST",
            ADMIN_PATH.to_string(),
            Some(json!({"userId": ann, "memberIds": [m1]})),
        ),
        ("DELETE", format!("{ADMIN_PATH}?id:in={m1}"), None),
        (
            "PATCH",
            format!("{ADMIN_PATH}/{m1}"),
            Some(json!({"memberIds": [ann]})),
        ),
    ] {
        let r = app.rest(method, &path, &tb, body);
        assert_eq!(
            (r.status, r.code()),
            (403, "ERR_ACCESS_ADMIN".into()),
            "{method} {path}"
        );
    }
    assert_eq!(app.count("1 = 1", "shared_mailboxes"), 1);

    // Application and helpdesk administrators may; a helpdesk administrator acts on plain
    // users' accounts only.
    let (_, app_admin) = app.user_token("apps@example.com", Role::ApplicationAdmin);
    assert_eq!(
        ids(&app.rest("GET", ADMIN_PATH, &app_admin, None)),
        vec![m1.clone()]
    );
    let (_, helpdesk) = app.user_token("help@example.com", Role::HelpdeskAdmin);
    let (sys, _) = app.user("sys@example.com", Role::SystemAdmin);
    let r = app.rest(
        "POST",
        ADMIN_PATH,
        &helpdesk,
        Some(json!({"userId": sys, "memberIds": [ann]})),
    );
    assert_eq!(
        (r.status, r.code()),
        (403, "ERR_ADMIN_ROLE_RANK_RESTRICTED".into()),
        "{}",
        r.text
    );
    assert_eq!(app.count("1 = 1", "shared_mailboxes"), 1);
    let (plain, _) = app.user("plain@example.com", Role::User);
    let r = app.rest(
        "POST",
        ADMIN_PATH,
        &helpdesk,
        Some(json!({"userId": plain, "memberIds": [ann]})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
}

#[test]
fn replacing_members_keeps_flags_and_a_removed_member_loses_access_at_once() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (m1, _) = app.user("one@example.com", Role::User);
    let (ann, ta) = app.user_token("ann@example.com", Role::User);
    let (bob, tb) = app.user_token("bob@example.com", Role::User);
    let (cid, _) = app.user("cid@example.com", Role::User);
    convert(&app, &admin, &m1, &[&ann, &bob]);
    for t in [&ta, &tb] {
        assert_eq!(
            set(&app, t, json!([{"id": m1, "active": true}])).status,
            200
        );
    }
    let settings = format!("{PATH}/{m1}/settings");
    assert_eq!(app.rest("GET", &settings, &ta, None).status, 200);

    let r = app.rest(
        "PATCH",
        &format!("{ADMIN_PATH}/{m1}"),
        &admin,
        Some(json!({"memberIds": [bob, cid]})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let m = r.json();
    assert_eq!(m["id"], m1.as_str());
    assert_eq!(member_ids(&m), sorted(&[&bob, &cid]));
    assert_eq!(m["active"], true);
    // Bob keeps his flag, Cid starts inactive, Ann is out.
    assert_eq!((active(&app, &m1, &bob), active(&app, &m1, &cid)), (1, 0));
    assert_eq!(
        app.count(&format!("member_id = '{ann}'"), "shared_mailbox_members"),
        0
    );
    let r = app.rest("GET", &settings, &ta, None);
    assert_eq!((r.status, r.code()), (403, "ERR_ACCESS_USER".into()));
    assert!(ids(&app.rest("GET", PATH, &ta, None)).is_empty());
    let r = set(&app, &ta, json!([{"id": m1, "active": true}]));
    assert_eq!((r.status, r.code()), (403, "ERR_ACCESS_USER".into()));
    assert!(app
        .ctx
        .read(|c| coffer_service::mail::shared_mailboxes::require_active_member(c, &m1, &ann))
        .is_err());
    assert!(app
        .ctx
        .read(|c| coffer_service::mail::shared_mailboxes::require_active_member(c, &m1, &bob))
        .is_ok());
    assert_eq!(
        app.count("subject = 'sharedmailbox.mailbox.update'", "events"),
        1
    );

    // Refused changes store nothing.
    let (outside, _) = app.user("out@example.com", Role::User);
    app.execute(&format!(
        "UPDATE users SET internal = FALSE WHERE id = '{outside}'"
    ));
    let cases = [
        (
            json!({"memberIds": [bob, "no-such-user"]}),
            422,
            "ERR_USER_IS_NOT_INTERNAL_DL_OR_INTERNAL_ACCOUNT",
        ),
        (
            json!({"memberIds": [m1]}),
            422,
            "ERR_USER_IS_NOT_INTERNAL_DL_OR_INTERNAL_ACCOUNT",
        ),
        (
            json!({"memberIds": [outside]}),
            422,
            "ERR_USER_IS_NOT_INTERNAL_DL_OR_INTERNAL_ACCOUNT",
        ),
        (json!({"memberIds": []}), 422, "ERR_INPUT_REQUIRED"),
        (json!({}), 422, "ERR_INPUT_REQUIRED"),
        (json!({"memberIds": "x"}), 422, "ERR_INPUT_NOT_ARRAY"),
        (json!({"memberIds": [7]}), 422, "ERR_INVALID_PARAMETER"),
    ];
    for (body, status, code) in cases {
        let r = app.rest(
            "PATCH",
            &format!("{ADMIN_PATH}/{m1}"),
            &admin,
            Some(body.clone()),
        );
        assert_eq!(
            (r.status, r.code()),
            (status, code.to_string()),
            "{body}: {}",
            r.text
        );
        assert_eq!(
            app.count(&format!("mailbox_id = '{m1}'"), "shared_mailbox_members"),
            2,
            "{body}"
        );
        assert_eq!((active(&app, &m1, &bob), active(&app, &m1, &cid)), (1, 0));
    }
    let r = app.rest(
        "PATCH",
        &format!("{ADMIN_PATH}/{cid}"),
        &admin,
        Some(json!({"memberIds": [bob]})),
    );
    assert_eq!((r.status, r.code()), (404, "ERR_ENTITY_NOT_FOUND".into()));
}

#[test]
fn dissolving_restores_a_normal_account_without_a_password() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (m1, _) = app.user("one@example.com", Role::User);
    let (m2, _) = app.user("two@example.com", Role::User);
    let (ann, ta) = app.user_token("ann@example.com", Role::User);
    convert(&app, &admin, &m1, &[&ann]);
    convert(&app, &admin, &m2, &[&ann]);

    // An unknown id: nothing is dissolved.
    let r = app.rest(
        "DELETE",
        &format!("{ADMIN_PATH}?id:in={m1},{ann}"),
        &admin,
        None,
    );
    assert_eq!(
        (r.status, r.code()),
        (404, "ERR_ENTITY_NOT_FOUND".into()),
        "{}",
        r.text
    );
    assert_eq!(r.json()["failedIds"], json!([ann]));
    assert_eq!(app.count("1 = 1", "shared_mailboxes"), 2);
    let r = app.rest("DELETE", ADMIN_PATH, &admin, None);
    assert_eq!((r.status, r.code()), (422, "ERR_INPUT_REQUIRED".into()));
    assert_eq!(app.count("1 = 1", "shared_mailboxes"), 2);

    let r = app.rest("DELETE", &format!("{ADMIN_PATH}?id:in={m1}"), &admin, None);
    assert_eq!(r.status, 204, "{}", r.text);
    assert!(r.text.is_empty());
    assert_eq!(
        app.count(&format!("user_id = '{m1}'"), "shared_mailboxes"),
        0
    );
    assert_eq!(
        app.count(&format!("mailbox_id = '{m1}'"), "shared_mailbox_members"),
        0
    );
    assert_eq!(ids(&app.rest("GET", PATH, &ta, None)), vec![m2.clone()]);
    assert_eq!(
        app.count(
            &format!("id = '{m1}' AND password_hash IS NULL AND active = TRUE AND deleted = FALSE"),
            "users"
        ),
        1
    );
    assert_eq!(
        app.count("subject = 'sharedmailbox.mailbox.delete'", "events"),
        1
    );
    // A normal account again: it signs in once an administrator gives it a password.
    let r = app.rest(
        "PUT",
        &format!("/rest/admin/users/{m1}"),
        &admin,
        Some(json!({"password": "Brand-New-Pass-7"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        sign_in(&app, "one@example.com", "Brand-New-Pass-7").status,
        200
    );
    // A mailbox does not, even with a password set on it.
    let r = app.rest(
        "PUT",
        &format!("/rest/admin/users/{m2}"),
        &admin,
        Some(json!({"password": "Brand-New-Pass-7"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        sign_in(&app, "two@example.com", "Brand-New-Pass-7").status,
        400
    );
    let r = app.rest("DELETE", &format!("{ADMIN_PATH}?id:in={m1}"), &admin, None);
    assert_eq!((r.status, r.code()), (404, "ERR_ENTITY_NOT_FOUND".into()));
}

#[test]
fn bad_conversion_input_is_refused_and_stores_nothing() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let admin_id = app
        .ctx
        .with_conn(|c| Ok(coffer_store::users::by_email(c, &app.admin.admin_email)?))
        .unwrap()
        .unwrap()
        .id;
    let (target, tt) = app.user_token("team@example.com", Role::User);
    let (ann, _) = app.user("ann@example.com", Role::User);
    let (gone, _) = app.user("gone@example.com", Role::User);
    app.execute(&format!(
        "UPDATE users SET active = FALSE WHERE id = '{gone}'"
    ));
    let (outside, _) = app.user("out@example.com", Role::User);
    app.execute(&format!(
        "UPDATE users SET internal = FALSE WHERE id = '{outside}'"
    ));

    let body = |extra: Value| {
        let mut b = json!({"userId": target, "memberIds": [ann]});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    let cases = [
        (json!({"memberIds": [ann]}), 422, "ERR_INPUT_REQUIRED"),
        (json!({"userId": target}), 422, "ERR_INPUT_REQUIRED"),
        (body(json!({"memberIds": []})), 422, "ERR_INPUT_REQUIRED"),
        (
            body(json!({"memberIds": [ann, "nobody"]})),
            422,
            "ERR_USER_IS_NOT_INTERNAL_DL_OR_INTERNAL_ACCOUNT",
        ),
        (
            body(json!({"memberIds": [target]})),
            422,
            "ERR_USER_IS_NOT_INTERNAL_DL_OR_INTERNAL_ACCOUNT",
        ),
        (
            body(json!({"memberIds": [gone]})),
            422,
            "ERR_USER_IS_NOT_INTERNAL_DL_OR_INTERNAL_ACCOUNT",
        ),
        (
            body(json!({"memberIds": [outside]})),
            422,
            "ERR_USER_IS_NOT_INTERNAL_DL_OR_INTERNAL_ACCOUNT",
        ),
        (
            body(json!({"userId": "nobody"})),
            422,
            "ERR_INVALID_PARAMETER",
        ),
        (body(json!({"userId": gone})), 422, "ERR_INVALID_PARAMETER"),
        (
            body(json!({"userId": outside})),
            403,
            "ERR_NOT_INTERNAL_DOMAIN",
        ),
        (body(json!({"userId": admin_id})), 403, "ERR_ACCESS_USER"),
        (
            body(json!({"remoteWipe": "yes"})),
            422,
            "ERR_INPUT_NOT_BOOLEAN",
        ),
        (body(json!({"retainData": true})), 422, "ERR_INPUT_REQUIRED"),
        (
            body(json!({"retainData": true, "deleteUnsharedData": true, "retainToUser": ann})),
            422,
            "ERR_INPUT_ATTRIBUTE_FORBIDDEN",
        ),
        (
            body(json!({"retainData": true, "retainToUser": target})),
            422,
            "ERR_CANNOT_RETAIN_DATA_TO_THE_SAME_USER",
        ),
        (
            body(json!({"retainData": true, "retainToUser": gone})),
            422,
            "ERR_CANNOT_RETAIN_DATA_TO_UNVERIFIED_USER",
        ),
        (
            body(
                json!({"retainData": true, "retainToUser": ann, "retainToAdvancedFormUser": target}),
            ),
            422,
            "ERR_CANNOT_RETAIN_DATA_TO_THE_SAME_USER",
        ),
        (
            body(json!({"retainToUser": ann})),
            422,
            "ERR_INPUT_ATTRIBUTE_FORBIDDEN",
        ),
    ];
    for (b, status, code) in cases {
        let r = app.rest("POST", ADMIN_PATH, &admin, Some(b.clone()));
        assert_eq!(
            (r.status, r.code()),
            (status, code.to_string()),
            "{b}: {}",
            r.text
        );
        assert_eq!(app.count("1 = 1", "shared_mailboxes"), 0, "{b}");
        assert_eq!(app.count("1 = 1", "shared_mailbox_members"), 0, "{b}");
        assert_eq!(
            app.count(
                &format!("id = '{target}' AND password_hash IS NOT NULL"),
                "users"
            ),
            1,
            "{b}"
        );
        assert_eq!(
            app.rest("GET", "/rest/users/me", &tt, None).status,
            200,
            "{b}"
        );
    }
    let r = app.send(
        "POST",
        ADMIN_PATH,
        &[
            ("X-Coffer-Version", "28"),
            ("Authorization", &format!("Bearer {admin}")),
        ],
        Some(coffer_tests::Body::Raw("application/json", "{".into())),
    );
    assert_eq!(
        (r.status, r.code()),
        (400, "ERR_REQUEST_INVALID_JSON".into())
    );
    assert_eq!(app.count("subject LIKE 'sharedmailbox.%'", "events"), 0);

    // Retaining data to another active account is accepted (the data stays with the mailbox;
    // the options are recorded).
    let r = app.rest(
        "POST",
        ADMIN_PATH,
        &admin,
        Some(body(
            json!({"retainData": true, "retainToUser": ann, "retainPermissionToSharedData": true}),
        )),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        app.count(
            "subject = 'sharedmailbox.mailbox.create' AND data LIKE '%\"retainData\":true%'",
            "events"
        ),
        1
    );
}
