//! Virus scanning of stored content.
//!
//! [`Scanner`] is what the rest of Coffer scans with; [`Clamd`] is its implementation over a
//! ClamAV daemon's `INSTREAM` command, on a TCP or a Unix socket. Everything here is
//! synchronous (blocking `std::net` / `std::os::unix::net` sockets with timeouts): it is called
//! from a job worker thread, never inside an API request.
//!
//! The content is streamed to clamd in chunks of [`CHUNK_SIZE`] bytes as it is read, so a scan
//! holds one chunk in memory whatever the size of the file.
//!
//! The configuration grammar, the behaviour on errors and the test database are described in
//! `docs/scanning.md`.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

/// The most content sent to clamd in one `INSTREAM` chunk.
pub const CHUNK_SIZE: usize = 64 * 1024;

/// The timeout [`Clamd::parse`] uses for each connect, read and write.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest reply read from clamd; a longer one is a protocol error.
const MAX_REPLY: usize = 4096;

/// The outcome of a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No signature matched.
    Clean,
    /// A signature matched; its name as the scanner reports it (e.g. `Eicar-Signature`).
    Infected(String),
}

/// Why a scan gave no verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanError {
    /// The scanner cannot be reached or used: a bad address, a refused or timed-out connection,
    /// a connection closed without an answer, or the content itself could not be read.
    Unavailable(String),
    /// The scanner answered something other than a verdict (including its own `ERROR`s).
    Protocol(String),
    /// The content is larger than the scanner accepts (clamd's `StreamMaxLength`:
    /// `INSTREAM size limit exceeded`).
    TooLarge,
    /// A connected scanner did not read or answer in time.
    Timeout,
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScanError::Unavailable(why) => write!(f, "virus scanner unavailable: {why}"),
            ScanError::Protocol(why) => write!(f, "virus scanner protocol error: {why}"),
            ScanError::TooLarge => f.write_str("content exceeds the virus scanner's size limit"),
            ScanError::Timeout => f.write_str("virus scanner timed out"),
        }
    }
}

impl std::error::Error for ScanError {}

/// Something that scans content for viruses.
pub trait Scanner: Send + Sync {
    /// Reads `content` to its end and says whether it is infected.
    fn scan(&self, content: &mut dyn Read) -> Result<Verdict, ScanError>;

    /// A short description for logs and diagnostics (e.g. `clamd tcp://127.0.0.1:3310`).
    fn describe(&self) -> String;
}

impl<S: Scanner + ?Sized> Scanner for Box<S> {
    fn scan(&self, content: &mut dyn Read) -> Result<Verdict, ScanError> {
        (**self).scan(content)
    }

    fn describe(&self) -> String {
        (**self).describe()
    }
}

impl<S: Scanner + ?Sized> Scanner for std::sync::Arc<S> {
    fn scan(&self, content: &mut dyn Read) -> Result<Verdict, ScanError> {
        (**self).scan(content)
    }

    fn describe(&self) -> String {
        (**self).describe()
    }
}

/// Where clamd listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClamdAddr {
    /// `host:port`, resolved at each connection (`[::1]:3310` for an IPv6 literal).
    Tcp(String),
    /// The path of clamd's `LocalSocket`.
    Unix(PathBuf),
}

impl ClamdAddr {
    /// Parses `tcp://HOST:PORT` or `unix:///ABSOLUTE/PATH` (the scheme in any case; one
    /// trailing `/` after the port is allowed). Errors are [`ScanError::Unavailable`].
    pub fn parse(spec: &str) -> Result<ClamdAddr, ScanError> {
        let bad =
            |why: &str| ScanError::Unavailable(format!("invalid clamd address {spec:?}: {why}"));
        let spec_trimmed = spec.trim();
        let (scheme, rest) = spec_trimmed
            .split_once("://")
            .ok_or_else(|| bad("expected tcp://HOST:PORT or unix:///PATH"))?;
        match scheme.to_ascii_lowercase().as_str() {
            "tcp" => {
                let hostport = rest.strip_suffix('/').unwrap_or(rest);
                let (host, port) = hostport
                    .rsplit_once(':')
                    .ok_or_else(|| bad("a TCP address needs a port"))?;
                if host.is_empty() || host == "[]" {
                    return Err(bad("a TCP address needs a host"));
                }
                if hostport.contains(['/', '?', '#', '@']) {
                    return Err(bad("a TCP address is HOST:PORT only"));
                }
                if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
                    return Err(bad("an IPv6 host goes in brackets: tcp://[::1]:3310"));
                }
                match port.parse::<u16>() {
                    Ok(p) if p > 0 => Ok(ClamdAddr::Tcp(hostport.to_string())),
                    _ => Err(bad("the port is not a number from 1 to 65535")),
                }
            }
            "unix" => {
                if !rest.starts_with('/') {
                    return Err(bad(
                        "a socket path must be absolute: unix:///run/clamav/clamd.ctl",
                    ));
                }
                if rest.len() == 1 {
                    return Err(bad("the socket path is empty"));
                }
                Ok(ClamdAddr::Unix(PathBuf::from(rest)))
            }
            _ => Err(bad("the scheme must be tcp or unix")),
        }
    }
}

