//! Fingerprints computed as the bytes pass, the size limit, and the per-store cache of running
//! hasher states for staged uploads.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use openssl::hash::{Hasher, MessageDigest};

use crate::{BlobKey, PutOutcome, StorageError};

/// The running md5 and sha3-256 of the bytes seen so far, and their count. Cloning snapshots it.
///
/// The digests are OpenSSL's (assembly, the fastest this crate can reach: about a quarter
/// faster than the portable Rust ones here), from the OpenSSL the build already links.
///
/// The sha3-256 part may still be in the works: [`Fingerprinter::absorb`] hands the bytes to a
/// thread of their own and returns once md5 and the caller's write are done, so that a chunk's
/// response does not wait for its sha3 (see [`Sha3`]). Whoever needs the digest waits for it.
/// Should such a thread fail, the state has no sha3-256 any more: [`Fingerprinter::finish`]
/// answers `None` and the caller hashes the stored bytes instead.
#[derive(Clone)]
pub(crate) struct Fingerprinter {
    md5: Hasher,
    sha3: Sha3,
    size: u64,
    /// Shared by every state of one stream (an upload's chunks, their snapshots): bounds the
    /// bytes handed to sha3 threads and not yet hashed.
    budget: Arc<Budget>,
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

fn relock<'a, T>(
    r: Result<MutexGuard<'a, T>, std::sync::PoisonError<MutexGuard<'a, T>>>,
) -> MutexGuard<'a, T> {
    r.unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The bytes the callers of [`Fingerprinter::absorb`] gather into one batch: large enough that
/// handing a batch between threads costs nothing next to hashing it.
pub(crate) const BATCH: usize = 1 << 20;

/// How many batches of one stream (one upload, across its chunks) may be handed to sha3 threads
/// and not yet hashed: enough to keep sha3 busy over a chunk's round trip (the response, the
/// client's next request, the first batch of the next chunk: four batches, ~12 ms of sha3 here,
/// did not always last that long), little memory per upload (the receive waits beyond it).
const SHA3_LAG: usize = 8;

/// A stream shorter than this is hashed on the caller's thread.
pub(crate) const SMALL: u64 = 64 * 1024;

/// A sha3-256 state at hand, or the one a thread delivers once it has hashed the batches it was
/// given (after the state it continues from, itself perhaps still in the works: the threads of
/// an upload's chunks form a chain, each waiting for the one before). A thread lives only until
/// its batches are hashed: none outlives its chunk's bytes, whatever happens to the upload.
/// `Failed` once a thread this state depends on failed: its bytes are lost to sha3, so the
/// state only counts md5 and the size from then on.
#[derive(Clone)]
enum Sha3 {
    Ready(Hasher),
    Running(Arc<Promise>),
    Failed,
}

/// Where a sha3 thread delivers its final state: `Some(None)` when it failed (a panic).
#[derive(Default)]
struct Promise {
    slot: Mutex<Option<Option<Hasher>>>,
    delivered: Condvar,
}

impl Promise {
    fn deliver(&self, state: Option<Hasher>) {
        *relock(self.slot.lock()) = Some(state);
        self.delivered.notify_all();
    }

    /// Blocks until the state is delivered; `None` when the thread failed.
    fn wait(&self) -> Option<Hasher> {
        let mut slot = relock(self.slot.lock());
        loop {
            match &*slot {
                Some(state) => return state.clone(),
                None => slot = relock(self.delivered.wait(slot)),
            }
        }
    }
}

impl Sha3 {
    /// The state at hand, waiting for a thread still hashing; `None` once a thread failed.
    fn resolve(&mut self) -> Option<&mut Hasher> {
        if let Sha3::Running(promise) = self {
            *self = match promise.wait() {
                Some(state) => Sha3::Ready(state),
                None => Sha3::Failed,
            };
        }
        match self {
            Sha3::Ready(state) => Some(state),
            Sha3::Running(_) | Sha3::Failed => None,
        }
    }
}

/// Batches handed to sha3 threads and not yet hashed, for one stream; see [`SHA3_LAG`].
#[derive(Default)]
struct Budget {
    /// `(queued batches, broken)`: broken once a sha3 thread failed, so that nobody waits for
    /// batches it will never hash.
    state: Mutex<(usize, bool)>,
    freed: Condvar,
}

