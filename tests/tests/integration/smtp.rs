//! Outgoing mail over SMTP, against the real SMTP server of `scripts/smtp-test-server.sh`
//! (`COFFER_TEST_SMTP_URL` and friends; every test is skipped with a note when it is unset):
//! a message written to the outbox arrives with its headers and body, a relay that refuses or
//! is down leads to retries and at last to `error` with the reason kept, and two senders on one
//! database never send one message twice; a sent message keeps no body. Runs on SQLite or
//! PostgreSQL (`COFFER_TEST_POSTGRES_URL`). The tests of the development relay (`file:///dir`)
//! and of expiry need no SMTP server, nor does the one where mail queued through one node is
//! taken by another's sender at once.

use coffer_delivery::mail::{self, Config, Destination, Password, Relay};
use coffer_domain::Role;
use coffer_tests::{decoded_body, outbox, received, smtp, wait_until, Body, Smtp, TestApp};
use serde_json::json;
use std::time::Duration;

/// A sender to `url` (plain text) as `node`, with quick retries.
fn config(s: &Smtp, url: &str, node: &str) -> Config {
    let mut relay = Relay::parse(url, Some("never")).expect("relay URL");
    relay.user = Some(s.user.clone());
    relay.password = Some(Password(s.password.clone()));
    let mut c = Config::new(
        relay,
        mail::parse_from("Coffer <no-reply@coffer.test>").unwrap(),
        node,
    );
    c.timeout = Duration::from_secs(5);
    c.max_attempts = 3;
    c.retry_base = Duration::from_millis(100);
    c.retry_max = Duration::from_millis(200);
    c.poll = Duration::from_millis(20);
    c
}

fn start(app: &TestApp, c: Config) -> mail::Workers {
    mail::spawn(app.ctx.db.clone(), c, "coffer.test").expect("mail sender")
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}@example.com", uuid::Uuid::new_v4().simple())
}

fn queue(app: &TestApp, to: &str, subject: &str, body: &str) -> String {
    app.ctx
        .write(|c| {
            coffer_store::users::queue_mail(
                c,
                None,
                to,
                subject,
                body,
                "coffer.test",
                coffer_service::now(),
            )
            .map_err(Into::into)
        })
        .expect("queue")
}

/// The value of header `name` in a raw message.
fn header<'a>(data: &'a str, name: &str) -> Option<&'a str> {
    let head = data.split("\r\n\r\n").next().unwrap_or_default();
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn now_ms() -> i64 {
    coffer_service::now() * 1000
}

#[test]
fn a_scim_welcome_message_arrives_with_its_headers_and_body() {
    let Some(s) = smtp() else { return };
    let app = TestApp::spawn();
    let _sender = start(&app, config(&s, &s.url, "node-a"));
    let to = unique("ada");
    let (_, token) =
        coffer_service::identity::scim_tokens::create(&app.ctx, "idp").expect("scim token");
    let r = app.send(
        "POST",
        "/rest/scim/Users",
        &[("Authorization", &format!("Bearer {token}"))],
        Some(Body::Raw(
            "application/scim+json",
            json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                   "userName": to, "password": "Analytical1Engine", "notify": true})
            .to_string(),
        )),
    );
    assert_eq!(r.status, 201, "{}", r.text);

    wait_until("the welcome message", 20, || received(&s, &to).len() == 1);
    let got = &received(&s, &to)[0];
    let data = got["data"].as_str().unwrap();
    // The relay was signed in to, and the envelope names the sender and the recipient.
    assert_eq!(got["login"], s.user);
    assert_eq!(got["mailFrom"], "no-reply@coffer.test");
    assert_eq!(header(data, "From"), Some("Coffer <no-reply@coffer.test>"));
    assert_eq!(header(data, "To"), Some(to.as_str()));
    assert_eq!(header(data, "Subject"), Some("Your Coffer account"));
    assert!(header(data, "Date").is_some(), "{data}");
    let body = data.split_once("\r\n\r\n").unwrap().1;
    assert!(
        body.contains("An account has been created for you."),
        "{body}"
    );
    assert!(
        body.contains(&format!("Sign in at {}/", app.base)),
        "{body}"
    );
    assert!(!data.contains("Analytical1Engine"));

    // The row is `sent`, once, with the Message-ID the message carried.
    wait_until("the row to be sent", 10, || {
        outbox(&app, &to)[0].state == "sent"
    });
    let row = &outbox(&app, &to)[0];
    assert_eq!(row.attempts, 1);
    assert!(row.sent_at.is_some());
    assert_eq!(row.last_error, None);
    assert_eq!(row.lease_node, None);
    // Sent, the message keeps no body; what the operator reads stays.
    assert_eq!(row.body, "");
    assert_eq!(row.subject, "Your Coffer account");
    let id = row.message_id.clone().unwrap();
    assert!(id.starts_with(&format!("<{}@", row.id)), "{id}");
    assert_eq!(header(data, "Message-ID"), Some(id.as_str()));
}

