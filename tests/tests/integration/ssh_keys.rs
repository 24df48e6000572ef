//! SSH public keys end to end: registering, generating, listing and deleting a user's keys and an
//! administrator's calls for an account; the keys refused (type, size, format, a key live
//! elsewhere, names), the SFTP gate on the account the keys belong to, the rate limit of
//! generation, the events, and what is stored afterwards.

use coffer_domain::Role;
use coffer_tests::{assert_error, TestApp};
use serde_json::{json, Value};

// Keys made with `ssh-keygen`, with the fingerprints `ssh-keygen -l -E sha256` shows for them.
const ED25519: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFr4ud3uJcyiR7LdlN4QmaZmE1QoFOotlovlZ4EYxSCU ked25519";
const ED25519_FP: &str = "SHA256:yHbYKbzlayPksldW2KosZn1gk6Pe5g16LC51yk/trf0";

const ECDSA_256: &str = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBFctZMDWjBPN5KGs4dRpG5TPd5EEDZ1HtZ+8gFYkf9RKAC/5o8ZfN8filMqmRzh3lyC5WeV81JUupP4PYC3kaXU= kecdsab256";
const ECDSA_256_FP: &str = "SHA256:JT2JQ/E+WnRjMG6G/oGfA2akyxXjnzYw6qNuaVqm9rs";

const ECDSA_384: &str = "ecdsa-sha2-nistp384 AAAAE2VjZHNhLXNoYTItbmlzdHAzODQAAAAIbmlzdHAzODQAAABhBH2CDdihvpWZ3655u1c1lsjg8yqjtTwvcQWg5p+kWiKY95RuJZILPrqzRYBHiwokBSItBGQWH5483rXL/47cBLgH310M2QBVdYqOXucHfryED83SUJcsECtXSPVyzjEwmw== kecdsab384";
const ECDSA_384_FP: &str = "SHA256:y6j7UfHeosu2ACZUS6h1Vw9Mj6N2f5AAcu0xzKJqTTc";

const ECDSA_521: &str = "ecdsa-sha2-nistp521 AAAAE2VjZHNhLXNoYTItbmlzdHA1MjEAAAAIbmlzdHA1MjEAAACFBACXP5bYon2qWtn7/1gbSEFcfWJqEjEAqU+NfwxBTWZOkuDVSuK+FsLjy9TNU8sdQzSDTDQTf/digbBrIsvEiN14YAFe63ik15BouHBlt4i8aEn5Wp06RHZOjos2D6ii3DohbhnIfZGGOSi/v2AKQrtU9+AEOCa6UiBC49Ms0QVcBRDDWQ== kecdsab521";
const ECDSA_521_FP: &str = "SHA256:3tH4SswbCJahYFOqBjDriw/k/owYK2eOy9/ZKj9CsYI";

const RSA_2048: &str = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDp1ZO3fo68F+D/9wicGG627EL/pUB1abI+QuE0zqtLhnTscX7OaqnpvAlufHxWg79FZb2I8T2vToRI9Tns4jfQodPnGaFPrjUixXIEd/5kazYAT8lLOieGxlubJGc+5ytra6W0Z5Tgk555wocrsyHjM/KFSEQnBjxJK4vrT4oVHLE9RD0zGhjs7E4jN9yZwjxmENVHtlRULbbFXixTaetaGHqojQCg8UeaF713HsZFm6+CsZMt8/L73s1ExXk+OlnbmfVWSDHjEvS5276uLW2N4YB46wfbdqE1A/YcIEd/+q4vm2qpkes0+9RNxhTdo0h8gyHyS/eCm8RRqwKqK8hh krsab2048";
const RSA_2048_FP: &str = "SHA256:xIKw0JyxNUA7sG+t1nvTjzAAiLY4e05YkXSYjqlwpYU";

const RSA_1024: &str = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDhK3Z+uNBqkrTAqjGNSWwm0hzT14ul1b3Jk3IaMFJlJkCh+wtJtBK4bdQ+b5CmTMIFYyCAtV2ZleI93xCyiClBXmyiMFxNSaLYI5oquOlT/pDd1DPtqu0pkxx3JW3dHyzkHIB56bsp2utLFKnmF3gk3luHEj4ff0mlyAQynFJO+Q== krsab1024";

