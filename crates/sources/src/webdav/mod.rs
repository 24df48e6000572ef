//! The WebDAV connector (RFC 4918): a collection of a WebDAV server as a source.
//!
//! Listings and metadata come from PROPFIND (depth 0 or 1, asking for exactly the properties an
//! [`Entry`] has); content from GET (with `Range`), PUT (streamed, chunked when the length is
//! unknown; `If-None-Match: *` when nothing may be replaced), MKCOL and DELETE; locks from
//! LOCK/UNLOCK (an exclusive write lock) when the server offers class 2.
//!
//! A connector is made for each call, yet what it learns outlives it: the connectors of one
//! source (the same root, credentials and options) share a [`Session`], kept in a small
//! process-wide table, with the HTTP client's pool of keep-alive connections and the
//! authentication scheme the server asked for. So a listing after the first reuses an open
//! connection, and answers a known scheme at once (Basic preemptively, Digest with the next
//! nonce count) instead of being refused (401) first.
//!
//! What the connector refuses to trust: every host it connects to passes the address guard (the
//! guard is the HTTP client's resolver, so the address checked is the address connected to),
//! unless the operator allows private addresses (`COFFER_SOURCES_ALLOW_PRIVATE`); no redirect is
//! followed except for GET, and there at most [`MAX_REDIRECTS`], each through the guard, and the
//! credentials go only to the source's own origin; every call has time-outs; a listing is capped
//! in bytes and entries and read by a multistatus reader that expands no entity; an href outside
//! the source's root is refused; a download that runs past its announced length fails with
//! `TooLarge`.

mod auth;
mod multistatus;

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{self, Read};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex, OnceLock};

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use url::Url;

use crate::path::valid_segment;
use crate::{Connector, Credentials, Download, Entry, Limits, RemotePath, SourceError};
use auth::Scheme;

/// The most redirects one GET follows.
pub const MAX_REDIRECTS: usize = 3;

/// How long a remote lock is asked for.
pub const LOCK_SECONDS: u64 = 3600;

/// The most sessions kept (the least recently used one goes first): one per source in use.
const MAX_SESSIONS: usize = 256;

/// What a listing's body is first given when the server does not announce its length (a
/// listing of a thousand entries is about 300 KiB; a larger one grows it).
const LISTING_BUFFER: u64 = 256 << 10;

/// The most idle connections a session keeps open to its server: as many as the listings of
/// one source a few clients make at once, so that each takes an open connection.
const IDLE_PER_SESSION: usize = 16;

/// Options of the WebDAV connector.
#[derive(Debug, Clone, Default)]
pub struct WebDavOptions {
    /// Connect to private, loopback and other not globally reachable addresses too.
    pub allow_private: bool,
    pub limits: Limits,
}

/// What a PROPFIND asks for: the properties of an [`Entry`] but its media type, which Coffer
/// takes from the name as it does for its own files and directory sources. `getcontenttype` is
/// the costly one to answer: Apache's mod_dav looks it up with a subrequest per entry, which
/// halved the listings it served (1,000 entries at 8 clients: 146 PROPFINDs/s with it, 300
/// without). A server that sends it anyway is believed.
const PROPFIND_BODY: &str = concat!(
    r#"<?xml version="1.0" encoding="utf-8"?>"#,
    r#"<D:propfind xmlns:D="DAV:"><D:prop>"#,
    r#"<D:resourcetype/><D:getcontentlength/><D:getlastmodified/><D:creationdate/>"#,
    r#"<D:getetag/>"#,
    r#"</D:prop></D:propfind>"#
);

/// The characters of a path segment sent as they are; every other byte is percent-encoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A connector for the WebDAV collection at `url` (`http` or `https`, no credentials in it).
/// Nothing is sent yet: [`Connector::check`] is the first call to the server.
pub fn webdav(
    url: &Url,
    credentials: Credentials,
    options: &WebDavOptions,
) -> Result<Box<dyn Connector>, SourceError> {
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(SourceError::Unsupported);
    }
    if !url.username().is_empty() || url.password().is_some() {
        // Credentials belong in `Credentials`, where they are never logged.
        return Err(SourceError::Unsupported);
    }
    let mut base = url.clone();
    base.set_fragment(None);
    base.set_query(None);
    if !base.path().ends_with('/') {
        let path = format!("{}/", base.path());
        base.set_path(&path);
    }
    let root_segments = decoded_segments(base.path()).ok_or(SourceError::InvalidPath)?;
    let limits = options.limits;
    let session = session(&base, &credentials, options);
    Ok(Box::new(WebDav {
        session,
        base,
        root_segments,
        credentials,
        class2: OnceLock::new(),
        limits,
    }))
}

/// What the connectors of one source share: the HTTP client (its pool of keep-alive
/// connections to the server) and how the server asked to be answered.
struct Session {
    agent: ureq::Agent,
    /// How the server asked to be answered, once it has (with the next digest nonce count).
    scheme: Mutex<Option<(Scheme, u32)>>,
}

impl Session {
    fn new(options: &WebDavOptions) -> Session {
        let limits = options.limits;
        let agent = ureq::AgentBuilder::new()
            .resolver(AddressGuard {
                allow_private: options.allow_private,
            })
            .redirects(0)
            .timeout_connect(limits.connect_timeout)
            .timeout_read(limits.io_timeout)
            .timeout_write(limits.io_timeout)
            .max_idle_connections(IDLE_PER_SESSION)
            .max_idle_connections_per_host(IDLE_PER_SESSION)
            .user_agent(concat!("Coffer/", env!("CARGO_PKG_VERSION")))
            .build();
        Session {
            agent,
            scheme: Mutex::new(None),
        }
    }
}

/// The sessions by key, with when each was last taken.
type Sessions = HashMap<[u8; 32], (Arc<Session>, u64)>;

