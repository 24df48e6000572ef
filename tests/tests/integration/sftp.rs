//! The SFTP server end to end with the real OpenSSH client (`sftp -b`): signing in with a
//! registered key and only so, the view (My Folder and the folders shared with the user),
//! transfers that come back byte-identical over REST and the other way round, versions, quota,
//! the same role checks and events as REST, the changes a session may
//! make, and paths that never leave the view; `scp` downloads and uploads, a put cut off midway
//! that leaves nothing behind; puts scanned against a real clamd as REST uploads are (with
//! `COFFER_TEST_CLAMD`, which `scripts/clamd-test-server.sh` sets; skipped with a note without
//! it). Needs `sftp`, `scp` and `ssh-keygen`
//! (`scripts/sftp-test-clients.sh` installs them; the tests run it when they are missing).

use coffer_domain::Role;
use coffer_tests::{my_folder, upload_ok, TestApp};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A test server with its SFTP server on a loopback port.
struct Server {
    app: TestApp,
    port: u16,
    dir: tempfile::TempDir,
    _sftp: coffer_sftp::Running,
}

/// The OpenSSH clients, installed by the project's script on a machine that lacks them, so the
/// README's `cargo test --workspace` needs no set-up by hand.
fn clients() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let present = ["sftp", "scp", "ssh-keygen"]
            .iter()
            .all(|c| Command::new(c).arg("-?").output().is_ok());
        if !present {
            let script =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/sftp-test-clients.sh");
            let ran = Command::new("bash").arg(&script).status();
            assert!(
                matches!(ran, Ok(s) if s.success()),
                "{} could not install the OpenSSH clients",
                script.display()
            );
        }
    });
}

fn start() -> Server {
    start_with(coffer_sftp::Config::default())
}

fn start_with(config: coffer_sftp::Config) -> Server {
    serve(TestApp::spawn(), config)
}

/// The SFTP server in front of `app`.
fn serve(app: TestApp, config: coffer_sftp::Config) -> Server {
    clients();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let sftp = coffer_sftp::spawn(app.ctx.clone(), listener, config).expect("SFTP server");
    Server {
        app,
        port: sftp.addr.port(),
        dir: tempfile::tempdir().unwrap(),
        _sftp: sftp,
    }
}

/// A user who can sign in: their token and the private key file of a key generated for them.
struct User {
    id: String,
    email: String,
    token: String,
    key: PathBuf,
}

impl Server {
    fn user(&self, email: &str) -> User {
        let (id, token) = self.app.user_token(email, Role::User);
        let r = self.app.rest(
            "POST",
            "/rest/userSshPublicKeys/generate",
            &token,
            Some(json!({"name": "test"})),
        );
        assert_eq!(r.status, 201, "{}", r.text);
        let key = self.dir.path().join(format!("{email}.key"));
        write_private(&key, r.json()["privateKey"].as_str().unwrap());
        User {
            id,
            email: email.to_string(),
            token,
            key,
        }
    }

