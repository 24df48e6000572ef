//! The database side of `cofferd backup` and `cofferd restore`: a consistent copy of a running
//! database, and putting one back into an empty database.
//!
//! SQLite: `VACUUM INTO` writes a consistent copy of the database to a new file while writers
//! go on; restoring is putting that file in place. PostgreSQL: every table is read in one
//! `REPEATABLE READ` transaction (one snapshot for all of them), row by row as JSON through a
//! cursor, so nothing but this process and SQL is needed; restoring migrates the empty database
//! to the same schema and inserts the rows in one transaction, parents before children.

use crate::{DbConn, StoreError, StoreResult};
use diesel::connection::SimpleConnection;
use diesel::sql_types::Text;
use diesel::{QueryableByName, RunQueryDsl};

/// The table where diesel records the applied migrations.
pub const MIGRATIONS_TABLE: &str = "__diesel_schema_migrations";

/// Rows fetched from the cursor at a time, and inserted per statement on restore.
const BATCH: usize = 500;

#[derive(QueryableByName)]
struct One {
    #[diesel(sql_type = Text)]
    t: String,
}

#[derive(QueryableByName)]
struct Two {
    #[diesel(sql_type = Text)]
    a: String,
    #[diesel(sql_type = Text)]
    b: String,
}

fn texts(conn: &mut diesel::PgConnection, sql: &str) -> StoreResult<Vec<String>> {
    let rows: Vec<One> = diesel::sql_query(sql).load(conn)?;
    Ok(rows.into_iter().map(|r| r.t).collect())
}

/// A double-quoted SQL identifier.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// SQLite: writes a consistent copy of the database to `path` (a file that must not exist).
pub fn sqlite_copy_to(conn: &mut DbConn, path: &str) -> StoreResult<()> {
    match conn {
        DbConn::Sqlite(c) => {
            c.batch_execute(&format!("VACUUM INTO '{}'", path.replace('\'', "''")))?;
            Ok(())
        }
        DbConn::Pg(_) => Err(StoreError::Connection(
            "a SQLite copy of a PostgreSQL database".into(),
        )),
    }
}

/// The versions of the applied migrations, in order.
pub fn migration_versions(conn: &mut DbConn) -> StoreResult<Vec<String>> {
    let sql = format!("SELECT version AS t FROM {MIGRATIONS_TABLE} ORDER BY version");
    Ok(crate::db_run!(conn => {
        let rows: Vec<One> = diesel::sql_query(&sql).load(conn)?;
        rows.into_iter().map(|r| r.t).collect()
    }))
}

/// The base tables of the current schema (PostgreSQL), by name.
fn pg_tables(conn: &mut diesel::PgConnection) -> StoreResult<Vec<String>> {
    texts(
        conn,
        "SELECT table_name::text AS t FROM information_schema.tables \
         WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1",
    )
}

/// PostgreSQL: whether the database holds no table at all (never migrated).
pub fn pg_is_empty(conn: &mut DbConn) -> StoreResult<bool> {
    match conn {
        DbConn::Pg(c) => Ok(pg_tables(c)?.is_empty()),
        DbConn::Sqlite(_) => Err(StoreError::Connection("not a PostgreSQL database".into())),
    }
}

/// PostgreSQL: runs `f` in one read-only `REPEATABLE READ` transaction, so that everything it
/// reads (every table, the blob references) comes from the same snapshot.
pub fn pg_snapshot<T, E: From<StoreError>>(
    conn: &mut DbConn,
    f: impl FnOnce(&mut DbConn) -> Result<T, E>,
) -> Result<T, E> {
    let DbConn::Pg(c) = conn else {
        return Err(StoreError::Connection("not a PostgreSQL database".into()).into());
    };
    c.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .map_err(StoreError::from)?;
    let r = f(conn);
    let end = match &r {
        Ok(_) => "COMMIT",
        Err(_) => "ROLLBACK",
    };
    let ended = crate::db_run!(conn => conn.batch_execute(end));
    let v = r?;
    ended.map_err(StoreError::from)?;
    Ok(v)
}

/// PostgreSQL, inside [`pg_snapshot`]: every table's name with its rows, each row handed to
/// `row` as one JSON object. Returns the tables and their row counts.
pub fn pg_export(
    conn: &mut DbConn,
    mut row: impl FnMut(&str, &str) -> std::io::Result<()>,
) -> StoreResult<Vec<(String, usize)>> {
    let DbConn::Pg(c) = conn else {
        return Err(StoreError::Connection("not a PostgreSQL database".into()));
    };
    let mut counts = Vec::new();
    for table in pg_tables(c)? {
        c.batch_execute(&format!(
            "DECLARE coffer_backup NO SCROLL CURSOR FOR SELECT row_to_json(r)::text AS t FROM {} r",
            ident(&table)
        ))?;
        let mut n = 0;
        loop {
            let rows = texts(c, &format!("FETCH {BATCH} FROM coffer_backup"))?;
            if rows.is_empty() {
                break;
            }
            for r in &rows {
                row(&table, r).map_err(|e| StoreError::Connection(format!("writing: {e}")))?;
            }
            n += rows.len();
        }
        c.batch_execute("CLOSE coffer_backup")?;
        counts.push((table, n));
    }
    Ok(counts)
}

