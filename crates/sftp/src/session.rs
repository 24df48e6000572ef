//! One SFTP session of a signed-in user: the requests of the protocol (version 3) mapped onto
//! the service's SFTP use cases (`coffer_service::sftp`), with the open handles.
//!
//! A file is opened either to read or to write. Reading serves the current version from the blob
//! store, sequentially from one stream and reopened at another offset when the client jumps.
//! Writing streams the bytes, in order, into the blob store as they arrive (fingerprinted on the
//! way, within the owner's quota), handed on in batches of consecutive writes rather than one by
//! one; a file that ends within its first batch is stored whole in one call instead, with none of
//! the stream's hand-offs: as soon as a write that looks like its last arrives (the first one under
//! 32 KiB, or one shorter than the write before), while its answer travels to the client and the
//! client sends the close, or else at its close. Closing the handle makes the file, or a new
//! version of the file of that name. Opening to write asks once, in one call and one read
//! transaction, whether SFTP is still allowed and where the file goes (permission, name, room);
//! closing commits without reading the file back, and for a file stored whole at its close the
//! store and the commit are one call. A handle dropped without its close (the client went away)
//! aborts the stream, so no partial file is ever made and the staged bytes are removed (bytes
//! stored early are left to the blob sweep).
//!
//! Every refusal is an SFTP status with a short message, never internal detail; no request
//! ends the session.

use crate::path;
use bytes::Bytes;
use coffer_errors::{Error, ErrorCode};
use coffer_service::content::files::{self, Download};
use coffer_service::sftp::{self as svc, Entry};
use coffer_service::Ctx;
use futures_util::StreamExt;
use russh_sftp::protocol::{
    Attrs, Data, File, FileAttributes, Handle, Name, OpenFlags, Status, StatusCode, Version,
};
use russh_sftp::server::StatusReply;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Open handles per session, at most.
const MAX_HANDLES: usize = 64;
/// Entries answered per `readdir`.
const DIR_BATCH: usize = 100;
/// The most bytes one `read` answers (OpenSSH asks for up to 256 KiB).
const MAX_READ: u32 = 256 * 1024;
/// The bytes of consecutive writes gathered before they go to the blob store in one hand-off:
/// a client writes 32 KiB at a time, and handing each on alone would wake the store's task
/// once per write.
const WRITE_BATCH: usize = 1 << 20;
/// Batches queued between the session and the blob store.
const WRITE_QUEUE: usize = 2;
/// A first write shorter than this is taken for a small file's only one (OpenSSH's clients
/// write 32 KiB at a time): its bytes are stored at once (see [`Early`]). A later write is
/// taken for the last when it is shorter than the one before.
const LAST_WRITE_BELOW: usize = 32 * 1024;

