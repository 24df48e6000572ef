//! Scanning against a real clamd. `scripts/clamd-test-server.sh run -- cargo test -p
//! coffer-scanner` starts one whose database holds the EICAR test file and sets:
//!
//! - `COFFER_TEST_CLAMD`: `tcp://127.0.0.1:PORT`
//! - `COFFER_TEST_CLAMD_SOCKET`: `unix:///…/clamd.sock` (the same clamd)
//! - `COFFER_TEST_CLAMD_STREAM_MAX`: its `StreamMaxLength` in bytes
//!
//! Without `COFFER_TEST_CLAMD` each test prints a note and passes.

use coffer_scanner::{Clamd, ClamdAddr, ScanError, Scanner, Verdict};
use std::io::{self, Read};
use std::time::{Duration, Instant};

/// The EICAR anti-virus test file (68 bytes).
const EICAR: &[u8] = br"X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn clamd(test: &str) -> Option<Clamd> {
    match env("COFFER_TEST_CLAMD") {
        Some(spec) => Some(Clamd::parse(&spec).expect("COFFER_TEST_CLAMD parses")),
        None => {
            eprintln!(
                "note: {test} skipped: COFFER_TEST_CLAMD is unset; run \
                 scripts/clamd-test-server.sh run -- cargo test -p coffer-scanner"
            );
            None
        }
    }
}

fn assert_eicar(verdict: Result<Verdict, ScanError>) {
    match verdict {
        // The script's database calls it Coffer.Test.EICAR(.UNOFFICIAL); ClamAV's own
        // databases have other names, all with EICAR in them.
        Ok(Verdict::Infected(name)) => {
            assert!(
                name.to_ascii_uppercase().contains("EICAR"),
                "unexpected signature name {name:?}"
            );
            eprintln!("clamd found {name}");
        }
        other => panic!("expected EICAR to be found, got {other:?}"),
    }
}

/// `len` bytes of text with `needle` at `at`, generated as it is read: never whole in memory.
struct Generated {
    len: usize,
    pos: usize,
    needle: &'static [u8],
    at: usize,
}

impl Read for Generated {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // Uneven read sizes, so that no chunk boundary lines up with a read.
        let n = buf.len().min(self.len - self.pos).min(10_007);
        for (i, byte) in buf[..n].iter_mut().enumerate() {
            let p = self.pos + i;
            *byte = if p >= self.at && p < self.at + self.needle.len() {
                self.needle[p - self.at]
            } else {
                b"Coffer scans this filler text.\n"[p % 31]
            };
        }
        self.pos += n;
        Ok(n)
    }
}

#[test]
fn ping_answers() {
    let Some(clamd) = clamd("ping_answers") else {
        return;
    };
    clamd.ping().unwrap();
}

#[test]
fn clean_content_is_clean() {
    let Some(clamd) = clamd("clean_content_is_clean") else {
        return;
    };
    assert_eq!(
        clamd.scan(&mut &b"Quarterly figures, nothing to see here.\n"[..]),
        Ok(Verdict::Clean)
    );
    assert_eq!(clamd.scan(&mut io::empty()), Ok(Verdict::Clean));
    // EICAR's string cut short is not EICAR.
    assert_eq!(
        clamd.scan(&mut &EICAR[..EICAR.len() - 1]),
        Ok(Verdict::Clean)
    );
}

#[test]
fn eicar_is_infected() {
    let Some(clamd) = clamd("eicar_is_infected") else {
        return;
    };
    assert_eicar(clamd.scan(&mut &EICAR[..]));
}

