//! Search end to end (`GET /rest/search`, `GET /rest/query`): names found the moment the upload
//! answers and text once the extraction job ran; the permission rule on every path a hit can
//! take (names, text, paths, folders, counts, passages, suggestions) for owners, Viewers,
//! Uploaders, strangers and removed members, the nearest membership deciding; the trash; new
//! versions replacing their file's text; documents, damaged files and zip bombs; mail in the
//! caller's own and active shared mailboxes; ranking and pages; and the refusals of bad input.

use coffer_domain::Role;
use coffer_tests::{assert_error, mkdir, multipart, my_folder, upload_ok, Resp, TestApp};
use serde_json::{json, Value};
use std::io::Write;

fn get(app: &TestApp, token: &str, path: &str) -> Value {
    let r = app.rest("GET", path, token, None);
    assert_eq!(r.status, 200, "{path}: {}", r.text);
    r.json()
}

/// `GET /rest/query` with full text over files and folders.
fn query(app: &TestApp, token: &str, words: &str) -> Value {
    get(
        app,
        token,
        &format!("/rest/query?includeContent=true&searchType=f,d&query={words}"),
    )
}

fn names(v: &Value, kind: &str) -> Vec<String> {
    let mut out: Vec<String> = v[kind]
        .as_array()
        .unwrap_or_else(|| panic!("no {kind}: {v}"))
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

fn share(app: &TestApp, owner: &str, folder: &str, user: &str, role: i64) {
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{folder}/members"),
        owner,
        Some(json!({"userIds": [user], "roleId": role})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
}

fn docx(text: &str) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    w.start_file(
        "word/document.xml",
        zip::write::SimpleFileOptions::default(),
    )
    .unwrap();
    write!(
        w,
        r#"<?xml version="1.0"?><w:document xmlns:w="w"><w:body><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:body></w:document>"#
    )
    .unwrap();
    w.finish().unwrap().into_inner()
}

/// The jobs of the queue with their errors, for assertion messages.
fn jobs(app: &TestApp) -> String {
    use coffer_store::schema::jobs::dsl as j;
    use diesel::prelude::*;
    app.ctx
        .with_conn(|c| {
            Ok(coffer_store::db_run!(c => j::jobs
                .select((j::kind, j::state, j::last_error))
                .load::<(String, String, Option<String>)>(c))
            .map_err(coffer_store::StoreError::from)?)
        })
        .map(|rows| format!("{rows:?}"))
        .unwrap_or_else(|e| format!("{e:?}"))
}

fn state(app: &TestApp, file: &str) -> coffer_store::search::TextState {
    app.ctx
        .with_conn(|c| Ok(coffer_store::search::state(c, file)?))
        .unwrap()
        .expect("a file has an extraction state")
}

#[test]
fn names_are_found_at_once_and_text_once_extracted() {
    let app = TestApp::spawn();
    let (_, t) = app.user_token("ann@example.com", Role::User);
    let root = my_folder(&app, &t);
    let reports = mkdir(&app, &t, &root, "Reports 2024");
    let f = upload_ok(
        &app,
        &t,
        &reports,
        "Quarterly Budget.txt",
        b"The zephyr account grew; see the ledger.",
    );
    let fid = id(&f);
    // The name at once, before any job ran.
    let v = query(&app, &t, "budget");
    assert_eq!(names(&v, "files"), ["Quarterly Budget.txt"]);
    assert_eq!(v["totalFiles"], 1);
    assert_eq!(v["totalFolders"], 0);
    assert_eq!(v["fullTextSearch"], true);
    assert_eq!(v["files"][0]["path"], f["path"], "{v}");
    // The text only once extracted; never indexed as empty meanwhile.
    assert_eq!(query(&app, &t, "zephyr")["totalFiles"], 0);
    assert_eq!(state(&app, &fid).state, "pending");
    app.run_jobs();
    let st = state(&app, &fid);
    assert_eq!(
        (st.state.as_str(), st.error),
        ("indexed", None),
        "{}",
        jobs(&app)
    );
    let v = query(&app, &t, "zephyr");
    assert_eq!(names(&v, "files"), ["Quarterly Budget.txt"]);
    let passage = v["fileHighlightings"][&fid].as_str().unwrap();
    assert!(passage.contains("<em>zephyr</em>"), "{passage}");
    // Every word must occur; the last may be the start of one.
    assert_eq!(query(&app, &t, "zephyr%20led")["totalFiles"], 1);
    assert_eq!(query(&app, &t, "zephyr%20absent")["totalFiles"], 0);
    // Without includeContent only names count.
    let v = get(
        &app,
        &t,
        "/rest/query?includeContent=false&searchType=f&query=zephyr",
    );
    assert_eq!(v["totalFiles"], 0);
    // Folders by name; /rest/search in the vendor's shape.
    let v = get(&app, &t, "/rest/search?content:contains=reports");
    assert_eq!(names(&v, "folders"), ["Reports 2024"]);
    assert!(v["id"].as_str().is_some_and(|s| !s.is_empty()), "{v}");
    assert_eq!(v["fullTextSearch"], true);
    assert_eq!(v["emails"], json!([]));
    assert_eq!(v["metadata"]["folders"], 1);
    assert_eq!(v["metadata"]["totalFoldersCount"], 1);
    assert_eq!(v["metadata"]["files"], 0);
    let v = get(&app, &t, "/rest/search?content=zephyr&searchType=f");
    assert_eq!(names(&v, "files"), ["Quarterly Budget.txt"]);
    // Paths override the rest; filters by type, extension, size and date.
    let v = get(
        &app,
        &t,
        "/rest/search?path:contains=reports%202024/quarterly&content=nothing",
    );
    assert_eq!(names(&v, "files"), ["Quarterly Budget.txt"]);
    let path = f["path"].as_str().unwrap().to_string();
    let v = get(
        &app,
        &t,
        &format!("/rest/search?path={}", path.replace(' ', "%20")),
    );
    assert_eq!(names(&v, "files"), ["Quarterly Budget.txt"]);
    let v = get(&app, &t, "/rest/search?file_type=Text&searchType=f");
    assert_eq!(v["metadata"]["files"], 1);
    let v = get(&app, &t, "/rest/search?file_type=PDF&searchType=f");
    assert_eq!(v["metadata"]["files"], 0);
    let v = get(
        &app,
        &t,
        "/rest/query?includeContent=false&searchType=f&extensions=.TXT&fileSize:gt=10",
    );
    assert_eq!(v["totalFiles"], 1);
    let v = get(&app, &t, "/rest/search?searchType=f&created:lt=2001-01-01");
    assert_eq!(v["metadata"]["files"], 0);
    let v = get(
        &app,
        &t,
        &format!("/rest/search?searchType=f,d&objectId={reports}"),
    );
    assert_eq!(names(&v, "files"), ["Quarterly Budget.txt"]);
    assert_eq!(v["metadata"]["folders"], 0);
}

/// The callers of the permission tests: an owner with a folder shared with a Viewer and an
/// Uploader and a private one, and a stranger (tokens, and the Viewer's id to remove them).
struct Cast {
    owner: String,
    viewer_id: String,
    viewer: String,
    uploader: String,
    stranger: String,
    shared: String,
    private: String,
}

fn cast(app: &TestApp) -> Cast {
    let (_, owner) = app.user_token("owner@example.com", Role::User);
    let (viewer_id, viewer) = app.user_token("viewer@example.com", Role::User);
    let (uploader_id, uploader) = app.user_token("uploader@example.com", Role::User);
    let (_, stranger) = app.user_token("stranger@example.com", Role::User);
    let root = my_folder(app, &owner);
    let shared = mkdir(app, &owner, &root, "Project Falcon");
    let private = mkdir(app, &owner, &root, "Private");
    share(app, &owner, &shared, &viewer_id, 4);
    share(app, &owner, &shared, &uploader_id, 5);
    Cast {
        owner,
        viewer_id,
        viewer,
        uploader,
        stranger,
        shared,
        private,
    }
}

/// Owner, Viewer, Uploader, stranger and a removed member, on every path a hit can take.
#[test]
fn each_caller_finds_only_what_they_may_open() {
    let app = TestApp::spawn();
    let Cast {
        owner,
        viewer_id,
        viewer,
        uploader,
        stranger,
        shared,
        private,
    } = cast(&app);
    upload_ok(
        &app,
        &owner,
        &shared,
        "falcon plan.txt",
        b"marmalade strategy",
    );
    upload_ok(
        &app,
        &owner,
        &private,
        "falcon secret.txt",
        b"marmalade secret",
    );
    upload_ok(
        &app,
        &uploader,
        &shared,
        "falcon upload.txt",
        b"marmalade drop",
    );
    app.run_jobs();

    // The owner sees all three by name and by text.
    assert_eq!(query(&app, &owner, "falcon")["totalFiles"], 3);
    assert_eq!(query(&app, &owner, "marmalade")["totalFiles"], 3);

    // A Viewer: the shared folder's files by name and by text (Viewers preview), never the
    // private one's, nor any count, passage or suggestion from it.
    let v = query(&app, &viewer, "falcon");
    assert_eq!(names(&v, "files"), ["falcon plan.txt", "falcon upload.txt"]);
    assert_eq!(names(&v, "folders"), ["Project Falcon"]);
    let v = query(&app, &viewer, "marmalade");
    assert_eq!(v["totalFiles"], 2, "{v}");
    assert!(!v.to_string().contains("secret"), "{v}");
    let v = get(
        &app,
        &viewer,
        "/rest/query?includeContent=true&searchType=f&query=secrat&spellCheck=true",
    );
    assert_eq!(v["totalFiles"], 0);
    assert!(!v.to_string().contains("secret"), "{v}");
    let v = get(&app, &viewer, "/rest/search?path:contains=private");
    assert_eq!(
        (
            v["metadata"]["files"].clone(),
            v["metadata"]["folders"].clone()
        ),
        (json!(0), json!(0))
    );
    let v = get(
        &app,
        &viewer,
        "/rest/query?includeContent=true&searchType=f&fileContent=secret",
    );
    assert_eq!(v["totalFiles"], 0);
    // Shared only: what others shared with the caller.
    let v = get(
        &app,
        &viewer,
        "/rest/search?searchFilter=shared&searchType=f",
    );
    assert_eq!(v["metadata"]["files"], 2);
    assert_eq!(
        get(
            &app,
            &owner,
            "/rest/search?searchFilter=shared&searchType=f"
        )["metadata"]["files"],
        0
    );

    // An Uploader sees only its own uploads, and only by name (it may not preview).
    let v = query(&app, &uploader, "falcon");
    assert_eq!(names(&v, "files"), ["falcon upload.txt"]);
    assert_eq!(query(&app, &uploader, "marmalade")["totalFiles"], 0);
    assert_eq!(query(&app, &uploader, "plan")["totalFiles"], 0);

    // A folder inside the shared one is found once, as a folder, by the start of its name:
    // candidates first, where a candidate in a shared folder is taken as its file only when
    // its kind says so.
    mkdir(&app, &owner, &shared, "Falcon Drafts");
    let v = get(
        &app,
        &viewer,
        "/rest/search?content:startswith=falcon&searchType=f,d",
    );
    assert_eq!(names(&v, "folders"), ["Falcon Drafts"], "{v}");
    assert_eq!(
        names(&v, "files"),
        ["falcon plan.txt", "falcon upload.txt"],
        "{v}"
    );
    assert_eq!(
        (
            v["metadata"]["files"].clone(),
            v["metadata"]["folders"].clone()
        ),
        (json!(2), json!(1)),
        "{v}"
    );

    // A stranger: nothing at all.
    for path in [
        "/rest/query?includeContent=true&searchType=f,d,e&query=falcon",
        "/rest/query?includeContent=true&searchType=f&query=marmalade&spellCheck=true",
        "/rest/search?content:contains=falcon",
        "/rest/search?path:contains=falcon",
        "/rest/search?searchType=f,d",
    ] {
        let v = get(&app, &stranger, path);
        let text = v.to_string();
        assert!(
            !text.contains("falcon") && !text.contains("marmalade"),
            "{path}: {text}"
        );
        assert_eq!(v["files"], json!([]), "{path}");
    }

    // Removed from the folder: nothing from it any more, at once.
    let r = app.rest(
        "DELETE",
        &format!("/rest/folders/{shared}/members/{viewer_id}"),
        &owner,
        None,
    );
    assert!(r.status == 200 || r.status == 204, "{}", r.text);
    assert_eq!(query(&app, &viewer, "falcon")["totalFiles"], 0);
    assert_eq!(query(&app, &viewer, "marmalade")["totalFiles"], 0);

    // Trashed objects are not found, by name or text.
    let r = app.rest("DELETE", &format!("/rest/folders/{private}"), &owner, None);
    assert!(r.status < 300, "{}", r.text);
    assert_eq!(query(&app, &owner, "secret")["totalFiles"], 0);
    assert_eq!(query(&app, &owner, "marmalade")["totalFiles"], 2);
}

/// Text held by many documents is searched from the caller's reach rather than from the hits
/// (past 3,000 documents): the same rule decides there. Filler documents (mail of nobody) make
/// the words common without files to find.
#[test]
fn common_words_are_searched_from_the_reach_by_the_same_rule() {
    let app = TestApp::spawn();
    let Cast {
        owner,
        viewer,
        uploader,
        stranger,
        shared,
        private,
        ..
    } = cast(&app);
    upload_ok(&app, &owner, &shared, "plan.txt", b"marmalade strategy");
    upload_ok(&app, &owner, &private, "secret.txt", b"marmalade secret");
    upload_ok(&app, &uploader, &shared, "drop.txt", b"marmalade drop");
    app.run_jobs();
    // On SQLite a search reads the index within the ranges of the owners whose files the caller
    // may reach: the filler lies in the owner's range (documents of files that are gone), so
    // that it counts for everyone the owner shares with.
    let filler = match app.ctx.db.backend() {
        coffer_store::Backend::Sqlite => format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) \
             INSERT INTO search_docs (id, kind, ref_id) \
             SELECT (SELECT slot FROM search_owners WHERE user_id = \
                       (SELECT owner_id FROM objects WHERE id = '{shared}')) * {w} + 1000000 + i, \
                    'f', 'filler-' || i FROM n; \
             INSERT INTO search_fts (rowid, title, body) \
             SELECT id, '', 'marmalade mars' FROM search_docs WHERE ref_id LIKE 'filler-%';",
            w = coffer_store::search::SLOT_WIDTH
        ),
        coffer_store::Backend::Postgres => {
            "INSERT INTO search_docs (kind, ref_id, title, body, tsv) \
             SELECT 'm', 'filler-' || i, '', 'marmalade mars', search_tsv('', 'marmalade mars') \
             FROM generate_series(1, 3000) i;"
                .into()
        }
    };
    let mut conn = app.ctx.db.get().unwrap();
    coffer_store::batch_execute(&mut conn, &filler).unwrap();
    drop(conn);

    // The owner: all three by text, and by the start of a word too.
    assert_eq!(query(&app, &owner, "marmalade")["totalFiles"], 3);
    let v = get(
        &app,
        &owner,
        "/rest/search?content:startswith=marma&searchType=f",
    );
    assert_eq!(v["metadata"]["files"], 3, "{v}");
    // A Viewer: the shared folder's two, never the private one's, nor its passage.
    let v = query(&app, &viewer, "marmalade");
    assert_eq!(v["totalFiles"], 2, "{v}");
    assert_eq!(
        v["fileHighlightings"].as_object().map(|m| m.len()),
        Some(2),
        "{v}"
    );
    assert!(!v.to_string().contains("secret"), "{v}");
    let v = get(
        &app,
        &viewer,
        "/rest/search?content:startswith=marma&searchType=f",
    );
    assert_eq!(names(&v, "files"), ["drop.txt", "plan.txt"], "{v}");
    // An Uploader may not preview: nothing by text.
    assert_eq!(query(&app, &uploader, "marmalade")["totalFiles"], 0);
    let v = get(
        &app,
        &uploader,
        "/rest/search?content:startswith=marma&searchType=f",
    );
    assert_eq!(v["metadata"]["files"], 0, "{v}");
    // A stranger: nothing.
    assert_eq!(query(&app, &stranger, "marmalade")["totalFiles"], 0);
    let v = get(
        &app,
        &stranger,
        "/rest/search?content:startswith=marma&searchType=f",
    );
    assert_eq!(v["metadata"]["files"], 0, "{v}");
}

