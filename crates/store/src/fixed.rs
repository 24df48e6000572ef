//! Statements of fixed text that the connection keeps prepared.
//!
//! `diesel::sql_query` marks every statement unsafe to cache (its text may be built per call),
//! so each call prepares its statement again: for the recursive walks up a folder tree, which a
//! search calls for every hit's path, preparing cost as much as running. [`sql`] takes only a
//! `&'static str`, so the statements it lets diesel cache (keyed by their text) are bounded by
//! those written in this crate. Text built at run time keeps using `diesel::sql_query`.
//!
//! The text names its values `$1`, `$2`, … as `sql_query` statements do on either backend; each
//! `$N` becomes the backend's own placeholder for the N-th value bound, so a value may be named
//! more than once.
//!
//! [`built`] is the same for text built per call whose values are all bound, so that its texts
//! are the shapes of one statement (the search statements: which criteria a request gives, not
//! their values). Shapes are many, so only the first [`ADMITTED_MAX`] distinct texts the process
//! sees are kept prepared; later ones are prepared per call, as `sql_query` does. Memory stays
//! bounded whatever requests arrive; at worst a flood of odd shapes leaves the common ones
//! prepared per call.

use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::result::{Error, QueryResult};
use diesel::serialize::ToSql;
use diesel::sql_types::{BigInt, HasSqlType, Text, Untyped};
use diesel::RunQueryDsl;
use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::{Mutex, OnceLock};

/// A statement of fixed text and the values bound so far (see the module).
#[derive(Debug, Clone, Copy)]
#[must_use = "a statement runs only when loaded or executed"]
pub(crate) struct Fixed<B> {
    sql: &'static str,
    binds: B,
}

/// A statement of fixed text, kept prepared on the connection.
pub(crate) fn sql(sql: &'static str) -> Fixed<()> {
    Fixed { sql, binds: () }
}

impl<B> Fixed<B> {
    /// Binds the next value (`$1` first) as SQL type `ST`.
    pub(crate) fn bind<ST, V>(self, value: V) -> Fixed<Bound<B, V, ST>> {
        Fixed {
            sql: self.sql,
            binds: Bound {
                before: self.binds,
                value,
                _type: PhantomData,
            },
        }
    }
}

/// The values bound to a [`Fixed`] statement: a list built by [`Fixed::bind`], last value first.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bound<B, V, ST> {
    before: B,
    value: V,
    _type: PhantomData<ST>,
}

/// Pushes the N-th bound value (1-based) into a pass over the statement.
pub(crate) trait Binds<DB: Backend> {
    /// How many values are bound.
    const LEN: usize;

    fn push<'b>(&'b self, n: usize, out: &mut AstPass<'_, 'b, DB>) -> QueryResult<()>;
}

impl<DB: Backend> Binds<DB> for () {
    const LEN: usize = 0;

    fn push<'b>(&'b self, n: usize, _out: &mut AstPass<'_, 'b, DB>) -> QueryResult<()> {
        Err(Error::QueryBuilderError(
            format!("statement names ${n}, which no value is bound to").into(),
        ))
    }
}

impl<DB, B, V, ST> Binds<DB> for Bound<B, V, ST>
where
    DB: Backend + HasSqlType<ST>,
    B: Binds<DB>,
    V: ToSql<ST, DB>,
{
    const LEN: usize = B::LEN + 1;

    fn push<'b>(&'b self, n: usize, out: &mut AstPass<'_, 'b, DB>) -> QueryResult<()> {
        if n == Self::LEN {
            out.push_bind_param::<ST, V>(&self.value)
        } else {
            self.before.push(n, out)
        }
    }
}

impl<DB, B> QueryFragment<DB> for Fixed<B>
where
    DB: Backend,
    B: Binds<DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        walk(self.sql, &mut out, |n, out| self.binds.push(n, out))
    }
}

