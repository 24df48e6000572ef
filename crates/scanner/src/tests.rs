//! Framing and reply parsing, against in-process fakes. The real verification runs against a
//! real clamd: `scripts/clamd-test-server.sh run -- cargo test -p coffer-scanner`.

use super::*;
use std::net::{TcpListener, TcpStream};
use std::thread::{self, JoinHandle};
use std::time::Instant;

/// A one-connection fake clamd on a loopback port; `serve` talks to the client.
fn fake<T: Send + 'static>(
    serve: impl FnOnce(TcpStream) -> T + Send + 'static,
) -> (Clamd, JoinHandle<T>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        serve(stream)
    });
    let clamd = Clamd::new(ClamdAddr::Tcp(addr.to_string()), Duration::from_secs(5));
    (clamd, handle)
}

/// Reads a NUL-terminated command.
fn read_command(stream: &mut impl Read) -> String {
    let mut command = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        stream.read_exact(&mut byte).unwrap();
        if byte[0] == 0 {
            return String::from_utf8(command).unwrap();
        }
        command.push(byte[0]);
    }
}

/// Reads INSTREAM chunks up to the zero-length one; the length of each and the whole content.
fn read_chunks(stream: &mut impl Read) -> (Vec<usize>, Vec<u8>) {
    let mut sizes = Vec::new();
    let mut content = Vec::new();
    loop {
        let mut len = [0u8; 4];
        stream.read_exact(&mut len).unwrap();
        let len = u32::from_be_bytes(len) as usize;
        if len == 0 {
            return (sizes, content);
        }
        let start = content.len();
        content.resize(start + len, 0);
        stream.read_exact(&mut content[start..]).unwrap();
        sizes.push(len);
    }
}

