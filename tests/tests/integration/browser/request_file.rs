//! The recipient's page of a request-file link in a real browser (docs/request-files.md, "The
//! recipient's page"): a recipient opens the link from the delivered mail, sends two files (one
//! in several chunks) and a reply, and the files arrive in the folder byte for byte; a link that
//! needs proof of the address takes the mailed code; expired, withdrawn, exhausted and unknown
//! links say so; and the page's policy refuses nothing the page does (no violation in the
//! console).

use super::{chromedriver, Driver};
use coffer_tests::TestApp;
use std::time::{Duration, Instant};

/// Waits until the page's script has shown what the link opens (`data-ready`), and answers
/// that state (`active`, `exhausted`, `expired`, …).
fn settled(browser: &Driver) -> String {
    let root = browser.find("#request-file[data-ready=true]");
    browser.attribute(&root, "data-state")
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
    // The console only has the refused call (404), nothing the policy refused.
    let (refused, errors): (Vec<String>, Vec<String>) = console_errors(&browser)
        .into_iter()
        .partition(|m| m.contains("/rest/requestFile/") && m.contains("404"));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(refused.len(), 1, "{refused:?}");
}
