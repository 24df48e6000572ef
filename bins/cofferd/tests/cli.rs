//! The operator contract of `cofferd` (architecture §2), run as the real binary: every
//! subcommand on a fresh database, the first start, and commands next to a running server.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_cofferd");

/// A data dir and a database (SQLite in the dir, or a fresh PostgreSQL database).
struct Env {
    dir: tempfile::TempDir,
    url: String,
    _pg: Option<coffer_tests::PgDatabase>,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let (url, pg) = coffer_tests::fresh_database(dir.path());
        Env {
            url: url.expose().to_string(),
            dir,
            _pg: pg,
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("--data-dir")
            .arg(self.dir.path())
            .arg("--database-url")
            .arg(&self.url)
            .args(args);
        c.env_remove("COFFER_DATABASE_URL").env("RUST_LOG", "warn");
        c
    }

    /// Runs a command; returns (success, stdout, stderr).
    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = self.cmd(args).output().expect("run cofferd");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn json(&self, args: &[&str]) -> Value {
        let (ok, out, err) = self.run(args);
        assert!(ok, "cofferd {args:?} failed: {err}");
        serde_json::from_str(out.trim())
            .unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}): {out}"))
    }
}

#[test]
fn user_create_works_on_a_fresh_data_dir() {
    let env = Env::new();
    let v = env.json(&[
        "user",
        "create",
        "--email",
        "Ann@Example.com",
        "--name",
        "Ann",
    ]);
    assert_eq!(v["email"], "ann@example.com");
    assert!(v["id"].as_str().unwrap().len() == 36);
    assert!(v["password"].as_str().unwrap().len() >= 12);

    let given = env.json(&[
        "user",
        "create",
        "--email",
        "bob@example.com",
        "--name",
        "Bob",
        "--password",
        "Given-Passw0rd",
        "--role",
        "system-admin",
    ]);
    assert_eq!(given["password"], "Given-Passw0rd");

    let (ok, _, err) = env.run(&[
        "user",
        "create",
        "--email",
        "ann@example.com",
        "--name",
        "Again",
    ]);
    assert!(!ok);
    assert!(err.contains("exists"), "{err}");
    let (ok, _, err) = env.run(&[
        "user",
        "create",
        "--email",
        "c@example.com",
        "--name",
        "C",
        "--role",
        "root",
    ]);
    assert!(!ok && err.contains("unknown role"), "{err}");
    let (ok, _, err) = env.run(&[
        "user",
        "create",
        "--email",
        "d@example.com",
        "--name",
        "D",
        "--password",
        "weak",
    ]);
    assert!(!ok && err.contains("password policy"), "{err}");
}

#[test]
fn client_create_prints_the_secret_once() {
    let env = Env::new();
    let key = env.dir.path().join("key.pem");
    std::fs::write(&key, "not a key").unwrap();
    let v = env.json(&[
        "client",
        "create",
        "--name",
        "app",
        "--redirect-uri",
        "https://app.example.com/cb",
        "--flows",
        "authorization_code,refresh_token,password",
        "--access-token-lifetime",
        "2",
    ]);
    assert_eq!(v["client_id"], v["id"]);
    assert!(v["client_secret"].as_str().unwrap().len() >= 40);
    assert_eq!(v["flow"], 1 | 8 | 16);
    assert_eq!(v["access_token_lifetime"], 2);
    // The operator sets up the impersonation flows (over the API only a system administrator
    // may).
    let v = env.json(&[
        "client",
        "create",
        "--name",
        "signed",
        "--redirect-uri",
        "https://app.example.com/cb",
        "--flows",
        "signature",
        "--signature-key",
        "operator-key-0123456789",
    ]);
    assert_eq!(v["flow"], 4);
    assert_eq!(v["signature_key"], "********");
    let (ok, _, err) = env.run(&[
        "client",
        "create",
        "--name",
        "bad",
        "--redirect-uri",
        "https://x.example/cb",
        "--flows",
        "implicit",
    ]);
    assert!(!ok && err.contains("unknown flow"), "{err}");
    let (ok, _, err) = env.run(&[
        "client",
        "create",
        "--name",
        "jwt",
        "--redirect-uri",
        "https://x.example/cb",
        "--flows",
        "jwt_bearer",
        "--jwt-public-key",
        key.to_str().unwrap(),
    ]);
    assert!(!ok && err.contains("jwtPublicKey"), "{err}");
}

