//! `coffer_rank`: Coffer's ranking function for SQLite's full-text index (FTS5).
//!
//! FTS5's own `bm25(table, weights…)` begins every query with a pass over the whole index: for
//! each phrase it counts the documents that hold it (its inverse document frequency), on the
//! first row the query's cursor answers. A search reads the index once per range of document
//! numbers (one per owner whose files the caller may reach), and each range restarts the
//! cursor, so that pass ran once per range: for a four-letter prefix held by 46,000 documents
//! of the server it was most of a search's time, whatever the caller could reach.
//!
//! `coffer_rank(table, weights…)` is `bm25` with the sign turned (larger is better) and one
//! difference: for a query of one phrase it leaves the inverse document frequency out. In BM25
//! that factor multiplies the score of every document by the same positive number, so the
//! order of the documents is exactly `bm25`'s; only the scale differs. A query of two phrases
//! or more needs it to weigh the phrases against each other and computes it as `bm25` does
//! (`log((N - n + 0.5) / (n + 0.5))`, at least `1e-6`), with the same constants (`k1` 1.2,
//! `b` 0.75), column weights and document lengths.
//!
//! [`register`] makes the function part of every SQLite connection the process opens after
//! it (`sqlite3_auto_extension`), since diesel gives no raw handle of a connection it opened.
//!
//! This crate and `coffer-alloc` are the workspace's only crates that allow `unsafe` code:
//! here for the calls across SQLite's C interface that registering and running an FTS5
//! function are made of. Every such call is commented with why it is sound, no Rust panic can
//! cross into SQLite (no indexing, no unwrapping), and every error SQLite reports is handed
//! back to it as the function's error.

use libsqlite3_sys as ffi;
use std::ffi::{c_char, c_int, c_void};
use std::ptr;
use std::sync::OnceLock;

/// The SQL name of the function.
pub const NAME: &str = "coffer_rank";

/// BM25's `k1` and `b`, as FTS5's `bm25` sets them.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Makes `coffer_rank` a function of every SQLite connection opened from now on in this
/// process. Idempotent; the first call's outcome is kept. A connection whose FTS5 refuses the
/// function fails to open, rather than failing later at its first search.
pub fn register() -> Result<(), c_int> {
    static RC: OnceLock<c_int> = OnceLock::new();
    // SAFETY: `sqlite3_auto_extension` takes a function pointer with the entry-point signature
    // SQLite declares (checked by the binding's type) and keeps it in a process-wide list under
    // its own mutex; `init` lives as long as the process. Called once (`OnceLock`).
    #[allow(unsafe_code)]
    let rc = *RC.get_or_init(|| unsafe { ffi::sqlite3_auto_extension(Some(init)) });
    ok(rc)
}

/// The entry point SQLite calls for each new connection, after its built-in modules (FTS5
/// among them) are registered.
#[allow(unsafe_code)]
unsafe extern "C" fn init(
    db: *mut ffi::sqlite3,
    _err: *mut *mut c_char,
    _api: *const ffi::sqlite3_api_routines,
) -> c_int {
    // SAFETY: `db` is the connection SQLite is opening, valid for this call.
    let api = unsafe { fts5_api(db) };
    if api.is_null() {
        return ffi::SQLITE_ERROR;
    }
    // SAFETY: `api` is the non-null `fts5_api` the connection's FTS5 module handed out; it
    // lives as long as the connection. `xCreateFunction` copies the name, keeps the function
    // pointer (which lives as long as the process) and is given no user data to free.
    unsafe {
        let Some(create) = (*api).xCreateFunction else {
            return ffi::SQLITE_ERROR;
        };
        create(
            api,
            c"coffer_rank".as_ptr(),
            ptr::null_mut(),
            Some(rank),
            None,
        )
    }
}

