//! Transfers between a source and Coffer (`KPTransferStatus`). A transfer into Coffer
//! (`initiateDownload`) is recorded `0` (received) with a job of kind `source-transfer` on the
//! shared queue; the job (`1`, in progress) streams the remote file through the content core's
//! upload rules (the target's permission, `maxUploadSize`, the owner's quota, fingerprints,
//! versions, scanning, events) into the caller's My Folder, then ends `2` (completed) or `99`
//! (failed) with `errCode` 1 credentials refused, 2 not found, 3 too large (upload limit or
//! quota), 4 the remote failed, 5 the scanner refused the content. A node that dies mid-way
//! leaves the job's lease to run out and another node runs it again. Writing a file out to a
//! source (`actions/file`, `actions/files/{id}`) happens within its request and is recorded the
//! same way, completed or failed; so does a check-in (`PATCH /rest/files/{id}/actions/return`),
//! which writes a transferred file back over the remote file it came from. A write over a file
//! the caller holds locked goes through the lock's remote token.

use super::content_id;
use crate::content::files::{self, Stored, Target};
use crate::content::jobs::{self, Kind};
use crate::platform::events;
use crate::{now, Ctx, Result};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_sources::{RemotePath, SourceError};
use coffer_store::sources::{SourceLock, Transfer};
use serde::Serialize;
use serde_json::json;
use std::io::Read as _;
use utoipa::ToSchema;

/// The job kind of a transfer into Coffer; its payload is the transaction id.
pub const SOURCE_TRANSFER: &str = "source-transfer";

/// The job kinds of this area.
pub const JOBS: &[Kind] = &[Kind {
    name: SOURCE_TRANSFER,
    period: None,
    run: |ctx, id| Box::pin(run(ctx, id)),
}];

pub const RECEIVED: i64 = 0;
pub const IN_PROGRESS: i64 = 1;
pub const COMPLETED: i64 = 2;
pub const FAILED: i64 = 99;

/// Why a transfer failed.
pub const ERR_AUTH: i64 = 1;
pub const ERR_NOT_FOUND: i64 = 2;
pub const ERR_TOO_LARGE: i64 = 3;
pub const ERR_REMOTE: i64 = 4;
pub const ERR_SCAN: i64 = 5;

/// A transfer as the interface shows it (`KPTransferStatus`): numbers as strings, as the
/// vendor's clients read them.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransferView {
    pub id: String,
    pub transaction_id: String,
    /// The source file's content id.
    #[serde(rename = "kPObjectId")]
    pub kp_object_id: String,
    /// The Coffer file a completed transfer into Coffer made; empty until then.
    pub file_handle: String,
    pub user_id: String,
    /// `0` while nothing failed; else 1 credentials refused, 2 not found, 3 too large, 4 remote
    /// error, 5 scan refused.
    pub err_code: String,
    /// `0` received, `1` in progress, `2` completed, `99` failed.
    pub status: String,
    /// `allowed`, `scanning` or `disallowed`: the scanner's verdict on the file in Coffer.
    pub av_status: String,
    /// Always `allowed` (Coffer has no DLP).
    pub dlp_status: String,
}

fn view(c: &mut coffer_store::DbConn, t: &Transfer) -> Result<TransferView> {
    let mut status = t.state;
    let mut err = t.err_code.unwrap_or(0);
    let mut av = "allowed";
    if let Some(obj) = &t.object_id {
        let version = coffer_store::content::object(c, obj)?
            .and_then(|o| o.current_version_id)
            .map(|v| coffer_store::content::version(c, &v))
            .transpose()?
            .flatten();
        if let Some(v) = version {
            av = match v.av_status.as_str() {
                "allowed" => "allowed",
                "scanning" => "scanning",
                _ => "disallowed",
            };
        }
        // The scanner's refusal comes after the bytes are in: the transfer failed all the same.
        if av == "disallowed" && t.direction == "in" {
            status = FAILED;
            err = ERR_SCAN;
        }
    }
    Ok(TransferView {
        id: t.id.clone(),
        transaction_id: t.id.clone(),
        kp_object_id: content_id(&t.source_id, &t.path),
        file_handle: t.object_id.clone().unwrap_or_default(),
        user_id: t.user_id.clone(),
        err_code: err.to_string(),
        status: status.to_string(),
        av_status: av.into(),
        dlp_status: "allowed".into(),
    })
}

