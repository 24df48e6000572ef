//! Wake-ups for the background workers (the webhook pump, the mail pump, the job worker): the
//! transaction that records work announces it, and the workers of every node sharing the
//! database look at once, so that an idle worker need not poll often.
//!
//! - **PostgreSQL.** [`announce`] runs `pg_notify('coffer_work', <kind>)` inside the recording
//!   transaction; PostgreSQL delivers it when (and only if) the transaction commits, to every
//!   connection listening on the database, that is to every node. Each process keeps one
//!   listening connection per database (started by the first [`Db::waiter`]). Waiting for a
//!   notification reads the socket only (`PQconsumeInput`, no statement), ten times a second;
//!   a lost connection is made again, and every worker is woken then, since announcements may
//!   have been missed meanwhile.
//! - **SQLite.** One process owns the database. [`announce`] notes the kind, and the writer
//!   raises what was noted once its transaction has ended, so that a woken worker finds the
//!   work committed.
//!
//! A wake-up is a hint, never the only way work is found: workers still look on their own every
//! few seconds and when the earliest scheduled work falls due.

use crate::{establish, Backend, DatabaseUrl, Db, DbConn, StoreResult};
use diesel::RunQueryDsl;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

/// The PostgreSQL channel every announcement goes to (the payload names the kind).
const CHANNEL: &str = "coffer_work";

/// How often the listener reads its socket for notifications.
const LISTEN_POLL: Duration = Duration::from_millis(100);

/// The kinds of work a worker waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// New events to fan out into webhook deliveries.
    Deliveries,
    /// Outgoing mail queued.
    Mail,
    /// Jobs queued.
    Jobs,
}

impl Work {
    const ALL: [Work; 3] = [Work::Deliveries, Work::Mail, Work::Jobs];

    fn name(self) -> &'static str {
        match self {
            Work::Deliveries => "deliveries",
            Work::Mail => "mail",
            Work::Jobs => "jobs",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The wake-ups of one database, shared by its `Db` clones, its SQLite writer and its
/// listener: a generation per kind, raised by every wake-up.
#[derive(Default)]
pub(crate) struct Signals {
    generations: Mutex<[u64; 3]>,
    changed: Condvar,
    /// Kinds announced by SQLite transactions not yet ended (a bit per kind).
    pending: AtomicU32,
    /// The listening connection (PostgreSQL), while someone waits.
    listener: Mutex<Weak<Listener>>,
}

impl Signals {
    fn raise(&self, work: Work) {
        let mut g = self
            .generations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        g[work.index()] += 1;
        self.changed.notify_all();
    }

    fn generation(&self, work: Work) -> u64 {
        self.generations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)[work.index()]
    }

    /// Raises what SQLite transactions announced; the writer calls it whenever a transaction
    /// ends. A rolled-back announcement wakes workers for nothing, which is harmless.
    pub(crate) fn flush_pending(&self) {
        let pending = self.pending.swap(0, Ordering::SeqCst);
        for work in Work::ALL {
            if pending & (1 << work.index()) != 0 {
                self.raise(work);
            }
        }
    }
}

thread_local! {
    /// The signals of the SQLite writer running a transaction on this thread.
    static WRITING: RefCell<Option<Arc<Signals>>> = const { RefCell::new(None) };
}

/// Runs `f`, a writer's transaction work, so that what it announces is noted in `signals`.
pub(crate) fn writing<T>(signals: &Arc<Signals>, f: impl FnOnce() -> T) -> T {
    let previous = WRITING.with(|w| w.replace(Some(signals.clone())));
    struct Restore(Option<Arc<Signals>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            WRITING.with(|w| *w.borrow_mut() = previous);
        }
    }
    let _restore = Restore(previous);
    f()
}

