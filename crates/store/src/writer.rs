//! The SQLite writer: one connection through which every write of the process goes, with group
//! commit.
//!
//! SQLite has one writer at a time. Giving the process one writer connection keeps its page
//! cache valid (no other connection of the process writes) and makes writers queue on a mutex
//! instead of in SQLite's busy handler, which sleeps with back-off. On top of that, writers that
//! arrive while another one holds the connection join the same database transaction: each runs
//! in its own savepoint (a failing one rolls back only its own work), and the last writer of the
//! batch commits for all. A writer answers only once the transaction holding its writes has
//! committed, so nothing is reported done before it is durable; a failed commit fails every
//! writer of that batch. Under load this turns many small commits, each with its fixed cost (the
//! commit statement, the WAL header and index, a thread hand-off), into few larger ones.
//!
//! Writers come two ways. [`Writer::write`] runs on the calling thread, which waits for the
//! mutex and the commit. [`Writer::submit`] takes a write that owns its data and queues it for
//! the writer thread, which runs whatever is queued back to back as writers of one batch and
//! resolves each write's future after the commit: an event loop can await a write without
//! blocking, and under load the connection is never handed between threads. Both kinds share
//! the same mutex and batches.

use crate::{batch_execute, establish_counted, DatabaseUrl, DbConn, StoreError};
use diesel::connection::{AnsiTransactionManager, TransactionManager};
use futures_channel::oneshot;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll};

/// At most this many writers share one transaction, which bounds the wait of the first.
const MAX_BATCH: usize = 64;

/// WAL pages (of 4 KiB) after which the writer checkpoints in its commit.
const WAL_CHECKPOINT_PAGES: u32 = 8192;

/// The size the WAL file is cut back to when it starts over, in bytes.
const WAL_SIZE_LIMIT: u64 = 64 << 20;

struct State {
    conn: Option<DbConn>,
    /// Writers in the open transaction; 0 when none is open.
    in_batch: usize,
    /// The number of the open (or next) batch.
    batch: u64,
    /// The last batch that ended, and whether its commit failed.
    ended: u64,
    failed: Option<(u64, String)>,
}

pub(crate) struct Writer {
    url: DatabaseUrl,
    /// Where the writer connection counts its statements (`Db::statements`).
    statements: Arc<AtomicU64>,
    /// Where transactions note what they announce, raised when their batch ends.
    signals: Arc<crate::wake::Signals>,
    state: Mutex<State>,
    ended: Condvar,
    /// Writers waiting for the connection: while there are any, the holder leaves the
    /// transaction open for them.
    queued: AtomicUsize,
    /// The writer thread's queue, started by the first [`Writer::submit`].
    queue: OnceLock<Option<mpsc::Sender<Job>>>,
}

/// A write that owns its data, queued for the writer thread. It runs in its own savepoint and
/// returns what delivers its result; `Err` means the transaction itself broke.
type Job = Box<dyn FnOnce(&mut DbConn) -> Result<Done, StoreError> + Send>;
/// Delivers a job's result once its batch has ended, given the commit's failure if any.
type Done = Box<dyn FnOnce(Option<&str>) + Send>;

/// The result of a write queued with [`Writer::submit`].
pub struct Submitted<T, E> {
    rx: oneshot::Receiver<Result<T, E>>,
    started: bool,
}

impl<T, E: From<StoreError>> Future for Submitted<T, E> {
    type Output = Result<T, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if !self.started {
            return Poll::Ready(Err(E::from(StoreError::Connection(
                "the writer thread is not running".into(),
            ))));
        }
        Pin::new(&mut self.rx).poll(cx).map(|r| {
            // A dropped sender: the job never ran or its batch broke.
            r.unwrap_or_else(|_| Err(E::from(commit_failed("the write was not run"))))
        })
    }
}

fn commit_failed(e: &str) -> StoreError {
    StoreError::Connection(format!("commit failed: {e}"))
}

