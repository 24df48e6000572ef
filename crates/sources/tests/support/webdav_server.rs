//! The WebDAV server of the tests, shared by the connector's tests (`crates/sources/tests`) and
//! the sources interface's end-to-end tests (`tests/tests/integration/sources.rs`, which include
//! this file by path): when `COFFER_TEST_WEBDAV_URL` is set (the script's `run -- cargo test …`)
//! that server is used; otherwise one is started through `scripts/webdav-test-server.sh` and
//! kept until the test process ends, so `cargo test --workspace` needs no set-up by hand.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

/// The script's process when the tests started it: its stdin stays open for as long as the
/// test process lives, and its command ends (so the script stops the server) when it closes.
static STARTED: Mutex<Option<Child>> = Mutex::new(None);

/// The server's `COFFER_TEST_WEBDAV_*` variables; `script` is the path of
/// `scripts/webdav-test-server.sh` from the calling crate.
pub fn vars(script: &Path) -> Vec<(String, String)> {
    if std::env::var_os("COFFER_TEST_WEBDAV_URL").is_some() {
        return std::env::vars().collect();
    }
    let mut child = Command::new("bash")
        .arg(script)
        .args(["run", "--", "bash", "-c"])
        .arg("env | grep '^COFFER_TEST_WEBDAV_'; echo END; exec cat >/dev/null")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    let stdout = child.stdout.take().unwrap();
    let mut vars = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if line == "END" {
            break;
        }
        if let Some((name, value)) = line.split_once('=') {
            vars.push((name.to_owned(), value.to_owned()));
        }
    }
    assert!(
        !vars.is_empty(),
        "{} did not start the WebDAV server",
        script.display()
    );
    *STARTED.lock().unwrap() = Some(child);
    vars
}

/// The value of `name` among `vars`.
pub fn var(vars: &[(String, String)], name: &str) -> String {
    vars.iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("{name} is not set"))
}