#[test]
fn eicar_inside_a_large_stream_is_found_across_chunks() {
    let Some(clamd) = clamd("eicar_inside_a_large_stream_is_found_across_chunks") else {
        return;
    };
    let len = 5 * 1024 * 1024;
    // Straddles a 64 KiB chunk boundary in the middle of the stream.
    let at = 40 * coffer_scanner::CHUNK_SIZE - 30;
    let mut infected = Generated {
        len,
        pos: 0,
        needle: EICAR,
        at,
    };
    assert_eicar(clamd.scan(&mut infected));
    assert_eq!(infected.pos, len, "the whole stream was sent");

    let mut clean = Generated {
        len,
        pos: 0,
        needle: b"",
        at: 0,
    };
    assert_eq!(clamd.scan(&mut clean), Ok(Verdict::Clean));
}

#[test]
fn over_the_unix_socket() {
    let Some(_) = clamd("over_the_unix_socket") else {
        return;
    };
    let Some(spec) = env("COFFER_TEST_CLAMD_SOCKET") else {
        eprintln!("note: over_the_unix_socket skipped: COFFER_TEST_CLAMD_SOCKET is unset");
        return;
    };
    let clamd = Clamd::parse(&spec).unwrap();
    assert!(matches!(clamd.addr(), ClamdAddr::Unix(_)));
    clamd.ping().unwrap();
    assert_eq!(clamd.scan(&mut &b"hello"[..]), Ok(Verdict::Clean));
    assert_eicar(clamd.scan(&mut &EICAR[..]));
    let mut infected = Generated {
        len: 3 * 1024 * 1024,
        pos: 0,
        needle: EICAR,
        at: 2 * 1024 * 1024 + 7,
    };
    assert_eicar(clamd.scan(&mut infected));
}

#[test]
fn over_the_size_limit_is_too_large() {
    let Some(clamd) = clamd("over_the_size_limit_is_too_large") else {
        return;
    };
    let Some(max) = env("COFFER_TEST_CLAMD_STREAM_MAX") else {
        eprintln!(
            "note: over_the_size_limit_is_too_large skipped: COFFER_TEST_CLAMD_STREAM_MAX is unset"
        );
        return;
    };
    let max: usize = max
        .parse()
        .expect("COFFER_TEST_CLAMD_STREAM_MAX is a number of bytes");
    let mut content = Generated {
        len: max + 1024 * 1024,
        pos: 0,
        needle: b"",
        at: 0,
    };
    assert_eq!(clamd.scan(&mut content), Err(ScanError::TooLarge));
    // clamd goes on serving.
    clamd.ping().unwrap();
}

#[test]
fn many_scans_at_once() {
    let Some(clamd) = clamd("many_scans_at_once") else {
        return;
    };
    let clamd: std::sync::Arc<dyn Scanner> = std::sync::Arc::new(clamd);
    let workers: Vec<_> = (0..6)
        .map(|i| {
            let clamd = clamd.clone();
            std::thread::spawn(move || {
                if i % 2 == 0 {
                    assert_eicar(clamd.scan(&mut &EICAR[..]));
                } else {
                    assert_eq!(clamd.scan(&mut &b"clean"[..]), Ok(Verdict::Clean));
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
}

#[test]
fn unreachable_clamd_is_unavailable_quickly() {
    // Runs with or without a clamd: nothing listens at these addresses.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let timeout = Duration::from_millis(500);
    let unreachable = [
        format!("tcp://127.0.0.1:{port}"),
        // TEST-NET-1 (RFC 5737): routed nowhere, so a connect times out or fails at once.
        "tcp://192.0.2.1:3310".to_string(),
        format!(
            "unix://{}/coffer-no-clamd-{}.sock",
            std::env::temp_dir().display(),
            std::process::id()
        ),
    ];
    for spec in unreachable {
        let clamd = Clamd::parse(&spec).unwrap().with_timeout(timeout);
        let start = Instant::now();
        let got = clamd.scan(&mut &EICAR[..]);
        assert!(
            matches!(got, Err(ScanError::Unavailable(_))),
            "{spec}: {got:?}"
        );
        assert!(matches!(clamd.ping(), Err(ScanError::Unavailable(_))));
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{spec} took {:?}",
            start.elapsed()
        );
    }
}
