//! Fingerprints computed as the bytes pass, the size limit, and the per-store cache of running
//! hasher states for staged uploads.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use openssl::hash::{Hasher, MessageDigest};

use crate::{BlobKey, PutOutcome, StorageError};

/// The running md5 and sha3-256 of the bytes seen so far, and their count. Cloning snapshots it.
///
/// The digests are OpenSSL's (assembly, the fastest this crate can reach: about a quarter
/// faster than the portable Rust ones here), from the OpenSSL the build already links.
#[derive(Clone)]
pub(crate) struct Fingerprinter {
    md5: Hasher,
    sha3: Hasher,
    size: u64,
}

fn hasher(md: MessageDigest) -> Hasher {
    // Creating a digest context fails only when OpenSSL cannot allocate one.
    Hasher::new(md).expect("OpenSSL digest context")
}

/// Feeds bytes to a digest; an update of a live context cannot fail.
fn feed(h: &mut Hasher, bytes: &[u8]) {
    h.update(bytes).expect("OpenSSL digest update");
}

fn hex_of(h: &mut Hasher) -> String {
    hex::encode(&*h.finish().expect("OpenSSL digest final"))
}

/// The bytes the callers of [`Fingerprinter::absorb`] gather into one batch: large enough that
/// handing a batch between threads costs nothing next to hashing it.
pub(crate) const BATCH: usize = 1 << 20;

/// How many batches the sha3 thread of [`Fingerprinter::absorb`] may lag behind: enough to
/// ride out a stall of either side, little memory per upload.
const SHA3_LAG: usize = 2;

/// A stream shorter than this is hashed on the caller's thread.
const SMALL: u64 = 64 * 1024;

/// Finished fingerprints of some content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprints {
    pub key: BlobKey,
    pub size: u64,
    pub md5: String,
    pub sha3_256: String,
}

impl Fingerprints {
    pub fn outcome(self, created: bool) -> PutOutcome {
        PutOutcome {
            key: self.key,
            size: self.size,
            md5: self.md5,
            sha3_256: self.sha3_256,
            created,
        }
    }
}

impl Fingerprinter {
    pub fn new() -> Self {
        Fingerprinter {
            md5: hasher(MessageDigest::md5()),
            sha3: hasher(MessageDigest::sha3_256()),
            size: 0,
        }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        feed(&mut self.md5, bytes);
        feed(&mut self.sha3, bytes);
        self.size += bytes.len() as u64;
    }

    /// Hashes the batches `next` yields (until `None`) while `each` takes them too (a write of
    /// the same bytes). sha3-256 costs about as much as md5 and the write together, so it runs
    /// on a scoped thread of its own for the whole stream, up to [`SHA3_LAG`] batches behind,
    /// while md5 and `each` run here: neither side waits for the other batch by batch, and one
    /// thread serves the whole stream instead of one per batch. A stream that is one small
    /// batch is hashed here, without a thread. Stops at the first error of `each`, leaving the
    /// state partial (the caller drops it).
    pub fn absorb<E>(
        &mut self,
        mut next: impl FnMut() -> Option<Vec<Bytes>>,
        mut each: impl FnMut(&[Bytes]) -> Result<(), E>,
    ) -> Result<(), E> {
        let Some(first) = next() else {
            return Ok(());
        };
        let bytes = |batch: &[Bytes]| batch.iter().map(|p| p.len() as u64).sum::<u64>();
        if bytes(&first) < SMALL {
            // Batches are full but the last, so this one is the whole stream: not worth a
            // thread.
            let Fingerprinter { md5, sha3, size } = self;
            *size += bytes(&first);
            for piece in &first {
                feed(md5, piece);
                feed(sha3, piece);
            }
            return each(&first);
        }
        let Fingerprinter { md5, sha3, size } = self;
        std::thread::scope(|scope| {
            let (to_sha3, batches) = std::sync::mpsc::sync_channel::<Vec<Bytes>>(SHA3_LAG);
            let worker = scope.spawn(move || {
                for batch in batches {
                    for piece in &batch {
                        feed(sha3, piece);
                    }
                }
            });
            let mut result = Ok(());
            let mut batch = Some(first);
            while let Some(b) = batch.take() {
                *size += bytes(&b);
                // Cloning a batch clones its pieces' handles, not their bytes.
                if to_sha3.send(b.clone()).is_err() {
                    // The sha3 thread is gone: only a panic ends it early, carried below.
                    break;
                }
                for piece in &b {
                    feed(md5, piece);
                }
                if let Err(e) = each(&b) {
                    result = Err(e);
                    break;
                }
                batch = next();
            }
            drop(to_sha3);
            match worker.join() {
                Ok(()) => result,
                // A panic there is a bug; carry it here.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }

    pub fn finish(mut self) -> Fingerprints {
        let sha3 = hex_of(&mut self.sha3);
        Fingerprints {
            key: BlobKey(sha3.clone()),
            size: self.size,
            md5: hex_of(&mut self.md5),
            sha3_256: sha3,
        }
    }
}

/// The caller's stream with the size limit applied as pieces arrive.
pub(crate) struct Intake<S> {
    stream: S,
    limit: Option<u64>,
    received: u64,
}

impl<S, E> Intake<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: Into<StorageError>,
{
    pub fn new(stream: S, limit: Option<u64>) -> Self {
        Intake {
            stream,
            limit,
            received: 0,
        }
    }

    /// The next non-empty piece, `None` at the end; [`StorageError::TooLarge`] as soon as the
    /// running total passes the limit.
    pub async fn next(&mut self) -> Result<Option<Bytes>, StorageError> {
        loop {
            match self.stream.next().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(piece)) if piece.is_empty() => continue,
                Some(Ok(piece)) => {
                    self.received += piece.len() as u64;
                    if self.limit.is_some_and(|limit| self.received > limit) {
                        return Err(StorageError::TooLarge);
                    }
                    return Ok(Some(piece));
                }
            }
        }
    }
}

/// Identifies one stored copy of a staged chunk without reading it: for a local file its
/// device, inode, length and modification time; for an S3 object its size, ETag and
/// modification time. A chunk replaced after it was hashed gets a different stamp.
pub(crate) type Stamp = String;

/// The running hash of a staged upload on the node that took its chunks in order.
#[derive(Clone)]
pub(crate) struct StagedHash {
    /// Chunks `1..next` went through `state`, in order.
    pub next: u32,
    pub state: Fingerprinter,
    /// The state before chunk `next - 1`, so that a retry of the last chunk continues.
    pub before_last: Option<Fingerprinter>,
    /// The stamp of chunk `i + 1` as it was when hashed.
    pub stamps: Vec<Stamp>,
}

/// At most this many uploads keep a running state; past it the oldest-started ones are
/// forgotten (their commit then hashes the staged bytes once).
const CACHE_CAPACITY: usize = 4096;

/// Running hasher states per upload id, shared by the clones of one [`crate::BlobStore`].
#[derive(Default)]
pub(crate) struct HashCache {
    entries: Mutex<HashMap<String, (u64, StagedHash)>>,
    serial: Mutex<u64>,
}

impl HashCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, StagedHash)>> {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn take(&self, upload: &str) -> Option<StagedHash> {
        self.lock().remove(upload).map(|(_, entry)| entry)
    }

