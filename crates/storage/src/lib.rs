//! Coffer's blob store: content-addressed file content on a local directory or an
//! S3-compatible object store, with fingerprints computed as the bytes stream in, byte-range
//! reads, and the staging of chunked uploads.
//!
//! It sits below `service` (no database, no HTTP server): the service layer and the SFTP
//! front-end store content here and keep the returned [`BlobKey`] in their rows.
//!
//! # Storage URL
//!
//! [`BlobStore::open`] takes one string:
//!
//! ```text
//! storage-url = local-url / s3-url
//! local-url   = "file://" absolute-path          ; file:///var/lib/coffer/content
//!             / path                             ; /var/lib/coffer/content, or relative to
//!                                                ; the working directory
//! s3-url      = "s3://" bucket [ "/" prefix ] [ "?" param *( "&" param ) ]
//! prefix      = segment *( "/" segment )         ; segment: [A-Za-z0-9._-]+, not "." or ".."
//! param       = "endpoint=" url                  ; e.g. http://127.0.0.1:9000 (default: AWS)
//!             / "region=" name                   ; default: AWS_REGION, else us-east-1
//!             / "allow_http=" ("true" / "false") ; plain HTTP endpoints (tests, private nets)
//!             / "virtual_hosted_style=" ("true" / "false")  ; default false: path-style
//!             / "access_key_id=" id              ; default: AWS_ACCESS_KEY_ID
//!             / "secret_access_key=" secret      ; default: AWS_SECRET_ACCESS_KEY
//!             / "session_token=" token           ; default: AWS_SESSION_TOKEN
//! ```
//!
//! Every `AWS_*` environment variable the S3 client understands (credentials, region,
//! endpoint, web identity, container credentials) applies first; URL parameters win over
//! it. An unknown parameter is refused so that a typo does not silently fall back to a
//! default. Values are URL-decoded. Neither [`BlobStore::describe`] nor any error message shows
//! a credential.
//!
//! # Layout
//!
//! Under a local directory, or under the prefix of the bucket:
//!
//! ```text
//! blobs/ab/cd/abcd…   one object per distinct content, named by its sha3-256 (64 hex digits)
//! staging/<upload>/…  an upload in progress: on S3 one object per chunk (`<index:08>`,
//!                     1-based); locally the chunks one after the other in `data`, where each
//!                     ends in `ends`, and a chunk ahead of a gap aside as `<index:08>`
//! tmp/<random>        content being written (local), or written but not yet named (S3)
//! ```
//!
//! # Guarantees
//!
//! - **Content addressing and dedup.** A blob's key is the hex sha3-256 of its bytes. Storing
//!   content that is already there drops the new copy and answers `created: false`.
//! - **Fingerprints as the bytes pass.** md5 and sha3-256 are computed from the stream while
//!   it is written, never by reading the stored blob back.
//! - **Atomic appearance.** A reader never sees part of a blob: locally content is written to
//!   `tmp/`, fsynced and then hard-linked (or renamed) to its name; on S3 it is written to
//!   `tmp/` with a single PUT or a multipart upload (both appear whole) and then copied to its
//!   name.
//! - **Flat memory.** Reads come in pieces of at most [`READ_CHUNK`] bytes locally; S3 uploads
//!   buffer at most a few parts (8 MiB each, growing only past 1,000 parts to stay within the
//!   10,000 parts S3 allows). Nothing holds a whole blob.
//! - **Limits.** `put_stream` and `stage_chunk` refuse with [`StorageError::TooLarge`] as soon
//!   as more than `limit` bytes have arrived, and leave nothing behind (a dropped future
//!   removes its temporary file, or aborts its multipart upload, as well).
//!
//! # Staged (chunked) uploads and the hasher cache
//!
//! Chunks live in the store itself, so any node of a cluster sharing the store can take the
//! next chunk. To keep "fingerprints without a second read" for chunked uploads, every
//! [`BlobStore`] (and its clones; the service opens one per process) keeps the running md5 and
//! sha3-256 state per upload:
//!
//! - the node that took chunks `1..n-1` in order hashes chunk `n` as it streams in and keeps the
//!   new state (and the one before it, so that a retry of the last chunk continues too). Locally
//!   the chunk's sha3-256 runs on a thread of its own a few MiB behind the write, and the chunk
//!   is answered once its bytes are written and its md5 done: that thread finishes the chunk
//!   while the next one arrives, whose sha3 thread continues from its state. At most a few MiB
//!   of an upload wait for sha3 at any time (the receive waits beyond that), and a thread ends
//!   once its chunk's bytes are hashed, so an abandoned upload leaves only a small state in
//!   the cache;
//! - at commit, when the state covers exactly chunks `1..=chunks` and every staged chunk is
//!   still the copy that was hashed (local: same inode, size and mtime; S3: same size and
//!   ETag), the key is known before any byte moves: locally the commit is an fsync and a
//!   hard link of the staged data file (the chunks were appended to it as they came);
//!   on S3 the chunks are streamed once straight into the final object, their sha3 checked
//!   on the way (CPU only, the bytes pass anyway) before the object is completed;
//! - otherwise (a chunk came through another node, chunks arrived out of order, the process
//!   restarted, or the cache forgot the upload) the commit hashes the staged bytes once (on
//!   S3 while concatenating them into the blob).
//!
//! Either way the fingerprints are identical; the commit (or the next chunk's sha3) waits for
//! the running state where it needs it. The service must not run `commit_staged`
//! concurrently with `stage_chunk` for the same upload.

