//! Favorites end to end: marking folders and files one by one and in bulk, the list with its
//! filters and orders, `isFavorite` on the records, the refusals that store nothing, the events,
//! and a favorite that hides while its object is out of reach and goes when it is purged.

use coffer_domain::Role;
use coffer_tests::{assert_error, me, mkdir, my_folder, upload_ok, TestApp};
use serde_json::{json, Value};

fn upload(app: &TestApp, token: &str, folder: &str, name: &str) -> String {
    upload_ok(app, token, folder, name, b"content")["id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn favorite(app: &TestApp, token: &str, object: &str) -> Value {
    let r = app.rest(
        "POST",
        "/rest/favorites",
        token,
        Some(json!({"objectId": object})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()
}

/// The object ids of the caller's favorites list, in order, with its total.
fn listed(app: &TestApp, token: &str, query: &str) -> (Vec<String>, i64) {
    let r = app.rest("GET", &format!("/rest/favorites{query}"), token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    let ids = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            // Every listed favorite carries its object, as the caller sees it.
            assert_eq!(f["object"]["id"], f["objectId"], "{f}");
            assert_eq!(f["object"]["isFavorite"], true, "{f}");
            f["objectId"].as_str().unwrap().to_string()
        })
        .collect();
    (ids, v["metadata"]["total"].as_i64().unwrap())
}

fn rows(app: &TestApp, user: &str) -> i64 {
    app.count(&format!("user_id = '{user}'"), "favorites")
}

fn events(app: &TestApp, subject: &str) -> i64 {
    app.count(&format!("subject = '{subject}'"), "events")
}

#[test]
fn folders_and_files_are_marked_listed_and_removed() {
    let app = TestApp::spawn();
    let (me_id, token) = app.user_token("fav@example.com", Role::User);
    let (_, other) = app.user_token("other@example.com", Role::User);
    let root = my_folder(&app, &token);
    let alpha = mkdir(&app, &token, &root, "Alpha");
    let beta = mkdir(&app, &token, &root, "Beta");
    let file = upload(&app, &token, &alpha, "a.txt");
    let foreign = mkdir(&app, &other, &my_folder(&app, &other), "Theirs");

    // A listing rendered before the change must not be served after it.
    let children = app.rest(
        "GET",
        &format!("/rest/folders/{root}/children"),
        &token,
        None,
    );
    assert_eq!(children.status, 200, "{}", children.text);

    let f = favorite(&app, &token, &alpha);
    assert!(f["id"].as_i64().is_some_and(|id| id > 0), "{f}");
    assert_eq!(f["objectId"], alpha.as_str());
    assert_eq!(f["userId"], me_id.as_str());
    let alpha_fav = f["id"].as_i64().unwrap();
    let f = favorite(&app, &token, &file);
    assert_eq!(f["objectId"], file.as_str());
    assert_eq!(rows(&app, &me_id), 2);
    assert_eq!(events(&app, "favorite.favorite.create"), 2);

    // Refusals store nothing.
    let r = app.rest(
        "POST",
        "/rest/favorites",
        &token,
        Some(json!({"objectId": alpha})),
    );
    assert_error(&r, 409, "ERR_ENTITY_EXISTS");
    for (body, status, code) in [
        (json!({}), 422, "ERR_INPUT_REQUIRED"),
        (json!({"objectId": ""}), 422, "ERR_INPUT_REQUIRED"),
        (json!({"objectId": true}), 422, "ERR_INPUT_NOT_STRING"),
        (json!({"objectId": 42}), 404, "ERR_ENTITY_NOT_FOUND"),
        (
            json!({"objectId": "not-a-uuid"}),
            404,
            "ERR_ENTITY_NOT_FOUND",
        ),
        (
            json!({"objectId": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}),
            404,
            "ERR_ENTITY_NOT_FOUND",
        ),
        // Another user's folder is not told apart from none.
        (json!({"objectId": foreign}), 404, "ERR_ENTITY_NOT_FOUND"),
        (
            json!({"objectId": root, "addLinks": "yes"}),
            422,
            "ERR_INPUT_NOT_BOOLEAN",
        ),
    ] {
        let r = app.rest("POST", "/rest/favorites", &token, Some(body.clone()));
        assert_error(&r, status, code);
        assert!(
            !r.text.contains("diesel") && !r.text.contains("SQL"),
            "{}",
            r.text
        );
    }
    let base = me(&app, &token)["basedirId"].as_str().unwrap().to_string();
    let r = app.rest(
        "POST",
        "/rest/favorites",
        &token,
        Some(json!({"objectId": base})),
    );
    assert_error(&r, 403, "ERR_ENTITY_IS_BASE_DIR");
    assert_eq!(rows(&app, &me_id), 2);
    assert_eq!(events(&app, "favorite.favorite.create"), 2);

    // The records say which are favorites, the listing included.
    let get = |path: String| {
        let r = app.rest("GET", &path, &token, None);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()
    };
    assert_eq!(get(format!("/rest/folders/{alpha}"))["isFavorite"], true);
    assert_eq!(get(format!("/rest/folders/{beta}"))["isFavorite"], false);
    assert_eq!(get(format!("/rest/files/{file}"))["isFavorite"], true);
    let children = get(format!("/rest/folders/{root}/children"));
    let flag = |name: &str| {
        children["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .unwrap()["isFavorite"]
            .clone()
    };
    assert_eq!(flag("Alpha"), true);
    assert_eq!(flag("Beta"), false);
    // The other user's records are their own.
    assert_eq!(
        app.rest("GET", &format!("/rest/folders/{foreign}"), &other, None)
            .json()["isFavorite"],
        false
    );

    // The list: order, filters, detail.
    let (ids, total) = listed(&app, &token, "");
    assert_eq!((ids, total), (vec![alpha.clone(), file.clone()], 2));
    let (ids, _) = listed(&app, &token, "?orderBy=objects.name:asc");
    assert_eq!(ids, vec![file.clone(), alpha.clone()]);
    let (ids, _) = listed(&app, &token, "?orderBy=objects.name:desc");
    assert_eq!(ids, vec![alpha.clone(), file.clone()]);
    let (ids, total) = listed(&app, &token, &format!("?parentId={alpha}"));
    assert_eq!((ids, total), (vec![file.clone()], 1));
    let (ids, total) = listed(&app, &token, &format!("?parentId:in={root},{alpha}"));
    assert_eq!(total, 2, "{ids:?}");
    let (ids, total) = listed(&app, &token, "?limit=1&offset=1&excludeEc=true");
    assert_eq!((ids, total), (vec![file.clone()], 2));
    let r = app.rest("GET", "/rest/favorites?with=creator", &token, None);
    assert_eq!(r.json()["data"][0]["creator"]["email"], "fav@example.com");
    let (ids, total) = listed(&app, &other, "");
    assert_eq!((ids.len(), total), (0, 0));
    for (query, status, code) in [
        ("?excludeEc=maybe", 422, "ERR_INPUT_NOT_BOOLEAN"),
        (
            "?orderBy=objects.size:asc",
            400,
            "ERR_REQUEST_INVALID_FILTER",
        ),
        ("?limit=0", 422, "ERR_INPUT_INVALID_FORMAT"),
        ("?colour=blue", 400, "ERR_REQUEST_INVALID_FILTER"),
    ] {
        let r = app.rest("GET", &format!("/rest/favorites{query}"), &token, None);
        assert_error(&r, status, code);
    }

    // Removing: one's own favorites only.
    let r = app.rest(
        "DELETE",
        &format!("/rest/favorites/{alpha_fav}"),
        &other,
        None,
    );
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    let r = app.rest("DELETE", "/rest/favorites/abc", &token, None);
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    assert_eq!(rows(&app, &me_id), 2);
    let r = app.rest(
        "DELETE",
        &format!("/rest/favorites/{alpha_fav}"),
        &token,
        None,
    );
    assert_eq!(r.status, 204, "{}", r.text);
    assert!(r.text.is_empty());
    assert_eq!(rows(&app, &me_id), 1);
    assert_eq!(events(&app, "favorite.favorite.delete"), 1);
    let r = app.rest(
        "DELETE",
        &format!("/rest/favorites/{alpha_fav}"),
        &token,
        None,
    );
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    assert_eq!(get(format!("/rest/folders/{alpha}"))["isFavorite"], false);
    let (ids, _) = listed(&app, &token, "");
    assert_eq!(ids, vec![file]);
}

#[test]
fn bulk_marks_folders_all_or_nothing_unless_partial_success() {
    let app = TestApp::spawn();
    let (me_id, token) = app.user_token("bulk@example.com", Role::User);
    let root = my_folder(&app, &token);
    let f1 = mkdir(&app, &token, &root, "One");
    let f2 = mkdir(&app, &token, &root, "Two");
    let f3 = mkdir(&app, &token, &root, "Three");
    let file = upload(&app, &token, &root, "file.txt");
    let bogus = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

    let r = app.rest(
        "POST",
        &format!("/rest/folders/actions/favorite?id:in={f1},{f2}"),
        &token,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    let made: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["objectId"].as_str().unwrap())
        .collect();
    assert_eq!(made, vec![f1.as_str(), f2.as_str()]);
    assert_eq!(v["metadata"]["total"], 2);
    assert!(v.get("failedIds").is_none(), "{v}");
    assert_eq!(rows(&app, &me_id), 2);

    // Without partialSuccess one failure fails all, naming it; nothing is stored.
    for (ids, status, code, failed) in [
        (
            format!("{f3},{f1}"),
            409,
            "ERR_ENTITY_EXISTS",
            vec![f1.clone()],
        ),
        (
            format!("{f3},{file}"),
            422,
            "ERR_INVALID_PARAMETER",
            vec![file.clone()],
        ),
        (
            format!("{f3},{bogus}"),
            404,
            "ERR_ENTITY_NOT_FOUND",
            vec![bogus.to_string()],
        ),
        (
            format!("{f3},nope"),
            404,
            "ERR_ENTITY_NOT_FOUND",
            vec!["nope".to_string()],
        ),
    ] {
        let r = app.rest(
            "POST",
            &format!("/rest/folders/actions/favorite?id:in={ids}"),
            &token,
            None,
        );
        assert_error(&r, status, code);
        assert_eq!(r.json()["failedIds"], json!(failed), "{}", r.text);
    }
    assert_eq!(rows(&app, &me_id), 2);
    for (query, status, code) in [
        ("", 422, "ERR_INPUT_REQUIRED"),
        ("?id:in=", 400, "ERR_REQUEST_INVALID_FILTER"),
        (
            "?id:in=x&partialSuccess=often",
            422,
            "ERR_INPUT_NOT_BOOLEAN",
        ),
    ] {
        for method in ["POST", "DELETE"] {
            let r = app.rest(
                method,
                &format!("/rest/folders/actions/favorite{query}"),
                &token,
                None,
            );
            assert_error(&r, status, code);
        }
    }

    // With it, what can be marked is; the rest is named.
    let r = app.rest(
        "POST",
        &format!("/rest/folders/actions/favorite?id:in={f3},{f1},{bogus}&partialSuccess=true"),
        &token,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    assert_eq!(v["data"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["data"][0]["objectId"], f3.as_str());
    assert_eq!(v["failedIds"], json!([f1, bogus]));
    assert_eq!(rows(&app, &me_id), 3);
    assert_eq!(events(&app, "favorite.favorite.create"), 3);

    // Unmarking, the same way.
    let r = app.rest(
        "DELETE",
        &format!("/rest/folders/actions/favorite?id:in={f1},{f2}"),
        &token,
        None,
    );
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(rows(&app, &me_id), 1);
    let r = app.rest(
        "DELETE",
        &format!("/rest/folders/actions/favorite?id:in={f3},{f1}"),
        &token,
        None,
    );
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    assert_eq!(r.json()["failedIds"], json!([f1]));
    assert_eq!(rows(&app, &me_id), 1);
    let r = app.rest(
        "DELETE",
        &format!("/rest/folders/actions/favorite?id:in={f3},{f1}&partialSuccess=true"),
        &token,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["failedIds"], json!([f1]));
    assert_eq!(rows(&app, &me_id), 0);
    assert_eq!(events(&app, "favorite.favorite.delete"), 3);
}

#[test]
fn a_favorite_hides_while_out_of_reach_and_goes_when_purged() {
    let app = TestApp::spawn();
    let (_, owner) = app.user_token("owner@example.com", Role::User);
    let (member_id, member) = app.user_token("member@example.com", Role::User);
    let root = my_folder(&app, &owner);
    let shared = mkdir(&app, &owner, &root, "Shared");
    let file = upload(&app, &owner, &shared, "doc.txt");
    let share = || {
        let r = app.rest(
            "POST",
            &format!("/rest/folders/{shared}/members"),
            &owner,
            Some(json!({"userIds": [member_id], "roleId": 4})),
        );
        assert_eq!(r.status, 201, "{}", r.text);
    };
    share();
    favorite(&app, &member, &shared);
    favorite(&app, &member, &file);
    let all = vec![shared.clone(), file.clone()];
    assert_eq!(listed(&app, &member, ""), (all.clone(), 2));

    // In the trash: hidden; recovered: back.
    let r = app.rest("DELETE", &format!("/rest/files/{file}"), &owner, None);
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(listed(&app, &member, ""), (vec![shared.clone()], 1));
    assert_eq!(rows(&app, &member_id), 2);
    let r = app.rest(
        "PATCH",
        &format!("/rest/files/{file}/actions/recover"),
        &owner,
        None,
    );
    assert!(r.status < 300, "{} {}", r.status, r.text);
    assert_eq!(listed(&app, &member, ""), (all.clone(), 2));

    // No longer shared: hidden, and the object is not told apart from none; shared again: back.
    let r = app.rest(
        "DELETE",
        &format!("/rest/folders/{shared}/members/{member_id}"),
        &owner,
        None,
    );
    assert!(r.status < 300, "{} {}", r.status, r.text);
    assert_eq!(listed(&app, &member, ""), (vec![], 0));
    assert_eq!(rows(&app, &member_id), 2);
    let r = app.rest(
        "POST",
        "/rest/favorites",
        &member,
        Some(json!({"objectId": shared})),
    );
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    share();
    assert_eq!(listed(&app, &member, ""), (all, 2));

    // Permanently deleted: the favorite goes.
    let r = app.rest("DELETE", &format!("/rest/files/{file}"), &owner, None);
    assert_eq!(r.status, 204, "{}", r.text);
    app.execute(&format!(
        "UPDATE objects SET deleted_at = 1 WHERE id = '{file}'"
    ));
    coffer_service::content::jobs::schedule_periodic(&app.ctx).unwrap();
    app.run_jobs();
    assert_eq!(
        app.count(&format!("id = '{file}' AND perm_deleted = TRUE"), "objects"),
        1
    );
    assert_eq!(app.count(&format!("object_id = '{file}'"), "favorites"), 0);
    assert_eq!(rows(&app, &member_id), 1);
    assert_eq!(listed(&app, &member, ""), (vec![shared], 1));
}
