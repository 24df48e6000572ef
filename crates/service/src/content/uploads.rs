//! Uploads: one-shot bodies and the chunk protocol. Bytes stream to the blob store as they
//! arrive (never whole in memory); the database learns of them only once they are stored, in
//! one transaction ([`super::files::commit`]).
//!
//! Chunked sessions: `initiate` checks the target, the size and the quota before any byte and
//! opens a session whose staging lives in the blob store, so that any node takes the next
//! chunk. Chunks are numbered from 1 and taken in order; the repeat of the last accepted chunk
//! is an idempotent retry. A chunk is recorded only after its bytes are staged, so a node killed
//! mid-chunk leaves the session where it was: the client resends that chunk.

use super::files::{self, Stored, Target};
use super::views::{FileView, UploadConfig, UploadView};
use super::{storage_error, TIMED_OUT};
use crate::platform::views::Listed;
use crate::{now, Ctx, Result};
use bytes::Bytes;
use coffer_domain::content::{self as rules, ChunkDecision, ChunkDecoder, ChunkMeta, UploadState};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_storage::StorageError;
use coffer_store::models::{NewUpload, Object, Upload};
use coffer_store::DbConn;
use futures_util::Stream;
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};

/// What `initiateUpload` carries.
#[derive(Debug, Clone, Default)]
pub struct InitiateInput {
    pub filename: String,
    pub total_size: Option<i64>,
    pub total_chunks: Option<i64>,
    pub client_created: Option<i64>,
    pub client_modified: Option<i64>,
    pub tracking_id: Option<String>,
}

/// What becomes of a finished upload's file besides its folder, for a session opened onto a
/// target ([`initiate_onto`]): the core calls it in the transaction that records the file, so
/// the file and its use are one change, and knows nothing of what a target is. The area that
/// owns the targets provides it at start-up ([`Completion::set`]): the mail area attaches the
/// file to the draft email the target names (web-form submissions are draft emails too).
pub type OnComplete = fn(&mut DbConn, &str, &Object) -> Result<()>;

/// A kind of target another area owns, told apart by the prefix of its target strings (e.g.
/// `rf:` for request-file links): its completion, and who the file's events name as having
/// sent it instead of the session's user (`None`: someone without an account).
#[derive(Clone, Copy)]
pub struct TargetKind {
    pub prefix: &'static str,
    pub complete: OnComplete,
    pub actor: fn(&mut DbConn, &str) -> Result<Option<String>>,
}

/// This server's [`OnComplete`] ([`crate::Ctx::upload_completion`]): the one for targets
/// without a registered prefix (draft emails), and the [`TargetKind`]s areas added.
#[derive(Default)]
pub struct Completion {
    plain: RwLock<Option<OnComplete>>,
    kinds: RwLock<Vec<TargetKind>>,
}

impl Completion {
    /// Makes `f` the completion of every session opened onto a target no kind claims.
    pub fn set(&self, f: OnComplete) {
        *self.plain.write().unwrap_or_else(|e| e.into_inner()) = Some(f);
    }

    /// Adds a kind of target (a second one with the same prefix replaces the first).
    pub fn add(&self, kind: TargetKind) {
        let mut kinds = self.kinds.write().unwrap_or_else(|e| e.into_inner());
        kinds.retain(|k| k.prefix != kind.prefix);
        kinds.push(kind);
    }

    /// The kind that claims `target`, if any.
    pub fn kind(&self, target: &str) -> Option<TargetKind> {
        self.kinds
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|k| target.starts_with(k.prefix))
            .copied()
    }

    /// The completion an area provided. A session has a target only when an area opened it,
    /// so none here means the server was wired without that area: the upload fails whole.
    fn get(&self, target: &str) -> Result<OnComplete> {
        if let Some(k) = self.kind(target) {
            return Ok(k.complete);
        }
        (*self.plain.read().unwrap_or_else(|e| e.into_inner()))
            .ok_or_else(|| Error::internal("an upload has a target but no area completes it"))
    }
}

fn upload_view(ctx: &Ctx, u: &Upload) -> UploadView {
    UploadView::of(u, &ctx.config.base_url, &ctx.node)
}

/// Opens a chunked upload into a folder (`file_id` None) or as a new version of a file.
pub fn initiate(
    ctx: &Ctx,
    user_id: &str,
    folder_id: Option<&str>,
    file_id: Option<&str>,
    input: &InitiateInput,
) -> Result<UploadView> {
    initiate_for(ctx, user_id, folder_id, file_id, None, input)
}