//!
//! # Runtime and errors
//!
//! Every method runs on a Tokio runtime (actix-web's workers are Tokio runtimes): local file
//! work goes to its blocking pool, S3 parts upload as tasks on it. The returned futures are
//! `Send` when the input stream is. Callers map their input stream's error to a
//! [`StorageError`], e.g. an actix-web payload with
//! `payload.map_err(|e| StorageError::Aborted(e.to_string()))`.

#![forbid(unsafe_code)]

mod error;
mod hash;
mod local;
mod s3;

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::Stream;

pub use error::StorageError;
use hash::{Fingerprinter, HashCache, Intake, StagedHash};

/// The largest piece a local read yields, and the size of the pieces internal copies use.
pub const READ_CHUNK: usize = 256 * 1024;

/// A blob's name: the lowercase hex sha3-256 of its content (64 characters).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobKey(String);

impl BlobKey {
    /// Accepts exactly 64 lowercase hexadecimal digits.
    pub fn parse(s: &str) -> Result<BlobKey, StorageError> {
        if s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Ok(BlobKey(s.to_owned()))
        } else {
            Err(StorageError::InvalidName)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `blobs/ab/cd/<key>`, relative to the store's root.
    pub(crate) fn relative_path(&self) -> String {
        format!("blobs/{}/{}/{}", &self.0[..2], &self.0[2..4], self.0)
    }
}

impl fmt::Display for BlobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for BlobKey {
    type Err = StorageError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BlobKey::parse(s)
    }
}

impl AsRef<str> for BlobKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// What storing content produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutOutcome {
    pub key: BlobKey,
    pub size: u64,
    /// Lowercase hex md5 of the content.
    pub md5: String,
    /// Lowercase hex sha3-256 of the content (equal to `key`).
    pub sha3_256: String,
    /// False when identical content was already stored and the new copy was dropped.
    pub created: bool,
}

/// A blob being read: its total size and the requested bytes as a stream of bounded pieces.
pub struct BlobRead {
    /// The size of the whole blob, whatever range was asked for.
    pub size: u64,
    pub stream: BoxStream<'static, Result<Bytes, StorageError>>,
}

impl fmt::Debug for BlobRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobRead")
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// The blob store. Cheap to clone; clones share the backend and the hasher cache.
#[derive(Clone)]
pub struct BlobStore {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    cache: HashCache,
}

enum Backend {
    Local(local::Local),
    S3(s3::S3),
}

impl fmt::Debug for BlobStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlobStore({})", self.describe())
    }
}