/// Announces `work` from the transaction that records it: the workers of every node wake once
/// it commits (see the module docs). On SQLite a transaction not run by the writer announces
/// nothing; its work is found at the workers' next look.
pub fn announce(conn: &mut DbConn, work: Work) -> StoreResult<()> {
    match conn {
        DbConn::Pg(c) => {
            diesel::sql_query("SELECT pg_notify($1, $2)")
                .bind::<diesel::sql_types::Text, _>(CHANNEL)
                .bind::<diesel::sql_types::Text, _>(work.name())
                .execute(c)?;
        }
        DbConn::Sqlite(_) => WRITING.with(|w| {
            if let Some(signals) = &*w.borrow() {
                signals
                    .pending
                    .fetch_or(1 << work.index(), Ordering::SeqCst);
            }
        }),
    }
    Ok(())
}

/// Waits for announcements of one kind of work to one database.
pub struct Waiter {
    work: Work,
    seen: u64,
    signals: Arc<Signals>,
    /// Keeps the database's listener running while someone waits (PostgreSQL).
    _listener: Option<Arc<Listener>>,
}

impl Waiter {
    /// Waits until `work` is announced (after the previous wait returned, or since this waiter
    /// was made), or until `timeout` has passed. True when woken.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let i = self.work.index();
        let mut g = self
            .signals
            .generations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while g[i] == self.seen {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            g = self
                .signals
                .changed
                .wait_timeout(g, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        self.seen = g[i];
        true
    }
}

/// The listening connection of one database (PostgreSQL): its thread ends (within
/// [`LISTEN_POLL`]) once no waiter holds it.
pub(crate) struct Listener;

impl Db {
    /// A waiter for announcements of `work` to this database (see the module docs). On
    /// PostgreSQL the first one starts the database's listening connection.
    pub fn waiter(&self, work: Work) -> Waiter {
        let listener = match self.backend {
            Backend::Postgres => Some(self.listener()),
            Backend::Sqlite => None,
        };
        Waiter {
            work,
            seen: self.signals.generation(work),
            signals: self.signals.clone(),
            _listener: listener,
        }
    }

    /// Wakes this process's workers waiting for `work` on this database now (e.g. a sender
    /// that finished, leaving room for more).
    pub fn wake(&self, work: Work) {
        self.signals.raise(work);
    }

    fn listener(&self) -> Arc<Listener> {
        let mut slot = self
            .signals
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(l) = slot.upgrade() {
            return l;
        }
        let l = Arc::new(Listener);
        *slot = Arc::downgrade(&l);
        let alive = Arc::downgrade(&l);
        let (url, statements, signals) = (
            self.url.clone(),
            self.statements.clone(),
            self.signals.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name("coffer-listen".into())
            .spawn(move || listen(&url, &statements, &signals, &alive));
        if let Err(e) = spawned {
            // Workers still look on their own every few seconds.
            log::warn!("could not start the PostgreSQL listener: {e}");
        }
        l
    }
}

/// The listener thread: `LISTEN`, then turn notifications into wake-ups until no one waits.
fn listen(
    url: &DatabaseUrl,
    statements: &Arc<AtomicU64>,
    signals: &Signals,
    alive: &Weak<Listener>,
) {
    let mut backoff = Duration::from_millis(100);
    while alive.strong_count() > 0 {
        let conn = establish(url).and_then(|mut c| {
            crate::count_statements(&mut c, statements);
            crate::batch_execute(&mut c, &format!("LISTEN {CHANNEL}"))?;
            Ok(c)
        });
        let mut conn = match conn {
            Ok(DbConn::Pg(c)) => c,
            Ok(DbConn::Sqlite(_)) => return,
            Err(e) => {
                log::debug!("listener: {e}");
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(10));
                continue;
            }
        };
        backoff = Duration::from_millis(100);
        // Whatever was announced while no one listened.
        Work::ALL.into_iter().for_each(|w| signals.raise(w));
        'listening: while alive.strong_count() > 0 {
            for n in conn.notifications_iter() {
                match n {
                    Ok(n) => {
                        if let Some(work) = Work::ALL.into_iter().find(|w| w.name() == n.payload) {
                            signals.raise(work);
                        }
                    }
                    Err(e) => {
                        log::debug!("listener: {e}");
                        break 'listening;
                    }
                }
            }
            std::thread::sleep(LISTEN_POLL);
        }
    }
}