/// Opens a chunked upload into `folder` onto `target`: when it completes, the file goes on to
/// the [`Completion`] an area provided (a draft email: the mail area's attachment upload and a
/// web-form submission's public upload). `user_id` is the one whose folder and quota take the
/// file; the caller checked that the target is theirs to use.
pub fn initiate_onto(
    ctx: &Ctx,
    user_id: &str,
    folder: &str,
    target: &str,
    input: &InitiateInput,
) -> Result<UploadView> {
    initiate_for(ctx, user_id, Some(folder), None, Some(target), input)
}

fn initiate_for(
    ctx: &Ctx,
    user_id: &str,
    folder_id: Option<&str>,
    file_id: Option<&str>,
    onto: Option<&str>,
    input: &InitiateInput,
) -> Result<UploadView> {
    if let Some(n) = input.total_chunks {
        if n < 1 {
            return Err(ApiError::field(ErrorCode::InputMinValue, "totalChunks").into());
        }
    }
    if let Some(n) = input.total_size {
        if n < 0 {
            return Err(ApiError::field(ErrorCode::InputMinValue, "totalSize").into());
        }
    }
    let target = match (folder_id, file_id) {
        (_, Some(f)) => Target::File {
            file_id: f.to_string(),
        },
        (Some(f), None) => Target::Folder {
            folder_id: f.to_string(),
            name: input.filename.clone(),
            disable_auto_version: false,
        },
        (None, None) => return Err(super::not_found()),
    };
    if folder_id.is_some() || !input.filename.is_empty() {
        rules::validate_name(&input.filename)?;
    }
    ctx.write(|c| {
        let (_, limits) = files::check_target(c, user_id, &target, input.total_size)?;
        let filename = match &target {
            Target::File { file_id } => coffer_store::content::object(c, file_id)?
                .map(|o| o.name)
                .unwrap_or_default(),
            Target::Folder { name, .. } => name.clone(),
        };
        let t = now();
        let id = coffer_store::content::insert_upload(
            c,
            &NewUpload {
                user_id: user_id.to_string(),
                folder_id: folder_id.filter(|_| file_id.is_none()).map(str::to_string),
                file_id: file_id.map(str::to_string),
                filename,
                staging: uuid::Uuid::new_v4().simple().to_string(),
                total_size: input.total_size,
                total_chunks: input.total_chunks,
                client_created_at: input.client_created,
                client_modified_at: input.client_modified,
                disable_auto_version: false,
                tracking_id: input.tracking_id.clone(),
                created_at: t,
                updated_at: t,
                expires_at: t + limits.upload_timeout,
                email_id: onto.map(str::to_string),
            },
        )?;
        let u = coffer_store::content::upload(c, id)?.ok_or_else(super::not_found)?;
        Ok(upload_view(ctx, &u))
    })
}

/// A session of the caller's that has not expired; anyone else's answers 404.
fn own_session(c: &mut coffer_store::DbConn, user_id: &str, id: i64) -> Result<Upload> {
    coffer_store::content::upload(c, id)?
        .filter(|u| u.user_id == user_id && u.expires_at >= now())
        .ok_or_else(super::not_found)
}

pub fn get(ctx: &Ctx, user_id: &str, id: i64) -> Result<UploadView> {
    ctx.with_conn(|c| Ok(upload_view(ctx, &own_session(c, user_id, id)?)))
}

pub fn list(ctx: &Ctx, user_id: &str, offset: i64, limit: i64) -> Result<Listed<UploadView>> {
    ctx.with_conn(|c| {
        let page = coffer_store::content::uploads_of(c, user_id, offset, limit)?;
        Ok(Listed {
            items: page
                .items
                .iter()
                .filter(|u| u.expires_at >= now())
                .map(|u| upload_view(ctx, u))
                .collect(),
            total: page.total,
            offset,
            limit,
        })
    })
}

/// Ends a session and drops what it staged.
pub async fn delete(ctx: &Ctx, user_id: &str, id: i64) -> Result<()> {
    let user = user_id.to_string();
    let staging = ctx
        .blocking(move |ctx| {
            ctx.write(|c| {
                let u = own_session(c, &user, id)?;
                coffer_store::content::delete_upload(c, id)?;
                Ok(u.staging)
            })
        })
        .await?;
    ctx.storage
        .discard_staged(&staging)
        .await
        .map_err(storage_error)
}