/// A refusal answered to the client.
#[derive(Debug)]
pub struct Refusal(StatusCode, &'static str);

impl From<Refusal> for StatusReply {
    fn from(r: Refusal) -> StatusReply {
        StatusReply::new(r.0).with_message(r.1)
    }
}

/// A store task's answer once it ended: its refusal as the client's, a task already taken or
/// one that did not finish (it panicked) as a failure.
async fn joined(
    task: Option<JoinHandle<coffer_service::Result<files::Stored>>>,
) -> Result<files::Stored, Refusal> {
    let task = task.ok_or(Refusal(StatusCode::Failure, "Closed"))?;
    match task.await {
        Ok(r) => r.map_err(refusal),
        Err(_) => Err(Refusal(StatusCode::Failure, "Internal error")),
    }
}

/// The SFTP status of a service error; internal failures are logged, never described.
fn refusal(e: Error) -> Refusal {
    match e {
        Error::Api(a) => match a.code {
            ErrorCode::EntityNotFound => Refusal(StatusCode::NoSuchFile, "No such file"),
            ErrorCode::EntityExists => Refusal(StatusCode::Failure, "The name exists"),
            ErrorCode::SystemNoStorageAvailable => {
                Refusal(StatusCode::Failure, "No storage left (quota)")
            }
            ErrorCode::LicenseMaxUploadSize => {
                Refusal(StatusCode::Failure, "The file is larger than allowed")
            }
            ErrorCode::EntityNotScanned => {
                Refusal(StatusCode::PermissionDenied, "The file is being scanned")
            }
            ErrorCode::EntityVirusFound => {
                Refusal(StatusCode::PermissionDenied, "The file is infected")
            }
            ErrorCode::InputInvalidFormat
            | ErrorCode::InputRequired
            | ErrorCode::InvalidParameter => {
                Refusal(StatusCode::Failure, "Invalid name or request")
            }
            _ => Refusal(StatusCode::PermissionDenied, "Permission denied"),
        },
        Error::Internal(i) => {
            log::error!("sftp: {}", i.report());
            Refusal(StatusCode::Failure, "Internal error")
        }
    }
}

fn ok_status(id: u32) -> Status {
    Status {
        id,
        status_code: StatusCode::Ok,
        error_message: "Ok".into(),
        language_tag: "en-US".into(),
    }
}

fn attrs_of(e: &Entry) -> FileAttributes {
    let mut a = FileAttributes::empty();
    let mode = match (e.folder, e.writable) {
        (true, true) => 0o040_755,
        (true, false) => 0o040_555,
        (false, true) => 0o100_644,
        (false, false) => 0o100_444,
    };
    a.permissions = Some(mode);
    a.size = Some(e.size);
    a.uid = Some(0);
    a.gid = Some(0);
    let t = u32::try_from(e.modified.max(0)).unwrap_or(u32::MAX);
    a.mtime = Some(t);
    a.atime = Some(t);
    a
}

/// A file being read.
struct Reading {
    download: Download,
    /// Where the open stream stands, and the stream.
    pos: u64,
    stream: Option<futures_util::stream::BoxStream<'static, Result<Bytes, coffer_service::Error>>>,
    pending: Bytes,
    /// The furthest byte served, to tell a whole download from a partial one.
    served: u64,
}

/// A file being written.
struct Writing {
    put: svc::Put,
    next: u64,
    /// Writes not yet handed to the store, and their bytes.
    batch: Vec<Bytes>,
    batched: usize,
    /// The stream into the blob store, started with the first full batch: a file that ends
    /// before (most files) is stored whole at its close, in one call.
    stream: Option<Streaming>,
    /// The length of the last write, to tell a client's last (shorter) write.
    last_write: usize,
    /// The bytes written so far, already being stored because the last write looked like the
    /// file's end: see [`Early`].
    early: Option<Early>,
}

/// A small file's bytes stored as soon as its last write came, while the write's answer
/// travels to the client and the client sends the close: the close then finds the bytes
/// stored (hashed, written, fsynced, linked) or nearly so, and only commits. Bytes that no file
/// takes (more writes came after all, the close was refused, the client went away) are left to
/// the blob sweep, as any upload's that failed after its bytes were stored.
struct Early {
    /// How many bytes of the file it stores.
    len: u64,
    task: Option<JoinHandle<coffer_service::Result<files::Stored>>>,
    ctx: Ctx,
}

impl Early {
    fn start(ctx: &Ctx, put: &svc::Put, batch: &[Bytes], len: u64) -> Early {
        let bytes = match batch {
            [one] => one.clone(),
            _ => Bytes::from(batch.concat()),
        };
        let (c, put) = (ctx.clone(), put.clone());
        let task = tokio::spawn(async move { svc::store_bytes(&c, &put, bytes).await });
        Early {
            len,
            task: Some(task),
            ctx: ctx.clone(),
        }
    }

    /// The stored bytes (this file's from here on), or the store's refusal.
    async fn stored(mut self) -> Result<files::Stored, Refusal> {
        joined(self.task.take()).await
    }
}

impl Drop for Early {
    /// Not taken by a file: the stored bytes, once they are, are marked for the sweep.
    fn drop(&mut self) {
        let Some(task) = self.task.take() else {
            return;
        };
        let ctx = self.ctx.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Ok(Ok(stored)) = task.await {
                    coffer_service::content::uploads::release_unused(&ctx, &stored).await;
                }
            });
        }
    }
}

/// The blob store's task taking a file's batches as they come.
struct Streaming {
    tx: Option<mpsc::Sender<Vec<Bytes>>>,
    /// Set when the client closes the handle: only then does the stream end cleanly.
    finished: Arc<AtomicBool>,
    task: Option<JoinHandle<coffer_service::Result<files::Stored>>>,
}

impl Drop for Streaming {
    fn drop(&mut self) {
        // Without `finished`, the stream ends with an error and the put leaves nothing.
        self.tx.take();
    }
}

