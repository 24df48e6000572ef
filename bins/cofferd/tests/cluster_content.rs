//! Content across nodes: `cofferd serve` processes on one database and one blob store (the S3
//! API server of `scripts/s3-test-server.sh` when `COFFER_TEST_S3_URL` is set, else one shared
//! directory). A chunked upload whose chunks go to different nodes completes, either node serves
//! the download, and a node killed with SIGKILL in the middle of an upload leaves no partial file
//! and a session another node completes.

use serde_json::Value;

mod common;

use common::{token, Node};

fn cli(dir: &std::path::Path, url: &str, storage: &str, args: &[&str]) -> Value {
    common::cli(dir, url, &["--storage-url", storage], args)
}

fn start(dir: &std::path::Path, url: &str, storage: &str, name: &str) -> Node {
    common::start(
        dir,
        url,
        &["--storage-url", storage],
        &[("COFFER_NODE_NAME", name)],
    )
}

/// A call answered with its status and body, whatever the status.
fn call(method: &str, url: &str, token: &str, body: Option<(&str, Vec<u8>)>) -> (u16, Vec<u8>) {
    let req = ureq::request(method, url)
        .set("Authorization", &format!("Bearer {token}"))
        .set("X-Coffer-Version", "28");
    let r = match body {
        Some((ct, b)) => req.set("Content-Type", ct).send_bytes(&b),
        None => req.call(),
    };
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = resp.status();
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut resp.into_reader(), &mut out).unwrap();
    (status, out)
}

fn json(b: &[u8]) -> Value {
    serde_json::from_slice(b).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(b)))
}

fn chunk(
    base: &str,
    token: &str,
    upload: i64,
    index: u32,
    data: &[u8],
    last: bool,
) -> (u16, Value) {
    let (idx, size) = (index.to_string(), data.len().to_string());
    let (ct, body) = coffer_tests::multipart(&[
        ("compressionMode", None, b"NORMAL"),
        ("compressionSize", None, size.as_bytes()),
        ("originalSize", None, size.as_bytes()),
        ("index", None, idx.as_bytes()),
        ("lastChunk", None, if last { b"1" } else { b"0" }),
        ("content", Some("blob"), data),
    ]);
    // The reference's spelling names a node; any node takes any chunk.
    let (s, b) = call(
        "POST",
        &format!("{base}/node-x/rest/uploads/{upload}"),
        token,
        Some((&ct, body)),
    );
    (s, json(&b))
}

fn initiate(base: &str, token: &str, folder: &str, name: &str, chunks: usize) -> i64 {
    let body = serde_json::json!({"filename": name, "totalChunks": chunks}).to_string();
    let (s, b) = call(
        "POST",
        &format!("{base}/rest/folders/{folder}/actions/initiateUpload"),
        token,
        Some(("application/json", body.into_bytes())),
    );
    assert_eq!(s, 201, "{}", String::from_utf8_lossy(&b));
    json(&b)["id"].as_i64().unwrap()
}