pub fn config(ctx: &Ctx) -> Result<UploadConfig> {
    ctx.with_conn(|c| {
        let l = super::limits(c)?;
        Ok(UploadConfig {
            active: 1,
            upload_chunk_max: l.upload_chunk_max,
            upload_timeout: l.upload_timeout,
            max_upload_size: l.max_upload_size,
            message: String::new(),
        })
    })
}

/// What a chunk request answers.
#[derive(Debug)]
pub enum ChunkOutcome {
    /// 200 with the session.
    Progress(UploadView),
    /// 201 with the file the last chunk completed.
    Done(FileView),
}

/// A failure reading a request body (the client went away, or stalled past the body timeout).
#[derive(Debug)]
pub struct BodyError(pub std::io::Error);

impl From<BodyError> for StorageError {
    fn from(e: BodyError) -> StorageError {
        if e.0.kind() == std::io::ErrorKind::TimedOut {
            StorageError::Aborted(format!("{TIMED_OUT}: {}", e.0))
        } else {
            StorageError::Aborted(e.0.to_string())
        }
    }
}

/// The body of a request as a stream of bytes, as the HTTP layer reads it.
pub type Body = Pin<Box<dyn Stream<Item = std::result::Result<Bytes, BodyError>>>>;

/// A body stream that decodes a chunk (`compressionMode`) as it passes, bounded by the sizes
/// the chunk declared. A refusal is kept in `error` (the store only sees an I/O error).
struct Decoding {
    inner: Body,
    decoder: Option<ChunkDecoder>,
    received: u64,
    produced: u64,
    error: Arc<Mutex<Option<ApiError>>>,
    counts: Arc<Mutex<(u64, u64)>>,
}

impl Decoding {
    fn fail(&mut self, e: ApiError) -> Poll<Option<std::result::Result<Bytes, BodyError>>> {
        if let Ok(mut slot) = self.error.lock() {
            *slot = Some(e);
        }
        self.decoder = None;
        Poll::Ready(Some(Err(BodyError(std::io::Error::other("chunk refused")))))
    }
}

impl Stream for Decoding {
    type Item = std::result::Result<Bytes, BodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if self.decoder.is_none() {
                return Poll::Ready(None);
            }
            match self.inner.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(b))) => {
                    self.received += b.len() as u64;
                    let Some(d) = self.decoder.as_mut() else {
                        return Poll::Ready(None);
                    };
                    // Uncompressed bytes go on as they came: no copy of every byte.
                    match d.pass_through(b.len() as u64) {
                        Ok(true) => {
                            self.produced += b.len() as u64;
                            return Poll::Ready(Some(Ok(b)));
                        }
                        Ok(false) => {}
                        Err(e) => return self.fail(e),
                    }
                    let mut out = Vec::new();
                    let fed = match self.decoder.as_mut() {
                        Some(d) => d.feed(&b, &mut out),
                        None => return Poll::Ready(None),
                    };
                    if let Err(e) = fed {
                        return self.fail(e);
                    }
                    if out.is_empty() {
                        continue;
                    }
                    self.produced += out.len() as u64;
                    return Poll::Ready(Some(Ok(Bytes::from(out))));
                }
                Poll::Ready(None) => {
                    let Some(d) = self.decoder.take() else {
                        return Poll::Ready(None);
                    };
                    let mut out = Vec::new();
                    if let Err(e) = d.finish(&mut out) {
                        return self.fail(e);
                    }
                    self.produced += out.len() as u64;
                    let counts = (self.received, self.produced);
                    if let Ok(mut slot) = self.counts.lock() {
                        *slot = counts;
                    }
                    if out.is_empty() {
                        return Poll::Ready(None);
                    }
                    return Poll::Ready(Some(Ok(Bytes::from(out))));
                }
            }
        }
    }
}

