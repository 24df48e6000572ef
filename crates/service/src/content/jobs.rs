//! The job worker, and the background work of the content core, on the one job queue
//! (`coffer_store::jobs`): virus scans, previews, upload-staging sweeps, blob sweeps and trash
//! retention. Every node runs a worker ([`spawn`]); a job is claimed with a lease, so a dead
//! node's jobs return to the queue. Woken by a queued job within [`JOBS_GATHER`] of its last
//! look, the worker waits out the rest first, so a burst of uploads costs a few claims, not
//! one per file. The worker runs the kinds registered in [`Registry`]: the core's [`KINDS`]
//! and those of the areas above it, which the core never names.

use crate::{now, Ctx, Result};
use coffer_errors::Error;
use coffer_scanner::Verdict;
use coffer_store::models::FileVersion;
use coffer_store::DbConn;
use futures_util::future::LocalBoxFuture;
use futures_util::StreamExt;
use serde_json::json;
use std::io::Read as _;
use std::sync::RwLock;
use std::time::Duration;

pub const SCAN: &str = "scan";
pub const PREVIEW: &str = "preview";
pub const SWEEP_UPLOADS: &str = "sweep-uploads";
pub const SWEEP_BLOBS: &str = "sweep-blobs";
pub const PURGE_TRASH: &str = "purge-trash";

/// Runs one job of a kind, given its payload.
pub type Handler = for<'a> fn(&'a Ctx, &'a str) -> LocalBoxFuture<'a, Result<()>>;

/// A kind of job: its name in the queue, what runs it, and for a periodic job the seconds from
/// one run to the next.
#[derive(Clone, Copy)]
pub struct Kind {
    pub name: &'static str,
    pub period: Option<i64>,
    pub run: Handler,
}

/// The job kinds of the content core.
pub const KINDS: &[Kind] = &[
    Kind {
        name: SCAN,
        period: None,
        run: |ctx, version| Box::pin(scan(ctx, version)),
    },
    Kind {
        name: PREVIEW,
        period: None,
        run: |ctx, version| Box::pin(preview(ctx, version)),
    },
    Kind {
        name: SWEEP_UPLOADS,
        period: Some(600),
        run: |ctx, _| Box::pin(sweep_uploads(ctx)),
    },
    Kind {
        name: SWEEP_BLOBS,
        period: Some(3600),
        run: |ctx, _| Box::pin(sweep_blobs(ctx)),
    },
    Kind {
        name: PURGE_TRASH,
        period: Some(86_400),
        run: |ctx, _| Box::pin(purge_trash(ctx)),
    },
];

/// The job kinds this server runs ([`crate::Ctx::jobs`]): the table the areas register into at
/// start-up, where `cofferd` starts the worker ([`KINDS`] of the content core, and each area
/// above it its own), so that the core runs work of areas it knows nothing of. A job of a kind
/// no area registered fails like a failing job (retried with backoff); a periodic kind whose
/// area is absent is never queued.
#[derive(Default)]
pub struct Registry(RwLock<Vec<Kind>>);

impl Registry {
    /// Adds `kinds`; a kind registered again replaces the earlier entry.
    pub fn register(&self, kinds: &[Kind]) {
        let mut table = self.0.write().unwrap_or_else(|e| e.into_inner());
        for k in kinds {
            table.retain(|t| t.name != k.name);
            table.push(*k);
        }
    }

    fn get(&self, name: &str) -> Option<Kind> {
        let table = self.0.read().unwrap_or_else(|e| e.into_inner());
        table.iter().find(|k| k.name == name).copied()
    }

