//! The full-text index of file text: the `search-extract` job that reads a file's current
//! version into it, rebuilding the index (`cofferd search reindex`), and its state (`cofferd
//! search status`).
//!
//! A new version queues the job by itself (a trigger of migration 000070), so the upload path
//! knows nothing of search. The job reads at most [`coffer_extract::TextLimits`] bytes of the
//! blob, extracts on a blocking thread under a time limit, and records the outcome: `indexed`
//! (the text replaces the file's earlier text), `skipped` (a type without text), or `failed`
//! with the reason (damaged, not what its type says, over a limit), which is never indexed
//! as empty. A storage or database failure fails the job, which the worker retries.

use crate::content::jobs::Kind;
use crate::{now, Ctx, Result};
use coffer_errors::Error;
use coffer_store::search as store;
use futures_util::StreamExt;
use serde::Serialize;
use std::time::Duration;

/// The job kind: its payload is a file id.
pub const EXTRACT: &str = "search-extract";

/// The periodic job that merges the full-text index (SQLite): its payload is empty.
pub const MERGE: &str = "search-merge";

/// The seconds from one merge of the full-text index to the next.
const MERGE_PERIOD: i64 = 600;

/// The pages one step of the merge writes (about 1 MiB of 4 KiB pages): each step is a write
/// transaction of its own, so writers wait for one step at most.
const MERGE_PAGES: i32 = 256;

/// The job kinds of search, registered where the worker starts (`cofferd serve`).
pub const JOBS: &[Kind] = &[
    Kind {
        name: EXTRACT,
        period: None,
        run: |ctx, file_id| Box::pin(extract(ctx, file_id)),
    },
    Kind {
        name: MERGE,
        period: Some(MERGE_PERIOD),
        run: |ctx, _| Box::pin(merge(ctx)),
    },
];

/// Merges each full-text table into one segment, a step at a time, until no step has work
/// left (`coffer_store::search::merge_step`): an index fed file by file otherwise keeps a
/// dozen segments or more, which every query opens again for each range it reads. Returns the
/// steps that did work.
pub async fn merge(ctx: &Ctx) -> Result<()> {
    merge_steps(ctx).await.map(|_| ())
}

/// The most steps one run of [`merge`] takes (about 4 GiB written); the next run goes on.
const MERGE_STEPS: usize = 4096;

/// [`merge`], returning the steps that did work.
pub async fn merge_steps(ctx: &Ctx) -> Result<usize> {
    let mut steps = 0;
    while steps < MERGE_STEPS
        && ctx
            .write_owned(|c| Ok(store::merge_step(c, MERGE_PAGES)?))
            .await?
    {
        steps += 1;
    }
    Ok(steps)
}

/// How long the job waits for an extraction beyond the extractor's own deadline.
const GRACE: Duration = Duration::from_secs(10);

