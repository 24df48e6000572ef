//! Web forms over HTTP: `GET /rest/webForms`, `GET /rest/webForms/{id}` with and without a
//! bearer token under each access rule, `GET /rest/sharedMailboxes/{id}/webForms`, the public
//! page `{base}/forms/{id}` and its submissions (into the owner's inbox, a user's or a shared
//! mailbox's, with the files attached), refusals that store nothing, and the operator
//! commands' input checks. Runs on SQLite, and on PostgreSQL when `COFFER_TEST_POSTGRES_URL` is
//! set.

use coffer_domain::Role;
use coffer_service::web_forms::{self as forms, FormInput};
use coffer_tests::{hidden_field, multipart, Body, Resp, TestApp};
use serde_json::{json, Value};

fn user_with_profile(app: &TestApp, email: &str, profile: &str) -> String {
    let (_, pw) = coffer_service::accounts::create_user(
        &app.ctx,
        coffer_service::accounts::NewUser {
            email: email.into(),
            name: email.into(),
            password: None,
            role: Role::User,
            profile: Some(profile.into()),
        },
        None,
    )
    .expect("create user");
    app.password_token(email, &pw)["access_token"]
        .as_str()
        .unwrap()
        .to_string()
}

fn contact_fields() -> Value {
    json!([
        {"id": "name", "label": "Your <b>name</b>", "type": "text", "required": true, "placeholder": "Ann"},
        {"id": "email", "label": "Email", "type": "email", "specialType": "email"},
        {"id": "topic", "label": "Topic", "type": "select", "options": ["Billing", "Support"]},
        {"id": "message", "label": "Message", "type": "textarea"},
        {"id": "agree", "label": "I agree", "type": "checkbox"},
    ])
}

fn create(app: &TestApp, name: &str, owner: &str, adjust: impl FnOnce(&mut FormInput)) -> String {
    let mut input = FormInput {
        name: Some(name.into()),
        description: Some(format!("{name} form")),
        owner: Some(owner.into()),
        fields: Some(contact_fields()),
        profiles: Some(vec![]),
        ..FormInput::default()
    };
    adjust(&mut input);
    forms::create(&app.ctx, &input)
        .expect("create form")
        .form
        .id
}

/// A `/rest` call with the version header and no credentials.
fn anonymous(app: &TestApp, path: &str) -> Resp {
    app.send("GET", path, &[("X-Coffer-Version", "28")], None)
}

fn names(r: &Resp) -> Vec<String> {
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data: {}", r.text))
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect()
}

/// Opens a form's page: the page and the CSRF cookie as `name=value`.
fn open_page(app: &TestApp, id: &str, cookie: Option<&str>) -> (Resp, String) {
    let h: Vec<(&str, &str)> = cookie.map(|c| vec![("Cookie", c)]).unwrap_or_default();
    let page = app.send("GET", &format!("/forms/{id}"), &h, None);
    let csrf = page
        .cookie_value("coffer_form_csrf")
        .map(|v| format!("coffer_form_csrf={v}"))
        .unwrap_or_default();
    (page, csrf)
}

fn post_form(app: &TestApp, id: &str, cookie: &str, parts: &[(&str, Option<&str>, &[u8])]) -> Resp {
    let (ct, body) = multipart(parts);
    app.send(
        "POST",
        &format!("/forms/{id}"),
        &[("Cookie", cookie)],
        Some(Body::Bytes(ct, body)),
    )
}

