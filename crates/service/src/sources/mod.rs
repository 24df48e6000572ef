//! External sources: connections to repositories outside Coffer (a WebDAV server a user adds, a
//! server directory the operator exposes), browsed and transferred through a
//! `coffer_sources::Connector` (docs/sources.md).
//!
//! What the files of this area share lives here: the configuration ([`Settings`]), the source a
//! caller names ([`Named`], [`source`], [`content`]), the opaque content ids
//! (`base64url(sourceId ":" remotePath)`; the root of a source is named by the source's own id),
//! the server's secret key and the sealing of credentials with it ([`seal`], [`unseal`]), the
//! connector of a source ([`connect`]) and what a connector's refusal answers ([`remote`]).
//! `manage` holds the sources themselves, their credentials and pins; `browse` the remote
//! folders and files; `transfer` the transfers between a source and Coffer; `edit` the
//! short-lived tokens an external editor reads and writes one file with.
//!
//! Connectors block (network or disk): every call runs on the service's blocking threads, and
//! never inside a database transaction.

pub mod browse;
pub mod edit;
pub mod json;
pub mod manage;
pub mod transfer;

use crate::{Ctx, Result};
use base64::Engine as _;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_sources::{Connector, Credentials, RemotePath, SourceError};
use coffer_store::sources::Source;
use coffer_store::DbConn;
use std::path::{Path, PathBuf};

/// The source type of a WebDAV server (users add these).
pub const TYPE_WEBDAV: i64 = 1;
/// The source type of a server directory (only the operator sets these up).
pub const TYPE_DIRECTORY: i64 = 2;

/// The prefix of an operator directory's source id: `dir-<base64url(name)>` (the name may hold
/// any character but `=` and `,`; the id must stay one path segment without `:`).
const DIR_PREFIX: &str = "dir-";

/// A directory of the server the operator exposes to every user (`COFFER_SOURCE_DIRS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorDir {
    pub name: String,
    pub root: PathBuf,
    pub writable: bool,
}

/// The deployment's sources settings.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The operator's directories (`COFFER_SOURCE_DIRS`).
    pub dirs: Vec<OperatorDir>,
    /// Whether a WebDAV source may name a loopback, private or link-local address
    /// (`COFFER_SOURCES_ALLOW_PRIVATE`).
    pub allow_private: bool,
    /// The file of the server's secret key that seals stored credentials
    /// (`COFFER_SECRET_KEY_FILE`, by default `<data dir>/secret.key`); none: credentials cannot
    /// be stored.
    pub key_file: Option<PathBuf>,
}

/// A source a caller may use: one of theirs, or an operator directory.
#[derive(Debug, Clone)]
pub enum Named {
    User(Source),
    Dir(OperatorDir),
}

impl Named {
    pub fn id(&self) -> String {
        match self {
            Named::User(s) => s.id.clone(),
            Named::Dir(d) => format!(
                "{DIR_PREFIX}{}",
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&d.name)
            ),
        }
    }

    pub fn type_id(&self) -> i64 {
        match self {
            Named::User(s) => s.type_id,
            Named::Dir(_) => TYPE_DIRECTORY,
        }
    }
}

fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

/// The source `id` names for `user_id`: their own, or an operator directory; anything else
/// (another user's source included) answers 404 as if it did not exist.
pub fn source(c: &mut DbConn, ctx: &Ctx, user_id: &str, id: &str) -> Result<Named> {
    if let Some(encoded) = id.strip_prefix(DIR_PREFIX) {
        let name = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(encoded)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(not_found)?;
        return ctx
            .config
            .sources
            .dirs
            .iter()
            .find(|d| d.name == name)
            .map(|d| Named::Dir(d.clone()))
            .ok_or_else(not_found);
    }
    match coffer_store::sources::by_id(c, id)? {
        Some(s) if s.owner_id == user_id => Ok(Named::User(s)),
        _ => Err(not_found()),
    }
}

