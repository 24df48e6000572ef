//! The WebDAV connector against a real WebDAV server (WsgiDAV, started by
//! `scripts/webdav-test-server.sh`): listing, metadata, ranges, streamed writes of a few MiB with
//! and without a length, folders, deletes, locks, Basic and Digest authentication, wrong
//! credentials and missing paths. Each test works in a folder of its own, so they run in
//! parallel against one server.
//!
//! When `COFFER_TEST_WEBDAV_URL` is set (the script's `run -- cargo test …`), that server is
//! used; otherwise the tests start one through the script themselves, kept until the test
//! process ends, so `cargo test --workspace` needs no set-up by hand.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use coffer_sources::{
    webdav, Connector, Credentials, Limits, RemotePath, SourceError, WebDavOptions,
};
use url::Url;

struct Server {
    url: Url,
    digest_url: Url,
    user: String,
    password: String,
    /// The directory served as the share's root.
    root: PathBuf,
}

#[path = "support/webdav_server.rs"]
mod webdav_server;

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/webdav-test-server.sh");
        let vars = webdav_server::vars(&script);
        let var = |name: &str| webdav_server::var(&vars, name);
        Server {
            url: Url::parse(&var("COFFER_TEST_WEBDAV_URL")).unwrap(),
            digest_url: Url::parse(&var("COFFER_TEST_WEBDAV_DIGEST_URL")).unwrap(),
            user: var("COFFER_TEST_WEBDAV_USER"),
            password: var("COFFER_TEST_WEBDAV_PASSWORD"),
            root: PathBuf::from(var("COFFER_TEST_WEBDAV_ROOT")),
        }
    })
}

fn options() -> WebDavOptions {
    // The test server listens on loopback.
    WebDavOptions {
        allow_private: true,
        limits: Limits::default(),
    }
}

fn credentials(s: &Server) -> Credentials {
    Credentials::Basic {
        login: s.user.clone(),
        password: s.password.clone(),
    }
}

fn p(s: &str) -> RemotePath {
    RemotePath::parse(s).unwrap()
}

/// A connector rooted at a fresh folder `name` of the share (through the Basic server, or the
/// Digest one), and that folder on disk.
fn fresh(name: &str, digest: bool) -> (Box<dyn Connector>, PathBuf) {
    let s = server();
    let base = if digest { &s.digest_url } else { &s.url };
    let top = webdav(base, credentials(s), &options()).unwrap();
    match top.delete(&p(name)) {
        Ok(()) | Err(SourceError::NotFound) => {}
        Err(e) => panic!("clearing {name}: {e:?}"),
    }
    top.make_dir(&RemotePath::root(), name).unwrap();
    let url = base.join(&format!("{name}/")).unwrap();
    let c = webdav(&url, credentials(s), &options()).unwrap();
    c.check().unwrap();
    (c, s.root.join(name))
}

fn read_all(c: &dyn Connector, path: &str, range: Option<(u64, Option<u64>)>) -> Vec<u8> {
    let mut d = c.read(&p(path), range).unwrap();
    let mut out = Vec::new();
    d.body.read_to_end(&mut out).unwrap();
    assert_eq!(d.length, Some(out.len() as u64), "{path} {range:?}");
    out
}

/// `len` bytes of a pattern, produced as they are read (never whole in memory).
struct Pattern {
    at: u64,
    len: u64,
}

fn byte_at(i: u64) -> u8 {
    (i.wrapping_mul(2_654_435_761) >> 13) as u8
}

impl Read for Pattern {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (buf.len() as u64).min(self.len - self.at) as usize;
        for (k, b) in buf[..n].iter_mut().enumerate() {
            *b = byte_at(self.at + k as u64);
        }
        self.at += n as u64;
        Ok(n)
    }
}

fn pattern(len: u64) -> Vec<u8> {
    (0..len).map(byte_at).collect()
}