const DSA: &str = "ssh-dss AAAAB3NzaC1kc3MAAACBAPJft3DTFhedob8qsUrEBNf9NWMG28lszKRFZmv50eDysijkUE2vGWUj/6LDc32+Q0uxw9eP7gqclphTlRzR2WJXCl4aK6Suh0/yUleSojiUzk1xbfywGhcHeOq2+HN/KHlLOn//SBktfgV87zrUZMtYIe7gWRSK1id8M75MlbwrAAAAFQDH1F3nDHlhRc1nUOa41sp52Oa/OQAAAIEAloGUMZTzdjC5rgBB0Pa/NFMrMvK24lS+zRNyp8edVm/tWnhaJxY3PrHwk2i/XX8mnLfxqlRfLz55A+wTJyf2aYX38Yv/SDA+hlPUzqsB7pm83OZK96pNWYchwj/teFr9lx757FfHv25zMDrDJlrjvArEDZYMdR212/CYQL1qDNUAAACBAOJAoqqs9O8i4QneuoPF/oDXtiofCXOfGBltQd7vGBkuuu6euWRFUFm0Ed3ZsnJHO9O1PkY40gtbTMS8biHBkl473PKisZzJZH+nHef4MPVA1WUJrYNcknZOdNZ4+tUQgP46hfRDyClSE0k0Bn4KbFZAhAvUNy5jXXgW5pafUFIZ kdsa";

fn create(app: &TestApp, token: &str, name: &str, key: &str) -> coffer_tests::Resp {
    app.rest(
        "POST",
        "/rest/userSshPublicKeys/create",
        token,
        Some(json!({"name": name, "publicKey": key})),
    )
}

fn keys(app: &TestApp, token: &str) -> Vec<Value> {
    let r = app.rest("GET", "/rest/userSshPublicKeys", token, None);
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    assert_eq!(
        v["metadata"]["total"].as_u64().unwrap() as usize,
        v["data"].as_array().unwrap().len(),
        "{v}"
    );
    v["data"].as_array().unwrap().clone()
}

fn stored(app: &TestApp, user: &str) -> i64 {
    app.count(&format!("user_id = '{user}' AND NOT deleted"), "ssh_keys")
}

fn events(app: &TestApp, subject: &str) -> i64 {
    app.count(&format!("subject = '{subject}'"), "events")
}

#[test]
fn a_key_is_registered_listed_and_deleted() {
    let app = TestApp::spawn();
    let (uid, token) = app.user_token("keys@example.com", Role::User);
    let r = create(&app, &token, "laptop", ED25519);
    assert_eq!(r.status, 201, "{}", r.text);
    let k = r.json();
    let id = k["id"].as_i64().unwrap();
    assert_eq!(
        r.header("location"),
        Some(format!("{}/rest/userSshPublicKeys/{id}", app.base).as_str())
    );
    assert_eq!(k["userId"], uid.as_str());
    assert_eq!(k["name"], "laptop");
    assert_eq!(k["publicKey"], ED25519);
    assert_eq!(k["fingerprint"], ED25519_FP);
    assert_eq!(k["active"], true);
    assert_eq!(k["adminActive"], true);
    assert!(
        k["created"].as_str().is_some_and(|c| c.contains('T')),
        "{k}"
    );
    assert!(k.get("deleted").is_none(), "{k}");
    assert_eq!(events(&app, "ssh.key.create"), 1);

    let listed = keys(&app, &token);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0], k);

    let r = app.rest(
        "DELETE",
        &format!("/rest/userSshPublicKeys/{id}"),
        &token,
        None,
    );
    assert_eq!(r.status, 204, "{}", r.text);
    assert!(keys(&app, &token).is_empty());
    assert_eq!(stored(&app, &uid), 0);
    assert_eq!(events(&app, "ssh.key.delete"), 1);
    // Deleted once; the row stays for the administrator's list.
    let again = app.rest(
        "DELETE",
        &format!("/rest/userSshPublicKeys/{id}"),
        &token,
        None,
    );
    assert_error(&again, 403, "ERR_ENTITY_DELETED");
    assert_eq!(events(&app, "ssh.key.delete"), 1);
    let admin = app.admin_token();
    let r = app.rest(
        "GET",
        &format!("/rest/admin/users/{uid}/userSshPublicKeys"),
        &admin,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let all = r.json()["data"].as_array().unwrap().clone();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["deleted"], true);
    assert_eq!(all[0]["id"], id);

    // A deleted key's name and key are free again.
    let r = create(&app, &token, "laptop", ED25519);
    assert_eq!(r.status, 201, "{}", r.text);
    assert_ne!(r.json()["id"], id);
}

