//! DLI exports: an administrator asks for one user's activities, files or emails over a range
//! of days; a job on the shared queue (`dli-export`) writes the file into the blob store, and
//! the administrator downloads it, then deletes it.
//!
//! States: `inprocess` → `completed` (the file is written) · `nodata` (nothing in the range) ·
//! `error` (the job failed twice). Deleting is allowed in every state: the record goes, with its
//! blob reference; a job that finds its export gone does nothing, and one that finishes after
//! the export was deleted leaves what it wrote to the blob sweep.
//!
//! Memory stays flat whatever the range holds. The records are read in keyset pages of
//! [`PAGE`]. An `activities` export is a CSV streamed into the blob store as it is made. A
//! `files` or `emails` export is a ZIP, which needs to go back to each entry's header once its
//! bytes are written: it is assembled in a temporary file, each file's content streamed into it
//! from the blob store, and then streamed into the blob store; its `manifest.csv` is gathered in
//! a temporary file of its own until the end.

use crate::content::files::Download;
use crate::content::jobs::Kind;
use crate::platform::auth::SystemAdmin;
use crate::platform::events;
use crate::platform::views::{Link, Listed};
use crate::{now, rfc3339, Ctx, Result};
use bytes::Bytes;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_storage::{BlobKey, PutOutcome, StorageError};
use coffer_store::audit::Activity;
pub use coffer_store::dli_exports::ExportQuery;
use coffer_store::dli_exports::{self as store, Export, NewExport};
use coffer_store::DbConn;
use futures_util::StreamExt;
use serde::Serialize;
use serde_json::json;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use utoipa::ToSchema;

/// The job kind name.
pub const EXPORT: &str = "dli-export";

/// The job kinds of exports.
pub const JOBS: &[Kind] = &[Kind {
    name: EXPORT,
    period: None,
    run: |ctx, payload| Box::pin(run(ctx, payload)),
}];

/// What an export may hold.
pub const TYPES: &[&str] = &["activities", "files", "emails"];

/// Records read per page.
pub const PAGE: i64 = 1000;

/// Failures after which an export is `error`.
const MAX_FAILURES: i64 = 2;

/// An export (`Export`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportView {
    /// The export's id (an integer, as text).
    pub id: String,
    /// The user it is about.
    pub user_id: String,
    /// `activities`, `files` or `emails`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The first day (`YYYY-MM-DD`).
    pub start_date: String,
    /// The last day, included.
    pub end_date: String,
    /// `inprocess`, `completed`, `nodata` or `error`.
    pub status: String,
    /// When it ended (RFC 3339); none while `inprocess`.
    pub generated_date: Option<String>,
    /// The name of its file, once `completed`.
    pub file_name: Option<String>,
    /// Where its file is downloaded, once `completed`.
    #[serde(rename = "downloadURL")]
    pub download_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

impl ExportView {
    pub fn of(e: &Export, base: &str) -> ExportView {
        let done = e.status == "completed";
        ExportView {
            id: e.id.to_string(),
            user_id: e.user_id.clone(),
            kind: e.kind.clone(),
            start_date: e.start_day.clone(),
            end_date: e.end_day.clone(),
            status: e.status.clone(),
            generated_date: e.generated_at.map(rfc3339),
            file_name: e.file_name.clone().filter(|_| done),
            download_url: done.then(|| format!("{base}/rest/dli/exports/{}/content", e.id)),
            links: None,
        }
    }
}

fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

fn export_of(c: &mut DbConn, id: i64) -> Result<Export> {
    store::by_id(c, id)?.ok_or_else(not_found)
}