#[test]
fn lists_and_stats_with_metadata() {
    let (c, disk) = fresh("t-list", false);
    let root = RemotePath::root();
    c.write(&root, "b.txt", &mut &b"hello world"[..], Some(11), false)
        .unwrap();
    c.make_dir(&root, "a-folder").unwrap();
    c.write(&root, "R&D ü #1.txt", &mut &b"x"[..], Some(1), false)
        .unwrap();
    c.write(
        &p("a-folder"),
        "inner.bin",
        &mut &[1u8, 2, 3][..],
        Some(3),
        false,
    )
    .unwrap();
    assert!(disk.join("R&D ü #1.txt").is_file());

    let list = c.list(&root).unwrap();
    let names: Vec<_> = list.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["R&D ü #1.txt", "a-folder", "b.txt"]);
    let b = &list[2];
    assert_eq!(b.path, p("b.txt"));
    assert!(!b.is_dir);
    assert_eq!(b.size, Some(11));
    assert!(b.modified.is_some(), "{b:?}");
    assert!(b.etag.is_some(), "{b:?}");
    // The media type is not asked for (servers may compute it per entry): it comes from the
    // name, as for a directory source.
    assert_eq!(b.mime.as_deref(), Some("text/plain"), "{b:?}");
    assert_eq!(list[1].mime, None, "a folder has none");
    assert!(list[1].is_dir && list[1].size.is_none());
    let inner = c.list(&p("a-folder")).unwrap();
    assert_eq!(inner.len(), 1);
    assert_eq!(
        (inner[0].path.as_str(), inner[0].size),
        ("a-folder/inner.bin", Some(3))
    );

    let s = c.stat(&p("R&D ü #1.txt")).unwrap();
    assert_eq!((s.name.as_str(), s.size), ("R&D ü #1.txt", Some(1)));
    assert!(c.stat(&p("a-folder")).unwrap().is_dir);
    assert!(c.stat(&root).unwrap().is_dir);
    assert_eq!(read_all(&*c, "R&D ü #1.txt", None), b"x");
}

#[test]
fn reads_ranges() {
    let (c, disk) = fresh("t-range", false);
    std::fs::write(disk.join("f.bin"), pattern(1000)).unwrap();
    let all = pattern(1000);
    assert_eq!(read_all(&*c, "f.bin", None), all);
    let d = c.read(&p("f.bin"), Some((10, Some(19)))).unwrap();
    assert_eq!((d.range, d.length), (Some((10, 19)), Some(10)));
    assert_eq!(read_all(&*c, "f.bin", Some((10, Some(19)))), &all[10..20]);
    assert_eq!(read_all(&*c, "f.bin", Some((990, None))), &all[990..]);
    assert_eq!(
        c.read(&p("f.bin"), Some((5000, None))).err(),
        Some(SourceError::RangeNotSatisfiable)
    );
    assert_eq!(
        c.read(&p("f.bin"), Some((20, Some(10)))).err(),
        Some(SourceError::RangeNotSatisfiable)
    );
}