impl Writer {
    pub(crate) fn new(
        url: DatabaseUrl,
        statements: Arc<AtomicU64>,
        signals: Arc<crate::wake::Signals>,
    ) -> Writer {
        Writer {
            url,
            statements,
            signals,
            state: Mutex::new(State {
                conn: None,
                in_batch: 0,
                batch: 1,
                ended: 0,
                failed: None,
            }),
            ended: Condvar::new(),
            queued: AtomicUsize::new(0),
            queue: OnceLock::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        let guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.queued.fetch_sub(1, Ordering::SeqCst);
        guard
    }

    /// Opens the writer connection if needed and joins the open batch (beginning one when
    /// none is open); returns the batch's number.
    fn join(&self, st: &mut State) -> Result<u64, StoreError> {
        if st.conn.is_none() {
            let mut conn = establish_counted(&self.url, &self.statements)?;
            // Checkpoints run in the background (`Db::spawn_checkpointer`), not in a commit,
            // while writes leave it room. That checkpoint can reset the WAL only when no commit
            // lands while it runs, so under sustained writes the WAL would grow without end;
            // past WAL_CHECKPOINT_PAGES the writer checkpoints in its own commit, where no
            // other commit can land, and the next batch starts the WAL over.
            batch_execute(
                &mut conn,
                &format!(
                    "PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}; \
                     PRAGMA journal_size_limit = {WAL_SIZE_LIMIT};"
                ),
            )?;
            st.conn = Some(conn);
        }
        if st.in_batch == 0 {
            if let Err(e) = begin(conn_of(st)) {
                st.conn = None;
                return Err(e);
            }
        }
        st.in_batch += 1;
        Ok(st.batch)
    }

    /// Ends this writer's part of batch `my_batch`: while other writers wait for the
    /// connection the batch stays open for them and this one waits for whoever commits it;
    /// otherwise this one commits. `Err` is the failed commit's message.
    fn finish<'a>(&'a self, mut st: MutexGuard<'a, State>, my_batch: u64) -> Result<(), String> {
        let others_coming = self.queued.load(Ordering::SeqCst) > 0 && st.in_batch < MAX_BATCH;
        if others_coming {
            while st.ended < my_batch {
                st = self.ended.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
            return match &st.failed {
                Some((b, e)) if *b == my_batch => Err(e.clone()),
                _ => Ok(()),
            };
        }
        let committed = commit(conn_of(&mut st)).map_err(|e| e.to_string());
        self.end_batch(&mut st, committed.clone());
        committed
    }

    /// Runs `f` as one writer of the current batch; returns once its writes are committed.
    pub(crate) fn write<T, E>(&self, f: impl FnOnce(&mut DbConn) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let mut st = self.lock();
        let my_batch = self.join(&mut st).map_err(E::from)?;

        // This writer's own savepoint. A panic in `f` must not leave the batch open with writers
        // waiting for it: end the batch as failed, then let the panic continue.
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::wake::writing(&self.signals, || savepoint(conn_of(&mut st), f))
        }));
        let run = match run {
            Ok(r) => r,
            Err(panic) => {
                self.end_batch(&mut st, Err("a writer panicked".into()));
                drop(st);
                std::panic::resume_unwind(panic);
            }
        };
        let result = match run {
            Ok(r) => r,
            Err(broken) => {
                // The transaction itself is unusable: end the batch as failed.
                self.end_batch(&mut st, Err(broken.to_string()));
                return Err(E::from(broken));
            }
        };
        // A refused writer left nothing in the batch, so it need not wait for the commit.
        if result.is_err() && self.queued.load(Ordering::SeqCst) > 0 && st.in_batch < MAX_BATCH {
            return result;
        }
        match self.finish(st, my_batch) {
            Ok(()) => result,
            Err(e) => Err(E::from(commit_failed(&e))),
        }
    }

    /// Queues `f` for the writer thread, which runs queued writes back to back in one batch
    /// (each in its own savepoint, as [`Writer::write`]). The future resolves once the batch
    /// holding the write has committed; the calling thread never waits for the writer.
    pub(crate) fn submit<T, E, F>(self: &Arc<Self>, f: F) -> Submitted<T, E>
    where
        F: FnOnce(&mut DbConn) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel::<Result<T, E>>();
        let job: Job = Box::new(move |conn| {
            let result = savepoint(conn, f)?;
            Ok(Box::new(move |failed: Option<&str>| {
                let result = match failed {
                    Some(e) if result.is_ok() => Err(E::from(commit_failed(e))),
                    _ => result,
                };
                let _ = tx.send(result);
            }))
        });
        let queued = self
            .queue
            .get_or_init(|| self.spawn_thread())
            .as_ref()
            .map(|q| q.send(job).is_ok())
            .unwrap_or(false);
        Submitted {
            rx,
            started: queued,
        }
    }

    /// Starts the writer thread; `None` when the system refuses a thread. The thread ends when
    /// the last handle of the writer is dropped.
    fn spawn_thread(self: &Arc<Self>) -> Option<mpsc::Sender<Job>> {
        let (tx, rx) = mpsc::channel::<Job>();
        let writer = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("coffer-sqlite-writer".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let Some(writer) = writer.upgrade() else {
                        break;
                    };
                    writer.run_jobs(first, &rx);
                }
            });
        match spawned {
            Ok(_) => Some(tx),
            Err(e) => {
                log::error!("could not start the SQLite writer thread: {e}");
                None
            }
        }
    }

    /// Runs `first` and whatever else is queued (up to a batch) as writers of one batch, then
    /// hands each its result once the batch has ended.
    fn run_jobs(&self, first: Job, queue: &mpsc::Receiver<Job>) {
        let mut st = self.lock();
        let my_batch = match self.join(&mut st) {
            Ok(b) => b,
            // `first` is dropped unrun: its caller sees the writer fail.
            Err(e) => return log::warn!("writer: {e}"),
        };
        let mut done: Vec<Done> = Vec::new();
        let mut next = Some(first);
        while let Some(job) = next {
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::wake::writing(&self.signals, || job(conn_of(&mut st)))
            }));
            match run {
                Ok(Ok(d)) => done.push(d),
                // A broken transaction or a panic (which left its savepoint open): the batch
                // fails as a whole.
                failed => {
                    let e = match failed {
                        Ok(Err(e)) => e.to_string(),
                        _ => "a writer panicked".to_string(),
                    };
                    self.end_batch(&mut st, Err(e.clone()));
                    drop(st);
                    done.into_iter().for_each(|d| d(Some(&e)));
                    return;
                }
            }
            next = None;
            if st.in_batch < MAX_BATCH {
                if let Ok(job) = queue.try_recv() {
                    st.in_batch += 1;
                    next = Some(job);
                }
            }
        }
        let outcome = self.finish(st, my_batch);
        let failed = outcome.err();
        done.into_iter().for_each(|d| d(failed.as_deref()));
    }

    /// Ends the open batch (after its commit, or after a failure that rolled it back) and wakes
    /// its writers.
    fn end_batch(&self, st: &mut State, outcome: Result<(), String>) {
        if let Err(e) = &outcome {
            if let Some(conn) = st.conn.as_mut() {
                let _ = crate::db_run!(conn => AnsiTransactionManager::rollback_transaction(conn));
            }
            // Whatever state the connection is in, the next batch starts on a fresh one.
            st.conn = None;
            st.failed = Some((st.batch, e.clone()));
        }
        st.ended = st.batch;
        st.batch += 1;
        st.in_batch = 0;
        self.ended.notify_all();
        // What the batch announced is committed (or rolled back) now.
        self.signals.flush_pending();
    }

    /// How many batches have ended so far (committed or not).
    pub(crate) fn batches_ended(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .ended
    }
}

