//! External sources end to end: an operator directory (a temporary directory given as
//! `COFFER_SOURCE_DIRS`) listed, browsed with filters, orders and pages, read whole and by
//! range, locked, deleted, pinned and transferred into Coffer through the job queue; a symlink
//! leaving the directory; and a user's WebDAV source against the real WebDAV server of
//! `scripts/webdav-test-server.sh` (its variables when `COFFER_TEST_WEBDAV_URL` is set, else the
//! tests start it through the script): credentials checked, stored encrypted and never shown, a
//! source that needs new credentials, browsing, a transfer in with its fingerprint, a transfer
//! past the quota, and the addresses and repeats that are refused; writes and deletes through a
//! held lock, check-ins of transferred files, the site search no source offers, and the
//! short-lived tokens an external editor downloads and writes back one file with.

use coffer_domain::Role;
use coffer_service::sources::OperatorDir;
use coffer_tests::{assert_error, me, TestApp};
use serde_json::{json, Value};
use sha3::Digest as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn sha3(b: &[u8]) -> String {
    hex::encode(sha3::Sha3_256::digest(b))
}

/// A server with one writable operator directory `shared` over a fresh temporary directory
/// holding `docs/` (`a.txt`, `b.bin`, `empty.txt`) and `readme.md`.
fn with_dir() -> (TestApp, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("docs/deep")).unwrap();
    std::fs::write(root.join("docs/a.txt"), b"hello from the directory").unwrap();
    std::fs::write(root.join("docs/b.bin"), vec![7u8; 3000]).unwrap();
    std::fs::write(root.join("docs/empty.txt"), b"").unwrap();
    std::fs::write(root.join("readme.md"), b"# read me").unwrap();
    let archive = dir.path().join("archive");
    std::fs::create_dir_all(&archive).unwrap();
    std::fs::write(archive.join("old.txt"), b"old").unwrap();
    let r = root.clone();
    let app = TestApp::builder()
        .config(move |c| {
            c.sources.dirs = vec![
                OperatorDir {
                    name: "shared".into(),
                    root: r,
                    writable: true,
                },
                OperatorDir {
                    name: "archive".into(),
                    root: archive,
                    writable: false,
                },
            ]
        })
        .spawn();
    (app, dir)
}

/// Locks the source objects `ids` (comma-separated) for the caller: 200 expected.
fn lock(app: &TestApp, token: &str, ids: &str) {
    let path = format!("/rest/sources/actions/lock?id:in={ids}");
    ok(&app.rest("PATCH", &path, token, None), 200);
}

/// Unlocks the source objects `ids` (comma-separated): 200 expected.
fn unlock(app: &TestApp, token: &str, ids: &str) {
    let path = format!("/rest/sources/actions/unlock?id:in={ids}");
    ok(&app.rest("PATCH", &path, token, None), 200);
}

fn ok(r: &coffer_tests::Resp, status: u16) -> Value {
    assert_eq!(r.status, status, "{}", r.text);
    if r.text.is_empty() {
        Value::Null
    } else {
        r.json()
    }
}

/// The operator directory `name`'s source record.
fn source_named(app: &TestApp, token: &str, name: &str) -> Value {
    let v = ok(&app.rest("GET", "/rest/sources", token, None), 200);
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no source {name}: {v}"))
}

/// The writable operator directory's source record.
fn shared(app: &TestApp, token: &str) -> Value {
    source_named(app, token, "shared")
}

/// The entries of a listing by name, with the listing's total.
fn names(v: &Value) -> (Vec<String>, i64) {
    (
        v["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect(),
        v["metadata"]["total"].as_i64().unwrap(),
    )
}

/// The id of the entry `name` in the folder `folder`.
fn child(app: &TestApp, token: &str, folder: &str, name: &str) -> String {
    let v = ok(
        &app.rest(
            "GET",
            &format!("/rest/sources/{folder}/children"),
            token,
            None,
        ),
        200,
    );
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["id"].as_str())
        .unwrap_or_else(|| panic!("no {name} in {v}"))
        .to_string()
}

#[test]
fn source_types_are_webdav_for_users_and_directories_for_the_operator() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("types@example.com", Role::User);
    let v = ok(&app.rest("GET", "/rest/sourceTypes", &token, None), 200);
    assert_eq!(
        v["data"],
        json!([
            {"id": 1, "name": "WebDAV", "userCanSet": true},
            {"id": 2, "name": "Server directory", "userCanSet": false},
        ])
    );
    let v = ok(
        &app.rest("GET", "/rest/sourceTypes?orderBy=name:desc", &token, None),
        200,
    );
    assert_eq!(v["data"][0]["id"], 1, "{v}");
    assert_eq!(
        ok(&app.rest("GET", "/rest/sourceTypes/2", &token, None), 200)["userCanSet"],
        false
    );
    assert_error(
        &app.rest("GET", "/rest/sourceTypes/3", &token, None),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
}

#[test]
fn an_operator_directory_is_listed_and_browsed_with_filters_orders_and_pages() {
    let (app, _dir) = with_dir();
    let (_, token) = app.user_token("browse@example.com", Role::User);
    let s = shared(&app, &token);
    assert_eq!(s["sourceByUser"], false, "{s}");
    assert_eq!(s["sourceTypeId"], 2, "{s}");
    assert_eq!(s["pinned"], false, "{s}");
    // The server path stays the operator's.
    assert!(s.get("sourceUrl").is_none(), "{s}");
    let sid = s["id"].as_str().unwrap().to_string();
    assert_eq!(
        ok(
            &app.rest("GET", &format!("/rest/sources/{sid}"), &token, None),
            200
        )["name"],
        "shared"
    );

    let root = ok(
        &app.rest(
            "GET",
            &format!("/rest/sources/{sid}/children"),
            &token,
            None,
        ),
        200,
    );
    assert_eq!(names(&root), (vec!["docs".into(), "readme.md".into()], 2));
    let docs = &root["data"][0];
    assert_eq!(docs["type"], "d", "{docs}");
    assert_eq!(docs["parentId"], sid.as_str(), "{docs}");
    assert_eq!(docs["path"], "/docs", "{docs}");
    let readme = &root["data"][1];
    assert_eq!(
        (readme["type"].clone(), readme["size"].clone()),
        (json!("f"), json!(9))
    );
    assert_eq!(readme["locked"], false, "{readme}");
    let docs_id = docs["id"].as_str().unwrap().to_string();

    let list = |q: &str| {
        ok(
            &app.rest("GET", &format!("/rest/sources/{docs_id}/{q}"), &token, None),
            200,
        )
    };
    assert_eq!(
        names(&list("children")),
        (
            vec![
                "a.txt".into(),
                "b.bin".into(),
                "deep".into(),
                "empty.txt".into()
            ],
            4
        )
    );
    assert_eq!(names(&list("folders")), (vec!["deep".into()], 1));
    assert_eq!(names(&list("files?orderBy=size:desc")).0[0], "b.bin");
    assert_eq!(
        names(&list("children?type=f&name:contains=T&limit=1&offset=1")),
        (vec!["empty.txt".into()], 2)
    );
    assert_eq!(names(&list("children?name=A.TXT")).1, 1);
    assert_eq!(names(&list("children?deleted=true")).1, 0);
    assert_eq!(names(&list("children?created:gt=2000-01-01")).1, 4);
    assert_eq!(names(&list("children?modified:lt=2000-01-01")).1, 0);
    let with = list("files?with=rootId,pathIds,sourceTypeId,parent&name=a.txt");
    let a = &with["data"][0];
    assert_eq!(a["rootId"], sid.as_str(), "{a}");
    assert_eq!(a["sourceTypeId"], "2", "{a}");
    assert_eq!(
        a["pathIds"],
        format!("{sid},{docs_id},{}", a["id"].as_str().unwrap())
    );
    assert_eq!(a["parent"]["id"], docs_id.as_str(), "{a}");
    assert_eq!(a["mime"], "text/plain", "{a}");

    let r = app.rest(
        "GET",
        &format!("/rest/sources/{docs_id}/children?type=x"),
        &token,
        None,
    );
    assert_error(&r, 422, "ERR_INPUT_NOT_IN_LIST");
    let r = app.rest(
        "GET",
        &format!("/rest/sources/{docs_id}/children?colour=red"),
        &token,
        None,
    );
    assert_error(&r, 400, "ERR_REQUEST_INVALID_FILTER");

    // One file and one folder, each only under its own kind.
    let a_id = a["id"].as_str().unwrap();
    let f = ok(
        &app.rest("GET", &format!("/rest/sources/files/{a_id}"), &token, None),
        200,
    );
    assert_eq!(
        (f["name"].clone(), f["size"].clone()),
        (json!("a.txt"), json!(24))
    );
    assert_eq!(f["avStatus"], "allowed", "{f}");
    let r = app.rest(
        "GET",
        &format!("/rest/sources/folders/{a_id}"),
        &token,
        None,
    );
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    let d = ok(
        &app.rest(
            "GET",
            &format!("/rest/sources/folders/{docs_id}"),
            &token,
            None,
        ),
        200,
    );
    assert_eq!(d["isFavorite"], false, "{d}");
    assert_eq!(
        ok(
            &app.rest("GET", &format!("/rest/sources/folders/{sid}"), &token, None),
            200
        )["parentId"],
        ""
    );

    // Ids that name nothing of the caller's, or a path outside the source, are not found.
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    for bad in [
        "nothing".to_string(),
        b64(&format!("{sid}:../etc/passwd")),
        b64(&format!("{sid}:docs//a.txt")),
        b64("another-source:docs/a.txt"),
        b64(&format!("{sid}:")),
    ] {
        let r = app.rest("GET", &format!("/rest/sources/files/{bad}"), &token, None);
        assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
        let r = app.rest(
            "GET",
            &format!("/rest/sources/{bad}/children"),
            &token,
            None,
        );
        assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    }
}