impl BlobStore {
    /// Opens the store a storage URL names (see the crate docs for the grammar). A local
    /// directory and its `blobs/`, `staging/` and `tmp/` subdirectories are created when
    /// missing; an S3 store is not contacted until the first operation.
    pub fn open(url: &str) -> Result<BlobStore, StorageError> {
        let backend = if let Some(rest) = url.strip_prefix("s3://") {
            Backend::S3(s3::S3::open(rest)?)
        } else if url.starts_with("file:") {
            let parsed = url::Url::parse(url)
                .map_err(|e| StorageError::InvalidUrl(format!("file URL: {e}")))?;
            let path = parsed.to_file_path().map_err(|()| {
                StorageError::InvalidUrl("a file URL needs an absolute path and no host".into())
            })?;
            Backend::Local(local::Local::open(path)?)
        } else if url.contains("://") {
            let scheme = url.split("://").next().unwrap_or_default();
            return Err(StorageError::InvalidUrl(format!(
                "unknown scheme {scheme:?}: use file://, s3:// or a plain path"
            )));
        } else if url.is_empty() {
            return Err(StorageError::InvalidUrl("empty".into()));
        } else {
            Backend::Local(local::Local::open(url.into())?)
        };
        Ok(BlobStore {
            inner: Arc::new(Inner {
                backend,
                cache: HashCache::default(),
            }),
        })
    }

    /// `local /abs/path` or `s3://bucket/prefix`; never a credential.
    pub fn describe(&self) -> String {
        match &self.inner.backend {
            Backend::Local(local) => local.describe(),
            Backend::S3(s3) => s3.describe(),
        }
    }

    /// Streams bytes into a new blob, hashing md5 and sha3-256 as they pass. Refuses with
    /// [`StorageError::TooLarge`] as soon as more than `limit` bytes arrive, leaving nothing
    /// behind. Identical content already stored is kept and the new copy dropped
    /// (`created: false`). The stream's errors end the put, also leaving nothing behind.
    pub async fn put_stream<S, E>(
        &self,
        stream: S,
        limit: Option<u64>,
    ) -> Result<PutOutcome, StorageError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: Into<StorageError>,
    {
        let mut intake = Intake::new(stream, limit);
        match &self.inner.backend {
            Backend::Local(local) => local.put_stream(&mut intake).await,
            Backend::S3(s3) => s3.put_stream(&mut intake).await,
        }
    }

    /// [`BlobStore::put_stream`] for content already in memory, without a limit. Locally, a few
    /// bytes (less than a hashing thread is started for) are stored in one blocking call.
    pub async fn put_bytes(&self, bytes: Bytes) -> Result<PutOutcome, StorageError> {
        if let Some(local) = self.small_local(bytes.len()) {
            return local.put_small(bytes).await;
        }
        let stream = futures_util::stream::iter([Ok::<_, StorageError>(bytes)]);
        self.put_stream(stream, None).await
    }

    /// [`BlobStore::put_bytes`] on the calling thread, for a caller already on a thread that
    /// may block (so that the store and whatever follows it are one hand-off, not two). `None`
    /// when this store does not keep these bytes in one call (not local, or not a few bytes):
    /// the caller uses [`BlobStore::put_bytes`] then.
    pub fn put_small_here(&self, bytes: &[u8]) -> Option<Result<PutOutcome, StorageError>> {
        self.small_local(bytes.len())
            .map(|local| local.put_small_here(bytes))
    }

    /// Whether [`BlobStore::put_small_here`] stores `len` bytes.
    pub fn stores_small_here(&self, len: usize) -> bool {
        self.small_local(len).is_some()
    }

    /// The local store when it keeps `len` bytes in one blocking call: fewer bytes than a
    /// hashing thread is started for. The one rule of [`BlobStore::put_bytes`],
    /// [`BlobStore::put_small_here`] and [`BlobStore::stores_small_here`].
    fn small_local(&self, len: usize) -> Option<&local::Local> {
        match &self.inner.backend {
            Backend::Local(local) if (len as u64) < hash::SMALL => Some(local),
            _ => None,
        }
    }

    /// Reads a blob whole, or the bytes `start..=end_inclusive` of it. The stream yields
    /// bounded pieces; [`BlobRead::size`] is the size of the whole blob. A range outside the
    /// blob (or with `start > end`) is [`StorageError::InvalidRange`]; an empty blob has no
    /// valid range.
    pub async fn get(
        &self,
        key: &BlobKey,
        range: Option<(u64, u64)>,
    ) -> Result<BlobRead, StorageError> {
        match &self.inner.backend {
            Backend::Local(local) => local.get(key, range).await,
            Backend::S3(s3) => s3.get(key, range).await,
        }
    }

    pub async fn exists(&self, key: &BlobKey) -> Result<bool, StorageError> {
        match &self.inner.backend {
            Backend::Local(local) => local.exists(key).await,
            Backend::S3(s3) => s3.exists(key).await,
        }
    }

