//! External sources: the connectors through which Coffer reads and writes files kept outside
//! it. A [`Connector`] speaks to one source, rooted at one folder of it: a WebDAV server
//! ([`webdav`]) or a directory of the server Coffer runs on that the operator exposes
//! ([`directory`], configured with `COFFER_SOURCE_DIRS`, see [`parse_source_dirs`]).
//!
//! Everything here is blocking: the service layer calls a connector from its blocking pool or a
//! job worker, never on an async executor. Paths inside a source are [`RemotePath`]s, which can
//! only name something under the source's root; a connector refuses whatever would lead out of
//! it (an href outside the root, a symlink pointing elsewhere) with [`SourceError::Forbidden`]
//! or [`SourceError::Remote`]. What each connector does and refuses is in `docs/sources.md`.

mod config;
mod directory;
mod path;
mod webdav;

use std::fmt;
use std::io;
use std::time::Duration;

pub use config::{parse_source_dirs, DirSource};
pub use directory::directory;
pub use path::RemotePath;
pub use webdav::{webdav, WebDavOptions};

/// One file or folder of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: RemotePath,
    /// The last segment of `path` ("" for the root).
    pub name: String,
    pub is_dir: bool,
    /// The size in bytes of a file; `None` for a folder or when the source does not say.
    pub size: Option<u64>,
    pub created: Option<time::OffsetDateTime>,
    pub modified: Option<time::OffsetDateTime>,
    /// The source's version tag of the content, when it has one (changes when the file does).
    pub etag: Option<String>,
    pub mime: Option<String>,
}

/// How Coffer signs in to a source.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    None,
    /// A login and password, sent as HTTP Basic or Digest, whichever the server asks for
    /// (Digest preferred when it offers both).
    Basic {
        login: String,
        password: String,
    },
}

impl fmt::Debug for Credentials {
    /// Never prints the password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::None => f.write_str("None"),
            Credentials::Basic { login, .. } => f
                .debug_struct("Basic")
                .field("login", login)
                .field("password", &"<hidden>")
                .finish(),
        }
    }
}

/// A file being read from a source.
pub struct Download {
    pub entry: Entry,
    /// The inclusive byte positions sent, when a range was asked for and applied.
    pub range: Option<(u64, u64)>,
    /// How many bytes `body` yields, when known.
    pub length: Option<u64>,
    /// The content. A read error that carries a [`SourceError`] (e.g. more bytes than announced)
    /// is turned back into it by [`SourceError::from_io`].
    pub body: Box<dyn io::Read + Send>,
}

impl fmt::Debug for Download {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Download")
            .field("entry", &self.entry)
            .field("range", &self.range)
            .field("length", &self.length)
            .finish_non_exhaustive()
    }
}

/// Why a source operation failed. The texts of `AddressRefused` and `Remote` are for the log,
/// never for a response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// The source refused the credentials (or asked for some and none were given).
    #[error("the source needs (other) credentials")]
    NeedsAuth,
    #[error("no such file or folder in the source")]
    NotFound,
    /// The source refused (403), a write to a read-only source, or a path leading out of the
    /// source's root.
    #[error("refused by the source")]
    Forbidden,
    /// The address guard refused the source's host.
    #[error("address refused: {0}")]
    AddressRefused(String),
    /// More bytes than announced or than a limit allows.
    #[error("too large")]
    TooLarge,
    /// The target of a create exists.
    #[error("already exists")]
    Exists,
    /// The source reports the file locked by someone else.
    #[error("locked")]
    Locked,
    /// The source does not offer the operation (e.g. locking).
    #[error("not supported by the source")]
    Unsupported,
    #[error("the source did not answer in time")]
    Timeout,
    /// A path or name that cannot be a [`RemotePath`] or one of its segments.
    #[error("invalid path")]
    InvalidPath,
    /// A byte range outside the file.
    #[error("range not satisfiable")]
    RangeNotSatisfiable,
    /// Anything else (the text says what, for the log).
    #[error("source error: {0}")]
    Remote(String),
}