impl Streaming {
    /// Starts the blob store's task for `put`; it waits for the batches.
    fn start(ctx: &Ctx, put: &svc::Put) -> Streaming {
        let (tx, rx) = mpsc::channel::<Vec<Bytes>>(WRITE_QUEUE);
        let finished = Arc::new(AtomicBool::new(false));
        let done = finished.clone();
        // The batches' pieces one by one; the end is clean only once the handle was closed.
        let body = futures_util::stream::unfold(
            (rx, std::vec::IntoIter::default(), done, false),
            |(mut rx, mut pieces, done, ended)| async move {
                loop {
                    if let Some(piece) = pieces.next() {
                        return Some((Ok(piece), (rx, pieces, done, ended)));
                    }
                    if ended {
                        return None;
                    }
                    match rx.recv().await {
                        Some(batch) => pieces = batch.into_iter(),
                        None if done.load(Ordering::SeqCst) => return None,
                        None => {
                            return Some((
                                Err(std::io::Error::other("the client went away")),
                                (rx, pieces, done, true),
                            ))
                        }
                    }
                }
            },
        );
        let (ctx, put) = (ctx.clone(), put.clone());
        let task = tokio::spawn(async move { svc::store(&ctx, &put, Box::pin(body)).await });
        Streaming {
            tx: Some(tx),
            finished,
            task: Some(task),
        }
    }

    /// Hands on a batch; `false` when the store stopped taking bytes (its answer is the
    /// task's).
    async fn send(&self, batch: Vec<Bytes>) -> bool {
        match &self.tx {
            Some(tx) => tx.send(batch).await.is_ok(),
            None => false,
        }
    }

    /// The store's answer once the task ended (the stream cut off when it was not finished).
    async fn outcome(mut self) -> Result<files::Stored, Refusal> {
        self.tx.take();
        joined(self.task.take()).await
    }
}

enum Open {
    Dir { entries: Vec<Entry>, next: usize },
    Read(Box<Reading>),
    Write(Box<Writing>),
}

/// The session's state.
pub struct Session {
    ctx: Ctx,
    user_id: String,
    handles: HashMap<String, Open>,
    counter: u64,
    version: Option<u32>,
}

impl Session {
    pub fn new(ctx: Ctx, user_id: String) -> Session {
        Session {
            ctx,
            user_id,
            handles: HashMap::new(),
            counter: 0,
            version: None,
        }
    }

    fn add(&mut self, open: Open) -> Result<String, Refusal> {
        if self.handles.len() >= MAX_HANDLES {
            return Err(Refusal(StatusCode::Failure, "Too many open handles"));
        }
        self.counter += 1;
        let h = self.counter.to_string();
        self.handles.insert(h.clone(), open);
        Ok(h)
    }