/// Pushes `sql` into a pass, each `$N` as the N-th value (`bind`); a `$` without digits stays,
/// and so does every `$` inside a quoted string or name (`'…'`, `"…"`): a literal such as
/// `'$1'` is text, not a placeholder. A doubled quote inside a quoted part closes and opens it
/// again, which leaves the part quoted, as SQL reads it.
fn walk<'b, DB: Backend>(
    sql: &'b str,
    out: &mut AstPass<'_, 'b, DB>,
    mut bind: impl FnMut(usize, &mut AstPass<'_, 'b, DB>) -> QueryResult<()>,
) -> QueryResult<()> {
    let bytes = sql.as_bytes();
    let mut quote: Option<u8> = None;
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if b == b'$' => {
                let digits = bytes[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                if digits > 0 {
                    out.push_sql(&sql[start..i]);
                    let n: usize = sql[i + 1..i + 1 + digits].parse().map_err(|_| {
                        Error::QueryBuilderError("a statement's placeholder is out of range".into())
                    })?;
                    bind(n, out)?;
                    start = i + 1 + digits;
                    i = start;
                    continue;
                }
            }
            None => {}
        }
        i += 1;
    }
    out.push_sql(&sql[start..]);
    Ok(())
}

impl<B> QueryId for Fixed<B> {
    type QueryId = ();

    // Keyed by its text in diesel's cache, which `sql`'s `&'static str` bounds.
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<B> Query for Fixed<B> {
    type SqlType = Untyped;
}

impl<B, Conn> RunQueryDsl<Conn> for Fixed<B> {}

/// How many distinct texts of [`built`] statements a process keeps prepared.
pub(crate) const ADMITTED_MAX: usize = 64;

/// A value bound to a [`built`] statement.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    Text(String),
    Int(i64),
}

/// A statement whose text was built for this call, with its values (see the module).
#[derive(Debug, Clone, Copy)]
#[must_use = "a statement runs only when loaded or executed"]
pub(crate) struct Built<'a> {
    sql: &'a str,
    args: &'a [Value],
    cache: bool,
}

/// A statement of text built per call, every value in `args` (`$1` the first); kept prepared
/// when its text is one of the first [`ADMITTED_MAX`] the process saw.
pub(crate) fn built<'a>(sql: &'a str, args: &'a [Value]) -> Built<'a> {
    Built {
        sql,
        args,
        cache: admitted(sql),
    }
}

/// Whether statements of text `sql` may be kept prepared: true for the first [`ADMITTED_MAX`]
/// distinct texts, and for those ever after.
fn admitted(sql: &str) -> bool {
    static SEEN: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let mut seen = SEEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if seen.contains(sql) {
        return true;
    }
    if seen.len() >= ADMITTED_MAX {
        return false;
    }
    seen.insert(sql.to_owned())
}

impl<DB> QueryFragment<DB> for Built<'_>
where
    DB: Backend + HasSqlType<Text> + HasSqlType<BigInt>,
    String: ToSql<Text, DB>,
    i64: ToSql<BigInt, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        if !self.cache {
            out.unsafe_to_cache_prepared();
        }
        walk(self.sql, &mut out, |n, out| {
            match self.args.get(n.wrapping_sub(1)) {
                Some(Value::Text(s)) => out.push_bind_param::<Text, String>(s),
                Some(Value::Int(i)) => out.push_bind_param::<BigInt, i64>(i),
                None => Err(Error::QueryBuilderError(
                    format!("statement names ${n}, which no value is bound to").into(),
                )),
            }
        })
    }
}

impl QueryId for Built<'_> {
    type QueryId = ();

    const HAS_STATIC_QUERY_ID: bool = false;
}

impl Query for Built<'_> {
    type SqlType = Untyped;
}