/// Content that arrives in small, uneven reads, as from a network body.
struct Trickle {
    data: Vec<u8>,
    pos: usize,
    step: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        // Vary the read size so that chunk boundaries never line up with reads.
        self.step = self.step % 7919 + 1013;
        Ok(n)
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

#[test]
fn instream_sends_full_chunks_then_a_zero_terminator() {
    let data = pattern(3 * CHUNK_SIZE + 3392);
    let (clamd, server) = fake(|mut s| {
        let command = read_command(&mut s);
        let chunks = read_chunks(&mut s);
        s.write_all(b"stream: OK\0").unwrap();
        (command, chunks)
    });
    let mut content = Trickle {
        data: data.clone(),
        pos: 0,
        step: 1,
    };
    assert_eq!(clamd.scan(&mut content), Ok(Verdict::Clean));
    let (command, (sizes, received)) = server.join().unwrap();
    assert_eq!(command, "zINSTREAM");
    assert_eq!(sizes, vec![CHUNK_SIZE, CHUNK_SIZE, CHUNK_SIZE, 3392]);
    assert!(received == data, "the content arrives unchanged");
}

#[test]
fn instream_frames_exact_multiples_and_empty_content() {
    for len in [0, 1, CHUNK_SIZE - 1, CHUNK_SIZE, 2 * CHUNK_SIZE] {
        let data = pattern(len);
        let (clamd, server) = fake(|mut s| {
            read_command(&mut s);
            let chunks = read_chunks(&mut s);
            s.write_all(b"stream: OK\0").unwrap();
            chunks
        });
        assert_eq!(clamd.scan(&mut &data[..]), Ok(Verdict::Clean));
        let (sizes, received) = server.join().unwrap();
        let expected: Vec<usize> = (0..len.div_ceil(CHUNK_SIZE))
            .map(|i| (len - i * CHUNK_SIZE).min(CHUNK_SIZE))
            .collect();
        assert_eq!(sizes, expected, "chunk sizes for {len} bytes");
        assert!(received == data);
    }
}

#[test]
fn instream_bytes_on_the_wire() {
    let mut wire = Vec::new();
    send_instream(&mut wire, &mut &b"abc"[..]).unwrap();
    assert_eq!(wire, b"zINSTREAM\0\0\0\0\x03abc\0\0\0\0");
}

#[test]
fn infected_reply_names_the_signature() {
    let (clamd, server) = fake(|mut s| {
        read_command(&mut s);
        read_chunks(&mut s);
        s.write_all(b"stream: Win.Test.EICAR_HDB-1 FOUND\0")
            .unwrap();
    });
    assert_eq!(
        clamd.scan(&mut &b"whatever"[..]),
        Ok(Verdict::Infected("Win.Test.EICAR_HDB-1".into()))
    );
    server.join().unwrap();
}

#[test]
fn reply_split_across_reads_and_without_nul_is_read_to_the_end() {
    let (clamd, server) = fake(|mut s| {
        read_command(&mut s);
        read_chunks(&mut s);
        s.write_all(b"stream: Some").unwrap();
        s.flush().unwrap();
        thread::sleep(Duration::from_millis(50));
        s.write_all(b".Name FOUND\n").unwrap();
        // Closing the connection ends a reply that has no NUL.
    });
    assert_eq!(
        clamd.scan(&mut &b"x"[..]),
        Ok(Verdict::Infected("Some.Name".into()))
    );
    server.join().unwrap();
}

#[test]
fn parses_replies() {
    let cases: Vec<(&[u8], Result<Verdict, ScanError>)> = vec![
        (b"stream: OK\0", Ok(Verdict::Clean)),
        (b"stream: OK", Ok(Verdict::Clean)),
        (b"stream: OK\n", Ok(Verdict::Clean)),
        (b"OK", Ok(Verdict::Clean)),
        (
            b"stream: Eicar-Signature FOUND\0",
            Ok(Verdict::Infected("Eicar-Signature".into())),
        ),
        (
            b"stream: Coffer.Test.EICAR.UNOFFICIAL FOUND",
            Ok(Verdict::Infected("Coffer.Test.EICAR.UNOFFICIAL".into())),
        ),
        (
            b"INSTREAM size limit exceeded. ERROR\0",
            Err(ScanError::TooLarge),
        ),
        (
            b"stream: INSTREAM size limit exceeded. ERROR",
            Err(ScanError::TooLarge),
        ),
        (
            b"stream: Can't allocate memory ERROR\0",
            Err(ScanError::Protocol(
                "clamd: stream: Can't allocate memory".into(),
            )),
        ),
        (b"COMMAND READ TIMED OUT\0", Err(ScanError::Timeout)),
        (
            b"UNKNOWN COMMAND\0",
            Err(ScanError::Protocol(
                "unexpected answer from clamd: \"UNKNOWN COMMAND\"".into(),
            )),
        ),
        (
            b"stream:  FOUND",
            Err(ScanError::Protocol(
                "clamd reported a match without a name: \"stream:  FOUND\"".into(),
            )),
        ),
    ];
    for (reply, expected) in cases {
        assert_eq!(
            parse_scan_reply(reply),
            expected,
            "{}",
            String::from_utf8_lossy(reply)
        );
    }
    assert!(matches!(
        parse_scan_reply(b""),
        Err(ScanError::Unavailable(_))
    ));
    assert!(matches!(
        parse_scan_reply(b"\0"),
        Err(ScanError::Unavailable(_))
    ));
}

#[test]
fn size_limit_refusal_mid_stream_is_too_large() {
    // Like clamd over its StreamMaxLength: answer after the first chunks, then close without
    // reading the rest, while the client is still writing.
    let (clamd, server) = fake(|mut s| {
        read_command(&mut s);
        let mut first = vec![0u8; 4 + CHUNK_SIZE];
        s.read_exact(&mut first).unwrap();
        s.write_all(b"INSTREAM size limit exceeded. ERROR\0")
            .unwrap();
    });
    let data = pattern(32 * 1024 * 1024);
    assert_eq!(clamd.scan(&mut &data[..]), Err(ScanError::TooLarge));
    server.join().unwrap();
}

#[test]
fn closed_without_reply_is_unavailable() {
    let (clamd, server) = fake(|mut s| {
        read_command(&mut s);
        read_chunks(&mut s);
    });
    let got = clamd.scan(&mut &b"x"[..]);
    assert!(matches!(got, Err(ScanError::Unavailable(_))), "{got:?}");
    server.join().unwrap();
}

#[test]
fn silent_server_times_out() {
    let (clamd, server) = fake(|mut s| {
        read_command(&mut s);
        read_chunks(&mut s);
        // Never answer; hold the connection until the client gives up.
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
    });
    let clamd = clamd.with_timeout(Duration::from_millis(200));
    let start = Instant::now();
    assert_eq!(clamd.scan(&mut &b"x"[..]), Err(ScanError::Timeout));
    assert!(start.elapsed() < Duration::from_secs(5));
    server.join().unwrap();
}

#[test]
fn overlong_reply_is_a_protocol_error() {
    let (clamd, server) = fake(|mut s| {
        read_command(&mut s);
        read_chunks(&mut s);
        let _ = s.write_all(&vec![b'A'; 3 * MAX_REPLY]);
    });
    let got = clamd.scan(&mut &b"x"[..]);
    assert!(matches!(got, Err(ScanError::Protocol(_))), "{got:?}");
    server.join().unwrap();
}

#[test]
fn unreadable_content_is_unavailable() {
    struct Broken;
    impl Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::other("disk on fire"))
        }
    }
    let (clamd, server) = fake(|mut s| {
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
    });
    match clamd.scan(&mut Broken) {
        Err(ScanError::Unavailable(why)) => assert!(why.contains("disk on fire"), "{why}"),
        other => panic!("{other:?}"),
    }
    server.join().unwrap();
}