#[test]
fn source_files_are_read_whole_and_by_range_and_shown_in_place_when_safe() {
    let (app, _dir) = with_dir();
    let (_, token) = app.user_token("read@example.com", Role::User);
    let sid = shared(&app, &token)["id"].as_str().unwrap().to_string();
    let docs = child(&app, &token, &sid, "docs");
    let a = child(&app, &token, &docs, "a.txt");
    let r = app.rest("GET", &format!("/rest/sources/{a}/content"), &token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.bytes, b"hello from the directory");
    assert!(
        r.header("content-disposition")
            .unwrap()
            .starts_with("attachment"),
        "{:?}",
        r.headers
    );
    assert_eq!(r.header("accept-ranges"), Some("bytes"));
    let ranged = |range: &str| {
        app.send(
            "GET",
            &format!("/rest/sources/{a}/content"),
            &[
                ("X-Coffer-Version", "28"),
                ("Authorization", &format!("Bearer {token}")),
                ("Range", range),
            ],
            None,
        )
    };
    let r = ranged("bytes=6-9");
    assert_eq!(r.status, 206, "{}", r.text);
    assert_eq!(r.bytes, b"from");
    assert_eq!(r.header("content-range"), Some("bytes 6-9/24"));
    let r = ranged("bytes=-9");
    assert_eq!(
        (r.status, r.bytes.as_slice()),
        (206, b"directory".as_slice())
    );
    let r = ranged("bytes=100-");
    assert_eq!(r.status, 416, "{}", r.text);
    assert_eq!(r.header("content-range"), Some("bytes */24"));

    let empty = child(&app, &token, &docs, "empty.txt");
    let r = app.rest(
        "GET",
        &format!("/rest/sources/{empty}/content"),
        &token,
        None,
    );
    assert_eq!((r.status, r.bytes.len()), (200, 0), "{}", r.text);
    assert_eq!(
        ok(
            &app.rest(
                "GET",
                &format!("/rest/sources/{empty}/preview"),
                &token,
                None
            ),
            200
        ),
        json!({"status": "not_supported_empty"})
    );
    let p = ok(
        &app.rest("GET", &format!("/rest/sources/{a}/preview"), &token, None),
        200,
    );
    assert_eq!(
        (p["status"].clone(), p["mime"].clone()),
        (json!("ready"), json!("text/plain"))
    );
    assert!(p["link"]
        .as_str()
        .unwrap()
        .ends_with(&format!("/rest/sources/{a}/content?inline=true")));
    let b = child(&app, &token, &docs, "b.bin");
    assert_eq!(
        ok(
            &app.rest("GET", &format!("/rest/sources/{b}/preview"), &token, None),
            200
        )["status"],
        "failed"
    );
    let r = app.rest(
        "GET",
        &format!("/rest/sources/{docs}/content"),
        &token,
        None,
    );
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    let r = app.rest(
        "GET",
        &format!("/rest/sources/{docs}/preview"),
        &token,
        None,
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
}

#[test]
fn a_symlink_leaving_the_directory_is_refused() {
    let (app, dir) = with_dir();
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, b"not for users").unwrap();
    std::os::unix::fs::symlink(&outside, dir.path().join("root/escape.txt")).unwrap();
    std::os::unix::fs::symlink(dir.path(), dir.path().join("root/up")).unwrap();
    let (_, token) = app.user_token("escape@example.com", Role::User);
    let sid = shared(&app, &token)["id"].as_str().unwrap().to_string();
    use base64::Engine as _;
    let id =
        |p: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{sid}:{p}"));
    for path in ["escape.txt", "up/outside.txt"] {
        let r = app.rest(
            "GET",
            &format!("/rest/sources/{}/content", id(path)),
            &token,
            None,
        );
        assert!(
            r.status == 403 || r.status == 404,
            "{path}: {} {}",
            r.status,
            r.text
        );
        assert!(!r.text.contains("not for users"), "{}", r.text);
        let r = app.rest(
            "POST",
            &format!("/rest/sources/{}/actions/initiateDownload", id(path)),
            &token,
            None,
        );
        assert!(
            r.status == 403 || r.status == 404,
            "{path}: {} {}",
            r.status,
            r.text
        );
    }
    let r = app.rest(
        "GET",
        &format!("/rest/sources/{}/children", id("up")),
        &token,
        None,
    );
    assert!(
        r.status == 403 || r.status == 404,
        "{} {}",
        r.status,
        r.text
    );
    assert_eq!(app.count("1 = 1", "source_transfers"), 0);
}