/// The content id of `path` in the source `source_id`: the source's own id for its root.
pub fn content_id(source_id: &str, path: &str) -> String {
    if path.is_empty() {
        return source_id.to_string();
    }
    // Encoded straight from one buffer into a string of the right size (a listing makes two
    // of these for every entry).
    let mut raw = Vec::with_capacity(source_id.len() + 1 + path.len());
    raw.extend_from_slice(source_id.as_bytes());
    raw.push(b':');
    raw.extend_from_slice(path.as_bytes());
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut id = String::with_capacity(base64::encoded_len(raw.len(), false).unwrap_or(0));
    engine.encode_string(&raw, &mut id);
    id
}

/// The source and the remote path a content id names, for `user_id`: a source id is its root;
/// an id that does not decode, names no source of the caller, or a path that is not a plain
/// path inside the source (`..`, empty segments) answers 404.
pub fn content(c: &mut DbConn, ctx: &Ctx, user_id: &str, id: &str) -> Result<(Named, RemotePath)> {
    if let Ok(s) = source(c, ctx, user_id, id) {
        return Ok((s, RemotePath::root()));
    }
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(id)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(not_found)?;
    let (source_id, path) = decoded.split_once(':').ok_or_else(not_found)?;
    if path.is_empty() {
        return Err(not_found());
    }
    let s = source(c, ctx, user_id, source_id)?;
    let path = RemotePath::parse(path).map_err(|_| not_found())?;
    Ok((s, path))
}

/// [`content`] in a read of its own.
pub fn resolve(ctx: &Ctx, user_id: &str, id: &str) -> Result<(Named, RemotePath)> {
    ctx.read(|c| content(c, ctx, user_id, id))
}

/// The server's secret key: 32 bytes, kept base64 in the key file, never in the database.
pub struct SecretKey([u8; 32]);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

impl SecretKey {
    /// Reads a key file.
    pub fn read(path: &Path) -> Result<SecretKey> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::internal_in("reading the secret key file", e))?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| Error::internal_in("decoding the secret key file", e))?;
        let key: [u8; 32] = bytes
            .try_into()
            .map_err(|_| Error::internal("the secret key file does not hold 32 bytes in base64"))?;
        Ok(SecretKey(key))
    }

    /// The key in `path`, made (32 random bytes, mode 0600) when the file does not exist. Two
    /// processes starting together both end with the one file that was written first.
    pub fn read_or_make(path: &Path) -> Result<SecretKey> {
        match std::fs::metadata(path) {
            Ok(_) => return SecretKey::read(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::internal_in("reading the secret key file", e)),
        }
        SecretKey::make(path)?;
        SecretKey::read(path)
    }

    /// Writes a new random key to `path`, which must not exist yet (an existing file is kept).
    pub fn make(path: &Path) -> Result<()> {
        use ring::rand::SecureRandom as _;
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut key = [0u8; 32];
        ring::rand::SystemRandom::new()
            .fill(&mut key)
            .map_err(|_| Error::internal("no random bytes for the secret key"))?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::internal_in("making the secret key's directory", e))?;
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
        match file {
            Ok(mut f) => {
                let text = base64::engine::general_purpose::STANDARD.encode(key);
                writeln!(f, "{text}")
                    .and_then(|_| f.sync_all())
                    .map_err(|e| Error::internal_in("writing the secret key file", e))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(Error::internal_in("making the secret key file", e)),
        }
    }

    fn aead(&self) -> ring::aead::LessSafeKey {
        let unbound = ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, &self.0)
            .unwrap_or_else(|_| unreachable!("an AES-256 key is 32 bytes"));
        ring::aead::LessSafeKey::new(unbound)
    }
}

/// The server's secret key, from the configured file (made on first use).
pub fn secret_key(ctx: &Ctx) -> Result<SecretKey> {
    let path = ctx
        .config
        .sources
        .key_file
        .as_deref()
        .ok_or_else(|| Error::internal("no secret key file is configured"))?;
    SecretKey::read_or_make(path)
}