/// `POST /rest/sources/{id}/actions/initiateDownload`: records a transfer of the file `id` into
/// the caller's My Folder and queues its job; answers it received (`0`). A folder answers 403
/// `ERR_ACCESS_USER`.
pub fn initiate_download(ctx: &Ctx, user_id: &str, id: &str) -> Result<TransferView> {
    let (s, path) = super::resolve(ctx, user_id, id)?;
    let conn = super::connect(ctx, &s)?;
    let e = conn.stat(&path).map_err(|e| super::remote(ctx, &s, e))?;
    if e.is_dir {
        return Err(ApiError::new(ErrorCode::AccessUser)
            .with_message("Only files are transferred.")
            .into());
    }
    ctx.write(|c| {
        let user = coffer_store::users::by_id(c, user_id)?
            .ok_or_else(|| Error::internal("the caller vanished"))?;
        let t = now();
        let row = Transfer {
            id: uuid::Uuid::new_v4().to_string(),
            user_id: user_id.to_string(),
            source_id: s.id(),
            path: path.as_str().to_string(),
            direction: "in".into(),
            state: RECEIVED,
            err_code: None,
            object_id: None,
            folder_id: Some(user.syncdir_id),
            created_at: t,
            updated_at: t,
        };
        coffer_store::sources::insert_transfer(c, &row)?;
        jobs::enqueue(c, SOURCE_TRANSFER, &row.id, t)?;
        events::record(
            c,
            "source.transfer.create",
            Some(user_id),
            json!({"transactionId": row.id, "sourceId": row.source_id, "id": content_id(&row.source_id, &row.path), "direction": "in"}),
        )?;
        view(c, &row)
    })
}

/// `GET /rest/sources/files/actions/transferStatus`: the caller's transfers among `ids`
/// (another user's are left out as unknown ones are).
pub fn status(ctx: &Ctx, user_id: &str, ids: &[String]) -> Result<Vec<TransferView>> {
    ctx.read(|c| {
        coffer_store::sources::transfers_among(c, user_id, ids)?
            .iter()
            .map(|t| view(c, t))
            .collect()
    })
}

/// `GET /rest/sources/actions/downloadByTransaction`: the file a completed transfer into Coffer
/// made, as the content download serves it; 404 until the transfer completed.
pub fn download(ctx: &Ctx, user_id: &str, transaction_id: &str) -> Result<files::Download> {
    let t = ctx.read(|c| Ok(coffer_store::sources::transfer(c, transaction_id)?))?;
    let object = match t {
        Some(t) if t.user_id == user_id && t.state == COMPLETED && t.direction == "in" => {
            t.object_id
        }
        _ => None,
    }
    .ok_or_else(|| Error::from(ApiError::new(ErrorCode::EntityNotFound)))?;
    files::download(ctx, user_id, &object, None)
}

/// How a failed transfer ends, from what stopped it.
fn err_code(e: &Error) -> i64 {
    match e {
        Error::Api(a) => match a.code {
            ErrorCode::AuthEcUpdateToken => ERR_AUTH,
            ErrorCode::EntityNotFound => ERR_NOT_FOUND,
            ErrorCode::SystemNoStorageAvailable | ErrorCode::LicenseMaxUploadSize => ERR_TOO_LARGE,
            ErrorCode::EntityVirusFound => ERR_SCAN,
            _ => ERR_REMOTE,
        },
        Error::Internal(_) => ERR_REMOTE,
    }
}

async fn set_state(
    ctx: &Ctx,
    t: &Transfer,
    state: i64,
    err: Option<i64>,
    object: Option<String>,
) -> Result<()> {
    let id = t.id.clone();
    let user = t.user_id.clone();
    ctx.write_owned(move |c| {
        coffer_store::sources::set_transfer_state(c, &id, state, err, object.as_deref(), now())?;
        let subject = match state {
            COMPLETED => "source.transfer.complete",
            FAILED => "source.transfer.fail",
            _ => return Ok(()),
        };
        events::record(
            c,
            subject,
            Some(&user),
            json!({"transactionId": id, "errCode": err, "fileId": object}),
        )
    })
    .await
}

/// The job: runs one transfer into Coffer. A transfer that ended already is left alone (a job
/// run twice after a lost lease); every failure ends the transfer `99` with its code rather than
/// failing the job, so it is not retried against a remote that refused it.
async fn run(ctx: &Ctx, id: &str) -> Result<()> {
    let tid = id.to_string();
    let Some(t) = ctx
        .blocking(move |ctx| ctx.read(|c| Ok(coffer_store::sources::transfer(c, &tid)?)))
        .await?
    else {
        return Ok(());
    };
    if t.state == COMPLETED || t.state == FAILED {
        return Ok(());
    }
    set_state(ctx, &t, IN_PROGRESS, None, None).await?;
    match bring_in(ctx, &t).await {
        Ok(file_id) => set_state(ctx, &t, COMPLETED, None, Some(file_id)).await,
        Err(e) => {
            if let Error::Internal(_) = &e {
                log::warn!("source transfer {} failed: {e}", t.id);
            }
            set_state(ctx, &t, FAILED, Some(err_code(&e)), None).await
        }
    }
}