/// The connection of a state whose connection was just made sure of.
fn conn_of(st: &mut State) -> &mut DbConn {
    st.conn.as_mut().expect("the writer connection is open")
}

fn begin(conn: &mut DbConn) -> Result<(), StoreError> {
    let r = match conn {
        DbConn::Sqlite(c) => AnsiTransactionManager::begin_transaction_sql(c, "BEGIN IMMEDIATE"),
        DbConn::Pg(c) => AnsiTransactionManager::begin_transaction(c),
    };
    r.map_err(StoreError::from)
}

fn commit(conn: &mut DbConn) -> Result<(), StoreError> {
    crate::db_run!(conn => AnsiTransactionManager::commit_transaction(conn))
        .map_err(StoreError::from)
}

/// Runs `f` in a savepoint: released on `Ok`, rolled back on `Err`. The outer `Err` means the
/// savepoint itself could not be made or ended, i.e. the transaction is broken.
///
/// On SQLite the savepoint's statements are ones the writer connection keeps prepared
/// ([`sp`]); diesel's own savepoints are SQL text, which SQLite parsed anew twice per write.
fn savepoint<T, E>(
    conn: &mut DbConn,
    f: impl FnOnce(&mut DbConn) -> Result<T, E>,
) -> Result<Result<T, E>, StoreError> {
    match conn {
        DbConn::Pg(c) => AnsiTransactionManager::begin_transaction(c)?,
        DbConn::Sqlite(c) => sp::run(c, sp::Begin)?,
    }
    let result = f(conn);
    match (conn, result.is_ok()) {
        (DbConn::Pg(c), true) => AnsiTransactionManager::commit_transaction(c)?,
        (DbConn::Pg(c), false) => AnsiTransactionManager::rollback_transaction(c)?,
        (DbConn::Sqlite(c), true) => sp::run(c, sp::Release)?,
        (DbConn::Sqlite(c), false) => {
            sp::run(c, sp::RollbackTo)?;
            sp::run(c, sp::Release)?;
        }
    }
    Ok(result)
}