#[test]
fn chunks_go_to_any_node_and_any_node_serves_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _pg) = coffer_tests::fresh_database(dir.path());
    let url = url.expose().to_string();
    let storage = coffer_tests::test_storage_url(dir.path()).unwrap();
    let user = cli(
        dir.path(),
        &url,
        &storage,
        &[
            "user",
            "create",
            "--email",
            "files@example.com",
            "--name",
            "Files",
            "--password",
            "Cluster-Passw0rd",
        ],
    );
    let client = cli(
        dir.path(),
        &url,
        &storage,
        &[
            "client",
            "create",
            "--name",
            "files",
            "--redirect-uri",
            "https://files.example/cb",
            "--flows",
            "password",
        ],
    );
    let password = user["password"].as_str().unwrap();
    let a = start(dir.path(), &url, &storage, "node-a");
    let b = start(dir.path(), &url, &storage, "node-b");
    let t = token(&a.base, &client, "files@example.com", password);
    let (_, me) = call("GET", &format!("{}/rest/users/me", b.base), &t, None);
    let folder = json(&me)["syncdirId"].as_str().unwrap().to_string();

    let parts: Vec<Vec<u8>> = (0..3u8).map(|i| vec![b'k' + i; 300_000]).collect();
    let whole = parts.concat();
    let up = initiate(&a.base, &t, &folder, "spread.bin", 3);
    assert_eq!(chunk(&a.base, &t, up, 1, &parts[0], false).0, 200);
    assert_eq!(chunk(&b.base, &t, up, 2, &parts[1], false).0, 200);
    let (s, f) = chunk(&a.base, &t, up, 3, &parts[2], true);
    assert_eq!(s, 201, "{f}");
    let id = f["id"].as_str().unwrap();
    for node in [&a, &b] {
        let (s, bytes) = call(
            "GET",
            &format!("{}/rest/files/{id}/content", node.base),
            &t,
            None,
        );
        assert_eq!(s, 200);
        assert_eq!(bytes.len(), whole.len());
        assert!(bytes == whole, "node {} served other bytes", node.base);
    }

    // Each node keeps rendered listings; a change through one node shows at once on the other.
    let names = |node: &Node| -> Vec<String> {
        let (s, b) = call(
            "GET",
            &format!("{}/rest/folders/{folder}/children", node.base),
            &t,
            None,
        );
        assert_eq!(s, 200);
        json(&b)["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&b), ["spread.bin"]);
    assert_eq!(names(&b), ["spread.bin"]);
    let body = serde_json::json!({"name": "renamed.bin"}).to_string();
    let (s, r) = call(
        "PUT",
        &format!("{}/rest/files/{id}", a.base),
        &t,
        Some(("application/json", body.into_bytes())),
    );
    assert_eq!(s, 200, "{}", String::from_utf8_lossy(&r));
    assert_eq!(names(&b), ["renamed.bin"]);
}

#[test]
fn a_node_killed_mid_upload_leaves_no_partial_file_and_the_upload_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _pg) = coffer_tests::fresh_database(dir.path());
    let url = url.expose().to_string();
    let storage = coffer_tests::test_storage_url(dir.path()).unwrap();
    let user = cli(
        dir.path(),
        &url,
        &storage,
        &[
            "user",
            "create",
            "--email",
            "kill@example.com",
            "--name",
            "Kill",
            "--password",
            "Cluster-Passw0rd",
        ],
    );
    let client = cli(
        dir.path(),
        &url,
        &storage,
        &[
            "client",
            "create",
            "--name",
            "kill",
            "--redirect-uri",
            "https://kill.example/cb",
            "--flows",
            "password",
        ],
    );
    let password = user["password"].as_str().unwrap();
    let mut c = start(dir.path(), &url, &storage, "node-c");
    let t = token(&c.base, &client, "kill@example.com", password);
    let (_, me) = call("GET", &format!("{}/rest/users/me", c.base), &t, None);
    let folder = json(&me)["syncdirId"].as_str().unwrap().to_string();
    let up = initiate(&c.base, &t, &folder, "resumed.bin", 2);
    assert_eq!(chunk(&c.base, &t, up, 1, &[1u8; 100_000], false).0, 200);
    c.child.kill().unwrap();
    c.child.wait().unwrap();

    let a = start(dir.path(), &url, &storage, "node-a");
    // No partial file is visible.
    let (_, l) = call(
        "GET",
        &format!("{}/rest/folders/{folder}/files", a.base),
        &t,
        None,
    );
    assert_eq!(
        json(&l)["metadata"]["total"],
        0,
        "{}",
        String::from_utf8_lossy(&l)
    );
    // The session stands where the killed node left it, and completes here.
    let (_, s) = call("GET", &format!("{}/rest/uploads/{up}", a.base), &t, None);
    assert_eq!(json(&s)["uploadedChunks"], 1);
    let (st, f) = chunk(&a.base, &t, up, 2, &[2u8; 50_000], true);
    assert_eq!(st, 201, "{f}");
    assert_eq!(f["size"], 150_000);
    // The store holds exactly the file's blob: nothing of the interrupted upload is left over.
    let report = cli(dir.path(), &url, &storage, &["storage", "check"]);
    assert_eq!(report["missing"].as_array().unwrap().len(), 0, "{report}");
    assert_eq!(
        report["unreferenced"].as_array().unwrap().len(),
        0,
        "{report}"
    );
    assert_eq!(report["stored"], 1, "{report}");
}
