//! The one error type of the blob store.

/// What a blob store operation can fail with.
///
/// No message carries a credential: URL errors name the offending parameter, never its value,
/// and backend errors are the S3 client's, which never include the signing secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    /// The blob (or the staged upload) does not exist.
    #[error("blob not found")]
    NotFound,
    /// More bytes arrived than the caller's limit allows; nothing was stored.
    #[error("content exceeds the size limit")]
    TooLarge,
    /// The requested byte range lies outside the blob (or starts after it ends).
    #[error("requested range not satisfiable")]
    InvalidRange,
    /// A blob key, upload id or chunk index is malformed.
    #[error("invalid blob key, upload id or chunk index")]
    InvalidName,
    /// `commit_staged` was asked for a chunk that was never staged.
    #[error("staged upload lacks chunk {0}")]
    MissingChunk(u32),
    /// The storage URL given to [`crate::BlobStore::open`] is not understood.
    #[error("invalid storage URL: {0}")]
    InvalidUrl(String),
    /// The caller's incoming stream failed (for example the client went away mid-upload);
    /// nothing was stored. Callers map their stream's error to this.
    #[error("incoming stream failed: {0}")]
    Aborted(String),
    /// A local file system operation failed.
    #[error("storage I/O error: {0}")]
    Io(String),
    /// The S3 API answered with an error, or could not be reached.
    #[error("storage backend error: {0}")]
    Backend(String),
}

impl From<std::io::Error> for StorageError {
    fn from(e: std::io::Error) -> Self {
        StorageError::Io(e.to_string())
    }
}

impl From<tokio::task::JoinError> for StorageError {
    fn from(e: tokio::task::JoinError) -> Self {
        StorageError::Io(format!("blocking file task failed: {e}"))
    }
}

/// Maps an S3 client error: a missing object is [`StorageError::NotFound`], anything else is
/// [`StorageError::Backend`] with the client's message (which never contains credentials).
pub(crate) fn backend(e: object_store::Error) -> StorageError {
    match e {
        object_store::Error::NotFound { .. } => StorageError::NotFound,
        other => StorageError::Backend(other.to_string()),
    }
}
