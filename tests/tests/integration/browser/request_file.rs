//! The recipient's page of a request-file link in a real browser (docs/request-files.md, "The
//! recipient's page"): a recipient opens the link from the delivered mail, sends two files (one
//! in several chunks) and a reply, and the files arrive in the folder byte for byte; a link that
//! needs proof of the address takes the mailed code; expired, withdrawn, exhausted and unknown
//! links say so; and the page's policy refuses nothing the page does (no violation in the
//! console).

use super::{chromedriver, mailed, Driver};
use coffer_domain::Role;
use coffer_tests::{mkdir, my_folder, upload_ok, TestApp};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const OUTSIDE: &str = "out@partner.example";

/// A 1×1 PNG: a type a view-only link shows in place.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

/// Waits until the page's script has shown what the link opens (`data-ready`), and answers
/// that state (`active`, `exhausted`, `expired`, …).
fn settled(browser: &Driver) -> String {
    let root = browser.find("#request-file[data-ready=true]");
    let state = browser.attribute(&root, "data-state");
    // The page's main element carries the same state, for whoever reads the page.
    assert_eq!(
        browser.attribute(&browser.find("main"), "data-state"),
        state
    );
    state
}

/// The console messages that are errors or name the page's policy: none is expected.
fn console_errors(browser: &Driver) -> Vec<String> {
    browser
        .console()
        .into_iter()
        .filter(|m| {
            let text = m["message"].as_str().unwrap_or_default();
            // The browser asks for an icon by itself; the page names none.
            !text.contains("/favicon.ico")
                && (m["level"] == "SEVERE" || text.contains("Content Security Policy"))
        })
        .map(|m| m.to_string())
        .collect()
}

/// Polls `f` until it holds (a generous bound: the machine may be busy).
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_link_that_opens_nothing_says_so_and_the_page_breaks_no_policy() {
    let Some(chromedriver) = chromedriver() else {
        return;
    };
    let app = TestApp::spawn();
    let browser = Driver::start(&chromedriver);
    browser.go(&format!(
        "{}/requestFile/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        app.base
    ));
    assert_eq!(settled(&browser), "invalid");
    assert_eq!(
        browser.text(&browser.find("#state-title")),
        "Link not valid"
    );
    assert!(browser
        .text(&browser.find("#state-message"))
        .contains("whole link"));
    // The request's parts stay hidden.
    assert_eq!(browser.text(&browser.find("#request")), "");
    // The style sheet applied (a file of this origin, as the policy allows).
    let colour =
        browser.script("return getComputedStyle(document.querySelector('#state-message')).color");
    assert_eq!(colour, "rgb(170, 0, 0)");
    // The page's script ran and hid the note for browsers without it.
    eventually("the note hidden", || {
        browser.script("return document.getElementById('noscript-note').hidden") == true
    });
    // The console only has the refused read, nothing the policy refused.
    let (refused, errors): (Vec<String>, Vec<String>) = console_errors(&browser)
        .into_iter()
        .partition(|m| m.contains("/rest/requestFile/") && m.contains("Failed to load resource"));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(refused.len(), 1, "{refused:?}");
}