/// Takes one chunk of a session: checks it against the session, stages its decoded bytes, then
/// records it; the last one turns the staged chunks into the file.
pub async fn put_chunk(
    ctx: &Ctx,
    user_id: &str,
    id: i64,
    meta: ChunkMeta,
    body: Body,
) -> Result<ChunkOutcome> {
    let user = user_id.to_string();
    let m = meta;
    let (upload, decision) = ctx
        .blocking(move |ctx| {
            ctx.with_conn(|c| {
                let u = own_session(c, &user, id)?;
                let limits = super::limits(c)?;
                let state = UploadState {
                    total_chunks: u.total_chunks.map(|n| n as u32),
                    total_size: u.total_size.map(|n| n as u64),
                    uploaded_chunks: u.uploaded_chunks as u32,
                    uploaded_size: u.uploaded_size as u64,
                    last_chunk_size: None,
                };
                let d = if u.result_file_id.is_some() {
                    // Finished: only the repeat of the last chunk is answered (with the file).
                    match m.index {
                        Some(i) if i as i64 == u.uploaded_chunks => ChunkDecision::RepeatOfLast,
                        None => ChunkDecision::RepeatOfLast,
                        _ => {
                            return Err(ApiError::field(ErrorCode::InvalidParameter, "index")
                                .with_message("The upload is complete.")
                                .into())
                        }
                    }
                } else {
                    rules::check_chunk(&state, &m, limits.upload_chunk_max as u64)?
                };
                Ok((u, d))
            })
        })
        .await?;
    let (index, completes) = match decision {
        ChunkDecision::RepeatOfLast => return answer_session(ctx, user_id, &upload).await,
        ChunkDecision::Accept { index, completes } => (index, completes),
    };
    let error = Arc::new(Mutex::new(None));
    let counts = Arc::new(Mutex::new((0, 0)));
    let decoding = Decoding {
        inner: body,
        decoder: Some(ChunkDecoder::new(
            meta.compression,
            meta.original_size,
            meta.compression_size,
        )),
        received: 0,
        produced: 0,
        error: error.clone(),
        counts: counts.clone(),
    };
    let staged = ctx
        .storage
        .stage_chunk(&upload.staging, index, decoding, Some(meta.original_size))
        .await;
    let refused = error.lock().ok().and_then(|mut e| e.take());
    if let Some(e) = refused {
        return Err(e.into());
    }
    let size = match staged {
        Ok(n) => n,
        Err(StorageError::TooLarge) => {
            return Err(ApiError::field(ErrorCode::InvalidParameter, "originalSize").into())
        }
        Err(e) => return Err(storage_error(e)),
    };
    let (received, produced) = counts.lock().map(|c| *c).unwrap_or((0, 0));
    rules::check_received(&meta, received, produced.max(size))?;
    // Record the chunk, unless another request took the same one meanwhile.
    let user = user_id.to_string();
    let seen = upload.uploaded_chunks;
    let advanced = ctx
        .write_owned(move |c| {
            let limits = super::limits(c)?;
            let t = now();
            Ok(coffer_store::content::advance_upload(
                c,
                id,
                seen,
                size as i64,
                t,
                t + limits.upload_timeout,
            )?)
        })
        .await?;
    if !advanced || !completes {
        let u = ctx
            .blocking(move |ctx| ctx.with_conn(|c| own_session(c, &user, id)))
            .await?;
        return Ok(ChunkOutcome::Progress(upload_view(ctx, &u)));
    }
    complete(ctx, user_id, &upload, index).await
}

/// Turns a session's staged chunks into the file.
async fn complete(ctx: &Ctx, user_id: &str, upload: &Upload, chunks: u32) -> Result<ChunkOutcome> {
    let put = match ctx.storage.commit_staged(&upload.staging, chunks).await {
        Ok(p) => p,
        Err(StorageError::NotFound | StorageError::MissingChunk(_)) => {
            // The staging is gone (a node died between storing the file and recording it):
            // the session cannot complete; it ends here and the client starts again.
            let id = upload.id;
            ctx.write_owned(move |c| Ok(coffer_store::content::delete_upload(c, id)?))
                .await?;
            return Err(ApiError::field(ErrorCode::InvalidParameter, "index")
                .with_message("The upload can no longer be completed; start it again.")
                .into());
        }
        Err(e) => return Err(storage_error(e)),
    };
    let target = match (&upload.file_id, &upload.folder_id) {
        (Some(f), _) => Target::File { file_id: f.clone() },
        (None, Some(folder)) => Target::Folder {
            folder_id: folder.clone(),
            name: upload.filename.clone(),
            disable_auto_version: upload.disable_auto_version,
        },
        (None, None) => return Err(super::not_found()),
    };
    let stored = Stored {
        blob: put.key.to_string(),
        size: put.size as i64,
        md5: put.md5.clone(),
        client_created: upload.client_created_at,
        client_modified: upload.client_modified_at,
    };
    let user = user_id.to_string();
    let ctx2 = ctx.clone();
    let id = upload.id;
    let target_id = upload.email_id.clone();
    let kept = stored.clone();
    let file = match ctx
        .write_owned(move |c| {
            let actor = match target_id
                .as_deref()
                .and_then(|t| ctx2.upload_completion.kind(t).map(|k| (t, k)))
            {
                Some((t, k)) => (k.actor)(c, t)?,
                None => Some(user.clone()),
            };
            let file = files::commit_by(c, &ctx2, &user, actor.as_deref(), &target, &stored)?;
            // The session may have ended while its last chunk was stored (the sweep, a delete,
            // a claimed web-form submission): then no file is made.
            if !coffer_store::content::finish_upload(c, id, &file.id, now())? {
                return Err(super::not_found());
            }
            if let Some(target) = &target_id {
                (ctx2.upload_completion.get(target)?)(c, target, &file)?;
            }
            Ok(file)
        })
        .await
    {
        Ok(f) => f,
        Err(e) => {
            release_unused(ctx, &kept).await;
            return Err(e);
        }
    };
    Ok(ChunkOutcome::Done(
        files::view_as(ctx, user_id, file.id).await?,
    ))
}

