//! The local directory backend.

use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use crate::hash::{Fingerprinter, Fingerprints, Intake, StagedHash, Stamp, BATCH};
use crate::{chunk_name, resolve_range, BlobKey, BlobRead, PutOutcome, StorageError, READ_CHUNK};

pub(crate) struct Local {
    root: PathBuf,
}

/// A file under `tmp/` that is removed when dropped unless it was moved away: an error, a
/// refusal or a dropped future leaves nothing behind.
struct TempPath(PathBuf);

impl Drop for TempPath {
    fn drop(&mut self) {
        // Already linked or renamed into place (NotFound), or a best effort on failure.
        let _ = std::fs::remove_file(&self.0);
    }
}

fn blocking_err(e: tokio::task::JoinError) -> StorageError {
    StorageError::from(e)
}

async fn blocking<T, F>(f: F) -> Result<T, StorageError>
where
    F: FnOnce() -> Result<T, StorageError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f).await.map_err(blocking_err)?
}

/// See [`Stamp`]: identifies the stored copy of a staged chunk without reading it: the data
/// file, where the chunk ends in it, and the token written with it.
fn stamp(meta: &Metadata, end: &End) -> Stamp {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        format!("{}:{}:{}:{}", meta.dev(), meta.ino(), end.end, end.token)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        format!("{}:{}", end.end, end.token)
    }
}

/// Makes a directory entry durable (best effort: not every file system supports it).
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Gives the fsynced file `src` the name `dst` unless `dst` exists already. A hard link
/// decides atomically (two writers of the same content cannot both "create" it); where the
/// file system has no hard links, a rename does. Returns whether `dst` was created. `src`
/// stays for the caller to remove.
fn link_into_place(src: &Path, dst: &Path) -> io::Result<bool> {
    let parent = dst.parent().expect("blob paths have a parent");
    std::fs::create_dir_all(parent)?;
    let created = match std::fs::hard_link(src, dst) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => false,
        Err(_) if dst.is_file() => false,
        Err(_) => {
            std::fs::rename(src, dst)?;
            true
        }
    };
    if created {
        sync_dir(parent);
    }
    Ok(created)
}

impl Local {
    pub fn open(path: PathBuf) -> Result<Local, StorageError> {
        // Absolute, without a trailing slash or `.` components.
        let root: PathBuf = std::path::absolute(&path)
            .map_err(|e| StorageError::InvalidUrl(format!("local path {}: {e}", path.display())))?
            .components()
            .collect();
        for sub in ["blobs", "staging", "tmp"] {
            std::fs::create_dir_all(root.join(sub)).map_err(|e| {
                StorageError::Io(format!("creating {}: {e}", root.join(sub).display()))
            })?;
        }
        Ok(Local { root })
    }

    pub fn describe(&self) -> String {
        format!("local {}", self.root.display())
    }

    fn blob_path(&self, key: &BlobKey) -> PathBuf {
        self.root.join(key.relative_path())
    }

    fn staging_dir(&self, upload: &str) -> PathBuf {
        self.root.join("staging").join(upload)
    }

    fn new_temp(&self) -> TempPath {
        TempPath(
            self.root
                .join("tmp")
                .join(uuid::Uuid::new_v4().simple().to_string()),
        )
    }