impl<Conn> RunQueryDsl<Conn> for Built<'_> {}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use diesel::connection::{Connection, InstrumentationEvent};
    use diesel::sql_types::{BigInt, Text};
    use diesel::sqlite::SqliteConnection;
    use diesel::QueryableByName;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[derive(QueryableByName, Debug, PartialEq)]
    struct Row {
        #[diesel(sql_type = Text)]
        a: String,
        #[diesel(sql_type = BigInt)]
        b: i64,
        #[diesel(sql_type = Text)]
        c: String,
    }

    /// A connection, and how many statements it has put into its statement cache.
    pub(crate) fn counted() -> (SqliteConnection, Arc<AtomicUsize>) {
        let mut c = SqliteConnection::establish(":memory:").unwrap();
        let prepared = Arc::new(AtomicUsize::new(0));
        let seen = prepared.clone();
        c.set_instrumentation(move |e: InstrumentationEvent<'_>| {
            if matches!(e, InstrumentationEvent::CacheQuery { .. }) {
                seen.fetch_add(1, Ordering::Relaxed);
            }
        });
        (c, prepared)
    }

    #[test]
    fn values_go_where_the_text_names_them_and_the_statement_is_prepared_once() {
        let (mut c, prepared) = counted();
        for i in 0..3_i64 {
            // `$2` twice and before `$1`; a `$` not followed by digits stays text.
            let rows: Vec<Row> = sql("SELECT $2 || '$' AS a, $1 + $1 AS b, $2 AS c")
                .bind::<BigInt, _>(i)
                .bind::<Text, _>("x")
                .load(&mut c)
                .unwrap();
            assert_eq!(
                rows,
                vec![Row {
                    a: "x$".into(),
                    b: 2 * i,
                    c: "x".into()
                }]
            );
        }
        assert_eq!(
            prepared.load(Ordering::Relaxed),
            1,
            "prepared once, then taken from the connection's cache"
        );
    }

    #[test]
    fn built_text_is_kept_prepared_up_to_the_cap_and_then_prepared_per_call() {
        let (mut c, prepared) = counted();
        let args = [Value::Int(7), Value::Text("t".into())];
        // Texts of this test only (the cap is the process's), past the cap in all.
        let texts: Vec<String> = (0..ADMITTED_MAX + 8)
            .map(|i| format!("SELECT $2 AS a, $1 + {i} AS b, $2 || 'u' AS c"))
            .collect();
        for _ in 0..2 {
            for (i, t) in texts.iter().enumerate() {
                let rows: Vec<Row> = built(t, &args).load(&mut c).unwrap();
                assert_eq!(
                    rows,
                    vec![Row {
                        a: "t".into(),
                        b: 7 + i as i64,
                        c: "tu".into()
                    }]
                );
            }
        }
        let cached = prepared.load(Ordering::Relaxed);
        assert!(
            cached > 0 && cached <= ADMITTED_MAX,
            "{cached} texts kept prepared, each once, never more than the cap"
        );
    }

    #[test]
    fn a_dollar_sign_inside_quotes_is_text() {
        let mut c = SqliteConnection::establish(":memory:").unwrap();
        // `$1` in a string, in a string with a doubled quote, and in a quoted name.
        let rows: Vec<Row> = sql(
            "SELECT '$1' || $1 || 'it''s $2' AS a, $2 AS b, \"$1\" AS c \
             FROM (SELECT 'q' AS \"$1\")",
        )
        .bind::<Text, _>("x")
        .bind::<BigInt, _>(5_i64)
        .load(&mut c)
        .unwrap();
        assert_eq!(
            rows,
            vec![Row {
                a: "$1xit's $2".into(),
                b: 5,
                c: "q".into()
            }]
        );
    }

    #[test]
    fn a_placeholder_without_a_value_is_an_error_not_a_panic() {
        let mut c = SqliteConnection::establish(":memory:").unwrap();
        let r = sql("SELECT $3 AS a, 1 AS b, 'c' AS c")
            .bind::<BigInt, _>(1_i64)
            .load::<Row>(&mut c);
        assert!(matches!(r, Err(Error::QueryBuilderError(_))), "{r:?}");
        let r = sql("SELECT $99999999999999999999999 AS a, 1 AS b, 'c' AS c").load::<Row>(&mut c);
        assert!(matches!(r, Err(Error::QueryBuilderError(_))), "{r:?}");
        let r = built("SELECT $0 AS a, 1 AS b, 'c' AS c", &[]).load::<Row>(&mut c);
        assert!(matches!(r, Err(Error::QueryBuilderError(_))), "{r:?}");
    }
}
