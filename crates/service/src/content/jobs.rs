//! Background work of the content core, on the one job queue (`coffer_store::jobs`): virus
//! scans, previews, upload-staging sweeps, blob sweeps and trash retention. Every node runs a
//! worker ([`spawn`]); a job is claimed with a lease, so a dead node's jobs return to the queue.

use crate::{now, Ctx, Result};
use coffer_errors::Error;
use coffer_scanner::Verdict;
use coffer_store::models::Job;
use coffer_store::DbConn;
use futures_util::StreamExt;
use serde_json::json;
use std::time::Duration;

pub const SCAN: &str = "scan";
pub const PREVIEW: &str = "preview";
pub const SWEEP_UPLOADS: &str = "sweep-uploads";
pub const SWEEP_BLOBS: &str = "sweep-blobs";
pub const PURGE_TRASH: &str = "purge-trash";

/// Seconds a claimed job is held before another node may take it.
const LEASE: i64 = 300;
/// Seconds an unreferenced blob is kept before the sweep deletes it (a grace for uploads that
/// found the same content already stored).
const BLOB_GRACE: i64 = 3600;

pub fn enqueue(c: &mut DbConn, kind: &str, payload: &str, t: i64) -> Result<()> {
    coffer_store::jobs::enqueue(c, kind, payload, t, 5, t)?;
    Ok(())
}

/// Queues the periodic jobs that are not queued yet (one of each across all nodes).
pub fn schedule_periodic(ctx: &Ctx) -> Result<()> {
    ctx.write(|c| {
        let t = now();
        for kind in [SWEEP_UPLOADS, SWEEP_BLOBS, PURGE_TRASH] {
            if !coffer_store::jobs::pending(c, kind, "")? {
                coffer_store::jobs::enqueue(c, kind, "", t, 3, t)?;
            }
        }
        Ok(())
    })
}

/// How long until a periodic job runs again.
fn period(kind: &str) -> i64 {
    match kind {
        SWEEP_UPLOADS => 600,
        SWEEP_BLOBS => 3600,
        _ => 86_400,
    }
}

/// Backoff before retry `attempt` (1-based): 10 s, 40 s, 160 s, … capped at an hour.
pub fn backoff(attempt: i64) -> i64 {
    let exp = attempt.clamp(1, 10) as u32 - 1;
    (10i64 * 4i64.pow(exp)).min(3600)
}

/// Runs due jobs until none is left; returns how many ran. The worker loop calls it; tests call
/// it to run the queue at once.
pub async fn run_due(ctx: &Ctx, node: &str) -> Result<usize> {
    let mut ran = 0;
    loop {
        let node_s = node.to_string();
        let jobs = ctx
            .write_owned(move |c| Ok(coffer_store::jobs::claim(c, &node_s, 8, LEASE, now())?))
            .await?;
        if jobs.is_empty() {
            return Ok(ran);
        }
        for job in jobs {
            let outcome = run(ctx, &job).await;
            let node_s = node.to_string();
            let t = now();
            ctx.write_owned(move |c| {
                match outcome {
                    Ok(()) => {
                        coffer_store::jobs::complete(c, job.id, &node_s)?;
                        // A periodic job queues its next run.
                        if matches!(job.kind.as_str(), SWEEP_UPLOADS | SWEEP_BLOBS | PURGE_TRASH)
                            && !coffer_store::jobs::pending(c, &job.kind, "")?
                        {
                            coffer_store::jobs::enqueue(
                                c,
                                &job.kind,
                                "",
                                t + period(&job.kind),
                                3,
                                t,
                            )?;
                        }
                    }
                    Err(e) => {
                        let text = match &e {
                            Error::Api(a) => a.message.to_string(),
                            Error::Internal(i) => i.clone(),
                        };
                        log::warn!("job {} ({}) failed: {text}", job.id, job.kind);
                        coffer_store::jobs::fail(
                            c,
                            &job,
                            &node_s,
                            &text,
                            backoff(job.attempts),
                            false,
                            t,
                        )?;
                    }
                }
                Ok(())
            })
            .await?;
            ran += 1;
        }
    }
}