    fn periodic(&self) -> Vec<&'static str> {
        let table = self.0.read().unwrap_or_else(|e| e.into_inner());
        table
            .iter()
            .filter(|k| k.period.is_some())
            .map(|k| k.name)
            .collect()
    }
}

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
        for kind in ctx.jobs.periodic() {
            if !coffer_store::jobs::pending(c, kind, "")? {
                coffer_store::jobs::enqueue(c, kind, "", t, 3, t)?;
            }
        }
        Ok(())
    })
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
            let kind = ctx.jobs.get(&job.kind);
            let outcome = match kind {
                Some(k) => (k.run)(ctx, &job.payload).await,
                None => Err(Error::internal(format!("unknown job kind {}", job.kind))),
            };
            let period = kind.and_then(|k| k.period);
            let node_s = node.to_string();
            let t = now();
            ctx.write_owned(move |c| {
                match outcome {
                    Ok(()) => {
                        coffer_store::jobs::complete(c, job.id, &node_s)?;
                        // A periodic job queues its next run.
                        if let Some(period) = period {
                            if !coffer_store::jobs::pending(c, &job.kind, "")? {
                                coffer_store::jobs::enqueue(c, &job.kind, "", t + period, 3, t)?;
                            }
                        }
                    }
                    Err(e) => {
                        let text = match &e {
                            Error::Api(a) => a.message.to_string(),
                            Error::Internal(i) => i.report(),
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
    let verdict = read_blocking(ctx, &v.blob_id, move |reader| scanner.scan(reader))
        .await?
        .map_err(|e| Error::internal_in("scanner", e))?;
    match verdict {
        Verdict::Clean => set_av(ctx, version_id, "allowed", None).await,
        Verdict::Infected(sig) => set_av(ctx, version_id, "disallowed", Some(sig)).await,
    }
}

/// Streams a blob to `consume`, which reads it synchronously on a blocking thread. The bytes
/// pass through a bounded channel, so memory stays flat whatever the blob's size.
async fn read_blocking<T, F>(ctx: &Ctx, blob_id: &str, consume: F) -> Result<T>
where
    F: FnOnce(&mut ChannelReader) -> T + Send + 'static,
    T: Send + 'static,
{
    let key =
        coffer_storage::BlobKey::parse(blob_id).map_err(|e| Error::internal_in("blob key", e))?;
    let read = ctx
        .storage
        .get(&key, None)
        .await
        .map_err(|e| Error::internal_in("storage", e))?;
    let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<bytes::Bytes>>(4);
    let consuming = tokio::task::spawn_blocking(move || {
        let mut reader = ChannelReader {
            rx,
            current: bytes::Bytes::new(),
        };
        consume(&mut reader)
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
    consuming
        .await
        .map_err(|e| Error::internal_in("reading task", e))
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
        crate::platform::events::record(
            c,
            subject,
            None,
            json!({"versionId": vid, "avStatus": status, "signature": sig}),
        )
    })
    .await
}

/// The longest a thumbnail may take. The decoder's work is already bounded by the pixel limit;
/// this bounds the wait for it.
const THUMBNAIL_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest a preview converter may run; then it is killed.
const CONVERT_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest file given to a preview converter.
const CONVERT_MAX_INPUT: u64 = 256 * 1024 * 1024;
/// The largest PDF a preview converter may produce.
const CONVERT_MAX_OUTPUT: u64 = 64 * 1024 * 1024;

/// What the preview job decided for a version.
enum Preview {
    /// Shown as it is (PDF, audio, video, text, images that are not thumbnailed).
    AsIs,
    /// A preview blob was made and stored (a PNG thumbnail or a converted PDF).
    Made(coffer_storage::PutOutcome),
    /// No preview, and why (kept as `failed`, not retried).
    Failed(String),
}

/// Whether a type's preview is the file itself (PDF, audio, video, plain text, images shown
/// without a thumbnail).
fn shown_as_is(mime: &str) -> bool {
    coffer_domain::content::serve_inline(mime) || mime.starts_with("text/plain")
}

/// Whether a version of this type can have a preview on this server: an image to thumbnail, a
/// type shown as it is, or any type when a converter is configured. A version of any other type
/// starts as `failed` and queues no preview job, which could only decide the same (on a run
/// of small puts that job was three write transactions per file for nothing).
pub fn may_have_preview(ctx: &Ctx, mime: &str) -> bool {
    coffer_extract::is_thumbnailable(mime)
        || shown_as_is(mime)
        || ctx.config.preview_converter.is_some()
}

/// Decides a version's preview. Images (PNG, JPEG, GIF, WebP, BMP) get a PNG thumbnail made by
/// `coffer_extract`; PDF, audio, video and plain text are shown as they are; other types are
/// converted to PDF by the operator's converter when one is configured, else have none
/// (`failed`). A preview that cannot be made is `failed` for good; only storage and database
/// errors fail the job (and retry it).
async fn preview(ctx: &Ctx, version_id: &str) -> Result<()> {
    let vid = version_id.to_string();
    let Some(v) = ctx
        .blocking(move |ctx| ctx.with_conn(|c| Ok(coffer_store::content::version(c, &vid)?)))
        .await?
    else {
        return Ok(());
    };
    let decision = if v.av_status == "disallowed" {
        Preview::Failed("the content is quarantined".into())
    } else if coffer_extract::is_thumbnailable(&v.mime) {
        thumbnail(ctx, &v).await?
    } else if shown_as_is(&v.mime) {
        Preview::AsIs
    } else if let Some(cmd) = &ctx.config.preview_converter {
        convert(ctx, &v, cmd).await?
    } else {
        Preview::Failed(format!("no preview for {}", v.mime))
    };
    if let Preview::Failed(why) = &decision {
        log::info!("preview of version {}: {why}", v.id);
    }
    let vid = version_id.to_string();
    let storage = ctx.storage.clone();
    ctx.write_owned(move |c| {
        let t = now();
        let current = coffer_store::content::version(c, &vid)?.filter(|v| !v.deleted);
        let old = current.as_ref().and_then(|v| v.preview_blob_id.clone());
        let (status, blob) = match &decision {
            Preview::AsIs => ("ready", None),
            Preview::Made(put) => ("ready", Some(put.key.to_string())),
            Preview::Failed(_) => ("failed", None),
        };
        let Some(_) = current else {
            // The version went while the preview was made: leave the new blob to the sweep.
            if let (Preview::Made(put), Some(b)) = (&decision, &blob) {
                if coffer_store::content::blob(c, b)?.is_none() {
                    coffer_store::content::unreferenced_blob(c, b, put.size as i64, &put.md5, t)?;
                }
            }
            // Nothing is left to preview: the decision is final, so no version waits as
            // `pending` once the queue has run.
            coffer_store::content::settle_pending_preview(c, &vid, "failed")?;
            return Ok(());
        };
        if old != blob {
            if let (Preview::Made(put), Some(b)) = (&decision, &blob) {
                super::blobs::reference_stored(c, &storage, b, put.size as i64, &put.md5, t)?;
            }
            if let Some(o) = &old {
                coffer_store::content::release_blob(c, o, t)?;
            }
        }
        coffer_store::content::set_preview(c, &vid, status, blob.as_deref())?;
        Ok(())
    })
    .await
}

/// A PNG thumbnail of an image version, made on a blocking thread within
/// [`coffer_extract::Limits::default`].
async fn thumbnail(ctx: &Ctx, v: &FileVersion) -> Result<Preview> {
    let limits = coffer_extract::Limits::default();
    if v.size < 0 || v.size as u64 > limits.max_input_bytes {
        return Ok(Preview::Failed("the image is too large to preview".into()));
    }
    let max = limits.max_input_bytes;
    let bytes = read_blocking(ctx, &v.blob_id, move |reader| {
        let mut buf = Vec::new();
        reader.take(max + 1).read_to_end(&mut buf).map(|_| buf)
    })
    .await?
    .map_err(|e| Error::internal_in("storage", e))?;
    if bytes.len() as u64 > max {
        return Ok(Preview::Failed("the image is too large to preview".into()));
    }
    let task = tokio::task::spawn_blocking(move || coffer_extract::thumbnail(&bytes, &limits));
    let png = match tokio::time::timeout(THUMBNAIL_TIMEOUT, task).await {
        Err(_) => return Ok(Preview::Failed("the thumbnail took too long".into())),
        Ok(Err(e)) => return Ok(Preview::Failed(format!("the thumbnail task failed: {e}"))),
        Ok(Ok(Err(e))) => return Ok(Preview::Failed(e.to_string())),
        Ok(Ok(Ok(png))) => png,
    };
    store_preview(ctx, png).await
}

async fn store_preview(ctx: &Ctx, content: Vec<u8>) -> Result<Preview> {
    let put = ctx
        .storage
        .put_bytes(bytes::Bytes::from(content))
        .await
        .map_err(|e| Error::internal_in("storage", e))?;
    Ok(Preview::Made(put))
}

/// A PDF of a version made by the operator's converter: the content is written to a file in a
/// new temporary directory, and `CMD <input-file> <output-dir>` must leave a PDF in the output
/// directory within [`CONVERT_TIMEOUT`].
async fn convert(ctx: &Ctx, v: &FileVersion, cmd: &str) -> Result<Preview> {
    if v.size < 0 || v.size as u64 > CONVERT_MAX_INPUT {
        return Ok(Preview::Failed("the file is too large to convert".into()));
    }
    let dir = tempfile::Builder::new()
        .prefix("coffer-preview-")
        .tempdir()
        .map_err(|e| Error::internal_in("a temporary directory", e))?;
    // The original name never reaches the command: only its extension, which converters use
    // to tell formats apart, and only when it is short and alphanumeric.
    let input = dir.path().join(format!("input{}", safe_extension(&v.name)));
    let output = dir.path().join("out");
    let target = input.clone();
    read_blocking(ctx, &v.blob_id, move |reader| -> std::io::Result<u64> {
        let mut file = std::fs::File::create(&target)?;
        std::io::copy(&mut reader.take(CONVERT_MAX_INPUT), &mut file)
    })
    .await?
    .map_err(|e| Error::internal_in("writing the converter's input", e))?;
    let cmd = cmd.to_string();
    let work = dir.path().to_path_buf();
    let ran = tokio::task::spawn_blocking(move || {
        run_converter(&cmd, &input, &output, &work, CONVERT_TIMEOUT)
    })
    .await
    .map_err(|e| Error::internal_in("converter task", e))?;
    drop(dir);
    match ran {
        Ok(pdf) => store_preview(ctx, pdf).await,
        Err(why) => Ok(Preview::Failed(format!("the converter: {why}"))),
    }
}

/// `.docx` for `Report.DOCX`; empty when the name has no short alphanumeric extension.
fn safe_extension(name: &str) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext))
            if !stem.is_empty()
                && (1..=10).contains(&ext.len())
                && ext.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            format!(".{}", ext.to_ascii_lowercase())
        }
        _ => String::new(),
    }
}

