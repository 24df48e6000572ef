//! The local directory backend.

use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::io::AsyncWriteExt;

use crate::hash::{Fingerprinter, Fingerprints, Intake, StagedHash, Stamp};
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

/// See [`Stamp`]: identifies the stored copy of a staged chunk without reading it.
fn stamp(meta: &Metadata) -> Stamp {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        format!(
            "{}:{}:{}:{}.{}",
            meta.dev(),
            meta.ino(),
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec()
        )
    }
    #[cfg(not(unix))]
    {
        format!("{}:{:?}", meta.len(), meta.modified().ok())
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

    /// Writes the intake to a new temporary file, hashing into `hasher` when given; fsyncs it.
    async fn write_temp<S, E>(
        &self,
        intake: &mut Intake<S>,
        mut hasher: Option<&mut Fingerprinter>,
    ) -> Result<(TempPath, Metadata, u64), StorageError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: Into<StorageError>,
    {
        let temp = self.new_temp();
        let mut file = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp.0)
            .await?;
        let mut written = 0u64;
        while let Some(piece) = intake.next().await? {
            if let Some(h) = hasher.as_mut() {
                h.update(&piece);
            }
            file.write_all(&piece).await?;
            written += piece.len() as u64;
        }
        file.flush().await?;
        file.sync_all().await?;
        let meta = file.metadata().await?;
        drop(file);
        Ok((temp, meta, written))
    }

    pub async fn put_stream<S, E>(&self, intake: &mut Intake<S>) -> Result<PutOutcome, StorageError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: Into<StorageError>,
    {
        let mut hasher = Fingerprinter::new();
        let (temp, _, _) = self.write_temp(intake, Some(&mut hasher)).await?;
        let fingerprints = hasher.finish();
        let dst = self.blob_path(&fingerprints.key);
        blocking(move || {
            let created = link_into_place(&temp.0, &dst)?;
            drop(temp);
            Ok(fingerprints.outcome(created))
        })
        .await
    }

    pub async fn get(
        &self,
        key: &BlobKey,
        range: Option<(u64, u64)>,
    ) -> Result<BlobRead, StorageError> {
        let path = self.blob_path(key);
        let (file, size, len) = blocking(move || {
            let mut file = match File::open(&path) {
                Ok(file) => file,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(StorageError::NotFound)
                }
                Err(e) => return Err(e.into()),
            };
            let size = file.metadata()?.len();
            let (start, len) = resolve_range(range, size)?;
            if start > 0 {
                file.seek(SeekFrom::Start(start))?;
            }
            Ok((file, size, len))
        })
        .await?;
        let stream = futures_util::stream::try_unfold((file, len), |(file, left)| async move {
            if left == 0 {
                return Ok(None);
            }
            let want = left.min(READ_CHUNK as u64) as usize;
            let (file, piece) = blocking(move || {
                let mut file = file;
                let mut buf = vec![0u8; want];
                file.read_exact(&mut buf).map_err(|e| {
                    if e.kind() == io::ErrorKind::UnexpectedEof {
                        StorageError::Io("blob shorter than its size".into())
                    } else {
                        e.into()
                    }
                })?;
                Ok((file, Bytes::from(buf)))
            })
            .await?;
            Ok(Some((piece, (file, left - want as u64))))
        });
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
        let (temp, meta, written) = self.write_temp(intake, hasher).await?;
        let dir = self.staging_dir(upload);
        let dst = dir.join(chunk_name(index));
        blocking(move || {
            std::fs::create_dir_all(&dir)?;
            std::fs::rename(&temp.0, &dst)?;
            Ok(())
        })
        .await?;
        Ok((written, stamp(&meta)))
    }

    pub async fn commit_staged(
        &self,
        upload: &str,
        chunks: u32,
        cached: Option<StagedHash>,
    ) -> Result<(PutOutcome, bool), StorageError> {
        let dir = self.staging_dir(upload);
        let temp = self.new_temp();
        let root = self.root.clone();
        blocking(move || {
            // Chunks are opened one at a time (an upload may have more chunks than the process
            // may open files): first their stamps, then their bytes. Nothing is sized by
            // `chunks` before the chunks are known to exist.
            let mut stamps = Vec::new();
            for index in 1..=chunks {
                match std::fs::metadata(dir.join(chunk_name(index))) {
                    Ok(meta) => stamps.push(stamp(&meta)),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        return Err(StorageError::MissingChunk(index))
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            let paths: Vec<PathBuf> = (1..=chunks).map(|i| dir.join(chunk_name(i))).collect();
            let known = cached
                .filter(|c| c.next == chunks + 1 && c.stamps == stamps)
                .map(|c| c.state.finish());
            let fast = known.is_some();
            let (fingerprints, created) = match known {
                Some(fingerprints) => {
                    let dst = root.join(fingerprints.key.relative_path());
                    let created = if dst.is_file() {
                        false
                    } else if chunks == 1 {
                        link_into_place(&dir.join(chunk_name(1)), &dst)?
                    } else {
                        concatenate(&paths, &temp.0, None)?;
                        link_into_place(&temp.0, &dst)?
                    };
                    (fingerprints, created)
                }
                None => {
                    let mut hasher = Fingerprinter::new();
                    concatenate(&paths, &temp.0, Some(&mut hasher))?;
                    let fingerprints: Fingerprints = hasher.finish();
                    let dst = root.join(fingerprints.key.relative_path());
                    let created = link_into_place(&temp.0, &dst)?;
                    (fingerprints, created)
                }
            };
            drop(temp);
            remove_dir_if_exists(&dir)?;
            Ok((fingerprints.outcome(created), fast))
        })
        .await
    }

    pub async fn discard_staged(&self, upload: &str) -> Result<(), StorageError> {
        let dir = self.staging_dir(upload);
        blocking(move || remove_dir_if_exists(&dir)).await
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

/// Writes the files one after the other into a new file at `dst` and fsyncs it. Without a
/// hasher the copy is `std::io::copy`, which on Linux is `copy_file_range`: the bytes do not
/// pass through the process (and reflink-capable file systems share the extents). With a
/// hasher every byte is read once, in [`READ_CHUNK`] pieces, hashed and written.
fn concatenate(
    files: &[PathBuf],
    dst: &Path,
    mut hasher: Option<&mut Fingerprinter>,
) -> Result<(), StorageError> {
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dst)?;
    let mut buf = vec![0u8; READ_CHUNK];
    for path in files {
        let mut file = File::open(path)?;
        match hasher.as_mut() {
            None => {
                io::copy(&mut file, &mut out)?;
            }
            Some(h) => loop {
                let n = match file.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e.into()),
                };
                h.update(&buf[..n]);
                out.write_all(&buf[..n])?;
            },
        }
    }
    out.sync_all()?;
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