#[test]
fn streams_writes_of_a_few_mib_with_and_without_a_length() {
    let (c, disk) = fresh("t-write", false);
    let root = RemotePath::root();
    let len = 5 << 20;
    let e = c
        .write(
            &root,
            "known.bin",
            &mut Pattern { at: 0, len },
            Some(len),
            false,
        )
        .unwrap();
    assert_eq!(e.size, Some(len));
    assert_eq!(std::fs::read(disk.join("known.bin")).unwrap(), pattern(len));
    // Chunked.
    let e = c
        .write(
            &root,
            "chunked.bin",
            &mut Pattern { at: 0, len },
            None,
            false,
        )
        .unwrap();
    assert_eq!(e.size, Some(len));
    assert_eq!(
        std::fs::read(disk.join("chunked.bin")).unwrap(),
        pattern(len)
    );
    assert_eq!(read_all(&*c, "chunked.bin", None), pattern(len));

    // Replaced only when asked; a folder never.
    assert_eq!(
        c.write(&root, "known.bin", &mut &b"new"[..], Some(3), false)
            .err(),
        Some(SourceError::Exists)
    );
    assert_eq!(
        std::fs::metadata(disk.join("known.bin")).unwrap().len(),
        len
    );
    let e = c
        .write(&root, "known.bin", &mut &b"new"[..], Some(3), true)
        .unwrap();
    assert_eq!(e.size, Some(3));
    assert_eq!(std::fs::read(disk.join("known.bin")).unwrap(), b"new");
    c.make_dir(&root, "d").unwrap();
    assert_eq!(
        c.write(&root, "d", &mut &b"x"[..], Some(1), true).err(),
        Some(SourceError::Exists)
    );
    assert_eq!(
        c.write(&p("missing"), "x", &mut &b"x"[..], Some(1), false)
            .err(),
        Some(SourceError::NotFound)
    );
    assert_eq!(
        c.write(&root, "..", &mut &b"x"[..], Some(1), false).err(),
        Some(SourceError::InvalidPath)
    );
}

#[test]
fn makes_and_deletes() {
    let (c, disk) = fresh("t-mkdir", false);
    let root = RemotePath::root();
    let e = c.make_dir(&root, "d").unwrap();
    assert!(e.is_dir && e.path == p("d"));
    assert!(disk.join("d").is_dir());
    assert_eq!(c.make_dir(&root, "d").err(), Some(SourceError::Exists));
    assert_eq!(
        c.make_dir(&p("nope"), "d").err(),
        Some(SourceError::NotFound)
    );
    c.write(&p("d"), "f.txt", &mut &b"x"[..], Some(1), false)
        .unwrap();
    c.write(&root, "g.txt", &mut &b"x"[..], Some(1), false)
        .unwrap();
    c.delete(&p("g.txt")).unwrap();
    assert!(!disk.join("g.txt").exists());
    c.delete(&p("d")).unwrap();
    assert!(!disk.join("d").exists());
    assert_eq!(c.stat(&p("d")).err(), Some(SourceError::NotFound));
    assert_eq!(c.delete(&p("d")).err(), Some(SourceError::NotFound));
    assert_eq!(c.delete(&root).err(), Some(SourceError::Forbidden));
    assert!(c.list(&root).unwrap().is_empty());
}

#[test]
fn locks_and_unlocks() {
    let (c, _disk) = fresh("t-lock", false);
    let root = RemotePath::root();
    c.write(&root, "doc.txt", &mut &b"v1"[..], Some(2), false)
        .unwrap();
    let token = c.lock(&p("doc.txt"), "ann@example.com").unwrap().unwrap();
    assert!(token.starts_with("opaquelocktoken:"), "{token}");
    // Locked: another lock and writes without the token are refused.
    assert_eq!(
        c.lock(&p("doc.txt"), "bob@example.com").err(),
        Some(SourceError::Locked)
    );
    assert_eq!(
        c.write(&root, "doc.txt", &mut &b"v2"[..], Some(2), true)
            .err(),
        Some(SourceError::Locked)
    );
    assert_eq!(c.delete(&p("doc.txt")).err(), Some(SourceError::Locked));
    assert_eq!(
        c.unlock(&p("doc.txt"), "opaquelocktoken:not-the-token")
            .err(),
        Some(SourceError::Locked)
    );
    // The lock's holder writes through it; a token that holds nothing does not.
    c.write_locked(&root, "doc.txt", &mut &b"v2"[..], Some(2), &token)
        .unwrap();
    assert_eq!(read_all(&*c, "doc.txt", None), b"v2");
    assert_eq!(
        c.write_locked(
            &root,
            "doc.txt",
            &mut &b"v3"[..],
            Some(2),
            "opaquelocktoken:x"
        )
        .err(),
        Some(SourceError::Locked)
    );
    assert_eq!(read_all(&*c, "doc.txt", None), b"v2");
    c.unlock(&p("doc.txt"), &token).unwrap();
    c.write(&root, "doc.txt", &mut &b"v4"[..], Some(2), true)
        .unwrap();
    assert_eq!(read_all(&*c, "doc.txt", None), b"v4");
    // Deleting through a lock.
    c.write(&root, "del.txt", &mut &b"x"[..], Some(1), false)
        .unwrap();
    let token = c.lock(&p("del.txt"), "ann").unwrap().unwrap();
    assert_eq!(c.delete(&p("del.txt")).err(), Some(SourceError::Locked));
    c.delete_locked(&p("del.txt"), &token).unwrap();
    assert_eq!(c.stat(&p("del.txt")).err(), Some(SourceError::NotFound));
    assert_eq!(
        c.lock(&p("missing.txt"), "ann").err(),
        Some(SourceError::NotFound)
    );
}