/// Streams the remote file into the blob store within the room the target's owner has, then
/// makes the file (or a new version of a file of that name) in one write.
async fn bring_in(ctx: &Ctx, t: &Transfer) -> Result<String> {
    let tr = t.clone();
    let (target, room, max, download) = ctx
        .blocking(move |ctx| {
            let (s, path) = ctx.read(|c| {
                super::content(c, ctx, &tr.user_id, &content_id(&tr.source_id, &tr.path))
            })?;
            let conn = super::connect(ctx, &s)?;
            let d = conn
                .read(&path, None)
                .map_err(|e| super::remote(ctx, &s, e))?;
            let folder_id = tr
                .folder_id
                .clone()
                .ok_or_else(|| Error::internal("a transfer without a target folder"))?;
            let target = Target::Folder {
                folder_id,
                name: d.entry.name.clone(),
                disable_auto_version: false,
            };
            let size = d
                .length
                .or(d.entry.size)
                .map(|n| n.min(i64::MAX as u64) as i64);
            let (room, limits) =
                ctx.with_conn(|c| files::check_target(c, &tr.user_id, &target, size))?;
            Ok((target, room, limits.max_upload_size, d))
        })
        .await?;
    let stream = reader_stream(download.body);
    let stored = match ctx.storage.put_stream(stream, Some(room as u64)).await {
        Ok(put) => Stored {
            blob: put.key.to_string(),
            size: put.size as i64,
            md5: put.md5.clone(),
            client_created: None,
            client_modified: download.entry.modified.map(|m| m.unix_timestamp()),
        },
        Err(coffer_storage::StorageError::TooLarge) if room >= max => {
            return Err(ApiError::new(ErrorCode::LicenseMaxUploadSize).into())
        }
        Err(coffer_storage::StorageError::TooLarge) => {
            return Err(ApiError::new(ErrorCode::SystemNoStorageAvailable).into())
        }
        Err(e) => return Err(crate::content::storage_error(e)),
    };
    let user = t.user_id.clone();
    let ctx2 = ctx.clone();
    let s2 = stored.clone();
    let made = ctx
        .write_owned(move |c| files::commit(c, &ctx2, &user, &target, &s2))
        .await;
    match made {
        Ok(file) => Ok(file.id),
        Err(e) => {
            crate::content::uploads::release_unused(ctx, &stored).await;
            Err(e)
        }
    }
}

/// The size of the pieces a remote file is read in.
const PIECE: usize = 256 * 1024;

/// The pieces are cut from allocations of this size (16 pieces each): one allocation per 4 MiB
/// rather than one per piece.
const ARENA: usize = 16 * PIECE;

/// A blocking reader as a stream of pieces: a thread of its own reads it into a small channel,
/// so the async side never blocks on the remote. Each piece is filled before it is sent: the
/// blob store batches pieces by their length, and a piece holding a few KiB of a larger
/// allocation would keep the whole allocation alive (many times the bytes in flight). Full
/// pieces share an allocation ([`ARENA`]): it is freed once its pieces are written and hashed,
/// a few MiB at most in flight on top of the blob store's own.
fn reader_stream(
    mut body: Box<dyn std::io::Read + Send>,
) -> std::pin::Pin<
    Box<
        dyn futures_util::Stream<
            Item = std::result::Result<bytes::Bytes, crate::content::uploads::BodyError>,
        >,
    >,
> {
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<bytes::Bytes>>(4);
    std::thread::spawn(move || {
        let mut arena = bytes::BytesMut::new();
        loop {
            if arena.capacity() < PIECE {
                arena = bytes::BytesMut::with_capacity(ARENA);
            }
            arena.resize(PIECE, 0);
            let mut filled = 0;
            let mut failed = None;
            while filled < PIECE {
                match body.read(&mut arena[filled..]) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            let end = filled < PIECE;
            if filled > 0 {
                arena.truncate(filled);
                // The last piece, shorter, is copied out: it would keep the arena alive.
                let piece = if end {
                    bytes::Bytes::copy_from_slice(&arena)
                } else {
                    arena.split().freeze()
                };
                if tx.blocking_send(Ok(piece)).is_err() {
                    break;
                }
            }
            if let Some(e) = failed {
                let _ = tx.blocking_send(Err(e));
                break;
            }
            if end {
                break;
            }
        }
    });
    Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|r| (r.map_err(crate::content::uploads::BodyError), rx))
    }))
}

