//! A webhook receiver for tests: a loopback HTTP server that records every request and answers
//! with planned statuses (the last one repeating), optionally after a delay.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HashMap<String, String>,
    pub body: String,
    /// When the request was read.
    pub at: Instant,
}

/// A loopback HTTP receiver answering with the given statuses in turn (the last one repeats).
pub struct Receiver {
    pub url: String,
    got: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    pub fn start(statuses: &[u16]) -> Receiver {
        Self::start_slow(statuses, Duration::ZERO)
    }

    /// A receiver that takes `delay` before each answer.
    pub fn start_slow(statuses: &[u16], delay: Duration) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let got = Arc::new(Mutex::new(Vec::new()));
        let plan = Arc::new(Mutex::new((statuses.to_vec(), 0usize)));
        let (g, p) = (got.clone(), plan.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (g, p) = (g.clone(), p.clone());
                std::thread::spawn(move || serve(stream, g, p, delay));
            }
        });
        Receiver { url, got }
    }

    /// Waits until `n` requests arrived (or the deadline passes) and returns them.
    pub fn wait_for(&self, n: usize, secs: u64) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while self.got.lock().unwrap().len() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.got.lock().unwrap().clone()
    }
}

fn serve(
    stream: TcpStream,
    got: Arc<Mutex<Vec<Received>>>,
    plan: Arc<Mutex<(Vec<u16>, usize)>>,
    delay: Duration,
) {
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut headers = HashMap::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        std::thread::sleep(delay);
        got.lock().unwrap().push(Received {
            at: Instant::now(),
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
        let status = {
            let mut p = plan.lock().unwrap();
            let s = p.0[p.1.min(p.0.len() - 1)];
            p.1 += 1;
            s
        };
        // One write, without Nagle: a response split over small writes waits for a delayed ACK.
        let _ = out.write_all(
            format!(
                "HTTP/1.1 {status} X
Content-Length: 0

"
            )
            .as_bytes(),
        );
    }
}