/// The session of the source at `base` with `credentials` and `options`, made when there is
/// none. The key is a keyed hash (a random key of this process) of all of them, so that a
/// change of any (new credentials, above all) starts a session of its own, and the table holds
/// no password, nor a plain hash one could be tested against.
fn session(base: &Url, credentials: &Credentials, options: &WebDavOptions) -> Arc<Session> {
    use sha2::Digest as _;
    static SALT: OnceLock<[u8; 32]> = OnceLock::new();
    static TABLE: OnceLock<Mutex<(Sessions, u64)>> = OnceLock::new();
    let mut h = sha2::Sha256::new();
    // Each part with its length in front: no two different inputs run together the same.
    let mut part = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(SALT.get_or_init(rand::random));
    part(base.as_str().as_bytes());
    part(format!("{:?} {}", options.limits, options.allow_private).as_bytes());
    match credentials {
        Credentials::None => part(b"none"),
        Credentials::Basic { login, password } => {
            part(b"basic");
            part(login.as_bytes());
            part(password.as_bytes());
        }
    }
    let key: [u8; 32] = h.finalize().into();
    let table = TABLE.get_or_init(Mutex::default);
    let mut guard = table.lock().unwrap_or_else(|p| p.into_inner());
    let (sessions, clock) = &mut *guard;
    *clock += 1;
    let now = *clock;
    if let Some((s, used)) = sessions.get_mut(&key) {
        *used = now;
        return s.clone();
    }
    if sessions.len() >= MAX_SESSIONS {
        if let Some(oldest) = sessions
            .iter()
            .min_by_key(|(_, (_, used))| *used)
            .map(|(k, _)| *k)
        {
            sessions.remove(&oldest);
        }
    }
    let s = Arc::new(Session::new(options));
    sessions.insert(key, (s.clone(), now));
    s
}

/// The address guard as the client's resolver, with the option that lifts it named in its
/// refusal.
#[derive(Debug, Clone, Copy)]
struct AddressGuard {
    allow_private: bool,
}

/// The guard's refusal, carried through the HTTP client's error to [`SourceError::AddressRefused`].
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

impl ureq::Resolver for AddressGuard {
    fn resolve(&self, netloc: &str) -> io::Result<Vec<SocketAddr>> {
        let addrs: Vec<SocketAddr> = netloc.to_socket_addrs()?.collect();
        if !self.allow_private {
            if let Some((addr, why)) = addrs
                .iter()
                .find_map(|a| coffer_delivery::guard::non_public(a.ip()).map(|why| (a, why)))
            {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    Refused(format!(
                        "refused: {} {why} (set COFFER_SOURCES_ALLOW_PRIVATE=true to allow)",
                        addr.ip()
                    )),
                ));
            }
        }
        Ok(addrs)
    }
}

struct WebDav {
    /// Shared with the other connectors of the same source.
    session: Arc<Session>,
    /// The root collection, ending in '/'.
    base: Url,
    /// The root's path, percent-decoded, by segment.
    root_segments: Vec<String>,
    credentials: Credentials,
    /// Whether the server offers locking (DAV class 2), once asked.
    class2: OnceLock<bool>,
    limits: Limits,
}

/// A request body: none, bytes that can be sent again after an authentication challenge, or a
/// stream that cannot.
enum Body<'a> {
    Empty,
    Bytes(&'a [u8]),
    Stream(&'a mut dyn Read, Option<u64>),
}

/// The percent-decoded segments of a URL path (empty segments left out), `None` when one is
/// not UTF-8.
fn decoded_segments(path: &str) -> Option<Vec<String>> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            percent_decode_str(s)
                .decode_utf8()
                .ok()
                .map(|c| c.into_owned())
        })
        .collect()
}

/// One segment of an href's path, percent-decoded when it holds a `%`; `None` when the decoded
/// bytes are not UTF-8.
fn decode_segment(s: &str) -> Option<Cow<'_, str>> {
    if !s.contains('%') {
        return Some(Cow::Borrowed(s));
    }
    percent_decode_str(s).decode_utf8().ok()
}

/// Whether `href` is an absolute path that resolving it against a URL of the same origin would
/// leave as it is: only characters the URL parser keeps as they are, no `.` or `..` segment in
/// any spelling (`%2e` included: the parser takes it for a dot), no query or fragment.
fn plain_absolute_path(href: &str) -> bool {
    let b = href.as_bytes();
    b.first() == Some(&b'/')
        && b.get(1) != Some(&b'/')
        && b.iter().all(|&c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b'/' | b'-'
                        | b'.'
                        | b'_'
                        | b'~'
                        | b'%'
                        | b'!'
                        | b'$'
                        | b'&'
                        | b'\''
                        | b'('
                        | b')'
                        | b'*'
                        | b'+'
                        | b','
                        | b';'
                        | b'='
                        | b':'
                        | b'@'
                )
        })
        && !b
            .windows(3)
            .any(|w| w[0] == b'%' && w[1] == b'2' && w[2] | 0x20 == b'e')
        && !href.split('/').any(|s| s == "." || s == "..")
}

/// The folder holding `path`, as text; `None` for the root.
fn parent_of(path: &RemotePath) -> Option<&str> {
    let p = path.as_str();
    (!p.is_empty()).then(|| p.rsplit_once('/').map_or("", |(parent, _)| parent))
}

/// The HTTP client's error as a `SourceError`: the guard's refusal, a time-out, or `Remote`.
fn transport_error(e: &ureq::Error) -> SourceError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<io::Error>() {
            if let Some(r) = io.get_ref().and_then(|i| i.downcast_ref::<Refused>()) {
                return SourceError::AddressRefused(r.0.clone());
            }
            if matches!(
                io.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ) {
                return SourceError::Timeout;
            }
        }
        cause = c.source();
    }
    SourceError::Remote(e.to_string())
}