/// `POST /rest/dli/exports/users/{id}`: one export per type asked for (each once), `inprocess`,
/// each with its job queued. `start_day`/`end_day` are checked `YYYY-MM-DD` days and `kinds`
/// members of [`TYPES`]; an unknown user answers 404 `ERR_ENTITY_NOT_FOUND`.
pub fn create(
    ctx: &Ctx,
    admin: &SystemAdmin,
    user_id: &str,
    start_day: &str,
    end_day: &str,
    kinds: &[String],
) -> Result<Vec<ExportView>> {
    let base = ctx.config.base_url.clone();
    ctx.write(|c| {
        coffer_store::users::by_id(c, user_id)?.ok_or_else(not_found)?;
        let t = now();
        let mut out = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for k in kinds {
            if seen.contains(&k.as_str()) {
                continue;
            }
            seen.push(k);
            let e = store::insert(
                c,
                &NewExport {
                    user_id: user_id.to_string(),
                    requested_by: admin.user_id().to_string(),
                    kind: k.clone(),
                    start_day: start_day.to_string(),
                    end_day: end_day.to_string(),
                    status: "inprocess".into(),
                    created_at: t,
                },
            )?;
            crate::content::jobs::enqueue(c, EXPORT, &e.id.to_string(), t)?;
            // The investigated user is named as `targetUserId`, not `userId`: the export is the
            // administrator's activity, not one of the user's.
            events::record(
                c,
                "dli.export.create",
                Some(admin.user_id()),
                json!({"objectKind": "export", "objectId": e.id.to_string(),
                    "targetUserId": user_id, "type": k, "startDate": start_day,
                    "endDate": end_day}),
            )?;
            out.push(ExportView::of(&e, &base));
        }
        Ok(out)
    })
}

/// `GET /rest/dli/exports`: a page of exports, newest first. Records the read.
pub fn list(ctx: &Ctx, admin: &SystemAdmin, q: &ExportQuery) -> Result<Listed<ExportView>> {
    let base = ctx.config.base_url.clone();
    ctx.write(|c| {
        super::record_list(c, admin, "exports", "export")?;
        let page = store::list(c, q)?;
        Ok(Listed {
            items: page
                .items
                .iter()
                .map(|e| ExportView::of(e, &base))
                .collect(),
            total: page.total,
            offset: q.offset,
            limit: q.limit,
        })
    })
}

/// `GET /rest/dli/exports/{id}`. Records the read.
pub fn get(ctx: &Ctx, admin: &SystemAdmin, id: i64) -> Result<ExportView> {
    let base = ctx.config.base_url.clone();
    ctx.write(|c| {
        let e = export_of(c, id)?;
        super::record_read(c, admin, "export", "export", &id.to_string())?;
        Ok(ExportView::of(&e, &base))
    })
}

/// `DELETE /rest/dli/exports/{id}`: the record and, when nothing else counts it, its blob go
/// at once, in any state.
pub fn delete(ctx: &Ctx, admin: &SystemAdmin, id: i64) -> Result<()> {
    let storage = ctx.storage.clone();
    ctx.write(|c| {
        let e = export_of(c, id)?;
        store::delete(c, id)?;
        if let Some(b) = &e.blob_id {
            coffer_store::content::release_blob(c, b, now())?;
            crate::content::blobs::delete_unreferenced(c, &storage, b)?;
        }
        events::record(
            c,
            "dli.export.delete",
            Some(admin.user_id()),
            json!({"objectKind": "export", "objectId": id.to_string(),
                "targetUserId": e.user_id, "type": e.kind, "status": e.status}),
        )
    })
}

/// `GET /rest/dli/exports/{id}/content`: what to stream. An export that is not `completed` has
/// no content yet (404 `ERR_ENTITY_NOT_FOUND`). Records the read.
pub fn content(ctx: &Ctx, admin: &SystemAdmin, id: i64) -> Result<Download> {
    ctx.write(|c| {
        let e = export_of(c, id)?;
        let (Some(name), Some(blob), Some(size), "completed") =
            (e.file_name, e.blob_id, e.size, e.status.as_str())
        else {
            return Err(ApiError::new(ErrorCode::EntityNotFound)
                .with_message(format!(
                    "The export has no content ({}): only a completed export has.",
                    e.status
                ))
                .into());
        };
        super::record_read(c, admin, "export content", "export", &id.to_string())?;
        let mime = if e.kind == "activities" {
            "text/csv"
        } else {
            "application/zip"
        };
        Ok(Download {
            file_id: id.to_string(),
            version_id: format!("export-{id}"),
            name,
            mime: mime.into(),
            size,
            blob,
            owner_id: e.user_id,
            preview: false,
        })
    })
}

/// The Unix time of a `YYYY-MM-DD` day's midnight (UTC).
fn midnight(day: &str) -> Result<i64> {
    let fmt = time::macros::format_description!("[year]-[month]-[day]");
    time::Date::parse(day, &fmt)
        .map(|d| d.midnight().assume_utc().unix_timestamp())
        .map_err(|e| Error::internal_in("export day", e))
}