#[test]
fn every_accepted_type_is_taken_and_the_others_are_refused() {
    let app = TestApp::spawn();
    let (uid, token) = app.user_token("types@example.com", Role::User);
    for (i, (key, fp)) in [
        (ED25519, ED25519_FP),
        (ECDSA_256, ECDSA_256_FP),
        (ECDSA_384, ECDSA_384_FP),
        (ECDSA_521, ECDSA_521_FP),
        (RSA_2048, RSA_2048_FP),
    ]
    .into_iter()
    .enumerate()
    {
        let r = create(&app, &token, &format!("key {i}"), key);
        assert_eq!(r.status, 201, "{key}: {}", r.text);
        assert_eq!(r.json()["fingerprint"], fp);
    }
    assert_eq!(stored(&app, &uid), 5);
    let garbled = ED25519.replace("AAAAC3", "AAAAC4");
    let two_lines = format!("{ECDSA_256}\n{ED25519}");
    let no_type = ED25519.split(' ').nth(1).unwrap().to_string();
    for (what, key) in [
        ("RSA of 1024 bits", RSA_1024),
        ("DSA", DSA),
        ("garbled base64", garbled.as_str()),
        ("no type", no_type.as_str()),
        ("a private key", "-----BEGIN OPENSSH PRIVATE KEY-----"),
    ] {
        let r = create(&app, &token, "refused", key);
        assert_error(&r, 422, "ERR_INVALID_PARAMETER");
        assert_eq!(r.json()["errors"][0]["field"], "publicKey", "{what}");
    }
    // Two lines are refused by the body's own check of control characters.
    let r = create(&app, &token, "refused", &two_lines);
    assert_error(&r, 422, "ERR_INPUT_INVALID_FORMAT");
    assert_eq!(stored(&app, &uid), 5);
    assert_eq!(events(&app, "ssh.key.create"), 5);
}

#[test]
fn names_are_short_and_unique_and_a_key_names_one_account() {
    let app = TestApp::spawn();
    let (a, alice) = app.user_token("alice@example.com", Role::User);
    let (b, bob) = app.user_token("bob@example.com", Role::User);
    let long = "n".repeat(51);
    let r = create(&app, &alice, &long, ED25519);
    assert_error(&r, 422, "ERR_INVALID_PARAMETER");
    assert_eq!(r.json()["errors"][0]["field"], "name");
    let fifty = "é".repeat(50);
    assert_eq!(create(&app, &alice, &fifty, ED25519).status, 201);
    let r = create(&app, &alice, &fifty, ECDSA_256);
    assert_error(&r, 422, "ERR_SSH_PUBLIC_KEY_EXISTS");
    // The same key again, under another name or on another account.
    let r = create(&app, &alice, "again", ED25519);
    assert_error(&r, 422, "ERR_INVALID_PARAMETER");
    let r = create(&app, &bob, "mine", ED25519);
    assert_error(&r, 422, "ERR_INVALID_PARAMETER");
    // A name another account uses is free.
    assert_eq!(create(&app, &bob, &fifty, ECDSA_256).status, 201);
    let r = create(&app, &alice, "", ED25519);
    assert_error(&r, 422, "ERR_INPUT_REQUIRED");
    assert_eq!((stored(&app, &a), stored(&app, &b)), (1, 1));
}