impl Budget {
    fn acquire(&self) {
        let mut state = relock(self.state.lock());
        while state.0 >= SHA3_LAG && !state.1 {
            state = relock(self.freed.wait(state));
        }
        state.0 += 1;
    }

    fn release(&self) {
        let mut state = relock(self.state.lock());
        state.0 = state.0.saturating_sub(1);
        self.freed.notify_all();
    }

    fn break_off(&self) {
        relock(self.state.lock()).1 = true;
        self.freed.notify_all();
    }

    fn broken(&self) -> bool {
        relock(self.state.lock()).1
    }
}

/// A sha3 thread's end: delivers its state, or on a panic marks the promise and the budget
/// failed, so that nothing waits forever.
struct Delivery {
    promise: Arc<Promise>,
    budget: Arc<Budget>,
    done: bool,
}

impl Drop for Delivery {
    fn drop(&mut self) {
        if !self.done {
            self.budget.break_off();
            self.promise.deliver(None);
        }
    }
}

/// Starts a thread that continues `start` with the batches sent to it and delivers the result
/// to the returned promise; `None` when no thread can be started (the caller hashes itself).
fn spawn_sha3(
    start: Sha3,
    budget: Arc<Budget>,
) -> Option<(std::sync::mpsc::Sender<Vec<Bytes>>, Arc<Promise>)> {
    let (to_sha3, batches) = std::sync::mpsc::channel::<Vec<Bytes>>();
    let promise = Arc::new(Promise::default());
    let mut delivery = Delivery {
        promise: promise.clone(),
        budget: budget.clone(),
        done: false,
    };
    std::thread::Builder::new()
        .name("coffer-sha3".into())
        .spawn(move || {
            let mut start = start;
            // The state it continues from failed: so does this one (the delivery marks it).
            let Some(state) = start.resolve() else {
                return;
            };
            let mut state = state.clone();
            drop(start);
            // Unbounded as a channel; bounded by the budget, taken before each send.
            for batch in batches {
                for piece in &batch {
                    feed(&mut state, piece);
                }
                drop(batch);
                budget.release();
            }
            delivery.done = true;
            delivery.promise.deliver(Some(state));
        })
        .ok()
        .map(|_| (to_sha3, promise))
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
            sha3: Sha3::Ready(hasher(MessageDigest::sha3_256())),
            size: 0,
            budget: Arc::default(),
        }
    }

    /// Hashes `bytes` here (waiting first for a sha3 state still in the works: only the local
    /// backend's [`Fingerprinter::absorb`] leaves one, and its callers do not call this).
    pub fn update(&mut self, bytes: &[u8]) {
        feed(&mut self.md5, bytes);
        if let Some(sha3) = self.sha3.resolve() {
            feed(sha3, bytes);
        }
        self.size += bytes.len() as u64;
    }

    /// Hashes the batches `next` yields (until `None`) while `each` takes them too (a write of
    /// the same bytes). sha3-256 costs about as much as md5 and the write together, so it runs
    /// on a thread of its own, up to [`SHA3_LAG`] batches behind, while md5 and `each` run here.
    /// This returns once md5 and `each` are done, the sha3 thread still hashing the last
    /// batches: the state is then "running" and whoever continues or finishes it waits for that
    /// thread (a chunk's response goes out meanwhile, and the next chunk's bytes queue for sha3
    /// behind the rest of this one's). A stream that is one small batch is hashed here, without
    /// a thread. Stops at the first error of `each`, leaving the state partial (the caller
    /// drops it). A state whose sha3 failed goes on with md5 alone.
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
            self.size += bytes(&first);
            let mut sha3 = self.sha3.resolve();
            for piece in &first {
                feed(&mut self.md5, piece);
                if let Some(sha3) = sha3.as_deref_mut() {
                    feed(sha3, piece);
                }
            }
            return each(&first);
        }
        if self.budget.broken() {
            // A thread of the chain this state came from failed, before this state's bytes
            // (a snapshot from before then): the failed threads are gone, so a new count.
            self.budget = Arc::default();
        }
        let budget = self.budget.clone();
        let mut to_sha3 = if matches!(self.sha3, Sha3::Failed) {
            None
        } else {
            match spawn_sha3(self.sha3.clone(), budget.clone()) {
                Some((to_sha3, promise)) => {
                    self.sha3 = Sha3::Running(promise);
                    Some(to_sha3)
                }
                // No thread to be had: sha3 runs here too.
                None => None,
            }
        };
        let mut batch = Some(first);
        while let Some(b) = batch.take() {
            self.size += bytes(&b);
            let gone = match &to_sha3 {
                Some(tx) => {
                    budget.acquire();
                    // Cloning a batch clones its pieces' handles, not their bytes.
                    let gone = tx.send(b.clone()).is_err();
                    if gone {
                        budget.release();
                    }
                    gone
                }
                None => {
                    if let Some(sha3) = self.sha3.resolve() {
                        for piece in &b {
                            feed(sha3, piece);
                        }
                    }
                    false
                }
            };
            if gone {
                // The thread is gone: only a failure ends it early, and its promise says so
                // (the state is failed from here on; md5 and the write go on).
                to_sha3 = None;
                self.sha3.resolve();
            }
            for piece in &b {
                feed(&mut self.md5, piece);
            }
            each(&b)?;
            batch = next();
        }
        Ok(())
    }

    /// The digests; waits for a sha3 thread still hashing this state's bytes. `None` when a
    /// sha3 thread failed: the caller hashes the stored bytes again.
    pub fn finish(mut self) -> Option<Fingerprints> {
        let sha3 = hex_of(self.sha3.resolve()?);
        Some(Fingerprints {
            key: BlobKey(sha3.clone()),
            size: self.size,
            md5: hex_of(&mut self.md5),
            sha3_256: sha3,
        })
    }

    /// Makes this state's sha3 fail the way a failed sha3 thread does (its delivery dropped
    /// unfinished), for tests of what follows.
    #[cfg(test)]
    pub fn fail_sha3(&mut self) {
        let promise = Arc::new(Promise::default());
        drop(Delivery {
            promise: promise.clone(),
            budget: self.budget.clone(),
            done: false,
        });
        self.sha3 = Sha3::Running(promise);
    }

    /// [`Fingerprinter::finish`] for a state fed only on the caller's thread
    /// ([`Fingerprinter::update`]), which has no thread to fail; an error all the same
    /// should it have none.
    pub fn finish_here(self) -> Result<Fingerprints, StorageError> {
        self.finish()
            .ok_or_else(|| StorageError::Io("the sha3-256 of the content was lost".into()))
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
        let empty = Fingerprinter::new().finish().unwrap();
        assert_eq!(empty.md5, "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(
            empty.sha3_256,
            "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a"
        );
        let mut abc = Fingerprinter::new();
        abc.update(b"a");
        abc.update(b"bc");
        let abc = abc.finish().unwrap();
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
        assert_eq!(batched.finish().unwrap(), abc);
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
        let whole = whole.finish().unwrap();
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
        assert_eq!(absorbed.finish().unwrap(), whole);

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

    /// sha3 threads left hashing this process's streams (other tests' too).
    fn sha3_threads() -> usize {
        std::fs::read_dir("/proc/self/task").map_or(0, |tasks| {
            tasks
                .flatten()
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|name| name.trim() == "coffer-sha3")
                })
                .count()
        })
    }

    /// A stream continuing a state whose sha3 is still in the works queues at most
    /// [`SHA3_LAG`] batches for its thread (the receive waits beyond that), then finishes with
    /// the fingerprints of the whole stream once the earlier state arrives; its thread ends.
    #[test]
    fn a_running_state_holds_back_the_stream_and_then_continues() {
        let data: Vec<u8> = (0..(12 * BATCH)).map(|i| (i * 13 % 241) as u8).collect();
        let mut whole = Fingerprinter::new();
        whole.update(&data);
        let whole = whole.finish().unwrap();

        let (head, tail) = data.split_at(2 * BATCH);
        let mut earlier = Fingerprinter::new();
        earlier.update(head);
        // The state a thread still works on: delivered only when the test says so.
        let promise = Arc::new(Promise::default());
        let held = match std::mem::replace(&mut earlier.sha3, Sha3::Running(promise.clone())) {
            Sha3::Ready(state) => state,
            Sha3::Running(_) | Sha3::Failed => unreachable!(),
        };
        let batches: Vec<Vec<Bytes>> = tail
            .chunks(BATCH)
            .map(|c| vec![Bytes::copy_from_slice(c)])
            .collect();
        let taken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = taken.clone();
        let absorbing = std::thread::spawn(move || {
            let mut queue = batches.into_iter();
            let mut state = earlier;
            state
                .absorb(
                    || {
                        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        queue.next()
                    },
                    |_| Ok::<_, ()>(()),
                )
                .unwrap();
            state
        });
        std::thread::sleep(std::time::Duration::from_millis(300));
        // SHA3_LAG batches queued, one more taken and waiting for room.
        assert_eq!(
            taken.load(std::sync::atomic::Ordering::SeqCst),
            SHA3_LAG + 1
        );
        promise.deliver(Some(held));
        let state = absorbing.join().unwrap();
        assert_eq!(state.finish().unwrap(), whole);
    }

    /// A sha3 thread that fails (its delivery dropped unfinished, as when it panics) while a
    /// stream continuing it waits for room: the stream goes on with md5 and the writes, the
    /// state answers no fingerprints instead of panicking, later streams of it too, and a
    /// snapshot from before the failure still finishes right with a stream of its own.
    #[test]
    fn a_failed_sha3_thread_leaves_a_state_without_fingerprints_not_a_panic() {
        let data: Vec<u8> = (0..(9 * BATCH + 77))
            .map(|i| (i * 17 % 239) as u8)
            .collect();
        let (head, tail) = data.split_at(2 * BATCH + 5);
        let mut earlier = Fingerprinter::new();
        earlier.update(head);
        let before = earlier.clone();
        let promise = Arc::new(Promise::default());
        earlier.sha3 = Sha3::Running(promise.clone());
        let delivery = Delivery {
            promise,
            budget: earlier.budget.clone(),
            done: false,
        };
        let batches: Vec<Vec<Bytes>> = tail
            .chunks(BATCH)
            .map(|c| vec![Bytes::copy_from_slice(c)])
            .collect();
        let absorbing = std::thread::spawn(move || {
            let mut queue = batches.into_iter();
            let mut written = Vec::new();
            let mut state = earlier;
            state
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
            (state, written)
        });
        // The stream fills its lag and waits; then the thread it continues fails.
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(delivery);
        let (mut state, written) = absorbing.join().unwrap();
        assert_eq!(written, tail);
        assert!(state.clone().finish().is_none());
        assert!(state.clone().finish_here().is_err());
        let mut more = vec![vec![Bytes::copy_from_slice(&tail[..3 * BATCH])]];
        state.absorb(|| more.pop(), |_| Ok::<_, ()>(())).unwrap();
        state.update(b"x");
        assert_eq!(state.size, data.len() as u64 + 3 * BATCH as u64 + 1);
        assert!(state.finish().is_none());

        let mut whole = Fingerprinter::new();
        whole.update(&data);
        let mut again = before;
        let mut queue: Vec<Vec<Bytes>> = tail
            .chunks(BATCH)
            .rev()
            .map(|c| vec![Bytes::copy_from_slice(c)])
            .collect();
        again.absorb(|| queue.pop(), |_| Ok::<_, ()>(())).unwrap();
        assert_eq!(again.finish().unwrap(), whole.finish().unwrap());
    }

    /// Chunks absorbed one after another each leave their sha3 thread running; the last state
    /// carries all of them, and no thread stays once the bytes are hashed, whether the stream
    /// was finished or dropped half-way.
    #[test]
    fn chained_streams_match_one_stream_and_leave_no_thread() {
        let data: Vec<u8> = (0..(7 * BATCH + 999))
            .map(|i| (i * 31 % 253) as u8)
            .collect();
        let mut whole = Fingerprinter::new();
        whole.update(&data);
        let whole = whole.finish().unwrap();
        let mut state = Fingerprinter::new();
        let mut abandoned = Fingerprinter::new();
        for chunk in data.chunks(3 * BATCH / 2) {
            let mut queue: Vec<Vec<Bytes>> = chunk
                .chunks(BATCH)
                .rev()
                .map(|c| vec![Bytes::copy_from_slice(c)])
                .collect();
            let mut again = queue.clone();
            state.absorb(|| queue.pop(), |_| Ok::<_, ()>(())).unwrap();
            abandoned
                .absorb(|| again.pop(), |_| Ok::<_, ()>(()))
                .unwrap();
        }
        drop(abandoned);
        assert_eq!(state.clone().finish().unwrap(), whole);
        assert_eq!(state.finish().unwrap(), whole);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while sha3_threads() > 0 {
            // Other tests' streams may still be hashing; they end too.
            assert!(std::time::Instant::now() < deadline, "sha3 threads left");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
