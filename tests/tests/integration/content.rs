//! The content core end to end over HTTP: system folders, folders, one-shot and chunked uploads,
//! versions, downloads with ranges, permissions through members, the trash, move and copy,
//! comments, quota, and the stored state after each call. Runs on SQLite or PostgreSQL
//! (`COFFER_TEST_POSTGRES_URL`) and on local or S3 storage (`COFFER_TEST_S3_URL`).

use coffer_domain::Role;
use coffer_tests::{me, mkdir, multipart, my_folder, upload_ok, TestApp};
use serde_json::{json, Value};
use sha3::Digest as _;

fn sha3_hex(b: &[u8]) -> String {
    hex::encode(sha3::Sha3_256::digest(b))
}

fn md5_hex(b: &[u8]) -> String {
    hex::encode(md5::Md5::digest(b))
}

/// The id of a folder role, by name, as `GET /rest/roles` lists it.
fn folder_role(app: &TestApp, token: &str, name: &str) -> i64 {
    let roles = app.rest("GET", "/rest/roles?type=d", token, None).json();
    roles["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no role {name}"))["id"]
        .as_i64()
        .unwrap()
}

fn objects(app: &TestApp) -> i64 {
    app.count("1 = 1", "objects")
}

#[test]
fn every_account_has_its_three_system_folders() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("sys@example.com", Role::User);
    let u = me(&app, &token);
    for (field, system) in [
        ("basedirId", "base"),
        ("syncdirId", "sync"),
        ("mydirId", "my"),
    ] {
        let id = u[field].as_str().unwrap();
        assert_eq!(
            app.count(
                &format!("id = '{id}' AND system = '{system}' AND kind = 'd'"),
                "objects"
            ),
            1,
            "{field}"
        );
    }
    let r = app.rest(
        "GET",
        &format!("/rest/folders/{}", u["syncdirId"].as_str().unwrap()),
        &token,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["name"], "My Folder");
    assert_eq!(r.json()["type"], "d");
    // The top level shows "My Folder", never the hidden mail folder nor the root.
    let top = app.rest("GET", "/rest/folders/top", &token, None).json();
    let names: Vec<&str> = top["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["My Folder"]);
    // The system folders are not deleted, renamed or moved.
    let sync = u["syncdirId"].as_str().unwrap();
    let r = app.rest("DELETE", &format!("/rest/folders/{sync}"), &token, None);
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ENTITY_IS_SYNC_DIR")
    );
    let base = u["basedirId"].as_str().unwrap();
    let r = app.rest(
        "PUT",
        &format!("/rest/folders/{base}"),
        &token,
        Some(json!({"name": "x"})),
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ENTITY_IS_BASE_DIR")
    );
    // No file in the root.
    let r = app.upload(&token, base, "a.txt", b"x");
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ENTITY_IS_BASE_DIR")
    );
}

#[test]
fn folders_are_created_named_listed_and_refused_bad_names() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("names@example.com", Role::User);
    let root = my_folder(&app, &token);
    let id = mkdir(&app, &token, &root, "Reports");
    // Names are unique per folder without regard to case.
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{root}/folders"),
        &token,
        Some(json!({"name": "reports"})),
    );
    assert_eq!((r.status, r.code().as_str()), (409, "ERR_ENTITY_EXISTS"));
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{root}/folders"),
        &token,
        Some(json!({"name": "reports", "rename": true})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["name"], "reports (1)");
    let before = objects(&app);
    let long = "x".repeat(256);
    for bad in [
        "a/b",
        "a\\b",
        "..",
        ".",
        "a\u{0}b",
        "tab\there",
        long.as_str(),
        "trailing.",
        " lead",
    ] {
        let r = app.rest(
            "POST",
            &format!("/rest/folders/{root}/folders"),
            &token,
            Some(json!({"name": bad})),
        );
        assert_eq!(r.status, 422, "{bad:?}: {}", r.text);
    }
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{root}/folders"),
        &token,
        Some(json!({"name": ""})),
    );
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(objects(&app), before, "a refused name stores nothing");
    // Rename, then list.
    let r = app.rest(
        "PUT",
        &format!("/rest/folders/{id}"),
        &token,
        Some(json!({"name": "Quarterly", "description": "Q reports"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["name"], "Quarterly");
    let l = app.rest(
        "GET",
        &format!("/rest/folders/{root}/children?orderBy=name:desc"),
        &token,
        None,
    );
    assert_eq!(l.status, 200, "{}", l.text);
    let names: Vec<String> = l.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["reports (1)", "Quarterly"]);
    assert_eq!(l.json()["metadata"]["total"], 2);
    // An unknown folder, or a malformed id, is 404.
    for bad in ["00000000-0000-4000-8000-000000000000", "nope"] {
        let r = app.rest("GET", &format!("/rest/folders/{bad}"), &token, None);
        assert_eq!((r.status, r.code().as_str()), (404, "ERR_ENTITY_NOT_FOUND"));
    }
    assert!(app.count("subject = 'filesystem.folder.create'", "events") >= 2);
}

#[test]
fn a_listing_over_a_slice_is_answered_whole_with_its_length_and_kept_alike() {
    // A folder page is sent in 64 KiB slices of one rendered body: a client sees one body
    // with its `Content-Length`, the same when the kept page is answered again.
    let app = TestApp::spawn();
    let (_, token) = app.user_token("slices@example.com", Role::User);
    let root = my_folder(&app, &token);
    let dir = mkdir(&app, &token, &root, "Many");
    let description = "d".repeat(900);
    for i in 0..80 {
        let r = app.rest(
            "POST",
            &format!("/rest/folders/{dir}/folders"),
            &token,
            Some(json!({"name": format!("folder {i:03}"), "description": description})),
        );
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let path = format!("/rest/folders/{dir}/children?limit=100");
    let first = app.rest("GET", &path, &token, None);
    assert_eq!(first.status, 200, "{}", first.text);
    assert!(first.bytes.len() > 64 * 1024, "{} bytes", first.bytes.len());
    assert_eq!(
        first.header("content-length"),
        Some(first.bytes.len().to_string().as_str())
    );
    assert_eq!(first.header("transfer-encoding"), None);
    assert_eq!(first.header("content-type"), Some("application/json"));
    let body = first.json();
    assert_eq!(body["metadata"]["total"], 80);
    assert_eq!(body["data"].as_array().unwrap().len(), 80);
    assert_eq!(body["data"][79]["name"], "folder 079");
    assert_eq!(body["data"][0]["description"], description.as_str());
    let again = app.rest("GET", &path, &token, None);
    assert_eq!(again.status, 200);
    assert_eq!(again.bytes, first.bytes);
    assert_eq!(
        again.header("content-length"),
        Some(first.bytes.len().to_string().as_str())
    );
}

#[test]
fn one_shot_upload_versions_and_download_with_ranges() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("files@example.com", Role::User);
    let root = my_folder(&app, &token);
    let content: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let f = upload_ok(&app, &token, &root, "data.bin", &content);
    let id = f["id"].as_str().unwrap().to_string();
    assert_eq!(f["type"], "f");
    assert_eq!(f["name"], "data.bin");
    assert_eq!(f["size"], content.len());
    assert_eq!(f["fingerprint"], sha3_hex(&content));
    let fps = f["fingerprints"].as_array().unwrap();
    assert!(
        fps.iter()
            .any(|p| p["algo"] == "md5" && p["hash"] == md5_hex(&content)),
        "{fps:?}"
    );
    assert_eq!(f["avStatus"], "allowed");
    // The whole content, as stored.
    let r = app.rest("GET", &format!("/rest/files/{id}/content"), &token, None);
    assert_eq!(r.status, 200);
    assert_eq!(r.bytes, content);
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert!(
        r.header("content-disposition")
            .unwrap()
            .starts_with("attachment"),
        "{:?}",
        r.headers
    );
    let etag = r.header("etag").unwrap().to_string();
    // A range.
    let auth = format!("Bearer {token}");
    let r = app.send(
        "GET",
        &format!("/rest/files/{id}/content"),
        &[
            ("X-Coffer-Version", "28"),
            ("Authorization", &auth),
            ("Range", "bytes=10-19"),
        ],
        None,
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.bytes, &content[10..20]);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes 10-19/{}", content.len()).as_str())
    );
    let r = app.send(
        "GET",
        &format!("/rest/files/{id}/content"),
        &[
            ("X-Coffer-Version", "28"),
            ("Authorization", &auth),
            ("Range", "bytes=-5"),
        ],
        None,
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.bytes, &content[content.len() - 5..]);
    let r = app.send(
        "GET",
        &format!("/rest/files/{id}/content"),
        &[
            ("X-Coffer-Version", "28"),
            ("Authorization", &auth),
            ("Range", "bytes=999999-"),
        ],
        None,
    );
    assert_eq!(r.status, 416);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes */{}", content.len()).as_str())
    );
    let r = app.send(
        "GET",
        &format!("/rest/files/{id}/content"),
        &[
            ("X-Coffer-Version", "28"),
            ("Authorization", &auth),
            ("If-None-Match", &etag),
        ],
        None,
    );
    assert_eq!(r.status, 304);
    // The same name again is a new version; with disableAutoVersion it is refused.
    let v2 = upload_ok(&app, &token, &root, "DATA.bin", b"second");
    assert_eq!(v2["id"], id, "same file, case-insensitively");
    assert_eq!(v2["size"], 6);
    let vs = app.rest("GET", &format!("/rest/files/{id}/versions"), &token, None);
    assert_eq!(vs.status, 200, "{}", vs.text);
    let list = vs.json()["data"].as_array().unwrap().clone();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["versionNumber"], 2);
    // A version's fingerprints are plain strings, SHA3-256 then MD5 (a file's are objects).
    assert_eq!(
        list[1]["fingerprints"],
        json!([sha3_hex(&content), md5_hex(&content)])
    );
    let first = list[1]["id"].as_str().unwrap();
    let r = app.rest(
        "GET",
        &format!("/rest/files/{id}/versions/{first}/content"),
        &token,
        None,
    );
    assert_eq!(r.bytes, content, "an older version stays readable");
    let (ct, body) = multipart(&[
        ("disableAutoVersion", None, b"true"),
        ("body", Some("data.bin"), b"third"),
    ]);
    let r = app.rest_body(
        "POST",
        &format!("/rest/folders/{root}/actions/file"),
        &token,
        &ct,
        body,
    );
    assert_eq!((r.status, r.code().as_str()), (409, "ERR_ENTITY_EXISTS"));
    assert_eq!(app.count(&format!("file_id = '{id}'"), "file_versions"), 2);
    // A new version by id.
    let (ct, body) = multipart(&[("body", Some("ignored.txt"), b"fourth")]);
    let r = app.rest_body(
        "POST",
        &format!("/rest/files/{id}/versions"),
        &token,
        &ct,
        body,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["name"], "data.bin");
    assert_eq!(
        app.rest("GET", &format!("/rest/files/{id}/content"), &token, None)
            .bytes,
        b"fourth"
    );
    // Identical content is stored once.
    upload_ok(&app, &token, &root, "copy-of-data.bin", &content);
    assert_eq!(
        app.count(&format!("id = '{}'", sha3_hex(&content)), "blobs"),
        1
    );
    assert_eq!(
        app.count(
            &format!("id = '{}' AND refs = 2", sha3_hex(&content)),
            "blobs"
        ),
        1
    );
    assert!(app.count("subject = 'filesystem.file.download'", "events") >= 4);
    // A body that is not multipart.
    let r = app.rest_body(
        "POST",
        &format!("/rest/folders/{root}/actions/file"),
        &token,
        "application/octet-stream",
        b"raw".to_vec(),
    );
    assert_eq!(r.status, 400, "{}", r.text);
}