#[test]
fn forms_are_listed_and_read_under_their_access_rules() {
    let app = TestApp::spawn();
    let (_, _owner) = app.user_token("ann@example.com", Role::User);
    let (_, bob) = app.user_token("bob@example.com", Role::User);
    let rita = user_with_profile(&app, "rita@example.com", "Restricted");
    let open = create(&app, "Open", "ann@example.com", |_| {});
    let staff = create(&app, "Staff", "ann@example.com", |i| {
        i.auth_required = Some(true);
        i.profiles = Some(vec!["Standard".into()]);
    });
    let off = create(&app, "Off", "ann@example.com", |i| i.active = Some(false));
    let _restricted = create(&app, "Restricted only", "ann@example.com", |i| {
        i.profiles = Some(vec!["2".into()]);
    });

    // The list: active forms open to the caller's profile.
    let r = app.rest("GET", "/rest/webForms", &bob, None);
    assert_eq!(names(&r), vec!["Open", "Staff"]);
    let first = &r.json()["data"][0];
    assert_eq!(first["id"], open.as_str());
    assert_eq!(first["url"], format!("{}/forms/{open}", app.base));
    assert_eq!(first["enabled"], true);
    assert_eq!(first["authRequired"], false);
    assert_eq!(first["standalone"], true);
    assert_eq!(first["embedded"], false);
    assert_eq!(first["profiles"], json!([]));
    assert_eq!(first["fields"][0]["label"], "Your <b>name</b>");
    assert_eq!(first["fields"][0]["type"], "text");
    assert_eq!(first["fields"][0]["mandatory"], true);
    assert_eq!(first["fields"][2]["optionValues"], "Billing\nSupport");
    assert!(first["lastModified"].as_str().unwrap().contains('T'));
    let second = &r.json()["data"][1];
    assert_eq!(
        second["profiles"],
        json!([{"webFormId": staff, "profileId": 1}])
    );
    assert_eq!(
        names(&app.rest("GET", "/rest/webForms", &rita, None)),
        vec!["Open", "Restricted only"]
    );
    assert_eq!(
        names(&app.rest("GET", "/rest/webForms?name:contains=TAF", &bob, None)),
        vec!["Staff"]
    );
    assert_eq!(
        names(&app.rest("GET", "/rest/webForms?name=open", &bob, None)),
        vec!["Open"]
    );
    assert_eq!(
        names(&app.rest(
            "GET",
            "/rest/webForms?orderBy=name:desc&with=fields,profiles",
            &bob,
            None
        )),
        vec!["Staff", "Open"]
    );
    let mut by_date = names(&app.rest(
        "GET",
        "/rest/webForms?orderBy=last_modified:desc",
        &bob,
        None,
    ));
    by_date.sort();
    assert_eq!(by_date, vec!["Open", "Staff"]);
    let r = app.rest("GET", "/rest/webForms?color=red", &bob, None);
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(anonymous(&app, "/rest/webForms").status, 401);

    // One form: without a token only a form without authRequired.
    let r = anonymous(&app, &format!("/rest/webForms/{open}"));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["name"], "Open");
    assert_eq!(r.json()["fields"].as_array().unwrap().len(), 5);
    let r = app.send("GET", &format!("/rest/webForms/{open}"), &[], None);
    assert_eq!(
        r.status, 400,
        "the version header is still needed: {}",
        r.text
    );
    let r = anonymous(&app, &format!("/rest/webForms/{staff}"));
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ACCESS_USER"),
        "{}",
        r.text
    );
    let r = app.rest("GET", &format!("/rest/webForms/{staff}"), &bob, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.rest("GET", &format!("/rest/webForms/{staff}"), &rita, None);
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ACCESS_USER"),
        "{}",
        r.text
    );
    // A form without authRequired is readable by anyone, whatever its profiles.
    let r = app.rest("GET", &format!("/rest/webForms/{_restricted}"), &bob, None);
    assert_eq!(r.status, 200, "{}", r.text);
    for token in [None, Some(bob.as_str())] {
        let path = format!("/rest/webForms/{off}");
        let r = match token {
            Some(t) => app.rest("GET", &path, t, None),
            None => anonymous(&app, &path),
        };
        assert_eq!(
            (r.status, r.code().as_str()),
            (403, "ERR_ACCESS_USER"),
            "{}",
            r.text
        );
        let path = "/rest/webForms/00000000-0000-4000-8000-000000000000";
        let r = match token {
            Some(t) => app.rest("GET", path, t, None),
            None => anonymous(&app, path),
        };
        assert_eq!(r.status, 404, "{}", r.text);
    }
    let r = app.send(
        "GET",
        &format!("/rest/webForms/{open}"),
        &[
            ("X-Coffer-Version", "28"),
            ("Authorization", "Bearer nonsense"),
        ],
        None,
    );
    assert_eq!(
        r.status, 401,
        "bad credentials are not anonymous: {}",
        r.text
    );
}

