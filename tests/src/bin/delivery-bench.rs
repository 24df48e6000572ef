//! The webhook delivery benchmark (not a test): one node, SQLite, the default delivery settings
//! (50 ms poll, 32 requests in flight), a keep-alive receiver on loopback.
//!
//! - Throughput: N events written to the outbox at once; the time until the receiver has them
//!   all gives deliveries per second (target ≥ 2,000/s on this 2-core machine).
//! - Latency: API calls (POST /rest/locations) spaced out; the time from each call to its
//!   delivery at p50 and p99 (target: p50 under 100 ms).
//!
//! `cargo run --release -p coffer-tests --bin delivery-bench [N] [REPORT]` (`scripts/bench.sh` runs
//! it); it writes REPORT (default docs/benchmarks-webhooks.md).

use coffer_tests::receiver::Receiver;
use coffer_tests::{Body, TestApp};
use serde_json::json;
use std::time::{Duration, Instant};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let report = args
        .get(2)
        .cloned()
        .unwrap_or_else(|| "docs/benchmarks-webhooks.md".into());

    let mut app = TestApp::spawn();
    app.delivery = Some(
        coffer_delivery::spawn(
            app.ctx.db.clone(),
            coffer_delivery::Config {
                allow_private: true,
                ..Default::default()
            },
        )
        .expect("delivery workers"),
    );
    let token = app.admin_token();
    let admin_id = app.rest("GET", "/rest/users/me", &token, None).json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let rx = Receiver::start(&[200]);
    let auth = format!("Bearer {token}");
    let r = app.send(
        "POST",
        "/webhooks",
        &[("Authorization", &auth)],
        Some(Body::Json(json!({"url": rx.url, "secret": "whsec_c2VjcmV0", "subscriptions": ["bench.>", "location.>"]}))),
    );
    assert_eq!(r.status, 201, "{}", r.text);

    // Throughput.
    let started = Instant::now();
    for chunk in 0..n.div_ceil(1000) {
        let count = (n - chunk * 1000).min(1000);
        app.ctx
            .write(|c| {
                for i in 0..count {
                    coffer_service::platform::events::record(
                        c,
                        "bench.event.create",
                        Some(&admin_id),
                        json!({"i": chunk * 1000 + i}),
                    )?;
                }
                Ok(())
            })
            .expect("write events");
    }
    let got = rx.wait_for(n, 600);
    assert!(got.len() >= n, "only {} of {n} delivered", got.len());
    let elapsed = got[n - 1].at.duration_since(started).as_secs_f64();
    let rate = n as f64 / elapsed;
    println!("throughput: {n} deliveries in {elapsed:.2} s = {rate:.0}/s");

    // Latency: API call to delivery, calls spaced out so that each meets an idle pipeline.
    const M: usize = 200;
    let mut sent = Vec::with_capacity(M);
    for i in 0..M {
        let t = Instant::now();
        let r = app.rest(
            "POST",
            "/rest/locations",
            &token,
            Some(json!({"name": format!("lat-{i}"), "domain": "eu.example.com"})),
        );
        assert_eq!(r.status, 200, "{}", r.text);
        sent.push(t);
        std::thread::sleep(Duration::from_millis(20));
    }
    let got = rx.wait_for(n + M, 60);
    let mut lat: Vec<f64> = got[n..]
        .iter()
        .filter_map(|r| {
            let body: serde_json::Value = serde_json::from_str(&r.body).ok()?;
            let i: usize = body["data"]["name"]
                .as_str()?
                .strip_prefix("lat-")?
                .parse()
                .ok()?;
            Some(r.at.duration_since(sent[i]).as_secs_f64() * 1000.0)
        })
        .collect();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let (p50, p99) = (percentile(&lat, 0.5), percentile(&lat, 0.99));
    println!(
        "latency: p50 {p50:.1} ms, p99 {p99:.1} ms over {} calls",
        lat.len()
    );

    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
    let text = format!(
        "# Webhook delivery benchmark\n\n\
         Written by `cargo run --release -p coffer-tests --bin delivery-bench` (`scripts/bench.sh` runs it).\n\n\
         - Commit `{commit}`, {cores} cores; one node on SQLite, default delivery settings (50 ms poll, 32 requests in flight),\n  \
           a keep-alive HTTP receiver on loopback answering 200, on the same machine.\n\
         - Throughput: {n} events written to the outbox at once, timed until the receiver has them all.\n\
         - Latency: {M} `POST /rest/locations` calls 20 ms apart, timed from the call to the delivery's arrival.\n\n\
         | measure | result | target | |\n|---|---:|---|---|\n\
         | deliveries per second | {rate:.0} | ≥ 2,000 | **{}** |\n\
         | API call → delivery, p50 | {p50:.1} ms | < 100 ms | **{}** |\n\
         | API call → delivery, p99 | {p99:.1} ms | | |\n",
        verdict(rate >= 2000.0),
        verdict(p50 < 100.0),
    );
    std::fs::write(&report, text).expect("write the report");
    println!("wrote {report}");
}
