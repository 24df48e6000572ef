//! Upgrading a database that holds accounts and tokens: migration 000015 moves each token's
//! owner and revocation into its family, and every token keeps working (or stays revoked)
//! afterwards; migration 000016 folds userNames in code, non-ASCII letters too.
//! Runs on SQLite, and on PostgreSQL when `COFFER_TEST_POSTGRES_URL` is set.

use coffer_domain::client::flow;
use coffer_service::{Config, Ctx, Db};
use coffer_store::DbConn;
use coffer_tests::{client_input, fresh_database};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};

const SQLITE: EmbeddedMigrations = embed_migrations!("../migrations/sqlite");
const POSTGRES: EmbeddedMigrations = embed_migrations!("../migrations/postgres");

/// The last migration before token families.
const BEFORE: &str = "20261122000014";

/// Applies migrations one by one up to `BEFORE`.
fn migrate_to_before(conn: &mut DbConn) {
    migrate_through(conn, BEFORE)
}

/// Applies migrations one by one up to the one whose version starts with `version`.
fn migrate_through(conn: &mut DbConn, version: &str) {
    loop {
        let applied = match conn {
            DbConn::Sqlite(c) => c.applied_migrations(),
            DbConn::Pg(c) => c.applied_migrations(),
        }
        .unwrap();
        if applied
            .iter()
            .any(|v| v.to_string().replace('-', "").starts_with(version))
        {
            return;
        }
        match conn {
            DbConn::Sqlite(c) => c.run_next_migration(SQLITE).map(|_| ()),
            DbConn::Pg(c) => c.run_next_migration(POSTGRES).map(|_| ()),
        }
        .unwrap();
    }
}

