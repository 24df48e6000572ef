//! Secure mail over HTTP (`/rest/mail…`): sending to accounts and outside addresses, drafts and
//! their uploads, buckets, counters, read state, trash, withdrawal, attachments and their
//! content, and bad input, with the stored state after each call (docs/mail.md). Runs on SQLite, and on
//! PostgreSQL when `COFFER_TEST_POSTGRES_URL` is set.

use coffer_domain::Role;
use coffer_tests::{assert_error, me, multipart, TestApp};
use serde_json::{json, Value};

fn ids(v: &Value) -> Vec<String> {
    v["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data: {v}"))
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

fn list(app: &TestApp, token: &str, query: &str) -> Value {
    let r = app.rest("GET", &format!("/rest/mail?{query}"), token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()
}

fn counters(app: &TestApp, token: &str) -> Value {
    let r = app.rest("GET", "/rest/mail/actions/counters", token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()
}

#[test]
fn an_email_to_accounts_reaches_their_inboxes_at_once() {
    let app = TestApp::spawn();
    let (ann, ta) = app.user_token("ann@example.com", Role::User);
    let (bob, tb) = app.user_token("bob@example.com", Role::User);
    let (_, tc) = app.user_token("carl@example.com", Role::User);
    let (_, td) = app.user_token("dave@example.com", Role::User);
    let (_, te) = app.user_token("eve@example.com", Role::User);
    let bytes = b"quarterly numbers\n".repeat(100);
    let f = app.upload_to_my_folder(&ta, "q3.txt", &bytes);
    let blob_refs = app.count("refs = 2", "blobs");

    let m = app.send_mail(
        &ta,
        json!({"to": ["Bob@Example.com"], "cc": ["carl@example.com"], "bcc": ["dave@example.com"],
               "subject": "Q3", "body": "See <b>attached</b>.\nThanks", "files": [f],
               "acl": "internal"}),
    );
    let id = m["id"].as_str().unwrap().to_string();
    assert_eq!(m["status"], "sent");
    assert_eq!(m["bucket"], "sent");
    assert_eq!(m["isUserSent"], true);
    assert_eq!(m["senderId"], ann.as_str());
    assert_eq!(m["emailFrom"], "ann@example.com");
    assert_eq!(m["sender"]["email"], "ann@example.com");
    assert_eq!(m["subject"], "Q3");
    assert_eq!(m["acl"], "internal");
    assert_eq!(m["attachmentCount"], 1);
    assert_eq!(m["emailPackageId"], id.as_str());
    assert_eq!(m["htmlBody"], "See <b>attached</b>.<br>Thanks");
    assert_eq!(m["recipients"].as_array().unwrap().len(), 3, "{m}");
    assert_eq!(m["recipients"][0]["userId"], bob.as_str());
    assert_eq!(m["recipients"][0]["type"], 0);
    assert_eq!(m["recipients"][2]["type"], 2);
    // The attachment is the stored version: its blob counts one more reference, no copy.
    assert_eq!(app.count("refs = 2", "blobs"), blob_refs + 1);
    assert_eq!(app.count("1 = 1", "email_attachments"), 1);
    // One entry for the sender, one per recipient, written with the sending.
    assert_eq!(
        app.count(&format!("email_id = '{id}'"), "mailbox_entries"),
        4
    );
    assert_eq!(app.count("subject = 'mail.email.send'", "events"), 1);

    // Bob: in his inbox, unread; counters agree.
    let inbox = list(&app, &tb, "bucket=inbox");
    assert_eq!(ids(&inbox), vec![id.clone()]);
    assert_eq!(inbox["metadata"]["total"], 1);
    let got = &inbox["data"][0];
    assert_eq!(got["bucket"], "inbox");
    assert_eq!(got["isRead"], false);
    assert_eq!(got["isUserSent"], false);
    assert!(got.get("recipients").is_none());
    let c = counters(&app, &tb);
    assert_eq!(
        (c["inbox"].as_i64(), c["inboxUnread"].as_i64()),
        (Some(1), Some(1))
    );
    assert_eq!(list(&app, &tb, "bucket=sent")["metadata"]["total"], 0);
    // Recipients: bcc hidden from recipients, shown to the sender.
    let r = app.rest("GET", &format!("/rest/mail/{id}/recipients"), &tb, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["data"].as_array().unwrap().len(), 2);
    let r = app.rest("GET", &format!("/rest/mail/{id}/recipients"), &td, None);
    assert_eq!(r.json()["data"].as_array().unwrap().len(), 2);
    let r = app.rest(
        "GET",
        &format!("/rest/mail/{id}/recipients?type=2"),
        &ta,
        None,
    );
    assert_eq!(r.json()["data"][0]["email"], "dave@example.com");
    // The attachment and its content.
    let r = app.rest("GET", &format!("/rest/mail/{id}/attachments"), &tb, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let a = &r.json()["data"][0];
    assert_eq!(a["name"], "q3.txt");
    assert_eq!(a["size"], bytes.len());
    assert_eq!(a["objectId"], f.as_str());
    let att = a["attachmentId"].as_str().unwrap().to_string();
    let r = app.rest(
        "GET",
        &format!("/rest/mail/{id}/attachments/{att}/content"),
        &tb,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.bytes, bytes);
    assert!(r
        .header("content-disposition")
        .unwrap()
        .starts_with("attachment"));
    assert_eq!(
        app.count("subject = 'mail.attachment.download'", "events"),
        1
    );

    // Read in bulk; the counters follow.
    let r = app.rest(
        "PATCH",
        &format!("/rest/mail/actions/read?emailId:in={id}"),
        &tb,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.text, "");
    assert_eq!(counters(&app, &tb)["inboxUnread"], 0);
    assert_eq!(list(&app, &tb, "read=false")["metadata"]["total"], 0);
    // The ids come as `emailId:in` (one or several).
    let r = app.rest(
        "PATCH",
        &format!("/rest/mail/actions/unread?emailId={id}"),
        &tb,
        None,
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "ERR_REQUEST_INVALID_FILTER")
    );
    let r = app.rest(
        "PATCH",
        &format!("/rest/mail/actions/unread?emailId:in={id}"),
        &tb,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(counters(&app, &tb)["inboxUnread"], 1);
    // Carl's read state is his own.
    assert_eq!(list(&app, &tc, "read=false")["metadata"]["total"], 1);

    // Someone who is neither sender nor recipient sees nothing of it.
    for path in [
        format!("/rest/mail/{id}"),
        format!("/rest/mail/{id}/recipients"),
        format!("/rest/mail/{id}/attachments"),
        format!("/rest/mail/{id}/attachments/{att}/content"),
    ] {
        let r = app.rest("GET", &path, &te, None);
        assert_eq!(
            (r.status, r.code().as_str()),
            (404, "ERR_ENTITY_NOT_FOUND"),
            "{path}"
        );
    }
    let r = app.rest(
        "PATCH",
        &format!("/rest/mail/actions/read?emailId:in={id}"),
        &te,
        None,
    );
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(list(&app, &te, "")["metadata"]["total"], 0);

    // The sender's side.
    let sent = list(&app, &ta, "bucket=sent&with=recipients");
    assert_eq!(ids(&sent), vec![id.clone()]);
    assert_eq!(sent["data"][0]["recipients"].as_array().unwrap().len(), 3);
    let c = counters(&app, &ta);
    assert_eq!(
        (
            c["inbox"].as_i64(),
            c["draft"].as_i64(),
            c["outgoing"].as_i64()
        ),
        (Some(0), Some(0), Some(0))
    );

    // Mail to oneself only is `self_send`, in the sent bucket and the inbox.
    let m = app.send_mail(&ta, json!({"to": ["ann@example.com"], "subject": "note"}));
    assert_eq!(m["status"], "self_send");
    assert_eq!(list(&app, &ta, "bucket=inbox")["metadata"]["total"], 1);
    // The contact of an address mail went to moves its last-contact date.
    let r = app.rest(
        "POST",
        "/rest/contacts",
        &ta,
        Some(json!({"name": "Bob", "items": [{"email": "bob@example.com"}]})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    app.send_mail(&ta, json!({"to": ["bob@example.com"], "subject": "again"}));
    let r = app.rest("GET", "/rest/contacts", &ta, None);
    assert!(
        r.json()["data"][0]["lastContactDate"].is_string(),
        "{}",
        r.text
    );
}

#[test]
fn drafts_are_saved_changed_uploaded_to_sent_and_deleted() {
    let app = TestApp::spawn();
    let (_, ta) = app.user_token("ann@example.com", Role::User);
    let (_, tb) = app.user_token("bob@example.com", Role::User);

    let d = app.send_mail(&ta, json!({"draft": true, "subject": "draft one"}));
    let id = d["id"].as_str().unwrap().to_string();
    assert_eq!(
        (d["status"].as_str(), d["bucket"].as_str()),
        (Some("draft"), Some("draft"))
    );
    assert_eq!(counters(&app, &ta)["draft"], 1);
    assert_eq!(app.count("subject = 'mail.email.create'", "events"), 1);
    // Not the sender's: Bob sees no such draft.
    let r = app.rest(
        "PUT",
        &format!("/rest/mail/{id}/actions/sendFile"),
        &tb,
        Some(json!({"draft": true})),
    );
    assert_eq!(r.status, 404, "{}", r.text);

    // A file uploaded onto the draft attaches to it when its last chunk arrives.
    let r = app.rest(
        "POST",
        &format!("/rest/mail/{id}/actions/initiateUpload"),
        &ta,
        Some(json!({"filename": "plan.txt", "totalSize": 4, "totalChunks": 1})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let upload = r.json()["id"].as_i64().unwrap();
    let (ct, body) = multipart(&[
        ("compressionMode", None, b"NORMAL"),
        ("compressionSize", None, b"4"),
        ("originalSize", None, b"4"),
        ("index", None, b"1"),
        ("lastChunk", None, b"1"),
        ("content", Some("blob"), b"plan"),
    ]);
    let r = app.rest_body("POST", &format!("/rest/uploads/{upload}"), &ta, &ct, body);
    assert!(r.status == 200 || r.status == 201, "{}", r.text);
    let r = app.rest("GET", &format!("/rest/mail/{id}/attachments"), &ta, None);
    assert_eq!(r.json()["data"][0]["name"], "plan.txt", "{}", r.text);

    // Changed, then sent.
    let r = app.rest(
        "PUT",
        &format!("/rest/mail/{id}/actions/sendFile"),
        &ta,
        Some(json!({"draft": true, "subject": "draft two", "to": ["bob@example.com"]})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["subject"], "draft two");
    assert_eq!(
        list(&app, &tb, "")["metadata"]["total"],
        0,
        "a draft reaches no one"
    );
    let r = app.rest(
        "PUT",
        &format!("/rest/mail/{id}/actions/sendFile"),
        &ta,
        Some(json!({"subject": "final", "to": ["bob@example.com"]})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["status"], "sent");
    assert_eq!(r.json()["attachmentCount"], 1);
    let inbox = list(&app, &tb, "bucket=inbox");
    assert_eq!(ids(&inbox), vec![id.clone()]);
    assert_eq!(inbox["data"][0]["subject"], "final");
    // Sent twice: refused; deleting a sent email: refused.
    let r = app.rest(
        "PUT",
        &format!("/rest/mail/{id}/actions/sendFile"),
        &ta,
        Some(json!({"to": ["bob@example.com"]})),
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ENTITY_EMAIL_NOT_DRAFT")
    );
    let r = app.rest("DELETE", &format!("/rest/mail/{id}"), &ta, None);
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ENTITY_EMAIL_IS_SENT")
    );
    let r = app.rest("DELETE", &format!("/rest/mail/{id}"), &tb, None);
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ACCESS_NOT_SENDER")
    );
    assert_eq!(list(&app, &tb, "bucket=inbox")["metadata"]["total"], 1);

    // A draft deleted goes for good, and lets go of its attachment's bytes.
    let f = {
        let sync = me(&app, &ta)["syncdirId"].as_str().unwrap().to_string();
        let r = app.upload(&ta, &sync, "x.txt", b"xyz");
        r.json()["id"].as_str().unwrap().to_string()
    };
    let d = app.send_mail(&ta, json!({"draft": true, "files": [f]}));
    let d = d["id"].as_str().unwrap().to_string();
    let held =
        format!("refs = 2 AND id IN (SELECT blob_id FROM file_versions WHERE file_id = '{f}')");
    assert_eq!(app.count(&held, "blobs"), 1);
    let r = app.rest("DELETE", &format!("/rest/mail/{d}"), &ta, None);
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(app.count(&format!("id = '{d}'"), "emails"), 0);
    assert_eq!(
        app.count(&format!("email_id = '{d}'"), "email_attachments"),
        0
    );
    assert_eq!(app.count(&held, "blobs"), 0);
    let r = app.rest("GET", &format!("/rest/mail/{d}"), &ta, None);
    assert_eq!(r.status, 404, "{}", r.text);
}

#[test]
fn recipients_say_which_outside_addresses_are_distribution_lists() {
    let app = TestApp::spawn();
    let (_, ta) = app.user_token("ann@example.com", Role::User);
    let _ = app.user_token("bob@example.com", Role::User);
    let admin = app.admin_token();
    let r = app.rest(
        "POST",
        "/rest/externalDL",
        &admin,
        Some(json!({"emails": ["team@partner.example"]})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let m = app.send_mail(
        &ta,
        json!({"to": ["Team@Partner.example", "solo@partner.example", "bob@example.com"],
               "subject": "Hello", "body": "hi"}),
    );
    let id = m["id"].as_str().unwrap();
    let r = app.rest("GET", &format!("/rest/mail/{id}/recipients"), &ta, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let flags: Vec<(String, bool)> = r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["email"].as_str().unwrap().to_string(),
                x["isDistributionList"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        flags,
        vec![
            ("team@partner.example".to_string(), true),
            ("solo@partner.example".to_string(), false),
            ("bob@example.com".to_string(), false),
        ],
        "{}",
        r.text
    );
}

#[test]
fn outside_recipients_get_a_link_through_the_outbox() {
    let app = TestApp::spawn();
    let (_, ta) = app.user_token("ann@example.com", Role::User);
    let f = app.upload_to_my_folder(&ta, "report.pdf", b"%PDF-1.4 secret bytes");
    let m = app.send_mail(&ta,
        json!({"to": ["Out@Partner.example"], "subject": "Report", "body": "the secret figures",
               "secureBody": true, "files": [f], "acl": "verify_recipient", "includeFingerprint": true}),
    );
    let id = m["id"].as_str().unwrap().to_string();
    assert_eq!(m["status"], "queued");
    assert_eq!(m["bucket"], "outgoing");
    assert!(m["recipients"][0].get("userId").is_none(), "{m}");
    assert_eq!(counters(&app, &ta)["outgoingQueued"], 1);
    // One message, naming the email, with the link; the reference is stored only hashed.
    assert_eq!(
        app.count(
            &format!("email_id = '{id}' AND to_address = 'out@partner.example'"),
            "mail_outbox"
        ),
        1
    );
    let body: String = outbox_body(&app, &id);
    let link_start = body.find(&format!("/mail/{id}?ref=")).expect("the link");
    let reference: String = body[link_start..]
        .split("?ref=")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    assert_eq!(reference.len(), 43);
    assert_eq!(
        app.count(&format!("ref_hash = '{reference}'"), "email_recipients"),
        0
    );
    assert_eq!(
        app.count(
            &format!("email_id = '{id}' AND ref_hash IS NOT NULL"),
            "email_recipients"
        ),
        1
    );
    assert!(
        !body.contains("secret figures"),
        "a secure body stays out: {body}"
    );
    assert!(
        !body.contains("secret bytes"),
        "no attachment bytes: {body}"
    );
    assert!(body.contains("report.pdf"), "{body}");
    // Trashing mail still being sent is refused.
    let r = app.rest(
        "PATCH",
        &format!("/rest/mail/actions/trash?emailId:in={id}"),
        &ta,
        None,
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ENTITY_EMAIL_IS_NOT_COMPLETED")
    );

    // Delivered: the email is sent (the SMTP sender records this; see tests/tests/smtp.rs).
    deliver_all(&app, "sent");
    let r = app.rest("GET", &format!("/rest/mail/{id}"), &ta, None);
    assert_eq!(r.json()["status"], "sent", "{}", r.text);
    assert_eq!(r.json()["bucket"], "sent");
    assert_eq!(app.count("subject = 'mail.email.sent'", "events"), 1);

    // A message that fails for good leaves the email in error, visible to the sender.
    let m = app.send_mail(&ta, json!({"to": ["gone@partner.example"], "subject": "x"}));
    let id2 = m["id"].as_str().unwrap().to_string();
    deliver_all(&app, "error");
    let r = app.rest("GET", &format!("/rest/mail/{id2}"), &ta, None);
    assert_eq!(r.json()["status"], "error", "{}", r.text);
    assert!(r.json()["error"].is_string());
    let c = counters(&app, &ta);
    assert_eq!(
        (c["outgoing"].as_i64(), c["outgoingError"].as_i64()),
        (Some(1), Some(1))
    );
}

fn outbox_body(app: &TestApp, email_id: &str) -> String {
    let body = app
        .ctx
        .with_conn(|c| {
            let ms = coffer_store::mail::to_address(c, "out@partner.example")?;
            Ok(ms.into_iter().next().map(|m| m.body).unwrap_or_default())
        })
        .expect("outbox");
    assert!(body.contains(email_id), "{body}");
    body
}

/// Claims every due message and records `state` for it, as a sender node would.
fn deliver_all(app: &TestApp, state: &'static str) {
    app.ctx
        .with_conn(|c| {
            let now = coffer_tests::unix_now();
            for m in coffer_store::mail::claim(c, "node-t", now * 1000 + 10_000, 60_000, 100)? {
                let a = coffer_store::mail::Attempt {
                    id: m.id.clone(),
                    attempt: 1,
                    state,
                    next_attempt_at: 0,
                    error: (state == "error").then(|| "550 no such user".to_string()),
                    message_id: m.message_id_or("example.com"),
                    now,
                };
                assert!(coffer_store::mail::record(c, "node-t", &a)?);
            }
            Ok(())
        })
        .expect("deliver");
}

#[test]
fn trash_and_bulk_changes_answer_per_id() {
    let app = TestApp::spawn();
    let (_, ta) = app.user_token("ann@example.com", Role::User);
    let (_, tb) = app.user_token("bob@example.com", Role::User);
    let a = app.send_mail(&ta, json!({"to": ["bob@example.com"], "subject": "a"}))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let b = app.send_mail(&ta, json!({"to": ["bob@example.com"], "subject": "b"}))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let unknown = "00000000-0000-4000-8000-000000000000";

    // One unknown id: nothing changes, 404 naming it.
    let r = app.rest(
        "PATCH",
        &format!("/rest/mail/actions/trash?emailId:in={a},{unknown}"),
        &tb,
        None,
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (404, "ERR_ENTITY_NOT_FOUND"),
        "{}",
        r.text
    );
    assert!(r.text.contains(unknown), "{}", r.text);
    assert_eq!(app.count("trashed_at IS NOT NULL", "mailbox_entries"), 0);
    // With partialSuccess: what can change does, 207 with the rest.
    let r = app.rest(
        "PATCH",
        &format!("/rest/mail/actions/trash?emailId:in={a},{unknown}&partialSuccess=true"),
        &tb,
        None,
    );
    assert_eq!(r.status, 207, "{}", r.text);
    let v = r.json();
    assert_eq!(v["successIds"], json!([a]));
    assert_eq!(v["errors"][0]["id"], unknown);
    assert_eq!(v["errors"][0]["code"], "ERR_ENTITY_NOT_FOUND");
    assert_eq!(ids(&list(&app, &tb, "bucket=trash")), vec![a.clone()]);
    assert_eq!(ids(&list(&app, &tb, "bucket=inbox")), vec![b.clone()]);
    assert_eq!(ids(&list(&app, &tb, "deleted=true")), vec![a.clone()]);
    let r = app.rest(
        "GET",
        "/rest/mail/actions/counters?returnCustomWebForm=true",
        &tb,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let c = r.json();
    assert_eq!(c["outgoingTransferringIds"], json!([]));
    assert_eq!(
        (c["inbox"].as_i64(), c["trash"].as_i64()),
        (Some(1), Some(1))
    );
    // Trashed again: the entity is deleted already.
    let r = app.rest(
        "PATCH",
        &format!("/rest/mail/actions/trash?emailId:in={a}"),
        &tb,
        None,
    );
    assert_eq!((r.status, r.code().as_str()), (403, "ERR_ENTITY_DELETED"));
    // The sender's copy is untouched by the recipient's trash.
    assert_eq!(list(&app, &ta, "bucket=sent")["metadata"]["total"], 2);
    // Missing or bad ids.
    let r = app.rest("PATCH", "/rest/mail/actions/read", &tb, None);
    assert_eq!((r.status, r.code().as_str()), (422, "ERR_INPUT_REQUIRED"));
    let r = app.rest(
        "PATCH",
        "/rest/mail/actions/read?emailId:in=nope",
        &tb,
        None,
    );
    assert_eq!(r.status, 404, "{}", r.text);
    // Filters and orders.
    let r = app.rest("GET", "/rest/mail?bucket=spam", &tb, None);
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "ERR_REQUEST_INVALID_FILTER")
    );
    let r = app.rest("GET", "/rest/mail?color=red", &tb, None);
    assert_eq!(r.status, 400, "{}", r.text);
    let r = app.rest("GET", "/rest/mail?date:gte=yesterday", &tb, None);
    assert_eq!(
        (r.status, r.code().as_str()),
        (422, "ERR_INPUT_INVALID_DATE")
    );
    let asc = list(&app, &ta, "bucket=sent&orderBy=id:asc");
    let mut want = vec![a.clone(), b.clone()];
    want.sort();
    assert_eq!(ids(&asc), want);
    assert_eq!(
        list(&app, &ta, "bucket=sent&limit=1")["data"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        list(&app, &ta, "status=sent&date:gte=2020-01-01")["metadata"]["total"],
        2
    );
    assert_eq!(
        list(&app, &ta, "date:lt=2020-01-01")["metadata"]["total"],
        0
    );
    // The trash is listed only when asked for.
    assert_eq!(list(&app, &tb, "isRecipient=true")["metadata"]["total"], 1);
    assert_eq!(list(&app, &tb, "isRecipient=false")["metadata"]["total"], 0);
}

#[test]
fn bad_input_is_refused_and_stores_nothing() {
    let app = TestApp::spawn();
    let (_, ta) = app.user_token("ann@example.com", Role::User);
    let (_, tb) = app.user_token("bob@example.com", Role::User);
    let bobs = app.upload_to_my_folder(&tb, "bob.txt", b"bob's");
    let mine = app.upload_to_my_folder(&ta, "mine.txt", b"mine");
    let many: Vec<String> = (0..501).map(|i| format!("u{i}@x.example")).collect();
    let cases: Vec<(Value, u16, &str)> = vec![
        (
            json!({"to": ["not an address"]}),
            422,
            "ERR_INVALID_PARAMETER",
        ),
        (json!({"to": "bob@example.com"}), 422, "ERR_INPUT_NOT_ARRAY"),
        (json!({"to": many}), 422, "ERR_INPUT_EXCEEDS_MAX_VALUE"),
        (
            json!({"to": ["bob@example.com"], "subject": "s".repeat(999)}),
            422,
            "ERR_INPUT_EXCEEDS_MAX_VALUE",
        ),
        (
            json!({"to": ["bob@example.com"], "body": "b".repeat(1_000_001)}),
            422,
            "ERR_INPUT_EXCEEDS_MAX_VALUE",
        ),
        (
            json!({"to": ["bob@example.com"], "body": "<script>alert(1)</script>"}),
            422,
            "ERR_INPUT_HTML_TAGS_INVALID",
        ),
        (
            json!({"to": ["bob@example.com"], "body": "<a href=\"javascript:x()\">x</a>"}),
            422,
            "ERR_INPUT_HTML_TAGS_INVALID",
        ),
        (
            json!({"to": ["bob@example.com"], "body": "<img src=x onerror=alert(1)>"}),
            422,
            "ERR_INPUT_HTML_TAGS_INVALID",
        ),
        (
            json!({"to": ["bob@example.com"], "expire": "2020-01-01"}),
            422,
            "ERR_INPUT_PAST_DATE",
        ),
        (
            json!({"to": ["bob@example.com"], "expire": "soon"}),
            422,
            "ERR_INPUT_INVALID_DATE",
        ),
        (
            json!({"to": ["bob@example.com"], "acl": "everyone"}),
            422,
            "ERR_INPUT_NOT_IN_LIST",
        ),
        (
            json!({"to": ["out@x.example"], "acl": "internal"}),
            422,
            "ERR_INVALID_PARAMETER",
        ),
        (
            json!({"to": ["bob@example.com"], "files": [bobs]}),
            404,
            "ERR_ENTITY_NOT_FOUND",
        ),
        (
            json!({"to": ["bob@example.com"], "files": ["nope"]}),
            404,
            "ERR_ENTITY_NOT_FOUND",
        ),
        (
            json!({"to": ["bob@example.com"], "files": [mine, bobs]}),
            404,
            "ERR_ENTITY_NOT_FOUND",
        ),
        (
            json!({"subject": "to no one"}),
            403,
            "ERR_INPUT_EMAIL_WITH_NO_RECIPIENTS_NOT_ALLOWED",
        ),
        (
            json!({"to": ["bob@example.com"], "acl": "no_auth", "secureBody": true}),
            403,
            "ERR_INPUT_SECURE_BODY_WITH_NO_AUTH_NOT_ALLOWED",
        ),
        (
            json!({"to": ["bob@example.com"], "parentEmailId": "00000000-0000-4000-8000-000000000000"}),
            404,
            "ERR_ENTITY_NOT_FOUND",
        ),
        (
            json!({"to": ["bob@example.com"], "sharedMailboxId": "00000000-0000-4000-8000-000000000000"}),
            403,
            "ERR_ACCESS_USER",
        ),
        (
            json!({"to": ["bob@example.com"], "draft": "yes"}),
            422,
            "ERR_INPUT_NOT_BOOLEAN",
        ),
        (json!(["bob@example.com"]), 400, "ERR_REQUEST_INVALID_JSON"),
    ];
    for (body, status, code) in cases {
        let r = app.rest(
            "POST",
            "/rest/mail/actions/sendFile",
            &ta,
            Some(body.clone()),
        );
        assert_eq!(
            (r.status, r.code().as_str()),
            (status, code),
            "{body}: {}",
            r.text
        );
        assert_eq!(app.count("1 = 1", "emails"), 0, "{body}");
        assert_eq!(app.count("1 = 1", "mailbox_entries"), 0);
        assert_eq!(app.count("email_id IS NOT NULL", "mail_outbox"), 0);
        assert_eq!(app.count("refs > 1", "blobs"), 0);
    }
    // A file still being scanned, or found infected, cannot be sent.
    for (status, code) in [
        ("scanning", "ERR_ENTITY_NOT_SCANNED"),
        ("disallowed", "ERR_ENTITY_VIRUS_FOUND"),
    ] {
        app.execute(&format!(
            "UPDATE file_versions SET av_status = '{status}' WHERE file_id = '{mine}'"
        ));
        let r = app.rest(
            "POST",
            "/rest/mail/actions/sendFile",
            &ta,
            Some(json!({"to": ["bob@example.com"], "files": [mine]})),
        );
        assert_eq!((r.status, r.code().as_str()), (403, code), "{}", r.text);
        assert_eq!(app.count("1 = 1", "emails"), 0);
    }
    app.execute(&format!(
        "UPDATE file_versions SET av_status = 'allowed' WHERE file_id = '{mine}'"
    ));
    // A file in the trash cannot be sent.
    let r = app.rest("DELETE", &format!("/rest/files/{mine}"), &ta, None);
    assert!(r.status < 300, "{}", r.text);
    let r = app.rest(
        "POST",
        "/rest/mail/actions/sendFile",
        &ta,
        Some(json!({"to": ["bob@example.com"], "files": [mine]})),
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "ERR_ENTITY_DELETED"),
        "{}",
        r.text
    );
    assert_eq!(app.count("1 = 1", "emails"), 0);
}

#[test]
fn expired_mail_keeps_its_files_from_recipients_but_not_from_its_sender() {
    let app = TestApp::spawn();
    let (_, ta) = app.user_token("ann@example.com", Role::User);
    let (_, tb) = app.user_token("bob@example.com", Role::User);
    let f = app.upload_to_my_folder(&ta, "a.txt", b"aaaa");
    let m = app.send_mail(
        &ta,
        json!({"to": ["bob@example.com"], "files": [f], "expire": "2030-12-31"}),
    );
    let id = m["id"].as_str().unwrap().to_string();
    assert_eq!(m["expirationDate"], "2030-12-31T23:59:59Z");
    let r = app.rest("GET", &format!("/rest/mail/{id}/attachments"), &tb, None);
    let att = r.json()["data"][0]["attachmentId"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/rest/mail/{id}/attachments/{att}/content");
    assert_eq!(app.rest("GET", &path, &tb, None).status, 200);
    app.execute(&format!(
        "UPDATE emails SET expire_at = 1 WHERE id = '{id}'"
    ));
    let r = app.rest("GET", &path, &tb, None);
    assert_eq!((r.status, r.code().as_str()), (403, "ERR_ACCESS_USER"));
    assert_eq!(app.rest("GET", &path, &ta, None).status, 200);
    // The file it came from may go: the attachment keeps its bytes.
    app.execute(&format!(
        "UPDATE emails SET expire_at = NULL WHERE id = '{id}'"
    ));
    let r = app.rest("DELETE", &format!("/rest/files/{f}"), &ta, None);
    assert!(r.status < 300, "{}", r.text);
    let r = app.rest("GET", &path, &tb, None);
    assert_eq!((r.status, r.bytes.as_slice()), (200, b"aaaa".as_slice()));
    let r = app.rest("GET", &format!("/rest/mail/{id}/attachments"), &tb, None);
    assert_eq!(r.json()["data"][0]["deleted"], true);
}

#[test]
fn active_members_send_and_read_as_a_shared_mailbox() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (team, _) = app.user("team@example.com", Role::User);
    let (ann, ta) = app.user_token("ann@example.com", Role::User);
    let (bob, tb) = app.user_token("bob@example.com", Role::User);
    let (_, tc) = app.user_token("carl@example.com", Role::User);
    let r = app.rest(
        "POST",
        "/rest/admin/sharedMailboxes",
        &admin,
        Some(json!({"userId": team, "memberIds": [ann, bob]})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    // Bob is a member but has not turned the mailbox on; Carl is no member.
    let as_team =
        json!({"to": ["carl@example.com"], "subject": "from the team", "sharedMailboxId": team});
    for t in [&tb, &tc] {
        let r = app.rest(
            "POST",
            "/rest/mail/actions/sendFile",
            t,
            Some(as_team.clone()),
        );
        assert_eq!(
            (r.status, r.code().as_str()),
            (403, "ERR_ACCESS_USER"),
            "{}",
            r.text
        );
        let r = app.rest(
            "GET",
            &format!("/rest/mail?sharedMailboxId={team}"),
            t,
            None,
        );
        assert_eq!(r.status, 403, "{}", r.text);
    }
    assert_eq!(app.count("1 = 1", "emails"), 0);
    let r = app.rest(
        "PATCH",
        "/rest/sharedMailboxes",
        &ta,
        Some(json!({"data": [{"id": team, "active": true}]})),
    );
    assert_eq!(r.status, 200, "{}", r.text);

    // Ann sends as the mailbox: its mail, written by her.
    let m = app.send_mail(&ta, as_team);
    let id = m["id"].as_str().unwrap().to_string();
    assert_eq!(m["senderId"], team.as_str());
    assert_eq!(m["sharedMailboxId"], team.as_str());
    assert_eq!(m["actor"]["id"], ann.as_str());
    assert_eq!(m["emailFrom"], "team@example.com");
    assert_eq!(
        ids(&list(
            &app,
            &ta,
            &format!("sharedMailboxId={team}&bucket=sent")
        )),
        vec![id.clone()]
    );
    assert_eq!(
        list(&app, &ta, "bucket=sent")["metadata"]["total"],
        0,
        "not in Ann's own mailbox"
    );
    let inbox = list(&app, &tc, "bucket=inbox");
    assert_eq!(inbox["data"][0]["senderId"], team.as_str());

    // Mail to the mailbox reaches its inbox, which active members read.
    let m = app.send_mail(
        &tc,
        json!({"to": ["team@example.com"], "subject": "to the team"}),
    );
    let to_team = m["id"].as_str().unwrap().to_string();
    let r = app.rest("GET", &format!("/rest/mail/{to_team}"), &ta, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["bucket"], "inbox");
    assert_eq!(
        app.rest("GET", &format!("/rest/mail/{to_team}"), &tb, None)
            .status,
        404
    );
    let r = app.rest(
        "GET",
        "/rest/sharedMailboxes/mail/actions/counters",
        &ta,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let c = r.json();
    assert_eq!(c["data"][0]["id"], team.as_str());
    assert_eq!(c["data"][0]["counters"]["inbox"], 1);
    assert_eq!(c["data"][0]["counters"]["inboxUnread"], 1);
    let r = app.rest(
        "GET",
        &format!("/rest/sharedMailboxes/mail/actions/counters?id:in={ann}"),
        &ta,
        None,
    );
    assert_eq!(r.json()["data"], json!([]));
    // Bob, once active, reads it too; the read state is the mailbox's.
    let r = app.rest(
        "PATCH",
        "/rest/sharedMailboxes",
        &tb,
        Some(json!({"data": [{"id": team, "active": true}]})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.rest(
        "PATCH",
        &format!("/rest/mail/actions/read?emailId:in={to_team}"),
        &tb,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.rest(
        "GET",
        "/rest/sharedMailboxes/mail/actions/counters",
        &ta,
        None,
    );
    assert_eq!(r.json()["data"][0]["counters"]["inboxUnread"], 0);
}

/// The attachment ids of an email, as `token` lists them.
fn attachment_ids(app: &TestApp, token: &str, id: &str) -> Vec<String> {
    let r = app.rest("GET", &format!("/rest/mail/{id}/attachments"), token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["attachmentId"].as_str().unwrap().to_string())
        .collect()
}

fn withdraw(app: &TestApp, token: &str, ids: &[&str]) -> coffer_tests::Resp {
    app.rest(
        "POST",
        "/rest/mail/actions/withdraw",
        token,
        Some(json!({ "ids": ids })),
    )
}

#[test]
fn a_sender_withdraws_sent_mail_and_recipients_lose_its_files() {
    let app = TestApp::spawn();
    let (ann, ta) = app.user_token("ann@example.com", Role::User);
    let (_, tb) = app.user_token("bob@example.com", Role::User);
    let (_, tc) = app.user_token("carl@example.com", Role::User);
    let f = app.upload_to_my_folder(&ta, "a.txt", b"aaaa");
    let id = app.send_mail(&ta, json!({"to": ["bob@example.com"], "files": [f]}))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let att = attachment_ids(&app, &tb, &id)[0].clone();
    let path = format!("/rest/mail/{id}/attachments/{att}/content");
    assert_eq!(app.rest("GET", &path, &tb, None).status, 200);

    // The recipient may not withdraw it, a stranger does not see it, bad bodies are 422.
    let r = withdraw(&app, &tb, &[&id]);
    assert_error(&r, 403, "ERR_ACCESS_NOT_SENDER");
    assert_eq!(r.json()["failedIds"], json!([id]));
    assert_error(&withdraw(&app, &tc, &[&id]), 404, "ERR_ENTITY_NOT_FOUND");
    for (body, code) in [
        (json!({}), "ERR_INPUT_REQUIRED"),
        (json!({"ids": []}), "ERR_INPUT_REQUIRED"),
        (json!({"ids": id}), "ERR_INPUT_NOT_ARRAY"),
        (json!({"ids": [5]}), "ERR_INPUT_NOT_STRING"),
    ] {
        let r = app.rest("POST", "/rest/mail/actions/withdraw", &ta, Some(body));
        assert_error(&r, 422, code);
    }
    assert_eq!(app.count("withdrawn_at IS NOT NULL", "emails"), 0);
    assert_eq!(app.count("subject = 'mail.email.withdraw'", "events"), 0);

    // The sender withdraws it: 200 without a body, the date set, every file withdrawn.
    let r = withdraw(&app, &ta, &[&id]);
    assert_eq!((r.status, r.text.as_str()), (200, ""));
    let v = app
        .rest("GET", &format!("/rest/mail/{id}"), &ta, None)
        .json();
    let when = v["withdrawnDate"]
        .as_str()
        .expect("withdrawnDate")
        .to_string();
    assert_eq!(v["status"], "sent");
    let seen = app
        .rest("GET", &format!("/rest/mail/{id}"), &tb, None)
        .json();
    assert_eq!(seen["withdrawnDate"], when.as_str());
    let r = app.rest("GET", &format!("/rest/mail/{id}/attachments"), &tb, None);
    assert_eq!(r.json()["data"][0]["withdrawn"], true);
    assert_eq!(
        app.count(
            &format!(
                "subject = 'mail.email.withdraw' AND actor_id = '{ann}' AND data LIKE '%{id}%'"
            ),
            "events"
        ),
        1
    );
    // The recipient's download is refused; so is the sender's (the file is withdrawn).
    assert_error(&app.rest("GET", &path, &tb, None), 403, "ERR_ACCESS_USER");
    assert_error(
        &app.rest("GET", &path, &ta, None),
        403,
        "ERR_ENTITY_IS_DELETED_ATTACHMENT",
    );

    // Again: nothing changes, no second event.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(withdraw(&app, &ta, &[&id]).status, 200);
    let v = app
        .rest("GET", &format!("/rest/mail/{id}"), &ta, None)
        .json();
    assert_eq!(v["withdrawnDate"], when.as_str());
    assert_eq!(app.count("subject = 'mail.email.withdraw'", "events"), 1);

    // Several ids: the good ones are withdrawn, the others reported (207).
    let other = app.send_mail(&ta, json!({"to": ["carl@example.com"]}))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let draft = app.send_mail(&ta, json!({"to": ["carl@example.com"], "draft": true}))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let unknown = "6f1c1a6e-0000-4000-8000-000000000000";
    let r = withdraw(&app, &ta, &[&other, &draft, unknown]);
    assert_eq!(r.status, 207, "{}", r.text);
    let b = r.json();
    assert_eq!(b["successIds"], json!([other]));
    assert_eq!(
        b["errors"],
        json!([
            {"id": draft, "code": "ERR_ENTITY_EMAIL_IS_NOT_COMPLETED"},
            {"id": unknown, "code": "ERR_ENTITY_NOT_FOUND"}
        ])
    );
    assert_eq!(
        app.count(
            &format!("id = '{other}' AND withdrawn_at IS NOT NULL"),
            "emails"
        ),
        1
    );
    assert_eq!(
        app.count(
            &format!("id = '{draft}' AND withdrawn_at IS NULL"),
            "emails"
        ),
        1
    );
}

#[test]
fn a_system_administrator_withdraws_any_sent_mail_and_other_administrators_do_not() {
    let app = TestApp::spawn();
    let admin = app.admin_token();
    let (_, th) = app.user_token("help@example.com", Role::HelpdeskAdmin);
    let (_, ta) = app.user_token("ann@example.com", Role::User);
    app.user("bob@example.com", Role::User);
    let id = app.send_mail(&ta, json!({"to": ["bob@example.com"]}))["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_error(&withdraw(&app, &th, &[&id]), 404, "ERR_ENTITY_NOT_FOUND");
    assert_eq!(app.count("withdrawn_at IS NOT NULL", "emails"), 0);
    assert_eq!(withdraw(&app, &admin, &[&id]).status, 200);
    assert_eq!(
        app.count(
            &format!("id = '{id}' AND withdrawn_at IS NOT NULL"),
            "emails"
        ),
        1
    );
}

#[test]
fn a_sender_withdraws_single_files_and_the_others_stay_open() {
    let app = TestApp::spawn();
    let (_, ta) = app.user_token("ann@example.com", Role::User);
    let (_, tb) = app.user_token("bob@example.com", Role::User);
    let f1 = app.upload_to_my_folder(&ta, "one.txt", b"1111");
    let f2 = app.upload_to_my_folder(&ta, "two.txt", b"2222");
    let id = app.send_mail(&ta, json!({"to": ["bob@example.com"], "files": [f1, f2]}))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let atts = attachment_ids(&app, &tb, &id);
    let (one, two) = (&atts[0], &atts[1]);
    let content = |a: &str| format!("/rest/mail/{id}/attachments/{a}/content");
    let action = |q: &str| format!("/rest/mail/{id}/actions/withdrawFiles?{q}");

    // Only the sender; the ids must be the email's attachments, and some must be named.
    let r = app.rest("POST", &action(&format!("id:in={one}")), &tb, None);
    assert_error(&r, 403, "ERR_ACCESS_NOT_SENDER");
    let r = app.rest("POST", &action(&format!("id:in={one},nope")), &ta, None);
    assert_error(&r, 422, "ERR_INVALID_PARAMETER");
    assert_eq!(r.json()["failedIds"], json!(["nope"]));
    assert_error(
        &app.rest("POST", &action(""), &ta, None),
        422,
        "ERR_INPUT_REQUIRED",
    );
    assert_error(
        &app.rest("POST", &action("id:in=x&colour=red"), &ta, None),
        400,
        "ERR_REQUEST_INVALID_FILTER",
    );
    assert_eq!(app.count("withdrawn", "email_attachments"), 0);

    let r = app.rest("POST", &action(&format!("id:in={one}")), &ta, None);
    assert_eq!(r.status, 204, "{}", r.text);
    let r = app.rest("GET", &format!("/rest/mail/{id}/attachments"), &tb, None);
    let data = r.json()["data"].clone();
    assert_eq!(
        (data[0]["withdrawn"].clone(), data[1]["withdrawn"].clone()),
        (json!(true), json!(false))
    );
    assert_error(
        &app.rest("GET", &content(one), &tb, None),
        403,
        "ERR_ENTITY_IS_DELETED_ATTACHMENT",
    );
    let r = app.rest("GET", &content(two), &tb, None);
    assert_eq!((r.status, r.bytes.as_slice()), (200, b"2222".as_slice()));
    // The email itself is not withdrawn.
    let v = app
        .rest("GET", &format!("/rest/mail/{id}"), &tb, None)
        .json();
    assert!(v.get("withdrawnDate").is_none(), "{v}");
    assert_eq!(
        app.count(
            &format!("subject = 'mail.attachment.withdraw' AND data LIKE '%{one}%'"),
            "events"
        ),
        1
    );
    // Again: 204, nothing new recorded.
    let r = app.rest("POST", &action(&format!("id:in={one}")), &ta, None);
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(
        app.count("subject = 'mail.attachment.withdraw'", "events"),
        1
    );
}