/// The writer's savepoint statements on SQLite, each a type of its own: diesel keeps a
/// statement prepared per type, so each is parsed once per connection.
mod sp {
    use crate::StoreError;
    use diesel::query_builder::{AstPass, QueryFragment, QueryId};
    use diesel::query_dsl::methods::ExecuteDsl;
    use diesel::sqlite::Sqlite;
    use diesel::SqliteConnection;

    macro_rules! statement {
        ($name:ident, $sql:literal) => {
            #[derive(QueryId)]
            pub(super) struct $name;

            impl QueryFragment<Sqlite> for $name {
                fn walk_ast<'b>(
                    &'b self,
                    mut out: AstPass<'_, 'b, Sqlite>,
                ) -> diesel::QueryResult<()> {
                    out.push_sql($sql);
                    Ok(())
                }
            }
        };
    }

    statement!(Begin, "SAVEPOINT coffer_writer");
    statement!(Release, "RELEASE coffer_writer");
    statement!(RollbackTo, "ROLLBACK TO coffer_writer");

    /// Runs one of them on a SQLite connection.
    pub(super) fn run<Q>(conn: &mut SqliteConnection, q: Q) -> Result<(), StoreError>
    where
        Q: QueryFragment<Sqlite> + QueryId,
    {
        ExecuteDsl::execute(q, conn)
            .map(drop)
            .map_err(StoreError::from)
    }
}