/// The answer to the repeat of the last chunk: the file when the session completed, else the
/// session as it stands.
async fn answer_session(ctx: &Ctx, user_id: &str, u: &Upload) -> Result<ChunkOutcome> {
    match &u.result_file_id {
        Some(f) => Ok(ChunkOutcome::Done(
            files::view_as(ctx, user_id, f.clone()).await?,
        )),
        None => Ok(ChunkOutcome::Progress(upload_view(ctx, u))),
    }
}

/// The first step of a one-shot upload: checks the target before any byte, then streams the
/// body into the store within the size and quota limits. [`files::commit_owned`] ends it, once
/// the request's other fields are read.
pub async fn store_body(
    ctx: &Ctx,
    user_id: &str,
    target: &Target,
    size_hint: Option<i64>,
    body: Body,
) -> Result<Stored> {
    let user = user_id.to_string();
    let t = target.clone();
    let (room, max) = ctx
        .blocking(move |ctx| {
            ctx.with_conn(|c| {
                let (room, limits) = files::check_target(c, &user, &t, size_hint)?;
                Ok((room, limits.max_upload_size))
            })
        })
        .await?;
    match ctx.storage.put_stream(body, Some(room as u64)).await {
        Ok(put) => Ok(Stored {
            blob: put.key.to_string(),
            size: put.size as i64,
            md5: put.md5.clone(),
            client_created: None,
            client_modified: None,
        }),
        Err(StorageError::TooLarge) if room >= max => {
            Err(ApiError::field(ErrorCode::LicenseMaxUploadSize, "body").into())
        }
        Err(e) => Err(storage_error(e)),
    }
}

/// Marks stored bytes that no file took (the request failed after they were stored) so that
/// the blob sweep frees them unless another version refers to them by then.
pub async fn release_unused(ctx: &Ctx, stored: &Stored) {
    let s = stored.clone();
    let r = ctx.write_owned(move |c| mark_unused(c, &s)).await;
    if let Err(e) = r {
        log::warn!("could not mark an unused blob for the sweep: {e}");
    }
}

/// [`release_unused`] on the calling thread, which may block.
pub fn release_unused_here(ctx: &Ctx, stored: &Stored) {
    if let Err(e) = ctx.write(|c| mark_unused(c, stored)) {
        log::warn!("could not mark an unused blob for the sweep: {e}");
    }
}

fn mark_unused(c: &mut DbConn, s: &Stored) -> Result<()> {
    if coffer_store::content::blob(c, &s.blob)?.is_none() {
        coffer_store::content::unreferenced_blob(c, &s.blob, s.size, &s.md5, now())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upload_onto_a_target_needs_the_completion_an_area_provided() {
        fn attach(_: &mut DbConn, _: &str, _: &Object) -> Result<()> {
            Ok(())
        }
        fn nobody(_: &mut DbConn, _: &str) -> Result<Option<String>> {
            Ok(None)
        }
        let completion = Completion::default();
        assert!(completion.get("e1").is_err());
        completion.set(attach);
        assert!(completion.get("e1").is_ok());
        assert!(completion.kind("rf:1").is_none());
        completion.add(TargetKind {
            prefix: "rf:",
            complete: attach,
            actor: nobody,
        });
        assert!(completion.kind("rf:1").is_some());
        assert!(completion.kind("e1").is_none());
    }
}