#[test]
fn upgrade_keeps_every_token_its_owner_and_revocation_and_folds_user_names() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _pg) = fresh_database(dir.path());
    let db = Db::open(&url, 2).unwrap();
    migrate_to_before(&mut db.get().unwrap());

    // An account as it was before the upgrade, with a userName that SQLite's lower() cannot fold
    // (migration 000016 folds it in code), and a client (its table does not change).
    let ctx = Ctx::new(db.clone(), Config::new("http://127.0.0.1", "Coffer")).unwrap();
    let user_id = uuid::Uuid::new_v4().to_string();
    ctx.with_conn(|conn| {
        Ok(coffer_store::batch_execute(
            conn,
            &format!(
                "INSERT INTO users (id, email, name, role, profile_id, active, deleted, internal, \
                   force_password_change, mobile_verified, basedir_id, mydir_id, syncdir_id, \
                   version, created_at, updated_at, user_name) VALUES ('{user_id}', \
                   'old@example.com', 'Old', 'user', (SELECT MIN(id) FROM profiles), TRUE, \
                   FALSE, TRUE, FALSE, FALSE, 'b', 'm', 's', 1, 0, 0, 'Ünal@Example.com')"
            ),
        )?)
    })
    .unwrap();
    // The activity log's tables come with a later migration: nothing is appended to it yet.
    let client = coffer_service::audit::record::without(|| {
        coffer_service::identity::clients::create(
            &ctx,
            client_input(
                "old",
                "https://app.example.com/cb",
                flow::PASSWORD | flow::REFRESH_TOKEN,
            ),
            coffer_service::identity::clients::Registrar::Operator,
        )
    })
    .unwrap()
    .id;
    // Tokens in the old shape: family "live" (one access and two refresh tokens, one used) and
    // family "gone" (revoked).
    let (u, c) = (&user_id, &client);
    ctx.with_conn(|conn| {
        Ok(coffer_store::batch_execute(
            conn,
            &format!(
                "INSERT INTO access_tokens (token_hash, family_id, client_id, user_id, scope, \
                   device_id, expires_at, revoked, created_at) VALUES \
                 ('a1', 'live', '{c}', '{u}', 'users', NULL, 4000000000, FALSE, 100), \
                 ('a2', 'gone', '{c}', '{u}', '*', NULL, 4000000000, TRUE, 200); \
                 INSERT INTO refresh_tokens (token_hash, family_id, client_id, user_id, scope, \
                   device_id, expires_at, used_at, revoked, created_at) VALUES \
                 ('r0', 'live', '{c}', '{u}', 'users', NULL, NULL, 150, FALSE, 90), \
                 ('r1', 'live', '{c}', '{u}', 'users', NULL, NULL, NULL, FALSE, 150), \
                 ('r2', 'gone', '{c}', '{u}', '*', NULL, NULL, NULL, TRUE, 200); \
                 INSERT INTO used_assertions (client_id, jti, expires_at) VALUES \
                   ('{c}', 'jti-1', 4000000000);"
            ),
        )?)
    })
    .unwrap();

    // Recorded events (the account and the client made some), the newest one no longer kept:
    // its sequence number must not be given again.
    let event_seqs = |ctx: &Ctx| -> Vec<i64> {
        ctx.with_conn(|conn| {
            use coffer_store::schema::events::dsl::*;
            use diesel::prelude::*;
            coffer_store::db_run!(conn => events.select(seq).order(seq).load(conn))
                .map_err(coffer_service::Error::internal)
        })
        .unwrap()
    };
    let seqs = event_seqs(&ctx);
    let newest = *seqs.last().expect("events were recorded");
    ctx.with_conn(|conn| {
        Ok(coffer_store::batch_execute(
            conn,
            &format!("DELETE FROM events WHERE seq = {newest}"),
        )?)
    })
    .unwrap();

    // 000015 (token families), 000016 (folded userNames), 000017 (assertions by expiry),
    // 000018 (the device index of families only where there is a device), 000019 (content),
    // 000020 (content accounts), 000021 (contacts and external distribution lists), 000022
    // (event ids without an index), 000023 (mail sending state on the outbox), 000024 (user
    // settings), 000025 (password resets), 000026 (shared mailboxes), 000027 (mail), 000028
    // (outside recipients' codes and sessions), 000029 (web forms), 000030 (web-form drafts),
    // 000031 (assertions by client and jti again), 000032 (the outbox's expiry, finished
    // messages' bodies erased), 000040 (favorites), 000041 (folder notifications), 000050
    // (request-file links), 000060 (SSH keys), 000061 (the SFTP host key), 000070 (search),
    // 000080 (the activity log), 000090 (external sources), 000100 (DLI exports), 000115 (search:
    // uploads by tracking id, the fold of descriptions on PostgreSQL), 000130 (the activity log
    // without its index by time), 000140 (search's candidates by folded name and by
    // description), 000150 (the activity log keyed by sequence, without a head row), 000160 (the
    // optional end of a token family), 000120 of the next day (the activity log's index by
    // object holding only records about files, on SQLite), 000170 of the next day (search's
    // documents numbered by owner, on SQLite), 000180 of the next day (the reach's indexes, on
    // SQLite), 000190 of the next day (each file's document carrying its place, on SQLite), 000200
    // of the next day (each name's row carrying its object's place, on SQLite), 000210 of the
    // next day (each file's document carrying its name and creator, on SQLite).
    assert_eq!(
        coffer_store::migrate::run(&mut db.get().unwrap()).unwrap(),
        38
    );

    let mut conn = db.get().unwrap();
    // A used assertion stays used: recording it again is refused.
    assert!(!coffer_store::grants::record_assertion(&mut conn, c, "jti-1", 4_000_000_000).unwrap());
    let (a1, owner, by) = coffer_store::tokens::access_with_owner(&mut conn, "a1")
        .unwrap()
        .expect("the live access token survives");
    assert_eq!(
        (a1.family_id.as_str(), a1.scope.as_str()),
        ("live", "users")
    );
    assert_eq!(
        (owner.id.as_str(), by.id.as_str()),
        (u.as_str(), c.as_str())
    );
    assert!(!a1.revoked);
    assert_eq!(a1.expires_at, Some(4_000_000_000));
    assert_eq!(a1.created_at, 100);
    let a2 = coffer_store::tokens::access_by_hash(&mut conn, "a2")
        .unwrap()
        .unwrap();
    assert!(a2.revoked, "a revoked family stays revoked");
    let r0 = coffer_store::tokens::refresh_by_hash(&mut conn, "r0")
        .unwrap()
        .unwrap();
    assert_eq!(r0.used_at, Some(150));
    let r1 = coffer_store::tokens::refresh_by_hash(&mut conn, "r1")
        .unwrap()
        .unwrap();
    assert!(!r1.revoked && r1.used_at.is_none());
    assert_eq!(r1.user_id, *u);
    let r2 = coffer_store::tokens::refresh_by_hash(&mut conn, "r2")
        .unwrap()
        .unwrap();
    assert!(r2.revoked);
    // The userName is found without regard to the case of its non-ASCII letters.
    for name in ["Ünal@Example.com", "ünal@example.com", "ÜNAL@EXAMPLE.COM"] {
        let found = coffer_store::users::by_user_name(&mut conn, name).unwrap();
        assert_eq!(found.map(|f| f.id).as_deref(), Some(u.as_str()), "{name}");
    }
    // One family row each, created when its first token was.
    let ctx = Ctx::new(db, Config::new("http://127.0.0.1", "Coffer")).unwrap();
    let families: Vec<(String, bool, i64)> = ctx
        .with_conn(|conn| {
            use coffer_store::schema::token_families::dsl::*;
            use diesel::prelude::*;
            coffer_store::db_run!(conn => token_families
                .select((id, revoked, created_at))
                .order(id)
                .load(conn))
            .map_err(coffer_service::Error::internal)
        })
        .unwrap();
    assert_eq!(
        families,
        vec![
            ("gone".to_string(), true, 200),
            ("live".to_string(), false, 90)
        ]
    );
    // The events kept are there with their numbers; the next one continues after the newest
    // ever given.
    assert_eq!(event_seqs(&ctx), seqs[..seqs.len() - 1]);
    ctx.write(|conn| {
        coffer_service::platform::events::record(conn, "test.upgrade", None, serde_json::json!({}))
    })
    .unwrap();
    assert!(*event_seqs(&ctx).last().unwrap() > newest);
}