#[test]
fn digest_authentication_end_to_end() {
    let (c, disk) = fresh("t-digest", true);
    let root = RemotePath::root();
    let len = 1 << 20;
    c.write(&root, "d.bin", &mut Pattern { at: 0, len }, None, false)
        .unwrap();
    assert_eq!(std::fs::read(disk.join("d.bin")).unwrap(), pattern(len));
    assert_eq!(c.list(&root).unwrap()[0].name, "d.bin");
    assert_eq!(
        read_all(&*c, "d.bin", Some((100, Some(199)))),
        &pattern(len)[100..200]
    );
    c.make_dir(&root, "sub").unwrap();
    c.delete(&p("d.bin")).unwrap();
    assert_eq!(c.list(&root).unwrap()[0].name, "sub");
}

#[test]
fn wrong_or_missing_credentials_need_auth() {
    let s = server();
    for base in [&s.url, &s.digest_url] {
        let wrong = Credentials::Basic {
            login: s.user.clone(),
            password: format!("{}-wrong", s.password),
        };
        let c = webdav(base, wrong, &options()).unwrap();
        assert_eq!(c.check().err(), Some(SourceError::NeedsAuth), "{base}");
        assert_eq!(
            c.list(&RemotePath::root()).err(),
            Some(SourceError::NeedsAuth)
        );
        let c = webdav(base, Credentials::None, &options()).unwrap();
        assert_eq!(c.check().err(), Some(SourceError::NeedsAuth), "{base}");
        let nobody = Credentials::Basic {
            login: "nobody".into(),
            password: s.password.clone(),
        };
        let c = webdav(base, nobody, &options()).unwrap();
        assert_eq!(c.check().err(), Some(SourceError::NeedsAuth), "{base}");
    }
}

#[test]
fn missing_paths_are_not_found() {
    let (c, _disk) = fresh("t-missing", false);
    assert_eq!(c.stat(&p("nope.txt")).err(), Some(SourceError::NotFound));
    assert_eq!(c.list(&p("nope")).err(), Some(SourceError::NotFound));
    assert_eq!(
        c.read(&p("nope.txt"), None).err(),
        Some(SourceError::NotFound)
    );
    // A source whose root does not exist fails its check.
    let s = server();
    let gone = webdav(
        &s.url.join("no-such-folder/").unwrap(),
        credentials(s),
        &options(),
    )
    .unwrap();
    assert_eq!(gone.check().err(), Some(SourceError::NotFound));
}

#[test]
fn the_guard_refuses_the_loopback_server_unless_allowed() {
    let s = server();
    let guarded = webdav(&s.url, credentials(s), &WebDavOptions::default()).unwrap();
    match guarded.check() {
        Err(SourceError::AddressRefused(why)) => {
            assert!(why.contains("COFFER_SOURCES_ALLOW_PRIVATE"), "{why}");
            assert!(why.contains("127.0.0.1"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    webdav(&s.url, credentials(s), &options())
        .unwrap()
        .check()
        .unwrap();
}