impl SourceError {
    /// The error an `io::Error` from a [`Download`] body or a connector's own I/O stands for: the
    /// `SourceError` it carries, `Timeout` for a time-out, `NotFound`/`Forbidden` for those
    /// kinds, else `Remote`.
    pub fn from_io(e: &io::Error) -> SourceError {
        if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<SourceError>()) {
            return inner.clone();
        }
        match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => SourceError::Timeout,
            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => SourceError::NotFound,
            io::ErrorKind::PermissionDenied => SourceError::Forbidden,
            _ => SourceError::Remote(e.to_string()),
        }
    }

    /// This error as an `io::Error` (for a reader), recoverable with [`SourceError::from_io`].
    pub fn into_io(self) -> io::Error {
        let kind = match self {
            SourceError::Timeout => io::ErrorKind::TimedOut,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, self)
    }
}

/// One source, rooted at one of its folders. Every method blocks.
pub trait Connector: Send + Sync {
    /// Checks the credentials and that the root is a folder.
    fn check(&self) -> Result<(), SourceError>;
    fn stat(&self, path: &RemotePath) -> Result<Entry, SourceError>;
    /// The entries directly inside `dir`, without `dir` itself, sorted by name.
    fn list(&self, dir: &RemotePath) -> Result<Vec<Entry>, SourceError>;
    /// Streams a file; `range` = (first, Some(last) | None), inclusive byte positions.
    fn read(
        &self,
        path: &RemotePath,
        range: Option<(u64, Option<u64>)>,
    ) -> Result<Download, SourceError>;
    /// Streams `body` (of `length` bytes when known) into `dir/name`, replacing a file there when
    /// `replace`; answers the new entry.
    fn write(
        &self,
        dir: &RemotePath,
        name: &str,
        body: &mut dyn io::Read,
        length: Option<u64>,
        replace: bool,
    ) -> Result<Entry, SourceError>;
    /// Replaces the file `dir/name` on which this connector holds the lock `token` (from
    /// [`Connector::lock`]); a source without locks writes as [`Connector::write`] does.
    fn write_locked(
        &self,
        dir: &RemotePath,
        name: &str,
        body: &mut dyn io::Read,
        length: Option<u64>,
        token: &str,
    ) -> Result<Entry, SourceError> {
        let _ = token;
        self.write(dir, name, body, length, true)
    }
    fn make_dir(&self, parent: &RemotePath, name: &str) -> Result<Entry, SourceError>;
    /// Deletes a file, or a folder with everything in it.
    fn delete(&self, path: &RemotePath) -> Result<(), SourceError>;
    /// Deletes a file on which this connector holds the lock `token`; a source without locks
    /// deletes as [`Connector::delete`] does.
    fn delete_locked(&self, path: &RemotePath, token: &str) -> Result<(), SourceError> {
        let _ = token;
        self.delete(path)
    }
    /// Takes a remote lock when the source offers one; `Ok(None)` when the source has no locks
    /// at all (a WebDAV server without locking answers `Unsupported`).
    fn lock(&self, path: &RemotePath, owner: &str) -> Result<Option<String>, SourceError> {
        let _ = (path, owner);
        Ok(None)
    }
    fn unlock(&self, path: &RemotePath, token: &str) -> Result<(), SourceError> {
        let _ = (path, token);
        Ok(())
    }
    /// Whether writes are allowed at all.
    fn writable(&self) -> bool;
}

/// Bounds on what a remote source may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connecting (DNS answer to TCP and TLS established).
    pub connect_timeout: Duration,
    /// Each read or write on the connection.
    pub io_timeout: Duration,
    /// The most bytes of one listing (a PROPFIND answer).
    pub max_listing_bytes: u64,
    /// The most entries of one listing.
    pub max_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connect_timeout: Duration::from_secs(10),
            io_timeout: Duration::from_secs(30),
            max_listing_bytes: 16 << 20,
            max_entries: 100_000,
        }
    }
}
