//! Webhook delivery end to end: a real HTTP receiver on loopback gets signed events, verified
//! here with an independent HMAC computation; failing receivers are retried with the same
//! `webhook-id`; 410 and exhausted retries disable the webhook; owners see only their events;
//! private addresses are refused unless allowed; an event recorded through one node is delivered
//! by another at once.

use base64::Engine;
use coffer_domain::Role;
use coffer_tests::receiver::{Received, Receiver};
use coffer_tests::{auth, Body, TestApp};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn create_hook(app: &TestApp, token: &str, url: &str, subs: &[&str]) -> String {
    let body = json!({"url": url, "secret": "whsec_c2VjcmV0LWtleQ==", "token": "receiver-token", "subscriptions": subs});
    let r = app.send(
        "POST",
        "/webhooks",
        &[("Authorization", &auth(token))],
        Some(Body::Json(body)),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    r.json()["id"].as_str().unwrap().to_string()
}

fn hook_state(app: &TestApp, token: &str, id: &str) -> Value {
    app.send(
        "GET",
        &format!("/webhooks/{id}"),
        &[("Authorization", &auth(token))],
        None,
    )
    .json()
}

/// Waits until the webhook's state satisfies `done`.
fn wait_state(app: &TestApp, token: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let v = hook_state(app, token, id);
        if done(&v) || Instant::now() > deadline {
            return v;
        }
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// The Standard Webhooks signature computed here, independently of the sender's code.
fn expected_signature(id: &str, ts: &str, body: &str) -> String {
    let key = base64::engine::general_purpose::STANDARD
        .decode("c2VjcmV0LWtleQ==")
        .unwrap();
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{ts}.{body}").as_bytes());
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

fn location(app: &TestApp, token: &str, name: &str) {
    let r = app.rest(
        "POST",
        "/rest/locations",
        token,
        Some(json!({"name": name, "domain": "eu.example.com"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
}

#[test]
fn events_arrive_signed_with_the_token() {
    let mut app = TestApp::spawn();
    app.start_delivery("100ms");
    let t = app.admin_token();
    let rx = Receiver::start(&[204]);
    let id = create_hook(&app, &t, &rx.url, &["location.>"]);
    location(&app, &t, "EU");

    let got = rx.wait_for(1, 10);
    assert_eq!(got.len(), 1, "one delivery");
    let r = &got[0];
    let body: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(body["subject"], "location.location.create");
    assert_eq!(body["data"]["name"], "EU");
    assert!(body["id"].is_string() && body["createdAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(body["actor"].as_str().unwrap().len(), 36);

    let msg_id = &r.headers["webhook-id"];
    let ts = &r.headers["webhook-timestamp"];
    assert!(msg_id.starts_with("msg_"));
    let age = (time_now() - ts.parse::<i64>().unwrap()).abs();
    assert!(age < 60, "timestamp {ts}");
    assert_eq!(
        r.headers["webhook-signature"],
        expected_signature(msg_id, ts, &r.body)
    );
    let key = base64::engine::general_purpose::STANDARD
        .decode("c2VjcmV0LWtleQ==")
        .unwrap();
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    mac.update(r.body.as_bytes());
    assert_eq!(
        r.headers["x-coffer-signature"],
        format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
    );
    assert_eq!(r.headers["authorization"], "Bearer receiver-token");
    assert_eq!(r.headers["content-type"], "application/json");

    let state = wait_state(&app, &t, &id, |v| v["status"] == "SUCCESS");
    assert_eq!(state["status"], "SUCCESS", "{state}");
    assert_eq!(app.count("state = 'delivered'", "webhook_deliveries"), 1);
    assert_eq!(app.count("dispatched = FALSE", "events"), 0);
}

fn time_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn a_failing_receiver_is_retried_with_the_same_id() {
    let mut app = TestApp::spawn();
    app.start_delivery("100ms,100ms,100ms");
    let t = app.admin_token();
    let rx = Receiver::start(&[500, 502, 200]);
    let id = create_hook(&app, &t, &rx.url, &["location.location.create"]);
    location(&app, &t, "EU");

    let got = rx.wait_for(3, 10);
    assert_eq!(got.len(), 3);
    let ids: Vec<&String> = got.iter().map(|r| &r.headers["webhook-id"]).collect();
    assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
    assert!(got.iter().all(|r| r.body == got[0].body));
    let state = wait_state(&app, &t, &id, |v| v["status"] == "SUCCESS");
    assert_eq!(state["status"], "SUCCESS");
    assert_eq!(state["enabled"], true);
    assert_eq!(app.count("1=1", "webhook_attempts"), 3);
    assert_eq!(app.count("status_code = 500", "webhook_attempts"), 1);
}

#[test]
fn gone_disables_the_webhook() {
    let mut app = TestApp::spawn();
    app.start_delivery("100ms");
    let t = app.admin_token();
    let rx = Receiver::start(&[410]);
    let id = create_hook(&app, &t, &rx.url, &["location.>"]);
    location(&app, &t, "EU");
    let state = wait_state(&app, &t, &id, |v| v["enabled"] == false);
    assert_eq!(state["enabled"], false, "{state}");
    assert_eq!(state["status"], "ERROR");
    assert!(state["description"].as_str().unwrap().contains("410"));
    location(&app, &t, "US");
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        rx.wait_for(2, 0).len(),
        1,
        "a disabled webhook receives nothing more"
    );
}

#[test]
fn exhausted_retries_disable_the_webhook() {
    let mut app = TestApp::spawn();
    app.start_delivery("50ms,50ms");
    let t = app.admin_token();
    let rx = Receiver::start(&[503]);
    let id = create_hook(&app, &t, &rx.url, &["location.>"]);
    location(&app, &t, "EU");
    let state = wait_state(&app, &t, &id, |v| v["enabled"] == false);
    assert_eq!(state["enabled"], false, "{state}");
    assert!(
        state["description"]
            .as_str()
            .unwrap()
            .contains("retries exhausted"),
        "{state}"
    );
    assert_eq!(rx.wait_for(3, 2).len(), 3, "the first try and two retries");
    assert_eq!(app.count("state = 'failed'", "webhook_deliveries"), 1);
}

#[test]
fn owners_receive_only_what_they_may_see() {
    let mut app = TestApp::spawn();
    app.start_delivery("100ms");
    let admin = app.admin_token();
    let (_bob_id, bob) = app.user_token("bob@example.com", Role::User);
    let bob_rx = Receiver::start(&[200]);
    let admin_rx = Receiver::start(&[200]);
    create_hook(&app, &bob, &bob_rx.url, &["location.>", "device.>"]);
    create_hook(&app, &admin, &admin_rx.url, &["device.>"]);

    // The administrator's location change is not Bob's to see.
    location(&app, &admin, "EU");
    // Bob's own device is; a system administrator's webhook sees every event.
    let r = app.rest(
        "POST",
        "/rest/devices",
        &bob,
        Some(json!({"installTagId": "bob-phone"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);

    let bob_got = bob_rx.wait_for(1, 10);
    let admin_got = admin_rx.wait_for(1, 10);
    std::thread::sleep(Duration::from_millis(300));
    let subjects = |v: &Vec<Received>| {
        v.iter()
            .map(|r| {
                serde_json::from_str::<Value>(&r.body).unwrap()["subject"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(subjects(&bob_got), vec!["device.device.create"]);
    assert_eq!(subjects(&admin_got), vec!["device.device.create"]);
    assert_eq!(bob_rx.wait_for(2, 0).len(), 1);
}

#[test]
fn private_addresses_are_refused_unless_allowed() {
    let mut app = TestApp::spawn();
    app.delivery = Some(
        coffer_delivery::spawn(
            app.ctx.db.clone(),
            coffer_delivery::Config {
                allow_private: false,
                schedule: coffer_delivery::parse_schedule("10s").unwrap(),
                poll: Duration::from_millis(20),
                ..Default::default()
            },
        )
        .unwrap(),
    );
    let t = app.admin_token();
    let rx = Receiver::start(&[200]);
    let id = create_hook(&app, &t, &rx.url, &["location.>"]);
    location(&app, &t, "EU");
    let state = wait_state(&app, &t, &id, |v| v["status"] == "ERROR");
    assert_eq!(state["status"], "ERROR", "{state}");
    assert!(
        state["description"]
            .as_str()
            .unwrap()
            .contains("127.0.0.0/8 Loopback"),
        "{state}"
    );
    assert_eq!(
        rx.wait_for(1, 0).len(),
        0,
        "nothing reached the loopback receiver"
    );
}

/// A receiver that answers every request with a redirect to `location`.
fn redirecting_receiver(location: &str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let answer = format!(
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    std::thread::spawn(move || {
        for mut s in listener.incoming().map_while(Result::ok) {
            let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
            let mut buf = [0u8; 65536];
            let _ = s.read(&mut buf);
            let _ = s.write_all(answer.as_bytes());
        }
    });
    url
}

#[test]
fn redirects_are_not_followed() {
    // The guard checks the address each connection goes to; a redirect would be a second
    // address, so the delivery fails instead of following it.
    let mut app = TestApp::spawn();
    app.start_delivery("10s");
    let t = app.admin_token();
    let target = Receiver::start(&[200]);
    let url = redirecting_receiver(&target.url);
    let id = create_hook(&app, &t, &url, &["location.>"]);
    location(&app, &t, "EU");
    let state = wait_state(&app, &t, &id, |v| v["status"] == "ERROR");
    assert_eq!(state["status"], "ERROR", "{state}");
    assert!(
        state["description"]
            .as_str()
            .unwrap()
            .contains("HTTP 307 (redirects are not followed)"),
        "{state}"
    );
    assert_eq!(
        target.wait_for(1, 1).len(),
        0,
        "the redirect target got nothing"
    );
}

#[test]
fn the_delivery_log_redeliver_and_ping() {
    let mut app = TestApp::spawn();
    // A long retry delay: only a redelivery sends again soon.
    app.start_delivery("1h");
    let t = app.admin_token();
    let rx = Receiver::start(&[500, 200]);
    let id = create_hook(&app, &t, &rx.url, &["location.>"]);
    location(&app, &t, "EU");
    assert_eq!(rx.wait_for(1, 10).len(), 1);
    let state = wait_state(&app, &t, &id, |v| v["status"] == "ERROR");
    assert!(
        state["description"].as_str().unwrap().contains("HTTP 500"),
        "{state}"
    );

    let h = [("Authorization", auth(&t))];
    let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let log = app
        .send("GET", &format!("/webhooks/{id}/deliveries"), &h, None)
        .json();
    assert_eq!(log["totalItems"], 1, "{log}");
    let d = &log["items"][0];
    assert_eq!(d["subject"], "location.location.create");
    assert_eq!(d["state"], "pending");
    assert_eq!(d["attempts"], 1);
    assert_eq!(d["lastStatus"], 500);
    assert_eq!(d["attemptLog"][0]["statusCode"], 500);
    let delivery_id = d["id"].as_str().unwrap().to_string();

    let r = app.send(
        "POST",
        &format!("/webhooks/{id}/deliveries/{delivery_id}/redeliver"),
        &h,
        None,
    );
    assert_eq!(r.status, 202, "{}", r.text);
    let got = rx.wait_for(2, 10);
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].headers["webhook-id"], delivery_id);
    let state = wait_state(&app, &t, &id, |v| v["status"] == "SUCCESS");
    assert_eq!(state["status"], "SUCCESS");
    let log = app
        .send("GET", &format!("/webhooks/{id}/deliveries"), &h, None)
        .json();
    assert_eq!(log["items"][0]["state"], "delivered", "{log}");
    assert_eq!(log["items"][0]["attemptLog"].as_array().unwrap().len(), 2);

    let r = app.send("POST", &format!("/webhooks/{id}/ping"), &h, None);
    assert_eq!(r.status, 202, "{}", r.text);
    let got = rx.wait_for(3, 10);
    assert_eq!(got.len(), 3);
    let ping: Value = serde_json::from_str(&got[2].body).unwrap();
    assert_eq!(ping["subject"], "webhook.webhook.ping");
    assert_eq!(ping["data"]["id"], id.as_str());

    let unknown = app.send(
        "POST",
        &format!("/webhooks/{id}/deliveries/msg_nope/redeliver"),
        &h,
        None,
    );
    assert_eq!(unknown.status, 404);
    let (_, bob) = app.user_token("bob@example.com", Role::User);
    let theirs = app.send(
        "GET",
        &format!("/webhooks/{id}/deliveries"),
        &[("Authorization", &auth(&bob))],
        None,
    );
    assert_eq!(theirs.status, 404);
}

#[test]
fn content_events_reach_the_owner_of_the_tree_only() {
    let mut app = TestApp::spawn();
    app.start_delivery("100ms");
    let (_, owner) = app.user_token("tree-owner@example.com", Role::User);
    let (member_id, member) = app.user_token("tree-member@example.com", Role::User);
    let (_, stranger) = app.user_token("stranger@example.com", Role::User);
    let owner_rx = Receiver::start(&[200]);
    let stranger_rx = Receiver::start(&[200]);
    create_hook(&app, &owner, &owner_rx.url, &["filesystem.file.>"]);
    create_hook(&app, &stranger, &stranger_rx.url, &["filesystem.>"]);
    let me = app.rest("GET", "/rest/users/me", &owner, None).json();
    let root = me["syncdirId"].as_str().unwrap();
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{root}/folders"),
        &owner,
        Some(json!({"name": "Drop"})),
    );
    let drop = r.json()["id"].as_str().unwrap().to_string();
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{drop}/members"),
        &owner,
        Some(json!({"userIds": [member_id], "roleId": 2})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    // The member's upload into the owner's folder reaches the owner's webhook.
    let r = app.upload(&member, &drop, "from-member.txt", b"hi");
    assert_eq!(r.status, 200, "{}", r.text);
    let got = owner_rx.wait_for(1, 10);
    let event: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(event["subject"], "filesystem.file.create");
    assert_eq!(event["data"]["name"], "from-member.txt");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        stranger_rx.wait_for(1, 0).len(),
        0,
        "not the stranger's to see"
    );
}

/// Work recorded through one node starts on another at once: the pump of node B, which looks on
/// its own only every 30 s, delivers an event recorded through node A within moments
/// (PostgreSQL: a notification from A's transaction; SQLite, one process: the writer's signal).
#[test]
fn an_event_recorded_on_one_node_is_delivered_by_another_at_once() {
    let app = TestApp::spawn();
    let t = app.admin_token();
    let rx = Receiver::start(&[204]);
    create_hook(&app, &t, &rx.url, &["location.>"]);
    let config = coffer_delivery::Config {
        allow_private: true,
        timeout: Duration::from_secs(5),
        schedule: coffer_delivery::parse_schedule("100ms").unwrap(),
        poll: Duration::from_secs(30),
        workers: 2,
    };
    let _node_b = coffer_delivery::spawn(app.other_node_db(), config).expect("node B");
    // Node B has looked once (and, on PostgreSQL, started listening) and found nothing to send.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(rx.wait_for(1, 0).is_empty());

    let recorded = Instant::now();
    location(&app, &t, "EU");
    let got = rx.wait_for(1, 10);
    let took = recorded.elapsed();
    assert_eq!(got.len(), 1, "one delivery");
    // Well under a second on a quiet machine; the bound leaves room for a loaded one and is
    // still far below node B's own 30 s look.
    assert!(took < Duration::from_secs(5), "delivered after {took:?}");
    let body: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(body["subject"], "location.location.create");
}

/// The counter of committed transactions PostgreSQL keeps for this test's database.
fn xact_commit(app: &TestApp) -> Option<i64> {
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    if app.ctx.db.backend() != coffer_store::Backend::Postgres {
        return None;
    }
    app.ctx
        .with_conn(|c| {
            coffer_store::db_run!(c => {
                // Statistics reach the view within a second or so; take them fresh.
                let _ = diesel::RunQueryDsl::execute(
                    diesel::sql_query("SELECT pg_stat_clear_snapshot()"),
                    c,
                );
                diesel::RunQueryDsl::get_result::<N>(
                    diesel::sql_query(
                        "SELECT xact_commit AS n FROM pg_stat_database \
                         WHERE datname = current_database()",
                    ),
                    c,
                )
            })
            .map_err(coffer_service::Error::internal)
        })
        .ok()
        .map(|v| v.n)
}

/// An idle node keeps its database quiet: with the webhook pump, the mail pump and the job
/// worker running on their defaults and nothing to do, each looks every few seconds (work that
/// is recorded wakes them). Watches for `COFFER_IDLE_SECONDS` (default 6) and prints the rate
/// of statements (and on PostgreSQL of committed transactions); `scripts/bench/idle-node.sh`
/// runs it for a minute on each database.
#[test]
fn an_idle_node_keeps_its_database_quiet() {
    use coffer_delivery::mail;
    let app = TestApp::spawn();
    let _hooks = coffer_delivery::spawn(app.ctx.db.clone(), coffer_delivery::Config::default())
        .expect("webhook pump");
    let relay = mail::Relay::parse("smtp://127.0.0.1:1", Some("never")).unwrap();
    let from = mail::parse_from("Coffer <no-reply@coffer.test>").unwrap();
    let _mail = mail::spawn(
        app.ctx.db.clone(),
        mail::Config::new(relay, from, "idle-node"),
        "coffer.test",
    )
    .expect("mail pump");
    coffer_service::content::jobs::spawn(app.ctx.clone()).expect("job worker");
    // The first looks, and the periodic jobs queued at start, are not idleness.
    std::thread::sleep(Duration::from_secs(3));
    let secs: u64 = std::env::var("COFFER_IDLE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6);
    let (statements, xacts) = (app.ctx.db.statements(), xact_commit(&app));
    std::thread::sleep(Duration::from_secs(secs));
    let ran = app.ctx.db.statements() - statements;
    let per_minute = ran * 60 / secs;
    let committed = xact_commit(&app)
        .zip(xacts)
        .map(|(after, before)| format!(", {} transactions committed", after - before))
        .unwrap_or_default();
    eprintln!(
        "idle node on {}: {ran} statements in {secs} s ({per_minute} a minute){committed}",
        coffer_tests::backend_name()
    );
    // Polling every 50 ms (webhooks), 500 ms (mail) and 1 s (jobs) ran thousands a minute.
    assert!(per_minute < 1000, "{per_minute} statements a minute");
}
