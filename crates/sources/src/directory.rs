//! The server-directory connector: a folder of the server's file system exposed as a source.
//!
//! Everything stays under the root: a path is joined to the canonical root and canonicalized
//! again, and whatever does not lie under the root afterwards (a symlink pointing elsewhere) is
//! refused with `Forbidden`; a symlink that stays inside is followed. Listings leave out entries
//! that lead out of the root, that are dangling, or whose names are not UTF-8 or not valid
//! segments. Writes happen only on a writable source, into a temporary file in the target's
//! folder that is renamed over the target, so a reader never sees half a file.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::path::valid_segment;
use crate::{Connector, Download, Entry, Limits, RemotePath, SourceError};

/// The connector for the server directory `root` (which must exist and be a directory).
pub fn directory(root: &Path, writable: bool) -> Result<Box<dyn Connector>, SourceError> {
    let root = fs::canonicalize(root).map_err(|e| io_error(&e))?;
    if !root.is_dir() {
        return Err(SourceError::Remote(format!(
            "{} is not a directory",
            root.display()
        )));
    }
    Ok(Box::new(Directory {
        root,
        writable,
        max_entries: Limits::default().max_entries,
    }))
}

struct Directory {
    /// Canonical.
    root: PathBuf,
    writable: bool,
    max_entries: usize,
}

fn io_error(e: &io::Error) -> SourceError {
    SourceError::from_io(e)
}

impl Directory {
    /// The canonical location of an existing `path`, refused when it is not under the root.
    fn resolve(&self, path: &RemotePath) -> Result<PathBuf, SourceError> {
        let mut p = self.root.clone();
        p.extend(path.segments());
        let real = fs::canonicalize(&p).map_err(|e| io_error(&e))?;
        if real.starts_with(&self.root) {
            Ok(real)
        } else {
            Err(SourceError::Forbidden)
        }
    }

    /// The canonical folder `dir` (refused when not a folder).
    fn resolve_dir(&self, dir: &RemotePath) -> Result<PathBuf, SourceError> {
        let real = self.resolve(dir)?;
        if real.is_dir() {
            Ok(real)
        } else {
            Err(SourceError::NotFound)
        }
    }

    fn require_writable(&self) -> Result<(), SourceError> {
        if self.writable {
            Ok(())
        } else {
            Err(SourceError::Forbidden)
        }
    }

    /// The entry for `path`, found at the canonical `real`.
    fn entry(&self, path: RemotePath, real: &Path) -> Result<Entry, SourceError> {
        let meta = fs::metadata(real).map_err(|e| io_error(&e))?;
        let modified = meta.modified().ok().map(time::OffsetDateTime::from);
        let is_dir = meta.is_dir();
        let name = path.name().to_owned();
        Ok(Entry {
            size: (!is_dir).then_some(meta.len()),
            created: meta.created().ok().map(time::OffsetDateTime::from),
            etag: modified
                .filter(|_| !is_dir)
                .map(|m| format!("\"{:x}-{:x}\"", m.unix_timestamp_nanos(), meta.len())),
            mime: (!is_dir).then(|| coffer_domain::content::guess_mime(&name).to_owned()),
            modified,
            is_dir,
            name,
            path,
        })
    }

    /// Where `name` goes inside the folder `dir`: the canonical folder and the target in it.
    /// An existing symlink there that leads out of the root is refused.
    fn target(&self, dir: &RemotePath, name: &str) -> Result<(PathBuf, PathBuf), SourceError> {
        if !valid_segment(name) {
            return Err(SourceError::InvalidPath);
        }
        let folder = self.resolve_dir(dir)?;
        let target = folder.join(name);
        if fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_symlink()) {
            match fs::canonicalize(&target) {
                Ok(real) if !real.starts_with(&self.root) => return Err(SourceError::Forbidden),
                _ => {}
            }
        }
        Ok((folder, target))
    }
}

impl Connector for Directory {
    fn check(&self) -> Result<(), SourceError> {
        self.resolve_dir(&RemotePath::root()).map(|_| ())
    }

    fn stat(&self, path: &RemotePath) -> Result<Entry, SourceError> {
        let real = self.resolve(path)?;
        self.entry(path.clone(), &real)
    }

