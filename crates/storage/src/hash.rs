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

    /// Hashes `batch` with sha3-256 here while md5 and then `beside` (a write of the same
    /// bytes) run on a scoped thread: sha3 costs about as much as md5 and the write together,
    /// so a batch takes about the time of the sha3 alone.
    pub fn update_batch<T: Send>(
        &mut self,
        batch: &[Bytes],
        beside: impl FnOnce() -> T + Send,
    ) -> T {
        let Fingerprinter { md5, sha3, size } = self;
        let bytes = batch.iter().map(|p| p.len() as u64).sum::<u64>();
        *size += bytes;
        if bytes < 64 * 1024 {
            // Not worth a thread.
            for piece in batch {
                feed(md5, piece);
                feed(sha3, piece);
            }
            return beside();
        }
        std::thread::scope(|scope| {
            let other = scope.spawn(move || {
                for piece in batch {
                    feed(md5, piece);
                }
                beside()
            });
            for piece in batch {
                feed(sha3, piece);
            }
            match other.join() {
                Ok(out) => out,
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
        let wrote =
            batched.update_batch(&[Bytes::from_static(b"a"), Bytes::from_static(b"bc")], || 7);
        assert_eq!(wrote, 7);
        assert_eq!(batched.finish(), abc);
    }
}