/// Appends the activity record of folder `d{i}`'s creation (what the log upgrade tests seed).
fn append_folder_create(ctx: &Ctx, i: usize) {
    ctx.write(|conn| {
        coffer_service::audit::record::append(
            conn,
            "filesystem.folder.create",
            Some("u1"),
            &serde_json::json!({"id": format!("f{i}"), "name": format!("d{i}"), "ownerId": "u2"}),
            true,
        )
    })
    .unwrap()
}

#[test]
fn activity_records_written_before_the_lean_log_migration_still_verify_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _pg) = fresh_database(dir.path());
    let db = Db::open(&url, 2).unwrap();
    // The last migration before 000130, which drops the index of activities by time.
    migrate_through(&mut db.get().unwrap(), "20261127000115");
    let ctx = Ctx::new(db.clone(), Config::new("http://127.0.0.1", "Coffer")).unwrap();
    for i in 0..5 {
        append_folder_create(&ctx, i);
    }
    migrate_through(&mut db.get().unwrap(), "20261127000130");
    // Then every later migration, whichever there are.
    coffer_store::migrate::run(&mut db.get().unwrap()).unwrap();
    // Records appended after it chain onto the old ones, and the whole log verifies.
    for i in 5..8 {
        append_folder_create(&ctx, i);
    }
    let rep = coffer_service::audit::verify::verify(&ctx, None).unwrap();
    assert_eq!(rep.problem, None);
    assert_eq!((rep.first, rep.last, rep.records), (1, 8, 8));
    // A record changed by hand is still found.
    ctx.with_conn(|conn| {
        Ok(coffer_store::batch_execute(
            conn,
            "UPDATE activities SET object_name = 'x' WHERE seq = 3",
        )?)
    })
    .unwrap();
    assert_eq!(
        coffer_service::audit::verify::verify(&ctx, None)
            .unwrap()
            .problem,
        Some(coffer_service::audit::verify::Problem::Changed(3))
    );
}

