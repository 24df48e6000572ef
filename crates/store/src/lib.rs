//! Coffer's persistence: one diesel schema served by SQLite (embedded, the default) and
//! PostgreSQL, the connection manager that picks the backend from the URL, embedded migrations,
//! and plain query functions `fn op(conn: &mut DbConn, …) -> Result<T, StoreError>`.
//!
//! Queries are written once and compiled for both backends by [`db_run!`]; what differs between
//! the backends (transaction start, locking) stays in this crate behind a match on [`DbConn`].

use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel::pg::PgConnection;
use diesel::sqlite::SqliteConnection;
use diesel::Connection;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod among;
pub mod audit;
pub mod backup;
pub mod clients;
pub mod contacts;
pub mod content;
pub mod deliveries;
pub mod devices;
pub mod dli_exports;
pub mod emails;
pub mod events;
pub mod external_dls;
pub mod favorites;
pub mod filter;
mod fixed;
pub mod grants;
pub mod jobs;
pub mod locations;
pub mod mail;
pub mod mail_access;
pub mod migrate;
pub mod models;
pub mod notifications;
mod owner_only;
pub mod password_resets;
pub mod request_files;
pub mod schema;
pub mod scim_tokens;
pub mod scim_users;
pub mod search;
pub mod settings;
pub mod shared_mailboxes;
pub mod sms_codes;
pub mod sources;
pub mod ssh_keys;
pub mod throttle;
pub mod tokens;
mod turns;
pub mod users;
pub mod wake;
pub mod web_forms;
pub mod web_sessions;
pub mod webhooks;
mod writer;
pub use writer::Submitted;

/// Runs `$body` with `$conn` bound to the concrete connection of either backend. The body is
/// compiled once per backend, so the same diesel query serves both.
#[macro_export]
macro_rules! db_run {
    ($conn:ident => $body:expr) => {
        match $conn {
            $crate::DbConn::Sqlite($conn) => $body,
            $crate::DbConn::Pg($conn) => $body,
        }
    };
}

/// A connection to either backend.
pub enum DbConn {
    Sqlite(SqliteConnection),
    Pg(PgConnection),
}