/// Runs the export job `payload` names (its id).
async fn run(ctx: &Ctx, payload: &str) -> Result<()> {
    let Ok(id) = payload.parse::<i64>() else {
        return Ok(());
    };
    let found = ctx
        .blocking(move |ctx| ctx.with_conn(|c| Ok(store::by_id(c, id)?)))
        .await?;
    let Some(e) = found.filter(|e| e.status == "inprocess") else {
        return Ok(());
    };
    match produce(ctx, &e).await {
        Ok(written) => settle(ctx, &e, written).await,
        Err(err) => {
            let failures = ctx
                .write_owned(move |c| Ok(store::failed_attempt(c, id)?))
                .await?;
            if failures < MAX_FAILURES {
                return Err(err);
            }
            log::warn!("DLI export {id} failed for good: {err}");
            ctx.write_owned(move |c| {
                if store::finish(c, id, "error", None, now())? {
                    finished(c, id, "error")?;
                }
                Ok(())
            })
            .await
        }
    }
}

/// Records that an export ended.
fn finished(c: &mut DbConn, id: i64, status: &str) -> Result<()> {
    events::record(
        c,
        "dli.export.complete",
        None,
        json!({"objectKind": "export", "objectId": id.to_string(), "status": status}),
    )
}

/// What a job wrote: the file's name and what the blob store made of it.
struct Written {
    name: String,
    put: PutOutcome,
}

/// Ends the export with what was written (or `nodata`), unless it was deleted meanwhile; then
/// the new blob is left to the blob sweep.
async fn settle(ctx: &Ctx, e: &Export, written: Option<Written>) -> Result<()> {
    let id = e.id;
    let storage = ctx.storage.clone();
    ctx.write_owned(move |c| {
        let t = now();
        let Some(w) = written else {
            if store::finish(c, id, "nodata", None, t)? {
                finished(c, id, "nodata")?;
            }
            return Ok(());
        };
        let key = w.put.key.to_string();
        let size = w.put.size as i64;
        let live = store::by_id(c, id)?.is_some_and(|e| e.status == "inprocess");
        if !live {
            if coffer_store::content::blob(c, &key)?.is_none() {
                coffer_store::content::unreferenced_blob(c, &key, size, &w.put.md5, t)?;
            }
            return Ok(());
        }
        crate::content::blobs::reference_stored(c, &storage, &key, size, &w.put.md5, t)?;
        store::finish(c, id, "completed", Some((&w.name, &key, size)), t)?;
        finished(c, id, "completed")
    })
    .await
}

/// Writes the export's file; `None` when the range holds nothing.
async fn produce(ctx: &Ctx, e: &Export) -> Result<Option<Written>> {
    let since = midnight(&e.start_day)?;
    let until = midnight(&e.end_day)? + 86_400;
    let uid = e.user_id.clone();
    let email = ctx
        .blocking(move |ctx| {
            ctx.with_conn(|c| Ok(coffer_store::users::by_id(c, &uid)?.map(|u| u.email)))
        })
        .await?
        .unwrap_or_else(|| e.user_id.clone());
    let ext = if e.kind == "activities" { "csv" } else { "zip" };
    let name = format!(
        "{}_{}_{}_{}.{ext}",
        e.kind,
        safe_name(&email),
        e.start_day,
        e.end_day
    );
    let put = match e.kind.as_str() {
        "activities" => activities(ctx, &e.user_id, since, until).await?,
        "files" => files(ctx, &e.user_id, since, until).await?,
        "emails" => emails(ctx, &e.user_id, since, until).await?,
        other => return Err(Error::internal(format!("unknown export type {other}"))),
    };
    Ok(put.map(|put| Written { name, put }))
}

fn storage_error(e: StorageError) -> Error {
    Error::internal_in("storage", e)
}

fn io_error(e: impl std::fmt::Display) -> Error {
    Error::internal(format!("writing the export: {e}"))
}

/// One CSV field: quoted when it holds a separator, a quote or a line break; a text that a
/// spreadsheet would read as a formula is prefixed with `'`.
fn field(out: &mut String, v: &str) {
    let formula = v.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let quote = formula || v.contains([',', '"', '\n', '\r']);
    if quote {
        out.push('"');
    }
    if formula {
        out.push('\'');
    }
    for ch in v.chars() {
        if ch == '"' {
            out.push('"');
        }
        out.push(ch);
    }
    if quote {
        out.push('"');
    }
}

