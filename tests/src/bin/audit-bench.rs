//! The activity log benchmark (not a test): one node on SQLite.
//!
//! - Verify: N activity records (default 1,000,000) appended directly through the same append
//!   as the server's (in transactions of 10,000), then the walk of `cofferd audit verify`
//!   timed: records per second (target ≥ 100,000/s).
//! - Recording cost: folder creates (`POST /rest/folders/{id}/folders`) and 4 KiB one-shot
//!   uploads over HTTP (5,000 and 2,500 with the log on, as many with it off), the two sides
//!   alternating every 20 calls (the process-wide switch
//!   `coffer_service::audit::record::set_enabled`, which only benchmarks turn off), each side's
//!   calls over its time compared: the log may cost at most 10% of the throughput.
//! - Export: a DLI `activities` export of the seeded user over a year (all N records), asked for
//!   over HTTP and made by the job worker in this process; the process' peak RSS (VmHWM, reset
//!   through `/proc/self/clear_refs` before the job) must stay under 150 MB, and the CSV must
//!   hold every record (counted by streaming it back from the blob store).
//!
//! `cargo run --release -p coffer-tests --bin audit-bench [N] [REPORT]`
//! (`scripts/bench-audit.sh` runs it); it rewrites the activity-log section of REPORT (default
//! docs/benchmarks.md) and leaves the database in BENCH_AUDIT_DB (when set) for the CLI's own
//! verify run.

use coffer_service::audit::{record, verify};
use coffer_tests::{mkdir, my_folder, unix_now, TestApp};
use futures_util::StreamExt;
use serde_json::json;
use std::time::Instant;

const BEGIN: &str = "<!-- audit-bench -->";
const END: &str = "<!-- /audit-bench -->";

/// A field of `/proc/self/status` in kB (`VmHWM`, `VmRSS`); 0 where there is none.
fn vm(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
        .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

/// The lines of a stored blob, streamed.
fn lines_of(app: &TestApp, blob: &str) -> usize {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(async {
            let mut read = app
                .ctx
                .storage
                .get(&blob.parse().expect("blob key"), None)
                .await
                .expect("the export's blob")
                .stream;
            let mut n = 0;
            while let Some(chunk) = read.next().await {
                n += chunk.expect("read").iter().filter(|b| **b == b'\n').count();
            }
            n
        })
}

/// Calls of each side of [`on_off`] in a row before it switches to the other side. The two
/// sides alternate this often so that the machine's drift (other processes, checkpoints, the
/// database growing) falls on both alike: rounds of a second or more, best of each, moved
/// between runs by more than the cost measured.
const BATCH: usize = 20;

/// Operations per second of `ops` calls of `f` with the log on and `ops` with it off, in
/// batches of [`BATCH`] alternating, each side's rate its calls over the time its batches took.
fn on_off(ops: usize, mut f: impl FnMut(usize)) -> (f64, f64) {
    let (mut on, mut off) = (0f64, 0f64);
    let mut k = 0;
    for b in 0..ops.div_ceil(BATCH) * 2 {
        let enabled = b % 2 == 0;
        record::set_enabled(enabled);
        let t = Instant::now();
        for _ in 0..BATCH {
            f(k);
            k += 1;
        }
        let secs = t.elapsed().as_secs_f64();
        if enabled {
            on += secs;
        } else {
            off += secs;
        }
    }
    record::set_enabled(true);
    let n = (ops.div_ceil(BATCH) * BATCH) as f64;
    (n / on, n / off)
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
    let (f_on, f_off) = on_off(5_000, |i| {
        mkdir(&app, &token, &folders, &format!("d{i}"));
    });
    let uploads = mkdir(&app, &token, &root, "uploads");
    let body = vec![7u8; 4096];
    let (u_on, u_off) = on_off(2_500, |i| {
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

    // The export: one user's activities over a year, made by the job worker (the uploads'
    // own jobs first, so that the job run measured is the export's alone).
    app.run_jobs();
    coffer_service::identity::settings::set(&app.ctx, "dliEnabled", "true", None).expect("licence");
    let end = &coffer_service::rfc3339(unix_now())[..10];
    let start = &coffer_service::rfc3339(unix_now() - 364 * 86_400)[..10];
    let r = app.rest(
        "POST",
        &format!("/rest/dli/exports/users/{user}"),
        &token,
        Some(json!({"startDate": start, "endDate": end, "types": ["activities"]})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let export: i64 = r.json()["data"][0]["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("the export's id");
    let hwm_reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let rss_before = vm("VmRSS");
    let t = Instant::now();
    app.run_jobs();
    let esecs = t.elapsed().as_secs_f64();
    let hwm_mb = vm("VmHWM") as f64 / 1024.0;
    let e = app
        .ctx
        .with_conn(|c| Ok(coffer_store::dli_exports::by_id(c, export)?))
        .expect("read the export")
        .expect("the export");
    assert_eq!(e.status, "completed", "{e:?}");
    let rows = lines_of(&app, e.blob_id.as_deref().expect("its blob")) - 1;
    assert!(rows >= n, "the CSV holds {rows} records of {n}");
    println!(
        "export: {rows} records, {:.1} MB of CSV in {esecs:.1} s; VmHWM {hwm_mb:.1} MB \
         (VmRSS {:.1} MB before{})",
        e.size.unwrap_or(0) as f64 / 1e6,
        rss_before as f64 / 1024.0,
        if hwm_reset {
            ", peak reset"
        } else {
            ", peak since start: could not reset"
        }
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
         - Recording cost: folder creates and 4 KiB one-shot uploads over HTTP (5,000 and 2,500 \
         with the log on, as many with it off), the two sides alternating every 20 calls (the \
         benchmark-only switch `audit::record::set_enabled`), each side's calls over its time.\n\n\
         | measure | result | target | |\n|---|---:|---|---|\n\
         | verify, records/s | {vrate:.0} | ≥ 100,000 | **{}** |\n\
         | folder creates/s, log on / off | {f_on:.0} / {f_off:.0} ({:.1}% cost) | ≤ 10% | **{}** |\n\
         | 4 KiB uploads/s, log on / off | {u_on:.0} / {u_off:.0} ({:.1}% cost) | ≤ 10% | **{}** |\n\
         | activities export of one user over a year ({rows} records, {:.1} s), peak RSS{} | {hwm_mb:.1} MB | < 150 MB | **{}** |\n\
         {END}\n",
        verdict(vrate >= 100_000.0),
        cost(f_on, f_off),
        verdict(cost(f_on, f_off) <= 10.0),
        cost(u_on, u_off),
        verdict(cost(u_on, u_off) <= 10.0),
        esecs,
        if hwm_reset { "" } else { " (since start: the peak could not be reset)" },
        verdict(hwm_mb < 150.0),
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
