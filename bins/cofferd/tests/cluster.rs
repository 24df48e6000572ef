//! Several `cofferd serve` processes on one database share the webhook outbox: events created
//! through two of them are delivered by all three, a third is killed with SIGKILL while it holds
//! deliveries, and every event still arrives (the killed node's leases run out and the others
//! deliver what it held). On PostgreSQL (`COFFER_TEST_POSTGRES_URL`) work is claimed with
//! `FOR UPDATE SKIP LOCKED`; on SQLite the processes take turns at the single writer.

use coffer_tests::receiver::Receiver;
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

mod common;

use common::{start as start_node, token, Node};

/// Runs an operator command.
fn cli(dir: &std::path::Path, url: &str, args: &[&str]) -> Value {
    common::cli(dir, url, &[], args)
}

/// A node whose webhook deliveries time out fast and retry fast.
fn start(dir: &std::path::Path, url: &str) -> Node {
    start_node(
        dir,
        url,
        &[],
        &[
            ("COFFER_WEBHOOK_ALLOW_PRIVATE", "true"),
            ("COFFER_WEBHOOK_TIMEOUT", "1"),
            (
                "COFFER_WEBHOOK_RETRY_SCHEDULE",
                "200ms,200ms,200ms,200ms,200ms",
            ),
            ("COFFER_WEBHOOK_WORKERS", "4"),
        ],
    )
}

/// The webhook's deliveries as stored: `(pending with a live lease, delivered, all)`.
fn delivery_states(url: &str, hook: &str) -> (usize, usize, usize) {
    let db = coffer_store::Db::open(&coffer_store::DatabaseUrl::new(url), 1).unwrap();
    let mut c = db.get().unwrap();
    let (items, _) = coffer_store::deliveries::for_webhook(&mut c, hook, 0, 10_000).unwrap();
    let held = items
        .iter()
        .filter(|d| d.state == "pending" && d.lease_until.is_some())
        .count();
    let delivered = items.iter().filter(|d| d.state == "delivered").count();
    (held, delivered, items.len())
}

fn create_locations(base: &str, token: &str, range: std::ops::Range<usize>) {
    for i in range {
        let r = ureq::post(&format!("{base}/rest/locations"))
            .set("Authorization", &format!("Bearer {token}"))
            .set("X-Coffer-Version", "28")
            .send_json(
                serde_json::json!({"name": format!("site-{i}"), "domain": "eu.example.com"}),
            );
        assert!(r.is_ok(), "{r:?}");
    }
}

#[test]
fn nodes_share_the_outbox_and_a_killed_node_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _pg) = coffer_tests::fresh_database(dir.path());
    let url = url.expose().to_string();
    let admin = cli(
        dir.path(),
        &url,
        &[
            "user",
            "create",
            "--email",
            "ops@example.com",
            "--name",
            "Ops",
            "--password",
            "Cluster-Passw0rd",
            "--role",
            "system-admin",
        ],
    );
    let client = cli(
        dir.path(),
        &url,
        &[
            "client",
            "create",
            "--name",
            "ops",
            "--redirect-uri",
            "https://ops.example/cb",
            "--flows",
            "password",
        ],
    );
    let password = admin["password"].as_str().unwrap();
    // A slow receiver (below the 1 s request timeout) keeps deliveries in flight.
    let rx = Receiver::start_slow(&[200], Duration::from_millis(300));

    // Node C alone takes the first events and claims deliveries...
    let mut c = start(dir.path(), &url);
    let tc = token(&c.base, &client, "ops@example.com", password);
    let hook: Value = ureq::post(&format!("{}/webhooks", c.base))
        .set("Authorization", &format!("Bearer {tc}"))
        .send_json(serde_json::json!({"url": rx.url, "secret": "whsec_c2VjcmV0", "subscriptions": ["location.location.create"]}))
        .unwrap()
        .into_json()
        .unwrap();
    let hook = hook["id"].as_str().unwrap().to_string();
    create_locations(&c.base, &tc, 0..20);
    let deadline = Instant::now() + Duration::from_secs(20);
    while delivery_states(&url, &hook).0 == 0 {
        assert!(Instant::now() < deadline, "node C never claimed a delivery");
        std::thread::sleep(Duration::from_millis(10));
    }
    // ...and dies with SIGKILL while it holds them.
    c.child.kill().unwrap();
    c.child.wait().unwrap();
    let (held, _, _) = delivery_states(&url, &hook);
    assert!(held > 0, "the killed node held deliveries");

    // Two other nodes take the rest of the events and, once the leases run out (2 × 1 s + 1 s),
    // what C held.
    let a = start(dir.path(), &url);
    let b = start(dir.path(), &url);
    let ta = token(&a.base, &client, "ops@example.com", password);
    let tb = token(&b.base, &client, "ops@example.com", password);
    create_locations(&a.base, &ta, 20..40);
    create_locations(&b.base, &tb, 40..60);

    const N: usize = 60;
    let deadline = Instant::now() + Duration::from_secs(60);
    while delivery_states(&url, &hook).1 < N {
        assert!(
            Instant::now() < deadline,
            "not every delivery completed: {:?}",
            delivery_states(&url, &hook)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        delivery_states(&url, &hook),
        (0, N, N),
        "one delivery per event, all delivered"
    );

    let got = rx.wait_for(N, 10);
    let mut seen: HashMap<String, usize> = HashMap::new();
    for r in &got {
        let body: Value = serde_json::from_str(&r.body).unwrap();
        *seen
            .entry(body["data"]["name"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    let missing: Vec<String> = (0..N)
        .map(|i| format!("site-{i}"))
        .filter(|n| !seen.contains_key(n))
        .collect();
    assert!(missing.is_empty(), "lost events: {missing:?}");
    // At least once: only what the killed node held may arrive twice.
    let twice = seen.values().filter(|n| **n > 1).count();
    assert!(
        twice <= held,
        "{twice} events arrived more than once; the killed node held {held}"
    );
    drop((a, b));
}