/// One CSV line of `fields`.
fn line(out: &mut String, fields: &[&str]) {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        field(out, f);
    }
    out.push_str("\r\n");
}

/// The columns of an `activities` export.
pub const ACTIVITY_COLUMNS: &[&str] = &[
    "id",
    "created",
    "event",
    "type",
    "message",
    "user",
    "successful",
    "objectId",
    "objectName",
    "objectKind",
    "inDirectUsers",
    "transactionId",
    "data",
];

fn activity_line(out: &mut String, a: &Activity) {
    let seq = a.seq.to_string();
    let created = rfc3339(a.created_at);
    let ok = if a.successful { "1" } else { "0" };
    line(
        out,
        &[
            &seq,
            &created,
            &a.event,
            &a.kind,
            &a.message,
            a.actor_id.as_deref().unwrap_or(""),
            ok,
            a.object_id.as_deref().unwrap_or(""),
            a.object_name.as_deref().unwrap_or(""),
            a.object_kind.as_deref().unwrap_or(""),
            &a.users,
            a.transaction_id.as_deref().unwrap_or(""),
            &a.data,
        ],
    );
}

async fn activity_page(
    ctx: &Ctx,
    user: &str,
    since: i64,
    until: i64,
    after: i64,
) -> Result<Vec<Activity>> {
    let user = user.to_string();
    ctx.blocking(move |ctx| {
        ctx.with_conn(|c| {
            Ok(coffer_store::audit::of_user_after(
                c, &user, since, until, after, PAGE,
            )?)
        })
    })
    .await
}

/// The `activities` CSV, streamed into the blob store page by page.
async fn activities(ctx: &Ctx, user: &str, since: i64, until: i64) -> Result<Option<PutOutcome>> {
    let first = activity_page(ctx, user, since, until, 0).await?;
    if first.is_empty() {
        return Ok(None);
    }
    struct State {
        ctx: Ctx,
        user: String,
        after: i64,
        next: Option<Vec<Activity>>,
        header: bool,
        done: bool,
    }
    let state = State {
        ctx: ctx.clone(),
        user: user.to_string(),
        after: 0,
        next: Some(first),
        header: true,
        done: false,
    };
    let stream = futures_util::stream::unfold(state, move |mut s| async move {
        if s.done {
            return None;
        }
        let rows = match s.next.take() {
            Some(r) => r,
            None => match activity_page(&s.ctx, &s.user, since, until, s.after).await {
                Ok(r) => r,
                Err(e) => {
                    s.done = true;
                    return Some((Err(StorageError::Aborted(e.to_string())), s));
                }
            },
        };
        let mut out = String::new();
        if std::mem::take(&mut s.header) {
            line(&mut out, ACTIVITY_COLUMNS);
        }
        for a in &rows {
            activity_line(&mut out, a);
        }
        s.after = rows.last().map_or(s.after, |a| a.seq);
        if (rows.len() as i64) < PAGE {
            s.done = true;
        }
        if out.is_empty() {
            return None;
        }
        Some((Ok::<_, StorageError>(Bytes::from(out)), s))
    });
    let put = ctx
        .storage
        .put_stream(Box::pin(stream), None)
        .await
        .map_err(storage_error)?;
    Ok(Some(put))
}

/// A name safe as one part of a path in a ZIP: no separators, no control characters, not `.`
/// or `..`, at most 200 characters.
fn safe_name(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c == ':' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .take(200)
        .collect();
    if s.is_empty() || s == "." || s == ".." {
        "_".into()
    } else {
        s
    }
}

/// A ZIP being written to a temporary file, with its manifest gathered beside it.
struct ZipOut {
    zip: zip::ZipWriter<BufWriter<std::fs::File>>,
    manifest: BufWriter<std::fs::File>,
    entries: u64,
}

impl ZipOut {
    fn new(columns: &[&str]) -> Result<ZipOut> {
        let file = tempfile::tempfile().map_err(io_error)?;
        let mut manifest = BufWriter::new(tempfile::tempfile().map_err(io_error)?);
        let mut head = String::new();
        line(&mut head, columns);
        manifest.write_all(head.as_bytes()).map_err(io_error)?;
        Ok(ZipOut {
            zip: zip::ZipWriter::new(BufWriter::new(file)),
            manifest,
            entries: 0,
        })
    }

    fn manifest_line(&mut self, fields: &[&str]) -> Result<()> {
        let mut out = String::new();
        line(&mut out, fields);
        self.manifest.write_all(out.as_bytes()).map_err(io_error)?;
        self.entries += 1;
        Ok(())
    }

