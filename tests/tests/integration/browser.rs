//! Coffer's pages in a real browser: headless Chromium, driven over WebDriver (chromedriver).
//! Sign-in opens the authorization page, types into the fields labelled Email and Password,
//! clicks Sign in, then Allow on the consent page, and lands on the callback page with a code
//! that exchanges for a token. An outside recipient of mail opens the link, asks for a code,
//! types the code that was mailed, reads the message and downloads its file. The recipient's page
//! of a request-file link has its own tests (`request_file`).
//!
//! It needs Chromium and chromedriver, which `scripts/browser-test.sh` installs (Debian packages)
//! before running it with `COFFER_TEST_CHROMEDRIVER` set; `.ci/run` does that. With the
//! variable set the test fails if the browser cannot run; without it, on a machine that has no
//! chromedriver, it says so and passes.

use coffer_domain::client::flow;
use coffer_domain::Role;
use coffer_tests::{client_input, outbox, TestApp};
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod request_file;

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

struct Driver {
    child: Child,
    base: String,
    session: String,
    agent: ureq::Agent,
    _profile: tempfile::TempDir,
    /// Where the browser saves downloads.
    downloads: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self
            .agent
            .delete(&format!("{}/session/{}", self.base, self.session))
            .call();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn call(agent: &ureq::Agent, method: &str, url: &str, body: Option<Value>) -> Value {
    let req = agent.request(method, url);
    let resp = match body {
        Some(b) => req.send_json(b),
        None => req.call(),
    };
    match resp {
        Ok(r) => r.into_json().unwrap(),
        Err(ureq::Error::Status(code, r)) => panic!(
            "{method} {url}: {code} {}",
            r.into_string().unwrap_or_default()
        ),
        Err(e) => panic!("{method} {url}: {e}"),
    }
}

impl Driver {
    fn start(chromedriver: &str) -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {chromedriver}: {e}"));
        let base = format!("http://127.0.0.1:{port}");
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(60))
            .build();
        let deadline = Instant::now() + Duration::from_secs(30);
        while agent.get(&format!("{base}/status")).call().is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = tempfile::tempdir().unwrap();
        let downloads = tempfile::tempdir().unwrap();
        let binary =
            std::env::var("COFFER_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            // The console, so a test can see what the page's policy refused.
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {
                "binary": binary,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
                "prefs": {
                    "download.default_directory": downloads.path().display().to_string(),
                    "download.prompt_for_download": false,
                },
            },
        }}});
        let v = call(&agent, "POST", &format!("{base}/session"), Some(caps));
        let session = v["value"]["sessionId"]
            .as_str()
            .expect("a WebDriver session")
            .to_string();
        // Element look-ups wait for the element: after a click, each step looks for something
        // only the next page has, so this also waits for the navigation.
        call(
            &agent,
            "POST",
            &format!("{base}/session/{session}/timeouts"),
            Some(json!({"implicit": 10_000})),
        );
        // Headless Chromium saves downloads only when told where, over DevTools.
        call(
            &agent,
            "POST",
            &format!("{base}/session/{session}/chromium/send_command"),
            Some(json!({"cmd": "Page.setDownloadBehavior",
                        "params": {"behavior": "allow", "downloadPath": downloads.path().display().to_string()}})),
        );
        Driver {
            child,
            base,
            session,
            agent,
            _profile: profile,
            downloads,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}/session/{}{}", self.base, self.session, path)
    }

    fn go(&self, url: &str) {
        call(
            &self.agent,
            "POST",
            &self.url("/url"),
            Some(json!({"url": url})),
        );
    }

    fn current_url(&self) -> String {
        call(&self.agent, "GET", &self.url("/url"), None)["value"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn find(&self, css: &str) -> String {
        let v = call(
            &self.agent,
            "POST",
            &self.url("/element"),
            Some(json!({"using": "css selector", "value": css})),
        );
        v["value"][ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_string()
    }

    fn text(&self, element: &str) -> String {
        call(
            &self.agent,
            "GET",
            &self.url(&format!("/element/{element}/text")),
            None,
        )["value"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn type_into(&self, element: &str, text: &str) {
        call(
            &self.agent,
            "POST",
            &self.url(&format!("/element/{element}/value")),
            Some(json!({"text": text})),
        );
    }

    fn attribute(&self, element: &str, name: &str) -> String {
        call(
            &self.agent,
            "GET",
            &self.url(&format!("/element/{element}/attribute/{name}")),
            None,
        )["value"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// What `source` (a function body) returns in the page.
    fn script(&self, source: &str) -> Value {
        call(
            &self.agent,
            "POST",
            &self.url("/execute/sync"),
            Some(json!({"script": source, "args": []})),
        )["value"]
            .clone()
    }

    /// The console messages since the last call (level and text of each).
    fn console(&self) -> Vec<Value> {
        let v = call(
            &self.agent,
            "POST",
            &self.url("/se/log"),
            Some(json!({"type": "browser"})),
        );
        v["value"].as_array().cloned().unwrap_or_default()
    }

    fn click(&self, element: &str) {
        call(
            &self.agent,
            "POST",
            &self.url(&format!("/element/{element}/click")),
            Some(json!({})),
        );
    }
}

/// The chromedriver to use; `None` (the test passes, saying why) on a machine without one when
/// `COFFER_TEST_CHROMEDRIVER` is not set.
fn chromedriver() -> Option<String> {
    match std::env::var("COFFER_TEST_CHROMEDRIVER") {
        Ok(path) => Some(path),
        Err(_) if std::path::Path::new("/usr/bin/chromedriver").exists() => {
            Some("/usr/bin/chromedriver".to_string())
        }
        Err(_) => {
            eprintln!("no chromedriver here: run scripts/browser-test.sh, which installs it, to run this test");
            None
        }
    }
}

#[test]
fn a_person_signs_in_and_allows_a_client_in_a_real_browser() {
    let Some(chromedriver) = chromedriver() else {
        return;
    };
    let app = TestApp::spawn();
    let (_id, password) = app.user("ann@example.com", Role::User);
    let callback = format!("{}/oauth_callback.php", app.base);
    let (client_id, secret) = app.client(client_input(
        "Browser App",
        &callback,
        flow::AUTH_CODE | flow::REFRESH_TOKEN,
    ));

    let browser = Driver::start(&chromedriver);
    let authorize = format!(
        "{}/oauth/authorize?client_id={client_id}&response_type=code&redirect_uri={}&state=s-42",
        app.base,
        url::form_urlencoded::byte_serialize(callback.as_bytes()).collect::<String>()
    );
    browser.go(&authorize);

    // The sign-in page, as a person sees it.
    assert_eq!(browser.text(&browser.find("label[for=email]")), "Email");
    assert_eq!(
        browser.text(&browser.find("label[for=password]")),
        "Password"
    );
    let submit = browser.find("button[type=submit]");
    assert_eq!(browser.text(&submit), "Sign in");

    // A wrong password keeps the person on the page with an error.
    browser.type_into(&browser.find("#email"), "ann@example.com");
    browser.type_into(&browser.find("#password"), "wrong-password");
    browser.click(&submit);
    assert!(browser.text(&browser.find(".error")).contains("incorrect"));
    assert!(browser.current_url().ends_with("/oauth/authorize"));

    browser.type_into(&browser.find("#password"), &password);
    browser.click(&browser.find("button[type=submit]"));

    // The consent page.
    let allow = browser.find("button[value=allow]");
    assert_eq!(browser.text(&allow), "Allow");
    assert_eq!(browser.text(&browser.find("button[value=deny]")), "Deny");
    browser.click(&allow);

    // The landing page shows the code and the state, and the code exchanges for a token.
    let code = browser.text(&browser.find("#code"));
    let landed = browser.current_url();
    assert!(landed.starts_with(&callback), "{landed}");
    assert_eq!(browser.text(&browser.find("#state")), "s-42");
    assert!(landed.contains(&format!("code={code}")), "{landed}");
    let r = app.form(
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", &callback),
            ("client_id", &client_id),
            ("client_secret", &secret),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let token = r.json()["access_token"].as_str().unwrap().to_string();
    assert_eq!(
        app.rest("GET", "/rest/users/me", &token, None).json()["email"],
        "ann@example.com"
    );
}

/// The body of the newest outbox message to `to` whose body contains `marker`.
fn mailed(app: &TestApp, to: &str, marker: &str) -> String {
    outbox(app, to)
        .into_iter()
        .map(|m| m.body)
        .rfind(|b| b.contains(marker))
        .unwrap_or_else(|| panic!("no message to {to} with {marker}"))
}

#[test]
fn an_outside_recipient_proves_the_address_reads_the_message_and_downloads_its_file() {
    let Some(chromedriver) = chromedriver() else {
        return;
    };
    let app = TestApp::spawn();
    let (_, token) = app.user_token("ann@example.com", Role::User);
    let bytes = b"figures for the quarter: 1, 2, 3\n".to_vec();
    let me = app.rest("GET", "/rest/users/me", &token, None).json();
    let r = app.upload(
        &token,
        me["syncdirId"].as_str().unwrap(),
        "figures.txt",
        &bytes,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let file = r.json()["id"].as_str().unwrap().to_string();
    let r = app.rest(
        "POST",
        "/rest/mail/actions/sendFile",
        &token,
        Some(json!({"to": ["out@partner.example"], "subject": "Quarter", "body": "the <b>secret</b> figures",
                    "secureBody": true, "files": [file], "acl": "verify_recipient"})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["id"].as_str().unwrap().to_string();
    let marker = format!("/mail/{id}?ref=");
    let message = mailed(&app, "out@partner.example", &marker);
    let at = message.find(&marker).unwrap();
    let link: String = message[at..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();

    let browser = Driver::start(&chromedriver);
    browser.go(&format!("{}{link}", app.base));
    // The first page asks for a code and shows nothing of the message.
    let ask = browser.find("#send-code");
    assert_eq!(browser.text(&ask), "Send me a code");
    assert!(!browser.text(&browser.find("main")).contains("secret"));
    browser.click(&ask);

    // The code arrives by mail; the person types it in.
    let field = browser.find("#code");
    let body = mailed(&app, "out@partner.example", "Your code");
    let at = body.find(" is ").unwrap() + 4;
    let code = &body[at..at + 6];
    browser.type_into(&field, code);
    browser.click(&browser.find("#verify"));

    // The message, with its body as formatted text and its file.
    let shown = browser.text(&browser.find("#body"));
    assert_eq!(shown, "the secret figures");
    assert_eq!(browser.text(&browser.find("#subject")), "Quarter");
    assert!(
        browser.current_url().ends_with(&link),
        "{}",
        browser.current_url()
    );
    let download = browser.find("a.download");
    assert_eq!(browser.text(&download), "figures.txt");
    browser.click(&download);

    // The browser saves the file: the same bytes. It may name the file before it has written
    // it, so the wait is for the whole length.
    let saved = browser.downloads.path().join("figures.txt");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::metadata(&saved).is_ok_and(|m| m.len() >= bytes.len() as u64) {
        assert!(
            Instant::now() < deadline,
            "no download in {:?}",
            std::fs::read_dir(browser.downloads.path()).map(|d| d.count())
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(std::fs::read(&saved).unwrap(), bytes);
    assert_eq!(
        app.count(
            "subject = 'mail.attachment.download' AND data LIKE '%out@partner.example%'",
            "events"
        ),
        1
    );
}

#[test]
fn a_person_fills_in_a_web_form_with_a_file_and_the_owner_finds_it_in_the_inbox() {
    let Some(chromedriver) = chromedriver() else {
        return;
    };
    let app = TestApp::spawn();
    let (_, token) = app.user_token("ann@example.com", Role::User);
    let form = coffer_service::web_forms::create(
        &app.ctx,
        &coffer_service::web_forms::FormInput {
            name: Some("Contact us".into()),
            owner: Some("ann@example.com".into()),
            fields: Some(json!([
                {"id": "name", "label": "Your name", "type": "text", "required": true},
                {"id": "topic", "label": "Topic", "type": "select", "options": ["Billing", "Support"]},
                {"id": "message", "label": "Message", "type": "textarea"},
                {"id": "agree", "label": "I agree", "type": "checkbox", "required": true},
            ])),
            ..Default::default()
        },
    )
    .expect("create form")
    .form;
    // Small chunks, so that the page's script sends the file in several.
    app.ctx
        .with_conn(|c| {
            Ok(coffer_store::settings::put(
                c,
                "uploadChunkMax",
                "65536",
                0,
            )?)
        })
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let upload = dir.path().join("receipt.txt");
    let bytes: Vec<u8> = (0..200_000u32)
        .map(|i| b"receipt no. 42\n"[i as usize % 15])
        .collect();
    std::fs::write(&upload, &bytes).unwrap();

    let browser = Driver::start(&chromedriver);
    browser.go(&form.url);
    assert_eq!(browser.text(&browser.find("#form-name")), "Contact us");
    browser.type_into(&browser.find("#field-name"), "Vic Visitor");
    browser.click(&browser.find("#field-topic option[value='Support']"));
    browser.type_into(&browser.find("#field-message"), "My receipt, attached.");
    browser.click(&browser.find("#field-agree"));
    browser.type_into(&browser.find("#files"), upload.to_str().unwrap());
    browser.click(&browser.find("#submit"));
    let thanks = browser.find("#thanks");
    assert!(browser.text(&thanks).starts_with("Thank you"));

    // The owner's inbox has it, with the file.
    let r = app.rest(
        "GET",
        &format!("/rest/mail?webFormId={}", form.id),
        &token,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let m = r.json()["data"][0].clone();
    assert_eq!(
        m["webFormFields"],
        json!({"Your name": "Vic Visitor", "Topic": "Support", "Message": "My receipt, attached.", "I agree": "true"})
    );
    let id = m["id"].as_str().unwrap();
    let r = app.rest("GET", &format!("/rest/mail/{id}/attachments"), &token, None);
    let a = r.json()["data"][0].clone();
    assert_eq!(a["name"], "receipt.txt");
    let att = a["attachmentId"].as_str().unwrap();
    let r = app.rest(
        "GET",
        &format!("/rest/mail/{id}/attachments/{att}/content"),
        &token,
        None,
    );
    assert_eq!(r.bytes, bytes);
    // It came through the public upload, in four chunks, onto the submission's draft.
    assert_eq!(
        app.count(
            &format!("email_id = '{id}' AND uploaded_chunks = 4 AND result_file_id IS NOT NULL"),
            "uploads"
        ),
        1
    );
    assert_eq!(app.count("1 = 1", "web_form_drafts"), 0);
}

#[test]
fn the_reference_lists_the_operations() {
    let Some(chromedriver) = chromedriver() else {
        return;
    };
    let app = TestApp::spawn();
    let doc = app.send("GET", "/openapi.json", &[], None).json();
    let operations: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| item.as_object().unwrap().len())
        .sum();

    let browser = Driver::start(&chromedriver);
    // The viewer builds the page after it has read the document: wait for elements.
    call(
        &browser.agent,
        "POST",
        &browser.url("/timeouts"),
        Some(json!({"implicit": 60_000})),
    );
    browser.go(&format!("{}/docs", app.base));
    let title = browser.text(&browser.find(".information-container .title"));
    assert!(title.starts_with("Coffer"), "{title}");
    browser.find(".opblock");
    let script = |source: &str| {
        call(
            &browser.agent,
            "POST",
            &browser.url("/execute/sync"),
            Some(json!({"script": source, "args": []})),
        )["value"]
            .clone()
    };
    // Every operation of the document is on the page, each with its summary.
    let deadline = Instant::now() + Duration::from_secs(60);
    let shown = loop {
        let shown = script("return document.querySelectorAll('.opblock').length")
            .as_u64()
            .unwrap() as usize;
        if shown >= operations || Instant::now() > deadline {
            break shown;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(shown, operations);
    let summary = script(
        "return [...document.querySelectorAll('.opblock-summary-description')].map(e => e.textContent)",
    );
    assert!(
        summary
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "Current user"),
        "{summary}"
    );
    // The stylesheet applied: the policy let this server's styles in.
    let colour = script(
        "return getComputedStyle(document.querySelector('.opblock-summary-method')).backgroundColor",
    );
    assert_ne!(colour, json!("rgba(0, 0, 0, 0)"), "{colour}");
}