#[test]
fn scim_token_and_settings() {
    let env = Env::new();
    let v = env.json(&["scim-token", "create", "--name", "idp"]);
    let token = v["token"].as_str().unwrap().to_string();
    assert!(token.len() >= 40);
    let id = v["id"].as_str().unwrap().to_string();
    // Listed without the token; revoked by id.
    let (ok, out, _) = env.run(&["scim-token", "list"]);
    assert!(ok && !out.contains(&token), "{out}");
    let listed: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["revoked"], false);
    let r = env.json(&["scim-token", "revoke", &id]);
    assert_eq!(r["revoked"], true);
    assert_eq!(env.json(&["scim-token", "list"])[0]["revoked"], true);
    let (ok, _, _) = env.run(&["scim-token", "revoke", "no-such-token"]);
    assert!(!ok);
    let (ok, out, _) = env.run(&["settings", "set", "scimProvisioning", "false"]);
    assert!(ok && out.trim() == "false", "{out}");

    let (ok, out, _) = env.run(&["settings", "get", "passwordPolicy"]);
    assert!(ok);
    let policy: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(policy["minLength"], 8);
    let (ok, out, err) = env.run(&["settings", "set", "storageQuota", "1024"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "1024");
    let (ok, _, err) = env.run(&["settings", "set", "storageQuota", "lots"]);
    assert!(!ok && err.contains("storageQuota"), "{err}");
    let (ok, _, err) = env.run(&["settings", "get", "colour"]);
    assert!(!ok && err.contains("Unknown setting"), "{err}");
    let (ok, out, _) = env.run(&["migrate"]);
    assert!(ok);
    assert!(out.contains("\"migrated\":true"));
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Server {
    child: Child,
    stdout: Vec<String>,
    stderr: Vec<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Collects the lines a child writes to one of its pipes.
fn lines_of(pipe: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Starts `cofferd serve` with `args` on `port`, logging at `log` (`RUST_LOG`), its stdout and
/// stderr piped (as under a service manager); with the receivers of the lines it writes on each.
fn spawn_serve(
    env: &Env,
    port: u16,
    base_url: &str,
    log: &str,
    args: &[&std::ffi::OsStr],
) -> (
    Child,
    std::sync::mpsc::Receiver<String>,
    std::sync::mpsc::Receiver<String>,
) {
    let mut child = env
        .cmd(&["serve"])
        .args(args)
        .env("COFFER_LISTEN", format!("127.0.0.1:{port}"))
        .env("COFFER_BASE_URL", base_url)
        .env("RUST_LOG", log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = lines_of(child.stdout.take().unwrap());
    let err = lines_of(child.stderr.take().unwrap());
    (child, out, err)
}

/// Starts `cofferd serve` and waits until it answers; returns it with its first lines of output
/// (stdout and stderr are pipes, as under a service manager).
fn serve(env: &Env, port: u16) -> Server {
    let (child, rx, rx_err) =
        spawn_serve(env, port, &format!("http://127.0.0.1:{port}"), "warn", &[]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(2))
        .build();
    loop {
        if agent
            .get(&format!("http://127.0.0.1:{port}/health"))
            .call()
            .is_ok()
        {
            break;
        }
        assert!(Instant::now() < deadline, "cofferd did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(200));
    let stdout = rx.try_iter().collect();
    let stderr = rx_err.try_iter().collect();
    Server {
        child,
        stdout,
        stderr,
    }
}

fn field(lines: &[String], name: &str) -> Option<String> {
    lines
        .iter()
        .find_map(|l| l.trim().strip_prefix(name).map(|v| v.trim().to_string()))
}

#[test]
fn first_start_writes_credentials_to_an_owner_only_file_and_commands_run_beside_the_server() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let port = free_port();
    let server = serve(&env, port);

    // stdout is a pipe (a service's journal): the credentials go to a file only its owner can
    // read, and the log names the file.
    let path = env.dir.path().join("first-start-credentials.txt");
    let mode = std::fs::metadata(&path)
        .expect("the credentials file exists")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let admin = field(&lines, "administrator").expect("administrator in the file");
    let password = field(&lines, "password").expect("password in the file");
    let client_id = field(&lines, "client_id").expect("client_id in the file");
    let secret = field(&lines, "client_secret").expect("client_secret in the file");
    let output = [server.stdout.clone(), server.stderr.clone()]
        .concat()
        .join("\n");
    assert!(
        !output.contains(&secret),
        "the secret was printed: {output}"
    );
    assert!(
        !output.contains(&password),
        "the password was printed: {output}"
    );
    assert!(
        server
            .stderr
            .iter()
            .any(|l| l.contains(&path.display().to_string())),
        "the log names the file: {output}"
    );

    // The credentials in the file work.
    let agent = ureq::AgentBuilder::new().build();
    let token = |user: &str, pw: &str| -> Value {
        agent
            .post(&format!("http://127.0.0.1:{port}/oauth/token"))
            .send_form(&[
                ("grant_type", "password"),
                ("username", user),
                ("password", pw),
                ("client_id", &client_id),
                ("client_secret", &secret),
            ])
            .expect("token")
            .into_json()
            .unwrap()
    };
    assert!(token(&admin, &password)["access_token"].is_string());

    // An operator command against the same database while the server runs.
    let bob = env.json(&[
        "user",
        "create",
        "--email",
        "bob@example.com",
        "--name",
        "Bob",
    ]);
    let t = token("bob@example.com", bob["password"].as_str().unwrap());
    let me: Value = agent
        .get(&format!("http://127.0.0.1:{port}/rest/users/me"))
        .set(
            "Authorization",
            &format!("Bearer {}", t["access_token"].as_str().unwrap()),
        )
        .set("X-Coffer-Version", "28")
        .call()
        .unwrap()
        .into_json()
        .unwrap();
    assert_eq!(me["email"], "bob@example.com");
    drop(server);

    // The second start makes no credentials: the file is left as it was.
    std::fs::remove_file(&path).unwrap();
    let again = serve(&env, free_port());
    assert!(
        field(&again.stdout, "client_secret").is_none(),
        "{:?}",
        again.stdout
    );
    assert!(!path.exists());
}

/// Accounts provisioned with `cofferd user create` before the first `serve`: no administrator
/// is printed, yet a browser session works (the system's own records exist whichever command
/// ran first).
#[test]
fn web_sessions_work_when_accounts_were_provisioned_before_the_first_start() {
    let env = Env::new();
    let ann = env.json(&[
        "user",
        "create",
        "--email",
        "ann@example.com",
        "--name",
        "Ann",
        "--role",
        "system-admin",
    ]);
    let password = ann["password"].as_str().unwrap().to_string();
    let port = free_port();
    let server = serve(&env, port);
    assert!(
        field(&server.stdout, "administrator").is_none(),
        "{:?}",
        server.stdout
    );

    let (me, clients) = session_calls(port, "ann@example.com", &password);
    assert_eq!(me["email"], "ann@example.com");
    assert_eq!(me["id"], ann["id"]);
    let builtin = |clients: &Value| {
        clients["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["builtin"] == true)
            .count()
    };
    assert_eq!(builtin(&clients), 1, "{clients}");
    drop(server);

    // A later `migrate` and `serve` make no second first-party client.
    let (ok, _, err) = env.run(&["migrate"]);
    assert!(ok, "{err}");
    let port = free_port();
    let again = serve(&env, port);
    assert!(field(&again.stdout, "client_secret").is_none());
    let (_, clients) = session_calls(port, "ann@example.com", &password);
    assert_eq!(builtin(&clients), 1, "{clients}");
}

/// Signs in with `POST /rest/users/actions/login` and, with the session cookie alone, reads
/// `GET /rest/users/me` and `GET /rest/clients`.
fn session_calls(port: u16, email: &str, password: &str) -> (Value, Value) {
    let agent = ureq::AgentBuilder::new().redirects(0).build();
    let base = format!("http://127.0.0.1:{port}");
    let login = agent
        .post(&format!("{base}/rest/users/actions/login"))
        .set("X-Coffer-Version", "28")
        .send_json(serde_json::json!(
            {"username": email, "password": password, "referral": "/#/home"}
        ))
        .expect("sign-in");
    let session = login
        .all("set-cookie")
        .into_iter()
        .find_map(|c| {
            c.split(';')
                .next()
                .filter(|kv| kv.starts_with("coffer_session="))
        })
        .expect("a session cookie")
        .to_string();
    let get = |path: &str| -> Value {
        match agent
            .get(&format!("{base}{path}"))
            .set("X-Coffer-Version", "28")
            .set("Cookie", &session)
            .call()
        {
            Ok(r) => r.into_json().unwrap(),
            Err(ureq::Error::Status(s, r)) => {
                panic!("{path}: {s} {}", r.into_string().unwrap())
            }
            Err(e) => panic!("{path}: {e}"),
        }
    };
    (get("/rest/users/me"), get("/rest/clients"))
}

#[test]
fn a_bad_database_url_reports_the_real_cause() {
    let env = Env::new();
    let out = Command::new(BIN)
        .args([
            "--database-url",
            "postgres://nobody@127.0.0.1:1/none",
            "migrate",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("PostgreSQL at postgres://nobody@127.0.0.1:1/none"),
        "{err}"
    );
    drop(env);
}

#[test]
fn a_bad_trusted_proxy_list_is_refused_at_start() {
    let env = Env::new();
    let (ok, _, err) = env.run(&["--trusted-proxies", "10.0.0.0/8, proxy.local", "migrate"]);
    assert!(!ok);
    assert!(err.contains("trusted_proxies"), "{err}");
    assert!(err.contains("proxy.local"), "{err}");
    let (ok, _, err) = env.run(&["--trusted-proxies", "10.0.0.0/8, ::1", "migrate"]);
    assert!(ok, "{err}");
}

/// The data directory, the SQLite database and its journal are created readable by their owner
/// only, whatever the umask cofferd was started with; blobs written under it likewise.
#[test]
fn the_data_dir_and_database_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let url = format!("sqlite://{}", data.join("coffer.db").display());
    let out = Command::new(BIN)
        .arg("--data-dir")
        .arg(&data)
        .arg("--database-url")
        .arg(&url)
        .args(["user", "create", "--email", "o@example.com", "--name", "O"])
        .env_remove("COFFER_DATABASE_URL")
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700, "data dir");
    let mut checked = 0;
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("coffer.db") {
            assert_eq!(mode(&path), 0o600, "{name}");
            checked += 1;
        } else if path.is_dir() {
            assert_eq!(mode(&path) & 0o077, 0, "{name}");
        }
    }
    assert!(checked >= 1, "no database file in {}", data.display());
}

/// Certificates for the HTTPS tests: a CA made here, and server pairs it signs.
mod certs {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

    pub struct Ca {
        pub pem: String,
        issuer: Issuer<'static, KeyPair>,
    }

    pub fn ca() -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "Coffer test CA");
        let key = KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        Ca {
            pem,
            issuer: Issuer::new(params, key),
        }
    }

    /// A certificate for localhost and 127.0.0.1 named `cn`: (certificate PEM, key PEM, DER).
    pub fn server(ca: &Ca, cn: &str) -> (String, String, Vec<u8>) {
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca.issuer).unwrap();
        (cert.pem(), key.serialize_pem(), cert.der().to_vec())
    }
}

/// An HTTPS connection to a local cofferd that trusts only the test CA.
struct Https {
    stream: rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>,
}

impl Https {
    fn connect(port: u16, ca_pem: &str) -> std::io::Result<Https> {
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(rustls::pki_types::CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
            .unwrap();
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let conn = rustls::ClientConnection::new(
            std::sync::Arc::new(config),
            "localhost".try_into().unwrap(),
        )
        .unwrap();
        let tcp = std::net::TcpStream::connect(("127.0.0.1", port))?;
        tcp.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut stream = rustls::StreamOwned::new(conn, tcp);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock)?;
        }
        Ok(Https { stream })
    }

    /// The server's certificate as the handshake presented it.
    fn peer(&self) -> Vec<u8> {
        self.stream.conn.peer_certificates().unwrap()[0].to_vec()
    }

    /// `GET /health` on this connection, kept open; returns the status line and the headers.
    fn get(&mut self) -> (String, String) {
        use std::io::{Read, Write};
        self.stream
            .write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            self.stream.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        let mut body = vec![0u8; length];
        self.stream.read_exact(&mut body).unwrap();
        let status = head.lines().next().unwrap().to_string();
        (status, head)
    }
}