/// Runs a converter command line (split on whitespace, never through a shell) with the input
/// file and the output directory as its last two arguments; kills it after `timeout`. Answers
/// the PDF it wrote, or why there is none.
fn run_converter(
    cmdline: &str,
    input: &std::path::Path,
    output: &std::path::Path,
    work: &std::path::Path,
    timeout: Duration,
) -> std::result::Result<Vec<u8>, String> {
    use std::process::{Command, Stdio};
    let mut words = cmdline.split_whitespace();
    let program = words.next().ok_or("the command is empty")?;
    std::fs::create_dir(output).map_err(|e| format!("the output directory: {e}"))?;
    let log_path = work.join("log");
    let log = std::fs::File::create(&log_path).map_err(|e| format!("its log: {e}"))?;
    let log2 = log.try_clone().map_err(|e| format!("its log: {e}"))?;
    let mut child = Command::new(program)
        .args(words)
        .arg(input)
        .arg(output)
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log2))
        .spawn()
        .map_err(|e| format!("{program} did not start: {e}"))?;
    let deadline = std::time::Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("killed after {} s", timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("waiting for it: {e}"));
            }
        }
    };
    if !status.success() {
        let said = std::fs::read(&log_path).unwrap_or_default();
        let said = String::from_utf8_lossy(&said[..said.len().min(300)])
            .trim()
            .to_string();
        return Err(format!("{status}: {said}"));
    }
    // The first regular file named *.pdf (a link is not followed).
    let mut pdfs: Vec<std::path::PathBuf> = std::fs::read_dir(output)
        .map_err(|e| format!("the output directory: {e}"))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| x.eq_ignore_ascii_case("pdf"))
        })
        .collect();
    pdfs.sort();
    let pdf = pdfs.first().ok_or("it wrote no PDF")?;
    let size = std::fs::symlink_metadata(pdf)
        .map_err(|e| format!("its PDF: {e}"))?
        .len();
    if size > CONVERT_MAX_OUTPUT {
        return Err(format!("its PDF is larger than {CONVERT_MAX_OUTPUT} bytes"));
    }
    // Read with the bound as well: the file may still grow.
    let mut bytes = Vec::new();
    std::fs::File::open(pdf)
        .and_then(|f| f.take(CONVERT_MAX_OUTPUT + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("its PDF: {e}"))?;
    if bytes.len() as u64 > CONVERT_MAX_OUTPUT {
        return Err(format!("its PDF is larger than {CONVERT_MAX_OUTPUT} bytes"));
    }
    if !bytes.starts_with(b"%PDF-") {
        return Err("its output is not a PDF".into());
    }
    Ok(bytes)
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
            .map_err(|e| Error::internal_in("storage", e))?;
    }
    let staged = ctx
        .storage
        .list_staged()
        .await
        .map_err(|e| Error::internal_in("storage", e))?;
    // What writes that never finished left in the store's tmp/ (a process killed mid-put).
    let swept = ctx
        .storage
        .sweep_temporaries(Duration::from_secs(86_400))
        .await
        .map_err(|e| Error::internal_in("storage", e))?;
    if swept > 0 {
        log::info!("uploads sweep: removed {swept} abandoned temporary objects");
    }
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
                .map_err(|e| Error::internal_in("storage", e))?;
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
        // Row and bytes go in one transaction (see `super::blobs`).
        let storage = ctx.storage.clone();
        ctx.write_owned(move |c| super::blobs::delete_unreferenced(c, &storage, &id))
            .await?;
    }
    Ok(())
}