#[test]
fn locks_decide_who_deletes_and_pins_mark_sources() {
    let (app, dir) = with_dir();
    let (ann, ann_token) = app.user_token("ann@example.com", Role::User);
    let (_, bob_token) = app.user_token("bob@example.com", Role::User);
    let sid = shared(&app, &ann_token)["id"].as_str().unwrap().to_string();
    let docs = child(&app, &ann_token, &sid, "docs");
    let a = child(&app, &ann_token, &docs, "a.txt");
    let b = child(&app, &ann_token, &docs, "b.bin");

    let r = app.rest(
        "PATCH",
        &format!("/rest/sources/actions/lock?id:in={a}"),
        &ann_token,
        None,
    );
    ok(&r, 200);
    // Locking again is no change; the file shows its holder to everyone.
    lock(&app, &ann_token, &a);
    let f = ok(
        &app.rest("GET", &format!("/rest/sources/files/{a}"), &bob_token, None),
        200,
    );
    assert_eq!(
        (f["locked"].clone(), f["lockedUserName"].clone()),
        (json!(true), json!("ann@example.com"))
    );
    assert_eq!(app.count(&format!("user_id = '{ann}'"), "source_locks"), 1);

    // Another user's lock: the whole call fails naming the id, nothing taken.
    let r = app.rest(
        "PATCH",
        &format!("/rest/sources/actions/lock?id:in={b},{a}"),
        &bob_token,
        None,
    );
    assert_error(&r, 403, "ERR_ENTITY_LOCKED");
    assert_eq!(r.json()["failedIds"], json!([a]));
    assert_eq!(app.count("1 = 1", "source_locks"), 1);
    // With partialSuccess what can be locked is.
    let r = app.rest(
        "PATCH",
        &format!("/rest/sources/actions/lock?id:in={b},{a}&partialSuccess=true"),
        &bob_token,
        None,
    );
    assert_eq!(ok(&r, 200)["failedIds"], json!([a]));
    assert_eq!(app.count("1 = 1", "source_locks"), 2);
    let r = app.rest(
        "PATCH",
        &format!("/rest/sources/actions/unlock?id:in={a}"),
        &bob_token,
        None,
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    let r = app.rest(
        "PATCH",
        &format!("/rest/sources/actions/lock?id:in={docs}"),
        &bob_token,
        None,
    );
    assert_error(&r, 422, "ERR_INVALID_PARAMETER");

    let r = app.rest(
        "DELETE",
        &format!("/rest/sources/files/{a}"),
        &bob_token,
        None,
    );
    assert_error(&r, 422, "ERR_FILE_IS_IN_USE_BY_OTHER_USER");
    let r = app.rest(
        "DELETE",
        &format!("/rest/sources/files/{a}?forceDelete=true"),
        &bob_token,
        None,
    );
    assert_error(&r, 422, "ERR_FILE_IS_IN_USE_BY_OTHER_USER");
    let r = app.rest(
        "DELETE",
        &format!("/rest/sources/files/{a}"),
        &ann_token,
        None,
    );
    assert_error(&r, 422, "ERR_FILE_IS_IN_USE_BY_CURRENT_USER");
    let r = app.rest(
        "DELETE",
        &format!("/rest/sources/folders/{docs}"),
        &ann_token,
        None,
    );
    assert_error(&r, 403, "ERR_ENTITY_CONTAINS_LOCKED_FILES");
    assert!(dir.path().join("root/docs/a.txt").exists());
    ok(
        &app.rest(
            "DELETE",
            &format!("/rest/sources/files/{a}?forceDelete=true"),
            &ann_token,
            None,
        ),
        200,
    );
    assert!(!dir.path().join("root/docs/a.txt").exists());
    assert_eq!(app.count(&format!("user_id = '{ann}'"), "source_locks"), 0);
    assert_eq!(app.count("subject = 'source.file.delete'", "events"), 1);

    // Bob unlocks his own, then the folder goes, and the root never does.
    unlock(&app, &bob_token, &b);
    ok(
        &app.rest(
            "DELETE",
            &format!("/rest/sources/folders/{docs}"),
            &bob_token,
            None,
        ),
        200,
    );
    assert!(!dir.path().join("root/docs").exists());
    let r = app.rest(
        "DELETE",
        &format!("/rest/sources/folders/{sid}"),
        &bob_token,
        None,
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");

    // Pins are each user's own.
    let pins = |token: &str, method: &str, body: Value| {
        app.rest(method, "/rest/users/me/pins", token, Some(body))
    };
    ok(
        &pins(&ann_token, "POST", json!({"ids": [sid], "type": "source"})),
        204,
    );
    let s = shared(&app, &ann_token);
    assert_eq!(s["pinned"], true, "{s}");
    assert!(s["pinnedTime"].is_string(), "{s}");
    assert_eq!(shared(&app, &bob_token)["pinned"], false);
    assert_error(
        &pins(&ann_token, "POST", json!({"ids": [sid], "type": "folder"})),
        422,
        "ERR_INVALID_PARAMETER",
    );
    assert_error(
        &pins(
            &ann_token,
            "POST",
            json!({"ids": [sid, "nothing"], "type": "source"}),
        ),
        422,
        "ERR_INVALID_PARAMETER",
    );
    assert_error(
        &pins(&ann_token, "POST", json!({"type": "source"})),
        422,
        "ERR_INPUT_REQUIRED",
    );
    ok(
        &pins(
            &ann_token,
            "DELETE",
            json!({"ids": [sid], "type": "source"}),
        ),
        204,
    );
    assert_eq!(shared(&app, &ann_token)["pinned"], false);
    assert_eq!(app.count("1 = 1", "source_pins"), 0);
}

fn send_file(
    app: &TestApp,
    token: &str,
    path: &str,
    name: &str,
    bytes: &[u8],
) -> coffer_tests::Resp {
    let (ct, body) = coffer_tests::multipart(&[("body", Some(name), bytes)]);
    app.rest_body("POST", path, token, &ct, body)
}

#[test]
fn files_are_written_to_a_source_and_replaced_there() {
    let (app, dir) = with_dir();
    let (_, token) = app.user_token("writer@example.com", Role::User);
    let sid = shared(&app, &token)["id"].as_str().unwrap().to_string();
    let docs = child(&app, &token, &sid, "docs");
    let payload: Vec<u8> = (0..300_000u32).map(|i| (i % 97) as u8).collect();
    let r = send_file(
        &app,
        &token,
        &format!("/rest/sources/{docs}/actions/file"),
        "new.bin",
        &payload,
    );
    let t = ok(&r, 200);
    assert_eq!(
        (t["status"].clone(), t["errCode"].clone()),
        (json!("2"), json!("0")),
        "{t}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("root/docs/new.bin")).unwrap(),
        payload
    );
    let new = child(&app, &token, &docs, "new.bin");
    assert_eq!(t["kPObjectId"], new.as_str(), "{t}");
    // The name is taken now; the file is replaced through its own id.
    let r = send_file(
        &app,
        &token,
        &format!("/rest/sources/{docs}/actions/file"),
        "new.bin",
        b"again",
    );
    assert_error(&r, 409, "ERR_ENTITY_EXISTS");
    let r = send_file(
        &app,
        &token,
        &format!("/rest/sources/actions/files/{new}"),
        "ignored.bin",
        b"replaced",
    );
    assert_eq!(ok(&r, 200)["status"], "2");
    assert_eq!(
        std::fs::read(dir.path().join("root/docs/new.bin")).unwrap(),
        b"replaced"
    );
    assert!(!dir.path().join("root/docs/ignored.bin").exists());
    let r = send_file(
        &app,
        &token,
        &format!("/rest/sources/{sid}/actions/file"),
        "../escape.bin",
        b"x",
    );
    assert_eq!(ok(&r, 200)["status"], "2");
    assert!(dir.path().join("root/escape.bin").exists());
    assert!(!dir.path().join("escape.bin").exists());
    // A read-only directory takes nothing.
    let archive = source_named(&app, &token, "archive")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = send_file(
        &app,
        &token,
        &format!("/rest/sources/{archive}/actions/file"),
        "n.txt",
        b"n",
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    assert!(!dir.path().join("archive/n.txt").exists());
    let old = child(&app, &token, &archive, "old.txt");
    let r = app.rest(
        "DELETE",
        &format!("/rest/sources/files/{old}"),
        &token,
        None,
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    assert!(dir.path().join("archive/old.txt").exists());
    let r = app.rest_body(
        "POST",
        &format!("/rest/sources/{docs}/actions/file"),
        &token,
        "application/json",
        b"{}".to_vec(),
    );
    assert_error(&r, 400, "ERR_REQUEST_INVALID_JSON");
    let (ct, body) = coffer_tests::multipart(&[("other", None, b"x".as_slice())]);
    let r = app.rest_body(
        "POST",
        &format!("/rest/sources/{docs}/actions/file"),
        &token,
        &ct,
        body,
    );
    assert_error(&r, 422, "ERR_INPUT_REQUIRED");
    assert_eq!(
        app.count("direction = 'out' AND state = 2", "source_transfers"),
        3
    );
}

#[test]
fn operator_directories_take_no_credentials_and_are_not_deleted() {
    let (app, _dir) = with_dir();
    let (_, token) = app.user_token("op@example.com", Role::User);
    let sid = shared(&app, &token)["id"].as_str().unwrap().to_string();
    for (method, path, body) in [
        ("DELETE", format!("/rest/sources/{sid}"), None),
        ("GET", format!("/rest/sources/{sid}/auth"), None),
        (
            "POST",
            format!("/rest/sources/{sid}/auth"),
            Some(json!({"login": "a", "password": "b"})),
        ),
    ] {
        assert_error(
            &app.rest(method, &path, &token, body),
            403,
            "ERR_ACCESS_USER",
        );
    }
    ok(
        &app.rest(
            "GET",
            &format!("/rest/sources/{sid}/authStatus"),
            &token,
            None,
        ),
        200,
    );
    let r = app.rest(
        "POST",
        "/rest/sources",
        &token,
        Some(json!({"name": "mine", "sourceUrl": "https://dav.example.com/", "sourceTypeId": "2"})),
    );
    assert_error(&r, 422, "ERR_INVALID_PARAMETER");
    let r = app.rest(
        "POST",
        "/rest/sources/auth",
        &token,
        Some(json!({"code": "c", "state": "s"})),
    );
    assert_error(&r, 422, "ERR_INVALID_PARAMETER");
    let r = app.rest(
        "POST",
        "/rest/sources/auth",
        &token,
        Some(json!({"state": "s"})),
    );
    assert_error(&r, 422, "ERR_INPUT_REQUIRED");
}

fn transfer_status(app: &TestApp, token: &str, tid: &str) -> Value {
    let v = ok(
        &app.rest(
            "GET",
            &format!("/rest/sources/files/actions/transferStatus?transactionId={tid}"),
            token,
            None,
        ),
        200,
    );
    assert_eq!(v["data"].as_array().unwrap().len(), 1, "{v}");
    v["data"][0].clone()
}

/// Starts a transfer of `id` into Coffer and runs the job queue: the transfer's last status.
fn transfer_in(app: &TestApp, token: &str, id: &str) -> Value {
    let t = ok(
        &app.rest(
            "POST",
            &format!("/rest/sources/{id}/actions/initiateDownload"),
            token,
            None,
        ),
        200,
    );
    assert_eq!(
        (t["status"].clone(), t["errCode"].clone()),
        (json!("0"), json!("0")),
        "{t}"
    );
    assert_eq!(t["kPObjectId"], id, "{t}");
    let tid = t["transactionId"].as_str().unwrap().to_string();
    // Not there before the job ran.
    let r = app.rest(
        "GET",
        &format!("/rest/sources/actions/downloadByTransaction?transactionId={tid}"),
        token,
        None,
    );
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    app.run_jobs();
    transfer_status(app, token, &tid)
}

#[test]
fn a_transfer_brings_a_file_into_my_folder_through_the_upload_rules() {
    let (app, dir) = with_dir();
    let (user, token) = app.user_token("transfer@example.com", Role::User);
    let (_, other) = app.user_token("other@example.com", Role::User);
    let sid = shared(&app, &token)["id"].as_str().unwrap().to_string();
    let docs = child(&app, &token, &sid, "docs");
    let b = child(&app, &token, &docs, "b.bin");
    let t = transfer_in(&app, &token, &b);
    assert_eq!(
        (t["status"].clone(), t["errCode"].clone()),
        (json!("2"), json!("0")),
        "{t}"
    );
    assert_eq!(t["avStatus"], "allowed", "{t}");
    let file_id = t["fileHandle"].as_str().unwrap().to_string();
    let f = ok(
        &app.rest("GET", &format!("/rest/files/{file_id}"), &token, None),
        200,
    );
    assert_eq!(f["name"], "b.bin", "{f}");
    assert_eq!(f["size"], 3000, "{f}");
    assert_eq!(f["parentId"], me(&app, &token)["syncdirId"], "{f}");
    let sum = sha3(&vec![7u8; 3000]);
    assert!(
        f["fingerprints"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["algo"] == "sha3-256" && p["hash"] == sum.as_str()),
        "{f}"
    );
    let tid = t["transactionId"].as_str().unwrap();
    let r = app.rest(
        "GET",
        &format!("/rest/sources/actions/downloadByTransaction?transactionId={tid}"),
        &token,
        None,
    );
    assert_eq!((r.status, r.bytes.len()), (200, 3000), "{}", r.text);
    // Another user sees neither the transfer nor its file.
    let r = app.rest(
        "GET",
        &format!("/rest/sources/files/actions/transferStatus?transactionId={tid}"),
        &other,
        None,
    );
    assert_eq!(ok(&r, 200)["data"], json!([]));
    let r = app.rest(
        "GET",
        &format!("/rest/sources/actions/downloadByTransaction?transactionId={tid}"),
        &other,
        None,
    );
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    assert_eq!(
        app.count("subject = 'source.transfer.complete'", "events"),
        1
    );

    // The same name again is a new version of that file.
    let again = transfer_in(&app, &token, &b);
    assert_eq!(again["fileHandle"], file_id.as_str(), "{again}");

    // A file that went away on the remote ends with errCode 2.
    let a = child(&app, &token, &docs, "a.txt");
    let t = ok(
        &app.rest(
            "POST",
            &format!("/rest/sources/{a}/actions/initiateDownload"),
            &token,
            None,
        ),
        200,
    );
    std::fs::remove_file(dir.path().join("root/docs/a.txt")).unwrap();
    app.run_jobs();
    let t = transfer_status(&app, &token, t["transactionId"].as_str().unwrap());
    assert_eq!(
        (t["status"].clone(), t["errCode"].clone()),
        (json!("99"), json!("2")),
        "{t}"
    );

    // Past the quota: errCode 3 and nothing stored.
    let files_before = app.count(&format!("owner_id = '{user}' AND kind = 'f'"), "objects");
    coffer_service::identity::settings::set(&app.ctx, "storageQuota", "4000", None).unwrap();
    std::fs::write(dir.path().join("root/readme.md"), vec![1u8; 2000]).unwrap();
    let readme = child(&app, &token, &sid, "readme.md");
    let t = transfer_in(&app, &token, &readme);
    assert_eq!(
        (t["status"].clone(), t["errCode"].clone()),
        (json!("99"), json!("3")),
        "{t}"
    );
    assert_eq!(t["fileHandle"], "", "{t}");
    assert_eq!(
        app.count(&format!("owner_id = '{user}' AND kind = 'f'"), "objects"),
        files_before
    );
    // A folder is not transferred.
    let r = app.rest(
        "POST",
        &format!("/rest/sources/{docs}/actions/initiateDownload"),
        &token,
        None,
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    let r = app.rest(
        "GET",
        "/rest/sources/files/actions/transferStatus",
        &token,
        None,
    );
    assert_error(&r, 422, "ERR_INPUT_REQUIRED");
}

// --- WebDAV -------------------------------------------------------------------------------

struct Dav {
    url: String,
    user: String,
    password: String,
    root: PathBuf,
}

#[path = "../../../crates/sources/tests/support/webdav_server.rs"]
mod webdav_server;

fn dav() -> &'static Dav {
    static DAV: OnceLock<Dav> = OnceLock::new();
    DAV.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/webdav-test-server.sh");
        let vars = webdav_server::vars(&script);
        let var = |name: &str| webdav_server::var(&vars, name);
        Dav {
            url: var("COFFER_TEST_WEBDAV_URL"),
            user: var("COFFER_TEST_WEBDAV_USER"),
            password: var("COFFER_TEST_WEBDAV_PASSWORD"),
            root: PathBuf::from(var("COFFER_TEST_WEBDAV_ROOT")),
        }
    })
}

/// A folder of the share for one test (tests share the server), and its URL.
fn dav_folder(name: &str) -> (String, PathBuf) {
    let d = dav();
    let path = d.root.join(name);
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).unwrap();
    (format!("{}{name}/", d.url), path)
}

fn dav_app() -> TestApp {
    // The test server listens on loopback.
    TestApp::builder()
        .config(|c| c.sources.allow_private = true)
        .spawn()
}

#[test]
fn a_webdav_source_keeps_its_credentials_sealed_and_asks_again_when_refused() {
    let d = dav();
    let (url, folder) = dav_folder("sealed");
    std::fs::write(folder.join("notes.txt"), b"remote notes").unwrap();
    std::fs::create_dir_all(folder.join("sub")).unwrap();
    let app = dav_app();
    let (user, token) = app.user_token("dav@example.com", Role::User);

    // Wrong credentials: refused, nothing stored.
    let r = app.rest(
        "POST",
        "/rest/sources",
        &token,
        Some(json!({"name": "Team", "sourceUrl": url, "sourceTypeId": "1", "username": d.user, "password": "wrong"})),
    );
    assert_error(&r, 403, "ERR_AUTH_EC_UPDATE_TOKEN");
    assert_eq!(app.count("1 = 1", "sources"), 0);

    let r = app.rest(
        "POST",
        "/rest/sources",
        &token,
        Some(json!({"name": "Team", "description": "the team's share", "sourceUrl": url, "sourceTypeId": "1", "username": d.user, "password": d.password})),
    );
    let s = ok(&r, 201);
    let sid = s["id"].as_str().unwrap().to_string();
    assert_eq!(
        r.header("location"),
        Some(format!("{}/rest/sources/{sid}", app.base).as_str())
    );
    assert_eq!(
        (
            s["sourceByUser"].clone(),
            s["sourceTypeId"].clone(),
            s["sourceUrl"].clone()
        ),
        (json!(true), json!(1), json!(url))
    );
    assert!(!r.text.contains(&d.password), "{}", r.text);
    for path in [
        "/rest/sources".to_string(),
        format!("/rest/sources/{sid}"),
        format!("/rest/sources/{sid}/auth"),
    ] {
        let r = app.rest("GET", &path, &token, None);
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        assert!(
            !r.text.contains(&d.password) && !r.text.contains("password"),
            "{path}: {}",
            r.text
        );
    }
    // Stored sealed: not the password in any form the row shows.
    let sealed = app.count(
        &format!("id = '{sid}' AND owner_id = '{user}' AND credentials IS NOT NULL AND needs_auth = false"),
        "sources",
    );
    assert_eq!(sealed, 1);
    let raw: Vec<u8> = app
        .ctx
        .read(|c| {
            Ok(coffer_store::sources::by_id(c, &sid)?
                .unwrap()
                .credentials
                .unwrap())
        })
        .unwrap();
    assert!(!raw
        .windows(d.password.len())
        .any(|w| w == d.password.as_bytes()));
    assert!(!raw.windows(d.user.len()).any(|w| w == d.user.as_bytes()));

    // Browsing goes through the stored credentials.
    let v = ok(
        &app.rest(
            "GET",
            &format!("/rest/sources/{sid}/children"),
            &token,
            None,
        ),
        200,
    );
    assert_eq!(names(&v), (vec!["notes.txt".into(), "sub".into()], 2));
    let notes = v["data"][0]["id"].as_str().unwrap().to_string();
    let r = app.rest(
        "GET",
        &format!("/rest/sources/{notes}/content"),
        &token,
        None,
    );
    assert_eq!(
        (r.status, r.bytes.as_slice()),
        (200, b"remote notes".as_slice())
    );
    ok(
        &app.rest(
            "GET",
            &format!("/rest/sources/{sid}/authStatus"),
            &token,
            None,
        ),
        200,
    );

    // Repeats of the name (in any case) or the address are refused.
    for body in [
        json!({"name": "TEAM", "sourceUrl": format!("{url}other/"), "sourceTypeId": "1"}),
        json!({"name": "Another", "sourceUrl": url, "sourceTypeId": "1"}),
    ] {
        let r = app.rest("POST", "/rest/sources", &token, Some(body));
        assert_error(&r, 422, "ERR_INVALID_PARAMETER");
    }
    assert_eq!(app.count("1 = 1", "sources"), 1);

    // A source without credentials on a server that wants them: the first refusal marks it,
    // later calls answer at once, new credentials make it work again.
    let (url2, folder2) = dav_folder("unsigned");
    std::fs::write(folder2.join("x.txt"), b"x").unwrap();
    let s2 = ok(
        &app.rest(
            "POST",
            "/rest/sources",
            &token,
            Some(json!({"name": "Unsigned", "sourceUrl": url2, "sourceTypeId": "1"})),
        ),
        201,
    );
    let s2 = s2["id"].as_str().unwrap().to_string();
    let r = app.rest("GET", &format!("/rest/sources/{s2}/children"), &token, None);
    assert_error(&r, 403, "ERR_AUTH_EC_UPDATE_TOKEN");
    assert_eq!(
        app.count(&format!("id = '{s2}' AND needs_auth = true"), "sources"),
        1
    );
    let r = app.rest(
        "GET",
        &format!("/rest/sources/{s2}/authStatus"),
        &token,
        None,
    );
    assert_error(&r, 403, "ERR_AUTH_EC_UPDATE_TOKEN");
    let r = app.rest(
        "POST",
        &format!("/rest/sources/{s2}/auth"),
        &token,
        Some(json!({"login": d.user, "password": "wrong"})),
    );
    assert_error(&r, 403, "ERR_AUTH_EC_UPDATE_TOKEN");
    ok(
        &app.rest(
            "POST",
            &format!("/rest/sources/{s2}/auth"),
            &token,
            Some(json!({"login": d.user, "password": d.password})),
        ),
        200,
    );
    let v = ok(
        &app.rest("GET", &format!("/rest/sources/{s2}/children"), &token, None),
        200,
    );
    assert_eq!(names(&v).0, vec!["x.txt".to_string()]);

    // Another user sees none of it.
    let (_, other) = app.user_token("other-dav@example.com", Role::User);
    for path in [
        format!("/rest/sources/{sid}"),
        format!("/rest/sources/{sid}/children"),
        format!("/rest/sources/files/{notes}"),
    ] {
        assert_error(
            &app.rest("GET", &path, &other, None),
            404,
            "ERR_ENTITY_NOT_FOUND",
        );
    }
    assert_error(
        &app.rest("DELETE", &format!("/rest/sources/{sid}"), &other, None),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    // Deleting takes the credentials with it; the remote keeps its files.
    let r = app.rest("DELETE", &format!("/rest/sources/{sid}"), &token, None);
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(app.count(&format!("id = '{sid}'"), "sources"), 0);
    assert!(folder.join("notes.txt").exists());
}

#[test]
fn a_webdav_file_is_transferred_in_with_its_fingerprint_and_refused_past_the_quota() {
    let d = dav();
    let (url, folder) = dav_folder("transfer");
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(folder.join("data.bin"), &big).unwrap();
    std::fs::write(folder.join("huge.bin"), vec![3u8; 50_000]).unwrap();
    let app = dav_app();
    let (user, token) = app.user_token("dav-transfer@example.com", Role::User);
    let s = ok(
        &app.rest(
            "POST",
            "/rest/sources",
            &token,
            Some(json!({"name": "Data", "sourceUrl": url, "sourceTypeId": "1", "username": d.user, "password": d.password})),
        ),
        201,
    );
    let sid = s["id"].as_str().unwrap().to_string();
    let data = child(&app, &token, &sid, "data.bin");
    let t = transfer_in(&app, &token, &data);
    assert_eq!(
        (t["status"].clone(), t["errCode"].clone()),
        (json!("2"), json!("0")),
        "{t}"
    );
    let f = ok(
        &app.rest(
            "GET",
            &format!("/rest/files/{}", t["fileHandle"].as_str().unwrap()),
            &token,
            None,
        ),
        200,
    );
    assert_eq!(f["size"], 200_000, "{f}");
    let sum = sha3(&big);
    assert!(
        f["fingerprints"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["algo"] == "sha3-256" && p["hash"] == sum.as_str()),
        "{f}"
    );

    let before = app.count(&format!("owner_id = '{user}' AND kind = 'f'"), "objects");
    coffer_service::identity::settings::set(&app.ctx, "storageQuota", "230000", None).unwrap();
    let huge = child(&app, &token, &sid, "huge.bin");
    let t = transfer_in(&app, &token, &huge);
    assert_eq!(
        (t["status"].clone(), t["errCode"].clone()),
        (json!("99"), json!("3")),
        "{t}"
    );
    assert_eq!(
        app.count(&format!("owner_id = '{user}' AND kind = 'f'"), "objects"),
        before
    );
    assert_eq!(app.count("subject = 'source.transfer.fail'", "events"), 1);
}

#[test]
fn source_addresses_must_be_public_unless_allowed() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("addr@example.com", Role::User);
    for (i, url) in [
        "http://127.0.0.1:9/dav/",
        "http://169.254.169.254/latest/",
        "http://10.1.2.3/",
        "http://[::1]/dav/",
        "ftp://files.example.com/",
        "not a url",
        "http://user:pw@dav.example.com/",
    ]
    .iter()
    .enumerate()
    {
        let r = app.rest(
            "POST",
            "/rest/sources",
            &token,
            Some(json!({"name": format!("s{i}"), "sourceUrl": url, "sourceTypeId": "1"})),
        );
        assert_error(&r, 422, "ERR_INVALID_PARAMETER");
        assert_eq!(
            r.json()["errors"][0]["field"],
            "sourceUrl",
            "{url}: {}",
            r.text
        );
    }
    let r = app.rest(
        "POST",
        "/rest/sources",
        &token,
        Some(json!({"name": "x", "sourceUrl": "https://dav.example.com/", "sourceTypeId": "7"})),
    );
    assert_error(&r, 422, "ERR_INVALID_PARAMETER");
    let r = app.rest(
        "POST",
        "/rest/sources",
        &token,
        Some(json!({"sourceUrl": "https://dav.example.com/", "sourceTypeId": "1"})),
    );
    assert_error(&r, 422, "ERR_INPUT_REQUIRED");
    let r = app.rest(
        "POST",
        "/rest/sources",
        &token,
        Some(json!({"name": "x", "sourceUrl": "https://dav.example.com/", "sourceTypeId": "1", "username": "u"})),
    );
    assert_error(&r, 422, "ERR_INPUT_REQUIRED");
    assert_eq!(app.count("1 = 1", "sources"), 0);
}

#[test]
fn no_source_offers_a_site_search_and_a_marked_source_asks_for_credentials_first() {
    let d = dav();
    let (url, _) = dav_folder("sites");
    let app = TestApp::builder()
        .config(|c| {
            c.sources.allow_private = true;
            c.sources.dirs = vec![OperatorDir {
                name: "shared".into(),
                root: std::env::temp_dir(),
                writable: false,
            }];
        })
        .spawn();
    let (_, token) = app.user_token("sites@example.com", Role::User);
    let dir = shared(&app, &token)["id"].as_str().unwrap().to_string();
    let r = app.rest(
        "GET",
        &format!("/rest/sources/{dir}/query?query=team&include_kw=true&limit=10&offset=0"),
        &token,
        None,
    );
    assert_error(&r, 403, "ERR_SITE_SEARCH");

    // A WebDAV source without the credentials its server wants: marked by the first call.
    let s = ok(
        &app.rest(
            "POST",
            "/rest/sources",
            &token,
            Some(json!({"name": "Sites", "sourceUrl": url, "sourceTypeId": "1"})),
        ),
        201,
    );
    let sid = s["id"].as_str().unwrap().to_string();
    assert_error(
        &app.rest(
            "GET",
            &format!("/rest/sources/{sid}/children"),
            &token,
            None,
        ),
        403,
        "ERR_AUTH_EC_UPDATE_TOKEN",
    );
    let query = format!("/rest/sources/{sid}/query?query=team");
    assert_error(
        &app.rest("GET", &query, &token, None),
        403,
        "ERR_AUTH_EC_UPDATE_TOKEN",
    );
    ok(
        &app.rest(
            "POST",
            &format!("/rest/sources/{sid}/auth"),
            &token,
            Some(json!({"login": d.user, "password": d.password})),
        ),
        200,
    );
    assert_error(
        &app.rest("GET", &query, &token, None),
        403,
        "ERR_SITE_SEARCH",
    );

    // Parameters are checked before anything else; a source the caller cannot see is unknown.
    for bad in ["include_kw=maybe", "include_container=2"] {
        let r = app.rest(
            "GET",
            &format!("/rest/sources/{sid}/query?{bad}"),
            &token,
            None,
        );
        assert_error(&r, 422, "ERR_INPUT_NOT_BOOLEAN");
    }
    let r = app.rest(
        "GET",
        &format!("/rest/sources/{sid}/query?sort=name"),
        &token,
        None,
    );
    assert_eq!(r.status, 400, "{}", r.text);
    let (_, other) = app.user_token("sites-other@example.com", Role::User);
    assert_error(
        &app.rest("GET", &query, &other, None),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    assert_error(
        &app.rest("GET", "/rest/sources/no-such-source/query", &token, None),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
}

/// The WebDAV source `name` over `url` of a new user, with the test server's login.
fn dav_source(app: &TestApp, email: &str, name: &str, url: &str) -> (String, String, String) {
    let d = dav();
    let (user, token) = app.user_token(email, Role::User);
    let s = ok(
        &app.rest(
            "POST",
            "/rest/sources",
            &token,
            Some(json!({"name": name, "sourceUrl": url, "sourceTypeId": "1", "username": d.user, "password": d.password})),
        ),
        201,
    );
    (user, token, s["id"].as_str().unwrap().to_string())
}

#[test]
fn the_holder_of_a_webdav_lock_replaces_and_deletes_the_file_through_it() {
    let (url, folder) = dav_folder("held");
    std::fs::write(folder.join("plan.txt"), b"first plan").unwrap();
    std::fs::write(folder.join("gone.txt"), b"to go").unwrap();
    let app = dav_app();
    let (user, token, sid) = dav_source(&app, "holder@example.com", "Held", &url);
    let plan = child(&app, &token, &sid, "plan.txt");
    let gone = child(&app, &token, &sid, "gone.txt");
    for id in [&plan, &gone] {
        lock(&app, &token, id);
    }
    // The server holds its own lock for each: a write without its token is refused there.
    assert_eq!(
        app.count(
            &format!("user_id = '{user}' AND remote_token IS NOT NULL"),
            "source_locks"
        ),
        2
    );
    let d = dav();
    let put = std::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT"])
        .args(["-u", &format!("{}:{}", d.user, d.password)])
        .args(["--data-binary", "sneaked in", &format!("{url}plan.txt")])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&put.stdout), "423");

    // The holder replaces the file through the lock, which stays.
    let r = send_file(
        &app,
        &token,
        &format!("/rest/sources/actions/files/{plan}"),
        "plan.txt",
        b"second plan",
    );
    assert_eq!(ok(&r, 200)["status"], "2", "{}", r.text);
    assert_eq!(
        std::fs::read(folder.join("plan.txt")).unwrap(),
        b"second plan"
    );
    let f = ok(
        &app.rest("GET", &format!("/rest/sources/files/{plan}"), &token, None),
        200,
    );
    assert_eq!(f["locked"], true, "{f}");

    // And deletes one it holds with forceDelete, the lock going with the file.
    let r = app.rest(
        "DELETE",
        &format!("/rest/sources/files/{gone}"),
        &token,
        None,
    );
    assert_error(&r, 422, "ERR_FILE_IS_IN_USE_BY_CURRENT_USER");
    ok(
        &app.rest(
            "DELETE",
            &format!("/rest/sources/files/{gone}?forceDelete=true"),
            &token,
            None,
        ),
        200,
    );
    assert!(!folder.join("gone.txt").exists());
    assert_eq!(app.count(&format!("user_id = '{user}'"), "source_locks"), 1);
}

#[test]
fn another_users_lock_on_a_directory_file_refuses_a_replace() {
    let (app, dir) = with_dir();
    let (_, ann) = app.user_token("ann-lock@example.com", Role::User);
    let (_, bob) = app.user_token("bob-lock@example.com", Role::User);
    let sid = shared(&app, &ann)["id"].as_str().unwrap().to_string();
    let docs = child(&app, &ann, &sid, "docs");
    let a = child(&app, &ann, &docs, "a.txt");
    lock(&app, &ann, &a);
    let r = send_file(
        &app,
        &bob,
        &format!("/rest/sources/actions/files/{a}"),
        "a.txt",
        b"bob was here",
    );
    assert_error(&r, 403, "ERR_ENTITY_LOCKED");
    assert_eq!(
        std::fs::read(dir.path().join("root/docs/a.txt")).unwrap(),
        b"hello from the directory"
    );
    // Its holder writes (a directory has no lock of its own to go through).
    let r = send_file(
        &app,
        &ann,
        &format!("/rest/sources/actions/files/{a}"),
        "a.txt",
        b"ann's words",
    );
    assert_eq!(ok(&r, 200)["status"], "2");
    assert_eq!(
        std::fs::read(dir.path().join("root/docs/a.txt")).unwrap(),
        b"ann's words"
    );
}

#[test]
fn a_transferred_file_is_checked_back_into_its_webdav_source() {
    let (url, folder) = dav_folder("checkin");
    std::fs::write(folder.join("report.txt"), b"draft one").unwrap();
    let app = dav_app();
    let (user, token, sid) = dav_source(&app, "checkin@example.com", "Reports", &url);
    let report = child(&app, &token, &sid, "report.txt");
    lock(&app, &token, &report);
    let t = transfer_in(&app, &token, &report);
    let file = t["fileHandle"].as_str().unwrap().to_string();

    // A new version in Coffer, then the check-in writes it back through the caller's lock.
    let mine = me(&app, &token)["syncdirId"].as_str().unwrap().to_string();
    let edited: Vec<u8> = (0..150_000u32).map(|i| (i % 83) as u8).collect();
    let r = send_file(
        &app,
        &token,
        &format!("/rest/folders/{mine}/actions/file"),
        "report.txt",
        &edited,
    );
    assert_eq!(ok(&r, 200)["id"], file.as_str(), "{}", r.text);
    app.run_jobs();
    let r = app.rest(
        "PATCH",
        &format!("/rest/files/{file}/actions/return"),
        &token,
        None,
    );
    let v = ok(&r, 200);
    assert_eq!(
        (
            v["id"].clone(),
            v["name"].clone(),
            v["size"].clone(),
            v["locked"].clone()
        ),
        (
            json!(report),
            json!("report.txt"),
            json!(150_000),
            json!(false)
        ),
        "{v}"
    );
    assert_eq!(std::fs::read(folder.join("report.txt")).unwrap(), edited);
    // The lock was given back (Coffer's and the server's), the copy went to the trash.
    assert_eq!(app.count(&format!("user_id = '{user}'"), "source_locks"), 0);
    let d = dav();
    let put = std::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT"])
        .args(["-u", &format!("{}:{}", d.user, d.password)])
        .args(["--data-binary", "free again", &format!("{url}report.txt")])
        .output()
        .unwrap();
    assert!(
        matches!(
            &*String::from_utf8_lossy(&put.stdout),
            "200" | "201" | "204"
        ),
        "{:?}",
        put
    );
    assert_eq!(
        app.count(
            &format!("id = '{file}' AND trashed_with IS NOT NULL"),
            "objects"
        ),
        1
    );
    assert_eq!(
        app.count(
            "subject = 'source.transfer.complete' AND data LIKE '%\"direction\":\"out\"%'",
            "events"
        ),
        1
    );
    // Once in the trash it is not returned again; a file that never came from a source is not
    // returnable at all.
    let r = app.rest(
        "PATCH",
        &format!("/rest/files/{file}/actions/return"),
        &token,
        None,
    );
    assert_error(&r, 403, "ERR_ENTITY_DELETED");
    let r = send_file(
        &app,
        &token,
        &format!("/rest/folders/{mine}/actions/file"),
        "local.txt",
        b"made here",
    );
    let local = ok(&r, 200)["id"].as_str().unwrap().to_string();
    let r = app.rest(
        "PATCH",
        &format!("/rest/files/{local}/actions/return"),
        &token,
        None,
    );
    assert_error(&r, 422, "ERR_INVALID_PARAMETER");
    assert_eq!(r.json()["errors"][0]["field"], "id", "{}", r.text);
}

#[test]
fn a_check_in_needs_the_sources_credentials_and_its_lock_free_of_others() {
    let (app, dir) = with_dir();
    let (_, ann) = app.user_token("ann-in@example.com", Role::User);
    let (_, bob) = app.user_token("bob-in@example.com", Role::User);
    let sid = shared(&app, &ann)["id"].as_str().unwrap().to_string();
    let docs = child(&app, &ann, &sid, "docs");
    let a = child(&app, &ann, &docs, "a.txt");
    let t = transfer_in(&app, &ann, &a);
    let file = t["fileHandle"].as_str().unwrap().to_string();
    // Bob holds the remote file: nothing is written, the copy stays.
    lock(&app, &bob, &a);
    let r = app.rest(
        "PATCH",
        &format!("/rest/files/{file}/actions/return"),
        &ann,
        None,
    );
    assert_error(&r, 403, "ERR_ENTITY_LOCKED");
    // Bob cannot return Ann's file either: he does not see it.
    let r = app.rest(
        "PATCH",
        &format!("/rest/files/{file}/actions/return"),
        &bob,
        None,
    );
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    unlock(&app, &bob, &a);
    std::fs::write(dir.path().join("root/docs/a.txt"), b"changed remotely").unwrap();
    let v = ok(
        &app.rest(
            "PATCH",
            &format!("/rest/files/{file}/actions/return"),
            &ann,
            None,
        ),
        200,
    );
    assert_eq!(v["size"], 24, "{v}");
    assert_eq!(
        std::fs::read(dir.path().join("root/docs/a.txt")).unwrap(),
        b"hello from the directory"
    );
}

#[test]
fn a_check_in_to_a_source_that_needs_credentials_asks_for_them() {
    let (url, folder) = dav_folder("checkin-auth");
    std::fs::write(folder.join("memo.txt"), b"memo").unwrap();
    let app = dav_app();
    let (_, token, sid) = dav_source(&app, "checkin-auth@example.com", "Memos", &url);
    let memo = child(&app, &token, &sid, "memo.txt");
    let t = transfer_in(&app, &token, &memo);
    let file = t["fileHandle"].as_str().unwrap().to_string();
    app.ctx
        .write(|c| Ok(coffer_store::sources::set_needs_auth(c, &sid)?))
        .unwrap();
    let r = app.rest(
        "PATCH",
        &format!("/rest/files/{file}/actions/return"),
        &token,
        None,
    );
    assert_error(&r, 403, "ERR_AUTH_EC_UPDATE_TOKEN");
    assert_eq!(std::fs::read(folder.join("memo.txt")).unwrap(), b"memo");
    assert_eq!(
        app.count(
            &format!("id = '{file}' AND trashed_with IS NULL"),
            "objects"
        ),
        1
    );
}

/// `GET /rest/sources/{id}/externalEdit` for `id`, as answered.
fn external_edit(app: &TestApp, token: &str, id: &str, query: &str) -> coffer_tests::Resp {
    app.rest(
        "GET",
        &format!("/rest/sources/{id}/externalEdit{query}"),
        token,
        None,
    )
}

/// How many refresh tokens stored under `token`'s hash end at `at` (1 when it does, 0 otherwise).
fn refresh_tokens_ending_at(app: &TestApp, token: &str, at: i64) -> i64 {
    let hash = coffer_oauth::secrets::hash_token(token);
    app.count(
        &format!("token_hash = '{hash}' AND expires_at = {at}"),
        "refresh_tokens",
    )
}

#[test]
fn an_external_editor_downloads_and_writes_back_one_webdav_file_with_a_short_lived_token() {
    let (url, folder) = dav_folder("external-edit");
    std::fs::write(folder.join("report.txt"), b"draft one").unwrap();
    std::fs::write(folder.join("other.txt"), b"not this one").unwrap();
    let app = dav_app();
    let (user, token, sid) = dav_source(&app, "editor@example.com", "Edit", &url);
    let file = child(&app, &token, &sid, "report.txt");
    let other = child(&app, &token, &sid, "other.txt");

    // The list parameters the interface names for the call are taken and change nothing.
    let before = coffer_tests::unix_now();
    let r = external_edit(
        &app,
        &token,
        &file,
        "?name:contains=x&orderBy=name:asc&offset=0&limit=10&with=anything&expire:gt=2024-01-01",
    );
    let after = coffer_tests::unix_now();
    let v = ok(&r, 200);
    assert_eq!(v["metadata"]["total"], 1, "{v}");
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{v}");
    let t = &data[0];
    let scope = format!("GET/sources/{file}/content POST/sources/actions/files/{file}");
    assert_eq!(t["scope"], scope.as_str(), "{t}");
    assert_eq!(t["userId"], user.as_str(), "{t}");
    let refresh = t["refreshToken"].as_str().unwrap().to_string();
    // It expires 300 seconds after it was made, as stored, and only its hash is stored.
    let end = (before + 300..=after + 300)
        .find(|at| t["expire"] == coffer_service::rfc3339(*at).as_str())
        .unwrap_or_else(|| panic!("expire 300 s from now: {t}"));
    assert_eq!(refresh_tokens_ending_at(&app, &refresh, end), 1);
    assert_eq!(
        app.count(&format!("token_hash = '{refresh}'"), "refresh_tokens"),
        0
    );
    assert_eq!(
        app.count(
            &format!(
                "token_families.ends_at = {end} AND token_families.user_id = '{user}' AND token_families.client_id = '{}' AND refresh_tokens.scope = '{scope}'",
                app.admin.client_id
            ),
            coffer_tests::REFRESH_TOKENS
        ),
        1
    );
    assert_eq!(
        app.count(
            &format!("subject = 'source.file.edit' AND data LIKE '%{file}%'"),
            "events"
        ),
        1
    );

    // Exchanged by the caller's client: an access token that expires by then, the same scope,
    // and a rotated refresh token that keeps the end.
    let r = crate::resources::refresh_grant(&app, &refresh);
    assert_eq!(r.status, 200, "{}", r.text);
    let tokens = r.json();
    assert_eq!(tokens["scope"], scope.as_str());
    let expires_in = tokens["expires_in"].as_i64().unwrap();
    assert!(expires_in > 0 && expires_in <= 300, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let rotated = tokens["refresh_token"].as_str().unwrap().to_string();
    assert_eq!(refresh_tokens_ending_at(&app, &rotated, end), 1);
    let access_hash = coffer_oauth::secrets::hash_token(&access);
    assert_eq!(
        app.count(
            &format!("token_hash = '{access_hash}' AND expires_at <= {end}"),
            "access_tokens"
        ),
        1
    );

    // It downloads the file and writes it back, which the WebDAV server then serves.
    let r = app.rest(
        "GET",
        &format!("/rest/sources/{file}/content"),
        &access,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.bytes, b"draft one");
    let r = send_file(
        &app,
        &access,
        &format!("/rest/sources/actions/files/{file}"),
        "report.txt",
        b"draft two, edited elsewhere",
    );
    assert_eq!(ok(&r, 200)["status"], "2", "{}", r.text);
    let d = dav();
    let get = std::process::Command::new("curl")
        .args(["-s", "-u", &format!("{}:{}", d.user, d.password)])
        .arg(format!("{url}report.txt"))
        .output()
        .unwrap();
    assert_eq!(get.stdout, b"draft two, edited elsewhere");

    // Another file, or any other call, is outside its scope.
    for (method, path) in [
        ("GET", format!("/rest/sources/{other}/content")),
        ("GET", format!("/rest/sources/files/{file}")),
        ("GET", format!("/rest/sources/{file}/preview")),
        ("DELETE", format!("/rest/sources/files/{file}")),
        ("GET", format!("/rest/sources/{file}/externalEdit")),
        ("GET", "/rest/users/me".to_string()),
    ] {
        let r = app.rest(method, &path, &access, None);
        assert_error(&r, 403, "ERR_ACCESS_USER");
    }
    let r = send_file(
        &app,
        &access,
        &format!("/rest/sources/actions/files/{other}"),
        "other.txt",
        b"overwritten",
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    assert_eq!(
        std::fs::read(folder.join("other.txt")).unwrap(),
        b"not this one"
    );
    // The caller's own token keeps its plain scope.
    me(&app, &token);
    ok(
        &app.rest("GET", &format!("/rest/sources/files/{other}"), &token, None),
        200,
    );

    // Past its end, the rotated token is refused as an expired refresh token is.
    app.execute(&format!(
        "UPDATE refresh_tokens SET expires_at = {past} WHERE expires_at = {end}; \
         UPDATE token_families SET ends_at = {past} WHERE ends_at = {end}",
        past = coffer_tests::unix_now() - 1
    ));
    let r = crate::resources::refresh_grant(&app, &rotated);
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.json()["error"], "invalid_grant", "{}", r.text);
    assert!(r.text.contains("expired"), "{}", r.text);
}

#[test]
fn an_external_edit_token_is_only_made_for_a_file_the_caller_may_read_and_write() {
    let (app, _dir) = with_dir();
    let (_, ann) = app.user_token("ann-edit@example.com", Role::User);
    let (_, bob) = app.user_token("bob-edit@example.com", Role::User);
    let sid = shared(&app, &ann)["id"].as_str().unwrap().to_string();
    let docs = child(&app, &ann, &sid, "docs");
    let a = child(&app, &ann, &docs, "a.txt");
    let readme = child(&app, &ann, &sid, "readme.md");
    let archive = source_named(&app, &ann, "archive")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let old = child(&app, &ann, &archive, "old.txt");

    // A folder, a source's root and an id that is none of the caller's are not found.
    for id in [docs.as_str(), sid.as_str(), "bm8tc3VjaDpmaWxl", "x"] {
        assert_error(
            &external_edit(&app, &ann, id, ""),
            404,
            "ERR_ENTITY_NOT_FOUND",
        );
    }
    // A read-only directory takes no writes back.
    assert_error(&external_edit(&app, &ann, &old, ""), 403, "ERR_ACCESS_USER");
    // A file another user holds locked.
    lock(&app, &bob, &a);
    assert_error(&external_edit(&app, &ann, &a, ""), 403, "ERR_ENTITY_LOCKED");
    // A caller whose token could not make both calls gets no token that could.
    let (_, pw) = app.user("cat-edit@example.com", Role::User);
    let r = app.form(
        "/oauth/token",
        &[
            ("grant_type", "password"),
            ("username", "cat-edit@example.com"),
            ("password", &pw),
            ("client_id", &app.admin.client_id),
            ("client_secret", &app.admin.client_secret),
            ("scope", "GET/sources/*"),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let narrow = r.json()["access_token"].as_str().unwrap().to_string();
    let r = app.rest(
        "GET",
        &format!("/rest/sources/{readme}/content"),
        &narrow,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.bytes, b"# read me");
    assert_error(
        &external_edit(&app, &narrow, &readme, ""),
        403,
        "ERR_ACCESS_USER",
    );
    // An unknown list parameter is still refused.
    assert_error(
        &external_edit(&app, &ann, &readme, "?bogus=1"),
        400,
        "ERR_REQUEST_INVALID_FILTER",
    );
    assert_eq!(
        app.count(
            "refresh_tokens.scope LIKE 'GET/sources/%/content %'",
            coffer_tests::REFRESH_TOKENS
        ),
        0
    );
    // A writable directory's file: a token.
    let v = ok(&external_edit(&app, &ann, &readme, ""), 200);
    assert_eq!(
        v["data"][0]["scope"],
        format!("GET/sources/{readme}/content POST/sources/actions/files/{readme}")
    );
}