#[test]
fn activity_records_and_checkpoints_made_before_the_keyed_log_migration_still_verify_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _pg) = fresh_database(dir.path());
    let db = Db::open(&url, 2).unwrap();
    // The last migration before 000150, which rebuilds the log's tables (SQLite) and drops the
    // chain head's row.
    migrate_through(&mut db.get().unwrap(), "20261127000140");
    let ctx = Ctx::new(db.clone(), Config::new("http://127.0.0.1", "Coffer")).unwrap();
    for i in 0..6 {
        append_folder_create(&ctx, i);
    }
    let keys = tempfile::tempdir().unwrap();
    let signer =
        coffer_service::audit::checkpoint::Signer::open(&keys.path().join("audit.key")).unwrap();
    let key = signer.public_key();
    let c = coffer_service::audit::checkpoint::checkpoint(&ctx, &signer)
        .unwrap()
        .unwrap();
    assert_eq!(c.seq, 6);
    coffer_store::migrate::run(&mut db.get().unwrap()).unwrap();
    let rows = |sql: &str| -> i64 {
        ctx.with_conn(|conn| {
            use diesel::prelude::*;
            #[derive(QueryableByName)]
            struct N {
                #[diesel(sql_type = diesel::sql_types::BigInt)]
                n: i64,
            }
            Ok(
                coffer_store::db_run!(conn => diesel::sql_query(sql).get_result::<N>(conn))
                    .map_err(coffer_service::Error::internal)?
                    .n,
            )
        })
        .unwrap()
    };
    // Every record and every user row came across as it was.
    assert_eq!(rows("SELECT COUNT(*) AS n FROM activities"), 6);
    assert_eq!(
        rows("SELECT COUNT(*) AS n FROM activity_users WHERE user_id IN ('u1', 'u2')"),
        12
    );
    // Records appended after it chain onto the old ones, and the whole log verifies with the
    // checkpoint made before.
    for i in 6..9 {
        append_folder_create(&ctx, i);
    }
    let rep = coffer_service::audit::verify::verify(&ctx, Some(&key)).unwrap();
    assert_eq!(rep.problem, None);
    assert_eq!(
        (rep.first, rep.last, rep.records, rep.checkpoints),
        (1, 9, 9, 1)
    );
    // A record changed by hand, or the checkpoint's record removed, is still found.
    let exec = |sql: &str| {
        ctx.with_conn(|conn| Ok(coffer_store::batch_execute(conn, sql)?))
            .unwrap()
    };
    exec("UPDATE activities SET object_name = 'x' WHERE seq = 3");
    assert_eq!(
        coffer_service::audit::verify::verify(&ctx, Some(&key))
            .unwrap()
            .problem,
        Some(coffer_service::audit::verify::Problem::Changed(3))
    );
    exec("UPDATE activities SET object_name = 'd2' WHERE seq = 3");
    exec("DELETE FROM activities WHERE seq >= 6");
    assert_eq!(
        coffer_service::audit::verify::verify(&ctx, Some(&key))
            .unwrap()
            .problem,
        Some(coffer_service::audit::verify::Problem::Removed(6))
    );
}