    /// Removes a blob; removing a missing blob succeeds.
    pub async fn delete(&self, key: &BlobKey) -> Result<(), StorageError> {
        match &self.inner.backend {
            Backend::Local(local) => local.delete(key).await,
            Backend::S3(s3) => s3.delete(key).await,
        }
    }

    /// Every blob key in the store (in no particular order); names under `blobs/` that are not
    /// keys, or sit under the wrong `ab/cd/` directory, are skipped.
    pub async fn list_keys(&self) -> Result<Vec<BlobKey>, StorageError> {
        match &self.inner.backend {
            Backend::Local(local) => local.list_keys().await,
            Backend::S3(s3) => s3.list_keys().await,
        }
    }

    /// Stores chunk `index` (from 1) of the staged upload `upload` (an id of 1 to 64 characters
    /// `[A-Za-z0-9_-]`; anything else, or index 0, is [`StorageError::InvalidName`]). Staging
    /// the same index again replaces the chunk atomically. Returns the number of bytes stored.
    /// `limit` applies to this chunk as for [`BlobStore::put_stream`]. When this store took
    /// the previous chunks in order it carries the upload's running fingerprints forward (see
    /// the crate docs).
    pub async fn stage_chunk<S, E>(
        &self,
        upload: &str,
        index: u32,
        stream: S,
        limit: Option<u64>,
    ) -> Result<u64, StorageError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: Into<StorageError>,
    {
        validate_upload(upload)?;
        if index == 0 {
            return Err(StorageError::InvalidName);
        }
        let cache = &self.inner.cache;
        let previous = cache.take(upload);
        // The state this chunk continues from, and the stamps of the chunks before it.
        let start = previous
            .as_ref()
            .and_then(|p| {
                if p.next == index {
                    Some((p.state.clone(), p.stamps.clone()))
                } else if p.next == index + 1 {
                    p.before_last.clone().map(|before| {
                        let mut stamps = p.stamps.clone();
                        stamps.pop();
                        (before, stamps)
                    })
                } else {
                    None
                }
            })
            .or_else(|| (index == 1).then(|| (Fingerprinter::new(), Vec::new())));
        let mut hasher = start.as_ref().map(|(state, _)| state.clone());
        let mut intake = Intake::new(stream, limit);
        let stored = match &self.inner.backend {
            Backend::Local(local) => {
                local
                    .stage_chunk(upload, index, &mut intake, hasher.as_mut())
                    .await
            }
            Backend::S3(s3) => {
                s3.stage_chunk(upload, index, &mut intake, hasher.as_mut())
                    .await
            }
        };
        match stored {
            Ok((size, stamp)) => {
                if let (Some((before, mut stamps)), Some(state)) = (start, hasher) {
                    stamps.push(stamp);
                    cache.put(
                        upload,
                        StagedHash {
                            next: index + 1,
                            state,
                            before_last: Some(before),
                            stamps,
                        },
                    );
                }
                // Otherwise the chunk did not continue the running state: an older state no
                // longer describes the staging and stays forgotten.
                Ok(size)
            }
            Err(e) => {
                // Nothing was replaced: what was hashed before still holds.
                if let Some(previous) = previous {
                    cache.put(upload, previous);
                }
                Err(e)
            }
        }
    }

    /// Turns staged chunks `1..=chunks` into one blob and removes the upload's staging. A
    /// missing chunk is [`StorageError::MissingChunk`] (the staging stays). `chunks == 0`
    /// stores the empty blob. See the crate docs for when the staged bytes are hashed.
    pub async fn commit_staged(
        &self,
        upload: &str,
        chunks: u32,
    ) -> Result<PutOutcome, StorageError> {
        self.commit_staged_reporting(upload, chunks)
            .await
            .map(|(outcome, _)| outcome)
    }

    /// [`BlobStore::commit_staged`], also telling whether the running hash was used (true) or
    /// the staged bytes were hashed during the commit (false).
    async fn commit_staged_reporting(
        &self,
        upload: &str,
        chunks: u32,
    ) -> Result<(PutOutcome, bool), StorageError> {
        validate_upload(upload)?;
        let cache = &self.inner.cache;
        let cached = cache.take(upload);
        let result = match &self.inner.backend {
            Backend::Local(local) => local.commit_staged(upload, chunks, cached.clone()).await,
            Backend::S3(s3) => s3.commit_staged(upload, chunks, cached.clone()).await,
        };
        match &result {
            Ok((outcome, fast)) => log::debug!(
                "storage: committed upload {upload} ({chunks} chunks) as {} ({})",
                outcome.key,
                if *fast {
                    "running hash"
                } else {
                    "hashed while concatenating"
                }
            ),
            Err(_) => {
                if let Some(cached) = cached {
                    cache.put(upload, cached);
                }
            }
        }
        result
    }

