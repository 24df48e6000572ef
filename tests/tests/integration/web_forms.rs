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
    let (_, pw) = coffer_service::identity::accounts::create_user(
        &app.ctx,
        coffer_service::identity::accounts::NewUser {
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

/// Starts a submission on a form's page (the page's script does this): 201 and its JSON.
fn start_submission(app: &TestApp, id: &str, cookie: &str, csrf: &str) -> Resp {
    app.send(
        "POST",
        &format!("/forms/{id}/submissions"),
        &[("Cookie", cookie), ("X-Coffer-CSRF", csrf)],
        None,
    )
}

/// `POST /rest/public/mail/{email}/actions/initiateUpload?ref=…` without credentials.
fn public_initiate(app: &TestApp, email: &str, reference: &str, body: Value) -> Resp {
    app.send(
        "POST",
        &format!("/rest/public/mail/{email}/actions/initiateUpload?ref={reference}"),
        &[("X-Coffer-Version", "28")],
        Some(Body::Json(body)),
    )
}

/// A chunk of a public upload, with the submission's reference instead of a bearer token.
fn public_chunk(
    app: &TestApp,
    uri: &str,
    reference: &str,
    index: u32,
    data: &[u8],
    last: bool,
) -> Resp {
    let (idx, size) = (index.to_string(), data.len().to_string());
    let (ct, body) = multipart(&[
        ("compressionMode", None, b"NORMAL"),
        ("compressionSize", None, size.as_bytes()),
        ("originalSize", None, size.as_bytes()),
        ("index", None, idx.as_bytes()),
        ("lastChunk", None, if last { b"true" } else { b"false" }),
        ("content", Some("blob"), data),
    ]);
    app.send(
        "POST",
        &format!("/{uri}?ref={reference}"),
        &[("X-Coffer-Version", "28")],
        Some(Body::Bytes(ct, body)),
    )
}

/// A whole file through a submission's public upload, in one chunk.
fn upload_whole(app: &TestApp, email: &str, reference: &str, name: &str, bytes: &[u8]) {
    let r = public_initiate(
        app,
        email,
        reference,
        json!({"filename": name, "totalSize": bytes.len()}),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let uri = r.json()["uri"].as_str().unwrap().to_string();
    let r = public_chunk(app, &uri, reference, 1, bytes, true);
    assert_eq!(r.status, 200, "{}", r.text);
}

/// The form's POST naming a started submission, with the form's `fields`.
fn post_submission(
    app: &TestApp,
    id: &str,
    cookie: &str,
    csrf: &str,
    email: &str,
    reference: &str,
    fields: &[(&str, &[u8])],
) -> Resp {
    let mut parts: Vec<(&str, Option<&str>, &[u8])> = vec![
        ("csrf", None, csrf.as_bytes()),
        ("submission", None, email.as_bytes()),
        ("submissionRef", None, reference.as_bytes()),
    ];
    parts.extend(fields.iter().map(|(n, v)| (*n, None, *v)));
    post_form(app, id, cookie, &parts)
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
    // A field's texts are strings when it has them and left out when not, never `null`.
    let r = app.rest("GET", "/rest/webForms?with=fields", &bob, None);
    let forms = r.json()["data"].clone();
    let fields = forms[0]["fields"].as_array().expect("fields").clone();
    assert_eq!(fields.len(), 5, "{fields:?}");
    for f in &fields {
        for key in ["specialType", "placeholder", "defaultValue", "optionValues"] {
            assert!(f.get(key).is_none_or(Value::is_string), "{key} in {f}");
        }
    }
    let by_label = |l: &str| fields.iter().find(|f| f["label"] == l).unwrap().clone();
    assert_eq!(by_label("Your <b>name</b>")["placeholder"], "Ann");
    assert_eq!(by_label("Email")["specialType"], "email");
    assert_eq!(by_label("Topic")["optionValues"], "Billing\nSupport");
    assert!(by_label("Message").get("placeholder").is_none());
    assert!(by_label("Message").get("defaultValue").is_none());
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
    // The POST's own files (a browser without script) are read whole: 10 MiB in all at most.
    let big = vec![b'x'; 10 * 1024 * 1024 + 1];
    let r = post_form(
        &app,
        &id,
        &csrf,
        &[
            ("csrf", None, token.as_bytes()),
            ("name", None, b"Big"),
            ("files", Some("big.bin"), &big),
        ],
    );
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(r.text.contains("The files are too large"), "{}", r.text);
    assert_eq!(app.count("name = 'big.bin'", "objects"), 0);
    assert_eq!(app.count("1 = 1", "emails"), 2);
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

    // Files through the public upload: the session starts the submission, which is Bob's, and
    // only Bob's POST to this form can send it.
    let r = start_submission(&app, &staff, &csrf, &token);
    assert_eq!(r.status, 401, "{}", r.text);
    assert_eq!(r.json()["errors"][0]["code"], "ERR_AUTH_UNAUTHORIZED");
    let s = start_submission(&app, &staff, &format!("{csrf}; {session}"), &token);
    assert_eq!(s.status, 201, "{}", s.text);
    let s = s.json();
    let (email, reference) = (s["emailId"].as_str().unwrap(), s["ref"].as_str().unwrap());
    assert_eq!(
        app.count(
            &format!("id = '{email}' AND sender_id = '{bob}' AND status = 'draft'"),
            "emails"
        ),
        1
    );
    upload_whole(&app, email, reference, "cv.txt", b"cv");
    let (page, other_csrf) = open_page(&app, &embedded, None);
    let other_token = hidden_field(&page.text, "csrf");
    let r = post_submission(
        &app,
        &embedded,
        &other_csrf,
        &other_token,
        email,
        reference,
        &[("name", &b"Mallory"[..])],
    );
    assert_eq!(r.status, 422, "another form cannot take it: {}", r.text);
    let r = post_submission(
        &app,
        &staff,
        &format!("{csrf}; {session}"),
        &token,
        email,
        reference,
        &[("name", &b"Bob"[..])],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        app.count(
            &format!("user_id = '{bob}' AND email_id = '{email}' AND bucket = 'sent'"),
            "mailbox_entries"
        ),
        1
    );
    assert_eq!(
        app.count(
            &format!("email_id = '{email}' AND name = 'cv.txt'"),
            "email_attachments"
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
    let app = TestApp::builder()
        .config(|c| {
            c.throttle.max_failures = 3;
            c.throttle.slow_after = 10;
        })
        .spawn();
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

#[test]
fn files_of_a_submission_go_through_the_public_upload() {
    let app = TestApp::spawn();
    let (_, owner) = app.user_token("ann@example.com", Role::User);
    let id = create(&app, "Claims", "ann@example.com", |_| {});
    let (page, cookie) = open_page(&app, &id, None);
    let csrf = hidden_field(&page.text, "csrf");
    assert!(page
        .text
        .contains(&format!("data-start=\"/forms/{id}/submissions\"")));
    assert!(page
        .text
        .contains("<script src=\"/forms/static/web-form.js\""));
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("connect-src 'self'"),
        "{csp}"
    );
    let js = app.send("GET", "/forms/static/web-form.js", &[], None);
    assert_eq!(js.status, 200);
    assert!(js.text.contains("initiateUri"), "{}", js.text);

    // Starting one needs the page's CSRF value, in the header and the cookie.
    let r = start_submission(&app, &id, "", &csrf);
    assert_eq!(r.status, 401, "{}", r.text);
    assert_eq!(r.json()["errors"][0]["code"], "ERR_AUTH_INVALID_CSRF");
    let r = start_submission(&app, &id, &cookie, "forged");
    assert_eq!(r.status, 401, "{}", r.text);
    let r = start_submission(&app, "no-such-form", &cookie, &csrf);
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(app.count("1 = 1", "emails"), 0);
    let r = start_submission(&app, &id, &cookie, &csrf);
    assert_eq!(r.status, 201, "{}", r.text);
    let s = r.json();
    let email = s["emailId"].as_str().unwrap().to_string();
    let reference = s["ref"].as_str().unwrap().to_string();
    assert_eq!(s["maxFiles"], 20);
    assert_eq!(
        s["initiateUri"],
        format!("rest/public/mail/{email}/actions/initiateUpload")
    );
    assert_eq!(
        app.count(&format!("ref_hash = '{reference}'"), "web_form_drafts"),
        0,
        "only the reference's hash is stored"
    );
    // The draft is in no one's mail.
    let r = app.rest("GET", "/rest/mail?bucket=draft", &owner, None);
    assert_eq!(r.json()["data"], json!([]), "{}", r.text);
    let r = app.rest("GET", &format!("/rest/mail/{email}"), &owner, None);
    assert_eq!(r.status, 404, "{}", r.text);

    // The public upload: the version header, the reference, a name and a size.
    let r = app.send(
        "POST",
        &format!("/rest/public/mail/{email}/actions/initiateUpload?ref={reference}"),
        &[],
        Some(Body::Json(
            json!({"filename": "claim.pdf", "totalSize": 11}),
        )),
    );
    assert_eq!(r.status, 400, "{}", r.text);
    for bad in ["", "wrong"] {
        let r = public_initiate(
            &app,
            &email,
            bad,
            json!({"filename": "claim.pdf", "totalSize": 11}),
        );
        assert_eq!(r.status, 404, "{}", r.text);
        assert_eq!(r.json()["errors"][0]["code"], "ERR_ENTITY_NOT_FOUND");
    }
    let r = public_initiate(
        &app,
        "another-email",
        &reference,
        json!({"filename": "claim.pdf", "totalSize": 11}),
    );
    assert_eq!(r.status, 404, "{}", r.text);
    let r = public_initiate(&app, &email, &reference, json!({"filename": "claim.pdf"}));
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.json()["errors"][0]["field"], "totalSize");
    assert_eq!(app.count("1 = 1", "uploads"), 0);
    let r = public_initiate(
        &app,
        &email,
        &reference,
        json!({"filename": "claim.pdf", "totalSize": 11, "totalChunks": 2}),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let uri = r.json()["uri"].as_str().unwrap().to_string();

    // Its chunks carry the reference; without one (and no token) 401, a wrong one 404.
    let (ct, body) = multipart(&[("content", Some("blob"), b"x")]);
    let r = app.send(
        "POST",
        &format!("/{uri}"),
        &[("X-Coffer-Version", "28")],
        Some(Body::Bytes(ct, body)),
    );
    assert_eq!(r.status, 401, "{}", r.text);
    let r = public_chunk(&app, &uri, "wrong", 1, b"%PDF-", false);
    assert_eq!(r.status, 404, "{}", r.text);
    let r = public_chunk(&app, &uri, &reference, 1, b"%PDF-", false);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["uploadedChunks"], 1);
    let r = public_chunk(&app, &uri, &reference, 2, b"1.4 ok", true);
    assert_eq!(r.status, 200, "the file is the owner's: {}", r.text);
    assert_eq!(r.json()["finished"], true, "{}", r.text);
    assert!(r.json().get("parentId").is_none());

    // A POST refused for a value keeps the submission for the corrected form.
    let token = cookie.trim_start_matches("coffer_form_csrf=").to_string();
    let r = post_submission(
        &app,
        &id,
        &cookie,
        &token,
        &email,
        &reference,
        &[("name", &b"Vic Visitor"[..]), ("topic", &b"Gossip"[..])],
    );
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(r.text.contains("The files you sent are kept"), "{}", r.text);
    assert_eq!(hidden_field(&r.text, "submission"), email);
    assert_eq!(hidden_field(&r.text, "submissionRef"), reference);
    assert_eq!(app.count("1 = 1", "web_form_drafts"), 1);

    // The form's POST sends the draft, with the file uploaded onto it.
    let r = post_submission(
        &app,
        &id,
        &cookie,
        &token,
        &email,
        &reference,
        &[("name", &b"Vic Visitor"[..])],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.contains("id=\"thanks\""), "{}", r.text);
    let r = app.rest("GET", &format!("/rest/mail?webFormId={id}"), &owner, None);
    let data = r.json()["data"].as_array().unwrap().clone();
    assert_eq!(data.len(), 1, "{}", r.text);
    assert_eq!(data[0]["id"], email.as_str());
    assert_eq!(data[0]["status"], "sent");
    assert_eq!(data[0]["webFormFields"]["Your <b>name</b>"], "Vic Visitor");
    let r = app.rest(
        "GET",
        &format!("/rest/mail/{email}/attachments"),
        &owner,
        None,
    );
    let a = r.json()["data"][0].clone();
    assert_eq!(a["name"], "claim.pdf");
    let att = a["attachmentId"].as_str().unwrap();
    let r = app.rest(
        "GET",
        &format!("/rest/mail/{email}/attachments/{att}/content"),
        &owner,
        None,
    );
    assert_eq!(r.bytes, b"%PDF-1.4 ok");
    assert_eq!(app.count("1 = 1", "web_form_drafts"), 0);
    assert_eq!(
        app.count("subject = 'webform.submission.create'", "events"),
        1
    );

    // The reference ends with the submission: no more uploads, no second POST.
    let r = public_initiate(
        &app,
        &email,
        &reference,
        json!({"filename": "more.pdf", "totalSize": 1}),
    );
    assert_eq!(r.status, 404, "{}", r.text);
    let r = post_submission(
        &app,
        &id,
        &cookie,
        &token,
        &email,
        &reference,
        &[("name", &b"Vic again"[..])],
    );
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(r.text.contains("choose them again"), "{}", r.text);
    assert_eq!(app.count("1 = 1", "emails"), 1);

    // At most 20 files per submission; one never sent is swept with its files.
    let s = start_submission(&app, &id, &cookie, &csrf).json();
    let (email, reference) = (s["emailId"].as_str().unwrap(), s["ref"].as_str().unwrap());
    upload_whole(&app, email, reference, "a.txt", b"abc");
    for i in 1..20 {
        let r = public_initiate(
            &app,
            email,
            reference,
            json!({"filename": format!("f{i}.txt"), "totalSize": 1}),
        );
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let r = public_initiate(
        &app,
        email,
        reference,
        json!({"filename": "f21.txt", "totalSize": 1}),
    );
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.json()["errors"][0]["code"], "ERR_INPUT_EXCEEDS_MAX_VALUE");
    let file = app.count(
        &format!("email_id = '{email}' AND result_file_id IS NOT NULL"),
        "uploads",
    );
    assert_eq!(file, 1);
    app.execute(&format!(
        "UPDATE web_form_drafts SET expires_at = 1 WHERE email_id = '{email}'"
    ));
    let r = public_initiate(
        &app,
        email,
        reference,
        json!({"filename": "late.txt", "totalSize": 1}),
    );
    assert_eq!(r.status, 404, "an expired submission: {}", r.text);
    coffer_service::content::jobs::schedule_periodic(&app.ctx).unwrap();
    app.run_jobs();
    assert_eq!(app.count(&format!("id = '{email}'"), "emails"), 0);
    assert_eq!(app.count(&format!("email_id = '{email}'"), "uploads"), 0);
    assert_eq!(
        app.count("name = 'a.txt' AND perm_deleted = FALSE", "objects"),
        0,
        "the file uploaded onto it is gone"
    );
    assert_eq!(app.count("1 = 1", "web_form_drafts"), 0);
    assert_eq!(app.count("state = 'failed'", "jobs"), 0);

    // One address may start 30 submissions an hour.
    let mut limited = None;
    for n in 0..40 {
        let r = start_submission(&app, &id, &cookie, &csrf);
        if r.status == 429 {
            assert!(r.header("retry-after").is_some());
            limited = Some(n);
            break;
        }
        assert_eq!(r.status, 201, "{}", r.text);
    }
    assert_eq!(limited, Some(28), "two of the thirty were started above");
}