/// The outcome of one extraction, as recorded.
enum Outcome {
    Text(String),
    Skipped(&'static str),
    Failed(String),
}

/// Indexes the text of a file's pending version.
async fn extract(ctx: &Ctx, file_id: &str) -> Result<()> {
    let fid = file_id.to_string();
    let found = ctx
        .blocking(move |ctx| {
            ctx.with_conn(|c| {
                let Some(st) = store::state(c, &fid)? else {
                    return Ok(None);
                };
                if st.state != "pending" {
                    return Ok(None);
                }
                Ok(coffer_store::content::version(c, &st.version_id)?.map(|v| (st, v)))
            })
        })
        .await?;
    let Some((st, v)) = found else {
        return Ok(());
    };
    let limits = coffer_extract::TextLimits::default();
    let outcome = match coffer_extract::text_format(&v.mime, &v.name) {
        _ if v.av_status == "disallowed" => Outcome::Failed("the content is quarantined".into()),
        None => Outcome::Skipped("a type without text"),
        Some(_) if v.size < 0 || v.size as u64 > limits.max_input_bytes => {
            Outcome::Failed(format!(
                "larger than the {} MiB read for search",
                limits.max_input_bytes / (1024 * 1024)
            ))
        }
        Some(format) => {
            let bytes = read(ctx, &v.blob_id, limits.max_input_bytes).await?;
            let wait = limits.max_time + GRACE;
            let task =
                tokio::task::spawn_blocking(move || coffer_extract::text(&bytes, format, &limits));
            match tokio::time::timeout(wait, task).await {
                Err(_) => Outcome::Failed("the extraction took too long".into()),
                Ok(Err(e)) => Outcome::Failed(format!("the extraction task failed: {e}")),
                Ok(Ok(Err(e))) => Outcome::Failed(e.to_string()),
                Ok(Ok(Ok(text))) => Outcome::Text(text),
            }
        }
    };
    let fid = file_id.to_string();
    let vid = st.version_id.clone();
    ctx.write_owned(move |c| {
        let t = now();
        match outcome {
            Outcome::Text(text) => store::put_file_text(c, &fid, &vid, &text, t)?,
            Outcome::Skipped(why) => {
                store::record_without_text(c, &fid, &vid, "skipped", Some(why), t)?
            }
            Outcome::Failed(why) => {
                log::info!("search: no text for file {fid} version {vid}: {why}");
                store::record_without_text(c, &fid, &vid, "failed", Some(&why), t)?
            }
        };
        Ok(())
    })
    .await
}

/// The blob's bytes, at most `max` (the caller checked the version's size already).
async fn read(ctx: &Ctx, blob_id: &str, max: u64) -> Result<Vec<u8>> {
    let key =
        coffer_storage::BlobKey::parse(blob_id).map_err(|e| Error::internal_in("blob key", e))?;
    let got = ctx
        .storage
        .get(&key, None)
        .await
        .map_err(|e| Error::internal_in("storage", e))?;
    let mut out = Vec::new();
    let mut stream = got.stream;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| Error::internal_in("storage", e))?;
        if (out.len() + chunk.len()) as u64 > max {
            return Err(Error::internal("the blob is larger than its version says"));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// Rebuilds the index from what is stored: every email again, every file's current version
/// queued for extraction. Returns the files queued.
pub fn reindex(ctx: &Ctx) -> Result<usize> {
    ctx.write(|c| Ok(store::reindex_all(c, now())?))
}

/// What `cofferd search status` reports.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub pending: i64,
    pub indexed: i64,
    pub failed: i64,
    pub skipped: i64,
    /// Bytes of text held in the index for files.
    pub text_bytes: i64,
    /// Bytes the full-text index takes.
    pub index_bytes: i64,
    /// SQLite: the segments each full-text table holds (one once the periodic merge has run;
    /// more while files are being indexed). Empty on PostgreSQL.
    pub segments: std::collections::BTreeMap<String, i64>,
    /// The failed files with their reasons (at most 100).
    pub failures: Vec<Failure>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub file_id: String,
    pub version_id: String,
    pub error: String,
}

pub fn status(ctx: &Ctx) -> Result<Status> {
    ctx.read(|c| {
        let mut s = Status {
            pending: 0,
            indexed: 0,
            failed: 0,
            skipped: 0,
            text_bytes: 0,
            index_bytes: store::index_bytes(c)?,
            segments: store::segments(c)?.into_iter().collect(),
            failures: Vec::new(),
        };
        for n in store::counts(c)? {
            s.text_bytes += n.text_bytes;
            match n.state.as_str() {
                "pending" => s.pending = n.files,
                "indexed" => s.indexed = n.files,
                "failed" => s.failed = n.files,
                _ => s.skipped = n.files,
            }
        }
        s.failures = store::in_state(c, "failed", 100)?
            .into_iter()
            .map(|f| Failure {
                file_id: f.file_id,
                version_id: f.version_id,
                error: f.error.unwrap_or_default(),
            })
            .collect();
        Ok(s)
    })
}