/// The error an unexpected status stands for, wherever it comes.
fn status_error(status: u16) -> SourceError {
    match status {
        401 => SourceError::NeedsAuth,
        403 => SourceError::Forbidden,
        404 | 410 => SourceError::NotFound,
        413 | 507 => SourceError::TooLarge,
        416 => SourceError::RangeNotSatisfiable,
        423 => SourceError::Locked,
        501 => SourceError::Unsupported,
        s => SourceError::Remote(format!("HTTP {s}")),
    }
}

/// Reads at most `cap` bytes of a body and fails with `TooLarge` past it.
struct Capped<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            // Anything more than the cap is too much.
            return match self.inner.read(&mut [0u8; 1])? {
                0 => Ok(0),
                _ => Err(SourceError::TooLarge.into_io()),
            };
        }
        let n = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let got = self.inner.read(&mut buf[..n])?;
        self.left -= got as u64;
        Ok(got)
    }
}

/// Sends exactly `len` bytes of a request body, failing when it ends early.
struct Exactly<'a> {
    inner: &'a mut dyn Read,
    left: u64,
}

impl Read for Exactly<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 || buf.is_empty() {
            return Ok(0);
        }
        let n = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let got = self.inner.read(&mut buf[..n])?;
        if got == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the body ended before its announced length",
            ));
        }
        self.left -= got as u64;
        Ok(got)
    }
}

impl WebDav {
    /// The URL of `path`; with a trailing '/' when `dir` (collections are addressed so).
    fn url(&self, path: &RemotePath, dir: bool) -> Url {
        let mut p = self.base.path().to_owned();
        for (i, segment) in path.segments().enumerate() {
            if i > 0 {
                p.push('/');
            }
            p.extend(utf8_percent_encode(segment, SEGMENT));
        }
        if dir && !path.is_root() {
            p.push('/');
        }
        let mut url = self.base.clone();
        url.set_path(&p);
        url
    }

    fn same_origin(&self, url: &Url) -> bool {
        url.origin() == self.base.origin()
    }

    /// The `Authorization` value for a request, once the server has asked for one.
    fn authorization(&self, method: &str, url: &Url) -> Option<String> {
        let Credentials::Basic { login, password } = &self.credentials else {
            return None;
        };
        if !self.same_origin(url) {
            return None;
        }
        let mut state = self
            .session
            .scheme
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let (scheme, nc) = state.as_mut()?;
        Some(match scheme {
            Scheme::Basic => auth::basic(login, password),
            Scheme::Digest(d) => {
                *nc += 1;
                let mut uri = url.path().to_owned();
                if let Some(q) = url.query() {
                    uri.push('?');
                    uri.push_str(q);
                }
                let cnonce = hex::encode(rand::random::<[u8; 16]>());
                d.answer(login, password, method, &uri, *nc, &cnonce)
            }
        })
    }

    /// Learns the scheme from a 401's challenges. `false` when there is nothing (new) to answer:
    /// no credentials, no scheme Coffer speaks, or the same credentials already refused.
    fn learn(&self, response: &ureq::Response, sent_auth: bool) -> bool {
        if matches!(self.credentials, Credentials::None) {
            return false;
        }
        let challenges = auth::parse_challenges(response.all("www-authenticate"));
        let Some(scheme) = auth::choose(&challenges) else {
            return false;
        };
        // Only a digest nonce that went stale is worth answering again.
        let stale = matches!(&scheme, Scheme::Digest(d) if d.stale);
        if sent_auth && !stale {
            return false;
        }
        *self
            .session
            .scheme
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some((scheme, 0));
        true
    }

    /// Sends one request to `url` (no redirect followed) and answers the response whatever its
    /// status, after answering an authentication challenge when the body can be sent again.
    fn send(
        &self,
        method: &str,
        url: &Url,
        headers: &[(&str, &str)],
        mut body: Body<'_>,
    ) -> Result<ureq::Response, SourceError> {
        for attempt in 0..2 {
            let mut request = self.session.agent.request_url(method, url);
            for (name, value) in headers {
                request = request.set(name, value);
            }
            let authorization = self.authorization(method, url);
            if let Some(a) = &authorization {
                request = request.set("Authorization", a);
            }
            let result =
                match &mut body {
                    Body::Empty => request.call(),
                    Body::Bytes(b) => request.send_bytes(b),
                    Body::Stream(r, Some(len)) => request
                        .set("Content-Length", &len.to_string())
                        .send(Exactly {
                            inner: &mut **r,
                            left: *len,
                        }),
                    // Without Content-Length the client sends it chunked.
                    Body::Stream(r, None) => request.send(&mut **r),
                };
            let response = match result {
                Ok(r) => r,
                Err(ureq::Error::Status(_, r)) => r,
                Err(e) => return Err(transport_error(&e)),
            };
            if response.status() != 401 || !self.same_origin(url) {
                return Ok(response);
            }
            let replayable = !matches!(body, Body::Stream(..));
            if attempt == 0 && self.learn(&response, authorization.is_some()) && replayable {
                continue;
            }
            return Err(SourceError::NeedsAuth);
        }
        Err(SourceError::NeedsAuth)
    }