    fn start(&mut self, name: &str, size: u64, compress: bool) -> Result<()> {
        let method = if compress {
            zip::CompressionMethod::Deflated
        } else {
            zip::CompressionMethod::Stored
        };
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(method)
            .large_file(size >= u64::from(u32::MAX));
        self.zip.start_file(name, options).map_err(io_error)
    }

    /// A small entry from memory.
    fn put(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.start(name, bytes.len() as u64, true)?;
        self.zip.write_all(bytes).map_err(io_error)
    }

    /// An entry streamed from a blob.
    async fn put_blob(&mut self, ctx: &Ctx, name: &str, blob: &str, size: i64) -> Result<()> {
        self.start(name, size.max(0) as u64, false)?;
        if size <= 0 {
            return Ok(());
        }
        let key = BlobKey::parse(blob).map_err(|e| Error::internal_in("blob key", e))?;
        let mut read = ctx
            .storage
            .get(&key, None)
            .await
            .map_err(storage_error)?
            .stream;
        while let Some(chunk) = read.next().await {
            self.zip
                .write_all(&chunk.map_err(storage_error)?)
                .map_err(io_error)?;
        }
        Ok(())
    }

    /// Adds the manifest, closes the ZIP and streams it into the blob store.
    async fn store(mut self, ctx: &Ctx) -> Result<PutOutcome> {
        let mut manifest = self.manifest.into_inner().map_err(io_error)?;
        manifest.seek(SeekFrom::Start(0)).map_err(io_error)?;
        self.zip
            .start_file(
                "manifest.csv",
                zip::write::SimpleFileOptions::default()
                    .compression_method(zip::CompressionMethod::Deflated)
                    .large_file(true),
            )
            .map_err(io_error)?;
        std::io::copy(&mut manifest, &mut self.zip).map_err(io_error)?;
        let mut file = self
            .zip
            .finish()
            .map_err(io_error)?
            .into_inner()
            .map_err(io_error)?;
        file.seek(SeekFrom::Start(0)).map_err(io_error)?;
        let stream = futures_util::stream::unfold(Some(file), |f| async move {
            let mut f = f?;
            let mut buf = vec![0u8; coffer_storage::READ_CHUNK];
            match f.read(&mut buf) {
                Ok(0) => None,
                Ok(n) => {
                    buf.truncate(n);
                    Some((Ok::<_, StorageError>(Bytes::from(buf)), Some(f)))
                }
                Err(e) => Some((Err(StorageError::Aborted(e.to_string())), None)),
            }
        });
        ctx.storage
            .put_stream(Box::pin(stream), None)
            .await
            .map_err(storage_error)
    }
}

/// The manifest columns of a `files` export.
pub const FILE_COLUMNS: &[&str] = &[
    "entry",
    "fileId",
    "versionId",
    "versionNumber",
    "name",
    "size",
    "mime",
    "created",
    "sha3_256",
    "content",
];

/// Whether a version's bytes go into an export: only content scanned clean, as a DLI download.
fn content_state(av_status: &str) -> &'static str {
    match av_status {
        "allowed" => "included",
        "disallowed" => "quarantined",
        _ => "not scanned",
    }
}

/// The `files` ZIP: each version the user made in the range, under `files/<version id>/<name>`.
async fn files(ctx: &Ctx, user: &str, since: i64, until: i64) -> Result<Option<PutOutcome>> {
    let mut out = ZipOut::new(FILE_COLUMNS)?;
    let mut after: Option<(i64, String)> = None;
    loop {
        let (u, a) = (user.to_string(), after.clone());
        let page = ctx
            .blocking(move |ctx| {
                ctx.with_conn(|c| Ok(store::versions_by(c, &u, since, until, a.as_ref(), PAGE)?))
            })
            .await?;
        for v in &page {
            let state = content_state(&v.av_status);
            let entry = if state == "included" {
                let entry = format!("files/{}/{}", v.id, safe_name(&v.name));
                out.put_blob(ctx, &entry, &v.blob_id, v.size).await?;
                entry
            } else {
                String::new()
            };
            out.manifest_line(&[
                &entry,
                &v.file_id,
                &v.id,
                &v.number.to_string(),
                &v.name,
                &v.size.to_string(),
                &v.mime,
                &rfc3339(v.created_at),
                &v.blob_id,
                state,
            ])?;
        }
        match page.last() {
            Some(v) if page.len() as i64 == PAGE => after = Some((v.created_at, v.id.clone())),
            _ => break,
        }
    }
    if out.entries == 0 {
        return Ok(None);
    }
    out.store(ctx).await.map(Some)
}