/// `cofferd serve` with `--tls-cert`/`--tls-key`, waited for over HTTPS; with the receiver of
/// the lines it logs from then on.
fn serve_tls(
    env: &Env,
    port: u16,
    cert: &std::path::Path,
    key: &std::path::Path,
    ca: &str,
) -> (Server, std::sync::mpsc::Receiver<String>) {
    let (mut child, rx, rx_err) = spawn_serve(
        env,
        port,
        &format!("https://localhost:{port}"),
        "info",
        &[
            "--tls-cert".as_ref(),
            cert.as_os_str(),
            "--tls-key".as_ref(),
            key.as_os_str(),
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while Https::connect(port, ca).is_err() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "cofferd ended: {:?}",
            rx_err.try_iter().collect::<Vec<_>>()
        );
        assert!(Instant::now() < deadline, "cofferd did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    let server = Server {
        stdout: rx.try_iter().collect(),
        stderr: Vec::new(),
        child,
    };
    (server, rx_err)
}

/// Waits until a line containing `needle` arrives on `rx`.
fn wait_for_line(rx: &std::sync::mpsc::Receiver<String>, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    loop {
        assert!(
            Instant::now() < deadline,
            "no line with {needle:?}: {seen:?}"
        );
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            if line.contains(needle) {
                return line;
            }
            seen.push(line);
        }
    }
}