    /// Removes an upload's staged chunks; discarding an unknown upload succeeds.
    pub async fn discard_staged(&self, upload: &str) -> Result<(), StorageError> {
        validate_upload(upload)?;
        self.inner.cache.forget(upload);
        match &self.inner.backend {
            Backend::Local(local) => local.discard_staged(upload).await,
            Backend::S3(s3) => s3.discard_staged(upload).await,
        }
    }

    /// Removes what was left under `tmp/` by writes that never finished (a process killed in
    /// the middle of a put or a commit) and has not changed for `older_than`; answers how many
    /// went. A write in progress keeps changing its temporary, so a day is a safe age.
    pub async fn sweep_temporaries(
        &self,
        older_than: std::time::Duration,
    ) -> Result<usize, StorageError> {
        let before = SystemTime::now()
            .checked_sub(older_than)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        match &self.inner.backend {
            Backend::Local(local) => local.sweep_temporaries(before).await,
            Backend::S3(s3) => s3.sweep_temporaries(before).await,
        }
    }

    /// The staged uploads with the time their staging last changed, for the sweeper.
    pub async fn list_staged(&self) -> Result<Vec<(String, SystemTime)>, StorageError> {
        match &self.inner.backend {
            Backend::Local(local) => local.list_staged().await,
            Backend::S3(s3) => s3.list_staged().await,
        }
    }
}

/// Upload ids are `[A-Za-z0-9_-]{1,64}`.
pub(crate) fn validate_upload(upload: &str) -> Result<(), StorageError> {
    let ok = (1..=64).contains(&upload.len())
        && upload
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(StorageError::InvalidName)
    }
}

/// The name of a staged chunk inside its upload's staging.
pub(crate) fn chunk_name(index: u32) -> String {
    format!("{index:08}")
}