#[test]
fn a_relay_that_refuses_is_retried_and_the_final_failure_is_kept_on_the_message() {
    let Some(s) = smtp() else { return };
    let app = TestApp::spawn();
    // The test server answers 451 (try again later) for `tempfail…` recipients.
    let to = unique("tempfail");
    let id = queue(&app, &to, "Busy", "Tried again");
    let _sender = start(&app, config(&s, &s.url, "node-a"));
    wait_until("the retries to be spent", 20, || {
        outbox(&app, &to)[0].state == "error"
    });
    let row = &outbox(&app, &to)[0];
    assert_eq!(row.id, id);
    assert_eq!(row.attempts, 3);
    let error = row.last_error.clone().unwrap();
    assert!(error.contains("451"), "{error}");
    assert!(error.contains("gave up after 3 attempts"), "{error}");
    assert!(!error.contains(&s.password));
    assert_eq!((row.sent_at, row.lease_node.clone()), (None, None));
    assert!(received(&s, &to).is_empty());

    // A permanent refusal (550) is not retried.
    let rejected = unique("reject");
    queue(&app, &rejected, "No such user", "Refused");
    wait_until("the refusal", 20, || {
        outbox(&app, &rejected)[0].state == "error"
    });
    let row = &outbox(&app, &rejected)[0];
    assert_eq!(row.attempts, 1);
    let error = row.last_error.clone().unwrap();
    assert!(
        error.contains("550") && error.contains("not retried"),
        "{error}"
    );
}

#[test]
fn a_wrong_password_is_retried_and_never_shown() {
    let Some(s) = smtp() else { return };
    let app = TestApp::spawn();
    let to = unique("grace");
    queue(&app, &to, "Hello", "Body");
    let mut c = config(&s, &s.url, "node-a");
    let wrong = format!("wrong-{}", uuid::Uuid::new_v4().simple());
    let mut relay = Relay::parse(&s.url, Some("never")).unwrap();
    relay.user = Some(s.user.clone());
    relay.password = Some(Password(wrong.clone()));
    c.destination = relay.into();
    c.max_attempts = 2;
    let _sender = start(&app, c);
    wait_until("the retries to be spent", 20, || {
        outbox(&app, &to)[0].state == "error"
    });
    let row = &outbox(&app, &to)[0];
    assert_eq!(row.attempts, 2);
    let error = row.last_error.clone().unwrap();
    assert!(error.contains("535"), "{error}");
    assert!(!error.contains(&wrong), "{error}");
    assert!(received(&s, &to).is_empty());
}