async fn run(ctx: &Ctx, job: &Job) -> Result<()> {
    match job.kind.as_str() {
        SCAN => scan(ctx, &job.payload).await,
        PREVIEW => preview(ctx, &job.payload).await,
        SWEEP_UPLOADS => sweep_uploads(ctx).await,
        SWEEP_BLOBS => sweep_blobs(ctx).await,
        PURGE_TRASH => purge_trash(ctx).await,
        other => Err(Error::internal(format!("unknown job kind {other}"))),
    }
}

/// Scans a version with the configured scanner: `allowed` when clean, `disallowed` (kept,
/// never served) when infected.
async fn scan(ctx: &Ctx, version_id: &str) -> Result<()> {
    let Some(scanner) = ctx.scanner.clone() else {
        return set_av(ctx, version_id, "allowed", None).await;
    };
    let vid = version_id.to_string();
    let Some(v) = ctx
        .blocking(move |ctx| ctx.with_conn(|c| Ok(coffer_store::content::version(c, &vid)?)))
        .await?
    else {
        return Ok(());
    };
    let key = coffer_storage::BlobKey::parse(&v.blob_id)
        .map_err(|e| Error::internal(format!("blob key: {e}")))?;
    let read = ctx
        .storage
        .get(&key, None)
        .await
        .map_err(|e| Error::internal(format!("storage: {e}")))?;
    // The scanner reads synchronously; the blob arrives through a bounded channel.
    let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<bytes::Bytes>>(4);
    let scanning = tokio::task::spawn_blocking(move || {
        let mut reader = ChannelReader {
            rx,
            current: bytes::Bytes::new(),
        };
        scanner.scan(&mut reader)
    });
    let mut stream = read.stream;
    while let Some(chunk) = stream.next().await {
        let item = chunk.map_err(|e| std::io::Error::other(e.to_string()));
        let stop = item.is_err();
        let tx2 = tx.clone();
        let sent = tokio::task::spawn_blocking(move || tx2.send(item).is_ok())
            .await
            .unwrap_or(false);
        if !sent || stop {
            break;
        }
    }
    drop(tx);
    let verdict = scanning
        .await
        .map_err(|e| Error::internal(format!("scan task: {e}")))?
        .map_err(|e| Error::internal(format!("scanner: {e}")))?;
    match verdict {
        Verdict::Clean => set_av(ctx, version_id, "allowed", None).await,
        Verdict::Infected(sig) => set_av(ctx, version_id, "disallowed", Some(sig)).await,
    }
}

struct ChannelReader {
    rx: std::sync::mpsc::Receiver<std::io::Result<bytes::Bytes>>,
    current: bytes::Bytes,
}

impl std::io::Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.recv() {
                Ok(Ok(b)) => self.current = b,
                Ok(Err(e)) => return Err(e),
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current = self.current.slice(n..);
        Ok(n)
    }
}

async fn set_av(ctx: &Ctx, version_id: &str, status: &str, sig: Option<String>) -> Result<()> {
    let vid = version_id.to_string();
    let status = status.to_string();
    ctx.write_owned(move |c| {
        coffer_store::content::set_av_status(c, &vid, &status, sig.as_deref())?;
        let subject = if status == "allowed" {
            "filesystem.version.scanned"
        } else {
            "filesystem.version.quarantine"
        };
        crate::events::record(
            c,
            subject,
            None,
            json!({"versionId": vid, "avStatus": status, "signature": sig}),
        )
    })
    .await
}

/// Previews: PDF, text and common images are shown as they are (`ready`); other types have no
/// preview (`failed`).
async fn preview(ctx: &Ctx, version_id: &str) -> Result<()> {
    let vid = version_id.to_string();
    ctx.write_owned(move |c| {
        let Some(v) = coffer_store::content::version(c, &vid)? else {
            return Ok(());
        };
        let status =
            if coffer_domain::content::serve_inline(&v.mime) || v.mime.starts_with("text/plain") {
                "ready"
            } else {
                "failed"
            };
        coffer_store::content::set_preview(c, &vid, status, None)?;
        Ok(())
    })
    .await
}

