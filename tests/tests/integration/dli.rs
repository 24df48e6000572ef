//! DLI (`/rest/dli`): the licence stand-in first, system administrators only, the activity
//! reads with their filters, the file and folder reads of deleted objects, and every read
//! recorded in the activity log.

use coffer_domain::Role;
use coffer_tests::*;
use serde_json::Value;

fn license(app: &TestApp) {
    coffer_service::identity::settings::set(&app.ctx, "dliEnabled", "true", None).unwrap();
}

fn get(app: &TestApp, token: &str, path: &str) -> Resp {
    app.rest("GET", path, token, None)
}

/// The activities of a read that must answer 200.
fn activities(app: &TestApp, token: &str, path: &str) -> Vec<Value> {
    let r = get(app, token, path);
    assert_eq!(r.status, 200, "{path}: {}", r.text);
    r.json()["data"].as_array().unwrap().clone()
}

fn events(list: &[Value]) -> Vec<String> {
    list.iter()
        .map(|a| a["event"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_licence_comes_first_then_the_system_administrator_and_refusals_are_recorded() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (uid, user) = app.user_token("plain@example.com", Role::User);
    let path = format!("/rest/dli/users/{uid}/activities");
    // Unlicensed: everyone, administrators too, gets the licence error, even with bad input.
    assert_error(&get(&app, &admin, &path), 403, "ERR_LICENSE_DLI");
    assert_error(&get(&app, &user, &path), 403, "ERR_LICENSE_DLI");
    assert_error(
        &get(&app, &admin, &format!("{path}?startDate=yesterday")),
        403,
        "ERR_LICENSE_DLI",
    );
    assert_error(
        &get(&app, &admin, "/rest/dli/files/nope"),
        403,
        "ERR_LICENSE_DLI",
    );
    assert_eq!(
        app.count(
            "event = 'dli.access.read' AND successful = FALSE AND kind = 'admin'",
            "activities"
        ),
        4
    );
    license(&app);
    assert_error(&get(&app, &user, &path), 403, "ERR_ACCESS_USER");
    let (_, helpdesk) = app.user_token("help@example.com", Role::HelpdeskAdmin);
    assert_error(&get(&app, &helpdesk, &path), 403, "ERR_ACCESS_USER");
    assert_eq!(
        app.count(
            &format!("event = 'dli.access.read' AND successful = FALSE AND actor_id = '{uid}'"),
            "activities"
        ),
        2
    );
    assert_eq!(get(&app, &admin, &path).status, 200);
    // Unauthenticated callers are refused before anything else.
    assert_eq!(get(&app, "not-a-token", &path).status, 401);
}

#[test]
fn a_user_s_activities_with_their_fields_and_filters() {
    let app = TestApp::spawn();
    license(&app);
    let admin = app.admin_token();
    let (uid, user) = app.user_token("alice@example.com", Role::User);
    let root = my_folder(&app, &user);
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{root}/folders"),
        &user,
        Some(serde_json::json!({"name": "Plans"})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let folder = r.json()["id"].as_str().unwrap().to_string();
    let request = r.header("x-request-id").unwrap().to_string();
    let file = upload_ok(&app, &user, &folder, "secret.txt", b"top secret")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = get(&app, &user, &format!("/rest/files/{file}/content"));
    assert_eq!(r.status, 200);

    let base = format!("/rest/dli/users/{uid}/activities");
    let all = activities(&app, &admin, &base);
    // Newest first by default.
    let ids: Vec<i64> = all.iter().map(|a| a["id"].as_i64().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(ids, sorted);
    let made = all
        .iter()
        .find(|a| a["event"] == "filesystem.folder.create")
        .expect("the folder's creation");
    assert_eq!(made["type"], "folder_changes");
    assert_eq!(made["message"], "Folder \"Plans\" created");
    assert_eq!(made["successful"], 1);
    assert_eq!(made["user"], uid.as_str());
    assert_eq!(made["directUser"], serde_json::json!([uid]));
    assert_eq!(made["object"][0], folder.as_str());
    assert_eq!(made["object"][1], "Plans");
    assert_eq!(made["transactionId"], request.as_str());
    assert!(made["created"].as_str().unwrap().ends_with('Z'));
    assert!(events(&all).contains(&"filesystem.file.create".to_string()));
    assert!(events(&all).contains(&"filesystem.file.download".to_string()));

    // Types.
    let files = activities(&app, &admin, &format!("{base}?type=file_changes"));
    assert!(!files.is_empty());
    assert!(files.iter().all(|a| a["type"] == "file_changes"));
    let two = activities(
        &app,
        &admin,
        &format!("{base}?type=file_changes,folder_changes"),
    );
    assert!(two.len() > files.len());
    // Search in the message, case-insensitively.
    let found = activities(&app, &admin, &format!("{base}?search=PLANS"));
    assert_eq!(events(&found), ["filesystem.folder.create"]);
    // One request.
    let one = activities(&app, &admin, &format!("{base}?transactionId={request}"));
    assert_eq!(events(&one), ["filesystem.folder.create"]);
    // Dates: today is in range, a past range is empty.
    let today = &coffer_service::rfc3339(unix_now())[..10];
    let in_range = activities(
        &app,
        &admin,
        &format!("{base}?startDate={today}&endDate={today}"),
    );
    assert_eq!(in_range.len(), all.len());
    let past = activities(
        &app,
        &admin,
        &format!("{base}?startDate=2020-01-01&endDate=2020-12-31"),
    );
    assert!(past.is_empty());
    assert_eq!(
        activities(&app, &admin, &format!("{base}?noDayBack=1")).len(),
        all.len()
    );
    // Oldest first, paged.
    let page = activities(
        &app,
        &admin,
        &format!("{base}?orderBy=created:asc&offset=1&limit=2"),
    );
    assert_eq!(
        page.iter()
            .map(|a| a["id"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        sorted
            .iter()
            .rev()
            .skip(1)
            .take(2)
            .copied()
            .collect::<Vec<_>>()
    );
    // `my`: what the user did, not what was done about them (the account's creation).
    let mine = activities(&app, &admin, &format!("{base}?filter=my"));
    assert!(mine.iter().all(|a| a["user"] == uid.as_str()));
    assert!(events(&all).contains(&"user.user.create".to_string()));
    assert!(!events(&mine).contains(&"user.user.create".to_string()));

    // The reads are recorded, as the administrator's.
    let admin_id = me(&app, &admin)["id"].as_str().unwrap().to_string();
    assert!(
        app.count(
            &format!(
                "event = 'dli.user.read' AND actor_id = '{admin_id}' AND object_id = '{uid}' \
                 AND kind = 'admin' AND successful = TRUE"
            ),
            "activities"
        ) >= 10
    );
    // And the log still verifies.
    let rep = coffer_service::audit::verify::verify(&app.ctx, None).unwrap();
    assert_eq!(rep.problem, None);
}

#[test]
fn bad_activity_queries_are_refused_and_nothing_is_recorded() {
    let app = TestApp::spawn();
    license(&app);
    let admin = app.admin_token();
    let (uid, _) = app.user("bob@example.com", Role::User);
    let base = format!("/rest/dli/users/{uid}/activities");
    let before = app.count("event LIKE 'dli.%'", "activities");
    let tomorrow = &coffer_service::rfc3339(unix_now() + 86_400)[..10];
    for (q, status, code) in [
        ("startDate=2024-13-01", 422, "ERR_INPUT_INVALID_DATE"),
        ("startDate=01/02/2024", 422, "ERR_INPUT_INVALID_DATE"),
        ("endDate=2024-02-30", 422, "ERR_INPUT_INVALID_DATE"),
        (
            &*format!("startDate={tomorrow}"),
            422,
            "ERR_INPUT_DATE_NOT_BEFORE",
        ),
        (
            "startDate=2024-02-02&endDate=2024-02-01",
            422,
            "ERR_INPUT_DATE_NOT_AFTER",
        ),
        ("type=nonsense", 422, "ERR_INPUT_NOT_IN_LIST"),
        ("type=mail,nonsense", 422, "ERR_INPUT_NOT_IN_LIST"),
        ("filter=theirs", 422, "ERR_INPUT_NOT_IN_LIST"),
        ("noDayBack=-1", 422, "ERR_INPUT_NOT_INTEGER"),
        ("noDayBack=x", 422, "ERR_INPUT_NOT_INTEGER"),
        ("orderBy=size:asc", 400, "ERR_REQUEST_INVALID_FILTER"),
        ("limit=0", 422, "ERR_INPUT_INVALID_FORMAT"),
    ] {
        let r = get(&app, &admin, &format!("{base}?{q}"));
        assert_eq!(r.status, status, "{q}: {}", r.text);
        assert_error(&r, status, code);
    }
    assert_error(
        &get(&app, &admin, "/rest/dli/users/no-such-user/activities"),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    let file = format!(
        "/rest/dli/files/{}/users/{uid}/activities",
        uuid::Uuid::new_v4()
    );
    assert_error(&get(&app, &admin, &file), 404, "ERR_ENTITY_NOT_FOUND");
    assert_error(
        &get(
            &app,
            &admin,
            &format!("/rest/dli/folders/not-a-uuid/users/{uid}/activities"),
        ),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    assert_eq!(app.count("event LIKE 'dli.%'", "activities"), before);
}

#[test]
fn deleted_files_and_folders_are_read_with_their_activities() {
    let app = TestApp::spawn();
    license(&app);
    let admin = app.admin_token();
    let (uid, user) = app.user_token("carol@example.com", Role::User);
    let root = my_folder(&app, &user);
    let folder = mkdir(&app, &user, &root, "Evidence");
    let file = upload_ok(&app, &user, &folder, "a.txt", b"first")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.upload(&user, &folder, "a.txt", b"second version");
    assert!(
        r.status == 200 || r.status == 201 || r.status == 409,
        "{}",
        r.text
    );
    let r = app.rest("DELETE", &format!("/rest/files/{file}"), &user, None);
    assert_eq!(r.status, 204, "{}", r.text);

    let f = get(&app, &admin, &format!("/rest/dli/files/{file}"));
    assert_eq!(f.status, 200, "{}", f.text);
    assert_eq!(f.json()["id"], file.as_str());
    assert_eq!(f.json()["deleted"], true);
    let d = get(&app, &admin, &format!("/rest/dli/folders/{folder}"));
    assert_eq!(d.status, 200, "{}", d.text);
    assert_eq!(d.json()["name"], "Evidence");
    let p = get(&app, &admin, &format!("/rest/dli/files/{file}/path"));
    assert_eq!(p.status, 200, "{}", p.text);
    let names: Vec<String> = p.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.iter().any(|n| n == "Evidence"), "{names:?}");
    let v = get(&app, &admin, &format!("/rest/dli/files/{file}/versions"));
    assert_eq!(v.status, 200, "{}", v.text);
    let versions = v.json()["data"].as_array().unwrap().clone();
    assert!(!versions.is_empty());
    let vid = versions[0]["id"].as_str().unwrap().to_string();
    let one = get(
        &app,
        &admin,
        &format!("/rest/dli/files/{file}/versions/{vid}"),
    );
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(one.json()["id"], vid.as_str());
    let c = get(&app, &admin, &format!("/rest/dli/files/{file}/content"));
    assert_eq!(c.status, 200, "{}", c.text);
    assert!(c.bytes == b"first" || c.bytes == b"second version");
    let c = get(
        &app,
        &admin,
        &format!("/rest/dli/files/{file}/versions/{vid}/content"),
    );
    assert_eq!(c.status, 200, "{}", c.text);
    // A version of another file, and a folder read as a file, are not found.
    assert_error(
        &get(&app, &admin, &format!("/rest/dli/files/{folder}")),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    assert_error(
        &get(
            &app,
            &admin,
            &format!("/rest/dli/files/{file}/versions/{folder}"),
        ),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );

    // The file's activities: its upload and deletion, not the folder's creation.
    let on_file = activities(
        &app,
        &admin,
        &format!("/rest/dli/files/{file}/users/{uid}/activities"),
    );
    let ev = events(&on_file);
    assert!(ev.contains(&"filesystem.file.create".to_string()), "{ev:?}");
    assert!(ev.contains(&"filesystem.file.delete".to_string()), "{ev:?}");
    assert!(
        !ev.contains(&"filesystem.folder.create".to_string()),
        "{ev:?}"
    );
    // The folder's: its creation and what happened to the files in it.
    let in_folder = activities(
        &app,
        &admin,
        &format!("/rest/dli/folders/{folder}/users/{uid}/activities"),
    );
    let ev = events(&in_folder);
    assert!(
        ev.contains(&"filesystem.folder.create".to_string()),
        "{ev:?}"
    );
    assert!(ev.contains(&"filesystem.file.create".to_string()), "{ev:?}");
    // Each read is recorded under its object.
    assert!(
        app.count(
            &format!("event = 'dli.file.read' AND object_id = '{file}' AND successful = TRUE"),
            "activities"
        ) >= 6
    );
}

/// A real PNG of `w × h` pixels.
fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 7])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

/// The path part of an address the server gave.
fn local(app: &TestApp, url: &Value) -> String {
    url.as_str()
        .unwrap()
        .strip_prefix(&app.base)
        .unwrap_or_else(|| panic!("{url} is not under {}", app.base))
        .to_string()
}

#[test]
fn a_user_s_mail_is_read_with_the_trash_and_every_recipient_and_attachment() {
    let app = TestApp::spawn();
    license(&app);
    let admin = app.admin_token();
    let (ann, ta) = app.user_token("ann@example.com", Role::User);
    let (bob, tb) = app.user_token("bob@example.com", Role::User);
    let (carl, _) = app.user_token("carl@example.com", Role::User);
    let file = app.upload_to_my_folder(&ta, "plan.txt", b"the plan");
    let m = app.send_mail(
        &ta,
        serde_json::json!({"to": ["bob@example.com"], "bcc": ["carl@example.com"],
            "subject": "Plan", "body": "attached", "files": [file], "acl": "internal"}),
    );
    let id = m["id"].as_str().unwrap().to_string();
    let other = app.send_mail(
        &tb,
        serde_json::json!({"to": ["ann@example.com"], "subject": "Kept", "acl": "internal"}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Bob puts the plan in his trash: his mailbox no longer lists it, an investigation does.
    let r = app.rest(
        "PATCH",
        &format!("/rest/mail/actions/trash?emailId:in={id}"),
        &tb,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let own = app.rest("GET", "/rest/mail?bucket=inbox", &tb, None).json();
    assert_eq!(own["metadata"]["total"], 0, "{own}");

    let r = get(&app, &admin, &format!("/rest/dli/users/{bob}/mail"));
    assert_eq!(r.status, 200, "{}", r.text);
    let all = r.json();
    assert_eq!(all["metadata"]["total"], 2, "{all}");
    let plan = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id.as_str())
        .expect("the trashed email")
        .clone();
    assert_eq!(plan["deleted"], true);
    assert_eq!(plan["bucket"], "trash");
    assert_eq!(plan["subject"], "Plan");
    assert_eq!(plan["senderId"], ann.as_str());
    assert_eq!(plan["attachmentCount"], 1);
    // `deleted` chooses one side; the mail list's filters apply.
    let ids = |q: &str| -> Vec<String> {
        let r = get(&app, &admin, &format!("/rest/dli/users/{bob}/mail?{q}"));
        assert_eq!(r.status, 200, "{q}: {}", r.text);
        r.json()["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids("deleted=true"), vec![id.as_str()]);
    assert_eq!(ids("deleted=false"), vec![other.as_str()]);
    assert_eq!(ids("bucket=sent"), vec![other.as_str()]);
    assert_eq!(ids(&format!("senderId={ann}")), vec![id.as_str()]);
    assert_eq!(ids("limit=1&offset=1&orderBy=date:asc").len(), 1);
    // The sender's mailbox shows the blind copy with `with=recipients`.
    let r = get(
        &app,
        &admin,
        &format!("/rest/dli/users/{ann}/mail?bucket=sent&with=recipients"),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json()["data"][0]["recipients"].as_array().unwrap().len(),
        2
    );

    // Recipients of anyone's email, blind copies too, by type.
    let r = get(&app, &admin, &format!("/rest/dli/mail/{id}/recipients"));
    assert_eq!(r.status, 200, "{}", r.text);
    let list = r.json();
    assert_eq!(list["metadata"]["total"], 2, "{list}");
    assert_eq!(list["data"][0]["userId"], bob.as_str());
    assert_eq!(list["data"][0]["type"], 0);
    assert_eq!(list["data"][1]["userId"], carl.as_str());
    assert_eq!(list["data"][1]["type"], 2);
    assert_eq!(list["data"][1]["email"], "carl@example.com");
    let r = get(
        &app,
        &admin,
        &format!("/rest/dli/mail/{id}/recipients?type=2"),
    );
    assert_eq!(r.json()["data"].as_array().unwrap().len(), 1);
    let r = get(
        &app,
        &admin,
        &format!("/rest/dli/mail/{id}/recipients?orderBy=type:desc"),
    );
    assert_eq!(r.json()["data"][0]["type"], 2);
    // Attachments.
    let r = get(&app, &admin, &format!("/rest/dli/mail/{id}/attachments"));
    assert_eq!(r.status, 200, "{}", r.text);
    let list = r.json();
    assert_eq!(list["metadata"]["total"], 1, "{list}");
    assert_eq!(list["data"][0]["name"], "plan.txt");
    assert_eq!(list["data"][0]["size"], 8);
    assert_eq!(list["data"][0]["objectId"], file.as_str());
    assert_eq!(list["data"][0]["emailPackageId"], id.as_str());

    // Unknown ones are not found; none of it is anyone else's to read.
    let unknown = uuid::Uuid::new_v4();
    for path in [
        format!("/rest/dli/mail/{unknown}/recipients"),
        format!("/rest/dli/mail/{unknown}/attachments"),
        "/rest/dli/mail/not-an-id/attachments".to_string(),
        format!("/rest/dli/users/{unknown}/mail"),
    ] {
        assert_error(&get(&app, &admin, &path), 404, "ERR_ENTITY_NOT_FOUND");
    }
    for path in [
        format!("/rest/dli/users/{bob}/mail"),
        format!("/rest/dli/mail/{id}/recipients"),
        format!("/rest/dli/mail/{id}/attachments"),
    ] {
        assert_error(&get(&app, &tb, &path), 403, "ERR_ACCESS_USER");
    }
    assert_error(
        &get(
            &app,
            &admin,
            &format!("/rest/dli/users/{bob}/mail?bucket=attic"),
        ),
        400,
        "ERR_REQUEST_INVALID_FILTER",
    );
    // Each answered read is recorded under its object.
    assert_eq!(
        app.count(
            &format!("event = 'dli.mail.read' AND object_id = '{id}' AND successful = TRUE"),
            "activities"
        ),
        4
    );
    assert!(
        app.count(
            &format!(
                "event = 'dli.user.read' AND object_id = '{bob}' AND data LIKE '%mail of a user%'"
            ),
            "activities"
        ) >= 6
    );
}

#[test]
fn a_trashed_file_s_preview_is_read_through_dli_addresses() {
    let app = TestApp::spawn();
    license(&app);
    let admin = app.admin_token();
    let (_, user) = app.user_token("pat@example.com", Role::User);
    let root = my_folder(&app, &user);
    let photo = upload_ok(&app, &user, &root, "photo.png", &png(600, 300))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let text = upload_ok(&app, &user, &root, "notes.pdf", b"%PDF-1.4 notes")["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.run_jobs();
    for f in [&photo, &text] {
        let r = app.rest("DELETE", &format!("/rest/files/{f}"), &user, None);
        assert_eq!(r.status, 204, "{}", r.text);
    }
    // The owner no longer previews the trashed file; an investigation does.
    let r = app.rest("GET", &format!("/rest/files/{photo}/preview"), &user, None);
    assert_ne!(r.status, 200, "{}", r.text);
    let r = get(&app, &admin, &format!("/rest/dli/files/{photo}/preview"));
    assert_eq!(r.status, 200, "{}", r.text);
    let p = r.json();
    assert_eq!(p["status"], "preview", "{p}");
    assert_eq!(p["type"], "image");
    assert_eq!(p["mime"], "image/png");
    assert_eq!(p["native"], false);
    let url = local(&app, &p["link"]);
    assert_eq!(url, format!("/rest/dli/files/{photo}/preview/content"));
    let r = get(&app, &admin, &url);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("content-type"), Some("image/png"));
    assert!(r
        .header("content-disposition")
        .unwrap()
        .starts_with("inline"));
    let thumb = image::load_from_memory_with_format(&r.bytes, image::ImageFormat::Png).unwrap();
    assert_eq!((thumb.width(), thumb.height()), (256, 128));
    // A type shown as it is: its preview is the file's DLI content.
    let p = get(&app, &admin, &format!("/rest/dli/files/{text}/preview")).json();
    assert_eq!(p["native"], true, "{p}");
    assert_eq!(
        local(&app, &p["link"]),
        format!("/rest/dli/files/{text}/content")
    );
    let r = get(&app, &admin, &local(&app, &p["link"]));
    assert_eq!(r.bytes, b"%PDF-1.4 notes");
    // No preview made from it: not found.
    assert_error(
        &get(
            &app,
            &admin,
            &format!("/rest/dli/files/{text}/preview/content"),
        ),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    assert_error(
        &get(&app, &admin, &format!("/rest/dli/files/{root}/preview")),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    assert_error(
        &get(&app, &user, &format!("/rest/dli/files/{photo}/preview")),
        403,
        "ERR_ACCESS_USER",
    );
    assert_eq!(
        app.count(
            &format!("event = 'dli.file.read' AND object_id = '{photo}' AND successful = TRUE"),
            "activities"
        ),
        2
    );
}

/// The exports of `user` asked for by `admin`: the answer's records.
fn export(app: &TestApp, admin: &str, user: &str, body: Value) -> Vec<Value> {
    let r = app.rest(
        "POST",
        &format!("/rest/dli/exports/users/{user}"),
        admin,
        Some(body),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let j = r.json();
    assert_eq!(
        j["metadata"]["total"].as_u64().unwrap() as usize,
        j["data"].as_array().unwrap().len()
    );
    j["data"].as_array().unwrap().clone()
}

fn today() -> String {
    coffer_service::rfc3339(unix_now())[..10].to_string()
}

/// One CSV line split into its fields (quoted fields may hold commas and doubled quotes).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[test]
fn an_activities_export_runs_to_its_csv_and_goes_with_its_file() {
    let app = TestApp::spawn();
    license(&app);
    let admin = app.admin_token();
    let admin_id = me(&app, &admin)["id"].as_str().unwrap().to_string();
    let (uid, user) = app.user_token("alice@example.com", Role::User);
    let root = my_folder(&app, &user);
    let folder = mkdir(&app, &user, &root, "Plans, \"secret\"");
    upload_ok(&app, &user, &folder, "a.txt", b"alpha");
    app.run_jobs();
    let day = today();
    let made = export(
        &app,
        &admin,
        &uid,
        serde_json::json!({"startDate": day, "endDate": day, "types": ["activities"]}),
    );
    assert_eq!(made.len(), 1);
    let e = &made[0];
    let id = e["id"].as_str().unwrap().to_string();
    assert!(id.parse::<i64>().is_ok(), "{e}");
    assert_eq!(e["status"], "inprocess");
    assert_eq!(e["type"], "activities");
    assert_eq!(e["userId"], uid.as_str());
    assert_eq!(e["startDate"], day.as_str());
    assert_eq!(e["endDate"], day.as_str());
    assert_eq!(e["generatedDate"], Value::Null);
    assert_eq!(e["fileName"], Value::Null);
    assert_eq!(e["downloadURL"], Value::Null);
    // No content before it is made.
    assert_error(
        &get(&app, &admin, &format!("/rest/dli/exports/{id}/content")),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    // What the user's activities hold now is what the export holds.
    let expected = get(
        &app,
        &admin,
        &format!("/rest/dli/users/{uid}/activities?limit=1"),
    )
    .json()["metadata"]["total"]
        .as_u64()
        .unwrap() as usize;
    assert!(expected >= 3);
    app.run_jobs();
    let r = get(&app, &admin, &format!("/rest/dli/exports/{id}"));
    assert_eq!(r.status, 200, "{}", r.text);
    let e = r.json();
    assert_eq!(e["status"], "completed", "{e}");
    assert_eq!(
        e["fileName"],
        format!("activities_alice@example.com_{day}_{day}.csv").as_str()
    );
    assert!(e["generatedDate"].as_str().unwrap().ends_with('Z'));
    let url = local(&app, &e["downloadURL"]);
    assert_eq!(url, format!("/rest/dli/exports/{id}/content"));
    let r = get(&app, &admin, &url);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("content-type"), Some("text/csv"));
    assert!(r
        .header("content-disposition")
        .unwrap()
        .contains("activities_alice"));
    let text = String::from_utf8(r.bytes.clone()).unwrap();
    let lines: Vec<&str> = text.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(
        csv_fields(lines[0]),
        coffer_service::dli::exports::ACTIVITY_COLUMNS
    );
    assert_eq!(lines.len() - 1, expected, "{text}");
    let rows: Vec<Vec<String>> = lines[1..].iter().map(|l| csv_fields(l)).collect();
    assert!(rows.iter().all(|r| r.len() == 13), "{rows:?}");
    let made_folder = rows
        .iter()
        .find(|r| r[2] == "filesystem.folder.create")
        .expect("the folder's creation");
    assert_eq!(made_folder[3], "folder_changes");
    assert_eq!(made_folder[5], uid.as_str());
    assert_eq!(made_folder[7], folder.as_str());
    assert_eq!(made_folder[8], "Plans, \"secret\"");
    assert!(rows.iter().any(|r| r[2] == "filesystem.file.create"));
    // In sequence order.
    let seqs: Vec<i64> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");

    // Listed, by user and state.
    let list = |q: &str| -> Value {
        let r = get(&app, &admin, &format!("/rest/dli/exports?{q}"));
        assert_eq!(r.status, 200, "{q}: {}", r.text);
        r.json()
    };
    assert_eq!(list(&format!("user_id={uid}"))["metadata"]["total"], 1);
    assert_eq!(
        list(&format!("user_id:in={admin_id},{uid}"))["data"][0]["id"],
        id.as_str()
    );
    assert_eq!(list(&format!("user_id={admin_id}"))["metadata"]["total"], 0);
    assert_eq!(list("status=completed")["metadata"]["total"], 1);
    assert_eq!(list("status:contains=plet")["metadata"]["total"], 1);
    assert_eq!(list("status=inprocess")["metadata"]["total"], 0);
    let linked = list("mode=full_with_links");
    assert!(linked["data"][0]["links"].is_array(), "{linked}");

    // The file counts one reference to its blob; deleting the export takes both.
    let blob = sha3_of(&r.bytes);
    assert_eq!(
        app.count(&format!("id = '{blob}' AND refs = 1"), "blobs"),
        1
    );
    let r = app.rest("DELETE", &format!("/rest/dli/exports/{id}"), &admin, None);
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(app.count("1 = 1", "dli_exports"), 0);
    assert_eq!(app.count(&format!("id = '{blob}'"), "blobs"), 0);
    let there = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(app.ctx.storage.exists(&blob.parse().unwrap()))
        .unwrap();
    assert!(!there, "the export's bytes are deleted");
    for (method, path) in [
        ("GET", format!("/rest/dli/exports/{id}")),
        ("GET", format!("/rest/dli/exports/{id}/content")),
        ("DELETE", format!("/rest/dli/exports/{id}")),
    ] {
        assert_error(
            &app.rest(method, &path, &admin, None),
            404,
            "ERR_ENTITY_NOT_FOUND",
        );
    }
    // The export's life is in the outbox and the administrator's activities, not the user's.
    for subject in [
        "dli.export.create",
        "dli.export.complete",
        "dli.export.delete",
    ] {
        assert_eq!(
            app.count(&format!("subject = '{subject}'"), "events"),
            1,
            "{subject}"
        );
    }
    let theirs = activities(&app, &admin, &format!("/rest/dli/users/{uid}/activities"));
    assert!(!events(&theirs).iter().any(|e| e.starts_with("dli.export")));
    let mine = activities(
        &app,
        &admin,
        &format!("/rest/dli/users/{admin_id}/activities?type=admin"),
    );
    assert!(events(&mine).contains(&"dli.export.create".to_string()));
    let rep = coffer_service::audit::verify::verify(&app.ctx, None).unwrap();
    assert_eq!(rep.problem, None);
}

fn sha3_of(b: &[u8]) -> String {
    use sha3::Digest;
    hex::encode(sha3::Sha3_256::digest(b))
}

/// The entries of a ZIP and the rows of its manifest.
fn unzip(bytes: &[u8]) -> (std::collections::HashMap<String, Vec<u8>>, Vec<Vec<String>>) {
    use std::io::Read;
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut out = std::collections::HashMap::new();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).unwrap();
        let mut b = Vec::new();
        f.read_to_end(&mut b).unwrap();
        out.insert(f.name().to_string(), b);
    }
    let manifest = String::from_utf8(out["manifest.csv"].clone()).unwrap();
    let rows = manifest
        .split("\r\n")
        .filter(|l| !l.is_empty())
        .map(csv_fields)
        .collect();
    (out, rows)
}

#[test]
fn files_and_emails_exports_are_zips_with_a_manifest() {
    let app = TestApp::spawn();
    license(&app);
    let admin = app.admin_token();
    let (uid, user) = app.user_token("dora@example.com", Role::User);
    app.user_token("eli@example.com", Role::User);
    let root = my_folder(&app, &user);
    let a = upload_ok(&app, &user, &root, "a.txt", b"alpha")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    upload_ok(&app, &user, &root, "b.bin", &big);
    let m = app.send_mail(
        &user,
        serde_json::json!({"to": ["eli@example.com"], "subject": "Take this",
            "files": [a], "acl": "internal"}),
    );
    let mail = m["id"].as_str().unwrap().to_string();
    // Scanned first: only content scanned clean goes into an export.
    app.run_jobs();
    let day = today();
    let made = export(
        &app,
        &admin,
        &uid,
        serde_json::json!({"startDate": "2020-01-01", "endDate": day,
            "types": ["files", "emails", "files"], "addLinks": true}),
    );
    // One export per type.
    assert_eq!(made.len(), 2);
    assert!(made[0]["links"].is_array());
    app.run_jobs();
    let content = |e: &Value| -> Vec<u8> {
        let id = e["id"].as_str().unwrap();
        let got = get(&app, &admin, &format!("/rest/dli/exports/{id}")).json();
        assert_eq!(got["status"], "completed", "{got}");
        assert!(got["fileName"].as_str().unwrap().ends_with(".zip"));
        let r = get(&app, &admin, &format!("/rest/dli/exports/{id}/content"));
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.header("content-type"), Some("application/zip"));
        r.bytes
    };
    let files = made.iter().find(|e| e["type"] == "files").unwrap();
    let (entries, rows) = unzip(&content(files));
    assert_eq!(rows[0], coffer_service::dli::exports::FILE_COLUMNS);
    assert_eq!(rows.len(), 3, "{rows:?}");
    let alpha = rows.iter().find(|r| r[4] == "a.txt").unwrap();
    assert_eq!(alpha[1], a.as_str());
    assert_eq!(alpha[5], "5");
    assert_eq!(alpha[8], sha3_of(b"alpha"));
    assert_eq!(alpha[9], "included");
    assert_eq!(entries[&alpha[0]], b"alpha");
    assert!(alpha[0].starts_with("files/") && alpha[0].ends_with("/a.txt"));
    let b = rows.iter().find(|r| r[4] == "b.bin").unwrap();
    assert_eq!(entries[&b[0]], big);

    let emails = made.iter().find(|e| e["type"] == "emails").unwrap();
    let (entries, rows) = unzip(&content(emails));
    assert_eq!(rows[0], coffer_service::dli::exports::EMAIL_COLUMNS);
    let json_entry = format!("emails/{mail}/sent/email.json");
    let email: Value = serde_json::from_slice(&entries[&json_entry]).unwrap();
    assert_eq!(email["subject"], "Take this");
    assert_eq!(email["recipients"][0]["email"], "eli@example.com");
    let att = rows
        .iter()
        .find(|r| r[7] == "a.txt")
        .expect("the attachment");
    assert_eq!(att[1], mail.as_str());
    assert_eq!(att[2], "sent");
    assert_eq!(entries[&att[0]], b"alpha");
}

#[test]
fn an_export_of_a_range_without_records_has_no_data() {
    let app = TestApp::spawn();
    license(&app);
    let admin = app.admin_token();
    let (uid, _) = app.user("fay@example.com", Role::User);
    let made = export(
        &app,
        &admin,
        &uid,
        serde_json::json!({"startDate": "2020-01-01", "endDate": "2020-01-31",
            "types": ["activities", "files", "emails"]}),
    );
    assert_eq!(made.len(), 3);
    app.run_jobs();
    let r = get(
        &app,
        &admin,
        &format!("/rest/dli/exports?user_id={uid}&status=nodata"),
    );
    let list = r.json();
    assert_eq!(list["metadata"]["total"], 3, "{list}");
    for e in list["data"].as_array().unwrap() {
        assert_eq!(e["fileName"], Value::Null);
        assert_eq!(e["downloadURL"], Value::Null);
        assert!(e["generatedDate"].is_string());
        let id = e["id"].as_str().unwrap();
        assert_error(
            &get(&app, &admin, &format!("/rest/dli/exports/{id}/content")),
            404,
            "ERR_ENTITY_NOT_FOUND",
        );
    }
    assert_eq!(
        app.count("kind = 'dli-export' AND state = 'failed'", "jobs"),
        0
    );
}

#[test]
fn an_export_whose_job_fails_twice_ends_in_error() {
    let app = TestApp::spawn();
    license(&app);
    let admin = app.admin_token();
    let (uid, user) = app.user_token("gil@example.com", Role::User);
    let root = my_folder(&app, &user);
    upload_ok(&app, &user, &root, "lost.txt", b"soon gone");
    app.run_jobs();
    // The file's bytes go missing from the store.
    let key = sha3_of(b"soon gone");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(app.ctx.storage.delete(&key.parse().unwrap()))
        .unwrap();
    let day = today();
    let id = export(
        &app,
        &admin,
        &uid,
        serde_json::json!({"startDate": day, "endDate": day, "types": ["files"]}),
    )[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.run_jobs();
    let e = get(&app, &admin, &format!("/rest/dli/exports/{id}")).json();
    assert_eq!(e["status"], "inprocess", "one failure is retried: {e}");
    // The retry, due at once.
    app.execute("UPDATE jobs SET run_at = 0 WHERE kind = 'dli-export'");
    app.run_jobs();
    let e = get(&app, &admin, &format!("/rest/dli/exports/{id}")).json();
    assert_eq!(e["status"], "error", "{e}");
    assert!(e["generatedDate"].is_string());
    assert_eq!(e["downloadURL"], Value::Null);
    assert_eq!(
        app.count(
            "subject = 'dli.export.complete' AND data LIKE '%error%'",
            "events"
        ),
        1
    );
    // An export in error is deleted like any other.
    let r = app.rest("DELETE", &format!("/rest/dli/exports/{id}"), &admin, None);
    assert_eq!(r.status, 204, "{}", r.text);
}

#[test]
fn bad_export_requests_are_refused_and_store_nothing() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (uid, user) = app.user_token("hal@example.com", Role::User);
    let day = today();
    let good = serde_json::json!({"startDate": day, "endDate": day, "types": ["activities"]});
    let post = |token: &str, who: &str, body: Value| {
        app.rest(
            "POST",
            &format!("/rest/dli/exports/users/{who}"),
            token,
            Some(body),
        )
    };
    // Unlicensed: every export operation answers the licence error first.
    assert_error(&post(&admin, &uid, good.clone()), 403, "ERR_LICENSE_DLI");
    for (method, path) in [
        ("GET", "/rest/dli/exports"),
        ("GET", "/rest/dli/exports/1"),
        ("DELETE", "/rest/dli/exports/1"),
        ("GET", "/rest/dli/exports/1/content"),
    ] {
        assert_error(
            &app.rest(method, path, &admin, None),
            403,
            "ERR_LICENSE_DLI",
        );
    }
    license(&app);
    assert_error(&post(&user, &uid, good.clone()), 403, "ERR_ACCESS_USER");
    assert_error(
        &get(&app, &user, "/rest/dli/exports"),
        403,
        "ERR_ACCESS_USER",
    );
    let tomorrow = &coffer_service::rfc3339(unix_now() + 86_400)[..10];
    for (body, code, field) in [
        (
            serde_json::json!({"endDate": day, "types": ["files"]}),
            "ERR_INPUT_REQUIRED",
            "startDate",
        ),
        (
            serde_json::json!({"startDate": day, "types": ["files"]}),
            "ERR_INPUT_REQUIRED",
            "endDate",
        ),
        (
            serde_json::json!({"startDate": day, "endDate": day}),
            "ERR_INPUT_REQUIRED",
            "types",
        ),
        (
            serde_json::json!({"startDate": day, "endDate": day, "types": []}),
            "ERR_INPUT_REQUIRED",
            "types",
        ),
        (
            serde_json::json!({"startDate": day, "endDate": day, "types": "files"}),
            "ERR_INPUT_NOT_ARRAY",
            "types",
        ),
        (
            serde_json::json!({"startDate": day, "endDate": day, "types": ["logs"]}),
            "ERR_INPUT_NOT_IN_LIST",
            "types",
        ),
        (
            serde_json::json!({"startDate": day, "endDate": day, "types": ["files", "logs"]}),
            "ERR_INPUT_NOT_IN_LIST",
            "types",
        ),
        (
            serde_json::json!({"startDate": "2024/01/01", "endDate": day, "types": ["files"]}),
            "ERR_INPUT_INVALID_DATE",
            "startDate",
        ),
        (
            serde_json::json!({"startDate": "2024-01-01", "endDate": "2024-02-30", "types": ["files"]}),
            "ERR_INPUT_INVALID_DATE",
            "endDate",
        ),
        (
            serde_json::json!({"startDate": tomorrow, "endDate": tomorrow, "types": ["files"]}),
            "ERR_INPUT_DATE_NOT_BEFORE",
            "startDate",
        ),
        (
            serde_json::json!({"startDate": "2024-02-02", "endDate": "2024-02-01", "types": ["files"]}),
            "ERR_INPUT_DATE_NOT_AFTER",
            "endDate",
        ),
    ] {
        let r = post(&admin, &uid, body.clone());
        assert_error(&r, 422, code);
        assert_eq!(r.json()["errors"][0]["field"], field, "{body}: {}", r.text);
    }
    assert_error(
        &post(&admin, &uuid::Uuid::new_v4().to_string(), good.clone()),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    for path in [
        "/rest/dli/exports/999",
        "/rest/dli/exports/abc",
        "/rest/dli/exports/999/content",
    ] {
        assert_error(&get(&app, &admin, path), 404, "ERR_ENTITY_NOT_FOUND");
    }
    assert_error(
        &app.rest("DELETE", "/rest/dli/exports/999", &admin, None),
        404,
        "ERR_ENTITY_NOT_FOUND",
    );
    assert_eq!(app.count("1 = 1", "dli_exports"), 0);
    assert_eq!(app.count("kind = 'dli-export'", "jobs"), 0);
    assert_eq!(app.count("subject LIKE 'dli.export.%'", "events"), 0);
}
