//! Contacts (`/rest/contacts`), the external distribution lists (`/rest/externalDL`) and the
//! distribution-list check (`/rest/users/actions/getDistributionList`) over HTTP: statuses,
//! envelopes, the fields a client reads, and what is stored afterwards (refused calls store
//! nothing and record no event). Runs on SQLite, and on PostgreSQL when
//! `COFFER_TEST_POSTGRES_URL` is set.

use coffer_domain::client::flow;
use coffer_domain::Role;
use coffer_tests::{client_input, Body, TestApp};
use serde_json::{json, Value};

fn contact(name: &str, emails: &[&str]) -> Value {
    let items: Vec<Value> = emails.iter().map(|e| json!({ "email": e })).collect();
    json!({"name": name, "items": items})
}

fn names(r: &coffer_tests::Resp) -> Vec<String> {
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

fn emails(v: &Value) -> Vec<String> {
    v["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data: {v}"))
        .iter()
        .map(|e| e["email"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_contact_is_created_read_listed_changed_and_deleted() {
    let app = TestApp::spawn();
    let (ann, t) = app.user_token("ann@example.com", Role::User);

    let r = app.rest(
        "POST",
        "/rest/contacts",
        &t,
        Some(contact(
            " Ada Lovelace ",
            &["Ada@Example.com", "ada@example.com"],
        )),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let c = r.json();
    let id = c["id"].as_i64().expect("an integer id");
    assert_eq!(
        r.header("location").unwrap(),
        format!("{}/rest/contacts/{id}", app.base)
    );
    assert_eq!(c["userId"], ann.as_str());
    assert_eq!(c["name"], "Ada Lovelace");
    assert_eq!(c["email"], "ada@example.com");
    assert_eq!(c["isDistributionList"], false);
    assert_eq!(c["profileIcon"], "");
    assert_eq!(
        c["items"],
        json!([{"email": "ada@example.com", "isDistributionList": false, "profileIcon": ""}])
    );
    assert!(c["created"].as_str().unwrap().ends_with('Z'), "{c}");
    assert_eq!(c["created"], c["modified"]);
    // Never contacted: the field is left out, never null.
    assert!(c.get("lastContactDate").is_none(), "{c}");
    assert!(c.get("links").is_none());

    let r = app.rest("GET", &format!("/rest/contacts/{id}"), &t, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json(), c);
    let r = app.rest(
        "GET",
        &format!("/rest/contacts/{id}?mode=full_with_links"),
        &t,
        None,
    );
    assert_eq!(
        r.json()["links"][0]["href"],
        format!("{}/rest/contacts/{id}", app.base)
    );

    let r = app.rest("GET", "/rest/contacts", &t, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let l = r.json();
    assert_eq!(
        l["metadata"],
        json!({"total": 1, "limit": 100, "offset": 0})
    );
    assert_eq!(l["data"], json!([c]));

    // PUT replaces the name and the addresses, and answers 200 with no body.
    let r = app.rest(
        "PUT",
        &format!("/rest/contacts/{id}"),
        &t,
        Some(contact(
            "Ada King",
            &["ada@example.org", "lovelace@example.org"],
        )),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.is_empty(), "{}", r.text);
    let c2 = app
        .rest("GET", &format!("/rest/contacts/{id}"), &t, None)
        .json();
    assert_eq!(c2["name"], "Ada King");
    assert_eq!(c2["email"], "ada@example.org");
    // Two addresses: the contact stands for several people.
    assert_eq!(c2["isDistributionList"], true);
    assert_eq!(c2["items"].as_array().unwrap().len(), 2);
    assert_eq!(c2["created"], c["created"]);
    assert_eq!(app.count(&format!("contact_id = {id}"), "contact_items"), 2);

    // DELETE answers 200 with no body; then the contact is gone.
    let r = app.rest("DELETE", &format!("/rest/contacts/{id}"), &t, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.is_empty(), "{}", r.text);
    let r = app.rest("GET", &format!("/rest/contacts/{id}"), &t, None);
    assert_eq!((r.status, r.code()), (404, "ERR_ENTITY_NOT_FOUND".into()));
    assert_eq!(app.count("1 = 1", "contacts"), 0);
    assert_eq!(app.count("1 = 1", "contact_items"), 0);

    // One event per change, naming the owner.
    for subject in ["create", "update", "delete"] {
        assert_eq!(
            app.count(
                &format!("subject = 'contact.contact.{subject}' AND actor_id = '{ann}'"),
                "events"
            ),
            1,
            "{subject}"
        );
    }
}

#[test]
fn bad_contact_input_is_invalid_parameter_and_stores_nothing() {
    let app = TestApp::spawn();
    let (_, t) = app.user_token("ann@example.com", Role::User);
    let ok = json!([{"email": "a@example.com"}]);
    let many: Vec<Value> = (0..101)
        .map(|i| json!({ "email": format!("u{i}@example.com") }))
        .collect();
    let cases = [
        (json!({"items": ok}), "name"),
        (json!({"name": "", "items": ok}), "name"),
        (json!({"name": "   ", "items": ok}), "name"),
        (json!({"name": 7, "items": ok}), "name"),
        (json!({"name": "a\u{0}b", "items": ok}), "name"),
        (json!({"name": "a\u{1b}[31mb", "items": ok}), "name"),
        (json!({"name": "line\nbreak", "items": ok}), "name"),
        (json!({"name": "x".repeat(256), "items": ok}), "name"),
        (json!({"name": "n"}), "items"),
        (json!({"name": "n", "items": []}), "items"),
        (
            json!({"name": "n", "items": {"email": "a@example.com"}}),
            "items",
        ),
        (json!({"name": "n", "items": many}), "items"),
        (
            json!({"name": "n", "items": ["a@example.com"]}),
            "items[0].email",
        ),
        (
            json!({"name": "n", "items": [{"email": "not an address"}]}),
            "items[0].email",
        ),
        (
            json!({"name": "n", "items": [{"email": "a@example.com"}, {"email": "b@"}]}),
            "items[1].email",
        ),
        (
            json!({"name": "n", "items": [{"email": "a\u{0}@example.com"}]}),
            "items[0].email",
        ),
        (
            json!({"name": "n", "items": ok, "addLinks": "yes"}),
            "addLinks",
        ),
    ];
    for (body, field) in &cases {
        let r = app.rest("POST", "/rest/contacts", &t, Some(body.clone()));
        assert_eq!(r.status, 422, "{body}: {}", r.text);
        let e = &r.json()["errors"][0];
        assert_eq!(e["code"], "ERR_INVALID_PARAMETER", "{body}");
        assert_eq!(e["field"], *field, "{body}");
    }
    // A body that is not a JSON object is 400.
    for raw in ["{", "[1]", "\"name\""] {
        let r = app.send(
            "POST",
            "/rest/contacts",
            &[
                ("X-Coffer-Version", "28"),
                ("Authorization", &format!("Bearer {t}")),
            ],
            Some(Body::Raw("application/json", raw.into())),
        );
        assert_eq!(
            (r.status, r.code()),
            (400, "ERR_REQUEST_INVALID_JSON".into()),
            "{raw}"
        );
    }
    assert_eq!(app.count("1 = 1", "contacts"), 0);
    assert_eq!(app.count("subject LIKE 'contact.%'", "events"), 0);

    // The limits themselves pass: a 255-byte name, 100 addresses.
    let hundred: Vec<Value> = (0..100)
        .map(|i| json!({ "email": format!("u{i}@example.com") }))
        .collect();
    let r = app.rest(
        "POST",
        "/rest/contacts",
        &t,
        Some(json!({"name": "é".repeat(127), "items": hundred})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.json()["id"].as_i64().unwrap();

    // A refused PUT leaves the contact as it was.
    let before = app
        .rest("GET", &format!("/rest/contacts/{id}"), &t, None)
        .json();
    for (body, field) in &cases {
        let r = app.rest(
            "PUT",
            &format!("/rest/contacts/{id}"),
            &t,
            Some(body.clone()),
        );
        assert_eq!(r.status, 422, "{body}: {}", r.text);
        assert_eq!(r.json()["errors"][0]["field"], *field, "{body}");
    }
    let after = app
        .rest("GET", &format!("/rest/contacts/{id}"), &t, None)
        .json();
    assert_eq!(before, after);
    assert_eq!(app.count("subject = 'contact.contact.update'", "events"), 0);
}

#[test]
fn contact_names_are_unique_per_user_without_regard_to_case() {
    let app = TestApp::spawn();
    let (_, ann) = app.user_token("ann@example.com", Role::User);
    let (_, bob) = app.user_token("bob@example.com", Role::User);
    let post = |t: &str, name: &str| {
        app.rest(
            "POST",
            "/rest/contacts",
            t,
            Some(contact(name, &["x@example.com"])),
        )
    };
    let first = post(&ann, "Émile").json()["id"].as_i64().unwrap();
    let r = post(&ann, "ÉMILE");
    assert_eq!((r.status, r.code()), (409, "ERR_ENTITY_EXISTS".into()));
    assert_eq!(r.json()["errors"][0]["field"], "name");
    // Another user may have the same name.
    assert_eq!(post(&bob, "Émile").status, 200);
    let second = post(&ann, "Zola").json()["id"].as_i64().unwrap();
    // Renaming onto another contact's name is refused; changing a contact's own case is not.
    let r = app.rest(
        "PUT",
        &format!("/rest/contacts/{second}"),
        &ann,
        Some(contact("émile", &["z@example.com"])),
    );
    assert_eq!((r.status, r.code()), (409, "ERR_ENTITY_EXISTS".into()));
    let r = app.rest(
        "PUT",
        &format!("/rest/contacts/{first}"),
        &ann,
        Some(contact("émile", &["x@example.com"])),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    // Names order by code point once folded (`zola` before `émile`), on both backends.
    assert_eq!(
        names(&app.rest("GET", "/rest/contacts", &ann, None)),
        ["Zola", "émile"]
    );
    assert_eq!(app.count("1 = 1", "contacts"), 3);
    assert_eq!(app.count("subject = 'contact.contact.create'", "events"), 3);
}

#[test]
fn only_the_owner_reaches_a_contact() {
    let app = TestApp::spawn();
    let (_, ann) = app.user_token("ann@example.com", Role::User);
    let (_, bob) = app.user_token("bob@example.com", Role::User);
    let admin = app.admin_token();
    let r = app.rest(
        "POST",
        "/rest/contacts",
        &ann,
        Some(contact("Private", &["p@example.com"])),
    );
    let id = r.json()["id"].as_i64().unwrap();

    // Another user, even a system administrator, gets 403 ERR_ACCESS_USER.
    for t in [&bob, &admin] {
        let r = app.rest("GET", &format!("/rest/contacts/{id}"), t, None);
        assert_eq!(
            (r.status, r.code()),
            (403, "ERR_ACCESS_USER".into()),
            "{}",
            r.text
        );
        let r = app.rest(
            "PUT",
            &format!("/rest/contacts/{id}"),
            t,
            Some(contact("Mine", &["m@example.com"])),
        );
        assert_eq!(
            (r.status, r.code()),
            (403, "ERR_ACCESS_USER".into()),
            "{}",
            r.text
        );
        let r = app.rest("DELETE", &format!("/rest/contacts/{id}"), t, None);
        assert_eq!(
            (r.status, r.code()),
            (403, "ERR_ACCESS_USER".into()),
            "{}",
            r.text
        );
        // Their lists do not show it.
        assert!(names(&app.rest("GET", "/rest/contacts", t, None)).is_empty());
    }
    let stored = app
        .rest("GET", &format!("/rest/contacts/{id}"), &ann, None)
        .json();
    assert_eq!(stored["name"], "Private");
    assert_eq!(app.count("subject LIKE 'contact.%'", "events"), 1);

    // No such contact, or an id that is not one: 404.
    for path in [
        "/rest/contacts/999999",
        "/rest/contacts/abc",
        "/rest/contacts/0",
    ] {
        let r = app.rest("GET", path, &ann, None);
        assert_eq!(
            (r.status, r.code()),
            (404, "ERR_ENTITY_NOT_FOUND".into()),
            "{path}"
        );
        let r = app.rest("DELETE", path, &ann, None);
        assert_eq!(r.status, 404, "{path}");
    }
    // Without a token: 401.
    let r = app.send("GET", "/rest/contacts", &[("X-Coffer-Version", "28")], None);
    assert_eq!(r.status, 401, "{}", r.text);
}

#[test]
fn contact_lists_filter_order_and_page() {
    let app = TestApp::spawn();
    let (_, t) = app.user_token("ann@example.com", Role::User);
    let mut ids = Vec::new();
    for name in ["charlie", "Alpha", "bravo 50%", "Bravo_2"] {
        let r = app.rest(
            "POST",
            "/rest/contacts",
            &t,
            Some(contact(name, &["x@example.com"])),
        );
        ids.push(r.json()["id"].as_i64().unwrap());
    }
    // Default: by name, without regard to case.
    assert_eq!(
        names(&app.rest("GET", "/rest/contacts", &t, None)),
        ["Alpha", "bravo 50%", "Bravo_2", "charlie"]
    );
    assert_eq!(
        names(&app.rest("GET", "/rest/contacts?orderBy=name:desc", &t, None)),
        ["charlie", "Bravo_2", "bravo 50%", "Alpha"]
    );
    assert_eq!(
        names(&app.rest("GET", "/rest/contacts?orderBy=id:desc", &t, None)),
        ["Bravo_2", "bravo 50%", "Alpha", "charlie"]
    );
    assert_eq!(
        names(&app.rest("GET", "/rest/contacts?orderBy=id", &t, None)),
        ["charlie", "Alpha", "bravo 50%", "Bravo_2"]
    );
    // `name` is exact; `name:contains` ignores case and takes `%` and `_` literally.
    assert_eq!(
        names(&app.rest("GET", "/rest/contacts?name=Alpha", &t, None)),
        ["Alpha"]
    );
    assert!(names(&app.rest("GET", "/rest/contacts?name=alpha", &t, None)).is_empty());
    assert_eq!(
        names(&app.rest("GET", "/rest/contacts?name:contains=BRAVO", &t, None)),
        ["bravo 50%", "Bravo_2"]
    );
    assert_eq!(
        names(&app.rest("GET", "/rest/contacts?name:contains=%25", &t, None)),
        ["bravo 50%"]
    );
    assert_eq!(
        names(&app.rest("GET", "/rest/contacts?name:contains=o_", &t, None)),
        ["Bravo_2"]
    );
    // Pages, with the total of the whole list.
    let r = app.rest("GET", "/rest/contacts?limit=2&offset=1", &t, None);
    assert_eq!(names(&r), ["bravo 50%", "Bravo_2"]);
    assert_eq!(
        r.json()["metadata"],
        json!({"total": 4, "limit": 2, "offset": 1})
    );
    let r = app.rest("GET", "/rest/contacts?name:contains=a&limit=1", &t, None);
    assert_eq!(r.json()["metadata"]["total"], 4);
    // Filters and orders the list does not take: 400 ERR_REQUEST_INVALID_FILTER.
    for q in [
        "email=x@example.com",
        "name:startswith=A",
        "name:in=Alpha",
        "orderBy=created:asc",
        "orderBy=name:up",
        "id:in=1",
    ] {
        let r = app.rest("GET", &format!("/rest/contacts?{q}"), &t, None);
        assert_eq!(
            (r.status, r.code()),
            (400, "ERR_REQUEST_INVALID_FILTER".into()),
            "{q}: {}",
            r.text
        );
    }
    for q in ["limit=0", "limit=10001", "offset=-1"] {
        let r = app.rest("GET", &format!("/rest/contacts?{q}"), &t, None);
        assert_eq!(r.status, 422, "{q}: {}", r.text);
    }
}

#[test]
fn touch_contacts_sets_the_last_contact_date_clients_read_and_sort_by() {
    let app = TestApp::spawn();
    let (ann, t) = app.user_token("ann@example.com", Role::User);
    let (bob, bt) = app.user_token("bob@example.com", Role::User);
    for (name, addr) in [
        ("Old", "old@example.com"),
        ("New", "new@example.com"),
        ("Never", "never@example.com"),
    ] {
        let r = app.rest("POST", "/rest/contacts", &t, Some(contact(name, &[addr])));
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let r = app.rest(
        "POST",
        "/rest/contacts",
        &bt,
        Some(contact("Old", &["old@example.com"])),
    );
    assert_eq!(r.status, 200, "{}", r.text);

    // What the mail sender calls when Ann sends.
    let touch = |user: &str, emails: &[&str], at: i64| {
        let emails: Vec<String> = emails.iter().map(|e| e.to_string()).collect();
        coffer_service::mail::contacts::touch_contacts(&app.ctx, user, &emails, at).unwrap()
    };
    assert_eq!(touch(&ann, &["OLD@example.com"], 1_700_000_000), 1);
    assert_eq!(
        touch(
            &ann,
            &["new@example.com", "stranger@example.com"],
            1_800_000_000
        ),
        1
    );
    // An older time does not move a date back.
    assert_eq!(touch(&ann, &["new@example.com"], 1_750_000_000), 0);

    let r = app.rest(
        "GET",
        "/rest/contacts?orderBy=lastContactDate:desc",
        &t,
        None,
    );
    assert_eq!(names(&r), ["New", "Old", "Never"]);
    let data = r.json()["data"].clone();
    assert_eq!(data[0]["lastContactDate"], "2027-01-15T08:00:00Z");
    assert_eq!(data[1]["lastContactDate"], "2023-11-14T22:13:20Z");
    assert!(data[2].get("lastContactDate").is_none(), "{}", data[2]);
    assert_eq!(
        names(&app.rest(
            "GET",
            "/rest/contacts?orderBy=lastContactDate:asc",
            &t,
            None
        )),
        ["Never", "Old", "New"]
    );
    // Bob's contact with the same address is his own: untouched.
    let b = app.rest("GET", "/rest/contacts", &bt, None).json();
    assert!(b["data"][0].get("lastContactDate").is_none(), "{b}");
    assert_eq!(
        app.count(
            &format!("subject = 'contact.contact.touch' AND actor_id = '{ann}'"),
            "events"
        ),
        2
    );
    assert_eq!(
        app.count(
            &format!("actor_id = '{bob}' AND subject = 'contact.contact.touch'"),
            "events"
        ),
        0
    );
}

#[test]
fn external_distribution_lists_are_kept_by_user_administrators() {
    let app = TestApp::spawn();
    let (_, user) = app.user_token("ann@example.com", Role::User);
    let (_, apps) = app.user_token("apps@example.com", Role::ApplicationAdmin);
    let (helpdesk_id, helpdesk) = app.user_token("help@example.com", Role::HelpdeskAdmin);
    let admin = app.admin_token();
    let body =
        json!({"emails": ["Team@Partner.example", "all@partner.example", "team@partner.example"]});

    // Users and application administrators may read, not change.
    for t in [&user, &apps] {
        for method in ["POST", "DELETE"] {
            let r = app.rest(method, "/rest/externalDL", t, Some(body.clone()));
            assert_eq!(
                (r.status, r.code()),
                (403, "ERR_ACCESS_DENIED".into()),
                "{}",
                r.text
            );
            assert_eq!(
                r.json()["errors"][0]["redirectUrl"],
                format!("{}/", app.base)
            );
        }
    }
    assert_eq!(app.count("1 = 1", "external_dls"), 0);

    // A helpdesk administrator adds; addresses are lower-cased and listed once.
    let r = app.rest("POST", "/rest/externalDL", &helpdesk, Some(body.clone()));
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        r.header("location").unwrap(),
        format!("{}/rest/externalDL", app.base)
    );
    assert_eq!(
        emails(&r.json()),
        ["team@partner.example", "all@partner.example"]
    );
    assert_eq!(
        app.count(&format!("created_by = '{helpdesk_id}'"), "external_dls"),
        2
    );
    // Adding again changes nothing and answers the same.
    let r = app.rest("POST", "/rest/externalDL", &admin, Some(body.clone()));
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        emails(&r.json()),
        ["team@partner.example", "all@partner.example"]
    );
    assert_eq!(app.count("1 = 1", "external_dls"), 2);
    assert_eq!(
        app.count("subject = 'externaldl.email.create'", "events"),
        1
    );

    // Everyone reads the list, by address; `search` finds a part of one.
    let r = app.rest("GET", "/rest/externalDL", &user, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let l = r.json();
    assert_eq!(emails(&l), ["all@partner.example", "team@partner.example"]);
    assert_eq!(
        l["metadata"],
        json!({"total": 2, "limit": 1000, "offset": 0})
    );
    assert_eq!(
        emails(
            &app.rest("GET", "/rest/externalDL?search=TEAM", &user, None)
                .json()
        ),
        ["team@partner.example"]
    );
    assert!(emails(
        &app.rest("GET", "/rest/externalDL?search=%25", &user, None)
            .json()
    )
    .is_empty());
    assert_eq!(
        emails(
            &app.rest(
                "GET",
                "/rest/externalDL?orderBy=email:desc&limit=1",
                &user,
                None
            )
            .json()
        ),
        ["team@partner.example"]
    );
    let r = app.rest("GET", "/rest/externalDL?email=x", &user, None);
    assert_eq!(
        (r.status, r.code()),
        (400, "ERR_REQUEST_INVALID_FILTER".into())
    );

    // Bad bodies store nothing.
    for (bad, code, field) in [
        (json!({}), "ERR_INPUT_REQUIRED", "emails"),
        (json!({"emails": []}), "ERR_INPUT_REQUIRED", "emails"),
        (
            json!({"emails": "x@partner.example"}),
            "ERR_INPUT_NOT_ARRAY",
            "emails",
        ),
        (
            json!({"emails": ["x@partner.example", "nope"]}),
            "ERR_INPUT_INVALID_FORMAT",
            "emails[1]",
        ),
        (
            json!({"emails": ["x\u{0}@partner.example"]}),
            "ERR_INPUT_INVALID_FORMAT",
            "emails[0]",
        ),
    ] {
        for method in ["POST", "DELETE"] {
            let r = app.rest(method, "/rest/externalDL", &admin, Some(bad.clone()));
            assert_eq!(r.status, 422, "{method} {bad}: {}", r.text);
            assert_eq!(r.code(), code, "{bad}");
            assert_eq!(r.json()["errors"][0]["field"], field, "{bad}");
        }
    }
    assert_eq!(app.count("1 = 1", "external_dls"), 2);
    assert_eq!(app.count("subject LIKE 'externaldl.%'", "events"), 1);

    // DELETE answers the addresses it took off; others are left out.
    let r = app.rest(
        "DELETE",
        "/rest/externalDL",
        &helpdesk,
        Some(json!({"emails": ["ALL@partner.example", "unknown@partner.example"]})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(emails(&r.json()), ["all@partner.example"]);
    assert_eq!(
        emails(&app.rest("GET", "/rest/externalDL", &user, None).json()),
        ["team@partner.example"]
    );
    let r = app.rest(
        "DELETE",
        "/rest/externalDL",
        &helpdesk,
        Some(json!({"emails": ["unknown@partner.example"]})),
    );
    assert_eq!((r.status, emails(&r.json()).len()), (200, 0));
    assert_eq!(
        app.count("subject = 'externaldl.email.delete'", "events"),
        1
    );
}

#[test]
fn contacts_and_the_check_show_distribution_lists() {
    let app = TestApp::spawn();
    let (_, t) = app.user_token("ann@example.com", Role::User);
    let admin = app.admin_token();
    let r = app.rest(
        "POST",
        "/rest/externalDL",
        &admin,
        Some(json!({"emails": ["list@partner.example"]})),
    );
    assert_eq!(r.status, 201, "{}", r.text);

    let r = app.rest(
        "POST",
        "/rest/contacts",
        &t,
        Some(contact("Partners", &["list@partner.example"])),
    );
    let c = r.json();
    assert_eq!(c["isDistributionList"], true, "{c}");
    assert_eq!(c["items"][0]["isDistributionList"], true);
    let r = app.rest(
        "POST",
        "/rest/contacts",
        &t,
        Some(contact("Person", &["person@partner.example"])),
    );
    let id = r.json()["id"].as_i64().unwrap();
    assert_eq!(r.json()["isDistributionList"], false);
    // The flag follows the list: listing the address later shows it at once.
    app.rest(
        "POST",
        "/rest/externalDL",
        &admin,
        Some(json!({"emails": ["person@partner.example"]})),
    );
    let c = app
        .rest("GET", &format!("/rest/contacts/{id}"), &t, None)
        .json();
    assert_eq!(
        (
            c["isDistributionList"].clone(),
            c["items"][0]["isDistributionList"].clone()
        ),
        (json!(true), json!(true))
    );

    // Any user checks addresses: each once, lower-cased, in the order asked.
    let r = app.rest(
        "GET",
        "/rest/users/actions/getDistributionList?email:in=LIST@partner.example,ann@example.com,list@partner.example",
        &t,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json(),
        json!({"data": [
            {"email": "list@partner.example", "isDl": true},
            {"email": "ann@example.com", "isDl": false},
        ]})
    );
    let r = app.rest(
        "GET",
        "/rest/users/actions/getDistributionList?email=person@partner.example",
        &t,
        None,
    );
    assert_eq!(
        r.json(),
        json!({"data": [{"email": "person@partner.example", "isDl": true}]})
    );
    let r = app.rest("GET", "/rest/users/actions/getDistributionList", &t, None);
    assert_eq!((r.status, r.code()), (422, "ERR_INPUT_REQUIRED".into()));
    for q in [
        "email:in=ann@example.com,not-an-address",
        "email=no@",
        "email:in=%3Cscript%3E",
    ] {
        let r = app.rest(
            "GET",
            &format!("/rest/users/actions/getDistributionList?{q}"),
            &t,
            None,
        );
        assert_eq!(
            (r.status, r.code()),
            (422, "ERR_INPUT_INVALID_FORMAT".into()),
            "{q}"
        );
    }
    for q in ["email:in=,", "other=1", "email:contains=a"] {
        let r = app.rest(
            "GET",
            &format!("/rest/users/actions/getDistributionList?{q}"),
            &t,
            None,
        );
        assert_eq!(
            (r.status, r.code()),
            (400, "ERR_REQUEST_INVALID_FILTER".into()),
            "{q}"
        );
    }
}

#[test]
fn a_distribution_list_address_cannot_become_an_account() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let r = app.rest(
        "POST",
        "/rest/externalDL",
        &admin,
        Some(json!({"emails": ["all@example.com"]})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let users = app.count("1 = 1", "users");

    // The operator's command (and first start) refuse it.
    let e = coffer_service::identity::accounts::create_user(
        &app.ctx,
        coffer_service::identity::accounts::NewUser {
            email: "ALL@example.com".into(),
            name: "All".into(),
            password: None,
            role: Role::User,
            profile: None,
        },
        None,
    )
    .unwrap_err()
    .to_api();
    assert_eq!(
        (e.code.as_str(), e.status),
        ("ERR_INPUT_EMAIL_IS_DISTRIBUTION_LIST", 403)
    );

    // SCIM refuses it as a new account's userName or email, with 403.
    let scim = coffer_service::identity::scim_tokens::create(&app.ctx, "idp")
        .unwrap()
        .1;
    let scim_call = |method: &str, path: &str, body: Value| {
        app.send(
            method,
            path,
            &[("Authorization", &format!("Bearer {scim}"))],
            Some(Body::Raw("application/scim+json", body.to_string())),
        )
    };
    let user_schema = "urn:ietf:params:scim:schemas:core:2.0:User";
    for body in [
        json!({"schemas": [user_schema], "userName": "all@example.com"}),
        json!({"schemas": [user_schema], "userName": "ext-1", "emails": [{"value": "All@Example.com", "primary": true}]}),
    ] {
        let r = scim_call("POST", "/rest/scim/Users", body.clone());
        assert_eq!(r.status, 403, "{body}: {}", r.text);
        assert_eq!(r.json()["status"], "403");
        assert!(
            r.json()["detail"]
                .as_str()
                .unwrap()
                .contains("distribution list"),
            "{}",
            r.text
        );
    }
    assert_eq!(app.count("1 = 1", "users"), users);

    // Nor may an account take the address on later.
    let r = scim_call(
        "POST",
        "/rest/scim/Users",
        json!({"schemas": [user_schema], "userName": "carol@example.com"}),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["id"].as_str().unwrap().to_string();
    let r = scim_call(
        "PATCH",
        &format!("/rest/scim/Users/{id}"),
        json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
               "Operations": [{"op": "replace", "path": "userName", "value": "all@example.com"}]}),
    );
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(app.count("email = 'all@example.com'", "users"), 0);
    // An account whose own address is listed later keeps working, and its other changes are
    // not held up.
    let r = app.rest(
        "POST",
        "/rest/externalDL",
        &admin,
        Some(json!({"emails": ["carol@example.com"]})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let r = scim_call(
        "PATCH",
        &format!("/rest/scim/Users/{id}"),
        json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
               "Operations": [{"op": "replace", "path": "displayName", "value": "Carol"}]}),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["displayName"], "Carol");

    // Off the list, the address may register.
    app.rest(
        "DELETE",
        "/rest/externalDL",
        &admin,
        Some(json!({"emails": ["all@example.com"]})),
    );
    let r = scim_call(
        "POST",
        "/rest/scim/Users",
        json!({"schemas": [user_schema], "userName": "all@example.com"}),
    );
    assert_eq!(r.status, 201, "{}", r.text);
}

#[test]
fn token_scopes_reach_contacts_and_distribution_lists_by_entity() {
    let app = TestApp::spawn();
    let mut input = client_input(
        "contacts-reader",
        "https://app.example.com/cb",
        flow::PASSWORD,
    );
    input.scope = "GET/contacts/* GET/externalDL/*".into();
    let (id, secret) = app.client(input);
    let (_, pw) = app.user("ann@example.com", Role::User);
    let r = app.form(
        "/oauth/token",
        &[
            ("grant_type", "password"),
            ("username", "ann@example.com"),
            ("password", &pw),
            ("client_id", &id),
            ("client_secret", &secret),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let t = r.json()["access_token"].as_str().unwrap().to_string();
    assert_eq!(app.rest("GET", "/rest/contacts", &t, None).status, 200);
    assert_eq!(app.rest("GET", "/rest/externalDL", &t, None).status, 200);
    let r = app.rest(
        "POST",
        "/rest/contacts",
        &t,
        Some(contact("A", &["a@example.com"])),
    );
    assert_eq!((r.status, r.code()), (403, "ERR_ACCESS_USER".into()));
    let r = app.rest(
        "GET",
        "/rest/users/actions/getDistributionList?email=a@example.com",
        &t,
        None,
    );
    assert_eq!((r.status, r.code()), (403, "ERR_ACCESS_USER".into()));
    assert_eq!(app.count("1 = 1", "contacts"), 0);
}

#[test]
fn a_long_page_of_contacts_with_many_addresses_is_answered_whole() {
    let app = TestApp::spawn();
    let (ann, t) = app.user_token("ann@example.com", Role::User);
    // 2,000 contacts of 20 addresses each, more addresses than SQLite binds in one statement;
    // the first address of every even contact is a distribution list.
    app.execute(&format!(
        "INSERT INTO contacts (user_id, name, name_folded, created_at, modified_at) \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) \
         SELECT '{ann}', 'c' || i, 'c' || i, 0, 0 FROM n; \
         INSERT INTO contact_items (contact_id, user_id, position, email) \
         SELECT c.id, c.user_id, p.i, 'a' || p.i || '-' || c.id || '@example.com' \
         FROM contacts c, (WITH RECURSIVE q(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM q WHERE i < 19) \
         SELECT i FROM q) p; \
         INSERT INTO external_dls (email, created_at) SELECT email, 0 FROM contact_items \
         WHERE position = 0 AND contact_id % 2 = 0;"
    ));
    assert_eq!(app.count("1 = 1", "contact_items"), 40_000);
    let r = app.rest("GET", "/rest/contacts?orderBy=id&limit=2000", &t, None);
    assert_eq!(r.status, 200, "{}", &r.text[..r.text.len().min(500)]);
    let l = r.json();
    let data = l["data"].as_array().unwrap();
    assert_eq!(
        (data.len(), l["metadata"]["total"].as_i64()),
        (2000, Some(2000))
    );
    for c in data {
        let id = c["id"].as_i64().unwrap();
        let items = c["items"].as_array().unwrap();
        assert_eq!(items.len(), 20, "{id}");
        assert_eq!(items[0]["email"], format!("a0-{id}@example.com"));
        assert_eq!(items[0]["isDistributionList"], id % 2 == 0, "{id}");
        assert_eq!(items[1]["isDistributionList"], false, "{id}");
    }
}