/// Ends expired upload sessions and drops their staging; also staging no session names (a
/// node killed between steps).
async fn sweep_uploads(ctx: &Ctx) -> Result<()> {
    let expired = ctx
        .write_owned(|c| {
            let rows = coffer_store::content::expired_uploads(c, now(), 1000)?;
            for u in &rows {
                coffer_store::content::delete_upload(c, u.id)?;
            }
            Ok(rows)
        })
        .await?;
    for u in expired {
        ctx.storage
            .discard_staged(&u.staging)
            .await
            .map_err(|e| Error::internal(format!("storage: {e}")))?;
    }
    let staged = ctx
        .storage
        .list_staged()
        .await
        .map_err(|e| Error::internal(format!("storage: {e}")))?;
    let cutoff = std::time::SystemTime::now() - Duration::from_secs(86_400 * 2);
    for (name, modified) in staged {
        if modified > cutoff {
            continue;
        }
        let n = name.clone();
        let known = ctx
            .blocking(move |ctx| {
                ctx.with_conn(|c| Ok(coffer_store::content::upload_by_staging(c, &n)?.is_some()))
            })
            .await?;
        if !known {
            ctx.storage
                .discard_staged(&name)
                .await
                .map_err(|e| Error::internal(format!("storage: {e}")))?;
        }
    }
    Ok(())
}

/// Deletes blobs no version has referred to for a while.
async fn sweep_blobs(ctx: &Ctx) -> Result<()> {
    let ids = ctx
        .blocking(|ctx| {
            ctx.with_conn(|c| {
                Ok(coffer_store::content::unreferenced_blobs(
                    c,
                    now() - BLOB_GRACE,
                    1000,
                )?)
            })
        })
        .await?;
    for id in ids {
        let i = id.clone();
        let forgotten = ctx
            .write_owned(move |c| Ok(coffer_store::content::forget_blob(c, &i)?))
            .await?;
        if forgotten {
            if let Ok(key) = coffer_storage::BlobKey::parse(&id) {
                ctx.storage
                    .delete(&key)
                    .await
                    .map_err(|e| Error::internal(format!("storage: {e}")))?;
            }
        }
    }
    Ok(())
}

/// Permanently deletes what has been in the trash longer than `trashRetentionDays` (default
/// 30), freeing the blobs of its versions.
async fn purge_trash(ctx: &Ctx) -> Result<()> {
    ctx.write_owned(|c| {
        let days = super::int_setting(c, "trashRetentionDays", 30)?;
        let t = now();
        let purged = coffer_store::content::purge_trash(c, t - days * 86_400, t, 1000)?;
        if purged > 0 {
            crate::events::record(
                c,
                "filesystem.trash.purge",
                None,
                json!({"objects": purged}),
            )?;
        }
        Ok(())
    })
    .await
}

/// Starts the job worker of this node: it queues the periodic jobs, then runs due jobs every
/// second. Runs on its own thread with a small runtime for the blob store.
pub fn spawn(ctx: Ctx) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("coffer-jobs".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    log::error!("job worker: no runtime: {e}");
                    return;
                }
            };
            rt.block_on(async move {
                if let Err(e) = schedule_periodic(&ctx) {
                    log::warn!("job worker: scheduling: {e}");
                }
                let node = ctx.node.clone();
                loop {
                    match run_due(&ctx, &node).await {
                        Ok(_) => {}
                        Err(e) => log::warn!("job worker: {e}"),
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            });
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_caps() {
        assert_eq!(backoff(1), 10);
        assert_eq!(backoff(2), 40);
        assert_eq!(backoff(3), 160);
        assert_eq!(backoff(20), 3600);
    }
}