impl DbConn {
    pub fn backend(&self) -> Backend {
        match self {
            DbConn::Sqlite(_) => Backend::Sqlite,
            DbConn::Pg(_) => Backend::Postgres,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A database error. Its text is for logs only.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Diesel(#[from] diesel::result::Error),
    #[error("connection: {0}")]
    Connection(String),
    #[error("pool: {0}")]
    Pool(String),
    #[error("migration: {0}")]
    Migration(String),
}

impl StoreError {
    /// A unique constraint refused the write (e.g. a name that already exists).
    pub fn is_unique_violation(&self) -> bool {
        matches!(
            self,
            StoreError::Diesel(diesel::result::Error::DatabaseError(
                diesel::result::DatabaseErrorKind::UniqueViolation,
                _
            ))
        )
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, StoreError::Diesel(diesel::result::Error::NotFound))
    }
}

impl From<StoreError> for coffer_errors::Error {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Pool(_) => {
                coffer_errors::ApiError::new(coffer_errors::ErrorCode::ServiceUnavailable).into()
            }
            // Kept as a value: the log line of the failure walks its chain down to diesel's.
            other => coffer_errors::Error::internal(other),
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// A database URL whose password never shows in `Debug` or `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    pub fn new(url: impl Into<String>) -> Self {
        DatabaseUrl(url.into())
    }

    pub fn backend(&self) -> Backend {
        if self.0.starts_with("postgres://") || self.0.starts_with("postgresql://") {
            Backend::Postgres
        } else {
            Backend::Sqlite
        }
    }

    /// The SQLite file path (`sqlite://path`, `sqlite:path` or a bare path).
    pub fn sqlite_path(&self) -> &str {
        let s = self.0.as_str();
        s.strip_prefix("sqlite://")
            .or_else(|| s.strip_prefix("sqlite:"))
            .unwrap_or(s)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    fn redacted(&self) -> String {
        match url::Url::parse(&self.0) {
            Ok(mut u) if u.password().is_some() => {
                let _ = u.set_password(Some("***"));
                u.to_string()
            }
            _ => self.0.clone(),
        }
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({})", self.redacted())
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// Opens a connection, reporting the real connection error. SQLite connections get WAL, a
/// busy timeout, foreign keys and the functions search statements call.
pub fn establish(url: &DatabaseUrl) -> StoreResult<DbConn> {
    match url.backend() {
        Backend::Postgres => PgConnection::establish(url.expose())
            .map(DbConn::Pg)
            .map_err(|e| StoreError::Connection(format!("PostgreSQL at {url}: {e}"))),
        Backend::Sqlite => {
            let path = url.sqlite_path();
            // The search statements rank with `coffer_rank`, which SQLite adds to every
            // connection opened after this (see the crate `coffer-sqlite-rank`).
            coffer_sqlite_rank::register().map_err(|rc| {
                StoreError::Connection(format!("SQLite's full-text ranking function: error {rc}"))
            })?;
            let mut c = SqliteConnection::establish(path)
                .map_err(|e| StoreError::Connection(format!("SQLite at {path}: {e}")))?;
            // `temp_store = MEMORY`: every write runs in a savepoint of the writer's transaction,
            // whose journal SQLite otherwise spills to a temporary file once it passes 64 KiB
            // (a commit of an upload does): a file made, written and removed per transaction.
            c.batch_execute(
                "PRAGMA busy_timeout = 10000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                 PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY;",
            )
            .map_err(|e| StoreError::Connection(format!("SQLite at {path}: {e}")))?;
            search::register_sqlite_functions(&mut c)
                .map_err(|e| StoreError::Connection(format!("SQLite at {path}: {e}")))?;
            Ok(DbConn::Sqlite(c))
        }
    }
}

/// Counts every statement `conn` runs (transaction control included) in `statements`, so that
/// [`Db::statements`] tells how busy a node keeps its database.
pub(crate) fn count_statements(conn: &mut DbConn, statements: &Arc<AtomicU64>) {
    let n = statements.clone();
    let count = move |event: diesel::connection::InstrumentationEvent<'_>| {
        if matches!(
            event,
            diesel::connection::InstrumentationEvent::StartQuery { .. }
        ) {
            n.fetch_add(1, Ordering::Relaxed);
        }
    };
    db_run!(conn => conn.set_instrumentation(count));
}

/// [`establish`], with the connection's statements counted.
pub(crate) fn establish_counted(
    url: &DatabaseUrl,
    statements: &Arc<AtomicU64>,
) -> StoreResult<DbConn> {
    let mut conn = establish(url)?;
    count_statements(&mut conn, statements);
    Ok(conn)
}

/// The r2d2 manager for [`DbConn`].
pub struct Manager {
    url: DatabaseUrl,
    statements: Arc<AtomicU64>,
}

impl r2d2::ManageConnection for Manager {
    type Connection = DbConn;
    type Error = StoreError;

    fn connect(&self) -> StoreResult<DbConn> {
        establish_counted(&self.url, &self.statements)
    }

    fn is_valid(&self, conn: &mut DbConn) -> StoreResult<()> {
        db_run!(conn => conn.batch_execute("SELECT 1")).map_err(StoreError::from)
    }

    fn has_broken(&self, _conn: &mut DbConn) -> bool {
        false
    }
}

/// The connection pool shared by handlers and workers.
#[derive(Clone)]
pub struct Db {
    pool: r2d2::Pool<Manager>,
    backend: Backend,
    url: DatabaseUrl,
    /// Every SQLite write of the process goes through this one connection (see [`writer`]).
    sqlite_writer: std::sync::Arc<writer::Writer>,
    /// Statements run on this database's connections, by every clone.
    statements: Arc<AtomicU64>,
    /// The wake-ups of this database's workers (see [`wake`]).
    signals: Arc<wake::Signals>,
    /// The turns of reads (see [`turns`]); none: as many as the pool has connections.
    turns: Option<Arc<turns::Gate>>,
}

/// A pooled connection taken in turn for reading (see [`Db::reader`]).
pub struct Reader {
    // Dropped first: the connection goes back to the pool before the turn passes on.
    conn: PooledConn,
    _turn: Option<turns::Turn>,
}

impl std::ops::Deref for Reader {
    type Target = DbConn;
    fn deref(&self) -> &DbConn {
        &self.conn
    }
}

impl std::ops::DerefMut for Reader {
    fn deref_mut(&mut self) -> &mut DbConn {
        &mut self.conn
    }
}

/// How long a read waits for a connection or a turn before the caller is told to come back.
const POOL_WAIT: Duration = Duration::from_secs(10);

/// Reads at once on SQLite unless configured: one per core and one more, so that a core never
/// idles while a read waits for its turn (see [`turns`]).
fn default_read_turns() -> u32 {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    u32::try_from(cores).unwrap_or(u32::MAX).saturating_add(1)
}

pub type PooledConn = r2d2::PooledConnection<Manager>;

impl Db {
    /// Opens the pool. The first connection is made at once so that a bad URL or an unreachable
    /// server is reported with its real cause.
    pub fn open(url: &DatabaseUrl, max_size: u32) -> StoreResult<Db> {
        if url.backend() == Backend::Sqlite {
            owner_only::prepare_sqlite_file(std::path::Path::new(url.sqlite_path()))?;
        }
        drop(establish(url)?);
        let statements = Arc::new(AtomicU64::new(0));
        let signals = Arc::new(wake::Signals::default());
        let pool = r2d2::Pool::builder()
            .max_size(max_size)
            .min_idle(Some(1))
            .connection_timeout(POOL_WAIT)
            .test_on_check_out(false)
            .build(Manager {
                url: url.clone(),
                statements: statements.clone(),
            })
            .map_err(|e| StoreError::Pool(e.to_string()))?;
        let db = Db {
            pool,
            backend: url.backend(),
            url: url.clone(),
            sqlite_writer: std::sync::Arc::new(writer::Writer::new(
                url.clone(),
                statements.clone(),
                signals.clone(),
            )),
            statements,
            signals,
            turns: (url.backend() == Backend::Sqlite)
                .then(|| Arc::new(turns::Gate::new(default_read_turns(), POOL_WAIT))),
        };
        if db.backend == Backend::Sqlite {
            db.spawn_checkpointer();
        }
        Ok(db)
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// How many statements (transaction control included) this database's connections have run
    /// since it was opened: the measure of how busy an idle node keeps its database.
    pub fn statements(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    /// The SQLite database file, for a SQLite database.
    pub fn sqlite_path(&self) -> Option<String> {
        (self.backend == Backend::Sqlite).then(|| self.url.sqlite_path().to_string())
    }

    /// Copies the WAL into the database file five times a second on a connection of its own,
    /// so that requests seldom pay for a checkpoint and its `fsync`: the writer checkpoints in a
    /// commit only once the WAL has outgrown its limit (see [`writer`]), and then finds little
    /// left to copy. Nothing was written since the last look: nothing to copy, and an idle node
    /// runs no statement. Ends when the `Db` is dropped.
    fn spawn_checkpointer(&self) {
        let alive = std::sync::Arc::downgrade(&self.sqlite_writer);
        let url = self.url.clone();
        let statements = self.statements.clone();
        let spawned = std::thread::Builder::new()
            .name("coffer-sqlite-checkpoint".into())
            .spawn(move || {
                let mut conn: Option<DbConn> = None;
                let mut copied = 0;
                loop {
                    std::thread::sleep(Duration::from_millis(200));
                    let Some(writer) = alive.upgrade() else {
                        break;
                    };
                    let batches = writer.batches_ended();
                    drop(writer);
                    if batches == copied {
                        continue;
                    }
                    copied = batches;
                    if conn.is_none() {
                        conn = establish_counted(&url, &statements).ok();
                    }
                    if let Some(c) = conn.as_mut() {
                        if let Err(e) =
                            db_run!(c => c.batch_execute("PRAGMA wal_checkpoint(PASSIVE)"))
                        {
                            log::debug!("checkpoint: {e}");
                            conn = None;
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            log::warn!("could not start the SQLite checkpointer: {e}");
        }
    }

    /// The most connections the pool opens.
    pub fn max_size(&self) -> u32 {
        self.pool.max_size()
    }

    pub fn get(&self) -> StoreResult<PooledConn> {
        self.pool.get().map_err(|e| StoreError::Pool(e.to_string()))
    }

    /// Sets how many reads run at once (see [`turns`]); by default one per core and one more
    /// on SQLite, and as many as the pool's connections on PostgreSQL.
    pub fn set_read_turns(&mut self, turns: u32) {
        self.turns = Some(Arc::new(turns::Gate::new(turns, POOL_WAIT)));
    }

    /// A pooled connection for reading, once this thread's turn has come (see [`turns`]).
    pub fn reader(&self) -> StoreResult<Reader> {
        let turn = self.turns.as_ref().map(|g| g.enter()).transpose()?;
        Ok(Reader {
            conn: self.get()?,
            _turn: turn,
        })
    }

    /// Runs a write transaction: on the SQLite writer (group commit, see [`writer`]), or in
    /// [`write_tx`] on a pooled connection for PostgreSQL.
    pub fn write<T, E>(&self, f: impl FnOnce(&mut DbConn) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        match self.backend {
            Backend::Sqlite => self.sqlite_writer.write(f),
            Backend::Postgres => {
                let mut conn = self.get().map_err(E::from)?;
                write_tx(&mut conn, f)
            }
        }
    }

    /// On SQLite, queues a write transaction for the writer thread and returns the future of
    /// its result (see [`writer`]): the caller, e.g. an event loop, never blocks on the writer.
    /// On PostgreSQL, whose writes run in parallel on pooled connections, gives `f` back to be
    /// run by [`Db::write`] on a thread that may block.
    pub fn submit_write<T, E, F>(&self, f: F) -> Result<writer::Submitted<T, E>, F>
    where
        F: FnOnce(&mut DbConn) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        match self.backend {
            Backend::Sqlite => Ok(self.sqlite_writer.submit(f)),
            Backend::Postgres => Err(f),
        }
    }
}

/// Runs `f` in a write transaction: `BEGIN IMMEDIATE` on SQLite (so that concurrent writers
/// queue on the busy timeout instead of failing on lock upgrade), a plain transaction on
/// PostgreSQL. Commits on `Ok`, rolls back on `Err`.
pub fn write_tx<T, E>(
    conn: &mut DbConn,
    f: impl FnOnce(&mut DbConn) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<StoreError>,
{
    let begun = match conn {
        DbConn::Sqlite(c) => AnsiTransactionManager::begin_transaction_sql(c, "BEGIN IMMEDIATE"),
        DbConn::Pg(c) => AnsiTransactionManager::begin_transaction(c),
    };
    begun.map_err(|e| E::from(StoreError::from(e)))?;
    let result = f(conn);
    finish_tx(conn, result)
}

/// Runs `f` in a read transaction (a consistent snapshot on both backends).
pub fn read_tx<T, E>(conn: &mut DbConn, f: impl FnOnce(&mut DbConn) -> Result<T, E>) -> Result<T, E>
where
    E: From<StoreError>,
{
    let begun = db_run!(conn => AnsiTransactionManager::begin_transaction(conn));
    begun.map_err(|e| E::from(StoreError::from(e)))?;
    let result = f(conn);
    finish_tx(conn, result)
}

fn finish_tx<T, E: From<StoreError>>(conn: &mut DbConn, result: Result<T, E>) -> Result<T, E> {
    match result {
        Ok(v) => {
            let done = db_run!(conn => AnsiTransactionManager::commit_transaction(conn));
            match done {
                Ok(()) => Ok(v),
                Err(e) => {
                    let _ = db_run!(conn => AnsiTransactionManager::rollback_transaction(conn));
                    Err(E::from(StoreError::from(e)))
                }
            }
        }
        Err(e) => {
            let _ = db_run!(conn => AnsiTransactionManager::rollback_transaction(conn));
            Err(e)
        }
    }
}

/// Runs SQL statements without results (operator and test tooling: creating databases).
pub fn batch_execute(conn: &mut DbConn, sql: &str) -> StoreResult<()> {
    Ok(db_run!(conn => conn.batch_execute(sql))?)
}

/// Escapes `%`, `_` and `\` for a LIKE pattern used with `ESCAPE '\'`.
pub fn like_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for ch in s.chars() {
        if matches!(ch, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    /// A migrated SQLite database in a temporary directory.
    pub fn sqlite() -> (tempfile::TempDir, DbConn) {
        let dir = tempfile::tempdir().unwrap();
        let url = DatabaseUrl::new(format!("sqlite://{}/t.db", dir.path().display()));
        let mut conn = establish(&url).unwrap();
        migrate::run(&mut conn).unwrap();
        (dir, conn)
    }

    /// Inserts an account with raw SQL, as written before later columns existed; `extra` adds
    /// `(column, SQL value)` pairs. Returns its id.
    pub fn insert_user(conn: &mut DbConn, extra: &[(&str, &str)]) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        let columns: String = extra.iter().map(|(c, _)| format!(", {c}")).collect();
        let values: String = extra.iter().map(|(_, v)| format!(", {v}")).collect();
        batch_execute(
            conn,
            &format!(
                "INSERT INTO users (id, email, name, role, profile_id, active, deleted, internal, \
                 force_password_change, mobile_verified, basedir_id, mydir_id, syncdir_id, \
                 version, created_at, updated_at{columns}) VALUES ('{id}', '{id}@example.com', \
                 'n', 'user', (SELECT MIN(id) FROM profiles), TRUE, FALSE, TRUE, FALSE, FALSE, \
                 'b', 'm', 's', 1, 0, 0{values})"
            ),
        )
        .unwrap();
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_hides_password() {
        let u = DatabaseUrl::new("postgres://coffer:hunter2@db.example/coffer");
        assert_eq!(u.backend(), Backend::Postgres);
        assert!(!format!("{u:?}").contains("hunter2"));
        assert!(!u.to_string().contains("hunter2"));
        assert_eq!(
            DatabaseUrl::new("sqlite:///tmp/x.db").sqlite_path(),
            "/tmp/x.db"
        );
        assert_eq!(DatabaseUrl::new("/tmp/x.db").backend(), Backend::Sqlite);
    }

    #[test]
    fn connection_error_names_the_cause() {
        let err = establish(&DatabaseUrl::new("postgres://nobody@127.0.0.1:1/none"))
            .err()
            .unwrap();
        let text = err.to_string();
        assert!(text.contains("PostgreSQL"), "{text}");
    }

    #[test]
    fn sqlite_reads_take_turns_and_nested_reads_do_not_wait() {
        let dir = tempfile::tempdir().unwrap();
        let url = DatabaseUrl::new(format!("sqlite://{}/t.db", dir.path().display()));
        let mut db = Db::open(&url, 4).unwrap();
        db.set_read_turns(1);
        let first = db.reader().unwrap();
        // Nested on the same thread: at once, on a connection of its own.
        drop(db.reader().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let r = db.reader().map(drop);
                tx.send(r.is_ok()).unwrap();
            });
            // Another thread waits while the one turn is held, although the pool has room.
            assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
            drop(first);
            assert!(rx.recv_timeout(Duration::from_secs(10)).unwrap());
        });
    }

    #[test]
    fn write_tx_rolls_back_on_error() {
        let (_d, mut conn) = test_support::sqlite();
        let r: Result<(), StoreError> = write_tx(&mut conn, |c| {
            settings::put(c, "k", "v", 1)?;
            Err(StoreError::Migration("stop".into()))
        });
        assert!(r.is_err());
        assert_eq!(settings::get(&mut conn, "k").unwrap(), None);
        write_tx(&mut conn, |c| settings::put(c, "k", "v", 1)).unwrap();
        assert_eq!(settings::get(&mut conn, "k").unwrap().as_deref(), Some("v"));
    }

    #[test]
    fn like_escape_escapes_wildcards() {
        assert_eq!(like_escape("a%b_c\\"), "a\\%b\\_c\\\\");
    }
}