/// The connection's `fts5_api`, by the documented way (`SELECT fts5(?1)` with a pointer bound
/// as `fts5_api_ptr`), or null when FTS5 does not answer.
///
/// # Safety
/// `db` must be a valid open connection.
#[allow(unsafe_code)]
unsafe fn fts5_api(db: *mut ffi::sqlite3) -> *mut ffi::fts5_api {
    let mut api: *mut ffi::fts5_api = ptr::null_mut();
    let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
    // SAFETY: `db` is valid (the caller's contract); the statement text is a NUL-terminated
    // literal; `stmt` is finalized below on every path. The bound pointer is `&mut api`, which
    // outlives the statement, and has no destructor; FTS5 writes its `fts5_api*` through it
    // while the statement steps.
    unsafe {
        if ffi::sqlite3_prepare_v2(
            db,
            c"SELECT fts5(?1)".as_ptr(),
            -1,
            &mut stmt,
            ptr::null_mut(),
        ) != ffi::SQLITE_OK
        {
            ffi::sqlite3_finalize(stmt);
            return ptr::null_mut();
        }
        ffi::sqlite3_bind_pointer(
            stmt,
            1,
            (&mut api as *mut *mut ffi::fts5_api).cast::<c_void>(),
            c"fts5_api_ptr".as_ptr(),
            None,
        );
        ffi::sqlite3_step(stmt);
        ffi::sqlite3_finalize(stmt);
    }
    api
}

/// What a query computes once (kept as the cursor's auxiliary data, freed by FTS5 with it):
/// the average document length, each phrase's inverse document frequency (1 for a query of
/// one phrase), and room for a row's phrase frequencies.
struct Query {
    avgdl: f64,
    idf: Vec<f64>,
    freq: Vec<f64>,
}

/// Frees a [`Query`] FTS5 no longer needs.
#[allow(unsafe_code)]
unsafe extern "C" fn drop_query(p: *mut c_void) {
    if !p.is_null() {
        // SAFETY: FTS5 calls this once, with the pointer `query` gave `xSetAuxdata`, which
        // came from `Box::into_raw` of a `Query`.
        drop(unsafe { Box::from_raw(p.cast::<Query>()) });
    }
}

/// Counts the rows `xQueryPhrase` visits into the `i64` its user data points to.
#[allow(unsafe_code)]
unsafe extern "C" fn count_row(
    _api: *const ffi::Fts5ExtensionApi,
    _fts: *mut ffi::Fts5Context,
    n: *mut c_void,
) -> c_int {
    // SAFETY: `n` is the `&mut i64` `query` passes to `xQueryPhrase`, alive during that call,
    // which is the only time FTS5 calls this.
    unsafe { *n.cast::<i64>() += 1 };
    ffi::SQLITE_OK
}

fn ok(rc: c_int) -> Result<(), c_int> {
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rc)
    }
}

/// The function FTS5 calls for each row.
#[allow(unsafe_code)]
unsafe extern "C" fn rank(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    n_val: c_int,
    vals: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 passes its extension API, the current row's context, the SQL function's
    // context and the function's arguments after the table (`n_val` of them), all valid for
    // this call.
    unsafe {
        match score(&*api, fts, n_val, vals) {
            Ok(s) => ffi::sqlite3_result_double(ctx, s),
            Err(rc) => ffi::sqlite3_result_error_code(ctx, rc),
        }
    }
}