/// Permanently deletes what has been in the trash longer than `trashRetentionDays` (default
/// 30), freeing the blobs of its versions.
async fn purge_trash(ctx: &Ctx) -> Result<()> {
    ctx.write_owned(|c| {
        let days = super::setting(c, "trashRetentionDays")?;
        let t = now();
        let purged = coffer_store::content::purge_trash(c, t - days * 86_400, t, 1000)?;
        if purged > 0 {
            crate::platform::events::record(
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

/// How often an idle job worker looks for work on its own: queued jobs wake it (on every node,
/// see `coffer_store::wake`), and it wakes when the earliest queued job falls due.
const JOBS_IDLE: Duration = Duration::from_secs(5);

/// A worker woken within this long of its last look waits for the rest of it first: a burst of
/// uploads (each version queues its text extraction) is then claimed a few jobs at a time,
/// instead of a claim, a run and an empty claim per file taking the database's writer between
/// every two uploads. A job queued after a quiet moment is still looked at at once; a burst adds
/// at most this to a job's start.
const JOBS_GATHER: Duration = Duration::from_millis(50);

/// Starts the job worker of this node: it queues the periodic jobs, then runs due jobs as they
/// are queued or fall due. Runs on its own thread with a small runtime for the blob store.
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
                // Made before the first look, so that no job queued after it goes unnoticed.
                let mut waiter = ctx.db.waiter(coffer_store::wake::Work::Jobs);
                loop {
                    let looked = std::time::Instant::now();
                    match run_due(&ctx, &node).await {
                        Ok(_) => {}
                        Err(e) => log::warn!("job worker: {e}"),
                    }
                    // Sleep until a job is queued (on any node), the earliest queued one falls
                    // due, or the next look of our own (a lease may run out meanwhile).
                    let c = ctx.clone();
                    waiter = match tokio::task::spawn_blocking(move || {
                        let due = c.with_conn(|conn| Ok(coffer_store::jobs::next_due(conn)?));
                        let idle = match due {
                            Ok(Some(at)) => JOBS_IDLE
                                .min(Duration::from_secs(at.saturating_sub(now()).max(0) as u64)),
                            _ => JOBS_IDLE,
                        };
                        if waiter.wait(idle) {
                            if let Some(rest) = JOBS_GATHER.checked_sub(looked.elapsed()) {
                                std::thread::sleep(rest);
                            }
                        }
                        waiter
                    })
                    .await
                    {
                        Ok(w) => w,
                        Err(e) => {
                            log::error!("job worker: {e}");
                            return;
                        }
                    };
                }
            });
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_short_alphanumeric_extension_reaches_a_converter() {
        assert_eq!(safe_extension("Report.DOCX"), ".docx");
        assert_eq!(safe_extension("a.b.odt"), ".odt");
        assert_eq!(safe_extension("noext"), "");
        assert_eq!(safe_extension(".hidden"), "");
        assert_eq!(safe_extension("x.$(rm -rf)"), "");
        assert_eq!(safe_extension("x.verylongextension"), "");
    }

    /// A converter script in `dir`; the body sees the input as `$1` and the output dir as `$2`.
    fn script(dir: &std::path::Path, body: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("convert.sh");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    }

    fn run(
        cmd: &str,
        dir: &std::path::Path,
        timeout: Duration,
    ) -> std::result::Result<Vec<u8>, String> {
        let work = dir.join("work");
        std::fs::create_dir_all(&work).unwrap();
        let _ = std::fs::remove_dir_all(work.join("out"));
        let input = work.join("input.docx");
        std::fs::write(&input, b"PK\x03\x04 a document").unwrap();
        run_converter(cmd, &input, &work.join("out"), &work, timeout)
    }

    #[test]
    fn a_converter_writes_a_pdf_or_fails() {
        let dir = tempfile::tempdir().unwrap();
        let ok = script(
            dir.path(),
            "printf '%%PDF-1.4 from %s' \"$(basename \"$1\")\" > \"$2/input.pdf\"",
        );
        assert_eq!(
            run(&ok, dir.path(), Duration::from_secs(10)).unwrap(),
            b"%PDF-1.4 from input.docx"
        );
        // Arguments of the configured command come first.
        let args = script(dir.path(), "printf '%%PDF-1.4 %s' \"$1\" > \"$3/x.PDF\"");
        assert_eq!(
            run(
                &format!("{args}  --flag"),
                dir.path(),
                Duration::from_secs(10)
            )
            .unwrap(),
            b"%PDF-1.4 --flag"
        );
        let fails = script(dir.path(), "echo broken >&2; exit 3");
        let e = run(&fails, dir.path(), Duration::from_secs(10)).unwrap_err();
        assert!(e.contains("broken"), "{e}");
        let nothing = script(dir.path(), "true");
        assert_eq!(
            run(&nothing, dir.path(), Duration::from_secs(10)).unwrap_err(),
            "it wrote no PDF"
        );
        let not_pdf = script(dir.path(), "echo '<html>' > \"$2/x.pdf\"");
        assert_eq!(
            run(&not_pdf, dir.path(), Duration::from_secs(10)).unwrap_err(),
            "its output is not a PDF"
        );
        let link = script(dir.path(), "ln -s /etc/hostname \"$2/x.pdf\"");
        assert_eq!(
            run(&link, dir.path(), Duration::from_secs(10)).unwrap_err(),
            "it wrote no PDF"
        );
        let slow = script(dir.path(), "exec sleep 30");
        let started = std::time::Instant::now();
        let e = run(&slow, dir.path(), Duration::from_millis(300)).unwrap_err();
        assert!(e.starts_with("killed"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            run("/nonexistent/converter", dir.path(), Duration::from_secs(1))
                .unwrap_err()
                .contains("did not start")
        );
        assert_eq!(
            run("   ", dir.path(), Duration::from_secs(1)).unwrap_err(),
            "the command is empty"
        );
    }

    #[test]
    fn the_registry_runs_the_kinds_areas_registered() {
        let jobs = Registry::default();
        assert!(jobs.get(SCAN).is_none() && jobs.periodic().is_empty());
        jobs.register(KINDS);
        assert!(jobs.get(SCAN).is_some_and(|k| k.period.is_none()));
        assert_eq!(
            jobs.periodic(),
            [SWEEP_UPLOADS, SWEEP_BLOBS, PURGE_TRASH],
            "only periodic kinds are queued by schedule_periodic"
        );
        // An area registering a kind again replaces it; other kinds stay.
        jobs.register(&[Kind {
            name: SWEEP_BLOBS,
            period: None,
            run: |_, _| Box::pin(async { Ok(()) }),
        }]);
        assert_eq!(jobs.periodic(), [SWEEP_UPLOADS, PURGE_TRASH]);
        assert_eq!(jobs.0.read().unwrap().len(), KINDS.len());
    }

    #[test]
    fn backoff_grows_and_caps() {
        assert_eq!(backoff(1), 10);
        assert_eq!(backoff(2), 40);
        assert_eq!(backoff(3), 160);
        assert_eq!(backoff(20), 3600);
    }
}