    fn ssh_options(&self, key: &Path, user: &str) -> Vec<String> {
        [
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "PasswordAuthentication=no",
            "-o",
            "KbdInteractiveAuthentication=no",
            "-o",
            "LogLevel=ERROR",
            "-o",
            "ConnectTimeout=20",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([
            "-o".into(),
            format!("User={user}"),
            "-i".into(),
            key.display().to_string(),
        ])
        .collect()
    }

    /// Runs `sftp -b` with these commands as `u`.
    fn sftp(&self, u: &User, commands: &str) -> Output {
        self.sftp_as(&u.key, &u.email, commands)
    }

    fn sftp_as(&self, key: &Path, user: &str, commands: &str) -> Output {
        self.sftp_options(key, user, &[], commands)
    }

    /// Runs `sftp -b` with these commands as `u`, the client's other options before them
    /// (e.g. `-B` for the bytes of each write).
    fn sftp_with(&self, u: &User, options: &[&str], commands: &str) -> Output {
        self.sftp_options(&u.key, &u.email, options, commands)
    }

    /// Runs `sftp -b` with these commands as `user` with `key`, `options` before the port.
    fn sftp_options(&self, key: &Path, user: &str, options: &[&str], commands: &str) -> Output {
        let batch = self.dir.path().join("batch");
        std::fs::write(&batch, commands).unwrap();
        Command::new("sftp")
            .args(self.ssh_options(key, user))
            .args(options)
            .args(["-P", &self.port.to_string(), "-b"])
            .arg(&batch)
            .arg("127.0.0.1")
            .current_dir(self.dir.path())
            .output()
            .expect("running sftp (scripts/sftp-test-clients.sh installs it)")
    }

    /// Runs `scp` (which speaks SFTP, `-s`, the default of OpenSSH 9) as `u` with these
    /// arguments after the connection's options.
    fn scp(&self, u: &User, args: &[&str]) -> Output {
        let mut options = self.ssh_options(&u.key, &u.email);
        options.push("-s".into());
        Command::new("scp")
            .args(options)
            .args(["-P", &self.port.to_string()])
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .expect("running scp (scripts/sftp-test-clients.sh installs it)")
    }

    /// Starts `sftp -b` with these commands as `u`, its bandwidth limited to `kbit` Kbit/s,
    /// without waiting for it.
    fn sftp_slow(&self, u: &User, commands: &str, kbit: u32) -> std::process::Child {
        let batch = self.dir.path().join("slow-batch");
        std::fs::write(&batch, commands).unwrap();
        Command::new("sftp")
            .args(self.ssh_options(&u.key, &u.email))
            .args(["-l", &kbit.to_string()])
            .args(["-P", &self.port.to_string(), "-b"])
            .arg(&batch)
            .arg("127.0.0.1")
            .current_dir(self.dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("running sftp")
    }

    fn local(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn events(&self, subject: &str) -> i64 {
        self.app.count(&format!("subject = '{subject}'"), "events")
    }
}

fn write_private(path: &Path, key: &str) {
    std::fs::write(path, key).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn ok(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "status {:?}\nstdout: {out}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn failed(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        !o.status.success(),
        "expected a failure; stdout: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    err
}

/// Whether a listing in `sftp`'s output shows `name` on a line of its own (`ls` of a path prints
/// each entry with the path before it); the echoed commands never count.
fn listed(out: &str, name: &str) -> bool {
    out.lines()
        .filter(|l| !l.starts_with("sftp>"))
        .map(str::trim)
        .any(|l| l == name || l.ends_with(&format!("/{name}")))
}

/// Bytes that are not all alike, so a misplaced range would show.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i as u64).wrapping_mul(2_654_435_761) >> 7) as u8 ^ seed)
        .collect()
}

/// The files of a folder over REST: (name, id) pairs.
fn rest_files(app: &TestApp, token: &str, folder: &str) -> Vec<(String, String)> {
    let r = app.rest("GET", &format!("/rest/folders/{folder}/files"), token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn rest_content(app: &TestApp, token: &str, id: &str) -> Vec<u8> {
    let r = app.rest("GET", &format!("/rest/files/{id}/content"), token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    r.bytes
}

#[test]
fn files_go_both_ways_byte_identical_with_versions_and_events() {
    let s = start();
    let u = s.user("alice@example.com");
    let root = my_folder(&s.app, &u.token);
    let over_rest = pattern(300_000, 1);
    upload_ok(&s.app, &u.token, &root, "from-rest.bin", &over_rest);

    // REST → SFTP.
    let out = ok(&s.sftp(&u, "ls /\nget \"/My Folder/from-rest.bin\" got.bin\n"));
    assert!(listed(&out, "My Folder"), "{out}");
    assert_eq!(std::fs::read(s.local("got.bin")).unwrap(), over_rest);
    assert_eq!(s.events("filesystem.file.download"), 1);

    // SFTP → REST: a file larger than the client's write size, in many writes.
    let over_sftp = pattern(3 * 1024 * 1024 + 17, 2);
    std::fs::write(s.local("up.bin"), &over_sftp).unwrap();
    ok(&s.sftp(&u, "put up.bin \"/My Folder/up.bin\"\n"));
    let files = rest_files(&s.app, &u.token, &root);
    let (_, id) = files.iter().find(|(n, _)| n == "up.bin").unwrap();
    assert_eq!(rest_content(&s.app, &u.token, id), over_sftp);
    let created = s.app.count(
        "subject = 'filesystem.file.create' AND data LIKE '%\"protocol\":\"sftp\"%'",
        "events",
    );
    assert_eq!(created, 1);

    // The same name again is a new version of the same file.
    let second = pattern(1000, 3);
    std::fs::write(s.local("v2.bin"), &second).unwrap();
    ok(&s.sftp(&u, "put v2.bin \"/My Folder/up.bin\"\n"));
    let files = rest_files(&s.app, &u.token, &root);
    assert_eq!(files.iter().filter(|(n, _)| n == "up.bin").count(), 1);
    assert_eq!(rest_content(&s.app, &u.token, id), second);
    let r = s
        .app
        .rest("GET", &format!("/rest/files/{id}/versions"), &u.token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["data"].as_array().unwrap().len(), 2, "{}", r.text);
    assert_eq!(
        s.app.count(
            "subject = 'filesystem.version.create' AND data LIKE '%\"protocol\":\"sftp\"%'",
            "events"
        ),
        1
    );
    // An empty file is a file too.
    std::fs::write(s.local("empty"), b"").unwrap();
    ok(&s.sftp(
        &u,
        "put empty \"/My Folder/empty\"\nget \"/My Folder/empty\" empty2\n",
    ));
    assert_eq!(std::fs::read(s.local("empty2")).unwrap(), b"");
}

#[test]
fn only_a_registered_live_key_of_an_allowed_account_signs_in() {
    let s = start();
    let u = s.user("bob@example.com");
    ok(&s.sftp(&u, "ls /\n"));

    // Another account's name with this key, and a key nobody registered.
    s.user("carol@example.com");
    let err = failed(&s.sftp_as(&u.key, "carol@example.com", "ls /\n"));
    assert!(err.contains("Permission denied"), "{err}");
    let stray = s.local("stray");
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&stray)
        .output()
        .unwrap();
    assert!(made.status.success());
    failed(&s.sftp_as(&stray, &u.email, "ls /\n"));
    // The refusals count against the sign-in throttle of the account.
    assert!(
        s.app.count(
            "key = 'account:bob@example.com' AND failures > 0",
            "auth_failures"
        ) > 0
    );

    // The gate closed on the account's profile: refused at once, no cache.
    s.app.execute(&format!(
        "UPDATE users SET profile_id = 2 WHERE id = '{}'",
        u.id
    ));
    failed(&s.sftp(&u, "ls /\n"));
    s.app.execute(&format!(
        "UPDATE users SET profile_id = 1 WHERE id = '{}'",
        u.id
    ));
    ok(&s.sftp(&u, "ls /\n"));

    // A deactivated account.
    s.app.execute(&format!(
        "UPDATE users SET active = FALSE WHERE id = '{}'",
        u.id
    ));
    failed(&s.sftp(&u, "ls /\n"));
    s.app.execute(&format!(
        "UPDATE users SET active = TRUE WHERE id = '{}'",
        u.id
    ));

    // A deleted key.
    let r = s.app.rest("GET", "/rest/userSshPublicKeys", &u.token, None);
    let id = r.json()["data"][0]["id"].as_i64().unwrap();
    let r = s.app.rest(
        "DELETE",
        &format!("/rest/userSshPublicKeys/{id}"),
        &u.token,
        None,
    );
    assert_eq!(r.status, 204);
    failed(&s.sftp(&u, "ls /\n"));
}

#[test]
fn the_view_is_my_folder_and_the_shared_folders_with_the_rest_roles() {
    let s = start();
    let owner = s.user("owner@example.com");
    let viewer = s.user("viewer@example.com");
    let root = my_folder(&s.app, &owner.token);
    let shared = coffer_tests::mkdir(&s.app, &owner.token, &root, "Team");
    upload_ok(&s.app, &owner.token, &shared, "plan.txt", b"the plan");
    let r = s.app.rest(
        "POST",
        &format!("/rest/folders/{shared}/members"),
        &owner.token,
        Some(json!({"userIds": [viewer.id], "roleId": 4})),
    );
    assert_eq!(r.status, 201, "{}", r.text);

    let out = ok(&s.sftp(&viewer, "ls -1 /\nls -1 /Team\n"));
    assert!(listed(&out, "My Folder") && listed(&out, "Team"), "{out}");
    assert!(listed(&out, "plan.txt"), "{out}");
    // A Viewer lists but does not download, nor put.
    failed(&s.sftp(&viewer, "get /Team/plan.txt x.txt\n"));
    assert!(!s.local("x.txt").exists());
    std::fs::write(s.local("mine.txt"), b"mine").unwrap();
    failed(&s.sftp(&viewer, "put mine.txt /Team/mine.txt\n"));
    assert_eq!(rest_files(&s.app, &owner.token, &shared).len(), 1);

    // The owner's view holds no folder of the viewer's.
    let out = ok(&s.sftp(&owner, "ls -1 /\n"));
    assert!(listed(&out, "My Folder") && !listed(&out, "Team"), "{out}");
}

#[test]
fn a_session_makes_moves_and_removes_and_never_leaves_the_view() {
    let s = start();
    let u = s.user("dave@example.com");
    let root = my_folder(&s.app, &u.token);
    std::fs::write(s.local("a.txt"), b"alpha").unwrap();
    let out = ok(&s.sftp(
        &u,
        "cd \"/My Folder\"\nmkdir Docs\nput a.txt Docs/a.txt\nrename Docs/a.txt Docs/b.txt\nmkdir Old\nrename Docs/b.txt Old/c.txt\nrmdir Docs\nls -1 Old\ncd ../../..\npwd\nls -1\n",
    ));
    assert!(listed(&out, "c.txt"), "{out}");
    assert!(out.contains("Remote working directory: /\n"), "{out}");
    // `..` stops at the root of the view.
    let root_listing = out.rsplit("Remote working directory: /").next().unwrap();
    assert!(listed(root_listing, "My Folder"), "{out}");
    let r = s.app.rest(
        "GET",
        &format!("/rest/folders/{root}/folders"),
        &u.token,
        None,
    );
    let names: Vec<String> = r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, vec!["Old"]);
    // rm sends the file to the trash (the REST delete), and a folder with content stays.
    failed(&s.sftp(&u, "rmdir \"/My Folder/Old\"\n"));
    ok(&s.sftp(
        &u,
        "rm \"/My Folder/Old/c.txt\"\nrmdir \"/My Folder/Old\"\n",
    ));
    assert_eq!(s.events("filesystem.file.delete"), 1);
    assert_eq!(s.events("filesystem.folder.delete"), 2);
    assert_eq!(
        s.app
            .count("name = 'c.txt' AND deleted_at IS NOT NULL", "objects"),
        1
    );
    // The root is read-only and links do not exist.
    failed(&s.sftp(&u, "mkdir /Mine\n"));
    failed(&s.sftp(&u, "rm \"/My Folder\"\n"));
    failed(&s.sftp(&u, "ln -s \"/My Folder\" \"/My Folder/link\"\n"));
    failed(&s.sftp(&u, "get /etc/passwd\n"));
}

#[test]
fn the_quota_is_checked_before_the_bytes_are_kept() {
    let s = start();
    let u = s.user("erin@example.com");
    let root = my_folder(&s.app, &u.token);
    coffer_service::identity::settings::set(&s.app.ctx, "storageQuota", "100000", None).unwrap();
    std::fs::write(s.local("big.bin"), pattern(200_000, 4)).unwrap();
    let err = failed(&s.sftp(&u, "put big.bin \"/My Folder/big.bin\"\n"));
    assert!(!err.is_empty());
    assert!(rest_files(&s.app, &u.token, &root).is_empty());
    std::fs::write(s.local("small.bin"), pattern(50_000, 5)).unwrap();
    ok(&s.sftp(&u, "put small.bin \"/My Folder/small.bin\"\n"));
    assert_eq!(rest_files(&s.app, &u.token, &root).len(), 1);
}

#[test]
fn passwords_sign_in_only_when_allowed() {
    let s = start_with(coffer_sftp::Config {
        password: true,
        ..Default::default()
    });
    let (_, pw) = s.app.user("frank@example.com", Role::User);
    let run = |password: &str| {
        // sshpass is not assumed: the password goes through SSH_ASKPASS.
        let askpass = s.local("askpass.sh");
        std::fs::write(&askpass, format!("#!/bin/sh\necho '{password}'\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o700)).unwrap();
        // Batch mode (`-b`) never asks for a password: the commands go on standard input.
        let mut child = Command::new("sftp")
            .args([
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "PubkeyAuthentication=no",
                "-o",
                "NumberOfPasswordPrompts=1",
                "-o",
                "User=frank@example.com",
                "-P",
                &s.port.to_string(),
                "127.0.0.1",
            ])
            .env("SSH_ASKPASS", &askpass)
            .env("SSH_ASKPASS_REQUIRE", "force")
            .env("DISPLAY", ":0")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"ls /\n").unwrap();
        child.wait_with_output().unwrap()
    };
    failed(&run("wrong"));
    let out = ok(&run(&pw));
    assert!(listed(&out, "My Folder"), "{out}");
}

#[test]
fn scp_fetches_and_sends_files_byte_identical() {
    let s = start();
    let u = s.user("gina@example.com");
    let root = my_folder(&s.app, &u.token);
    let over_rest = pattern(1024 * 1024 + 5, 6);
    upload_ok(&s.app, &u.token, &root, "report.bin", &over_rest);
    let small = b"a few bytes\n";
    upload_ok(&s.app, &u.token, &root, "note.txt", small);

    // A download, with the path as scp's SFTP mode takes it (no remote shell, so no quoting).
    let remote = |name: &str| format!("127.0.0.1:/My Folder/{name}");
    ok(&s.scp(&u, &[&remote("report.bin"), "got.bin"]));
    assert_eq!(std::fs::read(s.local("got.bin")).unwrap(), over_rest);
    ok(&s.scp(&u, &[&remote("note.txt"), "note.txt"]));
    assert_eq!(std::fs::read(s.local("note.txt")).unwrap(), small);
    assert_eq!(s.events("filesystem.file.download"), 2);
    // A file that is not there fails, loudly.
    let err = failed(&s.scp(&u, &[&remote("missing.bin"), "missing.bin"]));
    assert!(err.contains("No such file"), "{err}");
    assert!(!s.local("missing.bin").exists());

    // An upload comes back over REST as it was sent.
    let up = pattern(700_000, 7);
    std::fs::write(s.local("up.bin"), &up).unwrap();
    ok(&s.scp(&u, &["up.bin", &remote("up.bin")]));
    let files = rest_files(&s.app, &u.token, &root);
    let (_, id) = files.iter().find(|(n, _)| n == "up.bin").unwrap();
    assert_eq!(rest_content(&s.app, &u.token, id), up);
}

#[test]
fn a_put_cut_off_midway_leaves_no_file_and_no_staged_bytes() {
    let s = start();
    let u = s.user("hugo@example.com");
    let root = my_folder(&s.app, &u.token);
    upload_ok(&s.app, &u.token, &root, "kept.bin", &pattern(10_000, 8));
    let storage = s.app.ctx.config.storage_url.clone().unwrap_or_default();
    let local = coffer_tests::storage_name() == "local";
    let staged = |dir: &str| -> Vec<u64> {
        let Ok(entries) = std::fs::read_dir(Path::new(&storage).join(dir)) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok()?.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .collect()
    };
    let blobs_before = s.app.count("1 = 1", "blobs");

    // 8 MiB at 2 Mbit/s takes half a minute: the client is stopped once bytes are arriving.
    std::fs::write(s.local("big.bin"), pattern(8 * 1024 * 1024, 9)).unwrap();
    let mut child = s.sftp_slow(&u, "put big.bin \"/My Folder/big.bin\"\n", 2000);
    if local {
        coffer_tests::wait_until("bytes being staged", 60, || {
            staged("tmp").iter().any(|&n| n > 0)
        });
    } else {
        std::thread::sleep(std::time::Duration::from_secs(5));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the put ended before it was cut off"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    // The server notices the client went: the staged bytes go, and no file was made.
    if local {
        coffer_tests::wait_until("the staging swept", 60, || staged("tmp").is_empty());
    }
    // Time for the server to settle before the state is read (the sweep above on local
    // storage; on object storage the upload's abort).
    std::thread::sleep(std::time::Duration::from_secs(2));
    let names: Vec<String> = rest_files(&s.app, &u.token, &root)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, vec!["kept.bin".to_string()]);
    let out = ok(&s.sftp(&u, "ls -1 \"/My Folder\"\n"));
    assert!(
        listed(&out, "kept.bin") && !listed(&out, "big.bin"),
        "{out}"
    );
    assert_eq!(s.app.count("name = 'big.bin'", "objects"), 0);
    assert_eq!(s.app.count("1 = 1", "blobs"), blobs_before);
    if local {
        // Only the one kept file's bytes are stored.
        let stored: u64 = walk_sizes(&Path::new(&storage).join("blobs"));
        assert_eq!(stored, 10_000);
    }
    // The session that follows puts the whole file.
    ok(&s.sftp(&u, "put big.bin \"/My Folder/big.bin\"\n"));
    assert_eq!(rest_files(&s.app, &u.token, &root).len(), 2);
}

#[test]
fn a_small_put_refused_at_its_close_makes_nothing_and_leaves_its_bytes_to_the_sweep() {
    let s = start();
    let u = s.user("kai@example.com");
    let root = my_folder(&s.app, &u.token);
    let folder = coffer_tests::mkdir(&s.app, &u.token, &root, "going");
    let unused = "refs <= 0 AND unreferenced_at IS NOT NULL";
    let unused_before = s.app.count(unused, "blobs");

    // 60,000 bytes (one batch of writes, stored whole at the close) at 64 Kbit/s take about
    // seven seconds: the folder goes to the trash while they arrive, so the commit at the
    // close is refused after the bytes were stored.
    std::fs::write(s.local("late.bin"), pattern(60_000, 11)).unwrap();
    let mut child = s.sftp_slow(&u, "put late.bin \"/My Folder/going/late.bin\"\n", 64);
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the put ended before the folder went"
    );
    let r = s
        .app
        .rest("DELETE", &format!("/rest/folders/{folder}"), &u.token, None);
    assert_eq!(r.status, 204, "{}", r.text);
    let status = child.wait().unwrap();
    assert!(!status.success(), "the put was answered OK");

    assert_eq!(s.app.count("name = 'late.bin'", "objects"), 0);
    // The stored bytes belong to no file: marked for the blob sweep.
    assert_eq!(s.app.count(unused, "blobs"), unused_before + 1);
    // The same bytes into a live folder make the file.
    ok(&s.sftp(&u, "put late.bin \"/My Folder/late.bin\"\n"));
    let files = rest_files(&s.app, &u.token, &root);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_stored(&s, &u, &files[0].1, &pattern(60_000, 11), 1);
}

fn sha3_hex(b: &[u8]) -> String {
    use sha3::Digest;
    hex::encode(sha3::Sha3_256::digest(b))
}

fn md5_hex(b: &[u8]) -> String {
    use md5::Digest;
    hex::encode(md5::Md5::digest(b))
}

/// Asserts what REST shows of the file `id`: its size and both fingerprints are those of
/// `content`, its bytes are `content`, and it has `versions` versions.
fn assert_stored(s: &Server, u: &User, id: &str, content: &[u8], versions: usize) {
    let r = s
        .app
        .rest("GET", &format!("/rest/files/{id}"), &u.token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let f = r.json();
    assert_eq!(f["size"], content.len(), "{f}");
    assert_eq!(f["fingerprint"], sha3_hex(content), "{f}");
    let fps = f["fingerprints"].as_array().unwrap();
    assert!(
        fps.iter()
            .any(|p| p["algo"] == "md5" && p["hash"] == md5_hex(content)),
        "{fps:?}"
    );
    assert_eq!(rest_content(&s.app, &u.token, id), content);
    let r = s
        .app
        .rest("GET", &format!("/rest/files/{id}/versions"), &u.token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json()["data"].as_array().unwrap().len(),
        versions,
        "{}",
        r.text
    );
}

#[test]
fn many_puts_in_one_session_are_stored_whole_with_their_fingerprints() {
    let s = start();
    let u = s.user("ivan@example.com");
    let root = my_folder(&s.app, &u.token);
    let folder = coffer_tests::mkdir(&s.app, &u.token, &root, "many");
    // Small files of many sizes, and larger ones: exactly one of the server's write batches
    // (1 MiB), and one across several with a ragged end. All in one session.
    let mut sizes: Vec<usize> = (0..60).map(|i| 1 + i * 137).collect();
    sizes.push(1024 * 1024);
    sizes.push(2 * 1024 * 1024 + 32 * 1024 + 5);
    let mut batch = String::new();
    let mut contents = Vec::new();
    for (i, n) in sizes.iter().enumerate() {
        let name = format!("f{i}.bin");
        let content = pattern(*n, i as u8);
        std::fs::write(s.local(&name), &content).unwrap();
        batch += &format!("put {name} \"/My Folder/many/{name}\"\n");
        contents.push((name, content));
    }
    ok(&s.sftp(&u, &batch));
    let files = rest_files(&s.app, &u.token, &folder);
    assert_eq!(files.len(), contents.len(), "{files:?}");
    let id_of = |name: &str| {
        files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, id)| id.clone())
            .unwrap_or_else(|| panic!("{name} is missing"))
    };
    for (name, content) in &contents {
        assert_stored(&s, &u, &id_of(name), content, 1);
    }
    assert_eq!(
        s.app.count(
            "subject = 'filesystem.file.create' AND data LIKE '%\"protocol\":\"sftp\"%'",
            "events"
        ),
        contents.len() as i64
    );

    // The same names again, with other bytes, in another session: new versions of the same
    // files, fingerprinted anew.
    let again = [0usize, 7, 60, 61];
    let mut batch = String::new();
    let mut changed = Vec::new();
    for i in again {
        let (name, old) = &contents[i];
        let content = pattern(old.len() + 3, 200 - i as u8);
        std::fs::write(s.local(name), &content).unwrap();
        batch += &format!("put {name} \"/My Folder/many/{name}\"\n");
        changed.push((name.clone(), content));
    }
    ok(&s.sftp(&u, &batch));
    assert_eq!(rest_files(&s.app, &u.token, &folder).len(), contents.len());
    for (name, content) in &changed {
        assert_stored(&s, &u, &id_of(name), content, 2);
    }
    assert_eq!(s.events("filesystem.version.create"), again.len() as i64);
}

#[test]
fn a_small_put_in_short_writes_is_stored_whole_and_what_was_stored_early_goes_to_the_sweep() {
    let s = start();
    let u = s.user("lea@example.com");
    let root = my_folder(&s.app, &u.token);
    let unused = "refs <= 0 AND unreferenced_at IS NOT NULL";
    let unused_before = s.app.count(unused, "blobs");
    let blobs_before = s.app.count("1 = 1", "blobs");
    // Writes of 4 KiB: the first is taken for the file's only one and its bytes are stored at
    // once; more writes follow, so those bytes are no file's and the file is stored whole from
    // its last (shorter) write, which ends it.
    let content = pattern(4 * 4096 + 3_000, 21);
    std::fs::write(s.local("short.bin"), &content).unwrap();
    // And a file of one write, stored while the client sends its close.
    let one = pattern(3_000, 22);
    std::fs::write(s.local("one.bin"), &one).unwrap();
    ok(&s.sftp_with(
        &u,
        &["-B", "4096"],
        "put short.bin \"/My Folder/short.bin\"\nput one.bin \"/My Folder/one.bin\"\n",
    ));
    let files = rest_files(&s.app, &u.token, &root);
    assert_eq!(files.len(), 2, "{files:?}");
    for (name, id) in &files {
        let expected = if name == "short.bin" { &content } else { &one };
        assert_stored(&s, &u, id, expected, 1);
    }
    if coffer_tests::storage_name() == "local" {
        // The first 4 KiB, stored early, belong to no file: marked for the blob sweep.
        coffer_tests::wait_until("the early bytes marked unused", 30, || {
            s.app.count(unused, "blobs") == unused_before + 1
        });
        assert_eq!(s.app.count("1 = 1", "blobs"), blobs_before + 3);
    }
}

#[test]
fn my_folder_is_the_users_own_tree_even_beside_a_shared_folder_of_that_name() {
    let s = start();
    let owner = s.user("olga@example.com");
    let member = s.user("max@example.com");
    let owner_root = my_folder(&s.app, &owner.token);
    let shared = coffer_tests::mkdir(&s.app, &owner.token, &owner_root, "My Folder");
    let r = s.app.rest(
        "POST",
        &format!("/rest/folders/{shared}/members"),
        &owner.token,
        Some(json!({"userIds": [member.id], "roleId": 2})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    std::fs::write(s.local("own.txt"), b"own").unwrap();
    std::fs::write(s.local("theirs.txt"), b"theirs").unwrap();
    let out = ok(&s.sftp(
        &member,
        "put own.txt \"/My Folder/own.txt\"\nput theirs.txt \"/My Folder (2)/theirs.txt\"\nls -1 /\n",
    ));
    assert!(
        listed(&out, "My Folder") && listed(&out, "My Folder (2)"),
        "{out}"
    );
    let member_root = my_folder(&s.app, &member.token);
    let names = |folder: &str| -> Vec<String> {
        rest_files(&s.app, &owner.token, folder)
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    };
    assert_eq!(names(&shared), vec!["theirs.txt".to_string()]);
    let mine: Vec<String> = rest_files(&s.app, &member.token, &member_root)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(mine, vec!["own.txt".to_string()]);
}

/// The bytes of every file under `dir`.
fn walk_sizes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => walk_sizes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The EICAR anti-virus test file: harmless, detected by every scanner.
const EICAR: &[u8] = b"X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*";

#[test]
fn puts_are_scanned_like_rest_uploads_and_served_only_once_clean() {
    let spec = match std::env::var("COFFER_TEST_CLAMD") {
        Ok(v) if !v.is_empty() => v,
        _ => {
            eprintln!("COFFER_TEST_CLAMD is not set: SFTP scanning skipped (scripts/clamd-test-server.sh runs it)");
            return;
        }
    };
    let app = TestApp::builder()
        .config(|c| c.scanner = Some(spec))
        .spawn();
    let s = serve(app, coffer_sftp::Config::default());
    let u = s.user("ivy@example.com");
    let root = my_folder(&s.app, &u.token);
    std::fs::write(s.local("clean.txt"), b"nothing to see here").unwrap();
    std::fs::write(s.local("eicar.com"), EICAR).unwrap();
    ok(&s.sftp(
        &u,
        "put clean.txt \"/My Folder/clean.txt\"\nput eicar.com \"/My Folder/eicar.com\"\n",
    ));
    let files = rest_files(&s.app, &u.token, &root);
    let id_of = |name: &str| files.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let (clean, bad) = (id_of("clean.txt"), id_of("eicar.com"));
    for id in [&clean, &bad] {
        let r = s
            .app
            .rest("GET", &format!("/rest/files/{id}"), &u.token, None);
        assert_eq!(r.json()["avStatus"], "scanning", "{}", r.text);
    }
    // While being scanned, neither is read over SFTP (nor over REST).
    let err = failed(&s.sftp(&u, "get \"/My Folder/clean.txt\" early.txt\n"));
    assert!(!err.is_empty());
    assert!(!s.local("early.txt").exists());
    let r = s.app.rest(
        "GET",
        &format!("/rest/files/{clean}/content"),
        &u.token,
        None,
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ENTITY_NOT_SCANNED")
    );

    s.app.run_jobs();

    // Clean: served over SFTP byte for byte. EICAR: infected for good, as a REST upload is.
    ok(&s.sftp(&u, "get \"/My Folder/clean.txt\" later.txt\n"));
    assert_eq!(
        std::fs::read(s.local("later.txt")).unwrap(),
        b"nothing to see here"
    );
    let r = s
        .app
        .rest("GET", &format!("/rest/files/{bad}"), &u.token, None);
    assert_eq!(r.json()["avStatus"], "disallowed", "{}", r.text);
    let r = s
        .app
        .rest("GET", &format!("/rest/files/{bad}/content"), &u.token, None);
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ENTITY_VIRUS_FOUND")
    );
    failed(&s.sftp(&u, "get \"/My Folder/eicar.com\" bad.com\n"));
    assert!(!s.local("bad.com").exists());
    assert_eq!(
        s.app.count(
            "av_status = 'disallowed' AND av_signature LIKE '%EICAR%'",
            "file_versions"
        ),
        1
    );
}

#[test]
fn a_put_of_a_type_with_no_preview_is_settled_at_once_and_queues_no_job() {
    let s = start();
    let u = s.user("nadia@example.com");
    let root = my_folder(&s.app, &u.token);
    for (name, content) in [
        ("data.bin", pattern(4096, 9)),
        ("notes.txt", b"plain text is shown as it is".to_vec()),
    ] {
        std::fs::write(s.local(name), content).unwrap();
    }
    ok(&s.sftp(
        &u,
        "put data.bin \"/My Folder/data.bin\"\nput notes.txt \"/My Folder/notes.txt\"\n",
    ));
    let files = rest_files(&s.app, &u.token, &root);
    let id_of = |name: &str| {
        files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, id)| id.clone())
            .unwrap_or_else(|| panic!("{name} is missing: {files:?}"))
    };
    let (data, notes) = (id_of("data.bin"), id_of("notes.txt"));
    let preview = |id: &str| {
        s.app
            .rest("GET", &format!("/rest/files/{id}/preview"), &u.token, None)
            .json()
    };
    // No preview can be made of the bytes' type without a converter: `failed` before any job
    // ran, and only the text file's preview waits in the queue.
    let p = preview(&data);
    assert_eq!(p["status"], "failed", "{p}");
    let p = preview(&notes);
    assert_eq!(p["status"], "processing", "{p}");
    assert_eq!(
        s.app.count("kind = 'preview' AND state = 'queued'", "jobs"),
        1
    );
    assert_eq!(
        s.app.count(
            &format!(
                "kind = 'preview' AND payload IN \
                 (SELECT id FROM file_versions WHERE file_id = '{data}')"
            ),
            "jobs"
        ),
        0
    );
    // The queue decides the text file's as before.
    s.app.run_jobs();
    let p = preview(&notes);
    assert_eq!(p["status"], "preview", "{p}");
    assert_eq!(
        s.app.count("preview_status = 'pending'", "file_versions"),
        0
    );
}