/// A chunk as sent: `(index, compressionMode, bytes, originalSize, lastChunk)`.
fn chunk(
    app: &TestApp,
    token: &str,
    upload: i64,
    c: (u32, &str, &[u8], usize, bool),
) -> coffer_tests::Resp {
    let (index, mode, data, original, last) = c;
    let idx = index.to_string();
    let csize = data.len().to_string();
    let osize = original.to_string();
    let (ct, body) = multipart(&[
        ("compressionMode", None, mode.as_bytes()),
        ("compressionSize", None, csize.as_bytes()),
        ("originalSize", None, osize.as_bytes()),
        ("index", None, idx.as_bytes()),
        ("lastChunk", None, if last { b"1" } else { b"0" }),
        ("content", Some("blob"), data),
    ]);
    app.rest_body("POST", &format!("/rest/uploads/{upload}"), token, &ct, body)
}

fn gzip(b: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

fn zlib(b: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

#[test]
fn chunked_upload_in_order_with_compression_and_retries() {
    let app = TestApp::spawn();
    let (uid, token) = app.user_token("chunks@example.com", Role::User);
    let root = my_folder(&app, &token);
    let parts: Vec<Vec<u8>> = (0..3).map(|i| vec![b'a' + i as u8; 70_000]).collect();
    let whole: Vec<u8> = parts.concat();
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{root}/actions/initiateUpload"),
        &token,
        Some(json!({"filename": "big.txt", "totalSize": whole.len(), "totalChunks": 3})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let u = r.json();
    let id = u["id"].as_i64().unwrap();
    assert_eq!(u["uri"], format!("rest/uploads/{id}"));
    assert_eq!(u["uploadUrl"], format!("{}/rest/uploads/{id}", app.base));
    assert_eq!(u["userId"], uid);
    // Out of order: refused, the session survives.
    let r = chunk(
        &app,
        &token,
        id,
        (2, "NORMAL", &parts[1], parts[1].len(), false),
    );
    assert_eq!(r.status, 422, "{}", r.text);
    let r = chunk(
        &app,
        &token,
        id,
        (1, "NORMAL", &parts[0], parts[0].len(), false),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["uploadedChunks"], 1);
    // The repeat of the last chunk is a retry.
    let r = chunk(
        &app,
        &token,
        id,
        (1, "NORMAL", &parts[0], parts[0].len(), false),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["uploadedChunks"], 1);
    // Wrong declared sizes, an unknown mode, and a bomb: 422, nothing recorded.
    let gz = gzip(&parts[1]);
    let r = chunk(&app, &token, id, (2, "GZIP", &gz, 10, false));
    assert_eq!(r.status, 422, "{}", r.text);
    let r = chunk(&app, &token, id, (2, "BROTLI", &gz, parts[1].len(), false));
    assert_eq!(
        (r.status, r.code().as_str()),
        (422, "ERR_INPUT_NOT_IN_LIST")
    );
    let r = chunk(
        &app,
        &token,
        id,
        (2, "NORMAL", &parts[1], parts[1].len() + 1, false),
    );
    assert_eq!(r.status, 422, "{}", r.text);
    let s = app.rest("GET", &format!("/rest/uploads/{id}"), &token, None);
    assert_eq!(s.json()["uploadedChunks"], 1);
    let r = chunk(&app, &token, id, (2, "GZIP", &gz, parts[1].len(), false));
    assert_eq!(r.status, 200, "{}", r.text);
    let z = zlib(&parts[2]);
    let r = chunk(&app, &token, id, (3, "ZLIB", &z, parts[2].len(), true));
    assert_eq!(r.status, 201, "{}", r.text);
    let f = r.json();
    assert_eq!(f["name"], "big.txt");
    assert_eq!(f["size"], whole.len());
    assert_eq!(f["fingerprint"], sha3_hex(&whole));
    let fid = f["id"].as_str().unwrap().to_string();
    assert_eq!(
        app.rest("GET", &format!("/rest/files/{fid}/content"), &token, None)
            .bytes,
        whole
    );
    // The last chunk again answers the same file; a new chunk is refused.
    let r = chunk(&app, &token, id, (3, "ZLIB", &z, parts[2].len(), true));
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["id"], fid);
    assert_eq!(app.count(&format!("file_id = '{fid}'"), "file_versions"), 1);
    // Finished sessions are not listed; another user's session is 404.
    let l = app.rest("GET", "/rest/uploads", &token, None);
    assert_eq!(l.json()["metadata"]["total"], 0, "{}", l.text);
    let (_, other) = app.user_token("other-chunks@example.com", Role::User);
    let r2 = app.rest(
        "POST",
        &format!("/rest/folders/{root}/actions/initiateUpload"),
        &token,
        Some(json!({"filename": "x.txt", "totalChunks": 1})),
    );
    let id2 = r2.json()["id"].as_i64().unwrap();
    assert_eq!(
        app.rest("GET", &format!("/rest/uploads/{id2}"), &other, None)
            .status,
        404
    );
    assert_eq!(
        chunk(&app, &other, id2, (1, "NORMAL", b"x", 1, true)).status,
        404
    );
    // JSON chunks with base64 content, on the reference's host-prefixed path.
    use base64::Engine as _;
    let r = app.rest("POST", &format!("/node-1/rest/uploads/{id2}"), &token, Some(json!({
        "compressionMode": "NORMAL", "compressionSize": 5, "originalSize": 5, "index": 1, "lastChunk": 1,
        "content": base64::engine::general_purpose::STANDARD.encode(b"hello"),
    })));
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["size"], 5);
    // Abort: the session goes.
    let r3 = app.rest(
        "POST",
        &format!("/rest/folders/{root}/actions/initiateUpload"),
        &token,
        Some(json!({"filename": "y.txt"})),
    );
    let id3 = r3.json()["id"].as_i64().unwrap();
    assert_eq!(
        chunk(&app, &token, id3, (1, "NORMAL", b"part", 4, false)).status,
        200
    );
    assert_eq!(
        app.rest("DELETE", &format!("/rest/uploads/{id3}"), &token, None)
            .status,
        204
    );
    assert_eq!(app.count(&format!("id = {id3}"), "uploads"), 0);
}

/// Chunks of several MiB (each hashed on as the next arrives): a chunk refused after its bytes
/// went through, its retry, a pause between chunks, and the stored fingerprints are those of
/// the bytes sent; an upload left half-way is swept with its staged bytes.
#[test]
fn large_chunks_after_a_refusal_and_a_pause_store_the_fingerprints_of_their_bytes() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("large-chunks@example.com", Role::User);
    let root = my_folder(&app, &token);
    let mib = 1 << 20;
    let parts: Vec<Vec<u8>> = [3 * mib + 17, 2 * mib, 5_000]
        .iter()
        .enumerate()
        .map(|(p, &len)| (0..len).map(|i| ((i * 7 + p * 13) % 251) as u8).collect())
        .collect();
    let whole: Vec<u8> = parts.concat();
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{root}/actions/initiateUpload"),
        &token,
        Some(json!({"filename": "large.bin", "totalSize": whole.len(), "totalChunks": 3})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["id"].as_i64().unwrap();
    let send = |index: u32, data: &[u8], last: bool| {
        chunk(&app, &token, id, (index, "NORMAL", data, data.len(), last))
    };
    let r = send(1, &parts[0], false);
    assert_eq!(r.status, 200, "{}", r.text);
    // Chunk 2 refused once all its bytes went through (a declared size it does not have):
    // nothing recorded, and the next attempt continues from chunk 1.
    let r = chunk(
        &app,
        &token,
        id,
        (2, "NORMAL", &parts[1], parts[1].len() + 1, false),
    );
    assert_eq!(r.status, 422, "{}", r.text);
    let r = send(2, &parts[1], false);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["uploadedChunks"], 2);
    // Its repeat is a retry: answered, nothing staged again.
    let r = send(2, &parts[1], false);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["uploadedChunks"], 2);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let r = send(3, &parts[2], true);
    assert_eq!(r.status, 201, "{}", r.text);
    let f = r.json();
    assert_eq!(f["size"], whole.len());
    assert_eq!(f["fingerprint"], sha3_hex(&whole));
    let fps = f["fingerprints"].as_array().unwrap();
    assert!(
        fps.iter()
            .any(|p| p["algo"] == "md5" && p["hash"] == md5_hex(&whole)),
        "{fps:?}"
    );
    assert_eq!(
        app.count(&format!("id = '{}'", sha3_hex(&whole)), "blobs"),
        1
    );
    let fid = f["id"].as_str().unwrap();
    let got = app.rest("GET", &format!("/rest/files/{fid}/content"), &token, None);
    assert!(
        got.bytes == whole,
        "the stored bytes differ from the ones sent"
    );

    // Left after its first chunk, expired and swept: the session and its staging go.
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{root}/actions/initiateUpload"),
        &token,
        Some(json!({"filename": "left.bin", "totalChunks": 2})),
    );
    let left = r.json()["id"].as_i64().unwrap();
    let r = chunk(
        &app,
        &token,
        left,
        (1, "NORMAL", &parts[0], parts[0].len(), false),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(app.ctx.storage.list_staged()).unwrap().len(), 1);
    app.execute(&format!(
        "UPDATE uploads SET expires_at = 1 WHERE id = {left}"
    ));
    coffer_service::content::jobs::schedule_periodic(&app.ctx).unwrap();
    app.run_jobs();
    assert_eq!(app.count(&format!("id = {left}"), "uploads"), 0);
    assert!(rt
        .block_on(app.ctx.storage.list_staged())
        .unwrap()
        .is_empty());
    assert_eq!(app.count("state = 'failed'", "jobs"), 0);
}