/// Asks `OUTSIDE` for files into `folder` and answers the link the mail carries.
fn request(app: &TestApp, token: &str, folder: &str, body: Value) -> String {
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{folder}/actions/requestFile"),
        token,
        Some(body),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let reference = r.json()["data"][0]["ref"].as_str().unwrap().to_string();
    let marker = format!("/requestFile/{reference}");
    let mail = mailed(app, OUTSIDE, &marker);
    let at = mail.find("http").expect("a link in the mail");
    let link: String = mail[at..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    assert!(link.ends_with(&marker), "{link}");
    link
}

/// The files of `folder`: name and id.
fn files_in(app: &TestApp, token: &str, folder: &str) -> Vec<(String, String)> {
    let r = app.rest("GET", &format!("/rest/folders/{folder}/files"), token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let mut out: Vec<(String, String)> = r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_recipient_sends_two_files_and_a_reply_through_the_page_and_they_arrive_whole() {
    let Some(chromedriver) = chromedriver() else {
        return;
    };
    let app = TestApp::spawn();
    let (_, token) = app.user_token("ann@example.com", Role::User);
    let home = my_folder(&app, &token);
    let folder = mkdir(&app, &token, &home, "Contracts");
    let offered = upload_ok(&app, &token, &home, "terms.txt", b"the terms\n");
    // Small chunks, so that the page sends the larger file in several.
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
    let link = request(
        &app,
        &token,
        &folder,
        json!({"to": [OUTSIDE], "subject": "Signed contract", "body": "Please send the signed <b>contract</b>.",
               "count": 5, "files": [offered["id"]], "actionId": 2}),
    );
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("note.txt");
    std::fs::write(&small, b"signed, see the scan\n").unwrap();
    let large = dir.path().join("scan.bin");
    let large_bytes: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&large, &large_bytes).unwrap();

    let browser = Driver::start(&chromedriver);
    browser.go(&link);
    assert_eq!(settled(&browser), "active");
    assert_eq!(browser.text(&browser.find("#subject")), "Signed contract");
    // The message with its formatting, and nothing else of its markup.
    assert_eq!(
        browser.text(&browser.find("#message")),
        "Please send the signed contract."
    );
    assert_eq!(browser.text(&browser.find("#message b")), "contract");
    assert!(browser
        .text(&browser.find("#from"))
        .contains("ann@example.com"));
    assert_eq!(
        browser.text(&browser.find("#remaining")),
        "5 of 5 file(s) can still be sent."
    );
    let offered_link = browser.find("#source-list a.download");
    assert_eq!(browser.text(&offered_link), "terms.txt");

    // Both files at once (WebDriver takes several paths, one a line).
    browser.type_into(
        &browser.find("#files"),
        &format!("{}\n{}", small.display(), large.display()),
    );
    browser.click(&browser.find("#send"));
    let status = browser.find("#upload-status");
    eventually("both files sent", || {
        browser.text(&status) == "2 file(s) sent."
    });
    eventually("the count updated", || {
        browser.text(&browser.find("#remaining")) == "3 of 5 file(s) can still be sent."
    });
    let states = browser.script(
        "return [...document.querySelectorAll('#progress li')].map(li => li.className + ':' + li.querySelector('progress').value)",
    );
    assert_eq!(
        states,
        json!([
            format!("sent:{}", 21),
            format!("sent:{}", large_bytes.len())
        ])
    );

    // The reply.
    browser.type_into(&browser.find("#reply-body"), "Here you are.");
    browser.click(&browser.find("#reply-send"));
    browser.find("#request-file[data-replied=true]");
    assert!(browser
        .text(&browser.find("#replied"))
        .starts_with("Your reply has been sent"));

    // The files are in the folder, byte for byte, named with the sender's address; the larger
    // came in four chunks.
    let files = files_in(&app, &token, &folder);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            format!("note ({OUTSIDE}).txt"),
            format!("scan ({OUTSIDE}).bin")
        ]
    );
    for ((_, id), want) in files
        .iter()
        .zip([&b"signed, see the scan\n"[..], &large_bytes])
    {
        let r = app.rest("GET", &format!("/rest/files/{id}/content"), &token, None);
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.bytes, want);
    }
    assert_eq!(
        app.count(
            "total_chunks = 4 AND uploaded_chunks = 4 AND result_file_id IS NOT NULL",
            "uploads"
        ),
        1
    );
    // The reply reached the requestor.
    assert_eq!(
        app.count("kind = 'reply' AND body = 'Here you are.'", "emails"),
        1
    );
    let errors = console_errors(&browser);
    assert!(errors.is_empty(), "{errors:?}");
}

/// Sends one file through link `reference` as a program would (the reference only).
fn send_file(app: &TestApp, reference: &str, name: &str, bytes: &[u8]) {
    let (ct, body) = coffer_tests::multipart(&[("body", Some(name), bytes)]);
    let r = app.send(
        "POST",
        &format!("/rest/requestFile/{reference}/actions/file"),
        &[("X-Coffer-Version", "28")],
        Some(coffer_tests::Body::Bytes(ct, body)),
    );
    assert_eq!(r.status, 200, "{}", r.text);
}

/// The reference at the end of a link.
fn reference_of(link: &str) -> String {
    link.rsplit('/').next().unwrap().to_string()
}