fn hangup(server: &Server) {
    let status = Command::new("kill")
        .args(["-HUP", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// HTTPS with a certificate made here: HSTS on every answer; on SIGHUP a new certificate is
/// taken for new connections while an open connection goes on; a broken one is refused, the
/// pair in use stays, and the log says why.
#[test]
fn https_serves_its_certificate_and_reloads_it_on_sighup() {
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let ca = certs::ca();
    let (a_pem, a_key, a_der) = certs::server(&ca, "first");
    let (b_pem, b_key, b_der) = certs::server(&ca, "second");
    std::fs::write(&cert, &a_pem).unwrap();
    std::fs::write(&key, &a_key).unwrap();
    let port = free_port();
    let (server, log) = serve_tls(&env, port, &cert, &key, &ca.pem);

    let mut open = Https::connect(port, &ca.pem).unwrap();
    assert_eq!(open.peer(), a_der);
    let (status, head) = open.get();
    assert!(status.contains("200"), "{status}");
    assert!(
        head.contains("strict-transport-security: max-age=31536000"),
        "{head}"
    );
    // Plain HTTP on the TLS port gets no answer.
    let plain = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(5))
        .build()
        .get(&format!("http://127.0.0.1:{port}/health"))
        .call();
    assert!(plain.is_err());

    std::fs::write(&cert, &b_pem).unwrap();
    std::fs::write(&key, &b_key).unwrap();
    hangup(&server);
    wait_for_line(&log, "TLS certificate and key were reloaded");
    assert_eq!(Https::connect(port, &ca.pem).unwrap().peer(), b_der);
    // The connection opened before the reload still works, with the pair it began with.
    assert!(open.get().0.contains("200"));
    assert_eq!(open.peer(), a_der);

    // A broken certificate: the server keeps the pair it has and says why.
    std::fs::write(&cert, "-----BEGIN CERTIFICATE-----\nnot base64\n").unwrap();
    hangup(&server);
    let line = wait_for_line(&log, "keeping the TLS certificate in use");
    assert!(line.contains("cert.pem"), "{line}");
    let mut again = Https::connect(port, &ca.pem).unwrap();
    assert_eq!(again.peer(), b_der);
    assert!(again.get().0.contains("200"));
}

/// A certificate that does not parse, or a key that is not the certificate's, stops the start
/// with a message that names the file.
#[test]
fn a_bad_certificate_or_key_stops_the_start() {
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    let ca = certs::ca();
    let (a_pem, _, _) = certs::server(&ca, "first");
    let (_, b_key, _) = certs::server(&ca, "second");
    let (cert, key, junk) = (
        dir.path().join("cert.pem"),
        dir.path().join("key.pem"),
        dir.path().join("junk.pem"),
    );
    std::fs::write(&cert, &a_pem).unwrap();
    std::fs::write(&key, &b_key).unwrap();
    std::fs::write(&junk, "not a certificate").unwrap();
    let start = |cert: &std::path::Path, key: &std::path::Path| {
        let out = env
            .cmd(&["serve"])
            .arg("--tls-cert")
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .env("COFFER_LISTEN", format!("127.0.0.1:{}", free_port()))
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = start(&cert, &key);
    assert!(err.contains("does not belong to the certificate"), "{err}");
    let err = start(&junk, &key);
    assert!(err.contains("reading the TLS certificate"), "{err}");
    assert!(err.contains("junk.pem"), "{err}");
    let err = start(&cert, &junk);
    assert!(err.contains("reading the TLS key"), "{err}");
    let (ok, _, err) = env.run(&["--tls-cert", cert.to_str().unwrap(), "serve"]);
    assert!(!ok);
    assert!(err.contains("tls_cert and tls_key go together"), "{err}");
}

/// The option lines of a command's `--help`: each must say what the option is (a description
/// on its line or on the next one).
fn undescribed_options(help: &str) -> Vec<String> {
    let lines: Vec<&str> = help.lines().collect();
    let mut bad = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if !(t.starts_with("--") || t.starts_with("-h")) || line.len() - t.len() > 6 {
            continue;
        }
        // The flag and its value placeholder, then the description after two spaces.
        let described = t
            .split_once("  ")
            .is_some_and(|(_, d)| !d.trim().is_empty())
            || lines
                .get(i + 1)
                .is_some_and(|n| n.starts_with("          ") && !n.trim().is_empty());
        if !described {
            bad.push(line.to_string());
        }
    }
    bad
}

#[test]
fn each_command_help_shows_its_own_options_each_described() {
    let env = Env::new();
    let help = |args: &[&str]| {
        let (ok, out, err) = env.run(args);
        assert!(ok, "{args:?}: {err}");
        out
    };
    // The server's options are serve's (and the bare cofferd's), not every command's.
    let serve = help(&["serve", "--help"]);
    for flag in [
        "--listen",
        "--smtp-url",
        "--ldap-base-dn",
        "--storage-url",
        "--tls-cert",
    ] {
        assert!(serve.contains(flag), "serve --help lacks {flag}: {serve}");
    }
    for cmd in [
        &["user", "list", "--help"][..],
        &["user", "create", "--help"],
        &["client", "delete", "--help"],
        &["migrate", "--help"],
        &["backup", "--help"],
    ] {
        let out = help(cmd);
        for flag in ["--listen", "--smtp-url", "--webhook-workers"] {
            assert!(!out.contains(flag), "{cmd:?} shows {flag}: {out}");
        }
        assert!(
            out.contains("--database-url") && out.contains("--data-dir"),
            "{out}"
        );
    }
    assert!(help(&["backup", "--help"]).contains("--storage-url"));
    assert!(help(&["user", "reset-password", "--help"]).contains("--base-url"));
    for cmd in [
        &["--help"][..],
        &["serve", "--help"],
        &["user", "create", "--help"],
        &["user", "delete", "--help"],
        &["user", "reset-password", "--help"],
        &["client", "create", "--help"],
        &["webform", "update", "--help"],
        &["restore", "--help"],
        &["storage", "check", "--help"],
    ] {
        let out = help(cmd);
        assert_eq!(undescribed_options(&out), Vec::<String>::new(), "{cmd:?}");
    }
    // Server options given before a command's name still apply to it, as before.
    let (ok, _, err) = env.run(&["--trusted-proxies", "not an address", "user", "list"]);
    assert!(!ok && err.contains("trusted_proxies"), "{err}");
    // …and are not options of the other commands.
    let (ok, _, err) = env.run(&["user", "list", "--listen", "127.0.0.1:1"]);
    assert!(!ok && err.contains("--listen"), "{err}");
}

/// A service context on `env`'s database, to check what the commands stored.
fn ctx_of(env: &Env) -> coffer_service::Ctx {
    let mut config = coffer_service::Config::new("http://127.0.0.1:8080", "Coffer");
    config.storage_url = Some(env.dir.path().join("storage").display().to_string());
    coffer_service::open(
        &coffer_service::DatabaseUrl::new(env.url.clone()),
        2,
        config,
    )
    .unwrap()
}

#[test]
fn user_list_delete_and_reset_password() {
    let env = Env::new();
    let ann = env.json(&[
        "user",
        "create",
        "--email",
        "ann@example.com",
        "--name",
        "Ann",
    ]);
    env.json(&[
        "user",
        "create",
        "--email",
        "bob@example.com",
        "--name",
        "Bob",
    ]);
    let list = env.json(&["user", "list"]);
    let emails: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["email"].as_str().unwrap())
        .collect();
    assert!(
        emails.contains(&"ann@example.com") && emails.contains(&"bob@example.com"),
        "{list}"
    );
    assert!(!list.to_string().contains("password"), "{list}");

    // The link is printed once on stdout, never logged, and sets a new password once.
    let out = env
        .cmd(&[
            "user",
            "reset-password",
            "Ann@Example.com",
            "--base-url",
            "https://files.example.com",
        ])
        .env("RUST_LOG", "trace")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["id"], ann["id"]);
    let link = v["link"].as_str().unwrap().to_string();
    assert!(
        link.starts_with("https://files.example.com/passwordReset?token="),
        "{link}"
    );
    let token = link.rsplit('=').next().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains(token));
    assert!(v["expiresAt"].as_i64().unwrap() > coffer_tests::unix_now());
    let ctx = ctx_of(&env);
    use coffer_service::identity::{accounts, password_reset};
    password_reset::reset(&ctx, &link, "Brand-New-Passw0rd").unwrap();
    assert!(
        accounts::check_credentials(&ctx, "ann@example.com", "Brand-New-Passw0rd")
            .unwrap()
            .is_some()
    );
    assert!(
        password_reset::reset(&ctx, &link, "Other-Passw0rd-2").is_err(),
        "the link works once"
    );

    // Delete by id: the same use case as the REST delete (its event recorded, sign-in ends).
    let d = env.json(&[
        "user",
        "delete",
        ann["id"].as_str().unwrap(),
        "--remote-wipe",
    ]);
    assert_eq!(d["deleted"], true);
    assert_eq!(d["email"], "ann@example.com");
    assert!(
        accounts::check_credentials(&ctx, "ann@example.com", "Brand-New-Passw0rd")
            .unwrap()
            .is_none()
    );
    let events: Vec<String> = ctx
        .with_conn(|c| Ok(coffer_store::events::after(c, 0, 10_000)?))
        .unwrap()
        .into_iter()
        .filter(|e| e.actor_id.is_none() && e.data.contains(ann["id"].as_str().unwrap()))
        .map(|e| e.subject)
        .collect();
    assert!(events.iter().any(|e| e == "user.user.delete"), "{events:?}");
    assert!(
        events.iter().any(|e| e == "user.password.resetRequest"),
        "{events:?}"
    );
    let list = env.json(&["user", "list"]).to_string();
    assert!(
        !list.contains("ann@example.com") && list.contains("bob@example.com"),
        "{list}"
    );

    // Bad input: clear messages, nothing changed.
    let (ok, _, err) = env.run(&["user", "delete", ann["id"].as_str().unwrap()]);
    assert!(!ok && err.contains("deleted"), "{err}");
    let (ok, _, err) = env.run(&["user", "delete", "ann@example.com"]);
    assert!(!ok && err.contains("not found"), "{err}");
    let (ok, _, err) = env.run(&["user", "delete", "nobody@example.com"]);
    assert!(!ok && err.contains("not found"), "{err}");
    let (ok, _, err) = env.run(&["user", "reset-password", ann["id"].as_str().unwrap()]);
    assert!(!ok && err.contains("not found"), "{err}");
    let (ok, _, err) = env.run(&["user", "delete", "bob@example.com", "--retain-to", "nobody"]);
    assert!(!ok && err.contains("parameter"), "{err}");
    assert!(env
        .json(&["user", "list"])
        .to_string()
        .contains("bob@example.com"));
}