/// The version byte in front of a sealed blob: AES-256-GCM, 12-byte nonce.
const SEALED_V1: u8 = 1;

/// A login and password as stored (sealed) for a source.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Login {
    pub login: String,
    pub password: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("login", &self.login)
            .finish_non_exhaustive()
    }
}

/// Seals `login` for the source `source_id`: a version byte, a random nonce, then the
/// ciphertext with its tag. The source's id is the associated data, so a sealed blob copied to
/// another source does not open.
pub fn seal(key: &SecretKey, source_id: &str, login: &Login) -> Result<Vec<u8>> {
    use ring::aead::{Aad, Nonce, NONCE_LEN};
    use ring::rand::SecureRandom as _;
    let mut nonce = [0u8; NONCE_LEN];
    ring::rand::SystemRandom::new()
        .fill(&mut nonce)
        .map_err(|_| Error::internal("no random bytes for a nonce"))?;
    let mut data = serde_json::to_vec(login).map_err(Error::internal)?;
    key.aead()
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(source_id.as_bytes()),
            &mut data,
        )
        .map_err(|_| Error::internal("sealing credentials failed"))?;
    let mut out = Vec::with_capacity(1 + NONCE_LEN + data.len());
    out.push(SEALED_V1);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&data);
    Ok(out)
}

/// Opens what [`seal`] made for the same source with the same key.
pub fn unseal(key: &SecretKey, source_id: &str, sealed: &[u8]) -> Result<Login> {
    use ring::aead::{Aad, Nonce, NONCE_LEN};
    let bad = || Error::internal("stored credentials do not open with the secret key");
    let rest = match sealed.split_first() {
        Some((&SEALED_V1, rest)) if rest.len() > NONCE_LEN => rest,
        _ => return Err(bad()),
    };
    let (nonce, body) = rest.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| bad())?;
    let mut buf = body.to_vec();
    let plain = key
        .aead()
        .open_in_place(nonce, Aad::from(source_id.as_bytes()), &mut buf)
        .map_err(|_| bad())?;
    serde_json::from_slice(plain).map_err(|_| bad())
}

/// The connector of a WebDAV server at `url` with `credentials`, through the address guard.
pub fn webdav(ctx: &Ctx, url: &str, credentials: Credentials) -> Result<Box<dyn Connector>> {
    let url = url::Url::parse(url).map_err(|_| bad_url())?;
    let options = coffer_sources::WebDavOptions {
        allow_private: ctx.config.sources.allow_private,
        limits: Default::default(),
    };
    coffer_sources::webdav(&url, credentials, &options).map_err(|e| match e {
        SourceError::AddressRefused(why) => {
            log::info!("a source address was refused: {why}");
            refused_url()
        }
        e => remote_failure(e),
    })
}

fn bad_url() -> Error {
    ApiError::field(ErrorCode::InvalidParameter, "sourceUrl")
        .with_message("The source URL must be an http or https URL.")
        .into()
}

fn refused_url() -> Error {
    ApiError::field(ErrorCode::InvalidParameter, "sourceUrl")
        .with_message("The source URL names an address Coffer does not connect to.")
        .into()
}

/// The connector of a source: an operator directory, or a user's WebDAV server with its stored
/// credentials. A source whose credentials the remote refused answers 403
/// `ERR_AUTH_EC_UPDATE_TOKEN` until new ones are given.
pub fn connect(ctx: &Ctx, s: &Named) -> Result<Box<dyn Connector>> {
    match s {
        Named::Dir(d) => coffer_sources::directory(&d.root, d.writable).map_err(|e| {
            log::warn!("the operator directory {} cannot be opened: {e:?}", d.name);
            unavailable()
        }),
        Named::User(s) => {
            if s.needs_auth {
                return Err(ApiError::new(ErrorCode::AuthEcUpdateToken).into());
            }
            let credentials = match &s.credentials {
                Some(sealed) => {
                    let l = unseal(&secret_key(ctx)?, &s.id, sealed)?;
                    Credentials::Basic {
                        login: l.login,
                        password: l.password,
                    }
                }
                None => Credentials::None,
            };
            webdav(ctx, &s.url, credentials)
        }
    }
}

