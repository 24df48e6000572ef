//! The WebDAV connector against servers that misbehave, each a tiny HTTP server on a loopback
//! port written here: garbage and hostile XML, listings past the caps, hrefs outside the root,
//! endless redirects, bodies longer than announced, a server that never answers, challenges
//! that repeat, credentials and redirects across origins, and the address guard.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coffer_sources::{
    webdav, Connector, Credentials, Limits, RemotePath, SourceError, WebDavOptions,
};
use url::Url;

/// One request as the tiny server read it.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the tiny server does with a request.
enum Reply {
    /// These bytes, then the connection is closed.
    Bytes(Vec<u8>),
    /// Nothing, for this long (the connection stays open).
    Silence(Duration),
}

struct Tiny {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Tiny {
    fn url(&self, path: &str) -> Url {
        Url::parse(&format!("http://{}{path}", self.addr)).unwrap()
    }

    fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

fn tiny(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Tiny {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    let handler = Arc::new(handler);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let (seen, handler) = (seen.clone(), handler.clone());
            std::thread::spawn(move || serve(stream, &*handler, &seen));
        }
    });
    Tiny { addr, requests }
}

fn serve(stream: TcpStream, handler: &dyn Fn(&Request) -> Reply, seen: &Mutex<Vec<Request>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        if let Some((n, v)) = h.trim_end().split_once(':') {
            headers.push((n.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let request = Request {
        method,
        path,
        headers,
    };
    if let Some(len) = request
        .header("Content-Length")
        .and_then(|l| l.parse::<u64>().ok())
    {
        let _ = std::io::copy(&mut (&mut reader).take(len), &mut std::io::sink());
    }
    seen.lock().unwrap().push(request.clone());
    let mut stream = stream;
    match handler(&request) {
        Reply::Bytes(b) => {
            let _ = stream.write_all(&b);
            let _ = stream.flush();
        }
        Reply::Silence(d) => std::thread::sleep(d),
    }
}

/// A response with Content-Length.
fn http(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut out = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    Reply::Bytes(out)
}

/// A response without Content-Length: the body ends when the connection closes.
fn http_until_close(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut out = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    Reply::Bytes(out)
}

/// A multistatus with one response per (href, is_dir, size).
fn multistatus(entries: &[(&str, bool, u64)]) -> Vec<u8> {
    let mut s = String::from(r#"<?xml version="1.0"?><D:multistatus xmlns:D="DAV:">"#);
    for (href, dir, size) in entries {
        let rt = if *dir { "<D:collection/>" } else { "" };
        s.push_str(&format!(
            "<D:response><D:href>{href}</D:href><D:propstat><D:prop><D:resourcetype>{rt}\
             </D:resourcetype><D:getcontentlength>{size}</D:getcontentlength></D:prop>\
             <D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>"
        ));
    }
    s.push_str("</D:multistatus>");
    s.into_bytes()
}

fn options() -> WebDavOptions {
    WebDavOptions {
        allow_private: true,
        limits: Limits {
            connect_timeout: Duration::from_secs(5),
            io_timeout: Duration::from_secs(5),
            ..Limits::default()
        },
    }
}

fn connect(t: &Tiny, options: &WebDavOptions) -> Box<dyn Connector> {
    webdav(&t.url("/dav/"), Credentials::None, options).unwrap()
}

fn p(s: &str) -> RemotePath {
    RemotePath::parse(s).unwrap()
}

fn assert_remote<T: std::fmt::Debug>(r: Result<T, SourceError>) {
    assert!(matches!(r, Err(SourceError::Remote(_))), "{r:?}");
}

#[test]
fn garbage_answers_are_remote_errors() {
    let bodies: [&[u8]; 5] = [
        b"<<< not xml",
        b"<html><body>It works!</body></html>",
        b"<D:multistatus xmlns:D=\"DAV:\"><D:response><D:href>/dav/</D:href>",
        b"\xff\xfe\x00<",
        b"",
    ];
    for body in bodies {
        let body = body.to_vec();
        let t = tiny(move |_| http("207 Multi-Status", &[], &body));
        assert_remote(connect(&t, &options()).list(&RemotePath::root()));
    }
    // 200 instead of 207: not a WebDAV answer.
    let t = tiny(|_| http("200 OK", &[], &multistatus(&[("/dav/", true, 0)])));
    assert_remote(connect(&t, &options()).check());
}

#[test]
fn an_xml_bomb_is_refused_at_once() {
    let mut bomb =
        String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n<!ENTITY lol \"lol\">\n");
    for i in 1..10 {
        let prev = if i == 1 {
            "lol".to_owned()
        } else {
            format!("lol{}", i - 1)
        };
        bomb.push_str(&format!(
            "<!ENTITY lol{i} \"{}\">\n",
            format!("&{prev};").repeat(10)
        ));
    }
    bomb.push_str(
        "]>\n<D:multistatus xmlns:D=\"DAV:\"><D:response><D:href>/dav/&lol9;</D:href>\
         </D:response></D:multistatus>",
    );
    let t = tiny(move |_| http("207 Multi-Status", &[], bomb.as_bytes()));
    let started = Instant::now();
    assert_remote(connect(&t, &options()).list(&RemotePath::root()));
    assert!(started.elapsed() < Duration::from_secs(5));
    // An entity that was never declared is refused too.
    let t = tiny(|_| {
        http(
            "207 Multi-Status",
            &[],
            b"<D:multistatus xmlns:D=\"DAV:\"><D:response><D:href>/dav/&xxe;</D:href></D:response></D:multistatus>",
        )
    });
    assert_remote(connect(&t, &options()).list(&RemotePath::root()));
}

#[test]
fn listings_past_the_caps_are_too_large() {
    let bytes_cap = WebDavOptions {
        limits: Limits {
            max_listing_bytes: 64 << 10,
            ..options().limits
        },
        ..options()
    };
    let entries_cap = WebDavOptions {
        limits: Limits {
            max_entries: 10,
            ..options().limits
        },
        ..options()
    };
    let many: Vec<String> = (0..3000).map(|i| format!("/dav/file-{i:05}.txt")).collect();
    let mut entries: Vec<(&str, bool, u64)> = vec![("/dav/", true, 0)];
    entries.extend(many.iter().map(|h| (h.as_str(), false, 1)));
    let big = multistatus(&entries);
    assert!(big.len() > 256 << 10);
    // Announced.
    let body = big.clone();
    let t = tiny(move |_| http("207 Multi-Status", &[], &body));
    assert_eq!(
        connect(&t, &bytes_cap).list(&RemotePath::root()).err(),
        Some(SourceError::TooLarge)
    );
    // Not announced: cut at the cap while streaming.
    let body = big.clone();
    let t = tiny(move |_| http_until_close("207 Multi-Status", &[], &body));
    assert_eq!(
        connect(&t, &bytes_cap).list(&RemotePath::root()).err(),
        Some(SourceError::TooLarge)
    );
    // The same listing is read when the caps allow it.
    assert_eq!(
        connect(&t, &options())
            .list(&RemotePath::root())
            .unwrap()
            .len(),
        3000
    );
    // Small in bytes, too many entries.
    let few = multistatus(&entries[..40]);
    assert!(few.len() < 64 << 10);
    let t = tiny(move |_| http("207 Multi-Status", &[], &few));
    assert_eq!(
        connect(&t, &entries_cap).list(&RemotePath::root()).err(),
        Some(SourceError::TooLarge)
    );
    let ok = multistatus(&entries[..11]);
    let t = tiny(move |_| http("207 Multi-Status", &[], &ok));
    assert_eq!(
        connect(&t, &entries_cap)
            .list(&RemotePath::root())
            .unwrap()
            .len(),
        10
    );
}

#[test]
fn hrefs_outside_the_root_are_refused() {
    for href in [
        "/elsewhere/x.txt",
        "/dav/../etc/passwd",
        "http://other.example.com/dav/x.txt",
        "/dav/a%2fb",
    ] {
        let body = multistatus(&[("/dav/", true, 0), (href, false, 1)]);
        let t = tiny(move |_| http("207 Multi-Status", &[], &body));
        assert_remote(connect(&t, &options()).list(&RemotePath::root()));
    }
}

/// A server describing `/dav/f.bin` (of `size` bytes) and answering GET with `get`.
fn file_server(size: u64, get: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Tiny {
    tiny(move |r| match r.method.as_str() {
        "PROPFIND" => http(
            "207 Multi-Status",
            &[],
            &multistatus(&[("/dav/f.bin", false, size)]),
        ),
        "GET" => get(r),
        _ => http("405 Method Not Allowed", &[], b""),
    })
}

#[test]
fn an_endless_redirect_ends() {
    let t = file_server(3, |_| http("302 Found", &[("Location", "/dav/f.bin")], b""));
    assert_remote(connect(&t, &options()).read(&p("f.bin"), None));
    let gets: Vec<_> = t
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET")
        .collect();
    assert_eq!(gets.len(), 4, "the first GET and three redirects");
    assert!(gets.iter().all(|r| r.path == "/dav/f.bin"), "{gets:?}");
}

#[test]
fn a_redirect_is_followed_for_get_only_and_without_credentials_elsewhere() {
    let other = tiny(|_| http("200 OK", &[], b"abc"));
    let target = other.url("/blob/f.bin").to_string();
    let t = tiny(move |r| {
        let authorized = r
            .header("Authorization")
            .is_some_and(|a| a.starts_with("Basic "));
        match r.method.as_str() {
            _ if !authorized => http(
                "401 Unauthorized",
                &[("WWW-Authenticate", "Basic realm=\"dav\"")],
                b"",
            ),
            "PROPFIND" => http(
                "207 Multi-Status",
                &[],
                &multistatus(&[("/dav/f.bin", false, 3)]),
            ),
            "GET" => http("302 Found", &[("Location", target.as_str())], b""),
            _ => http("405 Method Not Allowed", &[], b""),
        }
    });
    let creds = Credentials::Basic {
        login: "ann".into(),
        password: "pw".into(),
    };
    let c = webdav(&t.url("/dav/"), creds, &options()).unwrap();
    let mut d = c.read(&p("f.bin"), None).unwrap();
    let mut body = Vec::new();
    d.body.read_to_end(&mut body).unwrap();
    assert_eq!(body, b"abc");
    let seen = other.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("Authorization"), None, "{seen:?}");

    // PROPFIND is never redirected.
    let elsewhere = other.url("/dav/").to_string();
    let t = tiny(move |_| {
        http(
            "301 Moved Permanently",
            &[("Location", elsewhere.as_str())],
            b"",
        )
    });
    assert_remote(connect(&t, &options()).check());
    assert_eq!(t.requests().len(), 1);
    assert_eq!(other.requests().len(), 1);
}

#[test]
fn a_body_longer_than_announced_is_too_large() {
    // No Content-Length: the listing's size is the bound.
    let t = file_server(10, |_| http_until_close("200 OK", &[], &[b'x'; 100]));
    let mut d = connect(&t, &options()).read(&p("f.bin"), None).unwrap();
    assert_eq!(d.length, Some(10));
    let mut body = Vec::new();
    let e = d.body.read_to_end(&mut body).unwrap_err();
    assert_eq!(SourceError::from_io(&e), SourceError::TooLarge);
    // With Content-Length, nothing past it is read.
    let t = file_server(10, |_| {
        let mut raw =
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 10\r\n\r\n".to_vec();
        raw.extend_from_slice(&[b'y'; 100]);
        Reply::Bytes(raw)
    });
    let mut d = connect(&t, &options()).read(&p("f.bin"), None).unwrap();
    let mut body = Vec::new();
    d.body.read_to_end(&mut body).unwrap();
    assert_eq!(body, [b'y'; 10]);
}

#[test]
fn a_server_that_never_answers_times_out() {
    let t = tiny(|_| Reply::Silence(Duration::from_secs(30)));
    let quick = WebDavOptions {
        limits: Limits {
            io_timeout: Duration::from_secs(1),
            ..options().limits
        },
        ..options()
    };
    let started = Instant::now();
    assert_eq!(
        connect(&t, &quick).check().err(),
        Some(SourceError::Timeout)
    );
    // Generous: the machine may be busy.
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn the_guard_refuses_before_connecting() {
    let t = tiny(|_| http("207 Multi-Status", &[], &multistatus(&[("/dav/", true, 0)])));
    let guarded = webdav(
        &t.url("/dav/"),
        Credentials::None,
        &WebDavOptions::default(),
    )
    .unwrap();
    match guarded.check() {
        Err(SourceError::AddressRefused(why)) => {
            assert!(why.contains("COFFER_SOURCES_ALLOW_PRIVATE"), "{why}");
            assert!(why.contains("Loopback"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    let by_name = Url::parse(&format!("http://localhost:{}/dav/", t.addr.port())).unwrap();
    let guarded = webdav(&by_name, Credentials::None, &WebDavOptions::default()).unwrap();
    assert!(matches!(
        guarded.check(),
        Err(SourceError::AddressRefused(_))
    ));
    assert!(t.requests().is_empty());
    connect(&t, &options()).check().unwrap();
    assert_eq!(t.requests().len(), 1);
}

#[test]
fn refused_credentials_are_tried_once() {
    let t = tiny(|_| {
        http(
            "401 Unauthorized",
            &[("WWW-Authenticate", "Basic realm=\"dav\"")],
            b"",
        )
    });
    let creds = Credentials::Basic {
        login: "ann".into(),
        password: "wrong".into(),
    };
    let c = webdav(&t.url("/dav/"), creds, &options()).unwrap();
    assert_eq!(c.check().err(), Some(SourceError::NeedsAuth));
    let seen = t.requests();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].header("Authorization"), None);
    assert_eq!(seen[1].header("Authorization"), Some("Basic YW5uOndyb25n"));
}

#[test]
fn digest_sha256_is_preferred_to_md5_and_basic() {
    let t = tiny(|r| match r.header("Authorization") {
        Some(a) if a.starts_with("Digest ") && a.contains("algorithm=SHA-256") => {
            http("207 Multi-Status", &[], &multistatus(&[("/dav/", true, 0)]))
        }
        _ => http(
            "401 Unauthorized",
            &[
                ("WWW-Authenticate", "Basic realm=\"dav\""),
                (
                    "WWW-Authenticate",
                    "Digest realm=\"dav\", nonce=\"n1\", algorithm=MD5, qop=\"auth\"",
                ),
                (
                    "WWW-Authenticate",
                    "Digest realm=\"dav\", nonce=\"n1\", algorithm=SHA-256, qop=\"auth\"",
                ),
            ],
            b"",
        ),
    });
    let creds = Credentials::Basic {
        login: "ann".into(),
        password: "pw".into(),
    };
    let c = webdav(&t.url("/dav/"), creds, &options()).unwrap();
    c.check().unwrap();
    let seen = t.requests();
    let auth = seen[1].header("Authorization").unwrap();
    assert!(auth.contains("uri=\"/dav/\""), "{auth}");
    assert!(auth.contains("nc=00000001"), "{auth}");
    // The next request answers directly, with the next nonce count.
    c.check().unwrap();
    let seen = t.requests();
    assert_eq!(seen.len(), 3);
    assert!(seen[2]
        .header("Authorization")
        .unwrap()
        .contains("nc=00000002"));
}

#[test]
fn locks_are_unsupported_without_class_2() {
    let t = tiny(|r| match r.method.as_str() {
        "OPTIONS" => http("200 OK", &[("DAV", "1")], b""),
        _ => http(
            "207 Multi-Status",
            &[],
            &multistatus(&[("/dav/f.bin", false, 1)]),
        ),
    });
    let c = connect(&t, &options());
    assert_eq!(
        c.lock(&p("f.bin"), "ann").err(),
        Some(SourceError::Unsupported)
    );
    assert!(t.requests().iter().all(|r| r.method != "LOCK"));
}