#[test]
fn a_relay_that_is_down_leaves_the_message_queued_and_nothing_is_lost() {
    let Some(s) = smtp() else { return };
    let app = TestApp::spawn();
    let to = unique("hopper");
    queue(&app, &to, "Later", "Kept until the relay is back");
    // A port nobody listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut down = config(&s, &format!("smtp://127.0.0.1:{closed}"), "node-a");
    down.retry_base = Duration::from_secs(3600);
    down.retry_max = Duration::from_secs(3600);
    let sender = start(&app, down);
    wait_until("the first attempt", 20, || {
        outbox(&app, &to)[0].attempts == 1
    });
    // Stopped for good: nothing of node A's claims the message again.
    sender.stop();
    let row = &outbox(&app, &to)[0];
    // Counted, kept `queued`, and its next attempt is later (by the backoff, jitter at most
    // halving it).
    assert_eq!(row.state, "queued");
    assert!(
        row.next_attempt_at >= now_ms() + 1_700_000,
        "{}",
        row.next_attempt_at
    );
    let error = row.last_error.clone().unwrap();
    assert!(error.contains("attempt 1 of 3"), "{error}");
    assert!(!error.contains(&s.password));
    assert_eq!(row.lease_node, None);

    // When the relay is back and the message due, it is sent with the Message-ID it was given
    // when it was written.
    app.execute(&format!(
        "UPDATE mail_outbox SET next_attempt_at = 0 WHERE to_address = '{to}'"
    ));
    let _sender = start(&app, config(&s, &s.url, "node-b"));
    wait_until("the message", 20, || received(&s, &to).len() == 1);
    let got = &received(&s, &to)[0];
    assert_eq!(
        header(got["data"].as_str().unwrap(), "Message-ID"),
        row.message_id.as_deref()
    );
    wait_until("the row to be sent", 10, || {
        outbox(&app, &to)[0].state == "sent"
    });
    assert_eq!(outbox(&app, &to)[0].attempts, 2);
}

#[test]
fn two_senders_on_one_database_never_send_one_message_twice() {
    let Some(s) = smtp() else { return };
    let app = TestApp::spawn();
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let addresses: Vec<String> = (0..30)
        .map(|i| format!("pair-{tag}-{i}@example.com"))
        .collect();
    for a in &addresses {
        queue(&app, a, "One of many", "Once only");
    }
    let mut a = config(&s, &s.url, "node-a");
    let mut b = config(&s, &s.url, "node-b");
    a.workers = 4;
    b.workers = 4;
    let (_a, _b) = (start(&app, a), start(&app, b));
    wait_until("every message to be sent", 30, || {
        app.count(
            &format!("to_address LIKE 'pair-{tag}-%' AND state = 'sent'"),
            "mail_outbox",
        ) == 30
    });
    // Give a double send time to show.
    std::thread::sleep(Duration::from_millis(300));
    let mut ids = std::collections::HashSet::new();
    for a in &addresses {
        let got = received(&s, a);
        assert_eq!(got.len(), 1, "{a} received {} times", got.len());
        let id = header(got[0]["data"].as_str().unwrap(), "Message-ID")
            .unwrap()
            .to_string();
        assert!(ids.insert(id));
        assert_eq!(outbox(&app, a)[0].attempts, 1);
    }
}

#[test]
fn starttls_protects_the_conversation_when_required() {
    let Some(s) = smtp() else { return };
    let (Ok(url), Ok(ca)) = (
        std::env::var("COFFER_TEST_SMTP_STARTTLS_URL"),
        std::env::var("COFFER_TEST_SMTP_CA"),
    ) else {
        eprintln!("skipped: no STARTTLS server (COFFER_TEST_SMTP_STARTTLS_URL is unset)");
        return;
    };
    let app = TestApp::spawn();
    let to = unique("lovelace");
    queue(&app, &to, "Private", "Over TLS");
    let mut c = config(&s, &url, "node-a");
    let mut relay = Relay::parse(&url, Some("required")).unwrap();
    relay.user = Some(s.user.clone());
    relay.password = Some(Password(s.password.clone()));
    relay.ca_pem = Some(std::fs::read(ca).unwrap());
    c.destination = relay.into();
    let sender = start(&app, c);
    wait_until("the message", 20, || received(&s, &to).len() == 1);
    let got = &received(&s, &to)[0];
    assert_eq!(got["tls"], true);
    assert_eq!(got["login"], s.user);

    // Without the CA the relay's certificate is refused, and nothing goes in the clear.
    sender.stop();
    let other = unique("babbage");
    queue(&app, &other, "Private", "Not in the clear");
    let mut untrusting = config(&s, &url, "node-b");
    untrusting.destination = Relay::parse(&url, Some("required")).unwrap().into();
    untrusting.max_attempts = 1;
    let _untrusting = start(&app, untrusting);
    wait_until("the refusal", 20, || {
        outbox(&app, &other)[0].state == "error"
    });
    let error = outbox(&app, &other)[0].last_error.clone().unwrap();
    assert!(
        error.to_lowercase().contains("tls") || error.contains("certificate"),
        "{error}"
    );
    assert!(received(&s, &other).is_empty());
}

