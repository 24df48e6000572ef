//! `cofferd` processes for the cluster suites: operator commands, and `serve` nodes on spare
//! loopback ports that are killed when dropped.

use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_cofferd");

pub struct Node {
    pub child: Child,
    pub base: String,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs an operator command (global flags first) and answers its JSON output.
pub fn cli(dir: &std::path::Path, url: &str, global: &[&str], args: &[&str]) -> Value {
    let out = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .arg("--database-url")
        .arg(url)
        .args(global)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Starts `cofferd serve` with the global flags and environment given, and waits until it
/// answers `/health`.
pub fn start(dir: &std::path::Path, url: &str, global: &[&str], env: &[(&str, &str)]) -> Node {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let child = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .arg("--database-url")
        .arg(url)
        .args(global)
        .arg("serve")
        .env("COFFER_LISTEN", format!("127.0.0.1:{port}"))
        // Every node is reached through the same public address in a real deployment; here the
        // tokens are only used on the node that issued them, so each keeps its own.
        .env("COFFER_BASE_URL", &base)
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(2))
        .build();
    let deadline = Instant::now() + Duration::from_secs(60);
    while agent.get(&format!("{base}/health")).call().is_err() {
        assert!(Instant::now() < deadline, "cofferd did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    Node { child, base }
}

/// An access token from the password grant.
pub fn token(base: &str, client: &Value, email: &str, password: &str) -> String {
    let v: Value = ureq::post(&format!("{base}/oauth/token"))
        .send_form(&[
            ("grant_type", "password"),
            ("username", email),
            ("password", password),
            ("client_id", client["client_id"].as_str().unwrap()),
            ("client_secret", client["client_secret"].as_str().unwrap()),
        ])
        .unwrap()
        .into_json()
        .unwrap();
    v["access_token"].as_str().unwrap().to_string()
}