/// `POST /rest/sources/{id}/actions/file` (into the folder `id`, `replace` false) and
/// `POST /rest/sources/actions/files/{id}` (over the file `id`, `replace` true): writes the
/// bytes to the source and records the transfer, completed; a refusal of the remote is
/// answered as such and recorded failed with its code.
pub fn write_out(
    ctx: &Ctx,
    user_id: &str,
    id: &str,
    name: Option<&str>,
    body: &mut dyn std::io::Read,
    length: Option<u64>,
    replace: bool,
) -> Result<TransferView> {
    let (s, path) = super::resolve(ctx, user_id, id)?;
    let conn = super::connect(ctx, &s)?;
    let (dir, name) = if replace {
        let e = conn.stat(&path).map_err(|e| super::remote(ctx, &s, e))?;
        if e.is_dir {
            return Err(ApiError::new(ErrorCode::EntityNotFound).into());
        }
        let parent = path.as_str().rsplit_once('/').map_or("", |(p, _)| p);
        let dir = coffer_sources::RemotePath::parse(parent)
            .map_err(|_| Error::internal("the parent of a remote path is refused"))?;
        (dir, e.name)
    } else {
        let name = name.unwrap_or_default();
        coffer_domain::content::validate_name(name)?;
        (path.clone(), name.to_string())
    };
    if !replace {
        // A file of this name is replaced only through its own id.
        match conn.list(&dir) {
            Ok(list) if list.iter().any(|e| e.name == name) => {
                return Err(ApiError::field(ErrorCode::EntityExists, "name").into())
            }
            Ok(_) => {}
            Err(e) => return Err(super::remote(ctx, &s, e)),
        }
    }
    let lock = if replace {
        held(ctx, user_id, &s, &path)?
    } else {
        None
    };
    let written = match lock.as_ref().and_then(|l| l.remote_token.as_deref()) {
        Some(token) => conn.write_locked(&dir, &name, body, length, token),
        None => conn.write(&dir, &name, body, length, replace),
    };
    record_out(ctx, user_id, &s, &dir, &name, written).map(|(v, _)| v)
}

/// Coffer's lock on `path` when the caller holds it (a write or delete goes through its remote
/// token); another user's lock refuses with 403 `ERR_ENTITY_LOCKED`, whatever the source.
pub(super) fn held(
    ctx: &Ctx,
    user_id: &str,
    s: &super::Named,
    path: &RemotePath,
) -> Result<Option<SourceLock>> {
    let source_id = s.id();
    let lock = ctx.read(|c| {
        Ok(coffer_store::sources::lock_of(
            c,
            &source_id,
            path.as_str(),
        )?)
    })?;
    match lock {
        Some(l) if l.user_id != user_id => Err(ApiError::new(ErrorCode::EntityLocked)
            .with_message("Another user holds the file locked.")
            .into()),
        lock => Ok(lock),
    }
}