    /// Runs a (blocking) service call for the user on the blocking pool. The future holds no
    /// borrow of the session, whose open streams are not `Sync`.
    fn call<T, F>(
        &self,
        f: F,
    ) -> impl std::future::Future<Output = Result<T, Refusal>> + Send + 'static
    where
        F: FnOnce(&Ctx, &str) -> coffer_service::Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let (ctx, user) = (self.ctx.clone(), self.user_id.clone());
        async move {
            ctx.blocking(move |ctx| f(ctx, &user))
                .await
                .map_err(refusal)
        }
    }

    /// Refuses everything once the account may no longer use SFTP (deactivated, deleted, the
    /// gate closed): asked on every open, so no cached sign-in outlives it.
    fn still_allowed(
        &self,
    ) -> impl std::future::Future<Output = Result<(), Refusal>> + Send + 'static {
        let allowed = self.call(svc::still_allowed);
        async move {
            if allowed.await? {
                Ok(())
            } else {
                Err(Refusal(StatusCode::PermissionDenied, "SFTP is not allowed"))
            }
        }
    }

    async fn open_read(&mut self, names: Vec<String>) -> Result<String, Refusal> {
        let d = self
            .call(move |ctx, user| svc::download(ctx, user, &names))
            .await?;
        self.add(Open::Read(Box::new(Reading {
            download: d,
            pos: 0,
            stream: None,
            pending: Bytes::new(),
            served: 0,
        })))
    }

    /// Opens a file to write: whether SFTP is still allowed and where the put goes are decided
    /// in one call, then the store's task waits for the bytes.
    async fn open_write(&mut self, names: Vec<String>, exclusive: bool) -> Result<String, Refusal> {
        let put = self
            .call(move |ctx, user| svc::open_put(ctx, user, &names))
            .await?
            .ok_or(Refusal(StatusCode::PermissionDenied, "SFTP is not allowed"))?;
        if exclusive && put.exists {
            return Err(Refusal(StatusCode::Failure, "The file exists"));
        }
        self.add(Open::Write(Box::new(Writing {
            put,
            next: 0,
            batch: Vec::new(),
            batched: 0,
            stream: None,
            last_write: 0,
            early: None,
        })))
    }

    /// Ends a write: the bytes stored (the stream finished, or the whole file in one call),
    /// and the file or version made.
    async fn finish_write(&mut self, mut w: Box<Writing>) -> Result<(), Refusal> {
        let batch = std::mem::take(&mut w.batch);
        let early = w.early.take().filter(|e| e.len == w.next);
        let stored = match (w.stream.take(), early) {
            (None, Some(early)) => early.stored().await?,
            (Some(stream), _) => {
                // The last writes; a refusal by the store is the task's answer.
                if !batch.is_empty() {
                    stream.send(batch).await;
                }
                stream.finished.store(true, Ordering::SeqCst);
                stream.outcome().await?
            }
            (None, None) => {
                let bytes = match batch.len() {
                    0 => Bytes::new(),
                    1 => batch.into_iter().next().unwrap_or_default(),
                    _ => Bytes::from(batch.concat()),
                };
                return svc::store_and_commit(&self.ctx, &self.user_id, &w.put, bytes)
                    .await
                    .map_err(refusal);
            }
        };
        let target = w.put.target.clone();
        match svc::commit(&self.ctx, &self.user_id, target, stored.clone()).await {
            Ok(_) => Ok(()),
            Err(e) => {
                coffer_service::content::uploads::release_unused(&self.ctx, &stored).await;
                Err(refusal(e))
            }
        }
    }

    async fn read_at(
        r: &mut Reading,
        ctx: &Ctx,
        offset: u64,
        len: u32,
    ) -> Result<Vec<u8>, Refusal> {
        let size = r.download.size.max(0) as u64;
        if offset >= size {
            return Err(Refusal(StatusCode::Eof, "End of file"));
        }
        if r.stream.is_none() || r.pos != offset {
            r.stream = Some(
                svc::read_from(ctx, &r.download, offset)
                    .await
                    .map_err(refusal)?,
            );
            r.pos = offset;
            r.pending = Bytes::new();
        }
        let want = len.min(MAX_READ) as usize;
        let mut out = Vec::with_capacity(want.min((size - offset) as usize));
        while out.len() < want {
            if r.pending.is_empty() {
                let Some(stream) = r.stream.as_mut() else {
                    break;
                };
                match stream.next().await {
                    Some(Ok(b)) => r.pending = b,
                    Some(Err(e)) => {
                        r.stream = None;
                        return Err(refusal(e));
                    }
                    None => break,
                }
            }
            let n = (want - out.len()).min(r.pending.len());
            out.extend_from_slice(&r.pending.split_to(n));
        }
        r.pos += out.len() as u64;
        r.served = r.served.max(r.pos);
        if out.is_empty() {
            return Err(Refusal(StatusCode::Eof, "End of file"));
        }
        Ok(out)
    }
}

impl russh_sftp::server::Handler for Session {
    type Error = Refusal;

    fn unimplemented(&self) -> Refusal {
        Refusal(StatusCode::OpUnsupported, "Not supported")
    }

    async fn init(
        &mut self,
        version: u32,
        _extensions: HashMap<String, String>,
    ) -> Result<Version, Refusal> {
        if self.version.is_some() {
            return Err(Refusal(StatusCode::BadMessage, "Initialised already"));
        }
        self.version = Some(version);
        Ok(Version::new())
    }

    async fn realpath(&mut self, id: u32, p: String) -> Result<Name, Refusal> {
        let abs = path::absolute(&path::clean(&p));
        Ok(Name {
            id,
            files: vec![File::dummy(abs)],
        })
    }

    async fn stat(&mut self, id: u32, p: String) -> Result<Attrs, Refusal> {
        let names = path::clean(&p);
        let e = self
            .call(move |ctx, user| svc::stat(ctx, user, &names))
            .await?;
        Ok(Attrs {
            id,
            attrs: attrs_of(&e),
        })
    }

