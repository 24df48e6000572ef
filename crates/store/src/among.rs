//! `column IN (values)` as one bound value, so that the statement keeps one text whatever the
//! number of values and stays prepared.
//!
//! diesel's `eq_any` writes a placeholder per value on SQLite (`IN (?, ?, …)`) and marks the
//! statement unsafe to cache, so a page's batch reads (the versions, members and favorites of
//! the 25 hits of a search, or of the 1,000 entries of a listing) were compiled on every call.
//! [`among`] binds the values once: as a JSON array read by `json_each` on SQLite, as an array
//! compared with `= ANY` on PostgreSQL (what `eq_any` writes there too). No value is ever written
//! into the text, and there is no limit on the number of values.

use diesel::expression::{
    is_aggregate, AppearsOnTable, Expression, SelectableExpression, ValidGrouping,
};
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::result::QueryResult;
use diesel::serialize::ToSql;
use diesel::sql_types::{Array, Bool, SingleValue, SqlType, Text};
use diesel::sqlite::Sqlite;

/// `column IN (values)` with the values bound once (see the module).
#[derive(Debug, Clone)]
pub(crate) struct Among<C, T> {
    column: C,
    values: Vec<T>,
    json: String,
}

/// `column` is one of `values`: a filter for either backend, kept prepared.
pub(crate) fn among<C, T>(column: C, values: &[T]) -> Among<C, T>
where
    T: Clone + Into<serde_json::Value>,
{
    Among {
        column,
        values: values.to_vec(),
        json: json_array(values),
    }
}

/// `values` as the JSON array SQLite's `json_each` reads, for a list bound as one value.
pub(crate) fn json_array<T: Clone + Into<serde_json::Value>>(values: &[T]) -> String {
    serde_json::Value::Array(values.iter().cloned().map(Into::into).collect()).to_string()
}

impl<C, T> Expression for Among<C, T>
where
    C: Expression,
{
    type SqlType = Bool;
}

impl<C, T, QS> AppearsOnTable<QS> for Among<C, T> where C: AppearsOnTable<QS> {}

impl<C, T, QS> SelectableExpression<QS> for Among<C, T> where C: SelectableExpression<QS> {}

impl<C, T> ValidGrouping<()> for Among<C, T>
where
    C: ValidGrouping<(), IsAggregate = is_aggregate::No>,
{
    type IsAggregate = is_aggregate::No;
}

impl<C, T> QueryId for Among<C, T> {
    type QueryId = ();
    // Cached by its text, which the values do not change.
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<C, T> QueryFragment<Sqlite> for Among<C, T>
where
    C: QueryFragment<Sqlite>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        self.column.walk_ast(out.reborrow())?;
        out.push_sql(" IN (SELECT value FROM json_each(");
        out.push_bind_param::<Text, _>(&self.json)?;
        out.push_sql("))");
        Ok(())
    }
}

impl<C, T> QueryFragment<Pg> for Among<C, T>
where
    C: QueryFragment<Pg> + Expression,
    C::SqlType: SqlType + SingleValue,
    Pg: diesel::sql_types::HasSqlType<C::SqlType>,
    Vec<T>: ToSql<Array<C::SqlType>, Pg>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.column.walk_ast(out.reborrow())?;
        out.push_sql(" = ANY(");
        out.push_bind_param::<Array<C::SqlType>, _>(&self.values)?;
        out.push_sql(")");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::tests::counted;
    use diesel::prelude::*;
    use std::sync::atomic::Ordering;

    diesel::table! {
        items (id) {
            id -> Text,
            n -> BigInt,
        }
    }

    #[test]
    fn any_number_of_values_finds_exactly_those_rows_with_one_prepared_statement() {
        let (mut c, prepared) = counted();
        diesel::sql_query("CREATE TABLE items (id TEXT PRIMARY KEY, n BIGINT NOT NULL)")
            .execute(&mut c)
            .unwrap();
        for i in 0..2000_i64 {
            diesel::insert_into(items::table)
                .values((items::id.eq(format!("i{i}")), items::n.eq(i)))
                .execute(&mut c)
                .unwrap();
        }
        let before = prepared.load(Ordering::Relaxed);
        for wanted in [0_i64, 1, 3, 1500] {
            // Every third id, and one that is not there (and a quote, taken literally).
            let mut ids: Vec<String> = (0..wanted).map(|i| format!("i{}", i * 3 % 2000)).collect();
            ids.push("i'x".into());
            let mut found: Vec<String> = items::table
                .filter(among(items::id, &ids))
                .select(items::id)
                .load(&mut c)
                .unwrap();
            found.sort();
            let mut expected: Vec<String> = ids[..ids.len() - 1].to_vec();
            expected.sort();
            expected.dedup();
            assert_eq!(found, expected, "{wanted} ids asked");
        }
        let by_number: Vec<i64> = items::table
            .filter(among(items::n, &[5_i64, 7, 4000]))
            .select(items::n)
            .order(items::n)
            .load(&mut c)
            .unwrap();
        assert_eq!(by_number, vec![5, 7]);
        assert_eq!(
            prepared.load(Ordering::Relaxed) - before,
            2,
            "one statement per query, whatever the number of values"
        );
    }
}