    /// PROPFIND on `url` at `depth`: the body of its multistatus answer, read whole within the
    /// byte cap (the reader lends its values out of it; [`WebDav::responses`] reads it).
    fn propfind(&self, url: &Url, depth: &str) -> Result<Vec<u8>, SourceError> {
        let response = self.send(
            "PROPFIND",
            url,
            &[
                ("Depth", depth),
                ("Content-Type", "application/xml; charset=utf-8"),
            ],
            Body::Bytes(PROPFIND_BODY.as_bytes()),
        )?;
        match response.status() {
            207 => {}
            s => return Err(status_error(s)),
        }
        let cap = self.limits.max_listing_bytes;
        let announced = response
            .header("Content-Length")
            .and_then(|l| l.trim().parse::<u64>().ok());
        if announced.is_some_and(|l| l > cap) {
            return Err(SourceError::TooLarge);
        }
        // Sized by the announced length when there is one (a chunked answer grows it).
        let mut body = Vec::with_capacity(announced.unwrap_or(LISTING_BUFFER).min(cap) as usize);
        Capped {
            inner: response.into_reader(),
            left: cap,
        }
        .read_to_end(&mut body)
        .map_err(|e| SourceError::from_io(&e))?;
        Ok(body)
    }

    /// The responses of a multistatus `body`, within the limit of entries.
    fn responses<'a>(&self, body: &'a [u8]) -> Result<Vec<multistatus::Response<'a>>, SourceError> {
        multistatus::parse(body, self.limits.max_entries + 1).map_err(|e| match e {
            multistatus::ParseError::TooMany => SourceError::TooLarge,
            multistatus::ParseError::Bad(why) => {
                SourceError::Remote(format!("PROPFIND answer: {why}"))
            }
        })
    }

    /// The path inside the source an href names, resolved against the request's URL; refused
    /// when it lies outside the source's root.
    /// An absolute path (what most servers send) that the URL parser would give back as it is,
    /// is read as it stands; any other href is resolved by the URL parser.
    fn href_path(&self, request: &Url, href: &str) -> Result<RemotePath, SourceError> {
        let outside = || SourceError::Remote(format!("href {href:?} is outside the source"));
        let resolved;
        let path = if plain_absolute_path(href) {
            href
        } else {
            let url = request
                .join(href)
                .map_err(|e| SourceError::Remote(format!("href {href:?}: {e}")))?;
            if !self.same_origin(&url) {
                return Err(outside());
            }
            resolved = url;
            resolved.path()
        };
        let mut segments = path.split('/').filter(|s| !s.is_empty());
        for root in &self.root_segments {
            match segments.next().map(decode_segment) {
                Some(Some(s)) if s == root.as_str() => {}
                _ => return Err(outside()),
            }
        }
        let mut rest = String::with_capacity(path.len());
        for segment in segments {
            let s = decode_segment(segment).ok_or_else(outside)?;
            if !valid_segment(&s) {
                return Err(outside());
            }
            if !rest.is_empty() {
                rest.push('/');
            }
            rest.push_str(&s);
        }
        RemotePath::parse(&rest).map_err(|_| outside())
    }

    fn entry(&self, path: RemotePath, r: multistatus::Response<'_>) -> Entry {
        // The server's media type when it sends one unasked; else the name's, as for a
        // directory source (see PROPFIND_BODY).
        let mime = r
            .content_type
            .filter(|m| !m.is_empty())
            .map(Cow::into_owned)
            .or_else(|| {
                (!r.is_collection)
                    .then(|| coffer_domain::content::guess_mime(path.name()).to_owned())
            });
        Entry {
            name: path.name().to_owned(),
            is_dir: r.is_collection,
            size: (!r.is_collection)
                .then(|| r.content_length.and_then(|l| l.parse().ok()))
                .flatten(),
            created: r.creation_date.as_deref().and_then(parse_rfc3339),
            modified: r.last_modified.as_deref().and_then(parse_http_date),
            etag: r.etag.filter(|e| !e.is_empty()).map(Cow::into_owned),
            mime,
            path,
        }
    }

    /// `stat` of a path, found by PROPFIND depth 0 on `url`.
    fn stat_at(&self, path: &RemotePath, url: &Url) -> Result<Entry, SourceError> {
        let body = self.propfind(url, "0")?;
        for r in self.responses(&body)? {
            if self.href_path(url, &r.href)? == *path {
                return Ok(self.entry(path.clone(), r));
            }
        }
        Err(SourceError::Remote(format!(
            "PROPFIND on {path:?} did not describe it"
        )))
    }

    /// `stat`, or `None` when there is nothing at `path`.
    fn find(&self, path: &RemotePath) -> Result<Option<Entry>, SourceError> {
        match self.stat(path) {
            Ok(e) => Ok(Some(e)),
            Err(SourceError::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether the server offers locking: its OPTIONS answer names DAV class 2.
    fn offers_locks(&self) -> Result<bool, SourceError> {
        if let Some(known) = self.class2.get() {
            return Ok(*known);
        }
        let response = self.send("OPTIONS", &self.base, &[], Body::Empty)?;
        if !(200..300).contains(&response.status()) {
            return Err(status_error(response.status()));
        }
        let class2 = response
            .all("DAV")
            .iter()
            .flat_map(|v| v.split(','))
            .any(|c| c.trim() == "2");
        Ok(*self.class2.get_or_init(|| class2))
    }

    /// `write`, with the `If` header of a lock this connector holds on the file.
    fn put(
        &self,
        dir: &RemotePath,
        name: &str,
        body: &mut dyn Read,
        length: Option<u64>,
        replace: bool,
        lock: Option<&str>,
    ) -> Result<Entry, SourceError> {
        let path = dir.join(name)?;
        // Also teaches the scheme before a body that cannot be sent twice.
        let parent = self.stat(dir)?;
        if !parent.is_dir {
            return Err(SourceError::NotFound);
        }
        match self.find(&path)? {
            Some(e) if e.is_dir => return Err(SourceError::Exists),
            Some(_) if !replace => return Err(SourceError::Exists),
            _ => {}
        }
        let url = self.url(&path, false);
        let condition = lock.map(|t| if_header(t, &url)).transpose()?;
        let mut headers = vec![("Content-Type", "application/octet-stream")];
        if !replace {
            headers.push(("If-None-Match", "*"));
        }
        if let Some(c) = &condition {
            headers.push(("If", c.as_str()));
        }
        let response = self.send("PUT", &url, &headers, Body::Stream(&mut *body, length))?;
        match response.status() {
            200..=299 => {}
            409 => return Err(SourceError::NotFound),
            // The lock named is not (or no longer) held on the file.
            412 if lock.is_some() => return Err(SourceError::Locked),
            412 => return Err(SourceError::Exists),
            s => return Err(status_error(s)),
        }
        if length.is_some()
            && body
                .read(&mut [0u8; 1])
                .map_err(|e| SourceError::from_io(&e))?
                > 0
        {
            return Err(SourceError::TooLarge);
        }
        self.stat(&path)
    }

    /// `delete`, with the `If` header of a lock this connector holds on the path.
    fn remove(&self, path: &RemotePath, lock: Option<&str>) -> Result<(), SourceError> {
        if path.is_root() {
            return Err(SourceError::Forbidden);
        }
        let entry = self.stat(path)?;
        let url = self.url(path, entry.is_dir);
        let condition = lock.map(|t| if_header(t, &url)).transpose()?;
        let headers: Vec<(&str, &str)> = condition.iter().map(|c| ("If", c.as_str())).collect();
        let response = self.send("DELETE", &url, &headers, Body::Empty)?;
        match response.status() {
            // 207: some members could not be deleted (the multistatus says which, e.g. locked).
            207 => Err(SourceError::Locked),
            200..=299 => Ok(()),
            // 424: a condition failed on another resource the delete depends on (the parent).
            412 | 424 => Err(SourceError::Locked),
            s => Err(status_error(s)),
        }
    }

    /// GET `url`, following at most [`MAX_REDIRECTS`] redirects (each through the guard).
    fn get(&self, url: &Url, range: Option<&str>) -> Result<ureq::Response, SourceError> {
        let mut url = url.clone();
        let headers: Vec<(&str, &str)> = range.map(|r| ("Range", r)).into_iter().collect();
        for _ in 0..=MAX_REDIRECTS {
            let response = self.send("GET", &url, &headers, Body::Empty)?;
            if !matches!(response.status(), 301 | 302 | 303 | 307 | 308) {
                return Ok(response);
            }
            let location = response
                .header("Location")
                .ok_or_else(|| SourceError::Remote("a redirect without Location".into()))?;
            let next = url
                .join(location)
                .map_err(|e| SourceError::Remote(format!("redirect to {location:?}: {e}")))?;
            if !matches!(next.scheme(), "http" | "https") {
                return Err(SourceError::Remote("a redirect to another scheme".into()));
            }
            url = next;
        }
        Err(SourceError::Remote(format!(
            "more than {MAX_REDIRECTS} redirects"
        )))
    }
}

/// A lock token as it may go into a header.
fn check_token(token: &str) -> Result<(), SourceError> {
    if token.is_empty()
        || token
            .chars()
            .any(|c| c.is_control() || matches!(c, '<' | '>' | '(' | ')'))
    {
        return Err(SourceError::Remote("not a lock token".into()));
    }
    Ok(())
}

/// The `If` header (RFC 4918 §10.4) naming a lock held on the request's resource `url`, as a
/// tagged list: an untagged list applies to every resource the request touches, and a server
/// that also checks the parent collection of a DELETE (Apache's mod_dav does) finds no such lock
/// there and refuses the whole request.
fn if_header(token: &str, url: &Url) -> Result<String, SourceError> {
    check_token(token)?;
    Ok(format!("<{url}> (<{token}>)"))
}

/// A PROPFIND date (`creationdate`, RFC 3339).
fn parse_rfc3339(s: &str) -> Option<time::OffsetDateTime> {
    time::OffsetDateTime::parse(s.trim(), &time::format_description::well_known::Rfc3339).ok()
}

/// An HTTP date (`getlastmodified`, RFC 9110 IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`).
/// A listing reads one for every entry: the usual form is read by hand, and whatever it does not
/// take as it stands (another spacing, a weekday that is not the date's, …) goes to `time`'s
/// parser, which decides as before.
fn parse_http_date(s: &str) -> Option<time::OffsetDateTime> {
    let s = s.trim();
    fast_http_date(s).or_else(|| general_http_date(s))
}

/// The IMF-fixdate `s` exactly as RFC 9110 writes it, with a weekday that is its date's.
fn fast_http_date(s: &str) -> Option<time::OffsetDateTime> {
    const DAYS: [&[u8]; 7] = [b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat", b"Sun"];
    const MONTHS: [&[u8]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    let b = s.as_bytes();
    if b.len() != 29 || &b[3..5] != b", " || &b[25..] != b" GMT" {
        return None;
    }
    if b[7] != b' ' || b[11] != b' ' || b[16] != b' ' || b[19] != b':' || b[22] != b':' {
        return None;
    }
    let number = |at: usize, len: usize| -> Option<u16> {
        b[at..at + len].iter().try_fold(0u16, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u16::from(c - b'0'))
        })
    };
    let weekday = DAYS.iter().position(|d| *d == &b[..3])?;
    let month = MONTHS.iter().position(|m| *m == &b[8..11])?;
    let month = time::Month::try_from(month as u8 + 1).ok()?;
    let date = time::Date::from_calendar_date(
        i32::from(number(12, 4)?),
        month,
        u8::try_from(number(5, 2)?).ok()?,
    )
    .ok()?;
    if date.weekday().number_days_from_monday() as usize != weekday {
        return None;
    }
    let at = date
        .with_hms(
            u8::try_from(number(17, 2)?).ok()?,
            u8::try_from(number(20, 2)?).ok()?,
            u8::try_from(number(23, 2)?).ok()?,
        )
        .ok()?;
    Some(at.assume_utc())
}

/// An HTTP date read by `time`'s parser.
fn general_http_date(s: &str) -> Option<time::OffsetDateTime> {
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    time::PrimitiveDateTime::parse(s.trim(), &format)
        .ok()
        .map(|t| t.assume_utc())
}

/// A `Content-Range: bytes first-last/total` value.
fn content_range(value: &str) -> Option<(u64, u64)> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (span, _total) = rest.split_once('/')?;
    let (first, last) = span.split_once('-')?;
    let (first, last) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
    (first <= last).then_some((first, last))
}

impl Connector for WebDav {
    fn check(&self) -> Result<(), SourceError> {
        let root = self.stat_at(&RemotePath::root(), &self.base)?;
        if root.is_dir {
            Ok(())
        } else {
            Err(SourceError::Remote(
                "the source's URL is not a collection".into(),
            ))
        }
    }

    fn stat(&self, path: &RemotePath) -> Result<Entry, SourceError> {
        if path.is_root() {
            return self.stat_at(path, &self.base);
        }
        self.stat_at(path, &self.url(path, false))
    }

    fn list(&self, dir: &RemotePath) -> Result<Vec<Entry>, SourceError> {
        let url = self.url(dir, true);
        let body = self.propfind(&url, "1")?;
        let responses = self.responses(&body)?;
        let mut out = Vec::with_capacity(responses.len());
        let mut saw_dir = false;
        for r in responses {
            let path = self.href_path(&url, &r.href)?;
            if path == *dir {
                saw_dir = true;
                if !r.is_collection {
                    return Err(SourceError::NotFound);
                }
                continue;
            }
            // Only the folder's own children (a server answering deeper is not followed).
            if parent_of(&path) == Some(dir.as_str()) {
                out.push(self.entry(path, r));
            }
        }
        if !saw_dir && out.is_empty() {
            return Err(SourceError::Remote(format!(
                "PROPFIND on {dir:?} did not describe it"
            )));
        }
        if out.len() > self.limits.max_entries {
            return Err(SourceError::TooLarge);
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn read(
        &self,
        path: &RemotePath,
        range: Option<(u64, Option<u64>)>,
    ) -> Result<Download, SourceError> {
        let entry = self.stat(path)?;
        if entry.is_dir {
            return Err(SourceError::NotFound);
        }
        if let Some((first, Some(last))) = range {
            if first > last {
                return Err(SourceError::RangeNotSatisfiable);
            }
        }
        let header = range.map(|(first, last)| match last {
            Some(last) => format!("bytes={first}-{last}"),
            None => format!("bytes={first}-"),
        });
        let response = self.get(&self.url(path, false), header.as_deref())?;
        let status = response.status();
        let announced = response
            .header("Content-Length")
            .and_then(|l| l.trim().parse::<u64>().ok());
        let span = response.header("Content-Range").and_then(content_range);
        let mut reader: Box<dyn Read + Send> = response.into_reader();
        let (applied, length) = match (status, range) {
            (206, _) => {
                let span =
                    span.ok_or_else(|| SourceError::Remote("a 206 without Content-Range".into()))?;
                let len = span.1 - span.0 + 1;
                if announced.is_some_and(|a| a != len) {
                    return Err(SourceError::Remote(
                        "Content-Range and length differ".into(),
                    ));
                }
                (Some(span), Some(len))
            }
            (200, None) => (None, announced.or(entry.size)),
            // The server sent the whole file for a range: the range is cut out here.
            (200, Some((first, last))) => {
                let size = announced.or(entry.size).ok_or_else(|| {
                    SourceError::Remote("a whole file of unknown size for a range".into())
                })?;
                let last = last.unwrap_or(u64::MAX).min(size.saturating_sub(1));
                if first >= size || first > last {
                    return Err(SourceError::RangeNotSatisfiable);
                }
                let skipped = io::copy(&mut (&mut reader).take(first), &mut io::sink())
                    .map_err(|e| SourceError::from_io(&e))?;
                if skipped < first {
                    return Err(SourceError::Remote("the body ended early".into()));
                }
                let len = last - first + 1;
                reader = Box::new(reader.take(len));
                (Some((first, last)), Some(len))
            }
            (s, _) => return Err(status_error(s)),
        };
        // Never more than announced: the client stops at Content-Length itself; without one the
        // size the listing gave is the bound.
        let body: Box<dyn Read + Send> = match length {
            Some(len) => Box::new(Capped {
                inner: reader,
                left: len,
            }),
            None => reader,
        };
        Ok(Download {
            entry,
            range: applied,
            length,
            body,
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
        self.put(dir, name, body, length, replace, None)
    }

    fn write_locked(
        &self,
        dir: &RemotePath,
        name: &str,
        body: &mut dyn Read,
        length: Option<u64>,
        token: &str,
    ) -> Result<Entry, SourceError> {
        self.put(dir, name, body, length, true, Some(token))
    }

    fn make_dir(&self, parent: &RemotePath, name: &str) -> Result<Entry, SourceError> {
        let path = parent.join(name)?;
        let response = self.send("MKCOL", &self.url(&path, true), &[], Body::Empty)?;
        match response.status() {
            200..=299 => self.stat(&path),
            405 => Err(SourceError::Exists),
            409 => Err(SourceError::NotFound),
            s => Err(status_error(s)),
        }
    }

    fn delete(&self, path: &RemotePath) -> Result<(), SourceError> {
        self.remove(path, None)
    }

    fn delete_locked(&self, path: &RemotePath, token: &str) -> Result<(), SourceError> {
        self.remove(path, Some(token))
    }

    fn lock(&self, path: &RemotePath, owner: &str) -> Result<Option<String>, SourceError> {
        if !self.offers_locks()? {
            return Err(SourceError::Unsupported);
        }
        // A LOCK on nothing would create an empty file: only existing files are locked.
        let entry = self.stat(path)?;
        let body = format!(
            concat!(
                r#"<?xml version="1.0" encoding="utf-8"?>"#,
                r#"<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope>"#,
                r#"<D:locktype><D:write/></D:locktype><D:owner>{}</D:owner></D:lockinfo>"#
            ),
            quick_xml::escape::escape(owner)
        );
        let timeout = format!("Second-{LOCK_SECONDS}");
        let response = self.send(
            "LOCK",
            &self.url(path, entry.is_dir),
            &[
                ("Depth", "0"),
                ("Timeout", timeout.as_str()),
                ("Content-Type", "application/xml; charset=utf-8"),
            ],
            Body::Bytes(body.as_bytes()),
        )?;
        match response.status() {
            200 | 201 => {}
            405 | 501 => return Err(SourceError::Unsupported),
            s => return Err(status_error(s)),
        }
        let token = response
            .header("Lock-Token")
            .map(|t| {
                t.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_owned()
            })
            .filter(|t| !t.is_empty())
            .ok_or_else(|| SourceError::Remote("a LOCK answer without Lock-Token".into()))?;
        Ok(Some(token))
    }

    fn unlock(&self, path: &RemotePath, token: &str) -> Result<(), SourceError> {
        check_token(token)?;
        let entry = self.stat(path)?;
        let header = format!("<{token}>");
        let response = self.send(
            "UNLOCK",
            &self.url(path, entry.is_dir),
            &[("Lock-Token", header.as_str())],
            Body::Empty,
        )?;
        match response.status() {
            200..=299 => Ok(()),
            405 | 501 => Err(SourceError::Unsupported),
            // The token does not (or no longer) hold a lock on the file.
            409 | 412 => Err(SourceError::Locked),
            s => Err(status_error(s)),
        }
    }

    fn writable(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connector(url: &str) -> WebDav {
        let url = Url::parse(url).unwrap();
        let mut base = url.clone();
        if !base.path().ends_with('/') {
            let p = format!("{}/", base.path());
            base.set_path(&p);
        }
        WebDav {
            session: Arc::new(Session::new(&WebDavOptions::default())),
            root_segments: decoded_segments(base.path()).unwrap(),
            base,
            credentials: Credentials::None,
            class2: OnceLock::new(),
            limits: Limits::default(),
        }
    }

    #[test]
    fn urls_encode_each_segment() {
        let c = connector("https://dav.example.com/remote.php/dav/files/ann");
        let p = RemotePath::parse("a b/R&D#1?.txt").unwrap();
        assert_eq!(
            c.url(&p, false).as_str(),
            "https://dav.example.com/remote.php/dav/files/ann/a%20b/R%26D%231%3F.txt"
        );
        assert_eq!(
            c.url(&RemotePath::parse("x").unwrap(), true).as_str(),
            "https://dav.example.com/remote.php/dav/files/ann/x/"
        );
        assert_eq!(
            c.url(&RemotePath::root(), true).as_str(),
            "https://dav.example.com/remote.php/dav/files/ann/"
        );
    }

    #[test]
    fn hrefs_resolve_inside_the_root_only() {
        let c = connector("http://dav.example.com/dav/");
        let req = Url::parse("http://dav.example.com/dav/a/").unwrap();
        let ok = |href: &str| c.href_path(&req, href).unwrap().as_str().to_owned();
        assert_eq!(ok("/dav/a/"), "a");
        assert_eq!(ok("/dav/a/b%20c.txt"), "a/b c.txt");
        assert_eq!(ok("http://dav.example.com/dav/a/x/"), "a/x");
        assert_eq!(ok("x.txt"), "a/x.txt");
        assert_eq!(ok("/dav/"), "");
        assert_eq!(ok("/dav"), "");
        for bad in [
            "/other/",
            "/dav/../etc/passwd",
            "/dav/a/%2e%2e/%2e%2e/etc",
            "/dav/a%2fb",
            "http://evil.example.com/dav/a/",
            "https://dav.example.com/dav/a/",
            "/davx/a",
            "/dav/%ff",
            "/dav/a%0Ab",
        ] {
            assert!(
                matches!(c.href_path(&req, bad), Err(SourceError::Remote(_))),
                "{bad}"
            );
        }
    }

    /// How an href was resolved before absolute paths were read as they stand: always through
    /// the URL parser.
    fn href_path_by_url(c: &WebDav, request: &Url, href: &str) -> Option<String> {
        let url = request.join(href).ok()?;
        if !c.same_origin(&url) {
            return None;
        }
        let segments = decoded_segments(url.path())?;
        let rest = segments.strip_prefix(c.root_segments.as_slice())?;
        if !rest.iter().all(|s| valid_segment(s)) {
            return None;
        }
        RemotePath::parse(&rest.join("/"))
            .ok()
            .map(|p| p.as_str().to_owned())
    }

    #[test]
    fn hrefs_read_as_they_stand_resolve_as_the_url_parser_does() {
        let c = connector("http://dav.example.com/d%20v/");
        let req = Url::parse("http://dav.example.com/d%20v/a/").unwrap();
        for href in [
            "/d%20v/a/",
            "/d%20v/a/b.txt",
            "/d v/a/b.txt",
            "/d%20v//a///b.txt",
            "/d%20v/a/R%26D%20%E2%84%A2.txt",
            "/d%20v/a/it's (1)+x;y=z:w@v!$*,~.txt",
            "/d%20v/a/.hidden",
            "/d%20v/a/..b",
            "/d%20v/a/./b",
            "/d%20v/a/../b",
            "/d%20v/a/%2e%2E/b",
            "/d%20v/a/.%2e/b",
            "/d%20v/a/%2E/b",
            "/d%20v/a/%2ex",
            "/d%20v/a/b%2fc",
            "/d%20v/a/%zz",
            "/d%20v/a/%ff",
            "/d%20v/a/%0a",
            "/d%20v/a/b?q=1",
            "/d%20v/a/b#f",
            "/d%20v/a\\b",
            "/d%20v/a/ç.txt",
            "//dav.example.com/d%20v/a/b",
            "//evil.example.com/d%20v/a/b",
            "/d%20va/b",
            "/other/a",
            "/",
            "b.txt",
            "http://dav.example.com/d%20v/a/b",
        ] {
            let fast = plain_absolute_path(href);
            assert_eq!(
                c.href_path(&req, href).ok().map(|p| p.as_str().to_owned()),
                href_path_by_url(&c, &req, href),
                "{href} (read as it stands: {fast})"
            );
        }
        assert!(plain_absolute_path("/d%20v/a/b%20c.txt"));
        assert!(!plain_absolute_path("/d%20v/a/%2e%2e/b"));
        assert!(!plain_absolute_path("b.txt"));
    }

    #[test]
    fn the_short_way_reads_http_dates_as_time_does() {
        let imf = time::macros::format_description!(
            "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
        );
        // Every day over several centuries at a moving time of day, as a server writes them.
        let mut t = -2_208_988_800i64; // 1900-01-01
        while t < 7_258_118_400 {
            let at = time::OffsetDateTime::from_unix_timestamp(t).unwrap();
            let text = at.format(&imf).unwrap();
            assert_eq!(fast_http_date(&text), Some(at), "{text}");
            assert_eq!(parse_http_date(&text), general_http_date(&text), "{text}");
            t += 86_400 + 3_607;
        }
        // What the short way leaves to `time`, or refuses as it does.
        for text in [
            "Mon, 06 Nov 1994 08:49:37 GMT",
            "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:49:37 GMT",
            "Sun, 06 Nov 1994 08:60:37 GMT",
            "Sun, 06 Nov 1994 08:49:60 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "sun, 06 nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov +994 08:49:37 GMT",
            "Sun, 06 Xyz 1994 08:49:37 GMT",
            "Sun,  06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:3é GMT",
            "  Sun, 06 Nov 1994 08:49:37 GMT \t",
            "Sat, 01 Jan 0000 00:00:00 GMT",
            "",
        ] {
            assert_eq!(parse_http_date(text), general_http_date(text), "{text:?}");
        }
    }

    #[test]
    fn dates_and_ranges() {
        let t = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(t.unix_timestamp(), 784111777);
        assert!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT").is_none());
        let t = parse_rfc3339("1997-12-01T17:42:21-08:00").unwrap();
        assert_eq!(t.unix_timestamp(), 881026941);
        assert_eq!(content_range("bytes 2-5/10"), Some((2, 5)));
        assert_eq!(content_range("bytes 5-2/10"), None);
        assert_eq!(content_range("bytes */10"), None);
    }

    #[test]
    fn constructor_refuses_other_schemes_and_credentials_in_the_url() {
        let o = WebDavOptions::default();
        for bad in [
            "ftp://example.com/",
            "file:///etc/",
            "http://ann:pw@example.com/dav/",
        ] {
            let e = webdav(&Url::parse(bad).unwrap(), Credentials::None, &o).err();
            assert_eq!(e, Some(SourceError::Unsupported), "{bad}");
        }
        assert!(webdav(
            &Url::parse("https://example.com/dav").unwrap(),
            Credentials::None,
            &o
        )
        .is_ok());
    }

    #[test]
    fn connectors_of_one_source_share_a_session_and_new_credentials_start_afresh() {
        let url = Url::parse("https://dav.example.com/share-test/").unwrap();
        let o = WebDavOptions::default();
        let basic = |password: &str| Credentials::Basic {
            login: "ann".into(),
            password: password.into(),
        };
        let a = session(&url, &basic("one"), &o);
        assert!(Arc::ptr_eq(&a, &session(&url, &basic("one"), &o)));
        // What the first connector learned, the next one answers with at once.
        *a.scheme.lock().unwrap() = Some((Scheme::Basic, 0));
        let c = WebDav {
            session: session(&url, &basic("one"), &o),
            root_segments: decoded_segments(url.path()).unwrap(),
            base: url.clone(),
            credentials: basic("one"),
            class2: OnceLock::new(),
            limits: Limits::default(),
        };
        let sent = c.authorization("PROPFIND", &url).unwrap();
        assert!(sent.starts_with("Basic "), "{sent}");
        // Never to another origin.
        let other = Url::parse("https://elsewhere.example.com/share-test/").unwrap();
        assert_eq!(c.authorization("GET", &other), None);
        for different in [
            session(&url, &basic("two"), &o),
            session(&url, &Credentials::None, &o),
            session(
                &Url::parse("https://dav.example.com/other/").unwrap(),
                &basic("one"),
                &o,
            ),
            session(
                &url,
                &basic("one"),
                &WebDavOptions {
                    allow_private: true,
                    ..o.clone()
                },
            ),
        ] {
            assert!(!Arc::ptr_eq(&a, &different));
            assert!(different.scheme.lock().unwrap().is_none());
        }
    }

    #[test]
    fn credentials_debug_hides_the_password() {
        let c = Credentials::Basic {
            login: "ann".into(),
            password: "hunter2-secret".into(),
        };
        let shown = format!("{c:?}");
        assert!(
            shown.contains("ann") && !shown.contains("hunter2"),
            "{shown}"
        );
    }
}
