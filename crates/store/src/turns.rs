//! Reads taken in turn: on SQLite, at most a few read transactions run at once, and the others
//! wait for theirs in the order they asked.
//!
//! An SQLite read is work for this process's cores (the pages come from the operating system's
//! cache, the statements run on the calling thread), so sixteen reads running at once on two
//! cores do not end sooner than three: each takes a sixteenth of a core instead of a whole one,
//! every read's time stretches to that of the slowest around it, and each connection's page
//! cache is filled and evicted by its own reads. Measured on the 100,000-file search corpus
//! (two cores, eight clients, three turns against sixteen connections reading at once): a
//! search by a word in the text answered at p99 39–42 ms against 44–50 ms, by the start of a
//! name at 34–39 ms against 49–59 ms, at the same rate, with a fifth less memory (see
//! `docs/performance.md`).
//!
//! [`Gate::enter`] queues the askers, and a turn given back passes straight to the first of them
//! (one thread woken, not every waiter), so a read never waits behind one that came after it.
//! A thread that already holds a turn (a read nested in a read) takes another at once: it
//! would otherwise wait for itself. Waiting ends after the pool's own time-out, with the pool's
//! error (`503`).

use crate::{StoreError, StoreResult};
use std::cell::Cell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::Thread;
use std::time::{Duration, Instant};

thread_local! {
    /// The turns this thread holds (nested reads count each).
    static HELD: Cell<u32> = const { Cell::new(0) };
}

/// The turns of one database (see the module).
#[derive(Debug)]
pub(crate) struct Gate {
    state: Mutex<State>,
    wait: Duration,
}

#[derive(Debug)]
struct State {
    /// Turns nobody holds.
    free: u32,
    /// Who waits, first come first: a turn passes straight from its holder to the first.
    queue: VecDeque<Arc<Waiter>>,
}

#[derive(Debug)]
struct Waiter {
    thread: Thread,
    given: AtomicBool,
}

impl Gate {
    /// `turns` reads at once (at least one); askers wait at most `wait`.
    pub(crate) fn new(turns: u32, wait: Duration) -> Gate {
        Gate {
            state: Mutex::new(State {
                free: turns.max(1),
                queue: VecDeque::new(),
            }),
            wait,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for this thread's turn (at once when it holds one already).
    pub(crate) fn enter(self: &Arc<Self>) -> StoreResult<Turn> {
        if HELD.get() > 0 {
            return Ok(Turn::held(None));
        }
        let me = {
            let mut s = self.state();
            if s.free > 0 && s.queue.is_empty() {
                s.free -= 1;
                return Ok(Turn::held(Some(self.clone())));
            }
            let me = Arc::new(Waiter {
                thread: std::thread::current(),
                given: AtomicBool::new(false),
            });
            s.queue.push_back(me.clone());
            me
        };
        let deadline = Instant::now() + self.wait;
        loop {
            if me.given.load(Ordering::Acquire) {
                return Ok(Turn::held(Some(self.clone())));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let mut s = self.state();
                // Given meanwhile: taken after all.
                if me.given.load(Ordering::Acquire) {
                    return Ok(Turn::held(Some(self.clone())));
                }
                s.queue.retain(|w| !Arc::ptr_eq(w, &me));
                return Err(StoreError::Pool(
                    "timed out waiting for a turn to read".into(),
                ));
            }
            std::thread::park_timeout(left);
        }
    }

    /// How many wait for their turn.
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.state().queue.len()
    }

    fn leave(&self) {
        let mut s = self.state();
        match s.queue.pop_front() {
            Some(next) => {
                next.given.store(true, Ordering::Release);
                next.thread.unpark();
            }
            None => s.free += 1,
        }
    }
}

/// A read's turn, given back when dropped. It stays on the thread that took it.
#[derive(Debug)]
pub(crate) struct Turn {
    gate: Option<Arc<Gate>>,
    _here: PhantomData<*const ()>,
}

impl Turn {
    fn held(gate: Option<Arc<Gate>>) -> Turn {
        HELD.set(HELD.get() + 1);
        Turn {
            gate,
            _here: PhantomData,
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        HELD.set(HELD.get().saturating_sub(1));
        if let Some(g) = self.gate.take() {
            g.leave();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn no_more_than_the_turns_read_at_once_and_in_the_order_they_asked() {
        let gate = Arc::new(Gate::new(2, Duration::from_secs(10)));
        let a = gate.enter().unwrap();
        // The second turn is free (and given back when the thread's `Turn` drops).
        std::thread::scope(|s| s.spawn(|| gate.enter().map(drop)).join().unwrap()).unwrap();
        let (tx, rx) = mpsc::channel();
        let (held_tx, held_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let g = gate.clone();
            s.spawn(move || {
                let t = g.enter().unwrap();
                held_tx.send(()).unwrap();
                release_rx.recv().unwrap();
                drop(t);
            });
            held_rx.recv().unwrap();
            for i in 0..3u32 {
                let tx = tx.clone();
                let g = gate.clone();
                s.spawn(move || {
                    let t = g.enter().unwrap();
                    tx.send(i).unwrap();
                    drop(t);
                });
                // Asking in this order: 0, 1, 2 (each queued before the next starts).
                while gate.waiting() <= i as usize {
                    std::thread::yield_now();
                }
            }
            // Both turns are held: nobody got in.
            assert!(rx.try_recv().is_err());
            // One turn comes free: the three get it one after the other, in their order.
            drop(a);
            let order: Vec<u32> = (0..3).map(|_| rx.recv().unwrap()).collect();
            assert_eq!(order, vec![0, 1, 2]);
            release_tx.send(()).unwrap();
        });
    }

    #[test]
    fn a_nested_read_takes_its_turn_at_once() {
        let gate = Arc::new(Gate::new(1, Duration::from_millis(100)));
        let outer = gate.enter().unwrap();
        let inner = gate.enter().unwrap();
        drop(inner);
        // Another thread still waits for the outer turn, and gives up after the wait.
        let other = std::thread::scope(|s| s.spawn(|| gate.enter().map(drop)).join().unwrap());
        assert!(matches!(other, Err(StoreError::Pool(_))));
        drop(outer);
        // The one that gave up does not keep the turn from the next asker.
        std::thread::scope(|s| s.spawn(|| gate.enter().map(drop)).join().unwrap()).unwrap();
        gate.enter().map(drop).unwrap();
    }
}