#[test]
fn client_list_and_delete() {
    let env = Env::new();
    let made = env.json(&[
        "client",
        "create",
        "--name",
        "app",
        "--redirect-uri",
        "https://app.example.com/cb",
    ]);
    let id = made["client_id"].as_str().unwrap().to_string();
    let secret = made["client_secret"].as_str().unwrap().to_string();
    let (ok, out, _) = env.run(&["client", "list"]);
    assert!(ok && !out.contains(&secret), "{out}");
    let list: Value = serde_json::from_str(out.trim()).unwrap();
    let app = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(app["name"], "app");

    let d = env.json(&["client", "delete", &id]);
    assert_eq!(d["deleted"], true);
    assert!(!env.json(&["client", "list"]).to_string().contains(&id));
    let (ok, _, err) = env.run(&["client", "delete", &id]);
    assert!(!ok && err.contains("not found"), "{err}");
    // The built-in first-party client stays.
    let builtin = env
        .json(&["client", "list"])
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == 1)
        .map(|c| c["id"].as_str().unwrap().to_string());
    if let Some(b) = builtin {
        let (ok, _, err) = env.run(&["client", "delete", &b]);
        assert!(!ok && err.contains("built-in"), "{err}");
    }
}

/// The blob store's and the database's view of a restored installation.
fn storage_check(env: &Env, storage: &std::path::Path) -> Value {
    env.json(&[
        "storage",
        "check",
        "--storage-url",
        storage.to_str().unwrap(),
    ])
}