    fn list(&self, dir: &RemotePath) -> Result<Vec<Entry>, SourceError> {
        let real = self.resolve_dir(dir)?;
        let mut out = Vec::new();
        for item in fs::read_dir(&real).map_err(|e| io_error(&e))? {
            let item = item.map_err(|e| io_error(&e))?;
            let Some(name) = item.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let Ok(path) = dir.join(&name) else { continue };
            // Followed only while it stays inside; dangling links are left out.
            let Ok(target) = fs::canonicalize(item.path()) else {
                continue;
            };
            if !target.starts_with(&self.root) {
                continue;
            }
            if out.len() == self.max_entries {
                return Err(SourceError::TooLarge);
            }
            out.push(self.entry(path, &target)?);
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn read(
        &self,
        path: &RemotePath,
        range: Option<(u64, Option<u64>)>,
    ) -> Result<Download, SourceError> {
        let real = self.resolve(path)?;
        let entry = self.entry(path.clone(), &real)?;
        if entry.is_dir {
            return Err(SourceError::NotFound);
        }
        let mut file = File::open(&real).map_err(|e| io_error(&e))?;
        let size = file.metadata().map_err(|e| io_error(&e))?.len();
        let (applied, length) = match range {
            None => (None, size),
            Some((first, last)) => {
                let last = last.unwrap_or(u64::MAX).min(size.saturating_sub(1));
                if first >= size || first > last {
                    return Err(SourceError::RangeNotSatisfiable);
                }
                file.seek(SeekFrom::Start(first))
                    .map_err(|e| io_error(&e))?;
                (Some((first, last)), last - first + 1)
            }
        };
        Ok(Download {
            entry,
            range: applied,
            length: Some(length),
            body: Box::new(file.take(length)),
        })
    }

    fn write(
        &self,
        dir: &RemotePath,
        name: &str,
        body: &mut dyn Read,
        length: Option<u64>,
        replace: bool,
    ) -> Result<Entry, SourceError> {
        self.require_writable()?;
        let (folder, target) = self.target(dir, name)?;
        match fs::metadata(&target) {
            Ok(m) if m.is_dir() => return Err(SourceError::Exists),
            Ok(_) if !replace => return Err(SourceError::Exists),
            _ => {}
        }
        let mut temp = tempfile::Builder::new()
            .prefix(".coffer-upload-")
            .tempfile_in(&folder)
            .map_err(|e| io_error(&e))?;
        let written = match length {
            Some(n) => {
                let copied = io::copy(&mut Read::take(&mut *body, n), temp.as_file_mut())
                    .map_err(|e| io_error(&e))?;
                if copied < n {
                    return Err(SourceError::Remote(format!(
                        "the body ended after {copied} of {n} bytes"
                    )));
                }
                // One byte more than announced is one too many.
                if body.read(&mut [0u8; 1]).map_err(|e| io_error(&e))? > 0 {
                    return Err(SourceError::TooLarge);
                }
                copied
            }
            None => io::copy(body, temp.as_file_mut()).map_err(|e| io_error(&e))?,
        };
        log::debug!("source directory: {written} bytes for {}", target.display());
        temp.as_file_mut()
            .flush()
            .and_then(|()| temp.as_file().sync_all())
            .map_err(|e| io_error(&e))?;
        if replace {
            temp.persist(&target).map_err(|e| io_error(&e.error))?;
        } else {
            // Refuses atomically when the name appeared meanwhile.
            temp.persist_noclobber(&target).map_err(|e| {
                if e.error.kind() == io::ErrorKind::AlreadyExists {
                    SourceError::Exists
                } else {
                    io_error(&e.error)
                }
            })?;
        }
        let path = dir.join(name)?;
        self.entry(path, &target)
    }

    fn make_dir(&self, parent: &RemotePath, name: &str) -> Result<Entry, SourceError> {
        self.require_writable()?;
        let (_, target) = self.target(parent, name)?;
        fs::create_dir(&target).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                SourceError::Exists
            } else {
                io_error(&e)
            }
        })?;
        self.entry(parent.join(name)?, &target)
    }

    fn delete(&self, path: &RemotePath) -> Result<(), SourceError> {
        self.require_writable()?;
        let Some(parent) = path.parent() else {
            return Err(SourceError::Forbidden);
        };
        let folder = self.resolve_dir(&parent)?;
        let target = folder.join(path.name());
        let meta = fs::symlink_metadata(&target).map_err(|e| io_error(&e))?;
        // A symlink is removed itself, never what it points to.
        let done = if meta.is_dir() {
            fs::remove_dir_all(&target)
        } else {
            fs::remove_file(&target)
        };
        done.map_err(|e| io_error(&e))
    }

    fn writable(&self) -> bool {
        self.writable
    }
}
