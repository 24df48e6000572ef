//! The process's allocator: mimalloc, and the one setting Coffer gives it at start-up.
//!
//! `cofferd` declares [`Allocator`] its `#[global_allocator]`, and the workspace builds mimalloc
//! with `override` so that the C libraries linked in (SQLite, OpenSSL) allocate from it too.
//!
//! mimalloc 3 keeps freed pages for a second (its `purge_delay`, 1,000 ms) before it returns
//! them to the system. A 1 GiB upload allocates its 10 MiB chunks and batches on some threads and
//! frees them on others, so each second of uploads left up to a second's worth of freed buffers
//! resident: three back-to-back 1 GiB uploads with their downloads peaked at 150–175 MB of RSS,
//! and at 85–100 MB with the delay at zero, the uploads as fast (`scripts/bench-content.sh` (j),
//! docs/performance.md). At zero, though, a buffer freed and allocated again on every request
//! (actix's write buffer, grown to the size of a 830 KB listing and dropped after it) faulted
//! its pages in again each time: the listing (i) answered fewer requests with a p99 of 37–45 ms.
//! At [`PURGE_DELAY_MS`] such pages are reused while requests keep coming and returned a tenth of
//! a second after they stop: (j) 118–133 MB, (i) 24–29 ms in the same runs.
//! [`tune`] sets the delay unless the operator set `MIMALLOC_PURGE_DELAY` in the environment,
//! which mimalloc reads itself and which then wins.
//!
//! This is the workspace's only crate that allows `unsafe` code, for the single call in
//! [`tune`]; everything else forbids it.

pub use mimalloc::MiMalloc as Allocator;
use std::os::raw::c_long;

/// The delay, in milliseconds, after which mimalloc returns freed memory to the system.
pub const PURGE_DELAY_MS: c_long = 100;

/// mimalloc 3's index of `mi_option_purge_delay` in its `mi_option_e` (libmimalloc-sys names
/// the options around it but not this one). The tests check that this index reads the
/// option's documented default, so an upgrade that renumbered the options fails them.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The environment variable through which an operator sets the delay (mimalloc reads it).
pub const PURGE_DELAY_ENV: &str = "MIMALLOC_PURGE_DELAY";

/// Sets mimalloc's purge delay to [`PURGE_DELAY_MS`], unless `MIMALLOC_PURGE_DELAY` is set in
/// the environment. Call once, first thing in `main`. Returns the delay in force afterwards.
pub fn tune() -> c_long {
    if std::env::var_os(PURGE_DELAY_ENV).is_none() {
        set_purge_delay(PURGE_DELAY_MS);
    }
    purge_delay()
}

/// The purge delay in force, in milliseconds.
pub fn purge_delay() -> c_long {
    // SAFETY: `mi_option_get` takes an option index by value and reads mimalloc's option table,
    // initialising the entry from the environment or its default when first read. The index is
    // a valid option of the linked mimalloc (checked by the tests against its default). mimalloc
    // options are plain integers read and written without locks by design (its documentation:
    // options may be set at any time); no memory is passed across the call.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY)
    }
}

fn set_purge_delay(ms: c_long) {
    // SAFETY: as in `purge_delay`: a valid option index and an integer value, nothing borrowed.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ms)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test, not several: the option is process-wide, and tests run on threads of one process.
    #[test]
    fn the_purge_delay_index_is_mimallocs_and_tune_sets_it() {
        // mimalloc 3's documented default (1,000 ms), unless the environment set it.
        match std::env::var(PURGE_DELAY_ENV) {
            Ok(v) => assert_eq!(purge_delay().to_string(), v.trim()),
            Err(_) => {
                assert_eq!(
                    purge_delay(),
                    1000,
                    "option index 15 is not mimalloc's purge_delay"
                );
                assert_eq!(tune(), PURGE_DELAY_MS);
                assert_eq!(purge_delay(), PURGE_DELAY_MS);
            }
        }
        set_purge_delay(25);
        assert_eq!(purge_delay(), 25);
        set_purge_delay(PURGE_DELAY_MS);
    }
}