#[test]
fn quota_and_size_limits_refuse_before_storing() {
    let app = TestApp::spawn();
    let (uid, token) = app.user_token("quota@example.com", Role::User);
    let root = my_folder(&app, &token);
    coffer_service::identity::settings::set(&app.ctx, "storageQuota", "1000", None).unwrap();
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{root}/actions/initiateUpload"),
        &token,
        Some(json!({"filename": "big.bin", "totalSize": 5000})),
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (413, "ERR_SYSTEM_NO_STORAGE_AVAILABLE")
    );
    assert_eq!(app.count("1 = 1", "uploads"), 0);
    let r = app.upload(&token, &root, "big.bin", &vec![7u8; 200_000]);
    assert_eq!(
        (r.status, r.code().as_str()),
        (413, "ERR_SYSTEM_NO_STORAGE_AVAILABLE")
    );
    assert_eq!(app.count("kind = 'f'", "objects"), 0);
    assert_eq!(app.count("1 = 1", "blobs"), 0);
    upload_ok(&app, &token, &root, "small.bin", &[1u8; 600]);
    let q = app.rest("GET", "/rest/users/me/quota", &token, None).json();
    assert_eq!(q["folder_quota_used"], 600, "{q}");
    assert_eq!(q["folder_quota_allowed"], 1000);
    // A second file would go past the quota.
    let r = app.upload(&token, &root, "more.bin", &[2u8; 600]);
    assert_eq!(r.status, 413, "{}", r.text);
    coffer_service::identity::settings::set(&app.ctx, "storageQuota", "100000000", None).unwrap();
    coffer_service::identity::settings::set(&app.ctx, "maxUploadSize", "1000", None).unwrap();
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{root}/actions/initiateUpload"),
        &token,
        Some(json!({"filename": "big.bin", "totalSize": 5000})),
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (422, "ERR_LICENSE_MAX_UPLOAD_SIZE")
    );
    let _ = uid;
}