#[test]
fn backup_under_write_load_restores_with_nothing_missing() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let app = coffer_tests::TestApp::spawn();
    let token = app.admin_token();
    let source_storage = app.ctx.config.storage_url.clone().unwrap();
    let source = |args: &[&str]| {
        let mut c = Command::new(BIN);
        c.arg("--database-url")
            .arg(app.database_url().expose())
            .arg("--data-dir")
            .arg("/nonexistent-data-dir")
            .args(args)
            .arg("--storage-url")
            .arg(&source_storage)
            .env_remove("COFFER_DATABASE_URL")
            .env("RUST_LOG", "warn");
        c.output().unwrap()
    };
    for i in 0..5 {
        app.upload_to_my_folder(
            &token,
            &format!("before-{i}.txt"),
            format!("before {i}").as_bytes(),
        );
    }
    let stop = AtomicBool::new(false);
    let uploaded = AtomicUsize::new(0);
    let backup_dir = tempfile::tempdir().unwrap();
    let dir = backup_dir.path().join("b");
    let manifest: Value = std::thread::scope(|s| {
        for w in 0..2 {
            let (app, token, stop, uploaded) = (&app, &token, &stop, &uploaded);
            s.spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let body = format!("writer {w} file {i} {}", "x".repeat(i * 37 % 4000));
                    app.upload_to_my_folder(token, &format!("w{w}-{i}.txt"), body.as_bytes());
                    uploaded.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            });
        }
        coffer_tests::wait_until("uploads under way", 60, || {
            uploaded.load(Ordering::Relaxed) >= 4
        });
        let out = source(&["backup", dir.to_str().unwrap()]);
        stop.store(true, Ordering::Relaxed);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    });
    assert_eq!(manifest["backend"], coffer_tests::backend_name());
    assert!(manifest["blobs"].as_u64().unwrap() >= 5, "{manifest}");
    // A second backup into the same directory is refused.
    let out = source(&["backup", dir.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not empty"));

    // Restore into an empty data directory (or a new, empty database).
    let target = Env::new();
    let storage = target.dir.path().join("storage");
    let (ok, out, err) = target.run(&["restore", dir.to_str().unwrap()]);
    assert!(ok, "restore: {err}");
    let restored: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(restored["blobs"], manifest["blobs"]);
    let check = storage_check(&target, &storage);
    assert_eq!(check["missing"], serde_json::json!([]), "{check}");
    assert_eq!(check["stored"], manifest["blobs"], "{check}");
    let users = target.json(&["user", "list"]).to_string();
    assert!(users.contains(&app.admin.admin_email), "{users}");
    // The accounts come back with their passwords.
    let restored_ctx = ctx_of(&target);
    let admin = coffer_service::identity::accounts::check_credentials(
        &restored_ctx,
        &app.admin.admin_email,
        &app.admin.admin_password,
    )
    .unwrap();
    assert!(
        admin.is_some(),
        "the administrator signs in on the restored database"
    );
    drop(restored_ctx);
    // The restored installation serves.
    drop(serve(&target, free_port()));

    // Restoring again, into what is now in use, is refused and changes nothing.
    let before = target.json(&["user", "list"]);
    let (ok, _, err) = target.run(&["restore", dir.to_str().unwrap()]);
    assert!(!ok, "a second restore was accepted");
    assert!(
        err.contains("exists") || err.contains("has tables"),
        "{err}"
    );
    assert_eq!(target.json(&["user", "list"]), before);
    assert_eq!(
        storage_check(&target, &storage)["missing"],
        serde_json::json!([])
    );

    // An empty database with a blob store holding other content is refused too, before the
    // database is touched.
    let other = Env::new();
    let foreign = other.dir.path().join("foreign");
    let key = "ab".repeat(32);
    let blob_dir = foreign.join("blobs").join("ab").join("ab");
    std::fs::create_dir_all(&blob_dir).unwrap();
    std::fs::write(blob_dir.join(&key), b"other content").unwrap();
    let (ok, _, err) = other.run(&[
        "restore",
        dir.to_str().unwrap(),
        "--storage-url",
        foreign.to_str().unwrap(),
    ]);
    assert!(!ok && err.contains("holds content"), "{err}");
    assert_eq!(std::fs::read_dir(blob_dir).unwrap().count(), 1);
    if coffer_tests::backend_name() == "sqlite" {
        assert!(!other.dir.path().join("coffer.db").exists());
    }
    // Not a backup at all.
    let (ok, _, err) = Env::new().run(&["restore", backup_dir.path().to_str().unwrap()]);
    assert!(!ok && err.contains("not a finished Coffer backup"), "{err}");
}