impl fmt::Display for ClamdAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClamdAddr::Tcp(hostport) => write!(f, "tcp://{hostport}"),
            ClamdAddr::Unix(path) => write!(f, "unix://{}", path.display()),
        }
    }
}

/// A clamd client. Each call opens its own connection, so one `Clamd` serves many threads.
#[derive(Debug, Clone)]
pub struct Clamd {
    addr: ClamdAddr,
    timeout: Duration,
}

impl Clamd {
    /// A client for clamd at `addr`; `timeout` bounds each connect, each write and each wait
    /// for an answer (including the wait while clamd scans). A zero timeout counts as 1 ms.
    pub fn new(addr: ClamdAddr, timeout: Duration) -> Clamd {
        Clamd {
            addr,
            timeout: timeout.max(Duration::from_millis(1)),
        }
    }

    /// A client for `tcp://HOST:PORT` or `unix:///PATH` with [`DEFAULT_TIMEOUT`].
    pub fn parse(spec: &str) -> Result<Clamd, ScanError> {
        Ok(Clamd::new(ClamdAddr::parse(spec)?, DEFAULT_TIMEOUT))
    }

    /// The same client with another timeout.
    pub fn with_timeout(self, timeout: Duration) -> Clamd {
        Clamd::new(self.addr, timeout)
    }

    /// Where this client connects.
    pub fn addr(&self) -> &ClamdAddr {
        &self.addr
    }

    /// The timeout of each connect, write and wait for an answer.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Checks that clamd answers: `zPING` → `PONG`.
    pub fn ping(&self) -> Result<(), ScanError> {
        let mut conn = self.connect()?;
        conn.write_all(b"zPING\0")
            .map_err(|e| io_error("sending PING to clamd", &e))?;
        let reply = read_reply(&mut conn)?;
        match reply_text(&reply).as_str() {
            "PONG" => Ok(()),
            "" => Err(ScanError::Unavailable(
                "clamd closed the connection without answering PING".into(),
            )),
            other => Err(ScanError::Protocol(format!(
                "clamd answered PING with {other:?}"
            ))),
        }
    }

    fn connect(&self) -> Result<Conn, ScanError> {
        match &self.addr {
            ClamdAddr::Tcp(hostport) => {
                let addrs = hostport.to_socket_addrs().map_err(|e| {
                    ScanError::Unavailable(format!("resolving clamd address {hostport}: {e}"))
                })?;
                let mut last = None;
                for addr in addrs {
                    match TcpStream::connect_timeout(&addr, self.timeout) {
                        Ok(stream) => {
                            let setup = stream
                                .set_read_timeout(Some(self.timeout))
                                .and_then(|()| stream.set_write_timeout(Some(self.timeout)))
                                .and_then(|()| stream.set_nodelay(true));
                            setup.map_err(|e| {
                                ScanError::Unavailable(format!("setting up the clamd socket: {e}"))
                            })?;
                            return Ok(Conn::Tcp(stream));
                        }
                        Err(e) => last = Some((addr, e)),
                    }
                }
                Err(ScanError::Unavailable(match last {
                    Some((addr, e)) if is_timeout(&e) => {
                        format!(
                            "connecting to clamd at {addr}: timed out after {:?}",
                            self.timeout
                        )
                    }
                    Some((addr, e)) => format!("connecting to clamd at {addr}: {e}"),
                    None => format!("clamd address {hostport} resolves to no address"),
                }))
            }
            #[cfg(unix)]
            ClamdAddr::Unix(path) => {
                let stream = std::os::unix::net::UnixStream::connect(path).map_err(|e| {
                    ScanError::Unavailable(format!(
                        "connecting to clamd at {}: {e}",
                        path.display()
                    ))
                })?;
                stream
                    .set_read_timeout(Some(self.timeout))
                    .and_then(|()| stream.set_write_timeout(Some(self.timeout)))
                    .map_err(|e| {
                        ScanError::Unavailable(format!("setting up the clamd socket: {e}"))
                    })?;
                Ok(Conn::Unix(stream))
            }
            #[cfg(not(unix))]
            ClamdAddr::Unix(path) => Err(ScanError::Unavailable(format!(
                "unix sockets are not supported on this platform: {}",
                path.display()
            ))),
        }
    }
}

impl Scanner for Clamd {
    fn scan(&self, content: &mut dyn Read) -> Result<Verdict, ScanError> {
        let mut conn = self.connect()?;
        match send_instream(&mut conn, content) {
            Ok(()) => parse_scan_reply(&read_reply(&mut conn)?),
            Err(Failure::Content(e)) => Err(ScanError::Unavailable(format!(
                "reading the content to scan: {e}"
            ))),
            Err(Failure::Socket(e)) if is_timeout(&e) => Err(ScanError::Timeout),
            // clamd stops reading and closes the connection when it refuses the stream (size
            // limit), so the write fails; its reason is usually waiting to be read.
            Err(Failure::Socket(e)) => match read_reply(&mut conn) {
                Ok(reply) if !reply.is_empty() => match parse_scan_reply(&reply) {
                    Err(err) => Err(err),
                    Ok(_) => Err(ScanError::Protocol(format!(
                        "clamd answered {:?} before the stream ended",
                        reply_text(&reply)
                    ))),
                },
                _ => Err(ScanError::Unavailable(format!(
                    "clamd closed the connection during the scan: {e}"
                ))),
            },
        }
    }