#[test]
fn another_accounts_key_is_not_deleted() {
    let app = TestApp::spawn();
    let (_, alice) = app.user_token("alice@example.com", Role::User);
    let (b, bob) = app.user_token("bob@example.com", Role::User);
    let id = create(&app, &bob, "bob", ED25519).json()["id"]
        .as_i64()
        .unwrap();
    let r = app.rest(
        "DELETE",
        &format!("/rest/userSshPublicKeys/{id}"),
        &alice,
        None,
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    let r = app.rest("DELETE", "/rest/userSshPublicKeys/999999", &alice, None);
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    assert_eq!(stored(&app, &b), 1);
}

#[test]
fn the_sftp_gate_is_the_system_setting_the_role_and_the_profile_of_the_account() {
    let app = TestApp::spawn();
    let (uid, token) = app.user_token("gate@example.com", Role::User);
    let admin = app.admin_token();
    assert_eq!(create(&app, &token, "first", ED25519).status, 201);

    coffer_service::identity::settings::set(&app.ctx, "sftpEnabled", "false", None).unwrap();
    let r = create(&app, &token, "second", ECDSA_256);
    assert_error(&r, 403, "ERR_SYSTEM_ROLE_SFTP_DISABLED");
    let r = app.rest("GET", "/rest/userSshPublicKeys", &token, None);
    assert_error(&r, 403, "ERR_SYSTEM_ROLE_SFTP_DISABLED");
    let r = app.rest(
        "GET",
        &format!("/rest/admin/users/{uid}/userSshPublicKeys"),
        &admin,
        None,
    );
    assert_error(&r, 403, "ERR_SYSTEM_ROLE_SFTP_DISABLED");
    coffer_service::identity::settings::set(&app.ctx, "sftpEnabled", "true", None).unwrap();

    app.execute("UPDATE roles SET sftp_enabled = FALSE WHERE name = 'user'");
    let r = create(&app, &token, "second", ECDSA_256);
    assert_error(&r, 403, "ERR_SYSTEM_ROLE_SFTP_DISABLED");
    app.execute("UPDATE roles SET sftp_enabled = TRUE WHERE name = 'user'");

    // The restricted profile has no SFTP; the check is on the account the keys are of, not on
    // the administrator who calls.
    app.execute(&format!(
        "UPDATE users SET profile_id = 2 WHERE id = '{uid}'"
    ));
    let r = create(&app, &token, "second", ECDSA_256);
    assert_error(&r, 403, "ERR_PROFILE_SFTP_DISABLED");
    let id = keys_of_admin(&app, &admin, &uid, false);
    assert_eq!(id, None);
    let r = app.rest(
        "POST",
        &format!("/rest/admin/users/{uid}/userSshPublicKeys/create"),
        &admin,
        Some(json!({"name": "second", "publicKey": ECDSA_256})),
    );
    assert_error(&r, 403, "ERR_PROFILE_SFTP_DISABLED");
    let r = app.rest(
        "POST",
        "/rest/userSshPublicKeys/generate",
        &token,
        Some(json!({"name": "made"})),
    );
    assert_error(&r, 403, "ERR_PROFILE_SFTP_DISABLED");
    assert_eq!(stored(&app, &uid), 1);
}

/// The administrator's list of an account's keys: `Some(count)` when allowed, `None` on 403.
fn keys_of_admin(app: &TestApp, admin: &str, uid: &str, expect_ok: bool) -> Option<usize> {
    let r = app.rest(
        "GET",
        &format!("/rest/admin/users/{uid}/userSshPublicKeys"),
        admin,
        None,
    );
    if r.status == 200 {
        assert!(expect_ok, "{}", r.text);
        Some(r.json()["data"].as_array().unwrap().len())
    } else {
        assert_eq!(r.status, 403, "{}", r.text);
        None
    }
}

#[test]
fn a_generated_pair_is_answered_once_and_its_public_key_registered() {
    let app = TestApp::spawn();
    let (uid, token) = app.user_token("gen@example.com", Role::User);
    let r = app.rest(
        "POST",
        "/rest/userSshPublicKeys/generate",
        &token,
        Some(json!({"name": "made", "passphrase": "correct horse"})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let g = r.json();
    let private = g["privateKey"].as_str().unwrap();
    let public = g["publicKey"].as_str().unwrap();
    assert!(public.starts_with("ssh-ed25519 "), "{public}");
    let key = ssh_key::PrivateKey::from_openssh(private).unwrap();
    assert!(key.is_encrypted());
    assert!(key.decrypt("wrong").is_err());
    let key = key.decrypt("correct horse").unwrap();
    let line = key.public_key().to_openssh().unwrap();
    assert_eq!(line, public);
    let listed = keys(&app, &token);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["publicKey"], public);
    assert_eq!(
        listed[0]["fingerprint"],
        key.public_key()
            .fingerprint(ssh_key::HashAlg::Sha256)
            .to_string()
    );
    // The private key is nowhere in the database.
    let secret_part = private.lines().nth(2).unwrap();
    assert_eq!(
        app.count(&format!("public_key LIKE '%{secret_part}%'"), "ssh_keys"),
        0
    );
    assert_eq!(
        app.count(&format!("data LIKE '%{secret_part}%'"), "events"),
        0
    );

    // Without a passphrase the private key is not encrypted.
    let r = app.rest(
        "POST",
        "/rest/userSshPublicKeys/generate",
        &token,
        Some(json!({"name": "plain"})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let key = ssh_key::PrivateKey::from_openssh(r.json()["privateKey"].as_str().unwrap()).unwrap();
    assert!(!key.is_encrypted());
    let r = app.rest(
        "POST",
        "/rest/userSshPublicKeys/generate",
        &token,
        Some(json!({"name": "plain"})),
    );
    assert_error(&r, 422, "ERR_SSH_PUBLIC_KEY_EXISTS");
    let r = app.rest(
        "POST",
        "/rest/userSshPublicKeys/generate",
        &token,
        Some(json!({"name": "x", "passphrase": 5})),
    );
    assert_error(&r, 422, "ERR_INPUT_NOT_STRING");
    assert_eq!(stored(&app, &uid), 2);
}

#[test]
fn generating_is_rate_limited() {
    let app = TestApp::spawn();
    let (uid, token) = app.user_token("many@example.com", Role::User);
    let max = coffer_service::identity::ssh_keys::GENERATE_MAX as usize;
    for i in 0..max {
        let r = app.rest(
            "POST",
            "/rest/userSshPublicKeys/generate",
            &token,
            Some(json!({"name": format!("k{i}")})),
        );
        assert_eq!(r.status, 201, "{i}: {}", r.text);
    }
    let r = app.rest(
        "POST",
        "/rest/userSshPublicKeys/generate",
        &token,
        Some(json!({"name": "one too many"})),
    );
    assert!(r.rate_limited() > 0);
    assert_eq!(stored(&app, &uid) as usize, max);
}

#[test]
fn administrators_manage_an_accounts_keys() {
    let app = TestApp::spawn();
    let (uid, user) = app.user_token("target@example.com", Role::User);
    let (sys_id, _) = app.user_token("sys@example.com", Role::SystemAdmin);
    let (_, helpdesk) = app.user_token("help@example.com", Role::HelpdeskAdmin);
    let admin = app.admin_token();

    let r = app.rest(
        "POST",
        &format!("/rest/admin/users/{uid}/userSshPublicKeys/create"),
        &helpdesk,
        Some(json!({"name": "by helpdesk", "publicKey": ED25519})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["userId"], uid.as_str());
    let r = app.rest(
        "POST",
        &format!("/rest/admin/users/{uid}/userSshPublicKeys/generate"),
        &admin,
        Some(json!({"name": "by admin"})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(r.json()["privateKey"]
        .as_str()
        .unwrap()
        .starts_with("-----BEGIN OPENSSH PRIVATE KEY-----"));
    // The user sees both as their own.
    assert_eq!(keys(&app, &user).len(), 2);
    assert_eq!(keys_of_admin(&app, &helpdesk, &uid, true), Some(2));

    // A helpdesk administrator acts on plain users only; a plain user is no administrator.
    let r = app.rest(
        "POST",
        &format!("/rest/admin/users/{sys_id}/userSshPublicKeys/create"),
        &helpdesk,
        Some(json!({"name": "nope", "publicKey": ECDSA_256})),
    );
    assert_error(&r, 403, "ERR_ADMIN_ROLE_RANK_RESTRICTED");
    // The interface answers a caller who is no administrator `ERR_ACCESS_USER` on all three,
    // and nothing is made.
    let r = app.rest(
        "GET",
        &format!("/rest/admin/users/{uid}/userSshPublicKeys"),
        &user,
        None,
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    let r = app.rest(
        "POST",
        &format!("/rest/admin/users/{uid}/userSshPublicKeys/create"),
        &user,
        Some(json!({"name": "mine too", "publicKey": ECDSA_256})),
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    let r = app.rest(
        "POST",
        &format!("/rest/admin/users/{uid}/userSshPublicKeys/generate"),
        &user,
        Some(json!({"name": "mine too"})),
    );
    assert_error(&r, 403, "ERR_ACCESS_USER");
    assert_eq!(keys(&app, &user).len(), 2);
    let r = app.rest(
        "POST",
        "/rest/admin/users/no-such-user/userSshPublicKeys/create",
        &admin,
        Some(json!({"name": "nope", "publicKey": ECDSA_256})),
    );
    assert_error(&r, 404, "ERR_ENTITY_NOT_FOUND");
    assert_eq!(stored(&app, &uid), 2);
    assert_eq!(stored(&app, &sys_id), 0);
    // The events name who acted.
    assert_eq!(events(&app, "ssh.key.create"), 2);
}