/// Migration 000170 (SQLite) renumbers the documents of the full-text index by owner: every
/// file's document moves into its owner's range with its text, mail keeps its numbers below
/// the first range, a document of a file that is gone leaves, and the index still answers each
/// word with exactly the documents that hold it. On PostgreSQL the migration changes nothing.
#[test]
fn documents_indexed_before_the_owner_ranges_are_renumbered_into_them() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _pg) = fresh_database(dir.path());
    let db = Db::open(&url, 2).unwrap();
    // The last migration before 000170.
    migrate_through(&mut db.get().unwrap(), "20261128000120");
    let sqlite = db.backend() == coffer_store::Backend::Sqlite;
    let ctx = Ctx::new(db.clone(), Config::new("http://127.0.0.1", "Coffer")).unwrap();
    let exec = |sql: &str| {
        ctx.with_conn(|conn| Ok(coffer_store::batch_execute(conn, sql)?))
            .unwrap()
    };
    let rows = |sql: &str| -> Vec<(String, i64)> {
        ctx.with_conn(|conn| {
            use diesel::prelude::*;
            #[derive(QueryableByName)]
            struct R {
                #[diesel(sql_type = diesel::sql_types::Text)]
                s: String,
                #[diesel(sql_type = diesel::sql_types::BigInt)]
                n: i64,
            }
            Ok(
                coffer_store::db_run!(conn => diesel::sql_query(sql).load::<R>(conn))
                    .map_err(coffer_service::Error::internal)?
                    .into_iter()
                    .map(|r| (r.s, r.n))
                    .collect(),
            )
        })
        .unwrap()
    };
    for u in ["u1", "u2"] {
        exec(&format!(
            "INSERT INTO users (id, email, name, role, profile_id, active, deleted, internal, \
               force_password_change, mobile_verified, basedir_id, mydir_id, syncdir_id, \
               version, created_at, updated_at, user_name) VALUES ('{u}', '{u}@example.com', \
               '{u}', 'user', (SELECT MIN(id) FROM profiles), TRUE, FALSE, TRUE, FALSE, FALSE, \
               'b', 'm', 's', 1, 0, 0, '{u}@example.com')"
        ));
    }
    // Files of two owners, their documents interleaved with mail's as they were numbered.
    let files = [("f1", "u2"), ("f2", "u1"), ("f3", "u2"), ("f4", "u1")];
    for (f, owner) in files {
        exec(&format!(
            "INSERT INTO objects (id, kind, owner_id, name, name_folded, created_at, \
               modified_at, creator_id, modifier_id) \
             VALUES ('{f}', 'f', '{owner}', '{f}.txt', '{f}.txt', 0, 0, '{owner}', '{owner}')"
        ));
    }
    if !sqlite {
        coffer_store::migrate::run(&mut db.get().unwrap()).unwrap();
        return;
    }
    exec(
        "INSERT INTO search_docs (id, kind, ref_id) VALUES (1, 'f', 'f1'), (2, 'm', 'e1'), \
           (3, 'f', 'f2'), (4, 'f', 'gone'), (5, 'f', 'f3'), (6, 'm', 'e2'), (7, 'f', 'f4'); \
         INSERT INTO search_fts (rowid, title, body) VALUES (1, '', 'walrus one'), \
           (2, 'walrus mail', 'two'), (3, '', 'walrus three'), (4, '', 'walrus gone'), \
           (5, '', 'pelican five'), (6, 'mail', 'pelican six'), (7, '', 'walrus seven');",
    );
    coffer_store::migrate::run(&mut db.get().unwrap()).unwrap();
    let w = coffer_store::search::SLOT_WIDTH;
    let slots = rows("SELECT user_id AS s, slot AS n FROM search_owners ORDER BY user_id");
    assert_eq!(slots, [("u1".to_string(), 1), ("u2".to_string(), 2)]);
    // Each owner's files numbered from the start of its range, in their old order; mail as it
    // was; the document of a file that is gone removed.
    let docs = rows("SELECT ref_id AS s, id AS n FROM search_docs ORDER BY ref_id");
    let want = [
        ("e1", 2),
        ("e2", 6),
        ("f1", 2 * w + 1),
        ("f2", w + 1),
        ("f3", 2 * w + 2),
        ("f4", w + 2),
    ];
    assert_eq!(
        docs,
        want.iter()
            .map(|(s, n)| (s.to_string(), *n))
            .collect::<Vec<_>>()
    );
    let hits = |q: &str| -> Vec<String> {
        rows(&format!(
            "SELECT d.ref_id AS s, d.id AS n FROM search_fts \
             JOIN search_docs d ON d.id = search_fts.rowid WHERE search_fts MATCH '{q}' \
             ORDER BY d.ref_id"
        ))
        .into_iter()
        .map(|(s, _)| s)
        .collect()
    };
    assert_eq!(hits("walrus"), ["e1", "f1", "f2", "f4"]);
    assert_eq!(hits("pelic*"), ["e2", "f3"]);
    assert_eq!(hits("gone"), Vec::<String>::new());
    // Within one owner's range, only that owner's.
    let within = rows(&format!(
        "SELECT d.ref_id AS s, d.id AS n FROM search_fts JOIN search_docs d ON d.id = search_fts.rowid \
         WHERE search_fts MATCH 'walr*' AND search_fts.rowid BETWEEN {} AND {} ORDER BY d.ref_id",
        w,
        2 * w - 1
    ));
    assert_eq!(
        within.into_iter().map(|(s, _)| s).collect::<Vec<_>>(),
        ["f2", "f4"]
    );
    // A file that changes owner takes its document into the new owner's range, with its text.
    exec("UPDATE objects SET owner_id = 'u1' WHERE id = 'f1'");
    assert_eq!(
        rows("SELECT ref_id AS s, id AS n FROM search_docs WHERE ref_id = 'f1'"),
        [("f1".to_string(), w + 3)]
    );
    assert_eq!(hits("one"), ["f1"]);
    assert_eq!(hits("walrus"), ["e1", "f1", "f2", "f4"]);
}
