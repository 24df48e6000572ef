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