    async fn lstat(&mut self, id: u32, p: String) -> Result<Attrs, Refusal> {
        // Coffer has no links: a path's lstat is its stat.
        self.stat(id, p).await
    }

    async fn fstat(&mut self, id: u32, handle: String) -> Result<Attrs, Refusal> {
        let attrs = match self.handles.get(&handle) {
            Some(Open::Read(r)) => {
                let mut a = FileAttributes::empty();
                a.permissions = Some(0o100_444);
                a.size = Some(r.download.size.max(0) as u64);
                a
            }
            Some(Open::Write(w)) => {
                let mut a = FileAttributes::empty();
                a.permissions = Some(0o100_644);
                a.size = Some(w.next);
                a
            }
            Some(Open::Dir { .. }) => {
                let mut a = FileAttributes::empty();
                a.permissions = Some(0o040_755);
                a
            }
            None => return Err(Refusal(StatusCode::Failure, "Unknown handle")),
        };
        Ok(Attrs { id, attrs })
    }

    async fn setstat(
        &mut self,
        id: u32,
        p: String,
        _attrs: FileAttributes,
    ) -> Result<Status, Refusal> {
        // Modes, owners and times are Coffer's to keep: accepted for an existing path and
        // ignored, so that clients which set them after a transfer do not fail.
        let names = path::clean(&p);
        self.call(move |ctx, user| svc::stat(ctx, user, &names))
            .await?;
        Ok(ok_status(id))
    }

    async fn fsetstat(
        &mut self,
        id: u32,
        handle: String,
        _attrs: FileAttributes,
    ) -> Result<Status, Refusal> {
        if self.handles.contains_key(&handle) {
            Ok(ok_status(id))
        } else {
            Err(Refusal(StatusCode::Failure, "Unknown handle"))
        }
    }

    async fn opendir(&mut self, id: u32, p: String) -> Result<Handle, Refusal> {
        self.still_allowed().await?;
        let names = path::clean(&p);
        let entries = self
            .call(move |ctx, user| svc::list(ctx, user, &names))
            .await?;
        let handle = self.add(Open::Dir { entries, next: 0 })?;
        Ok(Handle { id, handle })
    }

    async fn readdir(&mut self, id: u32, handle: String) -> Result<Name, Refusal> {
        match self.handles.get_mut(&handle) {
            Some(Open::Dir { entries, next }) => {
                if *next >= entries.len() {
                    return Err(Refusal(StatusCode::Eof, "End of directory"));
                }
                let end = (*next + DIR_BATCH).min(entries.len());
                let files = entries[*next..end]
                    .iter()
                    .map(|e| File::new(e.name.clone(), attrs_of(e)))
                    .collect();
                *next = end;
                Ok(Name { id, files })
            }
            _ => Err(Refusal(StatusCode::Failure, "Unknown handle")),
        }
    }

    async fn open(
        &mut self,
        id: u32,
        filename: String,
        pflags: OpenFlags,
        _attrs: FileAttributes,
    ) -> Result<Handle, Refusal> {
        let names = path::clean(&filename);
        let write = pflags.contains(OpenFlags::WRITE);
        let read = pflags.contains(OpenFlags::READ);
        let handle = match (read, write) {
            (true, false) => {
                self.still_allowed().await?;
                self.open_read(names).await?
            }
            (false, true) if !pflags.contains(OpenFlags::APPEND) => {
                self.open_write(names, pflags.contains(OpenFlags::EXCLUDE))
                    .await?
            }
            (_, true) => {
                return Err(Refusal(
                    StatusCode::OpUnsupported,
                    "A file is either read, or written whole",
                ))
            }
            (false, false) => {
                return Err(Refusal(StatusCode::BadMessage, "Neither read nor write"))
            }
        };
        Ok(Handle { id, handle })
    }

    async fn read(
        &mut self,
        id: u32,
        handle: String,
        offset: u64,
        len: u32,
    ) -> Result<Data, Refusal> {
        let ctx = self.ctx.clone();
        match self.handles.get_mut(&handle) {
            Some(Open::Read(r)) => {
                let data = Session::read_at(r, &ctx, offset, len).await?;
                Ok(Data { id, data })
            }
            _ => Err(Refusal(StatusCode::Failure, "Unknown handle")),
        }
    }

