//! Embedded migrations, one tree per backend with the same names, applied under a lock so
//! that several processes starting together (a server and `cofferd user create`, or many nodes)
//! apply them once.

use crate::{DbConn, StoreError, StoreResult};
use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};

const SQLITE: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");
const POSTGRES: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

/// An arbitrary constant naming Coffer's migration lock on PostgreSQL.
const PG_LOCK_KEY: i64 = 0x0C0F_FE12;

/// The migration after which Coffer refolds userNames (`users::refold_user_names`).
const USER_NAME_FOLDED: &str = "20261122000016";

/// The versions of the migrations this build knows for `backend`, in order (as the migrations
/// table records them once applied).
pub fn known_versions(backend: crate::Backend) -> StoreResult<Vec<String>> {
    use diesel::migration::MigrationSource;
    let mut v: Vec<String> = match backend {
        crate::Backend::Sqlite => MigrationSource::<diesel::sqlite::Sqlite>::migrations(&SQLITE)
            .map_err(|e| StoreError::Migration(e.to_string()))?
            .iter()
            .map(|m| m.name().version().to_string())
            .collect(),
        crate::Backend::Postgres => MigrationSource::<diesel::pg::Pg>::migrations(&POSTGRES)
            .map_err(|e| StoreError::Migration(e.to_string()))?
            .iter()
            .map(|m| m.name().version().to_string())
            .collect(),
    };
    v.sort();
    Ok(v)
}

/// Applies every pending migration; returns how many ran.
pub fn run(conn: &mut DbConn) -> StoreResult<usize> {
    // SQLite: BEGIN IMMEDIATE takes the write lock, so a second process waits (busy timeout) and
    // then finds the migrations applied; each migration runs in a savepoint. PostgreSQL: an
    // advisory lock.
    match conn {
        DbConn::Sqlite(c) => AnsiTransactionManager::begin_transaction_sql(c, "BEGIN IMMEDIATE")?,
        DbConn::Pg(c) => c.batch_execute(&format!("SELECT pg_advisory_lock({PG_LOCK_KEY})"))?,
    }
    let r = apply(conn);
    match conn {
        DbConn::Sqlite(c) => match r {
            Ok(n) => {
                AnsiTransactionManager::commit_transaction(c)?;
                Ok(n)
            }
            Err(e) => {
                let _ = AnsiTransactionManager::rollback_transaction(c);
                Err(e)
            }
        },
        DbConn::Pg(c) => {
            let unlocked = c.batch_execute(&format!("SELECT pg_advisory_unlock({PG_LOCK_KEY})"));
            let n = r?;
            unlocked?;
            Ok(n)
        }
    }
}

/// An arbitrary constant naming the lock under which the system's own records are made.
const PG_SETUP_LOCK_KEY: i64 = 0x0C0F_FE13;

/// Inside a write transaction, waits until no other process is making the system's own records
/// (the first-party web client): on PostgreSQL a transaction-scoped advisory lock; on SQLite the
/// write transaction (`BEGIN IMMEDIATE`) already excludes every other writer.
pub fn lock_setup(conn: &mut DbConn) -> StoreResult<()> {
    if let DbConn::Pg(c) = conn {
        c.batch_execute(&format!(
            "SELECT pg_advisory_xact_lock({PG_SETUP_LOCK_KEY})"
        ))?;
    }
    Ok(())
}

/// Runs the pending migrations, then the steps that must follow some of them in code.
fn apply(conn: &mut DbConn) -> StoreResult<usize> {
    let mig = |e: Box<dyn std::error::Error + Send + Sync>| StoreError::Migration(e.to_string());
    let applied: Vec<String> = match conn {
        DbConn::Sqlite(c) => c
            .run_pending_migrations(SQLITE)
            .map(|v| v.iter().map(ToString::to_string).collect()),
        DbConn::Pg(c) => c
            .run_pending_migrations(POSTGRES)
            .map(|v| v.iter().map(ToString::to_string).collect()),
    }
    .map_err(mig)?;
    if applied
        .iter()
        .any(|v| v.replace('-', "").starts_with(USER_NAME_FOLDED))
    {
        let n = crate::users::refold_user_names(conn)?;
        if n > 0 {
            log::info!("userNames refolded after migration 000016: {n}");
        }
    }
    Ok(applied.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_once() {
        let (_dir, mut conn) = crate::test_support::sqlite();
        assert_eq!(run(&mut conn).unwrap(), 0);
    }

    #[test]
    fn both_trees_have_the_same_names() {
        let names = |dir: &str| {
            let mut v: Vec<String> = std::fs::read_dir(format!(
                "{}/../../migrations/{dir}",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
            v.sort();
            v
        };
        assert_eq!(names("sqlite"), names("postgres"));
    }
}