/// A file's document follows the file to its new owner (a folder moved into another user's
/// tree): whoever reaches the file through the new owner's shares finds it by its text, by a
/// whole word and by the start of one, and a member removed stops finding it at once. On
/// SQLite the index is read within the owners' ranges, so a document left in its old owner's
/// range would be lost here, and one read outside the caller's reach would leak.
#[test]
fn a_files_text_follows_it_to_a_new_owner_and_only_its_readers_find_it() {
    let app = TestApp::spawn();
    let (ann_id, ann) = app.user_token("ann@example.com", Role::User);
    let (bob_id, bob) = app.user_token("bob@example.com", Role::User);
    let (cay_id, cay) = app.user_token("cay@example.com", Role::User);
    let (_, dan) = app.user_token("dan@example.com", Role::User);
    // Ann's folder Team: Bob may add to it (Collaborator), Cay reads it (Viewer).
    let team = mkdir(&app, &ann, &my_folder(&app, &ann), "Team");
    share(&app, &ann, &team, &bob_id, 2);
    share(&app, &ann, &team, &cay_id, 4);
    // Bob's own folder, with a file Ann and Cay cannot see, and a shared file of Ann's.
    let mine = mkdir(&app, &bob, &my_folder(&app, &bob), "Drafts");
    let f = id(&upload_ok(
        &app,
        &bob,
        &mine,
        "zeta.txt",
        b"quokka migration report",
    ));
    upload_ok(&app, &ann, &team, "alpha.txt", b"quokka census");
    app.run_jobs();
    let text = |t: &str, words: &str| {
        get(
            &app,
            t,
            &format!("/rest/query?includeContent=true&searchType=f&query={words}"),
        )
    };
    let start = |t: &str, words: &str| {
        get(
            &app,
            t,
            &format!("/rest/search?content:startswith={words}&searchType=f,d"),
        )
    };
    assert_eq!(
        names(&text(&bob, "quokka"), "files"),
        ["alpha.txt", "zeta.txt"]
    );
    assert_eq!(names(&text(&ann, "quokka"), "files"), ["alpha.txt"]);
    assert_eq!(names(&text(&cay, "quokka"), "files"), ["alpha.txt"]);
    assert_eq!(names(&start(&cay, "quok"), "files"), ["alpha.txt"]);
    assert_eq!(text(&cay, "migration")["totalFiles"], 0);
    assert_eq!(text(&dan, "quokka")["totalFiles"], 0);

    // Bob moves his folder into Ann's Team: the file is Ann's now.
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{mine}/actions/move"),
        &bob,
        Some(json!({"destinationFolderId": team})),
    );
    assert!(r.status < 300, "{}", r.text);
    let r = app.rest("GET", &format!("/rest/files/{f}"), &ann, None);
    assert_eq!(r.status, 200, "{}", r.text);
    if app.ctx.db.backend() == coffer_store::Backend::Sqlite {
        // Its document lies in Ann's range.
        assert_eq!(
            app.count(
                &format!(
                    "kind = 'f' AND ref_id = '{f}' AND id / {w} = \
                     (SELECT slot FROM search_owners WHERE user_id = '{ann_id}')",
                    w = coffer_store::search::SLOT_WIDTH
                ),
                "search_docs"
            ),
            1
        );
    }
    for t in [&ann, &bob, &cay] {
        assert_eq!(
            names(&text(t, "quokka"), "files"),
            ["alpha.txt", "zeta.txt"]
        );
        assert_eq!(names(&text(t, "migration"), "files"), ["zeta.txt"]);
        assert_eq!(names(&start(t, "quok"), "files"), ["alpha.txt", "zeta.txt"]);
        assert_eq!(names(&start(t, "migr"), "files"), ["zeta.txt"]);
    }
    let v = text(&cay, "migration");
    assert_eq!(
        v["fileHighlightings"].as_object().map(|m| m.len()),
        Some(1),
        "{v}"
    );
    assert_eq!(text(&dan, "quokka")["totalFiles"], 0);
    assert_eq!(start(&dan, "quok")["metadata"]["files"], 0);

    // A new version keeps it where it is; its new text is found, the old is not.
    let (ct, body) = multipart(&[("body", Some("zeta.txt"), b"quokka treaty")]);
    let r = app.rest_body(
        "POST",
        &format!("/rest/files/{f}/versions"),
        &ann,
        &ct,
        body,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    app.run_jobs();
    assert_eq!(names(&text(&cay, "treaty"), "files"), ["zeta.txt"]);
    assert_eq!(text(&cay, "migration")["totalFiles"], 0);

    // Cay removed from Team: nothing of it any more, at once.
    let r = app.rest(
        "DELETE",
        &format!("/rest/folders/{team}/members/{cay_id}"),
        &ann,
        None,
    );
    assert!(r.status < 300, "{}", r.text);
    assert_eq!(text(&cay, "quokka")["totalFiles"], 0);
    assert_eq!(start(&cay, "quok")["metadata"]["files"], 0);
    assert_eq!(names(&text(&bob, "treaty"), "files"), ["zeta.txt"]);
}