/// Records a write out to a source as a transfer, completed or failed with its code, and its
/// event; a refusal of the remote is answered as such.
fn record_out(
    ctx: &Ctx,
    user_id: &str,
    s: &super::Named,
    dir: &RemotePath,
    name: &str,
    written: std::result::Result<coffer_sources::Entry, SourceError>,
) -> Result<(TransferView, coffer_sources::Entry)> {
    let (state, err, entry) = match written {
        Ok(e) => (COMPLETED, None, Some(e)),
        Err(e) => {
            let code = match &e {
                SourceError::NeedsAuth => ERR_AUTH,
                SourceError::NotFound => ERR_NOT_FOUND,
                SourceError::TooLarge => ERR_TOO_LARGE,
                _ => ERR_REMOTE,
            };
            (FAILED, Some((code, super::remote(ctx, s, e))), None)
        }
    };
    let t = now();
    let row = Transfer {
        id: uuid::Uuid::new_v4().to_string(),
        user_id: user_id.to_string(),
        source_id: s.id(),
        path: entry
            .as_ref()
            .map(|e| e.path.as_str().to_string())
            .unwrap_or_else(|| join(dir.as_str(), name)),
        direction: "out".into(),
        state,
        err_code: err.as_ref().map(|(c, _)| *c),
        object_id: None,
        folder_id: None,
        created_at: t,
        updated_at: t,
    };
    let v = ctx.write(|c| {
        coffer_store::sources::insert_transfer(c, &row)?;
        events::record(
            c,
            if state == COMPLETED {
                "source.transfer.complete"
            } else {
                "source.transfer.fail"
            },
            Some(user_id),
            json!({"transactionId": row.id, "sourceId": row.source_id, "id": content_id(&row.source_id, &row.path), "direction": "out", "errCode": row.err_code}),
        )?;
        view(c, &row)
    })?;
    match (err, entry) {
        (Some((_, e)), _) => Err(e),
        (None, Some(entry)) => Ok((v, entry)),
        (None, None) => Err(Error::internal("a completed write without its entry")),
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// Why a file cannot be checked in: it did not come from a source of the caller's.
fn not_returnable() -> Error {
    ApiError::field(ErrorCode::InvalidParameter, "id")
        .with_message("The file was not transferred in from a source of yours.")
        .into()
}

/// `PATCH /rest/files/{id}/actions/return`: checks the file back into the source a transfer
/// brought it from. The latest completed transfer into Coffer that made the file names the
/// source and the remote path; the caller must see that source, may download the file (so it
/// is scanned clean) and may delete it. The current version is streamed from the blob store
/// over the remote file (through the caller's lock when they hold one; another user's lock
/// refuses with 403 `ERR_ENTITY_LOCKED`), recorded as a transfer out; then the caller's lock on
/// the remote file is given back and the Coffer copy goes to the trash. Answers the remote
/// file (`SourceFile`).
pub async fn return_file(
    ctx: &Ctx,
    user_id: &str,
    file_id: &str,
) -> Result<super::browse::SourceContentView> {
    let (uid, fid) = (user_id.to_string(), file_id.to_string());
    // Everything that may refuse is checked before a byte goes out.
    let (download, s, path, lock) = ctx
        .blocking(move |ctx| {
            ctx.read(|c| {
                crate::content::require_file(c, &uid, &fid, coffer_domain::content::Action::Delete)
            })?;
            let t = ctx
                .read(|c| Ok(coffer_store::sources::transfer_into(c, &fid)?))?
                .ok_or_else(not_returnable)?;
            let download = files::download(ctx, &uid, &fid, None)?;
            let s = ctx
                .read(|c| super::source(c, ctx, &uid, &t.source_id))
                .map_err(|_| not_returnable())?;
            let path = RemotePath::parse(&t.path)
                .map_err(|_| Error::internal("a stored transfer's path is refused"))?;
            let lock = held(ctx, &uid, &s, &path)?;
            Ok((download, s, path, lock))
        })
        .await?;
    let blob = files::read(ctx, &download, None).await?;
    let runtime = tokio::runtime::Handle::current();
    let (uid, fid) = (user_id.to_string(), file_id.to_string());
    ctx.blocking(move |ctx| {
        let conn = super::connect(ctx, &s)?;
        let (parent, name) = path
            .as_str()
            .rsplit_once('/')
            .unwrap_or(("", path.as_str()));
        let dir = RemotePath::parse(parent)
            .map_err(|_| Error::internal("the parent of a remote path is refused"))?;
        let size = blob.size;
        let mut body = BlobReader {
            stream: blob.stream,
            runtime,
            current: bytes::Bytes::new(),
        };
        let written = match lock.as_ref().and_then(|l| l.remote_token.as_deref()) {
            Some(token) => conn.write_locked(&dir, name, &mut body, Some(size), token),
            None => conn.write(&dir, name, &mut body, Some(size), true),
        };
        let (_, entry) = record_out(ctx, &uid, &s, &dir, name, written)?;
        if let Some(l) = &lock {
            let id = content_id(&l.source_id, &l.path);
            super::browse::release(ctx, conn.as_ref(), &uid, l, &entry.path, &id)?;
        }
        files::delete(ctx, &uid, &fid)?;
        super::browse::get(
            ctx,
            &uid,
            &content_id(&s.id(), entry.path.as_str()),
            false,
            super::browse::With::default(),
        )
    })
    .await
}

/// A blob's byte stream read from a blocking thread: each piece is awaited on the runtime the
/// stream belongs to, so nothing more than one piece is held.
struct BlobReader {
    stream: futures_util::stream::BoxStream<
        'static,
        std::result::Result<bytes::Bytes, coffer_storage::StorageError>,
    >,
    runtime: tokio::runtime::Handle,
    current: bytes::Bytes,
}

impl std::io::Read for BlobReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use futures_util::StreamExt as _;
        while self.current.is_empty() {
            match self.runtime.block_on(self.stream.next()) {
                None => return Ok(0),
                Some(Ok(piece)) => self.current = piece,
                Some(Err(e)) => return Err(std::io::Error::other(e.to_string())),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}