    /// Streams the intake into a new temporary file, hashing into `hasher` when given; the file
    /// is not yet fsynced.
    async fn write_temp<S, E>(
        &self,
        intake: &mut Intake<S>,
        hasher: Option<Fingerprinter>,
    ) -> Result<(TempPath, File, u64, Option<Fingerprinter>), StorageError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: Into<StorageError>,
    {
        let temp = self.new_temp();
        let path = temp.0.clone();
        let file = blocking(move || {
            Ok(std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)?)
        })
        .await?;
        let (file, written, hasher) = write_through(file, intake, hasher).await?;
        Ok((temp, file, written, hasher))
    }

    pub async fn put_stream<S, E>(&self, intake: &mut Intake<S>) -> Result<PutOutcome, StorageError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: Into<StorageError>,
    {
        let (temp, file, written, hasher) =
            self.write_temp(intake, Some(Fingerprinter::new())).await?;
        let root = self.root.clone();
        blocking(move || {
            file.sync_all()?;
            drop(file);
            // Waits for the sha3 thread, which finished its last batches during the fsync; the
            // written file is hashed instead should that thread have failed.
            let fingerprints = match hasher.and_then(Fingerprinter::finish) {
                Some(fingerprints) => fingerprints,
                None => hash_file(&File::open(&temp.0)?, written)?,
            };
            let dst = root.join(fingerprints.key.relative_path());
            let created = link_into_place(&temp.0, &dst)?;
            drop(temp);
            Ok(fingerprints.outcome(created))
        })
        .await
    }

    /// [`Local::put_stream`] for a few bytes already in memory: hashed, written, fsynced and
    /// linked into place in one blocking call, without the stream's hand-offs between threads
    /// (for a small file they cost more than its bytes).
    pub async fn put_small(&self, bytes: Bytes) -> Result<PutOutcome, StorageError> {
        let (temp, root) = (self.new_temp(), self.root.clone());
        blocking(move || put_small_at(temp, &root, &bytes)).await
    }

    /// [`Local::put_small`] on the calling thread, which may block.
    pub fn put_small_here(&self, bytes: &[u8]) -> Result<PutOutcome, StorageError> {
        put_small_at(self.new_temp(), &self.root, bytes)
    }

    pub async fn get(
        &self,
        key: &BlobKey,
        range: Option<(u64, u64)>,
    ) -> Result<BlobRead, StorageError> {
        let path = self.blob_path(key);
        let (file, size, start, len) = blocking(move || {
            let file = match File::open(&path) {
                Ok(file) => file,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(StorageError::NotFound)
                }
                Err(e) => return Err(e.into()),
            };
            let size = file.metadata()?.len();
            let (start, len) = resolve_range(range, size)?;
            Ok((file, size, start, len))
        })
        .await?;
        // Each piece is read at its own offset on a blocking thread, the next READ_AHEAD - 1
        // while the one before is being sent: the read and the send overlap instead of taking
        // turns. The offset is set under the lock, so reads finishing in any order stay right.
        let file = std::sync::Arc::new(std::sync::Mutex::new(file));
        let pieces = (0..len.div_ceil(READ_CHUNK as u64)).map(move |i| {
            let at = start + i * READ_CHUNK as u64;
            (at, (len + start - at).min(READ_CHUNK as u64) as usize)
        });
        let stream = futures_util::stream::iter(pieces)
            .map(move |(at, want)| {
                let file = file.clone();
                blocking(move || {
                    // Read into the spare capacity: a zeroed buffer would cost a pass over
                    // every byte served before the read writes it.
                    let mut buf = Vec::with_capacity(want);
                    let mut file = file.lock().unwrap_or_else(|p| p.into_inner());
                    file.seek(SeekFrom::Start(at))?;
                    (&mut *file).take(want as u64).read_to_end(&mut buf)?;
                    if buf.len() < want {
                        return Err(StorageError::Io("blob shorter than its size".into()));
                    }
                    Ok(Bytes::from(buf))
                })
            })
            .buffered(READ_AHEAD);
        Ok(BlobRead {
            size,
            stream: stream.boxed(),
        })
    }

    pub async fn exists(&self, key: &BlobKey) -> Result<bool, StorageError> {
        match tokio::fs::metadata(self.blob_path(key)).await {
            Ok(meta) => Ok(meta.is_file()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn delete(&self, key: &BlobKey) -> Result<(), StorageError> {
        match tokio::fs::remove_file(self.blob_path(key)).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn list_keys(&self) -> Result<Vec<BlobKey>, StorageError> {
        let blobs = self.root.join("blobs");
        blocking(move || {
            let mut keys = Vec::new();
            for first in read_dir_names(&blobs)? {
                for second in read_dir_names(&blobs.join(&first))? {
                    for name in read_dir_names(&blobs.join(&first).join(&second))? {
                        if let Ok(key) = BlobKey::parse(&name) {
                            if name[..2] == first && name[2..4] == second {
                                keys.push(key);
                            }
                        }
                    }
                }
            }
            Ok(keys)
        })
        .await
    }

    /// Stages chunk `index` of `upload` (see "Staging" in the module docs): the next chunk is
    /// written straight into the data file; a chunk again, or one ahead of a gap, is written
    /// aside first so that a failure leaves the staging as it was.
    pub async fn stage_chunk<S, E>(
        &self,
        upload: &str,
        index: u32,
        intake: &mut Intake<S>,
        hasher: Option<&mut Fingerprinter>,
    ) -> Result<(u64, Stamp), StorageError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: Into<StorageError>,
    {
        let dir = self.staging_dir(upload);
        let d = dir.clone();
        // An exclusive lock on the data file, held until the chunk is recorded: the stages and
        // the commit of one upload take turns, whichever process sharing the directory runs them.
        let (lock, ends) = blocking(move || {
            std::fs::create_dir_all(&d)?;
            let data = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(d.join(DATA))?;
            data.lock()?;
            let ends = read_ends(&d, &data)?;
            Ok((data, ends))
        })
        .await?;
        let next = ends.len() as u32 + 1;
        let state = hasher.as_ref().map(|h| (**h).clone());
        let (written, state, aside) = if index == next {
            let start = chunk_start(&ends, index);
            let writer = lock.try_clone()?;
            let writer = blocking(move || {
                let mut w = writer;
                w.set_len(start)?;
                w.seek(SeekFrom::Start(start))?;
                Ok(w)
            })
            .await?;
            match write_through(writer, intake, state).await {
                Ok((_, written, state)) => (written, state, None),
                Err(e) => {
                    // Back to the chunks recorded.
                    let d = dir.clone();
                    let _ = blocking(move || {
                        lock.set_len(start)?;
                        drop_if_empty(&d)
                    })
                    .await;
                    return Err(e);
                }
            }
        } else {
            match self.write_temp(intake, state).await {
                Ok((temp, file, written, state)) => {
                    drop(file);
                    (written, state, Some(temp))
                }
                Err(e) => {
                    let d = dir.clone();
                    let _ = blocking(move || {
                        drop(lock);
                        drop_if_empty(&d)
                    })
                    .await;
                    return Err(e);
                }
            }
        };
        let root = self.root.clone();
        let stamp = blocking(move || {
            let mut ends = ends;
            let data = lock;
            match aside {
                None => ends.push(End::new(chunk_start(&ends, index) + written)),
                Some(temp) if index > next => {
                    // Ahead of a gap: kept aside until the chunks before it are in.
                    std::fs::rename(&temp.0, dir.join(chunk_name(index)))?;
                    drop(temp);
                    return Ok(format!("aside:{index}:{}", uuid::Uuid::new_v4().simple()));
                }
                Some(temp) => replace_chunk(&root, &data, &mut ends, index, &temp.0, written)?,
            }
            absorb_aside(&dir, &data, &mut ends)?;
            write_ends(&dir, &ends)?;
            let meta = data.metadata()?;
            // Start writing the chunk back now, beside the next ones, instead of all of it at
            // the commit's fsync (which still decides durability; a failure here only costs
            // that time then).
            // Its own descriptor: a clone would share (and so hold) the upload's lock.
            if let Ok(background) = File::open(dir.join(DATA)) {
                tokio::task::spawn_blocking(move || {
                    let _ = background.sync_data();
                });
            }
            Ok(stamp(&meta, &ends[index as usize - 1]))
        })
        .await?;
        if let (Some(h), Some(state)) = (hasher, state) {
            *h = state;
        }
        Ok((written, stamp))
    }

    pub async fn commit_staged(
        &self,
        upload: &str,
        chunks: u32,
        cached: Option<StagedHash>,
    ) -> Result<(PutOutcome, bool), StorageError> {
        let dir = self.staging_dir(upload);
        let root = self.root.clone();
        blocking(move || {
            let data_path = dir.join(DATA);
            let open = || {
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&data_path)
            };
            let data = match open() {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound && chunks == 0 => {
                    std::fs::create_dir_all(&dir)?;
                    std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .create(true)
                        .truncate(false)
                        .open(&data_path)?
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(StorageError::MissingChunk(1))
                }
                Err(e) => return Err(e.into()),
            };
            data.lock()?;
            let ends = read_ends(&dir, &data)?;
            if (ends.len() as u64) < u64::from(chunks) {
                return Err(StorageError::MissingChunk(ends.len() as u32 + 1));
            }
            let ends = &ends[..chunks as usize];
            let len = ends.last().map_or(0, |e| e.end);
            // Chunks staged past the ones committed are left out.
            if data.metadata()?.len() != len {
                data.set_len(len)?;
            }
            let meta = data.metadata()?;
            let stamps: Vec<Stamp> = ends.iter().map(|e| stamp(&meta, e)).collect();
            let known = cached.filter(|c| c.next == chunks + 1 && c.stamps == stamps);
            // The fsync first: the sha3 thread of the last chunk finishes meanwhile.
            data.sync_all()?;
            // The staged bytes are hashed when the running state does not cover them or lost
            // its sha3 (a failed thread).
            let running = known.and_then(|c| c.state.finish());
            let fast = running.is_some();
            let fingerprints = match running {
                Some(fingerprints) => fingerprints,
                None => hash_file(&data, len)?,
            };
            let dst = root.join(fingerprints.key.relative_path());
            let created = if dst.is_file() {
                false
            } else {
                link_into_place(&data_path, &dst)?
            };
            drop(data);
            remove_dir_if_exists(&dir)?;
            Ok((fingerprints.outcome(created), fast))
        })
        .await
    }

    pub async fn discard_staged(&self, upload: &str) -> Result<(), StorageError> {
        let dir = self.staging_dir(upload);
        blocking(move || remove_dir_if_exists(&dir)).await
    }

    pub async fn sweep_temporaries(&self, before: SystemTime) -> Result<usize, StorageError> {
        let tmp = self.root.join("tmp");
        blocking(move || {
            let mut removed = 0;
            for name in read_dir_names(&tmp)? {
                let path = tmp.join(&name);
                let Ok(meta) = std::fs::symlink_metadata(&path) else {
                    continue;
                };
                if !meta.is_file() || meta.modified()? >= before {
                    continue;
                }
                match std::fs::remove_file(&path) {
                    Ok(()) => removed += 1,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(removed)
        })
        .await
    }

    pub async fn list_staged(&self) -> Result<Vec<(String, SystemTime)>, StorageError> {
        let staging = self.root.join("staging");
        blocking(move || {
            let mut out = Vec::new();
            for upload in read_dir_names(&staging)? {
                if crate::validate_upload(&upload).is_err() {
                    continue;
                }
                let dir = staging.join(&upload);
                // The directory's own time changes when a chunk is added or replaced; the
                // chunks' times cover a file system that does not update it.
                let Ok(meta) = std::fs::metadata(&dir) else {
                    continue;
                };
                let mut latest = meta.modified()?;
                if let Ok(entries) = std::fs::read_dir(&dir) {
                    for entry in entries.flatten() {
                        if let Ok(modified) = entry.metadata().and_then(|m| m.modified()) {
                            latest = latest.max(modified);
                        }
                    }
                }
                out.push((upload, latest));
            }
            Ok(out)
        })
        .await
    }
}

/// How many pieces of a read are read at once (see [`Local::get`]).
const READ_AHEAD: usize = 2;

/// The staged bytes of an upload, its chunks one after the other.
const DATA: &str = "data";
/// Where each recorded chunk of `DATA` ends: a line `<end offset> <token>` per chunk, in order,
/// replaced whole (written aside, then renamed) after the bytes are in place.
const ENDS: &str = "ends";

/// One recorded chunk: where its bytes end in the data file, and a token new with every write
/// of it (so that a chunk rewritten with other bytes of the same length has another stamp).
#[derive(Debug, Clone)]
struct End {
    end: u64,
    token: String,
}

impl End {
    fn new(end: u64) -> End {
        End {
            end,
            token: uuid::Uuid::new_v4().simple().to_string(),
        }
    }
}

/// The recorded chunks whose bytes are all in the data file (a crash between writing the bytes
/// and recording them, or a shorter file, leaves the later ones out).
fn read_ends(dir: &Path, data: &File) -> Result<Vec<End>, StorageError> {
    let text = match std::fs::read_to_string(dir.join(ENDS)) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e.into()),
    };
    let len = data.metadata()?.len();
    let mut ends = Vec::new();
    let mut previous = 0;
    for line in text.lines() {
        let Some((end, token)) = line.split_once(' ') else {
            break;
        };
        let Ok(end) = end.parse::<u64>() else {
            break;
        };
        if end < previous || end > len || token.is_empty() {
            break;
        }
        ends.push(End {
            end,
            token: token.to_owned(),
        });
        previous = end;
    }
    Ok(ends)
}

fn write_ends(dir: &Path, ends: &[End]) -> io::Result<()> {
    use std::fmt::Write as _;
    let mut text = String::new();
    for e in ends {
        let _ = writeln!(text, "{} {}", e.end, e.token);
    }
    let aside = dir.join(format!("{ENDS}.{}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&aside, text)?;
    std::fs::rename(&aside, dir.join(ENDS))
}

/// Where chunk `index` (from 1) starts: where the one before it ends.
fn chunk_start(ends: &[End], index: u32) -> u64 {
    match index {
        0 | 1 => 0,
        i => ends.get(i as usize - 2).map_or(0, |e| e.end),
    }
}

/// Puts the bytes of `src` (`len` of them) in place of recorded chunk `index`, keeping the
/// chunks after it (their bytes move when the length changes).
fn replace_chunk(
    root: &Path,
    data: &File,
    ends: &mut [End],
    index: u32,
    src: &Path,
    len: u64,
) -> Result<(), StorageError> {
    let i = index as usize - 1;
    let start = chunk_start(ends, index);
    let old_end = ends[i].end;
    let last_end = ends.last().map_or(0, |e| e.end);
    let mut out = data;
    // The chunks after it, kept aside while the file is cut.
    let tail = if last_end > old_end {
        let t = TempPath(
            root.join("tmp")
                .join(uuid::Uuid::new_v4().simple().to_string()),
        );
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&t.0)?;
        out.seek(SeekFrom::Start(old_end))?;
        io::copy(&mut out.take(last_end - old_end), &mut f)?;
        f.seek(SeekFrom::Start(0))?;
        Some((t, f))
    } else {
        None
    };
    data.set_len(start)?;
    out.seek(SeekFrom::Start(start))?;
    io::copy(&mut File::open(src)?, &mut out)?;
    let new_end = start + len;
    ends[i] = End::new(new_end);
    if let Some((_t, mut f)) = tail {
        io::copy(&mut f, &mut out)?;
        for e in ends[i + 1..].iter_mut() {
            e.end = e.end - old_end + new_end;
        }
    }
    Ok(())
}

/// Appends the chunks kept aside that now follow the recorded ones.
fn absorb_aside(dir: &Path, data: &File, ends: &mut Vec<End>) -> Result<(), StorageError> {
    loop {
        let next = dir.join(chunk_name(ends.len() as u32 + 1));
        let mut f = match File::open(&next) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let start = ends.last().map_or(0, |e| e.end);
        let mut out = data;
        data.set_len(start)?;
        out.seek(SeekFrom::Start(start))?;
        let n = io::copy(&mut f, &mut out)?;
        ends.push(End::new(start + n));
        std::fs::remove_file(&next)?;
    }
}

/// The fingerprints of the first `len` bytes of a file, read in batches (again, on this thread
/// alone, should the sha3 thread fail).
fn hash_file(file: &File, len: u64) -> Result<Fingerprints, StorageError> {
    match read_into(file, len, true)?.finish() {
        Some(fingerprints) => Ok(fingerprints),
        None => read_into(file, len, false)?.finish_here(),
    }
}

/// The state of the first `len` bytes of a file, sha3-256 on a thread of its own (`threaded`)
/// or here.
fn read_into(file: &File, len: u64, threaded: bool) -> Result<Fingerprinter, StorageError> {
    let mut hasher = Fingerprinter::new();
    let mut input = file;
    input.seek(SeekFrom::Start(0))?;
    let mut left = len;
    let mut failed = None;
    let next = || {
        if left == 0 || failed.is_some() {
            return None;
        }
        let want = left.min(BATCH as u64) as usize;
        let mut buf = vec![0u8; want];
        if let Err(e) = input.read_exact(&mut buf) {
            failed = Some(e);
            return None;
        }
        left -= want as u64;
        Some(vec![Bytes::from(buf)])
    };
    if threaded {
        hasher.absorb(next, |_| Ok::<_, StorageError>(()))?;
    } else {
        let mut next = next;
        while let Some(batch) = next() {
            for piece in &batch {
                hasher.update(piece);
            }
        }
    }
    if let Some(e) = failed {
        return Err(e.into());
    }
    Ok(hasher)
}

/// Streams the intake into `file` from its position. This task gathers the pieces into
/// batches of [`BATCH`] bytes (one hand-off per batch, not per piece: pieces off the socket
/// are often a few KiB) for one blocking thread, which writes each batch and hashes it into
/// `hasher` (when given, see [`Fingerprinter::absorb`]): receiving, md5 with the write, and
/// sha3 run side by side.
async fn write_through<S, E>(
    file: File,
    intake: &mut Intake<S>,
    hasher: Option<Fingerprinter>,
) -> Result<(File, u64, Option<Fingerprinter>), StorageError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: Into<StorageError>,
{
    // Two batches queued: the receiver keeps going while the writer is busy, and memory stays
    // a few MiB per upload.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<Bytes>>(2);
    let writer = tokio::task::spawn_blocking(move || -> Result<_, StorageError> {
        let mut file = file;
        let mut hasher = hasher;
        let mut written = 0u64;
        let mut write = |batch: &[Bytes]| -> io::Result<()> {
            write_pieces(&mut file, batch)?;
            written += batch.iter().map(|p| p.len() as u64).sum::<u64>();
            Ok(())
        };
        match hasher.as_mut() {
            Some(h) => h.absorb(|| rx.blocking_recv(), write)?,
            None => {
                while let Some(batch) = rx.blocking_recv() {
                    write(&batch)?;
                }
            }
        }
        Ok((file, written, hasher))
    });
    let mut fed = Ok(());
    let mut batch = Vec::new();
    let mut batched = 0usize;
    loop {
        let piece = match intake.next().await {
            Ok(Some(piece)) => piece,
            Ok(None) => break,
            Err(e) => {
                fed = Err(e);
                break;
            }
        };
        batched += piece.len();
        batch.push(piece);
        if batched >= BATCH {
            batched = 0;
            if tx.send(std::mem::take(&mut batch)).await.is_err() {
                // The writer stopped: its error is below.
                break;
            }
        }
    }
    if fed.is_ok() && !batch.is_empty() {
        // A failed send means the writer stopped; its error is below.
        let _ = tx.send(batch).await;
    }
    drop(tx);
    let written = writer.await.map_err(blocking_err)?;
    fed?;
    written
}

/// Writes the pieces of a batch in order with one `writev` for up to 1,024 of them: the pieces
/// off the socket are a few KiB each, and a `write` per piece cost a system call per few KiB.
fn write_pieces(file: &mut File, batch: &[Bytes]) -> io::Result<()> {
    let mut slices: Vec<io::IoSlice<'_>> = batch.iter().map(|p| io::IoSlice::new(p)).collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        match file.write_vectored(rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => io::IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Removes an upload's staging that holds no chunk (its first chunk failed).
fn drop_if_empty(dir: &Path) -> Result<(), StorageError> {
    let names = read_dir_names(dir)?;
    let empty = names.iter().all(|n| n == DATA)
        && std::fs::metadata(dir.join(DATA)).map_or(true, |m| m.len() == 0);
    if empty {
        remove_dir_if_exists(dir)?;
    }
    Ok(())
}

fn remove_dir_if_exists(dir: &Path) -> Result<(), StorageError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The UTF-8 names in a directory (none when it does not exist).
fn read_dir_names(dir: &Path) -> Result<Vec<String>, StorageError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut names = Vec::new();
    for entry in entries {
        if let Ok(name) = entry?.file_name().into_string() {
            names.push(name);
        }
    }
    Ok(names)
}

/// Stores `bytes` through the temporary file `temp` under the store's `root`: hashed,
/// written, fsynced and linked into place (see [`Local::put_small`]).
fn put_small_at(temp: TempPath, root: &Path, bytes: &[u8]) -> Result<PutOutcome, StorageError> {
    let mut hasher = Fingerprinter::new();
    hasher.update(bytes);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp.0)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    let fingerprints = hasher.finish_here()?;
    let dst = root.join(fingerprints.key.relative_path());
    let created = link_into_place(&temp.0, &dst)?;
    drop(temp);
    Ok(fingerprints.outcome(created))
}