    async fn write(
        &mut self,
        id: u32,
        handle: String,
        offset: u64,
        data: Vec<u8>,
    ) -> Result<Status, Refusal> {
        let Some(Open::Write(w)) = self.handles.get_mut(&handle) else {
            return Err(Refusal(StatusCode::Failure, "Unknown handle"));
        };
        if offset != w.next {
            return Err(Refusal(
                StatusCode::OpUnsupported,
                "A file is written in order, from its start",
            ));
        }
        let len = data.len() as u64;
        // Bytes stored early for a write that was not the last after all are not this file's.
        w.early = None;
        let short =
            (w.last_write == 0 && data.len() < LAST_WRITE_BELOW) || data.len() < w.last_write;
        w.last_write = data.len();
        w.batched += data.len();
        w.batch.push(Bytes::from(data));
        if short
            && w.stream.is_none()
            && (w.batched as u64) <= w.put.room.max(0) as u64
            && self.ctx.storage.stores_small_here(w.batched)
        {
            w.early = Some(Early::start(&self.ctx, &w.put, &w.batch, w.next + len));
        }
        if w.batched >= WRITE_BATCH {
            w.batched = 0;
            let stream = match w.stream.take() {
                Some(stream) => stream,
                None => Streaming::start(&self.ctx, &w.put),
            };
            if !stream.send(std::mem::take(&mut w.batch)).await {
                // The store refused the bytes (quota, size): its answer is the task's.
                self.handles.remove(&handle);
                return Err(match stream.outcome().await {
                    Err(r) => r,
                    Ok(_) => Refusal(StatusCode::Failure, "The write failed"),
                });
            }
            w.stream = Some(stream);
        }
        w.next += len;
        Ok(ok_status(id))
    }

    async fn close(&mut self, id: u32, handle: String) -> Result<Status, Refusal> {
        match self.handles.remove(&handle) {
            Some(Open::Write(w)) => {
                self.finish_write(w).await?;
                Ok(ok_status(id))
            }
            Some(Open::Read(r)) => {
                if r.served > 0 {
                    let size = r.download.size.max(0) as u64;
                    let partial = r.served < size;
                    if let Err(e) =
                        files::record_download(&self.ctx, &self.user_id, &r.download, partial).await
                    {
                        log::warn!("sftp: the download was not recorded: {e}");
                    }
                }
                Ok(ok_status(id))
            }
            Some(Open::Dir { .. }) => Ok(ok_status(id)),
            None => Err(Refusal(StatusCode::Failure, "Unknown handle")),
        }
    }

    async fn mkdir(
        &mut self,
        id: u32,
        p: String,
        _attrs: FileAttributes,
    ) -> Result<Status, Refusal> {
        self.still_allowed().await?;
        let names = path::clean(&p);
        self.call(move |ctx, user| svc::mkdir(ctx, user, &names))
            .await?;
        Ok(ok_status(id))
    }

    async fn rmdir(&mut self, id: u32, p: String) -> Result<Status, Refusal> {
        self.still_allowed().await?;
        let names = path::clean(&p);
        self.call(move |ctx, user| svc::rmdir(ctx, user, &names))
            .await?;
        Ok(ok_status(id))
    }

    async fn remove(&mut self, id: u32, filename: String) -> Result<Status, Refusal> {
        self.still_allowed().await?;
        let names = path::clean(&filename);
        self.call(move |ctx, user| svc::remove(ctx, user, &names))
            .await?;
        Ok(ok_status(id))
    }

    async fn rename(
        &mut self,
        id: u32,
        oldpath: String,
        newpath: String,
    ) -> Result<Status, Refusal> {
        self.still_allowed().await?;
        let (from, to) = (path::clean(&oldpath), path::clean(&newpath));
        self.call(move |ctx, user| svc::rename(ctx, user, &from, &to))
            .await?;
        Ok(ok_status(id))
    }

    async fn readlink(&mut self, _id: u32, _p: String) -> Result<Name, Refusal> {
        Err(Refusal(StatusCode::OpUnsupported, "Coffer has no links"))
    }

    async fn symlink(
        &mut self,
        _id: u32,
        _linkpath: String,
        _targetpath: String,
    ) -> Result<Status, Refusal> {
        Err(Refusal(StatusCode::OpUnsupported, "Coffer has no links"))
    }
}