fn unavailable() -> Error {
    ApiError::new(ErrorCode::ServiceUnavailable)
        .with_message("The source did not answer as expected; try again later.")
        .into()
}

/// A connector failure that names no source state: the remote's own words go to the log only.
fn remote_failure(e: SourceError) -> Error {
    match e {
        SourceError::NeedsAuth => ApiError::new(ErrorCode::AuthEcUpdateToken).into(),
        SourceError::NotFound | SourceError::InvalidPath => not_found(),
        SourceError::RangeNotSatisfiable => ApiError::field(ErrorCode::InvalidParameter, "Range")
            .with_message("The range lies outside the content.")
            .into(),
        SourceError::Forbidden => ApiError::new(ErrorCode::AccessUser).into(),
        SourceError::AddressRefused(why) => {
            log::info!("a source address was refused: {why}");
            refused_url()
        }
        SourceError::Exists => ApiError::new(ErrorCode::EntityExists).into(),
        SourceError::Locked => ApiError::new(ErrorCode::EntityLocked).into(),
        SourceError::Unsupported => ApiError::new(ErrorCode::InvalidParameter)
            .with_message("The source does not offer this.")
            .into(),
        SourceError::TooLarge => {
            log::warn!("a source answered more than Coffer takes");
            unavailable()
        }
        SourceError::Timeout => {
            log::warn!("a source did not answer in time");
            unavailable()
        }
        SourceError::Remote(why) => {
            log::warn!("a source failed: {why}");
            unavailable()
        }
    }
}

/// What a connector's refusal answers. A refusal of the credentials marks the source as needing
/// them again, so that later calls answer 403 `ERR_AUTH_EC_UPDATE_TOKEN` without asking the
/// remote.
pub fn remote(ctx: &Ctx, s: &Named, e: SourceError) -> Error {
    if let (SourceError::NeedsAuth, Named::User(src)) = (&e, s) {
        if let Err(err) = ctx.write(|c| Ok(coffer_store::sources::set_needs_auth(c, &src.id)?)) {
            log::warn!("could not mark a source as needing credentials: {err}");
        }
    }
    remote_failure(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SecretKey {
        SecretKey([7u8; 32])
    }

    #[test]
    fn sealed_credentials_open_for_the_same_source_and_key_only() {
        let l = Login {
            login: "ann".into(),
            password: "s3cret".into(),
        };
        let sealed = seal(&key(), "src-1", &l).unwrap();
        assert!(!sealed.windows(6).any(|w| w == b"s3cret"));
        let back = unseal(&key(), "src-1", &sealed).unwrap();
        assert_eq!(
            (back.login.as_str(), back.password.as_str()),
            ("ann", "s3cret")
        );
        assert!(unseal(&key(), "src-2", &sealed).is_err());
        assert!(unseal(&SecretKey([8u8; 32]), "src-1", &sealed).is_err());
        let mut tampered = sealed.clone();
        *tampered.last_mut().unwrap() ^= 1;
        assert!(unseal(&key(), "src-1", &tampered).is_err());
        // A fresh nonce each time: the same input never seals to the same bytes.
        assert_ne!(seal(&key(), "src-1", &l).unwrap(), sealed);
    }

    #[test]
    fn a_key_file_is_made_once_private_and_read_back() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys/secret.key");
        let a = SecretKey::read_or_make(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let b = SecretKey::read_or_make(&path).unwrap();
        assert_eq!(a.0, b.0);
        std::fs::write(&path, "not base64!").unwrap();
        assert!(SecretKey::read(&path).is_err());
    }

    #[test]
    fn content_ids_carry_the_source_and_the_path() {
        assert_eq!(content_id("abc", ""), "abc");
        let id = content_id("abc", "a/b c.txt");
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&id)
            .unwrap();
        assert_eq!(raw, b"abc:a/b c.txt");
    }
}