/// The names of one kind as found, in the order given.
fn ordered(v: &Value, kind: &str) -> Vec<String> {
    v[kind]
        .as_array()
        .unwrap_or_else(|| panic!("no {kind}: {v}"))
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_nearest_membership_decides_in_every_criterion_and_the_trash_hides() {
    let app = TestApp::spawn();
    let (_, owner) = app.user_token("owner@example.com", Role::User);
    let (member_id, member) = app.user_token("member@example.com", Role::User);
    let root = my_folder(&app, &owner);
    let atlas = mkdir(&app, &owner, &root, "Atlas");
    let inner = mkdir(&app, &owner, &atlas, "Inner");
    // A Viewer of the folder, but only an Uploader of the folder inside it: the nearer
    // membership decides there.
    share(&app, &owner, &atlas, &member_id, 4);
    share(&app, &owner, &inner, &member_id, 5);
    let one = id(&upload_ok(
        &app,
        &owner,
        &atlas,
        "atlas one.txt",
        b"zephyr alpha",
    ));
    upload_ok(&app, &owner, &inner, "atlas two.txt", b"zephyr beta");
    upload_ok(&app, &member, &inner, "atlas mine.txt", b"zephyr gamma");
    app.run_jobs();

    assert_eq!(query(&app, &owner, "zephyr")["totalFiles"], 3);
    let v = query(&app, &member, "atlas");
    assert_eq!(
        names(&v, "files"),
        ["atlas mine.txt", "atlas one.txt"],
        "{v}"
    );
    assert_eq!(names(&v, "folders"), ["Atlas"], "{v}");
    // Each hit's path is the one the member sees on the file itself: from the nearest folder
    // shared with them (the page's paths are read together).
    for f in v["files"].as_array().unwrap() {
        let one = get(&app, &member, &format!("/rest/files/{}", id(f)));
        assert_eq!(f["path"], one["path"], "{v}");
    }
    let paths: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["Inner/atlas mine.txt", "Atlas/atlas one.txt"],
        "{v}"
    );
    // By text only what the nearest role may preview: not even its own upload as an Uploader.
    let v = query(&app, &member, "zephyr");
    assert_eq!(names(&v, "files"), ["atlas one.txt"], "{v}");
    assert!(!v.to_string().contains("beta"), "{v}");
    // Under a folder, and by the path as the member sees it (from the folder shared with them).
    let v = get(
        &app,
        &member,
        &format!("/rest/search?objectId={atlas}&searchType=f,d"),
    );
    assert_eq!(
        names(&v, "files"),
        ["atlas mine.txt", "atlas one.txt"],
        "{v}"
    );
    assert_eq!(names(&v, "folders"), ["Inner"], "{v}");
    let v = get(&app, &member, "/rest/search?path=atlas/atlas%20one.txt");
    assert_eq!(names(&v, "files"), ["atlas one.txt"], "{v}");
    let v = get(&app, &member, "/rest/search?path:contains=two");
    assert_eq!(v["metadata"]["files"], 0, "{v}");
    // A page past the end still counts every match.
    let v = get(
        &app,
        &owner,
        "/rest/query?includeContent=true&searchType=f&query=zephyr&limit=1&offset=5",
    );
    assert_eq!(
        (v["files"].clone(), v["totalFiles"].clone()),
        (json!([]), json!(3))
    );
    let v = get(
        &app,
        &owner,
        "/rest/query?includeContent=true&searchType=f&query=zephyr&orderBy=name&orderType=asc&limit=2&offset=1",
    );
    assert_eq!(
        ordered(&v, "files"),
        ["atlas one.txt", "atlas two.txt"],
        "{v}"
    );

    // A description is folded as names are, beyond ASCII.
    let r = app.rest(
        "PUT",
        &format!("/rest/folders/{inner}"),
        &owner,
        Some(json!({"description": "ÜBERBLICK der Karten"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    for path in [
        "/rest/search?content:contains=%C3%BCberblick&searchType=d",
        "/rest/search?description:startswith=%C3%BCberb&searchType=d",
    ] {
        let v = get(&app, &member, path);
        assert_eq!(names(&v, "folders"), ["Inner"], "{path}: {v}");
    }

    // The trash: never found, by name or text, by anyone, until recovered.
    let r = app.rest("DELETE", &format!("/rest/files/{one}"), &owner, None);
    assert!(r.status < 300, "{}", r.text);
    assert_eq!(query(&app, &owner, "zephyr")["totalFiles"], 2);
    assert_eq!(query(&app, &member, "zephyr")["totalFiles"], 0);
    assert_eq!(query(&app, &member, "one")["totalFiles"], 0);
    // The interface has no parameter that asks for the trash: one is refused, not ignored.
    for path in [
        "/rest/query?includeContent=true&searchType=f&query=zephyr&deleted=true",
        "/rest/query?includeContent=true&searchType=f&query=zephyr&trashed=true",
        "/rest/search?content=zephyr&deleted=true",
    ] {
        let r = app.rest("GET", path, &owner, None);
        assert_error(&r, 422, "ERR_INVALID_PARAMETER");
    }
    let r = app.rest(
        "PATCH",
        &format!("/rest/files/{one}/actions/recover"),
        &owner,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(query(&app, &member, "zephyr")["totalFiles"], 1);
    // A trashed folder takes what it holds along.
    let r = app.rest("DELETE", &format!("/rest/folders/{atlas}"), &owner, None);
    assert!(r.status < 300, "{}", r.text);
    let v = query(&app, &member, "atlas");
    assert_eq!(
        (v["totalFiles"].clone(), v["totalFolders"].clone()),
        (json!(0), json!(0)),
        "{v}"
    );
    assert_eq!(query(&app, &owner, "zephyr")["totalFiles"], 0);
}

#[test]
fn a_new_version_replaces_its_files_text() {
    let app = TestApp::spawn();
    let (_, t) = app.user_token("ann@example.com", Role::User);
    let root = my_folder(&app, &t);
    let f = upload_ok(&app, &t, &root, "notes.md", b"first draft about walruses");
    let fid = id(&f);
    app.run_jobs();
    assert_eq!(query(&app, &t, "walruses")["totalFiles"], 1);
    let (ct, body) = multipart(&[("body", Some("notes.md"), b"second draft about pelicans")]);
    let r = app.rest_body(
        "POST",
        &format!("/rest/files/{fid}/versions"),
        &t,
        &ct,
        body,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    app.run_jobs();
    assert_eq!(query(&app, &t, "pelicans")["totalFiles"], 1);
    assert_eq!(query(&app, &t, "walruses")["totalFiles"], 0);
}

#[test]
fn documents_are_read_and_bad_files_recorded_as_failed() {
    let app = TestApp::spawn();
    let (_, t) = app.user_token("ann@example.com", Role::User);
    let root = my_folder(&app, &t);
    let doc = id(&upload_ok(
        &app,
        &t,
        &root,
        "minutes.docx",
        &docx("Decision on the heliotrope budget"),
    ));
    let html = id(&upload_ok(
        &app,
        &t,
        &root,
        "page.html",
        b"<html><script>var hidden = 'scriptword';</script><p>Visible &amp; lavender</p></html>",
    ));
    let fake = id(&upload_ok(
        &app,
        &t,
        &root,
        "fake.pdf",
        b"just text pretending",
    ));
    // Megabytes of one letter compress to a few kilobytes.
    let bomb_text = "a".repeat(100 * 1024 * 1024);
    let bomb = id(&upload_ok(&app, &t, &root, "bomb.docx", &docx(&bomb_text)));
    drop(bomb_text);
    let image = id(&upload_ok(
        &app,
        &t,
        &root,
        "photo.png",
        b"\x89PNG\r\n\x1a\nnot really",
    ));
    app.run_jobs();
    assert_eq!(state(&app, &doc).state, "indexed");
    assert_eq!(state(&app, &html).state, "indexed");
    assert_eq!(query(&app, &t, "heliotrope")["totalFiles"], 1);
    assert_eq!(query(&app, &t, "lavender")["totalFiles"], 1);
    assert_eq!(query(&app, &t, "scriptword")["totalFiles"], 0);
    let f = state(&app, &fake);
    assert_eq!(f.state, "failed");
    assert!(
        f.error.as_deref().unwrap_or("").contains("PDF"),
        "{:?}",
        f.error
    );
    assert_eq!(query(&app, &t, "pretending")["totalFiles"], 0);
    let b = state(&app, &bomb);
    assert_eq!(b.state, "failed", "{:?}", b.error);
    assert_eq!(state(&app, &image).state, "skipped");
    // The job itself never failed: the outcome is recorded.
    assert_eq!(app.count("state = 'failed'", "jobs"), 0);
    let s = coffer_service::search::index::status(&app.ctx).unwrap();
    assert_eq!((s.indexed, s.failed, s.skipped, s.pending), (2, 2, 1, 0));
    assert!(s.index_bytes > 0 && s.text_bytes > 0, "{s:?}");
    assert_eq!(s.failures.len(), 2);
    // Reindexing queues every file again and the same outcome follows.
    assert_eq!(coffer_service::search::index::reindex(&app.ctx).unwrap(), 5);
    assert_eq!(
        coffer_service::search::index::status(&app.ctx)
            .unwrap()
            .pending,
        5
    );
    app.run_jobs();
    let s = coffer_service::search::index::status(&app.ctx).unwrap();
    assert_eq!((s.indexed, s.failed, s.skipped, s.pending), (2, 2, 1, 0));
    assert_eq!(query(&app, &t, "heliotrope")["totalFiles"], 1);
}

#[test]
fn a_file_without_text_is_skipped_at_its_upload_and_queues_no_extraction() {
    let app = TestApp::spawn();
    let (_, t) = app.user_token("ann@example.com", Role::User);
    let root = my_folder(&app, &t);
    let data = id(&upload_ok(&app, &t, &root, "data.bin", b"\x00\x01 zephyr"));
    // Recorded by the upload itself, with nothing left for the worker.
    let st = state(&app, &data);
    assert_eq!(
        (st.state.as_str(), st.error.as_deref()),
        ("skipped", Some("a type without text"))
    );
    assert_eq!(
        app.count("kind = 'search-extract'", "jobs"),
        0,
        "{}",
        jobs(&app)
    );
    // A new version of it is skipped the same way; a type with text still waits for the job.
    let again = upload_ok(&app, &t, &root, "data.bin", b"\x02\x03 zephyr");
    assert_eq!(id(&again), data);
    assert_eq!(state(&app, &data).state, "skipped");
    let notes = id(&upload_ok(&app, &t, &root, "notes.txt", b"zephyr"));
    assert_eq!(state(&app, &notes).state, "pending");
    assert_eq!(
        app.count("kind = 'search-extract'", "jobs"),
        1,
        "{}",
        jobs(&app)
    );
    app.run_jobs();
    assert_eq!(state(&app, &notes).state, "indexed");
    assert_eq!(state(&app, &data).state, "skipped");
    assert_eq!(query(&app, &t, "zephyr")["totalFiles"], 1);
}

#[test]
fn mail_is_found_in_the_callers_own_and_active_shared_mailboxes() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (_, ann) = app.user_token("ann@example.com", Role::User);
    let (bob_id, bob) = app.user_token("bob@example.com", Role::User);
    let (_, carl) = app.user_token("carl@example.com", Role::User);
    let (team, _) = app.user("team@example.com", Role::User);
    app.send_mail(
        &ann,
        json!({"to": ["bob@example.com"], "subject": "Harbour meeting", "body": "Bring the turquoise binder."}),
    );
    let mail = |token: &str, q: &str| {
        get(
            &app,
            token,
            &format!("/rest/query?includeContent=true&searchType=e&{q}"),
        )
    };
    // Subject and body, for sender and recipient.
    for (who, token) in [("ann", &ann), ("bob", &bob)] {
        let v = mail(token, "query=harbour");
        assert_eq!(v["totalEmails"], 1, "{who}: {v}");
        assert_eq!(v["emails"][0]["subject"], "Harbour meeting");
        assert_eq!(mail(token, "query=turquoise")["totalEmails"], 1, "{who}");
    }
    assert_eq!(mail(&ann, "query=turquoise&bucket=inbox")["totalEmails"], 0);
    assert_eq!(mail(&ann, "query=turquoise&bucket=sent")["totalEmails"], 1);
    assert_eq!(mail(&bob, "subject=harb")["totalEmails"], 1);
    assert_eq!(
        mail(&bob, &format!("recipientId={bob_id}"))["totalEmails"],
        1
    );
    assert_eq!(
        mail(&ann, "query=turquoise&nameOnly=true")["totalEmails"],
        0
    );
    let v = get(
        &app,
        &bob,
        "/rest/search?content:contains=harbour&searchType=m&email_type=Inbox",
    );
    assert_eq!(v["metadata"]["emails"], 1);
    // Nobody else.
    let v = mail(&carl, "query=turquoise");
    assert_eq!(v["totalEmails"], 0);
    assert!(!v.to_string().contains("Harbour"));
    // A shared mailbox: its active members only.
    let r = app.rest(
        "POST",
        "/rest/admin/sharedMailboxes",
        &admin,
        Some(json!({"userId": team, "memberIds": [carl_id(&app)]})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    app.send_mail(
        &ann,
        json!({"to": ["team@example.com"], "subject": "Saffron order", "body": "for the team"}),
    );
    let r = app.rest(
        "PATCH",
        "/rest/sharedMailboxes",
        &carl,
        Some(json!({"data": [{"id": team, "active": true}]})),
    );
    assert!(r.status < 300, "{}", r.text);
    assert_eq!(
        mail(&carl, &format!("query=saffron&sharedMailboxId={team}"))["totalEmails"],
        1
    );
    assert_eq!(mail(&carl, "query=saffron")["totalEmails"], 0);
    let r = app.rest(
        "GET",
        &format!(
            "/rest/query?includeContent=true&searchType=e&query=saffron&sharedMailboxId={team}"
        ),
        &bob,
        None,
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    // A member who turns the mailbox off finds nothing in it any more, asked or not.
    let r = app.rest(
        "PATCH",
        "/rest/sharedMailboxes",
        &carl,
        Some(json!({"data": [{"id": team, "active": false}]})),
    );
    assert!(r.status < 300, "{}", r.text);
    let r = app.rest(
        "GET",
        &format!(
            "/rest/query?includeContent=true&searchType=e&query=saffron&sharedMailboxId={team}"
        ),
        &carl,
        None,
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    let v = mail(&carl, "query=saffron");
    assert_eq!(v["totalEmails"], 0, "{v}");
    assert!(!v.to_string().contains("Saffron"), "{v}");
}

fn carl_id(app: &TestApp) -> String {
    app.ctx
        .with_conn(|c| Ok(coffer_store::users::by_email(c, "carl@example.com")?))
        .unwrap()
        .unwrap()
        .id
}

#[test]
fn names_rank_above_text_and_orders_apply() {
    let app = TestApp::spawn();
    let (_, t) = app.user_token("ann@example.com", Role::User);
    let root = my_folder(&app, &t);
    upload_ok(
        &app,
        &t,
        &root,
        "a-notes.txt",
        b"the word orchid appears orchid orchid orchid",
    );
    upload_ok(&app, &t, &root, "orchid.txt", b"nothing here");
    upload_ok(&app, &t, &root, "b-orchid-list.txt", b"plain");
    app.run_jobs();
    let v = get(
        &app,
        &t,
        "/rest/query?includeContent=true&searchType=f&query=orchid&orderBy=score",
    );
    let order: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        ["orchid.txt", "b-orchid-list.txt", "a-notes.txt"],
        "{v}"
    );
    let v = get(
        &app,
        &t,
        "/rest/query?includeContent=true&searchType=f&query=orchid&orderBy=name&orderType=desc&limit=2&offset=1",
    );
    let order: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["b-orchid-list.txt", "a-notes.txt"]);
    assert_eq!(v["totalFiles"], 3);
    let v = get(
        &app,
        &t,
        "/rest/search?content:contains=orchid&orderBy=name:asc&searchType=f",
    );
    assert_eq!(v["files"][0]["name"], "a-notes.txt");
    // Spelling suggestions from the caller's own names.
    let v = get(
        &app,
        &t,
        "/rest/query?includeContent=true&searchType=f&query=orchdi&spellCheck=true",
    );
    assert_eq!(v["fileSuggestions"], json!(["orchid"]), "{v}");
}

#[test]
fn bad_input_gets_catalogue_errors_and_never_a_500() {
    let app = TestApp::spawn();
    let (_, t) = app.user_token("ann@example.com", Role::User);
    let root = my_folder(&app, &t);
    upload_ok(&app, &t, &root, "plain.txt", b"quartz");
    app.run_jobs();
    // Full-text operators, quotes, stars, NEAR, parentheses and SQL are only words.
    for q in [
        "%22quartz",
        "quartz%20OR%20*",
        "NEAR(quartz%20x)",
        "((quartz",
        "quartz'%3B%20DROP%20TABLE%20objects%3B--",
        "*",
        "%5E%3A-",
    ] {
        let r = app.rest(
            "GET",
            &format!("/rest/query?includeContent=true&searchType=f&query={q}"),
            &t,
            None,
        );
        assert_eq!(r.status, 200, "{q}: {}", r.text);
    }
    assert_eq!(query(&app, &t, "quartz'%3B%20DROP")["totalFiles"], 0);
    assert_eq!(query(&app, &t, "%22quartz%22")["totalFiles"], 1);
    for path in [
        "/rest/query?searchType=f&query=x",
        "/rest/query?includeContent=true&query=x",
        "/rest/query?includeContent=maybe&searchType=f",
        "/rest/query?includeContent=true&searchType=z",
        "/rest/query?includeContent=true&searchType=f&orderBy=size",
        "/rest/query?includeContent=true&searchType=f&fileType=Movies",
        "/rest/query?includeContent=true&searchType=f&created:gt=yesterday",
        "/rest/query?includeContent=true&searchType=f&fileSize:lt=big",
        "/rest/query?includeContent=true&searchType=f&limit=1001",
        "/rest/search?searchType=q",
        "/rest/search?orderBy=size:asc",
        "/rest/search?file_type=Movies",
        "/rest/search?modified:gte=2024-13-45",
        "/rest/search?limit=100000",
        "/rest/search?sharedMailboxId=42",
        "/rest/search?bogus=1",
    ] {
        let r = app.rest("GET", path, &t, None);
        assert_error(&r, 422, "ERR_INVALID_PARAMETER");
    }
    // A shared mailbox the caller is not an active member of.
    let (team, _) = app.user("team@example.com", Role::User);
    let r = app.rest(
        "GET",
        &format!("/rest/search?sharedMailboxId={team}"),
        &t,
        None,
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    // A profile without collaboration.
    let (_, pw) = coffer_service::identity::accounts::create_user(
        &app.ctx,
        coffer_service::identity::accounts::NewUser {
            email: "mail@example.com".into(),
            name: "Mail Only".into(),
            password: None,
            role: Role::User,
            profile: Some("Restricted".into()),
        },
        None,
    )
    .unwrap();
    let mt = app.password_token("mail@example.com", &pw)["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let r: Resp = app.rest(
        "GET",
        "/rest/query?includeContent=true&searchType=f",
        &mt,
        None,
    );
    assert_error(&r, 403, "ERR_PROFILE_COLLABORATION_DISABLED");
}

/// The periodic merge folds each full-text table into one segment on SQLite (FTS5 writes a
/// segment per batch of new documents), and the index answers the same afterwards; on
/// PostgreSQL it has nothing to do.
#[test]
fn the_index_is_merged_into_one_segment_and_answers_the_same() {
    let app = TestApp::spawn();
    let (_, t) = app.user_token("ann@example.com", Role::User);
    let root = my_folder(&app, &t);
    for i in 0..6 {
        upload_ok(
            &app,
            &t,
            &root,
            &format!("marmot notes {i}.txt"),
            format!("marmot burrow entry{i}").as_bytes(),
        );
        // Each extraction commits on its own, as files arrive one by one.
        app.run_jobs();
    }
    let found = |words: &str| -> (Value, Vec<String>) {
        let v = query(&app, &t, words);
        let mut n = names(&v, "files");
        n.sort();
        (v["totalFiles"].clone(), n)
    };
    let before = (
        found("marmot"),
        found("burr"),
        found("entry3"),
        found("otes"),
    );
    assert_eq!(before.0 .0, 6);
    assert_eq!(before.2 .0, 1);
    let status = || coffer_service::search::index::status(&app.ctx).unwrap();
    let s = status();
    let steps = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(coffer_service::search::index::merge_steps(&app.ctx))
        .unwrap();
    let merged = status();
    if coffer_tests::backend_name() == "sqlite" {
        assert!(s.segments["search_fts"] > 1, "{s:?}");
        assert!(steps > 0);
        assert_eq!(merged.segments["search_fts"], 1, "{merged:?}");
        assert_eq!(merged.segments["search_names"], 1, "{merged:?}");
    } else {
        assert!(s.segments.is_empty() && merged.segments.is_empty());
        assert_eq!(steps, 0);
    }
    let after = (
        found("marmot"),
        found("burr"),
        found("entry3"),
        found("otes"),
    );
    assert_eq!(before, after);
}
