//! The activity log benchmark (not a test): one node on SQLite.
//!
//! - Verify: N activity records (default 1,000,000) appended directly through the same append
//!   as the server's (in transactions of 10,000), then the walk of `cofferd audit verify`
//!   timed: records per second (target ≥ 100,000/s).
//! - Recording cost: folder creates (`POST /rest/folders/{id}/folders`) and 4 KiB one-shot
//!   uploads over HTTP, in rounds alternating the log on and off (the process-wide switch
//!   `coffer_service::audit::record::set_enabled`, which only benchmarks turn off), the best
//!   round of each compared: the log may cost at most 10% of the throughput.
//!
//! `cargo run --release -p coffer-tests --bin audit-bench [N] [REPORT]`
//! (`scripts/bench-audit.sh` runs it); it rewrites the activity-log section of REPORT (default
//! docs/benchmarks.md) and leaves the database in BENCH_AUDIT_DB (when set) for the CLI's own
//! verify run.

use coffer_service::audit::{record, verify};
use coffer_tests::{mkdir, my_folder, TestApp};
use serde_json::json;
use std::time::Instant;

const BEGIN: &str = "<!-- audit-bench -->";
const END: &str = "<!-- /audit-bench -->";

/// Operations per second of `ops` calls of `f`, the best of `rounds` rounds with the log on and
/// with it off, alternating.
fn on_off(rounds: usize, ops: usize, mut f: impl FnMut(usize)) -> (f64, f64) {
    let (mut on, mut off) = (0f64, 0f64);
    let mut k = 0;
    for r in 0..rounds * 2 {
        let enabled = r % 2 == 0;
        record::set_enabled(enabled);
        let t = Instant::now();
        for _ in 0..ops {
            f(k);
            k += 1;
        }
        let rate = ops as f64 / t.elapsed().as_secs_f64();
        if enabled {
            on = on.max(rate);
        } else {
            off = off.max(rate);
        }
    }
    record::set_enabled(true);
    (on, off)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let report = args
        .get(2)
        .cloned()
        .unwrap_or_else(|| "docs/benchmarks.md".into());
    let app = TestApp::spawn();
    let token = app.admin_token();
    let root = my_folder(&app, &token);

    // Recording cost, before the log is large.
    let folders = mkdir(&app, &token, &root, "bench");
    let (f_on, f_off) = on_off(3, 300, |i| {
        mkdir(&app, &token, &folders, &format!("d{i}"));
    });
    let uploads = mkdir(&app, &token, &root, "uploads");
    let body = vec![7u8; 4096];
    let (u_on, u_off) = on_off(3, 200, |i| {
        let r = app.upload(&token, &uploads, &format!("f{i}.bin"), &body);
        assert_eq!(r.status, 200, "{}", r.text);
    });
    println!("folder create: {f_on:.0}/s with the log, {f_off:.0}/s without");
    println!("4 KiB upload: {u_on:.0}/s with the log, {u_off:.0}/s without");

    // Seed the log.
    let user = app.user("seed@example.com", coffer_domain::Role::User).0;
    let started = Instant::now();
    let mut done = 0;
    while done < n {
        let count = (n - done).min(10_000);
        app.ctx
            .write(|c| {
                for i in done..done + count {
                    record::append(
                        c,
                        "filesystem.file.download",
                        Some(&user),
                        &json!({"id": format!("00000000-0000-4000-8000-{i:012}"), "name": format!("file-{i}.pdf"), "versionId": "v", "partial": false}),
                        true,
                    )?;
                }
                Ok(())
            })
            .expect("seed");
        done += count;
    }
    println!(
        "seeded {n} records in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let rep = verify::verify(&app.ctx, None).expect("verify");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(rep.problem, None);
    let vrate = rep.records as f64 / secs;
    println!(
        "verify: {} records in {secs:.2} s = {vrate:.0}/s",
        rep.records
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
    let cost = |on: f64, off: f64| (1.0 - on / off) * 100.0;
    let section = format!(
        "{BEGIN}\n## The activity log\n\n\
         Written by `scripts/bench-audit.sh` (`cargo run --release -p coffer-tests --bin audit-bench`). \
         Commit `{commit}`, {cores} cores, one node on SQLite.\n\n\
         - Verify: {n} records appended through the server's own append, then the walk of \
         `cofferd audit verify` timed.\n\
         - Recording cost: folder creates and 4 KiB one-shot uploads over HTTP, three rounds each \
         with the log on and off (the benchmark-only switch `audit::record::set_enabled`), best \
         round of each.\n\n\
         | measure | result | target | |\n|---|---:|---|---|\n\
         | verify, records/s | {vrate:.0} | ≥ 100,000 | **{}** |\n\
         | folder creates/s, log on / off | {f_on:.0} / {f_off:.0} ({:.1}% cost) | ≤ 10% | **{}** |\n\
         | 4 KiB uploads/s, log on / off | {u_on:.0} / {u_off:.0} ({:.1}% cost) | ≤ 10% | **{}** |\n\
         | activities export of one user over a year, peak RSS | not run: exports are not implemented yet | < 150 MB | **FAIL** |\n\
         {END}\n",
        verdict(vrate >= 100_000.0),
        cost(f_on, f_off),
        verdict(cost(f_on, f_off) <= 10.0),
        cost(u_on, u_off),
        verdict(cost(u_on, u_off) <= 10.0),
    );
    let old = std::fs::read_to_string(&report).unwrap_or_default();
    let new = match (old.find(BEGIN), old.find(END)) {
        (Some(a), Some(b)) if b > a => {
            format!(
                "{}{section}{}",
                &old[..a],
                &old[b + END.len()..].trim_start_matches('\n')
            )
        }
        _ => format!("{}\n{section}", old.trim_end()),
    };
    std::fs::write(&report, new).expect("write the report");
    println!("wrote {report}");
}