/// The query's [`Query`], made on its first row.
///
/// # Safety
/// `api` and `fts` as FTS5 passed them to [`rank`].
#[allow(unsafe_code)]
unsafe fn query<'a>(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
) -> Result<&'a mut Query, c_int> {
    let missing = ffi::SQLITE_ERROR;
    // SAFETY: every call below is a member of FTS5's extension API, called with the row's
    // context and out-pointers to locals; the auxiliary data is only ever a `Query` this
    // function stored, owned by FTS5 until `drop_query`, and used by one call of `rank` at a
    // time (a cursor's rows are ranked one after the other).
    unsafe {
        let stored = (api.xGetAuxdata.ok_or(missing)?)(fts, 0).cast::<Query>();
        if !stored.is_null() {
            return Ok(&mut *stored);
        }
        let phrases = usize::try_from((api.xPhraseCount.ok_or(missing)?)(fts)).unwrap_or(0);
        let mut rows: i64 = 0;
        ok((api.xRowCount.ok_or(missing)?)(fts, &mut rows))?;
        let mut tokens: i64 = 0;
        ok((api.xColumnTotalSize.ok_or(missing)?)(fts, -1, &mut tokens))?;
        let avgdl = if rows > 0 && tokens > 0 {
            tokens as f64 / rows as f64
        } else {
            1.0
        };
        let mut idf = vec![1.0; phrases];
        if phrases > 1 {
            let query_phrase = api.xQueryPhrase.ok_or(missing)?;
            for (i, w) in (0..).zip(idf.iter_mut()) {
                let mut hits: i64 = 0;
                ok(query_phrase(
                    fts,
                    i,
                    (&mut hits as *mut i64).cast::<c_void>(),
                    Some(count_row),
                ))?;
                let v = (((rows - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
                *w = if v > 0.0 { v } else { 1e-6 };
            }
        }
        let q = Box::into_raw(Box::new(Query {
            avgdl,
            idf,
            freq: vec![0.0; phrases],
        }));
        // On failure `xSetAuxdata` frees `q` itself (through `drop_query`).
        ok((api.xSetAuxdata.ok_or(missing)?)(
            fts,
            q.cast::<c_void>(),
            Some(drop_query),
        ))?;
        Ok(&mut *q)
    }
}

/// The current row's score: BM25 with the column weights in `vals` (1 for a column without
/// one) and [`Query::idf`].
///
/// # Safety
/// As [`rank`]'s arguments.
#[allow(unsafe_code)]
unsafe fn score(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    n_val: c_int,
    vals: *mut *mut ffi::sqlite3_value,
) -> Result<f64, c_int> {
    let missing = ffi::SQLITE_ERROR;
    // SAFETY: as in `query`; `vals` holds `n_val` values, read only below that index.
    unsafe {
        let q = query(api, fts)?;
        q.freq.iter_mut().for_each(|f| *f = 0.0);
        let mut n_inst: c_int = 0;
        ok((api.xInstCount.ok_or(missing)?)(fts, &mut n_inst))?;
        let inst = api.xInst.ok_or(missing)?;
        for i in 0..n_inst {
            let (mut phrase, mut col, mut off): (c_int, c_int, c_int) = (0, 0, 0);
            ok(inst(fts, i, &mut phrase, &mut col, &mut off))?;
            let weight = match usize::try_from(col) {
                Ok(c) if col < n_val => ffi::sqlite3_value_double(*vals.add(c)),
                _ => 1.0,
            };
            if let Some(f) = usize::try_from(phrase).ok().and_then(|p| q.freq.get_mut(p)) {
                *f += weight;
            }
        }
        let mut tokens: c_int = 0;
        ok((api.xColumnSize.ok_or(missing)?)(fts, -1, &mut tokens))?;
        let norm = K1 * (1.0 - B + B * f64::from(tokens) / q.avgdl);
        Ok(q.idf
            .iter()
            .zip(&q.freq)
            .map(|(idf, f)| idf * (f * (K1 + 1.0)) / (f + norm))
            .sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::connection::SimpleConnection;
    use diesel::prelude::*;
    use diesel::sql_types::{BigInt, Double};

    #[derive(QueryableByName, Debug)]
    struct Row {
        #[diesel(sql_type = BigInt)]
        id: i64,
        #[diesel(sql_type = Double)]
        ours: f64,
        #[diesel(sql_type = Double)]
        theirs: f64,
    }

    fn index() -> SqliteConnection {
        register().unwrap();
        let mut c = SqliteConnection::establish(":memory:").unwrap();
        c.batch_execute(
            "CREATE VIRTUAL TABLE t USING fts5(title, body, prefix = '4'); \
             INSERT INTO t (rowid, title, body) VALUES \
               (1, 'stout', 'a stout ale and a stouter porter'), \
               (2, '', 'stout'), \
               (3, 'porter', 'porter porter porter and one stout among many many words here'), \
               (4, '', 'nothing of the kind'), \
               (5, 'stoutness', 'ale ale ale'), \
               (6, '', 'porter and ale, no stout'), \
               (7, '', 'words'), (8, '', 'more words'), (9, '', 'other words');",
        )
        .unwrap();
        c
    }

    fn ranked(c: &mut SqliteConnection, q: &str, range: (i64, i64)) -> Vec<Row> {
        diesel::sql_query(
            "SELECT rowid AS id, coffer_rank(t, 4.0, 1.0) AS ours, -bm25(t, 4.0, 1.0) AS theirs \
             FROM t WHERE t MATCH ?1 AND rowid BETWEEN ?2 AND ?3 ORDER BY rowid",
        )
        .bind::<diesel::sql_types::Text, _>(q)
        .bind::<BigInt, _>(range.0)
        .bind::<BigInt, _>(range.1)
        .load(c)
        .unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn one_phrase_ranks_as_bm25_scaled_by_its_document_frequency() {
        let mut c = index();
        for q in ["\"stout\"", "\"stou\"*", "\"porter\""] {
            let rows = ranked(&mut c, q, (0, 100));
            assert!(rows.len() >= 3, "{q}: {rows:?}");
            // BM25's factor for the phrase: the documents of the whole index that hold it.
            let n: i64 = 9;
            let held = rows.len() as f64;
            let idf = (((n as f64) - held + 0.5) / (held + 0.5)).ln().max(1e-6);
            for r in &rows {
                assert!(r.ours > 0.0, "{q}: {r:?}");
                assert!(close(r.ours * idf, r.theirs), "{q}: {r:?} idf {idf}");
            }
            let mut by_ours: Vec<i64> = rows.iter().map(|r| r.id).collect();
            by_ours.sort_by(|a, b| {
                let s = |id: &i64| rows.iter().find(|r| r.id == *id).map(|r| r.ours);
                s(b).partial_cmp(&s(a)).unwrap()
            });
            let mut by_theirs = by_ours.clone();
            by_theirs.sort_by(|a, b| {
                let s = |id: &i64| rows.iter().find(|r| r.id == *id).map(|r| r.theirs);
                s(b).partial_cmp(&s(a)).unwrap()
            });
            assert_eq!(by_ours, by_theirs, "{q}");
        }
    }

    #[test]
    fn several_phrases_rank_exactly_as_bm25() {
        let mut c = index();
        for q in ["\"porter\" \"stou\"*", "\"ale\" \"stout\""] {
            let rows = ranked(&mut c, q, (0, 100));
            assert!(!rows.is_empty(), "{q}");
            for r in &rows {
                assert!(close(r.ours, r.theirs), "{q}: {r:?}");
            }
        }
    }

    #[test]
    fn a_query_restarted_per_range_ranks_as_one_pass() {
        let mut c = index();
        let whole = ranked(&mut c, "\"stou\"*", (0, 100));
        let parts: Vec<Row> = diesel::sql_query(
            "WITH r(lo, hi) AS (VALUES (1, 2), (3, 5), (6, 9)) \
             SELECT t.rowid AS id, coffer_rank(t, 4.0, 1.0) AS ours, -bm25(t, 4.0, 1.0) AS theirs \
             FROM r CROSS JOIN t WHERE t MATCH '\"stou\"*' AND t.rowid BETWEEN r.lo AND r.hi \
             ORDER BY t.rowid",
        )
        .load(&mut c)
        .unwrap();
        assert_eq!(whole.len(), parts.len());
        for (w, p) in whole.iter().zip(&parts) {
            assert_eq!(w.id, p.id);
            assert!(close(w.ours, p.ours), "{w:?} {p:?}");
        }
    }
}