    fn describe(&self) -> String {
        format!("clamd {}", self.addr)
    }
}

/// A connected socket to clamd.
enum Conn {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixStream),
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.read(buf),
            #[cfg(unix)]
            Conn::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.write(buf),
            #[cfg(unix)]
            Conn::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.flush(),
            #[cfg(unix)]
            Conn::Unix(s) => s.flush(),
        }
    }
}

/// Which side of a scan failed while streaming.
#[derive(Debug)]
enum Failure {
    /// Reading the content.
    Content(io::Error),
    /// Writing to clamd.
    Socket(io::Error),
}

/// Sends `zINSTREAM`, the content in chunks of at most [`CHUNK_SIZE`] bytes, each preceded by
/// its length as a 4-byte big-endian number, and the zero-length chunk that ends the stream.
fn send_instream(out: &mut impl Write, content: &mut dyn Read) -> Result<(), Failure> {
    out.write_all(b"zINSTREAM\0").map_err(Failure::Socket)?;
    // One buffer for the length prefix and the chunk, so that each chunk is one write.
    let mut buf = vec![0u8; 4 + CHUNK_SIZE];
    loop {
        let n = fill(content, &mut buf[4..]).map_err(Failure::Content)?;
        let len = u32::try_from(n).expect("a chunk is at most CHUNK_SIZE bytes");
        buf[..4].copy_from_slice(&len.to_be_bytes());
        out.write_all(&buf[..4 + n]).map_err(Failure::Socket)?;
        if n == 0 {
            return out.flush().map_err(Failure::Socket);
        }
    }
}

/// Reads until `buf` is full or the content ends; the number of bytes read.
fn fill(content: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match content.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Reads one reply: up to its terminating NUL (the `z` commands' framing) or the end of the
/// connection. Empty when clamd closed the connection without answering.
fn read_reply(conn: &mut impl Read) -> Result<Vec<u8>, ScanError> {
    let mut reply = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        let n = match conn.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error("reading clamd's answer", &e)),
        };
        if n == 0 {
            return Ok(reply);
        }
        if let Some(end) = buf[..n].iter().position(|&b| b == 0) {
            reply.extend_from_slice(&buf[..end]);
            return Ok(reply);
        }
        reply.extend_from_slice(&buf[..n]);
        if reply.len() > MAX_REPLY {
            return Err(ScanError::Protocol(format!(
                "clamd's answer is longer than {MAX_REPLY} bytes"
            )));
        }
    }
}

/// A reply as text without its line ending.
fn reply_text(reply: &[u8]) -> String {
    String::from_utf8_lossy(reply)
        .trim_end_matches(['\0', '\n', '\r'])
        .trim()
        .to_string()
}

/// The verdict in an `INSTREAM` reply: `stream: OK`, `stream: <name> FOUND`, or an error
/// (`INSTREAM size limit exceeded. ERROR`, `<reason> ERROR`, `COMMAND READ TIMED OUT`).
fn parse_scan_reply(reply: &[u8]) -> Result<Verdict, ScanError> {
    let text = reply_text(reply);
    if text.is_empty() {
        return Err(ScanError::Unavailable(
            "clamd closed the connection without a verdict".into(),
        ));
    }
    // The answer of a plain INSTREAM names the file `stream`; tolerate its absence.
    let body = text
        .strip_prefix("stream:")
        .map(str::trim_start)
        .unwrap_or(&text);
    if body == "OK" {
        return Ok(Verdict::Clean);
    }
    if let Some(error) = text.strip_suffix("ERROR") {
        let error = error.trim().trim_end_matches('.');
        if error.contains("size limit exceeded") {
            return Err(ScanError::TooLarge);
        }
        return Err(ScanError::Protocol(format!("clamd: {error}")));
    }
    if let Some(name) = body
        .strip_suffix("FOUND")
        .filter(|name| name.is_empty() || name.ends_with(' '))
    {
        let name = name.trim();
        if name.is_empty() {
            return Err(ScanError::Protocol(format!(
                "clamd reported a match without a name: {text:?}"
            )));
        }
        return Ok(Verdict::Infected(name.to_string()));
    }
    if text == "COMMAND READ TIMED OUT" {
        // clamd's own ReadTimeout: the content did not arrive fast enough.
        return Err(ScanError::Timeout);
    }
    Err(ScanError::Protocol(format!(
        "unexpected answer from clamd: {text:?}"
    )))
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

fn io_error(context: &str, e: &io::Error) -> ScanError {
    if is_timeout(e) {
        ScanError::Timeout
    } else {
        ScanError::Unavailable(format!("{context}: {e}"))
    }
}

#[cfg(test)]
mod tests;
