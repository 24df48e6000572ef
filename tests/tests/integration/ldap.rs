//! Directory lookup against a real OpenLDAP server: `scripts/ldap-test-server.sh` starts slapd
//! with a few entries and sets `COFFER_TEST_LDAP_*`; `.ci/run` runs this suite that way. Without
//! the variables (no directory here) the test says so and passes; the local-user lookup is covered
//! in `accounts.rs`.

use coffer_domain::Role;
use coffer_service::platform::directory::LdapConfig;
use coffer_tests::TestApp;
use serde_json::json;

fn directory() -> Option<LdapConfig> {
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
    Some(LdapConfig {
        url: var("COFFER_TEST_LDAP_URL")?,
        bind_dn: var("COFFER_TEST_LDAP_BIND_DN"),
        bind_password: var("COFFER_TEST_LDAP_BIND_PASSWORD"),
        base_dn: var("COFFER_TEST_LDAP_BASE_DN")?,
        mail_attribute: "mail".into(),
        name_attribute: "cn".into(),
        timeout: std::time::Duration::from_secs(5),
    })
}

#[test]
fn ldap_search_reads_the_directory_and_escapes_input() {
    let Some(cfg) = directory() else {
        eprintln!("no LDAP directory here: run scripts/ldap-test-server.sh, which starts one, to run this test");
        return;
    };
    let app = TestApp::builder().config(|c| c.ldap = Some(cfg)).spawn();
    // A local user who is not in the directory: the directory answers, not the local users.
    let (_, t) = app.user_token("annika@example.com", Role::User);

    let r = app.rest("GET", "/rest/users/ldapSearch?value=ann", &t, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json()["matches"],
        json!([{"email": "ann.directory@example.org", "name": "Ann Directory"}])
    );

    let by_name = app
        .rest("GET", "/rest/users/ldapSearch?value=builder", &t, None)
        .json();
    assert_eq!(by_name["matches"][0]["email"], "bob.builder@example.org");

    // LDAP filter characters are matched literally: `*` finds the one entry whose name has it,
    // and an injection attempt finds nothing instead of everything.
    let star = app
        .rest("GET", "/rest/users/ldapSearch?value=%2A", &t, None)
        .json();
    assert_eq!(
        star["matches"],
        json!([{"email": "anton@example.org", "name": "Anton Star (*)"}])
    );
    let injection = app.rest(
        "GET",
        "/rest/users/ldapSearch?value=%2A%29%28uid%3D%2A",
        &t,
        None,
    );
    assert_eq!(injection.status, 200);
    assert_eq!(injection.json()["matches"], json!([]));

    // An unreachable directory is a clear 503, not a 500.
    let down = TestApp::builder()
        .config(|c| {
            c.ldap = Some(LdapConfig {
                url: "ldap://127.0.0.1:1".into(),
                ..directory().unwrap()
            })
        })
        .spawn();
    let (_, t2) = down.user_token("zed@example.com", Role::User);
    let r = down.rest("GET", "/rest/users/ldapSearch?value=ann", &t2, None);
    assert_eq!(
        (r.status, r.code()),
        (503, "ERR_SERVICE_UNAVAILABLE".to_string())
    );
}