/// The manifest columns of an `emails` export.
pub const EMAIL_COLUMNS: &[&str] = &[
    "entry",
    "emailId",
    "mailbox",
    "bucket",
    "date",
    "subject",
    "attachmentId",
    "name",
    "size",
    "sha3_256",
    "content",
];

/// The `emails` ZIP: each email the user sent or received in the range (by the date it reached
/// their mailbox, in the trash too) as `emails/<id>/<sent|received>/email.json`, the email as
/// their mailbox shows it, with its attachments under `attachments/<attachment id>/<name>`.
async fn emails(ctx: &Ctx, user: &str, since: i64, until: i64) -> Result<Option<PutOutcome>> {
    let mut out = ZipOut::new(EMAIL_COLUMNS)?;
    let mut after: Option<(i64, String, String)> = None;
    loop {
        let (u, a) = (user.to_string(), after.clone());
        let (rows, views, attachments) = ctx
            .blocking(move |ctx| {
                ctx.read(|c| {
                    let rows = store::mail_of(c, &u, since, until, a.as_ref(), PAGE)?;
                    let views = crate::mail::views(c, &rows, true, &u)?;
                    let mut attachments = Vec::with_capacity(rows.len());
                    for (_, e) in &rows {
                        attachments.push(coffer_store::emails::attachments(c, &e.id)?);
                    }
                    Ok((rows, views, attachments))
                })
            })
            .await?;
        for (((entry, e), view), files) in rows.iter().zip(&views).zip(&attachments) {
            let mailbox = if entry.role == "s" {
                "sent"
            } else {
                "received"
            };
            let dir = format!("emails/{}/{mailbox}", e.id);
            let json = serde_json::to_vec_pretty(view).map_err(io_error)?;
            let name = format!("{dir}/email.json");
            out.put(&name, &json)?;
            let date = rfc3339(entry.created_at);
            out.manifest_line(&[
                &name,
                &e.id,
                mailbox,
                &view.bucket,
                &date,
                &e.subject,
                "",
                "",
                "",
                "",
                "",
            ])?;
            for a in files {
                let av = ctx
                    .blocking({
                        let vid = a.version_id.clone();
                        move |ctx| ctx.with_conn(|c| Ok(coffer_store::content::version(c, &vid)?))
                    })
                    .await?
                    .map_or_else(|| "allowed".to_string(), |v| v.av_status);
                let state = content_state(&av);
                let entry_name = if state == "included" {
                    let n = format!("{dir}/attachments/{}/{}", a.id, safe_name(&a.name));
                    out.put_blob(ctx, &n, &a.blob_id, a.size).await?;
                    n
                } else {
                    String::new()
                };
                out.manifest_line(&[
                    &entry_name,
                    &e.id,
                    mailbox,
                    &view.bucket,
                    &date,
                    &e.subject,
                    &a.id,
                    &a.name,
                    &a.size.to_string(),
                    &a.blob_id,
                    state,
                ])?;
            }
        }
        match rows.last() {
            Some((entry, _)) if rows.len() as i64 == PAGE => {
                after = Some((entry.created_at, entry.email_id.clone(), entry.role.clone()))
            }
            _ => break,
        }
    }
    if out.entries == 0 {
        return Ok(None);
    }
    out.store(ctx).await.map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_and_formulas_defused() {
        let mut s = String::new();
        line(
            &mut s,
            &["plain", "a,b", "say \"hi\"", "=1+2", "two\nlines"],
        );
        assert_eq!(
            s,
            "plain,\"a,b\",\"say \"\"hi\"\"\",\"'=1+2\",\"two\nlines\"\r\n"
        );
    }

    #[test]
    fn names_in_the_zip_stay_one_part_of_a_path() {
        assert_eq!(safe_name("../etc/passwd"), ".._etc_passwd");
        assert_eq!(safe_name(".."), "_");
        assert_eq!(safe_name(""), "_");
        assert_eq!(safe_name("a\\b:c\u{7}"), "a_b_c_");
        assert_eq!(safe_name("report.pdf"), "report.pdf");
    }
}