/// PostgreSQL: the tables of the (migrated) database ordered so that every table comes after
/// the tables its foreign keys point to.
pub fn pg_insert_order(conn: &mut DbConn) -> StoreResult<Vec<String>> {
    let DbConn::Pg(c) = conn else {
        return Err(StoreError::Connection("not a PostgreSQL database".into()));
    };
    let tables = pg_tables(c)?;
    let edges: Vec<Two> = diesel::sql_query(
        "SELECT conrelid::regclass::text AS a, confrelid::regclass::text AS b FROM pg_constraint \
         WHERE contype = 'f' AND connamespace = current_schema()::regnamespace",
    )
    .load(c)?;
    let unquote = |s: &str| s.trim_matches('"').to_string();
    let mut order: Vec<String> = Vec::new();
    let mut left = tables;
    while !left.is_empty() {
        let ready: Vec<String> = left
            .iter()
            .filter(|t| {
                edges.iter().all(|e| {
                    unquote(&e.a) != **t || unquote(&e.b) == **t || order.contains(&unquote(&e.b))
                })
            })
            .cloned()
            .collect();
        if ready.is_empty() {
            return Err(StoreError::Connection(
                "the foreign keys between tables form a cycle".into(),
            ));
        }
        left.retain(|t| !ready.contains(t));
        order.extend(ready);
    }
    Ok(order)
}

/// PostgreSQL: in one transaction, empties every table but the migrations' (the rows the
/// migrations seeded), inserts each table's rows as `rows(table)` yields them (JSON objects,
/// as [`pg_export`] wrote them), in `order`, and sets every sequence past the highest key.
/// Nothing stays when any step fails.
pub fn pg_import(
    conn: &mut DbConn,
    order: &[String],
    mut rows: impl FnMut(&str, &mut dyn FnMut(&[String]) -> StoreResult<()>) -> StoreResult<()>,
) -> StoreResult<()> {
    let DbConn::Pg(c) = conn else {
        return Err(StoreError::Connection("not a PostgreSQL database".into()));
    };
    c.batch_execute("BEGIN")?;
    let r = (|| -> StoreResult<()> {
        let data: Vec<&String> = order.iter().filter(|t| *t != MIGRATIONS_TABLE).collect();
        if !data.is_empty() {
            let list: Vec<String> = data.iter().map(|t| ident(t)).collect();
            c.batch_execute(&format!("TRUNCATE {}", list.join(", ")))?;
        }
        // A table whose rows point at rows of the same table (a folder's parent) is checked
        // once all its rows are in, whatever order they come in.
        let self_refs: Vec<Two> = diesel::sql_query(
            "SELECT conrelid::regclass::text AS a, conname::text AS b FROM pg_constraint \
             WHERE contype = 'f' AND conrelid = confrelid \
             AND connamespace = current_schema()::regnamespace",
        )
        .load(&mut *c)?;
        let alter = |c: &mut diesel::PgConnection, how: &str| -> StoreResult<()> {
            for s in &self_refs {
                c.batch_execute(&format!(
                    "ALTER TABLE {} ALTER CONSTRAINT {} {how}",
                    s.a,
                    ident(&s.b)
                ))?;
            }
            Ok(())
        };
        alter(c, "DEFERRABLE INITIALLY DEFERRED")?;
        // The rows come back as they were saved, derived rows included (the search index, the
        // jobs a new version queued): the tables' own triggers must not add theirs again.
        // `USER` leaves the triggers that check foreign keys in force.
        for table in &data {
            c.batch_execute(&format!(
                "ALTER TABLE {} DISABLE TRIGGER USER",
                ident(table)
            ))?;
        }
        for table in data.iter().copied() {
            let sql = format!(
                "INSERT INTO {t} OVERRIDING SYSTEM VALUE SELECT * FROM json_populate_recordset(NULL::{t}, $1::json)",
                t = ident(table)
            );
            let mut insert = |batch: &[String]| -> StoreResult<()> {
                let json = format!("[{}]", batch.join(","));
                diesel::sql_query(&sql)
                    .bind::<Text, _>(json)
                    .execute(&mut *c)?;
                Ok(())
            };
            rows(table, &mut insert)?;
        }
        c.batch_execute("SET CONSTRAINTS ALL IMMEDIATE")?;
        alter(c, "NOT DEFERRABLE")?;
        for table in &data {
            c.batch_execute(&format!("ALTER TABLE {} ENABLE TRIGGER USER", ident(table)))?;
        }
        let serial: Vec<Two> = diesel::sql_query(
            "SELECT table_name::text AS a, column_name::text AS b FROM information_schema.columns \
             WHERE table_schema = current_schema() \
             AND pg_get_serial_sequence(quote_ident(table_name), column_name) IS NOT NULL",
        )
        .load(&mut *c)?;
        for s in serial {
            c.batch_execute(&format!(
                "SELECT setval(pg_get_serial_sequence('{q}', '{col}'), COALESCE(MAX({ci}), 0) + 1, false) FROM {t}",
                q = ident(&s.a).replace('\'', "''"),
                col = s.b.replace('\'', "''"),
                ci = ident(&s.b),
                t = ident(&s.a),
            ))?;
        }
        Ok(())
    })();
    match r {
        Ok(()) => Ok(c.batch_execute("COMMIT")?),
        Err(e) => {
            let _ = c.batch_execute("ROLLBACK");
            Err(e)
        }
    }
}

/// How many rows of a restore go into one statement.
pub const fn import_batch() -> usize {
    BATCH
}