    pub fn put(&self, upload: &str, entry: StagedHash) {
        let serial = {
            let mut serial = self.serial.lock().unwrap_or_else(|p| p.into_inner());
            *serial += 1;
            *serial
        };
        let mut entries = self.lock();
        if entries.len() >= CACHE_CAPACITY && !entries.contains_key(upload) {
            if let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, (serial, _))| *serial)
                .map(|(id, _)| id.clone())
            {
                entries.remove(&oldest);
            }
        }
        entries.insert(upload.to_owned(), (serial, entry));
    }

    pub fn forget(&self, upload: &str) {
        self.lock().remove(upload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_fingerprints() {
        let empty = Fingerprinter::new().finish();
        assert_eq!(empty.md5, "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(
            empty.sha3_256,
            "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a"
        );
        let mut abc = Fingerprinter::new();
        abc.update(b"a");
        abc.update(b"bc");
        let abc = abc.finish();
        assert_eq!(abc.md5, "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(
            abc.sha3_256,
            "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532"
        );
        assert_eq!(abc.size, 3);
        let mut batched = Fingerprinter::new();
        let mut batches = vec![vec![Bytes::from_static(b"a"), Bytes::from_static(b"bc")]];
        let mut seen = 0;
        batched
            .absorb(
                || batches.pop(),
                |b| {
                    seen += b.len();
                    Ok::<_, ()>(())
                },
            )
            .unwrap();
        assert_eq!(seen, 2);
        assert_eq!(batched.finish(), abc);
    }

    /// Many full batches (the threaded path) give the fingerprints of the bytes in one stream,
    /// and an error of `each` stops the stream there.
    #[test]
    fn absorbed_batches_match_one_stream() {
        let data: Vec<u8> = (0..(3 * BATCH + 12_345))
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let mut whole = Fingerprinter::new();
        whole.update(&data);
        let whole = whole.finish();
        let batches: Vec<Vec<Bytes>> = data
            .chunks(BATCH)
            .map(|c| c.chunks(100_000).map(Bytes::copy_from_slice).collect())
            .collect();
        let mut queue = batches.clone().into_iter();
        let mut written = Vec::new();
        let mut absorbed = Fingerprinter::new();
        absorbed
            .absorb(
                || queue.next(),
                |b| {
                    for p in b {
                        written.extend_from_slice(p);
                    }
                    Ok::<_, ()>(())
                },
            )
            .unwrap();
        assert_eq!(written, data);
        assert_eq!(absorbed.finish(), whole);

        let mut queue = batches.into_iter();
        let mut calls = 0;
        let failed = Fingerprinter::new().absorb(
            || queue.next(),
            |_| {
                calls += 1;
                if calls == 2 {
                    Err("disk full")
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(failed, Err("disk full"));
        assert_eq!(calls, 2);
    }
}
