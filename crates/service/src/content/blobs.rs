//! Stored content and the `blobs` rows that count references to it, kept in step: the one
//! place where a write transaction waits for the blob store.
//!
//! An upload stores its bytes first and records them after; identical content already stored
//! is not written again. The blob sweep forgets a row and deletes its bytes. Without care the
//! two interleave badly: the upload finds the bytes and drops its copy, the sweep deletes the
//! bytes, and the upload's commit re-creates the row for a version whose content is gone.
//!
//! The rule that closes it: **bytes are deleted only while their row is locked, and a reference
//! is taken only after locking the row and finding the bytes.**
//!
//! - The sweep ([`delete_unreferenced`]) locks the row of a blob nothing counts
//!   (`coffer_store::content::forget_blob`), deletes the row and then the bytes, inside one
//!   write transaction; if deleting the bytes fails, the transaction rolls back.
//! - A commit ([`reference_stored`]) takes the reference with one upsert, which holds the row
//!   (or, for a new row, the key) until the commit ends, then asks the store whether the bytes
//!   are there. Missing bytes abort the commit (503 `ERR_SERVICE_UNAVAILABLE`: the client sends
//!   the content again); nothing refers to them.
//!
//! Why no interleaving lets both succeed. PostgreSQL (read committed): the sweep's lock is an
//! `UPDATE … WHERE refs <= 0`, the commit's an `INSERT … ON CONFLICT DO UPDATE`; whichever
//! comes second waits for the first to end and then sees its result. Sweep first: the commit
//! then finds no row, inserts one and checks the bytes, which are gone, so it aborts. Commit
//! first: the sweep then finds `refs > 0` and leaves the blob. A new row inserted concurrently
//! by both (the repair's placeholder, see `check`) serialises on the unique index the same way.
//! SQLite: every write transaction runs on the one writer, one after the other, so each of
//! the two steps sees the other whole. Either way the bytes a committed version names were
//! seen in the store by a transaction that held the row, and only a transaction that holds the
//! row with no reference counted deletes them.
//!
//! The price is a storage call inside a write transaction: a metadata lookup (local) or a HEAD
//! request (S3) per commit that finds the content counted by nothing else (new content, or
//! content the sweep could have claimed), and a delete per swept blob. Content already counted
//! needs no look: the sweep never takes a counted row. The calls run on a small runtime of
//! their own, so a transaction waits for them on any thread (the SQLite writer thread, a
//! blocking thread of PostgreSQL's writes) without needing the caller's runtime.

use crate::Result;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_storage::{BlobKey, BlobStore, StorageError};
use coffer_store::DbConn;
use std::future::Future;
use std::sync::OnceLock;

/// The runtime that storage calls made inside a transaction run on.
fn runtime() -> Result<&'static tokio::runtime::Handle> {
    static HANDLE: OnceLock<std::result::Result<tokio::runtime::Handle, String>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            let handle = rt.handle().clone();
            std::thread::Builder::new()
                .name("coffer-blob-tx".into())
                .spawn(move || rt.block_on(std::future::pending::<()>()))
                .map_err(|e| e.to_string())?;
            Ok(handle)
        })
        .as_ref()
        .map_err(|e| Error::internal_in("blob runtime", e.clone()))
}

/// Runs a storage call to its end from synchronous code (a transaction).
fn wait<T: Send + 'static>(
    call: impl Future<Output = std::result::Result<T, StorageError>> + Send + 'static,
) -> Result<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime()?.spawn(async move {
        let _ = tx.send(call.await);
    });
    rx.recv()
        .map_err(|_| Error::internal("blob runtime: the call was dropped"))?
        .map_err(|e| Error::internal_in("storage", e))
}

/// Takes one more reference to stored content for the transaction `c`, and makes sure the bytes
/// are in the store while the row is held (see the module docs). Missing bytes answer 503.
pub(crate) fn reference_stored(
    c: &mut DbConn,
    storage: &BlobStore,
    id: &str,
    size: i64,
    md5: &str,
    t: i64,
) -> Result<()> {
    // A row that was counted before this upsert cannot have been claimed by the sweep (it takes
    // only rows counted by none, and deletes row and bytes together), so its bytes are there.
    if coffer_store::content::reference_blob(c, id, size, md5, t)? > 1 {
        return Ok(());
    }
    let key = BlobKey::parse(id).map_err(|e| Error::internal_in("blob key", e))?;
    let store = storage.clone();
    if wait(async move { store.exists(&key).await })? {
        return Ok(());
    }
    log::warn!("blob {id} was deleted while it was being stored again; the commit is refused");
    Err(ApiError::new(ErrorCode::ServiceUnavailable)
        .with_message("The content was removed while it was stored; send it again.")
        .into())
}

/// Deletes a blob nothing counts a reference to, row and bytes, in the transaction `c`; false
/// (nothing done) when it is counted again. A key that is not a blob key has no bytes to delete.
pub(crate) fn delete_unreferenced(c: &mut DbConn, storage: &BlobStore, id: &str) -> Result<bool> {
    if !coffer_store::content::forget_blob(c, id)? {
        return Ok(false);
    }
    if let Ok(key) = BlobKey::parse(id) {
        let store = storage.clone();
        wait(async move { store.delete(&key).await })?;
    }
    Ok(true)
}