#[cfg(test)]
mod tests {
    use crate::{settings, DatabaseUrl, Db, StoreError};
    use std::future::Future;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    /// Waits for a future on the calling thread (the store has no async runtime of its own).
    fn block_on<F: Future>(f: F) -> F::Output {
        struct Unpark(std::thread::Thread);
        impl Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut f = std::pin::pin!(f);
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
            std::thread::park();
        }
    }

    fn submit(
        db: &Db,
        f: impl FnOnce(&mut crate::DbConn) -> Result<(), StoreError> + Send + 'static,
    ) -> Result<(), StoreError> {
        match db.submit_write(f) {
            Ok(queued) => block_on(queued),
            Err(_) => panic!("SQLite writes are queued"),
        }
    }

    #[test]
    fn queued_and_direct_writers_share_the_writer_and_fail_alone() {
        let (_d, db) = db();
        let db = Arc::new(db);
        // Threads that queue writes for the writer thread, and threads that write directly.
        let threads: Vec<_> = (0..12)
            .map(|i| {
                let db = db.clone();
                std::thread::spawn(move || {
                    for j in 0..25 {
                        let key = format!("k{i}-{j}");
                        let refuse = j % 5 == 0;
                        let write = move |c: &mut crate::DbConn| {
                            settings::put(c, &key, "v", 1)?;
                            if refuse {
                                return Err(StoreError::Migration("refused".into()));
                            }
                            Ok(())
                        };
                        let r = if i % 3 == 0 {
                            db.write(write)
                        } else {
                            submit(&db, write)
                        };
                        assert_eq!(r.is_ok(), !refuse);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut c = db.get().unwrap();
        for i in 0..12 {
            for j in 0..25 {
                let stored = settings::get(&mut c, &format!("k{i}-{j}")).unwrap();
                assert_eq!(stored.is_some(), j % 5 != 0, "k{i}-{j}");
            }
        }
    }

    #[test]
    fn a_queued_write_is_committed_when_it_resolves_and_a_panic_fails_only_its_batch() {
        let (_d, db) = db();
        submit(&db, |c| settings::put(c, "first", "yes", 1)).unwrap();
        let mut reader = db.get().unwrap();
        assert_eq!(
            settings::get(&mut reader, "first").unwrap().as_deref(),
            Some("yes")
        );
        let panicked = submit(&db, |c| {
            settings::put(c, "lost", "yes", 1)?;
            panic!("a writer bug");
        });
        assert!(panicked.is_err());
        assert_eq!(settings::get(&mut reader, "lost").unwrap(), None);
        // The writer thread survives and the next batch starts on a fresh connection.
        submit(&db, |c| settings::put(c, "after", "yes", 1)).unwrap();
        assert_eq!(
            settings::get(&mut reader, "after").unwrap().as_deref(),
            Some("yes")
        );
    }

    fn db() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let url = DatabaseUrl::new(format!("sqlite://{}/w.db", dir.path().display()));
        let db = Db::open(&url, 4).unwrap();
        crate::migrate::run(&mut db.get().unwrap()).unwrap();
        (dir, db)
    }

    #[test]
    fn the_writer_checkpoints_in_its_commit_past_the_wal_limit() {
        #[derive(diesel::QueryableByName)]
        struct Pages {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            wal_autocheckpoint: i64,
        }
        let (_d, db) = db();
        // The writer's connection, not a pooled one: the setting is per connection.
        let pages = db
            .write(|c| match c {
                crate::DbConn::Sqlite(c) => {
                    use diesel::RunQueryDsl;
                    diesel::sql_query("PRAGMA wal_autocheckpoint")
                        .get_result::<Pages>(c)
                        .map_err(StoreError::from)
                }
                crate::DbConn::Pg(_) => unreachable!("a SQLite database"),
            })
            .unwrap();
        assert_eq!(
            pages.wal_autocheckpoint,
            i64::from(super::WAL_CHECKPOINT_PAGES)
        );
    }

    #[test]
    fn a_write_is_visible_to_readers_when_it_returns() {
        let (_d, db) = db();
        db.write(|c| settings::put(c, "seen", "yes", 1)).unwrap();
        let mut reader = db.get().unwrap();
        assert_eq!(
            settings::get(&mut reader, "seen").unwrap().as_deref(),
            Some("yes")
        );
    }
}