/// A quoted-printable body decoded (soft line breaks joined, `=XX` turned into bytes).
fn quoted_printable(s: &str) -> String {
    let joined = s.replace("=\r\n", "");
    let b = joined.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1..i + 3)) {
            (b'=', Some(h)) if h.iter().all(u8::is_ascii_hexdigit) => {
                out.push(u8::from_str_radix(std::str::from_utf8(h).unwrap(), 16).unwrap());
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn secure_mail_reaches_outside_recipients_as_a_link_and_its_state_follows_delivery() {
    let Some(s) = smtp() else { return };
    let app = TestApp::spawn();
    let _sender = start(&app, config(&s, &s.url, "node-a"));
    let (_, token) = app.user_token("ann@example.com", coffer_domain::Role::User);
    let secret_bytes = b"CONFIDENTIAL-ATTACHMENT-BYTES".repeat(50);
    let f = app.upload_to_my_folder(&token, "figures.csv", &secret_bytes);
    let to = unique("partner");
    let gone = unique("reject");
    let r = app.rest(
        "POST",
        "/rest/mail/actions/sendFile",
        &token,
        Some(
            json!({"to": [to], "subject": "Figures", "body": "the confidential <b>figures</b>",
                    "secureBody": true, "files": [f], "acl": "verify_recipient"}),
        ),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["id"].as_str().unwrap().to_string();
    assert_eq!(r.json()["status"], "queued");

    wait_until("the message", 20, || received(&s, &to).len() == 1);
    let got = &received(&s, &to)[0];
    let data = got["data"].as_str().unwrap();
    assert_eq!(header(data, "From"), Some("Coffer <no-reply@coffer.test>"));
    assert_eq!(header(data, "To"), Some(to.as_str()));
    assert_eq!(header(data, "Subject"), Some("Figures"));
    let body = quoted_printable(data.split_once("\r\n\r\n").unwrap().1);
    // The link with its reference; the file by name; neither its bytes nor the secure body.
    assert!(
        body.contains(&format!("{}/mail/{id}?ref=", app.base)),
        "{body}"
    );
    assert!(body.contains("figures.csv"), "{body}");
    assert!(!data.contains("CONFIDENTIAL-ATTACHMENT-BYTES"), "{data}");
    assert!(!data.contains("confidential"), "{data}");
    assert!(
        header(data, "Content-Type").is_some_and(|c| c.starts_with("text/plain")),
        "{data}"
    );
    // Delivered: the email is sent, in the sender's sent bucket.
    wait_until("the email to be sent", 10, || {
        app.rest("GET", &format!("/rest/mail/{id}"), &token, None)
            .json()["status"]
            == "sent"
    });

    // A recipient the relay refuses for good: the email ends in `error`, visible to the sender.
    let r = app.rest(
        "POST",
        "/rest/mail/actions/sendFile",
        &token,
        Some(json!({"to": [gone], "subject": "x", "acl": "no_auth"})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let id2 = r.json()["id"].as_str().unwrap().to_string();
    wait_until("the email to fail", 20, || {
        app.rest("GET", &format!("/rest/mail/{id2}"), &token, None)
            .json()["status"]
            == "error"
    });
    let v = app
        .rest("GET", &format!("/rest/mail/{id2}"), &token, None)
        .json();
    assert_eq!(v["bucket"], "outgoing");
    assert!(v["error"].is_string(), "{v}");
    assert_eq!(outbox(&app, &gone)[0].state, "error");
}

/// Mail queued through one node is taken by the mail pump of another at once (its own looks
/// are 30 s apart); the relay here refuses connections, so taking it shows as a failed attempt.
#[test]
fn mail_queued_on_one_node_is_taken_by_another_at_once() {
    let app = TestApp::spawn();
    let relay = Relay::parse("smtp://127.0.0.1:1", Some("never")).unwrap();
    let mut config = Config::new(
        relay,
        mail::parse_from("Coffer <no-reply@coffer.test>").unwrap(),
        "node-b",
    );
    config.poll = Duration::from_secs(30);
    config.timeout = Duration::from_secs(2);
    let node_b = mail::spawn(app.other_node_db(), config, "coffer.test").expect("node B");
    std::thread::sleep(Duration::from_millis(1500));

    let recorded = std::time::Instant::now();
    let id = app
        .ctx
        .db
        .write(|c| {
            coffer_store::mail::queue(
                c,
                &coffer_store::mail::NewMessage {
                    email_id: None,
                    user_id: None,
                    to: "someone@example.com",
                    subject: "Hello",
                    body: "Hello from node A",
                    expires_at: None,
                },
                "coffer.test",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_secs() as i64,
            )
        })
        .unwrap();
    let tried = format!("id = '{id}' AND attempts = 1");
    while app.count(&tried, "mail_outbox") == 0 {
        assert!(
            // Far below node B's own 30 s look, with room for a loaded machine.
            recorded.elapsed() < Duration::from_secs(5),
            "node B took no attempt within five seconds"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    node_b.stop();
}

// ---- The development relay and expiry (no SMTP server needed) ----

/// A sender to the development relay writing into `dir`.
fn file_config(dir: &std::path::Path, node: &str) -> Config {
    let url = format!("file://{}", dir.display());
    let mut c = Config::new(
        Destination::parse(&url, None).expect("file URL"),
        mail::parse_from("Coffer <no-reply@coffer.test>").unwrap(),
        node,
    );
    c.poll = Duration::from_millis(20);
    c
}

/// Queues a message whose link or code stops working at `expires_at`.
fn queue_expiring(app: &TestApp, to: &str, body: &str, expires_at: i64) -> String {
    app.ctx
        .write(|c| {
            coffer_store::mail::queue(
                c,
                &coffer_store::mail::NewMessage {
                    email_id: None,
                    user_id: None,
                    to,
                    subject: "Your code",
                    body,
                    expires_at: Some(expires_at),
                },
                "coffer.test",
                coffer_service::now(),
            )
            .map_err(Into::into)
        })
        .expect("queue")
}

#[test]
fn the_development_relay_writes_each_message_as_an_eml_file_whose_link_opens() {
    let app = TestApp::spawn();
    let dir = tempfile::tempdir().unwrap();
    let drop_dir = dir.path().join("mail");
    let _sender = start(&app, file_config(&drop_dir, "node-a"));
    let (_, token) = app.user_token("ann@example.com", Role::User);
    let to = unique("outside");
    let sent = app.send_mail(
        &token,
        json!({"to": [to], "subject": "Quarterly figures", "body": "Here they are.",
               "acl": "no_auth"}),
    );
    let email = sent["id"].as_str().unwrap().to_string();

    wait_until("the message to be written", 20, || {
        outbox(&app, &to).first().is_some_and(|m| m.state == "sent")
    });
    let row = outbox(&app, &to).remove(0);
    let file = drop_dir.join(format!("{}.eml", row.id));
    let raw = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    // One file per message, nothing else (no temporary file left).
    let names: Vec<_> = std::fs::read_dir(&drop_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec![format!("{}.eml", row.id)]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode();
        assert_eq!(mode(&file) & 0o777, 0o600);
        assert_eq!(mode(&drop_dir) & 0o777, 0o700);
    }

    // RFC 5322: CRLF line ends only, headers, an empty line, the body.
    let data = String::from_utf8(raw).expect("UTF-8 message");
    assert!(
        !data.replace("\r\n", "").contains('\n'),
        "a bare LF in {data:?}"
    );
    assert_eq!(header(&data, "From"), Some("Coffer <no-reply@coffer.test>"));
    assert_eq!(header(&data, "To"), Some(to.as_str()));
    assert!(
        header(&data, "Subject").is_some_and(|s| s.contains("Quarterly figures")),
        "{data}"
    );
    assert!(header(&data, "Date").is_some(), "{data}");
    assert_eq!(header(&data, "Message-ID"), row.message_id.as_deref());
    let body = decoded_body(&data);
    assert!(body.contains("Here they are."), "{body}");
    let marker = format!("{}/mail/{email}?ref=", app.base);
    let link = body
        .split_whitespace()
        .find(|w| w.starts_with(&marker))
        .unwrap_or_else(|| panic!("no link in {body}"));

    // The link in the file opens the message, and the outbox kept no copy of it.
    let path = link.strip_prefix(&app.base).unwrap();
    let page = app.send("GET", path, &[], None);
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains("Here they are."), "{}", page.text);
    assert_eq!(row.body, "");
    assert_eq!((row.attempts, row.last_error.clone()), (1, None));
    assert!(row.sent_at.is_some());
    let mail = app.rest("GET", &format!("/rest/mail/{email}"), &token, None);
    assert_eq!(mail.json()["status"], "sent", "{}", mail.text);
}

#[test]
fn a_queued_message_whose_code_expired_is_never_sent_and_keeps_no_body() {
    let app = TestApp::spawn();
    let now = coffer_service::now();
    let stale = unique("stale");
    let live = unique("live");
    let stale_id = queue_expiring(&app, &stale, "Your code is 123456.", now - 1);
    let live_id = queue_expiring(&app, &live, "Your code is 654321.", now + 600);

    let dir = tempfile::tempdir().unwrap();
    let _sender = start(&app, file_config(dir.path(), "node-a"));
    wait_until("the live message to be written", 20, || {
        outbox(&app, &live)[0].state == "sent"
    });
    wait_until("the stale message to expire", 20, || {
        outbox(&app, &stale)[0].state == "expired"
    });
    let row = &outbox(&app, &stale)[0];
    assert_eq!(row.id, stale_id);
    assert_eq!(row.body, "");
    assert_eq!(row.attempts, 0);
    assert_eq!(row.sent_at, None);
    assert_eq!(row.lease_node, None);
    assert_eq!(row.last_error.as_deref(), Some(coffer_store::mail::EXPIRED));
    assert!(!dir.path().join(format!("{stale_id}.eml")).exists());
    assert!(dir.path().join(format!("{live_id}.eml")).exists());
    // Nothing anywhere still holds the stale code.
    assert_eq!(app.count("body LIKE '%123456%'", "mail_outbox"), 0);
}

#[test]
fn without_a_relay_the_outbox_expires_queued_messages_with_their_codes() {
    let app = TestApp::spawn();
    let now = coffer_service::now();
    let stale = unique("stale");
    let live = unique("live");
    queue_expiring(&app, &stale, "Your code is 123456.", now);
    queue_expiring(&app, &live, "Your code is 654321.", now + 600);
    let expired = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(coffer_service::mail::outbox::expire(&app.ctx))
        .expect("expire");
    assert_eq!(expired, 1);
    let row = &outbox(&app, &stale)[0];
    assert_eq!((row.state.as_str(), row.body.as_str()), ("expired", ""));
    // The live one waits for a relay, body and all.
    let row = &outbox(&app, &live)[0];
    assert_eq!(
        (row.state.as_str(), row.body.as_str()),
        ("queued", "Your code is 654321.")
    );
}

#[test]
fn an_outside_message_carries_its_emails_expiry_and_a_reset_mail_its_links() {
    let app = TestApp::spawn();
    let (_, token) = app.user_token("ann@example.com", Role::User);
    let to = unique("outside");
    let day = coffer_service::now() / 86_400 + 3;
    let expire = coffer_service::rfc3339(day * 86_400)[..10].to_string();
    app.send_mail(
        &token,
        json!({"to": [to], "subject": "S", "body": "B", "acl": "no_auth", "expire": expire}),
    );
    let row = &outbox(&app, &to)[0];
    // The link works through the last second of the expiry day; the message expires after it.
    let end_of_day = (day + 1) * 86_400;
    assert_eq!(row.expires_at, Some(end_of_day));

    app.user("reset-me@example.com", Role::User);
    let r = app.send(
        "POST",
        "/rest/users/requestPasswordReset",
        &[("X-Coffer-Version", "28")],
        Some(Body::Json(json!({"email": "reset-me@example.com"}))),
    );
    assert_eq!(r.status, 204, "{}", r.text);
    let row = &outbox(&app, "reset-me@example.com")[0];
    let stored = app.count(
        &format!("expires_at = {}", row.expires_at.expect("an expiry")),
        "password_resets",
    );
    assert_eq!(stored, 1, "the message expires with the link");
}
