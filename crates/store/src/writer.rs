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

use crate::{batch_execute, establish, DatabaseUrl, DbConn, StoreError};
use diesel::connection::{AnsiTransactionManager, TransactionManager};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// At most this many writers share one transaction, which bounds the wait of the first.
const MAX_BATCH: usize = 64;

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
    state: Mutex<State>,
    ended: Condvar,
    /// Writers waiting for the connection: while there are any, the holder leaves the
    /// transaction open for them.
    queued: AtomicUsize,
}

impl Writer {
    pub(crate) fn new(url: DatabaseUrl) -> Writer {
        Writer {
            url,
            state: Mutex::new(State {
                conn: None,
                in_batch: 0,
                batch: 1,
                ended: 0,
                failed: None,
            }),
            ended: Condvar::new(),
            queued: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        let guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.queued.fetch_sub(1, Ordering::SeqCst);
        guard
    }

    /// Runs `f` as one writer of the current batch; returns once its writes are committed.
    pub(crate) fn write<T, E>(&self, f: impl FnOnce(&mut DbConn) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let mut st = self.lock();
        if st.conn.is_none() {
            let mut conn = establish(&self.url).map_err(E::from)?;
            // Checkpoints run in the background (`Db::spawn_checkpointer`), not in a commit.
            batch_execute(
                &mut conn,
                "PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = 67108864;",
            )
            .map_err(E::from)?;
            st.conn = Some(conn);
        }
        if st.in_batch == 0 {
            if let Err(e) = begin(conn_of(&mut st)) {
                st.conn = None;
                return Err(E::from(e));
            }
        }
        st.in_batch += 1;
        let my_batch = st.batch;

        // This writer's own savepoint. A panic in `f` must not leave the batch open with writers
        // waiting for it: end the batch as failed, then let the panic continue.
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            savepoint(conn_of(&mut st), f)
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

        let others_coming = self.queued.load(Ordering::SeqCst) > 0 && st.in_batch < MAX_BATCH;
        if others_coming {
            // A refused writer left nothing in the batch, so it need not wait for the commit.
            let value = result?;
            while st.ended < my_batch {
                st = self.ended.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
            return match &st.failed {
                Some((b, e)) if *b == my_batch => Err(E::from(StoreError::Connection(format!(
                    "commit failed: {e}"
                )))),
                _ => Ok(value),
            };
        }
        let committed = commit(conn_of(&mut st)).map_err(|e| e.to_string());
        let failed = committed.clone().err();
        self.end_batch(&mut st, committed);
        match failed {
            Some(e) => Err(E::from(StoreError::Connection(format!(
                "commit failed: {e}"
            )))),
            None => result,
        }
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
fn savepoint<T, E>(
    conn: &mut DbConn,
    f: impl FnOnce(&mut DbConn) -> Result<T, E>,
) -> Result<Result<T, E>, StoreError> {
    crate::db_run!(conn => AnsiTransactionManager::begin_transaction(conn))?;
    let result = f(conn);
    match &result {
        Ok(_) => crate::db_run!(conn => AnsiTransactionManager::commit_transaction(conn))?,
        Err(_) => crate::db_run!(conn => AnsiTransactionManager::rollback_transaction(conn))?,
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use crate::{settings, DatabaseUrl, Db, StoreError};
    use std::sync::Arc;

    fn db() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let url = DatabaseUrl::new(format!("sqlite://{}/w.db", dir.path().display()));
        let db = Db::open(&url, 4).unwrap();
        crate::migrate::run(&mut db.get().unwrap()).unwrap();
        (dir, db)
    }

    #[test]
    fn concurrent_writers_all_commit_and_failures_roll_back_alone() {
        let (_d, db) = db();
        let db = Arc::new(db);
        let threads: Vec<_> = (0..16)
            .map(|i| {
                let db = db.clone();
                std::thread::spawn(move || {
                    for j in 0..20 {
                        let key = format!("k{i}-{j}");
                        let r: Result<(), StoreError> = db.write(|c| {
                            settings::put(c, &key, "v", 1)?;
                            if j % 5 == 0 {
                                // A failing writer: its own write must vanish, nobody else's.
                                return Err(StoreError::Migration("refused".into()));
                            }
                            Ok(())
                        });
                        assert_eq!(r.is_ok(), j % 5 != 0);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut c = db.get().unwrap();
        for i in 0..16 {
            for j in 0..20 {
                let stored = settings::get(&mut c, &format!("k{i}-{j}")).unwrap();
                assert_eq!(stored.is_some(), j % 5 != 0, "k{i}-{j}");
            }
        }
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