#[test]
fn exhausted_withdrawn_and_expired_links_say_so_on_the_page() {
    let Some(chromedriver) = chromedriver() else {
        return;
    };
    let app = TestApp::spawn();
    let (_, token) = app.user_token("ann@example.com", Role::User);
    let folder = mkdir(&app, &token, &my_folder(&app, &token), "Incoming");
    let ask = |subject: &str| {
        request(
            &app,
            &token,
            &folder,
            json!({"to": [OUTSIDE], "subject": subject, "count": 1}),
        )
    };
    let exhausted = ask("One file");
    send_file(&app, &reference_of(&exhausted), "only.txt", b"the one file");
    let withdrawn = ask("Withdrawn");
    let r = app.rest(
        "DELETE",
        &format!("/rest/requestFile/{}", reference_of(&withdrawn)),
        &token,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let expired = ask("Expired");
    // Past its last day: the link's end moved into the past, as time would.
    app.execute(
        "UPDATE request_files SET expire_at = 1 WHERE id = (SELECT MAX(id) FROM request_files)",
    );

    let browser = Driver::start(&chromedriver);
    // Exhausted: the request is still shown, with a notice instead of the upload.
    browser.go(&exhausted);
    assert_eq!(settled(&browser), "exhausted");
    assert_eq!(browser.text(&browser.find("#subject")), "One file");
    assert!(browser
        .text(&browser.find("#exhausted"))
        .starts_with("You have sent all the files this request takes"));
    assert_eq!(
        browser.script("return document.getElementById('upload-form').hidden"),
        json!(true)
    );
    assert_eq!(
        browser.text(&browser.find("#remaining")),
        "0 of 1 file(s) can still be sent."
    );

    for (link, state, title, words) in [
        (
            &withdrawn,
            "withdrawn",
            "Request withdrawn",
            "has withdrawn this request",
        ),
        (&expired, "expired", "Request expired", "has expired"),
    ] {
        browser.go(link);
        assert_eq!(settled(&browser), state);
        assert_eq!(browser.text(&browser.find("#state-title")), title);
        assert!(
            browser
                .text(&browser.find("#state-message"))
                .contains(words),
            "{state}"
        );
        assert_eq!(browser.text(&browser.find("#request")), "");
    }
    // The refused reads (403) are all the console has.
    let errors: Vec<String> = console_errors(&browser)
        .into_iter()
        .filter(|m| !m.contains("403"))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn a_link_that_wants_proof_of_the_address_opens_with_the_mailed_code() {
    let Some(chromedriver) = chromedriver() else {
        return;
    };
    let app = TestApp::spawn();
    let (_, token) = app.user_token("ann@example.com", Role::User);
    let home = my_folder(&app, &token);
    let folder = mkdir(&app, &token, &home, "Incoming");
    let offered = upload_ok(&app, &token, &home, "plan.png", PNG);
    let notes = upload_ok(
        &app,
        &token,
        &home,
        "notes.html",
        b"<b>Read</b> me <script>alert(1)</script>",
    );
    let archive = upload_ok(&app, &token, &home, "bundle.zip", b"PK\x03\x04 not much");
    // The previews settle (the archive has none).
    app.run_jobs();
    // The offered files may be viewed, not downloaded.
    let link = request(
        &app,
        &token,
        &folder,
        json!({"to": [OUTSIDE], "subject": "Proof first", "requireAuth": true,
               "files": [offered["id"], notes["id"], archive["id"]], "actionId": 1}),
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("id.txt");
    std::fs::write(&file, b"it is me").unwrap();

    let browser = Driver::start(&chromedriver);
    browser.go(&link);
    // Nothing of the request before the code.
    assert_eq!(settled(&browser), "auth");
    assert_eq!(browser.text(&browser.find("#request")), "");
    browser.click(&browser.find("#send-code"));
    let notice = browser.find("#auth-notice");
    eventually("the code sent", || {
        browser
            .text(&notice)
            .starts_with("A 6-digit code is being mailed to")
    });
    let field = browser.find("#code");
    let body = mailed(&app, OUTSIDE, "Your code");
    let at = body.find(" is ").unwrap() + 4;
    let code = body[at..at + 6].to_string();
    // A wrong code first: the page says so and stays.
    let wrong = if code == "000000" { "111111" } else { "000000" };
    browser.type_into(&field, wrong);
    browser.click(&browser.find("#verify"));
    let status = browser.find("#auth-status");
    eventually("the refusal", || {
        browser.text(&status).contains("not right") || browser.text(&status).contains("invalid")
    });
    browser.script("document.getElementById('code').value = ''; return null");
    browser.type_into(&field, &code);
    browser.click(&browser.find("#verify"));
    eventually("the request", || {
        browser.attribute(&browser.find("#request-file"), "data-state") == "active"
    });
    assert_eq!(browser.text(&browser.find("#subject")), "Proof first");
    // View-only files: their names, no download link, and each shown in place as it can be:
    // the image in the page, the markup as its text (nothing of it run), the archive not at all.
    eventually("the views", || {
        browser.script("return document.querySelectorAll('#source-list li[data-view]').length")
            == json!(3)
    });
    let item = browser.find("#source-list li[data-view=image]");
    assert!(browser
        .text(&item)
        .starts_with(&format!("plan.png ({} bytes, view only)", PNG.len())));
    assert_eq!(
        browser.script("return document.querySelectorAll('#source-list a.download').length"),
        json!(0)
    );
    let views = browser.script(
        "return [...document.querySelectorAll('#source-list li.source')].map(li => li.querySelector('.name').textContent + ':' + li.getAttribute('data-view')).sort()",
    );
    assert_eq!(
        views,
        json!(["bundle.zip:none", "notes.html:text", "plan.png:image"])
    );
    eventually("the image drawn", || {
        browser.script("return document.querySelector('#source-list img.image-view').naturalWidth")
            == json!(1)
    });
    assert_eq!(
        browser.text(&browser.find("#source-list pre.text-view")),
        "<b>Read</b> me <script>alert(1)</script>"
    );
    assert_eq!(
        browser.script(
            "return document.querySelectorAll('#source-list li b, #source-list li script').length"
        ),
        json!(0)
    );
    assert!(browser
        .text(&browser.find("#source-list li[data-view=none]"))
        .contains("No preview available."));

    browser.type_into(&browser.find("#files"), file.to_str().unwrap());
    browser.click(&browser.find("#send"));
    let status = browser.find("#upload-status");
    eventually("the file sent", || {
        browser.text(&status) == "1 file(s) sent."
    });
    let files = files_in(&app, &token, &folder);
    assert_eq!(files.len(), 1);
    let r = app.rest(
        "GET",
        &format!("/rest/files/{}/content", files[0].1),
        &token,
        None,
    );
    assert_eq!(r.bytes, b"it is me");
}