/// `(start, length)` of a requested inclusive range within a blob of `size` bytes.
pub(crate) fn resolve_range(
    range: Option<(u64, u64)>,
    size: u64,
) -> Result<(u64, u64), StorageError> {
    match range {
        None => Ok((0, size)),
        Some((start, end)) if start <= end && end < size => Ok((start, end - start + 1)),
        Some(_) => Err(StorageError::InvalidRange),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_ids() {
        let key = "a".repeat(64);
        assert_eq!(BlobKey::parse(&key).unwrap().as_str(), key);
        assert!(BlobKey::parse(&"A".repeat(64)).is_err());
        assert!(BlobKey::parse(&"a".repeat(63)).is_err());
        assert!(BlobKey::parse("../../etc/passwd").is_err());
        assert_eq!(
            BlobKey::parse(&key).unwrap().relative_path(),
            format!("blobs/aa/aa/{key}")
        );
        assert!(validate_upload("abc_DEF-123").is_ok());
        assert!(validate_upload("").is_err());
        assert!(validate_upload(&"x".repeat(65)).is_err());
        assert!(validate_upload("a/b").is_err());
        assert!(validate_upload("..").is_err());
    }

    #[test]
    fn ranges() {
        assert_eq!(resolve_range(None, 10).unwrap(), (0, 10));
        assert_eq!(resolve_range(Some((0, 0)), 10).unwrap(), (0, 1));
        assert_eq!(resolve_range(Some((9, 9)), 10).unwrap(), (9, 1));
        assert_eq!(resolve_range(Some((2, 5)), 10).unwrap(), (2, 4));
        assert!(resolve_range(Some((5, 10)), 10).is_err());
        assert!(resolve_range(Some((6, 5)), 10).is_err());
        assert!(resolve_range(Some((0, 0)), 0).is_err());
    }

    #[test]
    fn urls() {
        assert!(matches!(
            BlobStore::open("ftp://x/y"),
            Err(StorageError::InvalidUrl(_))
        ));
        assert!(matches!(
            BlobStore::open(""),
            Err(StorageError::InvalidUrl(_))
        ));
        let err = BlobStore::open("s3://bucket/p?secret_access_key=hunter2&bogus=1").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let s3 = BlobStore::open(
            "s3://bucket/some/prefix/?endpoint=http://127.0.0.1:9&allow_http=true\
             &access_key_id=AKID&secret_access_key=hunter2&region=eu-west-1",
        )
        .unwrap();
        assert_eq!(s3.describe(), "s3://bucket/some/prefix");
        assert!(!format!("{s3:?}").contains("hunter2"));
        assert!(BlobStore::open("s3://bucket/a%20b").is_err());
        let dotted = BlobStore::open("s3://bucket/a/../b?region=x").unwrap();
        assert_eq!(dotted.describe(), "s3://bucket/b");
        assert!(BlobStore::open("s3:///prefix").is_err());
        let dir = tempfile::tempdir().unwrap();
        let url = url::Url::from_directory_path(dir.path()).unwrap();
        let local = BlobStore::open(url.as_str()).unwrap();
        assert_eq!(local.describe(), format!("local {}", dir.path().display()));
        assert!(dir.path().join("blobs").is_dir());
        assert!(dir.path().join("staging").is_dir());
        assert!(dir.path().join("tmp").is_dir());
    }

    /// Local always; S3 too when `COFFER_TEST_S3_URL` is set (each under a fresh prefix).
    fn stores(test: &str) -> Vec<(tempfile::TempDir, String)> {
        let dir = tempfile::tempdir().unwrap();
        let mut out = vec![(dir, String::new())];
        out[0].1 = out[0].0.path().join("c").to_str().unwrap().to_owned();
        if let Ok(base) = std::env::var("COFFER_TEST_S3_URL") {
            let (path, query) = base.split_once('?').unwrap_or((&base, ""));
            let url = format!("{path}/{test}-{}?{query}", uuid::Uuid::new_v4().simple());
            out.push((tempfile::tempdir().unwrap(), url));
        }
        out
    }

    fn chunk(len: usize, seed: u8) -> Bytes {
        Bytes::from(
            (0..len)
                .map(|i| (i as u8).wrapping_mul(seed))
                .collect::<Vec<u8>>(),
        )
    }

    async fn stage(store: &BlobStore, upload: &str, index: u32, bytes: &Bytes) {
        let stream = futures_util::stream::iter([Ok::<_, StorageError>(bytes.clone())]);
        store
            .stage_chunk(upload, index, stream, None)
            .await
            .unwrap();
    }

    /// The running hash is used exactly when this store took the chunks in order and they are
    /// still the copies it hashed; the fingerprints are the same either way.
    #[tokio::test]
    async fn commit_uses_the_running_hash_when_it_can() {
        for (_dir, url) in stores("fast-path") {
            let a = BlobStore::open(&url).unwrap();
            let b = BlobStore::open(&url).unwrap();
            let parts = [chunk(70_000, 3), chunk(9 << 20, 5), chunk(10, 7)];
            let whole: Vec<u8> = parts.concat();
            let mut want = hash::Fingerprinter::new();
            want.update(&whole);
            let want = want.finish().unwrap();

            // In order on one store: the running hash.
            for (i, p) in parts.iter().enumerate() {
                stage(&a, "in-order", i as u32 + 1, p).await;
            }
            let (out, fast) = a.commit_staged_reporting("in-order", 3).await.unwrap();
            assert!(fast, "{url}");
            assert_eq!((out.md5.as_str(), out.size), (want.md5.as_str(), want.size));
            assert_eq!(out.key, want.key);
            assert!(out.created);

            // A retry of the last chunk continues; one chunk alone too.
            stage(&a, "retry", 1, &parts[0]).await;
            stage(&a, "retry", 2, &chunk(5, 1)).await;
            stage(&a, "retry", 2, &parts[1]).await;
            stage(&a, "retry", 3, &parts[2]).await;
            let (out, fast) = a.commit_staged_reporting("retry", 3).await.unwrap();
            assert!(fast && !out.created && out.key == want.key, "{url}");
            stage(&a, "one", 1, &Bytes::from_static(b"abc")).await;
            let (out, fast) = a.commit_staged_reporting("one", 1).await.unwrap();
            assert!(fast, "{url}");
            assert_eq!(out.md5, "900150983cd24fb0d6963f7d28e17f72");

            // Another store took a chunk: hashed while concatenating.
            stage(&a, "mixed", 1, &parts[0]).await;
            stage(&b, "mixed", 2, &parts[1]).await;
            stage(&a, "mixed", 3, &parts[2]).await;
            let (out, fast) = a.commit_staged_reporting("mixed", 3).await.unwrap();
            assert!(!fast, "{url}");
            assert_eq!((out.md5.as_str(), &out.key), (want.md5.as_str(), &want.key));

            // A chunk replaced through another store after this one hashed it.
            stage(&a, "replaced", 1, &parts[0]).await;
            stage(&a, "replaced", 2, &chunk(9 << 20, 11)).await;
            stage(&a, "replaced", 3, &parts[2]).await;
            stage(&b, "replaced", 2, &parts[1]).await;
            let (out, fast) = a.commit_staged_reporting("replaced", 3).await.unwrap();
            assert!(!fast, "{url}");
            assert_eq!((out.md5.as_str(), &out.key), (want.md5.as_str(), &want.key));

            // Committed elsewhere: no state at all.
            for (i, p) in parts.iter().enumerate() {
                stage(&a, "elsewhere", i as u32 + 1, p).await;
            }
            let (out, fast) = b.commit_staged_reporting("elsewhere", 3).await.unwrap();
            assert!(!fast, "{url}");
            assert_eq!((out.md5.as_str(), &out.key), (want.md5.as_str(), &want.key));

            // Fewer chunks committed than hashed: hashed again, the extra chunk ignored.
            for (i, p) in parts.iter().enumerate() {
                stage(&a, "fewer", i as u32 + 1, p).await;
            }
            let (out, fast) = a.commit_staged_reporting("fewer", 2).await.unwrap();
            assert!(!fast, "{url}");
            assert_eq!(out.size, (70_000 + (9 << 20)) as u64);
            assert!(a.list_staged().await.unwrap().is_empty());
        }
    }

    /// Chunks of odd sizes (a byte, just under and over a batch, below and above the size
    /// hashed without a thread) give the fingerprints of their bytes in one stream, whether
    /// they come in order (the running hash), out of order (kept aside, hashed at the commit),
    /// or in order with the running state's sha3 lost to a failed thread (hashed at the
    /// commit, no panic).
    #[tokio::test]
    async fn odd_sized_chunks_in_any_order_and_a_failed_hasher() {
        let batch = hash::BATCH;
        let sizes = [1, batch - 1, 3 * batch + 1, 64 * 1024 - 1, batch + 1, 13];
        let parts: Vec<Bytes> = sizes
            .iter()
            .enumerate()
            .map(|(i, &len)| chunk(len, 2 * i as u8 + 3))
            .collect();
        let whole: Vec<u8> = parts.concat();
        let mut want = hash::Fingerprinter::new();
        want.update(&whole);
        let want = want.finish().unwrap();
        let n = parts.len() as u32;
        for (_dir, url) in stores("odd-sizes") {
            let store = BlobStore::open(&url).unwrap();

            for (i, p) in parts.iter().enumerate() {
                stage(&store, "in-order", i as u32 + 1, p).await;
            }
            let (out, fast) = store.commit_staged_reporting("in-order", n).await.unwrap();
            assert!(fast, "{url}");
            assert_eq!(
                (&out.key, out.md5.as_str(), out.size),
                (&want.key, want.md5.as_str(), want.size),
                "{url}"
            );

            for i in [3, 1, 6, 2, 5, 4] {
                stage(&store, "shuffled", i, &parts[i as usize - 1]).await;
            }
            let (out, fast) = store.commit_staged_reporting("shuffled", n).await.unwrap();
            assert!(!fast, "{url}");
            assert_eq!(
                (&out.key, out.md5.as_str(), out.size),
                (&want.key, want.md5.as_str(), want.size),
                "{url}"
            );

            for (i, p) in parts.iter().enumerate() {
                stage(&store, "failed", i as u32 + 1, p).await;
            }
            let mut cached = store.inner.cache.take("failed").unwrap();
            cached.state.fail_sha3();
            store.inner.cache.put("failed", cached);
            let (out, fast) = store.commit_staged_reporting("failed", n).await.unwrap();
            assert!(!fast, "{url}");
            assert_eq!(
                (&out.key, out.md5.as_str(), out.size),
                (&want.key, want.md5.as_str(), want.size),
                "{url}"
            );
            assert!(store.list_staged().await.unwrap().is_empty());
        }
    }
}