#[test]
fn a_submission_with_a_file_lands_in_the_owners_inbox() {
    let app = TestApp::spawn();
    let (ann, owner) = app.user_token("ann@example.com", Role::User);
    let id = create(&app, "Contact", "ann@example.com", |_| {});

    // The page: the fields as inputs, labels escaped, required marked, a file input.
    let (page, csrf) = open_page(&app, &id, None);
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(
        page.text.contains("Your &lt;b&gt;name&lt;/b&gt;"),
        "{}",
        page.text
    );
    assert!(!page.text.contains("<b>name</b>"));
    assert!(page.text.contains("name=\"name\""));
    assert!(page.text.contains(" required"));
    assert!(page.text.contains("type=\"file\""));
    assert!(page.text.contains("<textarea"));
    assert!(page.text.contains("<option value=\"Billing\">"));
    assert!(!csrf.is_empty());
    let token = csrf.trim_start_matches("coffer_form_csrf=").to_string();
    assert_eq!(hidden_field(&page.text, "csrf"), token);
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));

    // Refusals store nothing: no CSRF cookie, a mandatory field empty, a bad value.
    let file: &[u8] = b"%PDF-1.4 the invoice";
    let r = post_form(
        &app,
        &id,
        "",
        &[("csrf", None, token.as_bytes()), ("name", None, b"Ann")],
    );
    assert_eq!(r.status, 400, "{}", r.text);
    let r = post_form(
        &app,
        &id,
        &csrf,
        &[
            ("csrf", None, token.as_bytes()),
            ("name", None, b"  "),
            ("message", None, b"kept <i>text</i>"),
            ("files", Some("invoice.pdf"), file),
        ],
    );
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(
        r.text
            .contains("The field is required (Your &lt;b&gt;name&lt;/b&gt;)"),
        "{}",
        r.text
    );
    assert!(
        r.text.contains("kept &lt;i&gt;text&lt;/i&gt;"),
        "what was entered stays"
    );
    let r = post_form(
        &app,
        &id,
        &csrf,
        &[
            ("csrf", None, token.as_bytes()),
            ("name", None, b"Ann"),
            ("topic", None, b"Gossip"),
        ],
    );
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(app.count("1 = 1", "emails"), 0);
    assert_eq!(app.count("name = 'invoice.pdf'", "objects"), 0);

    // A good one, with a file.
    let r = post_form(
        &app,
        &id,
        &csrf,
        &[
            ("csrf", None, token.as_bytes()),
            ("name", None, b"Vic Visitor"),
            ("email", None, b"vic@outside.example"),
            ("topic", None, b"Billing"),
            ("message", None, b"Please see the invoice."),
            ("agree", None, b"true"),
            ("files", Some("invoice.pdf"), file),
            ("files", Some(""), b""),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.contains("id=\"thanks\""), "{}", r.text);

    let r = app.rest("GET", &format!("/rest/mail?webFormId={id}"), &owner, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let data = r.json()["data"].as_array().unwrap().clone();
    assert_eq!(data.len(), 1, "{}", r.text);
    let m = &data[0];
    assert_eq!(m["webFormId"], id.as_str());
    assert_eq!(
        m["webFormFields"],
        json!({"Your <b>name</b>": "Vic Visitor", "Email": "vic@outside.example", "Topic": "Billing", "Message": "Please see the invoice.", "I agree": "true"})
    );
    assert_eq!(
        m["senderId"],
        ann.as_str(),
        "an anonymous submission is the owner's own"
    );
    assert_eq!(m["subject"], "Web form: Contact");
    let email = m["id"].as_str().unwrap().to_string();
    let r = app.rest("GET", "/rest/mail?bucket=inbox", &owner, None);
    assert_eq!(r.json()["data"][0]["id"], email.as_str(), "{}", r.text);
    let r = app.rest(
        "GET",
        &format!("/rest/mail/{email}/attachments"),
        &owner,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let a = &r.json()["data"][0];
    assert_eq!(a["name"], "invoice.pdf");
    assert_eq!(a["size"], file.len());
    let att = a["attachmentId"].as_str().unwrap().to_string();
    let r = app.rest(
        "GET",
        &format!("/rest/mail/{email}/attachments/{att}/content"),
        &owner,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.bytes, file);
    assert_eq!(
        app.count("subject = 'webform.submission.create'", "events"),
        1
    );
    assert_eq!(app.count("subject = 'mail.email.send'", "events"), 1);
    // The same name again is another file; the first submission keeps its own.
    let r = post_form(
        &app,
        &id,
        &csrf,
        &[
            ("csrf", None, token.as_bytes()),
            ("name", None, b"Wes"),
            ("files", Some("invoice.pdf"), b"other bytes"),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.rest("GET", &format!("/rest/mail?webFormId={id}"), &owner, None);
    assert_eq!(r.json()["data"].as_array().unwrap().len(), 2);
    let r = app.rest(
        "GET",
        &format!("/rest/mail/{email}/attachments/{att}/content"),
        &owner,
        None,
    );
    assert_eq!(r.bytes, file);
}

#[test]
fn pages_follow_the_forms_rules_and_framing() {
    let app = TestApp::spawn();
    let (_, _) = app.user_token("ann@example.com", Role::User);
    let (bob, bob_password) = app.user("bob@example.com", Role::User);
    let embedded = create(&app, "Embedded", "ann@example.com", |i| {
        i.embedded = Some(true);
    });
    let framed_only = create(&app, "Framed", "ann@example.com", |i| {
        i.embedded = Some(true);
        i.standalone = Some(false);
    });
    let staff = create(&app, "Staff", "ann@example.com", |i| {
        i.auth_required = Some(true);
    });
    let off = create(&app, "Off", "ann@example.com", |i| i.active = Some(false));

    let (page, _) = open_page(&app, &embedded, None);
    assert_eq!(page.status, 200, "{}", page.text);
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("frame-ancestors *"), "{csp}");
    assert_eq!(page.header("x-frame-options"), None);
    // A form only for frames refuses a top-level visit, not a framed one.
    let r = app.send(
        "GET",
        &format!("/forms/{framed_only}"),
        &[("Sec-Fetch-Dest", "document")],
        None,
    );
    assert_eq!(r.status, 403, "{}", r.text);
    let r = app.send(
        "GET",
        &format!("/forms/{framed_only}"),
        &[("Sec-Fetch-Dest", "iframe")],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);

    let (r, _) = open_page(&app, &off, None);
    assert_eq!(r.status, 403, "{}", r.text);
    let (r, _) = open_page(&app, "00000000-0000-4000-8000-000000000000", None);
    assert_eq!(r.status, 404, "{}", r.text);
    assert!(r.text.contains("Form not found"));

    // A form for signed-in users: a browser session is the submitter.
    let (r, _) = open_page(&app, &staff, None);
    assert_eq!(r.status, 401, "{}", r.text);
    assert!(r.text.contains("Sign-in needed"));
    let login = app.json_login("bob@example.com", &bob_password, None);
    assert_eq!(login.status, 200, "{}", login.text);
    let session = format!(
        "coffer_session={}",
        login.cookie_value("coffer_session").unwrap()
    );
    let (page, csrf) = open_page(&app, &staff, Some(&session));
    assert_eq!(page.status, 200, "{}", page.text);
    let token = hidden_field(&page.text, "csrf");
    let r = post_form(
        &app,
        &staff,
        &format!("{csrf}; {session}"),
        &[("csrf", None, token.as_bytes()), ("name", None, b"Bob")],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    // Without the session the same post is refused.
    let r = post_form(
        &app,
        &staff,
        &csrf,
        &[("csrf", None, token.as_bytes()), ("name", None, b"Bob")],
    );
    assert_eq!(r.status, 401, "{}", r.text);
    assert_eq!(
        app.count(
            &format!("user_id = '{bob}' AND role = 's' AND bucket = 'sent'"),
            "mailbox_entries"
        ),
        1,
        "the submitter keeps it among their sent mail"
    );
    assert_eq!(
        app.count(
            &format!("sender_id = '{bob}' AND web_form_id = '{staff}'"),
            "emails"
        ),
        1
    );
}

#[test]
fn a_shared_mailbox_lists_its_forms_and_receives_their_submissions() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (team, _) = app.user("team@example.com", Role::User);
    let (ann, ta) = app.user_token("ann@example.com", Role::User);
    let (_, tc) = app.user_token("carl@example.com", Role::User);
    let r = app.rest(
        "POST",
        "/rest/admin/sharedMailboxes",
        &admin,
        Some(json!({"userId": team, "memberIds": [ann]})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let id = create(&app, "Support", "team@example.com", |_| {});
    let _other = create(&app, "Ann's", "ann@example.com", |_| {});
    let path = format!("/rest/sharedMailboxes/{team}/webForms");
    for t in [&ta, &tc] {
        let r = app.rest("GET", &path, t, None);
        assert_eq!(
            (r.status, r.code().as_str()),
            (403, "ERR_ACCESS_USER"),
            "{}",
            r.text
        );
    }
    let r = app.rest(
        "PATCH",
        "/rest/sharedMailboxes",
        &ta,
        Some(json!({"data": [{"id": team, "active": true}]})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.rest(
        "GET",
        &format!("/rest/sharedMailboxes/{team}/webForms"),
        &ta,
        None,
    );
    assert_eq!(names(&r), vec!["Support"]);
    assert_eq!(r.json()["data"][0]["id"], id.as_str());
    assert!(r.json()["data"][0]["fields"].is_array());

    let (_, csrf) = open_page(&app, &id, None);
    let token = csrf.trim_start_matches("coffer_form_csrf=").to_string();
    let r = post_form(
        &app,
        &id,
        &csrf,
        &[
            ("csrf", None, token.as_bytes()),
            ("name", None, b"Vic"),
            ("files", Some("notes.txt"), b"some notes"),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.rest(
        "GET",
        &format!("/rest/mail?sharedMailboxId={team}&webFormId={id}"),
        &ta,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let data = r.json()["data"].as_array().unwrap().clone();
    assert_eq!(data.len(), 1, "{}", r.text);
    assert_eq!(data[0]["webFormFields"]["Your <b>name</b>"], "Vic");
    let r = app.rest("GET", &format!("/rest/mail?webFormId={id}"), &ta, None);
    assert_eq!(
        r.json()["data"].as_array().unwrap().len(),
        0,
        "not in Ann's own"
    );
}

#[test]
fn operator_input_is_checked_and_stores_nothing_when_wrong() {
    let app = TestApp::spawn();
    app.user("ann@example.com", Role::User);
    let good = || FormInput {
        name: Some("F".into()),
        owner: Some("ann@example.com".into()),
        fields: Some(contact_fields()),
        ..FormInput::default()
    };
    let cases: Vec<(FormInput, &str)> = vec![
        (
            FormInput {
                fields: Some(json!({"label": "x"})),
                ..good()
            },
            "ERR_INVALID_PARAMETER",
        ),
        (
            FormInput {
                fields: Some(json!([{"label": "x", "type": "radio"}])),
                ..good()
            },
            "ERR_INVALID_PARAMETER",
        ),
        (
            FormInput {
                owner: Some("nobody@example.com".into()),
                ..good()
            },
            "ERR_INVALID_PARAMETER",
        ),
        (
            FormInput {
                profiles: Some(vec!["Gold".into()]),
                ..good()
            },
            "ERR_INVALID_PARAMETER",
        ),
        (
            FormInput {
                name: Some("  ".into()),
                ..good()
            },
            "ERR_INVALID_PARAMETER",
        ),
        (
            FormInput {
                fields: None,
                ..good()
            },
            "ERR_INPUT_REQUIRED",
        ),
    ];
    for (input, code) in cases {
        match forms::create(&app.ctx, &input) {
            Err(coffer_service::Error::Api(a)) => assert_eq!(a.code.as_str(), code, "{input:?}"),
            other => panic!("{input:?}: {other:?}"),
        }
    }
    assert_eq!(app.count("1 = 1", "web_forms"), 0);
    assert_eq!(app.count("subject LIKE 'webform.%'", "events"), 0);

    // Update and delete.
    let v = forms::create(&app.ctx, &good()).unwrap();
    assert_eq!(v.owner_email, "ann@example.com");
    let id = v.form.id.clone();
    let v = forms::update(
        &app.ctx,
        &id,
        &FormInput {
            active: Some(false),
            profiles: Some(vec!["Restricted".into()]),
            ..FormInput::default()
        },
    )
    .unwrap();
    assert!(!v.form.enabled);
    assert_eq!(v.form.profiles[0].profile_id, 2);
    assert_eq!(v.form.name, "F", "what is not given stays");
    assert!(forms::update(
        &app.ctx,
        &id,
        &FormInput {
            fields: Some(json!([])),
            ..FormInput::default()
        }
    )
    .is_ok());
    assert_eq!(forms::list_all(&app.ctx).unwrap().len(), 1);
    forms::delete(&app.ctx, &id).unwrap();
    assert!(forms::delete(&app.ctx, &id).is_err());
    assert_eq!(app.count("subject LIKE 'webform.webform.%'", "events"), 4);
}

/// Unknown form ids count against the client address: past the limit even a good id answers
/// 429 with `Retry-After`, on `/rest` and on the page; a signed-in caller is not throttled. A
/// form whose owner was deleted takes nothing more.
#[test]
fn unknown_ids_lock_the_address_and_a_deleted_owner_closes_the_form() {
    let app = TestApp::spawn_configured(|c| {
        c.throttle.max_failures = 3;
        c.throttle.slow_after = 10;
    });
    let admin = app.admin_token();
    let (dave, _) = app.user("dave@example.com", Role::User);
    let (_, bob) = app.user_token("bob@example.com", Role::User);
    let id = create(&app, "Open", "dave@example.com", |_| {});
    assert_eq!(anonymous(&app, &format!("/rest/webForms/{id}")).status, 200);
    for n in 0..3 {
        let r = anonymous(&app, &format!("/rest/webForms/no-such-form-{n}"));
        assert_eq!(r.status, 404, "{}", r.text);
    }
    let r = anonymous(&app, &format!("/rest/webForms/{id}"));
    assert!(r.rate_limited() > 0);
    let (page, _) = open_page(&app, &id, None);
    assert_eq!(page.status, 429, "{}", page.text);
    assert!(page.header("retry-after").is_some());
    let r = app.rest("GET", &format!("/rest/webForms/{id}"), &bob, None);
    assert_eq!(r.status, 200, "{}", r.text);

    let r = app.rest("DELETE", &format!("/rest/admin/users/{dave}"), &admin, None);
    assert!(r.status < 300, "{}", r.text);
    let r = app.rest("GET", &format!("/rest/webForms/{id}"), &bob, None);
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ACCESS_USER"),
        "{}",
        r.text
    );
}