#[test]
fn members_reach_what_their_role_allows_and_others_nothing() {
    let app = TestApp::spawn();
    let (_, owner) = app.user_token("owner@example.com", Role::User);
    let (viewer_id, viewer) = app.user_token("viewer@example.com", Role::User);
    let (dl_id, downloader) = app.user_token("downloader@example.com", Role::User);
    let root = my_folder(&app, &owner);
    let shared = mkdir(&app, &owner, &root, "Shared");
    let inner = mkdir(&app, &owner, &shared, "Inner");
    let file = upload_ok(&app, &owner, &inner, "doc.pdf", b"%PDF-1.4 test")["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Strangers learn nothing.
    for path in [
        format!("/rest/folders/{shared}"),
        format!("/rest/files/{file}"),
        format!("/rest/files/{file}/content"),
        format!("/rest/folders/{inner}/children"),
    ] {
        let r = app.rest("GET", &path, &viewer, None);
        assert_eq!(
            (r.status, r.code().as_str()),
            (404, "ERR_ENTITY_NOT_FOUND"),
            "{path}"
        );
    }
    let role_id = |name: &str| folder_role(&app, &owner, name);
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{shared}/members"),
        &owner,
        Some(json!({"userIds": [viewer_id], "roleId": role_id("Viewer")})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{shared}/members"),
        &owner,
        Some(json!({"emails": ["downloader@example.com"], "roleId": role_id("Downloader")})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    // Inherited down the tree: the viewer sees the file, may not download it.
    let r = app.rest("GET", &format!("/rest/files/{file}"), &viewer, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.rest("GET", &format!("/rest/files/{file}/content"), &viewer, None);
    assert_eq!((r.status, r.code().as_str()), (403, "ERR_ACCESS_USER"));
    let r = app.upload(&viewer, &inner, "mine.txt", b"x");
    assert_eq!((r.status, r.code().as_str()), (403, "ERR_ACCESS_USER"));
    let r = app.rest(
        "GET",
        &format!("/rest/files/{file}/content"),
        &downloader,
        None,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.bytes, b"%PDF-1.4 test");
    let r = app.rest("DELETE", &format!("/rest/files/{file}"), &downloader, None);
    assert_eq!((r.status, r.code().as_str()), (403, "ERR_ACCESS_USER"));
    // The shared folder is on the member's top level and in their shared list.
    let top = app.rest("GET", "/rest/folders/top", &viewer, None).json();
    assert!(
        top["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["id"] == shared.as_str()),
        "{top}"
    );
    let s = app
        .rest("GET", "/rest/folders/shared", &viewer, None)
        .json();
    assert_eq!(s["metadata"]["total"], 1, "{s}");
    let m = app
        .rest(
            "GET",
            &format!("/rest/folders/{inner}/members"),
            &owner,
            None,
        )
        .json();
    assert_eq!(m["data"].as_array().unwrap().len(), 2, "{m}");
    // A member cannot manage members; removal takes the access away again.
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{shared}/members"),
        &viewer,
        Some(json!({"userIds": [dl_id], "roleId": 1})),
    );
    assert_eq!((r.status, r.code().as_str()), (403, "ERR_ACCESS_USER"));
    let r = app.rest(
        "DELETE",
        &format!("/rest/folders/{inner}/members/{viewer_id}"),
        &owner,
        None,
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ENTITY_INHERITED_MEMBER_NOT_MODIFIABLE")
    );
    let r = app.rest(
        "DELETE",
        &format!("/rest/folders/{shared}/members/{viewer_id}"),
        &owner,
        None,
    );
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(
        app.rest("GET", &format!("/rest/files/{file}"), &viewer, None)
            .status,
        404
    );
    assert_eq!(
        app.count("subject = 'filesystem.member.create'", "events"),
        2
    );
}

#[test]
fn shared_lists_members_and_roles_take_the_vendors_filters_and_orders() {
    let app = TestApp::spawn();
    let (_, owner) = app.user_token("owner@example.com", Role::User);
    let (zed, tz) = app.user_token("zed@example.com", Role::User);
    let (amy, _) = app.user_token("amy@example.com", Role::User);
    let (_, tm) = app.user_token("max@example.com", Role::User);
    let root = my_folder(&app, &owner);
    let reports = mkdir(&app, &owner, &root, "Quarterly Reports");
    let plans = mkdir(&app, &owner, &root, "Plans");
    let inner = mkdir(&app, &owner, &reports, "Q3");
    let add = |folder: &str, query: &str, body: Value| {
        app.rest(
            "POST",
            &format!("/rest/folders/{folder}/members{query}"),
            &owner,
            Some(body),
        )
    };
    let (viewer, collaborator) = (
        folder_role(&app, &owner, "Viewer"),
        folder_role(&app, &owner, "Collaborator"),
    );
    assert_eq!(
        add(&reports, "", json!({"userIds": [zed], "roleId": viewer})).status,
        201
    );
    assert_eq!(
        add(
            &reports,
            "",
            json!({"userIds": [amy], "roleId": collaborator})
        )
        .status,
        201
    );
    assert_eq!(
        add(&plans, "", json!({"userIds": [zed], "roleId": viewer})).status,
        201
    );

    // `name:contains` and `name` on the shared list, case-insensitively.
    let shared = |query: &str| {
        let r = app.rest("GET", &format!("/rest/folders/shared{query}"), &tz, None);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(shared(""), ["Plans", "Quarterly Reports"]);
    assert_eq!(shared("?name:contains=REPORT"), ["Quarterly Reports"]);
    assert_eq!(shared("?name=plans"), ["Plans"]);
    assert!(shared("?name:contains=nothing").is_empty());

    // A member's tree starts at the folder they were given.
    let t = app.rest(
        "GET",
        &format!("/rest/folders/{inner}/tree?includeOwner=true"),
        &tz,
        None,
    );
    assert_eq!(
        t.json()["data"],
        json!([{"id": reports, "name": "Quarterly Reports"}, {"id": inner, "name": "Q3"}])
    );

    // Members by role and ordered by address.
    let members = |query: &str| {
        let r = app.rest(
            "GET",
            &format!("/rest/folders/{inner}/members{query}"),
            &owner,
            None,
        );
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["email"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        members("?orderBy=email:asc"),
        ["amy@example.com", "zed@example.com"]
    );
    assert_eq!(
        members("?orderBy=email:desc"),
        ["zed@example.com", "amy@example.com"]
    );
    assert_eq!(
        members("?orderBy=email:asc&offset=1&limit=1"),
        ["zed@example.com"]
    );
    assert_eq!(members(&format!("?roleId={viewer}")), ["zed@example.com"]);
    assert_eq!(
        members(&format!(
            "?roleId:in={viewer},{collaborator}&orderBy=rank:asc"
        )),
        ["amy@example.com", "zed@example.com"]
    );
    let r = app.rest(
        "GET",
        &format!("/rest/folders/{inner}/members?orderBy=colour:asc"),
        &owner,
        None,
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "ERR_REQUEST_INVALID_FILTER")
    );

    // `partialSuccess=false`: one who cannot be added fails the call and nobody is added.
    let before = app.count("1 = 1", "object_members");
    let r = add(
        &plans,
        "?partialSuccess=false",
        json!({"emails": ["max@example.com", "nobody@example.com"], "roleId": viewer}),
    );
    assert_eq!((r.status, r.code().as_str()), (404, "ERR_ENTITY_NOT_FOUND"));
    assert_eq!(r.json()["failedIds"], json!(["nobody@example.com"]));
    assert_eq!(app.count("1 = 1", "object_members"), before);
    assert_eq!(
        app.rest("GET", &format!("/rest/folders/{plans}"), &tm, None)
            .status,
        404
    );
    // `true` (and absent): who can be added is, the rest reported.
    let r = add(
        &plans,
        "?partialSuccess=true",
        json!({"emails": ["max@example.com", "nobody@example.com"], "roleId": viewer}),
    );
    assert_eq!(r.status, 207, "{}", r.text);
    assert_eq!(r.json()["errors"][0]["id"], "nobody@example.com");
    assert_eq!(
        app.rest("GET", &format!("/rest/folders/{plans}"), &tm, None)
            .status,
        200
    );
    let r = add(
        &plans,
        "?partialSuccess=perhaps",
        json!({"userIds": [amy], "roleId": viewer}),
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (422, "ERR_INPUT_NOT_BOOLEAN")
    );

    // Roles by rank, and by name.
    let roles = |query: &str| {
        let r = app.rest("GET", &format!("/rest/roles{query}"), &owner, None);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["data"].as_array().unwrap().clone()
    };
    let ranks: Vec<i64> = roles("?orderBy=rank:desc")
        .iter()
        .map(|r| r["rank"].as_i64().unwrap())
        .collect();
    let mut sorted = ranks.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(ranks, sorted);
    assert_eq!(ranks.len(), roles("").len());
    let names: Vec<String> = roles("?type=d&orderBy=name:asc")
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "Collaborator",
            "Downloader",
            "Manager",
            "Uploader",
            "Viewer"
        ]
    );
}

#[test]
fn trash_recover_move_and_copy() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("trash@example.com", Role::User);
    let root = my_folder(&app, &token);
    let a = mkdir(&app, &token, &root, "A");
    let b = mkdir(&app, &token, &a, "B");
    let f = upload_ok(&app, &token, &b, "note.txt", b"hello")["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Into itself or its own child: refused.
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{a}/actions/move"),
        &token,
        Some(json!({"destinationFolderId": a})),
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (422, "ERR_CANNOT_MOVE_FOLDER_TO_SELF")
    );
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{a}/actions/move"),
        &token,
        Some(json!({"destinationFolderId": b})),
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (422, "ERR_CANNOT_MOVE_TO_CHILD")
    );
    // Copy: new objects, the same blob.
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{a}/actions/copy"),
        &token,
        Some(json!({"destinationFolderId": root})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["name"], "A (1)");
    assert_eq!(
        app.count(
            &format!("id = '{}' AND refs = 2", sha3_hex(b"hello")),
            "blobs"
        ),
        1
    );
    // Move the folder B up.
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{b}/actions/move"),
        &token,
        Some(json!({"destinationFolderId": root})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["parentId"], root);
    let p = app
        .rest("GET", &format!("/rest/files/{f}/path"), &token, None)
        .json();
    let names: Vec<&str> = p["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["My Folder", "B", "note.txt"]);
    // Move a file back into A.
    let r = app.rest(
        "POST",
        "/rest/files/actions/move",
        &token,
        Some(json!({"ids": [f], "destinationFolderId": a})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["parentId"], a);
    // Delete A: it and the file go to the trash.
    assert_eq!(
        app.rest("DELETE", &format!("/rest/folders/{a}"), &token, None)
            .status,
        204
    );
    assert_eq!(app.count(&format!("trashed_with = '{a}'"), "objects"), 2);
    let r = app.rest("GET", &format!("/rest/files/{f}/content"), &token, None);
    assert_eq!((r.status, r.code().as_str()), (403, "ERR_ENTITY_DELETED"));
    let r = app.rest("GET", &format!("/rest/folders/{a}/children"), &token, None);
    assert_eq!((r.status, r.code().as_str()), (403, "ERR_ENTITY_DELETED"));
    let t = app
        .rest(
            "GET",
            &format!("/rest/folders/{root}/children?deleted=true"),
            &token,
            None,
        )
        .json();
    assert_eq!(t["metadata"]["total"], 1, "{t}");
    // The file went with its folder: recover the folder.
    let r = app.rest(
        "PATCH",
        &format!("/rest/files/{f}/actions/recover"),
        &token,
        None,
    );
    assert_eq!((r.status, r.code().as_str()), (403, "ERR_ENTITY_DELETED"));
    let r = app.rest(
        "PATCH",
        &format!("/rest/folders/{a}/actions/recover"),
        &token,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        app.rest("GET", &format!("/rest/files/{f}/content"), &token, None)
            .bytes,
        b"hello"
    );
    // A name taken meanwhile blocks recovery.
    assert_eq!(
        app.rest("DELETE", &format!("/rest/files/{f}"), &token, None)
            .status,
        204
    );
    upload_ok(&app, &token, &a, "note.txt", b"new");
    let r = app.rest(
        "PATCH",
        &format!("/rest/files/{f}/actions/recover"),
        &token,
        None,
    );
    assert_eq!((r.status, r.code().as_str()), (409, "ERR_ENTITY_EXISTS"));
}

#[test]
fn comments_on_files() {
    let app = TestApp::spawn();
    let (uid, token) = app.user_token("comments@example.com", Role::User);
    let root = my_folder(&app, &token);
    let f = upload_ok(&app, &token, &root, "c.txt", b"c")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.rest(
        "POST",
        &format!("/rest/files/{f}/comments"),
        &token,
        Some(json!({"contents": "Looks good\nShip it"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let c = r.json();
    assert_eq!(c["objectId"], f);
    assert_eq!(c["userId"], uid);
    let r = app.rest(
        "POST",
        &format!("/rest/files/{f}/comments"),
        &token,
        Some(json!({"contents": "reply", "parentId": c["id"]})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["parentId"], c["id"]);
    let r = app.rest(
        "POST",
        &format!("/rest/files/{f}/comments"),
        &token,
        Some(json!({"contents": "  "})),
    );
    assert_eq!(r.status, 422);
    let r = app.rest(
        "POST",
        &format!("/rest/files/{f}/comments"),
        &token,
        Some(json!({"contents": "x", "parentId": 999999})),
    );
    assert_eq!(r.status, 422);
    let l = app
        .rest("GET", &format!("/rest/files/{f}/comments"), &token, None)
        .json();
    assert_eq!(l["metadata"]["total"], 2);
    assert_eq!(app.count("subject = 'comment.comment.create'", "events"), 2);
}

#[test]
fn jobs_sweep_expired_uploads_and_purge_the_trash() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("jobs@example.com", Role::User);
    let root = my_folder(&app, &token);
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{root}/actions/initiateUpload"),
        &token,
        Some(json!({"filename": "gone.txt", "totalChunks": 2})),
    );
    let id = r.json()["id"].as_i64().unwrap();
    assert_eq!(
        chunk(&app, &token, id, (1, "NORMAL", b"part", 4, false)).status,
        200
    );
    let f = upload_ok(&app, &token, &root, "old.txt", b"old content")["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        app.rest("DELETE", &format!("/rest/files/{f}"), &token, None)
            .status,
        204
    );
    // Time passes: the session expired, the trash is past its retention.
    app.execute(&format!(
        "UPDATE uploads SET expires_at = 1 WHERE id = {id}"
    ));
    app.execute(&format!(
        "UPDATE objects SET deleted_at = 1 WHERE id = '{f}'"
    ));
    coffer_service::content::jobs::schedule_periodic(&app.ctx).unwrap();
    app.run_jobs();
    assert_eq!(app.count(&format!("id = {id}"), "uploads"), 0);
    assert_eq!(
        app.count(&format!("id = '{f}' AND perm_deleted = TRUE"), "objects"),
        1
    );
    assert_eq!(
        app.count(
            &format!("id = '{}' AND refs = 0", sha3_hex(b"old content")),
            "blobs"
        ),
        1
    );
    assert_eq!(
        app.rest("GET", &format!("/rest/files/{f}"), &token, None)
            .status,
        404
    );
    assert_eq!(app.count("state = 'failed'", "jobs"), 0);
    // Previews were decided.
    assert_eq!(app.count("preview_status = 'pending'", "file_versions"), 0);
    // Past the grace period the sweep frees the purged file's blob, row and bytes.
    let key = sha3_hex(b"old content");
    app.execute(&format!(
        "UPDATE blobs SET unreferenced_at = 1 WHERE id = '{key}'"
    ));
    app.execute("UPDATE jobs SET run_at = 0 WHERE kind = 'sweep-blobs' AND state = 'queued'");
    app.run_jobs();
    assert_eq!(app.count(&format!("id = '{key}'"), "blobs"), 0);
    assert_eq!(app.count(&format!("blob_id = '{key}'"), "file_versions"), 0);
    assert_eq!(app.count("state = 'failed'", "jobs"), 0);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stored = rt
        .block_on(app.ctx.storage.exists(&key.parse().unwrap()))
        .unwrap();
    assert!(!stored, "the sweep deletes the bytes");
}

#[test]
fn listings_tree_previews_copies_and_new_versions_in_chunks() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("more@example.com", Role::User);
    let root = my_folder(&app, &token);
    let a = mkdir(&app, &token, &root, "A");
    let b = mkdir(&app, &token, &a, "B");
    let c = mkdir(&app, &token, &b, "C");
    let pdf = upload_ok(&app, &token, &a, "doc.pdf", b"%PDF-1.4")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let html = upload_ok(&app, &token, &a, "page.html", b"<script>alert(1)</script>")["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Only the folders, only the files.
    let l = app
        .rest("GET", &format!("/rest/folders/{a}/folders"), &token, None)
        .json();
    assert_eq!(l["metadata"]["total"], 1, "{l}");
    assert_eq!(l["data"][0]["type"], "d");
    let l = app
        .rest(
            "GET",
            &format!("/rest/folders/{a}/files?name:contains=DOC"),
            &token,
            None,
        )
        .json();
    assert_eq!(l["metadata"]["total"], 1, "{l}");
    assert_eq!(l["data"][0]["name"], "doc.pdf");
    assert_eq!(l["data"][0]["mime"], "application/pdf");
    // The tree of C: its ancestors from "My Folder" down to C itself, as `{id, name}`; with
    // `includeOwner` from the root folder that holds "My Folder".
    let tree = |query: &str| {
        let r = app.rest(
            "GET",
            &format!("/rest/folders/{c}/tree{query}"),
            &token,
            None,
        );
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()
    };
    let t = tree("");
    assert_eq!(
        t["data"],
        json!([{"id": root, "name": "My Folder"}, {"id": a, "name": "A"}, {"id": b, "name": "B"},
               {"id": c, "name": "C"}])
    );
    assert_eq!(t["metadata"]["total"], 4);
    let t = tree("?includeOwner=true");
    let ids: Vec<&str> = t["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_str().unwrap())
        .collect();
    let base = me(&app, &token)["basedirId"].as_str().unwrap().to_string();
    assert_eq!(
        ids,
        [
            base.as_str(),
            root.as_str(),
            a.as_str(),
            b.as_str(),
            c.as_str()
        ]
    );
    let r = app.rest(
        "GET",
        &format!("/rest/folders/{c}/tree?includeOwner=maybe"),
        &token,
        None,
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (422, "ERR_INPUT_NOT_BOOLEAN")
    );
    // Rename a file.
    let r = app.rest(
        "PUT",
        &format!("/rest/files/{pdf}"),
        &token,
        Some(json!({"name": "report.pdf"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["name"], "report.pdf");
    let r = app.rest(
        "PUT",
        &format!("/rest/files/{pdf}?returnEntity=true"),
        &token,
        Some(json!({"name": "page.HTML"})),
    );
    assert_eq!((r.status, r.code().as_str()), (409, "ERR_ENTITY_EXISTS"));
    // Previews: a PDF is shown in place; a page never is, nor served as one.
    app.run_jobs();
    let p = app
        .rest("GET", &format!("/rest/files/{pdf}/preview"), &token, None)
        .json();
    assert_eq!(p["status"], "preview", "{p}");
    let shown = app.rest(
        "GET",
        &format!("/rest/files/{pdf}/content?inline=true"),
        &token,
        None,
    );
    assert!(shown
        .header("content-disposition")
        .unwrap()
        .starts_with("inline"));
    let p = app
        .rest("GET", &format!("/rest/files/{html}/preview"), &token, None)
        .json();
    assert_eq!(p["status"], "failed", "{p}");
    assert_eq!(p["native"], false, "{p}");
    for key in ["link", "viewUrl", "pdf", "type", "mime"] {
        assert!(p.get(key).is_none(), "{key}: {p}");
    }
    let page = app.rest(
        "GET",
        &format!("/rest/files/{html}/content?inline=true"),
        &token,
        None,
    );
    assert!(page
        .header("content-disposition")
        .unwrap()
        .starts_with("attachment"));
    assert_eq!(
        page.header("content-type"),
        Some("application/octet-stream")
    );
    assert!(page
        .header("content-security-policy")
        .unwrap()
        .contains("sandbox"));
    // Copy files into B.
    let r = app.rest(
        "POST",
        "/rest/files/actions/copy",
        &token,
        Some(json!({"ids": [pdf, html], "destinationFolderId": b})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["data"].as_array().unwrap().len(), 2);
    // A new version in chunks: `filename` is required as for a new file, and nothing is opened
    // without it.
    let sessions = app.count("1 = 1", "uploads");
    let r = app.rest(
        "POST",
        &format!("/rest/files/{pdf}/actions/initiateUpload"),
        &token,
        Some(json!({"totalChunks": 1})),
    );
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.json()["errors"][0]["code"], "ERR_INPUT_REQUIRED");
    assert_eq!(r.json()["errors"][0]["field"], "filename");
    assert_eq!(app.count("1 = 1", "uploads"), sessions);
    let r = app.rest(
        "POST",
        &format!("/rest/files/{pdf}/actions/initiateUpload"),
        &token,
        Some(json!({"filename": "renamed.pdf", "totalChunks": 1})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let up = r.json()["id"].as_i64().unwrap();
    assert_eq!(r.json()["replaceId"], pdf);
    let r = chunk(&app, &token, up, (1, "NORMAL", b"%PDF-1.7", 8, true));
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["id"], pdf);
    assert_eq!(app.count(&format!("file_id = '{pdf}'"), "file_versions"), 2);
    let c = app.rest("GET", "/rest/uploads/config", &token, None).json();
    assert_eq!(c["uploadChunkMax"], 64 * 1024 * 1024);
    assert_eq!(c["uploadTimeout"], 86_400);
}

#[test]
fn jobs_are_leased_retried_with_backoff_and_kept_when_they_fail() {
    let app = TestApp::spawn();
    let t = coffer_tests::unix_now();
    let id = app
        .ctx
        .write(|c| Ok(coffer_store::jobs::enqueue(c, "test-kind", "p", t, 2, t)?))
        .unwrap();
    // Node A claims it; B finds nothing while A's lease runs.
    let a = app
        .ctx
        .write(|c| Ok(coffer_store::jobs::claim(c, "node-a", 8, 300, t)?))
        .unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].attempts, 1);
    let b = app
        .ctx
        .write(|c| Ok(coffer_store::jobs::claim(c, "node-b", 8, 300, t)?))
        .unwrap();
    assert!(b.is_empty());
    // A dies: once its lease ran out, B takes the job; A can no longer finish it.
    let b = app
        .ctx
        .write(|c| Ok(coffer_store::jobs::claim(c, "node-b", 8, 300, t + 301)?))
        .unwrap();
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].attempts, 2);
    assert!(!app
        .ctx
        .write(|c| Ok(coffer_store::jobs::complete(c, id, "node-a")?))
        .unwrap());
    // B fails it: its attempts are spent (2 of 2), so it is kept as failed with the error.
    app.ctx
        .write(|c| {
            Ok(coffer_store::jobs::fail(
                c,
                &b[0],
                "node-b",
                "boom",
                10,
                false,
                t + 302,
            )?)
        })
        .unwrap();
    assert_eq!(
        app.count(
            &format!("id = {id} AND state = 'failed' AND last_error = 'boom'"),
            "jobs"
        ),
        1
    );
    // A job with attempts left goes back to the queue after its backoff.
    let id2 = app
        .ctx
        .write(|c| Ok(coffer_store::jobs::enqueue(c, "test-kind", "q", t, 5, t)?))
        .unwrap();
    let j = app
        .ctx
        .write(|c| Ok(coffer_store::jobs::claim(c, "node-a", 8, 300, t)?))
        .unwrap();
    app.ctx
        .write(|c| {
            Ok(coffer_store::jobs::fail(
                c, &j[0], "node-a", "later", 40, false, t,
            )?)
        })
        .unwrap();
    assert_eq!(
        app.count(
            &format!("id = {id2} AND state = 'queued' AND run_at = {}", t + 40),
            "jobs"
        ),
        1
    );
    let early = app
        .ctx
        .write(|c| Ok(coffer_store::jobs::claim(c, "node-a", 8, 300, t + 39)?))
        .unwrap();
    assert!(early.is_empty(), "not before its backoff");
}

/// A real PNG of `w × h` pixels.
fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 90])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

/// The path part of a `contentUrl`.
fn local_path(app: &TestApp, url: &Value) -> String {
    url.as_str()
        .unwrap()
        .strip_prefix(&app.base)
        .unwrap()
        .to_string()
}

#[test]
fn image_previews_are_png_thumbnails() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("thumbs@example.com", Role::User);
    let root = my_folder(&app, &token);
    let photo = upload_ok(&app, &token, &root, "photo.png", &png(800, 400))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut broken_bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    broken_bytes.extend_from_slice(&[0x5a; 200]);
    let broken = upload_ok(&app, &token, &root, "broken.png", &broken_bytes)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let pdf = upload_ok(&app, &token, &root, "doc.pdf", b"%PDF-1.4")["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Not made yet: pending, nothing to show.
    let p = app
        .rest("GET", &format!("/rest/files/{photo}/preview"), &token, None)
        .json();
    assert_eq!(p["status"], "processing", "{p}");
    assert!(p.get("contentUrl").is_none(), "{p}");
    assert!(p.get("link").is_none() && p.get("mime").is_none(), "{p}");
    let r = app.rest(
        "GET",
        &format!("/rest/files/{photo}/preview/content"),
        &token,
        None,
    );
    assert_eq!((r.status, r.code().as_str()), (404, "ERR_ENTITY_NOT_FOUND"));
    app.run_jobs();
    assert_eq!(app.count("state = 'failed'", "jobs"), 0);
    let p = app
        .rest("GET", &format!("/rest/files/{photo}/preview"), &token, None)
        .json();
    assert_eq!(p["status"], "preview", "{p}");
    let url = local_path(&app, &p["contentUrl"]);
    assert_eq!(url, format!("/rest/files/{photo}/preview/content"));
    // A thumbnail: an image made from the file, at the same address under the vendor's names.
    assert_eq!(
        (p["type"].clone(), p["mime"].clone(), p["native"].clone()),
        (json!("image"), json!("image/png"), json!(false))
    );
    assert_eq!(p["link"], p["contentUrl"]);
    assert_eq!(p["viewUrl"], p["contentUrl"]);
    assert!(p.get("pdf").is_none(), "{p}");
    let r = app.rest("GET", &url, &token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("content-type"), Some("image/png"));
    let disposition = r.header("content-disposition").unwrap();
    assert!(disposition.starts_with("inline"), "{disposition}");
    assert!(disposition.contains("photo.png"), "{disposition}");
    assert!(r
        .header("content-security-policy")
        .unwrap()
        .contains("sandbox"));
    let thumb = image::load_from_memory_with_format(&r.bytes, image::ImageFormat::Png).unwrap();
    assert_eq!((thumb.width(), thumb.height()), (256, 128));
    // The ETag names the preview blob, which the blob table counts.
    let preview_blob = sha3_hex(&r.bytes);
    let etag = r.header("etag").unwrap().to_string();
    assert!(etag.contains(&preview_blob), "{etag}");
    assert_eq!(
        app.count(
            &format!(
                "id = '{preview_blob}' AND refs = 1 AND size = {}",
                r.bytes.len()
            ),
            "blobs"
        ),
        1
    );
    let auth = format!("Bearer {token}");
    let again = app.send(
        "GET",
        &url,
        &[
            ("X-Coffer-Version", "28"),
            ("Authorization", &auth),
            ("If-None-Match", &etag),
        ],
        None,
    );
    assert_eq!(again.status, 304);
    // Viewing a preview is not a download.
    assert_eq!(
        app.count("subject = 'filesystem.file.download'", "events"),
        0
    );
    // A corrupt image has no preview, for good; a PDF is shown as it is.
    let p = app
        .rest(
            "GET",
            &format!("/rest/files/{broken}/preview"),
            &token,
            None,
        )
        .json();
    assert_eq!(p["status"], "failed", "{p}");
    assert!(p.get("contentUrl").is_none(), "{p}");
    let r = app.rest(
        "GET",
        &format!("/rest/files/{broken}/preview/content"),
        &token,
        None,
    );
    assert_eq!(r.status, 404, "{}", r.text);
    let p = app
        .rest("GET", &format!("/rest/files/{pdf}/preview"), &token, None)
        .json();
    assert_eq!(p["status"], "preview", "{p}");
    assert_eq!(
        local_path(&app, &p["contentUrl"]),
        format!("/rest/files/{pdf}/content?inline=true")
    );
    // A PDF is its own preview.
    assert_eq!(
        (p["type"].clone(), p["mime"].clone(), p["native"].clone()),
        (json!("native"), json!("application/pdf"), json!(true))
    );
    assert_eq!(p["pdf"], p["contentUrl"]);
    assert_eq!(p["link"], p["contentUrl"]);
    let r = app.rest(
        "GET",
        &format!("/rest/files/{pdf}/preview/content"),
        &token,
        None,
    );
    assert_eq!(r.status, 404, "{}", r.text);
    // Another user sees nothing.
    let (_, other) = app.user_token("other-thumbs@example.com", Role::User);
    let r = app.rest("GET", &url, &other, None);
    assert_eq!(r.status, 404, "{}", r.text);
    // A copy shares the thumbnail.
    let r = app.rest(
        "POST",
        "/rest/files/actions/copy",
        &token,
        Some(json!({"ids": [photo], "destinationFolderId": mkdir(&app, &token, &root, "Copies")})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let copy = r.json()["id"].as_str().unwrap().to_string();
    let r = app.rest(
        "GET",
        &format!("/rest/files/{copy}/preview/content"),
        &token,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(sha3_hex(&r.bytes), preview_blob);
    assert_eq!(
        app.count(&format!("id = '{preview_blob}' AND refs = 2"), "blobs"),
        1
    );
    // Purging both from the trash releases the thumbnail.
    for f in [&photo, &copy] {
        assert_eq!(
            app.rest("DELETE", &format!("/rest/files/{f}"), &token, None)
                .status,
            204
        );
        app.execute(&format!(
            "UPDATE objects SET deleted_at = 1 WHERE id = '{f}'"
        ));
    }
    coffer_service::content::jobs::schedule_periodic(&app.ctx).unwrap();
    app.run_jobs();
    assert_eq!(
        app.count(&format!("id = '{preview_blob}' AND refs = 0"), "blobs"),
        1
    );
}

#[test]
fn a_configured_converter_makes_pdf_previews() {
    let dir = tempfile::tempdir().unwrap();
    let fixed = dir.path().join("fixed.pdf");
    let pdf: &[u8] =
        b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n";
    std::fs::write(&fixed, pdf).unwrap();
    let script = dir.path().join("to-pdf.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncase \"$1\" in *.xlsx) echo 'cannot convert' >&2; exit 2;; esac\ncp '{}' \"$2/\"\n",
            fixed.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let command = script.display().to_string();
    let app = TestApp::builder()
        .config(|c| c.preview_converter = Some(command))
        .spawn();
    let (_, token) = app.user_token("convert@example.com", Role::User);
    let root = my_folder(&app, &token);
    let doc = upload_ok(
        &app,
        &token,
        &root,
        "Report 2024.docx",
        b"PK\x03\x04 not really",
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let sheet = upload_ok(&app, &token, &root, "sheet.xlsx", b"PK\x03\x04 nor this")["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.run_jobs();
    assert_eq!(app.count("state = 'failed'", "jobs"), 0);
    let p = app
        .rest("GET", &format!("/rest/files/{doc}/preview"), &token, None)
        .json();
    assert_eq!(p["status"], "preview", "{p}");
    assert_eq!(
        (p["type"].clone(), p["mime"].clone(), p["native"].clone()),
        (json!("pdf"), json!("application/pdf"), json!(false))
    );
    assert_eq!(p["pdf"], p["contentUrl"]);
    let r = app.rest("GET", &local_path(&app, &p["contentUrl"]), &token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.bytes, pdf);
    assert_eq!(r.header("content-type"), Some("application/pdf"));
    let disposition = r.header("content-disposition").unwrap();
    assert!(disposition.starts_with("inline"), "{disposition}");
    assert!(disposition.contains("Report%202024.pdf"), "{disposition}");
    // The converter refused the spreadsheet.
    let p = app
        .rest("GET", &format!("/rest/files/{sheet}/preview"), &token, None)
        .json();
    assert_eq!(p["status"], "failed", "{p}");
    let r = app.rest(
        "GET",
        &format!("/rest/files/{sheet}/preview/content"),
        &token,
        None,
    );
    assert_eq!(r.status, 404, "{}", r.text);
}

#[test]
fn an_uploader_sees_only_its_own_files() {
    let app = TestApp::spawn();
    let (_, owner) = app.user_token("drop-owner@example.com", Role::User);
    let (up_id, uploader) = app.user_token("uploader@example.com", Role::User);
    let root = my_folder(&app, &owner);
    let drop = mkdir(&app, &owner, &root, "Inbox");
    let theirs = upload_ok(&app, &owner, &drop, "owner-only.txt", b"secret")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{drop}/members"),
        &owner,
        Some(json!({"userIds": [up_id], "roleId": 5})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let mine = upload_ok(&app, &uploader, &drop, "from-uploader.txt", b"mine")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let l = app
        .rest(
            "GET",
            &format!("/rest/folders/{drop}/children"),
            &uploader,
            None,
        )
        .json();
    let ids: Vec<&str> = l["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [mine.as_str()], "{l}");
    assert_eq!(l["metadata"]["total"], 1);
    // Another's file is out of its reach, not merely forbidden.
    let r = app.rest("GET", &format!("/rest/files/{theirs}"), &uploader, None);
    assert_eq!((r.status, r.code().as_str()), (404, "ERR_ENTITY_NOT_FOUND"));
    // The owner sees both.
    let l = app
        .rest(
            "GET",
            &format!("/rest/folders/{drop}/children"),
            &owner,
            None,
        )
        .json();
    assert_eq!(l["metadata"]["total"], 2, "{l}");
}

/// Owners whose counted usage (`content_accounts`, what the quota reads) differs from the sum
/// over their live versions.
fn usage_drift(app: &TestApp) -> i64 {
    app.count(
        "used <> (SELECT CAST(COALESCE(SUM(v.size), 0) AS BIGINT) FROM file_versions v \
         JOIN objects o ON o.id = v.file_id WHERE o.owner_id = content_accounts.owner_id \
         AND o.perm_deleted = FALSE AND v.deleted = FALSE)",
        "content_accounts",
    )
}

fn used(app: &TestApp, token: &str) -> i64 {
    let q = app.rest("GET", "/rest/users/me/quota", token, None).json();
    q["folder_quota_used"].as_i64().unwrap()
}

/// The counted usage follows new files, new versions, copies, a move into another owner's tree,
/// the trash (still counted) and the purge (no longer), and `cofferd storage check` finds and
/// repairs a counter that went wrong.
#[test]
fn usage_is_counted_through_every_change() {
    let app = TestApp::spawn();
    let (_, owner) = app.user_token("counted@example.com", Role::User);
    let (_, guest_id_token) = app.user_token("mover@example.com", Role::User);
    let root = my_folder(&app, &owner);
    let shared = mkdir(&app, &owner, &root, "Shared");
    let f = upload_ok(&app, &owner, &root, "a.bin", &[1u8; 100])["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(used(&app, &owner), 100);
    upload_ok(&app, &owner, &root, "a.bin", &[2u8; 50]);
    assert_eq!(used(&app, &owner), 150);
    let r = app.rest(
        "POST",
        "/rest/files/actions/copy",
        &owner,
        Some(json!({"ids": [f], "destinationFolderId": shared})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let copied = used(&app, &owner);
    assert!(copied > 150, "a copy counts: {copied}");
    assert_eq!(usage_drift(&app), 0);

    // Another user's folder with a file, moved into the owner's shared folder: its bytes change
    // hands.
    let guest_root = my_folder(&app, &guest_id_token);
    let moving = mkdir(&app, &guest_id_token, &guest_root, "Moving");
    upload_ok(&app, &guest_id_token, &moving, "m.bin", &[3u8; 70]);
    assert_eq!(used(&app, &guest_id_token), 70);
    let manager = folder_role(&app, &owner, "Manager");
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{shared}/members"),
        &owner,
        Some(json!({"emails": ["mover@example.com"], "roleId": manager})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{moving}/actions/move"),
        &guest_id_token,
        Some(json!({"destinationFolderId": shared})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(used(&app, &guest_id_token), 0);
    assert_eq!(used(&app, &owner), copied + 70);
    assert_eq!(usage_drift(&app), 0);

    // The trash still counts; the purge frees.
    assert_eq!(
        app.rest("DELETE", &format!("/rest/files/{f}"), &owner, None)
            .status,
        204
    );
    assert_eq!(used(&app, &owner), copied + 70);
    app.execute(&format!(
        "UPDATE objects SET deleted_at = 1 WHERE id = '{f}'"
    ));
    coffer_service::content::jobs::schedule_periodic(&app.ctx).unwrap();
    app.run_jobs();
    assert_eq!(used(&app, &owner), copied + 70 - 150);
    assert_eq!(usage_drift(&app), 0);

    // A counter that went wrong (say, edited by hand) is found and recounted.
    app.execute("UPDATE content_accounts SET used = used + 5");
    assert!(usage_drift(&app) > 0);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let report = rt
        .block_on(coffer_service::content::check::check(&app.ctx, false))
        .unwrap();
    assert!(!report.usage_drift.is_empty());
    let drift = &report.usage_drift[0];
    assert_eq!(drift.counted, drift.actual + 5);
    let report = rt
        .block_on(coffer_service::content::check::check(&app.ctx, true))
        .unwrap();
    assert!(!report.usage_drift.is_empty());
    assert_eq!(usage_drift(&app), 0);
    assert_eq!(used(&app, &owner), copied + 70 - 150);
}

/// Listings are kept per node, and every change that alters what they show is in the next one:
/// names, new files and versions, the scan state written by a job, members, the path above, and
/// the caller's role.
#[test]
fn listings_show_every_change_at_once() {
    let app = TestApp::spawn();
    let (_, owner) = app.user_token("lists@example.com", Role::User);
    let (_, guest) = app.user_token("guest-lists@example.com", Role::User);
    let root = my_folder(&app, &owner);
    let top = mkdir(&app, &owner, &root, "Top");
    let dir = mkdir(&app, &owner, &top, "Dir");
    let sub = mkdir(&app, &owner, &dir, "Sub");
    let f = upload_ok(&app, &owner, &dir, "one.txt", b"one")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let list = |token: &str| -> Vec<Value> {
        let r = app.rest(
            "GET",
            &format!("/rest/folders/{dir}/children?with=currentUserRole"),
            token,
            None,
        );
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["data"].as_array().unwrap().clone()
    };
    let entry = |token: &str, id: &str| -> Value {
        list(token)
            .into_iter()
            .find(|e| e["id"] == id)
            .unwrap_or_else(|| panic!("{id} not listed"))
    };
    assert_eq!(list(&owner).len(), 2);
    assert_eq!(list(&owner), list(&owner));
    // Listings carry the default fields; the path's ids and the caller's role when asked, as
    // one record always does.
    let plain = app
        .rest(
            "GET",
            &format!("/rest/folders/{dir}/children"),
            &owner,
            None,
        )
        .json();
    let e = &plain["data"][0];
    assert!(
        e.get("pathIds").is_none() && e.get("currentUserRole").is_none(),
        "{e}"
    );
    assert!(e["path"].is_string() && e["permalink"].is_string(), "{e}");
    let full = app
        .rest(
            "GET",
            &format!("/rest/folders/{dir}/children?with=(pathIds,currentUserRole)"),
            &owner,
            None,
        )
        .json();
    let e = &full["data"][0];
    assert!(e["pathIds"].is_string(), "{e}");
    assert_eq!(e["currentUserRole"]["name"], "Manager");
    let one = app
        .rest("GET", &format!("/rest/files/{f}"), &owner, None)
        .json();
    assert!(
        one["pathIds"].is_string() && one["currentUserRole"].is_object(),
        "{one}"
    );

    let r = app.rest(
        "PUT",
        &format!("/rest/files/{f}"),
        &owner,
        Some(json!({"name": "renamed.txt"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(entry(&owner, &f)["name"], "renamed.txt");

    upload_ok(&app, &owner, &dir, "two.txt", b"two");
    assert_eq!(list(&owner).len(), 3);
    upload_ok(&app, &owner, &dir, "renamed.txt", b"longer content");
    assert_eq!(entry(&owner, &f)["size"], 14);
    assert_eq!(entry(&owner, &f)["versionsCount"], 2);

    app.execute(&format!(
        "UPDATE file_versions SET av_status = 'disallowed' WHERE file_id = '{f}'"
    ));
    assert_eq!(entry(&owner, &f)["avStatus"], "disallowed");

    assert_eq!(entry(&owner, &sub)["isShared"], false);
    let role = |name: &str| folder_role(&app, &owner, name);
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{sub}/members"),
        &owner,
        Some(json!({"emails": ["guest-lists@example.com"], "roleId": role("Viewer")})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(entry(&owner, &sub)["isShared"], true);

    let r = app.rest(
        "PUT",
        &format!("/rest/folders/{top}"),
        &owner,
        Some(json!({"name": "Above"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        entry(&owner, &f)["path"]
            .as_str()
            .unwrap()
            .contains("Above/Dir/renamed.txt"),
        "{}",
        entry(&owner, &f)
    );

    // A member's listing follows their role.
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{top}/members"),
        &owner,
        Some(json!({"emails": ["guest-lists@example.com"], "roleId": role("Viewer")})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(entry(&guest, &f)["currentUserRole"]["name"], "Viewer");
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{top}/members?updateIfExists=true"),
        &owner,
        Some(json!({"emails": ["guest-lists@example.com"], "roleId": role("Collaborator")})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(entry(&guest, &f)["currentUserRole"]["name"], "Collaborator");
}

/// Content that was stored once and that nothing refers to any more, past the sweep's grace:
/// the next blob sweep deletes it.
fn stored_but_unreferenced(app: &TestApp, token: &str, folder: &str, bytes: &[u8]) {
    let f = upload_ok(app, token, folder, "unreferenced.bin", bytes)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.rest("DELETE", &format!("/rest/files/{f}"), token, None);
    assert_eq!(r.status, 204, "{}", r.text);
    app.execute(&format!(
        "UPDATE objects SET deleted_at = 1 WHERE id = '{f}'"
    ));
    coffer_service::content::jobs::schedule_periodic(&app.ctx).unwrap();
    app.run_jobs();
    let key = sha3_hex(bytes);
    assert_eq!(app.count(&format!("id = '{key}' AND refs = 0"), "blobs"), 1);
    app.execute(&format!(
        "UPDATE blobs SET unreferenced_at = 1 WHERE id = '{key}'"
    ));
}

/// Makes the queued trash purge and blob sweep due now.
fn sweep_due(app: &TestApp) {
    app.execute(
        "UPDATE jobs SET run_at = 0 WHERE kind IN ('purge-trash', 'sweep-blobs') \
         AND state = 'queued'",
    );
}

/// `cofferd storage check` without repair.
fn storage_check(app: &TestApp) -> coffer_service::content::check::Report {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(coffer_service::content::check::check(&app.ctx, false))
        .unwrap()
}

/// The blob-reuse race, forced: an upload stores content that is already there (the put keeps
/// the stored copy), the blob sweep deletes that content, then the upload commits. The commit
/// must not make a version of bytes that are gone: it is refused with 503, and sent again the
/// upload stores the content anew.
#[test]
fn a_blob_swept_between_the_put_and_the_commit_makes_no_version() {
    use coffer_service::content::{files, uploads};
    let app = TestApp::spawn();
    let (user_id, token) = app.user_token("race@example.com", Role::User);
    let root = my_folder(&app, &token);
    let content = b"content the blob sweep is about to delete".to_vec();
    let key = sha3_hex(&content);
    stored_but_unreferenced(&app, &token, &root, &content);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let exists = |rt: &tokio::runtime::Runtime| {
        rt.block_on(app.ctx.storage.exists(&key.parse().unwrap()))
            .unwrap()
    };

    // The put: the content is stored already, so the upload's copy is dropped.
    let target = files::Target::Folder {
        folder_id: root.clone(),
        name: "race.bin".into(),
        disable_auto_version: false,
    };
    let body: uploads::Body = Box::pin(futures_util::stream::iter([Ok(bytes::Bytes::from(
        content.clone(),
    ))]));
    let stored = rt
        .block_on(uploads::store_body(
            &app.ctx,
            &user_id,
            &target,
            Some(content.len() as i64),
            body,
        ))
        .unwrap();
    assert_eq!(stored.blob, key);

    // The sweep runs between the put and the commit, and deletes row and bytes.
    sweep_due(&app);
    app.run_jobs();
    assert_eq!(app.count(&format!("id = '{key}'"), "blobs"), 0);
    assert!(!exists(&rt), "the sweep deletes the bytes");

    // The commit finds the bytes gone and makes nothing.
    let err = rt
        .block_on(files::commit_owned(&app.ctx, &user_id, target, stored))
        .unwrap_err()
        .to_api();
    assert_eq!(err.code, coffer_errors::ErrorCode::ServiceUnavailable);
    assert_eq!(app.count(&format!("blob_id = '{key}'"), "file_versions"), 0);
    assert_eq!(app.count("name = 'race.bin'", "objects"), 0);
    let report = storage_check(&app);
    assert!(report.missing.is_empty(), "{:?}", report.missing);

    // Sent again, the content is stored anew and served.
    let f = upload_ok(&app, &token, &root, "race.bin", &content)["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(exists(&rt));
    let r = app.rest("GET", &format!("/rest/files/{f}/content"), &token, None);
    assert_eq!((r.status, r.bytes.as_slice()), (200, content.as_slice()));
    assert_eq!(app.count(&format!("id = '{key}' AND refs = 1"), "blobs"), 1);
    assert!(storage_check(&app).missing.is_empty());
}

/// Identical uploads from several clients while the blob sweep keeps freeing that content: an
/// upload either makes a version whose bytes are stored (200) or is refused (503), and the store
/// never lacks content a version refers to.
#[test]
fn identical_uploads_racing_the_blob_sweep_lose_no_content() {
    let app = TestApp::spawn();
    let content = b"the same bytes, uploaded again and again".to_vec();
    let key = sha3_hex(&content);
    let (_, first) = app.user_token("racer0@example.com", Role::User);
    let root = my_folder(&app, &first);
    stored_but_unreferenced(&app, &first, &root, &content);
    let racers: Vec<(String, String)> = (0..4)
        .map(|i| {
            let (_, token) = app.user_token(&format!("racer{}@example.com", i + 1), Role::User);
            let folder = my_folder(&app, &token);
            (token, folder)
        })
        .collect();
    let done = std::sync::atomic::AtomicBool::new(false);
    let swept = std::sync::atomic::AtomicUsize::new(0);
    let refused = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        // The sweeper: whenever nothing refers to the content, the sweep may delete it.
        s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                app.execute(&format!(
                    "UPDATE blobs SET unreferenced_at = 1 WHERE id = '{key}' AND refs = 0"
                ));
                sweep_due(&app);
                let before = app.count(&format!("id = '{key}'"), "blobs");
                app.run_jobs();
                if before == 1 && app.count(&format!("id = '{key}'"), "blobs") == 0 {
                    swept.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        });
        let uploaders: Vec<_> = racers
            .iter()
            .map(|(token, folder)| {
                let (refused, swept, content) = (&refused, &swept, &content);
                let app = &app;
                s.spawn(move || {
                    // At least 30 uploads each, and on until the sweep has freed the content.
                    for n in 0..200 {
                        let freed = swept.load(std::sync::atomic::Ordering::Relaxed) > 0;
                        if n >= 30 && freed {
                            break;
                        }
                        // Four busy uploaders may keep the content counted at every moment the
                        // sweeper looks: halfway, all wait (up to 30 s) until it has found the
                        // content free once, then race it again.
                        if n == 15 && !freed {
                            let t0 = std::time::Instant::now();
                            while swept.load(std::sync::atomic::Ordering::Relaxed) == 0
                                && t0.elapsed() < std::time::Duration::from_secs(30)
                            {
                                std::thread::sleep(std::time::Duration::from_millis(5));
                            }
                        }
                        let r = app.upload(token, folder, &format!("copy{n}.bin"), content);
                        match r.status {
                            200 => {
                                // Deleted for good at once, so that the sweep may take it again.
                                let id = r.json()["id"].as_str().unwrap().to_string();
                                let d =
                                    app.rest("DELETE", &format!("/rest/files/{id}"), token, None);
                                assert_eq!(d.status, 204, "{}", d.text);
                                app.execute(&format!(
                                    "UPDATE objects SET deleted_at = 1 WHERE id = '{id}'"
                                ));
                            }
                            503 => {
                                assert_eq!(r.code(), "ERR_SERVICE_UNAVAILABLE");
                                refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            other => panic!("upload answered {other}: {}", r.text),
                        }
                    }
                })
            })
            .collect();
        // The sweeper stops however the uploaders end (a failed assertion too).
        struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let _stop = Stop(&done);
        for u in uploaders {
            u.join().unwrap();
        }
    });
    let report = storage_check(&app);
    assert!(
        report.missing.is_empty(),
        "content lost: {:?}",
        report.missing
    );
    assert!(
        swept.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "the sweep never freed the content, so nothing raced"
    );
    // The content is still taken, and served whole.
    let (token, folder) = &racers[0];
    let f = upload_ok(&app, token, folder, "final.bin", &content)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.rest("GET", &format!("/rest/files/{f}/content"), token, None);
    assert_eq!((r.status, r.bytes.as_slice()), (200, content.as_slice()));
    assert!(storage_check(&app).missing.is_empty());
}

/// A job queued through one node wakes the job worker of another at once (well within the
/// bound below, which leaves room for a loaded machine), whose own looks are seconds apart.
#[test]
fn a_job_queued_on_one_node_wakes_the_workers_of_another() {
    use coffer_store::wake::Work;
    let app = TestApp::spawn();
    let (_, token) = app.user_token("jobs-wake@example.com", Role::User);
    let folder = my_folder(&app, &token);
    let other = app.other_node_db();
    let mut waiter = other.waiter(Work::Jobs);
    if other.backend() == coffer_store::Backend::Postgres {
        // Once listening, the node looks once for what it may have missed before.
        assert!(
            waiter.wait(std::time::Duration::from_secs(5)),
            "the listener starts"
        );
    }
    assert!(
        !waiter.wait(std::time::Duration::from_millis(300)),
        "nothing was queued"
    );

    let recorded = std::time::Instant::now();
    let r = app.upload(
        &token,
        &folder,
        "wake.txt",
        b"a file whose preview is a job",
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(app.count("kind = 'preview'", "jobs") >= 1);
    // The wake-up comes with the commit (well under a second on a quiet machine); the bound
    // leaves room for a loaded one while staying far below the seconds between own looks.
    assert!(
        waiter.wait(std::time::Duration::from_secs(5)),
        "no wake-up within five seconds"
    );
    assert!(recorded.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn a_version_gone_before_its_preview_was_decided_waits_for_none() {
    // However the queue orders a trash purge and a preview, no version is left `pending`.
    let app = TestApp::spawn();
    let (_, token) = app.user_token("gone-preview@example.com", Role::User);
    let root = my_folder(&app, &token);
    let f = upload_ok(&app, &token, &root, "notes.txt", b"short-lived")["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        app.count(
            &format!("file_id = '{f}' AND preview_status = 'pending'"),
            "file_versions"
        ),
        1
    );
    // The version goes (as a purge removes it) before the preview job runs.
    app.execute(&format!(
        "UPDATE file_versions SET deleted = TRUE WHERE file_id = '{f}'"
    ));
    app.run_jobs();
    assert_eq!(
        app.count(
            &format!("file_id = '{f}' AND preview_status = 'failed'"),
            "file_versions"
        ),
        1
    );
    assert_eq!(app.count("state = 'failed'", "jobs"), 0);
}