#[test]
fn ping_expects_pong() {
    let (clamd, server) = fake(|mut s| {
        let command = read_command(&mut s);
        s.write_all(b"PONG\0").unwrap();
        command
    });
    assert_eq!(clamd.ping(), Ok(()));
    assert_eq!(server.join().unwrap(), "zPING");

    let (clamd, server) = fake(|mut s| {
        read_command(&mut s);
        s.write_all(b"UNKNOWN COMMAND\0").unwrap();
    });
    assert!(matches!(clamd.ping(), Err(ScanError::Protocol(_))));
    server.join().unwrap();
}

#[test]
fn refused_connection_is_unavailable() {
    // A port that was just free: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let clamd = Clamd::parse(&format!("tcp://127.0.0.1:{port}")).unwrap();
    let start = Instant::now();
    assert!(matches!(clamd.ping(), Err(ScanError::Unavailable(_))));
    assert!(matches!(
        clamd.scan(&mut &b"x"[..]),
        Err(ScanError::Unavailable(_))
    ));
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[cfg(unix)]
#[test]
fn unix_socket_framing() {
    use std::os::unix::net::UnixListener;
    let dir = std::env::temp_dir().join(format!("coffer-scanner-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("clamd.sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let server = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        read_command(&mut s);
        let chunks = read_chunks(&mut s);
        s.write_all(b"stream: OK\0").unwrap();
        chunks
    });
    let clamd = Clamd::parse(&format!("unix://{}", path.display())).unwrap();
    let data = pattern(CHUNK_SIZE + 10);
    assert_eq!(clamd.scan(&mut &data[..]), Ok(Verdict::Clean));
    let (sizes, received) = server.join().unwrap();
    assert_eq!(sizes, vec![CHUNK_SIZE, 10]);
    assert!(received == data);
    let _ = std::fs::remove_dir_all(&dir);

    let missing = Clamd::parse(&format!("unix://{}", path.display())).unwrap();
    assert!(matches!(missing.ping(), Err(ScanError::Unavailable(_))));
}

#[test]
fn parses_addresses() {
    let ok = [
        (
            "tcp://127.0.0.1:3310",
            ClamdAddr::Tcp("127.0.0.1:3310".into()),
        ),
        (
            "TCP://clamav.internal:3310/",
            ClamdAddr::Tcp("clamav.internal:3310".into()),
        ),
        ("tcp://[::1]:3310", ClamdAddr::Tcp("[::1]:3310".into())),
        (
            "unix:///run/clamav/clamd.ctl",
            ClamdAddr::Unix("/run/clamav/clamd.ctl".into()),
        ),
    ];
    for (spec, addr) in ok {
        assert_eq!(ClamdAddr::parse(spec), Ok(addr.clone()), "{spec}");
        let clamd = Clamd::parse(spec).unwrap();
        assert_eq!(clamd.addr(), &addr);
        assert_eq!(clamd.timeout(), DEFAULT_TIMEOUT);
    }
    assert_eq!(
        Clamd::parse("tcp://127.0.0.1:3310").unwrap().describe(),
        "clamd tcp://127.0.0.1:3310"
    );
    assert_eq!(
        Clamd::parse("unix:///run/clamav/clamd.ctl")
            .unwrap()
            .describe(),
        "clamd unix:///run/clamav/clamd.ctl"
    );
    for bad in [
        "",
        "127.0.0.1:3310",
        "http://127.0.0.1:3310",
        "tcp://127.0.0.1",
        "tcp://:3310",
        "tcp://127.0.0.1:0",
        "tcp://127.0.0.1:65536",
        "tcp://127.0.0.1:clamd",
        "tcp://::1:3310",
        "tcp://user@host:3310",
        "tcp://host:3310/path",
        "unix://relative/clamd.ctl",
        "unix:///",
    ] {
        assert!(
            matches!(ClamdAddr::parse(bad), Err(ScanError::Unavailable(_))),
            "{bad:?} should not parse"
        );
    }
}

#[test]
fn errors_display() {
    assert_eq!(
        ScanError::Unavailable("connection refused".into()).to_string(),
        "virus scanner unavailable: connection refused"
    );
    assert_eq!(
        ScanError::TooLarge.to_string(),
        "content exceeds the virus scanner's size limit"
    );
    assert_eq!(ScanError::Timeout.to_string(), "virus scanner timed out");
}

#[test]
fn scanners_are_shareable_behind_pointers() {
    let shared: std::sync::Arc<dyn Scanner> =
        std::sync::Arc::new(Clamd::parse("tcp://127.0.0.1:3310").unwrap());
    let boxed: Box<dyn Scanner> = Box::new(shared.clone());
    assert_eq!(boxed.describe(), "clamd tcp://127.0.0.1:3310");
}
