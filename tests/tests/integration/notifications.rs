//! Folder notifications end to end: subscribing (201 new, 200 changed, `includeNested`), the
//! list with its filters, unsubscribing, the refusals that store nothing, and delivery: files
//! and comments arriving in a subscribed folder reach every subscriber but the actor in one
//! digest per folder through the mail outbox (and, under `scripts/smtp-test-server.sh`, through
//! the real SMTP server), and nothing more reaches a subscriber who lost access.

use coffer_delivery::mail::{self, Config, Password, Relay};
use coffer_domain::Role;
use coffer_tests::{
    assert_error, mkdir, my_folder, outbox, received, smtp, upload_ok, wait_until, TestApp,
};
use serde_json::{json, Value};
use std::time::Duration;

fn upload(app: &TestApp, token: &str, folder: &str, name: &str) -> String {
    upload_ok(app, token, folder, name, b"content")["id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn subscribe(app: &TestApp, token: &str, folder: &str, query: &str, body: Value) -> (u16, Value) {
    let r = app.rest(
        "PUT",
        &format!("/rest/folders/{folder}/actions/setNotifications{query}"),
        token,
        Some(body),
    );
    (
        r.status,
        if r.text.is_empty() {
            Value::Null
        } else {
            r.json()
        },
    )
}

fn rows(app: &TestApp) -> i64 {
    app.count("1 = 1", "folder_notifications")
}

fn share(app: &TestApp, owner: &str, folder: &str, user: &str, role: i64) {
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{folder}/members"),
        owner,
        Some(json!({"userIds": [user], "roleId": role})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
}

fn set_window(app: &TestApp, secs: i64) {
    coffer_service::identity::settings::set(
        &app.ctx,
        "notificationDigestSeconds",
        &secs.to_string(),
        None,
    )
    .unwrap();
}

/// Scans the events, then runs every digest as if its window had passed.
fn deliver_now(app: &TestApp) {
    coffer_service::notifications::deliver::scan(&app.ctx).unwrap();
    app.execute("UPDATE jobs SET run_at = 0 WHERE kind = 'notification-digest'");
    app.run_jobs();
    assert_eq!(app.count("state = 'failed'", "jobs"), 0);
}

#[test]
fn subscriptions_are_set_listed_and_removed() {
    let app = TestApp::spawn();
    let (me_id, token) = app.user_token("sub@example.com", Role::User);
    let (other_id, other) = app.user_token("other@example.com", Role::User);
    let root = my_folder(&app, &token);
    let folder = mkdir(&app, &token, &root, "Projects");
    let s1 = mkdir(&app, &token, &folder, "One");
    let s2 = mkdir(&app, &token, &s1, "Two");
    let file = upload(&app, &token, &folder, "f.txt");
    let foreign = mkdir(&app, &other, &my_folder(&app, &other), "Theirs");

    let (status, v) = subscribe(&app, &token, &folder, "", json!({"fileAdded": 1}));
    assert_eq!(status, 201, "{v}");
    assert_eq!(
        v,
        json!({"objectId": folder, "userId": me_id, "fileAdded": 1, "commentAdded": 0})
    );
    let (status, v) = subscribe(&app, &token, &folder, "", json!({"commentAdded": 1}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (v["fileAdded"].clone(), v["commentAdded"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(rows(&app), 1);

    // Refusals store nothing.
    for (body, query, target, status, code) in [
        (
            json!({"fileAdded": "1"}),
            "",
            folder.as_str(),
            422,
            "ERR_INPUT_NOT_INTEGER",
        ),
        (
            json!({"fileAdded": 1.5}),
            "",
            folder.as_str(),
            422,
            "ERR_INPUT_NOT_INTEGER",
        ),
        (
            json!({"commentAdded": true}),
            "",
            folder.as_str(),
            422,
            "ERR_INPUT_NOT_INTEGER",
        ),
        (
            json!({"fileAdded": 2}),
            "",
            folder.as_str(),
            422,
            "ERR_INPUT_NOT_IN_LIST",
        ),
        (
            json!({"fileAdded": -1}),
            "",
            folder.as_str(),
            422,
            "ERR_INPUT_NOT_IN_LIST",
        ),
        (
            json!({"fileAdded": 0}),
            "?includeNested=maybe",
            folder.as_str(),
            422,
            "ERR_INPUT_NOT_BOOLEAN",
        ),
        (
            json!({"fileAdded": 0}),
            "?limit=x",
            folder.as_str(),
            422,
            "ERR_INPUT_INVALID_FORMAT",
        ),
        (
            json!({"fileAdded": 1}),
            "",
            foreign.as_str(),
            404,
            "ERR_ENTITY_NOT_FOUND",
        ),
        (
            json!({"fileAdded": 1}),
            "",
            file.as_str(),
            404,
            "ERR_ENTITY_NOT_FOUND",
        ),
        (
            json!({"fileAdded": 1}),
            "",
            "nope",
            404,
            "ERR_ENTITY_NOT_FOUND",
        ),
    ] {
        let r = app.rest(
            "PUT",
            &format!("/rest/folders/{target}/actions/setNotifications{query}"),
            &token,
            Some(body),
        );
        assert_error(&r, status, code);
    }
    assert_eq!(rows(&app), 1);
    assert_eq!(app.count("subject LIKE 'notification.%'", "events"), 2);

    // includeNested: the current sub-folders too.
    let (status, v) = subscribe(
        &app,
        &token,
        &folder,
        "?includeNested=true",
        json!({"fileAdded": 1, "commentAdded": 0}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["objectId"], folder.as_str());
    assert_eq!(rows(&app), 3);

    let list = |t: &str, q: &str| {
        let r = app.rest("GET", &format!("/rest/notifications{q}"), t, None);
        assert_eq!(r.status, 200, "{}", r.text);
        let v = r.json();
        let ids: Vec<String> = v["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["objectId"].as_str().unwrap().to_string())
            .collect();
        (ids, v["metadata"]["total"].as_i64().unwrap())
    };
    let (ids, total) = list(&token, "");
    assert_eq!(total, 3);
    assert!(ids.contains(&s1) && ids.contains(&s2) && ids.contains(&folder));
    assert_eq!(
        list(&token, &format!("?objectId={s2}")),
        (vec![s2.clone()], 1)
    );
    assert_eq!(list(&token, &format!("?objectId:in={s1},{s2}")).1, 2);
    assert_eq!(list(&token, "?fileAdded=true").1, 3);
    assert_eq!(list(&token, "?commentAdded=1").1, 0);
    assert_eq!(list(&token, "?limit=1&offset=2").0.len(), 1);
    assert_eq!(list(&other, "").1, 0);
    let r = app.rest(
        "GET",
        &format!("/rest/notifications?userId={me_id}"),
        &other,
        None,
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    let admin = app.admin_token();
    assert_eq!(list(&admin, &format!("?userId:in={me_id},{other_id}")).1, 3);
    for (q, status, code) in [
        ("?orderBy=name", 400, "ERR_REQUEST_INVALID_FILTER"),
        ("?fileAdded=2", 400, "ERR_REQUEST_INVALID_FILTER"),
        ("?limit=0", 422, "ERR_INPUT_INVALID_FORMAT"),
    ] {
        let r = app.rest("GET", &format!("/rest/notifications{q}"), &token, None);
        assert_error(&r, status, code);
    }

    // Unsubscribing.
    let r = app.rest("DELETE", &format!("/rest/notifications/{s1}"), &other, None);
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    let r = app.rest("DELETE", &format!("/rest/notifications/{s1}"), &token, None);
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(rows(&app), 2);
    let r = app.rest("DELETE", &format!("/rest/notifications/{s1}"), &token, None);
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    assert_eq!(
        app.count("subject = 'notification.subscription.delete'", "events"),
        1
    );
}

#[test]
fn arrivals_reach_subscribers_in_one_digest_per_folder() {
    let app = TestApp::spawn();
    let (owner_id, owner) = app.user_token("owner@example.com", Role::User);
    let (member_id, member) = app.user_token("member@example.com", Role::User);
    let root = my_folder(&app, &owner);
    let folder = mkdir(&app, &owner, &root, "Reports");
    let elsewhere = mkdir(&app, &owner, &root, "Elsewhere");
    share(&app, &owner, &folder, &member_id, 2);
    set_window(&app, 3600);
    for t in [&owner, &member] {
        let (status, _) = subscribe(
            &app,
            t,
            &folder,
            "",
            json!({"fileAdded": 1, "commentAdded": 1}),
        );
        assert_eq!(status, 201);
    }

    // The owner adds two files and a comment, and moves a third file in.
    let a = upload(&app, &owner, &folder, "a.txt");
    upload(&app, &owner, &folder, "b.txt");
    let moved = upload(&app, &owner, &elsewhere, "moved.txt");
    let r = app.rest(
        "POST",
        "/rest/files/actions/move",
        &owner,
        Some(json!({"ids": [moved], "destinationFolderId": folder})),
    );
    assert!(r.status < 300, "{} {}", r.status, r.text);
    let r = app.rest(
        "POST",
        &format!("/rest/files/{a}/comments"),
        &owner,
        Some(json!({"contents": "Please review"})),
    );
    assert!(r.status < 300, "{} {}", r.status, r.text);
    let gathered = coffer_service::notifications::deliver::scan(&app.ctx).unwrap();
    assert_eq!(gathered, 4, "the member alone, once per arrival");
    // One digest for the member and the folder; none due yet, nothing sent.
    assert_eq!(app.count("kind = 'notification-digest'", "jobs"), 1);
    app.run_jobs();
    assert!(outbox(&app, "member@example.com").is_empty());

    deliver_now(&app);
    let mails = outbox(&app, "member@example.com");
    assert_eq!(mails.len(), 1, "{mails:?}");
    let m = &mails[0];
    assert_eq!(m.subject, "New in Reports: 3 files, 1 comment");
    for needle in [
        "a.txt",
        "b.txt",
        "moved.txt",
        "Please review",
        "owner@example.com",
    ] {
        assert!(m.body.contains(needle), "{needle} in {}", m.body);
    }
    assert!(
        m.body.contains(&format!("/#/folder/{folder}")),
        "{}",
        m.body
    );
    assert!(m.body.contains(&format!("/#/file/{a}")), "{}", m.body);
    assert!(
        outbox(&app, "owner@example.com").is_empty(),
        "the actor is not told"
    );
    assert_eq!(app.count("1 = 1", "notification_items"), 0);

    // The member's upload reaches the owner; a new version too.
    set_window(&app, 0);
    upload(&app, &member, &folder, "c.txt");
    upload(&app, &member, &folder, "c.txt");
    deliver_now(&app);
    let mails = outbox(&app, "owner@example.com");
    assert_eq!(mails.len(), 1, "{mails:?}");
    assert_eq!(mails[0].subject, "New in Reports: 2 files");
    assert!(
        mails[0].body.contains("member@example.com"),
        "{}",
        mails[0].body
    );
    assert_eq!(outbox(&app, "member@example.com").len(), 1);

    // A subscriber who loses access is told nothing more.
    let r = app.rest(
        "DELETE",
        &format!("/rest/folders/{folder}/members/{member_id}"),
        &owner,
        None,
    );
    assert!(r.status < 300, "{} {}", r.status, r.text);
    upload(&app, &owner, &folder, "d.txt");
    deliver_now(&app);
    assert_eq!(outbox(&app, "member@example.com").len(), 1);
    assert_eq!(
        app.count(&format!("user_id = '{member_id}'"), "notification_items"),
        0
    );
    // Unsubscribed: nothing either.
    let r = app.rest(
        "DELETE",
        &format!("/rest/notifications/{folder}"),
        &owner,
        None,
    );
    assert_eq!(r.status, 204, "{}", r.text);
    share(&app, &owner, &folder, &member_id, 2);
    upload(&app, &member, &folder, "e.txt");
    deliver_now(&app);
    assert_eq!(outbox(&app, "owner@example.com").len(), 1);
    let _ = owner_id;
}

#[test]
fn a_digest_arrives_through_the_smtp_server() {
    let Some(s) = smtp() else { return };
    let app = TestApp::spawn();
    let member_email = format!("n-{}@example.com", uuid::Uuid::new_v4().simple());
    let (_, owner) = app.user_token("owner@example.com", Role::User);
    let (member_id, member) = app.user_token(&member_email, Role::User);
    let folder = mkdir(&app, &owner, &my_folder(&app, &owner), "Shared");
    share(&app, &owner, &folder, &member_id, 4);
    set_window(&app, 0);
    let (status, _) = subscribe(&app, &member, &folder, "", json!({"fileAdded": 1}));
    assert_eq!(status, 201);
    let mut relay = Relay::parse(&s.url, Some("never")).expect("relay URL");
    relay.user = Some(s.user.clone());
    relay.password = Some(Password(s.password.clone()));
    let mut c = Config::new(
        relay,
        mail::parse_from("Coffer <no-reply@coffer.test>").unwrap(),
        "n1",
    );
    c.timeout = Duration::from_secs(5);
    c.poll = Duration::from_millis(20);
    let _workers = mail::spawn(app.ctx.db.clone(), c, "coffer.test").expect("mail sender");
    upload(&app, &owner, &folder, "plan.txt");
    deliver_now(&app);
    wait_until("the digest arrives", 30, || {
        !received(&s.dir, &member_email).is_empty()
    });
    let got = received(&s.dir, &member_email);
    assert_eq!(got.len(), 1);
    let data = got[0]["data"].as_str().unwrap();
    assert!(data.contains("New in Shared: 1 file"), "{data}");
    assert!(data.contains("plan.txt"), "{data}");
}
