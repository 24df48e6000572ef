//! The activity log: records made in the transaction of each change, with the request's id;
//! refused actions recorded as unsuccessful; the hash chain, and `cofferd audit verify` (the
//! service's walk) finding a record changed, removed or inserted by hand in the database at the
//! right sequence number; signed checkpoints (which prove the tail) and retention; appends from
//! concurrent transactions (on PostgreSQL, connections of their own) never sharing a
//! predecessor.

use coffer_service::audit::{checkpoint, verify};
use coffer_tests::*;

/// The walk `cofferd audit verify` makes, with the key file's key when there is one.
fn walk(app: &TestApp, key: Option<&str>) -> verify::Report {
    verify::verify(&app.ctx, key).expect("verify runs")
}

/// The chain head's sequence number (the number of records appended).
fn head(app: &TestApp) -> i64 {
    app.count("TRUE", "activities")
}

/// An administrator's token and a few records: folders made in the caller's folder.
fn with_records(app: &TestApp, n: usize) -> String {
    let token = app.admin_token();
    let root = my_folder(app, &token);
    for i in 0..n {
        mkdir(app, &token, &root, &format!("f{i}"));
    }
    token
}

#[test]
fn every_change_is_recorded_with_its_request_id_and_the_chain_verifies() {
    let app = TestApp::spawn();
    let token = app.admin_token();
    let root = my_folder(&app, &token);
    let r = app.rest(
        "POST",
        &format!("/rest/folders/{root}/folders"),
        &token,
        Some(serde_json::json!({"name": "Reports"})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let folder = r.json()["id"].as_str().unwrap().to_string();
    let request = r.header("x-request-id").expect("request id").to_string();
    let admin_id = me(&app, &token)["id"].as_str().unwrap().to_string();
    assert_eq!(
        app.count(
            &format!(
                "event = 'filesystem.folder.create' AND kind = 'folder_changes' \
                 AND object_id = '{folder}' AND actor_id = '{admin_id}' \
                 AND transaction_id = '{request}' AND successful = TRUE \
                 AND message = 'Folder \"Reports\" created'"
            ),
            "activities"
        ),
        1
    );
    // Every event is an activity record: as many records as events.
    assert_eq!(head(&app), app.count("TRUE", "events"));
    // The actor is a direct user of the record.
    assert_eq!(
        app.count(
            &format!("user_id = '{admin_id}' AND direct = TRUE"),
            "activity_users"
        ),
        app.count(&format!("actor_id = '{admin_id}'"), "activities")
    );
    let rep = walk(&app, None);
    assert_eq!(rep.problem, None);
    assert_eq!(rep.records as i64, head(&app));
    assert_eq!(rep.first, 1);
    assert_eq!(rep.last, head(&app));
}

#[test]
fn a_failed_sign_in_is_recorded_as_unsuccessful() {
    let app = TestApp::spawn();
    let (id, _) = app.user("alice@example.com", coffer_domain::Role::User);
    let r = sign_in(&app, "alice@example.com", "not her password");
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        app.count(
            &format!(
                "event = 'user.login' AND successful = FALSE AND object_id = '{id}' \
                 AND kind = 'user_preferences'"
            ),
            "activities"
        ),
        1
    );
    // The refusal is under the account's activities.
    assert_eq!(
        app.count(
            &format!(
                "user_id = '{id}' AND direct = FALSE AND seq IN \
                 (SELECT seq FROM activities WHERE event = 'user.login')"
            ),
            "activity_users"
        ),
        1
    );
    assert_eq!(walk(&app, None).problem, None);
}

#[test]
fn verify_names_a_record_changed_by_hand() {
    let app = TestApp::spawn();
    with_records(&app, 5);
    let n = head(&app);
    assert!(n >= 5);
    let target = n - 2;
    app.execute(&format!(
        "UPDATE activities SET message = 'nothing happened' WHERE seq = {target}"
    ));
    assert_eq!(
        walk(&app, None).problem,
        Some(verify::Problem::Changed(target))
    );
}

#[test]
fn verify_names_a_record_whose_hash_was_rewritten() {
    let app = TestApp::spawn();
    with_records(&app, 4);
    let target = head(&app) - 1;
    // A forger who changes a record and its hash: the successor still links to the old hash.
    app.execute(&format!(
        "UPDATE activities SET hash = '{}' WHERE seq = {target}",
        "ab".repeat(32)
    ));
    assert_eq!(
        walk(&app, None).problem,
        Some(verify::Problem::Changed(target))
    );
}

#[test]
fn verify_names_a_record_removed_by_hand() {
    let app = TestApp::spawn();
    with_records(&app, 5);
    let target = head(&app) - 3;
    app.execute(&format!("DELETE FROM activities WHERE seq = {target}"));
    assert_eq!(
        walk(&app, None).problem,
        Some(verify::Problem::Removed(target))
    );
}

#[test]
fn verify_finds_the_last_record_removed_against_the_last_checkpoint() {
    let app = TestApp::spawn();
    let token = with_records(&app, 2);
    let dir = tempfile::tempdir().unwrap();
    let signer = checkpoint::Signer::open(&dir.path().join("audit.key")).unwrap();
    let key = signer.public_key();
    let c = checkpoint::checkpoint(&app.ctx, &signer).unwrap().unwrap();
    let last = head(&app);
    assert_eq!(c.seq, last);
    // Removed as a careless hand would: the record, not its rows by user (marked here, to see
    // that the next append's rows take their place).
    app.execute(&format!("DELETE FROM activities WHERE seq = {last}"));
    app.execute(&format!(
        "UPDATE activity_users SET direct = FALSE, created_at = 1 WHERE seq = {last}"
    ));
    assert_eq!(
        walk(&app, Some(&key)).problem,
        Some(verify::Problem::Removed(last))
    );
    // The next append takes the number of the removed record (the head is the last record),
    // which does not hash to the checkpoint's hash: still found, as that record changed. The
    // same user's change is not refused for the rows the removal left (it answers 201).
    mkdir(&app, &token, &my_folder(&app, &token), "after");
    assert_eq!(app.count(&format!("seq = {last}"), "activities"), 1);
    // The actor's row is the new record's: direct, and of its time.
    assert_eq!(
        app.count(
            &format!(
                "seq = {last} AND direct = TRUE AND created_at = \
                 (SELECT created_at FROM activities WHERE seq = {last})"
            ),
            "activity_users"
        ),
        1
    );
    assert_eq!(
        app.count(
            &format!("seq = {last} AND created_at = 1"),
            "activity_users"
        ),
        0
    );
    assert_eq!(
        walk(&app, Some(&key)).problem,
        Some(verify::Problem::Changed(last))
    );
}

#[test]
fn verify_names_a_record_inserted_by_hand() {
    let app = TestApp::spawn();
    with_records(&app, 2);
    let n = head(&app);
    let (prev, seq) = (("0".repeat(64)), n + 1);
    app.execute(&format!(
        "INSERT INTO activities (seq, created_at, event, kind, message, successful, users, \
         data, prev_hash, hash) VALUES ({seq}, 1, 'filesystem.folder.create', 'folder_changes', \
         'Folder \"x\" created', TRUE, '[]', '{{}}', '{prev}', '{prev}')"
    ));
    assert_eq!(
        walk(&app, None).problem,
        Some(verify::Problem::Inserted(seq))
    );
    // Also one numbered before the chain starts.
    app.execute(&format!("DELETE FROM activities WHERE seq = {seq}"));
    assert_eq!(walk(&app, None).problem, None);
    app.execute(&format!(
        "INSERT INTO activities (seq, created_at, event, kind, message, successful, users, \
         data, prev_hash, hash) VALUES (0, 1, 'user.login', 'user_preferences', 'x', TRUE, \
         '[]', '{{}}', '{prev}', '{prev}')"
    ));
    assert_eq!(walk(&app, None).problem, Some(verify::Problem::Inserted(0)));
}

#[test]
fn a_signed_checkpoint_shows_a_tail_cut() {
    let app = TestApp::spawn();
    with_records(&app, 3);
    let dir = tempfile::tempdir().unwrap();
    let signer = checkpoint::Signer::open(&dir.path().join("audit.key")).unwrap();
    let key = signer.public_key();
    let c = checkpoint::checkpoint(&app.ctx, &signer)
        .unwrap()
        .expect("a checkpoint");
    assert_eq!(c.seq, head(&app));
    // Nothing new: no second checkpoint.
    assert!(checkpoint::checkpoint(&app.ctx, &signer).unwrap().is_none());
    let rep = walk(&app, Some(&key));
    assert_eq!((rep.problem, rep.checkpoints), (None, 1));
    // The key file is kept and read back: the same key.
    let again = checkpoint::Signer::open(&dir.path().join("audit.key")).unwrap();
    assert_eq!(again.public_key(), key);

    // Cut the last two records: the rest still links, only the checkpoint shows it.
    let cut = c.seq - 1;
    app.execute(&format!("DELETE FROM activities WHERE seq >= {cut}"));
    assert_eq!(
        walk(&app, Some(&key)).problem,
        Some(verify::Problem::Removed(cut))
    );
}

#[test]
fn a_checkpoint_signed_with_another_key_is_refused() {
    let app = TestApp::spawn();
    with_records(&app, 1);
    let dir = tempfile::tempdir().unwrap();
    let ours = checkpoint::Signer::open(&dir.path().join("ours.key")).unwrap();
    let theirs = checkpoint::Signer::open(&dir.path().join("theirs.key")).unwrap();
    let c = checkpoint::checkpoint(&app.ctx, &theirs).unwrap().unwrap();
    assert_eq!(
        walk(&app, Some(&ours.public_key())).problem,
        Some(verify::Problem::Checkpoint(c.seq))
    );
    // Checked against its own key it verifies (which proves less: see the key file).
    assert_eq!(walk(&app, None).problem, None);
}

#[test]
fn retention_removes_whole_segments_and_the_rest_still_verifies() {
    let app = TestApp::spawn();
    let token = with_records(&app, 3);
    let dir = tempfile::tempdir().unwrap();
    let signer = checkpoint::Signer::open(&dir.path().join("audit.key")).unwrap();
    let key = signer.public_key();
    // Nothing to expire without a checkpoint.
    assert_eq!(checkpoint::expire(&app.ctx, 0).unwrap(), 0);
    let c = checkpoint::checkpoint(&app.ctx, &signer).unwrap().unwrap();
    // Expiry goes by whole seconds: the records must be older than now.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let root = my_folder(&app, &token);
    // Two records after the checkpoint: removing the first is a gap (removing the last would
    // be a tail no checkpoint covers yet).
    mkdir(&app, &token, &root, "after");
    mkdir(&app, &token, &root, "after 2");
    let removed = checkpoint::expire(&app.ctx, 0).unwrap();
    assert_eq!(removed as i64, c.seq);
    assert_eq!(app.count(&format!("seq <= {}", c.seq), "activities"), 0);
    assert_eq!(app.count(&format!("seq <= {}", c.seq), "activity_users"), 0);
    // The kept records keep the users they concern.
    assert_eq!(
        app.count(&format!("seq > {}", c.seq), "activity_users"),
        app.count(&format!("seq > {}", c.seq), "activities")
    );
    let rep = walk(&app, Some(&key));
    assert_eq!(rep.problem, None);
    assert_eq!(rep.first, c.seq + 1);
    assert_eq!(rep.checkpoints, 1);
    // Removing the first kept record is still found.
    app.execute(&format!("DELETE FROM activities WHERE seq = {}", c.seq + 1));
    assert_eq!(
        walk(&app, Some(&key)).problem,
        Some(verify::Problem::Removed(c.seq + 1))
    );
}

#[test]
fn concurrent_appenders_never_share_a_predecessor_and_the_log_verifies() {
    let app = TestApp::spawn();
    with_records(&app, 1);
    let before = head(&app);
    let (threads, each) = (4, 15);
    std::thread::scope(|s| {
        for t in 0..threads {
            let ctx = &app.ctx;
            s.spawn(move || {
                for i in 0..each {
                    ctx.write(|c| {
                        coffer_service::audit::record::append(
                            c,
                            "filesystem.folder.create",
                            Some("u1"),
                            &serde_json::json!({"id": format!("f{t}-{i}"), "name": "x"}),
                            true,
                        )?;
                        // Keep the transaction open after the append, so the next appender
                        // reads the head while this one has not committed.
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        Ok(())
                    })
                    .expect("every append commits");
                }
            });
        }
    });
    let n = before + (threads * each) as i64;
    assert_eq!(head(&app), n);
    // Each record has a predecessor of its own.
    assert_eq!(
        app.count(
            "seq IN (SELECT MIN(seq) FROM activities GROUP BY prev_hash)",
            "activities"
        ),
        n
    );
    let rep = walk(&app, None);
    assert_eq!(rep.problem, None);
    assert_eq!((rep.records as i64, rep.last), (n, n));
}
